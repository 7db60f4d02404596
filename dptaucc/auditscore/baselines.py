"""The correct code's runs, once per tree: what each audit reaches, which tests cover what.

Before any mutant is judged, each audit of a group runs on the unmutated scratch copy under
coverage.py (the real command, same size; one worker, so every fit is in the measured
process): its exit code must be 0 (a gate that fails on correct code judges nothing), its
time sets the mutants' time limit, and the lines it executes are the *reach* of that audit.
A mutant on a line no audit of its group executes is on a path the audit never reaches.

The group's tests run once under coverage with one context per test (pytest-cov
``--cov-context=test``): for every line, the tests that execute it; with their outcome and
duration (JUnit XML). A mutant is then tested by the tests that execute its statement and
pass on the correct code (a module-level statement runs at import, outside any test: every
passing test that executes a line of that file).

Both are stored as JSON under ``<store>/<tree hash>/``: a changed tree runs them again.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .scratch import RunResult, ScratchTree, run
from .targets import AUDITS, Group

__all__ = ["AuditBaseline", "TestMap", "doctest_ids"]


@dataclass
class AuditBaseline:
    """One audit on the correct code: exit code, seconds, lines reached per file.

    >>> base = AuditBaseline("method:dpm", 0, 41.5, {"baselines/dpm/tree.py": [10, 11, 30]})
    >>> base.usable, base.reaches("baselines/dpm/tree.py", (12, 20))
    (True, False)
    >>> base.reaches("baselines/dpm/tree.py", (28, 31)), base.reaches("other.py", (1, 99))
    (True, False)
    """

    audit: str
    returncode: int | None
    seconds: float
    reach: dict[str, list[int]]
    output: str = ""

    @property
    def usable(self) -> bool:
        return self.returncode == 0

    def reaches(self, path: str, lines: tuple[int, int]) -> bool:
        got = self.reach.get(path)
        return bool(got) and any(lines[0] <= n <= lines[1] for n in got)


@dataclass
class TestMap:
    """A group's tests on the correct code: who covers which line, who passed, how long.

    >>> tm = TestMap("dpm", 1, 9.0, {"core.py": {"3": ["t::a", "t::b"], "7": ["t::c"]}},
    ...              passed=["t::a", "t::c"], durations={"t::a": 1.5, "t::c": 2.0})
    >>> tm.tests_for("core.py", (3, 4), module_level=False)  # t::b failed on correct code
    ['t::a']
    >>> tm.tests_for("core.py", (3, 3), module_level=True), tm.seconds_of(["t::a", "t::c"])
    (['t::a', 't::c'], 3.5)
    """

    __test__ = False  # not a pytest test class

    group: str
    returncode: int | None
    seconds: float
    covers: dict[str, dict[str, list[str]]]  # path -> line (str) -> test ids
    passed: list[str] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)

    def tests_for(self, path: str, lines: tuple[int, int], module_level: bool) -> list[str]:
        """Passing tests that execute one of ``lines`` of ``path`` (any line of it when the
        statement is module-level or ran only at import), in a stable order."""
        by_line = self.covers.get(path, {})
        ok = set(self.passed)
        span = [str(n) for n in range(lines[0], lines[1] + 1)]
        found = {t for n in span for t in by_line.get(n, ())}
        # a statement run only at import (outside any test: a module or class body)
        if module_level or (not found and any(n in by_line for n in span)):
            found = {t for ids in by_line.values() for t in ids}
        return sorted(found & ok)

    def seconds_of(self, tests: list[str]) -> float:
        return sum(self.durations.get(t, 0.0) for t in tests)


def _rel(tree: ScratchTree, filename: str) -> str | None:
    real = Path(os.path.realpath(filename))
    copy = tree.copy.resolve()
    return real.relative_to(copy).as_posix() if real.is_relative_to(copy) else None


def _rcfile(tree: ScratchTree, name: str, data: Path) -> Path:
    rc = tree.dir / f"{name}.coveragerc"
    rc.write_text(f"[run]\ndata_file = {data}\nsource = {tree.copy / 'dptaucc'}\n"
                  f"    {tree.copy / 'baselines'}\n", encoding="utf-8")
    return rc


def _cached(path: Path, kind):
    if path.exists():
        return kind(**json.loads(path.read_text(encoding="utf-8")))
    return None


def _save(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(obj)), encoding="utf-8")
    tmp.replace(path)


def _covered(tree: ScratchTree, name: str, argv: list[str], timeout: float):
    """Run ``python -m coverage run``-style ``argv`` (built by the caller around the rcfile)
    in the copy and read the coverage data it wrote: (RunResult, CoverageData)."""
    import coverage

    data = tree.dir / f"cov-{name}"
    rc = _rcfile(tree, name, data)
    res = run([tree.python(), *[a.replace("{rc}", str(rc)) for a in argv]], cwd=tree.copy,
              env=tree.env(), timeout=timeout)
    cov = coverage.CoverageData(basename=str(data))
    cov.read()
    return res, cov


def audit_argv(tree: ScratchTree, audit: str) -> list[str]:
    out = tree.out / audit.replace(":", "_")
    return [a.replace("{out}", str(out)) for a in AUDITS[audit]]


def audit_baseline(tree: ScratchTree, audit: str, store: Path, timeout: float,
                   log=print) -> AuditBaseline:
    """The audit on the correct scratch copy under coverage (cached per tree hash)."""
    path = store / tree.hash / f"audit-{audit.replace(':', '_')}.json"
    cached = _cached(path, AuditBaseline)
    if cached is not None:
        return cached
    log(f"  baseline: {audit} on the correct code, under coverage (limit {timeout:.0f} s)")
    res, cov = _covered(tree, audit.replace(":", "_"),
                        ["-m", "coverage", "run", "--rcfile={rc}", *audit_argv(tree, audit)],
                        timeout)
    reach = {}
    for f in cov.measured_files():
        rel = _rel(tree, f)
        if rel is not None:
            reach[rel] = sorted(cov.lines(f) or [])
    base = AuditBaseline(audit, res.returncode, res.seconds, reach, res.output[-2000:])
    _save(path, base)
    return base


def doctest_ids(group: Group) -> list[str]:
    """The doctest runner's test ids of the group's modules.

    >>> from dptaucc.auditscore.targets import GROUPS
    >>> doctest_ids(next(g for g in GROUPS if g.name == "dp_kmeans"))[0]
    'tests/packaging/test_doctests.py::test_examples_run[dptaucc.baselines.dp_kmeans]'
    """
    ids = []
    for rel in group.files:
        mod = rel[:-3].replace("/", ".")
        if mod.startswith("baselines."):
            mod = "dptaucc." + mod
        ids.append(f"tests/packaging/test_doctests.py::test_examples_run[{mod}]")
    return ids


def _junit(path: Path, root: Path) -> tuple[list[str], dict[str, float]]:
    passed, durations = [], {}
    if not path.exists():
        return passed, durations
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        parts = classname.split(".")
        # classname "tests.privacy.test_x" or "tests.privacy.test_x.TestClass"
        module_parts = []
        for i in range(len(parts), 0, -1):
            candidate = "/".join(parts[:i]) + ".py"
            if (root / candidate).is_file():
                module_parts = parts[:i]
                rest = parts[i:]
                break
        else:
            continue
        node = "/".join(module_parts) + ".py::" + "::".join([*rest, name])
        durations[node] = float(case.get("time", 0.0))
        if not any(child.tag in ("failure", "error", "skipped") for child in case):
            passed.append(node)
    return passed, durations


def _pytest_args(group: Group) -> list[str]:
    paths = [p for p in group.tests if not p.endswith("test_doctests.py")]
    return paths + doctest_ids(group)


def test_map(tree: ScratchTree, group: Group, store: Path, timeout: float,
             log=print) -> TestMap:
    """The group's tests on the correct copy, one coverage context per test (cached)."""
    path = store / tree.hash / f"tests-{group.name}.json"
    cached = _cached(path, TestMap)
    if cached is not None:
        return cached
    junit = tree.dir / f"junit-{group.name}.xml"
    log(f"  test map: {group.name} ({', '.join(group.tests)}) under coverage")
    res, cov = _covered(tree, f"tests-{group.name}",
                        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov",
                         "--cov-config={rc}", "--cov-context=test", "--cov-report=",
                         f"--junitxml={junit}", "-o", "junit_family=xunit1", "--timeout=900",
                         *_pytest_args(group)], timeout)
    passed, durations = _junit(junit, tree.copy)
    covers: dict[str, dict[str, list[str]]] = {}
    for f in cov.measured_files():
        rel = _rel(tree, f)
        if rel is None or rel not in group.files:
            continue
        by_line = cov.contexts_by_lineno(f)
        covers[rel] = {str(n): sorted({c.split("|")[0] for c in ctx if c})
                       for n, ctx in by_line.items()}
    tm = TestMap(group.name, res.returncode, res.seconds, covers, passed, durations)
    _save(path, tm)
    return tm


def summary(res: RunResult) -> str:
    return res.output.strip().splitlines()[-1] if res.output.strip() else ""
