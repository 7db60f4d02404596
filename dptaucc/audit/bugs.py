"""Known privacy bugs, to measure the audit's power: the :class:`Bug` type and patch builders.

Each method declares its bugs beside itself, in its audit scenarios
(:class:`~dptaucc.audit.scenarios.AuditScenarios` ``bugs``; e.g.
:mod:`dptaucc.baselines.dp_kmeans_audit`); :func:`dptaucc.audit.catalogue.catalogue` gathers
the built-in ones. Each
:class:`Bug` is a one-line mistake of a kind developers really make (a sensitivity or a
noise scale off by two, an ε that spends twice what the ledger says, entries released without
noise, a released value read from the raw data, data-dependent bounds, an empty-cluster leak,
δ ignored, a zCDP calibration labelled (ε, δ), float noise on a count, a ledger that
under-reports what its noise costs), planted in a
corrected-mode estimator by monkeypatching the library *in the current process* for as long as
:meth:`Bug.applied` is entered. Nothing here is used by the estimators themselves.

The audit runs each catalogue bug (``python -m dptaucc.audit --bug NAME``, or every bug with
``--power``) and reports which it detects: an audit that gives the same answer on these and on
the correct code is no evidence. Worker processes must enter :meth:`Bug.applied` themselves
(a patch made in the parent does not reach a fresh process).

The lookups by name (``catalogue``, ``find_bug``, ``bugs_of``, ``CATALOGUE``) live in
:mod:`dptaucc.audit.catalogue`, which reads the methods' declarations; this module reads none.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import numpy as np

__all__ = ["Bug", "UnderChargingLedger",
           "with_arguments", "scale_argument", "double_epsilon_unlogged", "fixed_argument",
           "exact_values_released", "after_fit"]

Patch = tuple[str, str, Callable[[Callable], Callable]]  # (owner, attribute, make(original))


@dataclass(frozen=True)
class Bug:
    """One planted privacy bug.

    ``method`` is the algorithm config name it breaks; ``kind`` one of the kinds listed in
    the module docstring; ``patches`` are ``(owner, attribute, make)`` triples: while
    :meth:`applied` is entered, ``owner.attribute`` (owner a module path, or ``module:Class``)
    is replaced by ``make(original)``.

    >>> import math
    >>> bug = Bug("demo.pi_doubled", "demo", "constant off by 2", "π twice as large",
    ...           (("math", "pi", lambda original: 2 * original),))
    >>> with bug.applied():
    ...     round(math.pi, 4)
    6.2832
    >>> round(math.pi, 4)  # undone on exit
    3.1416
    """

    name: str
    method: str
    kind: str
    description: str
    patches: tuple[Patch, ...]

    @contextmanager
    def applied(self) -> Iterator[Bug]:
        """Plant the bug in this process; every patch is undone on exit."""
        with ExitStack() as stack:
            for owner, attribute, make in self.patches:
                stack.enter_context(_replaced(_resolve(owner), attribute, make))
            yield self


def _resolve(owner: str):
    module, _, cls = owner.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, cls) if cls else obj


@contextmanager
def _replaced(obj, attribute: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
    original = obj.__dict__[attribute] if isinstance(obj, type) else getattr(obj, attribute)
    setattr(obj, attribute, make(original))
    try:
        yield
    finally:
        setattr(obj, attribute, original)


class UnderChargingLedger:
    """A ledger seen through a bug: every charge records half the ε really spent.

    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> ledger = UnderChargingLedger(PrivacyLedger())
    >>> _ = ledger.charge("step", "laplace", 1.0)
    >>> ledger.epsilon_spent  # one call of ε = 1, recorded as 0.5
    0.5
    """

    def __init__(self, ledger):
        self._ledger = ledger

    def charge(self, step, mechanism, epsilon, *args, **kwargs):
        return self._ledger.charge(step, mechanism, epsilon / 2, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ledger, name)


class _ScaledChargeLedger:
    """A ledger seen through a bug: every charge records ``factor`` × ε and ``delta_factor``
    × δ (the noise drawn stays the one calibrated for the full charge)."""

    def __init__(self, ledger, factor: float, delta_factor: float = 1.0):
        self._ledger, self._factor, self._delta_factor = ledger, factor, delta_factor

    def charge(self, step, mechanism, epsilon, delta=0.0, *args, **kwargs):
        return self._ledger.charge(step, mechanism, epsilon * self._factor,
                                   delta * self._delta_factor, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ledger, name)


def charge_for_one_value():
    """A per-value mechanism charged one value's ε although ``n_changed`` values move."""
    def change(arguments):
        arguments["ledger"] = _ScaledChargeLedger(arguments["ledger"],
                                                  1.0 / arguments.get("n_changed", 1))
    return with_arguments(change)


