"""A scratch copy of the tree that mutants are written into, and commands run against it.

The working tree is never mutated: :class:`ScratchTree` copies the project's files (those git
tracks or would track, under the folders the package, its tests and configs live in) into a
temporary folder, and builds beside it an *import view*: a folder ``view/dptaucc`` whose entries
link to the copy's ``dptaucc/*`` and to its ``baselines``, ``datasets`` and ``conf`` (the
installed layout, ``dptaucc.baselines`` …). Commands run with ``PYTHONPATH`` set to the view
(found before the editable install of the working tree), bytecode caching off (a mutant of the
same size written in the same second would otherwise reuse a stale ``.pyc``) and the copy as
working directory. :meth:`ScratchTree.mutated` writes one mutant and restores the original
bytes afterwards, checked by hash, whatever happens; the whole copy is deleted on exit.

:func:`run` runs a command in its own process group with a time limit and kills the group
when it is exceeded (a hung fit, Octave, joblib workers: nothing is left behind).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .mutate import Mutant

__all__ = ["ScratchTree", "RunResult", "run", "tree_hash", "project_files"]

#: folders and files of the tree a scratch copy needs (the package, its tests and configs)
COPIED = ("dptaucc/", "baselines/", "datasets/", "conf/", "tests/", "conftest.py",
          "pyproject.toml", "setup.py")
#: not part of what a mutant's verdict depends on (the harness itself)
NOT_HASHED = ("dptaucc/auditscore/", "tests/auditscore/")


def project_files(root: Path) -> list[str]:
    """Repository-relative paths of the files to copy: tracked or untracked-but-not-ignored,
    under :data:`COPIED`; plus the compiled kernels built in place (``dptaucc/_native*``).

    >>> import subprocess, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     root = Path(d)
    ...     _ = subprocess.run(["git", "init", "-q", d], check=True)
    ...     (root / "dptaucc").mkdir()
    ...     _ = (root / "dptaucc" / "core.py").write_text("X = 1")
    ...     _ = (root / "notes.txt").write_text("not under COPIED")
    ...     project_files(root)
    ['dptaucc/core.py']
    """
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=root, check=True, capture_output=True, text=True).stdout
    files = [p for p in listed.splitlines()
             if p.startswith(COPIED) and (root / p).is_file()]
    files += [p.relative_to(root).as_posix() for p in (root / "dptaucc").glob("_native*")
              if p.suffix in (".so", ".pyd")]
    return sorted(set(files))


def tree_hash(root: Path, files: Sequence[str] | None = None) -> str:
    """SHA-1 of the paths and bytes of the files a verdict depends on (16 hex digits): the
    key under which results are stored, so a changed tree never reuses an old verdict.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     code = Path(d) / "core.py"
    ...     _ = code.write_text("X = 1")
    ...     before = tree_hash(Path(d), ["core.py"])
    ...     _ = code.write_text("X = 2")
    ...     after = tree_hash(Path(d), ["core.py"])
    >>> len(before), before != after
    (16, True)
    """
    h = hashlib.sha1()
    for rel in files if files is not None else project_files(root):
        if rel.startswith(NOT_HASHED) or "/_native" in rel:
            continue
        h.update(rel.encode() + b"\0")
        h.update((root / rel).read_bytes())
    return h.hexdigest()[:16]


@dataclass
class RunResult:
    """How a command ended: its exit code (None when killed at the time limit), seconds,
    and the tail of its output.

    >>> RunResult(None, 900.0, "").timed_out, RunResult(3, 12.5, "violation").timed_out
    (True, False)
    """

    returncode: int | None
    seconds: float
    output: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run(argv: Sequence[str], *, cwd: Path, env: dict, timeout: float) -> RunResult:
    """Run ``argv`` in a new process group; after ``timeout`` seconds kill the whole group
    (SIGTERM, then SIGKILL 10 s later) and report ``returncode=None``.

    >>> here, env = Path.cwd(), dict(os.environ)
    >>> done = run([sys.executable, "-c", "print('hi')"], cwd=here, env=env, timeout=60)
    >>> done.returncode, done.output.strip()
    (0, 'hi')
    >>> hung = run([sys.executable, "-c", "import time; time.sleep(60)"], cwd=here, env=env,
    ...            timeout=0.5)
    >>> hung.returncode, hung.seconds < 30
    (None, True)
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 30.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # whatever the command left in its group (workers, Octave) goes with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    return RunResult(code, time.perf_counter() - start, text[-4000:])


