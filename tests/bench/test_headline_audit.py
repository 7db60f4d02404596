"""The headline's audit line: the verdict per mode and the audit's measured power."""

from __future__ import annotations

import pandas as pd

from dptaucc.bench.headline import _power_line


def test_power_line_counts_detected_bugs_and_false_alarms(tmp_path):
    rows = [("(correct code)", "dp_taucc", False), ("dp_taucc.a", "dp_taucc", True),
            ("dp_taucc.b", "dp_taucc", False), ("(correct code)", "dpnmf", True),
            ("dpnmf.a", "dpnmf", False)]
    path = tmp_path / "audit_power.parquet"
    pd.DataFrame(rows, columns=["bug", "method", "detected"]).to_parquet(path)
    line = _power_line(path)
    assert "1 of 3 detected (DP-τCC 1/2, DPNMF 0/1)" in line
    assert "false alarms on the correct code: 1 of 2" in line
    assert _power_line(tmp_path / "missing.parquet") == ""
