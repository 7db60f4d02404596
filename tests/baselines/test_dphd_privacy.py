"""Corrected-mode DPHD's privacy at every mechanism call site.

(a) Call sites: a fit with a recording sampler and a trace of Octave's requests; for each
    mechanism call the expected scale is written out here from the method's math (budget
    split, count and sum sensitivities, the normalised utilities and their bounds), never
    read back from the code, and the noise actually drawn is tested against it.
(b) Neighbours: each mechanism run on its own (the real ``*.m`` function) at its own ε = 1 on
    a neighbouring pair with a high-mass event whose exact log ratio is close to 1, and the
    same with every noise scale halved, which the test must flag.
(c) The audit's findings: no raw loss or labels released, centres on a data-independent
    lattice, every choice drawn by the Python sampler, the secure path.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.dphd import DPHD, octave
from dptaucc.baselines.dphd.estimator import _public_preprocess
from dptaucc.baselines.dphd.mechanisms import MechanismServer
from dptaucc.baselines.dphd.testing import have_octave, traced_fits
from scipy import stats

from dptaucc.privacy import PrivacyLedger, Sampler, SeededSampler
from dptaucc.privacy.checks import (
    RecordingSampler,
    discrete_laplace_pvalue,
    neighbour_log_ratio_bounds,
)

pytestmark = [pytest.mark.octave,
              pytest.mark.skipif(not have_octave(), reason="GNU Octave (octave-cli) not installed")]

HELPERS = Path(__file__).resolve().parent / "octave"


@pytest.fixture(scope="module")
def counts():
    """60 rows in 3 groups over 45 columns, one count above the cap M = 10 (clipped)."""
    rng = np.random.default_rng(23)
    means = rng.choice([0.2, 3.0], size=(3, 45), p=[0.7, 0.3])
    X = rng.poisson(means[np.arange(60) % 3]).astype(float)
    X[0, 0] = 14
    return sp.csr_matrix(X)


# ------------------------------------------------------------------------ the method's math
def budget(eps: float, n_rounds: int, k: int) -> dict:
    """The corrected budget split: 5 % to the round selection (T > 1), the rest evenly over
    rounds, inside a round 2/3 : 1/12 : 1/6 : 3 x 1/6 normalised by 17/12; a round's
    candidates are 3 partitions, its local search min(k, 20) swaps + 1 final pick, its
    recovers split 1/10 to the sizes and 9/10 to the sums."""
    sel = 0.05 * eps if n_rounds > 1 else 0.0
    rnd = (eps - sel) / n_rounds
    rec = rnd * (1 / 6) / (17 / 12)
    return {"selection": sel, "partition": rnd * (2 / 3) / (17 / 12) / 3,
            "ls_step": rnd * (1 / 12) / (17 / 12) / (min(k, 20) + 1),
            "sizes": 0.1 * rec, "sums": 0.9 * rec}


def grid(b1: float, eps_sums: float, n: int) -> float:
    """The public power-of-two unit of the released sums: 2^24 below their noise scale 2·B1/ε,
    but never so fine that a sum of n rows of L1 norm B1 leaves the exact integers of a
    double (2^52 units)."""
    return 2.0 ** max(math.floor(math.log2(2 * b1 / eps_sums)) - 24,
                      math.ceil(math.log2(n * b1)) - 52)


def swap_losses(W: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """NL[a, b]: k-means loss (W: candidates x points) after slot a takes candidate b."""
    out = np.empty((len(ids), W.shape[0]))
    for a in range(len(ids)):
        others = np.delete(ids, a)
        base = W[others].min(axis=0) if len(others) else np.full(W.shape[1], np.inf)
        out[a] = np.minimum(W, base[None, :]).sum(axis=1)
    return out


def local_search_utilities(Xw: np.ndarray, rnd: dict, rho: float, choices: list[int],
                           k: int) -> list[np.ndarray]:
    """The utilities of a round's local search, recomputed: −loss/Λ² with
    Λ = ‖G‖₂·ρ + max‖candidate‖ (‖y‖ ≤ ‖G‖₂ρ for a row of L2 norm ≤ ρ), for each swap given
    the choices drawn before it, then for the final pick over the recorded centre sets."""
    G, cand = rnd["G"], rnd["candidates"]
    Y = Xw @ G.T
    W = ((cand[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2)
    lam2 = (np.linalg.norm(G, 2) * rho + np.sqrt((cand**2).sum(axis=1)).max()) ** 2
    ids = rnd["ids0"].astype(int).ravel() - 1
    out, losses = [], []
    for choice in choices[:-1]:
        out.append(-swap_losses(W, ids).ravel(order="F") / lam2)
        a, b = choice % k, choice // k  # Octave's column-major (slot, candidate) index
        ids[a] = b
        losses.append(W[ids].min(axis=0).sum())
    out.append(-np.array(losses) / lam2)
    return out


# ------------------------------------------------------------------------------- (a) call sites
def _traced_fit(X, seed, **params):
    rec = RecordingSampler(SeededSampler(np.random.default_rng(seed)))
    with traced_fits() as traces:
        model = DPHD(random_state=rec, **params).fit(X)
    return model, rec, traces[0]


def _pairs(trace, rec):
    """(request, draw) of every mechanism call that draws (charges draw nothing)."""
    drawing = [r for r in trace.requests if r["op"] != "charge"]
    assert len(drawing) == len(rec.draws)
    return list(zip(drawing, rec.draws, strict=True))


@pytest.mark.parametrize("eps,n_rounds,k", [(3.0, 4, 3), (40.0, 2, 2), (1e4, 2, 3)])
def test_every_mechanism_call_draws_at_the_scale_the_math_gives(counts, eps, n_rounds, k):
    n, d = counts.shape
    M, B1 = 10.0, 10.0 * d
    rho = min(M * math.sqrt(d), B1)
    Xw = _public_preprocess(counts, M, B1).toarray()
    b = budget(eps, n_rounds, k)
    levels = max(1, math.ceil(math.log(n)) - 1)
    p = max(1, math.floor(0.5 * math.log(n)))
    g = grid(B1, b["sums"], n)
    model, rec, trace = _traced_fit(counts, 1, n_clusters=k, epsilon=eps, n_rounds=n_rounds)

    for req, draw in _pairs(trace, rec):
        step = req["step"]
        if req["op"] == "discrete-laplace":
            assert draw.kind == "discrete_laplace"
            np.testing.assert_array_equal(req["output"], req["values"] + draw.output)
        if "partition" in step:
            # bucket counts of a level: sensitivity 2, ε_p/L per level
            assert draw.scale == pytest.approx(2 * levels / b["partition"], rel=1e-12)
            if step.endswith("level 1"):  # the root cell: every row in one of 3^p buckets
                assert req["values"].size == 3**p and req["values"].sum() == n
        elif "recover sums" in step:
            assert draw.scale == pytest.approx(2 * B1 / g / b["sums"], rel=1e-12)
            np.testing.assert_array_equal(req["values"].sum(axis=0), Xw.sum(axis=0) / g)
        elif "recover sizes" in step:
            assert draw.scale == pytest.approx(2 / b["sizes"], rel=1e-12)
            assert req["values"].sum() == n
        elif "local search" in step:
            assert draw.kind == "choose"
            assert draw.scale == pytest.approx(math.sqrt(2) / b["ls_step"], rel=1e-12)
        else:
            assert step == "round selection" and draw.kind == "choose"
            assert draw.scale == pytest.approx(2 / b["selection"], rel=1e-12)
            assert model.selected_round_ == int(draw.output[0])
            # utilities: −loss_r in units of its per-row bound (ρ + min_j ‖z_j‖)²
            losses = []
            for rnd in trace.rounds:
                Z = rnd["centers"]
                dist = ((Xw[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2).min(axis=1)
                losses.append(dist.sum() / (rho + np.sqrt((Z**2).sum(axis=1)).min()) ** 2)
            np.testing.assert_allclose(draw.inputs.ravel(), -np.array(losses), rtol=1e-9)

    # a partition keeps exactly the buckets whose NOISY count passes γ = 2·ln(n)·b: the next
    # level tests the 3^p buckets of each of them
    gamma = 2 * math.log(n) * 2 * levels / b["partition"]
    for prev, nxt in zip(trace.requests, trace.requests[1:], strict=False):
        if "partition" in prev["step"] and prev["op"] == nxt["op"] == "discrete-laplace" \
                and nxt["step"].rsplit(" ", 1)[0] == prev["step"].rsplit(" ", 1)[0]:
            assert nxt["values"].size == 3**p * int((prev["output"] > gamma).sum())

    # the local search utilities, recomputed from the round's public intermediates
    for r, rnd in enumerate(trace.rounds, start=1):
        picks = [d for q, d in _pairs(trace, rec) if q["step"].startswith(f"round {r}: local")]
        expected = local_search_utilities(Xw, rnd, rho, [int(d.output[0]) for d in picks], k)
        assert len(picks) == min(k, 20) + 1
        for draw, utilities in zip(picks, expected, strict=True):
            np.testing.assert_allclose(draw.inputs.ravel(), utilities, rtol=1e-9, atol=1e-12)

    # the ledger holds what was drawn; each partition is charged ε_p in all
    ledger = model.privacy_ledger_
    drawn = [e for e in ledger.entries if not math.isnan(e.noise_scale)]
    assert [e.noise_scale for e in drawn] == pytest.approx([d.scale for d in rec.draws])
    for r in range(1, n_rounds + 1):
        for c in (1, 2, 3):
            part = [e.epsilon for e in ledger.entries
                    if e.step.startswith(f"round {r}: partition {c} ")]
            assert math.fsum(part) == pytest.approx(b["partition"], rel=1e-12)
    assert model.epsilon_spent_ == pytest.approx(eps, rel=1e-12)


def test_a_partition_keeps_the_buckets_whose_noisy_count_passes():
    """30 points in 1-D around the root cell 0 (13 in the + bucket, 14 in the −), ε = 1 a
    level (ε_p = 3 over L = 3 levels): a child cell (±2) is output exactly when the noisy
    count Python returned for its bucket passes γ = 2·ln(30)·2; over 40 calls both outcomes
    occur, so the decisions follow the noise, not the exact counts."""
    Y = np.array([1.0] * 13 + [-1.0] * 14 + [0.0] * 3)[:, None]
    gamma = 2 * math.log(30) * 2.0
    outcomes = set()
    for seed in range(40):
        trace: list[dict] = []
        server = MechanismServer(SeededSampler(np.random.default_rng(seed)), PrivacyLedger(),
                                 trace)
        (C,) = octave.call("dphd_partition", Y, 3.0, 8.0, False, "t ", handler=server)
        first = trace[0]
        assert first["step"] == "t level 1"
        np.testing.assert_array_equal(first["values"].ravel(), [3, 13, 14])  # 0, +, − buckets
        kept = tuple(bool(v > gamma) for v in first["output"].ravel()[1:])
        assert kept == (bool(np.any(C == 2.0)), bool(np.any(C == -2.0)))
        outcomes.add(kept)
    assert len(outcomes) >= 3


def test_the_noise_drawn_has_the_charged_law(counts):
    """Pooled over fits: the bucket-count and size noise is discrete Laplace at the scale from
    the math (chi-square); the sums' noise, at a scale of 2^24 grid units, is Laplace (KS)."""
    n, d = counts.shape
    eps, b = 2.0, budget(2.0, 4, 3)
    levels = max(1, math.ceil(math.log(n)) - 1)
    noise: dict[str, list] = {"partition": [], "recover sums": [], "recover sizes": []}
    for seed in range(6):
        _, rec, trace = _traced_fit(counts, 100 + seed, n_clusters=3, epsilon=eps)
        for req, draw in _pairs(trace, rec):
            for site, values in noise.items():
                if site in req["step"]:
                    values.append(draw.output.ravel() / (draw.scale if "sums" in site else 1))
    assert discrete_laplace_pvalue(np.concatenate(noise["partition"]),
                                   2 * levels / b["partition"]) > 1e-4
    assert discrete_laplace_pvalue(np.concatenate(noise["recover sizes"]),
                                   2 / b["sizes"]) > 1e-4
    assert stats.kstest(np.concatenate(noise["recover sums"]), stats.laplace.cdf).pvalue > 1e-4


