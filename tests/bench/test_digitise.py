"""scripts/digitise.py on plots whose numbers are known: drawn here the way the authors'
notebooks draw theirs (lines over translucent ±1 std bands, a legend, a horizontal reference
line; pcolormesh heatmaps with a colour bar), read back, compared with the truth.

The reading error the digitiser states must cover the measured error, and a misread must be
refused, not passed on.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
EPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99999, 1.5, 2.0, 2.5, 3.0)
EPS_TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 2.5, 3.0)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


D = _load("digitise")


def _png(fig, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def notebook_style_plot(rng: np.random.Generator, dpi: int = 100):
    """An NMI-vs-ε plot drawn as the authors' notebooks draw Fig. 2, with random numbers."""
    eps = np.array(EPS)
    def walk(lo: float, hi: float) -> np.ndarray:  # a noisy curve, as the published ones
        return np.clip(rng.uniform(lo, hi) + np.cumsum(rng.normal(0, 0.06, 14)), lo, hi)

    truth = {
        "dp_taucc": (walk(0, 0.7), rng.uniform(0, 0.2, 14)),
        "dp_kmeans": (walk(0, 0.3), rng.uniform(0, 0.15, 14)),
        "dphd": (np.where(rng.random(14) < 0.7, 0.0, rng.uniform(0, 0.05, 14)),
                 np.zeros(14)),
        "dpnmf": (np.full(10, rng.uniform(0.2, 0.6)), np.zeros(10)),
        "fast_taucc": (np.array([rng.uniform(0.5, 0.9)]), np.array([rng.uniform(0.02, 0.15)])),
    }
    fig = plt.figure()
    for name, fmt in (("dp_taucc", "-b"), ("dp_kmeans", ":k"), ("dphd", "--g")):
        m, s = truth[name]
        plt.plot(eps, m, fmt, label=name)
        plt.fill_between(eps, m - s, m + s, alpha=0.2)
    m, s = truth["dpnmf"]
    plt.plot(eps[:10], m, "-.c", label="dpnmf")
    plt.fill_between(eps[:10], m - s, m + s, alpha=0.2)
    (fm,), (fs,) = truth["fast_taucc"]
    plt.hlines(y=fm, xmin=0.1, xmax=3, linewidth=2, color="r", label="fast_taucc")
    plt.fill_between(eps, fm - fs, fm + fs, alpha=0.2)
    plt.xticks(EPS_TICKS, fontsize=12)
    plt.xlim(0, 3.0)
    plt.legend(loc="best")
    plt.xlabel("privacy budget (ε)", fontsize=14)
    plt.ylabel("NMI", fontsize=14)
    return _png(fig, dpi), truth


def _series():
    return [D.Series("dp_taucc", (0, 0, 1), EPS), D.Series("dp_kmeans", (0, 0, 0), EPS),
            D.Series("dphd", (0, 0.5, 0), EPS), D.Series("dpnmf", (0, 0.75, 0.75), EPS[:10]),
            D.Series("fast_taucc", (1, 0, 0), EPS, hline=True)]


@pytest.mark.parametrize(("seed", "dpi"), [(1, 100), (2, 100), (3, 150)])
def test_line_plot_values_within_their_stated_error(seed, dpi):
    png, truth = notebook_style_plot(np.random.default_rng(seed), dpi)
    rows = D.read_line_plot(D.read_rgb(png), _series(), x_ticks=EPS_TICKS)
    got = {name: [r for r in rows if r["series"] == name] for name in truth}
    diffs, errors, std_diffs = [], [], []
    for name, (mean, std) in truth.items():
        value = np.array([r["value"] for r in got[name]])
        assert len(value) == len(mean)
        readable = np.isfinite(value) & ~np.array([r["hidden"] for r in got[name]])
        assert readable.mean() >= 0.85, name  # only points under the legend may be lost
        diffs += list(np.abs(value - mean)[readable])
        errors += [r["error"] for r, ok in zip(got[name], readable, strict=True) if ok]
        sd = np.array([r["std"] for r in got[name]])
        std_diffs += list(np.abs(sd - std)[readable & np.isfinite(sd)])
    diffs, errors = np.array(diffs), np.array(errors)
    assert diffs.max() < 0.01  # a pixel is about 0.003 at 100 dpi
    assert (diffs <= errors).mean() >= 0.95  # the stated error covers the measured one
    assert np.median(std_diffs) < 0.005 and np.max(std_diffs) < 0.05


