"""What fitted estimators hold: every public fitted attribute is declared, and in corrected
mode none is read from the private data (nor equals a raw-data recomputation).

Add every estimator of the suite to ``CASES`` (both modes where it has them).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
from dptaucc.baselines.dp_kmeans import DPKMeans
from dptaucc.baselines.dphd import DPHD
from dptaucc.baselines.dphd.testing import have_octave
from dptaucc.baselines.dpm import DPM
from dptaucc.baselines.fccm import FCCM, CollaborativeFCCM
from dptaucc.baselines.nmf_dp import DPNMF
from sklearn.metrics import normalized_mutual_info_score as nmi

from dptaucc import DPTauCC, DPTauCCRow, FastTauCC
from dptaucc.objective import contingency_table, relabel
from dptaucc.privacy import NON_PRIVATE, attributes_of_kind, undeclared_attributes


def _counts(seed=11):
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.8, size=(60, 45)).astype(float)
    X[:20, :15] += rng.poisson(3, size=(20, 15))
    X[20:40, 15:30] += rng.poisson(3, size=(20, 15))
    return X


#: (id, factory(mode) -> unfitted estimator, modes, is a DP estimator)
CASES = [
    ("DPTauCC", lambda mode: DPTauCC(3, 3, epsilon=1.0, mode=mode, random_state=0),
     ("corrected", "paper"), True),
    ("DPTauCCRow", lambda mode: DPTauCCRow(3, 3, epsilon=1.0, mode=mode, random_state=0),
     ("corrected",), True),
    ("FastTauCC", lambda mode: FastTauCC(3, 3, random_state=0), (None,), False),
    ("DPKMeans", lambda mode: DPKMeans(3, epsilon=1.0, mode=mode, random_state=0),
     ("corrected", "paper"), True),
    ("DPNMF", lambda mode: DPNMF(3, epsilon=0.9, mode=mode, random_state=0),
     ("corrected", "paper"), True),
    ("DPM", lambda mode: DPM(epsilon=1.0, mode=mode, random_state=0), ("corrected", "paper"),
     True),
    ("ColoredNoise", lambda mode: ColoredNoiseKMeans(3, epsilon=1.0, mode=mode, random_state=0),
     ("corrected", "paper"), True),
    # the paper's local variant is not DP: paper mode only (corrected mode refuses it)
    ("ColoredNoise-local", lambda mode: ColoredNoiseKMeans(3, epsilon=1.0, variant="local",
                                                           noise="diag", mode=mode,
                                                           random_state=0), ("paper",), True),
    ("FCCM", lambda mode: FCCM(3, random_state=0), (None,), False),
    ("CollaborativeFCCM", lambda mode: CollaborativeFCCM(3, random_state=0), (None,), False),
    *([("DPHD", lambda mode: DPHD(3, epsilon=1.0, mode=mode, random_state=0),
        ("corrected", "paper"), True)] if have_octave() else []),
]

FITS = [pytest.param(factory, mode, dp, id=f"{name}-{mode}")
        for name, factory, modes, dp in CASES for mode in modes]


@pytest.mark.parametrize("factory,mode,dp", FITS)
def test_every_fitted_attribute_is_declared(factory, mode, dp):
    est = factory(mode).fit(_counts())
    assert undeclared_attributes(est) == []


@pytest.mark.parametrize("factory,mode,dp", FITS)
def test_corrected_mode_holds_nothing_raw(factory, mode, dp):
    if not dp or mode == "paper":
        pytest.skip("paper mode and non-private methods may hold non-private attributes")
    est = factory(mode).fit(_counts())
    assert attributes_of_kind(est, NON_PRIVATE) == []
    ledger = est.privacy_ledger_
    assert ledger.end_to_end_dp and np.isfinite(est.epsilon_spent_)


@pytest.mark.parametrize("factory,mode,dp", FITS)
def test_non_private_fits_never_show_a_finite_epsilon(factory, mode, dp):
    est = factory(mode).fit(_counts())
    if attributes_of_kind(est, NON_PRIVATE) and hasattr(est, "epsilon_spent_"):
        assert est.epsilon_spent_ == np.inf
        assert not est.privacy_ledger_.end_to_end_dp


def raw_recomputations(est, X) -> dict[str, np.ndarray]:
    """Quantities only the raw data gives, from the model's released outputs and X."""
    out = {}
    for method in ("evaluation_row_labels", "predict", "transform"):
        if hasattr(est, method):
            try:
                out[method] = np.asarray(getattr(est, method)(X))
            except (AttributeError, NotImplementedError, TypeError):
                pass
    if callable(getattr(est, "score", None)):  # e.g. minus the SSE to the released centres
        try:
            score = float(est.score(X))
            out["score"], out["minus score (inertia)"] = np.asarray(score), np.asarray(-score)
        except (AttributeError, NotImplementedError, TypeError):
            pass
    if hasattr(est, "column_labels_") and "evaluation_row_labels" in out:
        r, k = relabel(out["evaluation_row_labels"])
        c, ell = relabel(np.asarray(est.column_labels_))
        out["exact table of the evaluation labels"] = contingency_table(
            sp.csr_matrix(X), r, c, k, ell)
    labels = out.get("predict", out.get("evaluation_row_labels"))
    centres = getattr(est, "cluster_centers_", None)
    if centres is not None and labels is not None:  # centroid methods: sizes and means
        k = centres.shape[0]
        out["exact sizes of the predicted clusters"] = np.bincount(labels, minlength=k)
        if hasattr(est, "embedding_"):
            Y = est.embedding_.apply(sp.csr_matrix(X))
            Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
            sizes = np.maximum(np.bincount(labels, minlength=k), 1)
            out["exact means of the predicted clusters"] = np.vstack(
                [Y[labels == c].sum(axis=0) for c in range(k)]) / sizes[:, None]
    centers = getattr(est, "cluster_centers_", None)
    if centers is not None and np.ndim(centers) == 2 and np.shape(centers)[1] == X.shape[1]:
        rows = {"": np.asarray(X, dtype=float)}
        if hasattr(est, "max_value_"):  # the rows after a public count cap
            rows[" (counts capped at max_value_)"] = np.minimum(rows[""], est.max_value_)
        for what, R in rows.items():
            dist = ((R[:, None, :] - np.asarray(centers)[None, :, :]) ** 2).sum(axis=2)
            out[f"SSE of the rows at cluster_centers_{what}"] = dist.min(axis=1).sum()
            out[f"nearest-centre distances{what}"] = dist.min(axis=1)
    if hasattr(est, "dp_row_labels_") and hasattr(est, "column_labels_"):
        r, k = relabel(np.asarray(est.dp_row_labels_))
        c, ell = relabel(np.asarray(est.column_labels_))
        out["exact table of the released labels"] = contingency_table(
            sp.csr_matrix(X), r, c, k, ell)
    return out


def _equal(a, b, n_rows: int) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return False
    if a.shape == (n_rows,) and a.dtype.kind in "biu" and b.dtype.kind in "biu":
        return nmi(a, b) == pytest.approx(1.0)  # the same partition under other names
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))


@pytest.mark.parametrize("factory,mode,dp", FITS)
def test_no_released_attribute_equals_a_raw_recomputation(factory, mode, dp):
    if not dp or mode == "paper":
        pytest.skip("only corrected DP estimators promise this")
    X = _counts()
    est = factory(mode).fit(X)
    raw = raw_recomputations(est, X)
    assert raw, "the test found nothing to recompute from the raw data"
    clashes = [(attr, name) for attr in vars(est) if attr.endswith("_") and
               not attr.startswith("_") for name, value in raw.items()
               if _equal(getattr(est, attr), value, X.shape[0])]
    assert clashes == []
