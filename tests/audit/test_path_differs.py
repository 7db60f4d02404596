"""A call-site audit forces every mechanism output before call k to one recorded history on
both D and D' (the same seed a side): the fit's path (its calls' steps and shapes) can then
differ between the sides only if something other than a mechanism's output steers it by the
data. A history that replays on D and diverges on D' is a violation ("path differs"), in the
sampled and in the redrawn call-site audits; a path steered by a release is not."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from toys import SteeredPath

from dptaucc.audit.callsite import audit_call_site
from dptaucc.audit.redrawn import audit_call_site_redrawn

D, D_PRIME = np.array([[3]]), np.array([[4]])  # the exact count crosses the threshold 3


@pytest.mark.parametrize("steer,violates", [("release", False), ("exact", True)])
def test_a_path_steered_by_the_exact_data_is_a_violation(steer, violates):
    build = functools.partial(SteeredPath, steer, 3)
    sampled = audit_call_site(build, D, D_PRIME, 2, n_fits=4000, alpha=0.05, n_histories=2,
                              n_pilot=200)
    redrawn = audit_call_site_redrawn(build, D, D_PRIME, 2, n_samples=4000, alpha=0.05,
                                      n_histories=2, n_pilot=200)
    for res in (sampled, redrawn):
        assert (res.verdict == "violation") is violates, (res.verdict, res.event)
        assert bool(res.path_differs) is violates
        if violates:
            assert "diverges on D'" in res.event and "'above'" in res.path_differs
        else:
            assert res.step == "last" and not np.isnan(res.epsilon_lower)
