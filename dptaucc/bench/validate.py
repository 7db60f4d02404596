"""Refuse a job config that cannot run, before anything runs: one clear message, nothing stored.

The harness checks what it owns (ε, δ, mode, seed, the algorithm's import path and protocol
range, the dataset's name and synthetic parameters, cluster counts against the data's shape,
read from the dataset registry or the synthetic parameters without loading any matrix). The
estimator's own parameters are checked by scikit-learn's machinery: ``est._validate_params()``
when the estimator declares ``_parameter_constraints``, otherwise the generic constraints of
:data:`GENERIC_CONSTRAINTS` for the parameters it takes.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    validate_parameter_constraints,
)

from dptaucc.base import MODES, SuiteEstimator
from dptaucc.bench.configs import estimator_kwargs, in_protocol
from dptaucc.bench.job_data import LOADERS

#: sklearn-style constraints of parameters several estimators share; used for an estimator
#: that declares no ``_parameter_constraints`` of its own
GENERIC_CONSTRAINTS: dict[str, list] = {
    "h": [Interval(numbers.Real, 0, 1, closed="neither")],
    "n_iterations": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_rounds": [Interval(numbers.Integral, 1, None, closed="left")],
    "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_sites": [Interval(numbers.Integral, 1, None, closed="left")],
}

#: cluster-count parameters and the data axis that bounds them
_ROW_COUNTS = ("n_clusters", "n_row_clusters")
_COL_COUNTS = ("n_col_clusters",)


class ConfigError(ValueError):
    """A job config that cannot run; the message names the problem and the offending value."""


@dataclass(frozen=True)
class DataShape:
    """What the checks need to know about a dataset without loading it (None: not known
    before loading, e.g. a user's own matrix file)."""

    name: str
    n_rows: int | None
    n_cols: int | None
    n_classes: int | None
    n_col_classes: int | None
    has_labels: bool = True  # False: "classes" cannot stand for a cluster count


def check_epsilon(value: Any) -> float:
    """ε of a job: a number > 0, or inf (no privacy)."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"epsilon must be a number > 0 or inf, got {value!r}")
    eps = float(value)
    if math.isnan(eps) or eps <= 0:
        raise ConfigError(f"epsilon must be > 0 (or inf), got {value!r}")
    return eps


def check_seed(value: Any) -> int:
    """The repetition index: an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"seed must be an integer >= 0, got {value!r}")
    if value < 0:
        raise ConfigError(f"seed must be an integer >= 0, got {value!r}")
    return int(value)


def check_delta(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ConfigError(f"delta must be null (the algorithm's default) or in (0, 1), "
                          f"got {value!r}")
    return float(value)


def import_target(target: Any, what: str, form: str) -> Any:
    """The function (or class) named ``package.module.Name`` (a dataset's ``target``)."""
    if not isinstance(target, str) or "." not in target:
        raise ConfigError(f"{what} must be '{form}', got {target!r}")
    module, _, attr = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what} {target!r} cannot be imported: {exc}") from exc
    if not callable(obj):
        raise ConfigError(f"{what} {target!r} is not callable")
    return obj


def estimator_factory(alg: Mapping) -> functools.partial:
    """The estimator class of an algorithm config, partially instantiated by Hydra from its
    ``_target_`` (``hydra.utils.instantiate`` with ``_partial_``): call it with the run's
    parameters. ``.func`` is the class. ConfigError names the algorithm and the problem."""
    name = alg.get("name")
    target = alg.get("_target_")
    if target is None and "target" in alg:
        raise ConfigError(f"algorithm {name!r}: its config names the class with 'target'; the "
                          f"key is Hydra's '_target_' (rename it: _target_: {alg['target']})")
    if not isinstance(target, str) or "." not in target:
        raise ConfigError(f"algorithm {name!r}: _target_ must be 'package.module.Class', "
                          f"got {target!r}")
    return _located(target, name)


