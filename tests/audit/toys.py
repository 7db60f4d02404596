"""Tiny mechanisms with a known privacy loss, for testing the auditor (not part of the library).

Each reads one count ``X[0, 0]`` of its input, so the pair D = [[k]], D' = [[k + 1]] differs
by exactly one in that cell.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from dptaucc.privacy import PrivacyLedger


def first_count(X) -> float:
    return float(sp.csr_matrix(X)[0, 0])


class LaplaceCount(BaseEstimator):
    """Releases ``count_ = X[0,0] + Laplace(noise_factor/ε)``: ε-DP iff noise_factor >= 1."""

    def __init__(self, epsilon=1.0, noise_factor=1.0, random_state=None):
        self.epsilon = epsilon
        self.noise_factor = noise_factor
        self.random_state = random_state

    def fit(self, X, y=None):
        rng = np.random.default_rng(self.random_state)
        self.count_ = first_count(X) + rng.laplace(0.0, self.noise_factor / self.epsilon)
        return self


class RandomizedResponse(BaseEstimator):
    """Releases the bit ``X[0,0] > 0``, kept with probability e^ε/(1+e^ε): exactly ε-DP."""

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon = epsilon
        self.random_state = random_state

    def fit(self, X, y=None):
        rng = np.random.default_rng(self.random_state)
        bit = first_count(X) > 0
        keep = rng.random() < math.exp(self.epsilon) / (1.0 + math.exp(self.epsilon))
        self.bit_ = bool(bit if keep else not bit)
        return self


class DataBlind(BaseEstimator):
    """Ignores the data: 0-DP."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y=None):
        self.value_ = np.random.default_rng(self.random_state).random()
        return self


