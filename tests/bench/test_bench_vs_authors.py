"""scripts/bench_vs_authors.py: arguments, the runner's command and output, the table.

No network and no checkout of the authors' code is needed; with ``DPTAUCC_AUTHORS_CODE`` (a
checkout of github.com/rupensa/dptaucc) and ``DPTAUCC_AUTHORS_PYTHON`` (an interpreter with
their requirements) one tiny comparison per method runs, skipped otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import types
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bva = _load("bench_vs_authors")
runner = _load("_authors_runner")


def test_defaults_and_bad_arguments():
    args = bva.parse_args([])
    assert args.methods == bva.METHODS and args.repeats == 3 and args.iterations == 4
    assert args.epsilon == 0.5 and args.authors is None and args.out is None
    for bad in (["--repeats", "0"], ["--epsilon", "0"], ["--iterations", "0"],
                ["--methods", "kmeans"]):
        with pytest.raises(SystemExit):
            bva.parse_args(bad)


def test_runner_command_passes_the_settings():
    args = bva.parse_args(["--authors-python", "/opt/venv/bin/python", "--epsilon", "0.3",
                           "--iterations", "5", "--repeats", "2", "--octave", "octave-cli"])
    cmd = bva.runner_command(args, Path("s/src"), "dpnmf", "cstr", Path("m.npz"), 4)
    assert cmd[:2] == ["/opt/venv/bin/python", str(bva.RUNNER)]
    pairs = dict(zip(cmd[2::2], cmd[3::2], strict=True))
    assert pairs == {"--src": "s/src", "--method": "dpnmf", "--name": "cstr",
                     "--matrix": "m.npz", "--k": "4", "--epsilon": "0.3",
                     "--iterations": "5", "--repeats": "2", "--octave": "octave-cli"}


def test_runner_command_names_the_data_folder_for_the_data_step():
    args = bva.parse_args(["--loading"])
    assert args.loading and not bva.parse_args([]).loading
    cmd = bva.runner_command(args, Path("s/src"), bva.LOAD, "cstr", Path("m.npz"), 4,
                             Path("their/data"))
    assert cmd[-2:] == ["--data-dir", "their/data"] and cmd[cmd.index("--method") + 1] == "load"


def test_runner_times_their_data_step_and_skips_a_missing_file(tmp_path):
    (tmp_path / "tiny.txt").write_text("doc,word,cluster\n0,1,2\n1,0,5\n2,2,1\n")
    args = Namespace(data_dir=tmp_path, name="tiny", repeats=2)
    out = runner._time_loading(args)
    assert len(out["fit_s"]) == 2 and all(t > 0 for t in out["fit_s"])
    args.name = "absent"
    assert runner._time_loading(args) == {"fit_s": [],
                                          "skipped": "absent.txt is not in the authors' checkout"}


def test_runner_output_is_found_among_the_authors_prints():
    out = "Round: 1\nAUTHORS_RESULT {\"fit_s\": [1.5]}\nLloyd finished\n"
    assert bva.parse_runner_output(out) == {"fit_s": [1.5]}
    with pytest.raises(ValueError, match="AUTHORS_RESULT"):
        bva.parse_runner_output("Traceback (most recent call last):\n")


def test_table_ratios_medians_and_failures():
    rows = [bva.Row("cstr", "dp_taucc", "authors", [1.0, 3.0, 2.0], nmi=0.5),
            bva.Row("cstr", "dp_taucc", "ours paper", [0.2, 0.1, 0.3], nmi=0.4),
            bva.Row("cstr", "dp_taucc", "ours corrected", [], error="ValueError: x"),
            bva.Row("cstr", "taucc", "authors", [4.0], nmi=0.6),
            bva.Row("cstr", "taucc", "ours", [0.5], nmi=0.6),
            bva.Row("cstr", "dphd", "authors", [10.0], call_s=[12.0], nmi=0.0),
            bva.Row("cstr", "dphd", "ours paper", [1.0], nmi=0.0),
            bva.Row("cstr", "dphd", "ours corrected", [2.0], nmi=0.1)]
    rows += [bva.Row("reviews", "load", "authors", [], error="skipped: no file"),
             bva.Row("reviews", "load", "ours", [0.4])]
    lines = bva.markdown_table(rows).splitlines()
    assert len(lines) == 2 + 4
    assert lines[5] == "| reviews | load | n/a | - | 0.400 | 0.400 | - | - | - / - / - |"
    assert lines[2] == ("| cstr | dp_taucc | 2.00 | - | 0.200 | failed | 10.0x | - | "
                        "0.50 / 0.40 / - |")
    assert lines[3] == ("| cstr | taucc | 4.00 | - | 0.500 | 0.500 | 8.0x | 8.0x | "
                        "0.60 / 0.60 / 0.60 |")
    assert lines[4] == ("| cstr | dphd | 10.00 | 12.00 | 1.00 | 2.00 | 10.0x | 5.0x | "
                        "0.00 / 0.00 / 0.10 |")
    csv = bva.csv_lines(rows)
    assert csv[0].startswith("dataset,method,side,repeats,fit_median_s")
    assert csv[1] == "cstr,dp_taucc,authors,3,2,1,nan,0.5000,"
    assert csv[3].endswith(",ValueError: x")


def test_checkout_is_checked_and_never_cloned_when_given(tmp_path, monkeypatch):
    def no_clone(*a, **k):
        raise AssertionError("must not run git clone")

    monkeypatch.setattr(bva.subprocess, "run", no_clone)
    with pytest.raises(SystemExit, match="does not look like a checkout"):
        bva.authors_checkout(tmp_path, None)
    with pytest.raises(SystemExit, match="interrupted clone"):
        bva.authors_checkout(None, tmp_path)
    (tmp_path / "src" / "dptaucc").mkdir(parents=True)
    (tmp_path / "src" / "dptaucc" / "dptaucc.py").write_text("")
    assert bva.authors_checkout(tmp_path, None) == tmp_path
    assert bva.authors_checkout(None, tmp_path) == tmp_path   # a cached clone is reused


def test_runner_refuses_a_module_from_outside_the_authors_code(tmp_path):
    inside = types.ModuleType("dptaucc.dptaucc")
    inside.__file__ = str(tmp_path / "src" / "dptaucc" / "dptaucc.py")
    runner._check_home(inside, tmp_path / "src")
    outside = types.ModuleType("dptaucc.dptaucc")
    outside.__file__ = str(tmp_path / "site-packages" / "dptaucc" / "dptaucc.py")
    with pytest.raises(SystemExit, match="separate venv"):
        runner._check_home(outside, tmp_path / "src")


@pytest.mark.skipif(not (os.environ.get("DPTAUCC_AUTHORS_CODE")
                         and os.environ.get("DPTAUCC_AUTHORS_PYTHON")),
                    reason="set DPTAUCC_AUTHORS_CODE and DPTAUCC_AUTHORS_PYTHON to compare")
@pytest.mark.parametrize("method", bva.METHODS)
def test_tiny_comparison_with_the_authors_code(tmp_path, method):
    checkout = bva.authors_checkout(Path(os.environ["DPTAUCC_AUTHORS_CODE"]), None)
    shutil.copytree(checkout / "src", tmp_path / "src")
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(np.kron(np.eye(2, dtype=int), np.full((20, 15), 3))
                      + rng.integers(0, 2, (40, 30)))
    y = np.repeat([0, 1], 20)
    sp.save_npz(tmp_path / "tiny.npz", X)
    args = bva.parse_args(["--authors-python", os.environ["DPTAUCC_AUTHORS_PYTHON"],
                           "--repeats", "1", "--epsilon", "5"])
    authors = bva.time_authors(args, tmp_path / "src", method, "tiny", tmp_path / "tiny.npz", 2, y)
    assert not authors.error, authors.error
    assert len(authors.fit_s) == 1 and authors.fit_s[0] > 0
    assert len(authors.call_s) == (1 if method == "dphd" else 0)
    ours = bva.time_ours(args, method, "tiny", X, y, 2)
    sides = ["ours paper", "ours corrected"] if method in bva.PRIVATE else ["ours"]
    assert [r.side for r in ours] == sides
    assert all(not r.error and len(r.fit_s) == 1 for r in ours), [r.error for r in ours]


def test_without_a_checkout_the_repository_is_cloned_once(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_clone(cmd, check):
        calls.append(cmd)
        (Path(cmd[-1]) / "src" / "dptaucc").mkdir(parents=True)
        (Path(cmd[-1]) / "src" / "dptaucc" / "dptaucc.py").write_text("")

    monkeypatch.setattr(bva.subprocess, "run", fake_clone)
    where = tmp_path / "cache" / "authors-dptaucc"
    assert bva.authors_checkout(None, where) == where
    assert calls == [["git", "clone", "--quiet", bva.AUTHORS_URL, str(where)]]
    assert "cloning https://github.com/rupensa/dptaucc" in capsys.readouterr().out
    assert bva.authors_checkout(None, where) == where and len(calls) == 1
