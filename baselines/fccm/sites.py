"""Simulated sites of the collaborative FCCM: each holds one column block privately.

A :class:`Site` exposes only what Honda et al. (2015) §5.2 lets it compute from its own block
and the broadcast object memberships U: its object aggregates A^t = W^t R^tᵀ (sent only through
the masked secure sum), its local item update W^t = softmax_j(U R^t / λ_w^t) (eq. 3, kept
private) and its local part of the objective (eq. 1).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

from dptaucc.objective import contingency_table

from .core import item_aggregates, item_update, object_aggregates

__all__ = ["Site", "split_columns"]


def split_columns(n_cols: int, n_sites: int, column_split=None,
                  rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """Column indices held by each site.

    ``column_split`` may be None (contiguous blocks of near-equal size, in column order),
    ``"random"`` (a random partition into near-equal blocks, drawn from ``rng``), an array of
    ``n_cols`` site ids in 0..n_sites-1, or a list of ``n_sites`` disjoint index arrays covering
    every column. Every site must hold at least one column.

    >>> import numpy as np
    >>> [b.tolist() for b in split_columns(7, 3)]
    [[0, 1, 2], [3, 4], [5, 6]]
    >>> [b.tolist() for b in split_columns(4, 3, column_split=np.array([2, 0, 1, 0]))]
    [[1, 3], [2], [0]]
    >>> blocks = split_columns(9, 3, "random", np.random.default_rng(0))
    >>> sorted(np.concatenate(blocks).tolist()) == list(range(9))  # a partition
    True
    >>> split_columns(9, 2)
    Traceback (most recent call last):
    ...
    ValueError: n_sites must be >= 3 for the masked secure sum, got 2
    """
    if isinstance(n_sites, bool) or not isinstance(n_sites, numbers.Integral):
        raise TypeError(f"n_sites must be an int, got {type(n_sites).__name__}")
    if n_sites < 3:
        raise ValueError(f"n_sites must be >= 3 for the masked secure sum, got {n_sites}")
    if n_sites > n_cols:
        raise ValueError(f"n_sites={n_sites} is larger than the number of columns "
                         f"(n_features={n_cols})")
    if column_split is None:
        return [np.asarray(b, dtype=np.intp) for b in np.array_split(np.arange(n_cols), n_sites)]
    if isinstance(column_split, str):
        if column_split != "random":
            raise ValueError(f"column_split must be None, 'random', site ids or index lists, "
                             f"got {column_split!r}")
        if rng is None:
            raise ValueError("column_split='random' needs a Generator")
        perm = rng.permutation(n_cols)
        return [np.sort(b).astype(np.intp) for b in np.array_split(perm, n_sites)]
    as_blocks = len(column_split) > 0 and np.ndim(column_split[0]) == 1
    if not as_blocks:
        ids = np.asarray(column_split)
        if ids.shape != (n_cols,) or ids.dtype.kind not in "iu":
            raise ValueError(f"column_split as site ids must be {n_cols} integers")
        if ids.min() < 0 or ids.max() >= n_sites:
            raise ValueError(f"column_split site ids must lie in 0..{n_sites - 1}")
        blocks = [np.flatnonzero(ids == t).astype(np.intp) for t in range(n_sites)]
    else:
        if len(column_split) != n_sites:
            raise ValueError(f"column_split lists {len(column_split)} blocks for {n_sites} sites")
        blocks = [np.sort(np.asarray(b, dtype=np.intp).ravel()) for b in column_split]
        allcols = np.concatenate(blocks) if blocks else np.array([], dtype=np.intp)
        if allcols.size != n_cols or not np.array_equal(np.sort(allcols), np.arange(n_cols)):
            raise ValueError("column_split blocks must be disjoint and cover every column once")
    for t, b in enumerate(blocks):
        if b.size == 0:
            raise ValueError(f"site {t} holds no column")
    return blocks


class Site:
    """One party of the protocol; ``_block`` and ``_W`` never leave the object.

    >>> import numpy as np, scipy.sparse as sp
    >>> site = Site("site 1", sp.csr_matrix(np.array([[2.0, 0.0], [1.0, 1.0]])), lambda_w=1.0)
    >>> site.row_totals().tolist()
    [2.0, 2.0]
    >>> site.update_items(np.full((2, 2), 0.5))
    >>> A = site.object_aggregates()  # C × n, the only thing it sends (masked)
    >>> A.shape, bool(np.allclose(site.release_typicalities(keep=False).sum(axis=1), 1))
    ((2, 2), True)
    """

    def __init__(self, name: str, block: sp.csr_matrix, lambda_w: float):
        self.name = name
        self._raw = block
        self._set_block(block)
        self.lambda_w = float(lambda_w)
        self._W: np.ndarray | None = None
        self._W_kept: np.ndarray | None = None

    def row_totals(self) -> np.ndarray:
        """Per-object sums of the local block (for the optional L1 row normalisation)."""
        return np.asarray(self._block.sum(axis=1)).ravel()

    def normalize_rows(self, totals: np.ndarray) -> None:
        """Divide the local block by the global row totals (zero rows stay zero)."""
        scale = 1.0 / np.where(totals > 0, totals, 1.0)
        self._set_block(sp.csr_matrix(sp.diags(scale) @ self._raw))

    def _set_block(self, block: sp.csr_matrix) -> None:
        self._block = block
        self._block_t = block.T  # a view, kept: eq. (3) multiplies by it at every iteration

    def update_items(self, U: np.ndarray) -> None:
        """Eq. (3) on the local block: w^t_cj = softmax_{j∈t}(b^t_cj / λ_w^t), B^t = U R^t."""
        self._W = item_update(item_aggregates(self._block, U, self._block_t), self.lambda_w)

    def object_aggregates(self) -> np.ndarray:
        """A^t = W^t R^tᵀ (C × n), the site's term of eq. (2); only sent masked."""
        return object_aggregates(self._block, self._W)

    def local_objective(self, U: np.ndarray) -> float:
        """Σ_c Σ_i u_ci a^t_ci − λ_w^t Σ w^t log w^t: the site's additive part of eq. (1)."""
        return float(np.sum(U * self.object_aggregates())
                     - self.lambda_w * xlogy(self._W, self._W).sum())

    def keep(self) -> None:
        """Remember the current W^t (the aggregator announced the best restart so far)."""
        self._W_kept = self._W.copy()

    def release_typicalities(self, keep: bool = True) -> np.ndarray:
        """The site's (kept) W^t, handed out for evaluation only (the paper keeps it private)."""
        return (self._W_kept if keep and self._W_kept is not None else self._W).copy()

    def local_contingency(self, row_labels: np.ndarray, n_clusters: int) -> np.ndarray:
        """C × C table of the site's raw block: t^t_kl = Σ_{i∈k, j∈t, argmax_c w^t_cj = l} r_ij."""
        col_labels = np.argmax(self.release_typicalities(), axis=0).astype(np.intp)
        return contingency_table(self._raw, np.asarray(row_labels, dtype=np.intp), col_labels,
                                 n_clusters, n_clusters)
