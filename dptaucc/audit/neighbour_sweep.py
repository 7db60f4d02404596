"""The neighbour sweep: every mechanism call's exact cost on random neighbouring pairs.

The call-site audit puts each call at the worst case its charge was written for. A bug that
makes a call depend on the data some *other* way (a weight read from the data, a label
relabelled, a clip gone) moves the call's input on pairs nobody crafted for it. The sweep
looks for those pairs at random, with no sampling:

1. From each pair of the method's scenarios and call-site setups (D, D′), a perturbed pair
   (D + N, D′ + N): N random non-negative counts in every row (row u included, the rows D′
   adds excluded), so D′ − D, the neighbouring relation, is unchanged.
2. One fit on D + N records its calls (a fresh seed); the same seed then replays that history
   on D + N and on D′ + N, every call forced to the recorded output
   (:func:`~dptaucc.audit.transcript.replay_all`). With outputs and public randomness equal on
   both sides, each call's law is read from its declared calibration on each side.
3. Each call's exact pair cost (:mod:`dptaucc.audit.pair_cost`) against its charge: a cost above
   the charge (beyond float rounding) is a violation; so is an exact input that moves further
   than the call declared (a value or a row's utilities beyond the sensitivity, more values or
   rows than ``n_changed``: :func:`~dptaucc.audit.pair_cost.declared_move_exceeded`, which sees
   a slip at one value of many that the total cost hides), and a history that replays on D + N
   but not on D′ + N (something other than a release steers the fit: the path check of
   :mod:`dptaucc.audit.callsite`).
4. The two replayed fits' whole instance state (fitted attributes ``*_``, settings and any
   private attribute: :func:`~dptaucc.audit.refit_check.instance_state`), compared bit for bit
   (:func:`state_differs`; for an added row, D′ against D′ with that row zeroed, so n is the
   same): under equal releases and seed, a corrected fit holds post-processing of its
   releases and public facts only, so any difference is an attribute the data steers past
   the mechanisms (an exact count, an exact norm, a step size read from the rows).
5. The noise each discrete Laplace or Gaussian call drew on D (its output less its exact
   input), compared between the calls of a fit: identical noise in two calls far more often
   than independent draws allow (:func:`noise_coincidences`, a Poisson tail below
   :data:`REUSE_ALPHA` over the sweep) is a draw reused, a violation. And every Gaussian
   release must lie on the grid its noise scale fixes (:func:`off_grid`): value + noise is
   rounded there, so a released value off it carries its exact input in its low bits.
6. The path and the attributes again between D + N and a *far twin*, a random matrix of the
   same shape (:func:`far_twin`): they must not differ between any two inputs with the same
   public facts, and a far input moves an exact quantity much further than a neighbour does
   (a split decided on exact counts flips, where one row rarely tips it).
7. Every :data:`DENSE_EVERY`-th round over the specs hands the fits their inputs as dense
   arrays instead of sparse matrices (:func:`as_fit_input`): an estimator that takes
   another path for dense input (an embedding, a projection, a block sum) is swept there too.

Correct code cannot fail it: a call's charge bounds its loss on *every* neighbouring pair
given its history, and the cost is computed, not estimated. A call whose two sides' laws
cannot be compared (shapes or candidate lists that differ, a continuous law with no exact
input) is counted as having no exact cost. The sweep is deterministic given the audit seed.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from .pair_cost import declared_move_exceeded, exceeds, pair_cost
from .pairs import NeighbouringPair, RowPair
from .transcript import HistoryDiverged, record, replay_all

__all__ = ["perturbed", "perturbed_rows", "far_twin", "noise_coincidences", "same_shape_twin",
           "state_differs", "sweep_pair", "SweepResult", "sweep", "method_specs", "sweep_record",
           "call_kind", "as_fit_input", "DENSE_EVERY", "off_grid",
           "N_PAIRS"]

#: largest count N adds to a cell
MAX_ADDED = 3
#: rows of their own reach this many times the pair's largest value (log-uniform: small values
#: as often as large ones), past any public bound a method could set from the pair's scale
OWN_REACH = 64


def _unit(pair) -> float:
    """The smallest positive value of D and D′ (1 for an all-zero pair): the perturbations are
    multiples of it, so they keep the pair's scale (counts, or a grid of fractions)."""
    values = np.concatenate([pair.D.data, pair.D_prime.data])
    values = values[values > 0]
    return float(values.min()) if values.size else 1.0


