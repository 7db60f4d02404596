"""The base every estimator of the suite shares: parameters, input, randomness and ledger.

* :class:`SuiteEstimator` — scikit-learn parameter validation from ``_parameter_constraints``
  (every estimator declares them), the one input check (:func:`check_fit_input`), the release
  kinds of fitted attributes, the fit's ledger attributes and scikit-learn tags;
* :class:`PrivateEstimator` — adds ``epsilon``, ``mode`` and ``secure``: the rules every
  private method applies before any work (:func:`check_privacy_parameters`) and its noise
  source;
* :class:`CoClustererMixin` — the co-clusterers' released table and its τ statistics.

``MODES`` and the constraint lists ``MODE``, ``EPSILON``, ``SEED``, ``RANDOM_STATE`` and
``SECURE`` are defined here once and used by every estimator.

Examples
--------
>>> import numpy as np
>>> from dptaucc import DPTauCC
>>> from dptaucc.base import MODES, PrivateEstimator
>>> MODES
('corrected', 'paper')
>>> isinstance(DPTauCC(), PrivateEstimator)
True
>>> DPTauCC(epsilon=float("inf")).fit(np.eye(3, dtype=int))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: epsilon=inf releases the data without noise: corrected mode promises ε-DP, ...
"""

from __future__ import annotations

import functools
import math
import warnings
from numbers import Integral, Number, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, BiclusterMixin
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted

from dptaucc.methods import COUNTS, DOMAINS, NON_NEGATIVE_REALS
from dptaucc.privacy.ledger import PrivacyLedger
from dptaucc.privacy.releases import ReleaseKindsMixin
from dptaucc.privacy.samplers import Sampler, make_sampler
from dptaucc.validation import check_count_matrix

__all__ = [
    "MODES", "MODE", "EPSILON", "SEED", "RANDOM_STATE", "SECURE", "AllZeroCountsWarning",
    "FewerClustersWarning", "SuiteEstimator", "PrivateEstimator", "CoClustererMixin",
    "check_fit_input", "check_privacy_parameters",
]

#: ``"corrected"``: ε-DP end to end; ``"paper"``: the authors' code where it changes results
#: (see docs/modes.md)
MODES = ("corrected", "paper")

#: scikit-learn parameter constraints shared by the estimators
MODE = [StrOptions(set(MODES))]


class _EpsilonInterval(Interval):
    """ε's interval (0, inf], its message saying what each mode accepts."""

    def __str__(self) -> str:
        return "a float > 0 (finite in corrected mode; inf only with mode='paper')"


#: ε > 0; ``inf`` passes the constraint and is refused in corrected mode
#: (:func:`check_privacy_parameters`), both as the message says
EPSILON = [_EpsilonInterval(Real, 0, math.inf, closed="right")]
#: None, a seed, a legacy ``RandomState``, a numpy Generator or SeedSequence
SEED = ["random_state", Interval(Integral, 0, None, closed="left"), np.random.Generator,
        np.random.SeedSequence]
#: a private method's ``random_state``: a :data:`SEED` or a :class:`~dptaucc.privacy.Sampler`
#: (tests inject recording ones)
RANDOM_STATE = [*SEED, Sampler]
SECURE = ["boolean"]


class AllZeroCountsWarning(UserWarning):
    """The count matrix holds no non-zero count (the fit runs; the warning says what it gives).

    A private fit does not refuse such a matrix: a refusal would itself tell the all-zero
    matrix from its neighbour with one count, which ε-DP forbids.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dptaucc import DPTauCC
    >>> from dptaucc.base import AllZeroCountsWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = DPTauCC(2, 2, random_state=0).fit(np.zeros((4, 3), dtype=int))
    ...
    >>> caught[0].category is AllZeroCountsWarning
    True
    """


class FewerClustersWarning(UserWarning):
    """A fit found fewer clusters than asked: clusters that emptied were removed, and the
    fitted ``n_row_clusters_`` (``n_col_clusters_``) says how many remain. The experiment
    engine keeps the warning in the record's ``warnings`` and the count in ``k_found``
    (``l_found``).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dptaucc import FastTauCC
    >>> X = np.kron(np.eye(2, dtype=int), np.full((5, 4), 6))  # two blocks
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = FastTauCC(3, 3, random_state=0).fit(X)
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    FastTauCC found 2 row clusters, fewer than the 3 asked: clusters that emptied were
    removed (n_row_clusters_ = 2)
    """


