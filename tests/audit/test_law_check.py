"""The law check: a call's outputs no more concentrated than its declared law allows."""

from __future__ import annotations

import numpy as np
import pytest

from dptaucc.audit.law_check import law_differs, log_top_probability
from dptaucc.privacy import SeededSampler
from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw, collecting


def _laplace(values, b):
    return Calibration((Declaration("discrete-laplace", 1.0, "l1", exact=np.asarray(values)),),
                       (NoiseDraw("discrete-laplace", "seeded", b, np.size(values)),))


@pytest.mark.parametrize("factor,flagged", [(1.0, False), (0.5, True)])
def test_noise_drawn_at_half_the_declared_scale_is_too_concentrated(factor, flagged):
    """One value declared at scale 2, drawn at scale 2 (passes) or 1 (its mode twice as
    likely: flagged from 4,000 draws)."""
    rng = np.random.default_rng(0)
    sampler = SeededSampler(rng)
    draws = 7 + sampler.discrete_laplace((4000, 1), 2.0 * factor)
    assert bool(law_differs(draws, _laplace([7], 2.0))) is flagged


def test_an_exact_value_in_place_of_the_noisy_one_is_flagged_and_a_shift_is_not():
    calib = _laplace([3, 5, 0], 4.0)
    exact = np.tile([3, 5, 0], (2000, 1))
    assert "concentrate on one value" in law_differs(exact, calib, "D'")
    noisy = exact + np.random.default_rng(1).integers(-50, 50, exact.shape)
    assert law_differs(noisy + 1000, calib) == ""  # spread as the law allows: not flagged


def test_the_library_mechanisms_declare_laws_the_check_reads_exactly():
    """The probability of the declared law's mode, from what the mechanism told the hook."""
    from dptaucc.privacy import PrivacyLedger, exponential_mechanism

    with collecting() as seen:
        exponential_mechanism(np.array([[0.0, np.log(3.0)]]), epsilon=1.0, sensitivity=1.0,
                              sampler=np.random.default_rng(0), ledger=PrivacyLedger(),
                              step="pick")
    decls = [d for d in seen if isinstance(d, Declaration)]
    draws = [d for d in seen if isinstance(d, NoiseDraw)]
    calib = Calibration(tuple(decls), tuple(draws))
    assert np.exp(log_top_probability(calib)) == pytest.approx(0.75)


def test_laws_it_does_not_know_are_not_checked():
    gauss = Calibration((Declaration("gaussian", 1.0, "l2", exact=np.zeros(2)),),
                        (NoiseDraw("gaussian", "seeded", 1.0, 2),))
    assert log_top_probability(gauss) is None
    assert law_differs(np.zeros((100, 2)), gauss) == ""


def test_the_bounded_mechanisms_mode_probability_with_ranges_per_row():
    """DP-KMeans' sums: a k×d table of values, one range per value told flat by the draw."""
    from dptaucc.privacy import PrivacyLedger, bounded_discrete_laplace_mechanism

    values = np.array([[0, 3, 10], [5, 5, 0]])
    with collecting() as seen:
        bounded_discrete_laplace_mechanism(values, epsilon=2.0, sensitivity=1.0,
                                           upper=np.array([[10], [10]]),
                                           sampler=np.random.default_rng(0),
                                           ledger=PrivacyLedger(), step="sums")
    calib = Calibration(tuple(d for d in seen if isinstance(d, Declaration)),
                        tuple(d for d in seen if isinstance(d, NoiseDraw)))
    p = np.exp(log_top_probability(calib))
    assert 0.0 < p < 1.0
    assert law_differs(np.tile(values.ravel(), (3000, 1)), calib) != ""
