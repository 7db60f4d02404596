"""The audit's REPORT.md section and figure, from ``results/audit.parquet`` only.

:func:`audit_section` returns the markdown lines (a table per method and mode: ε claimed, ε
spent by the ledger, ε_lower with the event that gave it) with a plain statement of what was
expected and what was found; :func:`draw_figure` draws ``figures/audit_epsilon_lower.{png,pdf}``
(ε_lower of each method and mode against its claim). ``python -m dptaucc.audit.report`` does both.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dptaucc._cli import plain
from dptaucc.bench.aggregate import COLORS, MARKERS, label  # noqa: E402
from dptaucc.bench.savefig import save_figure  # noqa: E402
from dptaucc.methods import BUILTIN_MODULES  # noqa: E402

__all__ = ["audit_section", "audit_figure", "draw_figure", "verdicts", "expected_above", "main"]

FIGURE = "audit_epsilon_lower"
#: the built-in methods in display order (a user's own method comes after them)
ORDER = tuple(BUILTIN_MODULES)
_MARKER_CYCLE = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">")


def _marker(alg: str) -> str:
    rank = ORDER.index(alg) if alg in ORDER else len(ORDER) + sum(map(ord, alg))
    return _MARKER_CYCLE[rank % len(_MARKER_CYCLE)]


def expected_above() -> dict[str, str]:
    """Paper-mode methods the audit is expected to catch above their claim, and why (each
    method's ``paper_leaks``, declared beside it).

    >>> expected = expected_above()
    >>> expected["dp_taucc"]
    'non-private final labels'
    >>> "dpm" in expected  # DPM declares no paper-mode leak
    False
    """
    from .methods import scenarios_of

    return {m: s.paper_leaks for m in ORDER if (s := scenarios_of(m)).paper_leaks}


def __getattr__(name: str):
    if name == "EXPECTED_ABOVE":
        return expected_above()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
# ε_lower is a bound: "above the claim" needs a margin against print rounding only
TOL = 1e-9


def load_audit(path: str | os.PathLike = "results") -> pd.DataFrame | None:
    """The audit table: ``path`` itself if it is a file, else ``path/audit.parquet``. Tables
    from before the call-site layer read as end-to-end records claiming their ε."""
    p = Path(path)
    p = p if p.suffix == ".parquet" else p / "audit.parquet"
    if not p.exists():
        return None
    df = pd.read_parquet(p)
    if "scope" not in df.columns:
        df["scope"], df["step"] = "end-to-end", ""
    if "epsilon_claimed" not in df.columns:
        df["epsilon_claimed"] = df["epsilon"]
    return _no_evidence_where_no_event(df)


def _no_evidence_where_no_event(df: pd.DataFrame) -> pd.DataFrame:
    """Records written before the "no evidence" verdict existed: a bound of 0 with no event
    that told D from D' proves nothing, and reads "no evidence" (the rule the audit applies
    to new records), never "ok".

    >>> old = pd.DataFrame({"epsilon_lower": [0.0, 0.0, 0.3], "event": ["", "x <= 1", "y"],
    ...                     "verdict": ["ok", "ok", "ok"]})
    >>> _no_evidence_where_no_event(old)["verdict"].tolist()
    ['no evidence', 'ok', 'ok']
    """
    if "verdict" not in df.columns or "event" not in df.columns:
        return df
    empty = df["event"].fillna("").astype(str).str.strip() == ""
    blind = (df["epsilon_lower"].fillna(0.0) <= 0) & empty & (df["verdict"] == "ok")
    return df.assign(verdict=df["verdict"].where(~blind, "no evidence"))


def _ratio(df: pd.DataFrame) -> pd.Series:
    """ε_lower / claim (NaN bounds: no evidence, ranked last; no claim: the bound itself)."""
    claim = df["epsilon_claimed"].where(df["epsilon_claimed"] > 0, 1.0).fillna(1.0)
    return (df["epsilon_lower"] / claim).fillna(-1.0)


def best_rows(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, mode, scope, ε): the record with the largest ε_lower/claim (every
    record of a method ran at α divided by its number of records: simultaneous bounds)."""
    df = df.assign(_ratio=_ratio(df))
    idx = df.groupby(["method", "mode", "scope", "epsilon"], dropna=False)["_ratio"].idxmax()
    return df.loc[idx.values].drop(columns="_ratio").reset_index(drop=True)


