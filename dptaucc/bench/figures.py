"""``python -m dptaucc.bench.figures``: every paper/supplement figure from the stored tables.

Reads only ``results/<experiment>.parquet`` (no recomputation) and writes PDF + PNG to
``results/figures/``. Aggregation follows the authors' notebooks (:mod:`aggregate`: mean ± one
sample standard deviation per point; non-private methods pooled into a horizontal band).
Algorithms are discovered from the tables: the paper's methods are drawn where the paper draws
them, and any other algorithm found (e.g. your own) is added to every comparison, with a style
of its own. Experiments other than the paper's get a generic "NMI vs ε" figure. Every title
states the scale read off the table (seeds per point).
"""

from __future__ import annotations

import argparse
import math
import os
import textwrap
from collections.abc import Callable, Iterator, Sequence
from functools import cache, lru_cache, partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from dptaucc._cli import plain  # noqa: E402
from dptaucc.bench.aggregate import (  # noqa: E402
    COLORS,
    EXTRA_METHODS,
    LABELS,
    LINESTYLES,
    MARKERS,
    PAPER_METHODS,
    label,
    mean_std,
    neighbours_text,
    ok,
    pooled,
)
from dptaucc.bench.collect import load_table  # noqa: E402
from dptaucc.bench.row_relation import (  # noqa: E402
    REFERENCE,
    RELATION_NOTE,
    ROW_LEVEL,
    VARIANTS,
    crossover,
)
from dptaucc.bench.savefig import save_figure as _save  # noqa: E402
from dptaucc.bench.study import PAPER_EXPERIMENTS, study  # noqa: E402

DATASET_ORDER = ("classic3", "cstr", "hitech", "k1b", "reviews", "sports", "tr11", "tr41")
METRIC_NAMES = {"nmi_rows": "NMI (rows)", "ari_rows": "ARI (rows)", "nmi_cols": "NMI (columns)",
                "ari_cols": "ARI (columns)", "tau_rc": r"$\tau_{R|C}$",
                "tau_hat_rc": r"$\hat\tau_{R|C}$",
                "fit_time_s": "fit time (s)"}
