"""Mironov's float reachability for numpy's Laplace sampler, and the event built on it."""

from __future__ import annotations

import numpy as np
import pytest
from toys import TableRelease

from dptaucc.audit import audit
from dptaucc.audit import events as ev
from dptaucc.audit.pairs import moving_row
from dptaucc.audit.reachability import (
    laplace_reachable,
    laplace_reachable_array,
    numpy_laplace_noise,
)


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.7, 80.0, 1.0 / 0.0125])
def test_noise_formula_is_bit_exact_with_generator_laplace(scale):
    """Generator.random() and Generator.laplace() read the same 53-bit uniforms."""
    u = np.random.default_rng(5).random(5000)
    lap = np.random.default_rng(5).laplace(0.0, scale, 5000)
    mine = np.array([numpy_laplace_noise(int(v * 2**53), scale) for v in u])
    assert np.array_equal(mine, lap)


@pytest.mark.parametrize("x,scale", [(3.0, 1.0), (37.0, 80.0), (0.0, 2.0), (12.0, 0.5),
                                     (1234.0, 80.0)])
def test_every_release_is_reachable_from_its_input(x, scale):
    y = x + np.random.default_rng(1).laplace(0.0, scale, 500)
    assert laplace_reachable_array(y, x, scale).all()


@pytest.mark.parametrize("x,scale", [(3.0, 1.0), (37.0, 80.0), (0.0, 2.0)])
def test_most_releases_are_unreachable_from_the_neighbour(x, scale):
    """The attack is strongest when the scale is large next to the value (the sampler's grid
    is then coarser than the doubles around y)."""
    y = x + np.random.default_rng(1).laplace(0.0, scale, 500)
    assert laplace_reachable_array(y, x + 1.0, scale).mean() < 0.7


def test_clipped_releases():
    x, s = 1.0, 2.0
    y = np.maximum(x + np.random.default_rng(2).laplace(0.0, s, 300), 0.0)
    assert laplace_reachable_array(y, x, s, clip_min=0.0).all()
    assert laplace_reachable(0.0, x, s, clip_min=0.0)  # a clipped zero is always reachable
    assert not laplace_reachable(-1.0, x, s, clip_min=0.0)


def test_out_of_range_and_invalid_values_are_unreachable():
    assert not laplace_reachable(1e6, 0.0, 1.0)  # beyond the sampler's largest noise (~36.7 s)
    assert not laplace_reachable(float("nan"), 0.0, 1.0)
    assert not laplace_reachable(1.0, 0.0, 0.0)


def test_event_fires_on_float_laplace_tables():
    p = moving_row()
    res = audit(TableRelease(epsilon=0.05, noise="float"), p.D, p.D_prime,
                [ev.table_cell_reachable(p)], n_fits=300, progress=False)
    on_d, on_dp = res.counts_d[1], res.counts_dp[1]
    assert on_d > 0.2 * 300 and on_dp == 0
    assert res.epsilon_lower > 2.5


def test_event_never_fires_on_integer_releases():
    p = moving_row()
    res = audit(TableRelease(epsilon=0.05, noise="integer"), p.D, p.D_prime,
                [ev.table_cell_reachable(p)], n_fits=300, progress=False)
    assert res.counts_d[1] == res.counts_dp[1] == 0
    assert np.isnan(res.epsilon_lower) and res.verdict == "no evidence"
