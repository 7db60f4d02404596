"""The scenarios aimed at each estimator of the suite (what ``make audit`` runs).

Two layers per private method (docs/audit.md):

* **end-to-end scenarios** (:class:`MethodAudit`): a neighbouring pair, parameter overrides that
  concentrate the budget where a leak would show, hand-written events (raw-data
  recomputations) — and the events :mod:`dptaucc.audit.endtoend` derives by itself from every
  declared release;
* **a call-site setup** (:class:`CallSiteSetup`): a pair and parameters under which every
  mechanism call of a fit is audited against the ε its ledger charged
  (:mod:`dptaucc.audit.callsite`).

Why each scenario is a worst case:

=================  =========================================================================
dp_taucc           ``all_zero_matrix``, I = 1, h = 0.1: D's tables are pure noise, so any cell
                   released without noise, or any exact value, is seen at once; the last table
                   carries nearly half the budget. ``moving_row``, I = 1, h = 0.5: one count
                   decides the cluster of a balanced row (labels read from the data flip).
                   ``all_zero_row``, I = 1, h = 0.1: the one count lands in one released cell.
                   Call sites: ``all_zero_row``/``all_zero_column`` at ε = 4·I, h = 0.5, every
                   call charged 1; the zero row (column) makes its choice hinge on one count.
dp_kmeans          ``row_at_bound``: every row of D is the origin, so one cluster is empty
                   (an empty-cluster leak, exact counts are exact values on D, not always on
                   D', where a row at the bound may fill it); ``new_column_maximum``: the
                   data maximum moves (bounds read from the data); ``replaced_row``
                   (DP-KMeans protects whole rows): a row at the bound changes cluster.
                   Call sites: ``row_across_boundary`` at ε = 6.35 (d = 1, two iterations),
                   history crafted by :func:`kmeans_boundary_history`: row u crosses the
                   boundary between forced centres, both counts move and both clusters' sums
                   leave the edges of their ranges (the bounded mechanism's worst case).
dpnmf              end to end ``all_zero_row``, ``new_column_maximum``. Call sites:
                   ``replaced_document`` under :func:`orthonormal_topics` (ε = 8, δ = 0.02 so
                   that each epoch's (2, 0.005) is measurable): the release moves by 2/N,
                   the largest move of one replaced document.
dpm                ``all_zero_row`` (201 rows), ``new_column_maximum``; call sites on
                   ``added_row`` (its calls are charged per added/removed row), ε = 200 so that
                   the tree's count calls are charged about 0.5 each: the added row moves the
                   root count by its full sensitivity 1; the quantile's interval index skipped.
colored_noise      ``moving_row``; call sites on ``added_row`` (ε = 4, δ = 0.5, one
                   iteration): the added row moves its block by (y, 1), ‖y‖ = 1, exactly the
                   change the covariance is calibrated for.
dp_taucc_row       (one row replaced) :mod:`dptaucc.audit.taucc_row`: row u, twice the
                   bound, moves between column halves; call sites under a crafted history
                   (columns split in halves, diagonal tables): every table moves by 2B.
dphd               ``new_column_maximum``; call sites on ``disjoint_rows`` (row u at the L1
                   bound on one column in D, on the other in D': the grid counts, cluster
                   sums and sizes move by their full sensitivities), sampled by redraw.
=================  =========================================================================

Every private method is also fitted on the all-zero matrix against one count: a fit that refuses
a valid input is itself an observable outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import events as ev
from . import taucc_row
from .pairs import (
    NeighbouringPair,
    RowPair,
    added_row,
    all_zero_column,
    all_zero_matrix,
    all_zero_row,
    disjoint_rows,
    moving_row,
    new_column_maximum,
    replaced_document,
    replaced_row,
    row_across_boundary,
    row_at_bound,
)
from .reachability import laplace_reachable
from .transcript import Call

__all__ = ["MethodAudit", "CallSiteSetup", "CATALOGUE", "CALL_SITES", "method_audit",
           "method_audits", "call_site_setup"]


@dataclass(frozen=True)
class MethodAudit:
    """One end-to-end scenario of a method's audit: a pair, hand-written events on the fitted
    model, parameter overrides, and the share of the method's fit budget it gets.

    >>> scenario = method_audit("dp_taucc")
    >>> scenario.method, scenario.pair.name, len(scenario.events) > 0, scenario.derive
    ('dp_taucc', 'all_zero_row', True, True)
    """

    method: str
    pair: NeighbouringPair
    events: tuple[ev.Event, ...]
    why: str
    share: float = 1.0
    params: tuple[tuple[str, object], ...] = ()
    derive: bool = True  # also the events derived from the releases


@dataclass(frozen=True)
class CallSiteSetup:
    """Pair and parameters of a method's call-site audit (``epsilon`` included); the calls
    audited are ``first .. first + max_calls - 1`` of a fit. ``craft`` turns a recorded
    history into the one forced before the audited call (None: the recorded one); the pair is
    in the relation the calls are charged for (DPM and colored noise: one row added);
    ``max_draws`` caps the draws per call where a draw is slow; calls whose step starts with
    one of ``skip`` are not audited (their
    mechanism output is an index into a data-dependent candidate list, as in DPM's quantile,
    so equal outputs on D and D' need not mean equal releases).

    >>> setup = call_site_setup("dp_taucc")[0]
    >>> setup.pair.name, dict(setup.params)["epsilon"], setup.first, setup.redraw_samples
    ('all_zero_row', 8.0, 0, 0)
    """

    pair: NeighbouringPair | RowPair
    params: tuple[tuple[str, object], ...]
    max_calls: int = 8
    first: int = 0
    craft: Callable[[list[Call]], list[Call]] | None = None
    max_draws: int | None = None  # a cap on the job's draws per call (slow samplers)
    skip: tuple[str, ...] = ()  # steps whose mechanism output is not comparable across D, D'
    redraw_samples: int = 0  # > 0: sample each call by redraw (dptaucc.audit.redrawn)


def _dense(X) -> np.ndarray:
    return np.asarray(sp.csr_matrix(X, dtype=np.float64).toarray())


def _nearest_sq_distances(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    return ((X[:, None, :] - np.asarray(centres, float)[None, :, :]) ** 2).sum(axis=2).min(axis=1)


# ------------------------------------------------------------------- raw recomputations
def _kmeans_inertia(D) -> Callable:
    """SSE of D's rows, clipped to the fitted ``bounds_``, at ``cluster_centers_``."""
    X = _dense(D)

    def sse(m):
        lower, upper = m.bounds_
        return float(_nearest_sq_distances(np.clip(X, lower, upper), m.cluster_centers_).sum())
    return sse


def _upper_bounds_are_column_maxima(D) -> Callable:
    """The upper ``bounds_`` equal D's column maxima (bounds read from the data)."""
    hi = _dense(D).max(axis=0)
    return lambda m: ev.values_equal(m.bounds_[1], hi)


def _dphd_rows(X: np.ndarray, m) -> np.ndarray:
    """D's rows after DPHD's public preprocessing (counts capped at ``max_value_``, rows
    scaled to L1 norm ``row_l1_bound_``)."""
    Xw = np.minimum(X, m.max_value_)
    sums = Xw.sum(axis=1)
    return Xw * np.minimum(1.0, m.row_l1_bound_ / np.maximum(sums, 1e-300))[:, None]


def _dphd_loss(D) -> Callable:
    """Loss of D's (preprocessed) rows at the released ``cluster_centers_``."""
    X = _dense(D)
    return lambda m: float(_nearest_sq_distances(_dphd_rows(X, m), m.cluster_centers_).sum())


def _dphd_centre_means(D) -> Callable:
    """The means of D's (preprocessed) rows nearest to each released centre (the centre
    itself where none is): centres equal to it were computed from the raw rows."""
    X = _dense(D)

    def means(m):
        rows, centres = _dphd_rows(X, m), np.array(m.cluster_centers_, dtype=float)
        d2 = ((rows[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        labels = d2.argmin(axis=1)
        for j in np.unique(labels):
            centres[j] = rows[labels == j].mean(axis=0)
        return centres
    return means


# ------------------------------------------------------------------- DPM leaf counts
def _dpm_leaf_sizes(model, X) -> list[tuple[int, int]]:
    """(true size, depth) of every leaf of a fitted DPM, in ``leaf_counts_`` order, for the
    rows of X: the released split tree replayed on X's embedding."""
    from dptaucc.baselines.dpm.core import SCALE

    Y = model._embed(sp.csr_matrix(X, dtype=np.float64), model.embedding_)
    lo, hi = model._box(Y.shape[1])
    Z = (Y - lo) * (2.0 * SCALE / (hi - lo)) - SCALE
    width = 2.0 * SCALE / model.n_bins_
    centres = -SCALE + (np.arange(model.n_bins_) + 0.5) * width
    unit = (hi - lo) / (2.0 * SCALE)
    splits = list(model.split_tree_)
    nodes = [np.arange(Z.shape[0])]
    leaves: list[tuple[int, int]] = []
    level = 0
    while nodes:
        here = [s for s in splits if s[0] == level]
        if not here:
            leaves += [(idx.size, level) for idx in nodes]
            break
        if len(here) != len(nodes):
            raise ValueError("split tree does not match the replayed nodes")
        nxt = []
        for idx, (_, dim, thr_box, used) in zip(nodes, here, strict=True):
            if not used:
                leaves.append((idx.size, level))
                continue
            thr = centres[np.argmin(np.abs(centres - ((thr_box - lo) / unit - SCALE)))]
            left = Z[idx, int(dim)] <= thr
            nxt += [idx[left], idx[~left]]
        nodes = nxt
        level += 1
    return leaves


def _ledger_count_scales(model) -> dict[int, float]:
    out = {}
    for e in model.privacy_ledger_.entries:
        if e.step.startswith("counts_level_") and "laplace" in e.mechanism:
            out[int(e.step.rsplit("_", 1)[1])] = 1.0 / e.epsilon
    return out


def dpm_leaf_counts_reachable(pair: NeighbouringPair) -> ev.Event:
    """Mironov's test on DPM's ``leaf_counts_``: some leaf whose true size differs between D
    and D' has a released (non-integer) count reachable as size_D + Laplace and not as
    size_D' + Laplace, at the scale its tree level was charged."""
    def fn(m):
        counts = np.asarray(m.leaf_counts_, dtype=float)
        on_d, on_dp = _dpm_leaf_sizes(m, pair.D), _dpm_leaf_sizes(m, pair.D_prime)
        scales = _ledger_count_scales(m)
        for y, (x_d, depth), (x_dp, _) in zip(counts, on_d, on_dp, strict=True):
            if x_d == x_dp or y == round(y):
                continue
            s = scales[depth]
            if laplace_reachable(y, x_d, s) and not laplace_reachable(y, x_dp, s):
                return True
        return False
    return ev.Event("leaf_counts_ float-reachable from D only", fn,
                    needs=("leaf_counts_", "split_tree_", "embedding_"))


# ------------------------------------------------------------------- the catalogue
def _labels(pair: NeighbouringPair) -> tuple[ev.Event, ...]:
    """Labels equal the raw-data assignment of D; row u shares a label with another row."""
    w = 0 if pair.u != 0 else pair.D.shape[0] - 1
    return (ev.labels_match_evaluation(pair.D), ev.same_label(pair.u, w))


def _taucc_events(p: NeighbouringPair) -> tuple[ev.Event, ...]:
    return (ev.table_cell_reachable(p), ev.contingency_equals_exact(p.D), *_labels(p))


def _dp_taucc() -> MethodAudit:
    p = all_zero_row()
    return MethodAudit("dp_taucc", p, (ev.table_cell_above(p, 0.5), *_taucc_events(p)),
                       "a row with no counts: float Laplace cells, paper mode's raw final "
                       "assignment (Q7); I = 1, h = 0.1: the last table carries the budget",
                       share=0.4, params=(("n_iterations", 1), ("h", 0.1)))


def _dp_taucc_more() -> tuple[MethodAudit, ...]:
    z, mv = all_zero_matrix(), moving_row()
    return (MethodAudit("dp_taucc", z, _taucc_events(z),
                        "D has no counts: its tables are pure noise, exact values show",
                        share=0.3, params=(("n_iterations", 1), ("h", 0.1))),
            MethodAudit("dp_taucc", mv, _taucc_events(mv),
                        "one count decides a balanced row's cluster",
                        share=0.3, params=(("n_iterations", 1), ("h", 0.5))),
            MethodAudit("dp_taucc", all_zero_row(), (ev.table_cell_above(all_zero_row(), 0.5),),
                        "the released cell of the changed count, I = 1, h = 0.02: that table "
                        "carries 0.49·ε; one fixed event, many cheap fits (the power scenario)",
                        share=10.0, params=(("n_iterations", 1), ("h", 0.02)), derive=False))


def _exact_coclusterer(name: str) -> Callable[[], MethodAudit]:
    def build() -> MethodAudit:
        p = moving_row()
        return MethodAudit(name, p, (ev.contingency_equals_exact(p.D), *_labels(p)),
                           "non-private reference: the exact table and labels")
    return build


def _dp_kmeans() -> MethodAudit:
    p = new_column_maximum()
    return MethodAudit("dp_kmeans", p, (
        ev.Event("bounds_ upper = column maxima of D", _upper_bounds_are_column_maxima(p.D),
                 needs=("bounds_",)),
        ev.attribute_equals("inertia_", _kmeans_inertia(p.D), rtol=1e-7,
                            name="inertia_ = SSE of D"),
        *_labels(p)),
        "a new column maximum: data-derived bounds; raw SSE and labels", share=0.4)


def _dp_kmeans_more() -> tuple[MethodAudit, ...]:
    z = row_at_bound()
    r = replaced_row()
    return (MethodAudit("dp_kmeans", z, (),
                        "every row of D is the origin: one cluster of D is empty, its exact "
                        "statistics are (0, 0); in D' a row at the bound may fill it", share=0.3),
            MethodAudit("dp_kmeans", r, (),
                        "a row at the public bound changes cluster (DP-KMeans protects rows)",
                        share=0.3, params=(("epsilon", 1.0),)))


def _dphd() -> MethodAudit:
    p = new_column_maximum()
    top = float(_dense(p.D).max())
    return MethodAudit("dphd", p, (
        ev.Event("max_value_ = max(D)", lambda m: float(m.max_value_) == top,
                 needs=("max_value_",)),
        ev.attribute_equals("loss_", _dphd_loss(p.D), rtol=1e-7, name="loss_ = loss of D"),
        ev.attribute_equals("cluster_centers_", _dphd_centre_means(p.D), rtol=1e-7,
                            name="cluster_centers_ = means of D's rows nearest to them"),
        *_labels(p)),
        "a new maximum: the data-derived range (paper); raw losses, centres and labels")


def _dpnmf() -> MethodAudit:
    p = all_zero_row()
    return MethodAudit("dpnmf", p, (
        ev.slice_is_zero("coefficients_", (slice(None), p.u), label=f":, {p.u}"),
        *_labels(p)),
        "a row with no counts: its released document factor, labels")


def _dpm() -> MethodAudit:
    p = all_zero_row(n_per_cluster=100)  # enough rows for the tree to split now and then
    return MethodAudit("dpm", p, (dpm_leaf_counts_reachable(p), *_labels(p)),
                       "a row with no counts moves across the split tree: float leaf counts")


def _colored_noise() -> MethodAudit:
    p = moving_row(n_per_cluster=200)  # many rows: accurate centres, so row u's label follows u
    return MethodAudit("colored_noise", p, _labels(p),
                       "a row balanced between two large clusters: labels from the raw rows")


def _zero_matrix(method: str) -> MethodAudit:
    """D = 0, D' = one count: a fit that refuses the all-zero matrix tells them apart."""
    return MethodAudit(method, all_zero_matrix(), (), "the all-zero matrix is a valid input",
                       share=0.1)


#: the main scenario of each method; private methods also get :func:`_zero_matrix`
CATALOGUE: dict[str, Callable[[], MethodAudit]] = {
    "dp_taucc": _dp_taucc,
    "fast_taucc": _exact_coclusterer("fast_taucc"),
    "dp_kmeans": _dp_kmeans,
    "dphd": _dphd,
    "dpnmf": _dpnmf,
    "dpm": _dpm,
    "colored_noise": _colored_noise,
    "fccm": _exact_coclusterer("fccm"),
    "dp_taucc_row": lambda: taucc_row.scenarios()[0],
}
NOT_PRIVATE = ("fast_taucc", "fccm")
_MORE: dict[str, Callable[[], tuple[MethodAudit, ...]]] = {
    "dp_taucc": _dp_taucc_more, "dp_kmeans": _dp_kmeans_more,
    "dp_taucc_row": lambda: taucc_row.scenarios()[1:]}


def kmeans_boundary_history(n_top: int = 3, n_zero: int = 10) -> Callable[[list[Call]],
                                                                         list[Call]]:
    """DP-KMeans' worst case for the second iteration's sums, with
    :func:`~dptaucc.audit.pairs.row_across_boundary`: the first iteration's counts and sums
    forced to centres B and B − 1.5 (cluster 0 takes the rows at B, cluster 1 the zero rows
    and B − 1), and the second iteration's counts to the true sizes on D, so that cluster 0's
    range {0, …, B·ñ₀} is exactly filled on D (its sum at the top edge) while cluster 1's sum
    is 0 (the bottom edge). Outputs are on the mechanisms' integer grids."""
    from dptaucc.baselines.dp_kmeans import DEFAULT_BOUNDS_MAX, SUM_GRID_BITS

    unit = 2**SUM_GRID_BITS  # grid steps per count
    counts = np.array([n_top, n_zero], dtype=np.int64)
    sums = np.array([[round(DEFAULT_BOUNDS_MAX * unit) * n_top],
                     [round((DEFAULT_BOUNDS_MAX - 1.5) * unit) * n_zero]], dtype=np.int64)

    def craft(history: list[Call]) -> list[Call]:
        forced = [counts, sums, counts] + [c.output for c in history[3:]]
        return [Call(c.index, c.step, c.mechanism, c.epsilon, c.delta, np.array(f, copy=True))
                for c, f in zip(history, forced, strict=False)]
    return craft


def orthonormal_topics(history: list[Call]) -> list[Call]:
    """DPNMF's worst case for the release after the first epoch: every earlier release
    forced to Ā = I, B̄ = [I; 0] (K×K over m×K; 0 and 1 lie on every release grid). The
    W-steps then give W = [I; 0] exactly (one 1/L step from any W, L = ‖Ā‖ = 1), whose topics
    are orthonormal, so a document with its count in word j gets h = e_j: the
    :func:`~dptaucc.audit.pairs.replaced_document` pair moves (HHᵀ/N, VHᵀ/N) by
    (e₀e₀ᵀ − e₁e₁ᵀ)/N twice, 2/N in L2 — the largest move of any replaced document (the
    ledger charges 2√2/N)."""
    out = []
    for call in history:
        m_k, k = np.shape(call.output)
        forced = np.zeros((m_k, k))
        forced[:k] = np.eye(k)
        forced[k:2 * k] = np.eye(k)
        out.append(Call(call.index, call.step, call.mechanism, call.epsilon, call.delta,
                        forced))
    return out


def _dphd_call_sites() -> tuple[CallSiteSetup, ...]:
    """DPHD: ``disjoint_rows`` (every release moves by its full sensitivity), one round,
    public bounds M = B1 = 10. At ε = 8 the grid counts are charged 1.25, the sums 0.85, the
    sizes 0.09 (the local search 0.16 a pick): calls 1-14 (call 0 is the public seeds of
    Octave's data-independent draws). At ε = 85 the sizes are charged 1: call 10, the first
    Lloyd step's sizes (the centres of its history, released at ε = 7.6 for the sums, place
    row u's two versions in different clusters). Each call is sampled by redraw: a DPHD fit
    runs in Octave, too slow to refit thousands of times."""
    bounds = (("n_rounds", 1), ("max_value", 10.0), ("row_l1_bound", 10.0))
    return (CallSiteSetup(disjoint_rows(), (("epsilon", 8.0), *bounds), max_calls=14, first=1,
                          redraw_samples=100_000),
            CallSiteSetup(disjoint_rows(), (("epsilon", 85.0), *bounds), max_calls=1, first=10,
                          redraw_samples=100_000))


def _call_sites() -> dict[str, Callable[[], tuple[CallSiteSetup, ...]]]:
    """Call-site setups per method."""
    taucc = (("epsilon", 8.0), ("n_iterations", 2), ("h", 0.5))
    return {
        "dp_taucc": lambda: (CallSiteSetup(all_zero_row(), taucc),
                             CallSiteSetup(all_zero_column(), taucc, max_calls=5)),
        "dp_kmeans": lambda: (CallSiteSetup(row_across_boundary(), (("epsilon", 6.35),),
                                            max_calls=2, first=2, max_draws=40_000,
                                            craft=kmeans_boundary_history()),),
        "dpnmf": lambda: (CallSiteSetup(replaced_document(), (("epsilon", 8.0), ("delta", 0.02)),
                                        max_calls=2, first=1, craft=orthonormal_topics),),
        "dpm": lambda: (CallSiteSetup(added_row(n_per_cluster=100), (("epsilon", 200.0),),
                                      max_calls=4, skip=("interval_size",),
                                      max_draws=100_000),),  # a DPM redraw costs ~2 ms
        "colored_noise": lambda: (CallSiteSetup(added_row(), (("epsilon", 4.0), ("delta", 0.5),
                                                              ("n_iter", 1)), max_calls=1),),
        "dphd": _dphd_call_sites,
        "dp_taucc_row": taucc_row.call_site_setups,
    }


CALL_SITES = _call_sites()


def method_audit(method: str) -> MethodAudit:
    """The main scenario of an algorithm config name.

    >>> sorted(CATALOGUE) == sorted({method_audit(m).method for m in CATALOGUE})
    True
    >>> method_audit("kmeans")
    Traceback (most recent call last):
    ...
    ValueError: no audit for 'kmeans'; known: [...]
    """
    if method not in CATALOGUE:
        raise ValueError(f"no audit for {method!r}; known: {sorted(CATALOGUE)}")
    return CATALOGUE[method]()


def method_audits(method: str) -> tuple[MethodAudit, ...]:
    """Every end-to-end scenario of a method: the main one, the method's other worst cases,
    then (private methods) the all-zero matrix.

    >>> [s.pair.name for s in method_audits("dp_taucc")][:2]  # the main one first
    ['all_zero_row', 'all_zero_matrix']
    >>> len(method_audits("fast_taucc"))  # a non-private method: its main scenario only
    1
    """
    main = method_audit(method)
    if method in NOT_PRIVATE:
        return (main,)
    more = _MORE[method]() if method in _MORE else ()
    zero = () if any(m.pair.name == "all_zero_matrix" for m in more) else (_zero_matrix(method),)
    return (main, *more, *zero)


def call_site_setup(method: str) -> tuple[CallSiteSetup, ...]:
    """The call-site setups of a method (none for non-private methods).

    >>> [s.pair.name for s in call_site_setup("dp_taucc")], call_site_setup("fast_taucc")
    (['all_zero_row', 'all_zero_column'], ())
    """
    return CALL_SITES[method]() if method in CALL_SITES else ()
