"""DPM's audit scenarios (``METHOD.audit``): worst-case pairs and events.

Imported only by the audit (:mod:`dptaucc.audit.methods`); docs/audit.md explains each case.

End to end: ``all_zero_row`` with 201 rows (enough for the tree to split now and then): a row
with no counts moves across the split tree (float leaf counts, Mironov's test), labels.
Call sites on ``added_row`` (its calls are charged per added/removed row), ε = 200 so that the
tree's count calls are charged about 0.5 each: the added row moves the root count by its full
sensitivity 1; the quantile's interval index is skipped (an index into a data-dependent list).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dptaucc.audit import events as ev
from dptaucc.audit.pairs import NeighbouringPair, added_row, all_zero_row
from dptaucc.audit.reachability import laplace_reachable
from dptaucc.audit.scenarios import AuditScenarios, CallSiteSetup, Scenario, label_events

__all__ = ["scenarios", "leaf_sizes", "leaf_counts_reachable"]


def leaf_sizes(model, X) -> list[tuple[int, int]]:
    """(true size, depth) of every leaf of a fitted DPM, in ``leaf_counts_`` order, for the
    rows of X: the released split tree replayed on X's embedding.

    >>> from dptaucc.baselines.dpm import DPM
    >>> X = np.random.default_rng(0).poisson(2.0, size=(200, 10))
    >>> model = DPM(epsilon=50.0, n_components=None, random_state=0).fit(X)
    >>> sizes = leaf_sizes(model, X)
    >>> len(sizes) == len(model.leaf_counts_), sum(size for size, _ in sizes), sizes[0]
    (True, 200, (170, 1))
    """
    from dptaucc.baselines.dpm.core import SCALE

    Y = model._embed(sp.csr_matrix(X, dtype=np.float64), model.embedding_)
    lo, hi = model._box(Y.shape[1])
    Z = (Y - lo) * (2.0 * SCALE / (hi - lo)) - SCALE
    width = 2.0 * SCALE / model.n_bins_
    centres = -SCALE + (np.arange(model.n_bins_) + 0.5) * width
    unit = (hi - lo) / (2.0 * SCALE)
    splits = list(model.split_tree_)
    nodes = [np.arange(Z.shape[0])]
    leaves: list[tuple[int, int]] = []
    level = 0
    while nodes:
        here = [s for s in splits if s[0] == level]
        if not here:
            leaves += [(idx.size, level) for idx in nodes]
            break
        if len(here) != len(nodes):
            raise ValueError("split tree does not match the replayed nodes")
        nxt = []
        for idx, (_, dim, thr_box, used) in zip(nodes, here, strict=True):
            if not used:
                leaves.append((idx.size, level))
                continue
            thr = centres[np.argmin(np.abs(centres - ((thr_box - lo) / unit - SCALE)))]
            left = Z[idx, int(dim)] <= thr
            nxt += [idx[left], idx[~left]]
        nodes = nxt
        level += 1
    return leaves


def _ledger_count_scales(model) -> dict[int, float]:
    out = {}
    for e in model.privacy_ledger_.entries:
        if e.step.startswith("counts_level_") and "laplace" in e.mechanism:
            out[int(e.step.rsplit("_", 1)[1])] = 1.0 / e.epsilon
    return out


def leaf_counts_reachable(pair: NeighbouringPair) -> ev.Event:
    """Mironov's test on DPM's ``leaf_counts_``: some leaf whose true size differs between D
    and D' has a released (non-integer) count reachable as size_D + Laplace and not as
    size_D' + Laplace, at the scale its tree level was charged.

    >>> from dptaucc.baselines.dpm import DPM
    >>> pair = all_zero_row(n_per_cluster=100)
    >>> event = leaf_counts_reachable(pair)
    >>> model = DPM(epsilon=1.0, mode="paper", random_state=5).fit(pair.D_prime)
    >>> leaf_sizes(model, pair.D), leaf_sizes(model, pair.D_prime)  # row u changes leaf
    ([(101, 1), (100, 1)], [(100, 1), (101, 1)])
    >>> event.fn(model)  # both float counts reachable from either side: no evidence
    False
    """
    def fn(m):
        counts = np.asarray(m.leaf_counts_, dtype=float)
        on_d, on_dp = leaf_sizes(m, pair.D), leaf_sizes(m, pair.D_prime)
        scales = _ledger_count_scales(m)
        for y, (x_d, depth), (x_dp, _) in zip(counts, on_d, on_dp, strict=True):
            if x_d == x_dp or y == round(y):
                continue
            s = scales[depth]
            if laplace_reachable(y, x_d, s) and not laplace_reachable(y, x_dp, s):
                return True
        return False
    return ev.Event("leaf_counts_ float-reachable from D only", fn,
                    needs=("leaf_counts_", "split_tree_", "embedding_"))


def scenarios() -> AuditScenarios:
    """DPM's audit (module docstring).

    >>> s = scenarios()
    >>> s.main.pair.name, s.call_sites[0].pair.name, s.bugs
    ('all_zero_row', 'added_row', ())
    """
    p = all_zero_row(n_per_cluster=100)  # enough rows for the tree to split now and then
    return AuditScenarios(
        (Scenario(p, (leaf_counts_reachable(p), *label_events(p)),
                  "a row with no counts moves across the split tree: float leaf counts"),),
        (CallSiteSetup(added_row(n_per_cluster=100), (("epsilon", 200.0),), max_calls=4,
                       skip=("interval_size",), max_draws=100_000),))  # a redraw costs ~2 ms
