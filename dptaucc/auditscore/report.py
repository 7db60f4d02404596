"""The REPORT section of the audit's measured quality: mutation score and false alarms.

Read from the stored tables ``<results>/audit_mutants.parquet`` (:mod:`.mutants`) and
``<results>/audit_false_alarms.parquet`` (:mod:`.false_alarms`); a missing table is said so in
its part (no score is shown that was not measured).

>>> import tempfile
>>> lines = audit_score_section(tempfile.mkdtemp())  # no tables yet
>>> print(lines[4].split(":")[0], lines[-2].split(":")[0], sep="\\n")
No mutation run is stored (`audit_mutants.parquet` absent)
No false-alarm run is stored (`audit_false_alarms.parquet` absent)
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from .false_alarms import clopper_pearson, summarise
from .judgements import load_judgements
from .mutants import rejudge, score

__all__ = ["audit_score_section", "mutants_lines", "false_alarm_lines"]


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.0f} %)" if n else "0/0"


def mutants_lines(df: pd.DataFrame) -> list[str]:
    """Markdown lines of the mutation score.

    >>> import tempfile
    >>> from dptaucc.auditscore.mutants import Store, mutant_table
    >>> from dptaucc.auditscore.mutate import mutants_of
    >>> ms = mutants_of("dptaucc/privacy/bounded.py", "def f(x):\\n    return x * 2\\n")[:2]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     store = Store(Path(d) / "mutants.jsonl")
    ...     for m, audit in zip(ms, ("violation", "survived")):
    ...         store.put({"id": m.id, "tree_hash": "t1", "audit": audit, "tests": "failed"})
    ...     table = mutant_table(ms, store, "t1", {}, population_size=10, seed=0)
    >>> lines = mutants_lines(table)
    >>> [line for line in lines if line.startswith("| killed by the audit")]
    ['| killed by the audit | 1/2 (50 %) (violation 1, error 0, timeout 0) |']
    >>> lines[lines.index("Survivors of the audit:") + 4].split(" | ")[-2]  # not judged yet
    'unjudged'
    """
    judgements = load_judgements()
    df = rejudge(df, judgements)
    s = score(df)
    run = s["run"]
    groups = ", ".join(sorted(set(df["group"])))
    seconds = float(df["audit_s"].fillna(0).sum() + df["tests_s"].fillna(0).sum())
    untested = int(((df["audit"] != "not run") & (df["tests"] == "not run")).sum())
    samples = df.groupby("group", sort=True).agg(
        n=("id", "size"), population=("population", "max"),
        seed=("sample_seed", lambda v: ", ".join(str(int(x)) for x in sorted(set(v)))),
        trees=("tree_hash", lambda t: ", ".join(sorted(set(t)))))
    if len(samples) == 1 and df["tree_hash"].nunique() == 1:
        what = (f"tree {df['tree_hash'].iloc[0]}: a stratified sample of {s['sampled']} of the "
                f"{s['population']} mutants of the release code of {groups} (seed "
                f"{int(df['sample_seed'].iloc[0])}, ")
    else:  # one sample per group, each run on the tree of its time
        what = ("one stratified sample per group: " + "; ".join(
            f"{g} {r['n']} of {int(r['population'])} (seed {r['seed']}, tree {r['trees']})"
            for g, r in samples.iterrows()) + f" ({s['sampled']} mutants; ")
    lines = [
        "### Power on bugs nobody wrote by hand (mutation run)", "",
        f"`make audit-mutants` (`python -m dptaucc.auditscore.mutants`), {what}"
        "strata group × operator; constants ×2, ÷2, ±1; "
        "operators and arguments swapped; a noisy value replaced by its exact input; a draw "
        f"reused), {run} run ({seconds / 60:.0f} min of audits and tests). **A sample, not a "
        "census**: the shares below estimate the population's, within the interval given for "
        "the score. Each mutant is judged by the audit alone (the quick gate of its method, "
        "the primitives audit, seeded and secure, for `dptaucc/privacy`, with the quick gates "
        "of DP-τCC, DP-τCC (row) and colored noise for the mutants whose `audits_run` names "
        "them) and by the tests "
        "alone (those that execute the mutated statement), in a scratch copy of the tree.", "",
        "| | mutants |", "|---|---|",
        f"| killed by the audit | {_pct(s['killed_audit'], run)} (violation "
        f"{s['audit_violation']}, error {s['audit_error']}, timeout {s['audit_timeout']}) |",
        f"| killed by the tests | {_pct(s['killed_tests'], run)}"
        + (f" ({untested} of them run with `--skip-tests`: tests not run)" if untested else "")
        + " |",
        f"| killed by both | {_pct(s['killed_both'], run)} |",
        f"| audit only / tests only / neither | {s['killed_audit_only']} / "
        f"{s['killed_tests_only']} / {s['killed_neither']} |",
        f"| not reached by any audit (not run against it) | {s['unreached']} |",
        f"| reached, survived the audit: equivalent / out of reach / gap / unjudged | "
        f"{s['equivalent']} / {s['out_of_reach']} / {s['gaps']} / {s['unjudged']} |", "",
    ]
    if len(samples) > 1:
        lines += _by_group_lines(df)
    if s["score_n"]:
        killed = _pct(s["score_killed"], s["score_n"])
        by_violation = _pct(s["score_violations"], s["score_n"])
        lo, hi = clopper_pearson(s["score_killed"], s["score_n"])
        lines += [f"**Score** (goal ≥ 90 %): the audit alone kills {killed} of the "
                  f"{s['score_n']} non-equivalent mutants of the sample on paths it reaches "
                  f"(95 % Clopper–Pearson interval {100 * lo:.0f}–{100 * hi:.0f} %; "
                  f"{by_violation} by a violation, the rest because the mutant made the code "
                  "raise or hang)." + _designed_in(df, judgements), ""]
    else:
        lines += ["**Score**: no non-equivalent mutant of the sample reached an audit: no "
                  "evidence.", ""]
    surv = df[df["audit"] == "survived"]
    if len(surv):
        lines += ["Survivors of the audit:", "",
                  "| id | where | mutation | tests | judged | reason |",
                  "|---|---|---|---|---|---|"]
        for _, r in surv.sort_values(["path", "line"]).iterrows():
            mutation = str(r["mutation"]).replace("|", "\\|")
            if r.get("mutated_line"):
                mutation += "` in `" + str(r["mutated_line"])[:100].replace("|", "\\|")
            lines.append(f"| {r['id']} | {r['path']}:{r['line']} | `{mutation}` | {r['tests']} | "
                         f"{r['judgement']} | {r['reason']} |")
        lines.append("")
    return lines


def _designed_in(df: pd.DataFrame, judgements: dict[str, dict]) -> str:
    """What the score owes to checks written after their mutants were seen: kills of mutants
    that ``judgements`` still holds as survivors (judged out of reach or a gap, then killed by
    a check written with them in view), and the score without them.

    >>> df = pd.DataFrame({"id": ["a", "b", "c"], "killed_by_audit": [True, True, False],
    ...                    "audit": ["violation", "error", "survived"],
    ...                    "judgement": ["", "", "gap"]})
    >>> text = _designed_in(df, {"a": {"verdict": "out of reach"}, "c": {"verdict": "gap"}})
    >>> text.split(": ")[0], text.split("; ")[-1]
    (' Of these kills, 1 is of a mutant first judged a survivor (out of reach or a gap) and \
killed by a check written with it in view', 'without it, 1/2 (50 %).')
    >>> _designed_in(df, {})
    ''
    """
    scored = df[~df["audit"].isin(["not run", "unreached"]) & (df["judgement"] != "equivalent")]
    killed = scored[scored["killed_by_audit"].fillna(False).astype(bool)]
    seen = int(killed["id"].isin([k for k, j in judgements.items()
                                  if j.get("verdict") in ("out of reach", "gap")]).sum())
    if not seen:
        return ""
    one = seen == 1
    them, mutants = ("it", "a mutant") if one else ("them", "mutants")
    return (f" Of these kills, {seen} {'is' if one else 'are'} of {mutants} first judged "
            f"{'a survivor' if one else 'survivors'} (out of reach or a gap) and killed by a "
            f"check written with {them} in view: the score owes "
            f"{'that one' if one else 'those'} to design; without {them}, "
            f"{_pct(len(killed) - seen, len(scored) - seen)}.")


def _by_group_lines(df: pd.DataFrame) -> list[str]:
    """One row per group: what ran, who killed it, how survivors were judged, its score.

    >>> df = pd.DataFrame({"group": ["dpm", "dpm", "privacy"], "population": [9, 9, 5],
    ...                    "audit": ["violation", "survived", "unreached"],
    ...                    "tests": ["failed", "survived", "failed"],
    ...                    "killed_by_audit": [True, False, False],
    ...                    "killed_by_tests": [True, False, True],
    ...                    "judgement": ["", "gap", "unreached"]})
    >>> _by_group_lines(df)[-3]
    '| dpm | 2 | 2 | 1 | 1 | 1 | 0 / 0 / 1 | 0 / 0 / 1 | 1/2 (50 %), 1–99 % |'
    """
    lines = ["By group (audit alone / tests alone / neither count mutants that were run; the "
             "score and its 95 % Clopper–Pearson interval are over the non-equivalent "
             "mutants the audit reaches):", "",
             "| group | run | reached | killed by the audit | by the tests | by both | audit "
             "only / tests only / neither | survivors: equivalent / out of reach / gap | "
             "score |", "|---|---|---|---|---|---|---|---|---|"]
    for group, g in df.groupby("group", sort=True):
        s = score(g)
        if s["score_n"]:
            lo, hi = clopper_pearson(s["score_killed"], s["score_n"])
            sc = f"{_pct(s['score_killed'], s['score_n'])}, {100 * lo:.0f}–{100 * hi:.0f} %"
        else:
            sc = "no evidence"
        ran = g[g["audit"] != "not run"]
        if len(ran) and (ran["tests"] == "not run").all():  # a --skip-tests run
            tests = "not run | not run | — / — / —"
        else:
            tests = (f"{s['killed_tests']} | {s['killed_both']} | {s['killed_audit_only']} / "
                     f"{s['killed_tests_only']} / {s['killed_neither']}")
        lines.append(f"| {group} | {s['run']} | {s['reached']} | {s['killed_audit']} | {tests} | "
                     f"{s['equivalent']} / {s['out_of_reach']} / {s['gaps']} | {sc} |")
    return lines + [""]


def false_alarm_lines(df: pd.DataFrame) -> list[str]:
    """Markdown lines of the measured false-alarm rates.

    >>> decisions = pd.DataFrame({"kind": ["primitive"] * 3, "name": ["a", "b", "c"],
    ...                           "alarm": [False, True, False], "alpha": [0.125] * 3,
    ...                           "config": ["n=100"] * 3})
    >>> lines = false_alarm_lines(decisions)
    >>> lines[-4]
    '| primitive | 3 | 1 | 0.3333 [0.0084, 0.9057] | 0.12 | 0.4 |'
    >>> lines[-2].startswith("No kind of decision alarms significantly")
    True
    """
    summary = summarise(df)
    n = int(summary["decisions"].sum())
    sizes = "; ".join(f"{kind}: {', '.join(sorted(set(g['config'])))}"
                      for kind, g in df.groupby("kind", sort=False)) if "config" in df else ""
    seeds = (f", seeds {int(df['seed'].min())}–{int(df['seed'].max())}"
             if "seed" in df and len(df) else "")
    lines = ["### False alarms on correct code", "",
             f"`make audit-false-alarms` (`python -m dptaucc.auditscore.false_alarms`): {n} "
             f"decisions of the gate on the correct code, each with a fresh audit seed{seeds}, "
             f"at these sizes ({sizes}; the gate's: primitives n=400000, call sites 600000 "
             "draws, end to end 1200 fits; smaller sizes keep the same decision rule: "
             "docs/audit.md). Rate with its 95 % Clopper–Pearson interval against the nominal "
             "level of one decision.", "",
             "| decision | decisions | alarms | observed rate (95 % CI) | nominal α | alarms "
             "expected at nominal |", "|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        lines.append(f"| {r['kind']} | {r['decisions']} | {r['alarms']} | {r['rate']:.4f} "
                     f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}] | {r['nominal_alpha']:.2g} | "
                     f"{r['expected_at_nominal']:.1f} |")
    worst = summary.loc[summary["ci_low"] > summary["nominal_alpha"], "kind"].tolist()
    lines += ["", ("Above nominal (the interval lies above α): " + ", ".join(worst) + "."
                   if worst else "No kind of decision alarms significantly more often than its "
                   "nominal α (every interval reaches down to α or below).")]
    return lines + _coinciding(df) + [""]


def _coinciding(df: pd.DataFrame) -> list[str]:
    """A note when decisions at one seed coincide (the same ε_lower and event: the same
    outputs drawn), with the rate over the distinct decisions only: the interval assumes
    independent decisions, and coinciding ones are not.

    >>> df = pd.DataFrame({"kind": ["primitive"] * 4, "name": ["a", "b", "a", "b"],
    ...                    "seed": [1, 1, 2, 2], "epsilon_lower": [0.9, 0.9, 0.8, 0.7],
    ...                    "event": ["e", "e", "e", "e"], "alarm": [False] * 4})
    >>> note = _coinciding(df)[-1]
    >>> note.split(";")[0]
    '- primitive: 3 distinct of 4 decisions (at one seed, a and b coincided 1 time(s))'
    >>> note.split(";")[1]
    ' over the distinct ones 0 alarms, rate 0.0000 [0.0000, 0.7076].'

    Only decisions with a chosen event can coincide: a method's gate (no bound of its own)
    or a record that chose no event (ε_lower 0) says nothing about the outputs drawn:

    >>> gates = pd.DataFrame({"kind": ["method gate", "method gate", "end-to-end", "end-to-end"],
    ...                       "name": ["m", "n", "m s1", "m s2"], "seed": [1] * 4,
    ...                       "epsilon_lower": [float("nan"), float("nan"), 0.0, 0.0],
    ...                       "event": [""] * 4, "alarm": [False] * 4})
    >>> _coinciding(gates)
    []
    """
    if not {"seed", "epsilon_lower", "event"} <= set(df.columns):
        return []
    out = []
    for kind, g in df.groupby("kind", sort=False):
        drawn = g["event"].astype(str).ne("") & g["epsilon_lower"].notna()
        keyed = g.assign(_key=[(s, e, ev) if d else ("undrawn", i) for i, (s, e, ev, d) in
                               enumerate(zip(g["seed"], g["epsilon_lower"].round(12), g["event"],
                                             drawn, strict=True))])
        distinct = keyed.drop_duplicates("_key")
        if len(distinct) == len(g):
            continue
        pairs = keyed[keyed.duplicated("_key", keep=False)].groupby("_key")["name"].apply(
            lambda names: " and ".join(sorted(set(names))))
        together = "; ".join(f"{names} coincided {n} time(s)"
                             for names, n in pairs.value_counts().items())
        k, n = int(distinct["alarm"].sum()), len(distinct)
        lo, hi = clopper_pearson(k, n)
        out.append(f"{kind}: {n} distinct of {len(g)} decisions (at one seed, {together}); "
                   f"over the distinct ones {k} alarms, rate {k / n:.4f} [{lo:.4f}, {hi:.4f}].")
    if not out:
        return []
    return ["", "Decisions that coincide (the same outputs drawn at one seed: the same ε_lower "
            "and event) are not independent, and the interval above assumes they are:", ""
            ] + [f"- {line}" for line in out]


def exact_power_lines(df: pd.DataFrame) -> list[str]:
    """What the call sites' exact pair cost sees of the catalogue alone, by kind of bug.

    >>> table = pd.DataFrame({"method": ["m"] * 3, "bug": ["", "m.a", "m.b"],
    ...                       "kind": ["correct code", "sensitivity off by 2", "raw"],
    ...                       "seen": [False, True, False], "max_ratio": [1.0, 2.0, 1.0]})
    >>> line = exact_power_lines(table)[2]
    >>> "**1 of 2**" in line, "0 of 1 methods flagged" in line
    (True, True)
    """
    bugs, correct = df[df["bug"] != ""], df[df["bug"] == ""]
    kinds = bugs.groupby("kind")["seen"].agg(["sum", "size"]).sort_values(
        ["sum", "size"], ascending=False)
    by_kind = "; ".join(f"{kind} {int(r['sum'])}/{int(r['size'])}" for kind, r in kinds.iterrows())
    return ["### The exact pair cost on the catalogue (no sampling)", "",
            "`python -m dptaucc.auditscore.exact_power`: every audited call of every call-site "
            "setup opened on D and D' under each catalogue bug, its pair's exact cost under the "
            "declared law compared with its charge (docs/audit.md). **"
            f"{int(bugs['seen'].sum())} of {len(bugs)}** catalogue bugs are seen by it alone; "
            f"correct code: {int(correct['seen'].sum())} of {len(correct)} methods flagged "
            f"(largest exact cost / charge {correct['max_ratio'].max():.3f}). By kind: "
            f"{by_kind}. Bugs that release a raw-data attribute or leave the calls' inputs "
            "alone are the end-to-end layer's and the ledger check's.", ""]


def audit_score_section(results_dir: str | os.PathLike = "results") -> list[str]:
    """Both parts, from the tables under ``results_dir`` (a missing table says so).

    >>> import tempfile
    >>> decisions = pd.DataFrame({"kind": ["primitive"], "name": ["a"], "alarm": [False],
    ...                           "alpha": [0.05], "config": ["n=100"]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     decisions.to_parquet(Path(d) / "audit_false_alarms.parquet")
    ...     lines = audit_score_section(d)
    >>> lines[0], lines[4].startswith("No mutation run is stored")  # no mutant table
    ('## How good is the audit (measured)', True)
    >>> lines[8].startswith("`make audit-false-alarms`")
    True
    """
    results = Path(results_dir)
    lines = ["## How good is the audit (measured)", ""]
    mutants = results / "audit_mutants.parquet"
    if mutants.exists():
        lines += mutants_lines(pd.read_parquet(mutants))
    else:
        lines += ["### Power on bugs nobody wrote by hand (mutation run)", "",
                  f"No mutation run is stored (`{mutants.name}` absent): no mutation score. "
                  "`make audit-mutants` measures it.", ""]
    exact = results / "audit_exact_power.parquet"
    if exact.exists():
        lines += exact_power_lines(pd.read_parquet(exact))
    alarms = results / "audit_false_alarms.parquet"
    if alarms.exists():
        lines += false_alarm_lines(pd.read_parquet(alarms))
    else:
        lines += ["### False alarms on correct code", "",
                  f"No false-alarm run is stored (`{alarms.name}` absent): no measured "
                  "false-alarm rate. `make audit-false-alarms` measures it.", ""]
    return lines
