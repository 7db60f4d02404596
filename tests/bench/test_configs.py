"""Every config composes; grids enumerate to the paper's job counts; run ids are stable."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from dptaucc.bench.configs import (
    enumerate_jobs,
    experiment_grid,
    in_protocol,
    list_experiments,
    list_group,
    off_grid,
    parse_sweep,
    run_id,
    set_dotted,
)
from dptaucc.bench.job_data import LOADERS

EPS14 = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99999, 1.5, 2, 2.5, 3]


def test_groups_present():
    assert set(list_group("algorithm")) >= {"dp_taucc", "fast_taucc", "dp_kmeans", "dphd",
                                            "dpnmf", "dpm", "colored_noise", "fccm"}
    assert set(list_group("dataset")) == {"classic3", "cstr", "tr11", "tr41", "hitech", "k1b",
                                          "reviews", "sports", "biclusters", "matrix", "callable"}
    assert set(list_experiments()) == {"fig2_real", "fig3_iterations", "supp_h",
                                       "supp_synthetic", "supp_runtime", "quick",
                                       "row_crossover"}


@pytest.mark.parametrize("group", ["algorithm", "dataset", "paths"])
def test_every_group_option_composes(composer, group):
    for name in list_group(group):
        cfg = composer.compose([f"{group}={name}"])
        plain = OmegaConf.to_container(cfg, resolve=True)
        if group == "algorithm":
            alg = plain["algorithm"]
            assert alg["name"] == name and "." in alg["_target_"]
            assert isinstance(alg["private"], bool) and isinstance(alg["params"], dict)
        if group == "dataset":
            assert plain["dataset"]["loader"] in LOADERS


@pytest.mark.parametrize("experiment", list_experiments())
def test_every_experiment_composes_with_launchers(composer, experiment):
    for launcher in ("basic", "joblib", "submitit_slurm", "cores", "slurm"):
        cfg = composer.compose([f"experiment={experiment}", f"hydra/launcher={launcher}"],
                               hydra=True)
        assert cfg.bench.experiment == experiment
        assert cfg.hydra.sweeper.params, "every experiment names its sweep grid"
        assert "_target_" in cfg.hydra.launcher
    assert composer.compose([f"experiment={experiment}"]).bench.experiment == experiment


def test_paper_grids_match_the_authors_scripts(composer):
    g = experiment_grid(composer, "fig2_real")
    assert g["epsilon"] == EPS14 and g["seed"] == list(range(10))
    assert len(g["dataset"]) == 7 and "sports" not in g["dataset"]
    g3 = experiment_grid(composer, "fig3_iterations")
    assert g3["algorithm.params.n_iterations"] == list(range(2, 11))
    assert g3["epsilon"] == EPS14 + [4.5, 5, 6, 7, 8, 9, 10]
    gh = experiment_grid(composer, "supp_h")
    assert gh["algorithm.params.h"] == pytest.approx([i / 10 for i in range(1, 10)])
    gs = experiment_grid(composer, "supp_synthetic")
    assert len(gs["dataset.n_cols"]) == 32
    assert gs["dataset.n_cols"][0] == 10 and gs["dataset.n_cols"][-1] == 10000


def test_fig2_jobs_follow_the_protocol(composer):
    jobs = enumerate_jobs(composer, "fig2_real", "quick")
    by = {}
    for j in jobs:
        by.setdefault(j["algorithm"]["name"], []).append(j)
    # DPNMF only for ε < 1; non-private methods once per (dataset, seed)
    assert all(float(j["epsilon"]) < 1 for j in by["dpnmf"]) and len(by["dpnmf"]) == 3 * 2 * 3 * 2
    assert len(by["fast_taucc"]) == 3 * 3 and len(by["fccm"]) == 3 * 3
    assert len(by["dp_taucc"]) == 3 * 3 * 3 * 2  # datasets x eps x seeds x modes
    ids = [run_id(j) for j in jobs]
    assert len(set(ids)) == len(ids)
    assert not in_protocol({"algorithm": {"private": True, "max_epsilon": 1.0}, "epsilon": 1.5})


def test_run_id_ignores_paths_and_normalises_numbers(composer):
    a = OmegaConf.to_container(composer.compose(["epsilon=2"]), resolve=True)
    b = OmegaConf.to_container(composer.compose(["epsilon=2.0", "paths.results_dir=/x"]),
                               resolve=True)
    c = OmegaConf.to_container(composer.compose(["epsilon=2.5"]), resolve=True)
    assert run_id(a) == run_id(b) != run_id(c)


#: run ids of jobs computed before the algorithm configs named their class with Hydra's
#: `_target_` (it was `target`): stored records keep their ids
KNOWN_RUN_IDS = {
    ("algorithm=dp_taucc", "dataset=cstr", "epsilon=0.5", "seed=0"): "d094fac6d89dd469",
    ("algorithm=fast_taucc", "dataset=classic3", "seed=2"): "3a1218f216f759e2",
    ("algorithm=dpnmf", "dataset=tr11", "epsilon=0.25", "seed=1", "delta=1e-6"):
        "cad98762e22053a4",
    ("dataset=callable", "dataset.target=mypkg.load", "dataset.name=mine"): "05fb10e5300fb7e1",
}


@pytest.mark.parametrize("overrides", KNOWN_RUN_IDS, ids=" ".join)
def test_run_ids_are_those_of_stored_results(composer, overrides):
    job = OmegaConf.to_container(composer.compose(list(overrides)), resolve=True)
    assert "target" not in job["algorithm"] and job["algorithm"]["_target_"]
    assert run_id(job) == KNOWN_RUN_IDS[overrides]


def test_sweep_parsing_and_bad_keys():
    assert parse_sweep({"seed": "range(3)", "epsilon": "0.5,2"}) == {"seed": [0, 1, 2],
                                                                     "epsilon": [0.5, 2]}
    cfg = {"algorithm": {"params": {"h": 0.9}}}
    set_dotted(cfg, "algorithm.params.h", 0.1)
    assert cfg["algorithm"]["params"]["h"] == 0.1
    with pytest.raises(KeyError, match="not in the config"):
        set_dotted(cfg, "algorithm.params.hh", 0.1)
    with pytest.raises(ValueError, match="scale"):
        experiment_grid(None, "fig2_real", "huge")


def test_sweep_replaces_axes(composer):
    g = experiment_grid(composer, "fig2_real", "quick", sweep={"seed": "range(5)",
                                                               "algorithm": "dp_taucc"})
    assert g["seed"] == [0, 1, 2, 3, 4] and g["algorithm"] == ["dp_taucc"]
    assert g["dataset"] == ["cstr", "classic3", "tr11"]


def test_off_grid_names_the_axes_a_job_leaves(composer):
    grid = experiment_grid(composer, "fig2_real")
    job = OmegaConf.to_container(composer.compose(["experiment=fig2_real", "epsilon=0.99999",
                                                   "dataset=tr11", "seed=3"]), resolve=True)
    assert off_grid(job, grid) == {}
    job["epsilon"], job["seed"] = 1.0, 12
    assert off_grid(job, grid) == {"epsilon": 1.0, "seed": 12}
    job["dataset"]["name"] = "sports"
    assert set(off_grid(job, grid)) == {"epsilon", "seed", "dataset"}
    quick = experiment_grid(composer, "fig2_real", "quick")
    assert off_grid({**job, "epsilon": 3, "seed": 2, "dataset": {"name": "cstr"}}, quick) == {}
