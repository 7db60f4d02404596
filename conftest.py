"""pytest setup for the whole suite: import the project only through its one import root.

``python -m pytest`` puts the repository root on ``sys.path``, where the folders ``datasets/``
and ``baselines/`` would import as top-level packages. They are installed as
``dptaucc.datasets`` and ``dptaucc.baselines`` only, so the root is taken off the path: a
stray ``import datasets`` in the suite then fails here as it would for a user.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent


def _is_repo_root(entry: str) -> bool:
    try:
        return Path(entry or os.getcwd()).resolve() == REPO
    except OSError:
        return False


sys.path[:] = [p for p in sys.path if not _is_repo_root(p)]


# ---------------------------------------------------------------- another CPU's float kernels
def pytest_addoption(parser):
    parser.addoption(
        "--other-float-kernels", action="store_true",
        help="run as on a CPU whose numpy kernels round differently: every inexact float result "
             "of np.exp, np.log, np.log1p, np.expm1, np.cbrt, np.power and numpy's other "
             "CPU-dependent functions moves by one ulp or not at all, a fixed function of the "
             "result and of the test (dptaucc.testing.other_float_kernels); a test that pins "
             "such floats exactly fails")


def pytest_configure(config):
    if config.getoption("--other-float-kernels"):
        from dptaucc.testing import other_float_kernels

        config._other_float_kernels = other_float_kernels()


def pytest_runtest_setup(item):
    kernels = getattr(item.config, "_other_float_kernels", None)
    if kernels is not None:  # each test its own kernel, the same in every run
        import zlib

        kernels.reseed(zlib.crc32(item.nodeid.encode()) * 0x100000001)