def _noise(rng: np.random.Generator, shape: tuple[int, int], unit: float,
           top: int = MAX_ADDED) -> sp.csr_matrix:
    """``unit`` × random counts in 1..``top`` on a random share (10-60 %) of the cells,
    log-uniform (every scale from one unit to ``top`` equally often, so values fall on both
    sides of a public bound the sweep does not know)."""
    density = rng.uniform(0.1, 0.6)
    mask = rng.random(shape) < density
    steps = np.floor(np.exp(rng.uniform(0.0, np.log(top + 1.0), size=shape))) * mask
    values = steps.astype(np.int64) if unit == 1.0 else steps * unit
    return sp.csr_matrix(values)


def _own_rows(rng: np.random.Generator, pair, rows: int, unit: float) -> sp.csr_matrix:
    """Rows for D′ alone (a replaced or an added row may be any row): up to :data:`OWN_REACH`
    times the pair's largest value (at least :data:`MAX_ADDED` units), so public bounds and
    clipping are crossed."""
    largest = max(pair.D.max() if pair.D.nnz else 0, pair.D_prime.max() if pair.D_prime.nnz
                  else 0)
    top = max(MAX_ADDED, int(np.ceil(OWN_REACH * largest / unit)))
    return _noise(rng, (rows, pair.D.shape[1]), unit, top)


#: at most this many rows appended to both sides
MAX_APPENDED = 30


def perturbed(pair: NeighbouringPair | RowPair, rng: np.random.Generator,
              ) -> NeighbouringPair | RowPair:
    """:func:`perturbed_rows`, and half the time up to :data:`MAX_APPENDED` rows appended to
    both D and D′ (random values as :func:`_own_rows` draws them: clusters of other sizes,
    counts and sums away from their ranges' edges; D′ − D unchanged).

    >>> from dptaucc.audit.pairs import make_pair
    >>> rng = np.random.default_rng(1)
    >>> pair = make_pair("moving_row")
    >>> shapes = {perturbed(pair, rng).D.shape[0] - pair.D.shape[0] for _ in range(20)}
    >>> min(shapes) == 0 < max(shapes) <= MAX_APPENDED
    True
    """
    out = perturbed_rows(pair, rng)
    if rng.random() < 0.5:
        return out
    rows = _own_rows(rng, pair, int(rng.integers(1, MAX_APPENDED + 1)), _unit(pair))
    rows = sp.csr_matrix(rows, dtype=out.D.dtype)
    D = sp.vstack([out.D, rows], format="csr")
    if isinstance(out, NeighbouringPair):
        return replace(out, D=D)
    extra = out.D_prime.shape[0] - out.D.shape[0]
    if extra == 0:
        return replace(out, D=D, D_prime=sp.vstack([out.D_prime, rows], format="csr"))
    # D' adds rows at u: the shared rows go before them, so every shared row keeps its
    # position on both sides (a fit's per-row random choices stay aligned)
    n = out.D.shape[0]
    if out.u != n:
        raise ValueError(f"pair {out.name}: rows are appended only where D' adds its rows last")
    return replace(out, D=D, D_prime=sp.vstack([D, out.D_prime[n:]], format="csr"),
                   u=n + rows.shape[0])