@lru_cache(maxsize=64)
def _located(target: str, name: Any) -> functools.partial:
    """Hydra's partial of ``target`` (cached: the audit builds thousands of estimators)."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate({"_target_": target, "_partial_": True})
    except InstantiationException as exc:
        cause = exc.__cause__
        problem = (f"cannot be imported: {cause}" if isinstance(cause, ImportError)
                   else str(exc))
        raise ConfigError(f"algorithm {name!r}: _target_ {target!r} "
                          + " ".join(problem.split())) from exc


@lru_cache(maxsize=64)
def _takes_random_state(cls) -> bool:
    return "random_state" in inspect.signature(cls).parameters


def make_estimator(alg: Mapping, kwargs: Mapping, random_state: int | None = None):
    """The estimator of algorithm config ``alg`` built with ``kwargs`` (plain Python), plus
    ``random_state`` when its class takes one; ConfigError for an unknown parameter.

    >>> alg = {"name": "dp_taucc", "_target_": "dptaucc.DPTauCC"}
    >>> make_estimator(alg, {"n_row_clusters": 3, "epsilon": 0.5}, random_state=7)
    DPTauCC(epsilon=0.5, n_row_clusters=3, random_state=7)
    >>> make_estimator(alg, {"n_clusters": 3})
    Traceback (most recent call last):
    ...
    dptaucc.bench.validate.ConfigError: algorithm 'dp_taucc': DPTauCC.__init__() got an ...
    """
    factory = estimator_factory(alg)
    kwargs = dict(kwargs)
    if random_state is not None and _takes_random_state(factory.func):
        kwargs["random_state"] = random_state
    try:
        return factory(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"algorithm {alg.get('name')!r}: {exc}") from exc


def dataset_shape(ds: Mapping) -> DataShape:
    """Rows, columns and classes of the job's dataset, from the registry (CLUTO) or from the
    synthetic generator's parameters (biclusters); for a user's own data (``matrix`` files,
    a ``callable``) the files exist / the function imports, the shape stays unknown.
    ConfigError for an unknown dataset."""
    loader = ds.get("loader")
    if loader not in LOADERS:
        raise ConfigError(f"dataset.loader must be one of {', '.join(LOADERS)}, got {loader!r}")
    if loader == "cluto":
        from dptaucc.datasets import get_entry

        try:
            entry = get_entry(ds.get("name"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        return DataShape(entry.name, entry.n_rows, entry.n_cols, entry.n_classes,
                         entry.n_classes)
    if loader == "matrix":
        return _matrix_shape(ds)
    if loader == "callable":
        import_target(ds.get("target"), "dataset.target", "package.module.function")
        return DataShape(str(ds.get("name")), None, None, None, None)
    return _biclusters_shape(ds.get("n_cols"), json.dumps(ds.get("params") or {},
                                                          sort_keys=True))


def _matrix_shape(ds: Mapping) -> DataShape:
    """A user's matrix files: known arguments, the files exist, and they read as a dataset
    (:func:`dptaucc.datasets.load_matrix`: a bad file, a labels file that does not fit the
    matrix, a checksum, each named), which gives the shape and the class counts."""
    from dptaucc.datasets import load_matrix

    params = dict(ds.get("params") or {})
    try:
        inspect.signature(load_matrix).bind(**params)
    except TypeError as exc:
        raise ConfigError(f"dataset.params of a matrix dataset: {exc}") from exc
    for key in ("path", "labels", "col_labels"):
        value = params.get(key)
        if value is None and key != "path":
            continue
        if not isinstance(value, str) or value in ("", "???"):
            raise ConfigError(f"dataset.params.{key} must name a file, got {value!r}")
        if not Path(value).expanduser().is_file():
            raise ConfigError(f"dataset.params.{key}: {value} does not exist (relative paths "
                              f"are read from the working directory)")
    files = tuple(_stamp(params.get(k)) for k in ("path", "labels", "col_labels"))
    return _read_matrix_shape(str(ds.get("name")), json.dumps(params, sort_keys=True), files)


def _stamp(path: str | None) -> tuple | None:
    """What tells a file's versions apart for the cache of :func:`_read_matrix_shape`."""
    if path is None:
        return None
    st = Path(path).expanduser().stat()
    return str(Path(path).expanduser().resolve()), st.st_size, st.st_mtime_ns