def test_released_centres_are_post_processing_of_integer_releases(counts):
    """Audit finding: float noise on the centres. The released centres are exactly the clipped
    ratio of the selected round's last integer releases (sums in grid units, sizes), so
    their possible values, fl(integer · unit / integer), do not depend on the data."""
    n, d = counts.shape
    model, rec, trace = _traced_fit(counts, 5, n_clusters=3, epsilon=6.0)
    last = f"round {model.selected_round_ + 1}: Lloyd 3 recover"
    (sums,) = [r["output"] for r in trace.requests if r["step"] == f"{last} sums"]
    (sizes,) = [r["output"] for r in trace.requests if r["step"] == f"{last} sizes"]
    assert sums.dtype == sizes.dtype == np.int64
    g = grid(10.0 * d, budget(6.0, 4, 3)["sums"], n)
    expected = np.clip(sums * g / np.maximum(sizes, 1), 0.0, 10.0)
    np.testing.assert_array_equal(model.cluster_centers_, expected)


def test_every_choice_is_drawn_by_the_python_sampler(counts):
    """Audit finding: Octave's Gumbel-max on 53-bit uniforms. Every exponential mechanism of
    a corrected fit is now one draw of the fit's sampler (106-bit, or OpenDP's)."""
    model, rec, _ = _traced_fit(counts, 2, n_clusters=3, epsilon=1.0)
    expo = [e for e in model.privacy_ledger_.entries if e.mechanism == "exponential"]
    assert len(expo) == len(rec.of_kind("choose")) == 4 * 4 + 1
    assert not (Path(octave.M_FILES_DIR) / "dphd_gumbel_argmax.m").exists()