def perturbed_rows(pair: NeighbouringPair | RowPair, rng: np.random.Generator,
                   ) -> NeighbouringPair | RowPair:
    """``pair`` with the same random values added to D and D′ (1 to 3 times the pair's smallest
    positive value); under a row relation the rows of D′ that D does not share (row u
    replaced, the rows D′ adds) get their own random values instead, up to :data:`OWN_REACH`
    times the pair's largest (any row may replace or join another); and half the time the rows
    D and D′ share are drawn afresh the same way (a row relation's pair need not keep its
    counts), so rows fall below and above any public bound; half of those times the shared
    rows are small (1 to 3 units) and only D′'s own rows are large, the contrast under which a
    normaliser or bound read from the data's largest row moves furthest.

    >>> from dptaucc.audit.pairs import added_row, make_pair
    >>> rng = np.random.default_rng(0)
    >>> pair = make_pair("moving_row")
    >>> p = perturbed_rows(pair, rng)
    >>> diff = (p.D_prime - p.D).tocoo()  # still one count in cell (u, v)
    >>> list(zip(diff.row.tolist(), diff.col.tolist(), diff.data.tolist())) == [(*pair.cell, 1)]
    True
    >>> q = perturbed_rows(added_row(n_per_cluster=3, n_cols=4), rng)
    >>> bool((q.D_prime[:6] != q.D).nnz == 0), q.D_prime.shape  # D' still D plus one row
    (True, (7, 4))
    >>> from dptaucc.audit.pairs import replaced_row
    >>> r = perturbed_rows(replaced_row(n_per_cluster=3, n_cols=4), rng)
    >>> np.flatnonzero(abs(r.D_prime - r.D).sum(axis=1)).tolist()  # only row u differs
    [6]
    """
    n, m = pair.D.shape
    unit = _unit(pair)
    noise = _noise(rng, (n, m), unit)
    if isinstance(pair, NeighbouringPair):
        return replace(pair, name=f"{pair.name}+noise", D=sp.csr_matrix(pair.D + noise))
    extra = pair.D_prime.shape[0] - n
    if extra < 0 or pair.D_prime.shape[1] != m:
        raise ValueError(f"pair {pair.name}: D' must have D's columns and as many rows or more")
    if rng.random() < 0.5:  # every row of its own: values above and below any public bound
        # half of those times small rows only (1 to 3 units), beside the large rows of their
        # own that D′ gets: a bound, norm or scale read from the data's largest row moves
        # with the changed row alone
        fresh = _own_rows(rng, pair, n, unit) if rng.random() < 0.5 else \
            _noise(rng, (n, m), unit)
        pair = replace(pair, D=sp.csr_matrix(fresh), D_prime=sp.vstack(
            [fresh[:pair.u], pair.D_prime[pair.u:pair.u + max(extra, 1)],
             fresh[pair.u + (1 if extra == 0 else 0):]], format="csr"))
        noise = sp.csr_matrix((n, m), dtype=fresh.dtype)
    D = sp.csr_matrix(pair.D + noise)
    if extra == 0:  # row u replaced: its D' version is a row of its own
        D_prime = sp.lil_matrix(pair.D_prime + noise)
        D_prime[pair.u] = _own_rows(rng, pair, 1, unit)
    else:  # the added rows sit at u (add/remove relation)
        added = sp.csr_matrix(pair.D_prime[pair.u:pair.u + extra]
                              + _own_rows(rng, pair, extra, unit))
        D_prime = sp.vstack([D[:pair.u], added, D[pair.u:]], format="csr")
    D_prime = sp.csr_matrix(D_prime)
    if (abs(D_prime[:pair.u] - D[:pair.u]).nnz
            or abs(D_prime[pair.u + max(extra, 1):] - D[pair.u + (1 if extra == 0 else 0):]).nnz):
        raise AssertionError("a perturbed pair changed rows other than u")
    return RowPair(f"{pair.name}+noise", D, D_prime, pair.u, pair.n_clusters, pair.description)


def far_twin(pair: NeighbouringPair | RowPair, rng: np.random.Generator) -> RowPair:
    """(D, a matrix of D's shape drawn as :func:`_own_rows` draws rows): not neighbours, but
    inputs with the same public facts, which is all the path and the fitted attributes may
    depend on under equal releases.

    >>> from dptaucc.audit.pairs import make_pair
    >>> far = far_twin(make_pair("moving_row"), np.random.default_rng(0))
    >>> far.D.shape == far.D_prime.shape
    True
    """
    other = _own_rows(rng, pair, pair.D.shape[0], _unit(pair))
    return RowPair(f"{pair.name} (far twin)", pair.D, sp.csr_matrix(other, dtype=pair.D.dtype),
                   pair.u, pair.n_clusters, pair.description)


def same_shape_twin(pair: NeighbouringPair | RowPair) -> NeighbouringPair | RowPair:
    """``pair`` if D and D′ have the same shape, else (D′ with the rows it adds set to zero,
    D′): the state check compares fits on inputs with the same public facts (n, m).

    >>> from dptaucc.audit.pairs import added_row
    >>> twin = same_shape_twin(added_row(n_per_cluster=3, n_cols=4))
    >>> twin.D.shape == twin.D_prime.shape, twin.D.toarray()[-1].tolist()
    (True, [0, 0, 0, 0])
    """
    extra = pair.D_prime.shape[0] - pair.D.shape[0]
    if extra == 0:
        return pair
    D = sp.lil_matrix(pair.D_prime, copy=True)
    D[pair.u:pair.u + extra] = 0
    return RowPair(f"{pair.name} (added rows zeroed)", sp.csr_matrix(D, dtype=pair.D.dtype),
                   pair.D_prime, pair.u, pair.n_clusters, pair.description)