@lru_cache(maxsize=16)
def _read_matrix_shape(name: str, params_json: str, files: tuple) -> DataShape:
    """Read a user's matrix files once per version (a sweep's jobs share them)."""
    import warnings

    from dptaucc.datasets import load_matrix

    try:
        with warnings.catch_warnings():  # the job's own load warns (a triplet file's shape)
            warnings.simplefilter("ignore", UserWarning)
            data = load_matrix(name=name, **json.loads(params_json))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"dataset {name!r}: {exc}") from exc
    n_rows, n_cols = data.shape
    row_classes = None if data.row_labels is None else int(len(set(data.row_labels.tolist())))
    col_classes = None if data.col_labels is None else int(len(set(data.col_labels.tolist())))
    return DataShape(name, n_rows, n_cols, row_classes,
                     row_classes if col_classes is None else col_classes,
                     has_labels=data.row_labels is not None)


@lru_cache(maxsize=256)
def _biclusters_shape(n_cols: Any, params_json: str) -> DataShape:
    from dptaucc.datasets.synthetic import make_paper_biclusters

    params = json.loads(params_json)
    try:
        bound = inspect.signature(make_paper_biclusters).bind(n_cols, **params)
    except TypeError as exc:
        raise ConfigError(f"dataset.params of biclusters: {exc}") from exc
    args = {**{k: p.default for k, p in inspect.signature(make_paper_biclusters).parameters
               .items() if p.default is not inspect.Parameter.empty}, **bound.arguments}
    for key in ("n_cols", "n_rows", "n_clusters"):
        value = args[key]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ConfigError(f"dataset.{'' if key == 'n_cols' else 'params.'}{key} must be "
                              f"an integer >= 1, got {value!r}")
    k = int(args["n_clusters"])
    if k > min(args["n_rows"], args["n_cols"]):
        raise ConfigError(f"dataset.params.n_clusters={k} exceeds the synthetic matrix's shape "
                          f"({args['n_rows']}, {args['n_cols']})")
    return DataShape("biclusters", int(args["n_rows"]), int(args["n_cols"]), k, k)


def check_cluster_counts(params: Mapping, shape: DataShape) -> None:
    """Cluster counts are integers >= 1 and at most the rows (columns) of the data (when the
    data's shape is known before loading)."""
    for key, value in params.items():
        bound = (shape.n_rows, "rows") if key in _ROW_COUNTS else (
            (shape.n_cols, "columns") if key in _COL_COUNTS else None)
        if bound is None or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ConfigError(f"algorithm.params.{key} must be an integer >= 1 (or 'classes'), "
                              f"got {value!r}")
        if bound[0] is not None and value > bound[0]:
            raise ConfigError(f"algorithm.params.{key}={value} exceeds the {bound[0]} "
                              f"{bound[1]} of dataset {shape.name!r}")


def check_estimator_params(est: Any, kwargs: Mapping, algorithm: str) -> None:
    """Check the parameters of a freshly built estimator with scikit-learn's machinery."""
    try:
        if isinstance(est, SuiteEstimator):  # the suite's own checks, before any data
            est._validate_params()
            est._refuse_booleans()
            est._check_parameters()
        elif getattr(type(est), "_parameter_constraints", None) and hasattr(est,
                                                                           "_validate_params"):
            est._validate_params()
        else:
            given = {k: v for k, v in kwargs.items() if k in GENERIC_CONSTRAINTS}
            validate_parameter_constraints(
                {k: GENERIC_CONSTRAINTS[k] for k in given}, given, caller_name=type(est).__name__)
    except (InvalidParameterError, TypeError, ValueError) as exc:
        raise ConfigError(f"algorithm {algorithm!r}: {exc}") from exc


