"""Colored noise's audit scenarios (``METHOD.audit``): worst-case pairs, events, known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``moving_row`` with 200 rows per cluster (accurate centres, so row u's label follows
u): labels from the raw rows. Call sites on ``added_row`` (ε = 4, δ = 0.5, one iteration): the
added row, normalised to norm 1, moves its cluster's released (sum, count) block by (y, 1),
exactly the change the public-domain covariance is calibrated for.
"""

from __future__ import annotations

from dptaucc.audit.bugs import Bug
from dptaucc.audit.pairs import added_row, moving_row
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios"]


def _gamma_delta_ignored(original):
    def buggy(epsilon, delta, calibration="analytic"):
        return original(epsilon, 0.5, calibration)  # "δ only matters for tiny ε"
    return buggy


_COLORED = "dptaucc.baselines.colored_noise.estimator"

BUGS = (
    Bug("colored_noise.delta_ignored", "colored_noise", "δ ignored",
        "the covariance calibrated for δ = 0.5 whatever δ the ledger records",
        ((_COLORED, "gamma_of", _gamma_delta_ignored),)),
    Bug("colored_noise.scale_halved", "colored_noise", "noise scale off by 2",
        "the (sum, count) blocks' noise variances a quarter of the calibrated ones (σ halved)",
        ((_COLORED, "public_domain_variances",
          lambda original: lambda *args, **kwargs: original(*args, **kwargs) / 4),)),
)


def scenarios() -> AuditScenarios:
    """Colored noise's audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, len(s.bugs)
    ('moving_row', 'added_row', 2)
    """
    p = moving_row(n_per_cluster=200)  # many rows: accurate centres, so row u's label follows u
    return AuditScenarios(
        (Scenario(p, label_events(p),
                  "a row balanced between two large clusters: labels from the raw rows"),),
        (CallSiteSetup(added_row(), (("epsilon", 4.0), ("delta", 0.5), ("n_iter", 1)),
                       max_calls=1),), BUGS)
