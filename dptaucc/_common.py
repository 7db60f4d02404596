"""Small helpers shared by FastTauCC and DPTauCC (bicluster indicators, forced diversity)."""

from __future__ import annotations

import numpy as np

__all__ = ["indicator_rows", "force_diversity"]


def indicator_rows(labels: np.ndarray, n_clusters: int) -> np.ndarray:
    """Boolean (n_clusters, n) membership matrix, as BiclusterMixin's ``rows_``/``columns_``.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc._common import indicator_rows
    >>> indicator_rows(np.array([0, 1, 0]), 2).tolist()
    [[True, False, True], [False, True, False]]

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc._common import force_diversity
    >>> labels, k = force_diversity(np.zeros(6, dtype=int), 2, 2, np.random.default_rng(0))
    >>> k
    2
    """
    return np.arange(n_clusters)[:, None] == np.asarray(labels)[None, :]


def force_diversity(
    labels: np.ndarray, n_choices: int, n_requested: int, rng: np.random.Generator,
) -> tuple[np.ndarray, int]:
    """Relabel a DP assignment, with the reference's forced diversity (Q6, docs/modes.md).

    Post-processing of a DP output with fresh randomness (no data read): if every object got
    the same label, ``n_choices`` random objects (with replacement) get labels 0..n_choices−1;
    after relabelling, if a single cluster is left, ⌊N/100⌋ (>= 1) random objects move to
    cluster 1. Skipped when one cluster was requested or there is a single object.
    """
    from dptaucc.objective import relabel

    labels = np.asarray(labels, dtype=np.intp)
    n_obj = labels.size
    present = np.bincount(labels) > 0 if n_obj else np.zeros(0, dtype=bool)
    if present.size > 1 and present.all():  # labels 0..k-1, k >= 2, all used: nothing to do
        return labels.copy(), present.size
    active = n_requested > 1 and n_obj > 1
    if active and n_choices > 1 and np.all(labels == labels[0]):
        labels = labels.copy()
        labels[rng.integers(0, n_obj, size=n_choices)] = np.arange(n_choices)
    labels, k = relabel(labels)
    if active and k == 1:
        labels[rng.integers(0, n_obj, size=max(1, n_obj // 100))] = 1
        labels, k = relabel(labels)
    return labels, k