def _ordered(df: pd.DataFrame) -> list[tuple[str, str]]:
    keys = {(a, m) for a, m in zip(df["method"], df["mode"], strict=True)}
    rank = {a: i for i, a in enumerate(ORDER)}
    mode_rank = {"paper": 0, "corrected": 1}
    return sorted(keys, key=lambda k: (rank.get(k[0], 99), k[0], mode_rank.get(k[1], 2)))


def _eps(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return "∞" if math.isinf(x) else f"{x:.3g}"


def verdicts(df: pd.DataFrame) -> dict[str, list[str]]:
    """Which audits exceed their claim: ``corrected_above`` (bugs), ``paper_above``,
    ``paper_expected_missing`` (an expected paper-mode catch the audit did not make).

    >>> import tempfile
    >>> inf = float("inf")
    >>> table = pd.DataFrame({
    ...     "method": ["dp_taucc", "dp_taucc", "dpm"], "mode": ["paper", "corrected", "corrected"],
    ...     "epsilon": [1.0] * 3, "epsilon_claimed": [1.0] * 3, "epsilon_spent": [inf, 1.0, 1.0],
    ...     "epsilon_lower": [3.6, 0.4, 0.2], "epsilon_lower_max": [3.8] * 3,
    ...     "scope": ["end-to-end"] * 3, "step": [""] * 3, "event": ["labels", "labels", "sums"],
    ...     "pair": ["all_zero_row"] * 3, "n_fits": [800] * 3, "git_sha": ["abc"] * 3})
    >>> verdicts(table)  # DP-τCC's paper mode is caught above its claim, as expected
    {'corrected_above': [], 'paper_above': ['DP-τCC'], 'paper_expected_missing': []}
    >>> table.loc[2, "epsilon_lower"] = 2.5  # a corrected-mode method above its claim: a bug
    >>> verdicts(table)["corrected_above"]
    ['DPM at ε = 1 (up to 2.50 for a claim of 1: end-to-end all_zero_row, sums)']
    """
    df = best_rows(_statistical(df))
    private = df[df["epsilon"].notna()]
    above = private[private["epsilon_lower"] > private["epsilon_claimed"] * (1 + TOL)]
    bugs = []
    rank = {a: i for i, a in enumerate(ORDER)}
    corrected = above[above["mode"] == "corrected"]
    for alg in sorted(set(corrected["method"]), key=lambda a: (rank.get(a, 99), a)):
        d = corrected[corrected["method"] == alg]
        top = d.loc[_ratio(d).idxmax()]
        eps = ", ".join(f"{e:g}" for e in sorted(set(d["epsilon"])))
        where = top["step"] or top["pair"]
        bugs.append(f"{label(alg)} at ε = {eps} (up to {top['epsilon_lower']:.2f} for a "
                    f"claim of {top['epsilon_claimed']:.3g}: {top['scope']} {where}, "
                    f"{top['event']})")
    out = {
        "corrected_above": bugs,
        "paper_above": [label(a) for a in sorted(set(above[above["mode"] == "paper"]["method"]),
                                                 key=lambda a: (rank.get(a, 99), a))],
    }
    caught = set(above[above["mode"] == "paper"]["method"])
    audited = set(private[private["mode"] == "paper"]["method"])
    out["paper_expected_missing"] = [label(a) for a in expected_above()
                                     if a in audited and a not in caught]
    return out


def _no_evidence(lower: float, verdict: str) -> bool:
    """A record with no evidence: no bound, or the verdict says no event told D from D'."""
    return bool(math.isnan(lower) or verdict == "no evidence")


def _statistical(df: pd.DataFrame) -> pd.DataFrame:
    """The records that hold ε lower bounds (the ledger checks have their own section)."""
    return df[~df["scope"].isin(("ledger", "refit", "sampler", "sweep"))]


def _method_tables(df: pd.DataFrame) -> list[str]:
    lines: list[str] = []
    df = best_rows(_statistical(df))
    for alg, mode in _ordered(df):
        d = df[(df["method"] == alg) & (df["mode"] == mode)].sort_values(["scope", "epsilon"])
        title = f"{label(alg)} ({mode})" if mode != "–" else f"{label(alg)} (not DP)"
        lines += [f"**{title}**", "",
                  "| scope | fit ε | claim | ε spent (ledger) | ε_lower | pair, step: event | "
                  "fits/side | max measurable |", "|---|---|---|---|---|---|---|---|"]
        for r in d.itertuples():
            above = not math.isnan(r.epsilon_claimed) and r.epsilon_lower > r.epsilon_claimed * (
                1 + TOL)
            lower = ("no evidence" if _no_evidence(r.epsilon_lower, getattr(r, "verdict", ""))
                     else f"{r.epsilon_lower:.2f}")
            where = f"{r.pair} {r.step}".strip()
            lines.append(f"| {r.scope} | {_eps(r.epsilon)} | {_eps(r.epsilon_claimed)} | "
                         f"{_eps(r.epsilon_spent)} | "
                         f"{lower}{' **above the claim**' if above else ''} | "
                         f"{f'{where}: {r.event}' if r.event else where} | {r.n_fits} | "
                         f"{r.epsilon_lower_max:.2f} |")
        lines.append("")
    return lines


#: a call site audited at this share of its charge or more is "tight" (issue: ≥ 0.9)
TIGHT = 0.9


def _distinct_calls(d: pd.DataFrame, ratio: pd.Series, exact: pd.Series | None = None) -> str:
    """The count by distinct call (method and step without its call number): a call audited
    in several setups (another ε, the other-form twin) counts once, at its best ratio; the
    calls below :data:`TIGHT` on every setup are named; with ``exact`` (exact pair cost over
    the charge), how many distinct calls some setup's pair holds to :data:`TIGHT` exactly.

    >>> d = pd.DataFrame({"method": ["dpm"] * 3,
    ...                   "step": ["#0 counts (laplace)", "#0 counts (laplace)", "#2 split (em)"]})
    >>> _distinct_calls(d, pd.Series([0.95, 0.2, 0.3]))
    ' (by distinct call, each at its best setup: **1 of 2**; below on every setup: DPM split (em))'
    >>> _distinct_calls(d, pd.Series([0.95, 0.2, 0.3]), pd.Series([1.0, 0.3, 0.92]))[-47:]
    'exact pair cost at 0.9 × the charge or more: 2)'
    """
    call = d["method"].map(label) + " " + d["step"].str.replace(r"^#\d+ ", "", regex=True)
    best = ratio.fillna(0.0).groupby(call.to_numpy()).max()
    if len(best) == len(d):
        return ""
    below = ", ".join(best.index[best < TIGHT])
    held = "" if exact is None else (
        f"; distinct calls whose pair has an exact pair cost at {TIGHT:g} × the charge or "
        f"more: {int((exact.fillna(0.0).groupby(call.to_numpy()).max() >= TIGHT).sum())}")
    return (f" (by distinct call, each at its best setup: **{int((best >= TIGHT).sum())} of "
            f"{len(best)}**" + (f"; below on every setup: {below}" if below else "") + held
            + ")")


def _call_name(step: str) -> str:
    """A call-site record's step without its call number and its final ``(mechanism)``.

    >>> _call_name("#1 epoch 2: (HHᵀ/N, VHᵀ/N) (gaussian (colored: full))")
    'epoch 2: (HHᵀ/N, VHᵀ/N)'
    """
    import re

    name, depth = re.sub(r"^#\d+ ", "", step).rstrip(), 0
    if not name.endswith(")"):
        return name
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i].rstrip()
    return name


