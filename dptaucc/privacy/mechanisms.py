"""The mechanisms, each with its privacy map stated where it is defined.

Every function charges the fit's :class:`~dptaucc.privacy.ledger.PrivacyLedger` *before* it
draws (check-then-spend on strict ledgers), records the scale of the noise it draws, and takes
its noise from a :class:`~dptaucc.privacy.samplers.Sampler` (a bare ``numpy.random.Generator``
is accepted and wrapped in a seeded sampler).

Released values have a data-independent output set: integers for counts
(:func:`discrete_laplace_mechanism`), indices for choices, and for the continuous Gaussian a
fixed grid (:func:`snap_to_grid`). :func:`float_laplace_mechanism` is the exception, kept only
for paper mode, which reproduces the authors' textbook float noise.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from dptaucc.kernels import native_kernels
from dptaucc.privacy.calibration import Declaration, first_draw, note_draw
from dptaucc.privacy.hook import MECHANISM_HOOK, watch
from dptaucc.privacy.ledger import PrivacyLedger
from dptaucc.privacy.samplers import Sampler, SeededSampler
from dptaucc.privacy.wide_choice import prefers_rows

__all__ = [
    "as_sampler",
    "exponential_mechanism",
    "linear_exponential_mechanism",
    "joint_linear_exponential_mechanism",
    "linear_range_sensitivity",
    "discrete_laplace_mechanism",
    "float_laplace_mechanism",
    "gaussian_mechanism",
    "snap_to_grid",
    "grid_granularity",
]

#: Bits of resolution below the noise scale kept by :func:`snap_to_grid`.
GRID_BITS = 24
#: weights from which :func:`linear_range_sensitivity` runs the compiled loop
NATIVE_RANGE_VALUES = 1 << 12


def as_sampler(source: Sampler | np.random.Generator) -> Sampler:
    """A Sampler as is; a numpy Generator wrapped in a :class:`SeededSampler`.

    >>> import numpy as np
    >>> type(as_sampler(np.random.default_rng(0))).__name__
    'SeededSampler'
    """
    if isinstance(source, Sampler):
        return source
    return SeededSampler(source)


def _check_sensitivity(sensitivity: float) -> float:
    sensitivity = float(sensitivity)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity}")
    return sensitivity


def _charge_scaled(ledger: PrivacyLedger, step: str, mechanism: str, epsilon: float,
                   sensitivity: float, composition: str, note: str) -> float:
    """Charge a mechanism whose noise scale is Δ/ε (0 at ε = ∞) and return that scale."""
    sensitivity = _check_sensitivity(sensitivity)
    scale = 0.0 if math.isinf(epsilon) else sensitivity / epsilon
    ledger.charge(step, mechanism, epsilon, 0.0, sensitivity, composition, note, scale)
    return scale


def _all_finite(values: np.ndarray) -> bool:
    """Whether every value is finite: a finite sum says so in one pass (inf and NaN
    propagate); a sum that is not finite (a non-finite value, or an overflow) looks closer."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(values, axis=None)):
            return True
    return bool(np.isfinite(values).all())


