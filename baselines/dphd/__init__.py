"""DPHD (Balcan et al. 2017) as an Octave port driven from Python: :class:`DPHD`."""

from .estimator import DEFAULT_MAX_VALUE, DPHD
from .octave import OctaveDiedError, OctaveError, OctaveNotFoundError, OctaveTimeoutError

__all__ = ["DPHD", "DEFAULT_MAX_VALUE", "OctaveError", "OctaveNotFoundError",
           "OctaveTimeoutError", "OctaveDiedError"]