def test_tick_labels_read_from_their_glyphs():
    for lo, hi in ((-0.23, 0.71), (0.0, 0.26), (-1.3, 4.2)):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [lo, hi], "-b")
        ax.set_ylim(lo, hi)
        img = D.read_rgb(_png(fig, 100))
        frame = D.find_frames(img)[0]
        ticks = D.find_ticks(img, frame, "left")
        values = D.read_tick_labels(img, frame, "left", ticks)
        expected = [t for t in np.round(ax.get_yticks(), 6) if lo <= t <= hi]
        assert sorted(values) == pytest.approx(sorted(expected))


def test_a_misread_label_is_refused():
    ticks = [D.Tick(float(p), 5, 0) for p in (10, 60, 110, 160)]
    D.axis_from_ticks(ticks, [0.6, 0.4, 0.2, 0.0])
    with pytest.raises(D.DigitiseError, match="misread"):
        D.axis_from_ticks(ticks, [0.6, 0.4, 0.8, 0.0])  # "0.2" read as "0.8"


def heatmap_plot(rng: np.random.Generator, dpi: int = 100):
    """A τ̂ heatmap drawn as the authors' notebooks draw Fig. 3 (pcolormesh, RdBu, log ε)."""
    eps = np.array([.1, .2, .3, .4, .5, .6, .7, .8, .9, 1, 1.5, 2, 2.5, 3, 4.5, 5, 6, 7, 8, 9,
                    10])
    rows = np.arange(2, 11)
    values = np.sort(rng.uniform(0, rng.uniform(0.05, 0.3), (9, 21)), axis=1)
    fig, ax = plt.subplots()
    c = ax.pcolormesh(eps, rows, values, cmap="RdBu", vmin=values.min(), vmax=values.max())
    ax.axis([eps.min(), eps.max(), rows.min(), rows.max()])
    plt.xscale("log")
    fig.colorbar(c, ax=ax)
    return _png(fig, dpi), eps, rows, values


@pytest.mark.parametrize("seed", [4, 5])
def test_heatmap_cells_within_their_stated_error(seed):
    png, eps, rows, values = heatmap_plot(np.random.default_rng(seed))
    got = D.read_heatmap_plot(D.read_rgb(png), eps, rows, (0.1, 10.0), cmap="RdBu")
    read = np.array([g["value"] for g in got]).reshape(values.shape)
    error = np.array([g["error"] for g in got]).reshape(values.shape)
    diff = np.abs(read - values)
    assert np.isfinite(read).all()
    assert (diff <= error).mean() >= 0.97
    assert diff.max() <= 0.01 * np.ptp(values)  # 256 colours: 0.4 % of the range per level


def test_steep_segments_read_at_their_true_x():
    """Tick marks are snapped to whole pixels when drawn, lines are not: on a steep segment a
    third of a pixel in x is a few pixels in y. The corners of the lines place the x axis."""
    rng = np.random.default_rng(6)
    eps = np.array(EPS)
    zigzag = np.where(np.arange(14) % 2 == 0, rng.uniform(0.0, 0.15, 14),
                      rng.uniform(0.55, 0.75, 14))
    fig = plt.figure()
    plt.plot(eps, zigzag, "-b", label="dp_taucc")
    plt.fill_between(eps, zigzag - 0.02, zigzag + 0.02, alpha=0.2)
    plt.xticks(EPS_TICKS, fontsize=12)
    plt.xlim(0, 3.0)
    png = _png(fig, 100)
    rows = D.read_line_plot(D.read_rgb(png), [D.Series("dp_taucc", (0, 0, 1), EPS)],
                            x_ticks=EPS_TICKS)
    value = np.array([r["value"] for r in rows])
    error = np.array([r["error"] for r in rows])
    diff = np.abs(value - zigzag)
    assert diff.max() < 0.008 and (diff <= error).all()
