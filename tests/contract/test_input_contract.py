"""One input contract: every estimator of the suite gives the same answer to the same input.

The catalogue lists each input with its one answer: accepted, or refused before any work with
an exception of one type whose message names the problem (and the offending value and its
position, where there is one). Where methods differ, the difference is declared in their
method facts (:class:`dptaucc.methods.MethodInfo`: ``domain``, counts or non-negative reals)
and the answer checked here is the declared one. Inputs and parameters are checked in the same
place for every estimator (:mod:`dptaucc.base`), so adding an estimator to ``ESTIMATORS`` (and
its facts to ``FACTS``) is enough to hold it to the contract.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
from dptaucc.baselines.dp_kmeans import DPKMeans
from dptaucc.baselines.dphd import DPHD
from dptaucc.baselines.dphd.testing import have_octave
from dptaucc.baselines.dpm import DPM
from dptaucc.baselines.fccm import FCCM, CollaborativeFCCM
from dptaucc.baselines.nmf_dp import DPNMF

from dptaucc import DPTauCC, DPTauCCRow, FastTauCC
from dptaucc.base import (
    AllZeroCountsWarning,
    FewerClustersWarning,
    PrivateEstimator,
    SuiteEstimator,
)
from dptaucc.methods import COUNTS, DOMAINS, NON_NEGATIVE_REALS, method, methods

#: every estimator of the suite, built with two clusters where it takes a cluster count
ESTIMATORS = {
    "DPTauCC": lambda **kw: DPTauCC(2, 2, **kw),
    "DPTauCCRow": lambda **kw: DPTauCCRow(2, 2, **kw),
    "FastTauCC": lambda **kw: FastTauCC(2, 2, **kw),
    "DPKMeans": lambda **kw: DPKMeans(2, **kw),
    "DPNMF": lambda **kw: DPNMF(2, **kw),
    "DPM": lambda **kw: DPM(max_depth=2, n_components=None, **kw),
    "ColoredNoiseKMeans": lambda **kw: ColoredNoiseKMeans(2, **kw),
    "DPHD": lambda **kw: DPHD(2, **kw),
    "FCCM": lambda **kw: FCCM(2, **kw),
    "CollaborativeFCCM": lambda **kw: CollaborativeFCCM(2, **kw),
}
PRIVATE = [name for name, make in ESTIMATORS.items() if isinstance(make(), PrivateEstimator)]
#: each estimator's method facts (the whole-data FCCM is the collaborative method's reference
#: and shares its facts)
FACTS = {"DPTauCC": "dp_taucc", "FastTauCC": "fast_taucc", "DPKMeans": "dp_kmeans",
         "DPNMF": "dpnmf", "DPM": "dpm", "ColoredNoiseKMeans": "colored_noise", "DPHD": "dphd",
         "FCCM": "fccm", "CollaborativeFCCM": "fccm", "DPTauCCRow": "dp_taucc_row"}
#: DPHD runs in GNU Octave: its accepted inputs are checked up to the start of the work,
#: and the tests that need a fit run it with the ``octave`` marker (not in ``make test-fast``)
NEEDS_OCTAVE = {"DPHD"}


def _fitted(names):
    return [pytest.param(n, marks=[pytest.mark.octave, pytest.mark.skipif(
        not have_octave(), reason="GNU Octave (octave-cli) not installed")])
        if n in NEEDS_OCTAVE else n for n in names]


def _fit(name, X, **params):
    """A real fit (every estimator, DPHD in Octave), warnings about bounds silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, message="Bounds have not")
        return ESTIMATORS[name](random_state=0, **params).fit(X)

GOOD = np.array([[3, 0, 1, 0], [2, 1, 0, 0], [0, 0, 4, 2], [0, 1, 3, 5], [1, 0, 0, 2],
                 [4, 2, 0, 0]])

