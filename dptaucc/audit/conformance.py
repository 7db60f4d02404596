"""Exact conformance of the sampler kernels: the inputs no number of draws reaches.

The sampling audit (:mod:`dptaucc.audit.primitives`) bounds each primitive's privacy loss from
draws, so it cannot see a kernel whose law moves only on events of probability about 2⁻⁵³
(far tails of the 106-bit uniforms, ties of the Bernoulli on the 2⁻⁵³ grid, the exact choice's
acceptance bounds): a δ-sized change. These checks feed each kernel crafted randomness
(uniform pairs, OS words, a scripted ``Generator``) at exactly those inputs and compare its
decision with an exact reference: Python integers and :class:`fractions.Fraction`, and
:mod:`decimal` for exp and log (correctly rounded at 60 digits, so every reference value is
known within a relative 10⁻⁵⁰, which each comparison allows for). A float output is compared
within a stated tolerance tied to the kernel's documented precision; a decision (an index, a
Boolean, an integer) exactly, and only on cases whose exact margin is far wider than double
rounding. So no correct kernel can fail on any CPU.

Each case is a name, a one-line reason and a function returning None (conforms) or what
differs; cases are grouped by the kernel they exercise (:data:`GROUPS`), and
:func:`conformance_rows` runs them all (a few hundred milliseconds). A case whose function
raises is a failure too (a kernel that reads more randomness than its documented construction
runs out of crafted words). Where a kernel reads OS words through a module-level function,
the case swaps that function for the duration of the call (:func:`_words_from`), restoring it
after.

>>> rows = conformance_rows()
>>> all(r["conforms"] for r in rows), {r["check"] for r in rows}
(True, {'conformance'})
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from dptaucc import kernels
from dptaucc.privacy import (
    PrivacyLedger,
    Sampler,
    SecureSampler,
    SeededSampler,
    samplers,
    wide_choice,
)
from dptaucc.privacy import exact as exact_module
from dptaucc.privacy.bounded import bounded_discrete_laplace_mechanism

__all__ = ["Case", "GROUPS", "NotRun", "conformance_rows", "run_case"]

_ULP = Fraction(1, 2**53)  # the 53-bit grid of the uniforms
#: the reference's own relative error bound (60-digit Decimal exp/log, allowed for everywhere)
_REF = Fraction(1, 10**50)
#: a float output is compared with the exact value within this relative error: the kernels
#: are documented exact up to double rounding (an argument rounded once, the C library's
#: log within an ulp), a few 2⁻⁵³ at most
FLOAT_RTOL = Fraction(1, 2**48)
#: ... or this absolute error of an exponential variate: U's low part (lo + 2⁻⁵⁴)·2⁻⁵³ is
#: itself rounded for lo ≥ ½ (an absolute 2⁻¹⁰⁷ in U, half the 106-bit grid's step), which is
#: all of a variate −ln U ≈ 1 − U next to U = 1 (there hi = lo = 1 − 2⁻⁵³ gives 0, not 2⁻¹⁰⁷)
EXP_ATOL = Fraction(1, 2**106)
#: a case's exact decision must be this far (relative to the total) from any boundary
_MARGIN = Fraction(1, 2**40)
_ONE_MINUS = 1.0 - 2.0**-53  # the largest 53-bit uniform


class NotRun(Exception):
    """A case that cannot run here (its path does not exist): reported, never a pass."""


@dataclass(frozen=True)
class Case:
    """One conformance case: ``run()`` returns None when the kernel conforms, else what
    differs."""

    name: str
    reason: str
    run: Callable[[], str | None]


# ----------------------------------------------------------------- exact references
def _decimal(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def _exp_neg(x: Fraction) -> Fraction:
    """e^(−x) within a relative 10⁻⁵⁸ (Decimal's correctly rounded exp at 60 digits)."""
    with localcontext() as ctx:
        ctx.prec = 60
        return Fraction((-_decimal(x)).exp())


def _exp_neg_enclosure(x: Fraction) -> tuple[Fraction, Fraction]:
    """Rationals [a, b] ∋ e^(−x) for x ≥ 0: exactly [1, 1] at x = 0, else the 60-digit value
    widened by a relative 10⁻⁵⁰, capped at 1."""
    if x == 0:
        return Fraction(1), Fraction(1)
    r = _exp_neg(x)
    return r * (1 - _REF), min(r * (1 + _REF), Fraction(1))


def _neg_log(u: Fraction) -> Fraction:
    """−ln u for 0 < u < 1, within a relative 10⁻⁵⁰."""
    with localcontext() as ctx:
        ctx.prec = 60
        return Fraction(-(_decimal(u).ln()))


def _uniform106(hi: float, lo: float) -> Fraction:
    """U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³ exactly: the seeded kernels' 106-bit uniform."""
    return Fraction(hi) + (Fraction(lo) + Fraction(1, 2**54)) * _ULP


def _close(got: float, exact: Fraction, atol: Fraction = Fraction(0)) -> bool:
    """``got`` within :data:`FLOAT_RTOL` relative (plus the reference's own 10⁻⁵⁰) or
    ``atol`` absolute of ``exact``."""
    return math.isfinite(got) and (abs(Fraction(got) - exact)
                                   <= (FLOAT_RTOL + _REF) * abs(exact) + atol)


def _inversion(logits: Sequence[float], hi: float, lo: float, scale: float = 1.0) -> int:
    """The exact inverse-CDF choice of :func:`dptaucc.kernels.choose_by_inversion`: weights
    exp(logit/scale − max) in ascending order (ties in index order), the first whose running
    sum exceeds U·total. Refuses a case whose U·total lies within a relative :data:`_MARGIN`
    of a running sum the kernel's rounding could move it across (not 0, which U·total > 0
    never crosses, nor the total: a U·total rounded past it takes the last choice by
    construction)."""
    x = [Fraction(v) / Fraction(scale) for v in logits]
    top = max(x)
    w = [_exp_neg(top - v) for v in x]
    order = sorted(range(len(w)), key=lambda j: (w[j], j))
    total = sum(w)
    target = _uniform106(hi, lo) * total
    acc = Fraction(0)
    for pos, j in enumerate(order):
        below = acc
        acc += w[j]
        if target < acc:
            last = pos == len(order) - 1
            if ((pos > 0 and target - below < _MARGIN * target)
                    or (not last and acc - target < _MARGIN * acc)):
                raise ValueError("conformance case too close to a boundary: redesign it")
            return j
    return order[-1]


# ----------------------------------------------------------------- crafted randomness
class _Scripted(np.random.Generator):
    """A ``Generator`` whose ``random(size)`` returns the scripted arrays in order (each
    broadcast to ``size``): the seeded sampler's uniforms, crafted. Its other methods are
    refused, so a sampler that draws anything else is seen."""

    def __init__(self, script: Sequence):
        super().__init__(np.random.PCG64(0))
        self._script = list(script)

    def random(self, size=None, dtype=np.float64, out=None):
        if not self._script:
            raise RuntimeError("the sampler read more uniforms than its documented construction")
        value = np.asarray(self._script.pop(0), dtype=np.float64)
        return np.broadcast_to(value, () if size is None else size).copy()

    def _refused(self, *args, **kwargs):
        raise RuntimeError("the sampler drew something other than uniforms from its Generator")

    integers = standard_normal = standard_exponential = _refused

    @property
    def left(self) -> int:
        return len(self._script)


def _words(script: Sequence[int]) -> Callable[[int], np.ndarray]:
    """A ``words(n)`` source returning the scripted 64-bit words in order."""
    queue = [int(w) for w in script]

    def words(count: int) -> np.ndarray:
        if len(queue) < count:
            raise RuntimeError("the kernel read more OS words than its documented construction")
        out = np.array(queue[:count], dtype=np.uint64)
        del queue[:count]
        return out
    return words


@contextlib.contextmanager
def _words_from(module, script: Sequence[int]) -> Iterator[None]:
    """``module.os_words`` replaced by the scripted words for the duration, then restored."""
    original = module.os_words
    module.os_words = _words(script)
    try:
        yield
    finally:
        module.os_words = original


def _differs(what: str, got, want) -> str | None:
    return None if got == want else f"{what}: got {got}, exact {want}"


# ----------------------------------------------------------------- the 106-bit exponential
#: (hi, lo) pairs: U near 0 (below 2⁻⁵³, where only the low word resolves it), at the branch
#: switch ½, and near 1 (1 − U from the tail)
_EXP_UNIFORMS = [(0.0, 0.0), (0.0, 0.5), (0.0, _ONE_MINUS), (2.0**-53, 0.0), (2.0**-53, 0.75),
                 (0.5 - 2.0**-53, 0.3), (0.5, 0.3), (0.25, 0.9), (_ONE_MINUS, 0.0),
                 (_ONE_MINUS, 0.5), (_ONE_MINUS, _ONE_MINUS), (1.0 - 2.0**-20, 0.125)]


def _exponential_case(blocked: bool) -> str | None:
    hi = np.array([h for h, _ in _EXP_UNIFORMS])
    lo = np.array([v for _, v in _EXP_UNIFORMS])
    reps = kernels.SELECT_MAX_VALUES // len(hi) + 1 if blocked else 1
    got = kernels.exponential_from_uniforms(np.tile(hi, reps), np.tile(lo, reps))
    for i, (h, v) in enumerate(_EXP_UNIFORMS * reps):
        exact = _neg_log(_uniform106(h, v))
        if not _close(float(got[i]), exact, EXP_ATOL):
            return (f"hi={h!r}, lo={v!r}: got {float(got[i])!r}, exact −ln U = "
                    f"{float(exact)!r} (tolerance 2^-48 relative or 2^-106)")
    return None


def _seeded_exponential_case() -> str | None:
    hi = np.array([h for h, _ in _EXP_UNIFORMS])
    lo = np.array([v for _, v in _EXP_UNIFORMS])
    rng = _Scripted([hi, lo])
    got = SeededSampler(rng).standard_exponential(hi.size)
    for i, (h, v) in enumerate(_EXP_UNIFORMS):
        exact = _neg_log(_uniform106(h, v))
        if not _close(float(got[i]), exact, EXP_ATOL):
            return (f"first draw hi={h!r}, second draw lo={v!r}: got {float(got[i])!r}, "
                    f"exact {float(exact)!r}")
    return f"{rng.left} of its 2 scripted uniforms unread" if rng.left else None


#: (hi₁, lo₁, hi₂, lo₂, scale): two exponentials E₁, E₂, the output ⌊E₁·b⌋ − ⌊E₂·b⌋
_LAPLACE_DRAWS = [(0.0, 0.0, 0.5, 0.3, 1.0), (0.0, 0.5, 0.0, _ONE_MINUS, 1.0),
                  (2.0**-53, 0.75, 0.75, 0.25, 3.0), (0.6, 0.5, 0.0, 0.0, 0.5)]


def _seeded_laplace_case() -> str | None:
    cols = list(zip(*_LAPLACE_DRAWS, strict=True))
    for scale in sorted(set(cols[4])):
        rows = [d for d in _LAPLACE_DRAWS if d[4] == scale]
        script = [np.array([d[k] for d in rows]) for k in range(4)]
        rng = _Scripted(script)
        got = SeededSampler(rng).discrete_laplace(len(rows), scale)
        for i, (h1, l1, h2, l2, b) in enumerate(rows):
            parts = []
            for h, v in ((h1, l1), (h2, l2)):
                e = _neg_log(_uniform106(h, v)) * Fraction(b)
                if abs(e - round(e)) < Fraction(1, 2**30) * max(1, e):
                    raise ValueError("conformance case too close to an integer: redesign it")
                parts.append(math.floor(e))
            want = parts[0] - parts[1]
            if int(got[i]) != want:
                return (f"uniforms ({h1!r}, {l1!r}), ({h2!r}, {l2!r}) at scale {b}: got "
                        f"{int(got[i])}, exact {want}")
        if rng.left:
            return f"{rng.left} of its 4 scripted uniforms unread"
    return None


# ----------------------------------------------------------------- inverse-CDF choice
def _choice_rows(k: int) -> list[tuple[str, list[float], float, float, float]]:
    """(what, logits, hi, lo, scale) at k choices, each with a wide exact margin."""
    zeros = [0.0] * k
    tiny = list(zeros)
    tiny[1] = -60.0  # probability ≈ 2⁻⁸⁷: drawn only by U below it
    half_ulp = list(zeros)  # choice 1's probability ≈ ½·2⁻⁵³: the low word decides it
    half_ulp[1] = math.log(0.5 * (k - 1) * 2.0**-53)
    graded = [-0.5 * j for j in range(k)]
    return [
        ("U = 2^-107 takes the least likely choice", tiny, 0.0, 0.0, 1.0),
        ("U = 0.25·2^-53 (low word) takes the choice of probability ½·2^-53", half_ulp, 0.0,
         0.25, 1.0),
        ("U = 0.75·2^-53 (low word) passes it", half_ulp, 0.0, 0.75, 1.0),
        ("U next to 1 with tied weights takes the last tie (the fallback)", zeros, _ONE_MINUS,
         _ONE_MINUS, 1.0),
        ("U next to 1 takes the largest weight", graded, _ONE_MINUS, _ONE_MINUS, 1.0),
        ("an ordinary U at scale 2", [0.3 * j for j in range(k)], 0.5, 0.5, 2.0),
    ]


def _inversion_case(path: str, k: int) -> str | None:
    """Every choice row at k choices through one path of the inverse-CDF choice."""
    rows = _choice_rows(k)
    for what, logits, hi, lo, scale in rows:
        want = _inversion(logits, hi, lo, scale)
        x, h, v = np.array([logits]), np.array([hi]), np.array([lo])
        if path == "wide rows":
            got = wide_choice.choose_wide_rows(x, h, v, scale)
        else:
            if path == "compiled" and kernels._native is None:
                raise NotRun("the compiled loops are not built here")
            with kernels.compiled_loops(path == "compiled"):
                got = kernels.choose_by_inversion(x, h, v, scale)
        if int(got[0]) != want:
            return f"{what} (k = {k}): got index {int(got[0])}, exact {want}"
    return None


def _seeded_choice_case(k: int, n_rows: int) -> str | None:
    """The seeded sampler's choice on crafted uniforms: its first draw is hi, its second lo
    (one per row, the documented order), on the narrow or the wide (row by row) path."""
    unread = []
    for what, logits, hi, lo, scale in _choice_rows(k):
        want = _inversion(logits, hi, lo, scale)
        rng = _Scripted([np.full(n_rows, hi), np.full(n_rows, lo)])
        got = SeededSampler(rng).choose(np.tile(logits, (n_rows, 1)), scale)
        if not np.all(got == want):
            return (f"{what} (k = {k}, {n_rows} rows): got {sorted(set(got.tolist()))}, exact "
                    f"{want}")
        if rng.left:
            unread.append(f"{what}: {rng.left} of its 2 scripted uniforms unread")
    return "; ".join(unread) or None


# ----------------------------------------------------------------- Bernoulli on the 2⁻⁵³ grid
def _grid_below(x: Fraction) -> float:
    """The largest multiple of 2⁻⁵³ strictly below x (x > 0)."""
    return float((math.ceil(x / _ULP) - 1) * _ULP)


def _grid_at_or_above(x: Fraction) -> float:
    return float(math.ceil(x / _ULP) * _ULP)


def _bernoulli_draws() -> list[tuple[float, float, float]]:
    """(p, hi, lo) with U = hi + lo·2⁻⁵³ exactly at, just below or just above p."""
    out = []
    for p in (0.3, 0.1, 1e-10, 2.0**-60, 1.5 * 2.0**-53, 0.75):
        whole = math.floor(Fraction(p) / _ULP)
        frac = Fraction(p) / _ULP - whole  # U's low part must fall below it
        hi = float(whole * _ULP)
        if frac > 0:
            out += [(p, hi, _grid_below(frac)), (p, hi, _grid_at_or_above(frac))]
        else:
            out += [(p, hi, 0.0), (p, float((whole - 1) * _ULP), _ONE_MINUS)]
    return [*out, (1.0, _ONE_MINUS, _ONE_MINUS), (0.0, 0.0, 0.0)]


def _bernoulli_exact(p: float, hi: float, lo: float) -> bool:
    return Fraction(hi) + Fraction(lo) * _ULP < Fraction(p)


def _bernoulli_case(draw: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> str | None:
    cases = _bernoulli_draws()
    p, hi, lo = (np.array(c) for c in zip(*cases, strict=True))
    got = draw(p, hi, lo)
    for i, (pi, h, v) in enumerate(cases):
        want = _bernoulli_exact(pi, h, v)
        if bool(got[i]) != want:
            return (f"p={pi!r}, hi={h!r} (tie: {h == math.floor(pi / 2.0**-53) * 2.0**-53}), "
                    f"lo={v!r}: got {bool(got[i])}, exact U < p is {want}")
    return None


def _scripted_sampler(sampler_type):
    """The Bernoulli of a sampler (the seeded one, or the base class's default) whose rng
    returns hi, then lo."""
    def draw(p, hi, lo):
        rng = _Scripted([hi, lo])
        if sampler_type is SeededSampler:
            sampler = SeededSampler(rng)
        else:
            sampler = sampler_type()
            sampler.rng = rng
        return sampler.bernoulli(p)
    return draw


def _secure_bernoulli(p, hi, lo):
    """SecureSampler.bernoulli on OS words whose top 53 bits are hi·2⁵³ and lo·2⁵³ (their
    low 11 bits set, which must not count)."""
    to_word = [(int(x * 2.0**53) << 11) | 0x7FF for x in (*hi, *lo)]
    try:
        sampler = SecureSampler()
    except ImportError as error:  # pragma: no cover - without OpenDP no secure path exists
        raise NotRun(f"no secure sampler here ({error})") from error
    with _words_from(samplers, to_word):
        return sampler.bernoulli(p)


# ----------------------------------------------------------------- the exact choice
#: γ values across the exact choice's range: 0, subnormal, tiny, ordinary, where γ·2⁻⁴⁸
#: passes the 2⁻⁴⁰ margin (256), next to the far switch (700) and beyond, and an overflow
_GAMMAS = [0.0, 5e-324, 1e-300, 2.0**-50, 1e-6, 0.5, 1.0, 2.5, 10.0, 22.18, 40.0, 100.0, 200.0,
           255.9, 257.0, 300.0, 500.0, 699.9, 700.0, 700.0 + 3e-12, 700.001, 1000.0, 1399.99,
           1400.0, 1e6, math.inf]


def _float_bounds_case() -> str | None:
    """lo ≤ e^(−γ) ≤ hi for every γ the rounded g can stand for: |g − γ| ≤ 2⁻⁴⁸·g + 2⁻¹⁰⁰⁰
    (:mod:`dptaucc.privacy.exact`), checked exactly."""
    g = np.array(_GAMMAS)
    lo, hi = exact_module._float_bounds(g)
    for gi, l, h in zip(_GAMMAS, lo.tolist(), hi.tolist(), strict=True):
        if not (0.0 <= l <= h <= 1.0):
            return f"γ = {gi!r}: bounds [{l!r}, {h!r}] not ordered inside [0, 1]"
        if math.isinf(gi):  # an overflowed difference: γ far beyond 700
            if l != 0.0 or Fraction(h) < _exp_neg(Fraction(1000)):
                return f"γ = inf: bounds [{l!r}, {h!r}], expected [0, about e^-700]"
            continue
        err = Fraction(gi) * Fraction(1, 2**48) + Fraction(1, 2**1000)
        largest, smallest = Fraction(gi) + err, max(Fraction(0), Fraction(gi) - err)
        lo_need = _exp_neg_enclosure(largest)[0]
        hi_need = _exp_neg_enclosure(smallest)[1]
        if Fraction(l) > lo_need:
            return (f"γ = {gi!r}: lo = {l!r} above e^(−(g + err)) = {float(lo_need)!r} "
                    f"(relative {float(Fraction(l) / lo_need - 1):.3g})")
        if Fraction(h) < hi_need:
            return (f"γ = {gi!r}: hi = {h!r} below e^(−(g − err)) = {float(hi_need)!r} "
                    f"(relative {float(Fraction(h) / hi_need - 1):.3g})")
    return None


def _exp_neg_bounds_case() -> str | None:
    for gamma, bits in ((Fraction(0), 60), (Fraction(1, 3), 60), (Fraction(5, 2), 80),
                        (Fraction(40), 100), (Fraction(7001, 10), 157), (Fraction(10**4), 60)):
        lo, hi = exact_module.exp_neg_bounds(gamma, bits)
        ref_lo, ref_hi = _exp_neg_enclosure(gamma)
        if not (lo <= ref_lo and ref_hi <= hi):
            return (f"γ = {gamma}: [{float(lo)!r}, {float(hi)!r}] misses e^-γ = "
                    f"{float(ref_lo)!r}")
        if hi - lo > Fraction(1, 2**bits):
            return f"γ = {gamma}: width {float(hi - lo):.3g} above 2^-{bits}"
    return None


def _uniform_below_case() -> str | None:
    top = 2**64 - 1
    for bound, script, want in (
            ([3], [top, 7], [1]),  # 2⁶⁴ − 1 is the one out-of-range word for 3
            ([2**63 + 1], [2**63 + 1, 2**63], [2**63]),  # limit = bound: words ≥ it redrawn
            ([1, 5, 2**32 + 1], [0, top, 2**32, 9], [0, 4, 2**32])):
        got = exact_module.uniform_below(np.array(bound, dtype=np.uint64), _words(script)).tolist()
        if got != want:
            return f"bound {bound}, words {script}: got {got}, exact {want}"
    return None


#: scores of the exact choice's cases: with S the proposal's scale bits (32), the top choice
#: (weight 2^S, t = 1) and one at γ = 40 (weight 1: 2^S·e⁻⁴⁰ ≈ 1.8·10⁻⁸ < 1, t = 2^S·e⁻⁴⁰),
#: so the proposal word 2^S picks choice 1 and any word below it choice 0 (module docstring
#: of :mod:`dptaucc.privacy.exact`)
_EXACT_SCORES = np.array([[0.0, -40.0]])


def _exact_choice_cases() -> list[tuple[str, list[int], int]]:
    """(what, words, exact index) for the two-choice row: proposal word, U's word(s), and a
    second round (choice 0, U = 0) that a rejected proposal falls through to. S is read from
    the module, so another resolution of the proposal (the same law) is no difference."""
    bits = exact_module._SCALE_BITS
    if not 1 <= bits <= 56:
        raise ValueError(f"conformance case built for 1 to 56 scale bits, not {bits}")
    top = 2**bits
    t = _exp_neg(Fraction(40)) * top
    again = [0, 0]  # round 2: choice 0, accepted (t = 1)
    below = math.floor(t * 2**53) - 2
    above = math.ceil(t * 2**53) + 2
    fine = t * 2**117  # U to 117 bits: prefix and one more word
    low, high = math.floor(fine) - 2, math.ceil(fine) + 2
    if low >> 64 != math.floor(t * 2**53) or high >> 64 != math.floor(t * 2**53):
        raise ValueError("conformance case: t too close to the 53-bit grid: redesign it")
    mask = 2**64 - 1
    return [
        ("U's 53 bits just below t: accept choice 1", [top, (below << 11) | 0x7FF, *again], 1),
        ("U's 53 bits just above t: reject, then choice 0", [top, above << 11, *again], 0),
        ("U = 0.6 against t = 1: accept choice 0", [0, int(0.6 * 2**53) << 11, top, 0], 0),
        ("U straddles t at 53 bits, below at 117: accept choice 1",
         [top, (low >> 64) << 11, low & mask, *again], 1),
        ("U straddles t at 53 bits, above at 117: reject", [top, (high >> 64) << 11,
                                                            high & mask, *again], 0),
        ("an out-of-range proposal word is redrawn", [2**64 - 1, top, below << 11, *again], 1),
    ]


def _exact_choose_case() -> str | None:
    for what, script, want in _exact_choice_cases():
        got = int(exact_module.exact_choose(_EXACT_SCORES, 1.0, _words(script))[0])
        if got != want:
            return f"{what}: got {got}, exact {want}"
    return None


# ----------------------------------------------------------------- argument contracts
def _bounded_refuses_case() -> str | None:
    """A release charged n_changed·ε with n_changed < 1 (or not whole) is refused before any
    noise is drawn or charged."""
    for bad in (0, -1, 0.5, True):
        ledger = PrivacyLedger()
        try:
            bounded_discrete_laplace_mechanism(
                np.array([0]), upper=10, epsilon=1.0, sensitivity=1,
                sampler=SeededSampler(np.random.default_rng(0)), ledger=ledger,
                step="conformance", n_changed=bad)
        except ValueError:
            if ledger.entries:
                return f"n_changed={bad!r}: refused, but charged first"
            continue
        return f"n_changed={bad!r} accepted: a release charged {ledger.epsilon_spent} ε"
    return None


def _gaussian_grid_case() -> str | None:
    """Values off the σ-relative grid (thirds, e, a large value), released by
    :func:`~dptaucc.privacy.gaussian_mechanism` from a seeded and a secure sampler: every
    output lies on the grid 2^(⌊log₂ σ⌋ − 24) (value + noise rounded there; a grid step is a
    power of two, so the check is exact). An output off it carries the exact value in its low
    bits, whatever the noise's law."""
    from dptaucc.privacy import gaussian_mechanism
    from dptaucc.privacy.mechanisms import grid_granularity

    values = np.array([0.1, 1.0 / 3.0, -math.e, 12345.678901, 2.0**-30])
    for sigma in (0.37, 1.0, 5.5):
        step = grid_granularity(sigma)
        for sampler in (SeededSampler(np.random.default_rng(0)), SecureSampler()):
            out = gaussian_mechanism(values, sigma=sigma, epsilon=1.0, delta=1e-5,
                                     sensitivity=1.0, sampler=sampler, ledger=PrivacyLedger(),
                                     step="conformance")
            off = np.flatnonzero(np.round(out / step) * step != out)
            if off.size:
                return (f"σ = {sigma}, {type(sampler).__name__}: output "
                        f"{float(out[off[0]])!r} for value {float(values[off[0]])!r} is off the "
                        f"grid {step!r}")
    return None


# ----------------------------------------------------------------- the groups
GROUPS: dict[str, list[Case]] = {
    "exponential_from_uniforms": [
        Case("small arrays", "−ln U for U near 0 (below 2⁻⁵³: the low word), at ½ and near 1, "
             "on the select path (≤ 1024 values)", lambda: _exponential_case(False)),
        Case("blocked arrays", "the same uniforms on the blocked path (> 1024 values), which "
             "splits the two branches by index", lambda: _exponential_case(True)),
    ],
    "seeded sampler draws": [
        Case("standard_exponential", "hi is the first uniform drawn, lo a second one (a reused "
             "draw moves U below 2⁻⁵³)", _seeded_exponential_case),
        Case("discrete_laplace", "⌊E₁·b⌋ − ⌊E₂·b⌋ from four crafted uniforms, E₁ out to "
             "107·ln 2", _seeded_laplace_case),
        Case("choose, narrow", "hi then lo, one per row, decide as the exact inversion "
             "(20 choices in 40 rows)", lambda: _seeded_choice_case(20, 40)),
        Case("choose, wide", "the row-by-row path (64 choices in 2 rows): the same",
             lambda: _seeded_choice_case(64, 2)),
        Case("bernoulli", "hi then lo on the 2⁻⁵³ grid: U < p exactly, ties included",
             lambda: _bernoulli_case(_scripted_sampler(SeededSampler))),
        Case("bernoulli (Sampler default)", "the base class's Bernoulli reads rng the same way",
             lambda: _bernoulli_case(_scripted_sampler(Sampler))),
    ],
    "choose_by_inversion": [
        Case(f"{path}, k = {k}", f"U at 2⁻¹⁰⁷, in the 2⁻⁵³ band, next to 1 (the fallback) and "
             f"ordinary, against the exact inversion ({path} path)",
             lambda path=path, k=k: _inversion_case(path, k))
        for path, ks in (("compiled", (3, 16, 64)), ("numpy", (3, 16, 20, 65)),
                         ("wide rows", (3, 64, 70)))
        for k in ks
    ],
    "_bernoulli_from_uniforms": [
        Case("ties on the 2⁻⁵³ grid", "hi = ⌊p·2⁵³⌋·2⁻⁵³ exactly: lo decides, U < p compared "
             "exactly (p = 0.3, 0.1, 10⁻¹⁰, 2⁻⁶⁰, 1.5·2⁻⁵³, on the grid, 0, 1)",
             lambda: _bernoulli_case(samplers._bernoulli_from_uniforms)),
    ],
    "SecureSampler.bernoulli": [
        Case("OS words", "the top 53 bits of two OS words give hi and lo (the low 11 bits "
             "ignored); ties decided by lo", lambda: _bernoulli_case(_secure_bernoulli)),
    ],
    "exact bounds": [
        Case("_float_bounds", "lo ≤ e^(−γ) ≤ hi for every γ the rounded g stands for, γ from 0 "
             "to 10⁶ and overflow", _float_bounds_case),
        Case("exp_neg_bounds", "the rational enclosure holds e^(−γ) within its width 2⁻ᵇⁱᵗˢ",
             _exp_neg_bounds_case),
        Case("uniform_below", "out-of-range words redrawn, the rest reduced modulo the bound",
             _uniform_below_case),
    ],
    "exact_choose": [
        Case("acceptance on crafted words", "the proposal by integer inversion, then U (53 bits "
             "of a word, more when undecided) against t = 2³²·e^(−γ)/w, decided exactly",
             _exact_choose_case),
    ],
    "gaussian_mechanism": [
        Case("outputs on the grid", "value + noise rounded to the σ-relative grid for values "
             "off it, seeded and secure: nothing of the exact value in the low bits",
             _gaussian_grid_case),
    ],
    "mechanism arguments": [
        Case("bounded n_changed", "n_changed < 1 would release noise charged 0 ε: refused "
             "before any charge", _bounded_refuses_case),
    ],
}


def run_case(case: Case) -> str | None:
    """A case's difference from the exact reference, or None; an exception is a difference
    (its type and message).

    >>> run_case(Case("ok", "conforms", lambda: None)) is None
    True
    >>> run_case(Case("broken", "raises", lambda: 1 / 0))
    'raised ZeroDivisionError: division by zero'
    """
    try:
        with np.errstate(all="ignore"):
            return case.run()
    except NotRun:
        raise
    except Exception as error:  # noqa: BLE001 - any failure of the kernel is a finding
        return f"raised {type(error).__name__}: {error}"


def conformance_rows(groups: dict[str, list[Case]] | None = None) -> list[dict]:
    """One row per group of :data:`GROUPS`: ``check`` "conformance", ``primitive`` the group,
    ``n`` its cases run, ``conforms``, ``event`` ("all N cases exact" or the first difference,
    with its case's reason; cases that cannot run here are named, never counted as exact)
    and ``failed`` (every failing case: name, difference).

    >>> bad = {"demo": [Case("a", "conforms", lambda: None),
    ...                 Case("b", "differs", lambda: "3 != 4")]}
    >>> [(r["primitive"], r["n"], r["conforms"], r["event"]) for r in conformance_rows(bad)]
    [('demo', 2, False, 'b (differs): 3 != 4')]
    """
    rows = []
    for group, cases in (GROUPS if groups is None else groups).items():
        start = time.perf_counter()
        failed, skipped, ran = [], [], 0
        for case in cases:
            try:
                difference = run_case(case)
            except NotRun as why:
                skipped.append(f"{case.name} not run: {why}")
                continue
            ran += 1
            if difference is not None:
                failed.append((case, difference))
        if failed:
            c, d = failed[0]
            event = f"{c.name} ({c.reason}): {d}"
        else:
            event = f"all {ran} cases exact" if ran else "no case ran"
        if skipped:
            event += "; " + "; ".join(skipped)
        rows.append({"check": "conformance", "primitive": group, "path": "exact",
                     "epsilon": math.nan, "delta": math.nan, "epsilon_lower": math.nan,
                     "epsilon_map": math.nan, "map_ok": True, "map": "", "n": ran,
                     "seconds": time.perf_counter() - start, "event": event,
                     "conforms": not failed,
                     "failed": "; ".join(f"{c.name}: {d}" for c, d in failed)})
    return rows
