"""What a method declares for its audit: end-to-end scenarios, call-site setups, known bugs.

A method's audit scenarios live beside the method, the way ``METHOD = MethodInfo(...)`` does:
``MethodInfo(..., audit="mypkg.my_method_audit")`` names a module whose ``scenarios()`` returns
an :class:`AuditScenarios` (or ``"module:function"`` for another function name). The engine
(:mod:`dptaucc.audit.methods` finds it, :mod:`dptaucc.audit.experiment` runs it) imports that
module only when the method is audited, so ``import dptaucc`` stays lean. A method that declares
nothing is audited with :func:`default_scenarios` (private) or :func:`exact_scenarios`
(non-private): the same rules, weaker pairs.

* :class:`Scenario` — one end-to-end scenario: a neighbouring pair, parameter overrides that
  concentrate the budget where a leak would show, hand-written events (raw-data
  recomputations) and, unless ``derive=False``, the events
  :mod:`dptaucc.audit.endtoend` derives from every declared release;
* :class:`CallSiteSetup` — a pair and parameters under which every mechanism call of a fit is
  audited against the ε its ledger charged (:mod:`dptaucc.audit.callsite`), optionally with a
  crafted history that puts each call's input at its worst;
* ``bugs`` — one-line privacy bugs of this method (:class:`dptaucc.audit.bugs.Bug`), which
  ``python -m dptaucc.audit --bug NAME`` plants to show the audit catches them.

>>> from dptaucc.audit.pairs import all_zero_row
>>> s = AuditScenarios(end_to_end=(Scenario(all_zero_row(), (), "a row with no counts"),))
>>> s.main.pair.name, s.call_sites, s.zero_matrix
('all_zero_row', (), True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import events as ev
from .pairs import NeighbouringPair, RowPair, all_zero_matrix, all_zero_row, moving_row

if TYPE_CHECKING:
    from .bugs import Bug
    from .transcript import Call

__all__ = ["Scenario", "CallSiteSetup", "AuditScenarios", "default_scenarios",
           "exact_scenarios", "zero_matrix_scenario", "MethodAudit"]


@dataclass(frozen=True)
class Scenario:
    """One end-to-end scenario of a method's audit: a pair, hand-written events on the fitted
    model, parameter overrides, and the share of the method's fit budget it gets.

    >>> from dptaucc.audit.pairs import moving_row
    >>> s = Scenario(moving_row(), (), "a balanced row", params=(("h", 0.5),))
    >>> s.pair.name, s.share, s.derive
    ('moving_row', 1.0, True)
    """

    pair: NeighbouringPair | RowPair
    events: tuple[ev.Event, ...]
    why: str
    share: float = 1.0
    params: tuple[tuple[str, object], ...] = ()
    derive: bool = True  # also the events derived from the releases
    #: the modes it runs in (empty: every mode), e.g. ("corrected",) for settings paper mode
    #: refuses
    modes: tuple[str, ...] = ()


#: the name this type had before the scenarios moved beside their methods
MethodAudit = Scenario


@dataclass(frozen=True)
class CallSiteSetup:
    """Pair and parameters of a method's call-site audit (``epsilon`` included); the calls
    audited are ``first .. first + max_calls - 1`` of a fit. ``craft`` turns a recorded
    history into the one forced before the audited call (None: the recorded one); the pair is
    in the relation the calls are charged for (e.g. one row added); ``max_draws`` caps the
    draws per call where a draw is slow; calls whose step starts with one of ``skip`` are not
    audited (their mechanism output is an index into a data-dependent candidate list, so equal
    outputs on D and D' need not mean equal releases); ``redraw_samples`` > 0 samples each call
    by redraw from a few replayed fits (:mod:`dptaucc.audit.redrawn`, for slow fits).

    >>> from dptaucc.audit.pairs import all_zero_row
    >>> setup = CallSiteSetup(all_zero_row(), (("epsilon", 8.0),))
    >>> setup.pair.name, dict(setup.params)["epsilon"], setup.first, setup.redraw_samples
    ('all_zero_row', 8.0, 0, 0)
    """

    pair: NeighbouringPair | RowPair
    params: tuple[tuple[str, object], ...]
    max_calls: int = 8
    first: int = 0
    craft: Callable[[list[Call]], list[Call]] | None = None
    max_draws: int | None = None  # a cap on the job's draws per call (slow samplers)
    skip: tuple[str, ...] = ()  # steps whose mechanism output is not comparable across D, D'
    redraw_samples: int = 0  # > 0: sample each call by redraw (dptaucc.audit.redrawn)
    #: candidate histories (fit seeds) tried with pilot draws, the best kept: more where the
    #: call's worst case hangs on data-independent randomness no history can force
    n_histories: int = 3
    #: pilot draws per side that score each candidate history: more where the call's worst
    #: case is a rare event, whose separation a few thousand draws cannot see (they favour a
    #: history with a common, weaker event)
    n_pilot: int = 4000
    #: (step fragment, reason): calls known to stay below 0.9 of their charge, and why
    limits: tuple[tuple[str, str], ...] = ()
    #: (step fragment, factor): calls drawn ``factor`` times the job's draws (a charge
    #: reached only on a set of small probability)
    more_draws: tuple[tuple[str, float], ...] = ()
    #: (step fragment, factor): calls whose events, chosen on all their kept draws, are
    #: counted on ``factor`` times as many fresh draws per side, streamed and never kept
    #: (:func:`dptaucc.audit.callsite.audit_call_site`'s ``n_held``: a charge reached only
    #: where several values sit at their edges at once needs more held-out draws than memory
    #: holds)
    held_out: tuple[tuple[str, float], ...] = ()

    def held_out_of(self, step: str, n: int) -> int:
        """Streamed held-out draws per side for a call (by its step) of ``n`` kept draws: 0
        unless its step has a ``held_out`` factor.

        >>> from dptaucc.audit.pairs import all_zero_row
        >>> setup = CallSiteSetup(all_zero_row(), (), held_out=(("sums", 8.0),))
        >>> setup.held_out_of("iteration 1: cluster sums", 1000), setup.held_out_of("counts", 1000)
        (8000, 0)
        """
        factor = next((f for fragment, f in self.held_out if fragment in step), 0.0)
        return int(round(n * factor))

    def draws_of(self, step: str, n: int) -> int:
        """Draws per side for a call (by its step) out of the job's ``n``: times its
        ``more_draws`` factor, at most ``max_draws``.

        >>> from dptaucc.audit.pairs import all_zero_row
        >>> setup = CallSiteSetup(all_zero_row(), (), more_draws=(("sums", 2.0),))
        >>> setup.draws_of("iteration 2: cluster sums", 1000), setup.draws_of("counts", 1000)
        (2000, 1000)
        """
        factor = next((f for fragment, f in self.more_draws if fragment in step), 1.0)
        n = int(round(n * factor))
        return min(n, self.max_draws or n)

    def limit_of(self, step: str) -> str:
        """The declared reason a call (by its step) stays below 0.9 of its charge, or "".

        >>> from dptaucc.audit.pairs import all_zero_row
        >>> CallSiteSetup(all_zero_row(), (), limits=(("sums", "edges only"),)).limit_of(
        ...     "iteration 1: cluster sums")
        'edges only'
        """
        return next((why for fragment, why in self.limits if fragment in step), "")


@dataclass(frozen=True)
class AuditScenarios:
    """Everything a method declares for its audit. ``end_to_end[0]`` is its main scenario
    (its pair's ``n_clusters`` fills the config's ``classes`` parameter); a private method
    is also fitted on the all-zero matrix against one count (``zero_matrix``) unless a
    scenario already uses that pair. ``bugs`` are named ``"<method>.<bug>"``;
    ``paper_leaks`` says what paper mode is expected to leak (the report checks the audit
    catches it).

    >>> AuditScenarios(end_to_end=())
    Traceback (most recent call last):
    ...
    ValueError: a method's audit needs at least one end-to-end scenario (its main one)
    """

    end_to_end: tuple[Scenario, ...]
    call_sites: tuple[CallSiteSetup, ...] = ()
    bugs: tuple[Bug, ...] = ()
    paper_leaks: str = ""
    zero_matrix: bool = True

    def __post_init__(self):
        if not self.end_to_end:
            raise ValueError("a method's audit needs at least one end-to-end scenario (its "
                             "main one)")
        for s in (*self.end_to_end, *self.call_sites):
            if not isinstance(s, (Scenario, CallSiteSetup)):
                raise TypeError(f"expected Scenario or CallSiteSetup, got {type(s).__name__}")

    @property
    def main(self) -> Scenario:
        return self.end_to_end[0]


def zero_matrix_scenario() -> Scenario:
    """D = 0, D' = one count: a fit that refuses the all-zero matrix tells them apart.

    >>> s = zero_matrix_scenario()
    >>> s.pair.name, int(s.pair.D.sum()), int(s.pair.D_prime.sum()), s.share
    ('all_zero_matrix', 0, 1, 0.1)
    """
    return Scenario(all_zero_matrix(), (), "the all-zero matrix is a valid input", share=0.1)


def label_events(pair: NeighbouringPair | RowPair) -> tuple[ev.Event, ...]:
    """Labels equal the raw-data assignment of D; row u shares a label with another row."""
    w = 0 if pair.u != 0 else pair.D.shape[0] - 1
    return (ev.labels_match_evaluation(pair.D), ev.same_label(pair.u, w))


def exact_scenarios() -> AuditScenarios:
    """A non-private co-clusterer's audit (the default of a method that takes no ε): the
    exact table and labels read from the data, on a balanced row.

    >>> s = exact_scenarios()
    >>> s.main.pair.name, s.call_sites
    ('moving_row', ())
    >>> s.main.events[0].name
    'contingency_ equals the exact table of D'
    """
    p = moving_row()
    return AuditScenarios((Scenario(p, (ev.contingency_equals_exact(p.D), *label_events(p)),
                                    "non-private reference: the exact table and labels"),))


def default_scenarios(epsilon: float = 1.0) -> AuditScenarios:
    """A private method that declares no scenarios: a row with no counts end to end (events
    derived from its declared releases, labels from the raw rows) and its call sites on the
    same pair at ``epsilon``. Valid for any method, but weak: each call is audited at whatever
    share of ε the method charges it, with no crafted worst case (docs/audit.md: declare your
    own).

    >>> s = default_scenarios(epsilon=0.5)
    >>> s.main.pair.name, [(c.pair.name, c.params) for c in s.call_sites]
    ('all_zero_row', [('all_zero_row', (('epsilon', 0.5),))])
    """
    p = all_zero_row()
    return AuditScenarios(
        (Scenario(p, label_events(p), "default: a row with no counts gets one"),),
        (CallSiteSetup(p, (("epsilon", float(epsilon)),)),))


def resolve(path: str) -> Any:
    """``"pkg.module"`` (its ``scenarios`` function) or ``"pkg.module:name"``: the object.

    >>> resolve("dptaucc.audit.scenarios:exact_scenarios").__name__
    'exact_scenarios'
    """
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name or "scenarios")
