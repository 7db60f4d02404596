"""run(cfg) in-process on cstr: a valid record, stored atomically, skipped on rerun; errors."""

from __future__ import annotations

import json
import math
import platform
import re
import shutil

import numpy as np
import pytest
from omegaconf import OmegaConf

from dptaucc.bench import run
from dptaucc.bench.configs import run_id
from dptaucc.bench.run import COLUMNS
from dptaucc.bench.store import RunStore
from dptaucc.bench.validate import ConfigError


def _cfg(composer, results_dir, *overrides):
    return composer.compose(["dataset=cstr", f"paths.results_dir={results_dir}", *overrides])


def test_run_writes_a_valid_record(composer, results_dir):
    cfg = _cfg(composer, results_dir, "algorithm=dp_taucc", "epsilon=2", "seed=1",
               "mode=corrected")
    rec = run(cfg)
    assert rec["status"] == "ok", rec["error"]
    assert set(COLUMNS) <= set(rec)
    assert rec["run_id"] == run_id(OmegaConf.to_container(cfg, resolve=True))
    assert (rec["algorithm"], rec["mode"], rec["dataset"], rec["seed"]) == (
        "dp_taucc", "corrected", "cstr", 1)
    assert (rec["n_rows"], rec["n_cols"], rec["nnz"], rec["n_classes"]) == (475, 1000, 15989, 4)
    assert rec["p_n_row_clusters"] == 4 and rec["p_n_iterations"] == 4  # "classes" resolved
    assert 0 <= rec["nmi_rows"] <= 1 and -1 <= rec["ari_rows"] <= 1
    assert rec["epsilon"] == 2.0 and rec["epsilon_spent"] == pytest.approx(2.0)
    assert rec["fit_time_s"] > 0 and rec["peak_rss_mb"] > 10
    assert 1 <= rec["k_found"] <= 4 and rec["tau_rc"] == rec["tau_rc"]  # not NaN
    assert math.isnan(rec["nmi_cols"])  # real data: no column ground truth
    assert json.loads(rec["ledger"]) and rec["git_sha"] and rec["started_at"]
    stored = RunStore(results_dir / "runs", "adhoc").get(rec["run_id"])
    assert stored["nmi_rows"] == rec["nmi_rows"]
    # rerun: the stored record comes back, nothing is refitted
    again = run(cfg)
    assert again["started_at"] == stored["started_at"] and again["nmi_rows"] == rec["nmi_rows"]
    assert list((results_dir / "runs" / "adhoc").iterdir()) == [
        results_dir / "runs" / "adhoc" / f"{rec['run_id']}.json"]


def test_non_private_method_runs_once_per_seed(composer, results_dir):
    a = run(_cfg(composer, results_dir, "algorithm=fast_taucc", "epsilon=0.5"))
    b = run(_cfg(composer, results_dir, "algorithm=fast_taucc", "epsilon=3", "mode=paper"))
    assert a["status"] == "ok", a["error"]
    assert a["run_id"] == b["run_id"] and a["started_at"] == b["started_at"]
    assert a["mode"] is None and math.isnan(a["epsilon"]) and a["private"] is False


def test_protocol_exclusion_and_refusals_store_nothing(composer, results_dir):
    assert run(_cfg(composer, results_dir, "algorithm=dpnmf", "epsilon=1.5")) is None
    with pytest.raises(ConfigError, match="'h' parameter"):
        run(_cfg(composer, results_dir, "algorithm=dp_taucc", "algorithm.params.h=1.7"))
    with pytest.raises(ConfigError, match="NoSuchEstimator"):
        run(_cfg(composer, results_dir, "algorithm._target_=dptaucc.NoSuchEstimator"))
    assert len(RunStore(results_dir / "runs", "adhoc")) == 0


