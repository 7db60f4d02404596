"""One place per method: each built-in method's facts, declared beside its estimator."""

from __future__ import annotations

import importlib

import pytest
import yaml

from dptaucc.bench import aggregate
from dptaucc.bench.configs import config_dir
from dptaucc.methods import BUILTIN_MODULES, method, methods


@pytest.mark.parametrize("name", BUILTIN_MODULES)
def test_config_runs_the_estimator_its_method_declares(name):
    """The config selects the estimator and states the protocol facts the harness reads before
    importing it; they must be the method's."""
    info = method(name)
    cfg = yaml.safe_load((config_dir() / "algorithm" / f"{name}.yaml").read_text("utf-8"))
    assert cfg["name"] == name and cfg["_target_"] == info.estimator
    assert (cfg["private"], cfg["uses_delta"], cfg["coclusters"], cfg["max_epsilon"]) == (
        info.private, info.uses_delta, info.coclusters, info.max_epsilon)
    module, _, cls = info.estimator.rpartition(".")
    estimator = getattr(importlib.import_module(module), cls)()
    assert ("mode" in estimator.get_params()) == info.private
    if info.private:  # the modes the harness runs it in (absent from the config: both)
        assert tuple(sorted(cfg.get("modes", ["corrected", "paper"]))) == info.modes


def test_every_config_is_a_registered_method():
    names = sorted(p.stem for p in (config_dir() / "algorithm").glob("*.yaml"))
    assert names == sorted(BUILTIN_MODULES)


def test_figures_and_report_read_the_registry():
    assert aggregate.LABELS == {m.name: m.label for m in methods()}
    assert aggregate.NEIGHBOURS["dp_taucc"] == "one cell +1"
    assert aggregate.NEIGHBOURS["dp_kmeans"] == "one row replaced (covers one cell)"
    assert aggregate.PAPER_METHODS == ("dp_taucc", "dp_kmeans", "dphd", "dpnmf")
    assert aggregate.EXTRA_METHODS == ("dpm", "colored_noise", "fccm")
    assert aggregate.NON_PRIVATE == ("fast_taucc", "fccm")
    assert aggregate.label("mine") == "mine"
    with pytest.raises(KeyError, match="no built-in method 'mine'"):
        method("mine")
