"""DPNMF's per-epoch releases of ``Ā = HHᵀ/N + E_A`` (K×K) and ``B̄ = VHᵀ/N + E_B`` (m×K).

Corrected (:func:`release_statistics`), the privacy argument:

* Neighbours: X and X' differ in one document (one row replaced, N fixed). Changing one cell
  of the count matrix, the suite's neighbouring relation, changes one row, so it is a special
  case and the guarantee carries over unchanged.
* Every document is scaled to unit L2 norm (‖v_i‖ ≤ 1; an empty one stays 0) and has no
  negative entry (the input check refuses negative values); every column of H lies in
  {h ≥ 0, ‖h‖ ≤ 1}. Column i of H is computed from document i and the previously released
  statistics only (:func:`~.updates.local_coefficients`), so between neighbours only
  (v_i, h_i) differs.
* Then the pair moves by ``(h hᵀ − h′h′ᵀ, v hᵀ − v′h′ᵀ)/N`` (writing v, h for v_i, h_i on
  one side, v′, h′ on the other), whose squared Frobenius norm times N² is
  ``‖h‖⁴ + ‖h′‖⁴ − 2(h·h′)²  +  ‖v‖²‖h‖² + ‖v′‖²‖h′‖² − 2(v·v′)(h·h′)``.
  (h·h′)² ≥ 0 whatever the signs, and v·v′ ≥ 0, h·h′ ≥ 0 because all four vectors are
  non-negative, so both subtracted terms are ≥ 0 and the sum is at most 1 + 1 + 1 + 1 = 4:
  the pair moves by at most Δ = 2/N in L2 (:func:`statistics_sensitivity`). Equality needs
  h ⊥ h′ and v ⊥ v′, all of unit norm: two documents on disjoint words whose coefficients
  are orthogonal unit vectors (the audit's ``orthonormal_topics`` history realises it). The
  triangle inequality on each statistic gives the looser 2√2/N (charged by earlier versions
  of this code); a signed document (v′ = −v, h·h′ = ½) would move it by
  3/(√2·N), which is why the non-negativity matters.
* One Gaussian release of the pair per epoch, σ from the analytic Gaussian mechanism
  (Balle & Wang 2018) at (ε/I, δ/I), through :func:`dptaucc.privacy.gaussian_mechanism`
  (snapped to a grid finer than σ by 2²⁴, so no low-order bit carries the data). The epochs
  compose adaptively: I releases at (ε/I, δ/I) give (ε, δ).

Paper (:func:`paper_release`): the authors' two releases per epoch, noise standard deviation
``2(Δ/ε_e)² ln(1.25/δ_e)`` with Δ = 2/N — the classical Gaussian *variance* — in plain
floating point, on raw counts.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dptaucc.privacy import PrivacyLedger, Sampler, gaussian_mechanism

from .gaussian import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_epsilon,
    paper_noise_std,
)

__all__ = ["statistics", "statistics_sensitivity", "statistics_sigma", "release_statistics",
           "paper_sensitivity", "paper_release"]


def statistics(V: sp.csr_matrix | np.ndarray, H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact ``(HHᵀ/N, VHᵀ/N)`` (K×K, m×K), N = number of documents (columns of V).
    V is CSR, or a dense array (then computed as ``(H Vᵀ)ᵀ``, which BLAS streams once).

    >>> import numpy as np, scipy.sparse as sp
    >>> V, H = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([[0.6, 0.0], [0.8, 1.0]])
    >>> A, B = statistics(sp.csr_matrix(V), H)
    >>> A.round(12).tolist(), bool(np.allclose(B, statistics(V, H)[1]))
    ([[0.18, 0.24], [0.24, 0.82]], True)
    """
    n = H.shape[1]
    VHt = (H @ V.T).T if isinstance(V, np.ndarray) else np.asarray(V @ H.T)
    return H @ H.T / n, VHt / n


def statistics_sensitivity(n_documents: int) -> float:
    """L2 sensitivity of the pair (HHᵀ/N, VHᵀ/N) for one replaced non-negative unit-norm
    document with coefficients in {h ≥ 0, ‖h‖ ≤ 1}: 2/N (proof in the module docstring).

    >>> statistics_sensitivity(4)
    0.5
    """
    return 2.0 / n_documents


