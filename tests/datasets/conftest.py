"""Fixtures of the dataset tests: the offline mirror, a local HTTP server, a parsed-data cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dptaucc import datasets

MIRRORED = tuple(n for n in datasets.KNOWN_DATASETS if n != "sports")


def _find_mirror() -> Path | None:
    """The offline mirror directory named by ``$DPTAUCC_MIRROR`` (the Makefile sets it)."""
    c = os.environ.get("DPTAUCC_MIRROR")
    if c and not c.startswith(("http://", "https://")) and (Path(c) / "MANIFEST.tsv").is_file():
        return Path(c)
    return None


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    """The offline mirror (``$DPTAUCC_MIRROR``, a directory holding ``MANIFEST.tsv``)."""
    found = _find_mirror()
    if found is None:
        pytest.skip("offline mirror not found (set DPTAUCC_MIRROR to a directory holding the "
                    "CLUTO files and MANIFEST.tsv; `make test` does)")
    return found


@pytest.fixture
def clean_env(monkeypatch):
    """No mirror or cache dir leaking in from the Makefile's environment."""
    monkeypatch.delenv("DPTAUCC_MIRROR", raising=False)
    monkeypatch.delenv("DPTAUCC_DATA_DIR", raising=False)


@pytest.fixture(scope="session")
def parsed_cache(tmp_path_factory, mirror_dir) -> Path:
    """A cache holding every mirrored dataset, parsed once per test session (read-only use)."""
    root = tmp_path_factory.mktemp("parsed_cache")
    for name in MIRRORED:
        datasets.load(name, cache_dir=root, mirror=mirror_dir, progress=False)
    return root
