"""Tools to look inside a DPHD fit (used by the test suite; usable for your own audits).

:func:`traced_fits` records, for every DPHD fit run inside it, what Octave asked of each
mechanism (the private values it sent, the ε and sensitivity it stated, the release it got
back) and the public intermediates of each round (the projection G, the candidate centres,
the local search's first centre set, the round's centres). Combined with a
:class:`~dptaucc.privacy.checks.RecordingSampler` as ``random_state`` (the noise actually
drawn, with its scale), a test can check every mechanism call against the method's math.
The records hold private values: never keep them beyond a test.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

from . import octave

__all__ = ["FitTrace", "traced_fits", "have_octave"]


@dataclass
class FitTrace:
    """One traced fit: ``requests`` (dicts with op, step, epsilon, sensitivity, values,
    output, in call order), ``rounds`` (per round: G, candidates, ids0, centers) and the
    ``params`` the fit sent to Octave.

    >>> trace = FitTrace(params={"k": 2})
    >>> trace.requests += [{"op": "exponential", "step": "round 1: split"},
    ...                    {"op": "discrete-laplace", "step": "round 1: sizes"}]
    >>> [r["step"] for r in trace.of("exponential")], trace.of("discrete-laplace", "round 2")
    (['round 1: split'], [])
    """

    params: dict
    requests: list[dict] = field(default_factory=list)
    rounds: list[dict] = field(default_factory=list)

    def of(self, op: str, step_part: str = "") -> list[dict]:
        """The requests of one operation whose step name contains ``step_part``."""
        return [r for r in self.requests if r["op"] == op and step_part in r["step"]]


@contextlib.contextmanager
def traced_fits() -> Iterator[list[FitTrace]]:
    """Within the block, every DPHD fit appends a :class:`FitTrace` to the yielded list.

    >>> from dptaucc.baselines.dphd import octave
    >>> original = octave.run_fit
    >>> with traced_fits() as traces:
    ...     patched = octave.run_fit is not original
    >>> patched, octave.run_fit is original, traces  # restored on leaving the block
    (True, True, [])
    """
    original = octave.run_fit
    traces: list[FitTrace] = []

    def run_fit(key, build, params, handler, timeout=octave.DEFAULT_TIMEOUT):
        params = dict(params, trace=True)
        record = FitTrace(params=params)
        getattr(handler, "server", handler).trace = record.requests
        out = original(key, build, params, handler, timeout)
        tr = out.get("trace") or {}
        names = ("G", "candidates", "ids0", "centers")
        record.rounds = [{name: tr[name][r] for name in names}
                         for r in range(len(tr.get("G", [])))]
        traces.append(record)
        return out

    octave.run_fit = run_fit
    try:
        yield traces
    finally:
        octave.run_fit = original


def have_octave() -> bool:
    """True when the Octave program the wrapper would run is installed.

    >>> import shutil
    >>> have_octave() == (shutil.which(octave.OCTAVE_EXECUTABLE) is not None)
    True
    """
    return shutil.which(octave.OCTAVE_EXECUTABLE) is not None
