"""Where a run's time went: core-seconds per experiment and per method (reproduce.json)."""

from __future__ import annotations

import pytest

from dptaucc.bench.costs import cost_lines, cost_summary, method_totals
from dptaucc.bench.outcomes import Outcome


def _ran(alg, seconds, fit, ev):
    return Outcome("ran", "ok", algorithm=alg, seconds=seconds, fit_seconds=fit,
                   eval_seconds=ev)


def test_cost_summary_sums_the_jobs_that_ran_per_method():
    outs = [_ran("dp_taucc", 1.0, 0.5, 0.1), _ran("dp_taucc", 1.0, 0.5, 0.1),
            _ran("dphd", 2.0, 1.5, 0.2), Outcome("skipped", "ok", algorithm="dphd")]
    c = cost_summary(outs, wall_seconds=3.0, workers=2)
    assert (c["jobs"], c["job_s"], c["fit_s"], c["eval_s"]) == (3, 4.0, 2.5, 0.4)
    assert (c["core_s"], c["outside_jobs_s"]) == (6.0, 2.0)
    assert c["methods"]["dp_taucc"] == {"jobs": 2, "job_s": 2.0, "fit_s": 1.0, "eval_s": 0.2}
    assert cost_summary(outs, 3.0, None)["core_s"] is None  # a cluster: no workers x wall
    log = {"experiments": {"a": {"seconds": 3.0, "core_seconds": c},
                           "b": {"seconds": 1.0, "core_seconds": cost_summary(outs[2:], 1.0, 1)}}}
    totals = method_totals(log["experiments"])
    assert list(totals) == ["dphd", "dp_taucc"]  # most time first
    assert totals["dphd"]["jobs"] == 2 and totals["dphd"]["job_s"] == pytest.approx(4.0)
    text = "\n".join(cost_lines(log))
    assert "| a | 3 | 3.0 | 2 | 6.0 | 4.0 | 2.5 | 0.4 | 2.0 |" in text
    assert "| dphd | 2 | 4.0 | 3.0 | 0.4 | 2000.0 |" in text
    assert cost_lines({"experiments": {"a": {"seconds": 1.0}}}) == []  # an older log
