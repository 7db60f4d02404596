"""Neighbouring pairs (D, D' = D + e_u e_vᵀ) that stress clustering methods where they are weak.

Every pair is small (a fit takes milliseconds) and planted with ``n_clusters`` = 2 groups of
rows, so a method's "number of clusters" parameter has an obvious value. Each builder is
deterministic (no randomness, or a fixed ``seed``).

========================  ==========================================================
pair                      what changes between D and D'
========================  ==========================================================
``moving_row``            a row balanced between the two row clusters leans to one
``empty_cluster``         all rows identical in D (any 2-clustering has an empty
                          cluster); one row differs in D'
``new_column_maximum``    the cell holding its column's (and the matrix's) maximum grows:
                          bounds read from the data move
``all_zero_row``          a row with no counts in D gets one count
``all_zero_column``       a column with no counts in D gets one count
``all_zero_matrix``       D has no counts at all (inputs some code refuses)
``high_dimensional``      sparse rows in many columns (sensitivities that scale with d)
``replaced_row``          (row-level relation) row u replaced: B counts in every column
                          of one block in D, of the other block in D'
``row_at_bound``          (row-level relation) all-zero D, row u at the bound B in D'
``added_row``             (add/remove relation) D' is D plus one row
``moved_count``           (row-level relation) row u's one count moves from column 0
                          to column 1: after a per-row L2 normalisation, e₀ becomes e₁
========================  ==========================================================

:func:`other_form` gives any pair a twin in the other input form, D' − D (the neighbouring
relation) unchanged: a sparse pair *filled* (one count more in every cell), a pair at least
half full *widened* (zero columns appended). Estimators that process inputs at least
:data:`DENSE_FILL` full as dense arrays (the row embeddings of DPM and colored noise) take the
other path on the twin.

:func:`replaced_row` is a :class:`RowPair`: neighbours under "replace one row", the relation
of methods that say they protect whole rows (DP-KMeans), which covers the cell relation.
Pairs made for one method's worst case live beside that method, in its audit module (e.g.
:func:`dptaucc.baselines.dp_kmeans_audit.row_across_boundary`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

__all__ = [
    "NeighbouringPair", "moving_row", "empty_cluster", "new_column_maximum", "all_zero_row",
    "all_zero_column", "all_zero_matrix", "high_dimensional", "PAIRS", "make_pair", "RowPair",
    "replaced_row", "row_at_bound", "added_row", "two_blocks", "fill", "widen", "other_form",
    "DENSE_FILL", "moved_count",
]

#: estimators process an input at least this full as a dense array (DPM's and colored noise's
#: row embeddings; :data:`dptaucc.baselines.dpm.rows.DENSE_FILL` is checked to equal it)
DENSE_FILL = 0.5


@dataclass(frozen=True)
class NeighbouringPair:
    """D, D' = D + one count in cell (u, v), and what the pair is meant to stress.

    >>> pair = make_pair("moving_row")
    >>> diff = (pair.D_prime - pair.D).tocoo()  # exactly one cell, by one count
    >>> list(zip(diff.row.tolist(), diff.col.tolist(), diff.data.tolist())), pair.cell
    ([(12, 0, 1)], (12, 0))
    >>> pair.u, pair.v, pair.n_clusters
    (12, 0, 2)
    """

    name: str
    D: sp.csr_matrix
    cell: tuple[int, int]
    n_clusters: int
    description: str

    @cached_property
    def D_prime(self) -> sp.csr_matrix:
        u, v = self.cell
        bump = sp.csr_matrix(([1], ([u], [v])), shape=self.D.shape, dtype=self.D.dtype)
        return sp.csr_matrix(self.D + bump)

    @property
    def u(self) -> int:
        return self.cell[0]

    @property
    def v(self) -> int:
        return self.cell[1]


@dataclass(frozen=True)
class RowPair:
    """D and D' = D with row u replaced (row-level neighbours).

    >>> import numpy as np
    >>> pair = replaced_row()
    >>> changed = np.flatnonzero(abs(pair.D_prime - pair.D).sum(axis=1))
    >>> changed.tolist() == [pair.u], pair.cell == (pair.u, 0)  # only row u differs
    (True, True)
    """

    name: str
    D: sp.csr_matrix
    D_prime: sp.csr_matrix
    u: int
    n_clusters: int
    description: str

    @property
    def cell(self) -> tuple[int, int]:
        return self.u, 0

    @property
    def v(self) -> int:
        return 0


def replaced_row(n_per_cluster: int = 6, n_cols: int = 8, value: int = 2,
                 bound: int = 5) -> RowPair:
    """Two blocks plus row u: ``bound`` counts in every column of the first block's half in
    D, of the second block's half in D'. With released centres near the blocks, row u changes
    cluster and moves every sum of both clusters it touches by the public bound.

    >>> pair = replaced_row(n_per_cluster=3, n_cols=4, bound=5)
    >>> pair.D.toarray()[pair.u].tolist(), pair.D_prime.toarray()[pair.u].tolist()
    ([5, 5, 0, 0], [0, 0, 5, 5])
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    half = n_cols // 2
    a, b = np.zeros((1, n_cols), dtype=np.int64), np.zeros((1, n_cols), dtype=np.int64)
    a[0, :half], b[0, half:] = bound, bound
    D = sp.csr_matrix(np.vstack([X, a]))
    Dp = sp.csr_matrix(np.vstack([X, b]))
    return RowPair("replaced_row", D, Dp, 2 * n_per_cluster, 2,
                   "row u moves from one block to the other at the public bound (row-level)")


