"""A user's own data: matrix files (npz, MatrixMarket, triplets), labels, checksums, callables."""

from __future__ import annotations

import gzip
import sys
import textwrap

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
from dptaucc.datasets import ChecksumError, Dataset, as_dataset, load_callable, load_matrix
from dptaucc.datasets.dataset import permutation
from dptaucc.datasets.download import sha256_of
from dptaucc.datasets.user import read_matrix

COUNTS = np.array([[3, 0, 1, 0], [0, 2, 0, 0], [1, 1, 0, 5], [0, 0, 4, 1], [2, 0, 0, 1]])


def _triplets(path, header=("doc", "word", "cluster")):
    cells = zip(*np.nonzero(COUNTS), strict=True)
    lines = [",".join(header)] + [f"{i},{j},{COUNTS[i, j]}" for i, j in cells]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write(tmp_path, fmt):
    if fmt == "npz":
        sp.save_npz(tmp_path / "m.npz", sp.csr_matrix(COUNTS))
        return tmp_path / "m.npz"
    if fmt == "mtx":
        sio.mmwrite(tmp_path / "m.mtx", sp.coo_matrix(COUNTS))
        return tmp_path / "m.mtx"
    if fmt == "mtx.gz":
        sio.mmwrite(tmp_path / "plain.mtx", sp.coo_matrix(COUNTS))
        with gzip.open(tmp_path / "m.mtx.gz", "wb") as out:
            out.write((tmp_path / "plain.mtx").read_bytes())
        return tmp_path / "m.mtx.gz"
    if fmt == "row-col-count":
        return _triplets(tmp_path / "m.csv", ("row", "col", "count"))
    return _triplets(tmp_path / "m.csv")


@pytest.mark.parametrize("fmt", ["npz", "mtx", "mtx.gz", "triplets", "row-col-count"])
def test_every_format_gives_the_same_canonical_matrix(tmp_path, fmt):
    path = _write(tmp_path, fmt)
    ds = load_matrix(path)
    assert isinstance(ds, Dataset) and ds.name == "m"
    assert isinstance(ds.X, sp.csr_matrix) and ds.X.dtype == np.int64 and ds.X.has_sorted_indices
    assert ds.X.toarray().tolist() == COUNTS.tolist()
    assert ds.row_labels is None and ds.meta["n_classes"] is None and not ds.meta["labelled"]
    assert ds.meta["nnz"] == np.count_nonzero(COUNTS)


def test_labels_names_and_the_seed_permutation(tmp_path):
    path = _write(tmp_path, "npz")
    (tmp_path / "y.txt").write_text("b\na\nb\nc\na\n")
    (tmp_path / "cols.txt").write_text("7\n7\n3\n3\n")
    plain = load_matrix(path, tmp_path / "y.txt", col_labels=tmp_path / "cols.txt", name="mine")
    assert plain.name == "mine" and plain.row_labels.tolist() == [1, 0, 1, 2, 0]
    assert plain.col_labels.tolist() == [1, 1, 0, 0] and plain.meta["class_sizes"] == [2, 2, 1]
    ds = load_matrix(path, tmp_path / "y.txt", col_labels=tmp_path / "cols.txt", seed=3)
    rows, cols = permutation(3, *COUNTS.shape)  # the same permutation as the paper's data
    assert ds.X.toarray().tolist() == COUNTS[rows][:, cols].tolist()
    assert ds.row_labels.tolist() == plain.row_labels[rows].tolist()
    assert ds.col_labels.tolist() == plain.col_labels[cols].tolist()
    assert ds.meta["seed"] == 3


def test_checksums_are_checked_when_given(tmp_path):
    path = _write(tmp_path, "npz")
    (tmp_path / "y.txt").write_text("0\n0\n1\n1\n1\n")
    good, labels_good = sha256_of(path), sha256_of(tmp_path / "y.txt")
    ds = load_matrix(path, tmp_path / "y.txt", sha256=f"sha256:{good.upper()}",
                     labels_sha256=labels_good)
    assert ds.meta["sources"] == {"m.npz": good, "y.txt": labels_good}
    with pytest.raises(ChecksumError, match=rf"m\.npz: expected SHA-256 {'0' * 64}, got {good}"):
        load_matrix(path, sha256="0" * 64)
    with pytest.raises(ChecksumError, match=r"y\.txt"):
        load_matrix(path, tmp_path / "y.txt", labels_sha256="f" * 64)
    with pytest.raises(ValueError, match="not 64 hex digits"):
        load_matrix(path, sha256="abc")