class ScratchTree:
    """A private copy of the project (``with ScratchTree(root) as tree: ...``).

    >>> import subprocess
    >>> with tempfile.TemporaryDirectory() as d:
    ...     root = Path(d)
    ...     _ = subprocess.run(["git", "init", "-q", d], check=True)
    ...     (root / "dptaucc").mkdir()
    ...     _ = (root / "dptaucc" / "core.py").write_text("X = 1")
    ...     with ScratchTree(root) as tree:
    ...         copied = (tree.copy / "dptaucc" / "core.py").read_text()
    ...         viewed = (tree.view / "dptaucc" / "core.py").read_text()
    ...         scratch = tree.dir
    ...     copied, viewed, scratch.exists()  # the copy is deleted on exit
    ('X = 1', 'X = 1', False)
    """

    def __init__(self, root: Path, parent: Path | None = None):
        self.root = Path(root).resolve()
        self.parent = parent
        self.files = project_files(self.root)
        self.hash = tree_hash(self.root, self.files)
        self.dir: Path | None = None

    def __enter__(self) -> ScratchTree:
        if self.parent is not None:
            self.parent.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix="dptaucc-mutants-", dir=self.parent))
        for rel in self.files:
            target = self.copy / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.root / rel, target)
        for name in ("baselines", "datasets", "conf"):  # the installed layout, in the copy
            (self.copy / "dptaucc" / name).symlink_to(self.copy / name)
        self.view.mkdir(parents=True)
        (self.view / "dptaucc").symlink_to(self.copy / "dptaucc")
        return self

    def __exit__(self, *exc) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    @property
    def copy(self) -> Path:
        assert self.dir is not None, "use ScratchTree in a with block"
        return self.dir / "tree"

    @property
    def view(self) -> Path:
        assert self.dir is not None, "use ScratchTree in a with block"
        return self.dir / "view"

    @property
    def out(self) -> Path:
        """A results folder for the commands (emptied per mutant by the caller)."""
        return self.dir / "results"

    def env(self, extra: dict | None = None) -> dict:
        """The environment of every command: the view first on the path, no bytecode cache,
        one thread per numerical library, a results folder inside the scratch."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE")}
        env.update({"PYTHONPATH": str(self.view), "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONNOUSERSITE": "1", "DPTAUCC_RESULTS_DIR": str(self.out),
                    "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                    "MKL_NUM_THREADS": "1"})
        env.update(extra or {})
        return env

    def python(self) -> str:
        return sys.executable

    @contextlib.contextmanager
    def mutated(self, mutant: Mutant) -> Iterator[Path]:
        """Write ``mutant`` into the copy; the original bytes are back when the block ends
        (checked: a copy that cannot be restored raises and must not be used again)."""
        path = self.copy / mutant.path
        original = path.read_bytes()
        digest = hashlib.sha1(original).digest()
        try:
            path.write_text(mutant.apply(original.decode("utf-8")), encoding="utf-8")
            yield path
        finally:
            path.write_bytes(original)
            if hashlib.sha1(path.read_bytes()).digest() != digest:
                raise RuntimeError(f"could not restore {mutant.path} in the scratch copy")

    def imports_from_view(self, timeout: float = 120.0) -> bool:
        """Whether ``dptaucc`` and ``dptaucc.baselines`` import from the copy (not the
        working tree's editable install): the precondition of every verdict."""
        code = ("import dptaucc, dptaucc.baselines.dp_kmeans as k, dptaucc.privacy.mechanisms "
                "as m; print(m.__file__); print(k.__file__)")
        res = run([self.python(), "-c", code], cwd=self.copy, env=self.env(), timeout=timeout)
        lines = res.output.split()
        return res.returncode == 0 and len(lines) >= 2 and all(
            Path(line).resolve().is_relative_to(self.copy.resolve()) for line in lines[-2:])
