"""Job configs are refused before anything runs: a clear message, nothing stored."""

from __future__ import annotations

import sys

import pytest
from omegaconf import OmegaConf

from dptaucc.bench import run
from dptaucc.bench.store import RunStore
from dptaucc.bench.validate import (
    ConfigError,
    check_epsilon,
    dataset_shape,
    validate_job,
    validate_jobs,
)


def _job(composer, results_dir, *overrides):
    cfg = composer.compose(["dataset=cstr", f"paths.results_dir={results_dir}", *overrides])
    return OmegaConf.to_container(cfg, resolve=True)


BAD = [
    (("epsilon=-1",), "epsilon must be > 0"),
    (("epsilon=0",), "epsilon must be > 0"),
    (("epsilon=nan",), "epsilon must be > 0"),
    (("epsilon=abc",), "epsilon must be a number"),
    (("mode=foo",), "mode must be one of corrected, paper"),
    (("seed=-1",), "seed must be an integer >= 0"),
    (("seed=1.5",), "seed must be an integer >= 0"),
    (("algorithm.params.n_row_clusters=5000",), "exceeds the 475 rows of dataset 'cstr'"),
    (("algorithm.params.n_col_clusters=1001",), "exceeds the 1000 columns"),
    (("algorithm.params.n_row_clusters=0",), "must be an integer >= 1"),
    (("algorithm.params.h=2",), "'h' parameter of DPTauCC must be a float in the range"),
    (("algorithm.params.h=0",), "'h' parameter"),
    (("algorithm.params.n_iterations=0",), "'n_iterations' parameter"),
    # an estimator with _parameter_constraints: scikit-learn's own check and message
    (("algorithm=dp_kmeans", "+algorithm.params.bounds_max=-1"),
     "'bounds_max' parameter of DPKMeans must be None or a float"),
    (("+algorithm.params.bogus=1",),
     "algorithm 'dp_taucc': DPTauCC.__init__() got an unexpected keyword argument 'bogus'"),
    (("algorithm._target_=dptaucc.NoSuchEstimator",),
     "algorithm 'dp_taucc': _target_ 'dptaucc.NoSuchEstimator' cannot be imported"),
    (("algorithm._target_=dptaucc.__version__",),
     "algorithm 'dp_taucc': _target_ 'dptaucc.__version__' Expected a callable target"),
    (("algorithm._target_=DPTauCC",), "_target_ must be 'package.module.Class'"),
    # a config written before configs used Hydra's key
    (("~algorithm._target_", "+algorithm.target=dptaucc.DPTauCC"),
     "names the class with 'target'; the key is Hydra's '_target_'"),
    (("dataset.name=nosuch",), "unknown dataset 'nosuch'"),
    (("dataset.loader=csv",), "dataset.loader must be one of"),
    (("dataset=biclusters", "dataset.n_cols=20", "algorithm.params.n_col_clusters=21"),
     "exceeds the 20 columns of dataset 'biclusters'"),
    (("dataset=biclusters", "dataset.params.n_clusters=0"), "n_clusters must be an integer"),
    (("dataset=biclusters", "+dataset.params.colour=red"), "unexpected keyword argument"),
    (("algorithm=dpnmf", "delta=2"), "delta must be null"),
    (("bench.experiment=../x",), "bench.experiment must be a plain name"),
]