class RaisesOnZero(BaseEstimator):
    """Raises when ``X[0,0] == 0``: the exception itself tells the inputs apart."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y=None):
        if first_count(X) == 0:
            raise ValueError("X is all zeros")
        self.value_ = 1.0
        return self


class TableRelease(BaseEstimator):
    """A co-clusterer stand-in: fixed labels (row i -> i % 2, column j -> j % 2), the 2x2 table
    of X released with Laplace(1/ε) noise as floats (``noise="float"``, the textbook
    ``values + rng.laplace``) or as integers (``noise="integer"``, a two-sided geometric),
    clipped at 0, charged to a ledger entry named "laplace" either way."""

    def __init__(self, epsilon=1.0, noise="float", random_state=None):
        self.epsilon = epsilon
        self.noise = noise
        self.random_state = random_state

    def fit(self, X, y=None):
        X = sp.csr_matrix(X, dtype=float)
        rng = np.random.default_rng(self.random_state)
        self.row_labels_ = np.arange(X.shape[0]) % 2
        self.column_labels_ = np.arange(X.shape[1]) % 2
        R = np.eye(2)[self.row_labels_].T
        C = np.eye(2)[self.column_labels_]
        exact = np.asarray(R @ X @ C)
        self.privacy_ledger_ = PrivacyLedger()
        self.privacy_ledger_.charge("table", "laplace", self.epsilon, 0.0, 1.0)
        if self.noise == "float":
            noisy = exact + rng.laplace(0.0, 1.0 / self.epsilon, size=exact.shape)
        else:
            p = 1.0 - math.exp(-self.epsilon)
            noisy = exact + rng.geometric(p, exact.shape) - rng.geometric(p, exact.shape)
        self.contingency_ = np.maximum(noisy, 0.0)
        return self


class TwoCallRelease(BaseEstimator):
    """Two library mechanism calls on ``X[0, 0]``: a discrete Laplace count (ε₁ = 1, L1
    sensitivity ``count_sensitivity``) then a Gaussian release of it (σ =
    ``sigma_factor`` × the analytic σ for L2 sensitivity 1 at (ε₂, δ) = (2, 0.01)); both
    charged at their nominal (ε, δ). Correct with both factors 1; 0.5 plants a bug at one
    call site."""

    def __init__(self, count_sensitivity=1, sigma_factor=1.0, random_state=None):
        self.count_sensitivity = count_sensitivity
        self.sigma_factor = sigma_factor
        self.random_state = random_state

    def fit(self, X, y=None):
        from dptaucc.baselines.nmf_dp.gaussian import analytic_gaussian_sigma

        from dptaucc.privacy import discrete_laplace_mechanism, gaussian_mechanism

        rng = np.random.default_rng(self.random_state)
        ledger = PrivacyLedger()
        x = np.array([round(first_count(X))])
        self.count_ = discrete_laplace_mechanism(x, epsilon=1.0,
                                                 sensitivity=self.count_sensitivity, sampler=rng,
                                                 ledger=ledger,
                                                 step="count")
        sigma = self.sigma_factor * analytic_gaussian_sigma(1.0, 2.0, 0.01)
        self.value_ = gaussian_mechanism(x.astype(float), sigma=sigma, epsilon=2.0, delta=0.01,
                                         sensitivity=1.0, sampler=rng, ledger=ledger,
                                         step="gaussian")
        return self


class SteeredPath(BaseEstimator):
    """Three discrete Laplace counts of ``X[0, 0]`` (ε = 1 each); the second call's step is
    chosen by the first *release* (``steer="release"``: post-processing, correct) or by the
    exact count (``steer="exact"``: the data steers the fit's path between two calls, a leak
    no mechanism output shows: with the first output forced equal on D and D', D' = D + 1
    across the threshold takes the other branch)."""

    def __init__(self, steer="release", threshold=3, random_state=None):
        self.steer = steer
        self.threshold = threshold
        self.random_state = random_state

    def fit(self, X, y=None):
        from dptaucc.privacy import discrete_laplace_mechanism

        rng = np.random.default_rng(self.random_state)
        ledger = PrivacyLedger()
        x = np.array([round(first_count(X))])

        def count(step):
            return discrete_laplace_mechanism(x, epsilon=1.0, sensitivity=1, sampler=rng,
                                              ledger=ledger, step=step)

        first = count("first")
        steer = first[0] if self.steer == "release" else x[0]
        self.middle_ = count("above" if steer > self.threshold else "at or below")
        self.last_ = count("last")
        return self


class ColumnTotals(BaseEstimator):
    """Every column's total released with discrete Laplace noise (sensitivity 1 under one count
    changed, ε = 1), then one column chosen by the exponential mechanism over the released
    totals (range sensitivity 1 after scaling by the public ``1/scale``). ``leak`` plants one
    slip the neighbour sweep must find on random pairs:

    * ``"none"``: correct; ``share_`` = released totals over their released sum;
    * ``"state"``: ``share_`` divides by the exact total (an exact value after the call);
    * ``"weights"``: the choice's utilities add 1.5 times the exact totals (one count moves
      a utility by 1.5, past the declared range sensitivity 1);
    * ``"private"``: correct releases, but the exact total kept in a private attribute
      ``_total`` (no trailing underscore: not a fitted attribute, still held by the model);
    * ``"doubled"``: the totals noised twice over (every count counted twice) while the
      call declares sensitivity 1;
    * ``"dense"``: ``"state"``'s slip on a dense input only (a path sparse inputs never take)."""

    def __init__(self, leak="none", random_state=None):
        self.leak = leak
        self.random_state = random_state

    def fit(self, X, y=None):
        from dptaucc.privacy import discrete_laplace_mechanism, exponential_mechanism

        dense_input = not sp.issparse(X)
        X = sp.csr_matrix(X)
        rng = np.random.default_rng(self.random_state)
        ledger = PrivacyLedger()
        totals = np.asarray(X.sum(axis=0)).ravel().astype(np.int64)
        if self.leak == "doubled":
            totals = 2 * totals
        released = discrete_laplace_mechanism(totals, epsilon=1.0, sensitivity=1,
                                              sampler=rng, ledger=ledger, step="totals")
        clipped = np.maximum(released, 0).astype(float)
        utilities = clipped[None, :] / max(1.0, clipped.max())
        if self.leak == "weights":  # the exact totals next to the released ones
            utilities = utilities + 1.5 * totals[None, :]
        self.choice_ = exponential_mechanism(utilities, epsilon=1.0, sensitivity=1.0,
                                             sampler=rng, ledger=ledger, step="choice")
        exact = self.leak == "state" or (self.leak == "dense" and dense_input)
        total = float(X.sum()) if exact else max(1.0, float(clipped.sum()))
        self.share_ = clipped / max(1.0, total)
        if self.leak == "private":
            self._total = float(X.sum())
        self.privacy_ledger_ = ledger
        return self
