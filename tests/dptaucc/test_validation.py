"""dptaucc.validation.check_count_matrix: sklearn's messages first, then the count checks."""

import numpy as np
import pytest
import scipy.sparse as sp

from dptaucc import validation
from dptaucc.validation import (
    check_count_matrix,
    check_n_clusters,
    dense_counts,
    freeze_count_matrix,
)

COUNTS = np.array([[1, 0, 2], [0, 3, 0], [4, 0, 0]])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix input
@pytest.mark.parametrize("convert", [
    np.asarray, np.matrix, lambda a: a.tolist(), sp.csr_matrix, sp.csc_matrix, sp.coo_matrix,
    sp.lil_matrix, sp.dok_matrix, sp.csr_array, sp.coo_array,
])
def test_returns_canonical_csr_float64(convert):
    out = check_count_matrix(convert(COUNTS))
    assert isinstance(out, sp.csr_matrix) and out.dtype == np.float64
    assert out.has_sorted_indices and out.nnz == 4
    np.testing.assert_array_equal(out.toarray(), COUNTS)


def test_sparse_input_left_untouched_explicit_zeros_dropped_duplicates_summed():
    X = sp.csr_matrix(COUNTS.astype(float))
    X.data[0] = 0.0                                  # an explicit zero in the caller's matrix
    out = check_count_matrix(X)
    assert X.nnz == 4 and out.nnz == 3               # caller's matrix not modified in place
    # COO duplicates are summed before the sign check: -1 + 2 at (0, 0) is the count 1
    coo = sp.coo_matrix(([-1.0, 2.0, 3.0], ([0, 0, 1], [0, 0, 1])), shape=(2, 2))
    np.testing.assert_array_equal(check_count_matrix(coo).toarray(), [[1, 0], [0, 3]])


@pytest.mark.parametrize("X,exc,match", [
    (None, TypeError, "got None"),
    (np.ones(3), ValueError, "Expected 2D array"),
    (np.ones((2, 2, 2)), ValueError, "dim 3"),
    (np.zeros((0, 3)), ValueError, r"0 sample\(s\)"),
    (np.zeros((3, 0)), ValueError, r"0 feature\(s\)"),
    (np.ones((2, 2)) + 1j, ValueError, "Complex data not supported"),
    (np.array([[1, {"a": 1}]], dtype=object), TypeError, "argument must be .* string.* number"),
    (np.array([[1.0, np.nan]]), ValueError, "Input X contains NaN"),
    (sp.csr_matrix(np.array([[1.0, np.inf]])), ValueError, "Input X contains infinity"),
    (np.array([[1.0, -1.0]]), ValueError,
     r"Negative values in data passed to X: X\[0, 1\] = -1; counts must"),
    (sp.csc_matrix(np.array([[0.0, 2.0], [1.0, -1.5]])), ValueError,
     r"Negative values in data passed to X: X\[1, 1\] = -1\.5;"),
    (np.array([[1.0, 0.5]]), ValueError, r"X contains fractional entries: X\[0, 1\] = 0\.5;"),
    (sp.csr_matrix(np.array([[0.0, 0.0, 3.0], [2.0, 0.0, 1e-9]])), ValueError,
     r"X contains fractional entries: X\[1, 2\] = 1e-09;"),
])
def test_bad_input_messages(X, exc, match):
    with pytest.raises(exc, match=match):
        check_count_matrix(X)


def test_fractional_allowed_when_not_integer_and_name_used():
    out = check_count_matrix(np.array([[0.5, 0.0]]), integer=False)
    assert out.nnz == 1 and out.data[0] == 0.5
    with pytest.raises(ValueError, match="Negative values in data passed to W"):
        check_count_matrix(np.array([[-0.5]]), integer=False, name="W")


def test_n_clusters_message_names_samples_and_features():
    with pytest.raises(ValueError, match=r"k=3 is larger than the number of rows \(n_samples=1\)"):
        check_n_clusters(3, 1, "k", "rows")
    with pytest.raises(ValueError, match=r"columns \(n_features=2\)"):
        check_n_clusters(3, 2, "k", "columns")


