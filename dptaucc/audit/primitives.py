"""Mechanism-level audits: every primitive of :mod:`dptaucc.privacy` on its worst neighbours.

Each primitive is run once per side on n copies of a worst-case neighbouring input (one
batched call each), at its claimed calibration for ε (and δ for the Gaussian). The first
``select_share`` of each side's outputs chooses the event — a threshold set {out ≤ t} or
{out > t}, or, for few distinct outputs, a set of outputs ordered by their estimated
likelihood ratio (Neyman–Pearson), in either direction — and the rest counts it. With the
event fixed before counting, one (1 − α) statement holds: by (ε, δ)-DP,
P_num(E) ≤ e^ε·P_den(E) + δ, so ε_lower = log((l_num − δ)/u_den) with one-sided
Clopper–Pearson bounds at α/2 each is a lower bound on the true ε (0 when it says nothing).

Worst-case pairs (why each is worst case), with Δ = :data:`SENSITIVITY` = 2 wherever the
sensitivity is the audit's to choose: every noise scale Δ/ε then differs from 1 and from its
inverse at the default ε = 1, so a scale inverted, or multiplied where it should divide, shows
(at Δ = ε = 1 the scale is 1 and such a slip changes nothing):

* ``discrete-laplace``: x = 0 against x = Δ in one coordinate; {out ≤ t} has likelihood
  ratio exactly e^ε for every t ≤ 0 (monotone ratio, the bound is attained).
* ``bounded-discrete-laplace``: w = 0 against w = 1 on {0, …, 10}; the privacy map of
  :mod:`dptaucc.privacy.bounded` is attained at y = 0 for this pair.
* ``bounded-discrete-laplace-fine``: w = 0 against w = 1 on {0, …, 20} at a fifth of the
  audit's ε (0.2: a noise scale near 9, each value a small step of it, the regime of a value
  charged a small share of a fit's ε, as DP-KMeans' sums): how the sampler's draw is folded
  into the range then decides the law near the value (at ε = 1 on {0, …, 10} the scale is
  near 1.3 and a fold that flips the negative half moves no loss above ε; here it moves the
  loss at y = 1 to 2.75 times the charge, computed from the exact law). Its row's ε is the
  charge, 0.2.
* ``exponential`` / ``linear-exponential``: 20 choices, all utilities equal (0 for the linear
  mechanism, whose profile is 0 on D; for the exponential mechanism −1,
  :data:`UTILITY_BASE`, with choice 0 higher by Δ/8, :data:`UTILITY_TILT`: not 0, whose
  special values hide a kernel that transforms the utilities, and a maximum that changes
  between D and D', which a kernel that mishandles the largest weight needs to show) against
  all but choice 0 raised by Δ (a change of range exactly Δ). The event {choice 0} has ratio
  (e^τ + (k − 1)e^ε)/(e^τ + k − 1) with k choices and τ the tilt over the noise scale (Δ/ε),
  the largest a 2-outcome event of this mechanism reaches at that mass: for k = 20 at ε = 1,
  0.97 ε untilted (the linear mechanism), 0.963 ε with τ = 1/8 (the exponential one). The
  linear mechanism's W has a second column, constant Δ/2 (its profiles 1 there): every row of
  W then spans Δ/2, so a sensitivity read along the wrong axis halves (a one-column W hid it:
  every row's range is 0 and the choice falls back to uniform, data-blind).
* ``gaussian``: x = 0 against x = Δ, σ from the analytic calibration (Balle & Wang 2018)
  at (ε, δ); the tail event {out > t} at the right t attains the hockey-stick bound. The audit
  uses δ = 10⁻² by default: at δ = 10⁻⁵ the informative tail has probability ~10⁻³ and 10⁵
  samples bound ε only at about 0.6 ε.

* ``exponential-wide``: the same change with 64 choices in calls of 16 rows, which the seeded
  sampler serves row by row (:mod:`dptaucc.privacy.wide_choice`, DPM's and DPHD's path);
  {choice 0} has the ratio above with k = 64 (0.99 ε at ε = 1 with the tilt).
* ``linear-exponential-sparse``: the linear exponential mechanism on sparse (CSR) profiles,
  the path of sparse inputs (the dense one is ``linear-exponential``).
* ``exponential-many``: the same change with 65 choices in calls of many rows, more choices
  than the compiled loop takes (64): the column-by-column numpy path that sorts by argsort
  (DP-τCC with more than 64 clusters); the ratio above with k = 65.
* ``exponential-portable``: the same change with 16 choices and the compiled loops switched
  off (``DPTAUCC_NATIVE=0``): the numpy path with the sorting network (up to 16 choices; more
  go to the argsort path of ``exponential-many``), which runs wherever the package was
  installed without a C compiler; the ratio above with k = 16.

The last two differ from ``exponential`` only on the seeded path (the secure sampler's exact
choice takes neither), so they are audited there only (:data:`SEEDED_ONLY`).

Each call is also run with the audit hook listening: the privacy map
(:mod:`dptaucc.audit.privacy_map`) recomputes from what the sampler really drew what the call
costs (``epsilon_map``); a charge below it is a violation as well.

**Exact conformance** (:mod:`dptaucc.audit.conformance`, rows with ``check`` "conformance"):
no number of draws sees a kernel whose law moves only on events of probability about 2⁻⁵³
(the far tails of the 106-bit uniforms, Bernoulli ties on the 2⁻⁵³ grid, the exact choice's
acceptance bounds, a low uniform word reused from the high one). Those inputs are fed to each
kernel, crafted, and its decision compared with an exact reference (integers, fractions); one
row per kernel group, deterministic, under a second. Any difference is a violation. The
statistical rows have ``check`` "sampling".

On the secure path the slow exact samplers get fewer outputs (:data:`SECURE_N`), so their
bounds are looser. ``--secure --fresh`` draws every output from a *new* secure sampler
(:data:`FRESH_PRIMITIVES`, :mod:`dptaucc.audit.secure`): a sampler whose state a seed
reproduces draws alike in every fresh copy, which one long-lived sampler does not show.

``python -m dptaucc.audit.primitives [--secure [--fresh]] [--epsilon E] [-n N]`` prints the
table and the conformance checks and exits 3 when some ε_lower or ε_map exceeds the claimed ε
or a kernel differs from its exact reference (a violation), 0 otherwise
(``--conformance-only``: the exact checks alone, in seconds).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dptaucc._cli import plain
from dptaucc.audit.conformance import conformance_rows
from dptaucc.audit.ledger_check import RTOL, mapped, observing
from dptaucc.audit.stats import cp_lower, cp_upper
from dptaucc.baselines.nmf_dp.gaussian import analytic_gaussian_sigma
from dptaucc.kernels import compiled_loops
from dptaucc.privacy import (
    PrivacyLedger,
    Sampler,
    SecureSampler,
    SeededSampler,
    bounded_discrete_laplace_mechanism,
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    linear_exponential_mechanism,
)
from dptaucc.privacy.checks import ScaledSampler

__all__ = ["PRIMITIVES", "FRESH_PRIMITIVES", "SEEDED_ONLY", "audit_primitive",
           "audit_primitives", "primitive_names",
           "fresh_sampler_rows", "violated", "main"]

N_CHOICES = 20
#: the sensitivity of every pair whose sensitivity the audit chooses (see the module docstring)
SENSITIVITY = 2
#: the exponential mechanism's utilities on D (and of its one unchanged choice on D'): the
#: mechanism is invariant to a shift, and a utility of 0 hides a kernel that transforms the
#: utilities themselves (scale/u is inf at 0: every choice alike on both sides)
UTILITY_BASE = -1.0
#: ... and choice 0 (the one D' does not raise) above the others by Δ/8: the unique maximum
#: on D, below every other choice on D', so a kernel that mishandles the largest weight
#: changes the law of one side only (with every utility tied on D it changed neither)
UTILITY_TILT = 0.25
BOUNDED_UPPER = 10
#: the bounded mechanism's second pair: a fifth of the audit's ε on a range of 20 (scale ≈ 9)
FINE_BOUND_UPPER, FINE_BOUND_SHARE = 20, 0.2
#: outputs per side at most, on the secure path, where OpenDP's exact samplers cost ~15 µs per
#: discrete-Laplace value and ~0.1 ms per Gaussian value (the Gaussian needs 2·10⁵ per side to
#: resolve 0.9 ε at δ = 10⁻²: about 40 s)
SECURE_N = {"discrete-laplace": 100_000, "bounded-discrete-laplace": 100_000,
            "gaussian": 200_000, "exponential-wide": 50_000}
#: outputs per side at most of the wide choice (calls of WIDE_ROWS rows of WIDE_CHOICES)
WIDE_N = 100_000
WIDE_ROWS, WIDE_CHOICES = 16, 64
#: outputs per side at most of the many-choice call (MANY_CHOICES values each)
MANY_N, MANY_CHOICES = 300_000, 65
#: choices of the portable call: at most the numpy path's sorting network takes (16)
PORTABLE_CHOICES = 16
#: the primitives whose path exists on the seeded sampler only (the secure sampler's exact
#: choice takes neither numpy path)
SEEDED_ONLY = ("exponential-many", "exponential-portable")
#: the primitives audited with a fresh secure sampler per output (``fresh=True``)
FRESH_PRIMITIVES = ("discrete-laplace", "bounded-discrete-laplace", "exponential", "gaussian")


def _discrete_laplace(side, n, eps, delta, sampler, ledger):
    x = np.full(n, side * SENSITIVITY, dtype=np.int64)
    return discrete_laplace_mechanism(x, epsilon=eps, sensitivity=SENSITIVITY, sampler=sampler,
                                      ledger=ledger, step="audit")


def _bounded_discrete_laplace(side, n, eps, delta, sampler, ledger):
    x = np.full(n, side, dtype=np.int64)
    return bounded_discrete_laplace_mechanism(x, upper=BOUNDED_UPPER, epsilon=eps, sensitivity=1,
                                              sampler=sampler, ledger=ledger,
                                              step="audit")


def _bounded_discrete_laplace_fine(side, n, eps, delta, sampler, ledger):
    x = np.full(n, side, dtype=np.int64)
    return bounded_discrete_laplace_mechanism(x, upper=FINE_BOUND_UPPER,
                                              epsilon=eps * FINE_BOUND_SHARE, sensitivity=1,
                                              sampler=sampler, ledger=ledger, step="audit")


def _utilities(shape: tuple[int, int]) -> np.ndarray:
    """The exponential pairs' utilities on D: UTILITY_BASE, choice 0 above by UTILITY_TILT."""
    utilities = np.full(shape, UTILITY_BASE)
    utilities[:, 0] += UTILITY_TILT
    return utilities


