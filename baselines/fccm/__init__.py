"""Fuzzy co-clustering (FCCM) and its privacy-preserving collaborative version.

* :class:`FCCM` — whole-data FCCM (Oh et al. 2001), the non-private reference (ε = ∞);
* :class:`CollaborativeFCCM` — Honda et al. (2015): columns split across T >= 3 simulated
  sites, object-side sums combined by a masked secure sum, full message log. Secure
  computation, not differential privacy (ε = ∞);
* :func:`sitewise_fccm` — each site runs FCCM alone on its block (the paper's baseline).
"""

from .collaborative import SMC_NOTE, CollaborativeFCCM
from .compare import typicality_correlation
from .core import FCCMResult, fccm_iterate, fccm_objective, init_memberships
from .estimator import FCCM
from .messages import Message, MessageLog
from .secure_sum import masked_secure_sum
from .sites import split_columns
from .sitewise import SitewiseResult, sitewise_fccm
from .synthetic import make_planted_coclusters

__all__ = [
    "FCCM",
    "CollaborativeFCCM",
    "sitewise_fccm",
    "SitewiseResult",
    "FCCMResult",
    "fccm_iterate",
    "fccm_objective",
    "init_memberships",
    "typicality_correlation",
    "masked_secure_sum",
    "split_columns",
    "make_planted_coclusters",
    "Message",
    "MessageLog",
    "SMC_NOTE",
]
