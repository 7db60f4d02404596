"""DP-KMeans: diffprivlib's DPLloyd (Su et al. 2016) as the paper ran it, and a corrected variant.

The paper's experiments use diffprivlib 0.6.4's ``KMeans`` with one changed line (the
per-coordinate sensitivity of the cluster sums divided by d) and no bounds. This module
re-implements that algorithm on sparse input with vectorised samplers of the same
distributions (:mod:`dptaucc.baselines.dp_sampling`): a reviews fit takes a tenth of a
second or less where the authors' code takes about a minute (``scripts/bench_vs_authors.py``).
diffprivlib is a dependency: its ``PrivacyLeakWarning`` is used directly, and the tests
compare our split, iteration rule, bounds and samplers with its code.

Both modes start from diffprivlib's data-independent centres (uniform in the bounds, kept apart)
and run ``iters = int(max(min(ε/ε_m, 7), 2))`` DPLloyd iterations (diffprivlib's rule; 2 on
every dataset of the paper): assign every row to its nearest centre, then release a noisy
count and noisy coordinate sums per cluster and divide. ``n_iter`` (an int ≥ 1) replaces the
rule by that many iterations in either mode; the split below uses it in place of ``iters``,
so the ledger still sums to ε. Only the last iteration is released: one iteration puts the
whole budget on the release (the privacy audit's power scenario uses it).

Threat model of corrected mode
------------------------------
What is protected: the rows of the non-negative matrix X (n×d). Neighbours differ in one row,
replaced by any other row; this covers the suite's relation ``X' = X + e_u e_vᵀ`` (one cell
plus one). Public: n, d, k, ε, ``bounds_max``, ``n_iter``, the code. Released (the fitted
attributes): ``cluster_centers_`` and ``cluster_sizes_`` of the last iteration, and the
ledger. Nothing in the fitted model reads the data outside the mechanisms; ``predict(X)``,
``evaluation_row_labels(X)`` and ``score(X)`` read the rows you pass and are *not* private.
Randomness: ``random_state`` seeds every draw (research: whoever knows the seed can replay the
noise); ``secure=True`` draws the noise from OpenDP's exact discrete Laplace with the operating
system's randomness, for a release you publish.

``mode="corrected"`` (the default; ε-DP end to end, ledger = ε exactly, strict
check-then-spend):

* public bounds ``[0, B]`` for every coordinate, B = ``bounds_max`` (default 5 counts, fixed a
  priori). Each cell is clipped to B and floored to a public grid of step ``g = 2⁻¹⁰`` (exact
  for whole counts; coarser, down to 1, only when ε is so small that the noise would exceed
  2⁴⁵ grid steps), so every clipped row lies in ``{0, g, …, B}ᵈ`` with B rounded up to the grid;
* the split of Su et al. as intended, with a half for the row that moves:
  ε_count = c·N/2 per cluster count and ε_coord = N/2 per cluster-coordinate sum,
  N = ε/(iters·(d + c)), c = (4dρ²)^{1/3}, ρ = 0.225;
* every cluster is updated at every iteration, whatever its true count (an empty cluster gets a
  noisy count and noisy sums like any other, so nothing about which clusters are empty leaks);
* sensitivities: within an iteration the previous centres are already released, so only the
  replaced row u can change cluster. It stays in cluster a (a's d sums change by ≤ B each, no
  count changes) or moves from a to b (counts of a and b change by 1 each, and in every
  coordinate the sums of a and b change by ≤ B each). Counts: the k-vector has L1
  sensitivity 2 and gets exact discrete Laplace noise of scale 1/ε_count, charged 2·ε_count;
  each is then folded about ½ (``n ↦ 1 − n`` below 1: post-processing) so that it is ≥ 1.
  Sums: each cluster-coordinate sum (in grid steps) is released by the bounded-domain discrete
  Laplace mechanism on ``{0, …, B·ñ}`` (ñ the noisy count just released), each ε_coord-DP for
  sensitivity B (:mod:`dptaucc.privacy.bounded`); at most 2d of them change, charged
  2d·ε_coord. Per iteration ``2·(c·N/2) + 2d·(N/2) = (c + d)·N = ε/iters``;
* floating point: the released count is an integer and the released sum an integer number of
  grid steps in a range fixed by that count, so each centre coordinate ``s·g/ñ`` takes values
  in a set that does not depend on the data (no Mironov-style reachability leak).

``mode="paper"`` (bug-compatible with the published curves; not DP, ``epsilon_spent_ = inf``):

* bounds = per-feature min/max of the data (diffprivlib's default without ``bounds``, with its
  ``PrivacyLeakWarning``, widened as its ``check_bounds`` does); the ledger names this step
  non-private;
* the budget split of ``_split_epsilon`` unpacked swapped, as in 0.6.4 *and* 0.6.6:
  the count mechanism gets ε_count = N and every coordinate ε_coord = c·N;
* coordinate sensitivity ``(u_t − l_t)/d`` (the authors' change);
* clusters whose true count is zero keep their previous centre (diffprivlib skips them);
  counts get diffprivlib's folded geometric noise and sums its float bounded-domain Laplace;
* ledger: per iteration one count entry (ε_count, parallel over clusters) and one entry for
  the d coordinate sums composed sequentially (d·c·N), so the mechanisms record
  ``(1 + d·c)·N·iters ≈ c·ε`` instead of the ε claimed;
* the fit keeps the authors' outputs: ``row_labels_``/``labels_`` (nearest released centre of
  each training row) and ``inertia_`` (its exact SSE), declared non-private (ledger step
  "final assignment").

For scale of the default B = 5: on cstr, classic3 and reviews 82 %, 99 % and 98 % of the
non-zero cells are ≤ 5 (measured with ``dptaucc.datasets.load``); a larger cap keeps more
signal but adds proportionally more noise to every coordinate sum.

Cost: the matrix stays sparse; row norms are computed once per fit, each iteration is one
sparse product with the k centres and one pass for the cluster sums: O(nnz·k + d·k). A matrix
with at least half its cells non-zero is used dense
(:func:`dptaucc.validation.dense_counts`: no copy when every cell is stored), its products on
BLAS: the same cluster sums, bounds and norms for whole counts, distances equal up to
floating-point rounding.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.base import ClusterMixin
from sklearn.utils._param_validation import Interval

from dptaucc.base import EPSILON, MODE, RANDOM_STATE, SECURE, PrivateEstimator
from dptaucc.kernels import sum_by_row_label
from dptaucc.methods import NON_NEGATIVE_REALS, MethodInfo
from dptaucc.privacy import (
    DP,
    LEDGER_ATTRIBUTES,
    NON_PRIVATE,
    PUBLIC,
    PrivacyLedger,
    Sampler,
    bounded_discrete_laplace_mechanism,
    discrete_laplace_mechanism,
)
from dptaucc.privacy.samplers import MAX_NOISE_SCALE
from dptaucc.validation import check_n_clusters, dense_counts, matrix_fact

from .dp_sampling import bounded_domain_laplace, bounded_laplace_scale, folded_geometric

__all__ = ["DPKMeans", "DEFAULT_BOUNDS_MAX", "SUM_GRID_BITS", "calc_iters", "su_split",
           "sum_grid", "feature_bounds", "widen_bounds", "corrected_statistics",
           "paper_update_centers"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="dp_kmeans", estimator="dptaucc.baselines.dp_kmeans.DPKMeans",
    label="DP-KMeans", color="tab:orange", linestyle="-", marker="s", family="k-means",
    neighbours="one row replaced (covers one cell)",
    # any row in [0, bounds_max]^d may replace another; cells are floored to a public grid
    domain=NON_NEGATIVE_REALS,
    role="paper",
    audit="dptaucc.baselines.dp_kmeans_audit",
    row_level=True,
)

DEFAULT_BOUNDS_MAX = 5.0
RHO = 0.225
#: corrected mode: cells are floored to multiples of 2^-SUM_GRID_BITS (exact for whole counts)
SUM_GRID_BITS = 10
#: diffprivlib's minimum separation of the bounds of one feature
MIN_SEPARATION = 1e-5


def calc_iters(epsilon: float, n_clusters: int, n_samples: int, n_dims: int,
               rho: float = RHO) -> int:
    """diffprivlib's iteration rule: ``int(max(min(ε/ε_m, 7), 2))``.

    >>> calc_iters(1.0, 3, 1000, 50), calc_iters(100.0, 3, 100000, 5)  # clamped to [2, 7]
    (2, 7)
    """
    eps_m = math.sqrt(500 * n_clusters**3 / n_samples**2
                      * (n_dims + np.cbrt(4 * n_dims * rho**2)) ** 3)
    return int(max(min(epsilon / eps_m, 7), 2))


def su_split(epsilon: float, n_dims: int, iters: int, rho: float = RHO) -> tuple[float, float]:
    """Su et al.'s split as intended: ``(ε_count, ε_coord) = (c·N, N)``, N = ε/(iters(d+c)).

    diffprivlib's ``_split_epsilon`` returns ``(N, c·N)`` and its caller reads the pair as
    ``(ε_count, ε_coord)``: the swap that ``mode="paper"`` reproduces.

    >>> eps_count, eps_coord = su_split(1.0, n_dims=4, iters=2)
    >>> round(2 * (eps_count + 4 * eps_coord), 12)  # iters·(ε_count + d·ε_coord) = ε
    1.0
    """
    c = float(np.cbrt(4 * n_dims * rho**2))
    unit = epsilon / iters / (n_dims + c)
    return c * unit, unit


def sum_grid(eps_coord: float, bounds_max: float) -> float:
    """The public grid step g = 2^-j of corrected mode: j = :data:`SUM_GRID_BITS`, lowered
    only as far as needed for the sums' noise scale (at most 2·(B/g + 1)/ε_coord grid steps)
    to stay within the samplers' limit of 2⁴⁵ steps.

    >>> sum_grid(1.0, 5.0) == 2.0**-SUM_GRID_BITS, sum_grid(1e-12, 5.0)  # a coarser grid
    (True, 0.5)
    >>> sum_grid(1e-15, 5.0)
    Traceback (most recent call last):
    ...
    ValueError: epsilon is too small for DP-KMeans: ...
    """
    if math.isinf(eps_coord):
        return math.ldexp(1.0, -SUM_GRID_BITS)
    for bits in range(SUM_GRID_BITS, -1, -1):
        g = math.ldexp(1.0, -bits)
        if 2.0 * (bounds_max / g + 1.0) / eps_coord <= MAX_NOISE_SCALE:
            return g
    raise ValueError(f"epsilon is too small for DP-KMeans: ε_coord = {eps_coord:.3g} would need "
                     f"a noise scale above {MAX_NOISE_SCALE:g} steps even on a grid of 1")


def _rows_of(X: sp.csr_matrix) -> sp.csr_matrix | np.ndarray:
    """The validated matrix as the fit computes on it: dense when it is dense enough
    (:func:`dptaucc.validation.dense_counts`), else the CSR matrix itself."""
    dense = dense_counts(X)
    return X if dense is None else dense


def _rows_bounds(X: sp.csr_matrix, rows: sp.csr_matrix | np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`feature_bounds` of ``rows = _rows_of(X)``, computed once per frozen matrix
    (:func:`dptaucc.validation.matrix_fact`: a sweep's fits and evaluations share it)."""
    return matrix_fact(X, "dp_kmeans: feature bounds", lambda: feature_bounds(rows))


