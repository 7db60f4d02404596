"""Where a fit's noise comes from: a seeded sampler for research, a secure one for releases.

Two interchangeable sources, chosen per fit (never a global):

* :class:`SeededSampler` (default) draws everything from one ``numpy.random.Generator`` built
  from ``random_state``: reproducible, what the benchmark uses. Its samplers are exact in law up
  to double rounding, with the tails cut far out: every exponential variate is built from a
  106-bit uniform (two 53-bit draws), so it reaches 74.2 instead of 36.7. Consequences, stated
  as guarantees: a discrete-Laplace variate never exceeds 74.2·b in size (true probability of
  that tail < 2⁻¹⁰⁶), and in the exponential mechanism (inverse-CDF sampling with one 106-bit
  uniform per object, smallest weights first) every choice's probability is exact up to an
  absolute 2⁻¹⁰⁶: a choice less likely than that may never be drawn. Each call is therefore
  (ε, δ)-DP with δ below 2⁻¹⁰⁰ per sampled value, up to double rounding of the scores (a
  relative error of 2⁻⁵³), instead of pure ε-DP. Integer outputs (discrete Laplace) have a
  data-independent output set, so the floating-point attack on textbook Laplace noise
  (Mironov 2012) does not apply.
* :class:`SecureSampler` draws every mechanism's randomness from the operating system:
  OpenDP's exact discrete Laplace and Gaussian, the exponential mechanism by rejection with
  exact rational comparisons (:mod:`dptaucc.privacy.exact`), all rows at once, and the
  bounded mechanism's side and uniform picks from OS words (:func:`~dptaucc.privacy.exact.
  os_words`). Only the random choices that are not mechanism noise (data-independent
  initialisations, projections, post-processing) come from ``rng``, a ``Generator`` seeded
  with 256 bits read from the OS at construction (never from numpy's own seeding). No seed,
  nothing to replay: use it for a release you publish. Needs the ``secure`` extra
  (``opendp``).

Both implement the same mechanism samplers (:meth:`discrete_laplace`, :meth:`choose`,
:meth:`normal`, :meth:`bernoulli`, :meth:`integers`) with the same distributions (tested);
:func:`make_sampler` picks one. Each noise draw reports its law, source and scale to the
privacy audit when it listens (:func:`dptaucc.privacy.calibration.note_draw`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from dptaucc.kernels import choose_by_inversion, exponential_from_uniforms
from dptaucc.privacy.calibration import note_draw
from dptaucc.privacy.exact import exact_choose, os_words, uniform_below
from dptaucc.privacy.wide_choice import choose_wide_rows, prefers_rows
from dptaucc.validation import make_generator

__all__ = ["Sampler", "SeededSampler", "SecureSampler", "make_sampler", "MAX_NOISE_SCALE",
           "os_seeded_generator"]

#: Largest noise scale the integer samplers accept: beyond it a variate (≤ 74.2·scale) would
#: not fit the 53-bit integer range of a double exactly.
MAX_NOISE_SCALE = 2.0**45

#: values per block of the seeded sampler's elementwise steps (temporaries kept in the cache)
_BLOCK_VALUES = 1 << 14
_TWO_53 = 2.0**53


def os_seeded_generator() -> np.random.Generator:
    """A ``Generator`` whose seed is 256 bits read from ``os.urandom`` (not numpy's own
    seeding, which a patched or seeded numpy would make repeatable); the seed is not kept.

    >>> a, b = os_seeded_generator(), os_seeded_generator()
    >>> bool(a.integers(2**62) != b.integers(2**62))  # fresh OS entropy each time
    True
    """
    entropy = int.from_bytes(os.urandom(32), "little")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def _bernoulli_from_uniforms(p: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """True with probability p (a double in [0, 1]) to within 2⁻¹⁰⁶ given two independent
    uniforms on the 2⁻⁵³ grid: U = hi + lo·2⁻⁵³ is compared with p exactly (p·2⁵³ and its
    fractional part are exact)."""
    hi = hi * _TWO_53  # whole numbers 0 … 2⁵³ − 1
    a = p * _TWO_53
    whole = np.floor(a)
    return (hi < whole) | ((hi == whole) & (lo < a - whole))


class Sampler:
    """A source of noise for one fit: the two samplers every mechanism here draws from.

    ``rng`` serves the random choices that are not mechanism noise (data-independent
    initialisations, tie-breaking, post-processing); ``exact`` tells whether the mechanism
    samplers are OpenDP's exact ones.

    >>> import numpy as np
    >>> sampler = make_sampler(0)
    >>> isinstance(sampler, Sampler), sampler.exact
    (True, False)
    >>> sampler.choose(np.array([[0.0, 5.0, 1.0], [2.0, 0.0, 0.0]]), 0.0)  # scale 0: argmax
    array([1, 0])
    """

    exact: bool = False
    rng: np.random.Generator

    def discrete_laplace(self, size: int | tuple[int, ...], scale: float) -> np.ndarray:
        """int64 variates with P(z) ∝ exp(−|z|/scale) (two-sided geometric)."""
        raise NotImplementedError

    def choose(self, scores: np.ndarray, scale: float) -> np.ndarray:
        """One index per row of ``scores`` with P(k) ∝ exp(score_k/scale); scale 0 = argmax."""
        raise NotImplementedError

    def standard_normal(self, size: int | tuple[int, ...]) -> np.ndarray:
        """N(0, 1) variates (the building block of :meth:`normal`)."""
        raise NotImplementedError

    @property
    def source(self) -> str:
        """Where the mechanism noise comes from: "secure" (OS) or "seeded"."""
        return "secure" if self.exact else "seeded"

    def _stream(self) -> dict:
        """``{"rng": the generator}`` on the seeded path, told with each draw (only while the
        audit collects): a replay of a forced history continues every later draw from the
        recorded fit's generator state (:mod:`dptaucc.audit.transcript`). Empty on the secure
        path, whose mechanism noise no seed repeats."""
        return {} if self.exact else {"rng": self.rng}

    def normal(self, size: int | tuple[int, ...], sigma) -> np.ndarray:
        """N(0, σ²) variates for Gaussian mechanisms, σ a scalar or one per coordinate
        (broadcast against ``size``): σ times :meth:`standard_normal`."""
        z = self.standard_normal(size)
        note_draw("gaussian", self.source, sigma, z.size, **self._stream())
        return sigma * z

    def bernoulli(self, p: np.ndarray) -> np.ndarray:
        """True with probability ``p`` (doubles in [0, 1]) to within 2⁻¹⁰⁶, element-wise.
        This default reads two uniforms per value from ``rng``: a sampler whose mechanism
        randomness is not ``rng`` overrides it (:class:`SecureSampler`)."""
        p = np.asarray(p, dtype=float)
        note_draw("bernoulli", "generator", math.nan, p.size, **self._stream())
        return _bernoulli_from_uniforms(p, self.rng.random(p.shape), self.rng.random(p.shape))

    def integers(self, high: int) -> int:
        """One integer uniform on {0, …, high − 1}, part of a mechanism's output (this
        default reads ``rng``; :class:`SecureSampler` reads OS words)."""
        note_draw("uniform", "generator", math.nan, 1, **self._stream())
        return int(self.rng.integers(high))

    # -- shared helpers ---------------------------------------------------------------------
    def _argmax_ties_uniform(self, scores: np.ndarray) -> np.ndarray:
        """ε = ∞: the best choice of each row, ties broken uniformly at random."""
        best = scores == scores.max(axis=1, keepdims=True)
        return np.argmax(np.where(best, self.rng.random(scores.shape), -1.0), axis=1)


def _check_scale(scale: float) -> float:
    scale = float(scale)
    if not (0.0 <= scale <= MAX_NOISE_SCALE):
        raise ValueError(f"noise scale must lie in [0, {MAX_NOISE_SCALE:g}], got {scale}")
    return scale


class SeededSampler(Sampler):
    """Noise from one seeded ``numpy.random.Generator`` (see the module docstring).

    >>> import numpy as np
    >>> a = SeededSampler(np.random.default_rng(7)).discrete_laplace(5, 2.0)
    >>> b = SeededSampler(np.random.default_rng(7)).discrete_laplace(5, 2.0)
    >>> a.dtype, bool(np.array_equal(a, b))  # integers, replayed exactly from the seed
    (dtype('int64'), True)
    >>> SeededSampler(np.random.default_rng(7)).discrete_laplace(3, -1.0)
    Traceback (most recent call last):
    ...
    ValueError: noise scale must lie in [0, 3.51844e+13], got -1.0
    """

    exact = False

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"SeededSampler needs a numpy Generator, got {type(rng).__name__}")
        self.rng = rng

    def standard_exponential(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Exp(1) variates −log U with U uniform on a 2⁻¹⁰⁶ grid (midpoints) of (0, 1).

        U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³ from two 53-bit draws; for U ≥ ½ the logarithm is taken of
        1 − U = (1 − hi) − tail, computed without cancellation, so the largest value is
        107·ln 2 ≈ 74.2 instead of 53·ln 2 ≈ 36.7 from a single draw.
        """
        return exponential_from_uniforms(self.rng.random(size), self.rng.random(size))

    def discrete_laplace(self, size: int | tuple[int, ...], scale: float) -> np.ndarray:
        """⌊E₁·b⌋ − ⌊E₂·b⌋ with E Exp(1): P(⌊E·b⌋ ≥ k) = e^{−k/b}, so the difference of two
        independent copies has P(z) ∝ e^{−|z|/b}."""
        scale = _check_scale(scale)
        note_draw("discrete-laplace", "seeded", scale, size, rng=self.rng)
        if scale == 0.0:
            return np.zeros(size, dtype=np.int64)
        e1 = self.standard_exponential(size)
        e2 = self.standard_exponential(size)
        out = np.empty(e1.shape, dtype=np.int64)
        flat1, flat2, flat_out = e1.reshape(-1), e2.reshape(-1), out.reshape(-1)
        # elementwise, in blocks whose temporaries stay in the cache (these steps on 75k
        # values: 1.6 ns a value, 15 in whole-array passes)
        for start in range(0, flat1.size, _BLOCK_VALUES):
            g1 = flat1[start:start + _BLOCK_VALUES] * scale
            np.floor(g1, out=g1)
            g2 = flat2[start:start + _BLOCK_VALUES] * scale
            np.floor(g2, out=g2)
            g1 -= g2
            flat_out[start:start + _BLOCK_VALUES] = g1  # whole numbers below 2^53: exact
        return out

    def gumbel(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Standard Gumbel variates −log E (E from :meth:`standard_exponential`)."""
        return -np.log(self.standard_exponential(size))

    def choose(self, scores: np.ndarray, scale: float) -> np.ndarray:
        """P(k) ∝ exp(score_k/scale), by inverting each row's cumulative distribution with one
        106-bit uniform per row (weights exp(logit − max), smallest first; see
        :func:`dptaucc.kernels.choose_by_inversion`, or the same row by row for few rows of
        many choices, :mod:`dptaucc.privacy.wide_choice`): exact up to double rounding for
        any score magnitude, as the Gumbel-max trick, and one exponential per choice instead
        of two logarithms."""
        scores = np.asarray(scores, dtype=float)
        scale = _check_scale(scale) if math.isfinite(scale) else -1.0
        if scale < 0:
            raise ValueError(f"scale must be finite, got {scale}")
        note_draw("choice", "seeded", scale, scores.shape[0], rng=self.rng)
        if scale == 0.0:
            return self._argmax_ties_uniform(scores)
        n = scores.shape[0]
        wide = scores.ndim == 2 and prefers_rows(n, scores.shape[1])
        choose = choose_wide_rows if wide else choose_by_inversion
        return choose(scores, self.rng.random(n), self.rng.random(n), scale)

    def standard_normal(self, size: int | tuple[int, ...]) -> np.ndarray:
        return self.rng.standard_normal(size)

    def bernoulli(self, p: np.ndarray) -> np.ndarray:
        p = np.asarray(p, dtype=float)
        note_draw("bernoulli", "seeded", math.nan, p.size, rng=self.rng)
        return _bernoulli_from_uniforms(p, self.rng.random(p.shape), self.rng.random(p.shape))

    def integers(self, high: int) -> int:
        note_draw("uniform", "seeded", math.nan, 1, rng=self.rng)
        return int(self.rng.integers(high))


class SecureSampler(Sampler):
    """OpenDP's exact samplers with OS randomness (no seed; see the module docstring).

    Cost: :meth:`choose` samples every row of a call together (about 1 µs per row);
    :meth:`discrete_laplace` is one OpenDP call per array (about 8 µs per value);
    :meth:`standard_normal` samples OpenDP's exact Gaussian (about 80 µs per value).

    >>> import numpy as np
    >>> sampler = SecureSampler()
    >>> sampler.exact, sampler.discrete_laplace(3, 0.0)
    (True, array([0, 0, 0]))
    >>> # P(index 0) = e^-1000 / (1 + e^-1000): index 1 in every row
    >>> sampler.choose(np.array([[0.0, 1000.0], [0.0, 1000.0]]), 1.0)
    array([1, 1])
    """

    exact = True

    def __init__(self):
        try:
            import opendp.prelude as dp
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "secure noise needs OpenDP: pip install 'dptaucc-bench[secure]' (or opendp)"
            ) from exc
        dp.enable_features("contrib")
        self._dp = dp
        self._measurements: dict = {}  # OpenDP measurements by (law, scale): built once
        self.rng = os_seeded_generator()  # data-independent choices only; no seed kept

    def _measurement(self, law: str, scale: float):
        key = (law, scale)
        meas = self._measurements.get(key)
        if meas is None:
            dp = self._dp
            if law == "laplace":
                meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")),
                                         dp.l1_distance(T="i64"), scale=scale)
            else:
                meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                                          dp.l2_distance(T=float), scale=scale)
            if len(self._measurements) < 256:
                self._measurements[key] = meas
        return meas

    def discrete_laplace(self, size: int | tuple[int, ...], scale: float) -> np.ndarray:
        scale = _check_scale(scale)
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        note_draw("discrete-laplace", "secure", scale, count)
        if scale == 0.0 or count == 0:
            return np.zeros(shape, dtype=np.int64)
        meas = self._measurement("laplace", scale)
        return np.asarray(meas([0] * count), dtype=np.int64).reshape(shape)

    def choose(self, scores: np.ndarray, scale: float) -> np.ndarray:
        """Exactly P(k) ∝ exp(score_k/scale) for every row at once, by rejection from OS
        randomness with exact rational comparisons (:func:`dptaucc.privacy.exact.exact_choose`)."""
        scores = np.asarray(scores, dtype=float)
        scale = _check_scale(scale)
        note_draw("choice", "secure", scale, scores.shape[0])
        if scale == 0.0:
            return self._argmax_ties_uniform(scores)
        return exact_choose(scores, scale)

    def bernoulli(self, p: np.ndarray) -> np.ndarray:
        """From OS words: U = hi + lo·2⁻⁵³ with hi, lo the top 53 bits of two words."""
        p = np.asarray(p, dtype=float)
        note_draw("bernoulli", "secure", math.nan, p.size)
        hi = (os_words(p.size) >> np.uint64(11)).astype(float).reshape(p.shape) / _TWO_53
        lo = (os_words(p.size) >> np.uint64(11)).astype(float).reshape(p.shape) / _TWO_53
        return _bernoulli_from_uniforms(p, hi, lo)

    def integers(self, high: int) -> int:
        """Uniform below ``high`` from OS words (out-of-range words redrawn)."""
        note_draw("uniform", "secure", math.nan, 1)
        return int(uniform_below(np.array([int(high)], dtype=np.uint64))[0])

    def standard_normal(self, size: int | tuple[int, ...]) -> np.ndarray:
        """OpenDP's exact Gaussian of scale 1 (a discrete Gaussian on a fine binary grid)."""
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            return np.zeros(shape)
        meas = self._measurement("gaussian", 1.0)
        return np.asarray(meas([0.0] * count), dtype=float).reshape(shape)


def make_sampler(random_state=None, secure: bool = False) -> Sampler:
    """The fit's noise source: seeded from ``random_state``, or secure (``random_state`` None).

    A :class:`Sampler` passed as ``random_state`` is used as is (tests inject recording ones).

    >>> type(make_sampler(0)).__name__, type(make_sampler(secure=True)).__name__
    ('SeededSampler', 'SecureSampler')
    >>> make_sampler(0, secure=True)
    Traceback (most recent call last):
    ...
    ValueError: secure=True draws unpredictable OS randomness: leave random_state None (got 0); ...
    """
    if isinstance(random_state, Sampler):
        if secure and not random_state.exact:
            raise ValueError("secure=True needs an exact sampler, got a seeded one")
        return random_state
    if secure:
        if random_state is not None:
            raise ValueError("secure=True draws unpredictable OS randomness: leave random_state "
                             f"None (got {random_state!r}); use secure=False to seed a fit")
        return SecureSampler()
    return SeededSampler(make_generator(random_state))
