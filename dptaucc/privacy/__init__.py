"""Privacy: the per-fit ledger, the noise samplers, the mechanisms and the release kinds.

* :mod:`~dptaucc.privacy.ledger` — :class:`PrivacyLedger`, what every fit spent;
* :mod:`~dptaucc.privacy.samplers` — seeded (research) and secure (OpenDP, OS randomness)
  noise sources;
* :mod:`~dptaucc.privacy.mechanisms` — exponential, discrete Laplace, Gaussian (and the
  paper-mode float Laplace), each with its privacy map;
* :mod:`~dptaucc.privacy.bounded` — the bounded-domain discrete Laplace (integers released
  inside a public range), with its privacy map;
* :mod:`~dptaucc.privacy.releases` — the declared kind of every fitted attribute;
* :mod:`~dptaucc.privacy.hook` and :mod:`~dptaucc.privacy.calibration` — what every mechanism
  call tells the privacy audit (its release, redraws, and the calibration it really drew at).
"""

from dptaucc.privacy.bounded import (
    bounded_discrete_laplace,
    bounded_discrete_laplace_epsilon,
    bounded_discrete_laplace_mechanism,
    bounded_discrete_laplace_scale,
)
from dptaucc.privacy.ledger import (
    COMPOSITIONS,
    BudgetExceededError,
    LedgerEntry,
    PrivacyLedger,
)
from dptaucc.privacy.mechanisms import (
    as_sampler,
    discrete_laplace_mechanism,
    exponential_mechanism,
    float_laplace_mechanism,
    gaussian_mechanism,
    joint_linear_exponential_mechanism,
    linear_exponential_mechanism,
    linear_range_sensitivity,
    snap_to_grid,
)
from dptaucc.privacy.releases import (
    DP,
    LEDGER_ATTRIBUTES,
    NON_PRIVATE,
    POST_PROCESSING,
    PUBLIC,
    ReleaseKindsMixin,
    attributes_of_kind,
    fitted_attributes,
    undeclared_attributes,
)
from dptaucc.privacy.samplers import Sampler, SecureSampler, SeededSampler, make_sampler

__all__ = [
    "COMPOSITIONS", "BudgetExceededError", "LedgerEntry", "PrivacyLedger",
    "bounded_discrete_laplace", "bounded_discrete_laplace_epsilon",
    "bounded_discrete_laplace_mechanism", "bounded_discrete_laplace_scale",
    "as_sampler", "discrete_laplace_mechanism", "exponential_mechanism",
    "float_laplace_mechanism", "gaussian_mechanism", "joint_linear_exponential_mechanism",
    "linear_exponential_mechanism",
    "linear_range_sensitivity", "snap_to_grid",
    "DP", "LEDGER_ATTRIBUTES", "NON_PRIVATE", "POST_PROCESSING", "PUBLIC", "ReleaseKindsMixin",
    "attributes_of_kind", "fitted_attributes", "undeclared_attributes",
    "Sampler", "SecureSampler", "SeededSampler", "make_sampler",
]
