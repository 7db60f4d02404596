"""The secure path holds no state a seed can reproduce.

Every mechanism draw of a :class:`SecureSampler` comes from the OS: two fresh samplers never draw
alike, even when numpy's own seeding is made constant (a patched ``default_rng`` /
``SeedSequence``, what a "seeded for debugging" change would do), and the bounded discrete
Laplace's side — once drawn from an OS-seeded numpy Generator — is OS randomness too. A fresh
sampler per output is the statistical check that catches a constant-seeded generator where one
long-lived sampler does not (:func:`dptaucc.audit.primitives.audit_primitive` with
``fresh=True``).
"""

from __future__ import annotations

import numpy as np
import pytest
from dptaucc.baselines.dp_kmeans import DPKMeans

from dptaucc.audit.primitives import audit_primitive
from dptaucc.audit.transcript import record
from dptaucc.privacy import SecureSampler, bounded_discrete_laplace
from dptaucc.privacy.samplers import Sampler

N = 256  # values per draw: two independent draws agree with probability < 2^-100


def _draws(sampler: SecureSampler) -> dict[str, np.ndarray]:
    scores = np.zeros((N, 8))
    return {
        "discrete_laplace": sampler.discrete_laplace(N, 3.0),
        "choose": sampler.choose(scores, 1.0),
        "normal": sampler.normal(N, 1.0),
        "bernoulli": sampler.bernoulli(np.full(N, 0.5)),
        "integers": np.array([sampler.integers(2**40) for _ in range(8)]),
        # the side of each value: w = 0 on {0, …, 10} gives y > 0 iff the upper side is drawn
        "bounded side": bounded_discrete_laplace(np.zeros(N, int), 10, 1.5, sampler) > 0,
        "rng": sampler.rng.integers(2**62, size=4),
    }


def _constant_numpy_seeding(monkeypatch):
    """numpy's implicit seeding made constant: default_rng() and SeedSequence() as if seeded
    with 0 (what a 'seeded for debugging' patch of the secure path would do)."""
    rng, seq = np.random.default_rng, np.random.SeedSequence
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: rng(0 if seed is None
                                                                        else seed))
    monkeypatch.setattr(np.random, "SeedSequence",
                        lambda entropy=None, **kw: seq(0 if entropy is None else entropy, **kw))


@pytest.mark.parametrize("constant_numpy", [False, True])
def test_two_fresh_secure_samplers_never_draw_alike(monkeypatch, constant_numpy):
    if constant_numpy:
        _constant_numpy_seeding(monkeypatch)
    a, b = _draws(SecureSampler()), _draws(SecureSampler())
    same = [k for k in a if np.array_equal(a[k], b[k])]
    assert not same, f"draws a seed reproduces: {same}"


def _zero_seeded_side(monkeypatch):
    """The held-out bug: the sampler's generator seeded with 0 and the side drawn from it."""
    init = SecureSampler.__init__

    def seeded(self):
        init(self)
        self.rng = np.random.default_rng(0)
    monkeypatch.setattr(SecureSampler, "__init__", seeded)
    monkeypatch.setattr(SecureSampler, "bernoulli", Sampler.bernoulli)  # side from rng


def test_a_generator_seeded_with_zero_is_caught(monkeypatch):
    _zero_seeded_side(monkeypatch)
    a, b = _draws(SecureSampler()), _draws(SecureSampler())
    assert np.array_equal(a["bounded side"], b["bounded side"])
    assert np.array_equal(a["rng"], b["rng"])


def test_secure_fits_repeated_under_constant_numpy_seeding_release_new_noise(monkeypatch):
    _constant_numpy_seeding(monkeypatch)
    X = np.random.RandomState(0).poisson(3.0, size=(40, 6))
    runs = [record(DPKMeans(3, epsilon=1.0, secure=True), X) for _ in range(2)]
    assert [c.step for c in runs[0]] == [c.step for c in runs[1]]
    for first, second in zip(*runs, strict=True):
        assert not np.array_equal(first.output, second.output), first.step


#: the fresh-sampler check at α = 10⁻⁶: a correct sampler's bound is above ε in at most one run
#: in 10⁶; the seeded side gives P(y > 0 | w = 0) = 0 against about 0.7 for w = 1
FRESH_ALPHA = 1e-6


def test_fresh_samplers_keep_the_bounded_mechanism_within_epsilon():
    row = audit_primitive("bounded-discrete-laplace", 1.0, 500, secure=True, fresh=True,
                          alpha=FRESH_ALPHA)
    assert row["path"] == "secure-fresh" and row["epsilon_lower"] <= 1.0, row


def test_fresh_samplers_catch_a_side_drawn_from_a_zero_seeded_generator(monkeypatch):
    _zero_seeded_side(monkeypatch)
    row = audit_primitive("bounded-discrete-laplace", 1.0, 500, secure=True, fresh=True,
                          alpha=FRESH_ALPHA)
    assert row["epsilon_lower"] > 1.0, row
    # one long-lived sampler, the primitives audit as it was, does not see it
    long_lived = audit_primitive("bounded-discrete-laplace", 1.0, 20_000, secure=True,
                                 alpha=FRESH_ALPHA)
    assert long_lived["epsilon_lower"] <= 1.0, long_lived
