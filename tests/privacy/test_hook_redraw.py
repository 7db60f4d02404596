"""The audit hook's ``redraw``: fresh outputs of the same call, with the call's own law."""

import numpy as np
import pytest

from dptaucc.privacy import PrivacyLedger, discrete_laplace_mechanism, gaussian_mechanism
from dptaucc.privacy.bounded import bounded_discrete_laplace_mechanism
from dptaucc.privacy.hook import MECHANISM_HOOK
from dptaucc.privacy.mechanisms import exponential_mechanism


class _Keep:
    def __init__(self):
        self.redraws = []

    def released(self, step, mechanism, entries, output, redraw=None):
        self.redraws.append((mechanism, output, redraw))
        return output


def _call(fn):
    keep = _Keep()
    token = MECHANISM_HOOK.set(keep)
    try:
        fn(PrivacyLedger())
    finally:
        MECHANISM_HOOK.reset(token)
    (mechanism, output, redraw), = keep.redraws
    return mechanism, output, redraw


@pytest.mark.slow
def test_discrete_laplace_redraw_has_the_calls_scale():
    rng = np.random.default_rng(0)
    _, out, redraw = _call(lambda led: discrete_laplace_mechanism(
        np.array([5, 0]), epsilon=0.5, sensitivity=2, sampler=rng, ledger=led, step="s"))
    draws = redraw(20000)
    assert draws.shape == (20000, 2) and draws.dtype == np.int64
    # discrete Laplace with b = Δ/ε = 4: variance 2 t / (1 - t)^2 with t = exp(-1/b)
    t = np.exp(-1 / 4)
    assert abs(draws.var(axis=0) - 2 * t / (1 - t) ** 2).max() < 2.0
    assert abs(draws.mean(axis=0) - [5, 0]).max() < 0.2


@pytest.mark.slow
def test_gaussian_and_bounded_and_exponential_redraws():
    rng = np.random.default_rng(1)
    _, _, redraw = _call(lambda led: gaussian_mechanism(
        np.zeros(3), sigma=2.0, epsilon=1.0, delta=1e-5, sensitivity=1.0, sampler=rng, ledger=led,
        step="g"))
    assert abs(redraw(20000).std(axis=0) - 2.0).max() < 0.05
    _, _, redraw = _call(lambda led: bounded_discrete_laplace_mechanism(
        np.array([3]), upper=3, epsilon=1.0, sensitivity=1, sampler=rng, ledger=led, step="b"))
    draws = redraw(5000)
    assert draws.min() >= 0 and draws.max() <= 3 and len(np.unique(draws)) == 4
    _, _, redraw = _call(lambda led: exponential_mechanism(
        np.array([[0.0, 1.0]]), epsilon=1.0, sensitivity=1.0, sampler=rng, ledger=led, step="e"))
    share = redraw(40000)[:, 0].mean()
    assert share == pytest.approx(np.e / (1 + np.e), abs=0.01)


@pytest.mark.slow
def test_colored_gaussian_is_shown_to_the_hook_with_its_law():
    from dptaucc.baselines.dpm.gaussian import colored_gaussian_mechanism

    rng = np.random.default_rng(2)
    mechanism, out, redraw = _call(lambda led: colored_gaussian_mechanism(
        np.zeros((1, 2)), np.array([4.0, 1.0]), 1.0, 1e-5, 1.0, rng, led, "c"))
    assert mechanism.startswith("gaussian") and out.shape == (1, 2)
    assert abs(redraw(20000)[:, 0, :].std(axis=0) - [2.0, 1.0]).max() < 0.05
