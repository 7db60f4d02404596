"""The vectorised kernels give, bit for bit, what a plain loop over the same inputs gives.

The references below are the loops the kernels replace, written element by element with
:mod:`math` (the C library): seeded records must not depend on how a kernel is vectorised.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from logit_cases import KINDS, logits

import dptaucc.kernels as kernels
import dptaucc.privacy.mechanisms as mechanisms
from dptaucc.kernels import (
    choose_by_inversion,
    exponential_from_uniforms,
    libm_exp,
    libm_log,
    libm_log1p,
    sum_by_column_label,
    sum_by_column_label_and_group,
    sum_by_row_label,
    sum_rows_by_label,
    value_summary,
)

TAIL = 2.0**-54


@pytest.fixture(autouse=True, params=["numpy", "native"])
def kernel_path(request, monkeypatch):
    """Every test here runs on both paths: the numpy kernels and the compiled loops."""
    if request.param == "numpy":
        monkeypatch.setattr(kernels, "_native", None)
    elif kernels.native_kernels() is None:
        pytest.skip("the compiled kernels are not built (or DPTAUCC_NATIVE=0)")
    return request.param


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _reference_choose(logits, hi, lo):
    out = []
    for row, h, l_ in zip(logits.tolist(), hi.tolist(), lo.tolist(), strict=True):
        k = len(row)
        top = row[0]
        for v in row[1:]:
            if v > top:
                top = v
        weights, order, total = [0.0] * k, [0] * k, 0.0
        for j in range(k):
            w = math.exp(row[j] - top)
            weights[j] = w
            total += w
            pos = j
            while pos > 0 and weights[order[pos - 1]] > w:
                order[pos] = order[pos - 1]
                pos -= 1
            order[pos] = j
        u = (h + (l_ + TAIL) * 2.0**-53) * total
        acc, pick = 0.0, order[k - 1]
        for j in range(k):
            acc += weights[order[j]]
            if u < acc:
                pick = order[j]
                break
        out.append(pick)
    return np.array(out)


def _reference_exponential(hi, lo):
    out = []
    for h, l_ in zip(hi.ravel().tolist(), lo.ravel().tolist(), strict=True):
        tail = (l_ + TAIL) * 2.0**-53
        out.append(-math.log1p(-((1.0 - h) - tail)) if h >= 0.5 else -math.log(h + tail))
    return np.array(out).reshape(hi.shape)


def test_libm_functions_are_the_c_library_value_for_value():
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.exponential(20, 20_000), -rng.exponential(300, 2_000),
                        [0.0, -0.0, -745.2, -708.4, -np.inf, 1.5]])
    u = np.concatenate([rng.random(20_000), rng.random(2_000) * 1e-300, [2.0**-1074, 1.0]])
    np.testing.assert_array_equal(_bits(libm_exp(x)), _bits([math.exp(v) for v in x]))
    np.testing.assert_array_equal(_bits(libm_log(u)), _bits([math.log(v) for v in u]))
    np.testing.assert_array_equal(_bits(libm_log1p(-u[u < 1])),
                                  _bits([math.log1p(-v) for v in u[u < 1]]))


@pytest.mark.parametrize("kind", KINDS)
def test_choose_by_inversion_is_the_loop(kind, monkeypatch):
    rng = np.random.default_rng(len(kind))
    monkeypatch.setattr(kernels, "BLOCK_ROWS", 97)  # several blocks, a ragged last one
    for k in (1, 2, 3, 5, 10, 16, 17, 24):  # up to 16 a sorting network, then argsort
        n = 300
        L = logits(rng, kind, n, k)
        hi, lo = rng.random(n), rng.random(n)
        hi[:30], lo[:15] = 0.0, 0.0
        hi[-1] = lo[-1] = 1 - 2.0**-53
        np.testing.assert_array_equal(choose_by_inversion(L, hi, lo),
                                      _reference_choose(L, hi, lo), err_msg=f"k={k}")


@pytest.mark.parametrize("n", [1, 7, 255, 256, 257, 301])  # blocks of the compiled loop
def test_choose_by_inversion_is_the_loop_for_ragged_blocks(n):
    rng = np.random.default_rng(n)
    for kind, k in (("spread", 10), ("ties", 4), ("huge", 6), ("near", 33), ("spread", 64)):
        L = logits(rng, kind, n, k)
        hi, lo = rng.random(n), rng.random(n)
        np.testing.assert_array_equal(choose_by_inversion(L, hi, lo, 0.7),
                                      _reference_choose(L / 0.7, hi, lo), err_msg=f"{kind}")


@pytest.mark.slow
def test_sorting_networks_sort_random_inputs_up_to_64():
    """The compiled choice sorts up to 64 weights by these networks: random rows with ties."""
    rng = np.random.default_rng(2)
    for n in range(17, 65):
        rows = list(rng.integers(0, 5, size=(n, 2000)).astype(float))
        for a, b in kernels.sorting_network(n):
            rows[a], rows[b] = np.minimum(rows[a], rows[b]), np.maximum(rows[a], rows[b])
        assert (np.diff(np.stack(rows), axis=0) >= 0).all(), n


def test_sorting_networks_sort_every_zero_one_input():
    """A comparator network sorts every input iff it sorts every 0/1 input (Knuth 5.3.4)."""
    for n in range(1, kernels.NETWORK_MAX_CHOICES + 1):
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        rows = [bits[:, i].copy() for i in range(n)]
        for a, b in kernels.sorting_network(n):
            rows[a], rows[b] = np.minimum(rows[a], rows[b]), np.maximum(rows[a], rows[b])
        assert (np.diff(np.stack(rows), axis=0) >= 0).all(), n


@pytest.mark.parametrize("select_values", [0, 10**4])  # split by branch; both, selected
def test_exponential_from_uniforms_is_the_loop(select_values, monkeypatch):
    rng = np.random.default_rng(3)
    monkeypatch.setattr(kernels, "EXPONENTIAL_BLOCK", 1000)
    monkeypatch.setattr(kernels, "SELECT_MAX_VALUES", select_values)
    hi, lo = rng.random((2500, 3)), rng.random((2500, 3))
    hi[0], lo[0] = [0.0, 0.5, 1 - 2.0**-53], [0.0, 1 - 2.0**-53, 1 - 2.0**-53]
    hi[1], lo[1] = [2.0**-53, 0.4999999999999999, 0.5], [0.0, 0.5, 0.0]
    np.testing.assert_array_equal(_bits(exponential_from_uniforms(hi, lo)),
                                  _bits(_reference_exponential(hi, lo)))
    assert exponential_from_uniforms(np.empty(0), np.empty(0)).shape == (0,)


def _random_csr(rng, n, m, density, data_kind):
    X = sp.random(n, m, density=density, format="csr", random_state=int(rng.integers(2**31)))
    if data_kind == "counts":
        X.data = rng.integers(1, 9, X.nnz).astype(float)
    elif data_kind == "int":
        X.data = rng.integers(1, 9, X.nnz)
    else:  # fractions of very different sizes: the order of summation shows
        X.data = rng.random(X.nnz) * 10 ** rng.uniform(-6, 6, X.nnz)
    return X


@pytest.mark.parametrize("bincount_rows", [0, 1 << 14])  # the sparse product; bincount
@pytest.mark.parametrize("data_kind", ["counts", "int", "fractions"])
def test_label_sums_are_the_loops(data_kind, bincount_rows, monkeypatch):
    rng = np.random.default_rng(11)
    monkeypatch.setattr(kernels, "BLOCK_NNZ", 50)
    monkeypatch.setattr(kernels, "BINCOUNT_MAX_ROWS", bincount_rows)
    for n, m, K, L, density in [(120, 90, 4, 7, 0.2), (1, 40, 1, 3, 0.5), (60, 1, 3, 1, 0.6),
                                (30, 20, 2, 2, 0.0)]:
        X = _random_csr(rng, n, m, density, data_kind)
        r, c = rng.integers(0, K, n), rng.integers(0, L, m)
        ac, ra = np.zeros((n, L)), np.zeros((K, m))
        for i in range(n):
            for p in range(X.indptr[i], X.indptr[i + 1]):
                ac[i, c[X.indices[p]]] += X.data[p]
                ra[r[i], X.indices[p]] += X.data[p]
        np.testing.assert_array_equal(_bits(sum_by_column_label(X, c, L)), _bits(ac))
        reused = np.full((n, L), np.nan)  # memory of an earlier call: every value rewritten
        assert sum_by_column_label(X, c, L, out=reused) is reused
        np.testing.assert_array_equal(_bits(reused), _bits(ac))
        np.testing.assert_array_equal(_bits(sum_by_row_label(X, r, K)), _bits(ra))
        V = rng.normal(size=(n, L)) * 10 ** rng.uniform(-6, 6, size=(n, L))
        rv = np.zeros((K, L))
        for i in range(n):
            rv[r[i]] += V[i]
        np.testing.assert_array_equal(_bits(sum_rows_by_label(V, r, K)), _bits(rv))
        table = np.zeros((K, L))  # Rᵀ (A C), the rows of A C added in order
        for i in range(n):
            table[r[i]] += ac[i]
        fused_ac, fused_table = sum_by_column_label_and_group(X, c, L, r, K)
        np.testing.assert_array_equal(_bits(fused_ac), _bits(ac))
        np.testing.assert_array_equal(_bits(fused_table), _bits(table))


@pytest.mark.parametrize("layout", ["C", "F"])
def test_range_sensitivity_is_numpys(layout, monkeypatch):
    """Δ of eq. (4.10) from wide and small weights, with infinities and NaN: the same float."""
    monkeypatch.setattr(mechanisms, "NATIVE_RANGE_VALUES", 1)
    rng = np.random.default_rng(4)
    for shape in ((10, 5000), (5000, 3), (1, 7), (6, 1), (3, 3)):
        W = rng.normal(size=shape) * 10 ** rng.uniform(-3, 3, size=shape)
        variants = [W, np.where(W > 2.5, np.inf, W), np.where(W < -2.5, -np.inf, W),
                    np.where(np.abs(W) > 2.5, np.inf, W) * np.sign(W)]
        variants.append(np.where(W > 3.5, np.nan, W))
        variants.append(np.full(shape, np.inf))
        for V in variants:
            V = np.asfortranarray(V) if layout == "F" else np.ascontiguousarray(V)
            with np.errstate(invalid="ignore"):
                want = float(np.max(V.max(axis=0) - V.min(axis=0)))
                got = mechanisms.linear_range_sensitivity(V)
            assert (math.isnan(got) and math.isnan(want)) or _bits(got) == _bits(want)


def test_the_compiled_label_sums_refuse_a_malformed_matrix(kernel_path):
    """The compiled loops read indices as they go: one outside the matrix is an error, never a
    write outside the output."""
    if kernel_path == "numpy":
        pytest.skip("scipy's own checks apply on the numpy path")
    native = kernels.native_kernels()
    labels, out = np.array([0, 1, 1]), np.empty((2, 2))
    data = np.array([1.0, 2.0])
    for indices, indptr, match in (([0, 3], [0, 1, 2], "outside the matrix"),
                                   ([0, -1], [0, 1, 2], "outside the matrix"),
                                   ([0, 1], [0, 2, 1], "without decreasing"),
                                   ([0, 1], [1, 1, 2], "without decreasing")):
        indices, indptr = np.array(indices, dtype=np.int32), np.array(indptr, dtype=np.int32)
        with pytest.raises(ValueError, match=match):
            native.sum_by_column_label(indptr, indices, data, labels, 2, out)
        with pytest.raises(ValueError, match=match):
            native.sum_by_row_label(indptr, indices, data, np.array([0, 1]), 2, 3, np.empty(6))
    with pytest.raises(ValueError, match="label"):
        native.sum_by_column_label(np.array([0, 1, 2]), np.array([0, 1]), data,
                                   np.array([0, 5, 1]), 2, out)
    ok = (np.array([0, 1, 2]), np.array([0, 1]), data, labels, 2, out)
    with pytest.raises(ValueError, match="groups"):  # a group outside [0, n_groups)
        native.sum_by_column_label(*ok, np.array([0, 3]), 2, np.empty((2, 2)))
    with pytest.raises(ValueError, match="one group per row"):
        native.sum_by_column_label(*ok, np.array([0]), 2, np.empty((2, 2)))
    with pytest.raises(TypeError, match="float64"):
        native.sum_by_column_label(np.array([0, 1, 2]), np.array([0, 1]), data.astype(np.float32),
                                   labels, 2, out)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint64, bool])
def test_label_sums_take_labels_of_any_integer_type(dtype):
    rng = np.random.default_rng(9)
    X = _random_csr(rng, 30, 20, 0.3, "counts")
    r, c = (np.arange(30) % 2).astype(dtype), (np.arange(20) % 2).astype(dtype)
    r64, c64 = r.astype(np.int64), c.astype(np.int64)
    np.testing.assert_array_equal(sum_by_column_label(X, c, 2), sum_by_column_label(X, c64, 2))
    np.testing.assert_array_equal(sum_by_row_label(X, r, 2), sum_by_row_label(X, r64, 2))
    V = rng.normal(size=(30, 3))
    np.testing.assert_array_equal(sum_rows_by_label(V, r, 2), sum_rows_by_label(V, r64, 2))
    for a, b in zip(sum_by_column_label_and_group(X, c, 2, r, 2),
                    sum_by_column_label_and_group(X, c64, 2, r64, 2), strict=True):
        np.testing.assert_array_equal(a, b)


def test_column_label_sums_refuse_an_out_of_another_shape():
    X = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match="C-contiguous 3x2 float64"):
        sum_by_column_label(X, np.array([0, 1, 1]), 2, out=np.empty((2, 3)))


def test_value_summary_is_the_loop(monkeypatch):
    monkeypatch.setattr(kernels, "BLOCK_NNZ", 3)

    def loop(data):
        finite = [v for v in data.tolist() if math.isfinite(v)]
        return (min(finite, default=math.inf), all(v == math.floor(v) for v in finite),
                len(finite) == data.size, sum(v == 0 for v in finite))
    for data in (np.array([1.5, np.nan, -2.0, 0.0, 4.0]), np.array([np.inf, 3.0, 0.0, 0.0]),
                 np.array([2.0, 7.0, 1.0, 0.0, 5.0, 3.0, 9.0]), np.array([], dtype=float),
                 np.array([3, 0, 5, 0, 2]), np.array([-np.inf]), np.array([1e308, 1e308, 0.5])):
        assert value_summary(data) == loop(data), data


def test_value_summary_of_edge_values_in_every_position():
    """Whole and fractional values at the edges of the double range, signed zeros, infinities
    and NaN, in arrays of every length around the compiled loop's vector width (the summary
    only decides whether a matrix is valid: the sign of a zero minimum is not part of it)."""
    edges = np.array([0.0, -0.0, 1.0, -2.5, 0.5, 2.0**52, 2.0**52 + 1, 2.0**52 - 0.5,
                      -(2.0**52) + 0.5, 2.0**53, 1e308, -1e308, 5e-324, -5e-324, 3.0, -7.0,
                      np.inf, -np.inf, np.nan])
    rng = np.random.default_rng(6)
    for size in range(14):
        for _ in range(40):
            data = rng.choice(edges, size=size)
            want = [np.inf, True, True, 0]
            finite = data[np.isfinite(data)]
            if finite.size:
                want = [float(finite.min()), bool((np.floor(finite) == finite).all()), True,
                        int((finite == 0).sum())]
            want[2] = bool(np.isfinite(data).all())
            got = value_summary(data)
            assert got == tuple(want), (data, got, want)  # a zero minimum's sign: either


def test_choose_by_inversion_agrees_on_the_boundaries():
    """Uniforms at and next to every cumulative boundary acc_j/total of a row: one ulp of
    difference in the total, the order or a partial sum changes the choice there."""
    rng = np.random.default_rng(5)
    rows, his = [], []
    for _ in range(200):
        k = int(rng.integers(2, 13))
        row = rng.normal(size=k) * rng.choice([0.1, 3.0])
        w = [math.exp(v - row.max()) for v in row]
        total = sum(w)  # index order, as the loop
        acc = 0.0
        for v in sorted(w):
            acc += v
            for h in (acc / total, *np.nextafter(acc / total, [0.0, 1.0])):
                if h < 1.0:
                    rows.append(row)
                    his.append(h)
    L, hi = np.array([np.pad(r, (0, 12 - r.size), constant_values=-np.inf) for r in rows]), \
        np.array(his)
    lo = np.zeros(hi.size)
    np.testing.assert_array_equal(choose_by_inversion(L, hi, lo), _reference_choose(L, hi, lo))


def test_choose_by_inversion_with_a_scale_divides_first_and_leaves_the_input():
    rng = np.random.default_rng(8)
    for n, k in ((1, 4), (50, 1), (400, 6)):
        scores = rng.normal(size=(n, k)) * 50
        scores[0, 0] = 1e308  # overflows to inf once divided: the loop's NaN rules apply
        kept = scores.copy()
        hi, lo = rng.random(n), rng.random(n)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(choose_by_inversion(scores, hi, lo, 1e-3),
                                          _reference_choose(scores / 1e-3, hi, lo))
        np.testing.assert_array_equal(scores, kept)
