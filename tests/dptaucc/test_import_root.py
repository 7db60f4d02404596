"""The suite imports the project through ``dptaucc`` only (see the root conftest.py)."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["datasets", "baselines", "conf"])
def test_project_folders_do_not_import_as_top_level_packages(name):
    spec = importlib.util.find_spec(name)
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    assert (REPO / name).resolve() not in [Path(p).resolve() for p in locations]


def test_subpackages_import_under_dptaucc():
    import dptaucc.baselines.dphd
    import dptaucc.conf
    import dptaucc.datasets

    assert Path(dptaucc.datasets.__file__).parent == REPO / "datasets"
    assert Path(dptaucc.baselines.dphd.__file__).parent == REPO / "baselines" / "dphd"
    assert Path(dptaucc.conf.__file__).parent == REPO / "conf"
