"""DPM's audit scenarios (``METHOD.audit``): worst-case pairs and events.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``all_zero_row`` with 201 rows (enough for the tree to split now and then): a row
with no counts moves across the split tree (float leaf counts, Mironov's test), labels. The
power scenario, :func:`row_between_leaves` at ε = 5 (below the largest bound its fits can
show, about 7, so a bug can push it above) with ``max_depth=2`` and 97 % of the budget
on the counts: three groups on a line, row u moves (one count) from the outer group to the
middle one, and a tree that splits the outer pair at level 1 puts the two groups in two leaves
at depth 2, whose released counts carry the largest share of the count budget (0.45 of it,
per level weights √(2^ℓ)); the remove-and-add that a one-cell change is moves both leaf counts
by 1, a privacy loss of 2·0.45·0.97·ε/2 = 0.44 ε. The fixed event :func:`leaf_counts_toward`
(both changed leaves' counts on D′'s side) realises it exactly for the discrete Laplace.
The best-split scenario, :func:`tied_coordinates` at ε = 1: the best root split is on
coordinate 0 for D and on coordinate 1 for D' at every grid and root count the fit can draw,
and :func:`root_split_is_best` fires when the released root split is D's best split,
recomputed from D's exact rows: a split released as the best candidate rather than sampled
fires it on every fit of D and on none of D'.
Call sites on ``added_row`` (its calls are charged per added/removed row), ε = 200 so that the
tree's count calls are charged about 0.5 each: the added row moves the root count by its full
sensitivity 1. The interval quantile releases a point of a public grid and declares its law
over that grid (mechanism ``"exponential-grid"``), so it is audited like any call; its own
setup, :func:`row_inside_gaps`, puts the added row inside a gap of every coordinate, which
moves the pooled-gap count by 2 per coordinate on a band of outputs: u moves by the full
charge Δ = max(q, 2 − q)·p there, one way or the other. The leaves' noisy sums (the analytic
Gaussian, charged (ε, δ)) have theirs too, :func:`leaf_sums_site`: ``added_row`` again,
with almost the whole budget on the sums and an explicit δ, so that the call is charged
(1.94, 0.048) and the added row, of L2 norm 1 once normalised, moves one leaf's sum by
exactly the declared sensitivity.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import Bug, double_epsilon_unlogged, scale_argument
from dptaucc.audit.pairs import NeighbouringPair, RowPair, added_row, all_zero_row
from dptaucc.audit.reachability import laplace_reachable
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios", "leaf_sizes", "leaf_counts_reachable", "row_between_leaves",
           "leaf_counts_toward", "POWER_PARAMS", "scaled_rows", "best_root_split",
           "released_root_split", "root_split_is_best", "tied_coordinates", "BEST_SPLIT_PARAMS",
           "best_split_scenario", "row_below_outer_candidates", "OUTER_GROUPS",
           "OUTER_ADDED", "SPLIT_SITE_PARAMS",
           "row_inside_gaps", "INTERVAL_SITE_PARAMS", "INSIDE_GAPS_ROWS",
           "LEAF_SUMS_SITE_PARAMS", "leaf_sums_site"]


def scaled_rows(model, X) -> np.ndarray:
    """NOT PRIVATE (an event's raw recomputation): X's rows as a fitted DPM's tree sees them,
    the public embedding mapped to [−SCALE, SCALE] per coordinate.

    >>> from dptaucc.baselines.dpm import DPM
    >>> model = DPM(epsilon=1.0, n_components=None, max_depth=1, random_state=0).fit(
    ...     np.array([[1, 0], [0, 1], [0, 0]]))
    >>> scaled_rows(model, np.array([[2, 0], [0, 0]])).tolist()  # unit rows on [0, 1]^2
    [[100.0, -100.0], [-100.0, -100.0]]
    """
    from dptaucc.baselines.dpm.core import SCALE

    Y = model._embed(sp.csr_matrix(X, dtype=np.float64), model.embedding_)
    lo, hi = model._box(Y.shape[1])
    return (Y - lo) * (2.0 * SCALE / (hi - lo)) - SCALE


def _candidates(model) -> np.ndarray:
    """The split candidates (bin centres, scaled units) of a fitted DPM's released grid."""
    from dptaucc.baselines.dpm.core import SCALE

    return -SCALE + (np.arange(model.n_bins_) + 0.5) * (2.0 * SCALE / model.n_bins_)


def _candidate_index(model, threshold: float, p: int) -> int:
    """The bin whose centre a released threshold (embedding units) is."""
    from dptaucc.baselines.dpm.core import SCALE

    lo, hi = model._box(p)
    scaled = (threshold - lo) * (2.0 * SCALE / (hi - lo)) - SCALE
    return int(np.argmin(np.abs(_candidates(model) - scaled)))


def leaf_sizes(model, X) -> list[tuple[int, int]]:
    """(true size, depth) of every leaf of a fitted DPM, in ``leaf_counts_`` order, for the
    rows of X: the released split tree replayed on X's embedding.

    >>> from dptaucc.baselines.dpm import DPM
    >>> X = np.random.default_rng(0).poisson(2.0, size=(200, 10))
    >>> model = DPM(epsilon=50.0, n_components=None, random_state=0).fit(X)
    >>> sizes = leaf_sizes(model, X)
    >>> len(sizes) == len(model.leaf_counts_), sum(size for size, _ in sizes), sizes[0]
    (True, 200, (94, 1))
    """
    Z = scaled_rows(model, X)
    lo, _ = model._box(Z.shape[1])
    centres = _candidates(model)
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
            thr = centres[_candidate_index(model, thr_box, Z.shape[1])]
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


def leaf_counts_reachable(pair: NeighbouringPair) -> ev.Event:
    """Mironov's test on DPM's ``leaf_counts_``: some leaf whose true size differs between D
    and D' has a released (non-integer) count reachable as size_D + Laplace and not as
    size_D' + Laplace, at the scale its tree level was charged.

    >>> from dptaucc.baselines.dpm import DPM
    >>> pair = all_zero_row(n_per_cluster=100)
    >>> event = leaf_counts_reachable(pair)
    >>> model = DPM(epsilon=1.0, mode="paper", random_state=5).fit(pair.D_prime)
    >>> leaf_sizes(model, pair.D), leaf_sizes(model, pair.D_prime)  # row u changes leaf
    ([(101, 1), (100, 1)], [(100, 1), (101, 1)])
    >>> event.fn(model)  # both float counts reachable from either side: no evidence
    False
    """
    def fn(m):
        counts = np.asarray(m.leaf_counts_, dtype=float)
        on_d, on_dp = leaf_sizes(m, pair.D), leaf_sizes(m, pair.D_prime)
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


def row_between_leaves(n_outer: int = 30, n_group: int = 35) -> NeighbouringPair:
    """DPM's end-to-end worst case: two columns, rows on the line x/(x + y) after the public
    L1 transform: ``n_outer`` rows (0, 1) (at 0), ``n_group`` rows (1, 1) (at ½), ``n_group``
    rows (1, 0) (at 1) and row u = (1, 0) in D, (1, 1) in D' (one count more): u moves from
    the group at 1 to the group at ½. With ``max_depth=2`` the split limit is a quarter of the
    root count, so a root split that isolates the rows at 0 and a level-1 split between ½ and
    1 are both kept (every group is above n/4), the groups at ½ and 1 become two leaves at
    depth 2, and u moves from one to the other (a fifth of the trees: splits are drawn nearly
    uniformly when the split choice gets 1 % of the budget; other trees move u between leaves
    at depth 1). Groups of identical rows cannot be split further (a child would be empty).

    >>> pair = row_between_leaves(n_outer=3, n_group=4)
    >>> pair.D.shape, pair.D.toarray()[pair.u].tolist(), pair.D_prime.toarray()[pair.u].tolist()
    ((12, 2), [1, 0], [1, 1])
    """
    rows = [[0, 1]] * n_outer + [[1, 1]] * n_group + [[1, 0]] * (n_group + 1)
    D = sp.csr_matrix(np.array(rows, dtype=np.int64))
    return NeighbouringPair("row_between_leaves", D, (n_outer + 2 * n_group, 1), 3,
                            "row u moves from one group to its neighbour on the L1 line")


def leaf_counts_toward(pair: NeighbouringPair, min_depth: int = 0) -> ev.Event:
    """The fixed event of DPM's power scenario: row u is in different leaves on D and D'
    (the released split tree replayed on both), both at depth >= ``min_depth``, and each of
    those two leaves' released counts is on D′'s side: at least its size on D' for the leaf
    u joins, at most it for the leaf u leaves. For the discrete Laplace each condition is
    e^{ε_level} times more likely on D' than on D (at its level's ε), so the event's
    likelihood ratio is the full loss of the two counts.

    >>> from dptaucc.baselines.dpm import DPM
    >>> pair = row_between_leaves()
    >>> model = DPM(random_state=17, **dict(POWER_PARAMS)).fit(pair.D_prime)
    >>> [(d, dp) for d, dp in zip(leaf_sizes(model, pair.D), leaf_sizes(model, pair.D_prime))
    ...  if d != dp]  # u leaves a leaf at depth 2 (size 36 → 35) for another (35 → 36)
    [((36, 2), (35, 2)), ((35, 2), (36, 2))]
    >>> model.leaf_counts_.tolist(), leaf_counts_toward(pair, min_depth=2)(model)
    ([28, 34, 37], True)
    """
    def fn(m):
        counts = np.asarray(m.leaf_counts_)
        moved = [(y, d, dp) for y, (d, depth), (dp, _) in
                 zip(counts, leaf_sizes(m, pair.D), leaf_sizes(m, pair.D_prime), strict=True)
                 if d != dp and depth >= min_depth]
        if len(moved) != 2:
            return False
        return all(y >= dp if dp > d else y <= dp for y, d, dp in moved)
    return ev.Event(f"leaf counts of u's two leaves (depth >= {min_depth}) on D′'s side", fn,
                    needs=("leaf_counts_", "split_tree_", "embedding_"))


def best_root_split(model, X) -> tuple[int, int]:
    """NOT PRIVATE (an event's raw recomputation): the root split the non-private way, the
    best of the scores of all X's rows (paper Defs. 5–7, the exact row count as N) on the
    fit's released grid: ``(dimension, bin)``, the first best in the tree's candidate order.

    >>> from dptaucc.baselines.dpm import DPM
    >>> pair = tied_coordinates(n_group=3, n_zero=6)
    >>> model = DPM(random_state=0, **dict(BEST_SPLIT_PARAMS)).fit(pair.D)
    >>> model.n_bins_, best_root_split(model, pair.D), best_root_split(model, pair.D_prime)
    (13, (0, 1), (1, 1))
    """
    from dptaucc.baselines.dpm.core import SCALE
    from dptaucc.baselines.dpm.tree import TreeParams, node_utilities

    Z = scaled_rows(model, X)
    params = TreeParams(lo=-SCALE, hi=SCALE, n_bins=int(model.n_bins_), t=model.t, q=model.q,
                        w_c=model.w_c, w_e=model.w_e, corrected=model.mode == "corrected")
    best = int(np.argmax(node_utilities(Z, float(Z.shape[0]), params)))
    return divmod(best, int(model.n_bins_))


def released_root_split(model) -> tuple[int, int]:
    """``(dimension, bin)`` of the released root split (``split_tree_[0]``, used or not).

    >>> from dptaucc.baselines.dpm import DPM
    >>> pair = tied_coordinates(n_group=3, n_zero=6)
    >>> model = DPM(random_state=0, **dict(BEST_SPLIT_PARAMS)).fit(pair.D)
    >>> dim, bin_ = released_root_split(model)
    >>> dim in (0, 1) and 0 <= bin_ < model.n_bins_
    True
    """
    level, dim, threshold, _ = model.split_tree_[0]
    if level != 0:
        raise ValueError("split_tree_ does not start with the root split")
    return int(dim), _candidate_index(model, threshold, model.cluster_centers_.shape[1])


def root_split_is_best(pair: NeighbouringPair) -> ev.Event:
    """"The released root split equals D's best split, recomputed from D's exact rows the
    non-private way" (:func:`best_root_split`, on the fit's released grid). A split choice
    that returns the best candidate instead of sampling it fires it on every fit on D; on a
    pair whose best split differs between D and D' (:func:`tied_coordinates`), on none of D'.
    The correct choice fires it only when the exponential mechanism happens to pick that
    candidate, at most e^ε more often on one side than on the other.

    >>> from types import SimpleNamespace
    >>> pair = tied_coordinates(n_group=3, n_zero=6)
    >>> fit = SimpleNamespace(n_bins_=13, t=0.3, q=1 / 12, w_c=1.0, w_e=5.0, mode="corrected",
    ...                       cluster_centers_=np.zeros((2, 2)), embedding_=None,
    ...                       _box=lambda p: (0.0, 1.0), _embed=lambda X, e: X.toarray())
    >>> event, width = root_split_is_best(pair), 1.0 / 13
    >>> [event(SimpleNamespace(**vars(fit), split_tree_=[(0, d, 1.5 * width, False)]))
    ...  for d in (0, 1)]  # bin 1 of coordinate 0 is D's best, of coordinate 1 D′'s
    [True, False]
    """
    return ev.Event("split_tree_ root = D's best split (exact rows, released grid)",
                    lambda m: released_root_split(m) == best_root_split(m, pair.D),
                    needs=("split_tree_", "n_bins_", "cluster_centers_", "embedding_"))


def tied_coordinates(n_group: int = 30, n_zero: int = 200) -> NeighbouringPair:
    """A pair whose best root split is on coordinate 0 in D and on coordinate 1 in D', at
    every grid the interval release can pick and every root count up to n + n_zero − 2.

    Two columns, no projection: ``n_group`` rows (1, 0), ``n_group`` rows (0, 1) and
    ``n_zero`` zero rows, row u (the first zero row) gets one count in column 1 in D'. Every
    row sits at a corner of [0, 1]², so on each coordinate every candidate strictly inside
    has an empty bin and the same rank r (the rows at 0), hence the same score; the best is
    the first inner bin of the coordinate with the larger centreness, i.e. the larger
    N − r (while r ≥ N/2, so for N ≤ 2(n − n_group − 1)). In D the two coordinates tie
    (r = n − n_group) and the tree's order takes coordinate 0; in D' u moves to 1 on
    coordinate 1, whose r drops by one: coordinate 1 wins. Neither depends on the grid
    (the bins at 0 and 1 hold rows and score lower) nor on N: the noisy root count moves
    every N − r alike.

    >>> pair = tied_coordinates(n_group=3, n_zero=4)
    >>> pair.D.shape, pair.D.toarray()[pair.u].tolist(), pair.D_prime.toarray()[pair.u].tolist()
    ((10, 2), [0, 0], [0, 1])
    """
    rows = [[1, 0]] * n_group + [[0, 1]] * n_group + [[0, 0]] * n_zero
    D = sp.csr_matrix(np.array(rows, dtype=np.int64))
    return NeighbouringPair("tied_coordinates", D, (2 * n_group, 1), 2,
                            "the best root split moves from coordinate 0 to coordinate 1")


#: the best-split scenario's settings: no projection (rows at the corners of the unit
#: square), one split level (ε = 1: its root count's noise, scale about 27, stays far below
#: the 198 rows of margin of :func:`tied_coordinates`)
BEST_SPLIT_PARAMS = (("epsilon", 1.0), ("n_components", None), ("max_depth", 1))


def best_split_scenario() -> Scenario:
    """The released root split against D's best split, on :func:`tied_coordinates`.

    >>> s = best_split_scenario()
    >>> s.pair.name, dict(s.params)["max_depth"], s.derive, s.modes, len(s.events)
    ('tied_coordinates', 1, False, ('corrected',), 1)
    """
    pair = tied_coordinates()
    return Scenario(pair, (root_split_is_best(pair),),
                    "the best root split differs between D and D' at every grid: a split "
                    "released as the best candidate (not sampled) shows on every fit on D",
                    params=BEST_SPLIT_PARAMS, derive=False, modes=("corrected",))


#: the power scenario's settings: the L1 line (two columns, no projection), two levels, 97 %
#: of the budget on the noisy counts
POWER_PARAMS = (("epsilon", 5.0), ("n_components", None), ("row_transform", "l1"),
                ("max_depth", 2), ("budget_fractions", (0.01, 0.97, 0.01, 0.01)))


#: why DPM's split choice stays below 0.9 of its charge on ``added_row`` (docs/audit.md)
SPLIT_LIMIT = (
    "added_row is not built for the split call (row_below_outer_candidates is). The choice is "
    "the exponential mechanism over s = u·N at range sensitivity R = 2·w_c·slope + w_e, "
    "reached only when the chosen candidate's score falls by w_c·slope + w_e (the added row in "
    "its bin, below its centre, its rank in the upper outer q-region) while the rest of the "
    "mass sits on candidates that rise by w_c·slope (ranks in the lower outer region, the row "
    "below them); on added_row most candidates keep their scores (measured: exact pair 0.60 "
    "of the charge, ε_lower 0.31 at 10⁵ draws)")


#: the positions (in bins of the 13-bin grid on [0, 1], coordinates 0 and 1) and counts of
#: the row groups of :func:`row_below_outer_candidates`, and the added row's position; the
#: third coordinate fills the unit L2 norm (above the top bin's centre for every row)
OUTER_GROUPS = (((0.75, 2.75), 125), ((0.75, 0.75), 10), ((2.2, 2.2), 6))
OUTER_ADDED = (1.25, 0.25)


def _unit_count_row(position: tuple[float, float], n_bins: int = 13,
                    scale: int = 1000) -> list[int]:
    """A count row whose unit-L2 direction puts coordinates 0 and 1 at ``position`` (in bins
    of an ``n_bins`` grid on [0, 1]), the third coordinate filling the norm."""
    x, y = position[0] / n_bins, position[1] / n_bins
    return [round(x * scale), round(y * scale), round(np.sqrt(1.0 - x * x - y * y) * scale)]


def row_below_outer_candidates() -> RowPair:
    """(add/remove relation) The split choice's call-site pair: three columns, no projection,
    rows of unit L2 norm, on the 13-bin grid the interval step gives (rows on a few values:
    every pooled gap but a few is 0, so the released quantile is about uniform on [0, 200]
    and σ = 29.5, 13 bins; 298 of 300 fits). In bins of coordinates (0, 1)
    (:data:`OUTER_GROUPS`): 125 "bulk" rows at (0.75, 2.75), 10 "low" rows at (0.75, 0.75),
    6 "boost" rows at (2.2, 2.2); D' adds a row at (1.25, 0.25). Every row's third
    coordinate lies above the top bin's centre, so that coordinate's candidates all have rank
    0 (none moves but its top bin's, which is full).

    * Coordinate 0, candidate 1 (centre 1.5) is o*: the bulk and low rows below it, the 6
      boost rows above it (rank in the upper outer q-region, a = 6), its bin empty; the added
      row falls in it below the centre: a falls by 1 (−t/q·w_c = −3.6) and the bin fills
      (−w_e = −5): s' − s = −8.6, the most a score can fall.
    * Coordinate 1, candidate 1 (centre 1.5) is the A-type: the 10 low rows below it (lower
      outer region, a = 10), its bin empty, the added row below it: s' − s = +3.6, the most a
      score can rise. s(o*) − s(A) = −3.6·4, so D's mass is mostly on A (o* keeps 3 %).
    * Every other candidate is either empty with rank 0 or n (a ≈ 0: 5N, behind A by
      3.6·10, weight e^{−36ε/R}) or in a bin holding rows (each row −5).

    The loss at o* is (8.6 + log-mean of e^{Δ/β} over D's law·β)/β ≈ 0.98 of the charge at
    the setup's ε = 3 (β = R/ε): exact 0.976–0.99 at the root counts n and n + 1.

    >>> pair = row_below_outer_candidates()
    >>> pair.D.shape, pair.D_prime.shape, pair.D_prime.toarray()[-1].tolist()
    ((141, 3), (142, 3), [96, 19, 995])
    >>> from dptaucc.baselines.dpm.tree import TreeParams, node_utilities
    >>> params, N = TreeParams(lo=-100.0, hi=100.0, n_bins=13), 141.0
    >>> Z, Zp = (X.toarray() / np.linalg.norm(X.toarray(), axis=1)[:, None] * 200 - 100
    ...          for X in (pair.D, pair.D_prime))
    >>> move = N * (node_utilities(Zp, N, params) - node_utilities(Z, N, params))
    >>> float(round(move[1], 9)), float(round(move[13 + 1], 9))  # o* (coord. 0), A (coord. 1)
    (-8.6, 3.6)
    """
    rows = [_unit_count_row(pos) for pos, count in OUTER_GROUPS for _ in range(count)]
    X = np.array(rows, dtype=np.int64)
    added = np.array([_unit_count_row(OUTER_ADDED)], dtype=np.int64)
    return RowPair("row_below_outer_candidates", sp.csr_matrix(X),
                   sp.csr_matrix(np.vstack([X, added])), X.shape[0], 1,
                   "a row added in the bin of an upper-outer candidate of one coordinate, "
                   "below the lower-outer candidates of the other")


#: the split call-site setup's settings: no projection, one level, 70 % of the row-level
#: budget ε/2 = 12 on the counts (the root count's noise, scale 0.29, is 0 in 94 % of fits:
#: the scores' N is the n the pair was built for), the split choice charged 0.25·12 = 3
SPLIT_SITE_PARAMS = (("epsilon", 24.0), ("n_components", None), ("max_depth", 1),
                     ("budget_fractions", (0.01, 0.7, 0.25, 0.04)))

#: the split call's draws, times the job's: its event (the falling candidate) has probability
#: about 0.03 on D and 0.0014 on D', so 6·10⁵ draws a side leave ε_lower at 0.88-0.94 of the
#: charge over audit seeds 0-6, 1.5·10⁶ at 0.92-0.96 (about 10 s)
SPLIT_MORE_DRAWS = 2.5


#: the count rows of :func:`row_inside_gaps` (each also taken mirrored): ten points of the
#: unit quarter-circle, found by a search over placements that maximised the smaller of the
#: interval call's exact pair cost and a sampled bound's expected value (10⁵ draws per side),
#: both over the charge, at the setup's ε_int = 5
INSIDE_GAPS_ROWS = ((0, 100000), (5415, 99853), (15842, 98737), (21232, 97720),
                    (21741, 97608), (27146, 96245), (27174, 96237), (41300, 91073),
                    (75669, 65377), (85675, 51573))


def row_inside_gaps() -> RowPair:
    """(add/remove relation) The interval quantile's call-site pair: twenty rows, the count
    rows of :data:`INSIDE_GAPS_ROWS` and their mirror images (two columns, no projection,
    unit L2 rows, so both coordinates hold the same twenty values), and D' = D plus the row
    (1, 1), whose value 1/√2 falls inside a gap of both coordinates and splits it in two.
    On the outputs between the larger half and the whole gap the pooled count #{gap ≤ o}
    grows by 2 per coordinate (2p in all) while the target rank qM grows by qp. The values
    put a long stretch of outputs of that band at x = #{gap ≤ o} − qM ≈ −(2 − q)p, where u
    rises by (2 − q)p from D to D′, and a short one at x ≥ 0, where it falls by as much:
    both extremes of the charge Δ = max(q, 2 − q)·p. Most of D′'s mass sits on the long
    stretch; the short one's probability differs by nearly e^{ε} between D and D′ (exact
    pair cost 0.98 of the charge at ε_int = 5).

    >>> pair = row_inside_gaps()
    >>> pair.D.shape, pair.D_prime.shape, pair.D_prime.toarray()[-1].tolist()
    ((20, 2), (21, 2), [1, 1])
    """
    rows = np.array(INSIDE_GAPS_ROWS, dtype=np.int64)
    X = np.vstack([rows, rows[:, ::-1]])
    return RowPair("row_inside_gaps", sp.csr_matrix(X),
                   sp.csr_matrix(np.vstack([X, np.ones((1, 2), dtype=np.int64)])),
                   X.shape[0], 1, "a row (1, 1) added inside a gap of both coordinates")


#: the interval call-site setup's settings: no projection (the rows' coordinates as built),
#: unit L2 rows, 80 % of the row-level budget ε/2 on the interval (ε_int = 5)
INTERVAL_SITE_PARAMS = (("epsilon", 12.5), ("n_components", None), ("row_transform", "l2"),
                        ("max_depth", 1), ("budget_fractions", (0.8, 0.1, 0.05, 0.05)))

#: the leaf-sums call-site setup's settings: no projection (a non-negative row normalised
#: to unit L2 norm stays in the box [0, 1]^p, so the added row sits on the public bound 1),
#: one level (the leaf sums are call #4), an explicit δ and 97 % of the row-level budget
#: ε/2 = 2 on the sums: charged ε = 1.94 and δ_avg = 0.8·δ' = 0.8 · 0.5/(1 + e²) = 0.048,
#: a δ whose region of the Gaussian's (ε, δ) curve 6·10⁵ draws per side sample well (measured
#: 0.94-0.95 of the charge; at δ = 0.05, a call δ of 0.0048, 0.91-0.93)
LEAF_SUMS_SITE_PARAMS = (("epsilon", 4.0), ("delta", 0.5), ("n_components", None),
                         ("max_depth", 1), ("budget_fractions", (0.01, 0.01, 0.01, 0.97)))


def leaf_sums_site() -> CallSiteSetup:
    """The leaf sums' call-site setup: :func:`~dptaucc.audit.pairs.added_row` (D' = D plus a
    row with its counts in column 0) under :data:`LEAF_SUMS_SITE_PARAMS`, call #4 only. The
    history (tree, counts) is forced equal on both sides, so the leaves are the same and the
    added row, e₀ after the L2 transform, moves one leaf's sum by e₀: an L2 move of 1, the
    declared sensitivity (the public row bound), all of it on one value. The analytic
    Gaussian is exact for its (ε, δ), so the pair's exact cost is the charge; measured
    ε_lower 0.94-0.95 of it at the quick size (6·10⁵ draws per side), 0.97 at the full size.

    >>> setup = leaf_sums_site()
    >>> setup.pair.name, setup.first, setup.max_calls, setup.limits
    ('added_row', 4, 1, ())
    >>> from dptaucc.baselines.dpm import DPM
    >>> [(e.step, e.epsilon, round(e.delta, 4)) for e in DPM(random_state=0, **dict(
    ...     setup.params)).fit(setup.pair.D).privacy_ledger_.entries if e.step == "leaf_sums"]
    [('leaf_sums', 1.94, 0.0477)]
    """
    return CallSiteSetup(added_row(n_per_cluster=100), LEAF_SUMS_SITE_PARAMS, max_calls=1,
                         first=4)


_TREE = "dptaucc.baselines.dpm.tree"
_CORE = "dptaucc.baselines.dpm.core"

BUGS = (
    Bug("dpm.count_sensitivity_halved", "dpm", "sensitivity off by 2",
        "the tree's noisy counts drawn for L1 sensitivity 1/2 instead of 1",
        ((_TREE, "discrete_laplace_mechanism", scale_argument("sensitivity", 0.5)),)),
    Bug("dpm.count_epsilon_doubled", "dpm", "ε split spends 2ε, ledger unchanged",
        "the tree's noisy counts drawn at 2ε per level while the ledger records ε",
        ((_TREE, "discrete_laplace_mechanism", double_epsilon_unlogged()),)),
    Bug("dpm.leaf_sums_sensitivity_halved", "dpm", "sensitivity off by 2",
        "the leaves' noisy sums calibrated (and declared) for L2 sensitivity 1/2 instead of "
        "the public row bound 1",
        ((_CORE, "release_leaf_sums", scale_argument("l2_bound", 0.5)),)),
)


def scenarios() -> AuditScenarios:
    """DPM's audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, [b.name for b in s.bugs][-1]
    ('all_zero_row', 'added_row', 'dpm.leaf_sums_sensitivity_halved')
    >>> [(c.pair.name, c.first) for c in s.call_sites][-1]  # the leaf sums' own setup
    ('added_row', 4)
    >>> power = s.end_to_end[1]
    >>> power.pair.name, dict(power.params)["epsilon"], power.derive
    ('row_between_leaves', 5.0, False)
    """
    p = all_zero_row(n_per_cluster=100)  # enough rows for the tree to split now and then
    return AuditScenarios(
        (Scenario(p, (leaf_counts_reachable(p), *label_events(p)),
                  "a row with no counts moves across the split tree: float leaf counts"),
         Scenario(row_between_leaves(),
                  (leaf_counts_toward(row_between_leaves(), 2),
                   leaf_counts_toward(row_between_leaves())),
                  "row u moves between two leaves at depth 2 whose counts carry 0.44·ε; one "
                  "fixed event, many cheap fits (the power scenario)",
                  share=20.0, params=POWER_PARAMS, derive=False),
         best_split_scenario()),
        (CallSiteSetup(added_row(n_per_cluster=100), (("epsilon", 200.0),), max_calls=4,
                       max_draws=100_000,  # a redraw costs ~2 ms
                       limits=(("split_level", SPLIT_LIMIT),
                               ("interval_size", "added_row is not built for the interval "
                                "call: row_inside_gaps is its setup"))),
         CallSiteSetup(row_below_outer_candidates(), SPLIT_SITE_PARAMS, max_calls=1, first=2,
                       more_draws=(("split_level", SPLIT_MORE_DRAWS),)),
         CallSiteSetup(row_inside_gaps(), INTERVAL_SITE_PARAMS, max_calls=1, first=1,
                       max_draws=600_000),  # redrawn in batches: about 18 s a side
         leaf_sums_site()),
        BUGS)
