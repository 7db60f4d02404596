"""The README's "bring your own data and method" example, run as written from a fresh directory.

It writes a user's estimator module and config directory, runs one job and a small sweep through
``python -m dptaucc.bench``, collects, draws the figures and writes the report; the user's method
and dataset must then appear in the tables, the figures and REPORT.md. Also: user datasets and
errors through the engine's ``load_dataset``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dptaucc.bench import figures
from dptaucc.bench.job_data import load_dataset
from dptaucc.bench.outputs import publish

REPO = Path(__file__).resolve().parents[2]


def readme_block(heading: str, language: str) -> str:
    """The first ```language block after the README heading ``heading``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(f"## {heading}"):]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def write_user_data(folder: Path, n_per_class: int = 15, seed: int = 0) -> None:
    """A small 3-class block matrix with Poisson noise, as the README's counts.npz/labels.txt."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), n_per_class)
    cols = np.repeat(np.arange(3), 10)
    rate = np.where(labels[:, None] == cols[None, :], 4.0, 0.3)
    sp.save_npz(folder / "counts.npz", sp.csr_matrix(rng.poisson(rate)))
    (folder / "labels.txt").write_text("".join(f"class{k}\n" for k in labels))


@pytest.mark.slow
def test_readme_bring_your_own_example(tmp_path, monkeypatch):
    write_user_data(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for var in ("DPTAUCC_RESULTS_DIR", "DPTAUCC_CONFIG_PATH", "PYTHONPATH"):
        env.pop(var, None)
    env["DPTAUCC_LOG_DIR"] = str(tmp_path / "logs")
    if not env.get("DPTAUCC_MIRROR"):
        pytest.skip("the example compares on cstr: set DPTAUCC_MIRROR (make test does)")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_block(
        "Bring your own data and method", "bash")], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    results = tmp_path / "results" / "quick"  # Hydra runs write to the quick folder
    table = pd.read_parquet(results / "fig2_real.parquet")
    assert (table["status"] == "ok").all(), table["error"].dropna().tolist()
    mine = table[table["algorithm"] == "random_rows"]
    assert sorted(set(mine["dataset"])) == ["cstr", "mydata"] and len(mine) == 8
    assert len(table[table["algorithm"] == "dp_taucc"]) == 8
    on_mydata = table[table["dataset"] == "mydata"]
    shape = on_mydata[["n_rows", "n_cols", "n_classes"]].drop_duplicates().to_numpy().tolist()
    assert shape == [[45, 30, 3]]
    assert on_mydata["nmi_rows"].notna().all()
    assert len(pd.read_parquet(results / "adhoc.parquet")) == 1  # the single job

    for stem in ("fig2_nmi_corrected", "fig2_extra_methods_corrected", "adhoc_nmi_corrected"):
        assert (results / "figures" / f"{stem}.png").stat().st_size > 5000
    fig = dict(figures.real_data_plots(table))["fig2_nmi_corrected"]()
    legend = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {"random_rows (not declared DP)", "DP-τCC: its DP row labels (DP)"} <= legend
    assert "2 seeds per point" in fig._suptitle.get_text()
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["cstr", "mydata"]

    report = (results / "REPORT.md").read_text()
    assert "### mydata (NMI)" in report and "| random_rows (corrected) |" in report
    assert "## adhoc: row NMI" in report

    # your study: a headline about your sweep, no paper verdict, your mode only, every method
    # once; the ε axis ends with your data
    headline = report[:report.index("## Figures")]
    assert ("This sweep is not the paper's: it holds your method random_rows, your dataset "
            "mydata and your experiment adhoc") in headline and "reproduces?" not in headline
    # one row per ε: fig2_real's two, adhoc's one
    assert headline.count("| random_rows (yours) | corrected |") == 3
    assert not (results / "figures" / "fig2_nmi_paper.png").exists()
    assert max(ax.get_xlim()[1] for ax in fig.axes if ax.get_visible()) < 1.5

    # a method of yours that declares its row labels DP by its release kinds: one series
    with open(tmp_path / "mymethod.py", "a") as f:
        f.write("\nclass DeclaredRows(RandomRows):\n    def release_kinds(self):\n"
                "        return {'row_labels_': 'dp'}\n")
    (tmp_path / "myconf" / "algorithm" / "declared_rows.yaml").write_text(
        "name: declared_rows\n_target_: mymethod.DeclaredRows\nprivate: true\n"
        "params: {n_row_clusters: classes}\n")
    env["DPTAUCC_CONFIG_PATH"] = str(tmp_path / "myconf")
    done = subprocess.run([sys.executable, "-m", "dptaucc.bench", "-m", "experiment=fig2_real",
                           "algorithm=declared_rows", "dataset=mydata", "mode=corrected",
                           "epsilon=0.5,1", "seed=range(2)"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # the table and the report in this process: the command line's outputs ran above, and the
    # figure below is drawn from the table (the figure files would be drawn a second time)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPTAUCC_CONFIG_PATH", env["DPTAUCC_CONFIG_PATH"])
    publish(results, steps=("collect", "report"))
    report = (results / "REPORT.md").read_text()
    assert "| declared_rows (yours) | corrected | its DP row labels (DP) | 0.5 |" in report
    header = next(line for line in report[report.index("### mydata (NMI)"):].splitlines()
                  if line.startswith("| ε |"))
    assert header.count("declared_rows") == 1 and header.count("random_rows") == 1
    table = pd.read_parquet(results / "fig2_real.parquet")
    fig = dict(figures.real_data_plots(table))["fig2_nmi_corrected"]()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [t for t in legend if "declared_rows" in t] == ["declared_rows: its DP row labels (DP)"]


def _job(tmp_path, dataset: dict, **params) -> dict:
    return {"dataset": dataset, "seed": 1, "paths": {},
            "algorithm": {"name": "x", "_target_": "x.X", "params": params}}


def test_engine_loads_matrix_and_callable_datasets(tmp_path, monkeypatch):
    write_user_data(tmp_path)
    monkeypatch.chdir(tmp_path)  # relative paths are read from the working directory
    ds = load_dataset(_job(tmp_path, {"name": "mydata", "loader": "matrix",
                                      "params": {"path": "counts.npz", "labels": "labels.txt"}}))
    assert ds.name == "mydata" and ds.X.shape == (45, 30) and ds.meta["seed"] == 1
    (tmp_path / "user_loader.py").write_text(
        "from dptaucc.datasets import load_matrix\n"
        "def load(folder):\n"
        "    return load_matrix(f'{folder}/counts.npz', f'{folder}/labels.txt')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    via_fn = load_dataset(_job(tmp_path, {"name": "fn", "loader": "callable",
                                          "target": "user_loader.load",
                                          "params": {"folder": str(tmp_path)}}))
    assert via_fn.name == "fn" and (via_fn.X != ds.X).nnz == 0  # same seed, same permutation
    assert np.array_equal(via_fn.row_labels, ds.row_labels)


def test_engine_errors_on_user_datasets(tmp_path, monkeypatch):
    write_user_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    unlabelled = {"name": "nolabels", "loader": "matrix", "params": {"path": "counts.npz"}}
    with pytest.raises(ValueError, match="has no labels.*n_row_clusters"):
        load_dataset(_job(tmp_path, unlabelled, n_row_clusters="classes"))
    assert load_dataset(_job(tmp_path, unlabelled, n_row_clusters=3)).row_labels is None
    with pytest.raises(ValueError, match=r"matrix file .*missing\.npz does not exist"):
        load_dataset(_job(tmp_path, {"name": "m", "loader": "matrix",
                                     "params": {"path": "missing.npz"}}))
    with pytest.raises(ValueError, match="unknown dataset loader 'hdf5'.*matrix, callable"):
        load_dataset(_job(tmp_path, {"name": "m", "loader": "hdf5"}))
