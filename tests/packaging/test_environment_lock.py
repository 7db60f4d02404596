"""The pinned environment (constraints.txt): the versions the committed results record, within
the package's own ranges, which stay loose; `make setup` installs it, REPORT names it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with Python 3.11's tomllib")

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "constraints.txt"
PROJECT = "dptaucc-bench"


def pins() -> dict[str, str]:
    out = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: not an exact pin: {line!r}"
            out[canonicalize_name(name)] = version
    return out


def requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    return [Requirement(r) for r in reqs]


def test_the_lock_pins_the_versions_the_committed_results_record():
    locked = pins()
    recorded: dict[str, set] = {}
    for table in sorted((REPO / "results").glob("*.parquet")):
        if "versions" not in pq.read_schema(table).names:
            continue  # the audit tables have no records of jobs
        for blob in pd.read_parquet(table, columns=["versions"])["versions"].dropna().unique():
            for name, version in json.loads(blob).items():
                recorded.setdefault(canonicalize_name(name), set()).add(version)
    assert recorded, "no committed table records its versions"
    recorded.pop(canonicalize_name(PROJECT))
    for name, versions in recorded.items():
        assert len(versions) == 1, f"the committed tables record several {name}: {versions}"
        assert locked.get(name) == next(iter(versions)), (
            f"constraints.txt pins {name}=={locked.get(name)}, the committed results were made "
            f"with {versions}")


def test_every_pin_is_within_the_package_ranges_which_stay_loose():
    locked = pins()
    for req in requirements():
        name = canonicalize_name(req.name)
        assert not any(spec.operator in ("==", "===") for spec in req.specifier), (
            f"pyproject.toml pins {req}: the wheel's ranges stay loose, the lock is "
            f"constraints.txt")
        assert name in locked, f"constraints.txt does not pin {name}"
        assert req.specifier.contains(locked[name], prereleases=True), (
            f"constraints.txt pins {name}=={locked[name]}, outside pyproject's {req}")
    assert canonicalize_name(PROJECT) not in locked  # the project itself is never pinned


def test_make_setup_installs_from_the_lock_and_setup_latest_does_not():
    def recipe(target):
        out = subprocess.run(["make", "-n", "-C", str(REPO), target], capture_output=True,
                             text=True, check=True).stdout
        return [line for line in out.splitlines() if "pip install" in line and "-e" in line]

    (setup,) = recipe("setup")
    assert re.search(r"-c constraints\.txt\b", setup)
    (latest,) = recipe("setup-latest")
    assert "constraints" not in latest and "--upgrade" in latest


@pytest.mark.parametrize("text", ["constraints.txt", "make verify"])
def test_report_names_the_lock(text):
    from dptaucc.bench.report import environment_line

    assert text in environment_line()
