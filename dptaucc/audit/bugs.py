"""A catalogue of known privacy bugs, to measure the audit's power.

Each :class:`Bug` is a one-line mistake of a kind developers really make (a sensitivity or a
noise scale off by two, an ε that spends twice what the ledger says, entries released without
noise, a released value read from the raw data, data-dependent bounds, an empty-cluster leak,
δ ignored, a zCDP calibration labelled (ε, δ), float noise on a count), planted in a
corrected-mode estimator by monkeypatching the library *in the current process* for as long as
:meth:`Bug.applied` is entered. Nothing here is used by the estimators themselves.

The audit runs each catalogue bug (``python -m dptaucc.audit --bug NAME``, or every bug with
``--power``) and reports which it detects: an audit that gives the same answer on these and on
the correct code is no evidence. Worker processes must enter :meth:`Bug.applied` themselves
(a patch made in the parent does not reach a fresh process).

>>> from dptaucc.audit.bugs import CATALOGUE
>>> len(CATALOGUE) >= 12
True
>>> {"dp_kmeans", "dp_taucc", "dphd"} <= {bug.method for bug in CATALOGUE.values()}
True
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import numpy as np

__all__ = ["Bug", "CATALOGUE", "bugs_of"]

Patch = tuple[str, str, Callable[[Callable], Callable]]  # (owner, attribute, make(original))


@dataclass(frozen=True)
class Bug:
    """One planted privacy bug.

    ``method`` is the algorithm config name it breaks; ``kind`` one of the kinds listed in
    the module docstring; ``patches`` are ``(owner, attribute, make)`` triples: while
    :meth:`applied` is entered, ``owner.attribute`` (owner a module path, or ``module:Class``)
    is replaced by ``make(original)``.
    """

    name: str
    method: str
    kind: str
    description: str
    patches: tuple[Patch, ...]

    @contextmanager
    def applied(self) -> Iterator[Bug]:
        """Plant the bug in this process; every patch is undone on exit."""
        with ExitStack() as stack:
            for owner, attribute, make in self.patches:
                stack.enter_context(_replaced(_resolve(owner), attribute, make))
            yield self


def _resolve(owner: str):
    module, _, cls = owner.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, cls) if cls else obj


@contextmanager
def _replaced(obj, attribute: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
    original = obj.__dict__[attribute] if isinstance(obj, type) else getattr(obj, attribute)
    setattr(obj, attribute, make(original))
    try:
        yield
    finally:
        setattr(obj, attribute, original)


class _UnderChargingLedger:
    """A ledger seen through a bug: every charge records half the ε really spent."""

    def __init__(self, ledger):
        self._ledger = ledger

    def charge(self, step, mechanism, epsilon, *args, **kwargs):
        return self._ledger.charge(step, mechanism, epsilon / 2, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ledger, name)


# ------------------------------------------------------------------ patch builders
def _with_arguments(change: Callable[[dict], None]):
    """Call the original with its arguments (bound by name) changed in place by ``change``."""
    def make(original):
        signature = inspect.signature(original)

        def buggy(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            change(bound.arguments)
            return original(*bound.args, **bound.kwargs)
        return buggy
    return make


def _scale_argument(name: str, factor: float):
    """The argument ``name`` (a sensitivity, ...) times ``factor``."""
    def change(arguments):
        arguments[name] = arguments[name] * factor
    return _with_arguments(change)


def _double_epsilon_unlogged():
    """Spend 2ε while the ledger records ε (the noise scale halves, the books do not)."""
    def change(arguments):
        arguments["epsilon"] = 2 * arguments["epsilon"]
        arguments["ledger"] = _UnderChargingLedger(arguments["ledger"])
    return _with_arguments(change)


def _fixed_argument(name: str, value):
    """The argument ``name`` replaced by ``value`` whatever the caller passed."""
    def change(arguments):
        arguments[name] = value
    return _with_arguments(change)


def _exact_values_released(original):
    """Charge and draw as usual, then release the exact integer values."""
    def buggy(values, *args, **kwargs):
        original(values, *args, **kwargs)
        return np.rint(np.asarray(values, dtype=float)).astype(np.int64)
    return buggy


def _after_fit(change: Callable) -> Callable[[Callable], Callable]:
    """Run the original ``fit``, then ``change(model, X)`` (a value read from the raw data)."""
    def make(original):
        def fit(self, X, y=None):
            original(self, X, y)
            change(self, X)
            return self
        return fit
    return make


# ------------------------------------------------------------------ DP-τCC
def _zero_cells_unnoised(original):
    def buggy(exact, epsilon, sampler, ledger, step, paper, note=""):
        noisy = original(exact, epsilon, sampler, ledger, step, paper, note)
        if not paper:  # "keep the table sparse": cells that are 0 stay 0
            noisy = np.where(np.rint(np.asarray(exact)) == 0, 0, noisy)
        return noisy
    return buggy


def _float_noise_table(original):
    def buggy(exact, epsilon, sampler, ledger, step, paper, note=""):
        if paper:
            return original(exact, epsilon, sampler, ledger, step, paper, note)
        from dptaucc.privacy import as_sampler
        ledger.charge(step, "discrete-laplace", epsilon, 0.0, 1.0, "sequential", note,
                      1.0 / epsilon)
        noisy = np.asarray(exact, float) + as_sampler(sampler).rng.laplace(
            0.0, 1.0 / epsilon, np.shape(exact))
        return np.maximum(noisy, 0.0)
    return buggy


def _column_epsilon_doubled(original):
    """The column assignments spend 2ε while the ledger records ε (rows stay correct)."""
    def buggy(profiles, *, epsilon, ledger, step, **kwargs):
        if "column" in str(step):
            epsilon, ledger = 2 * epsilon, _UnderChargingLedger(ledger)
        return original(profiles, epsilon=epsilon, ledger=ledger, step=step, **kwargs)
    return buggy


def _taucc_exact_table(model, X) -> None:
    from dptaucc.objective import contingency_table
    K, L = model.contingency_.shape
    model.contingency_ = contingency_table(X, model.dp_row_labels_, model.column_labels_, K, L)


def _taucc_raw_row_labels(model, X) -> None:
    from dptaucc.dp_taucc import prototype_row_labels
    from dptaucc.validation import check_count_matrix
    model.row_labels_ = prototype_row_labels(check_count_matrix(X, integer=True),
                                             model.column_labels_, model.contingency_)


# ------------------------------------------------------------------ DP-KMeans
def _kmeans_data_bounds(original):
    def fit(self, X, y=None):
        from dptaucc.validation import check_count_matrix
        public = self.bounds_max
        self.bounds_max = max(1.0, float(check_count_matrix(X, integer=False).max()))
        try:
            return original(self, X, y)
        finally:
            self.bounds_max = public
    return fit


def _kmeans_empty_cluster_leak(original):
    def buggy(X_grid, labels, k, *args, **kwargs):
        sizes, sums = original(X_grid, labels, k, *args, **kwargs)
        empty = np.bincount(labels, minlength=k) == 0
        sizes, sums = sizes.copy(), sums.copy()
        sizes[empty], sums[empty] = 1, 0  # "an empty cluster goes back to the origin"
        return sizes, sums
    return buggy


# ------------------------------------------------------------------ DPNMF
def _zcdp_sigma(original):
    signature = inspect.signature(original)

    def buggy(*args, **kwargs):
        sensitivity, epsilon = list(signature.bind(*args, **kwargs).arguments.values())[:2]
        return sensitivity / epsilon  # ρ = ε²/2 zCDP, but (ε, δ) is what gets charged
    return buggy


# ------------------------------------------------------------------ colored noise
def _gamma_delta_ignored(original):
    def buggy(epsilon, delta, calibration="analytic"):
        return original(epsilon, 0.5, calibration)  # "δ only matters for tiny ε"
    return buggy


# ------------------------------------------------------------------ DPHD
def _dphd_request(change: Callable[[dict], dict]):
    def make(original):
        def serve(self, request):
            return original(self, change(dict(request)))
        return serve
    return make


def _dphd_halve_sensitivity(fragment: str):
    def change(request):
        if request["op"] == "discrete-laplace" and fragment in str(request["step"]):
            request["sensitivity"] = float(np.asarray(request["sensitivity"]).reshape(-1)[0]) / 2
        return request
    return change


def _dphd_exact_sizes(original):
    def serve(self, request):
        answer = original(self, request)
        if request["op"] == "discrete-laplace" and "recover sizes" in str(request["step"]):
            return np.rint(np.asarray(request["values"], dtype=float)).astype(np.int64).reshape(
                np.shape(answer))
        return answer
    return serve


def _dphd_double_epsilon_unlogged(fragment: str):
    """Requests whose step contains ``fragment`` draw at 2ε, charged ε (the server's ledger
    seen through :class:`_UnderChargingLedger`)."""
    def make(original):
        def serve(self, request):
            if fragment not in str(request["step"]) or request["op"] == "charge":
                return original(self, request)
            request = dict(request, epsilon=2 * float(np.asarray(request["epsilon"]).ravel()[0]))
            ledger = self.ledger
            self.ledger = _UnderChargingLedger(ledger)
            try:
                return original(self, request)
            finally:
                self.ledger = ledger
        return serve
    return make


def _dphd_data_bounds(original):
    def fit(self, X, y=None):
        from dptaucc.validation import check_count_matrix
        public = self.max_value
        self.max_value = float(check_count_matrix(X, integer=False).max())
        try:
            return original(self, X, y)
        finally:
            self.max_value = public
    return fit


def _dphd_centres_from_data(model, X) -> None:
    """Each released centre replaced by the mean of the (clipped) rows nearest to it."""
    import scipy.sparse as sp
    rows = model._rows(X)
    rows = np.asarray(rows.toarray() if sp.issparse(rows) else rows, dtype=float)
    labels = model.predict(X)
    centres = np.array(model.cluster_centers_, dtype=float)
    for j in range(centres.shape[0]):
        if np.any(labels == j):
            centres[j] = rows[labels == j].mean(axis=0)
    model.cluster_centers_ = centres


_TAUCC = "dptaucc.dp_taucc"
_KMEANS = "dptaucc.baselines.dp_kmeans"
_NMF = "dptaucc.baselines.nmf_dp.release"
_DPHD = "dptaucc.baselines.dphd.mechanisms:MechanismServer"
_COLORED = "dptaucc.baselines.colored_noise.estimator"

_BUGS = (
    Bug("dp_taucc.table_sensitivity_halved", "dp_taucc", "sensitivity off by 2",
        "every noisy table drawn for L1 sensitivity 1/2 instead of 1 (eq. 4.11); ledger "
        "charges the claimed ε", ((_TAUCC, "discrete_laplace_mechanism",
                                   _scale_argument("sensitivity", 0.5)),)),
    Bug("dp_taucc.assignment_sensitivity_halved", "dp_taucc", "sensitivity off by 2",
        "the exponential mechanism's range sensitivity (eq. 4.10) computed half its value",
        (("dptaucc.privacy.mechanisms", "linear_range_sensitivity",
          lambda original: lambda weights: original(weights) / 2),)),
    Bug("dp_taucc.table_epsilon_doubled", "dp_taucc", "ε split spends 2ε, ledger unchanged",
        "each table spends 2·(1−h)·ε/(2I) while the ledger records (1−h)·ε/(2I)",
        ((_TAUCC, "discrete_laplace_mechanism", _double_epsilon_unlogged()),)),
    Bug("dp_taucc.zero_cells_unnoised", "dp_taucc", "entries released without noise",
        "cells of the table whose exact count is 0 are released as 0 (to keep it sparse)",
        ((_TAUCC, "_noisy_table", _zero_cells_unnoised),)),
    Bug("dp_taucc.exact_table_released", "dp_taucc", "attribute from raw data",
        "contingency_ is the exact table of the data under the released partitions",
        ((_TAUCC + ":DPTauCC", "fit", _after_fit(_taucc_exact_table)),)),
    Bug("dp_taucc.row_labels_from_data", "dp_taucc", "attribute from raw data",
        "row_labels_ re-assigned by reading the raw rows (the evaluation protocol) while "
        "row_labels_private_ stays True", ((_TAUCC + ":DPTauCC", "fit",
                                           _after_fit(_taucc_raw_row_labels)),)),
    Bug("dp_taucc.float_noise_on_table", "dp_taucc", "float noise on a count",
        "tables get textbook float Laplace noise (charged as the discrete mechanism)",
        ((_TAUCC, "_noisy_table", _float_noise_table),)),
    Bug("dp_taucc.column_assignment_epsilon_doubled", "dp_taucc",
        "ε split spends 2ε, ledger unchanged",
        "the column assignments' exponential mechanism run at 2ε while the ledger records ε",
        ((_TAUCC, "linear_exponential_mechanism", _column_epsilon_doubled),)),
    Bug("dp_kmeans.count_epsilon_doubled", "dp_kmeans", "ε split spends 2ε, ledger unchanged",
        "the cluster counts' discrete Laplace drawn at twice the ε the ledger records",
        ((_KMEANS, "discrete_laplace_mechanism", _double_epsilon_unlogged()),)),
    Bug("dp_kmeans.sum_scale_halved", "dp_kmeans", "noise scale off by 2",
        "the cluster sums' bounded discrete Laplace drawn at twice the ε the ledger records",
        ((_KMEANS, "bounded_discrete_laplace_mechanism", _double_epsilon_unlogged()),)),
    Bug("dp_kmeans.count_sensitivity_halved", "dp_kmeans", "sensitivity off by 2",
        "cluster counts noised for L1 sensitivity 1 although a moved row changes two counts",
        ((_KMEANS, "discrete_laplace_mechanism", _scale_argument("sensitivity", 0.5)),)),
    Bug("dp_kmeans.exact_counts", "dp_kmeans", "exact counts declared DP",
        "the count mechanism is charged and run, but the exact cluster counts are released",
        ((_KMEANS, "discrete_laplace_mechanism", lambda original: _exact_values_released(
            original)),)),
    Bug("dp_kmeans.data_dependent_bounds", "dp_kmeans", "data-dependent bounds",
        "the public bound B replaced by the largest count in the data",
        ((_KMEANS + ":DPKMeans", "fit", _kmeans_data_bounds),)),
    Bug("dp_kmeans.empty_cluster_leak", "dp_kmeans", "empty-cluster leak",
        "a cluster that is empty on the data gets size 1 and sum 0 exactly (its centre at the "
        "origin) instead of its noisy statistics",
        ((_KMEANS, "corrected_statistics", _kmeans_empty_cluster_leak),)),
    Bug("dpnmf.sensitivity_halved", "dpnmf", "sensitivity off by 2",
        "the L2 sensitivity of (HHᵀ/N, VHᵀ/N) taken as √2/N instead of 2√2/N",
        ((_NMF, "statistics_sensitivity",
          lambda original: lambda n_documents: original(n_documents) / 2),)),
    Bug("dpnmf.delta_ignored", "dpnmf", "δ ignored",
        "σ calibrated for δ = 0.5 whatever δ the user asked for (and the ledger records)",
        ((_NMF, "analytic_gaussian_sigma", _fixed_argument("delta", 0.5)),)),
    Bug("dpnmf.zcdp_sigma_as_approx_dp", "dpnmf", "zCDP calibration labelled (ε, δ)",
        "σ = Δ/ε, the ε²/2-zCDP Gaussian, charged as (ε, δ)-DP",
        ((_NMF, "analytic_gaussian_sigma", _zcdp_sigma),)),
    Bug("dpnmf.noise_scale_halved", "dpnmf", "noise scale off by 2",
        "the release drawn with half the σ computed (and charged) for it",
        ((_NMF, "gaussian_mechanism", _scale_argument("sigma", 0.5)),)),
    Bug("colored_noise.delta_ignored", "colored_noise", "δ ignored",
        "the covariance calibrated for δ = 0.5 whatever δ the ledger records",
        ((_COLORED, "gamma_of", _gamma_delta_ignored),)),
    Bug("colored_noise.scale_halved", "colored_noise", "noise scale off by 2",
        "the (sum, count) blocks' noise variances a quarter of the calibrated ones (σ halved)",
        ((_COLORED, "public_domain_variances",
          lambda original: lambda *args, **kwargs: original(*args, **kwargs) / 4),)),
    Bug("dphd.sums_sensitivity_halved", "dphd", "sensitivity off by 2",
        "the recover steps' cluster sums noised for half their sensitivity",
        ((_DPHD, "__call__", _dphd_request(_dphd_halve_sensitivity("recover sums"))),)),
    Bug("dphd.partition_counts_sensitivity_halved", "dphd", "sensitivity off by 2",
        "the partition tree's bucket counts noised for half their sensitivity",
        ((_DPHD, "__call__", _dphd_request(_dphd_halve_sensitivity("level"))),)),
    Bug("dphd.exact_sizes", "dphd", "exact counts declared DP",
        "the recover steps' cluster sizes charged and noised, then released exactly",
        ((_DPHD, "__call__", _dphd_exact_sizes),)),
    Bug("dphd.partition_epsilon_doubled", "dphd", "ε split spends 2ε, ledger unchanged",
        "the grid's bucket counts drawn at 2ε per level while the ledger records ε",
        ((_DPHD, "__call__", _dphd_double_epsilon_unlogged("level")),)),
    Bug("dphd.data_dependent_bounds", "dphd", "data-dependent bounds",
        "the public count cap max_value replaced by the largest count in the data",
        (("dptaucc.baselines.dphd.estimator:DPHD", "fit", _dphd_data_bounds),)),
    Bug("dphd.centres_from_data", "dphd", "attribute from raw data",
        "cluster_centers_ re-computed as the means of the (clipped) training rows nearest to "
        "each released centre", (("dptaucc.baselines.dphd.estimator:DPHD", "fit",
                                 _after_fit(_dphd_centres_from_data)),)),
)

from .taucc_row import bugs as _row_variant_bugs  # noqa: E402 (its bugs use the builders above)

_BUGS += _row_variant_bugs()

#: every catalogue bug by name
CATALOGUE: dict[str, Bug] = {bug.name: bug for bug in _BUGS}


def bugs_of(method: str) -> list[Bug]:
    """The catalogue bugs planted in ``method`` (an algorithm config name).

    >>> bugs = bugs_of("dp_taucc")
    >>> len(bugs) > 0, all(b.method == "dp_taucc" and b.name in CATALOGUE for b in bugs)
    (True, True)
    >>> bugs_of("no_such_method")
    []
    """
    return [bug for bug in _BUGS if bug.method == method]

