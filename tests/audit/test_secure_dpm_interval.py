"""DPM's interval release on the secure path: a replay forces the released grid point, so the
split that follows is the same choice on D and D'.

Smith's quantile picks an interval by the exponential mechanism, then a grid point inside it
with the mechanism's own randomness (from the OS on the secure path). Forcing only the
interval's index left that point to fresh randomness on each side, so σ and the split grid
differed between D and D' (800 against 2280 candidates) and the secure call-site audit of the
split reported a violation of a correct fit (ε_lower 5.2 against a charge of 0.72)."""

from __future__ import annotations

from dptaucc.audit.experiment import AuditJob
from dptaucc.audit.methods import call_site_setup


def test_the_recorded_interval_release_is_the_grid_point_not_the_intervals_index():
    import numpy as np
    from dptaucc.baselines.dpm.core import SCALE
    from dptaucc.baselines.dpm.interval import public_grid

    from dptaucc.audit.transcript import record

    setup = call_site_setup("dpm")[0]
    build = AuditJob("dpm", "corrected", None, 1, scope="call-site", secure=True).factory(
        setup.params)
    calls = record(build(0), setup.pair.D)
    [interval] = [c for c in calls if c.step == "interval_size"]
    out = np.asarray(interval.output)
    assert out.dtype.kind == "f" and out.size == 1, out
    assert (float(out[0]) / public_grid(0.0, 2.0 * SCALE)).is_integer()  # a public grid point