def exponential_mechanism(
    utilities: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    note: str = "",
    composition: str = "parallel",
) -> np.ndarray:
    """One choice per row of ``utilities`` with P(k) ∝ exp(ε·u_k/Δ).

    Privacy map: if Δ bounds the *range* sensitivity of each row's utility vector (over
    neighbours, max_k Δu_k − min_k Δu_k; Dong, Durfee & Rogers 2020, paper eq. 4.10), each
    row's choice is ε-DP without the factor ½ of the textbook mechanism. Rows are disjoint
    objects, so the call costs ε once (parallel composition). ε = ∞ gives the argmax.
    ``composition="sequential"``: the caller's Δ bounds the *sum* over rows of their range
    changes (a neighbour may move every row's utilities), so the rows' choices together are
    ε-DP (:func:`joint_linear_exponential_mechanism`); recorded as one release.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger(budget_epsilon=1.0, strict=True)
    >>> utilities = np.array([[0.0, 40.0], [40.0, 0.0]])  # gaps of 40 Δ: wrong picks ~e^-40
    >>> exponential_mechanism(utilities, epsilon=1.0, sensitivity=1.0,
    ...                       sampler=np.random.default_rng(0), ledger=ledger, step="rows")
    array([1, 0])
    >>> ledger.entries[0].composition, ledger.entries[0].noise_scale  # Gumbel β = Δ/ε
    ('parallel', 1.0)
    """
    utilities = np.asarray(utilities, dtype=float)
    if utilities.ndim != 2 or utilities.shape[1] == 0:
        raise ValueError("utilities must be a 2-D array with at least one choice per row")
    if utilities.size and not _all_finite(utilities):
        raise ValueError("utilities must be finite")
    seen = watch(ledger)
    scale = _charge_scaled(ledger, step, "exponential", epsilon, sensitivity, composition, note)
    sampler = as_sampler(sampler)

    def draw(n=None):  # n: a batch of n outputs (audit redraws), one call when it can
        if n is None:
            return sampler.choose(utilities, scale)
        if prefers_rows(*utilities.shape):  # a wide call: keep its row-by-row path
            return np.stack([sampler.choose(utilities, scale) for _ in range(n)])
        rows = utilities.shape[0]
        return sampler.choose(np.tile(utilities, (n, 1)), scale).reshape(n, rows)
    out = first_draw(seen, draw, Declaration("exponential", float(sensitivity), "range",
                                                 exact=utilities))
    return out if seen is None else seen.released(step, "exponential", out, draw)


def linear_range_sensitivity(weights: np.ndarray) -> float:
    """Δ = max_d (max_c W_cd − min_c W_cd): the range sensitivity of ``u = P Wᵀ`` when a
    neighbour changes one entry of one profile by one (paper eq. 4.10); NaN if W has NaN.

    >>> linear_range_sensitivity([[1, 0, 2], [3, 0, 1]])  # column ranges 2, 0, 1
    2.0
    """
    weights = np.asarray(weights, dtype=float)
    native = native_kernels()
    if native is not None and weights.ndim == 2 and weights.size >= NATIVE_RANGE_VALUES:
        # the same maxima, minima and differences in one pass (numpy's reductions along the
        # short axis of a wide W, the initial column assignment's, take 8 ns a value)
        by_dim = weights.T.flags.c_contiguous
        return native.max_range(weights.T if by_dim else np.ascontiguousarray(weights),
                                weights.shape[0], weights.shape[1], by_dim)
    return float(np.max(weights.max(axis=0) - weights.min(axis=0)))  # NaN propagates


def _utilities(profiles, weights: np.ndarray, scratch: np.ndarray | None) -> np.ndarray:
    """``profiles @ weights.T`` as float64, into ``scratch`` when it can (the same BLAS call)."""
    usable = (scratch is not None and MECHANISM_HOOK.get() is None
              and isinstance(profiles, np.ndarray) and profiles.dtype == np.float64
              and profiles.ndim == 2 and scratch.dtype == np.float64 and scratch.ndim == 1
              and scratch.size >= profiles.shape[0] * weights.shape[0])
    if not usable:
        return np.asarray(profiles @ weights.T, dtype=float)
    out = scratch[:profiles.shape[0] * weights.shape[0]].reshape(profiles.shape[0],
                                                                 weights.shape[0])
    return np.matmul(profiles, weights.T, out=out)


