"""One job -> one record: load the dataset, fit the estimator, evaluate, store.

:func:`run` takes a composed config (DictConfig or the plain dict it resolves to), which is
all that ``python -m dptaucc.bench`` and the reproduce driver hand it.
"""

from __future__ import annotations

import json
import math
import time
import traceback
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from dptaucc.bench import provenance
from dptaucc.bench.configs import (
    derived_seed,
    estimator_kwargs,
    in_protocol,
    job_identity,
    run_id,
    to_plain,
)
from dptaucc.bench.contention import OtherLoad
from dptaucc.bench.job_data import class_counts, load_dataset, resolve_params
from dptaucc.bench.memory import PeakRSS
from dptaucc.bench.metrics import nmi_ari
from dptaucc.bench.store import RunStore
from dptaucc.bench.validate import make_estimator, validate_job
from dptaucc.privacy.releases import DP, POST_PROCESSING

#: the record columns (identity, privacy, data, metrics, status, provenance), in table order;
#: p_* parameter columns follow
COLUMNS = [
    "run_id", "experiment", "algorithm", "mode", "dataset", "seed",
    "epsilon", "delta", "epsilon_spent", "epsilon_mechanisms", "delta_spent", "end_to_end_dp",
    "non_private_steps",
    "private", "n_rows", "n_cols", "nnz", "n_classes",
    "nmi_rows", "ari_rows", "nmi_rows_private", "ari_rows_private", "nmi_rows_released",
    "ari_rows_released", "row_labels_private", "nmi_cols", "ari_cols", "tau_rc", "tau_cr",
    "tau_hat_rc", "tau_hat_cr",
    "k_found", "l_found", "fit_time_s", "eval_time_s", "peak_rss_mb", "status", "error",
    "warnings", "random_state", "git_sha", "versions", "started_at", "blas_threads",
    "python", "os", "host", "cpu", "blas", "octave", "load_1m", "other_busy_cpus", "workers",
    "slurm_job_id", "slurm_array_task", "ledger",
]

NAN = float("nan")


# ---------------------------------------------------------------- estimator
def build_estimator(job: Mapping, dataset):
    """Instantiate the algorithm's ``_target_`` with plain-Python arguments (no ListConfig
    reaches sklearn) and the job's derived seed."""
    kwargs = estimator_kwargs(job, *class_counts(dataset))
    return make_estimator(job["algorithm"], kwargs, random_state=derived_seed(job))


# ---------------------------------------------------------------- metrics
def _scores(truth, labels) -> tuple[float, float]:
    if truth is None or labels is None:
        return NAN, NAN
    return nmi_ari(truth, labels)


def row_labels_declared_private(est) -> bool:
    """Whether ``row_labels_`` is a DP output by the estimator's own declaration: its
    ``row_labels_private_`` attribute, or else its release kinds (``row_labels_`` declared "dp"
    or "post-processing", :mod:`dptaucc.privacy.releases`).

    >>> from types import SimpleNamespace
    >>> row_labels_declared_private(SimpleNamespace(row_labels_private_=True))
    True
    >>> class Mine:
    ...     def release_kinds(self):
    ...         return {"row_labels_": "dp"}
    >>> row_labels_declared_private(Mine()), row_labels_declared_private(object())
    (True, False)
    """
    declared = getattr(est, "row_labels_private_", None)
    if declared is not None:
        return bool(declared)
    kinds = est.release_kinds() if callable(getattr(est, "release_kinds", None)) else {}
    return kinds.get("row_labels_") in (DP, POST_PROCESSING)


