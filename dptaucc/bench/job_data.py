"""The dataset of a job: its loaders (``dataset.loader``), loaded once per process and
validated once; the class counts that ``classes`` / ``col_classes`` stand for.

Shared by the engine (:mod:`run`) and the config checks (:mod:`validate`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from dptaucc.bench.configs import resolve_sentinels
from dptaucc.validation import freeze_count_matrix

__all__ = ["LOADERS", "load_dataset", "class_counts", "resolve_params"]

#: dataset loaders a config may name (``dataset.loader``)
LOADERS = ("cluto", "biclusters", "matrix", "callable")


@lru_cache(maxsize=3)
def _load(loader: str, name: str, seed: int | None, params_json: str, cache_dir: str | None,
          mirror: str | None, allow_unverified: bool):
    """The dataset with its matrix validated once, as canonical CSR float64 in immutable
    memory (:func:`dptaucc.validation.freeze_count_matrix`), so that the many fits and
    evaluations of a worker on it neither convert and copy it nor check its values again."""
    dataset = _read(loader, name, seed, params_json, cache_dir, mirror, allow_unverified)
    return dataclasses.replace(dataset, X=freeze_count_matrix(dataset.X))


def _read(loader: str, name: str, seed: int | None, params_json: str, cache_dir: str | None,
          mirror: str | None, allow_unverified: bool):
    params = json.loads(params_json)
    if loader == "cluto":
        from dptaucc import datasets

        return datasets.load(name, seed=seed, cache_dir=cache_dir, mirror=mirror,
                             allow_unverified=allow_unverified, progress=False)
    if loader == "biclusters":
        from dptaucc.datasets.synthetic import make_paper_biclusters

        n_cols = params.pop("n_cols")
        return make_paper_biclusters(n_cols, **params)
    if loader == "matrix":
        from dptaucc.datasets import load_matrix

        return load_matrix(name=name, seed=seed, **params)
    if loader == "callable":
        from dptaucc.datasets import load_callable

        return load_callable(params["target"], params["params"], name=name, seed=seed)
    raise ValueError(f"unknown dataset loader {loader!r} (expected one of {', '.join(LOADERS)})")


def load_dataset(job: Mapping):
    """The job's Dataset, permuted by its seed; cached per process (3 most recent). The
    synthetic biclusters are the one exception: one matrix per size, the same for every seed
    (the authors' protocol), so the seed is not part of their cache key.

    >>> job = {"dataset": {"name": "biclusters", "loader": "biclusters", "n_cols": 40,
    ...                    "params": {"n_rows": 30, "n_clusters": 3}}, "seed": 0}
    >>> dataset = load_dataset(job)
    >>> dataset.shape, (load_dataset({**job, "seed": 5}).X != dataset.X).nnz  # any seed
    ((30, 40), 0)
    """
    ds = job["dataset"]
    params = dict(ds.get("params") or {})
    if ds["loader"] == "biclusters":
        params["n_cols"] = int(ds["n_cols"])
    if ds["loader"] == "callable":
        params = {"target": ds.get("target"), "params": params}
    paths = job.get("paths") or {}
    seed = None if ds["loader"] == "biclusters" else int(job["seed"])
    dataset = _load(ds["loader"], ds["name"], seed,
                    json.dumps(params, sort_keys=True), paths.get("data_dir"),
                    paths.get("mirror"), bool(ds.get("allow_unverified")))
    if dataset.row_labels is None:
        sentinels = [k for k, v in (job["algorithm"].get("params") or {}).items()
                     if v in ("classes", "col_classes")]
        if sentinels:
            raise ValueError(
                f"dataset {ds['name']!r} has no labels, so algorithm parameter(s) "
                f"{', '.join(sentinels)} cannot be set from its number of classes: give them "
                "explicitly (e.g. algorithm.params.n_row_clusters=5) or add a labels file")
    return dataset


def class_counts(dataset) -> tuple[int, int]:
    """Row and column class counts of a loaded dataset (what ``classes`` / ``col_classes``
    stand for); without column labels the column count is the row count.

    >>> from dptaucc.datasets import as_dataset
    >>> class_counts(as_dataset([[1, 0], [0, 1], [2, 2]], row_labels=[0, 1, 1]))
    (2, 2)
    >>> class_counts(as_dataset([[1, 0], [0, 1]], row_labels=[0, 1], col_labels=[0, 0]))
    (2, 1)
    """
    n_classes = dataset.meta.get("n_classes")
    n_classes = int(len(np.unique(dataset.row_labels)) if n_classes is None else n_classes)
    col = dataset.col_labels
    return n_classes, (n_classes if col is None else len(np.unique(col)))


def resolve_params(params: Mapping, dataset) -> dict:
    """Replace the sentinels ``classes`` / ``col_classes`` by the dataset's class counts.

    >>> job = {"dataset": {"name": "biclusters", "loader": "biclusters", "n_cols": 40,
    ...                    "params": {"n_rows": 30, "n_clusters": 3}}, "seed": 0}
    >>> resolve_params({"n_row_clusters": "classes", "n_col_clusters": "col_classes",
    ...                 "epsilon": 1.0}, load_dataset(job))
    {'n_row_clusters': 3, 'n_col_clusters': 3, 'epsilon': 1.0}
    """
    return resolve_sentinels(params, *class_counts(dataset))
