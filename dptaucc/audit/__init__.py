"""Empirical privacy audit: ε lower bounds for any estimator from neighbouring pairs.

``audit(estimator, D, D_prime, events, n_fits=…)`` fits the estimator many times on D and on
its neighbour D' (one count more in one cell), counts how often each event occurs on each
side, and turns the counts into a simultaneous 95 % lower bound ``epsilon_lower`` on the
privacy loss (one-sided Clopper–Pearson intervals, Bonferroni over every event, complement
and direction). It is a lower bound: it can expose a privacy bug (``epsilon_lower`` above the
claimed ε), never prove privacy, and it is only as strong as its events and its number of fits.

Two more layers, for more power (docs/audit.md): :func:`audit_release` derives events from
every release a model declares; :func:`audit_call_site` audits one mechanism call of a fit
(given the outputs of the calls before it) against the ε its ledger charged.

Building blocks: :mod:`~dptaucc.audit.pairs` (neighbouring pairs), :mod:`~dptaucc.audit.events`
(events on fitted models), :mod:`~dptaucc.audit.reachability` (float reachability of numpy's
Laplace sampler), :mod:`~dptaucc.audit.stats` (the bounds). :mod:`~dptaucc.audit.methods`
holds the pairs and events aimed at each estimator of the suite; ``python -m dptaucc.audit``
runs them all (the ``[bench]`` extra is needed for its table and figure).
"""

from .callsite import CallSiteResult, audit_call_site, call_sites
from .endtoend import ReleaseResult, audit_release, release_views
from .events import AuditEventError, Event
from .pairs import PAIRS, NeighbouringPair, make_pair
from .runner import FIT_RAISED, AuditResult, audit, fit_seed
from .stats import cp_lower, cp_upper, epsilon_lower_bound

__all__ = [
    "audit", "AuditResult", "AuditEventError", "Event", "NeighbouringPair", "PAIRS",
    "make_pair", "FIT_RAISED", "fit_seed", "cp_lower", "cp_upper", "epsilon_lower_bound",
    "audit_release", "ReleaseResult", "release_views", "audit_call_site", "CallSiteResult",
    "call_sites",
]
