"""Site-wise FCCM: each site runs FCCM alone on its own block (Honda et al. 2015, §6 baseline)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptaucc.validation import check_count_matrix, make_generator

from ._params import (
    check_co_clusters,
    check_lambda,
    check_normalize,
    check_positive_int,
    default_lambdas,
    normalize_rows,
)
from .core import FCCMResult, fccm_iterate, init_memberships
from .sites import split_columns

__all__ = ["SitewiseResult", "sitewise_fccm"]


@dataclass
class SitewiseResult:
    """One independent FCCM per site: site t's result covers the columns ``site_columns[t]``.

    >>> from dptaucc.baselines.fccm.synthetic import make_planted_coclusters
    >>> X, _, _ = make_planted_coclusters(30, 12, 3, random_state=0)
    >>> result = sitewise_fccm(X, 3, n_sites=3, n_init=1, random_state=0)
    >>> [W.shape for W in result.typicalities()], [r.shape for r in result.row_labels()]
    ([(3, 4), (3, 4), (3, 4)], [(30,), (30,), (30,)])
    """

    site_columns: list[np.ndarray]
    results: list[FCCMResult]
    lambda_u: list[float]
    lambda_w: list[float]

    def row_labels(self) -> list[np.ndarray]:
        """Each site's own object partition (argmax membership)."""
        return [np.argmax(r.memberships, axis=0) for r in self.results]

    def typicalities(self) -> list[np.ndarray]:
        """Each site's W^t (C × m_t), in the order of ``site_columns[t]``."""
        return [r.typicalities for r in self.results]


def sitewise_fccm(X, n_clusters: int, n_sites: int = 3, column_split=None,
                  lambda_u: float | None = None, lambda_w: float | None = None,
                  normalize: str | None = "l1", n_init: int = 5, max_iter: int = 300,
                  tol: float = 1e-7, random_state=None) -> SitewiseResult:
    """FCCM on each site's block alone, with no communication at all.

    Randomness is drawn in the same order as :class:`CollaborativeFCCM` (initial memberships,
    then the column split), so equal ``random_state`` gives equal initialisations and sites.
    Each site normalises its rows by its *own* totals; None λ's take the shape-based defaults of
    the site's block (0.01/m_t, 6·n/m_t).

    >>> import numpy as np
    >>> from dptaucc.baselines.fccm.synthetic import make_planted_coclusters
    >>> X, _, _ = make_planted_coclusters(30, 12, 3, random_state=0)
    >>> a = sitewise_fccm(X, 3, n_sites=3, n_init=2, random_state=5)
    >>> b = sitewise_fccm(X, 3, n_sites=3, n_init=2, random_state=5)
    >>> [c.tolist() for c in a.site_columns][0], a.lambda_w == [6 * 30 / 4] * 3
    ([0, 1, 2, 3], True)
    >>> all(np.array_equal(x, y) for x, y in zip(a.row_labels(), b.row_labels()))  # seeded
    True
    """
    X = check_count_matrix(X, integer=False)
    n, m = X.shape
    C = check_co_clusters(n_clusters, None, n, m)
    check_normalize(normalize)
    n_init = check_positive_int(n_init, "n_init")
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = check_lambda(tol, "tol")
    rng = make_generator(random_state)
    inits = [init_memberships(rng, C, n) for _ in range(n_init)]
    blocks = split_columns(m, n_sites, column_split, rng)
    results, lus, lws = [], [], []
    for cols in blocks:
        R = normalize_rows(X[:, cols].tocsr(), normalize)
        lu_default, lw_default = default_lambdas(n, cols.size)
        lu = check_lambda(lu_default if lambda_u is None else lambda_u, "lambda_u")
        lw = check_lambda(lw_default if lambda_w is None else lambda_w, "lambda_w")
        runs = [fccm_iterate(R, U0, lu, lw, max_iter=max_iter, tol=tol) for U0 in inits]
        results.append(max(runs, key=lambda r: r.objective))
        lus.append(lu)
        lws.append(lw)
    return SitewiseResult(blocks, results, lus, lws)
