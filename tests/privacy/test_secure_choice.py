"""What guarantees the secure choice: the law it samples, and what OpenDP certifies for it.

Our ledger charges ε per exponential-mechanism call at scale β = Δ/ε (Δ the range
sensitivity). OpenDP's Gumbel noisy max samples the same law and certifies a zCDP map; its
exponential-noise variant certifies pure ε but samples another law (docs/privacy.md).
"""

import math

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from dptaucc.privacy import PrivacyLedger, SecureSampler, exponential_mechanism
from dptaucc.privacy.checks import choice_pvalue

dp.enable_features("contrib")


def _noisy_max(measure, scale, size):
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size),
             dp.linf_distance(T=float))
    return dp.m.make_noisy_max(*space, measure, scale=scale)


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1.0), (0.3, 2.5), (2.0, 0.7)])
def test_opendp_certifies_for_the_same_scale_what_the_ledger_implies(epsilon, delta):
    ledger = PrivacyLedger()
    exponential_mechanism(np.zeros((3, 4)), epsilon=epsilon, sensitivity=delta,
                          sampler=SecureSampler(), ledger=ledger, step="s")
    (entry,) = ledger.entries
    beta = entry.noise_scale
    assert beta == pytest.approx(delta / epsilon)
    # a range-Δ change of the utilities is an L∞ change ≤ Δ/2 once centred (the law ignores
    # a common shift), which is the d_in OpenDP's linf_distance measures
    d_in = delta / 2
    rho = _noisy_max(dp.zero_concentrated_divergence(), beta, 4).map(d_in)
    assert rho == pytest.approx(entry.epsilon**2 / 8, rel=1e-9)  # ε-DP bounded range ⇒ ε²/8-zCDP
    eps_exp_noise = _noisy_max(dp.max_divergence(), beta, 4).map(d_in)
    assert eps_exp_noise == pytest.approx(entry.epsilon, rel=1e-9)


@pytest.mark.slow
def test_our_secure_choice_and_opendp_gumbel_noisy_max_draw_the_same_law():
    scores = np.array([0.0, 1.5, 2.0, -1.0])
    beta = 1.3
    ours = SecureSampler().choose(np.tile(scores, (100_000, 1)), beta)
    meas = _noisy_max(dp.zero_concentrated_divergence(), beta, 4)
    theirs = np.array([meas(scores.tolist()) for _ in range(4_000)])
    p = np.exp(scores / beta)
    p /= p.sum()
    assert choice_pvalue(ours, p) > 1e-4
    assert choice_pvalue(theirs, p) > 1e-4
    table = np.vstack([np.bincount(ours, minlength=4), np.bincount(theirs, minlength=4)])
    assert stats.chi2_contingency(table).pvalue > 1e-4


@pytest.mark.slow
def test_exponential_noise_noisy_max_is_a_different_law():
    """OpenDP's pure-ε noisy max (exponential noise) is not the exponential mechanism: its
    certificate does not transfer to our sampler, whose pure ε comes from the theorem."""
    scores = [0.0, 0.0, 0.0, 3.0]
    beta = 1.0
    meas = _noisy_max(dp.max_divergence(), beta, 4)
    picks = np.array([meas(scores) for _ in range(6_000)])
    p = np.exp(np.array(scores) / beta)
    p /= p.sum()
    assert choice_pvalue(picks, p) < 1e-6
    # while the exponential mechanism's law itself is ε-DP for range Δ: worst ratio e^ε
    delta, eps = 1.0, 1.0
    u = np.array(scores)
    c = np.array([0.0, 0.0, 0.0, delta])  # a range-Δ change favouring the last choice
    p_a = np.exp(eps * u / delta) / np.exp(eps * u / delta).sum()
    p_b = np.exp(eps * (u + c) / delta) / np.exp(eps * (u + c) / delta).sum()
    assert np.max(np.abs(np.log(p_a / p_b))) <= eps + 1e-12
    assert math.isclose(np.max(np.abs(np.log(p_a / p_b))), eps, rel_tol=0.2)