def row_at_bound(n_rows: int = 12, n_cols: int = 8, bound: int = 5) -> RowPair:
    """(row-level relation) D is the all-zero matrix; in D' row u is ``bound`` in every
    column. Every row of D is one point, so one cluster of D is empty; in D' row u may fill it.

    >>> pair = row_at_bound(n_rows=4, n_cols=3, bound=5)
    >>> pair.D.nnz, pair.D_prime.toarray().tolist()
    (0, [[0, 0, 0], [0, 0, 0], [0, 0, 0], [5, 5, 5]])
    """
    D = np.zeros((n_rows, n_cols), dtype=np.int64)
    Dp = D.copy()
    Dp[n_rows - 1] = bound
    return RowPair("row_at_bound", sp.csr_matrix(D), sp.csr_matrix(Dp), n_rows - 1, 2,
                   "all-zero D; row u at the public bound in every column in D' (row-level)")


def added_row(n_per_cluster: int = 200, n_cols: int = 8, value: int = 2) -> RowPair:
    """(add/remove relation) Two blocks; D' has one more row, ``value`` counts in column 0.
    After a per-record normalisation the new row has norm 1, so it moves its cluster's
    released (sum, count) block by (y, 1) with ‖y‖ = 1: the largest change one added row can
    make, the one the colored-noise covariance is calibrated for.

    >>> pair = added_row(n_per_cluster=3, n_cols=4)
    >>> pair.D.shape, pair.D_prime.shape, pair.D_prime.toarray()[-1].tolist()
    ((6, 4), (7, 4), [2, 0, 0, 0])
    >>> bool((pair.D_prime[:6] != pair.D).nnz == 0)  # the old rows are unchanged
    True
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    row = np.zeros((1, n_cols), dtype=np.int64)
    row[0, 0] = value
    return RowPair("added_row", sp.csr_matrix(X), sp.csr_matrix(np.vstack([X, row])),
                   2 * n_per_cluster, 2, "one row added (add/remove relation)")


def moved_count(n_per_cluster: int = 6, n_cols: int = 8, value: int = 2,
                name: str = "moved_count") -> RowPair:
    """(row-level relation) Two blocks plus row u: one count in column 0 in D, in column 1 in
    D'. Scaled to unit L2 norm the two versions of u are the orthogonal unit vectors e₀ and
    e₁: the largest move of one non-negative normalised row (‖e₀ − e₁‖ = √2), all of it
    along e₀ − e₁.

    >>> pair = moved_count(n_per_cluster=2, n_cols=4)
    >>> pair.D.toarray()[pair.u].tolist(), pair.D_prime.toarray()[pair.u].tolist()
    ([1, 0, 0, 0], [0, 1, 0, 0])
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    a, b = np.zeros((1, n_cols), dtype=np.int64), np.zeros((1, n_cols), dtype=np.int64)
    a[0, 0], b[0, 1] = 1, 1
    return RowPair(name, sp.csr_matrix(np.vstack([X, a])), sp.csr_matrix(np.vstack([X, b])),
                   2 * n_per_cluster, 2,
                   "row u's one count moves from column 0 to column 1 (row-level)")


def _pair(name: str, dense: np.ndarray, cell: tuple[int, int], description: str,
          n_clusters: int = 2) -> NeighbouringPair:
    D = sp.csr_matrix(np.asarray(dense, dtype=np.int64))
    D.eliminate_zeros()
    return NeighbouringPair(name, D, (int(cell[0]), int(cell[1])), n_clusters, description)


def fill(X) -> sp.csr_matrix:
    """X with one more count in every cell (a CSR matrix): every cell non-zero.

    >>> fill(np.eye(2, dtype=int)).toarray().tolist()
    [[2, 1], [1, 2]]
    """
    dense = X.toarray() if sp.issparse(X) else np.asarray(X)
    return sp.csr_matrix(dense + np.ones_like(dense))


