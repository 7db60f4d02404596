"""The row-by-row exponential-mechanism choice is the column-by-column kernel, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from logit_cases import KINDS, logits

from dptaucc.kernels import choose_by_inversion
from dptaucc.privacy import make_sampler
from dptaucc.privacy.wide_choice import choose_wide_rows, prefers_rows


@pytest.mark.parametrize("kind", KINDS)
def test_wide_rows_are_the_kernel(kind):
    rng = np.random.default_rng(len(kind))
    for n, k in ((1, 1), (1, 2), (3, 17), (2, 64), (8, 260), (1, 5000), (40, 20)):
        L = logits(rng, kind, n, k, irregular_per_row=True)
        hi, lo = rng.random(n), rng.random(n)
        hi[0], lo[0] = 0.0, 0.0
        hi[-1] = lo[-1] = 1 - 2.0**-53
        for scale in (1.0, 1e-3, 7.5):
            with np.errstate(over="ignore", invalid="ignore"):
                np.testing.assert_array_equal(choose_wide_rows(L, hi, lo, scale),
                                              choose_by_inversion(L, hi, lo, scale),
                                              err_msg=f"n={n} k={k} scale={scale}")


def test_wide_rows_agree_on_the_boundaries():
    """Uniforms at and next to every cumulative boundary of a long row: one ulp of
    difference in the total, the order or a running sum changes the choice there."""
    rng = np.random.default_rng(5)
    for k in (70, 400):
        row = np.round(rng.normal(size=k) * 3.0, 1)  # ties among the weights
        w = [math.exp(v - row.max()) for v in row]
        total = sum(w)  # index order, as the kernel
        acc, his = 0.0, []
        for v in sorted(w):
            acc += v
            his.extend(h for h in (acc / total, *np.nextafter(acc / total, [0.0, 1.0]))
                       if h < 1.0)
        hi = np.array(his)
        L, lo = np.repeat(row[None, :], hi.size, axis=0), np.zeros(hi.size)
        np.testing.assert_array_equal(choose_wide_rows(L, hi, lo), choose_by_inversion(L, hi, lo))


def test_the_seeded_sampler_takes_the_wide_path_with_the_same_draws(monkeypatch):
    import dptaucc.privacy.samplers as samplers

    rng = np.random.default_rng(3)
    scores = rng.normal(size=(2, 3000)) * 40
    assert prefers_rows(*scores.shape) and not prefers_rows(3000, 8)
    wide = make_sampler(11).choose(scores, 2.0)
    monkeypatch.setattr(samplers, "prefers_rows", lambda n, k: False)
    column = make_sampler(11)
    assert np.array_equal(column.choose(scores, 2.0), wide)
    # the same uniforms were consumed: the next draws agree too
    again = make_sampler(11)
    monkeypatch.undo()
    again.choose(scores, 2.0)
    assert again.rng.random() == column.rng.random()