def never_sampled(df: pd.DataFrame) -> dict[str, list[str]]:
    """Per private method, the kinds of call (steps with their numbers as ``#``) that its
    corrected-mode neighbour sweep met in its fits (the method's defaults included) and that
    no call-site record samples: no call-site evidence on them.

    >>> df = pd.DataFrame({"method": ["dpm"] * 3, "mode": ["corrected"] * 3,
    ...     "scope": ["call-site", "call-site", "sweep"],
    ...     "step": ["#0 counts_level_0 (discrete-laplace)", "#2 split_level_0 (exponential)",
    ...              "80 random pairs; kinds of call met: counts_level_# · interval_size · "
    ...              "split_level_#"]})
    >>> never_sampled(df)
    {'dpm': ['interval_size']}
    """
    from .neighbour_sweep import KIND_SEP, call_kind

    if "scope" not in df.columns:
        return {}
    d = df[df["mode"] == "corrected"] if "mode" in df.columns else df
    out: dict[str, list[str]] = {}
    for method, g in d.groupby("method", sort=False):
        met = {k.strip() for found in g.loc[g["scope"] == "sweep", "step"].astype(str)
               .str.extract(r"kinds of call met: ([^;]*)")[0].dropna()
               for k in found.split(KIND_SEP)}
        sampled = {call_kind(_call_name(s)) for s in g.loc[g["scope"] == "call-site", "step"]}
        if met - sampled:
            out[str(method)] = sorted(met - sampled)
    return out