#: X -> (exception type, message pattern); None: accepted
BAD_X = {
    "NaN": (np.where(GOOD == 4, np.nan, GOOD), ValueError, "Input X contains NaN"),
    "infinity": (np.where(GOOD == 4, np.inf, GOOD), ValueError, "Input X contains infinity"),
    "negative count": (GOOD - (GOOD == 4) * 5, ValueError, "Negative values in data passed to X"),
    "1-D": (GOOD[0], ValueError, "Expected 2D array, got 1D array"),
    "3-D": (GOOD[None], ValueError, "Found array with dim 3"),
    "strings": (GOOD.astype(str).astype(object) + "x", ValueError, "could not convert"),
    "complex": (GOOD + 1j, ValueError, "Complex data not supported"),
    "no rows": (np.zeros((0, 4)), ValueError, r"Found array with 0 sample\(s\)"),
    "no columns": (np.zeros((6, 0)), ValueError, r"Found array with 0 feature\(s\)"),
    "None": (None, TypeError, "X must be a 2-D array or sparse matrix, got None"),
}
#: inputs every estimator accepts, each as the same counts as GOOD (or all zeros)
ACCEPTED_X = {
    "ndarray": GOOD,
    "list of lists": GOOD.tolist(),
    "CSR": sp.csr_matrix(GOOD),
    "COO": sp.coo_matrix(GOOD),
    "csr_array": sp.csr_array(GOOD),
    "numpy matrix": np.asmatrix(GOOD),
    "pandas DataFrame": pd.DataFrame(GOOD, columns=list("abcd")),
    "whole floats": GOOD.astype(float),
    "booleans (0/1 counts)": GOOD > 1,
    "an empty row": np.vstack([GOOD, np.zeros((1, 4), dtype=int)]),
}

#: what the message of a bad ε says every mode accepts (and the tests below check it is so)
EPSILON_RANGE = (r"'epsilon' parameter of \w+ must be a float > 0 \(finite in corrected mode; "
                 r"inf only with mode='paper'\)\. Got")
#: parameter -> (value, estimators it applies to, exception type, message pattern)
BAD_PARAMS = {
    "epsilon=inf (corrected)": ({"epsilon": math.inf}, ValueError,
                                "epsilon=inf releases the data without noise: corrected mode "
                                r"promises ε-DP, so give a finite epsilon \(mode='paper'"),
    "epsilon=nan": ({"epsilon": math.nan}, ValueError, EPSILON_RANGE + " nan"),
    "epsilon=0": ({"epsilon": 0.0}, ValueError, EPSILON_RANGE + " 0.0"),
    "epsilon<0": ({"epsilon": -1.0}, ValueError, EPSILON_RANGE + " -1.0"),
    "epsilon='1'": ({"epsilon": "1"}, TypeError, "'epsilon' parameter"),
    "epsilon=True": ({"epsilon": True}, TypeError, "'epsilon' parameter .* not a bool"),
    "mode='fast'": ({"mode": "fast"}, ValueError, "'mode' parameter"),
    "secure=True in paper mode": ({"mode": "paper", "secure": True}, ValueError,
                                  "secure=True is for corrected mode"),
    "secure='yes'": ({"secure": "yes"}, TypeError, "'secure' parameter"),
}
#: (estimator, case) whose answer differs from BAD_PARAMS': a method without paper mode refuses
#: mode="paper" itself
OWN_ANSWER = {("DPTauCCRow", "secure=True in paper mode"): (ValueError, "'mode' parameter")}
ANY_PARAMS = {
    "random_state='x'": ({"random_state": "x"}, TypeError, "'random_state' parameter"),
    "random_state=-1": ({"random_state": -1}, ValueError, "'random_state' parameter"),
}


def _no_work(monkeypatch):
    """Make every library entry past the input checks fail loudly: a refusal must come first."""
    import dptaucc.validation as validation

    def boom(*args, **kwargs):
        raise AssertionError("work started before the input was refused")

    monkeypatch.setattr(validation, "make_generator", boom)
    monkeypatch.setattr(PrivateEstimator, "_sampler", boom)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("case", BAD_X)
def test_bad_matrix_gets_one_answer(name, case, monkeypatch):
    X, error, pattern = BAD_X[case]
    _no_work(monkeypatch)
    with pytest.raises(error, match=pattern):
        ESTIMATORS[name](random_state=0).fit(X)


