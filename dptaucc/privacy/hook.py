"""An observation point in every mechanism, for the white-box privacy audit.

Off by default: each mechanism reads one context variable (:data:`MECHANISM_HOOK`, None) and
goes on. While the audit (:mod:`dptaucc.audit.transcript`) sets it, each mechanism call
reports its step, the ledger entries the call appended and its released output, and releases
what the hook returns: its own output when recording, a value recorded on another fit when
replaying a history; the hook may also stop the fit. Estimators never set it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["MECHANISM_HOOK", "MechanismHook", "watch"]


class MechanismHook(Protocol):
    def released(self, step: str, mechanism: str, entries: list, output: Any) -> Any:
        """Called once per mechanism call with the entries it charged; returns the release."""


#: the active hook of this context (None: mechanisms run untouched)
MECHANISM_HOOK: ContextVar[MechanismHook | None] = ContextVar("MECHANISM_HOOK", default=None)


class _Watch:
    __slots__ = ("hook", "ledger", "start")

    def __init__(self, hook: MechanismHook, ledger):
        self.hook, self.ledger, self.start = hook, ledger, len(ledger.entries)

    def released(self, step: str, mechanism: str, output):
        return self.hook.released(step, mechanism, list(self.ledger.entries[self.start:]),
                                  output)


def watch(ledger) -> _Watch | None:
    """None when no hook is set (the usual case); else a watch of the entries ``ledger``
    gets from now on, whose ``released(step, mechanism, output)`` hands the call to the hook."""
    hook = MECHANISM_HOOK.get()
    return None if hook is None else _Watch(hook, ledger)