def delta_charged(factor: float):
    def change(arguments):
        arguments["ledger"] = _ScaledChargeLedger(arguments["ledger"], 1.0, factor)
    return with_arguments(change)


def totals_without(mechanism: str):
    """``PrivacyLedger.epsilon_mechanisms`` summing every entry but ``mechanism``'s."""
    def make(original):
        import math

        return property(lambda self: math.fsum(
            e.epsilon for e in self.entries
            if e.composition != "non-private" and e.mechanism != mechanism))
    return make


# ------------------------------------------------------------------ patch builders
def with_arguments(change: Callable[[dict], None]):
    """Call the original with its arguments (bound by name) changed in place by ``change``.

    >>> def add(a, b):
    ...     return a + b
    >>> add_ten_to_b = with_arguments(lambda arguments: arguments.update(b=arguments["b"] + 10))
    >>> add_ten_to_b(add)(1, 2), add_ten_to_b(add)(a=1, b=2)
    (13, 13)
    """
    def make(original):
        signature = inspect.signature(original)

        def buggy(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            change(bound.arguments)
            return original(*bound.args, **bound.kwargs)
        return buggy
    return make


def scale_argument(name: str, factor: float):
    """The argument ``name`` (a sensitivity, ...) times ``factor``.

    >>> def scale(sensitivity, epsilon):
    ...     return sensitivity / epsilon
    >>> scale_argument("sensitivity", 0.5)(scale)(2.0, epsilon=0.5)
    2.0
    """
    def change(arguments):
        arguments[name] = arguments[name] * factor
    return with_arguments(change)


def double_epsilon_unlogged():
    """Spend 2ε while the ledger records ε (the noise scale halves, the books do not).

    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> def mechanism(epsilon, ledger):
    ...     ledger.charge("counts", "laplace", epsilon)
    ...     return 1.0 / epsilon  # the noise scale drawn
    >>> ledger = PrivacyLedger()
    >>> double_epsilon_unlogged()(mechanism)(0.5, ledger), ledger.epsilon_spent
    (1.0, 0.5)
    """
    def change(arguments):
        arguments["epsilon"] = 2 * arguments["epsilon"]
        arguments["ledger"] = UnderChargingLedger(arguments["ledger"])
    return with_arguments(change)


def fixed_argument(name: str, value):
    """The argument ``name`` replaced by ``value`` whatever the caller passed.

    >>> def clip(x, bound):
    ...     return min(x, bound)
    >>> fixed_argument("bound", 100)(clip)(42, bound=1)
    42
    """
    def change(arguments):
        arguments[name] = value
    return with_arguments(change)


def exact_values_released(original):
    """Charge and draw as usual, then release the exact integer values.

    >>> def noisy(values, epsilon):
    ...     return [v + 1000 for v in values]
    >>> exact_values_released(noisy)([3, 0, 7], 1.0)
    array([3, 0, 7])
    """
    def buggy(values, *args, **kwargs):
        original(values, *args, **kwargs)
        return np.rint(np.asarray(values, dtype=float)).astype(np.int64)
    return buggy


def after_fit(change: Callable) -> Callable[[Callable], Callable]:
    """Run the original ``fit``, then ``change(model, X)`` (a value read from the raw data).

    >>> class Model:
    ...     def fit(self, X, y=None):
    ...         self.total_ = 0
    ...         return self
    >>> def leak_sum(model, X):
    ...     model.total_ = sum(X)
    >>> Model.fit = after_fit(leak_sum)(Model.fit)
    >>> Model().fit([1, 2, 3]).total_
    6
    """
    def make(original):
        def fit(self, X, y=None):
            original(self, X, y)
            change(self, X)
            return self
        return fit
    return make