def check_fit_input(X, *, whole_counts: bool, outcome: str) -> sp.csr_matrix:
    """The one input check of every fit: a non-negative count matrix as CSR float64.

    Refuses what :func:`dptaucc.validation.check_count_matrix` refuses (with fractional
    entries refused when ``whole_counts``); an all-zero matrix is accepted with an
    :class:`AllZeroCountsWarning` naming ``outcome``, what the fit gives for it.

    Examples
    --------
    >>> import warnings
    >>> from dptaucc.base import check_fit_input
    >>> check_fit_input([[1, 0], [2, 3]], whole_counts=True, outcome="").nnz
    3
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = check_fit_input([[0, 0]], whole_counts=True, outcome="pure noise")
    >>> str(caught[0].message)
    'X holds no non-zero count: the fit gives pure noise'
    """
    X = check_count_matrix(X, integer=whole_counts)
    if X.nnz == 0:
        warnings.warn(f"X holds no non-zero count: the fit gives {outcome}",
                      AllZeroCountsWarning, stacklevel=3)
    return X


def check_privacy_parameters(epsilon, mode: str, secure: bool) -> float:
    """ε as a float after the rules every private estimator applies before any work.

    ``secure=True`` is for corrected mode (paper mode reproduces the authors' noise), and
    corrected mode refuses ``epsilon=inf`` (no noise, no privacy). Type, NaN and sign are
    the parameter constraints' job (:data:`EPSILON`).

    Examples
    --------
    >>> from dptaucc.base import check_privacy_parameters
    >>> check_privacy_parameters(2, "corrected", False)
    2.0
    >>> check_privacy_parameters(float("inf"), "paper", False)
    inf
    """
    epsilon = float(epsilon)
    if secure and mode == "paper":
        raise ValueError("secure=True is for corrected mode; paper mode reproduces the "
                         "authors' noise")
    if mode == "corrected" and math.isinf(epsilon):
        raise ValueError("epsilon=inf releases the data without noise: corrected mode promises "
                         "ε-DP, so give a finite epsilon (mode='paper' runs the authors' code "
                         "at any epsilon)")
    return epsilon


@functools.cache
def _parameter_names(cls) -> list[str]:
    """The constructor's parameter names, sorted (scikit-learn's ``get_params`` order)."""
    return cls._get_param_names()


def _check_parameter(cls, name: str, value) -> None:
    """scikit-learn's constraint check of one parameter (raises its error)."""
    validate_parameter_constraints({name: cls._parameter_constraints[name]}
                                   if name in cls._parameter_constraints else {},
                                   {name: value}, caller_name=cls.__name__)


@functools.lru_cache(maxsize=4096)
def _check_plain_parameter(cls, name: str, kind: type, value) -> None:
    """:func:`_check_parameter` for a number, string or None, remembered once it passed
    (``kind`` keeps 1, 1.0 and True apart)."""
    _check_parameter(cls, name, value)