def widen(X) -> sp.csr_matrix:
    """X with ``d + 1`` all-zero columns appended (a CSR matrix): less than half full.

    >>> widen(np.ones((2, 2), dtype=int)).toarray().tolist()
    [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0]]
    """
    X = sp.csr_matrix(X)
    return sp.csr_matrix(sp.hstack([X, sp.csr_matrix((X.shape[0], X.shape[1] + 1),
                                                      dtype=X.dtype)]))


def other_form(pair: NeighbouringPair | RowPair) -> NeighbouringPair | RowPair:
    """The pair's twin in the other input form, with D' − D (the relation) unchanged: a pair
    less than half full gets one count more in every cell (``"<name> (filled)"``: estimators
    that process inputs at least :data:`DENSE_FILL` full as dense arrays take that path); a
    fuller one gets d + 1 zero columns appended (``"<name> (widened)"``: the sparse path).

    >>> pair = other_form(make_pair("all_zero_row"))
    >>> pair.name, pair.D.nnz == pair.D.shape[0] * pair.D.shape[1]
    ('all_zero_row (filled)', True)
    >>> diff = (pair.D_prime - pair.D).tocoo()  # still one cell, by one count
    >>> list(zip(diff.row.tolist(), diff.col.tolist(), diff.data.tolist())) == [(*pair.cell, 1)]
    True
    >>> rows = other_form(added_row(n_per_cluster=3))  # half full: widened, its extra row kept
    >>> rows.name, rows.D.shape, rows.D_prime.shape, rows.D_prime.toarray()[-1].tolist()[:9]
    ('added_row (widened)', (6, 17), (7, 17), [2, 0, 0, 0, 0, 0, 0, 0, 0])
    """
    n, d = pair.D.shape
    dense = pair.D.nnz >= DENSE_FILL * n * d
    change, what = (widen, "widened") if dense else (fill, "filled")
    name = f"{pair.name} ({what})"
    how = "d + 1 zero columns appended" if dense else "every cell one count more"
    description = f"{pair.description}; {how} (the other input form)"
    if isinstance(pair, NeighbouringPair):
        return NeighbouringPair(name, change(pair.D), pair.cell, pair.n_clusters, description)
    return dataclasses.replace(pair, name=name, D=change(pair.D), D_prime=change(pair.D_prime),
                               description=description)


def two_blocks(n_per_cluster: int, n_cols: int, value: int) -> np.ndarray:
    """Two row clusters on two disjoint halves of the columns.

    >>> two_blocks(2, 4, 3).tolist()
    [[3, 3, 0, 0], [3, 3, 0, 0], [0, 0, 3, 3], [0, 0, 3, 3]]
    """
    if n_per_cluster < 2 or n_cols < 4:
        raise ValueError("need n_per_cluster >= 2 and n_cols >= 4")
    half = n_cols // 2
    X = np.zeros((2 * n_per_cluster, n_cols), dtype=np.int64)
    X[:n_per_cluster, :half] = value
    X[n_per_cluster:, half:] = value
    return X


def moving_row(n_per_cluster: int = 6, n_cols: int = 8, value: int = 2) -> NeighbouringPair:
    """Two blocks plus a last row with one count in each half: D' adds one count on the first
    half, so the row leans to the first cluster (label events on that row).

    >>> pair = moving_row(n_per_cluster=2, n_cols=4)
    >>> pair.D.toarray()[-1].tolist(), pair.D_prime.toarray()[-1].tolist()
    ([1, 0, 1, 0], [2, 0, 1, 0])
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    row = np.zeros((1, n_cols), dtype=np.int64)
    row[0, 0] = row[0, n_cols // 2] = 1
    return _pair("moving_row", np.vstack([X, row]), (2 * n_per_cluster, 0),
                 "a row balanced between the two row clusters leans to the first in D'")


def empty_cluster(n_rows: int = 12, n_cols: int = 6, value: int = 2) -> NeighbouringPair:
    """Every row of D is the same point; D' moves the last row by one count in the last
    column. With k = 2, every clustering of D leaves one cluster empty.

    >>> import numpy as np
    >>> pair = empty_cluster(n_rows=4, n_cols=3)
    >>> len(np.unique(pair.D.toarray(), axis=0)), len(np.unique(pair.D_prime.toarray(), axis=0))
    (1, 2)
    """
    if n_rows < 2 or n_cols < 2:
        raise ValueError("need n_rows >= 2 and n_cols >= 2")
    X = np.zeros((n_rows, n_cols), dtype=np.int64)
    X[:, 0] = value
    return _pair("empty_cluster", X, (n_rows - 1, n_cols - 1),
                 "all rows identical in D (a 2-clustering has an empty cluster); one differs "
                 "in D'")


def new_column_maximum(n_per_cluster: int = 6, n_cols: int = 8,
                       value: int = 2) -> NeighbouringPair:
    """Two blocks of ``value`` counts; the changed cell holds ``value + 1``, the maximum of its
    column and of the matrix, and grows to ``value + 2`` in D'.

    >>> pair = new_column_maximum(value=2)
    >>> int(pair.D.max()), int(pair.D[pair.cell]), int(pair.D_prime.max())
    (3, 3, 4)
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    X[0, 0] = value + 1
    return _pair("new_column_maximum", X, (0, 0),
                 "the column (and global) maximum grows by one: data-derived bounds move")


