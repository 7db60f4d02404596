"""One meaning per τ name across every co-clusterer: ``tau_*`` is the normalised
Goodman-Kruskal τ and ``tau_hat_*`` the de-normalised τ̂ (eq. 3.2), both of ``contingency_``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.fccm import CollaborativeFCCM

from dptaucc import DPTauCC, DPTauCCRow, FastTauCC


def _by_definition(T: np.ndarray) -> dict[str, float]:
    """τ̂ of eq. (3.2) written out cell by cell, and τ = τ̂ / (1 − Σ marginal²)."""
    q = np.asarray(T, float) / np.sum(T)
    rows, cols = q.sum(axis=1), q.sum(axis=0)
    hat_rc = sum(q[k, l] ** 2 / cols[l] for k in range(q.shape[0]) for l in range(q.shape[1])
                 if cols[l] > 0) - np.sum(rows ** 2)
    hat_cr = sum(q[k, l] ** 2 / rows[k] for k in range(q.shape[0]) for l in range(q.shape[1])
                 if rows[k] > 0) - np.sum(cols ** 2)
    return {"tau_hat_rc_": hat_rc, "tau_hat_cr_": hat_cr,
            "tau_rc_": hat_rc / (1 - np.sum(rows ** 2)),
            "tau_cr_": hat_cr / (1 - np.sum(cols ** 2))}


def _counts() -> sp.csr_matrix:
    rng = np.random.default_rng(3)
    blocks = np.kron(np.eye(3), np.ones((12, 10))) * 6 + 1
    return sp.csr_matrix(rng.poisson(blocks))


@pytest.mark.parametrize("make", [
    lambda: DPTauCC(3, 3, epsilon=50.0, random_state=0),
    lambda: DPTauCC(3, 3, epsilon=50.0, mode="paper", random_state=0),
    lambda: DPTauCCRow(3, 3, epsilon=500.0, random_state=0),
    lambda: FastTauCC(3, 3, random_state=0),
    lambda: CollaborativeFCCM(3, random_state=0),
], ids=["dp_taucc", "dp_taucc_paper", "dp_taucc_row", "fast_taucc", "fccm"])
def test_tau_names_mean_one_quantity(make):
    model = make().fit(_counts())
    expected = _by_definition(model.contingency_)
    for name, value in expected.items():
        assert getattr(model, name) == pytest.approx(value, rel=1e-9, abs=1e-12), name
    assert model.tau_rc_ >= model.tau_hat_rc_ - 1e-12  # τ̂ is τ times a factor ≤ 1
