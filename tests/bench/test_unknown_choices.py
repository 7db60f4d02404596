"""An unknown dataset, algorithm or experiment on the command line: exit 2, one message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dptaucc.bench import reproduce
from dptaucc.bench.configs import UnknownChoiceError, check_choices


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
