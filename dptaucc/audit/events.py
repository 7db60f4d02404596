"""Events on a fitted estimator: ``function(model) -> bool``, fixed before an audit runs.

Any function of the fitted model will do (a dict ``{name: function}`` is accepted by
:func:`dptaucc.audit.audit`); the builders here cover the usual leaks of clustering code. They
are checked, not trusted:

* an event that raises while it is evaluated — an attribute the model does not have (a typo
  such as ``m.labels_`` on a model that has ``row_labels_``), a wrong shape, anything — stops
  the audit with :class:`AuditEventError`, which names the event and the attribute; it is never
  counted as "did not happen";
* an event that never fires (or always fires) on both sides is *uninformative*: the audit
  reports it, and an audit whose events are all uninformative gives no evidence
  (``epsilon_lower`` NaN), never a pass.

Events may read public facts (D, D', the changed cell, the parameters and the ledger), never
the random state: the seed determines all the noise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptaucc.objective import contingency_table

from .pairs import NeighbouringPair
from .reachability import laplace_reachable

__all__ = [
    "AuditEventError", "Event", "as_events", "evaluate_events", "values_equal", "same_partition",
    "attribute_equals", "labels_match_evaluation", "same_label", "contingency_equals_exact",
    "table_cell_reachable", "table_cell_above", "fewer_clusters_than", "slice_is_zero",
    "ledger_laplace_scale", "released_cell", "dense", "nearest_sq_distances",
    "tau_equals_exact", "sizes_of_assignment",
]


class AuditEventError(RuntimeError):
    """An event raised while evaluated on a fitted model: the audit stops (CLI exit code 2).

    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(row_labels_=[0, 1])
    >>> try:
    ...     evaluate_events(as_events({"typo": lambda m: m.labels_[0] == 0}), model)
    ... except AuditEventError as error:
    ...     print(error.event, error.attribute)
    typo labels_
    """

    def __init__(self, event: str, error: BaseException, attribute: str | None = None):
        if attribute is None and isinstance(error, AttributeError):
            attribute = getattr(error, "name", None)
        self.event, self.attribute, self.error = event, attribute, error
        what = f" (attribute {attribute!r})" if attribute else ""
        super().__init__(f"event {event!r} raised {type(error).__name__}{what}: {error}")

    def __reduce__(self):  # crosses process boundaries (audit workers)
        return type(self), (self.event, self.error, self.attribute)


@dataclass(frozen=True)
class Event:
    """A named event; ``fn(model)`` is truthy when the event occurred.

    >>> from types import SimpleNamespace
    >>> event = Event("two clusters", lambda m: m.n_clusters_ == 2, needs=("n_clusters_",))
    >>> event(SimpleNamespace(n_clusters_=2)), event(SimpleNamespace(n_clusters_=3))
    (True, False)
    """

    name: str
    fn: Callable[[Any], Any]
    description: str = ""
    needs: tuple[str, ...] = ()  # attributes/methods it reads (see :func:`applicable`)

    def __call__(self, model) -> bool:
        return bool(self.fn(model))


def as_events(events: Mapping[str, Callable] | Sequence[Event]) -> list[Event]:
    """Normalise ``{name: fn}`` or a list of :class:`Event` (may be empty: the auditor's own
    "fit raised" event is always there).

    >>> [e.name for e in as_events({"a": len, "b": bool})]
    ['a', 'b']
    >>> as_events({"a": 3})
    Traceback (most recent call last):
    ...
    TypeError: events must be {name: callable} or a list of Event objects
    """
    if isinstance(events, Mapping):
        out = [Event(str(k), f) for k, f in events.items()]
    else:
        out = list(events)
    for e in out:
        if not isinstance(e, Event) or not callable(e.fn):
            raise TypeError("events must be {name: callable} or a list of Event objects")
    return out


def applicable(events: Sequence[Event], model) -> list[Event]:
    """The events whose ``needs`` the (unfitted) model declares in ``release_kinds()`` or
    has as methods: an event on an attribute one mode does not release is not built for
    that mode. A declared attribute that a fit then lacks is still an error."""
    kinds = model.release_kinds() if hasattr(model, "release_kinds") else {}
    return [e for e in events
            if all(n in kinds or callable(getattr(type(model), n, None)) for n in e.needs)]


def evaluate_events(events: Sequence[Event], model) -> np.ndarray:
    """Boolean array: which events fired. An event that raises is an
    :class:`AuditEventError` naming it (and the attribute, for a missing one).

    >>> from types import SimpleNamespace
    >>> events = [fewer_clusters_than(3), same_label(0, 1)]
    >>> evaluate_events(events, SimpleNamespace(n_row_clusters_=2, row_labels_=[1, 0])).tolist()
    [True, False]
    """
    fired = np.zeros(len(events), dtype=bool)
    for i, e in enumerate(events):
        try:
            fired[i] = e(model)
        except Exception as error:
            raise AuditEventError(e.name, error) from error
    return fired


# ------------------------------------------------------------------------------ helpers
def dense(X) -> np.ndarray:
    """A count matrix (dense or sparse) as a dense float array (small audit pairs only).

    >>> dense([[1, 0], [0, 2]]).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    return np.asarray(sp.csr_matrix(X, dtype=np.float64).toarray())


