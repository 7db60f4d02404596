#!/usr/bin/env python
"""The authors' published values, read off their figures into ``published_values.tsv``.

The paper's figures (``SDM25_dptaucc_paper.pdf``, page 8: Fig. 2's eight panels and Fig. 3's
four) and the figures their public notebooks print (``results_*.ipynb``: Fig. 2 and supp.
Fig. 1 per dataset, the τ̂ heatmaps vs I and h, the synthetic curves) are raster images of
matplotlib plots. :mod:`digitise` reads every point of every panel back: each series' mean
(line), its ±1 std band where drawn, and a reading error; the heatmaps cell by cell.

Everything comes from one commit of github.com/rupensa/dptaucc, read with ``git show`` from a
clone (``--authors``, a checkout or a bare clone; the PDF's images are extracted with
``pdfimages`` from poppler-utils). The authors' code is not copied: only the numbers read
off their figures are written, each with the file, figure and panel it comes from.

    python scripts/digitise_published.py --authors ../dptaucc [--commit SHA] \
        [--out conf/calibration/published_values.tsv] [--inspect DIR]

``--inspect`` draws every digitised point over its panel (PNG per panel) for a look.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import digitise as D  # noqa: E402

REPO_URL = "https://github.com/rupensa/dptaucc"
COMMIT = "8c67584b335058812d6acfdbc3542434b5986bb9"
OUT = Path(__file__).resolve().parents[1] / "conf" / "calibration" / "published_values.tsv"

#: the ε grid of the real-data and synthetic line plots (the "1" of the paper is 0.99999)
EPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99999, 1.5, 2.0, 2.5, 3.0)
#: DPNMF runs for ε < 1 only
EPS_NMF = EPS[:10]
#: the x ticks the notebooks set on the ε plots (plt.xticks)
EPS_TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 2.5, 3.0)
#: the heatmaps' ε grid (as the notebooks label it: "1" is the run at 0.99999) and rows
HEAT_EPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5, 2.0, 2.5, 3.0, 4.5, 5.0,
            6.0, 7.0, 8.0, 9.0, 10.0)
ITERATIONS = tuple(range(2, 11))
H_VALUES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SIZES = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000,
         1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 6000, 7000, 8000, 9000, 10000)
SYN_EPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99999)
#: dataset order of the notebooks' loops
NB_REAL = ("classic3", "cstr", "hitech", "k1b", "reviews", "sports", "tr11", "tr41")
NB_HEAT = ("classic3", "cstr", "tr11", "tr41", "hitech", "k1b", "reviews", "sports")
#: the paper's panels, in the order of the PDF's images on page 8
PDF_FIG2 = ("classic3", "cstr", "tr11", "tr41", "hitech", "k1b", "reviews", "sports")
PDF_FIG3 = ("classic3", "cstr", "hitech", "reviews")

BLUE, BLACK, GREEN, CYAN, RED = (0, 0, 1), (0, 0, 0), (0, 0.5, 0), (0, 0.75, 0.75), (1, 0, 0)


def eps_series(x_nmf=EPS_NMF, hline=True) -> list[D.Series]:
    """The five series of an NMI/ARI-vs-ε plot, in the notebooks' drawing order."""
    return [D.Series("dp_taucc", BLUE, EPS), D.Series("dp_kmeans", BLACK, EPS),
            D.Series("dphd", GREEN, EPS), D.Series("dpnmf", CYAN, x_nmf),
            D.Series("fast_taucc", RED, EPS, hline=hline)]


def size_series() -> list[D.Series]:
    """The five series of a synthetic NMI/ARI-vs-m plot (Fast-τCC a curve here)."""
    return [D.Series(name, colour, SIZES) for name, colour in (
        ("dp_taucc", BLUE), ("dp_kmeans", BLACK), ("dphd", GREEN), ("dpnmf", CYAN),
        ("fast_taucc", RED))]