def validate_job(job: Mapping, *, protocol: bool = True) -> None:
    """Raise :class:`ConfigError` if ``job`` (a plain resolved config) cannot run.

    ``protocol``: also refuse an ε outside the algorithm's protocol range (``max_epsilon``);
    sweeps pass False and skip such jobs instead.

    >>> from dptaucc.bench.configs import Composer, to_plain
    >>> with Composer() as composer:
    ...     job = to_plain(composer.compose(["algorithm=dpnmf", "epsilon=2"]))
    >>> validate_job(job)
    Traceback (most recent call last):
    ...
    dptaucc.bench.validate.ConfigError: dpnmf runs only for epsilon < 1.0 in the experiment ...
    >>> validate_job(job, protocol=False)  # a sweep skips the job instead
    """
    alg = job.get("algorithm") or {}
    name = alg.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("algorithm.name is missing: pick one with algorithm=<name>")
    eps = check_epsilon(job.get("epsilon"))
    if job.get("mode") not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {job.get('mode')!r}")
    check_seed(job.get("seed"))
    check_delta(job.get("delta"))
    experiment = (job.get("bench") or {}).get("experiment")
    if not isinstance(experiment, str) or not experiment or "/" in experiment \
            or experiment.startswith("."):
        raise ConfigError(f"bench.experiment must be a plain name, got {experiment!r}")
    if not in_protocol(job):
        if not protocol:
            return  # a sweep skips the job: nothing of it runs (its estimator may refuse it)
        modes = alg.get("modes")
        if modes is not None and job.get("mode") not in modes:
            raise ConfigError(f"{name} runs only in mode {', '.join(modes)} (algorithm.modes), "
                              f"got mode={job.get('mode')}")
        raise ConfigError(f"{name} runs only for epsilon < {alg.get('max_epsilon')} in the "
                          f"experiment protocol (algorithm.max_epsilon), got epsilon={eps:g}")
    shape = dataset_shape(job.get("dataset") or {})
    if not shape.has_labels:
        sentinels = [k for k, v in (alg.get("params") or {}).items()
                     if v in ("classes", "col_classes")]
        if sentinels:
            raise ConfigError(f"dataset {shape.name!r} has no labels, so {', '.join(sentinels)} "
                              f"cannot be its number of classes: give them explicitly (e.g. "
                              f"algorithm.params.{sentinels[0]}=5) or a labels file")
    # unknown class counts (labels read at load time) stand in as 2 for the parameter checks
    kwargs = estimator_kwargs(job, _known(shape.n_classes), _known(shape.n_col_classes))
    check_cluster_counts(kwargs, shape)
    check_estimator_params(make_estimator(alg, kwargs, random_state=0), kwargs, name)


def _known(count: int | None) -> int:
    return 2 if count is None else count


def validate_jobs(jobs: Iterable[dict]) -> list[str]:
    """Validation errors of ``jobs`` (one message per distinct problem). The checks depend on
    (algorithm, dataset, ε, mode, δ), done once per distinct value; seeds are checked apart."""
    seen: dict[str, str | None] = {}
    errors: dict[str, None] = {}
    for job in jobs:
        exp = job["bench"]["experiment"]
        try:
            check_seed(job.get("seed"))
        except ConfigError as exc:
            errors[f"{exp}: {exc}"] = None
            continue
        key = json.dumps([exp, job["algorithm"], job["dataset"], job.get("epsilon"),
                          job.get("mode"), job.get("delta")], sort_keys=True, default=str)
        if key not in seen:
            try:
                validate_job(job, protocol=False)
                seen[key] = None
            except ConfigError as exc:
                seen[key] = f"{exp}: {exc}"
        if seen[key] is not None:
            errors[seen[key]] = None
    return list(errors)