@pytest.mark.parametrize("X", [np.zeros((2, 3)), sp.csr_matrix((2, 3))])
def test_all_zero_matrix_is_valid(X):
    out = check_count_matrix(X)
    assert out.shape == (2, 3) and out.nnz == 0


def test_dense_counts_views_a_full_matrix_copies_a_dense_one_and_leaves_sparse_ones():
    full = check_count_matrix(np.arange(1, 13).reshape(3, 4))
    view = dense_counts(full)
    assert view.base is not None and np.shares_memory(view, full.data)  # no copy
    np.testing.assert_array_equal(view, full.toarray())
    assert not view.flags.writeable  # the caller's values cannot be changed through it
    half = check_count_matrix(np.array([[1, 0, 2], [0, 3, 4]]))   # 4 of 6 cells non-zero
    copy = dense_counts(half)
    assert not np.shares_memory(copy, half.data) and not copy.flags.writeable
    np.testing.assert_array_equal(copy, half.toarray())
    assert dense_counts(check_count_matrix(COUNTS)) is None       # 4 of 9 cells
    assert dense_counts(half, min_density=1.0) is None
    np.testing.assert_array_equal(dense_counts(check_count_matrix(COUNTS), 0.4), COUNTS)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
def test_integer_csr_input_is_checked_as_its_float_copy(dtype):
    counts = sp.csr_matrix(np.array([[5, 0, 0], [0, 0, 7]], dtype=dtype))
    counts.data[0] = 0  # an explicit zero, dropped as for float input
    out = check_count_matrix(counts)
    assert isinstance(out, sp.csr_matrix) and out.dtype == np.float64 and out.nnz == 1
    assert out.has_canonical_format and out.toarray().tolist() == [[0, 0, 0], [0, 0, 7.0]]
    assert counts.dtype == dtype and counts.nnz == 2  # the input is left as it was
    if np.issubdtype(dtype, np.signedinteger):
        counts.data[1] = -2
        with pytest.raises(ValueError, match="Negative values in data passed to X"):
            check_count_matrix(counts)


def test_parameters_are_checked_at_every_fit_after_a_valid_one():
    from sklearn.utils._param_validation import InvalidParameterError

    from dptaucc import DPTauCC

    X = np.kron(np.eye(2, dtype=int), np.ones((3, 3), dtype=int))
    DPTauCC(h=0.5, secure=False, n_iterations=2, random_state=0).fit(X)  # checked, remembered
    for bad in ({"h": 1.5}, {"secure": 0}, {"n_iterations": 2.0}, {"random_state": -1}):
        with pytest.raises(InvalidParameterError, match=f"'{next(iter(bad))}' parameter"):
            DPTauCC(**{"random_state": 0, **bad}).fit(X)


def test_a_frozen_matrix_is_returned_without_another_pass_and_cannot_change(monkeypatch):
    X = freeze_count_matrix(sp.csr_matrix(COUNTS))
    np.testing.assert_array_equal(X.toarray(), COUNTS)
    for array in (X.data, X.indices, X.indptr):
        with pytest.raises(ValueError):
            array.flags.writeable = True
        with pytest.raises(ValueError):
            array[0] = 5
    monkeypatch.setattr(validation, "value_summary", lambda data: pytest.fail("a pass"))
    assert check_count_matrix(X) is X


def test_what_is_no_longer_the_frozen_matrix_is_checked_again():
    X = freeze_count_matrix(COUNTS)
    copy = X.copy()                      # writeable arrays: checked as any matrix
    copy.data[0] = -1.0
    with pytest.raises(ValueError, match="Negative values"):
        check_count_matrix(copy)
    X.data = np.array([-1.0, 3.0, 3.0, 4.0])  # an array swapped in: not the frozen one
    with pytest.raises(ValueError, match="Negative values"):
        check_count_matrix(X)


def test_a_frozen_matrix_remembers_whether_its_counts_are_whole():
    X = freeze_count_matrix(np.array([[0.5, 1.0]]))
    assert check_count_matrix(X, integer=False) is X
    with pytest.raises(ValueError, match="fractional entries"):
        check_count_matrix(X)
