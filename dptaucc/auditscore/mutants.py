"""``make audit-mutants``: the audit's power on bugs nobody wrote by hand.

``python -m dptaucc.auditscore.mutants`` makes every mutant of the privacy-relevant code
(:mod:`~dptaucc.auditscore.mutate`, :mod:`~dptaucc.auditscore.targets`), draws a stratified
seeded sample (strata: group × operator; each stratum's share of the sample is its share of
the population, at least one mutant each), and judges each sampled mutant in a scratch copy of
the tree (:mod:`~dptaucc.auditscore.scratch`; the working tree is never touched):

* **the audit alone**: each audit of the mutant's group whose correct-code run executes the
  mutated statement (:mod:`~dptaucc.auditscore.baselines`) runs on the mutant: exit 3 is a
  *violation* (killed) when an independent audit (``--seed 1``) exits 3 too (a mutant that
  only reshuffles the randomness crosses the line by chance at the audit's α: unconfirmed, the
  second run's outcome counts and the detail says so), 0 *survived*, any other exit an
  *error* (the code raised: killed, shown apart), over the time limit a *timeout* (killed,
  shown apart). No audit reaching the statement: *unreached* (not run).
* **the tests alone**: the tests that execute the statement and pass on the correct code
  (``pytest -x``): a failure kills, exit 0 survives, none covering it: *no tests*.

Results are stored per (mutant id, tree hash) in ``<store>/results.jsonl`` as they finish:
an interrupted run resumes where it stopped, a changed tree starts afresh. The table
``<results>/audit_mutants.parquet`` has one row per sampled mutant with both outcomes and,
for a mutant that reached the audit and survived it, its judgement
(:mod:`~dptaucc.auditscore.judgements`): *equivalent*, *out of reach* or *gap*, with a reason.
A run updates the table it writes to (:func:`merge_tables`): its rows replace that table's
rows of the groups it sampled (with ``--ids``: only the rows of those mutants, e.g. a mutant
run again after the audit was strengthened); rows of other groups stay as they were, each
with the tree hash and sample seed it was judged under.

``--dry-run`` prints the population, the sample and the estimated cost (from the stored
correct-code runs, or the audit's own ``--dry-run`` estimate where none is stored) without
running a mutant.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .baselines import AuditBaseline, TestMap, audit_argv, audit_baseline, test_map
from .judgements import load_judgements
from .mutate import Mutant, mutants_of
from .scratch import ScratchTree, run, tree_hash
from .targets import GROUPS, Group, group_of, is_release_function

__all__ = ["population", "stratified_sample", "judge_mutant", "mutant_table",
           "merge_tables", "rejudge"]

VIOLATION = 3
#: a mutant's test-side columns (kept from its earlier row by a rerun with ``--skip-tests``)
TEST_COLUMNS = ("tests", "n_tests", "tests_s", "killed_by_tests")
#: the audit seed a violation is confirmed with (the audits run at their default seed, 0)
CONFIRM_SEED = 1


def not_private_functions(source: str) -> set[str]:
    """Qualified names of the functions whose docstring declares them ``NOT PRIVATE``
    (evaluation code that reads the data by design, e.g. ``prototype_row_labels``).

    >>> sorted(not_private_functions("def f():\\n    'NOT PRIVATE: raw'\\ndef g(): pass\\n"))
    ['f']
    """
    out: set[str] = set()

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                doc = ast.get_docstring(child) or ""
                if not isinstance(child, ast.ClassDef) and doc.startswith("NOT PRIVATE"):
                    out.add(name)
                walk(child, name + ".")

    walk(ast.parse(source), "")
    return out


def population(root: Path, groups: Sequence[Group]) -> list[Mutant]:
    """Every mutant of the groups' release code (not evaluation-only functions), by id.

    >>> import tempfile
    >>> source = ("def release(x):\\n    return x * 2\\n"
    ...           "def evaluation_labels(x):\\n    return x * 2\\n"
    ...           "def raw(x):\\n    'NOT PRIVATE: reads the data'\\n    return x * 2\\n")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "m.py").write_text(source)
    ...     mutants = population(Path(d), [Group("toy", {"m.py": None}, (), ())])
    >>> sorted({m.function for m in mutants}), len(mutants)
    (['release'], 5)
    """
    out = []
    for group in groups:
        for rel, functions in group.files.items():
            source = (root / rel).read_text(encoding="utf-8")
            skip = not_private_functions(source)
            out += [m for m in mutants_of(rel, source, functions)
                    if is_release_function(m.function) and not any(
                        m.function == f or m.function.startswith(f + ".") for f in skip)]
    return sorted(out, key=lambda m: m.id)


def stratified_sample(mutants: Sequence[Mutant], size: int | None, seed: int
                      ) -> list[Mutant]:
    """``size`` mutants (all for None), each stratum (group, operator) represented in
    proportion to its size (largest remainders), at least one per stratum; seeded.

    >>> from dptaucc.auditscore.mutate import mutants_of
    >>> ms = mutants_of("dptaucc/privacy/m.py", "def f(x):\\n    return x * 2 + 1\\n")
    >>> len({m.operator for m in ms}), len(stratified_sample(ms, 3, 0))  # one per stratum
    (5, 5)
    >>> stratified_sample(ms, 3, 0) == stratified_sample(ms, 3, 0)
    True
    """
    if size is None or size >= len(mutants):
        return sorted(mutants, key=lambda m: m.id)
    strata: dict[tuple[str, str], list[Mutant]] = {}
    for m in sorted(mutants, key=lambda m: m.id):
        strata.setdefault((_group_name(m), m.operator), []).append(m)
    keys = sorted(strata)
    total = len(mutants)
    quota = {k: max(1, math.floor(size * len(strata[k]) / total)) for k in keys}
    rest = size - sum(quota.values())
    if rest > 0:
        order = sorted(keys, key=lambda k: -(size * len(strata[k]) / total) % 1)
        for k in order[:rest]:
            quota[k] += 1
    rng = np.random.default_rng(seed)
    out = []
    for k in keys:
        items = strata[k]
        pick = rng.choice(len(items), size=min(quota[k], len(items)), replace=False)
        out += [items[i] for i in sorted(pick)]
    return sorted(out, key=lambda m: m.id)


def _group_name(m: Mutant) -> str:
    g = group_of(m.path)
    return g.name if g else "?"


# ------------------------------------------------------------------------------ running
def _outcome_audit(code: int | None) -> str:
    if code is None:
        return "timeout"
    return {0: "survived", VIOLATION: "violation"}.get(code, "error")


def _outcome_tests(code: int | None) -> str:
    if code is None:
        return "timeout"
    return {0: "survived", 1: "failed", 5: "no tests"}.get(code, "error")


def judge_mutant(tree: ScratchTree, mutant: Mutant, audits: dict[str, AuditBaseline],
                 tests: TestMap | None, *, factor: float, floor: float,
                 skip_tests: bool = False) -> dict:
    """Run one mutant against its audits and its tests in the scratch copy.

    >>> import subprocess, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = subprocess.run(["git", "init", "-q", d], check=True)
    ...     (Path(d) / "dptaucc").mkdir()
    ...     _ = (Path(d) / "dptaucc" / "m.py").write_text("def f(x):\\n    return x * 2\\n")
    ...     mutant = mutants_of("dptaucc/m.py", "def f(x):\\n    return x * 2\\n")[0]
    ...     with ScratchTree(Path(d)) as tree:
    ...         record = judge_mutant(tree, mutant, {}, None, factor=3.0, floor=60.0)
    >>> record["audit"], record["tests"]  # no audit reaches it, no test map given
    ('unreached', 'not run')
    """
    reaching = [a for a in audits.values() if a.usable and a.reaches(mutant.path, mutant.lines)]
    rec = {"id": mutant.id, "tree_hash": tree.hash, "audits_run": [a.audit for a in reaching],
           "audit": "unreached", "audit_s": 0.0, "audit_detail": "",
           "tests": "not run", "tests_s": 0.0, "n_tests": 0, "tests_detail": ""}
    with tree.mutated(mutant):
        for base in reaching:
            limit = max(floor, factor * base.seconds)
            argv = [tree.python(), *audit_argv(tree, base.audit)]
            if base.audit.startswith("method:"):
                argv.append("--stop-at-violation")
            res = run(argv, cwd=tree.copy, env=tree.env(), timeout=limit)
            rec["audit_s"] += res.seconds
            rec["audit"] = _outcome_audit(res.returncode)
            rec["audit_detail"] = f"{base.audit}: " + _last_lines(res.output)
            if rec["audit"] == "violation":  # confirmed by an independent audit, or not a kill
                again = run([*argv, "--seed", str(CONFIRM_SEED)], cwd=tree.copy,
                            env=tree.env(), timeout=limit)
                rec["audit_s"] += again.seconds
                if again.returncode == VIOLATION:
                    rec["audit_detail"] += f" | confirmed with --seed {CONFIRM_SEED}"
                else:
                    rec["audit"] = _outcome_audit(again.returncode)
                    rec["audit_detail"] += (f" | not confirmed with --seed {CONFIRM_SEED} "
                                            f"(exit {again.returncode}): "
                                            + _last_lines(again.output))
            if rec["audit"] != "survived":
                break
        if tests is not None and not skip_tests:
            ids = tests.tests_for(mutant.path, mutant.lines, mutant.function == "<module>")
            rec["n_tests"] = len(ids)
            if not ids:
                rec["tests"] = "no tests"
            else:
                limit = max(floor, factor * tests.seconds_of(ids) + 120.0)
                res = run([tree.python(), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           "--timeout=900", *ids], cwd=tree.copy, env=tree.env(), timeout=limit)
                rec["tests"] = _outcome_tests(res.returncode)
                rec["tests_s"] = res.seconds
                rec["tests_detail"] = _last_lines(res.output)
    return rec


#: absolute paths of the machine a run happened on, as they appear in tracebacks and in the
#: audit's printed output, and what replaces them in the stored details
_MACHINE_PATHS = ((re.compile(r"[^\s|:\"',()]*/(?:site|dist)-packages/"), "<site-packages>/"),
                  (re.compile(r"[^\s|:\"',()]*/dptaucc-mutants-[A-Za-z0-9_]+"), "<scratch>"))


def scrub_paths(text: str) -> str:
    """``text`` with the machine's absolute paths replaced (installed packages, the scratch
    copy): a stored detail names files relative to what they are, never where they were.

    >>> scrub_paths('File "/opt/x/.venv/lib/python3.11/site-packages/sklearn/base.py", line 3')
    'File "<site-packages>/sklearn/base.py", line 3'
    >>> scrub_paths("ok | /var/tmp/dptaucc-mutants-ab12_c/results/fig.png")
    'ok | <scratch>/results/fig.png'
    """
    for pattern, replacement in _MACHINE_PATHS:
        text = pattern.sub(replacement, text)
    return text


def _last_lines(text: str, n: int = 3) -> str:
    lines = [x for x in scrub_paths(text).strip().splitlines() if x.strip()]
    return " | ".join(lines[-n:])[-600:]


class Store:
    """Per-mutant results, one JSON line each, keyed by (mutant id, tree hash)."""

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[tuple[str, str], dict] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.records[(r["id"], r["tree_hash"])] = r

    def get(self, mutant_id: str, tree: str) -> dict | None:
        return self.records.get((mutant_id, tree))

    def put(self, record: dict) -> None:
        self.records[(record["id"], record["tree_hash"])] = record
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


# ------------------------------------------------------------------------------ table
def _killed(outcome: str) -> bool:
    return outcome in ("violation", "error", "timeout", "failed")


def mutant_table(sample: Sequence[Mutant], store: Store, tree: str, judgements: dict,
                 population_size: int | dict[str, int], seed: int):
    """One row per sampled mutant: where it is, what it does, both outcomes, the judgement.
    ``population_size``: the population sampled from, one number or one per group (a run
    over several groups, or of given ids, records each row's own group's size).

    >>> import tempfile
    >>> ms = mutants_of("dptaucc/privacy/bounded.py", "def f(x):\\n    return x * 2\\n")[:2]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     store = Store(Path(d) / "mutants.jsonl")
    ...     store.put({"id": ms[0].id, "tree_hash": "t1", "audit": "violation",
    ...                "tests": "survived"})
    ...     store.put({"id": ms[1].id, "tree_hash": "t1", "audit": "survived",
    ...                "tests": "failed"})
    ...     table = mutant_table(ms, store, "t1", {ms[1].id: {"verdict": "gap", "reason": "r"}},
    ...                          population_size=10, seed=0)
    >>> table[["group", "killed_by_audit", "killed_by_tests", "judgement"]].values.tolist()
    [['privacy', True, False, ''], ['privacy', False, True, 'gap']]
    """
    import pandas as pd

    rows = []
    for m in sample:
        r = store.get(m.id, tree) or {}
        audit, tests = r.get("audit", "not run"), r.get("tests", "not run")
        judged = judgements.get(m.id, {})
        if audit == "unreached":
            judgement = "unreached (paper mode only)" if m.paper_only else "unreached"
            reason = ("the line runs only in paper mode" if m.paper_only else
                      "no audit of its group executes this statement on correct code")
        elif audit == "survived":
            judgement = judged.get("verdict", "unjudged")
            reason = judged.get("reason", "")
        else:
            judgement, reason = "", ""
        rows.append({
            "id": m.id, "group": _group_name(m), "path": m.path, "line": m.line,
            "function": m.function, "operator": m.operator, "mutation": m.description,
            "mutated_line": m.mutated_line,
            "paper_only": m.paper_only, "audit": audit, "audits_run": ",".join(
                r.get("audits_run", [])), "audit_s": r.get("audit_s", math.nan),
            "audit_detail": r.get("audit_detail", ""), "tests": tests,
            "n_tests": r.get("n_tests", 0), "tests_s": r.get("tests_s", math.nan),
            "killed_by_audit": _killed(audit), "killed_by_tests": _killed(tests),
            "judgement": judgement, "reason": reason, "tree_hash": tree,
            "population": (population_size.get(_group_name(m), 0)
                           if isinstance(population_size, dict) else population_size),
            "sample_seed": seed})
    return pd.DataFrame(rows)


def score(df) -> dict:
    """The headline counts of a mutant table (only mutants that were run)."""
    done = df[df["audit"] != "not run"]
    reached = done[done["audit"] != "unreached"]
    equivalent = reached["judgement"] == "equivalent"
    scored = reached[~equivalent]
    killed_a = scored["killed_by_audit"]
    both = done["killed_by_audit"] & done["killed_by_tests"]
    return {
        "population": int(df["population"].iloc[0]) if len(df) else 0,
        "sampled": len(df), "run": len(done), "reached": len(reached),
        "unreached": int((done["audit"] == "unreached").sum()),
        "killed_audit": int(done["killed_by_audit"].sum()),
        "audit_violation": int((done["audit"] == "violation").sum()),
        "audit_error": int((done["audit"] == "error").sum()),
        "audit_timeout": int((done["audit"] == "timeout").sum()),
        "killed_tests": int(done["killed_by_tests"].sum()),
        "killed_both": int(both.sum()),
        "killed_audit_only": int((done["killed_by_audit"] & ~done["killed_by_tests"]).sum()),
        "killed_tests_only": int((~done["killed_by_audit"] & done["killed_by_tests"]).sum()),
        "killed_neither": int((~done["killed_by_audit"] & ~done["killed_by_tests"]).sum()),
        "equivalent": int(equivalent.sum()),
        "out_of_reach": int((reached["judgement"] == "out of reach").sum()),
        "gaps": int((reached["judgement"] == "gap").sum()),
        "unjudged": int((reached["judgement"] == "unjudged").sum()),
        "score_n": len(scored), "score_killed": int(killed_a.sum()),
        "score": float(killed_a.mean()) if len(scored) else math.nan,
        # the same share counting only exit 3 (a crash or a hang of the mutant not as a kill)
        "score_violations": int((scored["audit"] == "violation").sum()),
    }


def rejudge(df, judgements: dict):
    """The table with every survivor's judgement and reason as ``judgements`` has them now
    (a judgement written after the run, or after another group's run, counts without running
    the mutant again); a survivor ``judgements`` does not name keeps its own, or reads
    *unjudged*.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": ["a", "b"], "audit": ["survived", "violation"],
    ...                    "judgement": ["gap", ""], "reason": ["old", ""]})
    >>> rejudge(df, {"a": {"verdict": "out of reach", "reason": "2^-53"}}).values.tolist()
    [['a', 'survived', 'out of reach', '2^-53'], ['b', 'violation', '', '']]
    """
    df = df.copy()
    for i in df.index[df["audit"] == "survived"]:
        j = judgements.get(df.at[i, "id"])
        if j is not None:
            df.at[i, "judgement"] = j["verdict"]
            df.at[i, "reason"] = " ".join(str(j.get("reason", "")).split())
        elif not df.at[i, "judgement"]:
            df.at[i, "judgement"] = "unjudged"
    return df


def merge_tables(old, new, *, by_id_only: bool = False):
    """``new`` rows in place of ``old``'s: every old row of a group ``new`` covers is dropped
    (a new sample of that group), or with ``by_id_only`` only the old rows of ``new``'s ids
    (those mutants run again; they keep the sample seed and population of their old row, and
    their old test outcome when the rerun skipped the tests). Rows of other groups stay.
    Sorted by group and id.

    >>> import pandas as pd
    >>> old = pd.DataFrame({"id": ["a", "b", "c"], "group": ["privacy", "dpm", "dpm"],
    ...                     "audit": ["error", "survived", "survived"],
    ...                     "population": [9, 5, 5], "sample_seed": [1, 1, 1]})
    >>> new = pd.DataFrame({"id": ["b"], "group": ["dpm"], "audit": ["violation"],
    ...                     "population": [5], "sample_seed": [0]})
    >>> merge_tables(old, new, by_id_only=True)[["id", "audit", "sample_seed"]].values.tolist()
    [['b', 'violation', 1], ['c', 'survived', 1], ['a', 'error', 1]]
    >>> merge_tables(old, new)["id"].tolist()  # a new sample of dpm: c is not in it
    ['b', 'a']
    >>> old["tests"], new["tests"] = ["failed", "failed", "survived"], ["not run"]
    >>> merge_tables(old, new, by_id_only=True)["tests"].tolist()  # rerun with --skip-tests
    ['failed', 'survived', 'failed']
    """
    import pandas as pd

    if old is None or not len(old):
        return new.reset_index(drop=True)
    new = new.copy()
    if by_id_only:
        kept = old.set_index("id")
        for col in ("population", "sample_seed"):
            if col in old and col in new:
                new[col] = [kept.at[i, col] if i in kept.index else v
                            for i, v in zip(new["id"], new[col], strict=True)]
        if "tests" in old and "tests" in new:  # a rerun that skipped the tests keeps theirs
            skipped = [i in kept.index and t == "not run" for i, t in
                       zip(new["id"], new["tests"], strict=True)]
            for col in TEST_COLUMNS:
                if col in old and col in new:
                    new[col] = [kept.at[i, col] if skip else v for i, v, skip in
                                zip(new["id"], new[col], skipped, strict=True)]
        rest = old[~old["id"].isin(set(new["id"]))]
    else:
        rest = old[~old["group"].isin(set(new["group"]))]
    out = pd.concat([rest, new], ignore_index=True)
    return out.sort_values(["group", "id"], kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------------------ CLI
def _estimate_audit(tree: ScratchTree, audit: str) -> float | None:
    """The audit's own wall-time estimate (``--dry-run``) for a method, in seconds."""
    if not audit.startswith("method:"):
        return None
    argv = [a for a in audit_argv(tree, audit) if a != "--no-progress"]
    res = run([tree.python(), *argv, "--dry-run"], cwd=tree.copy, env=tree.env(),
              timeout=1800)
    for line in res.output.splitlines():
        if line.startswith("estimated total:"):
            return 60.0 * float(line.split()[2])
    return None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.auditscore.mutants",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", help="comma-separated groups (default: all): "
                    + ", ".join(g.name for g in GROUPS))
    ap.add_argument("--sample", type=int, default=None,
                    help="mutants to run, stratified by group × operator (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed")
    ap.add_argument("--ids", help="comma-separated mutant ids to run (instead of a sample); "
                    "their rows of the table are replaced, every other row kept")
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    ap.add_argument("--store", help="folder of stored runs (default <results>/audit_mutants)")
    ap.add_argument("--output", help="table (default <results>/audit_mutants.parquet)")
    ap.add_argument("--timeout-factor", type=float, default=4.0,
                    help="a mutant's time limit: this times the correct code's time")
    ap.add_argument("--min-timeout", type=float, default=600.0, help="seconds, at least")
    ap.add_argument("--max-hours", type=float, default=None,
                    help="start no new mutant after this many hours (resume later)")
    ap.add_argument("--skip-tests", action="store_true", help="run the audit side only")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the population, the sample and the estimated cost")
    ap.add_argument("--scratch", help="parent folder of the scratch copy (default: the "
                    "system's temporary folder)")
    args = ap.parse_args(argv)

    root = Path.cwd()
    names = [g for g in (args.groups or "").split(",") if g]
    unknown = sorted(set(names) - {g.name for g in GROUPS})
    if unknown:
        ap.error(f"unknown group(s) {unknown}; known: {[g.name for g in GROUPS]}")
    groups = [g for g in GROUPS if not names or g.name in names]
    results = Path(args.results_dir)
    store_dir = Path(args.store) if args.store else results / "audit_mutants"
    out = Path(args.output) if args.output else results / "audit_mutants.parquet"

    pop = population(root, groups)
    ids = [i for i in (args.ids or "").split(",") if i]
    if ids:
        missing = sorted(set(ids) - {m.id for m in pop})
        if missing:
            ap.error(f"mutant id(s) {missing} are not in the population of "
                     f"{[g.name for g in groups]}")
        sample = [m for m in pop if m.id in set(ids)]
    else:
        sample = stratified_sample(pop, args.sample, args.seed)
    strata = Counter((_group_name(m), m.operator) for m in pop)
    picked = Counter((_group_name(m), m.operator) for m in sample)
    print(f"population: {len(pop)} mutants in {len(strata)} strata; sample: {len(sample)} "
          f"(seed {args.seed})")
    for key in sorted(strata):
        print(f"  {key[0]:14s} {key[1]:7s} {strata[key]:5d} -> {picked.get(key, 0)}")
    store = Store(store_dir / "results.jsonl")
    current = tree_hash(root)
    todo = [m for m in sample if store.get(m.id, current) is None]
    print(f"tree {current}: {len(sample) - len(todo)} of the sample stored, {len(todo)} to run")

    if args.dry_run:
        return _dry_run(root, groups, todo, store_dir, current, args)

    judgements = load_judgements()
    started = time.monotonic()
    with ScratchTree(root, Path(args.scratch) if args.scratch else None) as tree:
        if tree.hash != current:
            raise RuntimeError("the tree changed while the scratch copy was made")
        if not tree.imports_from_view():
            print("the scratch copy does not import from itself: nothing judged",
                  file=sys.stderr)
            return 2
        by_group: dict[str, list[Mutant]] = {}
        for m in todo:
            by_group.setdefault(_group_name(m), []).append(m)
        for group in groups:
            mine = by_group.get(group.name, [])
            if not mine:
                continue
            print(f"{group.name}: {len(mine)} mutant(s)")
            audits = {a: audit_baseline(tree, a, store_dir, timeout=4 * 3600)
                      for a in group.audits}
            for a in audits.values():
                state = "ok" if a.usable else f"UNUSABLE (exit {a.returncode})"
                print(f"  correct code, {a.audit}: {state}, {a.seconds:.0f} s")
            tests = None if args.skip_tests else test_map(tree, group, store_dir, 4 * 3600)
            if tests is not None:
                print(f"  tests on correct code: exit {tests.returncode}, {len(tests.passed)} "
                      f"passed, {tests.seconds:.0f} s")
            for k, m in enumerate(mine, 1):
                if args.max_hours and time.monotonic() - started > 3600 * args.max_hours:
                    print(f"stopping: --max-hours {args.max_hours} reached (resume later)")
                    break
                rec = judge_mutant(tree, m, audits, tests, factor=args.timeout_factor,
                                   floor=args.min_timeout, skip_tests=args.skip_tests)
                store.put(rec)
                print(f"  [{k}/{len(mine)}] {m.id} {m.path}:{m.line} {m.description} -> "
                      f"audit {rec['audit']} ({rec['audit_s']:.0f} s), tests {rec['tests']} "
                      f"({rec['n_tests']} tests, {rec['tests_s']:.0f} s)", flush=True)
    df = mutant_table(sample, store, current, judgements, dict(Counter(map(_group_name, pop))),
                      args.seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():  # this run's rows replace their own, every other row stays
        import pandas as pd

        df = rejudge(merge_tables(pd.read_parquet(out), df, by_id_only=bool(ids)), judgements)
    df.to_parquet(out, index=False)
    s = score(df)
    print(json.dumps(s, indent=1))
    print(out)
    survivors = df[df["audit"] == "survived"]
    for _, r in survivors.iterrows():
        print(f"SURVIVOR {r['id']} {r['path']}:{r['line']} {r['mutation']} "
              f"[tests: {r['tests']}] judged: {r['judgement']} {r['reason']}")
    return 0


def _dry_run(root, groups, todo, store_dir, current, args) -> int:
    per_group = Counter(_group_name(m) for m in todo)
    total = 0.0
    with ScratchTree(root, Path(args.scratch) if args.scratch else None) as tree:
        for group in groups:
            n = per_group.get(group.name, 0)
            if not n:
                continue
            audit_s = 0.0
            for a in group.audits:
                path = store_dir / current / f"audit-{a.replace(':', '_')}.json"
                if path.exists():
                    base = AuditBaseline(**json.loads(path.read_text(encoding="utf-8")))
                    s, how = base.seconds, "stored correct-code run"
                else:
                    est = _estimate_audit(tree, a)
                    s, how = (est, "the audit's --dry-run") if est else (120.0, "a guess")
                    total += s  # the correct-code run itself
                audit_s += s
                print(f"  {group.name} {a}: ~{s:.0f} s per run ({how})")
            tpath = store_dir / current / f"tests-{group.name}.json"
            tests_s = (TestMap(**json.loads(tpath.read_text(encoding="utf-8"))).seconds
                       if tpath.exists() else 300.0)
            cost = n * (audit_s + tests_s)
            total += cost
            print(f"  {group.name}: {n} mutants x (audit ~{audit_s:.0f} s + tests at most "
                  f"~{tests_s:.0f} s) = at most {cost / 3600:.1f} h")
    print(f"estimated at most {total / 3600:.1f} h of wall time on one core (a killed "
          "mutant stops at its first violation or failing test: usually far less)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
