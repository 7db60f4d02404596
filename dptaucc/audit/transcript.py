"""The transcript of a fit: every mechanism call, what the ledger charged it, what it released.

:func:`record` runs a fit with the mechanism hook (:mod:`dptaucc.privacy.hook`) set and returns
its :class:`Call` list. :func:`replay` runs a fit whose calls ``0..k-1`` release the outputs
recorded on another fit (the *history*), samples call ``k`` fresh and stops the fit right after
it: given its history, call ``k`` is a mechanism whose privacy loss is at most the (ε, δ) its
ledger entries charged, which :mod:`dptaucc.audit.callsite` tests call by call.
:func:`open_call` also hands back that call's ``redraw(n)`` (:mod:`dptaucc.privacy.hook`): many
fresh outputs of call ``k`` from one replayed fit.

The ε of a call is read from the entries the call appended to the ledger, never from its
arguments: a bug may pass 2ε to the mechanism while the ledger records ε.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dptaucc.privacy.hook import MECHANISM_HOOK

__all__ = ["Call", "HistoryDiverged", "record", "replay", "open_call", "replay_all"]


@dataclass(frozen=True)
class Call:
    """One mechanism call of a fit.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> call = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)[0]
    >>> call.index, call.step, call.mechanism, round(call.epsilon, 4)
    (0, 'init/column-assignment', 'exponential', 0.1125)
    """

    index: int
    step: str
    mechanism: str
    epsilon: float  # sum of the ε its ledger entries charged
    delta: float
    output: Any
    #: what the call told the audit when it was opened by :func:`open_call` (its
    #: :class:`~dptaucc.privacy.calibration.Calibration`, exact input included); None in a
    #: recorded history
    calibration: Any = field(default=None, repr=False, compare=False)
    #: the states of the fit's seeded generators right after this call (in the order the fit
    #: first drew from them), kept by :func:`record` for :func:`replay_all`
    rng_after: tuple = field(default=(), repr=False, compare=False)


class HistoryDiverged(RuntimeError):
    """A replayed fit made a call that the recorded history does not have at that place.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> history = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)
    >>> other = record(DPTauCC(3, 2, epsilon=1.0, random_state=0), pair.D)  # 3 row clusters
    >>> try:
    ...     replay(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D, other, 2)
    ... except HistoryDiverged as error:
    ...     print(str(error)[:7])
    call 1:
    """


class _Stop(BaseException):
    """Raised by the replay hook after the audited call (not an Exception: estimators that
    catch Exception must not swallow it)."""


def _charged(entries) -> tuple[float, float]:
    eps = math.fsum(e.epsilon for e in entries if e.composition != "non-private")
    delta = math.fsum(e.delta for e in entries if e.composition != "non-private")
    return eps, delta


def _generators(known: list, calibration) -> None:
    """Append to ``known`` the seeded generators a call's draws came from (in first-seen
    order; the samplers tell them only while the audit collects)."""
    for draw in getattr(calibration, "draws", ()):
        rng = draw.detail.get("rng")
        if rng is not None and not any(rng is g for g in known):
            known.append(rng)


class _Recorder:
    def __init__(self):
        self.calls: list[Call] = []
        self.generators: list = []

    def calibrated(self, step, mechanism, entries, calibration):
        _generators(self.generators, calibration)

    def released(self, step, mechanism, entries, output, redraw=None):
        eps, delta = _charged(entries)
        states = tuple(copy.deepcopy(g.bit_generator.state) for g in self.generators)
        self.calls.append(Call(len(self.calls), str(step), mechanism, eps, delta,
                               np.array(output, copy=True), rng_after=states))
        return output


class _Replayer:
    def __init__(self, history: list[Call], k: int):
        self.history, self.k, self.n = history, k, 0
        self.call: Call | None = None
        self.redraw = None
        self.calibration = None

    def calibrated(self, step, mechanism, entries, calibration):
        if self.n == self.k:  # told just before call k's ``released``
            self.calibration = calibration

    def released(self, step, mechanism, entries, output, redraw=None):
        i, self.n = self.n, self.n + 1
        if i < self.k:
            want = self.history[i]
            if want.step != str(step) or np.shape(want.output) != np.shape(output):
                raise HistoryDiverged(f"call {i}: step {step!r} {np.shape(output)} where the "
                                      f"history has {want.step!r} {np.shape(want.output)}")
            return np.array(want.output, copy=True)
        eps, delta = _charged(entries)
        self.call = Call(i, str(step), mechanism, eps, delta, np.array(output, copy=True),
                         self.calibration)
        self.redraw = redraw
        raise _Stop


class _FullReplayer:
    """Forces every call to the history's output and keeps each call's calibration; after
    each call the fit's seeded generators continue from the states the recorded fit had
    there. A mechanism may consume a data-dependent amount of its fresh randomness (a bounded
    integer's rejection step reads another word now and then); with ideal randomness later
    draws do not depend on that, but a seeded stream would shift every later public draw
    (DPM's simulated gap table) between D and D′ although every release is equal."""

    def __init__(self, history: list[Call]):
        self.history = history
        self.calls: list[Call] = []
        self.calibration = None
        self.generators: list = []

    def calibrated(self, step, mechanism, entries, calibration):
        self.calibration = calibration
        _generators(self.generators, calibration)

    def released(self, step, mechanism, entries, output, redraw=None):
        i = len(self.calls)
        if i >= len(self.history):
            raise HistoryDiverged(f"call {i}: step {step!r} after the history's last call")
        want = self.history[i]
        if want.step != str(step) or np.shape(want.output) != np.shape(output):
            raise HistoryDiverged(f"call {i}: step {step!r} {np.shape(output)} where the "
                                  f"history has {want.step!r} {np.shape(want.output)}")
        eps, delta = _charged(entries)
        self.calls.append(Call(i, str(step), mechanism, eps, delta,
                               np.array(want.output, copy=True), self.calibration))
        self.calibration = None
        for g, state in zip(self.generators, want.rng_after, strict=False):
            g.bit_generator.state = copy.deepcopy(state)
        return np.array(want.output, copy=True)


def _fit(model, X) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)


def record(model, X) -> list[Call]:
    """Fit ``model`` on X and return the transcript of its mechanism calls.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> model = DPTauCC(2, 2, epsilon=1.0, random_state=0)
    >>> history = record(model, pair.D)
    >>> [c.index for c in history] == list(range(len(history))), len(history)
    (True, 16)
    >>> import math  # the calls charge what the fit's ledger shows
    >>> math.isclose(sum(c.epsilon for c in history), model.privacy_ledger_.epsilon_spent)
    True
    """
    rec = _Recorder()
    token = MECHANISM_HOOK.set(rec)
    try:
        _fit(model, X)
    finally:
        MECHANISM_HOOK.reset(token)
    return rec.calls


def replay(model, X, history: list[Call], k: int) -> Call:
    """Fit ``model`` on X with calls ``0..k-1`` forced to ``history`` and return call ``k``
    (sampled fresh); the fit stops right after it.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> history = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)
    >>> call = replay(DPTauCC(2, 2, epsilon=1.0, random_state=1), pair.D_prime, history, 2)
    >>> call.index, call.step == history[2].step  # same call, now on D' after D's history
    (2, True)
    """
    return _replay(model, X, history, k).call


def open_call(model, X, history: list[Call], k: int) -> tuple[Call, Callable[[int], Any]]:
    """:func:`replay`, and call ``k``'s ``redraw(n)``: ``n`` fresh outputs of that same call
    (same exact input and calibration, given the history), stacked on a new first axis.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> history = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)
    >>> call, redraw = open_call(DPTauCC(2, 2, epsilon=1.0, random_state=1), pair.D, history, 2)
    >>> redraw(5).shape == (5, *call.output.shape)  # five more draws of row assignment 2
    True
    """
    rep = _replay(model, X, history, k)
    if rep.redraw is None:
        raise HistoryDiverged(f"call {k} ({rep.call.step}) offers no redraw")
    return rep.call, rep.redraw


def replay_all(model, X, history: list[Call]) -> list[Call]:
    """Fit ``model`` on X with *every* call forced to ``history``'s output; return the calls,
    each with its charge and its calibration (the exact input its law read on X). Raises
    :class:`HistoryDiverged` when the fit makes another call, ends early or raises.

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("moving_row")
    >>> history = record(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D)
    >>> calls = replay_all(DPTauCC(2, 2, epsilon=1.0, random_state=0), pair.D_prime, history)
    >>> len(calls) == len(history), calls[0].calibration is not None
    (True, True)
    """
    rep = _FullReplayer(history)
    token = MECHANISM_HOOK.set(rep)
    try:
        _fit(model, X)
    except HistoryDiverged:
        raise
    except Exception as exc:
        raise HistoryDiverged(f"the fit raised {type(exc).__name__} ({exc}) after "
                              f"{len(rep.calls)} forced calls") from exc
    finally:
        MECHANISM_HOOK.reset(token)
    if len(rep.calls) != len(history):
        raise HistoryDiverged(f"the fit ended after {len(rep.calls)} of the history's "
                              f"{len(history)} calls")
    return rep.calls


def _replay(model, X, history: list[Call], k: int) -> _Replayer:
    rep = _Replayer(history, k)
    token = MECHANISM_HOOK.set(rep)
    try:
        _fit(model, X)
    except _Stop:
        pass
    except HistoryDiverged:
        raise
    except Exception as exc:
        if rep.n == 0:
            raise
        # the forced outputs are not valid for this input (e.g. a choice index among fewer
        # candidates than on D): the history cannot be replayed here
        raise HistoryDiverged(f"the fit raised {type(exc).__name__} ({exc}) after {rep.n} "
                              "forced calls: the recorded history is not valid on this input"
                              ) from exc
    finally:
        MECHANISM_HOOK.reset(token)
    if rep.call is None:
        raise HistoryDiverged(f"the fit ended after {rep.n} calls, before call {k}")
    return rep
