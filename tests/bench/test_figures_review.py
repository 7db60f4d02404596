"""Figures a reviewer accepts: every figure, drawn at paper and at quick scale from small
synthetic stored tables (the experiments' own grids, every method of the suite, made-up scores),
has no overlapping or clipped text, panels of a usable height, a legend entry for every drawn
series, and a style of its own for every legend entry.

The checks read what matplotlib drew: text extents from the renderer, the artists of every
panel (lines, shaded bands, bars, error bars) and the legends' handles. An artist drawn under
another entry's name (a curve's shading, a band's span, the paper's marks) says so with the gid
``legend:<entry>``.
"""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from dptaucc.audit.power import POWER_COLUMNS, power_figure  # noqa: E402
from dptaucc.audit.report import ORDER, audit_figure  # noqa: E402
from dptaucc.bench import figures  # noqa: E402
from dptaucc.bench.configs import EXPERIMENTS, experiment_grid  # noqa: E402
from dptaucc.methods import methods  # noqa: E402

pytestmark = pytest.mark.slow

FACTS = {m.name: m for m in methods()}
#: panels smaller than this (inches) are squashed
MIN_PANEL_HEIGHT_IN = 1.6


# ------------------------------------------------------------------ synthetic stored tables
def _score(rng, base: float) -> float:
    return float(np.clip(base + rng.normal(0, 0.08), 0, 1))


def synthetic_table(experiment: str, grid: dict, seeds: int) -> pd.DataFrame:
    """Records on the experiment's grid (seeds cut to ``seeds``), with made-up scores in range:
    every column a figure reads, non-private methods once per seed, DPNMF below its ε cap."""
    rng = np.random.default_rng(abs(hash(experiment)) % 2**32)
    axes = {k: v for k, v in grid.items() if k != "seed"}
    axes.setdefault("algorithm", ["dp_taucc"])
    axes.setdefault("mode", ["paper"])
    rows, seen = [], set()
    for values in itertools.product(*axes.values(), range(seeds)):
        job = dict(zip([*axes, "seed"], values, strict=True))
        info = FACTS[job["algorithm"]]
        eps = float(job.get("epsilon", 0.99999))
        if info.max_epsilon is not None and eps >= info.max_epsilon:
            continue
        mode = job["mode"] if info.private else None
        eps = eps if info.private else math.nan
        key = (job["algorithm"], mode, job.get("dataset"), job.get("dataset.n_cols"),
               job.get("algorithm.params.n_iterations"), job.get("algorithm.params.h"),
               None if math.isnan(eps) else eps, job["seed"])
        if key in seen:
            continue
        seen.add(key)
        base = {"dp_taucc": 0.5, "fast_taucc": 0.6, "fccm": 0.3}.get(job["algorithm"], 0.05)
        base *= min(1.0, 0.3 + eps / 2) if info.private else 1.0
        rec = {
            "run_id": f"{experiment}-{len(rows)}", "experiment": experiment,
            "algorithm": job["algorithm"], "mode": mode, "seed": job["seed"],
            "dataset": job.get("dataset", "biclusters"), "n_cols": job.get("dataset.n_cols", 500),
            "epsilon": eps, "status": "ok", "private": info.private,
            "end_to_end_dp": mode == "corrected", "epsilon_spent": eps,
            "nmi_rows": _score(rng, base), "ari_rows": _score(rng, base) - 0.05,
            "nmi_rows_private": _score(rng, base * 0.7) if (
                job["algorithm"] == "dp_taucc" and mode == "corrected") else math.nan,
            "ari_rows_private": _score(rng, base * 0.6) if (
                job["algorithm"] == "dp_taucc" and mode == "corrected") else math.nan,
            "nmi_cols": _score(rng, base) if info.coclusters else math.nan,
            "ari_cols": _score(rng, base) - 0.1 if info.coclusters else math.nan,
            "tau_hat_rc": _score(rng, 0.05 * job.get("algorithm.params.n_iterations", 4)),
            "p_n_iterations": job.get("algorithm.params.n_iterations", 4),
            "p_h": job.get("algorithm.params.h", 0.9),
            "fit_time_s": float(rng.lognormal(-5, 0.3)) * job.get("dataset.n_cols", 500) / 100,
            "blas_threads": 1, "p_n_row_clusters": 3, "k_found": 2 if rng.random() < 0.3 else 3,
        }
        rows.append(rec)
    return pd.DataFrame(rows)


def audit_table() -> pd.DataFrame:
    """End-to-end records of every private method in both modes (one without evidence)."""
    rows = []
    for i, alg in enumerate(a for a in ORDER if FACTS[a].private):
        for mode in ("paper", "corrected"):
            lower = (2.0 + 0.5 * i) if mode == "paper" else (math.nan if i == 2 else 0.3)
            rows.append({"method": alg, "mode": mode, "epsilon": 1.0, "epsilon_claimed": 1.0,
                         "epsilon_lower": lower, "scope": "end-to-end", "n_fits": 800,
                         "step": "", "pair": "p", "event": "e"})
    return pd.DataFrame(rows)