def nearest_sq_distances(X: np.ndarray, centres) -> np.ndarray:
    """Each row's squared distance to its nearest centre.

    >>> nearest_sq_distances(np.array([[0.0], [3.0]]), [[1.0], [5.0]]).tolist()
    [1.0, 4.0]
    """
    return ((X[:, None, :] - np.asarray(centres, float)[None, :, :]) ** 2).sum(axis=2).min(axis=1)


def values_equal(got, want, rtol: float = 1e-9) -> bool:
    """Same shape and values (numbers within ``rtol``, exact zeros exact; others exact).

    >>> values_equal([1.0, 0.0], [1.0 + 1e-12, 0.0]), values_equal([0.0], [1e-300])
    (True, False)
    >>> values_equal([1, 2], [[1, 2]]), values_equal(["a"], ["a"])
    (False, True)
    """
    a, b = np.asarray(got), np.asarray(want)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        return bool(np.allclose(a, b, rtol=rtol, atol=0.0, equal_nan=True))
    return bool(np.array_equal(a, b))


def same_partition(a, b) -> bool:
    """True iff two label vectors define the same partition (label names ignored).

    >>> bool(same_partition([0, 0, 1, 2], [5, 5, 3, 9])), bool(same_partition([0, 0, 1], [0, 1, 1]))
    (True, False)
    >>> bool(same_partition([0, 1], [0, 0]))  # a merge is another partition
    False
    """
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if a.shape != b.shape:
        return False
    ia = np.unique(a, return_inverse=True)[1]
    ib = np.unique(b, return_inverse=True)[1]
    pairs = np.unique(np.stack([ia, ib]), axis=1)
    return pairs.shape[1] == ia.max(initial=-1) + 1 == ib.max(initial=-1) + 1


def _table_labels(model) -> tuple[np.ndarray, np.ndarray]:
    """Row and column labels of a co-clusterer's released table: ``dp_row_labels_`` when the
    model has it (DP-τCC keeps it beside non-private final labels), else ``row_labels_``."""
    rows = getattr(model, "dp_row_labels_", None)
    if rows is None:
        rows = model.row_labels_
    return np.asarray(rows, dtype=np.intp), np.asarray(model.column_labels_, dtype=np.intp)


def _exact_table(model, X, shape: tuple[int, int]) -> np.ndarray:
    r, c = _table_labels(model)
    return contingency_table(sp.csr_matrix(X, dtype=np.float64), r, c, shape[0], shape[1])


def released_cell(model, pair: NeighbouringPair, attr: str = "contingency_"
                  ) -> tuple[float, float, float]:
    """The released table cell holding the changed cell (u, v), and its exact values on D and
    on D' under the released labels: ``(y, x_D, x_D')``.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("all_zero_row", n_per_cluster=2, n_cols=4)  # (u, v) = (4, 0)
    >>> model = SimpleNamespace(row_labels_=np.array([0, 0, 1, 1, 0]),
    ...                         column_labels_=np.array([0, 0, 1, 1]),
    ...                         contingency_=np.array([[8.5, 0.0], [0.0, 8.0]]))
    >>> released_cell(model, pair)  # the released cell (0, 0) and its exact D, D' values
    (8.5, 8.0, 9.0)
    """
    T = np.asarray(getattr(model, attr), dtype=float)
    r, c = _table_labels(model)
    k, l = int(r[pair.u]), int(c[pair.v])
    x_d = _exact_table(model, pair.D, T.shape)[k, l]
    x_dp = _exact_table(model, pair.D_prime, T.shape)[k, l]
    return float(T[k, l]), float(x_d), float(x_dp)


