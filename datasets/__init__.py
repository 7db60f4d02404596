"""The CLUTO document-term matrices of the paper and the supplement's synthetic biclusters.

>>> from dptaucc.datasets import load
>>> ds = load("cstr", seed=0)          # doctest: +SKIP
>>> ds.X, ds.row_labels, ds.meta["density"]  # doctest: +SKIP
"""

from . import synthetic
from .dataset import Dataset, permutation
from .download import (
    ChecksumError,
    DatasetError,
    DatasetUnavailableError,
    UnverifiedDownloadWarning,
    cache_dir,
)
from .loader import load
from .registry import KNOWN_DATASETS, get_entry, registry

__all__ = [
    "KNOWN_DATASETS", "Dataset", "load", "permutation", "synthetic", "registry", "get_entry",
    "cache_dir", "DatasetError", "ChecksumError", "DatasetUnavailableError",
    "UnverifiedDownloadWarning",
]
