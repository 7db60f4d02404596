"""dptaucc.bench.metrics equals scikit-learn's NMI and ARI, special cases included."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from dptaucc.bench.metrics import contingency, nmi_ari


def _cases():
    rng = np.random.default_rng(0)
    for n, k, c in [(50, 3, 3), (400, 5, 2), (1000, 10, 7), (7, 1, 3), (30, 4, 1)]:
        truth = rng.integers(0, k, n)
        yield truth, rng.integers(0, c, n)
        yield truth, truth.copy()
        yield truth, (truth + 1) % max(k, 1)                     # renamed, same partition
        yield truth, np.where(rng.random(n) < 0.3, rng.integers(0, c, n), truth)
    yield np.zeros(10, int), np.zeros(10, int)                   # neither splits: 1
    yield np.zeros(10, int), np.arange(10)                       # every point alone
    yield np.array([0, 0, 1, 1]), np.array([5, 5, 9, 9])         # gaps in the label values
    yield np.array(["a", "b", "a", "c"]), np.array([2, 1, 2, 0])  # non-integer classes


@pytest.mark.parametrize("truth,labels", list(_cases()))
def test_equal_to_sklearn(truth, labels):
    nmi, ari = nmi_ari(truth, labels)
    assert nmi == pytest.approx(normalized_mutual_info_score(truth, labels), abs=1e-12)
    assert ari == pytest.approx(adjusted_rand_score(truth, labels), abs=1e-12)


def test_contingency_and_length_check():
    np.testing.assert_array_equal(contingency([0, 0, 1], [1, 1, 0]), [[0, 2], [1, 0]])
    with pytest.raises(ValueError, match="differ in length"):
        nmi_ari([0, 1], [0, 1, 1])