def _with_sweeps(df: pd.DataFrame, sweeps: Path) -> pd.DataFrame:
    """``df`` and the many-seed sweep table's rows (corrected mode), when it exists."""
    if not sweeps.exists():
        return df
    extra = pd.read_parquet(sweeps).assign(mode="corrected", scope="sweep")
    return pd.concat([df, extra[[c for c in extra.columns if c in df.columns]]],
                     ignore_index=True)


def tightness_section(df: pd.DataFrame) -> list[str]:
    """Markdown lines: every corrected-mode call site with its charge, ε_lower and their
    ratio; a call below :data:`TIGHT` names the reason its method declares (``limits`` of
    its call-site setup), or says that none is known.

    >>> table = pd.DataFrame({
    ...     "method": ["dpm", "dpm"], "mode": ["corrected"] * 2, "scope": ["call-site"] * 2,
    ...     "step": ["#0 counts (discrete-laplace)", "#1 sums (bounded-discrete-laplace)"],
    ...     "epsilon_claimed": [1.0, 2.0], "delta": [0.0, 0.0], "epsilon_lower": [0.95, 1.2],
    ...     "n_fits": [10**6] * 2, "verdict": ["ok", "ok"], "limit": ["", "edges only"]})
    >>> lines = tightness_section(table)
    >>> lines[-3].split(" | ")[-1], lines[-2].split(" | ")[-1]
    ('– |', 'below 0.9: edges only |')
    """
    if "scope" not in df.columns:
        return []
    d = df[(df["scope"] == "call-site") & (df["mode"] == "corrected")]
    if d.empty:
        return []
    ratio = d["epsilon_lower"] / d["epsilon_claimed"]
    tight = int((ratio >= TIGHT).sum())
    exact_ratio = (d["epsilon_pair"] / d["epsilon_claimed"] if "epsilon_pair" in d.columns
                   else None)
    lines = ["### Tightness per call site", "",
             f"Each corrected-mode mechanism call audited on its method's worst case: ε_lower "
             f"against the ε (and δ) the call charged. **{tight} of {len(d)}** audited calls "
             f"reach {TIGHT:g} × their charge{_distinct_calls(d, ratio, exact_ratio)}; a call "
             "below says why "
             "(declared beside its method). "
             "A bug that raises a call's privacy loss by more than charge − ε_lower shows at "
             "that call. *Exact pair / charge*: the pair's loss at that call computed exactly "
             "from the two sides' inputs under the call's declared law (no sampling; above 1 "
             "it is a violation): the ceiling of ε_lower there, and what any mis-stated "
             "sensitivity that this pair exceeds is measured against.", "",
             "| method | call | charged ε (δ) | ε_lower | ε_lower / charge | exact pair / charge "
             "| draws per side | below 0.9 |", "|---|---|---|---|---|---|---|---|"]
    limits = d["limit"] if "limit" in d.columns else pd.Series("", index=d.index)
    exact = d["epsilon_pair"] if "epsilon_pair" in d.columns else pd.Series(
        math.nan, index=d.index)
    for (_, r), q, why, pair in zip(d.iterrows(), ratio, limits.fillna(""), exact,
                                    strict=True):
        lower = "no evidence" if r["verdict"] == "no evidence" else f"{r['epsilon_lower']:.3f}"
        delta = f" ({r['delta']:g})" if r.get("delta", 0) else ""
        note = "–" if q >= TIGHT else f"below {TIGHT:g}: {why or 'no reason known (a gap)'}"
        pair_q = "–" if pair is None or math.isnan(pair) else \
            f"{pair / r['epsilon_claimed']:.3f}"
        lines.append(f"| {label(r['method'])} | {r['step']} | {r['epsilon_claimed']:.3g}"
                     f"{delta} | {lower} | {0.0 if math.isnan(q) else q:.2f} | {pair_q} | "
                     f"{int(r['n_fits']):,} | {note} |")
    never = never_sampled(df)
    if never:
        lines += ["", "**Never sampled at a call site** (kinds of call, numbers as #, that the "
                  "method's neighbour sweep met in its fits, its defaults included, and no "
                  "call-site setup audits: no call-site evidence on them, only the sweep's "
                  "exact checks): " + "; ".join(f"{label(m)}: {', '.join(k)}"
                                                 for m, k in never.items()) + "."]
    elif "scope" in df.columns and (df["scope"] == "sweep").any():
        lines += ["", "**Never sampled at a call site**: none (every kind of call the "
                  "methods' neighbour sweeps met in their fits has a call-site setup that "
                  "samples it)."]
    return [*lines, ""]


