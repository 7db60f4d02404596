"""The audit's power: the quick audit of the correct code and of every catalogue bug.

:func:`measure_power` runs ``python -m dptaucc.audit --size quick`` in-process for each
selected method, once on the correct code and once per bug of :mod:`dptaucc.audit.bugs`
(stopping at the first violation), and tabulates: bug, method, kind, detected, ε_lower/ε of the
record that decided, its scope and step or event, wall seconds. A detected bug is a gate
failure (exit 3); a violation on the correct code is a false alarm. :func:`power_section` and
:func:`draw_power_figure` turn the stored table into REPORT's section and figure.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from .catalogue import bugs_of
from .experiment import plan, run_all, violations

__all__ = ["measure_power", "power_output", "power_section", "power_figure",
           "draw_power_figure", "POWER_COLUMNS"]

POWER_COLUMNS = ["bug", "method", "kind", "detected", "ratio", "epsilon_lower",
                 "epsilon_claimed", "scope", "where", "wall_s", "n_records"]


def power_output(results_dir: str | Path = "results") -> Path:
    """Where the power table of a results folder is stored (beside the quick audit).

    >>> power_output("my_results").as_posix()
    'my_results/quick/audit_power.parquet'
    """
    return Path(results_dir) / "quick" / "audit_power.parquet"


def _ratio(r: dict) -> float:
    c = r["epsilon_claimed"]
    return r["epsilon_lower"] / c if c and c > 0 and not math.isnan(c) else math.nan


def _row(bug, method: str, kind: str, records: list[dict], wall: float) -> dict:
    found = violations(records)
    scored = [r for r in records if r["mode"] == "corrected" and not math.isnan(_ratio(r))
              and r["scope"] not in ("ledger", "refit", "sampler", "sweep")]  # bounds only
    top = found[0] if found else max(scored, key=_ratio, default=None)
    return {"bug": bug or "(correct code)", "method": method, "kind": kind,
            "detected": bool(found),
            "ratio": math.nan if top is None else _ratio(top),
            "epsilon_lower": math.nan if top is None else top["epsilon_lower"],
            "epsilon_claimed": math.nan if top is None else top["epsilon_claimed"],
            "scope": "" if top is None else top["scope"],
            "where": "" if top is None else (
                top["event"] if top["scope"] == "sweep" and top["event"]  # what it found
                else top["step"] or f"{top['pair']}: {top['event']}"),
            "wall_s": wall, "n_records": len(records)}


def measure_power(cfg: dict, methods: list[str] | None, *, n_jobs: int, out: Path | None,
                  progress: bool = True):
    """The power table of ``methods`` (default: the config's methods that have catalogue
    bugs), rewritten to ``out`` after every run.

    >>> import contextlib, io
    >>> from .experiment import load_config
    >>> cfg = {**load_config("quick"), "n_fits": 20, "n_fits_per_method": {}}
    >>> with contextlib.redirect_stdout(io.StringIO()):  # fast_taucc has no catalogue bug
    ...     table = measure_power(cfg, ["fast_taucc"], n_jobs=1, out=None, progress=False)
    >>> table[["bug", "method", "detected"]].to_dict("records")
    [{'bug': '(correct code)', 'method': 'fast_taucc', 'detected': False}]
    """
    import pandas as pd

    names = [m for m in (methods or cfg["methods"]) if bugs_of(m) or methods]
    rows = []
    for method in names:
        jobs = [j for j in plan(cfg, [method]) if j.mode in ("corrected", None)]
        for bug in [None, *bugs_of(method)]:
            t0 = time.perf_counter()
            recs = run_all(cfg, jobs, None, n_jobs=n_jobs, progress=progress,
                           bug=None if bug is None else bug.name,
                           stop_at_violation=bug is not None)
            rows.append(_row(None if bug is None else bug.name, method,
                             "" if bug is None else bug.kind, recs, time.perf_counter() - t0))
            print(f"power: {rows[-1]['bug']}: detected={rows[-1]['detected']} "
                  f"ratio={rows[-1]['ratio']:.2f} {rows[-1]['scope']} {rows[-1]['where']} "
                  f"({rows[-1]['wall_s']:.0f} s)", flush=True)
            if out is not None:
                out.parent.mkdir(parents=True, exist_ok=True)
                pd.DataFrame(rows, columns=POWER_COLUMNS).to_parquet(out, index=False)
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def power_section(table: str | Path) -> list[str]:
    """Markdown lines: the share of bugs detected, false alarms, and one row per run.

    >>> import tempfile
    >>> import pandas as pd
    >>> table = Path(tempfile.mkdtemp()) / "audit_power.parquet"
    >>> pd.DataFrame([
    ...     {"bug": "(correct code)", "method": "dpm", "kind": "", "detected": False, "ratio": 0.7,
    ...      "epsilon_lower": 0.7, "epsilon_claimed": 1.0, "scope": "call-site", "where": "#0",
    ...      "wall_s": 3.0, "n_records": 5},
    ...     {"bug": "dpm.halved", "method": "dpm", "kind": "sensitivity off by 2",
    ...      "detected": True, "ratio": 1.9, "epsilon_lower": 1.9, "epsilon_claimed": 1.0,
    ...      "scope": "call-site", "where": "#0", "wall_s": 2.0, "n_records": 1},
    ... ], columns=POWER_COLUMNS).to_parquet(table)
    >>> lines = power_section(table)
    >>> lines[2].startswith("Detected: **1 of 1** catalogue bugs"), len(lines)
    (True, 8)
    >>> power_section(table.parent / "missing.parquet")
    []
    """
    import pandas as pd

    path = Path(table)
    if not path.exists():
        return []
    df = pd.read_parquet(path)
    bugs = df[df["bug"] != "(correct code)"]
    correct = df[df["bug"] == "(correct code)"]
    lines = ["## Audit power (catalogue of known privacy bugs)", "",
             f"Detected: **{int(bugs['detected'].sum())} of {len(bugs)}** catalogue bugs "
             f"(gate exit 3 at the quick size); false alarms on the correct code: "
             f"**{int(correct['detected'].sum())} of {len(correct)}** methods. ε_lower/ε is "
             "the deciding record's lower bound over its claim (the fit's ε end to end, the "
             "charged ε at a call site); above 1 is a violation.", "",
             "| bug | method | kind | detected | ε_lower/ε | scope | step or event | s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        lines.append(f"| {r.bug} | {r.method} | {r.kind or '–'} | "
                     f"{'yes' if r.detected else 'no'} | "
                     f"{'– (exact check)' if math.isnan(r.ratio) else f'{r.ratio:.2f}'} | "
                     f"{r.scope or '–'} | "
                     f"{str(r.where).replace('|', '/')} | {r.wall_s:.0f} |")
    return lines


AXIS_CAP = 4.0  # ratios above are cut at the axis and labelled
#: bar colours: the correct code, a detected bug (by a sampled bound, or by an exact check
#: that gives no ε bound: the ledger check, the neighbour sweep), a missed one
POWER_COLOURS = {"correct": "tab:green", "detected": "tab:red", "exact": "tab:red",
                 "missed": "tab:grey"}


def power_figure(df):
    """The figure of :func:`draw_power_figure`: one panel per private method of the suite
    (display names; a method without catalogue bugs says so), a legend for the colours.

    >>> import pandas as pd
    >>> fig = power_figure(pd.DataFrame([
    ...     {"bug": "(correct code)", "method": "dp_taucc", "detected": False, "ratio": 0.7},
    ...     {"bug": "dp_taucc.table_sensitivity_halved", "method": "dp_taucc", "detected": True,
    ...      "ratio": 1.9}]))
    >>> [ax.get_title() for ax in fig.axes][:2], fig.legends[0].get_texts()[1].get_text()
    (['DP-τCC', 'DP-τCC (row)'], 'planted bug, detected (ε_lower > ε)')
    >>> fig = power_figure(pd.DataFrame([  # found by the sweep: no ε bound, a hatched bar
    ...     {"bug": "dpm.halved", "method": "dpm", "detected": True, "ratio": float("nan"),
    ...      "scope": "sweep"}]))
    >>> [t.get_text() for t in fig.legends[0].get_texts()][0]
    'planted bug, detected by an exact check (no ε bound: full bar, hatched)'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from dptaucc.bench.aggregate import label
    from dptaucc.methods import methods as all_methods

    private = [m.name for m in all_methods() if m.private]
    shown = private + [m for m in dict.fromkeys(df["method"]) if m not in private]
    ncols = min(3, len(shown))
    nrows = math.ceil(len(shown) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 2.9 * nrows + 1.3),
                             squeeze=False, layout="constrained")
    for ax in axes.flat[len(shown):]:  # unused: removed, ticks and all (a hidden panel's
        ax.remove()                      # tick labels still reach past the layout's edge)
    names = {"correct": "correct code (must stay ≤ 1)",
             "detected": "planted bug, detected (ε_lower > ε)",
             "exact": "planted bug, detected by an exact check (no ε bound: full bar, hatched)",
             "missed": "planted bug, missed (no evidence of it)"}
    present: set[str] = set()
    for ax, method in zip(axes.flat, shown, strict=False):
        sub = df[df["method"] == method]
        ax.set_title(label(method), fontsize=10)
        if sub.empty:
            from .catalogue import bugs_of

            declared = len(bugs_of(method))
            why = (f"{declared} known bug{'s' if declared != 1 else ''} declared, none in this "
                   "power table:\npower not measured here" if declared
                   else "no planted bug declared yet:\npower not measured")
            ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        bars = [b.split(".", 1)[-1].replace("_", " ") for b in sub["bug"]]
        values = [0.0 if math.isnan(v) else float(v) for v in sub["ratio"]]
        kinds = ["correct" if b == "(correct code)" else
                 ("missed" if not d else "exact" if math.isnan(float(r)) else "detected")
                 for b, d, r in zip(sub["bug"], sub["detected"], sub["ratio"], strict=True)]
        present.update(kinds)
        right = max(2.0, 1.1 * min(max(values, default=0.0), AXIS_CAP))
        widths = [right if k == "exact" else min(v, right) for v, k in zip(values, kinds,
                                                                           strict=True)]
        drawn = ax.barh(range(len(values)), widths, color=[POWER_COLOURS[k] for k in kinds])
        scopes = list(sub["scope"]) if "scope" in sub else [""] * len(kinds)
        for i, (bar, kind) in enumerate(zip(drawn, kinds, strict=True)):
            bar.set_gid(f"legend:{names[kind]}")
            if kind == "exact":  # an exact check found it: no ε to draw, say which check
                bar.set_hatch("//")
                bar.set_edgecolor("white")
                ax.text(right, i, f"{scopes[i] or 'exact'} ", ha="right", va="center",
                        fontsize=7, color="white")
        for i, v in enumerate(values):  # a bar past the axis keeps its value as a label
            if v > right:
                ax.text(right, i, f"{v:.0f} →", ha="right", va="center", fontsize=7,
                        color="white")
        ax.axvline(1.0, color="black", lw=1).set_gid("legend:ε_lower = ε (the claim)")
        ax.set_xlim(0.0, right)
        ax.set_yticks(range(len(values)), bars, fontsize=7)
        ax.set_xlabel("ε_lower / ε")
    handles = [Patch(facecolor=POWER_COLOURS[k], hatch="//" if k == "exact" else None,
                     edgecolor="white" if k == "exact" else POWER_COLOURS[k], label=names[k])
               for k in names if k in present]
    handles.append(Line2D([], [], color="black", lw=1, label="ε_lower = ε (the claim)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=2, frameon=False, fontsize=9)
    fig.suptitle("Audit power: the quick audit of the correct code and of each planted bug "
                 "(ε_lower / ε of the deciding record;\nright of the line = a violation, which "
                 "a planted bug should show and the correct code must not)", fontsize=10)
    return fig


def draw_power_figure(table: str | Path, out_dir: str | Path) -> list[Path]:
    """Per method, ε_lower/ε of the correct code and of each bug (a line at 1; no evidence
    drawn as 0), with a panel for every private method (:func:`power_figure`).

    >>> import tempfile
    >>> import pandas as pd
    >>> table = Path(tempfile.mkdtemp()) / "audit_power.parquet"
    >>> pd.DataFrame([
    ...     {"bug": "(correct code)", "method": "dpm", "kind": "", "detected": False, "ratio": 0.7,
    ...      "epsilon_lower": 0.7, "epsilon_claimed": 1.0, "scope": "call-site", "where": "#0",
    ...      "wall_s": 3.0, "n_records": 5},
    ...     {"bug": "dpm.halved", "method": "dpm", "kind": "sensitivity off by 2",
    ...      "detected": True, "ratio": 1.9, "epsilon_lower": 1.9, "epsilon_claimed": 1.0,
    ...      "scope": "call-site", "where": "#0", "wall_s": 2.0, "n_records": 1},
    ... ], columns=POWER_COLUMNS).to_parquet(table)
    >>> [p.name for p in draw_power_figure(table, table.parent / "figures")]
    ['audit_power.png', 'audit_power.pdf']
    """
    import pandas as pd

    from dptaucc.bench.savefig import save_figure

    fig = power_figure(pd.read_parquet(table))
    return save_figure(fig, Path(out_dir), "audit_power", ("png", "pdf"))