def _bad_npz(tmp_path, values):
    path = tmp_path / "bad.npz"
    sp.save_npz(path, sp.csr_matrix(np.asarray(values)))
    return path


@pytest.mark.parametrize("make,match", [
    (lambda t: t / "absent.npz", r"matrix file .*absent\.npz does not exist"),
    (lambda t: t, "is a directory"),
    (lambda t: (t / "m.xyz").write_text("1") and t / "m.xyz", "cannot tell the format"),
    (lambda t: (t / "bad.npz").write_text("not a zip") and t / "bad.npz",
     r"bad\.npz: not a readable npz matrix"),
    (lambda t: (t / "bad.mtx").write_text("1 2 3\n") and t / "bad.mtx",
     r"bad\.mtx: not a readable mtx matrix"),
    (lambda t: _bad_npz(t, [[1.0, -2.0], [0.0, 1.0]]),
     r"bad\.npz: Negative values in data passed to X: X\[0, 1\] = -2; counts must be >= 0"),
    (lambda t: _bad_npz(t, [[1.5, 2.0], [0.0, 1.0]]),
     r"bad\.npz: X contains fractional entries: X\[0, 0\] = 1\.5; counts must be whole "
     "numbers"),
    (lambda t: _bad_npz(t, [[np.nan, 2.0], [0.0, 1.0]]), r"bad\.npz: .*NaN"),
    (lambda t: (t / "bad.csv").write_text("doc,word,cluster\n0,0,-3\n") and t / "bad.csv",
     r"bad\.csv: negative count"),
])
def test_bad_matrix_files_name_the_file_and_the_problem(tmp_path, make, match):
    with pytest.raises(ValueError, match=match):
        load_matrix(make(tmp_path))


@pytest.mark.parametrize("text,match", [
    ("0\n1\n2\n", r"y\.txt: 3 labels for a matrix with 5 rows"),
    ("0\n1\n\n2\n0\n1\n", r"y\.txt: line 3 is empty"),
    ("0\n1 2\n2\n0\n1\n", r"y\.txt: line 2 holds several values \('1 2'\); one class per line"),
])
def test_bad_label_files(tmp_path, text, match):
    (tmp_path / "y.txt").write_text(text)
    with pytest.raises(ValueError, match=match):
        load_matrix(_write(tmp_path, "npz"), tmp_path / "y.txt")
    with pytest.raises(ValueError, match=r"labels file .*nope\.txt does not exist"):
        load_matrix(_write(tmp_path, "npz"), tmp_path / "nope.txt")