def power_table() -> pd.DataFrame:
    """The correct code and planted bugs of every private method but DPM (no catalogue bug),
    one bug missed, one far past the axis."""
    rows = []
    for alg in [m.name for m in methods() if m.private and m.name != "dpm"]:
        rows.append({"bug": "(correct code)", "method": alg, "detected": False, "ratio": 0.8})
        for j, (bug, ratio) in enumerate((("sensitivity_halved", 1.9), ("exact_counts", 93.0),
                                          ("delta_ignored", 0.6))):
            rows.append({"bug": f"{alg}.{bug}", "method": alg, "detected": j < 2,
                         "ratio": ratio})
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


@pytest.fixture(scope="module")
def grids():
    from dptaucc.bench.configs import Composer

    with Composer() as composer:
        return {(exp, scale): experiment_grid(composer, exp, scale)
                for exp in EXPERIMENTS for scale in ("paper", "quick")}


def every_figure(grids, scale: str):
    """(name, figure) of every figure of the benchmark and the audit at ``scale``."""
    for exp in EXPERIMENTS:
        df = synthetic_table(exp, grids[(exp, scale)], seeds=2 if scale == "paper" else 3)
        for name, draw in figures.experiment_plots(exp, df):
            yield name, draw()
    yield "audit_epsilon_lower", audit_figure(audit_table())
    yield "audit_power", power_figure(power_table())


# ------------------------------------------------------------------ what a reviewer checks
def _undrawn_tick_labels(fig) -> set[int]:
    """Tick labels matplotlib keeps but does not draw (ticks outside the view limits)."""
    drawn, every = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                every.update((id(tick.label1), id(tick.label2)))
            for tick in axis._update_ticks():
                drawn.update((id(tick.label1), id(tick.label2)))
    return every - drawn


def _texts(fig, renderer) -> list[tuple[str, object]]:
    """(text, window extent) of every visible, non-empty text the figure draws."""
    out = []
    undrawn = _undrawn_tick_labels(fig)
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or id(t) in undrawn:
            continue
        parent = t.axes
        if parent is not None and not parent.get_visible():
            continue
        out.append((t.get_text(), t.get_window_extent(renderer)))
    return out


def text_problems(fig) -> list[str]:
    """Texts that overlap each other, or reach outside the figure (measured at 72 dpi: the
    layout is in inches and points, so any resolution shows the same overlaps)."""
    fig.set_dpi(72)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = _texts(fig, renderer)
    canvas = fig.bbox
    problems = []
    for text, box in texts:
        if (box.x0 < canvas.x0 - 1 or box.x1 > canvas.x1 + 1 or box.y0 < canvas.y0 - 1
                or box.y1 > canvas.y1 + 1):
            problems.append(f"outside the figure: {text!r}")
    if texts:
        b = np.array([[box.x0, box.x1, box.y0, box.y1] for _, box in texts])
        wide = np.minimum(b[:, None, 1], b[None, :, 1]) - np.maximum(b[:, None, 0], b[None, :, 0])
        high = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 2], b[None, :, 2])
        for i, j in zip(*np.nonzero(np.triu((wide > 1) & (high > 1), k=1)), strict=True):
            problems.append(f"overlap: {texts[i][0]!r} / {texts[j][0]!r}")
    return problems


def squashed_panels(fig) -> list[str]:
    """Panels (not colour bars) lower than :data:`MIN_PANEL_HEIGHT_IN`."""
    dpi = fig.dpi
    out = []
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>":
            continue
        height = ax.get_window_extent().height / dpi
        if height < MIN_PANEL_HEIGHT_IN:
            out.append(f"{ax.get_title()!r}: {height:.2f} in high")
    return out


def _legend_entries(fig) -> dict[str, object]:
    entries = {}
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is None:
            continue
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            entries[text.get_text()] = handle
    return entries


def _drawn(ax) -> list[tuple[object, str]]:
    """(artist, the legend entry it needs) of every data artist of a panel."""
    in_container = {}
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            for child in container.get_children():
                if child is not None:
                    in_container[id(child)] = container.get_label()
    out = []
    for artist in [*ax.lines, *ax.collections, *ax.patches]:
        if not artist.get_visible() or isinstance(artist, QuadMesh):  # a colour bar's
            continue
        if isinstance(artist, Line2D) and len(artist.get_xdata()) == 0:
            continue  # a legend proxy
        gid = str(artist.get_gid() or "")
        name = (gid[len("legend:"):] if gid.startswith("legend:")
                else in_container.get(id(artist), artist.get_label()))
        out.append((artist, name))
    return out