@dataclass(frozen=True)
class SweepResult:
    """The worst call of a sweep: ``ratio`` = exact cost / charge (NaN when no call had an
    exact cost), where it was found, whether some pair's history diverged on D′ only
    (``path_differs``), and the first problem of another kind (``declared``: an input moved
    beyond its declaration, a fitted attribute that differs under the same releases).

    >>> SweepResult(1.0, "x", 3, 6, 0, "", "", 0.1).violated
    False
    >>> SweepResult(0.5, "x", 1, 2, 0, "", "a fitted attribute differs", 0.1).violated
    True
    """

    ratio: float
    where: str
    pairs: int
    calls: int
    no_exact_cost: int
    path_differs: str
    declared: str
    seconds: float
    #: pairs left out because the fit (or its replay on D) raised, and the first reason
    refused: tuple[int, str] = (0, "")
    #: estimators the sweep built and fitted (records, replays, twins)
    fits: int = 0
    #: kinds of call (:func:`call_kind`) the sweep met but never costed exactly: no evidence
    #: on them from the sweep
    unjudged: tuple[str, ...] = ()
    #: every kind of call the sweep's fits made
    kinds: tuple[str, ...] = ()
    #: pairs whose fits got dense arrays (:func:`as_fit_input`)
    dense_pairs: int = 0

    @property
    def violated(self) -> bool:
        return bool(self.path_differs or self.declared) or exceeds(self.ratio, 1.0)

    @property
    def event(self) -> str:
        """What the sweep found: the violation, else the worst call."""
        if self.path_differs:
            return f"the forced history replays on D, diverges on D' ({self.path_differs})"
        if self.declared:
            return self.declared
        return self.where


#: a sweep flags reused noise when identical noise in two calls of one fit is this improbable
#: under independent draws (Poisson tail of the coincidences seen over the expected number)
REUSE_ALPHA = 1e-9


def _drawn_noise(call) -> tuple[np.ndarray, tuple] | None:
    """(noise drawn, per-value scale) of a one-declaration discrete Laplace or Gaussian call,
    from its released output and its exact input; None for other calls."""
    calib = call.calibration
    if calib is None or len(calib.declarations) != 1:
        return None
    d = calib.declarations[0]
    law = {"discrete-laplace": "discrete-laplace", "gaussian": "gaussian"}.get(d.mechanism)
    draws = [x for x in calib.draws if x.law == law]
    if law is None or d.exact is None or len(draws) != 1:
        return None
    out, exact = np.asarray(call.output), np.asarray(d.exact)
    if out.shape != exact.shape or out.dtype.kind not in "iuf" or out.size == 0:
        return None
    scale = np.broadcast_to(np.asarray(draws[0].scale, dtype=float), out.shape)
    return (out.astype(float) - exact.astype(float)).ravel(), (law, scale.ravel())


def off_grid(call) -> str:
    """Where a one-declaration Gaussian call released a value off the grid its noise scale
    fixes (2^(⌊log₂ σ⌋ − GRID_BITS), per value or coordinate; :func:`dptaucc.privacy.
    snap_to_grid`), or "". The mechanism rounds value + noise to that grid, so every output is
    reachable from every input; a value off the grid (the noise rounded before the exact
    value is added, say) carries that value in its low bits. Exact on any CPU: a grid step is
    a power of two.

    >>> from types import SimpleNamespace as NS
    >>> from dptaucc.privacy import snap_to_grid
    >>> from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw
    >>> calib = Calibration((Declaration("gaussian", 1.0, "l2", exact=np.array([0.3])),),
    ...                     (NoiseDraw("gaussian", "seeded", 2.0, 1),))
    >>> off_grid(NS(step="sums", output=snap_to_grid(np.array([1.7]), 2.0), calibration=calib))
    ''
    >>> off_grid(NS(step="sums", output=0.3 + snap_to_grid(np.array([1.4]), 2.0),
    ...             calibration=calib)).split(" is ")[1]
    'off the grid 1.1920928955078125e-07 of its noise scale 2 (1 of 1 values)'
    """
    from dptaucc.privacy.mechanisms import GRID_BITS

    calib = call.calibration
    if calib is None or len(calib.declarations) != 1 \
            or calib.declarations[0].mechanism != "gaussian":
        return ""
    draws = [d for d in calib.draws if d.law == "gaussian"]
    out = np.asarray(call.output)
    if len(draws) != 1 or out.dtype.kind != "f" or out.size == 0:
        return ""
    try:
        scale = np.broadcast_to(np.asarray(draws[0].scale, dtype=float), out.shape)
    except ValueError:
        return ""
    noisy = scale > 0
    step = np.ldexp(1.0, np.frexp(np.where(noisy, scale, 1.0))[1] - 1 - GRID_BITS)
    off = np.flatnonzero((noisy & (np.round(out / step) * step != out)).ravel())
    if not off.size:
        return ""
    i = off[0]
    return (f"{call.step}: released value {float(out.ravel()[i])!r} is off the grid "
            f"{float(step.ravel()[i])!r} of its noise scale {scale.ravel()[i]:.4g} ({off.size} "
            f"of {out.size} values)")


