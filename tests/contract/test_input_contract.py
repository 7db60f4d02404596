"""One input contract: every estimator of the suite gives the same answer to the same input.

The catalogue lists each input with its one answer: accepted, or refused before any work with
an exception of one type whose message names the problem. Inputs and parameters are checked in
the same place for every estimator (:mod:`dptaucc.base`), so adding an estimator to
``ESTIMATORS`` is enough to hold it to the contract.
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
from dptaucc.baselines.dpm import DPM
from dptaucc.baselines.fccm import FCCM, CollaborativeFCCM
from dptaucc.baselines.nmf_dp import DPNMF

from dptaucc import DPTauCC, DPTauCCRow, FastTauCC
from dptaucc.base import AllZeroCountsWarning, PrivateEstimator, SuiteEstimator

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
#: DPHD runs in GNU Octave: its accepted inputs are checked up to the start of the work
NEEDS_OCTAVE = {"DPHD"}

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

#: parameter -> (value, estimators it applies to, exception type, message pattern)
BAD_PARAMS = {
    "epsilon=inf (corrected)": ({"epsilon": math.inf}, ValueError,
                                "epsilon=inf releases the data without noise"),
    "epsilon=nan": ({"epsilon": math.nan}, ValueError, "'epsilon' parameter"),
    "epsilon=0": ({"epsilon": 0.0}, ValueError, "'epsilon' parameter"),
    "epsilon<0": ({"epsilon": -1.0}, ValueError, "'epsilon' parameter"),
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


@pytest.mark.parametrize("name", ESTIMATORS)
def test_fractional_counts_are_refused_where_whole_counts_are_needed(name, monkeypatch):
    est = ESTIMATORS[name](random_state=0)
    if type(est)._whole_counts:
        _no_work(monkeypatch)
        with pytest.raises(ValueError, match="X contains fractional entries"):
            est.fit(GOOD / 2)
    else:
        assert est._check_fit(GOOD / 2).nnz == np.count_nonzero(GOOD)


@pytest.mark.parametrize("name", PRIVATE)
@pytest.mark.parametrize("case", BAD_PARAMS)
def test_bad_privacy_parameter_gets_one_answer(name, case, monkeypatch):
    params, error, pattern = BAD_PARAMS[case]
    error, pattern = OWN_ANSWER.get((name, case), (error, pattern))
    _no_work(monkeypatch)
    with pytest.raises(error, match=pattern):
        ESTIMATORS[name](**params).fit(GOOD)


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


def _fit_or_check(name, X):
    est = ESTIMATORS[name](random_state=0)
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