def test_explicit_format_overrides_the_suffix(tmp_path):
    src = _write(tmp_path, "triplets")
    renamed = src.rename(tmp_path / "counts.data")
    assert load_matrix(renamed, format="triplets").X.toarray().tolist() == COUNTS.tolist()
    with pytest.raises(ValueError, match="unknown matrix format 'parquet'"):
        load_matrix(renamed, format="parquet")
    sp.save_npz(tmp_path / "m.npz", sp.csr_matrix(COUNTS))
    with pytest.raises(ValueError, match=r"m\.npz: not a text file of triplets"):
        load_matrix(tmp_path / "m.npz", format="triplets")


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "mydata_pkg.py").write_text(textwrap.dedent("""
        import numpy as np
        from dptaucc.datasets import as_dataset

        def load_blocks(n=6, scale=2):
            X = np.kron(np.eye(2, dtype=int), np.ones((n // 2, 3), dtype=int)) * scale
            return as_dataset(X, row_labels=[0] * (n // 2) + [1] * (n // 2), name="blocks")

        def wrong_type():
            return np.ones((2, 2))

        def bad_labels():
            from dptaucc.datasets import Dataset
            import scipy.sparse as sp
            return Dataset(X=sp.csr_matrix(np.ones((3, 2), dtype=np.int64)),
                           row_labels=np.array([0, 1]), col_labels=None, name="bad")

        def negative():
            from dptaucc.datasets import Dataset
            import scipy.sparse as sp
            return Dataset(X=sp.csr_matrix(-np.ones((2, 2), dtype=np.int64)),
                           row_labels=None, col_labels=None, name="neg")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "mydata_pkg"
    sys.modules.pop("mydata_pkg", None)


def test_callable_loader_checks_and_permutes(user_module):
    ds = load_callable(f"{user_module}.load_blocks", {"n": 8, "scale": 3}, seed=1)
    assert ds.name == "blocks" and ds.X.shape == (8, 6) and ds.X.data.tolist() == [3] * 24
    assert ds.meta["target"] == f"{user_module}.load_blocks" and ds.meta["n_classes"] == 2
    rows, _ = permutation(1, 8, 6)
    assert ds.row_labels.tolist() == (np.array([0] * 4 + [1] * 4)[rows]).tolist()
    assert load_callable(f"{user_module}.load_blocks", name="other").name == "other"


@pytest.mark.parametrize("target,exc,match", [
    ("wrong_type", TypeError, "returned ndarray, expected a dptaucc.datasets.Dataset"),
    ("bad_labels", ValueError, r"bad_labels: 2 labels for a matrix with 3 rows"),
    ("negative", ValueError, r"negative: Negative values in data passed to X"),
    ("missing_function", ValueError, "cannot import dataset target"),
])
def test_callable_loader_errors(user_module, target, exc, match):
    with pytest.raises(exc, match=match):
        load_callable(f"{user_module}.{target}")


def test_callable_target_must_be_dotted():
    with pytest.raises(ValueError, match="package.module.function"):
        load_callable("load_blocks")
    with pytest.raises(ValueError, match="cannot import dataset target 'no_such_pkg_x.f'"):
        load_callable("no_such_pkg_x.f")


def test_as_dataset_from_dense_and_rejects_bad_input():
    ds = as_dataset(COUNTS.astype(float), [0, 0, 1, 1, 1])
    assert ds.X.dtype == np.int64 and ds.meta["class_sizes"] == [2, 3]
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        as_dataset(np.ones(3))
    with pytest.raises(ValueError, match="could not convert string to float"):
        as_dataset(np.array([["a", "b"]]))


def test_check_command(tmp_path, capsys):
    from dptaucc.datasets.__main__ import main

    path = _write(tmp_path, "mtx")
    (tmp_path / "y.txt").write_text("a\nb\na\nb\nb\n")
    assert main(["check", str(path), "--labels", str(tmp_path / "y.txt")]) == 0
    out = capsys.readouterr().out
    assert "m.mtx: 5 x 4, nnz 10, density 50.000%, 2 classes" in out
    assert "class sizes: [2, 3]" in out
    assert main(["check", str(path), "--sha256", "0" * 64]) == 1
    assert "checksum mismatch" in capsys.readouterr().err


def test_all_zero_matrix_is_kept_with_the_estimators_warning(tmp_path):
    from dptaucc.base import AllZeroCountsWarning

    with pytest.warns(AllZeroCountsWarning, match="X holds no non-zero count"):
        assert load_matrix(_bad_npz(tmp_path, [[0, 0], [0, 0]])).X.nnz == 0


def test_triplets_keep_empty_rows_and_columns_given_a_shape(tmp_path):
    """4 x 3 with an empty last row and column: without shape= the file cannot tell."""
    path = tmp_path / "m.csv"
    path.write_text("row,col,count\n0,0,2\n2,1,8.0\n1,0,1\n")
    X = load_matrix(path, shape=(4, 3)).X
    assert X.shape == (4, 3) and X.toarray().tolist() == [[2, 0, 0], [1, 0, 0], [0, 8, 0],
                                                         [0, 0, 0]]
    with pytest.warns(UserWarning, match=r"no shape= given.*pass shape=\(n_rows, n_cols\)"):
        assert load_matrix(path).X.shape == (3, 2)
    with pytest.raises(ValueError, match=r"a cell lies outside shape=\(2, 3\)"):
        load_matrix(path, shape=(2, 3))
    with pytest.raises(ValueError, match="shape must be"):
        load_matrix(path, shape=(4,))


def test_triplets_without_shape_warn_only_when_nothing_confirms_the_rows(tmp_path):
    """A labels file counts the rows: as many labels as row ids, no warning; more labels than
    row ids (empty rows after the last id), refused naming the matrix file and the shape that
    keeps them; a file that cannot be read fails with no shape warning before its error."""
    import warnings

    path = tmp_path / "m.csv"
    path.write_text("row,col,count\n0,0,2\n2,1,8\n1,0,1\n")
    (tmp_path / "y3.txt").write_text("a\nb\na\n")
    (tmp_path / "y4.txt").write_text("a\nb\na\nb\n\n")  # a trailing blank line is no label
    (tmp_path / "c3.txt").write_text("u\nv\nw\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_matrix(path, tmp_path / "y3.txt").X.shape == (3, 2)
    with pytest.raises(ValueError, match=r"m\.csv: its row ids give 3 rows, but y4\.txt has 4 "
                                         r"labels: .*pass shape=\(4, 2\) \(dataset\.params\."
                                         r"shape=\[4, 2\]\)"):
        load_matrix(path, tmp_path / "y4.txt")
    assert load_matrix(path, tmp_path / "y4.txt", shape=(4, 2)).X.shape == (4, 2)
    with pytest.raises(ValueError, match=r"m\.csv: its column ids give 2 columns, but c3\.txt"):
        load_matrix(path, tmp_path / "y3.txt", col_labels=tmp_path / "c3.txt")
    with pytest.warns(UserWarning, match=r"no shape= given.* = \(3, 2\); rows \(and columns\)"):
        load_matrix(path)
    path.write_text("rows,cols,n\n0,0,2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="lacks column"):
            load_matrix(path)
        with pytest.raises(ValueError, match="lacks column"):
            read_matrix(path)


def test_triplets_with_ids_from_one(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("row,col,count\n1,1,2\n3,2,5\n")
    with pytest.raises(ValueError, match=r"Ids start at 0 \(pass index_base=1 if yours start"):
        load_matrix(path)
    assert load_matrix(path, index_base=1, shape=(3, 2)).X.toarray().tolist() == [
        [2, 0], [0, 0], [0, 5]]
    path.write_text("row,col,count\n0,1,2\n")
    with pytest.raises(ValueError, match="ids start at 1; pass index_base=0"):
        load_matrix(path, index_base=1, shape=(3, 2))
    with pytest.raises(ValueError, match="index_base must be 0 or 1"):
        load_matrix(path, index_base=2, shape=(3, 2))


def test_whole_floats_in_triplets_as_in_npz(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("row,col,count\n0,0,8.0\n1,1,1\n")
    assert load_matrix(path, shape=(2, 2)).X.toarray().tolist() == [[8, 0], [0, 1]]
    path.write_text("row,col,count\n0,0,8.5\n1,1,1\n")
    with pytest.raises(ValueError, match=r"counts must be whole numbers, found 8\.5 on line 2"):
        load_matrix(path, shape=(2, 2))


@pytest.mark.parametrize("data", [COUNTS.tolist(), COUNTS, sp.csr_matrix(COUNTS)])
def test_data_in_memory_is_pointed_to_as_dataset(data):
    with pytest.raises(TypeError) as info:
        load_matrix(data)
    message = str(info.value)
    assert "use dptaucc.datasets.as_dataset(X, row_labels)" in message and len(message) < 200


def test_check_command_takes_shape_and_index_base(tmp_path, capsys):
    from dptaucc.datasets.__main__ import main

    path = tmp_path / "m.csv"
    path.write_text("row,col,count\n1,1,2\n2,3,5\n")
    assert main(["check", str(path), "--shape", "4", "3", "--index-base", "1"]) == 0
    assert "4 x 3" in capsys.readouterr().out
    assert main(["check", str(path)]) == 1
    assert "pass index_base=1" in capsys.readouterr().err