def evaluate(est, X, dataset) -> dict:
    """Metrics of a fitted estimator (the evaluation protocol of docs/protocol.md).

    ``nmi_rows``: the paper's protocol, ``evaluation_row_labels(X)`` (evaluation only, reads X);
    ``nmi_rows_private``: the released labels when they are DP outputs; ``*_released``: the
    released labels whatever their privacy.
    """
    rec: dict[str, Any] = {}
    released = getattr(est, "row_labels_", None)  # absent: the method releases no row labels
    released = None if released is None else np.asarray(released)
    is_private = row_labels_declared_private(est) and released is not None
    paper = est.evaluation_row_labels(X) if hasattr(est, "evaluation_row_labels") else released
    rec["nmi_rows"], rec["ari_rows"] = _scores(dataset.row_labels, paper)
    same = released is not None and np.shape(paper) == released.shape and np.array_equal(
        paper, released)
    rec["nmi_rows_released"], rec["ari_rows_released"] = (
        (rec["nmi_rows"], rec["ari_rows"]) if same else _scores(dataset.row_labels, released))
    if is_private:
        rec["nmi_rows_private"], rec["ari_rows_private"] = (rec["nmi_rows_released"],
                                                            rec["ari_rows_released"])
    else:
        rec["nmi_rows_private"], rec["ari_rows_private"] = NAN, NAN
    rec["row_labels_private"] = is_private
    cols = getattr(est, "column_labels_", None)
    rec["nmi_cols"], rec["ari_cols"] = _scores(dataset.col_labels, cols)
    rec["tau_rc"] = float(getattr(est, "tau_rc_", NAN))
    rec["tau_cr"] = float(getattr(est, "tau_cr_", NAN))
    rec["tau_hat_rc"] = float(getattr(est, "tau_hat_rc_", NAN))
    rec["tau_hat_cr"] = float(getattr(est, "tau_hat_cr_", NAN))
    k = getattr(est, "n_row_clusters_", None)
    rec["k_found"] = int(k) if k is not None else int(len(np.unique(paper)))
    l_found = getattr(est, "n_col_clusters_", None)
    if l_found is None and cols is not None:
        l_found = len(np.unique(np.asarray(cols)))
    rec["l_found"] = int(l_found) if l_found is not None else None
    return rec


def _privacy(est, job: Mapping) -> dict:
    ledger = getattr(est, "privacy_ledger_", None)
    alg = job["algorithm"]
    rec: dict[str, Any] = {
        "epsilon_spent": float(getattr(est, "epsilon_spent_", NAN)),
        "delta_spent": float(getattr(est, "delta_spent_", NAN)),
    }
    if alg.get("private", True) and alg.get("uses_delta"):
        claimed = job.get("delta")
        if claimed is None:
            claimed = getattr(est, "delta_", None)
        if claimed is None:
            claimed = est.get_params().get("delta")
        if claimed is None and ledger is not None and ledger.budget_delta > 0:
            claimed = ledger.budget_delta  # the estimator's own default, e.g. DPM's 1/(n√n)
        rec["delta"] = NAN if claimed is None else float(claimed)
    if ledger is not None:
        rec["epsilon_mechanisms"] = float(ledger.epsilon_mechanisms)
        rec["end_to_end_dp"] = bool(ledger.end_to_end_dp)
        rec["non_private_steps"] = json.dumps(list(ledger.non_private_steps))
        rec["ledger"] = json.dumps(ledger.to_records(), default=str)
    else:
        rec["end_to_end_dp"] = False
        rec["non_private_steps"] = json.dumps(["(no ledger)"])
    return rec


# ---------------------------------------------------------------- one job
def base_record(job: Mapping) -> dict:
    ident = job_identity(job)
    alg = job["algorithm"]
    rec: dict[str, Any] = {c: None for c in COLUMNS}
    rec.update({
        "run_id": run_id(job), "experiment": ident["experiment"], "algorithm": alg["name"],
        "mode": ident["mode"], "dataset": job["dataset"]["name"], "seed": ident["seed"],
        "epsilon": NAN if ident["epsilon"] is None else float(ident["epsilon"]),
        "delta": NAN if ident["delta"] is None else ident["delta"],
        "delta_spent": NAN,
        "private": bool(alg.get("private", True)), "random_state": derived_seed(job),
    })
    for key, value in (alg.get("params") or {}).items():
        rec[f"p_{key}"] = value if isinstance(value, (int, float, str, bool)) else json.dumps(value)
    if job["dataset"]["loader"] == "biclusters":
        rec["p_n_cols"] = int(job["dataset"]["n_cols"])
    return rec


