"""Every ```python block of README.md and docs/*.md runs, as a user would run it.

Blocks run in a fresh interpreter from an empty temporary directory (a user's examples must
not depend on where they run: the committed ``results/`` tables are found through
``dptaucc.bench.collect.read_table``), with the data mirror or cache the rest of the suite
uses. A block that defines functions is then called by the check registered for it below.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

#: code run after a block, keyed by a line of the block (a block that only defines things)
AFTER = {
    "def load_my_data(folder, min_count=1):": textwrap.dedent("""
        import tempfile
        folder = Path(tempfile.mkdtemp())
        sp.save_npz(folder / "counts.npz", sp.csr_matrix(np.array([[3, 1], [0, 2], [1, 1]])))
        (folder / "labels.txt").write_text("a\\nb\\na\\n")
        data = load_my_data(folder, min_count=2)
        assert data.X.toarray().tolist() == [[3, 0], [0, 2], [0, 0]]
        assert data.row_labels.tolist() == [0, 1, 0]
        """),
}
#: blocks that read the CLUTO matrices
NEEDS_DATA = ("datasets.load(",)


def _blocks():
    for page in PAGES:
        for i, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            yield pytest.param(match.group(1), id=f"{page.relative_to(REPO)}#{i + 1}")


BLOCKS = list(_blocks())


def test_the_docs_have_python_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS)
def test_python_block_runs(code, tmp_path):
    if any(k in code for k in NEEDS_DATA):
        mirror = os.environ.get("DPTAUCC_MIRROR", "")
        if not (Path(mirror) / "MANIFEST.tsv").is_file():
            pytest.skip("needs the CLUTO data mirror (DPTAUCC_MIRROR; `make test` sets it)")
    after = "".join(check for key, check in AFTER.items() if key in code)
    env = {**os.environ, "DPTAUCC_DATA_DIR": str(tmp_path / "data")}  # this test's data cache
    env.pop("DPTAUCC_RESULTS_DIR", None)
    (tmp_path / "cwd").mkdir()
    out = subprocess.run([sys.executable, "-c", code + "\n" + after], cwd=tmp_path / "cwd",
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