def linear_exponential_mechanism(
    profiles: np.ndarray | sp.spmatrix,
    *,
    weights: np.ndarray,
    epsilon: float,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    sensitivity_floor: float = 0.0,
    note: str = "",
    scratch: np.ndarray | None = None,
) -> np.ndarray:
    """Choose for each object i (row of ``profiles``, N×D) one of the C rows of ``weights``
    (C×D) with the linear utility u_ic = Σ_d P_id W_cd (paper eq. 4.9).

    ``scratch``: float64 memory of at least N·C values that dense profiles' utilities are
    written to, for a caller that assigns again and again (a fresh N×C array is cleared page
    by page by the operating system); not used while an audit hook watches the call, whose
    redraws read the utilities later.

    Privacy map: a neighbour changes one entry (i, d) of the profiles by one, which moves object
    i's utilities by the column W_{·d}; so Δ = :func:`linear_range_sensitivity` (raised to
    ``sensitivity_floor``, which only adds privacy) bounds the range sensitivity and every
    object's choice is ε-DP (:func:`exponential_mechanism`). If every column of W is constant
    (Δ = 0) all choices score alike for every input: the choice is uniform, charged all the same.
    The sensitivity is computed here from W, never passed in, so a call site cannot mis-state it.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> profiles, weights = np.array([[50, 0], [0, 50]]), np.array([[10.0, 0.0], [0.0, 10.0]])
    >>> linear_exponential_mechanism(profiles, weights=weights, epsilon=1.0,
    ...                              sampler=np.random.default_rng(0), ledger=ledger, step="rows")
    array([0, 1])
    >>> ledger.entries[0].sensitivity  # Δ read off the weights
    10.0
    """
    weights = np.asarray(weights, dtype=float)
    utilities = _utilities(profiles, weights, scratch)
    delta = linear_range_sensitivity(weights)
    if math.isnan(delta):
        raise ValueError("weights contain NaN")
    if delta > 0:
        delta = max(delta, float(sensitivity_floor))
        return exponential_mechanism(utilities, epsilon=epsilon, sensitivity=delta,
                                     sampler=sampler, ledger=ledger, step=step, note=note)
    note = (note + "; " if note else "") + "Δ = 0: utilities equal across choices, uniform choice"
    return exponential_mechanism(np.zeros_like(utilities), epsilon=epsilon, sensitivity=1.0,
                                 sampler=sampler, ledger=ledger, step=step,
                                 note=note)


def joint_linear_exponential_mechanism(
    profiles: np.ndarray | sp.spmatrix,
    *,
    weights: np.ndarray,
    epsilon: float,
    profile_l1: float,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    sensitivity_floor: float = 0.0,
    note: str = "",
) -> np.ndarray:
    """Choose for every object i (row of ``profiles``, N×D) one of the C rows of ``weights``
    with the linear utility u_ic = Σ_d P_id W_cd (paper eq. 4.9), when one neighbour may change
    the profiles of *many* objects: all the choices together are one ε-DP release.

    Privacy map: if two neighbours' profiles differ by δP with Σ_{i,d} |δP_id| <= ``profile_l1``
    (= m), object i's utilities move by c_i = δP_i Wᵀ, whose range is at most
    Σ_d |δP_id|·(max_c W_cd − min_c W_cd) <= Σ_d |δP_id|·Δ(W), Δ(W) =
    :func:`linear_range_sensitivity`. Summed over the objects: Σ_i range(c_i) <= m·Δ(W). Each
    object's choice is drawn independently with Gumbel scale β = m·Δ(W)/ε, so the probability
    of any joint outcome changes by at most Π_i exp(range(c_i)/β) <= e^ε (the bound of
    :func:`exponential_mechanism` per object, multiplied). Charged once, ``sequential``. With
    m = 1 and the change confined to one object it is :func:`linear_exponential_mechanism`'s
    map; DP-τCC's row variant uses m = 2B (one row of L1 mass <= B replaced by another).
    Δ(W) is computed here from W (raised to ``sensitivity_floor``), never passed in.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> profiles, weights = np.array([[500, 0], [0, 500]]), np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> joint_linear_exponential_mechanism(profiles, weights=weights, epsilon=1.0,
    ...                                    profile_l1=20, sampler=np.random.default_rng(0),
    ...                                    ledger=ledger, step="columns")
    array([0, 1])
    >>> entry = ledger.entries[0]
    >>> entry.sensitivity, entry.composition, entry.noise_scale  # m·Δ(W), one release, β
    (20.0, 'sequential', 20.0)
    """
    profile_l1 = float(profile_l1)
    if not (math.isfinite(profile_l1) and profile_l1 > 0):
        raise ValueError(f"profile_l1 must be finite and > 0, got {profile_l1}")
    weights = np.asarray(weights, dtype=float)
    utilities = _utilities(profiles, weights, None)
    delta = linear_range_sensitivity(weights)
    if math.isnan(delta):
        raise ValueError("weights contain NaN")
    if delta > 0:
        return exponential_mechanism(utilities, epsilon=epsilon,
                                     sensitivity=profile_l1 * max(delta, float(sensitivity_floor)),
                                     sampler=sampler, ledger=ledger, step=step, note=note,
                                     composition="sequential")
    note = (note + "; " if note else "") + "Δ = 0: utilities equal across choices, uniform choice"
    return exponential_mechanism(np.zeros_like(utilities), epsilon=epsilon, sensitivity=1.0,
                                 sampler=sampler, ledger=ledger, step=step, note=note,
                                 composition="sequential")


