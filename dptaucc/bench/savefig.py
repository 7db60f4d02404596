"""Writing a matplotlib figure in the suite's formats (shared by the benchmark's and the
audit's figures, so neither report module imports the other's figures)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["save_figure"]


def save_figure(fig, out_dir: Path, name: str, formats: Sequence[str] = ("pdf", "png")
                ) -> list[Path]:
    """Save ``fig`` as ``out_dir/name.<ext>`` for every format, close it, return the paths.

    >>> import tempfile
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], [1, 0])
    >>> paths = save_figure(fig, Path(tempfile.mkdtemp()) / "figures", "line")
    >>> [p.name for p in paths], all(p.stat().st_size > 0 for p in paths)
    (['line.pdf', 'line.png'], True)
    >>> plt.fignum_exists(fig.number)  # closed
    False
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in formats:
        p = out_dir / f"{name}.{ext}"
        fig.savefig(p, dpi=130 if ext == "png" else None, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths
