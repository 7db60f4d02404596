"""DP-KMeans' audit scenarios (``METHOD.audit``): worst-case pairs, events and known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``new_column_maximum``: the data maximum moves (bounds read from the data), raw
SSE and labels; ``row_at_bound``: every row of D is the origin, so one cluster is empty (an
empty-cluster leak; exact counts are exact values on D, not always on D', where a row at the
bound may fill it); ``replaced_row`` (DP-KMeans protects whole rows): a row at the bound changes
cluster.

The power scenario (:func:`power_scenario`): :func:`row_leaves_the_top` at ε =
:data:`POWER_EPSILON` with one iteration (``n_iter=1``, a public setting), two fixed events:
the log-likelihood ratio of the released sizes and centres under the known noise laws
(:func:`leaving_row_llr`) above :data:`POWER_LLR` × ε, and the sizes equal to D's exact ones.
Why this pair: one column with rows at 0 and at the bound B, so every pair of centres inside
the box (the random start) puts the 0s in one cluster and the Bs in the other, and row u (B on
D, 0 on D') changes cluster whatever the seed: both counts move by 1 and the top cluster's sum
by B, from the top edge of its range, where the bounded mechanism's loss is largest. With one
iteration the whole budget is on the release: the counts' 2·ε_count (0.37 ε at d = 1) is
reached at every output and the top sum's ε_coord (0.32 ε) at the edge of its range; the zero
cluster's sum does not move (u is 0 on D'), so half the sums' charge is out of this pair's
reach. The threshold 0.5 ε was chosen on 2,000 pilot fits per side whose seeds the audit never
uses (P_D 0.18, P_D' 0.007 there); at ε = 5 a bound of 2,400 fits per side can still exceed
the claim (5.9 for exact sizes: every fit of D, none of D'), at ε ≥ 6 it could not. Measured
at the quick size: 0.38 ε (docs/audit.md); with diffprivlib's rule (two iterations at least,
the last released) the same pair reached only 0.14 ε.

The exact-sizes scenario (:func:`exact_sizes_scenario`): :func:`zero_row_added`, one
iteration, ε = 1: a division by the exact cluster sizes after the sums' mechanism puts the
released centres times D's exact sizes on the sums' public grid at every fit on D, and at
about one fit in n + 1 on D' (:func:`centres_on_sum_grid`).

Call sites (ε = 12.7, d = 1, two iterations: counts charged 2.35, sums 4 = two values at
ε_coord = 2; public bound :data:`CALL_BOUND` = 12 steps of the sums' grid, so each sum's
range {0, …, B·ñ} holds 25 values and its edges carry atoms of probability): the second
iteration on :func:`row_across_boundary` with the history crafted by :func:`boundary_history`
(row u crosses the boundary between forced centres, both counts move and both clusters' sums
leave the edges of their ranges by B and B − g: the bounded mechanism's worst case; its sums
drawn :data:`SUMS_DRAWS` times the job's draws); the first iteration on
:func:`row_below_random_boundary` (its centres are random: the audit tries
:data:`FIRST_HISTORIES` fit seeds, a public choice, and keeps the one whose boundary puts u's
two versions in different clusters with both sums moving).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import (
    Bug,
    after_fit,
    charge_for_one_value,
    double_epsilon_unlogged,
    exact_values_released,
    scale_argument,
    with_arguments,
)
from dptaucc.audit.pairs import RowPair, new_column_maximum, replaced_row, row_at_bound
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events
from dptaucc.audit.transcript import Call

__all__ = ["scenarios", "row_across_boundary", "row_below_random_boundary",
           "row_across_random_diagonal",
           "row_leaves_the_top", "boundary_history", "call_site_epsilon",
           "leaving_row_llr", "power_scenario", "zero_row_added", "centres_on_sum_grid",
           "exact_sizes_scenario"]


#: zero rows of :func:`zero_row_added` (a noisy sum divisible by n + 1 about once in n + 1
#: fits) and the
#: share of the method's fits its scenario gets
EXACT_SIZES_ROWS = 50
EXACT_SIZES_SHARE = 0.25

#: the call-site setups' sensitivity in grid steps: the public bound B is this many steps of
#: the sums' grid g = 2⁻¹⁰, so the bounded discrete Laplace's ranges {0, …, B·ñ} hold a few
#: dozen values and its edges carry whole atoms of probability (on a fine grid the loss near
#: an edge falls off continuously and the two moved values are rarely both near their edges)
CALL_STEPS = 12
CALL_BOUND = CALL_STEPS * 2.0**-10
#: the per-value ε of the sums in the call-site setups (d = 1, two iterations: ε = 12.7)
CALL_EPS_COORD = 2.0
#: the forced noisy sizes ñ of both clusters: ranges {0, …, 2B}, the smallest on which the
#: bounded mechanism's loss bound is attained (B ≤ M/2)
CALL_SIZE = 2
#: row u's value in D' (grid steps) for the first iteration: below the random start's
#: boundary (above 7 steps for about a quarter of the seeds, never above 9 = 3B/4)
FIRST_STEPS = 7
#: fit seeds (random starts) the first iteration's call-site audit tries
FIRST_HISTORIES = 24


def _one_column(top: int, zeros: int, u_d: float, u_dp: float, name: str, why: str,
                top_value: float = 1.0) -> RowPair:
    """``top`` rows at ``top_value`` (row u the last of them, at ``u_d`` in D and ``u_dp`` in
    D') above ``zeros`` zero rows, in one column; integer cells when every value is whole."""
    whole = all(float(x).is_integer() for x in (u_d, u_dp, top_value))
    D = np.zeros((top + zeros, 1), dtype=np.int64 if whole else float)
    D[:top] = top_value
    Dp = D.copy()
    D[top - 1], Dp[top - 1] = u_d, u_dp
    return RowPair(name, sp.csr_matrix(D), sp.csr_matrix(Dp), top - 1, 2, why)


def row_across_boundary(n_top: int = CALL_SIZE, n_zero: int = CALL_SIZE) -> RowPair:
    """(row-level relation) One column: ``n_top`` rows at 1 (row u among them; clipped to the
    public bound B = :data:`CALL_BOUND`, :data:`CALL_STEPS` grid steps g) and ``n_zero`` zero
    rows; in D' row u holds B − g. With centres B and B − 1.5 g (:func:`boundary_history`),
    row u is in the top cluster in D and joins the zero rows in D': the top cluster's sum
    leaves the top of its range {0, …, B·ñ} by B and the zero cluster's leaves 0 by B − g —
    both values of the call at the edges where the bounded discrete Laplace mechanism's
    privacy loss is largest, one moved by the full sensitivity, the other one step less (in
    one column no two versions of a row at B can fall on two sides of a boundary).

    >>> pair = row_across_boundary(n_top=2, n_zero=3)
    >>> pair.D.toarray().ravel().tolist(), pair.D_prime.toarray().ravel() * 2**10, pair.u
    ([1.0, 1.0, 0.0, 0.0, 0.0], array([1024.,   11.,    0.,    0.,    0.]), 1)
    """
    return _one_column(n_top, n_zero, 1.0, (CALL_STEPS - 1) * 2.0**-10, "row_across_boundary",
                       "row u at the bound moves across the centres' boundary (row-level)")


def row_below_random_boundary(n_top: int = CALL_SIZE, n_zero: int = CALL_SIZE) -> RowPair:
    """(row-level relation) :func:`row_across_boundary`'s column with row u at
    :data:`FIRST_STEPS` grid steps in D': the first iteration's centres are random points
    inside the box [0, B] (diffprivlib's start: two centres in [B/8, 7B/8] at least B/4
    apart, so their boundary lies below 3B/4); where the boundary is above u's value in D'
    (a quarter of the fit seeds; the call-site audit tries :data:`FIRST_HISTORIES` and keeps
    the one that separates D from D' most), u leaves the top cluster's top edge by B and
    enters the zero cluster, whose sum leaves 0 by 7 steps of 12.

    >>> row_below_random_boundary(n_top=2, n_zero=1).D_prime.toarray().ravel() * 2**10
    array([1024.,    7.,    0.])
    """
    return _one_column(n_top, n_zero, 1.0, FIRST_STEPS * 2.0**-10, "row_below_random_boundary",
                       "row u at the bound moves below the random start's boundary (row-level)")


#: the two-column first iteration's public bound in grid steps: B = 4 steps, so each sum's
#: range {0, …, 2B} holds 9 values and its edges carry about a fifth of the draws each (the
#: pair's largest loss needs all four moved values at their edges at once)
DIAGONAL_BOUND_STEPS = 4
DIAGONAL_BOUND = DIAGONAL_BOUND_STEPS * 2.0**-10
#: row u's second value in D' (grid steps) for the two-column first iteration: B − g
DIAGONAL_STEPS = 3


def row_across_random_diagonal(n_top: int = CALL_SIZE, n_zero: int = CALL_SIZE) -> RowPair:
    """(row-level relation) Two columns: ``n_top`` rows at (1, 1) (clipped to the public
    bound B, :data:`DIAGONAL_BOUND_STEPS` grid steps), row u the last of them, above
    ``n_zero`` zero rows; in D' row u holds (B, :data:`DIAGONAL_STEPS` steps = 3/4 B). In two
    dimensions the random start's boundary can pass between (B, B) and (B, 3/4 B) (about one
    fit seed in nine: two centres in [B/4, 3B/4]² at least B/2 apart, nearly on a diagonal),
    so u leaves the top cluster's top edge by B in both columns and enters the other cluster,
    whose sums leave 0 by B and by B − g: the pair's exact loss is 0.95 of the four values'
    charge (one column caps it at 0.83, :func:`row_below_random_boundary`).

    >>> pair = row_across_random_diagonal(n_top=2, n_zero=1)
    >>> (pair.D_prime.toarray() * 2**10).tolist()
    [[1024.0, 1024.0], [4.0, 3.0], [0.0, 0.0]]
    """
    D = np.zeros((n_top + n_zero, 2))
    D[:n_top] = 1.0
    Dp = D.copy()
    Dp[n_top - 1] = (DIAGONAL_BOUND, DIAGONAL_STEPS * 2.0**-10)
    return RowPair("row_across_random_diagonal", sp.csr_matrix(D), sp.csr_matrix(Dp),
                   n_top - 1, 2, "row u at the bound crosses the random start's boundary in "
                   "two columns, one of its values just below the bound (row-level)")


def row_leaves_the_top(n_top: int = 4, n_zero: int = 4) -> RowPair:
    """(row-level relation) One column: ``n_top`` rows at 5 (row u among them) and ``n_zero``
    zero rows; row u at 0 in D': any random centres (always inside the box, so their
    boundary lies between 0 and B) put u's two versions in different clusters, whatever the
    seed: both counts move and the top cluster's sum leaves the top of its range (the power
    scenario's pair).

    >>> row_leaves_the_top(n_top=2, n_zero=1).D_prime.toarray().ravel().tolist()
    [5, 0, 0]
    """
    return _one_column(n_top, n_zero, 5, 0, "row_leaves_the_top",
                       "row u at the bound replaced by a zero row (row-level)", top_value=5)


def zero_row_added(n_zero: int = EXACT_SIZES_ROWS, n_top: int = EXACT_SIZES_ROWS) -> RowPair:
    """(one row added) One column: ``n_top`` rows at 5 and ``n_zero`` zero rows in D; D' has
    one more zero row. Any two distinct centres in the box put 0 and 5 in different clusters,
    and the added row joins the zero rows' cluster: with a fixed number of iterations the only
    release it moves is that cluster's count, by 1 (its sums are unchanged: the row is zero),
    so the pair's loss is ε_count per iteration, half of what the counts are charged: the
    claim ε holds for this pair although DP-KMeans' relation is "one row replaced". What the
    pair changes is the zero cluster's exact size: n_zero on D, n_zero + 1 on D'. (With one
    cluster the same pair would do, but DP-KMeans charges its sums for two clusters' values
    even when there is one, an over-charge the ledger check would report as a deviation.)

    >>> pair = zero_row_added(n_zero=3, n_top=1)
    >>> pair.D.toarray().ravel().tolist(), pair.D_prime.toarray().ravel().tolist()
    ([5, 0, 0, 0], [5, 0, 0, 0, 0])
    """
    D = np.zeros((n_top + n_zero, 1), dtype=np.int64)
    D[:n_top] = 5
    Dp = np.vstack([D, np.zeros((1, 1), dtype=np.int64)])
    return RowPair("zero_row_added", sp.csr_matrix(D), sp.csr_matrix(Dp), n_top + n_zero, 2,
                   "one zero row added (the zero rows' exact cluster size moves by one)")


def boundary_history(n_top: int = CALL_SIZE, n_zero: int = CALL_SIZE
                     ) -> Callable[[list[Call]], list[Call]]:
    """The worst case of the second iteration's calls, with :func:`row_across_boundary` and
    the bound :data:`CALL_BOUND` (B = 12 grid steps g): the first iteration's counts forced
    to the true sizes (n_top, n_zero) and its sums to centres B and B − 1.5 g (their boundary
    B − 0.75 g separates u's versions B and B − g), the second iteration's counts to the true
    sizes on D, so that the top cluster's range {0, …, B·ñ} is exactly filled on D (its sum at
    the top edge) while the zero cluster's sum is 0 (the bottom edge). Outputs are on the
    mechanisms' integer grids. The first iteration's calls (no history before them) get equal
    sizes forced in either cluster order: n_top = n_zero by default.

    >>> shapes = [("counts 1", 2), ("sums 1", (2, 1)), ("counts 2", 2), ("sums 2", (2, 1))]
    >>> history = [Call(i, step, "discrete-laplace", 0.1, 0.0, np.zeros(shape, dtype=np.int64))
    ...            for i, (step, shape) in enumerate(shapes)]
    >>> crafted = boundary_history(n_top=2, n_zero=2)(history)
    >>> [c.output.tolist() for c in crafted]  # the last call is the one audited: kept
    [[2, 2], [[24], [21]], [2, 2], [[0], [0]]]
    >>> 24 / (2 * 2**10) == CALL_BOUND  # the top centre B, on the sums' grid
    True
    """
    from dptaucc.baselines.dp_kmeans import SUM_GRID_BITS

    steps = math.ceil(CALL_BOUND * 2**SUM_GRID_BITS)
    if (2 * steps - 3) * n_zero % 2:
        raise ValueError("n_zero must be even: the zero cluster's centre B − 1.5 g is on the "
                         "grid of its sum only then")
    counts = np.array([n_top, n_zero], dtype=np.int64)
    sums = np.array([[steps * n_top], [(2 * steps - 3) * n_zero // 2]], dtype=np.int64)

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


def _exact_means(D) -> Callable:
    """The means of D's rows (clipped to ``bounds_``) in each cluster of the released centres'
    assignment (a centre where no row is): centres computed the non-private way."""
    X = ev.dense(D)

    def means(m):
        lower, upper = m.bounds_
        rows, labels = np.clip(X, lower, upper), m.predict(D)
        centres = np.array(m.cluster_centers_, dtype=float)
        for j in np.unique(labels):
            centres[j] = rows[labels == j].mean(axis=0)
        return centres
    return means


def _recomputed(p) -> tuple[ev.Event, ...]:
    """Each release recomputed from D the non-private way (the released centres' assignment of
    D's rows): the centres as exact means, the sizes as exact counts."""
    return (ev.attribute_equals("cluster_centers_", _exact_means(p.D), rtol=1e-7,
                                name="cluster_centers_ = exact means of D's rows"),
            ev.attribute_equals("cluster_sizes_",
                                lambda m: ev.sizes_of_assignment(m, p.D, len(m.cluster_sizes_)),
                                name="cluster_sizes_ = exact sizes of D's clusters"))


def centres_on_sum_grid(D) -> ev.Event:
    """The released centres times the exact sizes of D's clusters (under the released
    centres' assignment of D's rows) lie on the sums' public grid g
    (:func:`~dptaucc.baselines.dp_kmeans.sum_grid`), within 10⁻⁶ of a step: what a centre
    divided by the exact size after the sums' mechanism gives on D at every fit. A correct
    centre is ``s·g/ñ`` (ñ the noisy count), on that grid times n only when ñ divides s·n.

    >>> from types import SimpleNamespace
    >>> pair = zero_row_added(n_zero=3, n_top=1)
    >>> def fitted(zero_centre):  # cluster 0 holds the row at 5 with sum 5 (5120 steps)
    ...     return SimpleNamespace(cluster_centers_=np.array([[5.0], [zero_centre]]),
    ...                            epsilon_coord_=1.0, bounds_=(np.zeros(1), np.full(1, 5.0)),
    ...                            predict=lambda X: (np.asarray(X.todense())[:, 0] < 2.5) * 1)
    >>> event = centres_on_sum_grid(pair.D)
    >>> event(fitted(1001 / 1024 / 3)), event(fitted(1001 / 1024 / 4))  # s = 1001 over 3, over 4
    (True, False)
    """
    from dptaucc.baselines.dp_kmeans import sum_grid

    def on_grid(m) -> bool:
        centres = np.asarray(m.cluster_centers_, dtype=float)
        sizes = ev.sizes_of_assignment(m, D, centres.shape[0])
        steps = centres * sizes[:, None] / sum_grid(float(m.epsilon_coord_),
                                                    float(np.max(m.bounds_[1])))
        return bool(np.all(np.abs(steps - np.rint(steps)) <= 1e-6))
    return ev.Event("cluster_centers_ × exact sizes of D on the sums' grid", on_grid,
                    needs=("cluster_centers_",))


def exact_sizes_scenario() -> Scenario:
    """:func:`zero_row_added` (``EXACT_SIZES_ROWS`` zero rows), two clusters, one iteration,
    ε = 1: centres divided by the exact sizes show on every fit on D (the event
    :func:`centres_on_sum_grid`) and on about one in n + 1 on D' (the zero cluster's noisy
    sum divisible by n + 1); the correct code gives the event when each noisy count divides
    its sum times the exact size (mostly: equals it), on D and D' alike up to e^ε_count.

    >>> s = exact_sizes_scenario()
    >>> s.pair.name, dict(s.params)["n_clusters"], dict(s.params)["n_iter"], s.derive
    ('zero_row_added', 2, 1, False)
    """
    pair = zero_row_added()
    return Scenario(pair, (centres_on_sum_grid(pair.D),),
                    "one zero row added, one iteration: the zero rows' exact cluster size "
                    "moves by one, so centres divided by exact sizes after the mechanism show "
                    "on every fit", share=EXACT_SIZES_SHARE, derive=False, modes=("corrected",),
                    params=(("n_clusters", 2), ("n_iter", 1)))


#: the power scenario's ε and event threshold (a fraction of ε; docs/audit.md)
POWER_EPSILON = 5.0
POWER_LLR = 0.5
#: the power scenario's public number of iterations (the whole budget on the one release)
POWER_ITERATIONS = 1


def _folded_log_pmf(size: int, count: int, eps_count: float) -> float:
    """log P(released size) for a true ``count``: discrete Laplace of scale 1/ε_count (the
    counts' L1 sensitivity 2 at 2·ε_count), folded about ½ (n ↦ 1 − n below 1)."""
    from dptaucc.privacy.checks import discrete_laplace_pmf

    return math.log(float(discrete_laplace_pmf(np.array([size - count, 1 - size - count]),
                                               1.0 / eps_count).sum()))


@functools.lru_cache(maxsize=256)
def _bounded_scale(eps_coord: float, steps: int, top: int) -> float:
    """The bounded discrete Laplace's scale on {0, …, top} (a bisection: cached)."""
    from dptaucc.privacy.bounded import bounded_discrete_laplace_scale

    return float(bounded_discrete_laplace_scale(eps_coord, steps, np.array([float(top)]))[0])


def _bounded_log_pmf(y: int, w: int, top: int, eps_coord: float, steps: int) -> float:
    """log P(y) of the bounded discrete Laplace on {0, …, top} around w (clipped into the
    range), at the scale the mechanism uses for sensitivity ``steps``."""
    if top == 0:
        return 0.0
    h = 1.0 / _bounded_scale(eps_coord, steps, top)
    w = min(w, top)
    z = (-math.expm1(-(w + 1) * h) - math.exp(-h) * math.expm1(-(top - w) * h)) / -math.expm1(-h)
    return -abs(y - w) * h - math.log(z)


def leaving_row_llr(model, n_top: int = 4, n_zero: int = 4) -> float:
    """log P_D(release)/P_D'(release) of a corrected fit on :func:`row_leaves_the_top`, under
    the noise laws of the last iteration with its partition fixed by the pair: sizes
    (n_zero, n_top) on D, (n_zero + 1, n_top − 1) on D'; the zero cluster's sum 0, the top
    one's B·n_top on D, B·(n_top − 1) on D' (each clipped to its range B·ñ). Which released
    cluster is which is the random start's choice (either way with probability ½), so each
    side's likelihood averages the two: the exact ratio of the release. Reads only released
    and public attributes (sizes, centres, ε_count, ε_coord, bounds).

    >>> from types import SimpleNamespace
    >>> def fitted(sizes, top):
    ...     return SimpleNamespace(cluster_sizes_=np.array(sizes), epsilon_count_=0.5,
    ...                            epsilon_coord_=1.0, bounds_=(np.zeros(1), np.full(1, 5.0)),
    ...                            cluster_centers_=np.array([[0.0], [top]]))
    >>> d_like = leaving_row_llr(fitted([4, 4], 5.0))  # D's sizes, the top sum at its edge
    >>> dp_like = leaving_row_llr(fitted([5, 3], 3.75))  # D''s sizes and top sum
    >>> d_like > 1.0 > 0 > dp_like
    True
    """
    from dptaucc.baselines.dp_kmeans import sum_grid

    sizes = [int(x) for x in np.asarray(model.cluster_sizes_)]
    upper = float(model.bounds_[1][0])
    grid = sum_grid(model.epsilon_coord_, upper)
    steps = round(upper / grid)
    ys = [round(float(c) * n / grid) for c, n in zip(np.asarray(model.cluster_centers_)[:, 0],
                                                      sizes, strict=True)]
    ec, ed = float(model.epsilon_count_), float(model.epsilon_coord_)

    def log_likelihood(zeros: int, tops: int) -> float:
        """log P(release) when the true sizes are (zeros, tops): either cluster the top."""
        terms = []
        for top in (0, 1):
            total = 0.0
            for j, (size, y) in enumerate(zip(sizes, ys, strict=True)):
                count, w = (tops, steps * tops) if j == top else (zeros, 0)
                if not 0 <= y <= steps * size:
                    return -math.inf
                total += (_folded_log_pmf(size, count, ec)
                          + _bounded_log_pmf(y, w, steps * size, ed, steps))
            terms.append(total)
        return float(np.logaddexp(*terms))

    return log_likelihood(n_zero, n_top) - log_likelihood(n_zero + 1, n_top - 1)


def power_scenario() -> Scenario:
    """The power scenario (module docstring): :func:`row_leaves_the_top` at ε =
    :data:`POWER_EPSILON`, :data:`POWER_ITERATIONS` iteration; fixed events "log-likelihood
    ratio ≥ :data:`POWER_LLR`·ε" (every release in it is at least e^(0.5 ε) times likelier on
    D under the noise law) and "sizes equal D's exact ones".

    >>> s = power_scenario()
    >>> s.pair.name, dict(s.params)["epsilon"], dict(s.params)["n_iter"], s.events[0].name
    ('row_leaves_the_top', 5.0, 1, "log P_D/P_D' of sizes and top centre >= 2.5")
    """
    tau = POWER_LLR * POWER_EPSILON
    return Scenario(row_leaves_the_top(),
                    (ev.Event(f"log P_D/P_D' of sizes and top centre >= {tau:g}",
                              lambda m: leaving_row_llr(m) >= tau,
                              needs=("cluster_sizes_", "cluster_centers_")),
                     ev.Event("cluster_sizes_ = D's exact sizes (4, 4)",
                              lambda m: sorted(np.asarray(m.cluster_sizes_).tolist()) == [4, 4],
                              needs=("cluster_sizes_",))),
                    "row u at the bound leaves the top cluster for the zero one, one "
                    "iteration: the release's counts and top sum move by their "
                    "sensitivity; one fixed event, many fits (the power scenario)",
                    share=2.0, derive=False,
                    params=(("epsilon", POWER_EPSILON), ("n_iter", POWER_ITERATIONS)),
                    modes=("corrected",))


def _end_to_end() -> tuple[Scenario, ...]:
    p = new_column_maximum()
    return (
        Scenario(p, (ev.Event("bounds_ upper = column maxima of D",
                              _upper_bounds_are_column_maxima(p.D), needs=("bounds_",)),
                     ev.attribute_equals("inertia_", _inertia(p.D), rtol=1e-7,
                                         name="inertia_ = SSE of D"),
                     *_recomputed(p), *label_events(p)),
                 "a new column maximum: data-derived bounds; raw SSE, centres, sizes and labels",
                 share=0.4),
        Scenario(row_at_bound(), (),
                 "every row of D is the origin: one cluster of D is empty, its exact "
                 "statistics are (0, 0); in D' a row at the bound may fill it", share=0.3),
        Scenario(replaced_row(), _recomputed(replaced_row()),
                 "a row at the public bound changes cluster (DP-KMeans protects rows)",
                 share=0.3, params=(("epsilon", 1.0),)),
        power_scenario(), exact_sizes_scenario())


#: the sums' calls of the second iteration are drawn this many times the job's draws (their
#: charge is reached only where both moved values sit at an edge of their range at once)
SUMS_DRAWS = 4.0

#: why a call stays below 0.9 of its charge (docs/audit.md)
SUMS_LIMIT = ("in one column no two versions of row u at the bound B fall on two sides of a "
              "boundary, so the zero cluster's sum moves by B − g (11 of 12 grid steps): the "
              "pair's largest loss is 0.97 of the charge, reached only where both values sit "
              "at the edges of their ranges at once; the exact likelihood ratio of the two "
              "values, thresholded optimally, bounds it at 0.94 of the charge with 4·10⁶ "
              "held-out draws per side (the full size), 0.92 with 1.2·10⁶ (quick) and less "
              "with fewer draws")
FIRST_SUMS_LIMIT = ("the first iteration's centres are data-independent random points in "
                    "[B/8, 7B/8], at least B/4 apart: their boundary lies below 3B/4, so the "
                    "row that leaves the top cluster's top edge by B enters the other cluster "
                    "at 7 of 12 grid steps at most (in the seeds kept), and the pair's largest "
                    "loss is 0.83 of the charge; the exact likelihood ratio bounds it at 0.78 "
                    "with 10⁶ held-out draws per side")


def call_site_epsilon(eps_coord: float = CALL_EPS_COORD, n_iter: int = 2,
                      n_dims: int = 1) -> float:
    """The fit's ε at which ``n_dims`` columns' sums get ``eps_coord`` per value (Su et al.'s
    split with ``n_iter`` iterations, :func:`~dptaucc.baselines.dp_kmeans.su_split`).

    >>> from dptaucc.baselines.dp_kmeans import su_split
    >>> eps = call_site_epsilon(2.0)
    >>> round(eps, 3), round(su_split(eps, 1, 2)[1] / 2, 12)
    (12.698, 2.0)
    >>> round(su_split(call_site_epsilon(1.0, n_dims=2), 2, 2)[1] / 2, 12)
    1.0
    """
    from dptaucc.baselines.dp_kmeans import RHO

    return 2.0 * eps_coord * n_iter * (n_dims + float(np.cbrt(4 * n_dims * RHO**2)))


#: the two-column sums' events, chosen on the job's draws, are counted on this many times as
#: many fresh draws per side (streamed, :attr:`CallSiteSetup.held_out`): the pair's loss above
#: 0.9 of the charge lives where all four values sit at (or next to) their range edges, about
#: one draw in 500 on D and one in 23,000 on D', so the held-out count on D' sets the bound
DIAGONAL_HELD_OUT = 12.0
DIAGONAL_SUMS_LIMIT = ("two columns: the pair's exact loss is 0.95 of the charge (u moves all "
                       "four values, one by 3/4 of B), reached only where all four sit at the "
                       "edges of their ranges at once (1 draw in 500 on D, 1 in 23,000 on D'): "
                       "the held-out count on D' sets the bound, 0.92 of the charge with the "
                       "full size's 2.4·10⁷ streamed held-out draws per side, below 0.9 with "
                       "fewer (0.85 at the quick size's 7.2·10⁶: its events, chosen on 6·10⁵ "
                       "draws, are broader than the corner, which would allow 0.90)")


def _call_sites() -> tuple[CallSiteSetup, ...]:
    """ε = 12.7, d = 1, two iterations, B = 12 grid steps: the counts are charged 2.35, the
    sums 4 (two values at ε_coord = 2, on ranges of 25 values whose edges carry whole atoms
    of probability). First iteration: :func:`row_below_random_boundary`, the random start
    chosen among :data:`FIRST_HISTORIES` fit seeds; second: :func:`row_across_boundary`
    under :func:`boundary_history`, its sums drawn :data:`SUMS_DRAWS` times as often; the
    first iteration's sums again in two columns (:func:`row_across_random_diagonal`, B = 4
    steps, per-value ε 1, charge 4), whose pair holds them to 0.95 exactly, their events
    counted on :data:`DIAGONAL_HELD_OUT` times the job's draws, streamed."""
    params = (("epsilon", call_site_epsilon()), ("bounds_max", CALL_BOUND), ("n_iter", 2))
    diagonal = (("epsilon", call_site_epsilon(CALL_EPS_COORD / 2, n_dims=2)),
                ("bounds_max", DIAGONAL_BOUND), ("n_iter", 2))
    return (CallSiteSetup(row_below_random_boundary(), params, max_calls=2,
                          craft=boundary_history(), n_histories=FIRST_HISTORIES,
                          limits=(("sums", FIRST_SUMS_LIMIT),)),
            CallSiteSetup(row_across_boundary(), params, max_calls=2, first=2,
                          craft=boundary_history(), more_draws=(("sums", SUMS_DRAWS),),
                          limits=(("sums", SUMS_LIMIT),)),
            CallSiteSetup(row_across_random_diagonal(), diagonal, max_calls=1, first=1,
                          craft=boundary_history(), n_histories=FIRST_HISTORIES,
                          held_out=(("sums", DIAGONAL_HELD_OUT),),
                          limits=(("sums", DIAGONAL_SUMS_LIMIT),)))


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


def _centres_over_exact_sizes(model, X) -> None:
    """The released centres re-divided by the exact sizes of the fitted rows' clusters."""
    sums = model.cluster_centers_ * model.cluster_sizes_[:, None]
    model.cluster_centers_ = sums / np.maximum(ev.sizes_of_assignment(model, X, len(sums)),
                                               1)[:, None]


def _half_the_changed_values(arguments) -> None:
    arguments["n_changed"] = max(1, arguments["n_changed"] // 2)  # "one cluster's sums"


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
    # written for issue 33 after the audit's power work, to check it
    Bug("dp_kmeans.centres_over_exact_sizes", "dp_kmeans", "exact input after a call",
        "the released centres divided by the exact sizes of the fitted rows' clusters, the "
        "released sizes still noisy", ((_KMEANS + ":DPKMeans", "fit",
                                       after_fit(_centres_over_exact_sizes)),)),
    Bug("dp_kmeans.sums_charged_for_one_cluster", "dp_kmeans", "privacy map slip",
        "the sums charged for d changed values (one cluster's) instead of 2d",
        ((_KMEANS, "bounded_discrete_laplace_mechanism",
          with_arguments(_half_the_changed_values)),)),
    Bug("dp_kmeans.sums_charged_for_one_value", "dp_kmeans", "ledger under-reports its noise",
        "the bounded discrete Laplace of the sums charges one value's ε while 2d values move",
        ((_KMEANS, "bounded_discrete_laplace_mechanism", charge_for_one_value()),)),
)


def scenarios() -> AuditScenarios:
    """DP-KMeans' audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, len(s.bugs)
    ('new_column_maximum', 'row_below_random_boundary', 9)
    """
    return AuditScenarios(_end_to_end(), _call_sites(), BUGS,
                          paper_leaks="data-derived bounds, swapped split")