def test_every_estimator_reads_the_domain_its_method_declares():
    """The facts of every built-in method name a domain, every estimator of the suite has
    facts, and the estimator checks X against that domain (``_domain``)."""
    assert {info.domain for info in methods()} <= set(DOMAINS)
    assert set(FACTS) == set(ESTIMATORS)
    for name, make in ESTIMATORS.items():
        assert type(make())._domain == method(FACTS[name]).domain, name
    with pytest.raises(ValueError, match="domain must be one of"):
        type(method("dp_taucc"))(**{**vars(method("dp_taucc")), "domain": "integers"})


@pytest.mark.parametrize("name", _fitted(ESTIMATORS))
def test_fractional_values_get_the_answer_the_method_declares(name, monkeypatch):
    """Counts: refused before any work, naming the first fractional entry and its position;
    non-negative reals: fitted."""
    X = GOOD.astype(float)
    X[2, 3] = 0.5  # the first fractional entry in row-major order
    X[4, 0] = 1.25
    domain = method(FACTS[name]).domain
    if domain == COUNTS:
        _no_work(monkeypatch)
        with pytest.raises(ValueError, match=r"X contains fractional entries: X\[2, 3\] = 0\.5; "
                                             "counts must be whole numbers"):
            ESTIMATORS[name](random_state=0).fit(X)
    else:
        assert domain == NON_NEGATIVE_REALS
        assert _fit(name, X).n_features_in_ == 4
        assert _fit(name, GOOD / 3).n_features_in_ == 4


@pytest.mark.parametrize("name", PRIVATE)
@pytest.mark.parametrize("case", BAD_PARAMS)
def test_bad_privacy_parameter_gets_one_answer(name, case, monkeypatch):
    params, error, pattern = BAD_PARAMS[case]
    error, pattern = OWN_ANSWER.get((name, case), (error, pattern))
    _no_work(monkeypatch)
    with pytest.raises(error, match=pattern):
        ESTIMATORS[name](**params).fit(GOOD)


@pytest.mark.parametrize("name", _fitted(PRIVATE))
def test_epsilon_inf_is_what_the_message_says(name):
    """The ε message says inf is accepted in paper mode only: a paper-mode fit at ε = inf runs
    (its ledger shows ∞), a corrected-mode one is refused (above)."""
    if "paper" not in method(FACTS[name]).modes:  # corrected only: ε = inf is refused
        with pytest.raises(ValueError, match="epsilon"):
            _fit(name, GOOD, epsilon=math.inf)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _fit(name, GOOD, epsilon=math.inf, mode="paper").epsilon_spent_ == math.inf


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("case", ANY_PARAMS)
def test_bad_random_state_gets_one_answer(name, case, monkeypatch):
    params, error, pattern = ANY_PARAMS[case]
    _no_work(monkeypatch)
    with pytest.raises(error, match=pattern):
        ESTIMATORS[name](**params).fit(GOOD)


@pytest.mark.parametrize("name", [n for n in ESTIMATORS if n != "DPM"])
def test_more_clusters_than_rows_gets_one_answer(name, monkeypatch):
    _no_work(monkeypatch)
    with pytest.raises(ValueError, match=r"is larger than the number of rows \(n_samples=6\)"):
        ESTIMATORS[name](random_state=0).set_params(
            **{"n_clusters" if "n_clusters" in ESTIMATORS[name]().get_params()
               else "n_row_clusters": 7}).fit(GOOD)


def _fit_or_check(name, X, **params):
    """Fit; DPHD (GNU Octave) is checked up to the start of its work only."""
    est = ESTIMATORS[name](random_state=0, **params)
    if name in NEEDS_OCTAVE:
        return est._check_fit(X)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, message="Bounds have not")
        return est.fit(X)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("case", ACCEPTED_X)
def test_accepted_inputs(name, case):
    with warnings.catch_warnings():
        warnings.simplefilter("error", AllZeroCountsWarning)
        _fit_or_check(name, ACCEPTED_X[case])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_all_zero_matrix_is_fitted_with_a_warning_saying_what_the_fit_gives(name):
    """Never refused: for a private fit a refusal would itself tell the all-zero matrix from
    its neighbour with one count."""
    with pytest.warns(AllZeroCountsWarning, match="X holds no non-zero count: the fit gives"):
        _fit_or_check(name, np.zeros((6, 4), dtype=int))


