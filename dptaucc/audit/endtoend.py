"""End-to-end audits of what a fitted model releases, with events derived from its declarations.

For every attribute a model declares in ``release_kinds()`` as a DP output, post-processing or
public fact (non-private attributes excepted: they are declared leaks), each fit contributes
the attribute's value and, for arrays, views that do not depend on how clusters are numbered:
its sorted row sums (an exact zero centre, an exact count) and every other release with as many
rows in the lexicographic row order of this one (cluster sizes ordered by their centres).
:mod:`dptaucc.audit.derived` turns these into threshold, value and projection events chosen on
half of the fits and counted on the other half, next to hand-written events (raw-data
recomputations) and "fit raised".
Nothing has to be written per attribute: a new method or attribute is audited as declared.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dptaucc.privacy.releases import LEDGER_ATTRIBUTES, NON_PRIVATE

from . import derived
from .events import Event, evaluate_events
from .runner import FIT_RAISED, fit_seed
from .stats import epsilon_lower_bound
from .workers import in_chunks

__all__ = ["ReleaseResult", "release_views", "audit_release"]


def _numeric(value) -> np.ndarray | None:
    if value is None:
        return None
    if sp.issparse(value):
        value = value.toarray()
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged (a tree, a list of tuples): not an array release
        return None
    return arr if arr.dtype.kind in "biuf" else None


def release_views(model) -> dict[str, np.ndarray]:
    """``{view: array}`` of a fitted model: every declared non-ledger attribute that is not
    non-private and is numeric, plus ``"<attr> sorted row sums"`` for arrays with rows.

    >>> import numpy as np
    >>> from dptaucc.privacy.releases import DP, NON_PRIVATE, ReleaseKindsMixin
    >>> class Toy(ReleaseKindsMixin):
    ...     _release_kinds = {"centers_": DP, "labels_": NON_PRIVATE}
    >>> toy = Toy()
    >>> toy.centers_, toy.labels_ = np.array([[3.0, 1.0], [0.0, 1.0]]), np.array([0, 1])
    >>> views = release_views(toy)  # labels_ read the data outside a mechanism: not a view
    >>> sorted(views), views["centers_ sorted row sums"].tolist()
    (['centers_', 'centers_ sorted row sums'], [1.0, 4.0])
    """
    out: dict[str, np.ndarray] = {}
    for attr, kind in model.release_kinds().items():
        if kind == NON_PRIVATE or attr in LEDGER_ATTRIBUTES:
            continue
        arr = _numeric(getattr(model, attr, None))
        if arr is None:
            continue
        out[attr] = arr
        if arr.ndim >= 1 and arr.shape[0] > 1:
            out[f"{attr} sorted row sums"] = np.sort(
                arr.reshape(arr.shape[0], -1).astype(float).sum(axis=1))
    base = [k for k in out if not k.endswith("sums")]
    for key in base:  # rows of one release in the order of another's rows
        arr = out[key]
        if arr.ndim != 2 or arr.shape[0] < 2:
            continue
        order = np.lexsort(arr.T[::-1])
        together = [arr[order].reshape(arr.shape[0], -1).astype(float)]
        for other in base:
            if other != key and out[other].ndim >= 1 and out[other].shape[0] == arr.shape[0]:
                out[f"{other} in the row order of {key}"] = out[other][order]
                together.append(out[other][order].reshape(arr.shape[0], -1).astype(float))
        if len(together) > 1:  # every release with these rows, as one vector: joint events
            out[f"all releases in the row order of {key}"] = np.hstack(together).ravel()
    return out


def _observe(build, X, events: Sequence[Event], seed: int):
    model = build(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.fit(X)
        except Exception:
            return True, {}, np.zeros(len(events), dtype=bool)
        return False, release_views(model), evaluate_events(events, model)


@dataclass
class ReleaseResult:
    """One end-to-end audit of a method's releases: the lower bound, its event and counts.

    >>> ReleaseResult(float("nan"), "", 100, 0.5).verdict, ReleaseResult(0.4, "e", 100, 0.5).verdict
    ('no evidence', 'bound')
    """

    epsilon_lower: float  # NaN: no informative event
    event: str
    n_fits: int
    elapsed_s: float
    counts: dict = field(default_factory=dict)
    uninformative: list = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "no evidence" if math.isnan(self.epsilon_lower) else "bound"


def _derive(obs_a, obs_b, n_events: int, delta: float = 0.0):
    """Selected events, as (label, fires(observations) -> bool array) pairs."""
    sel_a, sel_b = obs_a[::2], obs_b[::2]
    names = sorted({k for o in obs_a + obs_b for k in o[1]})
    out = []
    for name in names:
        A, sa, shape = derived.as_matrix([o[1].get(name, np.empty(0)) for o in sel_a])
        B, sb, _ = derived.as_matrix([o[1].get(name, np.empty(0)) for o in sel_b], shape)
        for e in derived.select(A, B, sa, sb, name=name, n_events=n_events, delta=delta):
            def fires(obs, e=e, name=name, shape=shape):
                M, s, _ = derived.as_matrix([o[1].get(name, np.empty(0)) for o in obs], shape)
                return e.fires(M, s)
            out.append((e.label, fires))
    return out


def audit_release(build: Callable, D, D_prime, events: Sequence[Event], *, n_fits: int,
                  alpha: float, claim: float = math.inf, delta: float = 0.0, seed: int = 0,
                  bug: str | None = None, n_jobs: int = 1, looks: int = 2,
                  n_events: int = 2, derive: bool = True) -> ReleaseResult:
    """Fit on D and D' up to ``n_fits`` times each; a simultaneous (1 − α) lower bound from
    "fit raised" and the hand-written ``events`` (fixed in advance: counted on every fit) and
    the derived events (``derive``; counted on the held-out half). α is split over the two
    families in proportion to their sizes (Bonferroni). Stops at a look whose bound exceeds
    ``claim``.

    >>> import numpy as np
    >>> from dptaucc.audit.events import Event
    >>> from dptaucc.audit.pairs import make_pair
    >>> from dptaucc.privacy.releases import DP, ReleaseKindsMixin
    >>> pair = make_pair("moving_row")  # cell (12, 0) holds 1 in D, 2 in D'
    >>> class Leaky(ReleaseKindsMixin):  # claims its cell_ is a DP release: it is not
    ...     _release_kinds = {"cell_": DP}
    ...     def fit(self, X):
    ...         self.cell_ = int(X[12, 0])
    ...         return self
    >>> result = audit_release(lambda seed: Leaky(), pair.D, pair.D_prime,
    ...                        [Event("cell is 1", lambda m: m.cell_ == 1)], n_fits=100,
    ...                        alpha=0.05, claim=1.0, derive=False)
    >>> result.verdict, result.epsilon_lower > 1.0
    ('bound', True)
    >>> result.n_fits, result.counts["cell is 1"]  # above the claim at the first look: stop
    (50, [50, 0])
    """
    t0 = time.perf_counter()
    obs_a: list = []
    obs_b: list = []
    sizes = [max(4, int(round(n_fits * (i + 1) / looks))) for i in range(looks)]
    res = None
    for size in sizes:
        new = range(len(obs_a), size)
        obs_a += in_chunks(_observe, (build, D, events), [fit_seed(seed, 2 * i) for i in new],
                           bug=bug, n_jobs=n_jobs)
        obs_b += in_chunks(_observe, (build, D_prime, events),
                           [fit_seed(seed, 2 * i + 1) for i in new], bug=bug, n_jobs=n_jobs)
        held_a, held_b = obs_a[1::2], obs_b[1::2]
        fixed = [FIT_RAISED, *(e.name for e in events)]
        fk_a = np.array([sum(o[0] for o in obs_a)]
                        + list(np.sum([o[2] for o in obs_a], axis=0) if events else []), np.int64)
        fk_b = np.array([sum(o[0] for o in obs_b)]
                        + list(np.sum([o[2] for o in obs_b], axis=0) if events else []), np.int64)
        derived_ev = _derive(obs_a, obs_b, n_events, delta) if derive else []
        dk_a = np.array([int(f(held_a).sum()) for _, f in derived_ev], np.int64)
        dk_b = np.array([int(f(held_b).sum()) for _, f in derived_ev], np.int64)
        families = [(fixed, fk_a, fk_b, len(obs_a), len(obs_b)),
                    ([lab for lab, _ in derived_ev], dk_a, dk_b, len(held_a), len(held_b))]
        total_events = len(fixed) + len(derived_ev)
        eps, best, dull, counts = math.nan, None, [], {}
        for labels, k_a, k_b, n_a, n_b in families:
            if not labels:
                continue
            tot = k_a + k_b
            dull += [lab for lab, t in zip(labels, tot, strict=True) if t in (0, n_a + n_b)]
            counts.update({lab: [int(a), int(b)] for lab, a, b in zip(labels, k_a, k_b,
                                                                        strict=True)})
            if np.all((tot == 0) | (tot == n_a + n_b)):
                continue
            a = alpha / looks * len(labels) / total_events
            e, c = epsilon_lower_bound(labels, k_a, k_b, n_a, n_b, a, delta)
            if math.isnan(eps) or e > eps:
                eps, best = e, c
        res = ReleaseResult(eps, "" if best is None else best.label, len(obs_a),
                            time.perf_counter() - t0, counts, dull)
        if eps > claim * (1 + 1e-9):
            break
    assert res is not None
    res.elapsed_s = time.perf_counter() - t0
    return res