def unlabelled_series(fig) -> list[str]:
    """Drawn artists without a legend entry of their own or of the entry they are drawn
    under."""
    entries = _legend_entries(fig)
    missing = []
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>":  # explained by its label
            continue
        for artist, name in _drawn(ax):
            if name not in entries:
                missing.append(f"{type(artist).__name__} {name!r} in {ax.get_title()!r}")
    return sorted(set(missing))


def _style(handle) -> tuple:
    if isinstance(handle, tuple):
        handle = next((h for h in handle if isinstance(h, Line2D)), handle[0])
    if isinstance(handle, ErrorbarContainer):
        handle = handle.lines[0]
    if isinstance(handle, Line2D):
        rgba = tuple(np.round(to_rgba(handle.get_color()), 3))
        face = handle.get_markerfacecolor()
        filled = face not in ("none", "white") and to_rgba(face) != to_rgba("white")
        line = handle.get_linestyle() if handle.get_linewidth() > 0 else "None"
        return ("line", rgba, line, handle.get_marker(), filled)
    if isinstance(handle, Patch):
        return ("patch", tuple(np.round(handle.get_facecolor(), 3)))
    return (type(handle).__name__, id(handle))


def _series_of(fig, name: str):
    """The artist a legend entry names as drawn in a panel (its line, error bars or patch),
    else None."""
    for ax in fig.axes:
        for container in ax.containers:
            if container.get_label() == name:
                return container
        for artist in [*ax.lines, *ax.patches]:
            if artist.get_label() == name:
                return artist
    return None


def _grey(rgba) -> bool:
    r, g, b = rgba[:3]
    return max(r, g, b) - min(r, g, b) < 0.1


def shared_styles(fig) -> list[str]:
    """Legend entries drawn in the same style (colour, line, marker, filled or not): the style
    of the series in the panels, else of the legend's handle; and two entries shaded in grey
    (two grey bands cannot be told apart where they overlap)."""
    by_style: dict[tuple, list[str]] = {}
    greys = []
    for name, handle in _legend_entries(fig).items():
        drawn = _series_of(fig, name)
        by_style.setdefault(_style(handle if drawn is None else drawn), []).append(name)
        shades = [a for ax in fig.axes for a in [*ax.collections, *ax.patches]
                  if a.get_gid() == f"legend:{name}"]
        if shades and _grey(to_rgba(np.asarray(shades[0].get_facecolor()).reshape(-1, 4)[0])):
            greys.append(name)
    out = [" = ".join(names) for names in by_style.values() if len(names) > 1]
    return out + ([" = ".join(greys) + " (grey shading)"] if len(greys) > 1 else [])


def review(fig) -> list[str]:
    return (text_problems(fig) + squashed_panels(fig) + [f"no legend entry: {s}" for s in
                                                          unlabelled_series(fig)]
            + [f"same style: {s}" for s in shared_styles(fig)])


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("scale", ["paper", "quick"])
def test_every_figure_passes_review(grids, scale):
    names, problems = [], {}
    for name, fig in every_figure(grids, scale):
        names.append(name)
        found = review(fig)
        if found:
            problems[name] = found
        plt.close(fig)
    assert len(names) == 17, names  # 15 of the paper and audit, 2 under one row replaced
    assert problems == {}


def test_every_built_in_method_has_a_style_of_its_own():
    styles = [(m.color, m.marker) for m in methods()]
    assert len(set(styles)) == len(styles)
    assert len({m.color for m in methods()}) == len(styles)


def test_the_review_catches_what_a_reviewer_sends_back():
    """Each check fails on the defect it is for: overlapping tick labels, a squashed panel, a
    band without legend entry, two entries in one style."""
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.set_xticks(np.linspace(0, 1, 40), [f"{v:.5f}" for v in np.linspace(0, 1, 40)])
    assert any(p.startswith("overlap") for p in text_problems(fig))
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(9, 1.2))
    assert len(squashed_panels(fig)) == 3
    plt.close(fig)

    fig, ax = plt.subplots()
    ax.axhline(0.5, color="k", ls="--", label="reference (not DP)")
    ax.axhspan(0.4, 0.6, color="k", alpha=0.1)
    ax.plot([0, 1], [0, 1], color="tab:blue", label="a")
    ax.plot([0, 1], [1, 0], color="tab:blue", label="b")
    fig.legend()
    assert unlabelled_series(fig) == ["Rectangle '' in ''"]
    assert shared_styles(fig) == ["a = b"]
    plt.close(fig)

    fig, ax = plt.subplots()
    for name, colour, line in (("one (not DP)", "black", "--"), ("two (not DP)", "tab:gray", "-.")):
        ax.axhline(0.5, color=colour, ls=line, label=name)
        ax.axhspan(0.4, 0.6, color=colour, alpha=0.12).set_gid(f"legend:{name}")
    fig.legend()
    assert unlabelled_series(fig) == []
    assert shared_styles(fig) == ["one (not DP) = two (not DP) (grey shading)"]
    plt.close(fig)