def execute(job: Mapping) -> dict:
    """Run one job and return its record; exceptions become ``status="error"`` records."""
    rec = base_record(job)
    rec["started_at"] = provenance.utc_now()
    try:
        dataset = load_dataset(job)
        meta = dataset.meta
        rec.update({k: meta.get(k) for k in ("n_rows", "n_cols", "nnz", "n_classes")})
        for key, value in resolve_params(job["algorithm"].get("params") or {}, dataset).items():
            if isinstance(value, (int, float, str, bool)):
                rec[f"p_{key}"] = value
        est = build_estimator(job, dataset)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with PeakRSS() as mem, OtherLoad() as load:
                t0 = time.perf_counter()
                est.fit(dataset.X)
                rec["fit_time_s"] = time.perf_counter() - t0
            rec["peak_rss_mb"] = mem.peak_mb
            rec["load_1m"], rec["other_busy_cpus"] = load.load_1m, load.other_busy_cpus
            t0 = time.perf_counter()
            rec.update(evaluate(est, dataset.X, dataset))
            rec["eval_time_s"] = time.perf_counter() - t0
        msgs = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)
        rec["warnings"] = json.dumps(list(msgs)[:5]) if msgs else None
        rec.update(_privacy(est, job))
        rec["status"] = "ok"
    except Exception as exc:  # a failing job is recorded; the sweep goes on
        rec["status"] = "error"
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        rec["error"] = (f"{type(exc).__name__}: {exc}\n" + "".join(tb[-3:]))[-4000:]
    rec.update(provenance.machine(), **provenance.placement())
    if provenance.uses_octave(str(job["algorithm"].get("_target_", ""))):
        rec["octave"] = provenance.octave_version()
    return rec


def run_job(job: Mapping, *, write: bool = True, skip_done: bool = True,
            validated: bool = False) -> tuple[str, dict | None]:
    """Execute one plain job config against its store.

    The config is validated first (:func:`validate.validate_job`; skip with ``validated``
    when the caller checked it): a bad one raises :class:`validate.ConfigError` and stores
    nothing. Returns ``(outcome, record)``: ``"excluded"`` (outside the algorithm's protocol
    range, no record), ``"skipped"`` (already done; the stored record) or ``"ran"`` (the new
    record). Done = a successful record; a failed one is run again unless
    ``bench.retry_failed`` is false.
    """
    if not validated:
        validate_job(job, protocol=False)
    if not in_protocol(job):
        return "excluded", None
    store = RunStore(job["paths"]["runs_dir"], job["bench"]["experiment"])
    rid = run_id(job)
    retry = bool(job["bench"].get("retry_failed", True))
    if skip_done and store.is_done(rid, retry_failed=retry):
        return "skipped", store.get(rid)
    rec = execute(job)
    if write:
        store.write(rec)
    return "ran", rec


def run(cfg: Any, *, write: bool = True, skip_done: bool = True) -> dict | None:
    """Run the job described by a composed config; return its record (None if excluded).

    >>> from dptaucc.bench.configs import Composer
    >>> with Composer() as composer:  # a small synthetic matrix: nothing to download
    ...     cfg = composer.compose(["algorithm=dp_taucc", "dataset=biclusters",
    ...                             "dataset.n_cols=30", "dataset.params.n_rows=60"])
    >>> record = run(cfg, write=False, skip_done=False)
    >>> record["status"], record["algorithm"], record["n_rows"], record["epsilon_spent"]
    ('ok', 'dp_taucc', 60, 1.0)
    """
    return run_job(to_plain(cfg), write=write, skip_done=skip_done)[1]


def summarize(rec: Mapping | None) -> str:
    if rec is None:
        return "excluded by the experiment protocol"
    if rec.get("status") != "ok":
        return f"{rec['run_id']} ERROR {str(rec.get('error', '')).splitlines()[0]}"
    eps = rec.get("epsilon")
    eps_s = "-" if eps is None or (isinstance(eps, float) and math.isnan(eps)) else f"{eps:g}"
    return (f"{rec['run_id']} {rec['algorithm']}/{rec['mode']} {rec['dataset']} eps={eps_s} "
            f"seed={rec['seed']}: nmi_rows={rec['nmi_rows']:.3f} "
            f"eps_spent={rec['epsilon_spent']} fit={rec['fit_time_s']:.2f}s")