def test_record_provenance(composer, results_dir):
    rec = run(_cfg(composer, results_dir, "algorithm=dp_taucc", "epsilon=3"))
    assert rec["status"] == "ok", rec["error"]
    assert rec["python"].startswith(("CPython", "PyPy")) and platform.python_version() in \
        rec["python"]
    assert rec["os"] == platform.platform() and "logical CPUs" in rec["cpu"]
    blas = json.loads(rec["blas"])
    assert blas and all("internal_api" in lib and "num_threads" in lib for lib in blas)
    versions = json.loads(rec["versions"])
    assert versions["numpy"] == np.__version__ and versions["scikit-learn"]
    assert rec["octave"] is None  # only Octave jobs ask for its version
    # a checkout of this project: a commit hash, with -dirty when tracked code changed
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", rec["git_sha"]), rec["git_sha"]
    assert rec["load_1m"] >= 0 and rec["other_busy_cpus"] >= 0
    path = RunStore(results_dir / "runs", "adhoc").path(rec["run_id"])
    assert path.stat().st_mode & 0o040, "records are group-readable"


@pytest.mark.octave
def test_octave_jobs_record_octave_version(composer, results_dir):
    if shutil.which("octave-cli") is None:
        pytest.skip("GNU Octave not installed")
    rec = run(_cfg(composer, results_dir, "algorithm=dphd", "epsilon=3"))
    assert rec["status"] == "ok", rec["error"]
    assert rec["octave"].startswith("GNU Octave, version")


def test_biclusters_record_has_column_scores(composer, results_dir):
    rec = run(composer.compose(["dataset=biclusters", "dataset.n_cols=60", "epsilon=3",
                                "algorithm=dp_taucc", f"paths.results_dir={results_dir}"]))
    assert rec["status"] == "ok", rec["error"]
    assert rec["n_cols"] == 60 and rec["p_n_cols"] == 60
    assert 0 <= rec["nmi_cols"] <= 1 and 0 <= rec["nmi_rows"] <= 1


def test_store_write_is_atomic(tmp_path):
    store = RunStore(tmp_path, "exp")
    store.write({"run_id": "abc", "x": float("nan"), "y": float("inf")})
    (store.dir / ".abc.123.tmp").write_text("{half")  # an interrupted write leaves only a tmp
    assert [r["run_id"] for r in store.records()] == ["abc"]
    assert store.get("abc") == {"run_id": "abc", "x": None, "y": "inf"}
    with pytest.raises(ValueError):
        RunStore(tmp_path, "../escape")


#: record columns that describe the run, not the result (timings, memory, load, provenance)
_RUN_COLUMNS = {"fit_time_s", "eval_time_s", "peak_rss_mb", "load_1m", "other_busy_cpus",
                "started_at", "git_sha", "versions", "python", "os", "cpu", "blas",
                "blas_threads", "octave", "slurm_job_id", "slurm_array_task", "host",
                "workers"}


def _result(rec: dict) -> str:
    return json.dumps({k: v for k, v in rec.items() if k not in _RUN_COLUMNS}, sort_keys=True,
                      default=str)


@pytest.mark.parametrize("dataset", ["cstr", "biclusters"])
def test_a_job_on_the_cached_dataset_gives_the_uncached_record(composer, results_dir, dataset):
    """A worker keeps its dataset between jobs (every seed of one synthetic size shares one
    matrix): a job that finds the matrix in the cache, after other fits on it, gives the same
    record as the job run alone in a fresh cache."""
    from dptaucc.bench.configs import to_plain
    from dptaucc.bench.job_data import _load
    from dptaucc.bench.run import execute

    extra = ["dataset.n_cols=30"] if dataset == "biclusters" else []

    def job(alg, seed, eps):
        return to_plain(composer.compose([f"dataset={dataset}", *extra, f"algorithm={alg}",
                                          f"seed={seed}", f"epsilon={eps}", "mode=paper",
                                          f"paths.results_dir={results_dir}"]))

    target = job("dp_taucc", 1, 0.5)
    _load.cache_clear()
    alone = execute(target)
    assert alone["status"] == "ok", alone["error"]
    _load.cache_clear()
    for other in (job("dpnmf", 0, 0.5), job("dp_kmeans", 1, 3), job("dp_taucc", 0, 3)):
        assert execute(other)["status"] == "ok"
    hits = _load.cache_info().hits
    cached = execute(target)
    assert _load.cache_info().hits == hits + 1  # the matrix came from the cache
    assert _result(cached) == _result(alone)
