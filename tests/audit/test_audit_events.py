"""The pair and event builders."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dptaucc.audit import PAIRS, make_pair
from dptaucc.audit import events as ev
from dptaucc.audit.reachability import laplace_reachable
from dptaucc.privacy import PrivacyLedger


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_every_pair_is_a_cell_neighbour(name):
    p = make_pair(name)
    diff = (p.D_prime - p.D).toarray()
    assert diff.sum() == 1 and diff[p.u, p.v] == 1 and np.count_nonzero(diff) == 1
    assert p.D.dtype.kind == "i" and (p.D.toarray() >= 0).all()
    assert p.n_clusters == 2 and p.description


def test_pairs_stress_what_they_say():
    X = make_pair("all_zero_row").D.toarray()
    assert X[make_pair("all_zero_row").u].sum() == 0
    p = make_pair("new_column_maximum")
    X = p.D.toarray()
    assert X[p.u, p.v] == X.max() == X[:, p.v].max() and (X == X.max()).sum() == 1
    X = make_pair("empty_cluster").D.toarray()
    assert (X == X[0]).all()
    assert make_pair("all_zero_matrix").D.nnz == 0
    p = make_pair("high_dimensional", n_cols=300)
    assert p.D.shape[1] == 300 and p.D[p.u, p.v] == 0
    p = make_pair("moving_row")
    X = p.D.toarray()
    half = X.shape[1] // 2
    assert X[p.u, :half].sum() == X[p.u, half:].sum()  # balanced in D, not in D'
    with pytest.raises(ValueError, match="unknown pair"):
        make_pair("nope")


def test_partition_and_value_comparisons():
    assert ev.same_partition([0, 0, 1, 2], [5, 5, 3, 1])
    assert not ev.same_partition([0, 0, 1, 1], [0, 1, 1, 1])
    assert not ev.same_partition([0, 0, 1], [0, 0, 0])
    assert not ev.same_partition([0, 1], [0, 1, 2])
    assert ev.values_equal([1.0, 2.0], np.array([1.0, 2.0 + 1e-13]))
    assert not ev.values_equal([1.0, 2.0], [1.0, 2.001])
    assert not ev.values_equal([1.0], [1.0, 2.0])
    assert ev.values_equal(["a"], ["a"]) and not ev.values_equal(["a"], ["b"])


def _coclusterer(table, rows, cols, scale=None):
    ledger = PrivacyLedger()
    if scale is not None:
        ledger.charge("table", "laplace", 1.0 / scale, 0.0, 1.0)
    return SimpleNamespace(contingency_=np.asarray(table, float), row_labels_=np.asarray(rows),
                           column_labels_=np.asarray(cols), privacy_ledger_=ledger)


def test_released_cell_and_exact_table_events():
    p = make_pair("moving_row")  # 13 x 8, cell (12, 0)
    rows = np.r_[np.zeros(6, int), np.ones(7, int)]
    cols = np.r_[np.zeros(4, int), np.ones(4, int)]
    exact = np.array([[48.0, 0.0], [1.0, 49.0]])  # row 12 (1 count on each half) in cluster 1
    m = _coclusterer(exact, rows, cols, scale=2.0)
    assert ev.released_cell(m, p) == (1.0, 1.0, 2.0)
    assert ev.contingency_equals_exact(p.D).fn(m)
    assert not ev.contingency_equals_exact(p.D_prime).fn(m)
    assert not ev.table_cell_above(p, 0.5).fn(m)
    assert ev.ledger_laplace_scale(m) == 2.0
    m.dp_row_labels_ = np.zeros(13, int)  # the table's own labels win over row_labels_
    assert ev.released_cell(m, p)[1:] == (49.0, 50.0)


def test_reachability_event_reads_the_scale_from_the_ledger():
    p = make_pair("moving_row")
    rows = np.r_[np.zeros(6, int), np.ones(7, int)]
    cols = np.r_[np.zeros(4, int), np.ones(4, int)]
    for seed in range(20):
        y = max(1.0 + np.random.default_rng(seed).laplace(0.0, 2.0), 0.0)
        table = np.array([[48.0, 0.0], [y, 49.0]])
        e = ev.table_cell_reachable(p)
        fired = e.fn(_coclusterer(table, rows, cols, scale=2.0))
        assert fired == (y != 0.0 and not laplace_reachable(y, 2.0, 2.0, 0.0))
    with pytest.raises(ValueError, match="no Laplace"):  # an audit stops on it
        e.fn(_coclusterer(table, rows, cols))


def test_label_and_attribute_events():
    m = SimpleNamespace(row_labels_=np.array([1, 1, 0]), n_row_clusters_=1, loss_=3.0,
                        coefficients_=np.array([[0.0, 1.0], [0.0, 2.0]]),
                        evaluation_row_labels=lambda X: np.array([0, 0, 1]))
    assert ev.same_label(0, 1).fn(m) and not ev.same_label(0, 2).fn(m)
    assert ev.labels_match_evaluation(None).fn(m)
    assert ev.fewer_clusters_than(2).fn(m)
    assert ev.attribute_equals("loss_", lambda model: 3.0).fn(m)
    assert not ev.attribute_equals("loss_", lambda model: 3.5).fn(m)
    assert ev.slice_is_zero("coefficients_", (slice(None), 0)).fn(m)
    assert not ev.slice_is_zero("coefficients_", (slice(None), 1)).fn(m)


def test_as_events_checks_its_input():
    assert [e.name for e in ev.as_events({"a": len})] == ["a"]
    with pytest.raises(TypeError):
        ev.as_events(["not an event"])
    assert ev.as_events({}) == []