def _coincidence(a, b) -> float:
    """P(two independent draws of these laws agree at every value): for discrete Laplace of
    scales s, s' (q = e^(−1/s)) each value agrees with c·c'·(1 + qq')/(1 − qq'),
    c = (1 − q)/(1 + q); a Gaussian never agrees (0)."""
    (law_a, sa), (law_b, sb) = a, b
    if law_a != law_b or law_a != "discrete-laplace":
        return 0.0
    qa, qb = np.exp(-1.0 / sa), np.exp(-1.0 / sb)
    ca, cb = (1 - qa) / (1 + qa), (1 - qb) / (1 + qb)
    return float(np.exp(np.sum(np.log(ca * cb * (1 + qa * qb) / (1 - qa * qb)))))


def noise_coincidences(calls) -> tuple[int, float, str]:
    """(pairs of calls of one fit whose noise is identical, how many were expected under
    independent draws, the first such pair) over the fit's discrete Laplace and Gaussian calls
    of the same shape: noise reused from one release in another (a draw kept, a generator
    rebuilt from the seed) makes them agree every time.

    >>> from types import SimpleNamespace as NS
    >>> from dptaucc.privacy.calibration import Calibration, Declaration, NoiseDraw
    >>> def call(step, exact, out):
    ...     d = Declaration("discrete-laplace", 1.0, "l1", exact=np.array(exact))
    ...     c = Calibration((d,), (NoiseDraw("discrete-laplace", "seeded", 4.0, len(exact)),))
    ...     return NS(step=step, output=np.array(out), calibration=c)
    >>> seen, expected, where = noise_coincidences(
    ...     [call("a", [5, 0, 2], [7, -1, 2]), call("b", [1, 1, 1], [3, 0, 1])])
    >>> seen, round(expected, 5), where
    (1, 0.00025, "'a' and 'b'")
    """
    noises = [(c.step, n) for c in calls if (n := _drawn_noise(c)) is not None]
    seen, expected, where = 0, 0.0, ""
    for i, (step_i, (x, law_i)) in enumerate(noises):
        for step_j, (y, law_j) in noises[i + 1:]:
            if x.shape != y.shape:
                continue
            expected += _coincidence(law_i, law_j)
            if np.array_equal(x, y):
                seen += 1
                where = where or f"{step_i!r} and {step_j!r}"
    return seen, expected, where


#: every this-many-th round over a method's specs fits dense arrays (the others sparse)
DENSE_EVERY = 4


