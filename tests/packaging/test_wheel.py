"""The wheel installs one import root, ``dptaucc``, and carries every module and data file.

So Hugging Face ``datasets`` and OpenAI ``baselines`` can be installed beside it, and nothing
the library or the engine reads at run time (configs, calibration values, the DPHD Octave files,
the dataset registry, the typing marker) is left in the clone.
"""

from __future__ import annotations

import shutil
import zipfile

import pytest

#: repository folder -> where its files land in the wheel (pyproject's package-dir)
PACKAGE_DIRS = {"dptaucc/": "dptaucc/", "baselines/": "dptaucc/baselines/",
                "datasets/": "dptaucc/datasets/", "conf/": "dptaucc/conf/"}


@pytest.fixture(scope="module")
def contents(wheel) -> tuple[list[str], str]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        return names, zf.read(info).decode()


def installed_path(repo_path: str) -> str | None:
    for folder, target in PACKAGE_DIRS.items():
        if repo_path.startswith(folder):
            return target + repo_path[len(folder):]
    return None


def test_the_only_top_level_import_name_is_dptaucc(contents):
    names, top_level = contents
    assert top_level.split() == ["dptaucc"]
    roots = {n.split("/")[0] for n in names if ".dist-info/" not in n and ".data/" not in n}
    assert roots == {"dptaucc"}, roots


@pytest.mark.parametrize("suffix", [".py", ".yaml", ".tsv", ".m", "py.typed"])
def test_every_package_file_is_in_the_wheel(contents, source_files, suffix):
    names = set(contents[0])
    wanted = {installed_path(f) for f in source_files if f.endswith(suffix)} - {None}
    assert wanted, f"no {suffix} file found in the package folders"
    assert not wanted - names, sorted(wanted - names)


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_the_wheel_carries_the_compiled_kernels(contents):
    """Built where a C compiler is found (setup.py; optional elsewhere)."""
    names = contents[0]
    assert [n for n in names if n.startswith("dptaucc/_native") and n.endswith((".so", ".pyd"))]
    assert "dptaucc/_native.c" not in names  # the source ships in the sdist, not the wheel


def test_runtime_data_files_are_shipped(contents):
    names = set(contents[0])
    for needed in ("dptaucc/py.typed", "dptaucc/conf/config.yaml",
                   "dptaucc/conf/calibration/published_values.tsv",
                   "dptaucc/conf/dataset/matrix.yaml", "dptaucc/conf/hydra/launcher/cores.yaml",
                   "dptaucc/datasets/registry.tsv", "dptaucc/baselines/dphd/dphd_main.m"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "results/", "scripts/"))]