def _integer_values(values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise TypeError("the discrete Laplace mechanism releases integer values; got "
                    f"{arr.dtype} values that are not all whole numbers")


def discrete_laplace_mechanism(
    values: np.ndarray,
    *,
    epsilon: float,
    sensitivity: int,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    note: str = "",
) -> np.ndarray:
    """Release integer ``values`` + discrete Laplace noise of scale b = Δ/ε (int64 output).

    Privacy map: if the L1 distance between the values of two neighbours is at most Δ, the
    output densities differ by at most e^{Δ/b} = e^ε at every point: ε-DP. The output set is
    ℤ^shape whatever the input, so no floating-point artefact can reveal the input.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger(budget_epsilon=1.0, strict=True)
    >>> noisy = discrete_laplace_mechanism(np.array([3, 0, 7]), epsilon=1.0, sensitivity=1,
    ...                                    sampler=np.random.default_rng(0), ledger=ledger,
    ...                                    step="counts")
    >>> noisy.dtype, noisy.shape, ledger.entries[0].noise_scale  # b = Δ/ε
    (dtype('int64'), (3,), 1.0)
    """
    exact = _integer_values(values)
    seen = watch(ledger)
    scale = _charge_scaled(ledger, step, "discrete-laplace", epsilon, sensitivity, "sequential",
                           note)
    sampler = as_sampler(sampler)

    def draw(n=None):  # n: a batch of n outputs (audit redraws)
        return exact + sampler.discrete_laplace(exact.shape if n is None else
                                                (n, *exact.shape), scale)
    out = first_draw(seen, draw, Declaration("discrete-laplace", float(sensitivity), "l1",
                                                 exact=exact))
    return out if seen is None else seen.released(step, "discrete-laplace", out, draw)


def float_laplace_mechanism(
    values: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    note: str = "",
) -> np.ndarray:
    """PAPER MODE ONLY: ``values + Laplace(0, Δ/ε)`` in floating point, as the authors' code.

    The ε charged is the textbook one, but the released doubles are not safe: which doubles
    ``x + noise`` can produce depends on x (Mironov 2012), so a released value can identify
    the input. Corrected mode never calls this.

    >>> import math, numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> float_laplace_mechanism(np.array([1.5]), epsilon=math.inf, sensitivity=1.0,
    ...                         sampler=np.random.default_rng(0), ledger=ledger,
    ...                         step="centroids")  # ε = ∞: no noise
    array([1.5])
    >>> ledger.entries[0].note
    'textbook float Laplace (paper mode)'
    """
    values = np.asarray(values, dtype=float)
    seen = watch(ledger)
    scale = _charge_scaled(ledger, step, "laplace-float", epsilon, sensitivity, "sequential",
                           (note + "; " if note else "") + "textbook float Laplace (paper mode)")
    sampler = as_sampler(sampler)

    def draw(n=None):  # n: a batch of n outputs (audit redraws)
        shape = values.shape if n is None else (n, *values.shape)
        note_draw("laplace-float", "generator", scale, int(np.prod(shape)), rng=sampler.rng)
        return np.broadcast_to(values, shape).copy() if scale == 0.0 else (
            values + sampler.rng.laplace(0.0, scale, size=shape))
    out = first_draw(seen, draw, Declaration("laplace-float", float(sensitivity), "l1",
                                                 exact=values))
    return out if seen is None else seen.released(step, "laplace-float", out, draw)


def grid_granularity(scale: float, bits: int = GRID_BITS) -> float:
    """The power of two 2^(⌊log₂ scale⌋ − bits): a grid far finer than the noise, fixed by
    public parameters only.

    >>> grid_granularity(3.0) == 2.0**(1 - 24)
    True
    """
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"noise scale must be finite and > 0, got {scale}")
    return math.ldexp(1.0, math.floor(math.log2(scale)) - bits)


