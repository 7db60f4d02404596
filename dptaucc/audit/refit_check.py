"""The refit check: an estimator fitted again must hold what a fresh one fitted the same way holds.

Every other audit fit is of a fresh estimator, so a method whose ``fit`` keeps state from an
earlier fit of the same object is invisible to them: a corrected model refitted after a
paper-mode fit keeping that fit's non-private partition, or any fitted attribute computed from
the previous data. :func:`check_refit` fits one estimator object on D' first (a *history*),
then refits that same object on D with the parameters and the seed of a fresh estimator, and
compares the two models attribute by attribute. The histories (:func:`histories`):

* the same parameters (another seed, the other dataset of the pair);
* every other value of each string-valued parameter the estimator's
  ``_parameter_constraints`` lists (``mode="paper"``, a method's variants and options), one
  parameter at a time; a value the fit refuses in corrected mode (a paper-only variant) is
  fitted in paper mode, as a user switching modes would;
* the settings of the method's other audit scenarios (given by the caller).

What is compared: every attribute whose name ends in ``_`` (the fitted attributes: released
arrays, the privacy ledger, public facts), recursively through arrays, sparse matrices,
containers, dataclasses and plain objects; integers, strings and booleans exactly, floats bit
for bit with NaN equal to NaN (both fits run in this process on this machine: a
self-comparison, not a stored digest). A refit that carries an attribute the fresh fit lacks,
lacks one it has, or holds a different value is a violation (the gate's exit 3). Attributes
that differ between two fresh fits with the same seed (a timing, say) cannot be compared and
are named in the record instead.

Limits: only state visible in fitted attributes is seen (a stale cache that changes no fitted
value is not), and only on the seeded path: a secure fit draws unpredictable noise, so its
refit cannot be compared with a fresh fit and is skipped (:func:`refit_record` says so). It
needs ``get_params``/``set_params`` (scikit-learn's API) for the refit's parameters.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["History", "RefitCheck", "histories", "fitted_attributes", "instance_state",
           "difference", "check_refit", "refit_record", "refit_section"]

#: nesting depth beyond which values are not compared further (guards self-referencing objects)
MAX_DEPTH = 12


@dataclass(frozen=True)
class History:
    """A previous fit of the refitted object: its label and ``seed -> estimator`` builder.

    >>> from dptaucc.baselines.dp_kmeans import DPKMeans
    >>> history = History("mode='paper'", lambda seed: DPKMeans(2, mode="paper",
    ...                                                          random_state=seed))
    >>> history.label, history.build(3).mode
    ("mode='paper'", 'paper')
    """

    label: str
    build: Callable[[int], object]


@dataclass
class RefitCheck:
    """The outcome of :func:`check_refit`.

    >>> RefitCheck(compared=3, attributes=12).verdict
    'ok'
    >>> RefitCheck(compared=0, attributes=0).verdict
    'no evidence'
    """

    compared: int = 0  # histories whose refit was compared with the fresh fit
    attributes: int = 0  # fitted attributes of the fresh fit
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_fits: int = 0

    @property
    def verdict(self) -> str:
        if self.problems:
            return "violation"
        return "ok" if self.compared else "no evidence"


def _fit(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X)


def _with(build: Callable[[int], object], **params) -> Callable[[int], object]:
    def built(seed: int):
        return build(seed).set_params(**params)
    return built


def _options(constraints) -> list:
    """The values of the string-option constraints of one parameter (scikit-learn's
    ``StrOptions``: objects with an ``options`` set)."""
    values = []
    for c in constraints or ():
        options = getattr(c, "options", None)
        if isinstance(options, (set, frozenset)):
            values += [v for v in options if isinstance(v, str)]
    return sorted(set(values))


def histories(build: Callable[[int], object],
              others: Sequence[History] = ()) -> list[History]:
    """The previous fits :func:`check_refit` refits after (module docstring): the same
    parameters, each other value of each string-option parameter, then ``others``.

    >>> from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
    >>> [h.label for h in histories(lambda s: ColoredNoiseKMeans(2, random_state=s))]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['same parameters', "mode='paper'", "noise='diag'", "noise='white'", "row_transform='l1'",
     "variant='local'"]
    """
    model = build(0)
    params = model.get_params(deep=False)
    out = [History("same parameters", build)]
    constraints = getattr(model, "_parameter_constraints", {}) or {}
    for name in sorted(constraints):
        if name not in params:
            continue
        for value in _options(constraints[name]):
            if value != params[name]:
                out.append(History(f"{name}={value!r}", _with(build, **{name: value})))
    seen, unique = set(), []
    for history in out + list(others):  # one history per distinct set of parameters
        key = repr(sorted((k, repr(v)) for k, v in history.build(0).get_params(deep=False)
                          .items() if k != "random_state"))
        if key not in seen:
            seen.add(key)
            unique.append(history)
    return unique


def fitted_attributes(model) -> dict:
    """The fitted attributes of a model: its ``__dict__`` entries whose names end in ``_``.

    >>> class M:
    ...     pass
    >>> m = M(); m.alpha, m.coef_, m._cache = 1, 2, 3
    >>> fitted_attributes(m)
    {'coef_': 2}
    """
    return {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("__")}


def instance_state(model) -> dict:
    """Everything a model instance holds: its ``__dict__`` but dunder names (its settings,
    its fitted attributes, and any private attribute, which a pickle or a curious user reads
    as easily).

    >>> class M:
    ...     pass
    >>> m = M(); m.alpha, m.coef_, m._cache = 1, 2, 3
    >>> instance_state(m)
    {'alpha': 1, 'coef_': 2, '_cache': 3}
    """
    return {k: v for k, v in vars(model).items() if not k.startswith("__")}


def _floats_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def difference(a, b, path: str = "", depth: int = 0) -> str | None:
    """Where ``a`` and ``b`` differ (a path and a reason), or None when they are the same:
    types, shapes and dtypes exactly; values exactly, NaN equal to NaN.

    >>> import numpy as np, scipy.sparse as sp
    >>> difference({"x": np.array([1.0, np.nan])}, {"x": np.array([1.0, np.nan])}) is None
    True
    >>> difference([1, (2.0, "a")], [1, (2.0 + 1e-12, "a")])
    '[1][0]: 2.0 != 2.000000000001'
    >>> difference(sp.csr_matrix(np.eye(2)), sp.csr_matrix(2 * np.eye(2)))
    ': sparse values differ'
    """
    if depth > MAX_DEPTH or a is b:
        return None
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: shape/dtype {a.shape} {a.dtype} != {b.shape} {b.dtype}"
        if a.dtype == object:
            for i, (x, y) in enumerate(zip(a.ravel(), b.ravel(), strict=True)):
                found = difference(x, y, f"{path}.flat[{i}]", depth + 1)
                if found:
                    return found
            return None
        if _floats_equal(a, b):
            return None
        return f"{path}: {int((~_equal_mask(a, b)).sum())} of {a.size} values differ"
    if sp.issparse(a):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: sparse shape/dtype {a.shape} {a.dtype} != {b.shape} {b.dtype}"
        x, y = sp.csr_matrix(a, copy=True), sp.csr_matrix(b, copy=True)
        for m in (x, y):
            m.sum_duplicates()
            m.sort_indices()
        same = (np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)
                and _floats_equal(x.data, y.data))
        return None if same else f"{path}: sparse values differ"
    if isinstance(a, (float, np.floating)):
        same = (math.isnan(a) and math.isnan(b)) or a == b
        return None if same else f"{path}: {a!r} != {b!r}"
    if isinstance(a, (bool, int, str, bytes, np.integer, np.bool_, type(None), complex)):
        return None if a == b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {sorted(map(str, a))} != {sorted(map(str, b))}"
        for k in a:
            found = difference(a[k], b[k], f"{path}[{k!r}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(a, np.random.Generator):
        return difference(a.bit_generator.state, b.bit_generator.state, f"{path}.state", depth)
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            found = difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}",
                               depth + 1)
            if found:
                return found
        return None
    slots = [s for cls in type(a).__mro__ for s in getattr(cls, "__slots__", ())]
    if slots and not callable(a):
        missing = object()
        for name in slots:
            found = difference(getattr(a, name, missing), getattr(b, name, missing),
                               f"{path}.{name}", depth + 1)
            if found:
                return found
        return None if not hasattr(a, "__dict__") else difference(vars(a), vars(b), path,
                                                                   depth + 1)
    if hasattr(a, "__dict__") and not callable(a):
        return difference(vars(a), vars(b), path, depth + 1)
    try:
        same = bool(a == b)
    except Exception:  # noqa: BLE001 - a value without a usable ==: compare its text
        same = repr(a) == repr(b)
    return None if same else f"{path}: {a!r} != {b!r}"


def _equal_mask(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    eq = a == b
    if a.dtype.kind in "fc":
        eq |= np.isnan(a) & np.isnan(b)
    return np.asarray(eq)


def _differences(refit: dict, fresh: dict, skip: set) -> list[str]:
    """At most three problems: the attributes the refit keeps, lacks, and holds otherwise.

    >>> _differences({"a_": 1, "b_": 2, "k_": 0}, {"a_": 1, "b_": 3, "c_": 4}, set())
    ... # doctest: +NORMALIZE_WHITESPACE
    ["refit keeps 'k_' from a previous fit (a fresh fit has no such attribute)",
     "refit lacks 'c_', which a fresh fit sets",
     "refit differs from a fresh fit in 'b_' (b_: 2 != 3)"]
    """
    def names(found: list[str]) -> str:
        return ", ".join(map(repr, found))

    out = []
    kept = [name for name in refit if name not in fresh]
    if kept:
        out.append(f"refit keeps {names(kept)} from a previous fit (a fresh fit has no such "
                   "attribute)")
    lacked = [name for name in fresh if name not in refit]
    if lacked:
        out.append(f"refit lacks {names(lacked)}, which a fresh fit sets")
    differ = {name: difference(refit[name], fresh[name], name) for name in fresh
              if name in refit and name not in skip}
    differ = {name: found for name, found in differ.items() if found}
    if differ:
        out.append(f"refit differs from a fresh fit in {names(list(differ))} "
                   f"({next(iter(differ.values()))})")
    return out


def _is_secure(model) -> bool:
    sampler = getattr(model, "random_state", None)
    return bool(getattr(model, "secure", False) or getattr(sampler, "exact", False))


def _previous_fit(history: History, seed: int, X) -> tuple[object, str, int]:
    """The estimator after ``history``'s fit on X, how that fit went, and the fits made. A
    value the fit refuses in corrected mode is fitted in paper mode (a user switching modes);
    a fit that raises still leaves the object to refit."""
    model = history.build(seed)
    try:
        _fit(model, X)
        return model, history.label, 1
    except Exception as error:  # noqa: BLE001 - any refusal: try paper mode, else refit anyway
        first = f"{type(error).__name__}: {error}"
    if model.get_params(deep=False).get("mode") == "corrected":
        paper = history.build(seed).set_params(mode="paper")
        try:
            _fit(paper, X)
            return paper, f"{history.label} (in paper mode: corrected refuses it)", 2
        except Exception:  # noqa: BLE001 - neither mode fits: refit the first object
            pass
    return model, f"{history.label} (the previous fit raised {first[:80]})", 2


def check_refit(build: Callable[[int], object], D, D_prime, *, seed: int,
                others: Sequence[History] = ()) -> RefitCheck:
    """Refit one estimator on D after each history's fit on D' and compare it with a fresh
    estimator fitted on D with the same seed (module docstring).

    >>> import numpy as np
    >>> from dptaucc import DPTauCC
    >>> D = np.random.default_rng(0).poisson(2.0, size=(12, 8))
    >>> D_prime = D.copy()
    >>> D_prime[0, 0] += 1
    >>> check = check_refit(lambda s: DPTauCC(2, 2, random_state=s), D, D_prime, seed=5)
    >>> check.verdict, check.compared, check.n_fits
    ('ok', 2, 6)
    """
    result = RefitCheck()
    fresh = _fit(build(seed), D)
    if _is_secure(fresh):
        result.notes.append("secure fit: no seed reproduces it, so a refit cannot be compared "
                            "with a fresh fit (skipped)")
        result.n_fits = 1
        return result
    if not (hasattr(fresh, "get_params") and hasattr(fresh, "set_params")):
        result.notes.append(f"{type(fresh).__name__} has no get_params/set_params "
                            "(scikit-learn's API): its refit cannot be given a fresh "
                            "estimator's parameters (skipped)")
        result.n_fits = 1
        return result
    twin = _fit(build(seed), D)
    result.n_fits = 2
    ref, other = instance_state(fresh), instance_state(twin)
    result.attributes = len(ref)
    unstable = {n for n in ref if n not in other or difference(ref[n], other[n], n)}
    if unstable:
        result.notes.append(f"not compared (two fresh fits with one seed differ): "
                            f"{sorted(unstable)}")
    for k, history in enumerate(histories(build, others)):
        model, how, fits = _previous_fit(history, seed + 1 + k, D_prime)
        model.set_params(**build(seed).get_params(deep=False))
        result.n_fits += fits + 1
        try:
            _fit(model, D)
        except Exception as error:  # noqa: BLE001 - the fresh fit on D finished: a problem
            result.problems.append(f"after a fit with {how}, the refit on D raised "
                                   f"{type(error).__name__}: {error}")
            continue
        result.compared += 1
        for problem in _differences(instance_state(model), ref, unstable):
            result.problems.append(f"{problem} [previous fit: {how}]")
    return result


def refit_record(build: Callable[[int], object], D, D_prime, *, seed: int,
                 others: Sequence[History] = (), bug: str | None = None) -> dict:
    """One audit record (scope "refit") from :func:`check_refit` (the catalogue ``bug``
    planted): verdict, the histories and attributes compared as ``step``, the problems (or
    what was compared) as ``event``. No ε bound: ``epsilon_lower`` is NaN.

    >>> import numpy as np
    >>> from dptaucc import DPTauCC
    >>> D = np.random.default_rng(0).poisson(2.0, size=(12, 8))
    >>> record = refit_record(lambda s: DPTauCC(2, 2, random_state=s), D, D + 1, seed=5)
    >>> record["scope"], record["verdict"], record["step"]
    ('refit', 'ok', '2 previous fits, 26 attributes')
    """
    from .workers import bug_context

    t0 = time.perf_counter()
    with bug_context(bug):
        check = check_refit(build, D, D_prime, seed=seed, others=others)
    model = build(seed)
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    if check.problems:
        event = "; ".join(check.problems)
    elif check.compared:
        event = (f"{check.compared} refits equal to a fresh fit in every fitted attribute"
                 + (f"; {'; '.join(check.notes)}" if check.notes else ""))
    else:
        event = "; ".join(check.notes) or "no refit compared"
    return {"scope": "refit", "epsilon": float(params.get("epsilon", math.nan)),
            "delta": math.nan, "epsilon_spent": math.nan, "end_to_end_dp": True,
            "epsilon_claimed": math.nan, "epsilon_lower": math.nan, "verdict": check.verdict,
            "step": f"{check.compared} previous fits, {check.attributes} attributes",
            "event": event, "n_fits": check.n_fits, "epsilon_lower_max": math.nan,
            "events": "", "time_s": time.perf_counter() - t0, "limit": ""}


def refit_section(df) -> list[str]:
    """REPORT lines for the refit records of an audit table (scope "refit").

    >>> import pandas as pd
    >>> rows = pd.DataFrame([{"scope": "refit", "method": "dpm", "mode": "corrected",
    ...                       "pair": "added_row", "step": "4 previous fits, 20 attributes",
    ...                       "verdict": "ok", "event": "4 refits equal"}])
    >>> refit_section(rows)[-2]
    '| dpm | corrected | added_row | 4 previous fits, 20 attributes | ok |'
    """
    rows = df[df["scope"] == "refit"] if "scope" in df.columns else df.iloc[0:0]
    if rows.empty:
        return []
    lines = ["### Refits against fresh fits", "",
             "One estimator object fitted on D' (with the same parameters, with every other "
             "value of each string-option parameter, paper mode included, and with the "
             "settings of the method's other scenarios), then refitted on D with a fresh "
             "estimator's parameters and seed: every fitted attribute (name ending in `_`, the "
             "ledger included) must equal the fresh fit's, bit for bit; an attribute the "
             "fresh fit lacks is a violation (docs/audit.md). Seeded path only.", "",
             "| method | mode | pair | compared | verdict |", "|---|---|---|---|---|"]
    for _, r in rows.iterrows():
        verdict = r["verdict"] if r["verdict"] != "violation" else \
            "**violation**: " + str(r["event"]).split("; ")[0].replace("|", "/")
        lines.append(f"| {r['method']} | {r['mode']} | {r['pair']} | {r['step']} | {verdict} |")
    return [*lines, ""]
