"""DP-τCC's first column assignment at its worst: its weights come from the blind
initialisation (random, no history can force them), so its setup makes them the same up to a
relabelling whatever the blind permutation (K0 = L0 = n: one blind block per row) and lets the
audit try several blind matrices. The exact law of the call, read from the utilities and the
scale the sampler was handed, shows how much of the charge a single cluster's label carries."""

from __future__ import annotations

import math

import numpy as np

from dptaucc import DPTauCC
from dptaucc.audit.methods import call_site_setup
from dptaucc.audit.transcript import replay
from dptaucc.privacy.checks import RecordingSampler


def _choice_law(setup, X, seed: int) -> tuple[np.ndarray, float]:
    """(probabilities of column 0's clusters, the call's charged ε) of call 0 on X."""
    sampler = RecordingSampler(seed)
    call = replay(DPTauCC(**dict(setup.params), random_state=sampler), X, [], 0)
    draw = sampler.of_kind("choose")[-1]
    u = draw.inputs[0] / draw.scale
    p = np.exp(u - u.max())
    return p / p.sum(), call.epsilon


def test_first_column_assignment_reaches_its_charge_on_one_label():
    """Over the setup's candidate blind matrices, the best moves one cluster's probability by
    ≥ 0.9 of the charge (log ratio), never above it; a blind matrix whose noise flips hit the
    changed row stays near 0.6, so a single blind matrix is not enough."""
    setup = call_site_setup("dp_taucc")[2]
    assert setup.pair.name == "one_per_row_but_the_first" and setup.max_calls == 1
    shares = []
    for seed in range(setup.n_histories):
        (p_d, eps), (p_dp, _) = (_choice_law(setup, X, seed)
                                 for X in (setup.pair.D, setup.pair.D_prime))
        assert math.isclose(eps, 2.0)
        shares.append(float(np.abs(np.log(p_dp / p_d)).max()) / eps)
    assert max(shares) <= 1.0 + 1e-9
    assert max(shares) >= 0.9, shares
    assert min(shares) < 0.8, shares
