"""force_diversity: the reference's forced diversity, step by step (labels and draws)."""

import numpy as np
import pytest

from dptaucc._common import force_diversity
from dptaucc.objective import relabel


def _steps(labels, n_choices, n_requested, rng):
    """The rule written out: one cluster -> n_choices random objects get 0..n_choices-1;
    relabel; one cluster left -> max(1, N // 100) random objects move to cluster 1."""
    labels = np.array(labels, dtype=np.intp)
    active = n_requested > 1 and labels.size > 1
    if active and n_choices > 1 and len(set(labels.tolist())) == 1:
        labels[rng.integers(0, labels.size, size=n_choices)] = np.arange(n_choices)
    labels, k = relabel(labels)
    if active and k == 1:
        labels[rng.integers(0, labels.size, size=max(1, labels.size // 100))] = 1
        labels, k = relabel(labels)
    return labels, k


@pytest.mark.parametrize("labels", [[0, 1, 2, 1], [2, 2, 0, 0], [1, 1, 1, 1], [0] * 250,
                                    [3], [0, 2], [1, 0]])
@pytest.mark.parametrize("n_choices, n_requested", [(4, 4), (1, 3), (3, 1), (2, 2)])
def test_force_diversity_is_the_rule(labels, n_choices, n_requested):
    got_rng, want_rng = np.random.default_rng(5), np.random.default_rng(5)
    got, k = force_diversity(np.array(labels), n_choices, n_requested, got_rng)
    want, k_want = _steps(labels, n_choices, n_requested, want_rng)
    assert k == k_want and got.dtype == np.intp and got.tolist() == want.tolist()
    assert got_rng.random() == want_rng.random()  # the same draws were taken


def test_force_diversity_returns_a_new_array():
    labels = np.array([0, 1, 1], dtype=np.intp)
    out, _ = force_diversity(labels, 2, 2, np.random.default_rng(0))
    out[0] = 7
    assert labels[0] == 0