def ledger_laplace_scale(model) -> float:
    """Scale Δ/ε of the last Laplace entry (float or discrete) of ``privacy_ledger_`` (the
    released table).

    >>> from types import SimpleNamespace
    >>> from dptaucc.privacy.ledger import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> _ = ledger.charge("rows", "exponential", 0.5, sensitivity=1.0)
    >>> _ = ledger.charge("table", "laplace", 0.25, sensitivity=2.0)
    >>> ledger_laplace_scale(SimpleNamespace(privacy_ledger_=ledger))  # 2/0.25
    8.0
    """
    for entry in reversed(model.privacy_ledger_.entries):
        if entry.mechanism in ("laplace", "laplace-float", "discrete-laplace"):
            return entry.sensitivity / entry.epsilon
    raise ValueError("the ledger records no Laplace release")


# ------------------------------------------------------------------------------ builders
def attribute_equals(attr: str, expected: Callable[[Any], Any], name: str | None = None,
                     rtol: float = 1e-9) -> Event:
    """"Released ``attr`` equals ``expected(model)``", a recomputation from the raw data (e.g.
    a loss or labels recomputed from D). True under D for a raw-data attribute, false under D'
    whenever the one-count change moves it.

    >>> from types import SimpleNamespace
    >>> event = attribute_equals("total_", lambda m: 10.0)
    >>> event(SimpleNamespace(total_=10.0)), event(SimpleNamespace(total_=11.0)), event.needs
    (True, False, ('total_',))
    """
    return Event(name or f"{attr} equals its recomputation on D",
                 lambda m: values_equal(getattr(m, attr), expected(m), rtol), needs=(attr,))


def labels_match_evaluation(D, attr: str = "row_labels_",
                            method: str = "evaluation_row_labels") -> Event:
    """The released labels define the same partition as the model's own evaluation-only
    assignment of D's rows (a raw-data recomputation).

    >>> import numpy as np
    >>> class Toy:
    ...     row_labels_ = np.array([1, 1, 0])
    ...     def evaluation_row_labels(self, X):  # nearest of two fixed points
    ...         return (np.asarray(X)[:, 0] > 1).astype(int)
    >>> labels_match_evaluation([[0], [0], [5]])(Toy())
    True
    >>> labels_match_evaluation([[5], [0], [5]])(Toy())
    False
    """
    return Event(f"{attr} partition equals {method}(D)",
                 lambda m: same_partition(getattr(m, attr), getattr(m, method)(D)),
                 needs=(attr, method))


def same_label(u: int, w: int, attr: str = "row_labels_") -> Event:
    """Rows u and w share a label.

    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(row_labels_=[2, 2, 0])
    >>> same_label(0, 1)(model), same_label(1, 2)(model)
    (True, False)
    """
    def fn(m):
        labels = np.asarray(getattr(m, attr))
        return labels[u] == labels[w]
    return Event(f"{attr}[{u}] == {attr}[{w}]", fn, needs=(attr,))


def contingency_equals_exact(D, attr: str = "contingency_") -> Event:
    """The released table equals the exact table of D under the released labels.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> D = np.array([[2, 0], [0, 3]])
    >>> model = SimpleNamespace(row_labels_=np.array([0, 1]), column_labels_=np.array([0, 1]),
    ...                         contingency_=np.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> contingency_equals_exact(D)(model), contingency_equals_exact(D + 1)(model)
    (True, False)
    """
    def fn(m):
        T = np.asarray(getattr(m, attr), dtype=float)
        return values_equal(T, _exact_table(m, D, T.shape))
    return Event(f"{attr} equals the exact table of D", fn, needs=(attr, "column_labels_"))


def table_cell_reachable(pair: NeighbouringPair, attr: str = "contingency_",
                         scale: float | None = None, clip_min: float | None = 0.0) -> Event:
    """Mironov's test on the released cell holding (u, v): its double is reachable as
    ``x_D + Generator.laplace(0, scale)`` and not as ``x_D' + …`` (then clipped at
    ``clip_min``). ``scale`` None: read from the ledger (:func:`ledger_laplace_scale`).

    A whole-number release is taken to lie on the integer grid of a discrete mechanism, whose
    output set is the same for every input: the event is then False.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("all_zero_row", n_per_cluster=2, n_cols=4)
    >>> exact = np.array([[8.0, 0.0], [0.0, 8.0]])  # the table of D under these labels
    >>> def released(noise):
    ...     table = exact.copy()
    ...     table[0, 0] += noise
    ...     return SimpleNamespace(row_labels_=np.array([0, 0, 1, 1, 0]),
    ...                            column_labels_=np.array([0, 0, 1, 1]), contingency_=table)
    >>> event = table_cell_reachable(pair, scale=2.0)
    >>> event(released(np.random.default_rng(3).laplace(0.0, 2.0)))  # textbook float noise
    True
    >>> event(released(3.0))  # a whole number: a discrete mechanism's output
    False
    """
    def fn(m):
        y, x_d, x_dp = released_cell(m, pair, attr)
        if y == round(y):
            return False
        s = ledger_laplace_scale(m) if scale is None else scale
        return laplace_reachable(y, x_d, s, clip_min) and not laplace_reachable(y, x_dp, s,
                                                                               clip_min)
    return Event(f"{attr} cell of (u, v) float-reachable from D only", fn,
                 needs=(attr, "column_labels_"))


