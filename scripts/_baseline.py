"""A git revision of this repository checked out beside the working tree, for benchmarks that
measure the current code and an older revision side by side in one run."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def baseline_tree(rev: str | None) -> Iterator[str | None]:
    """Yield the path of a temporary worktree at ``rev`` (None: yield None), removed after."""
    if not rev:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
        where = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev],
                       check=True, capture_output=True)
        try:
            _build_compiled_kernels(where, Path(tmp) / "wheel")
            yield str(where)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                           capture_output=True)


def _build_compiled_kernels(tree: Path, scratch: Path) -> None:
    """A revision with compiled kernels gets them built, as an install would (the wheel's
    modules copied into its source tree); a revision without them, or a failed build, runs its
    numpy path (said on stderr)."""
    if not (tree / "dptaucc" / "_native.c").exists():
        return
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(scratch), str(tree)], capture_output=True, text=True)
    wheels = list(scratch.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        print(f"baseline: the compiled kernels were not built ({done.stderr.strip()[-300:]});"
              " it runs its numpy kernels", file=sys.stderr)
        return
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in wheel.namelist():
            if name.startswith("dptaucc/_native") and name.endswith((".so", ".pyd")):
                (tree / name).write_bytes(wheel.read(name))