@pytest.mark.parametrize("overrides,message", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_values_are_refused_and_nothing_is_stored(composer, results_dir, overrides,
                                                      message):
    job = _job(composer, results_dir, *overrides)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_job(job)
    with pytest.raises(ConfigError):
        run(job)  # the library path refuses too
    assert not (results_dir / "quick").exists() and not list(results_dir.rglob("*.json"))


def test_good_jobs_pass(composer, results_dir):
    for overrides in ([], ["epsilon=inf", "mode=paper"], ["algorithm=fast_taucc"],
                      ["dataset=tr11", "algorithm=dpnmf", "epsilon=0.5", "delta=1e-5"],
                      ["dataset=biclusters", "dataset.n_cols=30", "algorithm=dphd"],
                      ["algorithm=fccm", "dataset=classic3"], ["algorithm=dpm"]):
        validate_job(_job(composer, results_dir, *overrides))
    assert check_epsilon("inf") == float("inf")
    with pytest.raises(ConfigError, match="epsilon=inf releases the data without noise"):
        validate_job(_job(composer, results_dir, "epsilon=inf"))  # corrected mode


def test_protocol_range_is_refused_for_a_single_job_but_excluded_in_a_sweep(composer,
                                                                           results_dir):
    job = _job(composer, results_dir, "algorithm=dpnmf", "epsilon=1.5")
    with pytest.raises(ConfigError, match=r"dpnmf runs only for epsilon < 1.0"):
        validate_job(job)
    validate_job(job, protocol=False)
    assert run(job) is None  # a sweep skips it: no record
    assert not list(results_dir.rglob("*.json"))


def test_modes_an_algorithm_lacks_are_refused_for_a_single_job_but_excluded_in_a_sweep(
        composer, results_dir):
    job = _job(composer, results_dir, "algorithm=dp_taucc_row", "mode=paper")
    with pytest.raises(ConfigError, match=r"dp_taucc_row runs only in mode corrected"):
        validate_job(job)
    assert run(job) is None  # a sweep skips it: no record
    assert not list(results_dir.rglob("*.json"))
    validate_job(_job(composer, results_dir, "algorithm=dp_taucc_row", "mode=corrected"))


def test_class_sentinels_come_from_the_registry(composer, results_dir):
    shape = dataset_shape({"loader": "cluto", "name": "tr11"})
    assert (shape.n_rows, shape.n_cols, shape.n_classes) == (414, 6429, 9)
    syn = dataset_shape({"loader": "biclusters", "n_cols": 40, "params": {"n_clusters": 4}})
    assert (syn.n_rows, syn.n_cols, syn.n_classes) == (1000, 40, 4)
    # "classes" on biclusters with 3 columns and 3 clusters is fine; 2 columns is not
    validate_job(_job(composer, results_dir, "dataset=biclusters", "dataset.n_cols=3"))
    with pytest.raises(ConfigError, match="n_clusters=3 exceeds"):
        validate_job(_job(composer, results_dir, "dataset=biclusters", "dataset.n_cols=2"))


def test_estimator_constraints_use_sklearn_machinery(composer, results_dir):
    """An estimator with _parameter_constraints is checked by its own _validate_params (which
    knows n_iterations <= 6); without them the generic table applies (which does not)."""
    constrained = "algorithm._target_=fake_estimators.Constrained"
    validate_job(_job(composer, results_dir, constrained, "algorithm.params.n_iterations=6"))
    with pytest.raises(ConfigError, match=r"'n_iterations' parameter of Constrained must be "
                                          r"an int in the range \[1, 6\]"):
        validate_job(_job(composer, results_dir, constrained, "algorithm.params.n_iterations=7"))
    plain = "algorithm._target_=fake_estimators.FailsAtHighEpsilon"
    validate_job(_job(composer, results_dir, plain, "algorithm.params.n_iterations=7"))
    with pytest.raises(ConfigError, match="'h' parameter of FailsAtHighEpsilon"):
        validate_job(_job(composer, results_dir, plain, "algorithm.params.h=1.5"))


def test_validate_jobs_reports_each_problem_once(composer, results_dir):
    jobs = [_job(composer, results_dir, f"seed={s}", f"epsilon={e}")
            for s in (0, 1, -1) for e in (0.5, -1)]
    errors = validate_jobs(jobs)
    assert errors == ["adhoc: epsilon must be > 0 (or inf), got -1",
                      "adhoc: seed must be an integer >= 0, got -1"]
    assert validate_jobs(jobs[:1]) == []


def test_runtime_failures_are_stored_and_retried(composer, results_dir, monkeypatch):
    """What validation cannot foresee fails in fit: an error record, which is not 'done'."""
    run_module = sys.modules["dptaucc.bench.run"]
    calls = []
    execute = run_module.execute
    monkeypatch.setattr(run_module, "execute", lambda job: calls.append(1) or execute(job))
    job = _job(composer, results_dir, "algorithm._target_=fake_estimators.FailsAtHighEpsilon",
               "epsilon=2")
    rec = run(job)
    assert rec["status"] == "error" and rec["error"].startswith("RuntimeError: boom")
    store = RunStore(results_dir / "runs", "adhoc")
    assert not store.is_done(rec["run_id"]) and store.is_done(rec["run_id"],
                                                              retry_failed=False)
    assert run(job)["status"] == "error" and len(calls) == 2  # retried by default
    no_retry = {**job, "bench": {**job["bench"], "retry_failed": False}}
    assert run(no_retry) == store.get(rec["run_id"]) and len(calls) == 2  # skipped


def test_user_datasets_are_checked_before_any_job(composer, results_dir, tmp_path,
                                                  monkeypatch):
    import numpy as np
    import scipy.sparse as sp

    monkeypatch.chdir(tmp_path)  # relative paths are read from the working directory
    sp.save_npz("counts.npz", sp.csr_matrix(np.ones((6, 4), dtype=np.int64)))
    (tmp_path / "labels.txt").write_text("a\na\nb\nb\nc\nc\n")
    matrix = ["dataset=matrix", "dataset.name=mine", "dataset.params.path=counts.npz"]
    validate_job(_job(composer, results_dir, *matrix, "dataset.params.labels=labels.txt"))
    with pytest.raises(ConfigError, match="has no labels, so n_row_clusters, n_col_clusters "
                                          "cannot be its number of classes"):
        validate_job(_job(composer, results_dir, *matrix))
    validate_job(_job(composer, results_dir, *matrix, "algorithm.params.n_row_clusters=2",
                      "algorithm.params.n_col_clusters=2"))
    with pytest.raises(ConfigError, match="dataset.params.path: missing.npz does not exist"):
        validate_job(_job(composer, results_dir, "dataset=matrix",
                          "dataset.params.path=missing.npz"))
    with pytest.raises(ConfigError, match="dataset.params.path must name a file"):
        validate_job(_job(composer, results_dir, "dataset=matrix"))  # path: ??? not given
    with pytest.raises(ConfigError, match="dataset.target 'nosuch.load' cannot be imported"):
        validate_job(_job(composer, results_dir, "dataset=callable",
                          "dataset.target=nosuch.load"))
    # the files are read: the shape and classes are known, a bad file is named
    with pytest.raises(ConfigError, match="n_row_clusters=7 exceeds the 6 rows of dataset 'mine'"):
        validate_job(_job(composer, results_dir, *matrix, "dataset.params.labels=labels.txt",
                          "algorithm.params.n_row_clusters=7"))
    sp.save_npz("bad.npz", sp.csr_matrix(np.array([[1, 0], [0, -3]])))
    with pytest.raises(ConfigError, match=r"dataset 'mine': bad\.npz: Negative values in data "
                                          r"passed to X: X\[1, 1\] = -3;"):
        validate_job(_job(composer, results_dir, "dataset=matrix", "dataset.name=mine",
                          "dataset.params.path=bad.npz", "algorithm.params.n_row_clusters=2",
                          "algorithm.params.n_col_clusters=2"))
    (tmp_path / "m.csv").write_text("row,col,count\n0,0,2\n1,1,3\n2,0,1\n2,2,1\n")
    (tmp_path / "four.txt").write_text("a\nb\na\nb\n")
    with pytest.raises(ConfigError, match=r"m\.csv: its row ids give 3 rows, but four\.txt has "
                                          r"4 labels"):
        validate_job(_job(composer, results_dir, "dataset=matrix", "dataset.name=mine",
                          "dataset.params.path=m.csv", "dataset.params.labels=four.txt"))
    validate_job(_job(composer, results_dir, "dataset=matrix", "dataset.name=mine",
                      "dataset.params.path=m.csv", "dataset.params.labels=four.txt",
                      "dataset.params.shape=[4,3]"))
