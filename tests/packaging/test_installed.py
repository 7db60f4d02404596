"""The wheel, installed with the ``bench`` extra into a fresh virtual environment, works from a
directory outside the clone: the README's library snippet, one engine job on the offline mirror,
collect, figures and report.

The environment resolves the wheel's own dependency list from the package index (pip's cache
makes a rerun quick), so a dependency missing from ``pyproject.toml`` fails here; nothing is
borrowed from the development environment except pip itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_python_snippet() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Use the algorithms as a library"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel and its ``bench`` dependencies; its python executable."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "-q", "--no-compile", f"{wheel}[bench]"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return python


@pytest.mark.slow
def test_installed_wheel_works_outside_the_clone(installed, tmp_path):
    mirror = os.environ.get("DPTAUCC_MIRROR")
    if not mirror:
        pytest.skip("needs the offline CLUTO mirror in DPTAUCC_MIRROR (make test sets it)")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DPTAUCC_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(DPTAUCC_MIRROR=mirror, DPTAUCC_DATA_DIR=str(tmp_path / "cache"),
               MPLBACKEND="Agg")
    work = tmp_path / "work"
    work.mkdir()

    def run(*args: str) -> str:
        done = subprocess.run([str(installed), *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    where = run("-c", "import importlib.util as u, dptaucc, dptaucc.conf as c; "
                      "print(dptaucc.__file__); print(c.__file__); "
                      "print(u.find_spec('datasets'), u.find_spec('baselines'), "
                      "u.find_spec('conf'))")
    lib, conf, *_ = where.splitlines()
    assert "site-packages" in lib and "site-packages" in conf and not lib.startswith(str(REPO))
    assert where.splitlines()[2] == "None None None"  # nothing of ours at top level
    if shutil.which("cc") or shutil.which("gcc"):  # the wheel was built with a C compiler
        native = run("-c", "from dptaucc.kernels import native_kernels; "
                           "print(native_kernels().__file__)")
        assert "site-packages" in native, native

    run("-c", readme_python_snippet() + "\nassert model.epsilon_spent_ == 1.0, model.epsilon_spent_"
        "\nassert data.X.shape == (3891, 4303)\n")
    assert "classic3" in run("-m", "dptaucc.datasets", "list")

    # with GNU Octave, DPHD too: its *.m files must be found inside the installed package
    algorithms = ["dp_taucc", "dphd"] if shutil.which("octave-cli") else ["dp_taucc"]
    run("-m", "dptaucc.bench", "-m", f"algorithm={','.join(algorithms)}", "dataset=cstr",
        "epsilon=0.5", "seed=0", "mode=paper", "bench.experiment=fig2_real")
    quick = ("--results-dir", "results/quick")  # Hydra runs write to the quick folder
    assert f"fig2_real: {len(algorithms)} records" in run("-m", "dptaucc.bench.collect", *quick)
    run("-m", "dptaucc.bench.figures", *quick)
    run("-m", "dptaucc.bench.report", *quick)

    results = work / "results" / "quick"
    records = pd.read_parquet(results / "fig2_real.parquet")
    assert sorted(records["algorithm"]) == algorithms and (records["status"] == "ok").all(), (
        records["error"].tolist())
    for stem in ("fig2_nmi_paper", "fig2_extra_methods_corrected"):
        for ext in ("png", "pdf"):
            assert (results / "figures" / f"{stem}.{ext}").stat().st_size > 3000
    report = (results / "REPORT.md").read_text()
    pub = pd.read_csv(REPO / "conf" / "calibration" / "published_values.tsv", sep="\t",
                      comment="#")
    paper = pub[(pub["figure"] == "fig2") & (pub["source"] == "paper") & (pub["dataset"] == "cstr")
                & (pub["algorithm"] == "dp_taucc") & (pub["epsilon"] == 0.5)]["value"]
    assert f"[paper {paper.iloc[0]:.2f}]" in report  # the packaged published values
    n = len(algorithms)
    assert f"| Fig. 2: row NMI vs ε, real data | {n}/{n} ok, 1 seeds |" in report
    assert "| DP-τCC | paper | one cell +1 | 1 |" in report
