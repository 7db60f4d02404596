"""DP-τCC on the secure path, audited end to end on a crafted neighbouring pair.

Pair: the all-zero 4×4 matrix against one cell set to 1. With one row and one column
cluster, one iteration and h = 0.01, the released table is the 1×1 total plus discrete
Laplace noise at (1 − h)ε/2 = 0.495 ε, the largest share one released array can carry; the
event {released total = 0} has likelihood ratio exactly e^(0.495 ε) between the two sides.
"""

import numpy as np
import pytest

from dptaucc import DPTauCC
from dptaucc.audit.stats import epsilon_lower_bound
from dptaucc.privacy import SecureSampler
from dptaucc.privacy.checks import ScaledSampler

FITS = 2_500


def _zero_total_hits(X, sampler_factory):
    hits = 0
    for _ in range(FITS):
        model = DPTauCC(n_row_clusters=1, n_col_clusters=1, n_iterations=1, h=0.01,
                        epsilon=1.0, secure=True, random_state=sampler_factory())
        hits += int(model.fit(X).contingency_[0, 0] == 0)
    return hits


@pytest.mark.slow
@pytest.mark.parametrize("factor,low,high", [(1.0, 0.3, 0.495), (0.5, 0.7, 1.0)])
def test_secure_dptaucc_end_to_end_on_the_one_cell_pair(factor, low, high):
    """Correct noise: ε_lower near the table's 0.495 ε and never above it; half the noise
    (a table ε doubled): ε_lower near 0.99 ε, beyond what the table may spend."""
    D = np.zeros((4, 4))
    D_prime = D.copy()
    D_prime[0, 0] = 1

    def factory():
        return SecureSampler() if factor == 1.0 else ScaledSampler(SecureSampler(), factor)

    k_d, k_dp = _zero_total_hits(D, factory), _zero_total_hits(D_prime, factory)
    lower, _ = epsilon_lower_bound(["total = 0"], [k_d], [k_dp], FITS, FITS)
    assert low <= lower <= high, (k_d, k_dp, lower)
