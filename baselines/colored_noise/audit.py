"""Colored noise's audit scenarios (``METHOD.audit``): worst-case pairs, events, known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``moving_row`` with 200 rows per cluster (accurate centres, so row u's label follows
u): labels from the raw rows. Call sites on ``added_row`` (ε = 4, δ = 0.5, one iteration): the
added row, normalised to norm 1, moves its cluster's released (sum, count) block by (y, 1),
exactly the change the public-domain covariance is calibrated for.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import Bug, after_fit, with_arguments
from dptaucc.audit.pairs import added_row, moving_row
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios"]


def _gamma_delta_ignored(original):
    def buggy(epsilon, delta, calibration="analytic"):
        return original(epsilon, 0.5, calibration)  # "δ only matters for tiny ε"
    return buggy


def _thirty_percent_more_epsilon(arguments) -> None:
    arguments["epsilon"] = 1.3 * arguments["epsilon"]


def _centres_over_exact_sizes(model, X) -> None:
    """The released centres: the noisy sums over the exact sizes of the fitted rows'
    clusters."""
    k = model.cluster_centers_.shape[0]
    model.cluster_centers_ = model.cluster_sums_ / np.maximum(
        ev.sizes_of_assignment(model, X, k), 1)[:, None]


_COLORED = "dptaucc.baselines.colored_noise.estimator"

BUGS = (
    Bug("colored_noise.delta_ignored", "colored_noise", "δ ignored",
        "the covariance calibrated for δ = 0.5 whatever δ the ledger records",
        ((_COLORED, "gamma_of", _gamma_delta_ignored),)),
    Bug("colored_noise.scale_halved", "colored_noise", "noise scale off by 2",
        "the (sum, count) blocks' noise variances a quarter of the calibrated ones (σ halved)",
        ((_COLORED, "public_domain_variances",
          lambda original: lambda *args, **kwargs: original(*args, **kwargs) / 4),)),
    # written for issue 33 after the audit's power work, to check it
    Bug("colored_noise.centres_over_exact_sizes", "colored_noise", "exact input after a call",
        "the released centres: noisy sums divided by the exact sizes of the fitted rows' "
        "clusters", ((_COLORED + ":ColoredNoiseKMeans", "fit",
                      after_fit(_centres_over_exact_sizes)),)),
    Bug("colored_noise.gamma_slip", "colored_noise", "privacy map slip",
        "the covariance calibrated for 1.3 ε while the ledger records ε",
        ((_COLORED, "gamma_of", with_arguments(_thirty_percent_more_epsilon)),)),
)


def _recomputed(D) -> tuple[ev.Event, ...]:
    """Each release recomputed from D the non-private way, under the released centres'
    assignment of D's (embedded) rows: the counts as exact sizes, the centres as the released
    sums over those exact sizes (a division by exact counts after a correct mechanism call),
    and as exact means."""
    def sizes(m):
        return ev.sizes_of_assignment(m, D, m.cluster_centers_.shape[0])

    def sums_over_sizes(m):
        return m.cluster_sums_ / np.maximum(sizes(m), 1)[:, None]

    def means(m):
        rows, labels = m.embedding_.apply(D), m.predict(D)
        rows = np.asarray(rows.toarray() if sp.issparse(rows) else rows, dtype=float)
        centres = np.array(m.cluster_centers_, dtype=float)
        for j in np.unique(labels):
            centres[j] = rows[labels == j].mean(axis=0)
        return centres
    return (ev.attribute_equals("cluster_counts_", sizes, rtol=1e-9,
                                name="cluster_counts_ = exact sizes of D"),
            ev.attribute_equals("cluster_centers_", sums_over_sizes, rtol=1e-9,
                                name="cluster_centers_ = cluster_sums_ / exact sizes of D"),
            ev.attribute_equals("cluster_centers_", means, rtol=1e-7,
                                name="cluster_centers_ = exact means of D's rows"))


def scenarios() -> AuditScenarios:
    """Colored noise's audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, len(s.bugs)
    ('moving_row', 'added_row', 4)
    """
    p = moving_row(n_per_cluster=200)  # many rows: accurate centres, so row u's label follows u
    return AuditScenarios(
        (Scenario(p, (*_recomputed(p.D), *label_events(p)),
                  "a row balanced between two large clusters: labels, counts and centres from "
                  "the raw rows"),),
        (CallSiteSetup(added_row(), (("epsilon", 4.0), ("delta", 0.5), ("n_iter", 1)),
                       max_calls=1),), BUGS)