class SuiteEstimator(ReleaseKindsMixin, BaseEstimator):
    """Base of every estimator of the suite (private methods and non-private references).

    Subclasses declare ``_parameter_constraints`` (scikit-learn's), ``_release_kinds``,
    the values X may hold (``_domain``, one of :data:`dptaucc.methods.DOMAINS`: a built-in
    estimator takes its method's ``METHOD.domain``; :data:`~dptaucc.methods.COUNTS` refuses
    fractional entries) and what a fit gives for an all-zero matrix (``_all_zero_outcome``),
    and start ``fit`` with ``X = self._check_fit(X)``.

    Examples
    --------
    >>> from dptaucc import FastTauCC
    >>> from dptaucc.base import SuiteEstimator
    >>> isinstance(FastTauCC(), SuiteEstimator), "random_state" in FastTauCC._parameter_constraints
    (True, True)
    """

    _parameter_constraints: ClassVar[dict] = {}
    _domain: ClassVar[str] = NON_NEGATIVE_REALS
    _all_zero_outcome: ClassVar[str] = "a result that does not depend on the data"

    def _check_fit(self, X) -> sp.csr_matrix:
        """Parameters (constraints, then the estimator's own rules), then X: before any work;
        then the attributes of an earlier fit are dropped (:meth:`_forget_fit`)."""
        self._validate_params()
        self._refuse_booleans()
        self._check_parameters()
        if self._domain not in DOMAINS:
            raise TypeError(f"{type(self).__name__}._domain must be one of {DOMAINS}, "
                            f"got {self._domain!r}")
        X = check_fit_input(X, whole_counts=self._domain == COUNTS,
                            outcome=self._all_zero_outcome)
        self._forget_fit()
        return X

    def _forget_fit(self) -> None:
        """Drop every fitted attribute (name ending in ``_``) and every private attribute
        (leading ``_``) of an earlier fit, so that a refit holds only what this fit sets:
        never an attribute that only another mode or variant sets (a paper-mode fit's
        non-private labels, or the seed and matrix name its evaluation keeps, in a corrected
        model). The settings (``get_params``) stay.

        >>> from dptaucc.baselines.dp_kmeans import DPKMeans
        >>> X = [[4, 0], [4, 1], [0, 4], [1, 4]]
        >>> model = DPKMeans(2, mode="paper", random_state=0)
        >>> model.labels_ = [0, 0, 1, 1]  # as a paper-mode fit leaves it
        >>> hasattr(model.set_params(mode="corrected").fit(X), "labels_")
        False
        """
        for name in [k for k in vars(self) if not k.startswith("__")
                     and (k.endswith("_") or k.startswith("_"))]:
            del self.__dict__[name]

    def _validate_params(self) -> None:
        """scikit-learn's check of every parameter against ``_parameter_constraints``, in the
        same order and with the same messages, one parameter at a time; a number, string or
        None that passed once for this class is not checked again (its validity depends only
        on its type and value), so a loop of fits re-checks only what changes."""
        cls = type(self)
        for name in _parameter_names(cls):
            value = getattr(self, name)
            if value is None or isinstance(value, (Number, str)):
                _check_plain_parameter(cls, name, type(value), value)
            else:
                _check_parameter(cls, name, value)

    def _check_parameters(self) -> None:
        """Rules the constraints cannot express (combinations of parameters)."""

    def _refuse_booleans(self) -> None:
        """A bool where a number is meant (scikit-learn's intervals take True for 1)."""
        for name, allowed in self._parameter_constraints.items():
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) and "boolean" not in allowed:
                raise TypeError(f"The {name!r} parameter of {type(self).__name__} must be a "
                                f"number, not a bool. Got {value!r} instead.")

    def _warn_if_fewer_clusters(self) -> None:
        """A :class:`FewerClustersWarning` for each of ``n_row_clusters_``/``n_col_clusters_``
        below the count asked (``n_row_clusters`` or ``n_clusters``; ``n_col_clusters``, or
        the row count when it is None). Called at the end of a fit that sets them."""
        params = self.get_params(deep=False)
        rows = params.get("n_row_clusters", params.get("n_clusters"))
        cols = params.get("n_col_clusters") or rows
        for attr, asked, side in (("n_row_clusters_", rows, "row"),
                                  ("n_col_clusters_", cols, "column")):
            found = getattr(self, attr, None)
            if isinstance(asked, Integral) and found is not None and found < asked:
                warnings.warn(f"{type(self).__name__} found {found} {side} clusters, fewer than "
                              f"the {asked} asked: clusters that emptied were removed ({attr} "
                              f"= {found})", FewerClustersWarning, stacklevel=3)

    def _check_fitted_input(self, X, attribute: str) -> sp.csr_matrix:
        """X for a method of a fitted model: counts with the fitted number of features."""
        check_is_fitted(self, attribute)
        X = check_count_matrix(X, integer=False)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        return X

    def _set_ledger(self, ledger: PrivacyLedger) -> None:
        """The fit's accounting as fitted attributes (``privacy_ledger_``, ``epsilon_spent_``,
        ``delta_spent_``)."""
        self.privacy_ledger_ = ledger
        self.epsilon_spent_ = ledger.epsilon_spent
        self.delta_spent_ = ledger.delta_spent

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.non_deterministic = (getattr(self, "random_state", None) is None
                                  or bool(getattr(self, "secure", False)))
        return tags


class PrivateEstimator(SuiteEstimator):
    """Base of the private methods: ``epsilon``, ``mode`` and ``secure`` (see
    :func:`check_privacy_parameters`) and the fit's one noise source.

    Examples
    --------
    >>> from dptaucc import DPTauCC
    >>> DPTauCC(random_state=0)._sampler().exact
    False
    """

    _all_zero_outcome: ClassVar[str] = "pure noise (every release is still charged)"

    def _check_parameters(self) -> None:
        check_privacy_parameters(self.epsilon, self.mode, bool(self.secure))

    def _sampler(self) -> Sampler:
        """Seeded from ``random_state``, or OpenDP's exact samplers with OS randomness when
        ``secure``."""
        return make_sampler(self.random_state, bool(self.secure))


class CoClustererMixin(BiclusterMixin):
    """A co-clusterer's released table ``contingency_`` and its τ statistics.

    Examples
    --------
    >>> import numpy as np
    >>> from dptaucc import FastTauCC
    >>> m = FastTauCC(2, 2, random_state=0).fit(np.kron(np.eye(2, dtype=int), np.ones((3, 3))))
    >>> sorted(m.contingency_.tolist()), round(m.tau_rc_, 6)
    ([[0.0, 9.0], [9.0, 0.0]], 1.0)
    """

    def _set_table(self, table: np.ndarray) -> None:
        """``contingency_``, the normalised Goodman–Kruskal ``tau_rc_``/``tau_cr_`` and the
        τ̂ of eq. 3.2 (``tau_hat_rc_``/``tau_hat_cr_``) of the released table."""
        from dptaucc.objective import goodman_kruskal_tau, tau_hat

        self.contingency_ = table
        self.tau_rc_, self.tau_cr_ = goodman_kruskal_tau(table)
        self.tau_hat_rc_, self.tau_hat_cr_ = tau_hat(table)