@dataclass(frozen=True)
class Panel:
    """One image to read: where it comes from and what it plots."""

    figure: str        # fig2, supp_fig1, fig3, supp_fig3, supp_fig4, supp_fig5
    source: str        # paper (the PDF) or notebook
    file: str
    where: str         # page/image or cell/output
    dataset: str
    metric: str        # nmi_rows, ari_rows, tau_hat_rc
    plot: str          # vs_eps, vs_size, heatmap
    param: str = ""    # n_iterations, h, n_cols (heatmap rows / a synthetic panel's size)
    param_value: float = math.nan
    epsilon: float = math.nan  # a vs_size panel's ε
    png: bytes = b""


def git_show(authors: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(authors), "show", f"{commit}:{path}"],
                          check=True, capture_output=True).stdout


def notebook_images(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(cell, output index among the cell's images, PNG bytes) of every image a notebook
    stores, in order."""
    nb = json.loads(data)
    for ci, cell in enumerate(nb["cells"]):
        k = 0
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                yield ci, k, base64.b64decode(png)
                k += 1


def pdf_images(pdf: bytes, page: int) -> list[bytes]:
    """The page's images (not their soft masks), in the PDF's order, via poppler's pdfimages."""
    if shutil.which("pdfimages") is None:
        raise SystemExit("pdfimages not found: install poppler-utils")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "paper.pdf"
        src.write_bytes(pdf)
        listing = subprocess.run(["pdfimages", "-list", "-f", str(page), "-l", str(page),
                                  str(src)], check=True, capture_output=True, text=True).stdout
        kinds = [line.split()[2] for line in listing.splitlines()[2:] if line.strip()]
        subprocess.run(["pdfimages", "-png", "-f", str(page), "-l", str(page), str(src),
                        str(Path(tmp) / "img")], check=True)
        files = sorted(Path(tmp).glob("img-*.png"))
        if len(files) != len(kinds):
            raise SystemExit(f"pdfimages listed {len(kinds)} images but wrote {len(files)}")
        return [f.read_bytes() for f, kind in zip(files, kinds, strict=True) if kind == "image"]


def panels(authors: Path, commit: str) -> Iterator[Panel]:
    """Every panel to read, with its provenance."""
    pdf = "SDM25_dptaucc_paper.pdf"
    images = pdf_images(git_show(authors, commit, pdf), 8)
    if len(images) != 13:  # the legend strip, Fig. 2 (8 panels), Fig. 3 (4 panels)
        raise SystemExit(f"page 8 of the paper holds {len(images)} images, expected 13")
    for k, ds in enumerate(PDF_FIG2):
        yield Panel("fig2", "paper", pdf, f"page 8, Fig. 2 ({'abcdefgh'[k]}), image {k + 1}",
                    ds, "nmi_rows", "vs_eps", png=images[1 + k])
    for k, ds in enumerate(PDF_FIG3):
        yield Panel("fig3", "paper", pdf, f"page 8, Fig. 3 ({'abcd'[k]}), image {9 + k}",
                    ds, "tau_hat_rc", "heatmap", "n_iterations", png=images[9 + k])
    for figure, metric, nb in (("fig2", "nmi_rows", "results_real_data_NMI.ipynb"),
                               ("supp_fig1", "ari_rows", "results_real_data_ARI.ipynb")):
        for cell, k, png in notebook_images(git_show(authors, commit, nb)):
            yield Panel(figure, "notebook", nb, f"cell {cell}, image {k}", NB_REAL[k], metric,
                        "vs_eps", png=png)
    for figure, param, nb in (("fig3", "n_iterations", "results_real_data_iter.ipynb"),
                              ("supp_fig3", "h", "results_real_data_h.ipynb")):
        for cell, k, png in notebook_images(git_show(authors, commit, nb)):
            yield Panel(figure, "notebook", nb, f"cell {cell}, image {k}", NB_HEAT[k],
                        "tau_hat_rc", "heatmap", param, png=png)
    for figure, metric, nb in (("supp_fig4", "nmi_rows", "results_synthetic_data_NMI.ipynb"),
                               ("supp_fig5", "ari_rows", "results_synthetic_data_ARI.ipynb")):
        for cell, k, png in notebook_images(git_show(authors, commit, nb)):
            if cell == 1:  # one plot per ε: the metric vs m
                yield Panel(figure, "notebook", nb, f"cell {cell}, image {k}", "biclusters",
                            metric, "vs_size", epsilon=SYN_EPS[k], png=png)
            elif cell == 2:  # one plot per m: the metric vs ε
                yield Panel(figure, "notebook", nb, f"cell {cell}, image {k}", "biclusters",
                            metric, "vs_eps", "n_cols", float(SIZES[k]), png=png)


def read_panel(p: Panel) -> list[dict]:
    """The points of one panel as rows of the published-values table."""
    img = D.read_rgb(p.png)
    base = {"figure": p.figure, "source": p.source, "dataset": p.dataset, "metric": p.metric,
            "plot": p.plot, "file": p.file, "where": p.where}
    rows = []
    if p.plot == "heatmap":
        ys = ITERATIONS if p.param == "n_iterations" else H_VALUES
        for r in D.read_heatmap_plot(img, HEAT_EPS, ys, (HEAT_EPS[0], HEAT_EPS[-1]),
                                     cmap="RdBu"):
            eps = 0.99999 if r["x"] == 1.0 else r["x"]
            rows.append({**base, "algorithm": "dp_taucc", "epsilon": eps, "param": p.param,
                         "param_value": r["y"], "value": r["value"], "std": math.nan,
                         "reading_error": r["error"]})
        return rows
    if p.plot == "vs_eps":
        points = D.read_line_plot(img, eps_series(), x_ticks=EPS_TICKS)
        for r in points:
            rows.append({**base, "algorithm": r["series"], "epsilon": r["x"],
                         "param": p.param, "param_value": p.param_value, "value": r["value"],
                         "std": r["std"], "reading_error": r["error"]})
        return rows
    points = D.read_line_plot(img, size_series())
    for r in points:
        rows.append({**base, "algorithm": r["series"],
                     "epsilon": math.nan if r["series"] == "fast_taucc" else p.epsilon,
                     "param": "n_cols", "param_value": r["x"], "value": r["value"],
                     "std": r["std"], "reading_error": r["error"]})
    return rows


def inspect(p: Panel, rows: list[dict], out: Path) -> None:
    """The panel with every digitised point drawn over it (magenta crosses; band ends as
    ticks), for a look."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img = D.read_rgb(p.png)
    fig, ax = plt.subplots(figsize=(img.shape[1] / 100, img.shape[0] / 100), dpi=100)
    ax.imshow(img)
    ax.set_axis_off()
    if p.plot == "heatmap":
        ax.set_title("values read (x 1000), top row = largest parameter", fontsize=8)
        frame = D.find_frames(img)
        main = sorted(frame[:2], key=lambda f: f.left[0])[0]
        r0, r1, c0, c1 = main.inner
        for r in rows:
            j = HEAT_EPS.index(1.0 if r["epsilon"] == 0.99999 else r["epsilon"])
            ys = ITERATIONS if p.param == "n_iterations" else H_VALUES
            i = ys.index(r["param_value"])
            x = c0 + (np.log10(HEAT_EPS[j]) + 1) / 2 * (c1 - c0)
            y = r1 - (i / (len(ys) - 1)) * (r1 - r0)
            ax.text(x, y, f"{1000 * r['value']:.0f}", fontsize=5, ha="center", va="center",
                    color="k", bbox={"fc": "w", "alpha": 0.6, "pad": 0.5, "lw": 0})
    else:
        frame = D.find_frames(img)[0]
        yt = D.find_ticks(img, frame, "left")
        yaxis = D.axis_from_ticks(yt, D.read_tick_labels(img, frame, "left", yt))
        xt = D.find_ticks(img, frame, "bottom")
        xv = EPS_TICKS if p.plot == "vs_eps" else D.read_tick_labels(img, frame, "bottom", xt)
        xaxis = D.axis_from_ticks(xt, xv)
        for r in rows:
            x = r["epsilon"] if p.plot == "vs_eps" else r["param_value"]
            if not math.isfinite(r["value"]):
                continue
            xs = xaxis.pixel(EPS) if not math.isfinite(x) else [xaxis.pixel(x)]
            for xp in xs:
                ax.plot(xp, yaxis.pixel(r["value"]), "x", color="m", ms=6, mew=1)
                if math.isfinite(r["std"]) and r["std"] > 0:
                    ax.plot([xp, xp], yaxis.pixel([r["value"] - r["std"],
                                                   r["value"] + r["std"]]),
                            "_", color="m", ms=6, mew=1)
    fig.savefig(out, dpi=100)
    plt.close(fig)


HEADER = """\
# The authors' published values, digitised from their figures (scripts/digitise_published.py).
# Source: {url} at commit {commit}: the paper (SDM25_dptaucc_paper.pdf, page 8: Fig. 2, Fig. 3)
# and the figures printed by their notebooks (results_*.ipynb: Fig. 2 and supp. Fig. 1 per
# dataset, the tau-hat heatmaps vs I (Fig. 3 / supp. Fig. 2) and vs h (supp. Fig. 3), the
# synthetic curves (supp. Figs. 4-5)). Per point: the plotted mean (value), the half height of
# its +-1 std band (std; NaN where no band is drawn, 0 where it hides under its line) and the
# reading error (the digitiser's bound, data units). epsilon 0.99999 is the paper's "1";
# fast_taucc has no epsilon (one value per panel). plot: vs_eps, vs_size (the same synthetic
# points drawn against m, kept to cross-check the reading), heatmap. 10 runs per point.
"""
COLUMNS = ["figure", "source", "dataset", "algorithm", "metric", "plot", "epsilon", "param",
           "param_value", "value", "std", "reading_error", "file", "where"]


def write_table(rows: list[dict], out: Path, commit: str) -> None:
    def fmt(v) -> str:
        if isinstance(v, float):
            return "nan" if not math.isfinite(v) else f"{v:.6g}"
        return str(v)

    lines = [HEADER.format(url=REPO_URL, commit=commit).rstrip("\n"), "\t".join(COLUMNS)]
    lines += ["\t".join(fmt(r.get(c, "")) for c in COLUMNS) for r in rows]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors", type=Path, required=True,
                    help="a clone of github.com/rupensa/dptaucc (checkout or bare)")
    ap.add_argument("--commit", default=COMMIT)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--inspect", type=Path, default=None,
                    help="folder for one PNG per panel with the digitised points drawn over it")
    ap.add_argument("--only", default=None, help="only panels whose file contains this text")
    args = ap.parse_args(argv)
    rows: list[dict] = []
    if args.inspect:
        args.inspect.mkdir(parents=True, exist_ok=True)
    for p in panels(args.authors, args.commit):
        if args.only and args.only not in p.file:
            continue
        got = read_panel(p)
        read = sum(math.isfinite(r["value"]) for r in got)
        print(f"{p.figure:10s} {p.source:8s} {p.dataset:10s} {p.where:32s} {read}/{len(got)} "
              "points read", flush=True)
        rows += got
        if args.inspect:
            name = f"{p.figure}_{p.source}_{p.plot}_{p.dataset}_{p.where}".replace(" ", "_")
            inspect(p, got, args.inspect / (name.replace(",", "").replace("(", "")
                                            .replace(")", "") + ".png"))
    write_table(rows, args.out, args.commit)
    print(f"{len(rows)} points -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