def statistics_sigma(n_documents: int, epsilon: float, delta: float) -> float:
    """σ of one corrected release: analytic Gaussian at (ε, δ) for Δ = 2/N.

    >>> from dptaucc.baselines.nmf_dp.gaussian import analytic_gaussian_sigma
    >>> statistics_sigma(10, 1.0, 1e-5) == analytic_gaussian_sigma(2 / 10, 1.0, 1e-5)
    True
    """
    return analytic_gaussian_sigma(statistics_sensitivity(n_documents), epsilon, delta)


def release_statistics(V: sp.csr_matrix, H: np.ndarray, epsilon: float, delta: float,
                       sampler: Sampler, ledger: PrivacyLedger,
                       step: str) -> tuple[np.ndarray, np.ndarray]:
    """One (ε, δ)-DP release of (Ā, B̄) (see the module docstring); Ā is symmetrised
    (post-processing).

    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.privacy import PrivacyLedger, make_sampler
    >>> V = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    >>> ledger = PrivacyLedger()
    >>> A, B = release_statistics(V, np.array([[0.6, 0.0], [0.8, 1.0]]), 1.0, 1e-5,
    ...                           make_sampler(0), ledger, "epoch 0")
    >>> bool((A == A.T).all()), B.shape, len(ledger.entries)  # one joint release per epoch
    (True, (3, 2), 1)
    >>> entry = ledger.entries[0]
    >>> entry.sensitivity == statistics_sensitivity(2)
    True
    >>> entry.noise_scale == statistics_sigma(2, 1.0, 1e-5)
    True
    """
    n, k = H.shape[1], H.shape[0]
    sens = statistics_sensitivity(n)
    sigma = analytic_gaussian_sigma(sens, epsilon, delta)
    A, B = statistics(V, H)
    noisy = gaussian_mechanism(
        np.vstack([A, B]), sigma=sigma, epsilon=epsilon, delta=delta, sensitivity=sens,
        sampler=sampler, ledger=ledger, step=step,
        note="joint (HHᵀ/N, VHᵀ/N); one document replaced: unit-norm documents and H columns; "
        "analytic Gaussian σ; basic composition over epochs")
    A_bar = noisy[:k]
    return 0.5 * (A_bar + A_bar.T), noisy[k:]


def paper_sensitivity(n_documents: int) -> float:
    """The authors' Δ = 2/N for each of their two releases (valid only for documents of norm
    ≤ 1; the corrected mode's one joint release has the same Δ for both statistics at once).

    >>> paper_sensitivity(4)
    0.5
    """
    return 2.0 / n_documents


def paper_release(V: sp.csr_matrix, H: np.ndarray, epsilon: float, delta: float,
                  rng: np.random.Generator, ledger: PrivacyLedger,
                  epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """PAPER MODE ONLY: the authors' two releases, each charged at its nominal (ε, δ).

    >>> import numpy as np, scipy.sparse as sp
    >>> from dptaucc.privacy import PrivacyLedger
    >>> V = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    >>> ledger = PrivacyLedger()
    >>> _ = paper_release(V, np.array([[0.6, 0.0], [0.8, 1.0]]), 1.0, 1e-5,
    ...                   np.random.default_rng(0), ledger, epoch=0)
    >>> [e.step for e in ledger.entries], ledger.epsilon_spent  # two charges at ε each
    (['epoch 0: HHᵀ/N', 'epoch 0: VHᵀ/N'], 2.0)
    >>> ledger.entries[0].noise_scale == paper_noise_std(1.0, 1.0, 1e-5)  # std = σ*²
    True
    """
    n = H.shape[1]
    sens = paper_sensitivity(n)
    std = paper_noise_std(sens, epsilon, delta)
    note = (f"noise std {std:.3g} = calibrated variance (σ* = "
            f"{classical_gaussian_sigma(sens, epsilon, delta):.3g}); at δ_e this noise buys "
            f"ε = {gaussian_epsilon(std, sens, delta):.4g} (if Δ held)")
    A, B = statistics(V, H)
    for name in ("HHᵀ/N", "VHᵀ/N"):
        ledger.charge(f"epoch {epoch}: {name}", "gaussian", epsilon, delta, sens, "sequential",
                      note, std)
    return A + rng.normal(0.0, std, A.shape), B + rng.normal(0.0, std, B.shape)