def snap_to_grid(noisy: np.ndarray, scale: float, bits: int = GRID_BITS) -> np.ndarray:
    """Round noisy values to the grid of :func:`grid_granularity` (post-processing).

    A float ``x + noise`` carries x in its low-order bits; rounded to a grid 2²⁴ times finer
    than the noise but far coarser than a double's resolution, every grid point is reachable
    from every input and its probability is the ideal mechanism's up to a relative 2⁻²⁸, so
    the release keeps its (ε, δ) up to that rounding.

    >>> import numpy as np
    >>> snap_to_grid(np.array([0.1, 0.3, 1.1]), scale=1.0, bits=2).tolist()  # grid 1/4
    [0.0, 0.25, 1.0]
    """
    g = grid_granularity(scale, bits)
    return np.round(np.asarray(noisy, dtype=float) / g) * g


def gaussian_mechanism(
    values: np.ndarray,
    *,
    sigma: float,
    epsilon: float,
    delta: float,
    sensitivity: float,
    sampler: Sampler | np.random.Generator,
    ledger: PrivacyLedger,
    step: str,
    note: str = "",
) -> np.ndarray:
    """Release ``values + N(0, σ²)`` snapped to a σ-relative grid (:func:`snap_to_grid`).

    Privacy map: the caller calibrates σ to the L2 ``sensitivity`` so that the Gaussian
    mechanism is (ε, δ)-DP (e.g. the analytic Gaussian of Balle & Wang 2018) and charges that
    (ε, δ); rounding to the grid is post-processing.

    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> out = gaussian_mechanism(np.zeros(3), sigma=1.0, epsilon=0.5, delta=1e-5,
    ...                          sensitivity=1.0, sampler=np.random.default_rng(0),
    ...                          ledger=ledger, step="centroids")
    >>> bool(np.array_equal(out, snap_to_grid(out, 1.0))), ledger.delta_spent
    (True, 1e-05)
    """
    values = np.asarray(values, dtype=float)
    sensitivity = _check_sensitivity(sensitivity)
    sigma = float(sigma)
    if not (sigma >= 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
    seen = watch(ledger)
    ledger.charge(step, "gaussian", epsilon, delta, sensitivity, "sequential", note, sigma)
    sampler = as_sampler(sampler)

    def draw(n=None):  # n: a batch of n outputs (audit redraws)
        shape = values.shape if n is None else (n, *values.shape)
        return np.broadcast_to(values, shape).copy() if sigma == 0.0 else snap_to_grid(
            values + sampler.normal(shape, sigma), sigma)
    out = first_draw(seen, draw, Declaration("gaussian", sensitivity, "l2", exact=values))
    return out if seen is None else seen.released(step, "gaussian", out, draw)
