"""Privacy-preserving collaborative FCCM of vertically partitioned matrices (Honda et al. 2015).

T >= 3 sites share the n objects; site t holds the column block R^t privately (Honda et al.
§5). Per iteration:

* every site computes A^t = W^t R^tᵀ (C × n) from its block and its private W^t;
* the masked secure sum (:mod:`.secure_sum`; dealer s₁ = site 0, aggregator s₂ = site 1) gives
  the aggregator Σ_t A^t only; it computes U = softmax_c(Σ_t A^t / λ_u) (eq. 2) and broadcasts
  U to all sites in the clear;
* every site updates W^t = softmax_{j∈t}(U R^t / λ_w^t) (eq. 3) under its own constraint
  Σ_{j∈t} w^t_cj = 1, which is why the result is not the whole-data FCCM (paper §5.2): it is
  the whole-data FCCM *with per-site item constraints*
  (:func:`.core.fccm_iterate` with ``column_groups``), which the protocol computes exactly up to
  the fixed-point rounding of the secure sum.

This is secure multi-party computation (semi-honest, s₁ and s₂ not colluding), not
differential privacy: U is public every iteration, so the ledger records ε = ∞.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy
from sklearn.utils._param_validation import Interval, StrOptions

from dptaucc.base import SuiteEstimator
from dptaucc.methods import NON_NEGATIVE_REALS, MethodInfo
from dptaucc.privacy import PrivacyLedger
from dptaucc.validation import make_generator

from ._params import (
    LAMBDA_U_PER_ITEM,
    check_co_clusters,
    check_lambda,
    check_normalize,
    check_positive_int,
    default_lambdas,
)
from .core import FCCMResult, init_memberships, object_update
from .estimator import FCCM_PARAMETER_CONSTRAINTS, FCCMFittedMixin
from .messages import MessageLog
from .secure_sum import masked_secure_sum
from .sites import Site, split_columns

__all__ = ["CollaborativeFCCM", "SMC_NOTE", "ANALYST"]

#: this method's facts for the benchmark, figures and report (:mod:`dptaucc.methods`)
METHOD = MethodInfo(
    name="fccm", estimator="dptaucc.baselines.fccm.CollaborativeFCCM",
    label="Collab. FCCM", color="tab:olive", linestyle="-.", marker="X",
    family="fuzzy co-clustering",
    neighbours="none (secure computation, not DP)",
    domain=NON_NEGATIVE_REALS,  # fixed-point secure sums of any non-negative values
    modes=(),
    coclusters=True,
)

SMC_NOTE = ("secure multi-party computation; memberships broadcast in the clear; "
            "no differential privacy")
ANALYST = "analyst"
OBJECTIVE_FRACTIONAL_BITS = 24


class CollaborativeFCCM(FCCMFittedMixin, SuiteEstimator):
    """Collaborative FCCM over ``n_sites`` simulated sites with the masked secure sum.

    Parameters
    ----------
    n_row_clusters : number C of co-clusters; ``n_col_clusters`` None or C.
    n_sites : T >= 3 sites (at most the number of columns).
    lambda_u : object fuzzifier used on the *summed* aggregates; None = T · 0.01/m (the summed
        A is about T times the whole-data one).
    lambda_w : item fuzzifier, one number or one per site; None = 6·n/m.
    normalize : "l1" divides each row by its total over all sites; the totals are obtained by
        one secure sum and broadcast (a disclosure the paper's raw-data setting does not have).
        None uses the raw co-occurrences.
    column_split : None (contiguous blocks), "random", site ids per column, or index lists.
    n_init : restarts; each site keeps the W^t of the restart with the largest J (eq. 1),
        J obtained by a secure sum of the sites' local terms.
    fractional_bits : fixed-point precision of the secure sum of A^t (range ±2^(62-bits)/T).
    store_payloads : keep every payload in ``message_log_`` (audits, tests; costs memory).

    Fitted, beyond the whole-data FCCM's attributes: ``message_log_`` (:class:`MessageLog`),
    ``site_columns_`` (column indices of each site), ``lambda_u_``, ``lambda_w_`` (per site).
    ``column_labels_`` are per-site argmax typicalities put back in the original column order.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc.baselines.fccm import CollaborativeFCCM
    >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 6), 3))
    >>> model = CollaborativeFCCM(2, n_sites=3, random_state=0).fit(X)
    >>> model.memberships_.shape, model.epsilon_spent_
    ((10, 2), inf)
    """

    _domain = METHOD.domain
    _parameter_constraints = {
        **FCCM_PARAMETER_CONSTRAINTS,
        "n_sites": [Interval(numbers.Integral, 3, None, closed="left")],
        "lambda_w": [None, Interval(numbers.Real, 0, None, closed="neither"), "array-like"],
        "column_split": [None, StrOptions({"random"}), "array-like"],
        "fractional_bits": [Interval(numbers.Integral, 0, 52, closed="both")],
        "store_payloads": ["boolean"],
    }

    def __init__(self, n_row_clusters: int = 3, n_col_clusters: int | None = None,
                 n_sites: int = 3, lambda_u: float | None = None, lambda_w=None,
                 normalize: str | None = "l1", column_split=None, n_init: int = 5,
                 max_iter: int = 300, tol: float = 1e-7, fractional_bits: int = 40,
                 store_payloads: bool = False, random_state=None):
        self.n_row_clusters = n_row_clusters
        self.n_col_clusters = n_col_clusters
        self.n_sites = n_sites
        self.lambda_u = lambda_u
        self.lambda_w = lambda_w
        self.normalize = normalize
        self.column_split = column_split
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.fractional_bits = fractional_bits
        self.store_payloads = store_payloads
        self.random_state = random_state

    # -- parameter resolution -------------------------------------------------------------
    def _site_lambdas_w(self, n: int, m: int, T: int) -> np.ndarray:
        if self.lambda_w is None:
            return np.full(T, default_lambdas(n, m)[1])
        if isinstance(self.lambda_w, numbers.Real):
            return np.full(T, check_lambda(self.lambda_w, "lambda_w"))
        lams = [check_lambda(v, "lambda_w") for v in self.lambda_w]
        if len(lams) != T:
            raise ValueError(f"lambda_w lists {len(lams)} values for {T} sites")
        return np.asarray(lams)

    def fit(self, X, y=None) -> CollaborativeFCCM:
        X = self._check_fit(X)
        n, m = X.shape
        C = check_co_clusters(self.n_row_clusters, self.n_col_clusters, n, m)
        check_normalize(self.normalize)
        n_init = check_positive_int(self.n_init, "n_init")
        max_iter = check_positive_int(self.max_iter, "max_iter")
        tol = check_lambda(self.tol, "tol")
        bits = self.fractional_bits
        if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or not 0 <= bits <= 52:
            raise ValueError(f"fractional_bits must be an int in 0..52, got {bits!r}")
        rng = make_generator(self.random_state)
        # Same draw order as FCCM: the initial memberships first (data-independent, public).
        inits = [init_memberships(rng, C, n) for _ in range(n_init)]
        blocks = split_columns(m, self.n_sites, self.column_split, rng)
        T = len(blocks)
        lambda_u = check_lambda(T * LAMBDA_U_PER_ITEM / m if self.lambda_u is None
                                else self.lambda_u, "lambda_u")
        lambdas_w = self._site_lambdas_w(n, m, T)

        ledger = PrivacyLedger()
        log = MessageLog(store_payloads=bool(self.store_payloads))
        names = [f"site{t}" for t in range(T)]
        dealer, aggregator = names[0], names[1]
        sites = {name: Site(name, sp.csr_matrix(X[:, cols]), lam)
                 for name, cols, lam in zip(names, blocks, lambdas_w, strict=True)}
        integral = bool(np.all(X.data == np.rint(X.data)))  # counts: totals/tables are exact
        proto = _Protocol(sites, dealer, aggregator, rng, log, int(bits), integral)

        if self.normalize == "l1":
            ledger.mark_non_private(
                "row_totals", "per-object totals over all sites from one secure sum, "
                "broadcast to every site for the L1 row normalisation; " + SMC_NOTE)
            proto.normalize_rows()
        ledger.mark_non_private(
            "object_memberships", "U = softmax(Σ_t A^t / λ_u) (eq. 2) from the masked secure "
            "sum, broadcast to all sites every iteration; " + SMC_NOTE)

        best, best_J = None, -np.inf
        for U0 in inits:
            res = proto.run(U0, lambda_u, max_iter, tol)
            if res.objective > best_J:
                best, best_J = res, res.objective
                proto.keep_current()
        # Evaluation releases: the fitted U, every site's W^t and the co-cluster table.
        ledger.mark_non_private(
            "evaluation_release", "final U, each site's W^t and the C×C contingency table "
            "(secure sum of per-site tables) handed to the analyst; " + SMC_NOTE)
        U = log.send(proto.round, aggregator, ANALYST, "memberships", best.memberships)
        W = np.empty((C, m))
        for name, cols in zip(names, blocks, strict=True):
            W[:, cols] = log.send(proto.round, name, ANALYST, "typicalities",
                                  sites[name].release_typicalities(keep=True))
        row_labels = np.argmax(U, axis=0).astype(np.intp)
        table = proto.contingency(row_labels, C)

        self.site_columns_ = blocks
        self.lambda_u_, self.lambda_w_ = lambda_u, lambdas_w
        self.message_log_ = log
        self._set_fitted(X, U, W, FCCMResult(U, W, best_J, best.n_iter, best.converged),
                         ledger, contingency=table)
        self._warn_if_fewer_clusters()
        return self

    def evaluation_row_labels(self, X) -> np.ndarray:
        """EVALUATION ONLY, not private (whole X in one place).

        The training matrix gets the fitted assignment ``row_labels_`` (argmax of the broadcast
        U); another matrix with the same columns gets argmax_c Σ_t (W^t R^tᵀ)_ci.

        >>> import numpy as np
        >>> from dptaucc.baselines.fccm import CollaborativeFCCM
        >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 6), 3))
        >>> model = CollaborativeFCCM(2, n_sites=3, random_state=0).fit(X)
        >>> bool(np.array_equal(model.evaluation_row_labels(X), model.row_labels_))  # training X
        True
        """
        return super().evaluation_row_labels(X)


class _Protocol:
    """The message flow between the simulated sites (one fit)."""

    def __init__(self, sites: dict[str, Site], dealer: str, aggregator: str,
                 rng: np.random.Generator, log: MessageLog, bits: int, integral: bool):
        self.sites, self.dealer, self.aggregator = sites, dealer, aggregator
        self.rng, self.log, self.bits, self.integral = rng, log, bits, integral
        # sums of whole counts are exact integers: no fractional bits, full 62-bit range
        self._count_bits = 0 if integral else bits
        self.round = 0

    def _secure_sum(self, values: dict[str, np.ndarray], kind: str, bits: int) -> np.ndarray:
        return masked_secure_sum(values, self.dealer, self.aggregator, self.rng, self.log,
                                 self.round, kind, bits)

    def _broadcast(self, kind: str, payload: np.ndarray) -> dict[str, np.ndarray]:
        """The aggregator sends ``payload`` to every other site; returns each site's copy."""
        return {name: (payload if name == self.aggregator else
                       self.log.send(self.round, self.aggregator, name, kind, payload))
                for name in self.sites}

    def normalize_rows(self) -> None:
        totals = self._secure_sum({t: s.row_totals() for t, s in self.sites.items()},
                                  "row_totals", self._count_bits)
        # totals of counts are integers: undo the fixed-point rounding exactly
        if self.integral:
            totals = np.rint(totals)
        for name, received in self._broadcast("row_totals", totals).items():
            self.sites[name].normalize_rows(received)

    def run(self, U0: np.ndarray, lambda_u: float, max_iter: int, tol: float) -> FCCMResult:
        """One FCCM run from U0 (mirrors :func:`.core.fccm_iterate` step by step)."""
        self.round += 1
        U = U0
        for name, received in self._broadcast("memberships", U).items():
            self.sites[name].update_items(received)
        converged, n_iter = False, 0
        for it in range(1, max_iter + 1):
            n_iter = it
            self.round += 1
            total = self._secure_sum({t: s.object_aggregates() for t, s in self.sites.items()},
                                     "object_aggregates", self.bits)
            U_new = object_update(total, lambda_u)  # at the aggregator
            delta = float(np.max(np.abs(U_new - U)))
            U = U_new
            for name, received in self._broadcast("memberships", U).items():
                self.sites[name].update_items(received)
            if delta < tol:
                converged = True
                break
        self.round += 1
        local = self._secure_sum({t: np.array([s.local_objective(U)])
                                  for t, s in self.sites.items()},
                                 "objective", OBJECTIVE_FRACTIONAL_BITS)
        J = float(local[0]) - lambda_u * float(xlogy(U, U).sum())
        return FCCMResult(U, None, J, n_iter, converged)

    def keep_current(self) -> None:
        """The aggregator tells every site that the current run is the best so far."""
        for name, _ in self._broadcast("keep_current_run", np.array([True])).items():
            self.sites[name].keep()

    def contingency(self, row_labels: np.ndarray, C: int) -> np.ndarray:
        """t_kl summed over the sites' raw blocks by the secure sum (exact for counts)."""
        self.round += 1
        labels = self._broadcast("row_labels", row_labels)
        parts = {}
        for name, site in self.sites.items():
            parts[name] = site.local_contingency(labels[name], C)
        table = self._secure_sum(parts, "contingency", self._count_bits)
        if self.integral:
            table = np.rint(table)
        return self.log.send(self.round, self.aggregator, ANALYST, "contingency", table)