@pytest.mark.parametrize("name", _fitted(ESTIMATORS))
def test_the_all_zero_warning_says_what_really_happens(name):
    """A private fit still charges its whole budget; a non-private co-clusterer that promises
    one row and one column cluster and an all-zero table gives exactly those."""
    with pytest.warns(AllZeroCountsWarning) as caught:
        est = _fit(name, np.zeros((6, 4), dtype=int))
    said = str(next(w.message for w in caught if w.category is AllZeroCountsWarning))
    if name in PRIVATE:
        assert "every release is still charged" in said
        assert est.epsilon_spent_ == pytest.approx(est.epsilon, rel=1e-12)
    else:
        assert "one row cluster, one column cluster" in said and "all-zero table" in said
        assert (est.n_row_clusters_, est.n_col_clusters_) == (1, 1)
        assert not np.asarray(est.contingency_).any()
        assert not est.row_labels_.any() and not est.column_labels_.any()


#: two blocks of rows and columns: a co-clusterer asked for three clusters merges to two
TWO_BLOCKS = np.kron(np.eye(2, dtype=int), np.full((5, 4), 6))


@pytest.mark.parametrize("name", _fitted(ESTIMATORS))
@pytest.mark.parametrize("mode", ["corrected", "paper"])
def test_fewer_clusters_than_asked_always_warns(name, mode):
    """Every estimator that reports how many clusters it found warns exactly when that is fewer
    than it was asked for (and never otherwise); the warning names the count and the attribute.
    Asked for 3 clusters on two blocks, the non-private co-clusterers always merge."""
    if name not in PRIVATE and mode == "paper":
        pytest.skip("a non-private method has no mode")
    if name in FACTS and mode not in method(FACTS[name]).modes:
        pytest.skip(f"{name} has no {mode} mode")
    params = {"mode": mode, "epsilon": 50.0} if name in PRIVATE else {}
    est = ESTIMATORS[name](random_state=0, **params)
    key = "n_row_clusters" if "n_row_clusters" in est.get_params() else "n_clusters"
    if key not in est.get_params():
        pytest.skip(f"{name} takes no cluster count")
    est.set_params(**{key: 3})
    if est.get_params().get("n_col_clusters") is not None:
        est.set_params(n_col_clusters=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(TWO_BLOCKS)
    said = [str(w.message) for w in caught if w.category is FewerClustersWarning]
    expected = [f"{type(est).__name__} found {found} {side} clusters, fewer than the 3 asked: "
                f"clusters that emptied were removed ({attr} = {found})"
                for attr, side in (("n_row_clusters_", "row"), ("n_col_clusters_", "column"))
                if (found := getattr(est, attr, 3)) < 3]
    assert said == expected
    if name not in PRIVATE:
        assert said  # Fast-τCC and FCCM merge the two blocks' three clusters


def test_every_estimator_declares_its_parameter_constraints():
    for name, make in ESTIMATORS.items():
        est = make()
        assert isinstance(est, SuiteEstimator), name
        assert set(type(est)._parameter_constraints) == set(est.get_params()), name


@pytest.mark.parametrize("case", BAD_X)
def test_the_loader_gives_the_same_answer(case):
    """``as_dataset`` (and the file loaders behind it) check counts as the estimators do,
    the message prefixed with the data's name."""
    from dptaucc.datasets import as_dataset

    X, error, pattern = BAD_X[case]
    with pytest.raises(error, match=f"^mine: {pattern}"):
        as_dataset(X, name="mine")


@pytest.mark.parametrize("case", ACCEPTED_X)
def test_the_loader_accepts_what_the_estimators_accept(case):
    from dptaucc.datasets import as_dataset

    X = as_dataset(ACCEPTED_X[case]).X
    assert X.sum() == (GOOD > 1).sum() if "booleans" in case else X.sum() == GOOD.sum()