def audit_section(results_dir: str | os.PathLike = "results",
                  table: str | os.PathLike | None = None) -> list[str]:
    """Markdown lines of the audit section (empty when no audit table exists).

    >>> import tempfile
    >>> inf = float("inf")
    >>> table = pd.DataFrame({
    ...     "method": ["dp_taucc", "dp_taucc", "dpm"], "mode": ["paper", "corrected", "corrected"],
    ...     "epsilon": [1.0] * 3, "epsilon_claimed": [1.0] * 3, "epsilon_spent": [inf, 1.0, 1.0],
    ...     "epsilon_lower": [3.6, 0.4, 0.2], "epsilon_lower_max": [3.8] * 3,
    ...     "scope": ["end-to-end"] * 3, "step": [""] * 3, "event": ["labels", "labels", "sums"],
    ...     "pair": ["all_zero_row"] * 3, "n_fits": [800] * 3, "git_sha": ["abc"] * 3})
    >>> results = Path(tempfile.mkdtemp())
    >>> audit_section(results)  # no table yet
    []
    >>> table.to_parquet(results / "audit.parquet")
    >>> lines = audit_section(results)
    >>> lines[0], "**DPM (corrected)**" in lines
    ('## Empirical privacy audit: ε lower bounds', True)
    """
    df = load_audit(table if table is not None else results_dir)
    if df is None or df.empty:
        return []
    v = verdicts(df)
    e2e = df[df["scope"] == "end-to-end"]["n_fits"]
    n_fits = int(e2e.max()) if len(e2e) else 0
    shas = ", ".join(sorted({str(s)[:12] for s in df["git_sha"].dropna()}))
    lines = [
        "## Empirical privacy audit: ε lower bounds", "",
        f"`python -m dptaucc.audit` (`make audit`), code {shas}. Two layers (docs/audit.md). "
        "*End to end*: each method is fitted "
        + (f"up to {n_fits} times" if n_fits else "(no end-to-end record in this table)")
        + " on small count matrices D chosen for its weak points (with settings "
        "that concentrate the budget) and as often on a neighbour D' (one count more in one "
        "cell); events derived from every declared release (thresholds and values chosen on "
        "half of the fits, counted on the other half) and raw-data recomputations are turned "
        "into a simultaneous 95 % lower bound ε_lower on the fit's privacy loss (claim: the "
        "fit's ε). *Call sites* (corrected mode): each mechanism call of a fit, with the "
        "outputs of the calls before it forced to a recorded history, is sampled on D and D' "
        "and bounded the same way (claim: the ε its ledger entry charged); three exact checks "
        "at each call add violations no draw count resolves: the pair's cost under the call's "
        "declared law above its charge, a forced history that replays on D and diverges on "
        "D', and outputs on one side more concentrated than the declared law allows; and a "
        "neighbour sweep per method checks every call on random neighbouring pairs, with no "
        "sampling (its table below). "
        "ε_lower is only a "
        "lower bound: above the claim it proves a privacy bug; at or below it proves nothing; "
        "\"no evidence\" means no event ever told D from D'. \"max measurable\" is the "
        "largest bound the fit count allows. An event reads `E [D/D']` when it is more "
        "frequent on D (`[D'/D]` the reverse), `not (E)` is its complement. ε spent is the "
        "ledger's sum, ∞ when the fit has a non-private step. "
        "Figure: `figures/audit_epsilon_lower.png`.", "",
        "**Expected.** Paper mode reproduces published code that is not private as claimed: "
        + "; ".join(f"{label(a)} ({why})" for a, why in expected_above().items())
        + " should show ε_lower above the claim. Every corrected method should stay at or "
        "below its claim.", "",
        "**Found.** Paper mode above the claim: "
        + (", ".join(v["paper_above"]) or "none") + "."
        + (f" Expected but not caught: {', '.join(v['paper_expected_missing'])} (the audit's "
           "events or fit count were too weak, not evidence of privacy)."
           if v["paper_expected_missing"] else ""),
        "",
    ]
    if v["corrected_above"]:
        lines += ["**Corrected mode above its claim — privacy bugs:** "
                  + "; ".join(v["corrected_above"]) + ".", ""]
    else:
        lines += ["**Corrected mode:** no method above its claim.", ""]
    lines += _method_tables(df)
    root = Path(table).parent if table is not None else Path(results_dir)
    lines += tightness_section(_with_sweeps(df, root / "audit_sweep.parquet"))
    from .ledger_check import ledger_section

    lines += ledger_section(df)
    from .refit_check import refit_section

    lines += refit_section(df)
    from .neighbour_sweep import sweep_section

    lines += sweep_section(root / "audit_sweep.parquet")
    for power in (root / "audit_power.parquet", root / "quick" / "audit_power.parquet"):
        if power.exists():
            from .power import power_section

            where = "figures" if power.parent == root else f"{power.parent.name}/figures"
            lines += [*power_section(power), "",
                      f"![audit power]({where}/audit_power.png)", "",
                      "ε_lower/ε per method: green the correct code, red a detected bug, grey a "
                      "missed one.", ""]
            break
    lines += primitives_section(root / "audit_primitives.parquet")
    from .secure import secure_section

    lines += secure_section(root / "audit_secure.parquet")
    return lines


