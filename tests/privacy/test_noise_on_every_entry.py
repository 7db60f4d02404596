"""Every entry of every released noisy array gets noise, zero entries included.

A tempting bug keeps a release sparse by leaving its exact zeros alone (``noisy[exact == 0] =
0``): the zeros then tell which cells of the data are empty. Each test fits a corrected-mode
estimator on data with exact zeros (an all-zero matrix, all-zero feature columns) and checks,
from the noise the fit really drew (:class:`~dptaucc.privacy.checks.RecordingSampler`), that
the zero entries of the release carry it: the number of noise values drawn equals the size of
the released array, and the released value at an exact zero is what that noise makes of it.
"""

import dptaucc.baselines.dpm.core as dpm_core
import dptaucc.baselines.dpm.tree as dpm_tree
import dptaucc.baselines.nmf_dp.model as nmf_model
import numpy as np
import pytest
from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
from dptaucc.baselines.dp_kmeans import DPKMeans
from dptaucc.baselines.dpm import DPM
from dptaucc.baselines.nmf_dp import DPNMF

from dptaucc import DPTauCC, DPTauCCRow
from dptaucc.privacy import PrivacyLedger
from dptaucc.privacy.checks import RecordingSampler


@pytest.fixture(scope="module")
def zero_columns():
    """Counts whose last four columns are all zero."""
    X = np.random.default_rng(0).poisson(2.0, size=(200, 12)).astype(float)
    X[:, 8:] = 0
    return X


def test_dptaucc_tables_noise_every_cell_of_the_all_zero_matrix():
    positive = 0
    for seed in range(6):
        rec = RecordingSampler(seed)
        model = DPTauCC(n_row_clusters=3, n_col_clusters=3, epsilon=1.0,
                        random_state=rec).fit(np.zeros((30, 20)))
        draws = rec.of_kind("discrete_laplace")
        assert len(draws) == 8 and all(d.output.shape == (3, 3) for d in draws)
        # every exact cell is 0: the release must be max(0, noise) in every cell
        np.testing.assert_array_equal(model.contingency_, np.maximum(draws[-1].output, 0))
        positive += int((model.contingency_ > 0).sum())
    assert positive > 10  # about half of the 54 released cells


def test_dptaucc_row_tables_noise_every_cell_of_the_all_zero_matrix():
    """K0 = 4 row clusters kept whatever the data: every cell of every table gets noise."""
    positive = 0
    for seed in range(6):
        rec = RecordingSampler(seed)
        model = DPTauCCRow(n_row_clusters=4, n_col_clusters=3, epsilon=1.0,
                           random_state=rec).fit(np.zeros((30, 20)))
        draws = rec.of_kind("discrete_laplace")
        assert len(draws) == 8 and all(d.output.shape == model.contingency_.shape
                                       for d in draws[-1:])
        assert all(d.output.shape[0] == 4 for d in draws)
        np.testing.assert_array_equal(model.contingency_, np.maximum(draws[-1].output, 0))
        positive += int((model.contingency_ > 0).sum())
    assert positive > 10


def test_dp_kmeans_counts_and_every_sum_are_noised_zero_columns_included(zero_columns):
    zeros, total = 0, 0
    for seed in range(4):
        rec = RecordingSampler(seed)
        model = DPKMeans(n_clusters=3, random_state=rec).fit(zero_columns)
        sizes = [d.output.size for d in rec.of_kind("discrete_laplace")]
        # per iteration: one draw of k counts, then the k×d sums (one draw per distinct scale)
        per_iteration = [s for s in sizes if s != 3]
        assert sizes.count(3) >= 1 and sum(per_iteration) == sizes.count(3) * 3 * 12
        centres = model.cluster_centers_[:, 8:]
        zeros += int((centres == 0).sum())
        total += centres.size
    # a noised sum of exact 0 on {0, …, B·ñ} is 0 with probability about 1/scale, far below ½
    assert zeros < 0.5 * total


def test_dpnmf_statistics_are_noised_in_rows_of_words_that_never_occur(zero_columns,
                                                                          monkeypatch):
    seen = []
    original = nmf_model.release_statistics

    def spy(V, H, *args, **kwargs):
        out = original(V, H, *args, **kwargs)
        seen.append((np.asarray(V @ H.T), out))
        return out

    monkeypatch.setattr(nmf_model, "release_statistics", spy)
    rec = RecordingSampler(1)
    DPNMF(n_clusters=3, random_state=rec).fit(zero_columns)
    draws = rec.of_kind("standard_normal")
    assert seen and len(draws) == len(seen)
    for (exact_vh, (a_bar, b_bar)), draw in zip(seen, draws, strict=True):
        assert draw.output.size == a_bar.size + b_bar.size  # noise for every entry
        zero_rows = np.flatnonzero(~exact_vh.any(axis=1))
        assert zero_rows.size >= 4
        assert np.all(b_bar[zero_rows] != 0)  # Gaussian noise on a grid: never exactly 0


def test_dpm_count_release_noises_zero_counts_and_leaf_counts_come_from_it(zero_columns,
                                                                          monkeypatch):
    rec = RecordingSampler(2)
    exact = np.zeros(2_000, dtype=np.int64)  # children left empty by a split
    noisy = dpm_tree.release_counts(exact, 1.0, 0.0, rec, PrivacyLedger(), "t", paper=False)
    (draw,) = rec.of_kind("discrete_laplace")
    np.testing.assert_array_equal(noisy, exact + draw.output)
    assert np.mean(noisy != 0) > 0.3

    released = []
    original = dpm_tree.release_counts

    def spy(true_counts, *args, **kwargs):
        out = original(true_counts, *args, **kwargs)
        released.extend(np.asarray(out).tolist())
        return out

    monkeypatch.setattr(dpm_tree, "release_counts", spy)
    monkeypatch.setattr(dpm_core, "release_counts", spy)
    rec = RecordingSampler(2)
    model = DPM(n_components=5, max_depth=3, random_state=rec).fit(zero_columns)
    assert set(model.leaf_counts_.tolist()) <= set(released)
    assert rec.of_kind("standard_normal")[-1].output.size == model.leaf_sums_.size
    assert np.all(model.leaf_sums_ != 0)


def test_colored_noise_sums_and_counts_are_noised_zero_columns_included(zero_columns):
    rec = RecordingSampler(3)
    model = ColoredNoiseKMeans(n_clusters=3, random_state=rec).fit(zero_columns)
    last = rec.of_kind("standard_normal")[-1]
    assert last.output.size == model.cluster_sums_.size + model.cluster_counts_.size
    assert np.all(model.cluster_sums_ != 0) and np.all(model.cluster_counts_ != 0)