def _exponential(side, n, eps, delta, sampler, ledger):
    utilities = _utilities((n, N_CHOICES))
    utilities[:, 1:] += side * SENSITIVITY  # range of the change: exactly Δ
    return exponential_mechanism(utilities, epsilon=eps, sensitivity=SENSITIVITY, sampler=sampler,
                                 ledger=ledger, step="audit")


def _linear_weights() -> np.ndarray:
    """W of the linear pairs, 20 × 2: column 0 is 0 for choice 0 and Δ for the others (range
    Δ, the sensitivity), column 1 constant Δ/2 (range 0). Every row's range is Δ/2, so a
    sensitivity taken along the wrong axis of W comes out as Δ/2, and a single column (whose
    rows all have range 0) would hide that slip behind a uniform choice."""
    weights = np.full((N_CHOICES, 2), float(SENSITIVITY))
    weights[0, 0] = 0.0
    weights[:, 1] = SENSITIVITY / 2.0
    return weights


def _linear_profiles(side, n) -> np.ndarray:
    """Profiles (side, 1): column 1 adds Δ/2 to every choice alike."""
    return np.column_stack([np.full(n, float(side)), np.ones(n)])


def _linear_exponential(side, n, eps, delta, sampler, ledger):
    weights = _linear_weights()  # Δ = max_d range of W's columns
    profiles = _linear_profiles(side, n)
    return linear_exponential_mechanism(profiles, weights=weights, epsilon=eps, sampler=sampler,
                                        ledger=ledger, step="audit")


