"""The supplement's synthetic biclusters: one matrix per size, as the authors built them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.datasets.synthetic import fill_constant, make_paper_biclusters
from sklearn.datasets import make_biclusters


def test_shapes_labels_and_positivity():
    ds = make_paper_biclusters(100)
    assert isinstance(ds.X, sp.csr_matrix) and ds.X.dtype == np.int64
    assert ds.X.shape == (1000, 100)
    assert ds.X.nnz == 1000 * 100 and ds.X.data.min() >= 1  # strictly positive, dense
    # generator seed 42 as the authors: row groups (355, 326, 319), columns (37, 33, 30)
    assert ds.meta["class_sizes"] == [355, 326, 319]
    assert ds.meta["col_class_sizes"] == [37, 33, 30]
    assert tuple(np.bincount(ds.row_labels)) == (355, 326, 319)
    assert tuple(np.bincount(ds.col_labels)) == (37, 33, 30)
    assert ds.meta["fill_value"] in (1, 2, 3, 4) and ds.meta["seed"] is None
    assert 0.40 < ds.meta["fraction_below_one"] < 0.48  # spec: about 44% of cells < 1
    small = make_paper_biclusters(10)
    assert small.meta["col_class_sizes"] == [5, 3, 2]


def test_construction_is_the_authors():
    ds = make_paper_biclusters(60)
    dense, rows, cols = make_biclusters((1000, 60), 3, noise=3, minval=1, maxval=10,
                                        shuffle=True, random_state=42)
    expected = np.trunc(dense)
    expected[expected < 0] = 0
    expected[expected == 0] = ds.meta["fill_value"]
    assert np.array_equal(ds.X.toarray(), expected.astype(np.int64))
    assert np.array_equal(ds.row_labels, rows.argmax(axis=0))
    assert np.array_equal(ds.col_labels, cols.argmax(axis=0))
    # the diagonal blocks carry the signal: each row's mean is highest on its own column group
    block_means = np.array([[ds.X[ds.row_labels == r][:, ds.col_labels == c].mean()
                             for c in range(3)] for r in range(3)])
    assert np.array_equal(block_means.argmax(axis=1), [0, 1, 2])


#: the supplement's 32 matrix sizes
PAPER_SIZES = (*range(10, 100, 10), *range(100, 1000, 100), *range(1000, 5000, 500),
               *range(5000, 10001, 1000))


def test_one_matrix_per_size_and_the_fill_constant_varies_across_sizes():
    a, b = make_paper_biclusters(30), make_paper_biclusters(30)
    assert (a.X != b.X).nnz == 0 and a.meta["fill_value"] == b.meta["fill_value"]
    assert len(PAPER_SIZES) == 32
    fills = [fill_constant(1000, m) for m in PAPER_SIZES]
    # one c per size from the fixed fill seed, different across sizes as the authors' draws
    assert set(fills) == {1, 2, 3, 4}
    assert fills == [fill_constant(1000, m) for m in PAPER_SIZES]  # fixed: rebuilt the same
    assert make_paper_biclusters(30).meta["fill_value"] == fill_constant(1000, 30)
    other = {fill_constant(1000, m, fill_random_state=7) for m in PAPER_SIZES}
    assert other <= {1, 2, 3, 4} and len(other) >= 2


def test_the_engine_gives_every_seed_eps_and_algorithm_the_same_matrix():
    """The supp_synthetic jobs of one size, over seeds, ε and algorithms, all load one matrix
    (no per-seed fill constant, no per-seed permutation); a new size gives another matrix."""
    from dptaucc.bench.run import load_dataset

    ds_cfg = {"name": "biclusters", "loader": "biclusters", "n_cols": 40,
              "params": {"n_rows": 60, "n_clusters": 3, "noise": 3.0, "minval": 1,
                         "maxval": 10, "generator_random_state": 42, "fill_zeros": True,
                         "fill_random_state": 42}}
    loaded = [load_dataset({"dataset": ds_cfg, "seed": seed, "epsilon": eps,
                            "algorithm": {"name": alg, "params": {}}})
              for seed in range(10) for eps in (0.1, 3.0) for alg in ("dp_taucc", "dpnmf")]
    first = loaded[0]
    for ds in loaded[1:]:
        assert (ds.X != first.X).nnz == 0
        assert np.array_equal(ds.row_labels, first.row_labels)
        assert np.array_equal(ds.col_labels, first.col_labels)
        assert ds.meta["fill_value"] == first.meta["fill_value"]
    wider = load_dataset({"dataset": {**ds_cfg, "n_cols": 50}, "seed": 0,
                          "algorithm": {"name": "dp_taucc", "params": {}}})
    assert wider.X.shape == (60, 50)


def test_fill_zeros_false_keeps_zeros():
    filled = make_paper_biclusters(50)
    raw = make_paper_biclusters(50, fill_zeros=False)
    assert raw.meta["fill_value"] is None and not raw.meta["fill_zeros"]
    assert raw.X.nnz < 1000 * 50 and raw.X.data.min() >= 1
    zero_cells = 1000 * 50 - raw.X.nnz
    assert zero_cells == round(raw.meta["fraction_below_one"] * 1000 * 50)
    dense = raw.X.toarray()
    assert np.count_nonzero(dense) == raw.X.nnz  # no stored zeros
    ref = sp.csr_matrix(dense)
    assert np.array_equal(raw.X.indptr, ref.indptr) and np.array_equal(raw.X.indices, ref.indices)
    diff = (filled.X - raw.X).tocoo()
    assert diff.nnz == zero_cells and set(diff.data.tolist()) == {filled.meta["fill_value"]}


def test_generator_parameters_pass_through():
    ds = make_paper_biclusters(40, n_rows=90, n_clusters=4, noise=0.0, minval=5, maxval=6,
                               generator_random_state=0, fill_random_state=2)
    assert ds.X.shape == (90, 40) and ds.meta["n_classes"] == 4
    assert len(ds.meta["col_class_sizes"]) == 4
    on_block = ds.X.toarray()[ds.row_labels[:, None] == ds.col_labels[None, :]]
    assert set(on_block.tolist()) <= {5}  # noise 0: the constants in [5, 6) truncate to 5


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(n_cols=0), ValueError, "n_cols"),
    (dict(n_cols=2.5), TypeError, "n_cols"),
    (dict(n_cols=2), ValueError, "n_clusters=3 exceeds"),
    (dict(n_cols=10, noise=-1.0), ValueError, "noise"),
    (dict(n_cols=10, minval=5, maxval=1), ValueError, "minval"),
    (dict(n_cols=10, fill_random_state=-3), ValueError, "seed"),
])
def test_bad_arguments(kwargs, err, match):
    n_cols = kwargs.pop("n_cols")
    with pytest.raises(err, match=match):
        make_paper_biclusters(n_cols, **kwargs)