def table_cell_above(pair: NeighbouringPair, margin: float = 0.5,
                     attr: str = "contingency_") -> Event:
    """The released cell holding (u, v) exceeds its exact value on D by more than ``margin``.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from dptaucc.audit.pairs import make_pair
    >>> pair = make_pair("all_zero_row", n_per_cluster=2, n_cols=4)
    >>> model = SimpleNamespace(row_labels_=np.array([0, 0, 1, 1, 0]),
    ...                         column_labels_=np.array([0, 0, 1, 1]),
    ...                         contingency_=np.array([[9.0, 0.0], [0.0, 8.0]]))
    >>> table_cell_above(pair)(model), table_cell_above(pair, margin=1.0)(model)
    (True, False)
    """
    def fn(m):
        y, x_d, _ = released_cell(m, pair, attr)
        return y > x_d + margin
    return Event(f"{attr} cell of (u, v) > exact(D) + {margin:g}", fn,
                 needs=(attr, "column_labels_"))


def fewer_clusters_than(k: int, attr: str = "n_row_clusters_") -> Event:
    """The model reports fewer than k clusters (an empty cluster was dropped).

    >>> from types import SimpleNamespace
    >>> fewer_clusters_than(3)(SimpleNamespace(n_row_clusters_=2)), fewer_clusters_than(2).name
    (True, 'n_row_clusters_ < 2')
    """
    return Event(f"{attr} < {k}", lambda m: int(getattr(m, attr)) < k, needs=(attr,))


def slice_is_zero(attr: str, index, label: str | None = None) -> Event:
    """``attr[index]`` is exactly zero (e.g. a per-row factor of a row with no counts).

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(W_=np.array([[0.5, 0.1], [0.0, 0.0]]))
    >>> slice_is_zero("W_", 1, label="u")(model), slice_is_zero("W_", 0)(model)
    (True, False)
    """
    return Event(f"{attr}[{label or index}] all zero",
                 lambda m: bool(np.all(np.asarray(getattr(m, attr))[index] == 0)), needs=(attr,))


def tau_equals_exact(D) -> Event:
    """The released τ statistics equal Goodman–Kruskal's τ of D's exact table under the
    released labels (a statistic post-processed from the exact table instead of the released
    one).

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from dptaucc.objective import goodman_kruskal_tau
    >>> D = np.array([[4, 0], [1, 5]])
    >>> model = SimpleNamespace(row_labels_=np.array([0, 1]), column_labels_=np.array([0, 1]),
    ...                         contingency_=np.array([[5, 1], [1, 5]]))
    >>> model.tau_rc_, model.tau_cr_ = goodman_kruskal_tau(model.contingency_)
    >>> tau_equals_exact(D)(model)  # τ of the released table, not of D's
    False
    >>> model.tau_rc_, model.tau_cr_ = goodman_kruskal_tau(D.astype(float))
    >>> tau_equals_exact(D)(model)
    True
    """
    from dptaucc.objective import goodman_kruskal_tau

    def fn(m):
        T = np.asarray(m.contingency_, dtype=float)
        exact = goodman_kruskal_tau(_exact_table(m, D, T.shape))
        return values_equal([m.tau_rc_, m.tau_cr_], exact, rtol=1e-9)
    return Event("tau_rc_, tau_cr_ = τ of the exact table of D", fn,
                 needs=("tau_rc_", "contingency_", "column_labels_"))


def sizes_of_assignment(model, X, k: int) -> np.ndarray:
    """NOT PRIVATE (an event's raw recomputation): how many rows of X the model's
    ``predict`` puts in each of its k clusters.

    >>> import numpy as np
    >>> class Nearest:
    ...     def predict(self, X):
    ...         return (np.asarray(X)[:, 0] > 1).astype(int)
    >>> sizes_of_assignment(Nearest(), np.array([[0], [3], [5]]), 2).tolist()
    [1, 2]
    """
    return np.bincount(np.asarray(model.predict(X), dtype=np.intp), minlength=k)