def _rows_sq_norms(X: sp.csr_matrix, rows: sp.csr_matrix | np.ndarray) -> np.ndarray:
    """:func:`_row_sq_norms` of ``rows = _rows_of(X)``, computed once per frozen matrix."""
    return matrix_fact(X, "dp_kmeans: row squared norms", lambda: _row_sq_norms(rows))


def feature_bounds(X: sp.csr_matrix | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature (min, max) of a non-negative CSR matrix without explicit zeros, implicit
    zeros included (one pass over the non-zeros), or of a dense array.

    >>> import numpy as np, scipy.sparse as sp
    >>> A = np.array([[2.0, 0.0, 1.0], [3.0, 5.0, 4.0]])
    >>> lo, hi = feature_bounds(sp.csr_matrix(A))  # column 1's implicit zero counts
    >>> lo.tolist(), hi.tolist()
    ([2.0, 0.0, 1.0], [3.0, 5.0, 4.0])
    """
    if isinstance(X, np.ndarray):
        return X.min(axis=0), X.max(axis=0)
    n, d = X.shape
    lo, hi = np.full(d, np.inf), np.zeros(d)
    np.minimum.at(lo, X.indices, X.data)
    np.maximum.at(hi, X.indices, X.data)
    lo[np.bincount(X.indices, minlength=d) < n] = 0.0
    return lo, hi


def widen_bounds(lower: np.ndarray, upper: np.ndarray,
                 min_separation: float = MIN_SEPARATION) -> tuple[np.ndarray, np.ndarray]:
    """diffprivlib's ``check_bounds`` for per-feature arrays, vectorised (same arithmetic):
    a feature whose bounds are closer than ``min_separation`` gets ``mid ± min_separation/2``.

    >>> import numpy as np
    >>> lo, hi = widen_bounds(np.array([0.0, 2.0]), np.array([4.0, 2.0]), min_separation=1.0)
    >>> lo.tolist(), hi.tolist()
    ([0.0, 1.5], [4.0, 2.5])
    """
    lower = np.asarray(lower, dtype=float).copy()
    upper = np.asarray(upper, dtype=float).copy()
    if lower.shape != upper.shape or lower.ndim != 1:
        raise ValueError("lower and upper bounds must be 1-D arrays of the same shape")
    if np.any(lower > upper):
        raise ValueError("For each bound, lower bound must be smaller than upper bound")
    narrow = upper - lower < min_separation
    mid = (upper[narrow] + lower[narrow]) / 2
    lower[narrow] = mid - min_separation / 2
    upper[narrow] = mid + min_separation / 2
    return lower, upper


def _row_sq_norms(X: sp.csr_matrix | np.ndarray) -> np.ndarray:
    """‖x_i‖² of every row: one pass over the non-zeros of a CSR matrix, or over a dense
    array."""
    if isinstance(X, np.ndarray):
        return np.einsum("ij,ij->i", X, X)
    # Σ_j a_ij²·1 in storage order from 0 (scipy's CSR product), one pass
    squares = sp.csr_matrix((np.square(X.data, dtype=np.float64), X.indices, X.indptr),
                            shape=X.shape)
    return squares @ np.ones(X.shape[1])


def _cluster_sums(X: sp.csr_matrix | np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """k×d sums of the rows by label: one pass over the non-zeros, or a BLAS product of the
    one-hot labels with a dense array (the same sums; exactly so for whole numbers)."""
    if isinstance(X, np.ndarray):
        return (np.arange(k)[:, None] == labels[None, :]).astype(np.float64) @ X
    return sum_by_row_label(X, labels, k)


def _sq_distances(X: sp.csr_matrix | np.ndarray, x2: np.ndarray,
                  centers: np.ndarray) -> np.ndarray:
    """n×k squared distances ``‖x‖² − 2x·c + ‖c‖²`` from the rows (CSR, or a dense array) and
    their squared norms ``x2`` (computed once per matrix); no dense n×d array from CSR."""
    if isinstance(X, np.ndarray):
        cross = (centers @ X.T).T  # k×d times d×n: BLAS streams X once
    else:
        cross = np.asarray(X @ centers.T)
    c2 = np.einsum("kd,kd->k", centers, centers)
    return np.maximum(x2[:, None] - 2.0 * cross + c2[None, :], 0.0)


def _init_centers(lower: np.ndarray, upper: np.ndarray, k: int,
                  rng: np.random.Generator) -> np.ndarray:
    """diffprivlib's data-independent start: uniform points in the box, pairwise ≥ 2π apart,
    π starting at half the smallest range and halved after 100 consecutive rejections."""
    span = upper - lower
    proximity = float(np.min(span)) / 2.0
    d = lower.shape[0]
    while proximity > 0:
        centers = np.zeros((k, d))
        found, retry = 0, 0
        while retry < 100 and found < k:
            cand = rng.random(d) * (span - 2 * proximity) + lower + proximity
            if found == 0 or np.sqrt(((centers[:found] - cand) ** 2).sum(axis=1).min()) \
                    >= 2 * proximity:
                centers[found] = cand
                found += 1
                retry = 0
            else:
                retry += 1
        if found >= k:
            return centers
        proximity /= 2.0
    raise RuntimeError("could not place the initial centres inside the bounds")


# ------------------------------------------------------------------ corrected mode
def corrected_statistics(X_grid: sp.csr_matrix | np.ndarray, labels: np.ndarray, k: int,
                         bound_steps: int, grid: float, eps_count: float, eps_coord: float,
                         sampler: Sampler, ledger: PrivacyLedger, step: str
                         ) -> tuple[np.ndarray, np.ndarray]:
    """One corrected DPLloyd release for every one of the k clusters: (noisy counts ñ ≥ 1,
    noisy coordinate sums in grid steps, k×d), both int64.

    ``X_grid`` holds the clipped rows on the grid (every value a multiple of ``grid``, at most
    ``bound_steps·grid``). Counts: exact discrete Laplace, L1 sensitivity 2 (a row moving
    between two clusters), folded about ½. Sums: bounded-domain discrete Laplace on
    ``{0, …, bound_steps·ñ}``, sensitivity ``bound_steps`` per value, at most 2d values change.

    >>> import numpy as np
    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> from dptaucc.privacy.samplers import make_sampler
    >>> X = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])  # on a grid of 1, bound 3
    >>> ledger = PrivacyLedger()
    >>> sizes, sums = corrected_statistics(X, np.array([0, 0, 1]), 2, bound_steps=3, grid=1.0,
    ...                                    eps_count=np.inf, eps_coord=np.inf,
    ...                                    sampler=make_sampler(0), ledger=ledger, step="it 0")
    >>> sizes.tolist(), sums.tolist()  # ε = ∞: the exact counts and sums
    ([2, 1], [[3, 1], [0, 3]])
    >>> [e.noise_scale for e in ledger.entries]
    [0.0, 0.0]
    >>> ledger = PrivacyLedger()
    >>> _ = corrected_statistics(X, np.array([0, 0, 1]), 2, bound_steps=3, grid=1.0,
    ...                          eps_count=0.5, eps_coord=0.25, sampler=make_sampler(0),
    ...                          ledger=ledger, step="it 0")
    >>> # counts: sensitivity 2 at 2·ε_count; sums: 2d changed values at ε_coord each
    >>> [(e.epsilon, round(e.noise_scale, 2)) for e in ledger.entries]
    [(1.0, 2.0), (1.0, 16.79)]
    """
    d = X_grid.shape[1]
    counts = np.bincount(labels, minlength=k)
    noisy = discrete_laplace_mechanism(
        counts, epsilon=2.0 * eps_count, sensitivity=2, sampler=sampler, ledger=ledger,
        step=f"{step}: cluster counts",
        note="all k clusters; a moved row changes two counts by 1 (L1 sensitivity 2, "
             "2·ε_count); folded about ½ afterwards")
    sizes = np.where(noisy < 1, 1 - noisy, noisy)
    sums = np.rint(_cluster_sums(X_grid, labels, k) / grid).astype(np.int64)
    upper = bound_steps * sizes[:, None]
    noisy_sums = bounded_discrete_laplace_mechanism(
        np.minimum(sums, upper), upper=np.broadcast_to(upper, sums.shape), epsilon=eps_coord,
        sensitivity=bound_steps,
        sampler=sampler, ledger=ledger, step=f"{step}: cluster sums", n_changed=2 * d, unit=grid,
        note=f"all k×{d} sums on a grid of {grid:g}; per value ε_coord, sensitivity B; two "
             f"clusters × {d} coordinates change at most")
    return sizes, noisy_sums


def _grid_rows(X: sp.csr_matrix | np.ndarray, grid: float,
               bound_steps: int) -> sp.csr_matrix | np.ndarray:
    """min(⌊x/g⌋, B/g)·g for every stored cell (a new matrix; X is not modified)."""
    if isinstance(X, np.ndarray):
        out = np.floor(X / grid)
        np.minimum(out, bound_steps, out=out)
        out *= grid
        return out
    steps = np.minimum(np.floor(X.data / grid), bound_steps)
    out = sp.csr_matrix((steps * grid, X.indices, X.indptr), shape=X.shape)  # X's indices
    if not np.all(out.data):  # compacting works in place: on copies of X's index arrays
        out = out.copy()
        out.eliminate_zeros()
    return out


# ------------------------------------------------------------------ paper mode
def _paper_sum_scales(epsilon: float, noisy_count: np.ndarray, lower: np.ndarray,
                      upper: np.ndarray, sens_coord: np.ndarray) -> np.ndarray:
    """Bounded-Laplace scale per (cluster, coordinate) for the domain ``ñ·[l_t, u_t]``: one
    bisection per cluster and distinct bound pair (the element-wise bisection gives every
    element the value it would get alone)."""
    _, first, inverse = np.unique(lower + 1j * upper, return_index=True, return_inverse=True)
    nc = noisy_count[:, None]
    diam = nc * upper[first][None, :] - nc * lower[first][None, :]
    sens = np.broadcast_to(sens_coord[first][None, :], diam.shape)
    return bounded_laplace_scale(epsilon, sens, diam)[:, inverse.ravel()]


def paper_update_centers(X: sp.csr_matrix | np.ndarray, centers: np.ndarray, labels: np.ndarray,
                         lower: np.ndarray, upper: np.ndarray, eps_count: float,
                         eps_coord: float, sens_coord: np.ndarray,
                         rng: np.random.Generator) -> np.ndarray:
    """diffprivlib's ``_update_centers``, vectorised: clusters with a true count of zero are
    skipped (keep their centre); folded-geometric counts, float bounded-domain Laplace sums.

    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [3.0, 2.0], [0.0, 4.0]])
    >>> centers = np.array([[0.0, 0.0], [9.0, 9.0], [1.0, 1.0]])
    >>> new = paper_update_centers(X, centers, np.array([0, 0, 2]), np.zeros(2), np.full(2, 4.0),
    ...                            1.0, 1.0, np.full(2, 4.0), np.random.default_rng(0))
    >>> new[1].tolist()  # an empty cluster keeps its centre
    [9.0, 9.0]
    >>> bool(((new >= 0) & (new <= 9)).all())
    True
    """
    k = centers.shape[0]
    counts = np.bincount(labels, minlength=k)
    present = np.flatnonzero(counts)
    sums = _cluster_sums(X, labels, k)[present]
    noisy_count = folded_geometric(counts[present], eps_count, 1, 0.5, math.inf, rng)
    nc = noisy_count[:, None].astype(float)
    lo, hi = nc * lower[None, :], nc * upper[None, :]
    scale = _paper_sum_scales(eps_coord, nc[:, 0], lower, upper, sens_coord)
    noisy_sum = bounded_domain_laplace(sums, scale, lo, hi, rng)
    centers = centers.copy()
    centers[present] = noisy_sum / nc
    return centers


def _charge_paper_iteration(ledger: PrivacyLedger, it: int, d: int, eps_count: float,
                            eps_coord: float, sens_coord: np.ndarray) -> None:
    step = f"iteration {it + 1}"
    ledger.charge(f"{step}: cluster counts", "geometric-folded", eps_count, 0.0, 1.0,
                  "parallel", "ε_count = N (swapped split); one count per non-empty cluster",
                  1.0 / eps_count)
    ledger.charge(f"{step}: cluster sums", "laplace-bounded-domain", d * eps_coord, 0.0,
                  float(np.max(sens_coord)), "sequential",
                  f"{d} coordinates × ε_coord = c·N composed sequentially; noise calibrated "
                  "to the sensitivity ÷ d; reassignment of a row ignored")


class DPKMeans(ClusterMixin, PrivateEstimator):
    """Differentially private k-means (DPLloyd via diffprivlib), in corrected or paper mode.

    Parameters
    ----------
    n_clusters : number of centres k.
    epsilon : total privacy budget (> 0; ``inf``, noiseless Lloyd iterations, in paper mode only).
    mode : ``"corrected"`` (default, ε-DP end to end) or ``"paper"`` (bug-compatible, not DP);
        see the module docstring.
    bounds_max : public maximum count per cell for corrected mode (default
        :data:`DEFAULT_BOUNDS_MAX`); ignored in paper mode, whose bounds come from the data.
    n_iter : None (default: diffprivlib's rule :func:`calc_iters`, 2 to 7 iterations) or a
        public number of DPLloyd iterations ≥ 1; ε is split evenly over them.
    random_state : None, int, numpy Generator or a :class:`~dptaucc.privacy.Sampler`; the
        single source of randomness (seeded path).
    secure : draw the noise from OpenDP's exact samplers with the operating system's
        randomness (``random_state`` must be None; corrected mode only). For a release you
        publish.

    Attributes (corrected mode, all DP outputs or public)
    -----------------------------------------------------
    cluster_centers_ : released centres (k×d), ``noisy sums / noisy counts``.
    cluster_sizes_ : the last iteration's noisy counts (int64, ≥ 1).
    bounds_ : public (lower, upper) per coordinate; n_iter_, epsilon_count_, epsilon_coord_,
        n_features_in_ : public; row_labels_private_ : False (no DP row labels are released).
    privacy_ledger_, epsilon_spent_ (= ε), delta_spent_ (0).

    Paper mode adds the authors' non-private outputs ``row_labels_``/``labels_`` (relabelled
    0..k'−1), ``n_row_clusters_`` and ``inertia_``; its ``bounds_`` and centres derive from the
    data's min/max, and ``epsilon_spent_`` is inf.

    Methods reading the data you pass (NOT private): ``predict(X)`` and
    ``evaluation_row_labels(X)`` (nearest released centre of each row, clipped to ``bounds_``),
    ``score(X)`` (minus the SSE to those centres), ``fit_predict(X)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.baselines.dp_kmeans import DPKMeans
    >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
    >>> model = DPKMeans(n_clusters=2, epsilon=1.0, random_state=0).fit(X)
    >>> model.cluster_centers_.shape, round(model.epsilon_spent_, 9)
    ((2, 6), 1.0)
    >>> one = DPKMeans(n_clusters=2, epsilon=1.0, n_iter=1, random_state=0).fit(X)
    >>> one.n_iter_, len(one.privacy_ledger_.entries), round(one.epsilon_spent_, 9)
    (1, 2, 1.0)
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": EPSILON,
        "mode": MODE,
        "bounds_max": [None, Interval(Real, 0, None, closed="neither")],
        "n_iter": [None, Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
        "secure": SECURE,
    }
    _domain = METHOD.domain
    _all_zero_outcome = "centres from noise alone (every release is still charged)"


    _release_kinds = {
        "cluster_centers_": DP, "cluster_sizes_": DP,
        "bounds_": PUBLIC, "n_iter_": PUBLIC, "epsilon_count_": PUBLIC,
        "epsilon_coord_": PUBLIC, "n_features_in_": PUBLIC, "row_labels_private_": PUBLIC,
        **LEDGER_ATTRIBUTES,
    }
    # paper mode: bounds read from the data, and the final assignment of the training rows
    _paper_release_kinds = {
        "bounds_": NON_PRIVATE, "cluster_centers_": NON_PRIVATE, "row_labels_": NON_PRIVATE,
        "labels_": NON_PRIVATE, "n_row_clusters_": NON_PRIVATE, "inertia_": NON_PRIVATE,
    }

    def release_kinds(self) -> dict[str, str]:
        """``{attribute: kind}`` for this mode; paper mode (diffprivlib's fit) keeps no
        ``cluster_sizes_``.

        >>> "cluster_sizes_" in DPKMeans(mode="paper").release_kinds()
        False
        """
        kinds = super().release_kinds()
        if self.mode == "paper":
            kinds.pop("cluster_sizes_", None)
        return kinds

    def __init__(self, n_clusters: int = 8, epsilon: float = 1.0, mode: str = "corrected",
                 bounds_max: float | None = None, random_state=None, secure: bool = False,
                 n_iter: int | None = None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.mode = mode
        self.bounds_max = bounds_max
        self.n_iter = n_iter
        self.random_state = random_state
        self.secure = secure

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None) -> DPKMeans:
        """Run DPLloyd on the non-negative matrix X (dense or sparse, n×d)."""
        X = self._check_fit(X)
        epsilon = float(self.epsilon)
        paper = self.mode == "paper"
        # the constraints refused anything but None or a finite number > 0
        bmax = None if paper else float(DEFAULT_BOUNDS_MAX if self.bounds_max is None
                                        else self.bounds_max)
        n, d = X.shape
        k = check_n_clusters(self.n_clusters, n, "n_clusters", "rows")
        iters = calc_iters(epsilon, k, n, d) if self.n_iter is None else int(self.n_iter)
        share_count, share_coord = su_split(epsilon, d, iters)
        if not paper:
            grid = sum_grid(share_coord / 2.0, bmax)  # refuses a hopeless ε before any work
        sampler = self._sampler()
        ledger = PrivacyLedger(budget_epsilon=epsilon, strict=not paper)
        rows = _rows_of(X)
        if paper:
            self._fit_paper(X, rows, k, iters, share_count, share_coord, sampler.rng, ledger)
        else:
            self._fit_corrected(rows, k, iters, share_count / 2.0, share_coord / 2.0, bmax, grid,
                                sampler, ledger)
        self.n_iter_ = iters
        self.n_features_in_ = d
        self.row_labels_private_ = False
        self._set_ledger(ledger)
        self._warn_if_fewer_clusters()
        return self

    def _fit_corrected(self, X, k, iters, eps_count, eps_coord, bmax, grid, sampler,
                       ledger) -> None:
        d = X.shape[1]
        bound_steps = math.ceil(bmax / grid)
        lower, upper = np.zeros(d), np.full(d, bound_steps * grid)
        X_grid = _grid_rows(X, grid, bound_steps)
        x2 = _row_sq_norms(X_grid)
        centers = _init_centers(lower, upper, k, sampler.rng)
        sizes = np.zeros(k, dtype=np.int64)
        for it in range(iters):
            labels = np.argmin(_sq_distances(X_grid, x2, centers), axis=1)
            sizes, sums = corrected_statistics(X_grid, labels, k, bound_steps, grid, eps_count,
                                               eps_coord, sampler, ledger, f"iteration {it + 1}")
            centers = sums * grid / sizes[:, None]
        self.bounds_ = (lower, upper)
        self.cluster_centers_ = centers
        self.cluster_sizes_ = sizes
        self.epsilon_count_, self.epsilon_coord_ = eps_count, eps_coord

    def _fit_paper(self, X_checked, X, k, iters, share_count, share_coord, rng, ledger) -> None:
        d = X.shape[1]
        warnings.warn("Bounds have not been specified and will be calculated on the data "
                      "provided (paper mode, as the reference experiments). This leaks privacy.",
                      PrivacyLeakWarning, stacklevel=3)
        ledger.mark_non_private(
            "bounds", "per-feature min/max read from the data (diffprivlib PrivacyLeakWarning)")
        lower, upper = widen_bounds(*_rows_bounds(X_checked, X))
        # 0.6.4/0.6.6 unpack (N, c·N) as (ε_count, ε_coord): the swapped split
        eps_count, eps_coord = share_coord, share_count
        sens_coord = (upper - lower) / d
        # the data lie within their own min/max: clipping to the bounds changes nothing
        x2 = _rows_sq_norms(X_checked, X)
        centers = _init_centers(lower, upper, k, rng)
        dist = _sq_distances(X, x2, centers)
        labels = np.argmin(dist, axis=1)
        for it in range(iters):
            _charge_paper_iteration(ledger, it, d, eps_count, eps_coord, sens_coord)
            centers = paper_update_centers(X, centers, labels, lower, upper, eps_count,
                                           eps_coord, sens_coord, rng)
            dist = _sq_distances(X, x2, centers)
            labels = np.argmin(dist, axis=1)
        ledger.mark_non_private(
            "final assignment", "labels_ and inertia_: each training row's nearest released "
            "centre and the exact SSE (diffprivlib's outputs)")
        self.bounds_ = (lower, upper)
        self.cluster_centers_ = centers
        self.epsilon_count_, self.epsilon_coord_ = eps_count, eps_coord
        self.inertia_ = float(dist[np.arange(labels.size), labels].sum())
        self.row_labels_ = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        self.labels_ = self.row_labels_
        self.n_row_clusters_ = int(self.row_labels_.max()) + 1

    # ------------------------------------------------- methods on data you hold
    def _distances(self, X) -> np.ndarray:
        """NOT PRIVATE: squared distances of the rows of X, clipped to ``bounds_``, to the
        released centres. Clipping raises implicit zeros to ``z = clip(0, lower, upper)``, so
        each clipped row is z + s with s sparse: ‖z + s − c‖² = ‖s‖² − 2s·(c − z) + ‖c − z‖².
        A dense X (:func:`dptaucc.validation.dense_counts`) that lies within the bounds, as the
        training matrix of a paper-mode fit does, needs no clipping: ‖x − c‖² directly."""
        X = self._check_fitted_input(X, "cluster_centers_")
        lower, upper = self.bounds_
        zero = np.clip(0.0, lower, upper)
        dense = dense_counts(X)
        if dense is not None:
            low, high = _rows_bounds(X, dense)
            if np.all(low >= lower) and np.all(high <= upper):  # nothing to clip: ‖x − c‖²
                return _sq_distances(dense, _rows_sq_norms(X, dense), self.cluster_centers_)
            S = np.clip(dense, lower, upper)
            S -= zero
            return _sq_distances(S, _row_sq_norms(S), self.cluster_centers_ - zero[None, :])
        cols = X.indices
        shifted = np.clip(X.data, lower[cols], upper[cols]) - zero[cols]
        S = sp.csr_matrix((shifted, cols, X.indptr), shape=X.shape)
        return _sq_distances(S, _row_sq_norms(S), self.cluster_centers_ - zero[None, :])

    def predict(self, X) -> np.ndarray:
        """NOT PRIVATE (reads X): index of the nearest released centre for each row of X.

        >>> import numpy as np
        >>> from dptaucc.baselines.dp_kmeans import DPKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
        >>> labels = DPKMeans(n_clusters=2, epsilon=1.0, random_state=0).fit(X).predict(X)
        >>> labels.shape, set(labels.tolist()) <= {0, 1}
        ((20,), True)
        """
        return np.argmin(self._distances(X), axis=1)

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY, not private: the paper's protocol, each row of X to its nearest
        released centre (same as :meth:`predict`).

        >>> import numpy as np
        >>> from dptaucc.baselines.dp_kmeans import DPKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
        >>> model = DPKMeans(n_clusters=2, epsilon=1.0, random_state=0).fit(X)
        >>> bool(np.array_equal(model.evaluation_row_labels(X), model.predict(X)))
        True
        """
        return self.predict(X)

    def score(self, X, y=None) -> float:
        """NOT PRIVATE (reads X): minus the sum of squared distances of the rows of X (clipped
        to ``bounds_``) to their nearest released centre, as scikit-learn's ``KMeans.score``.

        >>> import numpy as np
        >>> from dptaucc.baselines.dp_kmeans import DPKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
        >>> DPKMeans(n_clusters=2, epsilon=1.0, random_state=0).fit(X).score(X) <= 0
        True
        """
        return -float(self._distances(X).min(axis=1).sum())

    def fit_predict(self, X, y=None) -> np.ndarray:
        """Fit, then label the training rows: paper mode returns ``labels_``; corrected mode
        :meth:`predict` (X) — NOT PRIVATE, it reads X after the mechanisms.

        >>> import numpy as np
        >>> from dptaucc.baselines.dp_kmeans import DPKMeans
        >>> X = np.kron(np.eye(2, dtype=int), np.full((10, 3), 4))
        >>> labels = DPKMeans(n_clusters=2, epsilon=1.0, random_state=0).fit_predict(X)
        >>> model = DPKMeans(n_clusters=2, epsilon=1.0, random_state=0).fit(X)
        >>> bool(np.array_equal(labels, model.predict(X)))  # corrected mode: predict after the fit
        True
        """
        self.fit(X, y)
        return self.labels_ if self.mode == "paper" else self.predict(X)
