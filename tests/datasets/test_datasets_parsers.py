"""Parsers on small hand-made files: formats, the authors' shape rule, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
from dptaucc.datasets.loader import parse_dataset
from dptaucc.datasets.parsers import parse_labels, parse_matlab_dtm, parse_triplets, relabel
from dptaucc.datasets.registry import DatasetEntry, FileEntry


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_triplets_by_header_name_with_index_column_and_stored_zeros(tmp_path):
    # columns out of the usual order, an unnamed index column, one stored zero
    path = _write(tmp_path, "t.txt", ",cluster,word,doc\n0,5,0,0\n1,0,1,1\n2,7,2,1\n3,2,1,0\n")
    X = parse_triplets(path)
    assert isinstance(X, sp.csr_matrix) and X.dtype == np.int64
    assert X.shape == (2, 3)
    assert X.toarray().tolist() == [[5, 2, 0], [0, 0, 7]]
    assert X.nnz == 3 and np.all(X.data > 0)  # the stored zero is gone
    assert X.has_sorted_indices


@pytest.mark.parametrize("text,match", [
    ("", "empty file"),
    ("doc,word,count\n0,0,1\n", r"lacks column\(s\) \['cluster'\]"),
    ("doc,word,cluster\n", "no triplets"),
    ("doc,word,cluster\n0,0,1\n1,1\n", "malformed triplet file"),
    ("doc,word,cluster\n0,0,1\n1,x,2\n", "malformed triplet file"),
    ("doc,word,cluster\n0,0,1.5\n", "counts must be whole numbers, found 1.5"),
    ("doc,word,cluster\n0,0.5,1\n", "column ids must be whole numbers, found 0.5"),
    ("doc,word,cluster\n0,0,1\n0,0,2\n", "duplicate"),
    ("doc,word,cluster\n0,0,-1\n", "negative count"),
    ("doc,word,cluster\n0,0,1\n5,1,1\n", "not contiguous"),
    ("doc,word,cluster\n-1,0,1\n", "row id -1 on line 2 is below 0"),
    ("doc,word,cluster\n0,0,1\n\n# a comment\n1,-2,1\n", "column id -2 on line 5 is below 0"),
    ("doc,word,cluster\n0,0,1\n1,1,-4\n", "negative count -4 on line 3"),
    ("doc,word,cluster\n0,0,1\n1,1,2\n0,0,3\n", r"duplicate .* \(0, 0\) on lines 2 and 4"),
])
def test_malformed_triplets_are_rejected(tmp_path, text, match):
    path = _write(tmp_path, "bad.txt", text)
    with pytest.raises(ValueError, match=match) as info:
        parse_triplets(path)
    assert "bad.txt" in str(info.value)


def test_labels_and_relabel(tmp_path):
    labels = parse_labels(_write(tmp_path, "l.txt", "3\n1\n3\n4\n"))
    assert labels.tolist() == [3, 1, 3, 4]
    assert relabel(labels).tolist() == [1, 0, 1, 2]
    for text, match in [("", "empty"), ("1\n2\nx\n", "malformed"), ("1 2\n3 4\n", "one label")]:
        with pytest.raises(ValueError, match=match):
            parse_labels(_write(tmp_path, "bad.txt", text))


def _mat(tmp_path, dtm, classid, name="m.mat"):
    path = tmp_path / name
    sio.savemat(path, {"dtm": dtm, "classid": classid})
    return path


def test_matlab_dtm_both_orientations(tmp_path):
    dense = np.array([[1, 0, 3], [0, 2, 0]], dtype=np.uint8)
    classid = np.array([[2], [1]], dtype=np.uint8)
    for dtm in (sp.csc_matrix(dense), sp.csc_matrix(dense.T)):
        X, cid = parse_matlab_dtm(_mat(tmp_path, dtm, classid), 2, 3)
        assert X.dtype == np.int64 and X.format == "csr"
        assert X.toarray().tolist() == dense.tolist()
        assert cid.tolist() == [2, 1]
    with pytest.raises(ValueError, match=r"shape \(2, 3\), expected \(4, 3\)"):
        parse_matlab_dtm(_mat(tmp_path, sp.csc_matrix(dense), classid), 4, 3)
    path = tmp_path / "nodtm.mat"
    sio.savemat(path, {"classid": classid})
    with pytest.raises(ValueError, match="'dtm' missing"):
        parse_matlab_dtm(path, 2, 3)
    trunc = tmp_path / "trunc.mat"
    trunc.write_bytes(_mat(tmp_path, sp.csc_matrix(dense), classid).read_bytes()[:150])
    with pytest.raises(ValueError, match="trunc.mat"):
        parse_matlab_dtm(trunc, 2, 3)


def _entry(fmt, n_rows, n_cols, matrix="m.txt", sha="0" * 64):
    m = FileEntry("toy", "matrix", matrix, "http://x/" + matrix, sha, fmt)
    lab = FileEntry("toy", "labels", "l.txt", "http://x/l.txt", "1" * 64, "labels-txt")
    return DatasetEntry("toy", m, lab, n_rows, n_cols, 2)


def test_label_count_must_match_rows(tmp_path):
    m = _write(tmp_path, "m.txt", "doc,word,cluster\n0,0,1\n1,1,2\n")
    with pytest.raises(ValueError, match="l.txt has 3 labels but m.txt has 2 rows"):
        parse_dataset(_entry("triplets", 2, 2), m, _write(tmp_path, "l.txt", "0\n1\n1\n"))
    X, labels = parse_dataset(_entry("triplets", 2, 2), m, _write(tmp_path, "l.txt", "5\n7\n"))
    assert labels.tolist() == [0, 1] and X.shape == (2, 2)


def test_shape_must_match_registry(tmp_path):
    m = _write(tmp_path, "m.txt", "doc,word,cluster\n0,0,1\n1,1,2\n")
    lab = _write(tmp_path, "l.txt", "0\n1\n")
    with pytest.raises(ValueError, match=r"parsed shape \(2, 2\) differs.*\(2, 3\)"):
        parse_dataset(_entry("triplets", 2, 3), m, lab)
    with pytest.warns(UserWarning, match="differs"):  # no checksum known: warn only
        parse_dataset(_entry("triplets", 2, 3, sha=None), m, lab)


def test_matlab_classid_must_agree_with_label_file(tmp_path):
    dtm = sp.csc_matrix(np.array([[1, 0], [0, 2], [3, 0]], dtype=np.uint8))
    m = _mat(tmp_path, dtm, np.array([[2], [1], [2]]), name="m.mat")
    entry = _entry("matlab-dtm", 3, 2, matrix="m.mat")
    X, labels = parse_dataset(entry, m, _write(tmp_path, "l.txt", "0\n4\n0\n"))
    assert labels.tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="does not agree"):
        parse_dataset(entry, m, _write(tmp_path, "l.txt", "0\n0\n1\n"))
