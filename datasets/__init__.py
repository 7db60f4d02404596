"""The CLUTO document-term matrices of the paper, the supplement's synthetic biclusters, and
your own count matrices.

>>> from dptaucc.datasets import load, load_matrix
>>> ds = load("cstr", seed=0)          # doctest: +SKIP
>>> ds.X, ds.row_labels, ds.meta["density"]  # doctest: +SKIP
>>> mine = load_matrix("counts.npz", labels="labels.txt", seed=0)  # doctest: +SKIP
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
from .user import as_dataset, load_callable, load_matrix, read_matrix

__all__ = [
    "KNOWN_DATASETS", "Dataset", "load", "permutation", "synthetic", "registry", "get_entry",
    "cache_dir", "DatasetError", "ChecksumError", "DatasetUnavailableError",
    "UnverifiedDownloadWarning", "load_matrix", "load_callable", "as_dataset", "read_matrix",
]
