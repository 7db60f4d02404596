"""An estimator that sleeps in ``fit`` while a flag file exists (``SLOW_FIT_FLAG``), so that a
test can catch its cluster task running or pending, then rerun the same jobs at full speed."""

from __future__ import annotations

import os
import time

from dptaucc import DPTauCC


class SlowWhileFlagged(DPTauCC):
    def fit(self, X, y=None):
        flag = os.environ.get("SLOW_FIT_FLAG")
        if flag and os.path.exists(flag):
            time.sleep(float(os.environ.get("SLOW_FIT_S", "20")))
        return super().fit(X, y)