def all_zero_row(n_per_cluster: int = 6, n_cols: int = 8, value: int = 2) -> NeighbouringPair:
    """Two blocks plus a last row with no counts in D and one count in D'.

    >>> pair = all_zero_row()
    >>> int(pair.D[pair.u].sum()), int(pair.D_prime[pair.u].sum())
    (0, 1)
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    X = np.vstack([X, np.zeros((1, n_cols), dtype=np.int64)])
    return _pair("all_zero_row", X, (2 * n_per_cluster, 0),
                 "a row with no counts in D gets one count in D'")


def all_zero_column(n_per_cluster: int = 6, n_cols: int = 8, value: int = 2) -> NeighbouringPair:
    """Two blocks plus a last column with no counts in D and one count (row 0) in D'.

    >>> pair = all_zero_column(n_cols=8)
    >>> pair.cell, int(pair.D[:, 8].sum()), int(pair.D_prime[:, 8].sum())
    ((0, 8), 0, 1)
    """
    X = two_blocks(n_per_cluster, n_cols, value)
    X = np.hstack([X, np.zeros((X.shape[0], 1), dtype=np.int64)])
    return _pair("all_zero_column", X, (0, n_cols),
                 "a column with no counts in D gets one count in D'")


def all_zero_matrix(n_rows: int = 8, n_cols: int = 6) -> NeighbouringPair:
    """D has no counts at all; D' has one.

    >>> pair = all_zero_matrix(n_rows=3, n_cols=2)
    >>> pair.D.nnz, pair.D_prime.toarray().tolist()
    (0, [[1, 0], [0, 0], [0, 0]])
    """
    return _pair("all_zero_matrix", np.zeros((n_rows, n_cols), dtype=np.int64), (0, 0),
                 "D is the all-zero matrix (a valid input), D' has one count")


def high_dimensional(n_per_cluster: int = 6, n_cols: int = 200, rate: float = 0.5,
                     seed: int = 0) -> NeighbouringPair:
    """Sparse Poisson rows in ``n_cols`` columns, each cluster using its own half of the
    columns; the changed cell is a zero of the first row in that row's own half.

    >>> pair = high_dimensional(n_per_cluster=3, n_cols=40, seed=1)
    >>> u, v = pair.cell
    >>> pair.D.shape, int(pair.D[u, v]), v < 20  # a zero of row 0's own half
    ((6, 40), 0, True)
    >>> bool((make_pair("high_dimensional", n_per_cluster=3, n_cols=40, seed=1).D
    ...       != pair.D).nnz == 0)  # deterministic
    True
    """
    rng = np.random.default_rng(seed)
    X = np.zeros((2 * n_per_cluster, n_cols), dtype=np.int64)
    half = n_cols // 2
    X[:n_per_cluster, :half] = rng.poisson(rate, size=(n_per_cluster, half))
    X[n_per_cluster:, half:] = rng.poisson(rate, size=(n_per_cluster, n_cols - half))
    v = int(np.flatnonzero(X[0, :half] == 0)[0])
    return _pair("high_dimensional", X, (0, v),
                 f"sparse rows in {n_cols} columns (sensitivities that grow with d)")


#: builders by name, each with its default sizes
PAIRS = {f.__name__: f for f in (moving_row, empty_cluster, new_column_maximum, all_zero_row,
                                 all_zero_column, all_zero_matrix, high_dimensional)}


def make_pair(name: str, **kwargs) -> NeighbouringPair:
    """The pair ``name`` of :data:`PAIRS` (keyword arguments go to its builder).

    >>> make_pair("all_zero_row", n_per_cluster=3).D.shape
    (7, 8)
    >>> make_pair("no_such_pair")
    Traceback (most recent call last):
    ...
    ValueError: unknown pair 'no_such_pair'; known: [...]
    """
    if name not in PAIRS:
        raise ValueError(f"unknown pair {name!r}; known: {sorted(PAIRS)}")
    return PAIRS[name](**kwargs)
