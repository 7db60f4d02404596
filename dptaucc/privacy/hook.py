"""An observation point in every mechanism, for the white-box privacy audit.

Off by default: each mechanism reads one context variable (:data:`MECHANISM_HOOK`, None) and
goes on. While the audit (:mod:`dptaucc.audit.transcript`) sets it, each mechanism call
reports its step, the ledger entries the call appended, its released output and ``redraw``,
and releases what the hook returns: its own output when recording, a value recorded on another
fit when replaying a history; the hook may also stop the fit. Estimators never set it.

A hook that also defines ``calibrated(step, mechanism, entries, calibration)`` is told, just
before ``released``, the call's :class:`~dptaucc.privacy.calibration.Calibration`: what its
sampler really drew (law, source, scale) and what the mechanism declared (sensitivity, norm,
values that may change), collected around the call's first draw
(:func:`~dptaucc.privacy.calibration.first_draw`). The ledger audit
(:mod:`dptaucc.audit.ledger_check`) recomputes the call's cost from it.

``redraw(n)`` draws ``n`` fresh, independent outputs of the *same* call (same exact input, same
calibration, same sampler and code path), stacked on a new first axis: the audit samples one
call site many times from one fit instead of refitting. It is built only while a hook is set.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np

from dptaucc.privacy.calibration import Calibration

__all__ = ["MECHANISM_HOOK", "MechanismHook", "watch"]


class MechanismHook(Protocol):
    """What the audit sets in :data:`MECHANISM_HOOK`: sees every mechanism call, returns the
    release.

    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> class AddOne:  # a hook that changes what the mechanism releases
    ...     def released(self, step, mechanism, entries, output, redraw=None):
    ...         return output + 1
    >>> ledger = PrivacyLedger()
    >>> token = MECHANISM_HOOK.set(AddOne())
    >>> watch(ledger).released("table", "discrete_laplace", 41)
    42
    >>> MECHANISM_HOOK.reset(token)
    """

    def released(self, step: str, mechanism: str, entries: list, output: Any,
                 redraw: Callable[[int], Any] | None = None) -> Any:
        """Called once per mechanism call with the entries it charged; returns the release."""


#: the active hook of this context (None: mechanisms run untouched)
MECHANISM_HOOK: ContextVar[MechanismHook | None] = ContextVar("MECHANISM_HOOK", default=None)


class _Watch:
    __slots__ = ("hook", "ledger", "start", "calibration")

    def __init__(self, hook: MechanismHook, ledger):
        self.hook, self.ledger, self.start = hook, ledger, len(ledger.entries)
        self.calibration = Calibration()  # filled by calibration.first_draw

    def released(self, step: str, mechanism: str, output, draw: Callable[[], Any] | None = None):
        """Hand the call to the hook; ``draw()`` draws one fresh output of this call (and
        ``draw(n)``, if it takes an argument, a batch of n), from which the hook's
        ``redraw(n)`` is built. A hook with a ``calibrated`` method also gets what the
        call's draws and its mechanism declared (:mod:`dptaucc.privacy.calibration`)."""
        redraw = None if draw is None else _batch(draw)
        entries = list(self.ledger.entries[self.start:])
        calibrated = getattr(self.hook, "calibrated", None)
        if calibrated is not None:
            calibrated(step, mechanism, entries, self.calibration)
        return self.hook.released(step, mechanism, entries, output, redraw)


def _batch(draw: Callable[..., Any]) -> Callable[[int], np.ndarray]:
    """``redraw(n)``: ``draw(n)`` when ``draw`` takes a batch size (one vectorised call of the
    same sampler functions, n independent outputs), else ``n`` calls of ``draw()``."""
    batched = len(inspect.signature(draw).parameters) > 0

    def redraw(n: int) -> np.ndarray:
        if batched:
            return np.asarray(draw(int(n)))
        return np.stack([np.asarray(draw()) for _ in range(int(n))])
    return redraw


def watch(ledger) -> _Watch | None:
    """None when no hook is set (the usual case); else a watch of the entries ``ledger``
    gets from now on, whose ``released(step, mechanism, output, draw)`` hands the call to the
    hook.

    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> watch(PrivacyLedger()) is None  # no hook set: mechanisms run untouched
    True
    >>> class Seen:
    ...     def released(self, step, mechanism, entries, output, redraw=None):
    ...         return [e.step for e in entries], output, redraw(3).shape
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.charge("before", "discrete_laplace", 0.5)  # charged before the watch
    >>> token = MECHANISM_HOOK.set(Seen())
    >>> watched = watch(ledger)
    >>> _ = ledger.charge("table", "discrete_laplace", 0.5)
    >>> watched.released("table", "discrete_laplace", 7, draw=lambda: [0, 0])
    (['table'], 7, (3, 2))
    >>> MECHANISM_HOOK.reset(token)
    """
    hook = MECHANISM_HOOK.get()
    return None if hook is None else _Watch(hook, ledger)
