"""Corrected-mode DPHD's mechanism calls, made in Octave and served here.

Octave computes what each mechanism needs from the private data (integer bucket counts,
integer cluster sums and sizes, normalised utilities) and states its ε and sensitivity
(``dphd_mechanism.m``); :class:`MechanismServer` charges the fit's ledger and draws the noise
with the library's mechanisms (:func:`~dptaucc.privacy.discrete_laplace_mechanism`,
:func:`~dptaucc.privacy.exponential_mechanism`) from the fit's sampler, and returns only the
release. So DPHD's noise comes from the same samplers as every estimator of the suite: the
seeded 106-bit sampler for research, OpenDP's exact samplers with ``secure=True``, and a
recording sampler in tests, whatever language computed the counts.

The privacy audit (:mod:`dptaucc.audit.transcript`) sees DPHD's calls one level up, as what
Octave receives: :class:`ObservedServer` hands the audit hook each request's *answer* (after
any Python around the mechanism), and a ``redraw`` that serves the same request again, so a
release that bypasses or alters the mechanism is sampled as released.
"""

from __future__ import annotations

import math

import numpy as np

from dptaucc.privacy import (
    PrivacyLedger,
    Sampler,
    discrete_laplace_mechanism,
    exponential_mechanism,
)
from dptaucc.privacy.calibration import first_draw
from dptaucc.privacy.hook import MECHANISM_HOOK, watch

__all__ = ["MechanismServer", "ObservedServer"]


def _number(value) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


class MechanismServer:
    """Answers one fit's mechanism requests (a callable handed to :func:`octave.run_fit`).

    ``trace`` (tests): a list that receives every request with its answer, as dicts with
    ``op, step, epsilon, sensitivity, values`` (what Octave sent) and ``output``.

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> ledger, trace = PrivacyLedger(), []
    >>> server = MechanismServer(make_sampler(0), ledger, trace)
    >>> def request(op, step, epsilon, values):
    ...     return {"op": op, "step": step, "note": "", "epsilon": epsilon,
    ...             "sensitivity": 1.0, "values": values}
    >>> server(request("exponential", "split", math.inf, np.array([[0.0, 5.0, 1.0]])))
    array([[2]])
    >>> server(request("charge", "unused round", 0.5, np.zeros((0, 0)))).shape  # nothing drawn
    (0, 0)
    >>> [(e.step, e.epsilon) for e in ledger.entries], len(trace)  # the best index, 1-based
    ([('split', inf), ('unused round', 0.5)], 2)
    """

    def __init__(self, sampler: Sampler, ledger: PrivacyLedger, trace: list | None = None):
        self.sampler = sampler
        self.ledger = ledger
        self.trace = trace

    def __call__(self, request: dict) -> np.ndarray:
        """The release for one request: an int64 array (noisy values, or a 1-based index)."""
        op = request["op"]
        step, note = str(request["step"]), str(request["note"])
        epsilon, sensitivity = _number(request["epsilon"]), _number(request["sensitivity"])
        values = request["values"]
        if op == "discrete-laplace":
            output = discrete_laplace_mechanism(values, epsilon=epsilon, sensitivity=sensitivity,
                                                sampler=self.sampler,
                                                ledger=self.ledger, step=step, note=note)
            answer = output
        elif op == "exponential":
            rows = int(request.get("batch", 1))  # an audit's redraws: one choice per row
            utilities = np.asarray(values, dtype=float).reshape(rows, -1)
            output = exponential_mechanism(utilities, epsilon=epsilon, sensitivity=sensitivity,
                                           sampler=self.sampler,
                                           ledger=self.ledger, step=step, note=note)
            answer = np.asarray(output, dtype=np.int64).reshape(rows, 1) + 1  # Octave: from 1
            if "batch" in request:
                answer = answer.reshape(rows, 1, 1)
        elif op == "charge":  # budget set aside for steps not run: charged, nothing drawn
            self.ledger.charge(step, "discrete-laplace", epsilon, 0.0, sensitivity,
                               "sequential", note, math.nan)
            output = answer = np.zeros((0, 0), dtype=np.int64)
        else:  # pragma: no cover - octave.py only passes the three operations
            raise ValueError(f"unknown mechanism request {op!r}")
        if self.trace is not None:
            self.trace.append({"op": op, "step": step, "epsilon": epsilon,
                               "sensitivity": sensitivity, "values": np.array(values),
                               "output": np.array(output)})
        return answer


class ObservedServer:
    """The handler a fit gives Octave: ``server(request)``, and while the audit hook is set
    (:mod:`dptaucc.privacy.hook`), one hook call per release with what Octave receives.

    The hook sees the request's step, the ledger entries the request appended, the answer
    (a 1-based index for the exponential mechanism) and ``redraw(n)``: ``n`` answers of the
    same request served again by a fresh server of the same class on the fit's sampler
    (its charges go to a scratch ledger), so the redraws take the path the answer took;
    ``n`` answers are one request whose values are stacked n times (``batch``: a choice per
    stacked row), served by the same ``__call__`` in one vectorised mechanism call. The
    hook's return value is what Octave gets (a replayed history). The library mechanisms
    inside do not report to the hook themselves (one call, not two). ``charge`` requests
    release nothing and are not reported.

    >>> import math
    >>> import numpy as np
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> from dptaucc.privacy.hook import MECHANISM_HOOK
    >>> class Replace:  # a hook that answers with its own release
    ...     def released(self, step, mechanism, entries, output, redraw=None):
    ...         return np.array([[1]]) if redraw(4).shape == (4, 1, 1) else output
    >>> server = ObservedServer(MechanismServer(make_sampler(0), PrivacyLedger()))
    >>> ask = {"op": "exponential", "step": "split", "note": "", "epsilon": math.inf,
    ...        "sensitivity": 1.0, "values": np.array([[0.0, 5.0]])}
    >>> server(ask).tolist()  # no hook: the server's answer
    [[2]]
    >>> token = MECHANISM_HOOK.set(Replace())
    >>> server(ask).tolist()  # the hook's answer reaches Octave
    [[1]]
    >>> MECHANISM_HOOK.reset(token)
    """

    def __init__(self, server: MechanismServer):
        self.server = server

    def __call__(self, request: dict) -> np.ndarray:
        seen = watch(self.server.ledger)
        if seen is None or request["op"] == "charge":
            return self._quiet(self.server, request)
        # the library mechanism inside declares its calibration into this call's collector
        answer = first_draw(seen, lambda: self._quiet(self.server, request), None)
        server_class, sampler = type(self.server), self.server.sampler

        def draw(n=None):
            """One answer, or ``n`` (a batch: the request's values stacked n times, so
            every value gets its own noise and every choice is made afresh)."""
            ask = request if n is None else dict(
                request, batch=int(n),
                values=np.broadcast_to(request["values"], (int(n), *np.shape(request["values"]))))
            return self._quiet(server_class(sampler, PrivacyLedger()), ask)
        return seen.released(str(request["step"]), str(request["op"]), answer, draw)

    @staticmethod
    def _quiet(server: MechanismServer, request: dict) -> np.ndarray:
        token = MECHANISM_HOOK.set(None)
        try:
            return server(request)
        finally:
            MECHANISM_HOOK.reset(token)
