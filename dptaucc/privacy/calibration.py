"""What a mechanism call really drew, told to the privacy audit (off unless a hook is set).

While the audit hook (:mod:`dptaucc.privacy.hook`) watches a call, the call's first draw runs
inside a *collector* (:func:`first_draw`) that receives:

* one :class:`NoiseDraw` from the sampler itself for each noise draw — its law, its source
  (``"seeded"``, ``"secure"``, or ``"generator"`` for a plain numpy Generator) and the scale it
  really drew at (so a scale changed between the charge and the draw is seen as drawn);
* one :class:`Declaration` from the mechanism: the sensitivity it was calibrated for, the norm
  that sensitivity is measured in, how many of the released values a neighbour may change
  (for per-value mechanisms) and any public facts the privacy map needs (a bounded range).

The audit's independent privacy map (:mod:`dptaucc.audit.privacy_map`) recomputes from these
what the call costs and compares it with what the ledger charged
(:mod:`dptaucc.audit.ledger_check`). With no hook set nothing is collected: each sampler call
reads one context variable and goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["NoiseDraw", "Declaration", "Calibration", "StepUtility", "note_draw", "declare",
           "first_draw", "draws_only", "collecting", "NORMS", "SOURCES"]

#: the norms a declared sensitivity may be measured in
NORMS = ("l1", "l2", "range", "per-value", "l2-blocks", "linf")
#: where a draw's randomness came from
SOURCES = ("seeded", "secure", "generator")

_SINK: ContextVar[list | None] = ContextVar("CALIBRATION_SINK", default=None)


@dataclass(frozen=True)
class NoiseDraw:
    """One noise draw as the sampler made it.

    ``law``: ``"discrete-laplace"`` (b), ``"choice"`` (the exponential mechanism's β),
    ``"gaussian"`` (σ, a scalar or one per coordinate), ``"laplace-float"`` (b),
    ``"bernoulli"`` (no scale: the side draw of the bounded mechanism), ``"bounded-discrete-
    laplace"`` (the per-value scales with ``detail["upper"]``, the public ranges they were
    drawn in). ``count``: values drawn.

    >>> NoiseDraw("discrete-laplace", "seeded", 2.0, 3).min_scale
    2.0
    """

    law: str
    source: str
    scale: Any  # a float, or an array (one scale per value or coordinate)
    count: int
    detail: dict = field(default_factory=dict)

    @property
    def min_scale(self) -> float:
        s = np.asarray(self.scale, dtype=float)
        return float(s.min()) if s.size else float("nan")


@dataclass(frozen=True)
class Declaration:
    """What a mechanism was calibrated for.

    ``sensitivity``: the largest change of the released values between neighbours, measured
    in ``norm`` (``"l1"``, ``"l2"``: of the whole release; ``"range"``: of one row's
    utilities, max − min; ``"per-value"``: of each value, ``n_changed`` of which may change;
    ``"l2-blocks"``: one row of the release changes, block B of that row by at most
    ``detail["blocks"][B]`` in L2; ``"linf"``: of the utility at every output, max |u − u'|).
    Mechanism ``"exponential-grid"``: the textbook exponential mechanism over a public grid
    of outputs, P(o) ∝ exp(u(o)/(2β)) with β = Δ/ε the scale of its ``"choice"`` draw,
    ``exact`` a :class:`StepUtility` (u over the grid's indices) and norm ``"linf"``.
    ``n_changed``: rows (exponential mechanism) or values (per-value norm) a neighbour may
    change; 1 for a norm that covers the whole release.
    ``exact``: the call's exact input as its law reads it (the values noised, or the
    utilities chosen from), a reference kept only while the audit collects: the call-site
    audit compares D's with D''s to compute what the pair really costs under this law
    (:mod:`dptaucc.audit.pair_cost`). None: not told.

    >>> Declaration("discrete-laplace", 1.0, "l1").n_changed
    1
    """

    mechanism: str
    sensitivity: float
    norm: str
    n_changed: int = 1
    detail: dict = field(default_factory=dict)
    exact: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, eq=False)
class StepUtility:
    """A utility constant on runs of a public grid's indices, told in a data-independent
    form: ``utility[i]`` on the grid indices ``edges[i] ≤ j < edges[i + 1]`` (``edges``
    increasing integers; the outputs are the indices ``edges[0] ≤ j < edges[-1]``). The exact
    input of an exponential mechanism over ~2^30 grid points whose utility only changes at
    the data's values (DPM's interval quantile), small enough to keep and compare.

    >>> u = StepUtility(np.array([0, 3, 4, 10]), np.array([-1.0, 0.0, -2.0]))
    >>> u.at(np.array([0, 2, 3, 9])).tolist(), u.lengths.tolist()
    ([-1.0, -1.0, 0.0, -2.0], [3, 1, 6])
    """

    edges: np.ndarray
    utility: np.ndarray

    def __post_init__(self):
        edges = np.asarray(self.edges, dtype=np.int64)
        utility = np.asarray(self.utility, dtype=float)
        if edges.ndim != 1 or utility.shape != (edges.size - 1,) or utility.size == 0:
            raise ValueError(f"need k + 1 edges for k ≥ 1 utilities, got {edges.shape} and "
                             f"{utility.shape}")
        if np.any(np.diff(edges) <= 0):
            raise ValueError("edges must increase strictly")
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "utility", utility)

    @property
    def lengths(self) -> np.ndarray:
        """Grid points in each run."""
        return np.diff(self.edges)

    def at(self, index: np.ndarray) -> np.ndarray:
        """u at grid indices inside ``edges[0] ≤ j < edges[-1]``."""
        return self.utility[np.searchsorted(self.edges, np.asarray(index), side="right") - 1]


@dataclass(frozen=True)
class Calibration:
    """Everything one watched mechanism call told the audit.

    >>> calib = Calibration((Declaration("discrete-laplace", 1.0, "l1"),),
    ...                     (NoiseDraw("discrete-laplace", "seeded", 2.0, 3),))
    >>> calib.laws(), calib.sources()
    (['discrete-laplace'], ['seeded'])
    """

    declarations: tuple[Declaration, ...] = ()
    draws: tuple[NoiseDraw, ...] = ()

    def laws(self) -> list[str]:
        return sorted({d.law for d in self.draws})

    def sources(self) -> list[str]:
        return sorted({d.source for d in self.draws})

    @property
    def empty(self) -> bool:
        return not (self.declarations or self.draws)


def note_draw(law: str, source: str, scale, count, **detail) -> None:
    """Called by samplers at each noise draw (``count``: values drawn, or the shape drawn);
    a no-op unless a collector is open.

    >>> note_draw("discrete-laplace", "seeded", 1.0, 5)  # nobody listens: nothing happens
    >>> with collecting() as seen:
    ...     note_draw("discrete-laplace", "seeded", 1.0, 5)
    >>> seen[0].law, seen[0].count
    ('discrete-laplace', 5)
    """
    sink = _SINK.get()
    if sink is not None:
        sink.append(NoiseDraw(law, source, scale, int(np.prod(count, dtype=np.int64)), detail))


def declare(declaration: Declaration | None) -> None:
    """Called by a mechanism for its draw; a no-op unless a collector is open.

    >>> declare(Declaration("discrete-laplace", 1.0, "l1"))  # nobody listens: nothing kept
    >>> with collecting() as seen:
    ...     declare(Declaration("exponential", 2.0, "range", n_changed=3))
    ...     declare(None)  # a call with nothing to declare
    >>> [(d.mechanism, d.sensitivity, d.n_changed) for d in seen]
    [('exponential', 2.0, 3)]
    """
    sink = _SINK.get()
    if sink is not None and declaration is not None:
        sink.append(declaration)


class collecting:
    """Open a collector for the block: ``with collecting() as items: ...``.

    >>> with collecting() as outer:
    ...     note_draw("gaussian", "secure", 0.5, (2, 3))
    ...     with collecting() as inner:  # a nested collector takes the draws while open
    ...         note_draw("choice", "seeded", 1.0, 4)
    ...     note_draw("laplace-float", "generator", 2.0, 1)
    >>> [(d.law, d.count) for d in outer], [(d.law, d.count) for d in inner]
    ([('gaussian', 6), ('laplace-float', 1)], [('choice', 4)])
    """

    def __enter__(self) -> list:
        self._items: list = []
        self._token = _SINK.set(self._items)
        return self._items

    def __exit__(self, *exc) -> None:
        _SINK.reset(self._token)


def calibration_of(items: list) -> Calibration:
    return Calibration(tuple(i for i in items if isinstance(i, Declaration)),
                       tuple(i for i in items if isinstance(i, NoiseDraw)))


def first_draw(seen, draw: Callable[[], Any], declaration: Declaration | None) -> Any:
    """``draw()``, collecting what it tells when a watch ``seen`` is open (the calibration goes
    to ``seen``), or declaring into an enclosing collector (a mechanism run inside another
    watched call, as DPHD's requests).

    >>> from dptaucc.privacy.hook import _Watch
    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> class Quiet:
    ...     def released(self, step, mechanism, entries, output, redraw=None):
    ...         return output
    >>> seen = _Watch(Quiet(), PrivacyLedger())
    >>> first_draw(seen, lambda: note_draw("choice", "seeded", 0.5, 2) or 7,
    ...            Declaration("exponential", 1.0, "range"))
    7
    >>> seen.calibration.laws(), seen.calibration.declarations[0].norm
    (['choice'], 'range')
    """
    if seen is None:
        declare(declaration)
        return draw()
    with collecting() as items:
        declare(declaration)
        out = draw()
    seen.calibration = calibration_of(items)
    return out


def draws_only(draw: Callable[[], Any]) -> Any:
    """``draw()`` for a mechanism built on another one whose law it declares itself: the inner
    mechanism's noise draws reach the enclosing collector as drawn, its own declarations do
    not (the outer declaration states the law of the whole). Without a collector, ``draw()``.

    >>> with collecting() as seen:
    ...     declare(Declaration("exponential-grid", 1.0, "linf"))
    ...     draws_only(lambda: declare(Declaration("exponential", 1.0, "range"))
    ...                or note_draw("choice", "seeded", 0.5, 1))
    >>> [type(i).__name__ + ":" + getattr(i, "mechanism", getattr(i, "law", "")) for i in seen]
    ['Declaration:exponential-grid', 'NoiseDraw:choice']
    """
    sink = _SINK.get()
    if sink is None:
        return draw()
    with collecting() as items:
        out = draw()
    sink.extend(i for i in items if isinstance(i, NoiseDraw))
    return out