def test_secure_path_draws_every_mechanism_from_opendp(counts):
    pytest.importorskip("opendp")
    from dptaucc.privacy import SecureSampler

    rec = RecordingSampler(SecureSampler())
    model = DPHD(n_clusters=3, epsilon=2.0, secure=True, random_state=rec).fit(counts)
    seeded = DPHD(n_clusters=3, epsilon=2.0, random_state=0).fit(counts)
    assert model.epsilon_spent_ == pytest.approx(2.0) == seeded.epsilon_spent_

    def kinds(m):
        return {(e.step.split(" level")[0], e.mechanism) for e in m.privacy_ledger_.entries}

    assert kinds(model) == kinds(seeded)
    assert all(d.output.dtype.kind == "i" for d in rec.draws)
    assert len(rec.draws) == sum(not math.isnan(e.noise_scale)
                                 for e in model.privacy_ledger_.entries)


# ------------------------------------------------------------------------------- (b) neighbours
class _HalfScale(Sampler):
    """A broken sampler: every noise scale halved (what a halved sensitivity does)."""

    def __init__(self, seed):
        self.inner = SeededSampler(np.random.default_rng(seed))
        self.rng = self.inner.rng
        self.exact = False

    def discrete_laplace(self, size, scale):
        return self.inner.discrete_laplace(size, scale / 2)

    def choose(self, scores, scale):
        return self.inner.choose(scores, scale / 2)


