"""Estimators that misbehave on purpose, as ``algorithm._target_`` of test jobs.

They subclass DP-τCC so that the jobs that do not misbehave produce ordinary records. The
module is importable by name (``fake_estimators``) from tests/bench, by loky workers (they
inherit sys.path) and by subprocesses given ``PYTHONPATH=tests/bench``.
"""

from __future__ import annotations

import numbers
import os
import signal
import time

from sklearn.utils._param_validation import Interval

from dptaucc import DPTauCC


class FailsAtHighEpsilon(DPTauCC):
    """Raises in ``fit`` when ε > 1: a runtime failure that no config check can foresee."""

    def fit(self, X, y=None):
        if self.epsilon > 1:
            raise RuntimeError(f"boom at epsilon={self.epsilon}")
        return super().fit(X, y)


class KillsItselfAtHighEpsilon(DPTauCC):
    """SIGKILLs its own process in ``fit`` when ε > 1, like the out-of-memory killer."""

    def fit(self, X, y=None):
        if self.epsilon > 1:
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(5)
        return super().fit(X, y)


class CtrlCInFit(DPTauCC):
    """Sends SIGINT to its own process group in ``fit``, as Ctrl-C in a terminal does."""

    def fit(self, X, y=None):
        os.killpg(os.getpgid(0), signal.SIGINT)
        time.sleep(5)
        return super().fit(X, y)


class Constrained(DPTauCC):
    """Declares scikit-learn ``_parameter_constraints``, including one the harness's generic
    table does not know (``n_iterations`` at most 6)."""

    _parameter_constraints: dict = {
        "n_iterations": [Interval(numbers.Integral, 1, 6, closed="both")],
        "h": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_row_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_col_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "mode": [str],
        "random_state": ["random_state"],
    }


class TimeLimitInFit(DPTauCC):
    """Sends itself SIGUSR2 in ``fit`` when ε > 1, as submitit's warning before a SLURM task's
    time limit."""

    def fit(self, X, y=None):
        if self.epsilon > 1:
            os.kill(os.getpid(), signal.SIGUSR2)
            time.sleep(5)
        return super().fit(X, y)