def as_fit_input(X, dense: bool):
    """X as the fits of one pair see it: a dense ``numpy`` array when ``dense``, else as given.

    >>> as_fit_input(sp.identity(2, format="csr"), True).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return X.toarray() if dense and sp.issparse(X) else X


def _replayed(build, seed: int, X, history, dense: bool = False):
    model = build(seed)
    return replay_all(model, as_fit_input(X, dense), history), model


def state_differs(build: Callable[[int], object], pair, seed: int, dense: bool = False) -> str:
    """Where the fitted attributes of two fits differ that replay one history (recorded on D,
    same seed) on D and on D′ of the same shape, or "": with every release and all public
    randomness equal, what a corrected fit holds is post-processing of its releases and
    public facts, so it must be the same bit for bit; a difference is an attribute the
    private data steers past the mechanisms (a fit that raises or diverges: "", the path
    check's business). ``dense``: the fits get dense arrays (:func:`as_fit_input`).

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> state_differs(lambda s: DPTauCC(2, 2, random_state=s), make_pair("moving_row"), 0)
    ''
    """
    from .refit_check import difference, instance_state

    try:
        history = record(build(seed), as_fit_input(pair.D, dense))
        _, model_a = _replayed(build, seed, pair.D, history, dense)
        _, model_b = _replayed(build, seed, pair.D_prime, history, dense)
    except Exception:  # noqa: BLE001 - refused input or diverged path: judged elsewhere
        return ""
    found = difference(instance_state(model_a), instance_state(model_b))
    return f"{pair.name}: {found}" if found else ""


def sweep_pair(build: Callable[[int], object], pair, seed: int, skip: Sequence[str] = (),
               costs: bool = True, noise: list | None = None, refused: list | None = None,
               dense: bool = False) -> tuple[list[tuple[float, str]], int, str, str]:
    """((ratio, where, step) of every call with an exact cost, the steps of the calls without one,
    the divergence on
    D′ or "", the first problem of another kind or "": a call whose input moved beyond its
    declaration, or fitted attributes that differ under the same history) for one pair; a
    fit that raises on D leaves the pair out (no calls). Calls of a ``skip`` step (outputs not
    comparable between D and D′, as the method's call-site setups declare) are not judged.
    ``costs=False`` (a pair outside the relation the calls are charged for, e.g. an end-to-end
    scenario's): only the path and the fitted attributes, on :func:`same_shape_twin`, which hold
    for any two inputs with the same public facts. ``noise``: a list that gets D's fit's
    :func:`noise_coincidences` appended; ``refused``: one that gets why, when the fit or its
    replay on D raised (the pair is then left out). ``dense``: every fit gets its input as a
    dense array (:func:`as_fit_input`).

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> found, missing, differs, other = sweep_pair(
    ...     lambda s: DPTauCC(2, 2, random_state=s), make_pair("moving_row"), 0)
    >>> len(found) > 0, max(r for r, _, _ in found) <= 1 + 1e-9, differs, other
    (True, True, '', '')
    """
    if not costs:
        pair = same_shape_twin(pair)
    try:
        history = record(build(seed), as_fit_input(pair.D, dense))
        side_a, model_a = _replayed(build, seed, pair.D, history, dense)
    except Exception as error:  # noqa: BLE001 - the method refuses this input: nothing to compare
        if refused is not None:  # counted and named in the record, never silently dropped
            refused.append(f"{pair.name}: {type(error).__name__}: {error}")
        return [], [], "", ""
    if noise is not None:
        noise.append(noise_coincidences(side_a))
    try:
        side_b, model_b = _replayed(build, seed, pair.D_prime, history, dense)
    except HistoryDiverged as why:
        return [], [], f"{pair.name}: {why}", ""
    out, missing, other = [], [], ""
    grid = next((found for call in side_a if (found := off_grid(call))), "")
    if grid:
        other = f"a released value off its mechanism's grid ({pair.name} {grid})"
    for a, b in zip(side_a, side_b, strict=True) if costs else ():
        if a.step in skip:
            continue
        if not other:
            moved = declared_move_exceeded(a.calibration, b.calibration)
            other = (f"an input moved beyond its declaration ({pair.name} #{a.index} "
                     f"{a.step}: {moved})") if moved else ""
        claim = max(a.epsilon, b.epsilon)
        cost = pair_cost(a.calibration, b.calibration, max(a.delta, b.delta)).epsilon
        if math.isnan(cost):
            if claim > 0:  # a call charged nothing (public randomness) has nothing to cost
                missing.append(a.step)
            continue
        ratio = cost / claim if claim > 0 else (math.inf if cost > 0 else 0.0)
        out.append((ratio, f"{pair.name} #{a.index} {a.step}: exact cost {cost:.4g} against "
                           f"a charge of {claim:.4g}", a.step))
    if not other:
        twin = same_shape_twin(pair)
        if twin is pair:
            from .refit_check import difference, instance_state

            found = difference(instance_state(model_a), instance_state(model_b))
            found = f"{pair.name}: {found}" if found else ""
        else:
            found = state_differs(build, twin, seed, dense)
        other = (f"a fitted attribute differs under the same releases ({found})"
                 if found else "")
    return out, missing, "", other


#: joins the kinds of call listed in a sweep record's step (steps may hold commas)
KIND_SEP = " · "


def call_kind(step: str) -> str:
    """A call's step with its numbers replaced by ``#``: the same call at another iteration,
    round or level is the same kind.

    >>> call_kind("round 2: Lloyd 3 recover sums"), call_kind("split_level_0")
    ('round #: Lloyd # recover sums', 'split_level_#')
    """
    return re.sub(r"\d+", "#", step)


def _unjudged(judged: set[str], missing: list[str]) -> tuple[str, ...]:
    """Kinds of the calls without an exact cost that no pair costed either."""
    return tuple(sorted({call_kind(s) for s in missing} - judged))


def _reused(noise: list[tuple[int, float, str]]) -> str:
    """The reused-noise violation over the fits so far, or "": identical noise in two calls
    seen more often than independent draws make plausible (Poisson tail below
    :data:`REUSE_ALPHA`)."""
    from scipy.stats import poisson

    seen = sum(n for n, _, _ in noise)
    expected = math.fsum(e for _, e, _ in noise)
    if seen == 0 or poisson.sf(seen - 1, expected) >= REUSE_ALPHA:
        return ""
    first = next(w for n, _, w in noise if n)
    return (f"noise reused: two calls of one fit drew identical noise {seen} times in "
            f"{len(noise)} fits, {expected:.3g} expected from independent draws (first: "
            f"{first})")


def sweep(build_for: Callable[[tuple], Callable[[int], object]],
          specs: Sequence[tuple[NeighbouringPair | RowPair, tuple, tuple[str, ...], bool]],
          n_pairs: int,
          seeds: Callable[[int], int], rng: np.random.Generator,
          deadline_s: float = math.inf) -> SweepResult:
    """``n_pairs`` perturbed pairs, round-robin over ``specs`` ((pair, params, steps to skip,
    whether its calls' costs are judged) of the method's setups and scenarios); pair i fitted
    with seed ``seeds(i)``. Stops at the first violation,
    or after ``deadline_s`` seconds (the pairs done are reported).

    >>> from dptaucc import DPTauCC
    >>> from dptaucc.audit.pairs import make_pair
    >>> res = sweep(lambda params: (lambda s: DPTauCC(2, 2, random_state=s)),
    ...             [(make_pair("moving_row"), (), (), True)], 3, lambda i: i,
    ...             np.random.default_rng(0))
    >>> res.pairs, res.violated
    (3, False)
    """
    t0 = time.perf_counter()
    worst, where, calls, missing, done = math.nan, "", 0, 0, 0
    judged: set[str] = set()
    missing_steps: list[str] = []
    met: set[str] = set()
    noise: list[tuple[int, float, str]] = []
    refused: list[str] = []
    fits = [0]
    dense_pairs = 0

    def counted(build):
        def make(seed):
            fits[0] += 1
            return build(seed)
        return make

    for i in range(n_pairs):
        if not specs or time.perf_counter() - t0 > deadline_s:
            break
        pair, params, skip, costs = specs[i % len(specs)]
        build, near = counted(build_for(params)), perturbed(pair, rng)
        dense = (i // len(specs)) % DENSE_EVERY == DENSE_EVERY - 1
        if dense:
            near = replace(near, name=f"{near.name} (dense)")
        found, miss, differs, declared = sweep_pair(build, near, seeds(i), skip, costs, noise,
                                                    refused, dense)
        reused = _reused(noise)
        declared = declared or reused
        if not (differs or declared):  # the far twin: path and attributes only
            _, _, differs, declared = sweep_pair(build, far_twin(near, rng), seeds(i), skip,
                                                 costs=False, refused=refused, dense=dense)
        done += 1
        dense_pairs += dense
        missing += len(miss)
        missing_steps += miss
        met.update(call_kind(step) for step in [*miss, *(f[2] for f in found)])
        calls += len(found) + len(miss)
        if differs or declared:
            return SweepResult(worst, where, done, calls, missing, differs, declared,
                               time.perf_counter() - t0,
                               (len(refused), refused[0] if refused else ""), fits[0],
                               _unjudged(judged, missing_steps), tuple(sorted(met)),
                               dense_pairs)
        for ratio, at, step in found:
            judged.add(call_kind(step))
            if math.isnan(worst) or ratio > worst:
                worst, where = ratio, at
        if exceeds(worst, 1.0):
            break
    return SweepResult(worst, where, done, calls, missing, "", "", time.perf_counter() - t0,
                       (len(refused), refused[0] if refused else ""), fits[0],
                       _unjudged(judged, missing_steps), tuple(sorted(met)), dense_pairs)


#: perturbed pairs per private method (the gate's sweep; `neighbour_sweep_pairs` in the
#: audit config overrides it)
N_PAIRS = 320
#: a method's sweep stops after this many seconds (the pairs done are reported)
DEADLINE_S = 300.0


def method_specs(method: str) -> list[tuple]:
    """The sweep's specs of a method: each call-site setup's pair with its settings and with
    the method's defaults (the calls a setup leaves out, e.g. later iterations, then run),
    costs judged; and each corrected end-to-end scenario's pair with its settings, only the
    path and the fitted attributes judged (its pair may lie outside the relation the calls
    are charged for). No step is skipped: a setup's ``skip`` names the calls that setup does
    not sample (a charge beyond its draws, outputs whose shapes differ between D and D′),
    while the sweep costs every call exactly and counts the ones it cannot compare (no exact
    cost; the record names their kinds when no pair costed them).

    >>> sorted({p.name for p, _, _, costs in method_specs("dpm") if costs})
    ['added_row', 'row_below_outer_candidates', 'row_inside_gaps']
    """
    from .methods import call_site_setup, method_audits

    setups = call_site_setup(method)
    skip: tuple[str, ...] = ()
    specs = [(s.pair, s.params, skip, True) for s in setups]
    specs += [(s.pair, (), skip, True) for s in setups if s.params]
    specs += [(s.pair, s.params, skip, False) for s in method_audits(method)
              if not s.modes or "corrected" in s.modes]
    return specs


def sweep_record(build_for: Callable[[tuple], Callable[[int], object]], method: str, *,
                 seed: int, n_pairs: int = N_PAIRS, bug: str | None = None,
                 deadline_s: float = DEADLINE_S) -> dict:
    """One audit record (scope "sweep") of :func:`sweep` over :func:`method_specs`, fit seeds
    spawned from the audit ``seed`` (the catalogue ``bug`` planted): "violation" with the
    problem as ``event``, "ok" with the worst call's exact cost over its charge, or "no
    evidence" when no pair was compared. No ε bound: ``epsilon_lower`` is NaN.

    >>> from dptaucc import DPTauCC
    >>> rec = sweep_record(lambda params: (lambda s: DPTauCC(2, 2, random_state=s)),
    ...                    "dp_taucc", seed=0, n_pairs=4)
    >>> rec["scope"], rec["verdict"]
    ('sweep', 'ok')
    """
    from .runner import fit_seed
    from .workers import bug_context

    specs = method_specs(method)
    with bug_context(bug):
        res = sweep(build_for, specs, n_pairs, lambda i: fit_seed(seed, 50_000 + i),
                    np.random.default_rng([seed, 50_000]), deadline_s)
    verdict = "violation" if res.violated else ("ok" if res.calls else "no evidence")
    step = (f"{res.pairs} random pairs ({res.dense_pairs} fitted as dense arrays) from "
            f"{len(specs)} setups and scenarios, {res.calls} "
            f"calls ({res.no_exact_cost} without an exact cost)"
            + (f"; never costed exactly: {KIND_SEP.join(res.unjudged)}" if res.unjudged else "")
            + (f"; kinds of call met: {KIND_SEP.join(res.kinds)}" if res.kinds else "")
            + (f"; {res.refused[0]} fits refused their input and were left out (first: "
               f"{res.refused[1][:160]})" if res.refused[0] else ""))
    event = res.event if res.violated else (
        f"largest exact cost / charge {res.ratio:.4g} ({res.where})" if res.calls else
        "no call compared")
    return {"scope": "sweep", "epsilon": math.nan, "delta": math.nan,
            "epsilon_spent": math.nan, "end_to_end_dp": True, "epsilon_claimed": math.nan,
            "epsilon_lower": math.nan, "verdict": verdict, "step": step, "event": event,
            "n_fits": res.fits, "epsilon_lower_max": math.nan, "events": "",
            "time_s": res.seconds, "limit": "", "epsilon_pair": res.ratio,
            "pair": "random neighbours"}


def sweep_section(table) -> list[str]:
    """REPORT lines from ``audit_sweep.parquet`` (:mod:`dptaucc.audit.sweep_runs`): per method,
    the sweeps run, those flagged, the pairs compared and the largest exact cost over its
    charge.

    >>> import pandas as pd, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "audit_sweep.parquet"
    >>> pd.DataFrame([{"method": "dpm", "seed": 0, "verdict": "ok", "n_fits": 240,
    ...                "step": "80 random pairs from 9 setups and scenarios, 200 calls (30 "
    ...                        "without an exact cost)", "epsilon_pair": 1.0,
    ...                "time_s": 4.9}]).to_parquet(path)
    >>> sweep_section(path)[-2]
    '| dpm | 1 | 0 | 80 | 1 | – | 4.9 |'
    """
    from pathlib import Path

    import pandas as pd

    path = Path(table)
    if not path.exists():
        return []
    df = pd.read_parquet(path)
    lines = ["### Neighbour sweep of the correct code", "",
             "`python -m dptaucc.audit.sweep_runs` (docs/audit.md, \"Random neighbours\"): "
             "per private method and audit seed, random neighbouring pairs made from its "
             "call-site setups, every call's exact cost against its charge and its input "
             "against its declaration, the path and the fitted attributes under equal "
             "releases (and against a random matrix of the same shape), and noise drawn "
             "identical in two calls. Exact, nothing sampled: correct code must never be "
             "flagged. *Never costed*: kinds of call the sweeps met but could not cost "
             "exactly (no evidence from the sweep on them).", "",
             "| method | sweeps | flagged | pairs each | largest exact cost / charge | "
             "never costed | seconds each |", "|---|---|---|---|---|---|---|"]
    for method, g in df.groupby("method", sort=False):
        pairs = int(g["step"].str.extract(r"^(\d+) random pairs")[0].astype(int).max())
        never = sorted({k.strip() for found in g["step"].str.extract(
            r"never costed exactly: ([^;]*)")[0].dropna() for k in found.split(KIND_SEP)})
        lines.append(f"| {method} | {len(g)} | {int((g['verdict'] == 'violation').sum())} | "
                     f"{pairs} | {g['epsilon_pair'].max():.4g} | {', '.join(never) or '–'} | "
                     f"{g['time_s'].mean():.1f} |")
    return [*lines, ""]

