"""Known privacy bugs by name: the built-in catalogue and each method's declared bugs.

Bugs are declared beside their methods (:class:`~dptaucc.audit.scenarios.AuditScenarios`
``bugs``); the :class:`~dptaucc.audit.bugs.Bug` type and its patch builders are in
:mod:`dptaucc.audit.bugs`, which reads no method's declarations (no import circle).

>>> from dptaucc.audit.catalogue import CATALOGUE
>>> len(CATALOGUE) >= 12
True
>>> {"dp_kmeans", "dp_taucc", "dphd"} <= {bug.method for bug in CATALOGUE.values()}
True
"""

from __future__ import annotations

from .bugs import Bug
from .methods import builtin_methods, scenarios_of

__all__ = ["catalogue", "find_bug", "bugs_of"]


def catalogue() -> dict[str, Bug]:
    """Every built-in method's bugs by name (each declared beside its method, in its audit
    scenarios: :mod:`dptaucc.audit.methods`).

    >>> bugs = catalogue()
    >>> bugs["dp_taucc.table_sensitivity_halved"].method
    'dp_taucc'
    >>> all(name.startswith(bug.method + ".") for name, bug in bugs.items())
    True
    """
    return {bug.name: bug for m in builtin_methods() for bug in scenarios_of(m).bugs}


def find_bug(name: str) -> Bug:
    """The bug ``"<method>.<bug>"``: a built-in one, or one a user's method declares.

    >>> find_bug("dp_taucc.table_sensitivity_halved").kind
    'sensitivity off by 2'
    >>> find_bug("no_such_bug")
    Traceback (most recent call last):
    ...
    ValueError: unknown bug 'no_such_bug'; known: [...]
    """
    known = catalogue()
    if name in known:
        return known[name]
    method = name.partition(".")[0]
    if method and method not in {b.method for b in known.values()}:
        try:
            return {b.name: b for b in bugs_of(method)}[name]
        except (KeyError, ValueError):
            pass
    raise ValueError(f"unknown bug {name!r}; known: {sorted(known)}")


def bugs_of(method: str) -> list[Bug]:
    """The bugs a method declares (an algorithm config name; none for an unknown one).

    >>> bugs = bugs_of("dp_taucc")
    >>> len(bugs) > 0, all(b.method == "dp_taucc" for b in bugs)
    (True, True)
    >>> bugs_of("no_such_method")
    []
    """
    try:
        return list(scenarios_of(method).bugs)
    except ValueError:  # no such algorithm config
        return []


def __getattr__(name: str):
    if name == "CATALOGUE":  # every built-in bug by name, gathered when first asked for
        return catalogue()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