def primitives_section(table: str | os.PathLike) -> list[str]:
    """REPORT lines for the mechanism-level audit (``make audit-primitives``), if stored."""
    path = Path(table)
    if not path.exists():
        return []
    df = pd.read_parquet(path)
    exact = df[df["check"] == "conformance"] if "check" in df.columns else df.iloc[:0]
    df = df.drop(exact.index)
    lines = ["### Mechanism-level audit", "",
             "Each privacy primitive on its worst-case neighbouring pair, batched "
             "(`python -m dptaucc.audit.primitives --both`): ε_lower against the ε the ledger "
             "charged for one call. A correct primitive sits just below 1; above 1 is a bug.", "",
             "ε map is the cost the independent privacy map recomputes from the noise drawn "
             "(docs/audit.md); secure-fresh draws every output from a new secure sampler.", "",
             "| primitive | path | ε | δ | ε map | ε_lower | ε_lower/ε | outputs per side | "
             "seconds |", "|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        ratio = r["epsilon_lower"] / r["epsilon"] if r["epsilon"] > 0 else float("nan")
        mapped = f"{r['epsilon_map']:.3f}" if "epsilon_map" in r else "–"
        lines.append(f"| {r['primitive']} | {r['path']} | {r['epsilon']:g} | {r['delta']:g} | "
                     f"{mapped} | {r['epsilon_lower']:.3f} | {ratio:.2f} | {int(r['n']):,} | "
                     f"{r['seconds']:.1f} |")
    if not exact.empty:
        lines += ["", "Exact conformance (deterministic): each sampler kernel fed crafted "
                  "randomness at the inputs no sampling reaches (uniforms next to 0 and 1, "
                  "Bernoulli ties on the 2⁻⁵³ grid, the exact choice's bounds and acceptance "
                  "words) and compared with an exact reference (docs/audit.md).", "",
                  "| kernel | cases | result |", "|---|---|---|"]
        lines += [f"| `{r['primitive']}` | {int(r['n'])} | "
                  f"{'exact' if r['conforms'] else 'VIOLATION: ' + str(r['failed'])} |"
                  for _, r in exact.iterrows()]
    return [*lines, ""]


def audit_figure(df: pd.DataFrame):
    """The figure of :func:`draw_figure` for an audit table (None when it has no end-to-end
    record of a private method).

    >>> table = pd.DataFrame({
    ...     "method": ["dp_taucc", "dp_taucc", "dpm"], "mode": ["paper", "corrected", "corrected"],
    ...     "epsilon": [1.0] * 3, "epsilon_claimed": [1.0] * 3, "epsilon_lower": [3.6, 0.4, 0.2],
    ...     "scope": ["end-to-end"] * 3, "n_fits": [800] * 3})
    >>> fig = audit_figure(table)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()], fig.axes[0].get_ylabel()
    (['DP-τCC', 'DPM'], 'ε_lower (95 %, simultaneous)')
    >>> plt.close(fig)
    """
    d = best_rows(df[df["scope"] == "end-to-end"])
    d = d[d["epsilon"].notna()]
    if d.empty:
        return None
    claims = sorted(set(d["epsilon_claimed"].dropna()))
    one_claim = len(claims) == 1
    methods = [a for a in ORDER if a in set(d["method"])] + sorted(set(d["method"]) - set(ORDER))
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(methods) + 2.0), 4.6),
                           layout="constrained")
    ratio = d["epsilon_lower"] / d["epsilon_claimed"].where(d["epsilon_claimed"] > 0)
    d = d.assign(y=d["epsilon_lower"] if one_claim else ratio)
    mode_names = {"paper": "paper mode (hollow)", "corrected": "corrected mode (filled)"}
    no_evidence = "no evidence (drawn at 0)"
    for i, alg in enumerate(methods):
        for j, (mode, hollow) in enumerate((("paper", True), ("corrected", False))):
            s = d[(d["method"] == alg) & (d["mode"] == mode)].sort_values("epsilon")
            if s.empty:
                continue
            c = COLORS.get(alg, "black")
            x = i + (j - 0.5) * 0.36 + 0.08 * (np.arange(len(s)) - (len(s) - 1) / 2)
            y = s["y"].to_numpy(float)
            # no event told D from D' (verdict "no evidence"): not a bound of 0, no evidence
            seen = ~np.array([_no_evidence(lo, v) for lo, v in
                              zip(y, s.get("verdict", pd.Series([""] * len(s))), strict=True)],
                             dtype=bool)
            points, = ax.plot(x[seen], y[seen], ls="none", color=c,
                              marker=MARKERS.get(alg) or _marker(alg), ms=8,
                              mfc="white" if hollow else c, mew=1.5)
            points.set_gid(f"legend:{mode_names[mode]}")
            if (~seen).any():
                blank, = ax.plot(x[~seen], np.zeros((~seen).sum()), ls="none", color=c,
                                 marker="x", ms=7, mew=1.5)
                blank.set_gid(f"legend:{no_evidence}")
    for mode, name in mode_names.items():
        if (d["mode"] == mode).any():
            ax.plot([], [], ls="none", marker="o", color="0.35", ms=8,
                    mfc="white" if mode == "paper" else "0.35", mew=1.5, label=name)
    if d["y"].isna().any() or (d.get("verdict", pd.Series(dtype=str)) == "no evidence").any():
        ax.plot([], [], ls="none", marker="x", color="0.35", ms=7, mew=1.5, label=no_evidence)
    level = claims[0] if one_claim else 1.0
    ax.axhline(level, color="black", lw=1, ls="--",
               label=f"claimed ε = {level:g}" if one_claim else "ε_lower = ε claimed")
    ax.set_xticks(range(len(methods)), [label(a) for a in methods])
    ax.set_xlim(-0.6, len(methods) - 0.4)
    ax.set_ylim(bottom=-0.25)  # markers at 0 stay whole
    ax.set_ylabel("ε_lower (95 %, simultaneous)" if one_claim
                  else "ε_lower / ε claimed (95 %, simultaneous)")
    ax.grid(axis="y", alpha=0.3)
    fits = int(d["n_fits"].max()) if "n_fits" in d else 0
    claim = (f"every fit claims ε = {level:g}" if one_claim
             else "each point against its own claimed ε")
    ax.set_title("Empirical privacy audit, end to end: the largest lower bound ε_lower per "
                 f"method and mode\n({claim}; up to {fits} fits per side; above the dashed "
                 "line = leaks more than claimed)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def draw_figure(table: str | os.PathLike, out_dir: str | os.PathLike,
                formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """ε_lower of each method and mode (hollow markers: paper mode) against the claim: one
    slot per method, a dashed line at the claimed ε when every fit claims the same ε (the
    ratio ε_lower / ε claimed and a line at 1 otherwise); non-private methods (no claim) are
    left out.

    >>> import tempfile
    >>> inf = float("inf")
    >>> table = pd.DataFrame({
    ...     "method": ["dp_taucc", "dp_taucc", "dpm"], "mode": ["paper", "corrected", "corrected"],
    ...     "epsilon": [1.0] * 3, "epsilon_claimed": [1.0] * 3, "epsilon_spent": [inf, 1.0, 1.0],
    ...     "epsilon_lower": [3.6, 0.4, 0.2], "epsilon_lower_max": [3.8] * 3,
    ...     "scope": ["end-to-end"] * 3, "step": [""] * 3, "event": ["labels", "labels", "sums"],
    ...     "pair": ["all_zero_row"] * 3, "n_fits": [800] * 3, "git_sha": ["abc"] * 3})
    >>> results = Path(tempfile.mkdtemp())
    >>> table.to_parquet(results / "audit.parquet")
    >>> [p.name for p in draw_figure(results / "audit.parquet", results / "figures")]
    ['audit_epsilon_lower.png', 'audit_epsilon_lower.pdf']
    >>> draw_figure(results / "missing.parquet", results / "figures")
    []
    """
    df = load_audit(table)
    fig = None if df is None else audit_figure(df)
    if fig is None:
        return []
    return save_figure(fig, Path(out_dir), FIGURE, formats)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dptaucc.audit.report``: print the audit section, draw its figures.

    >>> import tempfile
    >>> inf = float("inf")
    >>> table = pd.DataFrame({
    ...     "method": ["dp_taucc", "dp_taucc", "dpm"], "mode": ["paper", "corrected", "corrected"],
    ...     "epsilon": [1.0] * 3, "epsilon_claimed": [1.0] * 3, "epsilon_spent": [inf, 1.0, 1.0],
    ...     "epsilon_lower": [3.6, 0.4, 0.2], "epsilon_lower_max": [3.8] * 3,
    ...     "scope": ["end-to-end"] * 3, "step": [""] * 3, "event": ["labels", "labels", "sums"],
    ...     "pair": ["all_zero_row"] * 3, "n_fits": [800] * 3, "git_sha": ["abc"] * 3})
    >>> import contextlib, io
    >>> results = Path(tempfile.mkdtemp())
    >>> table.to_parquet(results / "audit.parquet")
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     code = main(["--results-dir", str(results)])
    >>> code, (results / "figures" / "audit_epsilon_lower.png").exists()
    (0, True)
    """
    ap = argparse.ArgumentParser(prog="python -m dptaucc.audit.report", description=plain(__doc__))
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    args = ap.parse_args(argv)
    root = Path(args.results_dir)
    print("\n".join(audit_section(root)))
    for p in draw_figure(root / "audit.parquet", root / "figures"):
        print(p)
    if (root / "audit_power.parquet").exists():
        from .power import draw_power_figure

        for p in draw_power_figure(root / "audit_power.parquet", root / "figures"):
            print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