@pytest.fixture(scope="module")
def repeat():
    """Run an Octave function many times in one request, its mechanisms served by a sampler."""
    octave.call("addpath", str(HELPERS), nargout=0)

    def run(runs, which, sampler, function, *args):
        server = MechanismServer(sampler, PrivacyLedger())
        return octave.call("dphd_repeat", float(runs), float(which), function, *args,
                           handler=server)[0]
    return run


def _check(hits_d, hits_n, runs, exact, broken, claim=1.0):
    """Clopper-Pearson bounds on log P_D(E)/P_D'(E): within the claim and around the exact
    value for the real mechanism; above the claim for the broken one (the test's power)."""
    lower, upper = neighbour_log_ratio_bounds(hits_d, runs, hits_n, runs)
    if broken:
        assert lower > claim, (lower, upper)
    else:
        assert lower <= claim and lower <= exact <= upper, (lower, upper, exact)


def _dlap_tail(t: int, scale: float) -> float:
    """P(Z >= t) for the discrete Laplace of ``scale``, t an integer."""
    q = math.exp(-1 / scale)
    return q**t / (1 + q) if t >= 0 else 1 - q ** (1 - t) / (1 + q)


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_partition_level_neighbours_at_its_own_epsilon(repeat, broken):
    """One partition of 30 projected points (p = 1, L = 3 levels, ε_p = 3: ε = 1 a level, scale
    b = 2, threshold γ = 2·ln(30)·b). D has 13 points in the + bucket and 14 in the −; D'
    moves one point from − to + (a replaced row). E = {the + child is output, the − child
    is not}: P_D'(E)/P_D(E) = e^1 exactly (e^2 with half the noise)."""
    runs = 800 if broken else 1000
    gamma = 2 * math.log(30) * 2.0

    def hits(plus, seed0):
        Y = np.array([1.0] * plus + [-1.0] * (27 - plus) + [0.0] * 3)[:, None]
        sampler = _HalfScale(seed0) if broken else SeededSampler(np.random.default_rng(seed0))
        outs = repeat(runs, 1, sampler, "dphd_partition", Y, 3.0, 8.0, False, "t ")
        return sum(bool(np.any(C == 2.0)) and not np.any(C == -2.0) for C in outs)

    def exact(plus):
        keep = _dlap_tail(math.floor(gamma - plus) + 1, 2.0)
        drop = 1 - _dlap_tail(math.floor(gamma - (27 - plus)) + 1, 2.0)
        return keep * drop

    _check(hits(14, 1), hits(13, 50_000), runs, math.log(exact(14) / exact(13)), broken)


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_recover_neighbours_at_its_own_epsilon(repeat, broken):
    """One recover of 10 rows (d = 1, value 1 = B1) into 2 clusters, ε_rec = 2 split evenly
    (test setting) so that sums and sizes each run at ε = 1; the sums in units of 2^-23
    (noise scale 2^24 units). D: 5 + 5 rows; D': one row moved to cluster 2. Sizes:
    E = {ñ1 >= 5, ñ2 <= 5}; sums: E = {s̃1 >= 5 rows, s̃2 <= 5 rows}; both log ratios
    exactly 1 (2 with half the noise)."""
    runs = 1000
    unit = 2.0**-23
    params = {"M": 1.0, "B1": 1.0, "rho": 1.0, "count_share": 0.5, "grid": unit, "unit": unit}
    Xt = np.ones((1, 10))
    params["Xu"] = Xt

    def hits(first, seed0):
        lab = np.array([1.0] * first + [2.0] * (10 - first))[:, None]
        sampler = _HalfScale(seed0) if broken else SeededSampler(np.random.default_rng(seed0))
        outs = repeat(runs, 3, sampler, "dphd_recover", Xt, lab, 2.0, 2.0, params, False,
                      {}, "t ")
        five = 5 / unit
        sizes = sum(bool(o["sizes"][0, 0] >= 5 and o["sizes"][1, 0] <= 5) for o in outs)
        sums = sum(bool(o["sums"][0, 0] >= five and o["sums"][1, 0] <= five) for o in outs)
        return sizes, sums

    (sizes_d, sums_d), (sizes_n, sums_n) = hits(5, 7), hits(4, 60_000)
    _check(sizes_d, sizes_n, runs, 1.0, broken)
    _check(sums_d, sums_n, runs, 1.0, broken)


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_local_search_swap_neighbours_at_its_own_epsilon(repeat, broken):
    """Local search with k = 1 (one swap at ε_ls/2 = 1, then a pick among one set) at its
    charged range √2: non-negative points of norm ρ = 1, candidates c₊ = (1, −1)/√2 and
    4 × c₋ = −c₊ (R = 1, Λ² = (ρ + R)² = 4). D: points (1, 0) and (0, 1), every candidate
    equally good (P(c₊) = 1/5); D': (1, 0) replaced by (0, 1), which moves c₊'s utility
    −loss/Λ² by −√2/2 and c₋'s by +√2/2, √2 apart (the most a non-negative row can move
    them): P(c₊) = 1/(1 + 4e). Log ratio log((1 + 4e)/5) = 0.86 (1.81 with half the
    noise)."""
    runs = 2000
    h = 1 / math.sqrt(2)
    cand = np.array([[h, -h], [-h, h], [-h, h], [-h, h], [-h, h]])

    def hits(first, seed0):
        sampler = _HalfScale(seed0) if broken else SeededSampler(np.random.default_rng(seed0))
        Y = np.array([first, [0.0, 1.0]])
        outs = repeat(runs, 1, sampler, "dphd_local_search", Y, cand, 1.0, 2.0, 4.0, False,
                      {}, "t ")
        return sum(bool(U[0, 0] > 0) for U in outs)

    _check(hits([1.0, 0.0], 3), hits([0.0, 1.0], 70_000), runs,
           math.log((1 + 4 * math.e) / 5), broken)


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_round_selection_neighbours_at_its_own_epsilon(repeat, broken):
    """Five rounds, ε_sel = 1; normalised losses (each row adds at most 1 to each) D = all 1,
    D' = (2, 0, 0, 0, 0): the row that cost every round but the first now costs only the
    first. E = {round 1}: log ratio log((1 + 4e)/5) (1.81 with half the noise)."""
    runs = 2000

    def hits(losses, seed0):
        sampler = _HalfScale(seed0) if broken else SeededSampler(np.random.default_rng(seed0))
        outs = repeat(runs, 1, sampler, "dphd_select_round", np.array(losses)[:, None], 1.0)
        return sum(int(s[0, 0]) == 1 for s in outs)

    _check(hits([1.0] * 5, 4), hits([2.0, 0, 0, 0, 0], 80_000), runs,
           math.log((1 + 4 * math.e) / 5), broken)