#: the range of each kind of score (by the metric name's first word): bands are clipped to it
METRIC_RANGE = {"nmi": (0.0, 1.0), "ari": (-0.5, 1.0), "tau": (0.0, 1.0)}
#: the legend's name of the paper's evaluation protocol (rows assigned to the released
#: prototypes by reading the data), never a DP output
PAPER_PROTOCOL = "paper protocol: reads the data, not DP"
#: styles of algorithms without a fixed colour (a user's own), handed out in name order
_SPARE_COLORS = ("tab:pink", "tab:cyan", "#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                 "#66a61e", "#e6ab02", "#a6761d", "#b2df8a")
_SPARE_MARKERS = ("s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
_styles: dict[str, tuple[str, str]] = {}


def register_algorithms(names: Sequence[str]) -> None:
    """Give every algorithm without a fixed style its own colour and marker (in name order, so
    one algorithm keeps its style across all figures drawn after this call)."""
    for name in sorted(set(names) - set(COLORS) - set(_styles)):
        i = len(_styles)
        _styles[name] = (_SPARE_COLORS[i % len(_SPARE_COLORS)],
                         _SPARE_MARKERS[(i + i // len(_SPARE_COLORS)) % len(_SPARE_MARKERS)])


def style(alg: str) -> tuple[str, str]:
    """(colour, marker) of an algorithm: its method facts' for the built-in ones (distinct
    per method), registered for the others."""
    if alg in COLORS:
        return COLORS[alg], MARKERS[alg]
    if alg not in _styles:
        register_algorithms([alg])
    return _styles[alg]


def discovered(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Algorithms of a table that the paper does not have, split into (private, non-private)
    by the table's ``private`` column."""
    mine = sorted(set(df["algorithm"].dropna()) - set(LABELS))
    private = {a for a in mine
               if df.loc[df["algorithm"] == a, "private"].fillna(True).astype(bool).any()}
    return [a for a in mine if a in private], [a for a in mine if a not in private]


def scale_text(points: Sequence[int], bands: Sequence[int] = ()) -> str:
    """The scale of a figure read off its points: "10 seeds per point", and for the
    non-private methods' bands how many runs each pools."""
    parts = []
    if points:
        parts.append(f"{_span(points)} seed{'s' if max(points) > 1 else ''} per point")
    if bands:
        parts.append(f"a non-private method's band: mean ± 1 std of its {_span(bands)} "
                     f"run{'s' if max(bands) > 1 else ''} (it takes no ε)")
    return "; ".join(parts) if parts else "no successful runs"


def _span(ns: Sequence[int]) -> str:
    lo, hi = int(min(ns)), int(max(ns))
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


#: a figure title's size (pt), and the inches of height per line of it and of a legend (9-10 pt)
_TITLE_PT = 11
_TITLE_LINE_IN, _LEGEND_LINE_IN = 0.22, 0.21


def _grid(n: int, ncols: int = 4, size=(3.6, 2.9)):
    ncols = min(ncols, max(n, 1))
    nrows = math.ceil(max(n, 1) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows),
                             squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    fig._dptaucc_panels = (nrows, size[1])
    return fig, list(axes.flat)


def _fit_height(fig: Figure) -> None:
    """Give the panels their full height: the figure grows by what its title and legend take
    (a figure of one row of panels with a long caption is otherwise squashed flat)."""
    nrows, panel_h = getattr(fig, "_dptaucc_panels", (1, fig.get_figheight()))
    lines = 0 if fig._suptitle is None else fig._suptitle.get_text().count("\n") + 1
    legend_lines = 0
    for legend in fig.legends:
        rows = math.ceil(len(legend.get_texts()) / max(legend._ncols, 1))
        legend_lines += rows + legend.get_title().get_text().count("\n") + (
            1 if legend.get_title().get_text() else 0)
    fig.set_figheight(nrows * panel_h + _TITLE_LINE_IN * lines
                      + _LEGEND_LINE_IN * legend_lines + 0.2)


#: the width of an average character of the figures' font, in em (DejaVu Sans: about 0.6)
_EM_PER_CHAR = 0.62


def _wrap(text: str, fig: Figure, fontsize: float, inches: float | None = None) -> str:
    """Each line of ``text`` wrapped to ``inches`` (default: the figure's width), less a
    margin."""
    inches = fig.get_figwidth() if inches is None else inches
    width = max(40, int((inches - 0.4) * 72 / (_EM_PER_CHAR * fontsize)))
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False)
                     for line in text.splitlines())


def _suptitle(fig: Figure, text: str) -> None:
    """The figure's title, each line wrapped to its width."""
    fig.suptitle(_wrap(text, fig, _TITLE_PT), fontsize=_TITLE_PT)


def _datasets(df: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(df["dataset"]))
    return sorted(present, key=lambda d: (DATASET_ORDER.index(d) if d in DATASET_ORDER else 99, d))


def metric_range(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take (``METRIC_RANGE`` by its first word; else unbounded)."""
    return METRIC_RANGE.get(metric.split("_")[0], (-math.inf, math.inf))


def _covered_by(artist, name: str) -> None:
    """Mark ``artist`` as drawn under the legend entry ``name`` (a curve's shading, a band's
    span, the paper's marks): the figure test finds the entry of every drawn artist."""
    artist.set_gid(f"legend:{name}")


def _curve(ax, d: pd.DataFrame, x: str, metric: str, alg: str, line: str = "-",
           counts: list[int] | None = None, name: str | None = None,
           hollow: bool = False) -> pd.DataFrame:
    """Mean ± std of ``metric`` against ``x``, the band clipped to the metric's range; the
    seeds of each point go to ``counts``. ``hollow`` markers mark a series that is not a DP
    output. Returns the plotted points (empty: none)."""
    s = mean_std(d, [x], metric).sort_values(x)
    if s.empty:
        return s
    c, marker = style(alg)
    name = label(alg) if name is None else name
    ax.plot(s[x], s["mean"], line, marker=marker, color=c, ms=4, lw=1.4, label=name,
            mfc="white" if hollow else c, mew=1.1)
    lo, hi = metric_range(metric)
    sd = s["std"].fillna(0)
    shade = ax.fill_between(s[x], np.clip(s["mean"] - sd, lo, hi),
                            np.clip(s["mean"] + sd, lo, hi), color=c, alpha=0.18, lw=0)
    _covered_by(shade, name)
    if counts is not None:
        counts.extend(int(n) for n in s["n"])
    return s


def _band(ax, d: pd.DataFrame, metric: str, alg: str, counts: list[int] | None = None) -> None:
    """A non-private method's pooled mean (its own line style) and ± 1 std (shaded)."""
    m, sd, n = pooled(d, metric)
    if n == 0:
        return
    c, _ = style(alg)
    name = f"{label(alg)} (not DP)"
    ax.axhline(m, color=c, lw=1.4, ls=LINESTYLES.get(alg, "--"), label=name)
    if not math.isnan(sd):
        lo, hi = metric_range(metric)
        _covered_by(ax.axhspan(max(m - sd, lo), min(m + sd, hi), color=c, alpha=0.12, lw=0),
                    name)
    if counts is not None:
        counts.append(n)


def row_series(d: pd.DataFrame, alg: str, mode: str, metric: str) -> list[tuple[str, str, str]]:
    """(column, line style, legend name) of each row-score series of one method.

    In corrected mode a method's line is what it releases: its DP row labels
    (``<metric>_private``, solid) when it releases some; the paper's protocol (rows assigned to
    the released prototypes by reading the data) follows as its own dotted series, named as
    not DP. In paper mode the line is the paper's protocol, as the paper plots it. A method of
    your own is named "not declared DP" unless it releases DP row labels; one without an
    evaluation protocol of its own (its protocol score is that of the DP labels it releases)
    has the one series."""
    private = f"{metric}_private"
    # a method of your own may have no evaluation protocol: its score is then that of the row
    # labels it exposes, which it has not declared DP
    scored = (f"{label(alg)}: {PAPER_PROTOCOL}" if alg in LABELS
              else f"{label(alg)} (not declared DP)")
    done = ok(d)
    if mode == "corrected" and private in d and done[private].notna().any():
        dp = [(private, "-", f"{label(alg)}: its DP row labels (DP)")]
        same = np.isclose(done[private].astype(float), done[metric].astype(float),
                          rtol=0, atol=1e-12, equal_nan=True).all()
        return dp if same else dp + [(metric, ":", scored)]
    return [(metric, ":" if mode == "corrected" else "-", scored)]


@cache
def max_epsilon(alg: str) -> float | None:
    """The ε bound of an algorithm's protocol (``max_epsilon`` of its packaged config)."""
    from omegaconf import OmegaConf

    from dptaucc.bench.configs import config_dir

    path = config_dir() / "algorithm" / f"{alg}.yaml"
    if not path.is_file():
        return None
    value = OmegaConf.load(path).get("max_epsilon")
    return None if value is None else float(value)


def coverage_note(shown: dict[str, pd.DataFrame], x: str, eps: float | None = None) -> str:
    """Which methods have no points in a panel, or stop short of its ε axis (e.g. DPNMF, which
    runs for ε < 1 only), and why when the protocol says so ("" when all have points)."""
    ends = [float(s[x].max()) for s in shown.values() if not s.empty]
    notes = []
    for alg, s in shown.items():
        cap = max_epsilon(alg)
        why = f"runs for ε < {cap:g} only" if cap is not None else ""
        if s.empty:
            capped = cap is not None and (eps is None or eps >= cap)
            notes.append(f"{label(alg)}: no points" + (f" ({why})" if capped else ""))
        elif x == "epsilon" and ends and float(s[x].max()) < max(ends):
            notes.append(f"{label(alg)}: no points above ε = {float(s[x].max()):g}"
                         + (f" ({why})" if why else ""))
    return "; ".join(notes)


def titled(ax, title: str, note: str) -> None:
    """A panel's title, with its coverage note (if any) below in smaller type, wrapped to the
    panel's share of the figure's width."""
    if note:
        fig = ax.get_figure()
        ncols = ax.get_subplotspec().get_gridspec().ncols
        ax.set_title(f"{title}\n{_wrap(note, fig, 8, fig.get_figwidth() / ncols)}", fontsize=8)
    else:
        ax.set_title(title)


def title_panels(panels: Sequence[tuple]) -> list[str]:
    """Title each ``(ax, title, note, methods)`` (``methods``: the labels of the methods the
    panel draws, or would draw); a note part ("DPNMF: ...") found in every panel that draws its
    method is left out of the panels and returned, to be said once in the figure's caption."""
    parts = [[p for p in note.split("; ") if p] for _, _, note, _ in panels]

    def everywhere(part: str) -> bool:
        who = part.split(":", 1)[0]
        return all(part in mine for mine, (*_, drawn) in zip(parts, panels, strict=True)
                   if who in drawn)

    shared = list(dict.fromkeys(p for mine in parts for p in mine if everywhere(p)))
    for (ax, title, _, _), mine in zip(panels, parts, strict=True):
        titled(ax, title, "; ".join(p for p in mine if p not in shared))
    return shared


def caption(title: str, algs: Sequence[str], scale: str, notes: Sequence[str] = ()) -> str:
    """A figure's title: what it shows, the neighbour relation of each DP method's ε (the
    relation ε refers to in corrected mode), the scale and the notes every panel shares."""
    return "\n".join([title, neighbours_text(algs), scale, *notes])


def asked_clusters(df: pd.DataFrame) -> pd.Series:
    """The row-cluster count each run asked for (``p_n_row_clusters`` or ``p_n_clusters``)."""
    asked = pd.Series(np.nan, index=df.index)
    for col in ("p_n_row_clusters", "p_n_clusters"):
        if col in df:
            asked = asked.fillna(pd.to_numeric(df[col], errors="coerce"))
    return asked


def fewer_clusters_note(df: pd.DataFrame, algs: Sequence[str]) -> str:
    """"Fast-τCC found fewer row clusters than asked in 65 of 70 runs ..." for the
    non-private methods drawn as references ("" when none did): their score is that of what
    they found, which a method that keeps its clusters can exceed."""
    counts = []
    for alg in algs:
        d = ok(df[df["algorithm"] == alg])
        if d.empty or "k_found" not in d:
            continue
        fewer = int((pd.to_numeric(d["k_found"], errors="coerce") < asked_clusters(d)).sum())
        if fewer:
            counts.append(f"{label(alg)} in {fewer} of {len(d)}" if counts
                          else f"{label(alg)} found fewer row clusters than asked in {fewer} of "
                               f"{len(d)} runs")
    if not counts:
        return ""
    return (", ".join(counts) + " (clusters that empty during a fit are removed), which lowers "
            "the reference: a method that keeps all its clusters can score above it")


def _series_key(alg: str, column: str, mode: str) -> str:
    return "dp" if column.endswith("_private") else ("protocol" if mode == "corrected"
                                                     else "paper")


def _add_kinds(kinds: dict[str, set[str]], alg: str, series: Sequence[tuple],
               mode: str) -> None:
    """Record which kinds of series (``dp``, ``protocol``, ``paper``) a method has drawn."""
    for column, *_ in series:
        kinds.setdefault(_series_key(alg, column, mode), set()).add(alg)


def legend_text(mode: str, kinds: dict[str, set[str]], reference_note: str = "") -> str:
    """What the line styles of a score-vs-ε figure mean, for its legend's title (``kinds``:
    the methods that drew each kind of series)."""
    lines = ["Lines: mean over the seeds, shaded ± 1 std."]
    if kinds.get("dp"):
        lines.append("Solid, filled markers: the method's own DP row labels (DP).")
    if kinds.get("protocol"):
        only = [label(a) for a in [*PAPER_METHODS, *EXTRA_METHODS, *sorted(kinds["protocol"])]
                if a in kinds["protocol"] and a not in kinds.get("dp", ())]
        lines.append("Dotted, hollow markers: the paper's protocol, each row assigned to a "
                     "released prototype by reading the data (not DP)"
                     + (f"; {', '.join(dict.fromkeys(only))} release prototypes, not row "
                        "labels, so this is their only row score." if only else "."))
    if kinds.get("paper"):
        lines.append("Paper mode: every row score is the paper's protocol (reads the data, not "
                     "DP), as the paper plots it.")
    if reference_note:
        lines.append(reference_note + ".")
    return "\n".join(lines)


def fig_metric_vs_eps(df: pd.DataFrame, metric: str, mode: str, methods: Sequence[str],
                      bands: Sequence[str], title: str, xmax: float | None = 3.0,
                      calibration: pd.DataFrame | None = None):
    """One panel per dataset: mean ± 1 std of ``metric`` vs ε (bands clipped to the metric's
    range); non-DP methods as horizontal bands.

    Each method gets the series of :func:`row_series`: in corrected mode its DP output (for
    DP-τCC its DP row labels) and the paper's protocol, named as not DP. ``calibration``
    (dataset, algorithm, eps, nmi) adds the paper's values as crosses. A panel notes the methods
    without points in it (a note every panel shares is said once, in the title); the title
    ends with each method's neighbour relation and the scale (seeds per point) read off the
    plotted points; the legend's title says what the line styles mean."""
    dsets = _datasets(df)
    fig, axes = _grid(len(dsets))
    points: list[int] = []
    pooled_runs: list[int] = []
    present = set(df["algorithm"])
    panels, kinds = [], {}
    for ax, ds in zip(axes, dsets, strict=False):
        d = df[df["dataset"] == ds]
        for alg in bands:
            _band(ax, d[d["algorithm"] == alg], metric, alg, pooled_runs)
        shown = {}
        for alg in [a for a in methods if a in present]:
            sel = d[(d["algorithm"] == alg) & (d["mode"] == mode)]
            for column, line, name in row_series(sel, alg, mode, metric):
                s = _curve(ax, sel, "epsilon", column, alg, line=line, counts=points, name=name,
                           hollow=line == ":")
                shown.setdefault(alg, s)
                if not s.empty:
                    _add_kinds(kinds, alg, [(column,)], mode)
        if calibration is not None:
            cal = calibration[(calibration["dataset"] == ds) & calibration["eps"].notna()]
            cal = cal[cal["algorithm"].isin(methods)]
            for alg, c in cal.groupby("algorithm"):
                marks, = ax.plot(c["eps"], c["nmi"], "x", color=style(alg)[0], ms=7, mew=2)
                _covered_by(marks, PAPER_MARKS)
            if not cal.empty:
                ax.plot([], [], "x", color="k", ms=7, mew=2, label=PAPER_MARKS)
        panels.append((ax, ds, coverage_note(shown, "epsilon"), {label(a) for a in shown}))
        ax.set_xlabel("ε")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        if xmax is not None:
            ax.set_xlim(0, xmax)
        ax.grid(alpha=0.3)
    shared = title_panels(panels)
    _legend(fig, axes, legend_text(mode, kinds, fewer_clusters_note(df, bands)))
    _suptitle(fig, caption(title, [a for a in methods if a in present],
                           scale_text(points, pooled_runs), shared))
    _fit_height(fig)
    return fig


#: the legend entry of the paper's own values, digitised from its figure (:mod:`published`)
PAPER_MARKS = "paper's Fig. 2 (digitised)"


def _legend(fig, axes, title: str = "") -> None:
    """One legend for the figure below its panels: each entry once, a series shown with its
    shading (a curve's ± 1 std, a band's span), ``title`` above the entries."""
    from matplotlib.patches import Patch

    handles, labels = {}, []
    for ax in axes:
        shaded = {str(a.get_gid())[len("legend:"):]: a for a in [*ax.collections, *ax.patches]
                  if str(a.get_gid()).startswith("legend:")}
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
            if lab in handles:
                continue
            if lab in shaded:
                face = shaded[lab].get_facecolor()
                face = face[0] if np.ndim(face) == 2 else face
                h = (Patch(facecolor=face, lw=0), h)
            handles[lab] = h
            labels.append(lab)
    if handles:
        # as many columns as fit the figure's width: a 10-pt entry takes its text, the handle
        # and the gaps (about 4.5 em)
        entry_in = (max(map(len, labels)) * _EM_PER_CHAR + 4.5) * 10 / 72
        ncol = max(1, min(len(labels), 3, int((fig.get_figwidth() - 0.4) // entry_in)))
        legend = fig.legend([handles[lab] for lab in labels], labels, loc="outside lower center",
                            ncol=ncol, frameon=False, title=_wrap(title, fig, 9) or None,
                            title_fontsize=9, handleheight=1.3, handlelength=2.6)
        legend._legend_box.align = "left"


#: legend suffix of a score read by the evaluation protocol in the one-relation figures
PROTOCOL_SHORT = "protocol, not DP"


def _score_limits(metric: str) -> tuple[float, float]:
    """y-axis limits showing a score's whole range (a little margin), so panels compare."""
    lo, hi = metric_range(metric)
    return (lo - 0.02, hi + 0.02) if math.isfinite(lo) and math.isfinite(hi) else (None, None)


def fig_one_relation(df: pd.DataFrame, metric: str = "nmi_rows", xmax: float | None = 3.0):
    """Every method under one relation (:mod:`dptaucc.bench.row_relation`): one panel per
    dataset, mean ± 1 std of ``metric`` vs ε in corrected mode for each method private for one
    row replaced, every one scored the same way (the evaluation protocol, not DP); Fast-τCC
    (not DP) as a band."""
    dsets = _datasets(df)
    fig, axes = _grid(len(dsets), size=(3.8, 3.4))
    points: list[int] = []
    pooled_runs: list[int] = []
    present = [a for a in ROW_LEVEL if a in set(df["algorithm"])]
    panels = []
    for ax, ds in zip(axes, dsets, strict=False):
        d = df[df["dataset"] == ds]
        _band(ax, d[d["algorithm"] == REFERENCE], metric, REFERENCE, pooled_runs)
        shown = {a: _curve(ax, d[(d["algorithm"] == a) & (d["mode"] == "corrected")], "epsilon",
                           metric, a, counts=points, name=f"{label(a)}: {PROTOCOL_SHORT}")
                 for a in present}
        panels.append((ax, ds, coverage_note(shown, "epsilon"), {label(a) for a in shown}))
        ax.set_xlabel("ε (one row replaced)")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        ax.set_ylim(*_score_limits(metric))
        if xmax is not None:
            ax.set_xlim(0, xmax)
        ax.grid(alpha=0.3)
    _relation_caption(fig, axes, panels, f"{METRIC_NAMES.get(metric, metric)} vs ε under one "
                      "row replaced (corrected mode)", scale_text(points, pooled_runs))
    return fig


def _relation_caption(fig: Figure, axes: Sequence, panels: Sequence[tuple], title: str,
                      scale: str) -> None:
    """Panel titles, legend and title of a figure under one row replaced (as
    :func:`fig_metric_vs_eps` has them, with :data:`RELATION_NOTE` for the neighbour relation);
    the figure's height grows with its title and legend."""
    shared = title_panels(panels)
    _legend(fig, axes)
    _suptitle(fig, "\n".join([title, RELATION_NOTE.replace("; rows", ";\nrows"), scale,
                              *shared]))
    _fit_height(fig)


def fig_crossover(df: pd.DataFrame, metric: str = "nmi_rows", fraction: float = 0.5):
    """Where the crossover is: one panel per size m of the synthetic biclusters, mean ± 1 std
    of ``metric`` vs ε (log axis) for every method private for one row replaced, Fast-τCC's
    band and ``fraction`` of its mean (dotted); each method's first ε at or above it is
    marked (▼ just below that line, staggered so that methods crossing at one ε all show)."""
    sizes = sorted(int(m) for m in df["n_cols"].dropna().unique())
    fig, axes = _grid(len(sizes), ncols=3, size=(4.4, 3.3))
    table = crossover(df, fraction, metric)
    points: list[int] = []
    pooled_runs: list[int] = []
    present = [a for a in ROW_LEVEL if a in set(df["algorithm"])]
    panels = []
    for ax, m in zip(axes, sizes, strict=False):
        d = df[df["n_cols"] == m]
        ref = d[d["algorithm"] == REFERENCE]
        _band(ax, ref, metric, REFERENCE, pooled_runs)
        mean, _, n = pooled(ref, metric)
        if n:
            ax.axhline(fraction * mean, color="k", lw=0.9, ls=":",
                       label=f"{fraction:g} × Fast-τCC")
        shown = {a: _curve(ax, d[(d["algorithm"] == a) & (d["mode"] == "corrected")], "epsilon",
                           metric, a, counts=points, name=f"{label(a)}: {PROTOCOL_SHORT}")
                 for a in present}
        ax.set_ylim(*_score_limits(metric))
        for k, row in enumerate(table[table["n_cols"] == m].itertuples()):
            if row.first_eps == row.first_eps:  # reached within the grid
                mark, = ax.plot([row.first_eps], [row.target - 0.04 * (k + 1)], "v",
                                color=style(row.algorithm)[0], ms=6, mec="k", mew=0.6)
                _covered_by(mark, f"{label(row.algorithm)}: {PROTOCOL_SHORT}")  # its colour
        ax.set_xscale("log")
        panels.append((ax, f"m = {m} (1000 rows)", coverage_note(shown, "epsilon"),
                       {label(a) for a in shown}))
        ax.set_xlabel("ε (one row replaced, log scale)")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        ax.grid(alpha=0.3, which="both")
    _relation_caption(fig, axes, panels, f"Synthetic biclusters: "
                      f"{METRIC_NAMES.get(metric, metric)} vs ε under one row replaced "
                      f"(corrected mode); ▼ first ε reaching {fraction:g} × Fast-τCC",
                      scale_text(points, pooled_runs))
    return fig


def fig_heatmap(df: pd.DataFrame, param: str, ylabel: str, title: str,
                metric: str = "tau_hat_rc"):
    """Mean ``metric`` per (param, ε), one panel per dataset (own colour scale), as the
    authors' heatmap notebooks draw it, with one equal cell per grid value (the ε grid is
    uneven, so the axis is not to scale) and the grid's own values as ticks."""
    dsets = _datasets(df)
    size = (4.2, 3.2)
    fig, axes = _grid(len(dsets), size=size)
    agg = mean_std(df, ["dataset", param, "epsilon"], metric)
    for ax, ds in zip(axes, dsets, strict=False):
        a = agg[agg["dataset"] == ds]
        if a.empty:
            ax.set_visible(False)
            continue
        piv = a.pivot(index=param, columns="epsilon", values="mean").sort_index()
        piv = piv[sorted(piv.columns)]
        eps = np.asarray(piv.columns, float)
        ys = np.asarray(piv.index, float)
        mesh = ax.pcolormesh(np.arange(eps.size + 1) - 0.5, np.arange(ys.size + 1) - 0.5,
                             piv.to_numpy(), cmap="viridis", shading="flat")
        ax.set_xticks(np.arange(eps.size), [f"{e:g}" for e in eps], fontsize=7,
                      rotation=90 if eps.size > 6 else 0)
        ax.set_yticks(np.arange(ys.size), [f"{y:g}" for y in ys], fontsize=7)
        _thin_ticks(ax, size)
        ax.set_title(ds)
        ax.set_xlabel("ε (one column per grid value, not to scale)")
        ax.set_ylabel(ylabel)
        fig.colorbar(mesh, ax=ax, shrink=0.9, label=METRIC_NAMES.get(metric, metric))
    _suptitle(fig, f"{title}\n{_span(list(agg['n'])) if len(agg) else 0} seeds per cell (mean)")
    _fit_height(fig)
    return fig


#: the share of a heatmap panel's width (height) its cells take, beside the colour bar and the
#: axis labels
_CELLS_SHARE = (0.6, 0.62)


def _thin_ticks(ax, panel: tuple[float, float]) -> None:
    """Keep every k-th tick label of a categorical axis when the labels would not fit their
    cells (k from a 7-pt label's height and the cell size of a ``panel``-inch panel), the
    same k in every panel of the figure."""
    for axis, inches, count in ((ax.xaxis, panel[0] * _CELLS_SHARE[0], len(ax.get_xticks())),
                                (ax.yaxis, panel[1] * _CELLS_SHARE[1], len(ax.get_yticks()))):
        if count == 0:
            continue
        k = max(1, math.ceil(8.0 / (inches * 72 / count)))  # a 7-pt label needs about 8 pt
        for i, tick in enumerate(axis.get_ticklabels()):
            tick.set_visible(i % k == 0)


def _pick(values: Sequence[float], k: int = 4, prefer: Sequence[float] = ()) -> list[float]:
    vals = sorted(set(float(v) for v in values))
    chosen = [v for v in prefer if any(math.isclose(v, u) for u in vals)]
    if len(chosen) >= min(k, len(vals)):
        return chosen[:k]
    idx = np.unique(np.round(np.linspace(0, len(vals) - 1, min(k, len(vals)))).astype(int))
    return [vals[i] for i in idx]


def _shared_ylim(axes: Sequence, metric_kind: str) -> None:
    """One y range for every panel of a score figure: the score's range, widened to what is
    drawn (ARI can be negative)."""
    lo, hi = METRIC_RANGE.get(metric_kind, (0.0, 1.0))
    drawn = [y for ax in axes for line in ax.get_lines() for y in np.asarray(line.get_ydata(),
                                                                             float)
             if np.isfinite(y)]
    bottom = min([0.0, *drawn]) if drawn else 0.0
    for ax in axes:
        ax.set_ylim(max(lo, bottom) - 0.03, hi + 0.03)


def fig_synthetic(df: pd.DataFrame, metric_kind: str, mode: str, vs: str):
    """Supp. Figs. 4-5: rows and columns ``nmi``/``ari`` vs ε (four sizes) or vs m (four ε).

    Row scores follow :func:`row_series` (in corrected mode the DP output first); column scores
    are each co-clusterer's released column labels (dash-dotted). A panel notes the methods
    without points; every panel has the same y range."""
    mine, mine_bands = discovered(df)
    methods = [a for a in PAPER_METHODS if a in set(df["algorithm"])] + mine
    bands = ["fast_taucc", *mine_bands]
    if vs == "eps":
        panels = _pick(df["n_cols"].dropna(), prefer=(100, 1000, 5000, 10000))
        key, x, xlabel = "n_cols", "epsilon", "ε"
    else:
        panels = _pick(df["epsilon"].dropna(), prefer=(0.1, 0.5, 0.99999, 3.0))
        key, x, xlabel = "epsilon", "n_cols", "columns m"
    fig, axes = plt.subplots(2, len(panels), figsize=(3.8 * max(len(panels), 2), 6.4),
                             squeeze=False, layout="constrained")
    fig._dptaucc_panels = (2, 3.2)
    points: list[int] = []
    pooled_runs: list[int] = []
    titles, kinds = [], {}
    for j, p in enumerate(panels):
        for i, side in enumerate(("rows", "cols")):
            metric = f"{metric_kind}_{side}"
            ax = axes[i][j]
            d = df[np.isclose(df[key].astype(float), p)] if vs == "eps" else df
            for alg in bands:
                if vs == "eps":
                    _band(ax, d[d["algorithm"] == alg], metric, alg, pooled_runs)
                else:
                    _curve(ax, df[df["algorithm"] == alg], "n_cols", metric, alg,
                           line=LINESTYLES.get(alg, "--"), counts=points,
                           name=f"{label(alg)} (not DP)")
            shown = {}
            for alg in methods:
                sel = d[(d["algorithm"] == alg) & (d["mode"] == mode)]
                if vs != "eps":
                    sel = sel[np.isclose(sel["epsilon"].astype(float), p)]
                if side == "rows":
                    series = row_series(sel, alg, mode, metric)
                elif df.loc[df["algorithm"] == alg, metric].notna().any():
                    dp = mode == "corrected" and ok(sel)["end_to_end_dp"].fillna(False).all()
                    series = [(metric, "-.", f"{label(alg)}: its column labels "
                               f"({'DP' if dp else 'not end-to-end DP'})")]
                else:
                    continue  # a method without column labels has no column panel line
                for column, line, name in series:
                    s = _curve(ax, sel, x, column, alg, line=line, counts=points, name=name,
                               hollow=line == ":")
                    shown.setdefault(alg, s)
                    if not s.empty and side == "rows":
                        _add_kinds(kinds, alg, [(column,)], mode)
            if vs != "eps":
                ax.set_xscale("log")
            titles.append((ax, f"{'m' if vs == 'eps' else 'ε'} = {p:g}, {side}",
                           coverage_note(shown, x, eps=None if vs == "eps" else p),
                           {label(a) for a in shown}))
            ax.set_xlabel(xlabel)
            ax.set_ylabel(METRIC_NAMES.get(metric, metric))
            ax.grid(alpha=0.3)
    shared = title_panels(titles)
    _shared_ylim(list(axes.flat), metric_kind)
    text = legend_text(mode, kinds, fewer_clusters_note(df, bands))
    _legend(fig, list(axes.flat), text + "\nDash-dotted: a co-clusterer's column labels.")
    _suptitle(fig, caption(f"Synthetic biclusters, {metric_kind.upper()} vs {xlabel} "
                           f"({mode} mode; one matrix per m for every seed)", methods,
                           scale_text(points, pooled_runs), shared))
    _fit_height(fig)
    return fig


def percentiles(df: pd.DataFrame, by: Sequence[str], metric: str,
                q: tuple[float, float] = (10, 90)) -> pd.DataFrame:
    """Columns ``by + [median, lo, hi, n]``: the median and the ``q`` percentiles of
    ``metric`` over successful runs (bars that stay within the observed values)."""
    d = ok(df).dropna(subset=[metric])
    if d.empty:
        return pd.DataFrame(columns=[*by, "median", "lo", "hi", "n"])
    g = d.groupby(list(by), dropna=False)[metric]
    return g.agg(median="median", lo=lambda v: np.percentile(v, q[0]),
                 hi=lambda v: np.percentile(v, q[1]), n="count").reset_index()


def threads_text(values: Sequence[float]) -> str:
    """"BLAS threads: 2" (or "1–2" when the runs differ; "unknown" without a record)."""
    threads = sorted({int(v) for v in values if not pd.isna(v)})
    return f"BLAS threads: {_span(threads) if threads else 'unknown'}"


def fig_runtime(df: pd.DataFrame):
    """Supp. Fig. 6: median fit time vs columns, log-log, per algorithm and mode; the bars
    span the 10th to 90th percentile of the seeds (positive, unlike mean ± std on a log
    axis)."""
    fig, ax = plt.subplots(figsize=(6.8, 4.8), layout="constrained")
    points: list[int] = []
    order = {a: i for i, a in enumerate(LABELS)}
    for alg in sorted(dict.fromkeys(df["algorithm"]), key=lambda a: (order.get(a, 99), a)):
        for mode, d in df[df["algorithm"] == alg].groupby("mode", dropna=False):
            s = percentiles(d, ["n_cols"], "fit_time_s").sort_values("n_cols")
            if s.empty:
                continue
            points.extend(int(n) for n in s["n"])
            lab = label(alg) + (" (not DP)" if pd.isna(mode) else f" ({mode})")
            color, marker = style(alg)
            yerr = np.vstack([s["median"] - s["lo"], s["hi"] - s["median"]])
            ax.errorbar(s["n_cols"], s["median"], yerr=yerr, marker=marker, ms=4,
                        capsize=2, color=color, label=lab,
                        ls=LINESTYLES.get(alg, "-") if pd.isna(mode) else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("columns m (rows n = 1000)")
    ax.set_ylabel("fit time (s): median, bars 10th–90th percentile")
    ax.set_title(f"Runtime at ε = 0.99999 (serial, {threads_text(ok(df)['blas_threads'])})\n"
                 f"{scale_text(points)}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


def _modes(df: pd.DataFrame) -> list[str]:
    present = set(df["mode"].dropna())
    return [m for m in ("paper", "corrected") if m in present] + sorted(
        present - {"paper", "corrected"})


#: a figure not drawn yet: calling it draws the figure
Draw = Callable[[], Figure]


def real_data_plots(real: pd.DataFrame) -> Iterator[tuple[str, Draw]]:
    """Fig. 2 / supp. Fig. 1 (both modes) and the extra-methods comparison, your methods added."""
    from dptaucc.bench.calibration import calibration as _calibration

    # your study (your methods or data): your modes only, no paper marks, ε axis from the data
    paper = study({"fig2_real": real}).is_paper
    cal = _calibration() if paper else None
    xmax = 3.0 if paper else None
    mine, mine_bands = discovered(real)
    present = set(real["mode"].dropna())
    for mode in [m for m in ("paper", "corrected") if paper or m in present]:
        for metric, name in (("nmi_rows", "fig2_nmi"), ("ari_rows", "supp_fig1_ari")):
            yield f"{name}_{mode}", partial(
                fig_metric_vs_eps, real, metric, mode, [*PAPER_METHODS, *mine],
                ["fast_taucc", *mine_bands],
                f"{METRIC_NAMES[metric]} vs ε, real data ({mode} mode)", xmax=xmax,
                calibration=cal if (mode, metric) == ("paper", "nmi_rows") else None)
        extra = ["dp_taucc", *(a for a in EXTRA_METHODS if a != "fccm"), *mine]
        yield f"fig2_extra_methods_{mode}", partial(
            fig_metric_vs_eps, real, "nmi_rows", mode, extra, ["fast_taucc", "fccm", *mine_bands],
            f"Other privacy-preserving methods vs DP-τCC ({mode} mode)", xmax=xmax)
    if set(VARIANTS) & set(real["algorithm"]):  # every method under one row replaced
        yield "fig2_row_relation_corrected", partial(fig_one_relation, real)


def other_experiment_plots(experiment: str, df: pd.DataFrame) -> Iterator[tuple[str, Draw]]:
    """A table of your own experiment: row NMI vs ε per dataset, every algorithm it holds."""
    private = sorted(set(df.loc[df["private"].fillna(True).astype(bool), "algorithm"].dropna()))
    bands = sorted(set(df["algorithm"].dropna()) - set(private))
    for mode in _modes(df) or ["corrected"]:
        yield f"{experiment}_nmi_{mode}", partial(
            fig_metric_vs_eps, df, "nmi_rows", mode, private, bands,
            f"{experiment}: {METRIC_NAMES['nmi_rows']} vs ε ({mode} mode)", xmax=None)


def experiment_plots(exp: str, df: pd.DataFrame) -> Iterator[tuple[str, Draw]]:
    """(file stem, how to draw it) of every figure drawn from the table of ``exp``."""
    if exp == "fig2_real":
        yield from real_data_plots(df)
    elif exp in ("fig3_iterations", "supp_h"):
        param, ylabel, name = (("p_n_iterations", "iterations I", "fig3_supp_fig2_iterations_tau")
                               if exp == "fig3_iterations" else ("p_h", "h", "supp_fig3_h_tau"))
        for mode in [m for m in ("paper", "corrected") if m in set(df["mode"].dropna())]:
            yield f"{name}_{mode}", partial(
                fig_heatmap, df[df["mode"] == mode], param, ylabel,
                rf"DP-τCC: mean $\hat\tau_{{R|C}}$ of the released table vs ε and {ylabel} "
                f"({mode} mode)")
    elif exp == "supp_synthetic":
        for mode in [m for m in ("paper", "corrected") if m in set(df["mode"].dropna())]:
            for kind, num in (("nmi", 4), ("ari", 5)):
                for vs in ("eps", "size"):
                    yield (f"supp_fig{num}_synthetic_{kind}_vs_{vs}_{mode}",
                           partial(fig_synthetic, df, kind, mode, vs))
    elif exp == "supp_runtime":
        yield "supp_fig6_runtime", partial(fig_runtime, df)
    elif exp == "row_crossover":
        yield "row_crossover_nmi_vs_eps", partial(fig_crossover, df)
    else:
        yield from other_experiment_plots(exp, df)


def experiment_figures(exp: str, df: pd.DataFrame) -> Iterator[tuple[str, Figure]]:
    """(file stem, figure) of every figure drawn from the table of ``exp``."""
    for name, draw in experiment_plots(exp, df):
        yield name, draw()


def experiment_tables(results_dir: str | os.PathLike) -> dict[str, pd.DataFrame]:
    """Every collected experiment table in ``results_dir``: the paper's experiments first,
    then the rest. Other tables there (the privacy audit's ``audit.parquet``) have no job
    records (no ``run_id``/``algorithm`` columns) and are left out."""
    names = sorted(p.stem for p in Path(results_dir).glob("*.parquet"))
    names.sort(key=lambda e: PAPER_EXPERIMENTS.index(e) if e in PAPER_EXPERIMENTS else 99)
    tables = {e: load_table(results_dir, e) for e in names}
    return {e: df for e, df in tables.items()
            if df is not None and {"run_id", "algorithm"} <= set(df.columns)}


def make_figures(results_dir: str | os.PathLike = "results",
                 formats: Sequence[str] = ("pdf", "png"), n_jobs: int = 1) -> list[Path]:
    """Draw every figure whose table exists (in ``formats``); returns the files written.

    ``n_jobs > 1`` draws them in up to that many new processes, each figure from the table it
    reads (the same figures, in the same styles)."""
    results_dir = Path(results_dir)
    tables = experiment_tables(results_dir)
    register_algorithms([a for df in tables.values() for a in df["algorithm"].dropna()])
    plots = [(exp, i) for exp, df in tables.items()
             for i, _ in enumerate(experiment_plots(exp, df))]
    if n_jobs == 1 or len(plots) < 2:
        written: list[Path] = []
        for exp, df in tables.items():
            for name, draw in experiment_plots(exp, df):
                written += _save(draw(), results_dir / "figures", name, formats)
        return written
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # new processes ("spawn"): no threads or locks inherited from this one, and none of a
    # sweep's workers, whose pool would restart a worker that grows by a table or two
    with ProcessPoolExecutor(min(n_jobs, len(plots)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        drawn = [pool.submit(_draw_plot, str(results_dir), exp, i, dict(_styles),
                             tuple(formats)) for exp, i in plots]
        return [path for done in drawn for path in done.result()]


def _draw_plot(results_dir: str, exp: str, index: int, styles: dict[str, tuple[str, str]],
               formats: Sequence[str]) -> list[Path]:
    """Draw and save figure ``index`` of ``exp`` (in a worker process), with the styles the
    parent process handed out."""
    _styles.clear()
    _styles.update(styles)
    df = _table(results_dir, exp, (Path(results_dir) / f"{exp}.parquet").stat().st_mtime_ns)
    name, draw = list(experiment_plots(exp, df))[index]
    return _save(draw(), Path(results_dir) / "figures", name, formats)


@lru_cache(maxsize=1)
def _table(results_dir: str, exp: str, mtime_ns: int) -> pd.DataFrame:
    """The table of ``exp`` as last written (a worker draws several figures of one table)."""
    return load_table(results_dir, exp)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dptaucc.bench.figures", description=plain(__doc__))
    ap.add_argument("--results-dir", default=os.environ.get("DPTAUCC_RESULTS_DIR", "results"))
    args = ap.parse_args(argv)
    files = make_figures(args.results_dir)
    for p in files:
        print(p)
    print(f"{len(files)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
