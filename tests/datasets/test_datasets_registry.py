"""The bundled registry agrees with the mirror's manifest and with the files themselves."""

from __future__ import annotations

from importlib import resources

import pytest
from dptaucc.datasets.download import sha256_of
from dptaucc.datasets.registry import parse_registry, registry

from dptaucc import datasets


def test_registry_is_the_mirror_manifest(mirror_dir):
    bundled = resources.files("dptaucc.datasets").joinpath("registry.tsv").read_bytes()
    assert bundled == (mirror_dir / "MANIFEST.tsv").read_bytes()


def test_known_datasets_are_the_registry_in_table1_order():
    assert datasets.KNOWN_DATASETS == (
        "classic3", "cstr", "tr11", "tr41", "hitech", "k1b", "reviews", "sports")
    assert set(registry()) == set(datasets.KNOWN_DATASETS)


def test_every_mirrored_file_has_the_registered_hash(mirror_dir):
    seen = 0
    for entry in registry().values():
        for f in (entry.matrix, entry.labels):
            path = mirror_dir / f.file
            if not path.is_file():
                assert f.dataset == "sports" and f.role == "matrix"
                continue
            assert f.sha256 is not None
            assert sha256_of(path) == f.sha256, f.file
            seen += 1
    assert seen == 15


def test_sports_is_the_only_file_without_checksum():
    unverified = [f.file for e in registry().values() for f in (e.matrix, e.labels)
                  if not f.verified]
    assert unverified == ["sports.txt"]
    assert registry()["sports"].labels.verified


def test_unknown_name_lists_known_ones(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'classic4'.*classic3, cstr.*sports"):
        datasets.load("classic4", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown dataset"):
        datasets.get_entry(None)


HEADER = "dataset\trole\tfile\turl\tsha256\tformat\trows\tcols\tclasses\n"


@pytest.mark.parametrize("text,match", [
    ("a\tb\n", "expected columns"),
    (HEADER + "x\tmatrix\tx.txt\tu\t-\tcsv\t1\t1\t1\n", "bad role/format"),
    (HEADER + "x\tmatrix\tx.txt\tu\tabc\ttriplets\t1\t1\t1\n", "bad SHA-256"),
    (HEADER + "x\tmatrix\tx.txt\tu\t-\ttriplets\tone\t1\t1\n", "rows must be an integer"),
    (HEADER + "x\tmatrix\tx.txt\tu\t-\ttriplets\t1\t1\t1\n", "one matrix and one labels"),
])
def test_bad_registry_text_is_rejected(text, match):
    with pytest.raises(ValueError, match=match):
        parse_registry(text)
