"""Colored noise's audit scenarios (``METHOD.audit``): worst-case pairs, events, known bugs.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``moving_row`` with 200 rows per cluster (accurate centres, so row u's label follows
u): labels from the raw rows. The power scenario (:func:`power_scenario`): ``moved_count`` with
64 columns, one cluster, one iteration, ε = :data:`POWER_EPSILON`, δ = :data:`POWER_DELTA`:
row u (normalised) is e₀ on D and e₁ on D', so the one released sum block moves by e₀ − e₁,
the largest move a replaced non-negative row makes, and two fixed events
(:func:`sum_difference_above`) read it along that direction (the sufficient statistic: the
noise is isotropic over the sum coordinates): above :data:`POWER_THRESHOLD` standard
deviations of the correct noise (the power), and above ½, between the exact values +1 (D)
and −1 (D') of a release left without noise.
Why this is the worst case: with one iteration the whole budget is on one release and the
partition is data-independent, so nothing but the changed row moves; with one cluster its
block is known in advance; the count does not move under replacement. It reaches about 0.6 of
the claim at the population level, not the claim: a cell-level ε is two add/remove steps at
ε/2 (group privacy), which a Gaussian composes more tightly than the ledger charges.

Call sites on ``added_row`` (ε = 4, δ = 0.5, one iteration): the
added row, normalised to norm 1, moves its cluster's released (sum, count) block by (y, 1),
exactly the change the public-domain covariance is calibrated for; once with the default
full covariance and once with ``noise="white"`` (paper Thm. 3's isotropic variances), so that
both calibrations are audited at their call and checked by the ledger's privacy map.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.bugs import Bug, after_fit, with_arguments
from dptaucc.audit.pairs import added_row, moved_count, moving_row
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios", "power_scenario", "sum_difference_above"]


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


#: the power scenario's claim: ε (δ large enough that a few thousand fits can see the
#: Gaussian's loss: at δ = 1e-5 it shows only in tails no quick audit samples)
POWER_EPSILON = 4.0
POWER_DELTA = 0.02
#: columns of its pair (the sums' share of a block's noise grows with √p/(√p + 1))
POWER_COLUMNS = 64
#: its threshold, in standard deviations of the difference's noise
POWER_THRESHOLD = 1.5


def _sum_difference_sd(epsilon: float, delta: float, p: int) -> float:
    """Standard deviation of ``sums[0, 0] − sums[0, 1]`` in a correct one-iteration fit at
    (ε, δ) with p embedded columns: √(2a), a the sums' variance of
    :func:`~dptaucc.baselines.colored_noise.estimator.public_domain_variances` for the
    add/remove budget of :func:`~dptaucc.baselines.dpm.neighbours.row_level_budget`."""
    from dptaucc.baselines.colored_noise.estimator import gamma_of, public_domain_variances
    from dptaucc.baselines.dpm.neighbours import row_level_budget

    eps_row, delta_row = row_level_budget(epsilon, delta)
    variance = public_domain_variances(p, gamma_of(eps_row, delta_row, "analytic"), "diag")[0]
    return math.sqrt(2.0 * variance)


def sum_difference_above(threshold: float) -> ev.Event:
    """The first cluster's released sum in column 0 exceeds its sum in column 1 by more than
    ``threshold`` (on D row u adds 1 to column 0, on D' to column 1).

    >>> from types import SimpleNamespace
    >>> event = sum_difference_above(1.0)
    >>> event(SimpleNamespace(cluster_sums_=np.array([[2.5, 1.0]]))), event.name
    (True, 'cluster_sums_[0, 0] − cluster_sums_[0, 1] > 1')
    """
    return ev.Event(f"cluster_sums_[0, 0] − cluster_sums_[0, 1] > {threshold:.3g}",
                    lambda m: m.cluster_sums_[0, 0] - m.cluster_sums_[0, 1] > threshold,
                    needs=("cluster_sums_",))


def power_scenario() -> Scenario:
    """The power scenario (module docstring): one cluster, one iteration, ε =
    :data:`POWER_EPSILON`, δ = :data:`POWER_DELTA`; two fixed events, :data:`POWER_THRESHOLD`
    standard deviations of the correct noise above 0 (D's mean is +1, D''s −1), and ½.

    >>> s = power_scenario()
    >>> s.pair.name, dict(s.params)["n_clusters"], s.derive, [e.name[-6:] for e in s.events]
    ('moved_count', 1, False, ['> 2.98', ' > 0.5'])
    """
    pair = moved_count(n_cols=POWER_COLUMNS)
    sd = _sum_difference_sd(POWER_EPSILON, POWER_DELTA, POWER_COLUMNS)
    return Scenario(pair, (sum_difference_above(POWER_THRESHOLD * sd),
                           sum_difference_above(0.5)),
                    "row u's count moves from column 0 to 1 (e₀ → e₁ after normalisation), one "
                    "cluster, one iteration: the one release moves by e₀ − e₁; two fixed "
                    "events, many cheap fits (the power scenario)",
                    share=12.0, derive=False, modes=("corrected",),
                    params=(("n_clusters", 1), ("n_iter", 1), ("epsilon", POWER_EPSILON),
                            ("delta", POWER_DELTA)))


def exact_sizes_scenario() -> Scenario:
    """One row added, one cluster, one iteration: D's exact cluster size is n, D''s n + 1, so
    centres divided by the exact size equal ``cluster_sums_ / n`` on every fit on D and on
    none on D' (the released counts are Gaussian: the correct code never gives that equality).

    >>> s = exact_sizes_scenario()
    >>> s.pair.name, dict(s.params)["n_clusters"], [e.name for e in s.events][1]
    ('added_row', 1, 'cluster_centers_ = cluster_sums_ / exact sizes of D')
    """
    pair = added_row(n_per_cluster=50)
    return Scenario(pair, _recomputed(pair.D)[:2],
                    "one row added, one cluster: the exact size moves by one, so a division "
                    "by exact sizes after the mechanism shows on every fit",
                    share=0.5, derive=False, modes=("corrected",),
                    params=(("n_clusters", 1), ("n_iter", 1)))


def scenarios() -> AuditScenarios:
    """Colored noise's audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, len(s.bugs)
    ('moving_row', 'added_row', 4)
    >>> [dict(setup.params).get("noise", "full") for setup in s.call_sites]
    ['full', 'white']
    """
    p = moving_row(n_per_cluster=200)  # many rows: accurate centres, so row u's label follows u
    return AuditScenarios(
        (Scenario(p, (*_recomputed(p.D), *label_events(p)),
                  "a row balanced between two large clusters: labels, counts and centres from "
                  "the raw rows"), power_scenario(), exact_sizes_scenario()),
        (CallSiteSetup(added_row(), (("epsilon", 4.0), ("delta", 0.5), ("n_iter", 1)),
                       max_calls=1),
         CallSiteSetup(added_row(), (("epsilon", 4.0), ("delta", 0.5), ("n_iter", 1),
                                     ("noise", "white")), max_calls=1)), BUGS)
