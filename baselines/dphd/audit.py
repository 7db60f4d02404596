"""DPHD's audit scenarios (``METHOD.audit``): worst-case pairs, events and known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``new_column_maximum``: the data-derived range (paper mode); losses, centres and
labels recomputed from the raw rows. Call sites: :func:`disjoint_rows` (row u at the L1 bound on
one column in D, on the other in D': the grid counts, cluster sums and sizes move by their full
sensitivities), one round, public bounds M = B1 = 10, each call sampled by redraw (a DPHD fit
runs in Octave, too slow to refit thousands of times).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import Bug, UnderChargingLedger, after_fit
from dptaucc.audit.pairs import RowPair, new_column_maximum
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios", "disjoint_rows"]


def disjoint_rows(n_per_cluster: int = 3, bound: int = 10) -> RowPair:
    """(row-level relation, DPHD's call sites) Two columns; ``n_per_cluster`` rows hold
    ``bound`` on the first, as many on the second; row u is ``(bound, 0)`` in D, ``(0, bound)``
    in D'. With the public bounds max_value = row_l1_bound = ``bound`` every row sits at the
    L1 bound B, and row u's two versions have disjoint supports, so each of DPHD's releases
    moves by its full claimed sensitivity:

    * grid bucket counts (2): with two columns (d <= 5) the projection is the identity, and
      (B, 0) and (0, B) fall in different sign-pattern buckets of the unshifted grid (and of a
      shifted one unless both shifts are positive): one count −1, one +1;
    * cluster sums (2B): whether or not row u changes cluster, its sum loses (B, 0) and
      gains (0, B) — L1 distance 2B, the most a replaced row can move them;
    * cluster sizes (2): centres near the two blocks put (B, 0) with the first block and
      (0, B) with the second: one size −1, one +1.

    With 2·n_per_cluster + 1 <= 7 rows a partition runs one grid level (ln n <= 2): every fit
    makes the same sequence of calls, so call k names the same step in every history.

    >>> pair = disjoint_rows(n_per_cluster=2, bound=10)
    >>> pair.D.toarray()[pair.u].tolist(), pair.D_prime.toarray()[pair.u].tolist()
    ([10, 0], [0, 10])
    >>> sorted(set(pair.D.sum(axis=1).A1.tolist()))  # every row at the L1 bound
    [10]
    """
    a = np.zeros((n_per_cluster, 2), dtype=np.int64)
    b = np.zeros((n_per_cluster, 2), dtype=np.int64)
    a[:, 0], b[:, 1] = bound, bound
    u_d, u_dp = np.array([[bound, 0]]), np.array([[0, bound]])
    D = sp.csr_matrix(np.vstack([a, b, u_d]))
    Dp = sp.csr_matrix(np.vstack([a, b, u_dp]))
    return RowPair("disjoint_rows", D, Dp, 2 * n_per_cluster, 2,
                   "row u at the L1 bound on one column in D, on the other in D' (row-level)")


# ------------------------------------------------------------------ raw recomputations
def _rows(X: np.ndarray, m) -> np.ndarray:
    """D's rows after DPHD's public preprocessing (counts capped at ``max_value_``, rows
    scaled to L1 norm ``row_l1_bound_``)."""
    Xw = np.minimum(X, m.max_value_)
    sums = Xw.sum(axis=1)
    return Xw * np.minimum(1.0, m.row_l1_bound_ / np.maximum(sums, 1e-300))[:, None]


def _loss(D) -> Callable:
    """Loss of D's (preprocessed) rows at the released ``cluster_centers_``."""
    X = ev.dense(D)
    return lambda m: float(ev.nearest_sq_distances(_rows(X, m), m.cluster_centers_).sum())


def _centre_means(D) -> Callable:
    """The means of D's (preprocessed) rows nearest to each released centre (the centre
    itself where none is): centres equal to it were computed from the raw rows."""
    X = ev.dense(D)

    def means(m):
        rows, centres = _rows(X, m), np.array(m.cluster_centers_, dtype=float)
        d2 = ((rows[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        labels = d2.argmin(axis=1)
        for j in np.unique(labels):
            centres[j] = rows[labels == j].mean(axis=0)
        return centres
    return means


def _end_to_end() -> tuple[Scenario, ...]:
    p = new_column_maximum()
    top = float(ev.dense(p.D).max())
    return (Scenario(p, (
        ev.Event("max_value_ = max(D)", lambda m: float(m.max_value_) == top,
                 needs=("max_value_",)),
        ev.attribute_equals("loss_", _loss(p.D), rtol=1e-7, name="loss_ = loss of D"),
        ev.attribute_equals("cluster_centers_", _centre_means(p.D), rtol=1e-7,
                            name="cluster_centers_ = means of D's rows nearest to them"),
        *label_events(p)),
        "a new maximum: the data-derived range (paper); raw losses, centres and labels"),)


def _call_sites() -> tuple[CallSiteSetup, ...]:
    """``disjoint_rows`` (every release moves by its full sensitivity), one round, public
    bounds M = B1 = 10. At ε = 8 the grid counts are charged 1.25, the sums 0.85, the sizes
    0.09 (the local search 0.16 a pick): calls 1-14 (call 0 is the public seeds of Octave's
    data-independent draws). At ε = 85 the sizes are charged 1: call 10, the first Lloyd
    step's sizes (the centres of its history, released at ε = 7.6 for the sums, place row u's
    two versions in different clusters)."""
    bounds = (("n_rounds", 1), ("max_value", 10.0), ("row_l1_bound", 10.0))
    return (CallSiteSetup(disjoint_rows(), (("epsilon", 8.0), *bounds), max_calls=14, first=1,
                          redraw_samples=100_000),
            CallSiteSetup(disjoint_rows(), (("epsilon", 85.0), *bounds), max_calls=1, first=10,
                          redraw_samples=100_000))


# ------------------------------------------------------------------ known bugs
def _request(change: Callable[[dict], dict]):
    def make(original):
        def serve(self, request):
            return original(self, change(dict(request)))
        return serve
    return make


def _halve_sensitivity(fragment: str):
    def change(request):
        if request["op"] == "discrete-laplace" and fragment in str(request["step"]):
            request["sensitivity"] = float(np.asarray(request["sensitivity"]).reshape(-1)[0]) / 2
        return request
    return change


def _exact_sizes(original):
    def serve(self, request):
        answer = original(self, request)
        if request["op"] == "discrete-laplace" and "recover sizes" in str(request["step"]):
            return np.rint(np.asarray(request["values"], dtype=float)).astype(np.int64).reshape(
                np.shape(answer))
        return answer
    return serve


def _double_epsilon_unlogged(fragment: str):
    """Requests whose step contains ``fragment`` draw at 2ε, charged ε (the server's ledger
    seen through :class:`UnderChargingLedger`)."""
    def make(original):
        def serve(self, request):
            if fragment not in str(request["step"]) or request["op"] == "charge":
                return original(self, request)
            request = dict(request, epsilon=2 * float(np.asarray(request["epsilon"]).ravel()[0]))
            ledger = self.ledger
            self.ledger = UnderChargingLedger(ledger)
            try:
                return original(self, request)
            finally:
                self.ledger = ledger
        return serve
    return make


def _data_bounds(original):
    def fit(self, X, y=None):
        from dptaucc.validation import check_count_matrix
        public = self.max_value
        self.max_value = float(check_count_matrix(X, integer=False).max())
        try:
            return original(self, X, y)
        finally:
            self.max_value = public
    return fit


def _centres_from_data(model, X) -> None:
    """Each released centre replaced by the mean of the (clipped) rows nearest to it."""
    rows = model._rows(X)
    rows = np.asarray(rows.toarray() if sp.issparse(rows) else rows, dtype=float)
    labels = model.predict(X)
    centres = np.array(model.cluster_centers_, dtype=float)
    for j in range(centres.shape[0]):
        if np.any(labels == j):
            centres[j] = rows[labels == j].mean(axis=0)
    model.cluster_centers_ = centres


_DPHD = "dptaucc.baselines.dphd.mechanisms:MechanismServer"

BUGS = (
    Bug("dphd.sums_sensitivity_halved", "dphd", "sensitivity off by 2",
        "the recover steps' cluster sums noised for half their sensitivity",
        ((_DPHD, "__call__", _request(_halve_sensitivity("recover sums"))),)),
    Bug("dphd.partition_counts_sensitivity_halved", "dphd", "sensitivity off by 2",
        "the partition tree's bucket counts noised for half their sensitivity",
        ((_DPHD, "__call__", _request(_halve_sensitivity("level"))),)),
    Bug("dphd.exact_sizes", "dphd", "exact counts declared DP",
        "the recover steps' cluster sizes charged and noised, then released exactly",
        ((_DPHD, "__call__", _exact_sizes),)),
    Bug("dphd.partition_epsilon_doubled", "dphd", "ε split spends 2ε, ledger unchanged",
        "the grid's bucket counts drawn at 2ε per level while the ledger records ε",
        ((_DPHD, "__call__", _double_epsilon_unlogged("level")),)),
    Bug("dphd.data_dependent_bounds", "dphd", "data-dependent bounds",
        "the public count cap max_value replaced by the largest count in the data",
        (("dptaucc.baselines.dphd.estimator:DPHD", "fit", _data_bounds),)),
    Bug("dphd.centres_from_data", "dphd", "attribute from raw data",
        "cluster_centers_ re-computed as the means of the (clipped) training rows nearest to "
        "each released centre", (("dptaucc.baselines.dphd.estimator:DPHD", "fit",
                                 after_fit(_centres_from_data)),)),
)


def scenarios() -> AuditScenarios:
    """DPHD's audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, [c.pair.name for c in s.call_sites], len(s.bugs)
    ('new_column_maximum', ['disjoint_rows', 'disjoint_rows'], 6)
    """
    return AuditScenarios(_end_to_end(), _call_sites(), BUGS,
                          paper_leaks="data-derived range, unbudgeted steps")
