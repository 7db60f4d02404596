"""Run the DPHD Octave code (the ``*.m`` files next to this module) in a ``octave-cli`` subprocess.

One subprocess per fit: the inputs go to a fresh temporary directory as a ``.mat`` file holding
the SPARSE matrix (scipy ``savemat``; Octave loads it as a sparse matrix, no dense copy is ever
written), Octave writes its results to a ``.mat`` file in the same directory, and the directory
is removed afterwards. A failing Octave run raises :class:`OctaveError` with Octave's message;
output files of earlier runs can never be read (unlike the authors' harness, which ignored the
return code and read stale ``out_labels.mat``). Start-up costs about 0.2 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import scipy.io as sio

__all__ = ["OCTAVE_EXECUTABLE", "OctaveError", "OctaveNotFoundError", "find_octave", "run_dphd"]

#: Program used to run Octave; override with the environment variable ``DPTAUCC_OCTAVE`` or by
#: assigning this attribute (read at every fit).
OCTAVE_EXECUTABLE: str = os.environ.get("DPTAUCC_OCTAVE", "octave-cli")

M_FILES_DIR = Path(__file__).resolve().parent


class OctaveNotFoundError(RuntimeError):
    """GNU Octave is not installed (or not where the wrapper was told to look)."""


class OctaveError(RuntimeError):
    """The Octave process failed; the message carries Octave's own error text."""


def find_octave(executable: str | None = None) -> str:
    """Full path of the Octave program, or :class:`OctaveNotFoundError` naming it."""
    name = executable if executable is not None else OCTAVE_EXECUTABLE
    path = shutil.which(name)
    if path is None:
        raise OctaveNotFoundError(
            f"GNU Octave (octave-cli) not found: {name!r} is not an executable program on PATH. "
            "DPHD runs in Octave; install it with `apt-get install octave` "
            "(or point the environment variable DPTAUCC_OCTAVE at octave-cli)."
        )
    return path


def _octave_str(path: Path) -> str:
    """A path as an Octave single-quoted string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def run_dphd(inputs: dict, timeout: float | None = None) -> dict:
    """Run ``dphd_main`` on ``inputs`` (names as ``dphd_main.m`` expects) and return its outputs."""
    exe = find_octave()
    with tempfile.TemporaryDirectory(prefix="dphd-") as tmp:
        inp = Path(tmp) / "in.mat"
        out = Path(tmp) / "out.mat"
        sio.savemat(inp, inputs, do_compression=False, oned_as="column")
        script = (
            f"addpath({_octave_str(M_FILES_DIR)}); "
            f"try, dphd_main({_octave_str(inp)}, {_octave_str(out)}); "
            "catch err, fprintf(2, 'DPHD-OCTAVE-ERROR: %s\\n', err.message); "
            "for s = err.stack', fprintf(2, '  at %s line %d\\n', s.name, s.line); end; "
            "exit(1); end"
        )
        cmd = [exe, "--norc", "--quiet", "--no-history", "--no-window-system", "--eval", script]
        try:
            # cwd = the temp dir: a killed Octave dumps 'octave-workspace' there, not in ours
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  check=False, cwd=tmp)
        except FileNotFoundError as exc:  # vanished between which() and run()
            raise OctaveNotFoundError(f"GNU Octave (octave-cli) not found: {exc}") from exc
        if proc.returncode != 0 or not out.exists():
            err = "\n".join(line for line in proc.stderr.splitlines()
                            if "preparing to exit" not in line).strip()
            raise OctaveError(
                f"Octave failed (exit code {proc.returncode}) running DPHD: "
                f"{err or proc.stdout.strip() or 'no output file written'}"
            )
        return sio.loadmat(out, simplify_cells=True)
