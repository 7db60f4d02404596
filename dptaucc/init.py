"""Blind (data-independent) block initialisation of DP-τCC ("RandomMatrix", paper §4.2).

The authors' ``CreateMatrix`` builds a dense n×m 0/1 matrix ``M`` made of block co-clusters
following a pattern ``P`` (K0×L0), flips exactly ``round(0.01·n·m)`` distinct cells, then shuffles
rows and columns. DP-τCC only ever uses the n×L0 aggregate ``S0 = M C0``. We build ``S0`` directly:
``S0[i,l] = P[x_i,l]·|C0_l|`` and each flipped cell (i, j) adds ``+1`` or ``−1`` to
``S0[i, y_j]``. Memory is O(n·L0 + #flips), never n·m. Nothing here reads the data.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["block_sizes", "pattern_matrix", "BlindInit", "blind_block_init", "flip_counts",
           "binomial_cdf", "binomial_by_inversion"]

# numpy's multivariate_hypergeometric(method="marginals") needs sum(colors) < 1e9.
MARGINALS_LIMIT = 10**9


def block_sizes(N: int, G: int) -> np.ndarray:
    """CreateMatrix's f(N, G): alternate round(N/G), ⌊N/G⌋; the last block takes the remainder.

    Python ``round`` (half to even), as the reference. E.g. f(475, 4) = [119, 118, 119, 119].

    >>> block_sizes(475, 4).tolist()
    [119, 118, 119, 119]
    >>> int(block_sizes(10, 3).sum())  # the blocks cover every row
    10
    >>> block_sizes(3, 4)
    Traceback (most recent call last):
    ...
    ValueError: need 1 <= G <= N, got N=3, G=4
    """
    if not (1 <= G <= N):
        raise ValueError(f"need 1 <= G <= N, got N={N}, G={G}")
    a, b = round(N / G), N // G
    sizes = [a if i % 2 == 0 else b for i in range(G)]
    sizes[-1] = N - sum(sizes[:-1])
    if sizes[-1] < 1:  # cannot happen for G <= N, kept as a guard
        raise ValueError(f"block sizes for N={N}, G={G} leave an empty last block")
    return np.asarray(sizes, dtype=np.intp)


def pattern_matrix(K: int, L: int) -> np.ndarray:
    """The K×L binary block pattern P of CreateMatrix.

    With s = min(K, L), S = max(K, L): the s unit vectors of {0,1}^s, then the first S−s vectors
    that are neither zero nor unit (lexicographic order of ``itertools.product``), stable-sorted
    by Hamming weight; rows of P if K >= L, columns if L > K. For K = L this is the identity.
    The reference raises when fewer than S patterns exist (S >= 2^s); we then cycle through the
    available patterns instead (documented extension, e.g. K = 1).

    >>> pattern_matrix(3, 3).tolist()  # K = L: the identity
    [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    >>> pattern_matrix(3, 2).tolist()  # the two unit rows, then (1, 1)
    [[1, 0], [0, 1], [1, 1]]
    >>> bool((pattern_matrix(2, 3) == pattern_matrix(3, 2).T).all())
    True
    """
    s, S = min(K, L), max(K, L)
    units = [tuple(int(i == j) for j in range(s)) for i in range(s)]
    extra = [v for v in itertools.product((0, 1), repeat=s) if sum(v) > 1]
    pool = units + extra
    chosen = [pool[i % len(pool)] for i in range(S)]
    chosen = sorted(chosen, key=sum)  # stable
    P = np.asarray(chosen, dtype=np.int8)
    return P if K >= L else P.T


@dataclass(frozen=True)
class BlindInit:
    """Result of the blind initialisation (all data-independent).

    >>> import numpy as np
    >>> init = blind_block_init(8, 6, 2, 3, np.random.default_rng(0), noise=0.0)
    >>> # no flips: S0[i, l] = P[x_i, l]·|C0_l|, here with blocks of two columns
    >>> init.n_flips, bool(np.array_equal(init.S0, pattern_matrix(2, 3)[init.row_labels] * 2))
    (0, True)
    >>> sorted(np.bincount(init.col_labels).tolist())
    [2, 2, 2]
    """

    S0: np.ndarray        # n×L0 aggregate M C0 (float64, column by column: S0.T is contiguous)
    row_labels: np.ndarray  # x: synthetic row clusters R⁽⁰⁾ (n,)
    col_labels: np.ndarray  # y: synthetic column clusters C⁽⁰⁾ (m,)
    n_flips: int


def blind_block_init(
    n: int, m: int, K: int, L: int, rng: np.random.Generator, noise: float = 0.01,
) -> BlindInit:
    """Build ``S0 = M C0`` of CreateMatrix(n, m, K, L, noise) after the model's shuffles.

    The reference flips a uniformly random set of exactly ``F = round(noise·n·m)`` distinct cells
    (``rng.choice(n*m, F, replace=False)``). S0 only depends on how many flipped cells fall in
    each (row i, column block l) group of ``|C0_l|`` cells, and for a uniform F-subset those
    counts follow the multivariate hypergeometric law with these n·L0 group sizes. We draw the
    counts from that law directly (``method="marginals"``: O(n·L0) time and memory), which gives
    S0 exactly the reference's distribution without materialising — or even listing — n·m
    cells (``rng.choice`` takes ~0.13 s for 752k flips on reviews; this takes ~6 ms).
    Rows and columns are then permuted (rows of S0 and x, and y), as DP-τCC does with its own
    generator after CreateMatrix. S0 is built a block of rows at a time from lookup tables
    (:func:`_s0_blocks`), held as small integers while its rows are shuffled, and returned
    column by column, ready for the column weights of its transpose.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.init import blind_block_init
    >>> init = blind_block_init(6, 4, 2, 2, np.random.default_rng(0))
    >>> init.S0.shape, init.row_labels.shape
    ((6, 2), (6,))
    """
    row_sizes = block_sizes(n, K)
    x = np.repeat(np.arange(K, dtype=np.intp), row_sizes)
    y = np.repeat(np.arange(L, dtype=np.intp), block_sizes(m, L))
    P = pattern_matrix(K, L)
    sizes = np.bincount(y, minlength=L)
    sign = 1.0 - 2.0 * P                         # a flipped 0 adds one, a flipped 1 removes one
    # Σ_l sign·base per row block: flips = sign·(S0 − base) with base = P·|C0_l|
    sign_base = (sign * (P * sizes)).sum(axis=1)
    # S0's entries are whole numbers in [0, max |C0_l|]: held as small integers until the end
    S0 = np.empty((n, L), dtype=np.int16 if sizes.max() < 2**15 else np.int32)
    ones = np.ones(min(ROWS_PER_DRAW, n))
    n_flips = 0.0
    for start, stop, values in _s0_blocks(m, row_sizes, y, P, noise, rng):
        # whole numbers below 2⁵³: these BLAS sums are exact in any order
        k = x[start]
        n_flips += (ones[:stop - start] @ values) @ sign[k] - (stop - start) * sign_base[k]
        S0[start:stop] = values
    row_perm = rng.permutation(n)
    col_perm = rng.permutation(m)
    # S0[row_perm], gathered on the small integers, laid out column by column (S0.T contiguous)
    S0 = np.ascontiguousarray(S0.take(row_perm, axis=0).T).astype(float).T
    return BlindInit(S0=S0, row_labels=x[row_perm], col_labels=y[col_perm],
                     n_flips=int(n_flips))


def flip_counts(
    n: int, m: int, y: np.ndarray, L: int, noise: float, rng: np.random.Generator,
) -> np.ndarray:
    """Number of flipped cells in each (row i, column block l) group, n×L, in O(n·L).

    The reference flips a uniform set of exactly ``round(noise·n·m)`` cells: the counts per
    group of |C0_l| cells are then multivariate hypergeometric, drawn exactly while n·m is
    below numpy's limit (1e9 cells). Above it every cell is flipped independently with
    probability ``noise`` (Binomial(|C0_l|, noise) per group): the same flip rate, a total
    that varies by about √(noise·n·m) flips (relative 1e-5 at that size) — still drawn per
    row and column block, never per cell, and still data-independent. Those binomial counts
    come from :func:`binomial_by_inversion`, one uniform per group (numpy's own sampler costs
    ~180 ns per group, 0.9 s at n·L = 5e6).

    >>> import numpy as np
    >>> y = np.array([0, 0, 0, 1, 1, 2])
    >>> flips = flip_counts(10, 6, y, 3, 0.1, np.random.default_rng(0))
    >>> flips.shape, int(flips.sum())  # exactly round(0.1·10·6) flips
    ((10, 3), 6)
    >>> bool((flips <= np.bincount(y)).all())  # never more flips than cells in a group
    True
    """
    flips = np.empty((n, L))
    no_pattern = np.zeros((1, L), dtype=np.int8)  # one row block, every bit 0: values = flips
    for start, stop, values in _s0_blocks(m, [n], y, no_pattern, noise, rng):
        flips[start:stop] = values
    return flips


def _s0_blocks(
    m: int, row_sizes: Sequence[int], y: np.ndarray, P: np.ndarray, noise: float,
    rng: np.random.Generator,
) -> Iterator[tuple[int, int, np.ndarray]]:
    """S0 before the shuffles, a block of at most ROWS_PER_DRAW rows at a time.

    Row block k has ``row_sizes[k]`` rows (x_i = k). Yields (start, stop, values) with
    values[i, l] = P[x_i, l]·|C0_l| + (1 − 2P[x_i, l])·f_il for the rows start..stop−1, f_il
    the flip count of :func:`flip_counts` (the same draws in the same order), whole numbers
    as floats; a block never spans two row blocks and is only valid until the next one is
    drawn. Each value is read off a table per (|C0_l|, P bit): by flip count for the
    hypergeometric counts, by guide bucket of the uniform for the binomial ones (the few
    unsettled buckets search the CDF): one lookup for a whole block of rows.
    """
    n, L = int(np.sum(row_sizes)), P.shape[1]
    sizes = np.bincount(y, minlength=L)
    # the (|C0_l|, P bit) pairs that occur; class_of[k, l] is the pair of row block k, column l
    pairs = np.stack([np.broadcast_to(sizes, P.shape), P], axis=-1).reshape(-1, 2)
    classes, class_of = np.unique(pairs, axis=0, return_inverse=True)
    class_of = class_of.reshape(P.shape)
    class_size, class_bit = classes[:, 0], classes[:, 1]
    class_sign, class_base = 1.0 - 2.0 * class_bit, (class_bit * class_size).astype(float)

    binomial = n * m >= MARGINALS_LIMIT
    if binomial:
        inversions = {int(size): _BinomialInversion(int(size), noise)
                      for size in np.unique(class_size)}
        guides = [inversions[int(size)].guide for size in class_size]
        tables = [np.where(guide < 0, -1.0, guide * sign + base)
                  for guide, sign, base in zip(guides, class_sign, class_base, strict=True)]
    else:
        n_flips = int(round(noise * n * m))
        if n_flips == 0:
            counts = np.zeros((n, L), dtype=np.intp)
        else:
            capacity = np.tile(sizes, n)
            counts = rng.multivariate_hypergeometric(capacity, n_flips,
                                                     method="marginals").reshape(n, L)
        tables = [np.arange(size + 1) * sign + base
                  for size, sign, base in zip(class_size, class_sign, class_base, strict=True)]
    starts = np.cumsum([0] + [len(table) for table in tables[:-1]])
    table = np.concatenate(tables)
    # buffers reused from block to block: fresh temporaries of this size cost page faults
    block_rows = min(ROWS_PER_DRAW, n)
    uniform_block, index_block = np.empty((block_rows, L)), np.empty((block_rows, L), np.intp)
    value_block = np.empty((block_rows, L))
    bounds = np.cumsum([0, *row_sizes]).tolist()
    for k in range(len(row_sizes)):
        lo, hi = bounds[k], bounds[k + 1]
        offsets = np.tile(starts[class_of[k]], (min(ROWS_PER_DRAW, hi - lo), 1))
        block_classes = np.unique(class_of[k]).tolist()
        for start in range(lo, hi, ROWS_PER_DRAW):  # the uniforms of one draw of (n, L)
            stop = min(start + ROWS_PER_DRAW, hi)
            rows = stop - start
            index, values = index_block[:rows], value_block[:rows]
            if binomial:
                uniforms = rng.random(out=uniform_block[:rows])
                np.multiply(uniforms, GUIDE_BUCKETS, out=values)
                np.copyto(index, values, casting="unsafe")  # the bucket ⌊U·GUIDE_BUCKETS⌋
            else:
                np.copyto(index, counts[start:stop])
            index += offsets[:rows]
            table.take(index, out=values, mode="clip")
            if binomial:
                cells = values.reshape(-1)
                unsettled = np.flatnonzero(cells < 0)
                if unsettled.size:
                    cell_class = class_of[k][unsettled % L]
                    for c in block_classes:
                        at = unsettled[cell_class == c]
                        draws = inversions[int(class_size[c])].search(uniforms.reshape(-1)[at])
                        cells[at] = draws * class_sign[c] + class_base[c]
            yield start, stop, values


#: rows of S0 drawn at a time by :func:`_s0_blocks` (a block stays in cache)
ROWS_PER_DRAW = 1 << 13


#: buckets of the guide table of :func:`binomial_by_inversion` (a power of 2; any size gives
#: the same draws, more buckets leave fewer draws to the binary search)
GUIDE_BUCKETS = 1 << 14


def binomial_cdf(trials: int, p: float) -> np.ndarray:
    """P(X ≤ k), k = 0..trials, of Binomial(trials, p), 0 < p < 1: the probabilities by the
    ratio recurrence P(k+1)/P(k) = (trials−k)/(k+1) · p/(1−p) outward from the mode (each a
    product of at most ``trials`` ratios, relative error below trials·2⁻⁵³), normalised.

    >>> import numpy as np
    >>> from scipy import stats
    >>> cdf = binomial_cdf(20, 0.3)
    >>> bool(np.allclose(cdf, stats.binom.cdf(np.arange(21), 20, 0.3))), round(float(cdf[-1]), 12)
    (True, 1.0)
    """
    k = np.arange(trials + 1, dtype=float)
    mode = int(np.floor((trials + 1) * p))
    mode = min(mode, trials)
    odds = p / (1.0 - p)
    pmf = np.ones(trials + 1)
    up = (trials - k[mode:-1]) / (k[mode:-1] + 1) * odds          # P(k+1)/P(k), k >= mode
    pmf[mode + 1:] = np.cumprod(up)
    down = (k[1:mode + 1] / (trials - k[1:mode + 1] + 1)) / odds  # P(k-1)/P(k), k <= mode
    pmf[:mode] = np.cumprod(down[::-1])[::-1]
    return np.cumsum(pmf / pmf.sum())


def binomial_by_inversion(trials: int, p: float, uniforms: np.ndarray) -> np.ndarray:
    """Binomial(trials, p) variates as floats, one per uniform U: the number of k with
    P(X ≤ k) ≤ U (inversion of :func:`binomial_cdf`; exact up to its rounding, values whose
    tail probability is below 2⁻⁵³ are not drawn).

    >>> import numpy as np
    >>> binomial_by_inversion(10, 0.5, np.array([0.0, 0.999999])).tolist()  # the two ends
    [0.0, 10.0]
    >>> draws = binomial_by_inversion(40, 0.25, np.random.default_rng(0).random(20000))
    >>> bool(abs(draws.mean() - 10.0) < 0.1), bool(abs(draws.var() - 7.5) < 0.3)
    (True, True)
    """
    return _BinomialInversion(trials, p)(uniforms)


class _BinomialInversion:
    """:func:`binomial_by_inversion` for one (trials, p): a guide table of GUIDE_BUCKETS
    buckets of U settles most draws with one lookup; the rest search the CDF."""

    def __init__(self, trials: int, p: float):
        self.trials, self.p = trials, p
        if p <= 0.0 or trials == 0:
            self.guide = np.zeros(GUIDE_BUCKETS)
        elif p >= 1.0:
            self.guide = np.full(GUIDE_BUCKETS, float(trials))
        else:
            self.cdf = binomial_cdf(trials, p)
            at_edge = np.searchsorted(self.cdf, np.arange(GUIDE_BUCKETS + 1) / GUIDE_BUCKETS,
                                      side="right")
            # the draw of every U in bucket g when the bucket's two edges agree, else -1
            settled = np.minimum(at_edge[:-1], trials).astype(float)
            self.guide = np.where(at_edge[:-1] == at_edge[1:], settled, -1.0)

    def search(self, uniforms: np.ndarray) -> np.ndarray:
        """The draws of uniforms whose bucket is not settled: a binary search of the CDF."""
        return np.minimum(np.searchsorted(self.cdf, uniforms, side="right"),
                          self.trials).astype(float)

    def __call__(self, uniforms: np.ndarray) -> np.ndarray:
        if self.p <= 0.0 or self.trials == 0:
            return np.zeros(np.shape(uniforms))
        if self.p >= 1.0:
            return np.full(np.shape(uniforms), float(self.trials))
        draws = self.guide[(uniforms * GUIDE_BUCKETS).astype(np.intp)]
        unsettled = draws < 0
        draws[unsettled] = self.search(uniforms[unsettled])
        return draws
