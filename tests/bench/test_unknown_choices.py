"""An unknown dataset, algorithm or experiment, or an unknown key, on the command line: exit 2,
one message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dptaucc.bench import reproduce
from dptaucc.bench.configs import UnknownChoiceError, check_choices
from dptaucc.bench.overrides import UnknownKeyError, check_overrides


@pytest.mark.parametrize("argv,match", [
    (["dataset=nope"], "unknown dataset 'nope': choose one of biclusters,"),
    (["-m", "algorithm=dp_taucc,nope"], "unknown algorithm 'nope': choose one of colored_noise,"),
    (["experiment=nope"], "unknown experiment 'nope'"),
])
def test_unknown_choice_is_named(argv, match):
    with pytest.raises(UnknownChoiceError, match=match):
        check_choices(argv)


def test_known_and_user_choices_pass(tmp_path, monkeypatch):
    check_choices(["-m", "algorithm=dp_taucc,fccm", "dataset=cstr", "seed=range(3)"])
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "mine.yaml").write_text("name: mine\n")
    check_choices(["--config-dir", str(tmp_path), "dataset=mine"])
    check_choices(["hydra.searchpath=[file:///elsewhere]", "dataset=theirs"])  # Hydra decides
    monkeypatch.setenv("DPTAUCC_CONFIG_PATH", str(tmp_path))
    check_choices(["dataset=mine"])


def test_the_entry_point_exits_2_with_one_message(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dptaucc.bench", "dataset=nope",
                          f"hydra.run.dir={tmp_path}"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert out.stderr.count("unknown dataset 'nope'") == 1 and "Traceback" not in out.stderr


def test_reproduce_exits_2(capsys, tmp_path):
    assert reproduce.main(["--scale", "quick", "--experiments", "nope", "--dry-run",
                           "--results-dir", str(tmp_path)]) == 2
    assert reproduce.main(["--scale", "quick", "--sweep", "algorithm=nope", "--dry-run",
                           "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown experiment 'nope'" in err and "unknown algorithm 'nope'" in err


@pytest.mark.parametrize("argv,match", [
    (["algorithm.params.n_iter=3"],
     r"^algorithm\.params\.n_iter=3: algorithm 'dp_taucc' has no parameter 'n_iter' \(did you "
     r"mean n_iterations\?\); keys there: h, n_col_clusters, n_iterations, n_row_clusters; to "
     r"add a new key, write \+algorithm\.params\.n_iter=3$"),
    (["epsilonn=0.5"], r"^epsilonn=0\.5: the config has no top-level key 'epsilonn' \(did you "
                       r"mean epsilon\?\)"),
    (["-m", "algorithm=dp_taucc,fast_taucc", "algorithm.params.h=0.5"],
     r"algorithm 'fast_taucc' has no parameter 'h'"),
    (["paths.result_dir=x"], r"no key 'result_dir' under paths \(did you mean results_dir\?\)"),
])
def test_unknown_key_is_named_in_one_line(argv, match):
    with pytest.raises(UnknownKeyError, match=match):
        check_overrides(argv)


def test_known_added_and_hydra_keys_pass(tmp_path):
    check_overrides(["-m", "algorithm=dp_taucc,fast_taucc", "epsilon=0.5,1", "seed=range(3)",
                     "dataset=cstr", "algorithm.params.n_row_clusters=3"])
    check_overrides(["+algorithm.params.n_iter=3", "~delta", "hydra.run.dir=x",
                     "hydra/launcher=cores"])
    check_overrides(["algorithm.params.n_iter=3", "--cfg", "job"])  # Hydra prints the config
    check_overrides(["experiment=fig2_real", "bench.retry_failed=false"])
    (tmp_path / "algorithm").mkdir()
    (tmp_path / "algorithm" / "mine.yaml").write_text(
        "name: mine\n_target_: dptaucc.FastTauCC\nprivate: false\nparams: {n_row_clusters: 2}\n")
    check_overrides(["--config-dir", str(tmp_path), "algorithm=mine",
                     "algorithm.params.n_row_clusters=4"])
    with pytest.raises(UnknownKeyError, match="algorithm 'mine' has no parameter 'n_col'"):
        check_overrides(["--config-dir", str(tmp_path), "algorithm=mine",
                         "algorithm.params.n_col=4"])


def test_a_typo_d_key_exits_2_with_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dptaucc.bench", "algorithm.params.n_iter=3",
                          f"hydra.run.dir={tmp_path}"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: algorithm.params.n_iter=3: algorithm 'dp_taucc' has no parameter 'n_iter' (did "
        "you mean n_iterations?); keys there: h, n_col_clusters, n_iterations, n_row_clusters; "
        "to add a new key, write +algorithm.params.n_iter=3"]
