"""DP-KMeans' audit scenarios (``METHOD.audit``): worst-case pairs, events and known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``new_column_maximum``: the data maximum moves (bounds read from the data), raw
SSE and labels; ``row_at_bound``: every row of D is the origin, so one cluster is empty (an
empty-cluster leak; exact counts are exact values on D, not always on D', where a row at the
bound may fill it); ``replaced_row`` (DP-KMeans protects whole rows): a row at the bound changes
cluster.

Call sites: :func:`row_across_boundary` at ε = 6.35 (d = 1, two iterations), history crafted by
:func:`boundary_history`: row u crosses the boundary between forced centres, both counts move
and both clusters' sums leave the edges of their ranges (the bounded mechanism's worst case).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import Bug, double_epsilon_unlogged, exact_values_released, scale_argument
from dptaucc.audit.pairs import RowPair, new_column_maximum, replaced_row, row_at_bound
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events
from dptaucc.audit.transcript import Call

__all__ = ["scenarios", "row_across_boundary", "boundary_history"]


def row_across_boundary(n_top: int = 3, n_zero: int = 10, bound: int = 5) -> RowPair:
    """(row-level relation) One column: ``n_top`` rows at the public bound B (row u among
    them) and ``n_zero`` zero rows; in D' row u holds B − 1. With centres B and B − 1.5
    (:func:`boundary_history`) row u is in the top cluster in D and joins the zero rows in D':
    the top cluster's sum leaves the top of its range {0, …, B·ñ} and the zero cluster's sum
    leaves 0, each by (nearly) the bound — the edges where the bounded discrete Laplace
    mechanism's privacy loss is largest.

    >>> pair = row_across_boundary(n_top=2, n_zero=3, bound=5)
    >>> pair.D.toarray().ravel().tolist(), pair.D_prime.toarray().ravel().tolist(), pair.u
    ([5, 5, 0, 0, 0], [5, 4, 0, 0, 0], 1)
    """
    D = np.zeros((n_top + n_zero, 1), dtype=np.int64)
    D[:n_top] = bound
    Dp = D.copy()
    Dp[n_top - 1] = bound - 1
    return RowPair("row_across_boundary", sp.csr_matrix(D), sp.csr_matrix(Dp), n_top - 1, 2,
                   "row u at the bound moves across the centres' boundary (row-level)")


def boundary_history(n_top: int = 3, n_zero: int = 10) -> Callable[[list[Call]], list[Call]]:
    """The worst case for the second iteration's sums, with :func:`row_across_boundary`: the
    first iteration's counts and sums forced to centres B and B − 1.5 (cluster 0 takes the rows
    at B, cluster 1 the zero rows and B − 1), and the second iteration's counts to the true
    sizes on D, so that cluster 0's range {0, …, B·ñ₀} is exactly filled on D (its sum at the
    top edge) while cluster 1's sum is 0 (the bottom edge). Outputs are on the mechanisms'
    integer grids."""
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


# ------------------------------------------------------------------ raw recomputations
def _inertia(D) -> Callable:
    """SSE of D's rows, clipped to the fitted ``bounds_``, at ``cluster_centers_``."""
    X = ev.dense(D)

    def sse(m):
        lower, upper = m.bounds_
        return float(ev.nearest_sq_distances(np.clip(X, lower, upper), m.cluster_centers_).sum())
    return sse


def _upper_bounds_are_column_maxima(D) -> Callable:
    """The upper ``bounds_`` equal D's column maxima (bounds read from the data)."""
    hi = ev.dense(D).max(axis=0)
    return lambda m: ev.values_equal(m.bounds_[1], hi)


def _end_to_end() -> tuple[Scenario, ...]:
    p = new_column_maximum()
    return (
        Scenario(p, (ev.Event("bounds_ upper = column maxima of D",
                              _upper_bounds_are_column_maxima(p.D), needs=("bounds_",)),
                     ev.attribute_equals("inertia_", _inertia(p.D), rtol=1e-7,
                                         name="inertia_ = SSE of D"),
                     *label_events(p)),
                 "a new column maximum: data-derived bounds; raw SSE and labels", share=0.4),
        Scenario(row_at_bound(), (),
                 "every row of D is the origin: one cluster of D is empty, its exact "
                 "statistics are (0, 0); in D' a row at the bound may fill it", share=0.3),
        Scenario(replaced_row(), (),
                 "a row at the public bound changes cluster (DP-KMeans protects rows)",
                 share=0.3, params=(("epsilon", 1.0),)))


def _call_sites() -> tuple[CallSiteSetup, ...]:
    return (CallSiteSetup(row_across_boundary(), (("epsilon", 6.35),), max_calls=2, first=2,
                          max_draws=40_000, craft=boundary_history()),)


# ------------------------------------------------------------------ known bugs
def _data_bounds(original):
    def fit(self, X, y=None):
        from dptaucc.validation import check_count_matrix
        public = self.bounds_max
        self.bounds_max = max(1.0, float(check_count_matrix(X, integer=False).max()))
        try:
            return original(self, X, y)
        finally:
            self.bounds_max = public
    return fit


def _empty_cluster_leak(original):
    def buggy(X_grid, labels, k, *args, **kwargs):
        sizes, sums = original(X_grid, labels, k, *args, **kwargs)
        empty = np.bincount(labels, minlength=k) == 0
        sizes, sums = sizes.copy(), sums.copy()
        sizes[empty], sums[empty] = 1, 0  # "an empty cluster goes back to the origin"
        return sizes, sums
    return buggy


_KMEANS = "dptaucc.baselines.dp_kmeans"

BUGS = (
    Bug("dp_kmeans.count_epsilon_doubled", "dp_kmeans", "ε split spends 2ε, ledger unchanged",
        "the cluster counts' discrete Laplace drawn at twice the ε the ledger records",
        ((_KMEANS, "discrete_laplace_mechanism", double_epsilon_unlogged()),)),
    Bug("dp_kmeans.sum_scale_halved", "dp_kmeans", "noise scale off by 2",
        "the cluster sums' bounded discrete Laplace drawn at twice the ε the ledger records",
        ((_KMEANS, "bounded_discrete_laplace_mechanism", double_epsilon_unlogged()),)),
    Bug("dp_kmeans.count_sensitivity_halved", "dp_kmeans", "sensitivity off by 2",
        "cluster counts noised for L1 sensitivity 1 although a moved row changes two counts",
        ((_KMEANS, "discrete_laplace_mechanism", scale_argument("sensitivity", 0.5)),)),
    Bug("dp_kmeans.exact_counts", "dp_kmeans", "exact counts declared DP",
        "the count mechanism is charged and run, but the exact cluster counts are released",
        ((_KMEANS, "discrete_laplace_mechanism", exact_values_released),)),
    Bug("dp_kmeans.data_dependent_bounds", "dp_kmeans", "data-dependent bounds",
        "the public bound B replaced by the largest count in the data",
        ((_KMEANS + ":DPKMeans", "fit", _data_bounds),)),
    Bug("dp_kmeans.empty_cluster_leak", "dp_kmeans", "empty-cluster leak",
        "a cluster that is empty on the data gets size 1 and sum 0 exactly (its centre at the "
        "origin) instead of its noisy statistics",
        ((_KMEANS, "corrected_statistics", _empty_cluster_leak),)),
)


def scenarios() -> AuditScenarios:
    """DP-KMeans' audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, len(s.bugs)
    ('new_column_maximum', 'row_across_boundary', 6)
    """
    return AuditScenarios(_end_to_end(), _call_sites(), BUGS,
                          paper_leaks="data-derived bounds, swapped split")
