"""A git revision of this repository checked out beside the working tree, for benchmarks that
measure the current code and an older revision side by side in one run."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
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
            yield str(where)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                           capture_output=True)