def _exponential_wide(side, n, eps, delta, sampler, ledger):
    utilities = _utilities((WIDE_ROWS, WIDE_CHOICES))
    utilities[:, 1:] += side * SENSITIVITY
    out = [exponential_mechanism(utilities, epsilon=eps, sensitivity=SENSITIVITY,
                                 sampler=sampler,
                                 ledger=ledger if i == 0 else PrivacyLedger(), step="audit")
           for i in range(-(-n // WIDE_ROWS))]  # one charge to ``ledger``, as one call
    return np.concatenate(out)[:n]


def _exponential_many(side, n, eps, delta, sampler, ledger):
    utilities = _utilities((n, MANY_CHOICES))
    utilities[:, 1:] += side * SENSITIVITY
    return exponential_mechanism(utilities, epsilon=eps, sensitivity=SENSITIVITY, sampler=sampler,
                                 ledger=ledger, step="audit")


def _exponential_portable(side, n, eps, delta, sampler, ledger):
    utilities = _utilities((n, PORTABLE_CHOICES))
    utilities[:, 1:] += side * SENSITIVITY
    with compiled_loops(False):
        return exponential_mechanism(utilities, epsilon=eps, sensitivity=SENSITIVITY,
                                     sampler=sampler, ledger=ledger, step="audit")


def _linear_exponential_sparse(side, n, eps, delta, sampler, ledger):
    weights = _linear_weights()
    profiles = sp.csr_matrix(_linear_profiles(side, n))
    return linear_exponential_mechanism(profiles, weights=weights, epsilon=eps, sampler=sampler,
                                        ledger=ledger, step="audit")


def _gaussian(side, n, eps, delta, sampler, ledger):
    sigma = analytic_gaussian_sigma(float(SENSITIVITY), eps, delta)
    return gaussian_mechanism(np.full(n, float(side * SENSITIVITY)), sigma=sigma, epsilon=eps,
                              delta=delta, sensitivity=float(SENSITIVITY), sampler=sampler,
                              ledger=ledger,
                              step="audit")


#: name → (run(side, n, ε, δ, sampler, ledger) → outputs, uses δ)
PRIMITIVES: dict[str, tuple[Callable, bool]] = {
    "discrete-laplace": (_discrete_laplace, False),
    "bounded-discrete-laplace": (_bounded_discrete_laplace, False),
    "bounded-discrete-laplace-fine": (_bounded_discrete_laplace_fine, False),
    "exponential": (_exponential, False),
    "linear-exponential": (_linear_exponential, False),
    "gaussian": (_gaussian, True),
    "exponential-wide": (_exponential_wide, False),
    "linear-exponential-sparse": (_linear_exponential_sparse, False),
    "exponential-many": (_exponential_many, False),
    "exponential-portable": (_exponential_portable, False),
}


def primitive_names(secure: bool) -> list[str]:
    """The primitives audited on one path: all of them seeded, all but :data:`SEEDED_ONLY`
    on the secure samplers.

    >>> len(primitive_names(False)) - len(primitive_names(True)) == len(SEEDED_ONLY)
    True
    """
    return [name for name in PRIMITIVES if not (secure and name in SEEDED_ONLY)]


# ------------------------------------------------------------------ events
def _candidates(a: np.ndarray, b: np.ndarray) -> list[tuple[str, object]]:
    """Events worth trying on outputs ``a`` (side D) and ``b`` (side D')."""
    pooled = np.concatenate([a, b])
    values = np.unique(pooled)
    if values.size > 512:  # continuous outputs: thresholds at pooled quantiles
        values = np.unique(np.quantile(pooled, np.linspace(0.0005, 0.9995, 1000)))
    events: list[tuple[str, object]] = [("le", t) for t in values[:-1]]
    ca = np.array([np.sum(a == v) for v in values], dtype=float) if values.size <= 32 else None
    cb = np.array([np.sum(b == v) for v in values], dtype=float) if values.size <= 32 else None
    # Neyman–Pearson prefix sets of outputs, when every output's ratio is estimated well
    if ca is not None and np.all(ca + cb >= 50):
        order = values[np.argsort(-(ca + 0.5) / (cb + 0.5), kind="stable")]
        events += [("in", frozenset(order[:j].tolist())) for j in range(1, order.size)]
    return events


def _occurs(event: tuple[str, object], out: np.ndarray) -> np.ndarray:
    kind, arg = event
    if kind == "le":
        return out <= arg
    return np.isin(out, list(arg))


def _bound(k_num, k_den, n_num, n_den, delta: float, alpha: float) -> np.ndarray:
    """log((l_num − δ)/u_den) at level α/2 per side; −inf when it says nothing."""
    lo = cp_lower(k_num, n_num, alpha / 2) - delta
    up = cp_upper(k_den, n_den, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lo > 0, np.log(lo) - np.log(up), -np.inf)


def _best_event(a, b, delta, alpha):
    """The (event, complement, numerator side) with the best bound on the selection part."""
    best, best_value = None, -math.inf
    for event in _candidates(a, b):
        ka, kb = int(_occurs(event, a).sum()), int(_occurs(event, b).sum())
        for complement in (False, True):
            ha, hb = (a.size - ka, b.size - kb) if complement else (ka, kb)
            for num_is_a in (True, False):
                args = (ha, hb, a.size, b.size) if num_is_a else (hb, ha, b.size, a.size)
                value = float(_bound(*args, delta, alpha))
                if value > best_value:
                    best, best_value = (event, complement, num_is_a), value
    return best


def _describe(event, complement, num_is_a) -> str:
    kind, arg = event
    text = f"out <= {arg:.6g}" if kind == "le" else f"out in {sorted(arg)}"
    if complement:
        text = f"not ({text})"
    return f"{text} [{'D/D' + chr(39) if num_is_a else 'D' + chr(39) + '/D'}]"


def epsilon_lower_split(a: np.ndarray, b: np.ndarray, delta: float = 0.0, alpha: float = 0.05,
                        select_share: float = 0.2) -> tuple[float, str]:
    """ε_lower from outputs ``a`` on D and ``b`` on D': event chosen on the first
    ``select_share`` of each, counted on the rest (module docstring); and the event."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    sa, sb = int(a.size * select_share), int(b.size * select_share)
    chosen = _best_event(a[:sa], b[:sb], delta, alpha)
    if chosen is None:
        return 0.0, "none"
    event, complement, num_is_a = chosen
    ea, eb = a[sa:], b[sb:]
    ka, kb = int(_occurs(event, ea).sum()), int(_occurs(event, eb).sum())
    if complement:
        ka, kb = ea.size - ka, eb.size - kb
    args = (ka, kb, ea.size, eb.size) if num_is_a else (kb, ka, eb.size, ea.size)
    value = float(_bound(*args, delta, alpha))
    return (max(value, 0.0) if math.isfinite(value) else 0.0), _describe(*chosen)


# ------------------------------------------------------------------ audits
def _make_sampler(secure: bool, seed) -> Sampler:
    return SecureSampler() if secure else SeededSampler(np.random.default_rng(seed))


def _outputs(run, side, n, eps, delta, make_sampler, fresh: bool, ledger):
    """n outputs on one side (one call, or one call per fresh sampler), with the map's
    recomputation of every call."""
    with observing() as calls:
        if fresh:
            out = np.concatenate([np.asarray(run(side, 1, eps, delta, make_sampler(),
                                                 ledger if i == 0 else PrivacyLedger()))
                                  .ravel() for i in range(int(n))])
        else:
            out = run(side, int(n), eps, delta, make_sampler(), ledger)
    return out, mapped(calls)


def audit_primitive(name: str, epsilon: float = 1.0, n: int = 400_000, *,
                    sampler: Sampler | None = None, secure: bool = False, seed=0,
                    delta: float = 1e-2, scale_factor: float = 1.0,
                    alpha: float = 0.05, fresh: bool = False) -> dict:
    """Audit one primitive (a key of :data:`PRIMITIVES`) with n outputs per side.

    ``sampler`` overrides the path's sampler (to audit your own); ``scale_factor`` multiplies
    every noise scale (1 = the claimed calibration; ½ shows the audit's power). ``fresh``
    (secure path): every output from a new secure sampler. ``epsilon_map`` is the largest
    cost the privacy map recomputes for a call (the claim must cover it).

    >>> honest = audit_primitive("discrete-laplace", 1.0, 20000)
    >>> honest["path"], bool(honest["epsilon_lower"] <= 1.0)
    ('seeded', True)
    >>> halved = audit_primitive("discrete-laplace", 1.0, 20000, scale_factor=0.5)
    >>> bool(halved["epsilon_lower"] > 1.0)  # half the noise: twice the privacy loss
    True
    >>> audit_primitive("laplace")
    Traceback (most recent call last):
    ...
    ValueError: unknown primitive 'laplace'; expected one of [...]
    """
    if name not in PRIMITIVES:
        raise ValueError(f"unknown primitive {name!r}; expected one of {sorted(PRIMITIVES)}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if isinstance(n, bool) or int(n) != n or n < 100:
        raise ValueError(f"n must be a whole number >= 100, got {n!r}")
    run, uses_delta = PRIMITIVES[name]
    if fresh:
        if sampler is not None or not secure:
            raise ValueError("fresh=True draws from new secure samplers: secure=True, no sampler")

        def make() -> Sampler:
            return SecureSampler()
        exact = True
    else:
        if sampler is None:
            sampler = _make_sampler(secure, seed)
        if scale_factor != 1.0:
            sampler = ScaledSampler(sampler, scale_factor)
        chosen = sampler

        def make() -> Sampler:
            return chosen
        exact = sampler.exact
    delta = float(delta) if uses_delta else 0.0
    if name == "exponential-wide":
        n = min(int(n), WIDE_N)
    if name == "exponential-many":
        n = min(int(n), MANY_N)
    if exact and not fresh:
        n = min(int(n), SECURE_N.get(name, int(n)))
    start = time.perf_counter()
    ledger = PrivacyLedger()
    out_d, map_d = _outputs(run, 0, n, epsilon, delta, make, fresh, ledger)
    out_dp, map_dp = _outputs(run, 1, n, epsilon, delta, make, fresh, PrivacyLedger())
    lower, event = epsilon_lower_split(out_d, out_dp, delta, alpha)
    worst = max(map_d + map_dp, key=lambda c: c.epsilon_cost / max(c.epsilon_charged, 1e-300))
    return {"check": "sampling", "primitive": name,
            "path": ("secure-fresh" if fresh else "secure") if exact else "seeded",
            "epsilon": ledger.epsilon_spent, "delta": ledger.delta_spent,
            "epsilon_lower": lower, "epsilon_map": worst.epsilon_cost,
            "map_ok": all(c.ok for c in map_d + map_dp), "map": worst.how,
            "n": int(n), "seconds": time.perf_counter() - start, "event": event}


def fresh_sampler_rows(epsilon: float = 1.0, n: int = 3000, alpha: float = 0.05) -> list[dict]:
    """One row per :data:`FRESH_PRIMITIVES` entry: ``n`` outputs per side, each from a new
    secure sampler (:mod:`dptaucc.audit.secure`).

    >>> rows = fresh_sampler_rows(1.0, 100, alpha=1e-9)  # the fewest outputs it accepts
    >>> [(r["primitive"], r["path"], r["n"]) for r in rows][0]
    ('discrete-laplace', 'secure-fresh', 100)
    >>> len(rows) == len(FRESH_PRIMITIVES), any(violated(r) for r in rows)
    (True, False)
    """
    return [audit_primitive(name, epsilon, n, secure=True, fresh=True, alpha=alpha)
            for name in FRESH_PRIMITIVES]


def violated(row: dict) -> bool:
    """A primitive's row is a violation: ε_lower above the ε charged, or a charge below what
    the map recomputes; a conformance row, when a kernel differs from its exact reference.

    >>> row = {"epsilon": 1.0, "epsilon_lower": 0.4, "epsilon_map": 1.0}
    >>> violated(row), violated({**row, "epsilon_lower": 1.2})
    (False, True)
    >>> violated({**row, "epsilon_map": 2.0})  # charged below what the noise costs
    True
    >>> violated({"check": "conformance", "conforms": False})  # a kernel off its reference
    True
    """
    if row.get("check") == "conformance":
        return not row["conforms"]
    return bool(row["epsilon_lower"] > row["epsilon"] or not row.get("map_ok", True)
                or row.get("epsilon_map", 0.0) > row["epsilon"] * (1 + RTOL))


def audit_primitives(epsilon: float = 1.0, n: int = 400_000, secure: bool = False,
                     seed=0, **kwargs) -> list[dict]:
    """One row per primitive (:func:`audit_primitive`): primitive, path, epsilon, delta,
    epsilon_lower, n, seconds (and the event used).

    >>> rows = audit_primitives(1.0, 1000)
    >>> [r["primitive"] for r in rows] == primitive_names(secure=False) == list(PRIMITIVES)
    True
    >>> any(violated(r) for r in rows)  # every primitive within its ε, every charge covered
    False
    """
    return [audit_primitive(name, epsilon, n, secure=secure, seed=None if secure else seed,
                            **kwargs) for name in primitive_names(secure)]


def main(argv: list[str] | None = None) -> int:
    """The command line: audit every primitive, print a table; exit code 3 on a violation.

    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()) as out:
    ...     code = main(["-n", "1000"])
    >>> code, out.getvalue().split()[0], "exact conformance" in out.getvalue()
    (0, 'primitive', True)
    """
    parser = argparse.ArgumentParser(prog="python -m dptaucc.audit.primitives",
                                     description=plain(__doc__.split("\n\n")[0]))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("-n", type=int, default=400_000, help="outputs per side")
    parser.add_argument("--secure", action="store_true", help="audit the secure samplers")
    parser.add_argument("--both", action="store_true", help="audit the seeded and the secure "
                        "samplers (one table)")
    parser.add_argument("--fresh", type=int, default=0, metavar="N",
                        help="with --secure or --both: also draw N outputs per side each from a "
                        "new secure sampler (catches a sampler a seed can reproduce; 3000 is "
                        "plenty)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="also write the table to this parquet file (REPORT "
                        "reads <results>/audit_primitives.parquet)")
    parser.add_argument("--conformance-only", action="store_true",
                        help="only the exact conformance checks of the sampler kernels (no "
                        "sampling; a second or two)")
    args = parser.parse_args(argv)
    paths = (False, True) if args.both else (args.secure,)
    rows = [] if args.conformance_only else [
        r for secure in paths for r in audit_primitives(args.epsilon, args.n, secure, args.seed)]
    if args.fresh and True in paths and not args.conformance_only:
        rows += fresh_sampler_rows(args.epsilon, args.fresh)
    exact = conformance_rows()
    rows += exact
    if args.output:
        import pandas as pd
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_parquet(args.output, index=False)
    if not args.conformance_only:
        print(f"{'primitive':26s} {'path':12s} {'epsilon':>8s} {'delta':>7s} {'eps_map':>8s} "
              f"{'eps_lower':>9s} {'ratio':>6s} {'n':>7s} {'seconds':>7s}  event")
    for r in rows:
        if r["check"] == "conformance":
            continue
        ratio = r["epsilon_lower"] / r["epsilon"] if r["epsilon"] > 0 else math.nan
        print(f"{r['primitive']:26s} {r['path']:12s} {r['epsilon']:8.3f} {r['delta']:7.0e} "
              f"{r['epsilon_map']:8.3f} {r['epsilon_lower']:9.3f} {ratio:6.2f} "
              f"{r['n']:7d} {r['seconds']:7.2f}  {r['event']}")
    print(f"\nexact conformance (check=conformance: crafted randomness, exact references)\n"
          f"{'kernel':26s} {'result':12s} {'cases':>5s} {'seconds':>7s}  detail")
    for r in exact:
        print(f"{r['primitive']:26s} {'ok' if r['conforms'] else 'VIOLATION':12s} {r['n']:5d} "
              f"{r['seconds']:7.2f}  {r['event'] if r['conforms'] else r['failed']}")
    sampled = [f"{r['primitive']} ({r['path']})" for r in rows
               if r["check"] != "conformance" and violated(r)]
    differs = [r["primitive"] for r in exact if violated(r)]
    if sampled:
        print(f"VIOLATION: ε_lower or the privacy map's ε above the claimed ε for "
              f"{', '.join(sampled)}")
    if differs:
        print(f"VIOLATION: sampler kernels off their exact reference: {', '.join(differs)}")
    return 3 if sampled or differs else 0


if __name__ == "__main__":
    sys.exit(main())
