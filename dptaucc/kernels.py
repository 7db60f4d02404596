"""Kernels in numpy/scipy (nothing compiled at run time): aggregations over the non-zeros of
a CSR matrix, and the 106-bit transforms of the seeded sampler.

The sparse kernels run scipy's compiled loops over ``indptr``/``indices``/``data`` (one pass,
rows in order, each row's entries in order) and keep their temporaries to blocks of about
:data:`BLOCK_NNZ` non-zeros: no cost term in n·m, no temporary of the size of the matrix
beyond one index array in :func:`sum_by_row_label`. Each output entry is the sum of its terms
in storage order, starting from 0, so results are bitwise those of a plain loop over the
non-zeros. Data may be integer or floating point (integer counts are summed exactly in
float64 up to 2⁵³).

Where the compiled module ``dptaucc._native`` was built (a C compiler at install time; see
:func:`native_kernels`), the label sums and the exponential-mechanism choice run its loops
instead, which do the same operations in the same order: bitwise the same results, without
numpy's temporaries. Tests compare the two paths value for value.

The sampler transforms call the C library's ``exp``, ``log`` and ``log1p`` through scipy's
Box-Cox ufuncs at λ = 0 (``inv_boxcox(x, 0) = exp(x)``, ``boxcox(x, 0) = log(x)``,
``boxcox1p(x, 0) = log1p(x)``): numpy's own vectorised ``exp``/``log`` differ from the C
library in the last bit on some CPUs, which would change seeded draws from one machine to
the next. Tests check both against :mod:`math` (the C library) value for value.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os

import numpy as np
import scipy.sparse as sp
from scipy.special import boxcox, boxcox1p, inv_boxcox

__all__ = ["native_kernels", "compiled_loops", "sum_by_column_label",
           "sum_by_column_label_and_group", "sum_by_row_label", "value_summary",
           "exponential_from_uniforms", "choose_by_inversion", "sum_rows_by_label",
           "libm_exp", "libm_log", "libm_log1p"]

#: non-zeros (or values) per block of the kernels: their temporaries stay in the cache
BLOCK_NNZ = 1 << 18
#: rows up to which :func:`sum_rows_by_label` sums by bincount (above it a sparse product,
#: which reads each row once)
BINCOUNT_MAX_ROWS = 1 << 14
#: values up to which :func:`exponential_from_uniforms` computes both branches for every value
#: and selects (cheaper than splitting small arrays)
SELECT_MAX_VALUES = 1 << 10
#: values per block of :func:`exponential_from_uniforms` above that: its ten or so temporaries
#: of a block stay in the L2 cache (75k values: 13-17 ns a value, 27 in one block)
EXPONENTIAL_BLOCK = 1 << 14
#: rows per block of :func:`choose_by_inversion`
BLOCK_ROWS = 1 << 14
#: choices up to which :func:`choose_by_inversion` sorts the weights by a sorting network
#: (about k·log²k/4 vector minima and maxima); above it a stable argsort per row
NETWORK_MAX_CHOICES = 16
_TAIL_OFFSET = 2.0**-54
_TAIL_SCALE = 2.0**-53

#: environment variable that, set to 0, makes every kernel take its numpy path
NATIVE_SWITCH = "DPTAUCC_NATIVE"

try:  # optional at build time (setup.py): the package works without it
    from dptaucc import _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None


def native_kernels():
    """The compiled loops (``dptaucc._native``), or None: not built (no C compiler when the
    package was installed) or switched off by ``DPTAUCC_NATIVE=0``. Either way the results
    are bitwise the same; the compiled loops are faster on large matrices.

    >>> import os
    >>> (native_kernels() is None) == (os.environ.get("DPTAUCC_NATIVE") == "0" or _native is None)
    True
    """
    if _native is None or os.environ.get(NATIVE_SWITCH, "1") == "0":
        return None
    return _native


@contextlib.contextmanager
def compiled_loops(on: bool):
    """The compiled loops switched on (when built) or off (the numpy path) for the duration,
    then the switch as it was: how the audit reaches each path of a kernel.

    >>> with compiled_loops(False):
    ...     native_kernels() is None
    True
    """
    old = os.environ.get(NATIVE_SWITCH)
    os.environ[NATIVE_SWITCH] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ[NATIVE_SWITCH]
        else:
            os.environ[NATIVE_SWITCH] = old


def libm_exp(x: np.ndarray) -> np.ndarray:
    """The C library's ``exp``, element by element (as :func:`math.exp`).

    >>> import math
    >>> import numpy as np
    >>> x = np.array([-745.0, -1.5, 0.0, 0.7, 30.0])
    >>> libm_exp(x).tolist() == [math.exp(v) for v in x.tolist()]  # bit for bit
    True
    """
    return inv_boxcox(x, 0.0)


def libm_log(x: np.ndarray) -> np.ndarray:
    """The C library's ``log``, element by element (as :func:`math.log`).

    >>> import math
    >>> import numpy as np
    >>> x = np.array([1e-300, 0.3, 1.0, 2.5, 1e300])
    >>> libm_log(x).tolist() == [math.log(v) for v in x.tolist()]  # bit for bit
    True
    """
    return boxcox(x, 0.0)


def libm_log1p(x: np.ndarray) -> np.ndarray:
    """The C library's ``log1p``, element by element (as :func:`math.log1p`).

    >>> import math
    >>> import numpy as np
    >>> x = np.array([-0.5, -1e-17, 0.0, 1e-10, 3.0])
    >>> libm_log1p(x).tolist() == [math.log1p(v) for v in x.tolist()]  # bit for bit
    True
    """
    return boxcox1p(x, 0.0)


def _labels(labels) -> np.ndarray:
    """Labels as the compiled loops read them: contiguous signed integers (a copy only for
    another dtype, e.g. unsigned or bool labels, which the numpy path also accepts)."""
    labels = np.asarray(labels)
    if labels.dtype in (np.int32, np.int64):
        return np.ascontiguousarray(labels)
    return np.ascontiguousarray(labels, dtype=np.intp)


def _blocks(size: int, step: int):
    """(start, stop) of consecutive blocks of at most ``step`` items covering range(size)."""
    for start in range(0, size, step):
        yield start, min(start + step, size)


def _row_blocks(indptr: np.ndarray):
    """(first row, end row) of consecutive row blocks holding about BLOCK_NNZ non-zeros; one
    block up to 8·BLOCK_NNZ non-zeros (scipy copies the values of a smaller block, which only
    pays off when the matrix is much larger than the cache)."""
    n = indptr.size - 1
    if int(indptr[-1]) <= 8 * BLOCK_NNZ:
        return [(0, n)]
    cuts = np.searchsorted(indptr, np.arange(BLOCK_NNZ, int(indptr[-1]), BLOCK_NNZ))
    bounds = np.unique(np.concatenate(([0], np.clip(cuts, 1, n), [n])))
    return zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)


def sum_by_column_label(X, col_labels: np.ndarray, n_labels: int,
                        out: np.ndarray | None = None) -> np.ndarray:
    """``A C`` (n×L): each row's entries summed by the label of their column; one pass
    (written to ``out``, a C-contiguous n×L float64 array, if given).

    A block of rows with every column index replaced by its label (``np.take``, which gathers
    about 1.6× faster than fancy indexing) is an n_b×L CSR matrix with repeated indices, which
    scipy's dense conversion sums in storage order.

    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.random(6, 5, density=0.4, format="csr", random_state=1)
    >>> labels = np.array([2, 0, 2, 1, 0])
    >>> bool(np.allclose(sum_by_column_label(X, labels, 3), X.toarray() @ np.eye(3)[labels]))
    True
    """
    n = X.shape[0]
    if out is None:
        out = np.empty((n, n_labels))  # every row lies in one block, which toarray zeroes
    elif out.shape != (n, n_labels) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {n}x{n_labels} float64 array")
    if n == 0 or X.nnz == 0:
        out[...] = 0.0
        return out
    native = native_kernels()
    if native is not None and X.indptr.dtype == X.indices.dtype:
        native.sum_by_column_label(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64),
                                   _labels(col_labels), n_labels, out)
        return out
    indptr = X.indptr
    labels = np.ascontiguousarray(col_labels, dtype=indptr.dtype)
    for start, stop in _row_blocks(indptr):
        lo, hi = int(indptr[start]), int(indptr[stop])
        offsets = indptr[start:stop + 1]
        block = sp.csr_matrix(
            (np.asarray(X.data[lo:hi], dtype=np.float64), np.take(labels, X.indices[lo:hi]),
             offsets - indptr.dtype.type(lo) if lo else offsets),
            shape=(stop - start, n_labels), copy=False)
        block.toarray(out=out[start:stop])
    return out


def sum_by_column_label_and_group(X, col_labels: np.ndarray, n_labels: int,
                                  row_labels: np.ndarray, n_groups: int,
                                  out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``A C`` (n×L, as :func:`sum_by_column_label`) and ``Rᵀ (A C)`` (n_groups×L, as
    :func:`sum_rows_by_label`): the compiled loop adds each row's sums to its group while
    they are in the cache (the same values).

    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[1, 2, 3], [4, 0, 1]]))
    >>> ac, table = sum_by_column_label_and_group(X, np.array([0, 1, 0]), 2, np.array([1, 1]), 2)
    >>> ac.tolist(), table.tolist()
    ([[4.0, 2.0], [5.0, 0.0]], [[0.0, 0.0], [9.0, 2.0]])
    """
    native = native_kernels()
    if native is None or X.indptr.dtype != X.indices.dtype or X.shape[0] == 0 or X.nnz == 0:
        ac = sum_by_column_label(X, col_labels, n_labels, out=out)
        return ac, sum_rows_by_label(ac, row_labels, n_groups)
    n = X.shape[0]
    if out is None:
        out = np.empty((n, n_labels))
    elif out.shape != (n, n_labels) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {n}x{n_labels} float64 array")
    groups = np.empty((n_groups, n_labels))
    native.sum_by_column_label(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64),
                               _labels(col_labels), n_labels, out,
                               _labels(row_labels), n_groups, groups)
    return out, groups


def sum_by_row_label(X, row_labels: np.ndarray, n_labels: int) -> np.ndarray:
    """``Rᵀ A`` (K×m): each column's entries summed by the label of their row; one pass.

    Each non-zero's cell of the m×K output, column·K + row label (4 bytes each, the one
    temporary of the size of the input), as the indices of a one-row CSR matrix of m·K
    columns, which scipy's dense conversion sums in storage order.

    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.random(6, 5, density=0.4, format="csr", random_state=1)
    >>> labels = np.array([1, 1, 0, 2, 0, 1])
    >>> bool(np.allclose(sum_by_row_label(X, labels, 3), np.eye(3)[labels].T @ X.toarray()))
    True
    """
    n, m = X.shape
    if X.nnz == 0:
        return np.zeros((n_labels, m))
    native = native_kernels()
    if native is not None and X.indptr.dtype == X.indices.dtype:
        out = np.empty((n_labels, m))
        native.sum_by_row_label(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64),
                                _labels(row_labels), n_labels, m, out)
        return out
    index = np.int32 if m * n_labels < 2**31 else np.int64
    cells = np.repeat(np.asarray(row_labels, dtype=index), np.diff(X.indptr))
    scaled = np.empty(min(BLOCK_NNZ, X.nnz), dtype=index)
    for start, stop in _blocks(X.nnz, BLOCK_NNZ):
        part = scaled[:stop - start]
        np.multiply(X.indices[start:stop], n_labels, out=part, casting="unsafe")
        cells[start:stop] += part
    by_cell = sp.csr_matrix(
        (np.asarray(X.data, dtype=np.float64), cells, np.array([0, X.nnz], dtype=index)),
        shape=(1, m * n_labels), copy=False)
    return np.ascontiguousarray(by_cell.toarray().reshape(m, n_labels).T)


def sum_rows_by_label(values: np.ndarray, labels: np.ndarray, n_groups: int) -> np.ndarray:
    """``Rᵀ V`` (n_groups×L): the rows of a dense ``values`` (n×L) summed by label, O(nL),
    as the product of the one-hot (n_groups×n, CSC) with V: rows in order.

    >>> import numpy as np
    >>> values = np.arange(8.0).reshape(4, 2)
    >>> sum_rows_by_label(values, np.array([1, 0, 1, 1]), 3).tolist()  # group 2 is empty
    [[2.0, 3.0], [10.0, 13.0], [0.0, 0.0]]
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    n = values.shape[0]
    native = native_kernels()
    if native is not None and values.ndim == 2:
        out = np.empty((n_groups, values.shape[1]))
        native.sum_rows_by_label(values, values.shape[1], _labels(labels),
                                 n_groups, out)
        return out
    if n <= BINCOUNT_MAX_ROWS:  # one bincount per column: the same sums, without scipy's checks
        labels = np.asarray(labels, dtype=np.intp)
        out = np.empty((n_groups, values.shape[1]))
        for col in range(values.shape[1]):
            out[:, col] = np.bincount(labels, weights=values[:, col], minlength=n_groups)
        return out
    index = np.int32 if max(n, n_groups) < 2**31 else np.int64  # int32: no range scan
    one_hot = sp.csc_matrix((np.ones(n), np.asarray(labels, dtype=index),
                             np.arange(n + 1, dtype=index)), shape=(n_groups, n))
    return np.asarray(one_hot @ values)


def value_summary(data: np.ndarray) -> tuple[float, bool, bool, int]:
    """(minimum of the finite values, all whole numbers, all finite, number of zeros): over
    the stored values, in blocks (the whole/zero facts count finite values only).

    >>> import numpy as np
    >>> value_summary(np.array([3.0, 0.0, 2.0, 0.0]))
    (0.0, True, True, 2)
    >>> value_summary(np.array([1.5, np.inf, -2.0]))  # the minimum of the finite values
    (-2.0, False, False, 0)
    """
    data = np.asarray(data)
    native = native_kernels()
    if native is not None and data.dtype == np.float64 and data.ndim == 1:
        return native.value_summary(np.ascontiguousarray(data))
    lowest, whole, finite, zeros = np.inf, True, True, 0
    integer = data.dtype.kind in "iub"
    for start, stop in _blocks(data.size, BLOCK_NNZ):
        block = data[start:stop]
        # a finite sum means every value is finite (inf and NaN propagate); else look closer
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(block) if not integer else 0
        if not np.isfinite(total):
            ok = np.isfinite(block)
            if not ok.all():
                finite = False
                block = block[ok]
        if not block.size:
            continue
        if not integer and whole and not np.array_equal(np.floor(block), block):
            whole = False
        lowest = min(lowest, float(block.min()))
        zeros += block.size - int(np.count_nonzero(block))
    return float(lowest), bool(whole), bool(finite), int(zeros)


def exponential_from_uniforms(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """−log U for U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³, hi and lo two arrays of 53-bit uniforms: an
    Exp(1) variate from a uniform on a 2⁻¹⁰⁶ grid (midpoints) of (0, 1). For U ≥ ½ the
    logarithm is taken of 1 − U = (1 − hi) − tail, which has no cancellation.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> e = exponential_from_uniforms(rng.random(20000), rng.random(20000))
    >>> bool(e.min() > 0), bool(abs(e.mean() - 1.0) < 0.03)  # Exp(1): mean 1
    (True, True)
    >>> # the smallest U, 2⁻¹⁰⁷, gives the largest variate 107·ln 2 (not 53·ln 2)
    >>> round(float(exponential_from_uniforms(np.zeros(1), np.zeros(1))[0]), 2)
    74.17
    """
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.float64).reshape(hi.shape)
    if hi.size <= SELECT_MAX_VALUES:
        tail = (lo + _TAIL_OFFSET) * _TAIL_SCALE
        upper = -libm_log1p(-((1.0 - hi) - tail))  # a value in (0, 1) either way: no warning
        return np.where(hi >= 0.5, upper, -libm_log(hi + tail))
    # each branch's argument formed for the whole block (cheap), its logarithm taken only at
    # the branch's positions (gathered and scattered by index: about twice as fast as boolean
    # masks), the sign flipped once
    out = np.empty_like(hi)
    flat_hi, flat_lo, flat_out = hi.reshape(-1), lo.reshape(-1), out.reshape(-1)
    for start, stop in _blocks(flat_hi.size, EXPONENTIAL_BLOCK):
        h, part = flat_hi[start:stop], flat_out[start:stop]
        tail = flat_lo[start:stop] + _TAIL_OFFSET
        tail *= _TAIL_SCALE
        upper = h >= 0.5
        at_upper, at_lower = np.flatnonzero(upper), np.flatnonzero(~upper)
        arg = 1.0 - h
        arg -= tail
        np.negative(arg, out=arg)  # −((1 − h) − tail)
        part[at_upper] = libm_log1p(arg.take(at_upper))
        np.add(h, tail, out=arg)
        part[at_lower] = libm_log(arg.take(at_lower))
        np.negative(part, out=part)
    return out


def choose_by_inversion(logits: np.ndarray, hi: np.ndarray, lo: np.ndarray,
                        scale: float = 1.0) -> np.ndarray:
    """One index per row with P(j) ∝ exp(logit_j), by inverting the cumulative distribution
    of the weights exp(logit − max) taken in ascending order, with U = hi + (lo + 2⁻⁵⁴)·2⁻⁵³
    from two 53-bit uniforms per row. Small weights come first, where the 106-bit uniform
    resolves them: a choice is lost only if its probability is below about 2⁻¹⁰⁶ (or its
    weight underflows, below e⁻⁷⁴⁵).

    With ``scale``, the logits are ``logits / scale`` (divided block by block, the same
    values as dividing first). Exactly, per row: the total is the weights summed in index
    order; the order is ascending by weight, ties in index order; the cumulative sums run in
    that order from 0; the choice is the first index whose cumulative sum exceeds U·total
    (the last one if none does).

    >>> import numpy as np
    >>> logits = np.array([[0.0, -800.0, 0.0], [-800.0, 0.0, -800.0]])
    >>> choose_by_inversion(logits, np.array([0.2, 0.7]), np.array([0.5, 0.5])).tolist()
    [0, 1]
    >>> rng = np.random.default_rng(0)  # frequencies follow exp(logit)
    >>> chosen = choose_by_inversion(np.log([[1.0, 2.0, 7.0]] * 20000), rng.random(20000),
    ...                              rng.random(20000))
    >>> np.round(np.bincount(chosen) / 20000, 1).tolist()
    [0.1, 0.2, 0.7]
    """
    logits = np.ascontiguousarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[1] == 0 or not (len(hi) == len(lo) == logits.shape[0]):
        raise ValueError("need logits (n, k >= 1) and one pair of uniforms per row")
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    native = native_kernels()
    if native is not None and logits.shape[1] <= native.MAX_CHOICES:
        return _choose_native(native, logits, hi, lo, float(scale))
    out = np.empty(logits.shape[0], dtype=np.intp)
    for start, stop in _blocks(logits.shape[0], BLOCK_ROWS):
        out[start:stop] = _choose_block(logits[start:stop], hi[start:stop], lo[start:stop],
                                        float(scale))
    return out


def _choose_native(native, logits: np.ndarray, hi: np.ndarray, lo: np.ndarray,
                   scale: float) -> np.ndarray:
    """:func:`choose_by_inversion` by the compiled loop, row by row; the rows whose largest
    logit is not finite (left at −1) element by element, as the numpy path."""
    out = np.empty(logits.shape[0], dtype=np.int64)
    network = np.array(sorting_network(logits.shape[1]), dtype=np.int32).reshape(-1)
    if native.choose_by_inversion(logits, logits.shape[1], hi, lo, scale, network, out):
        for i in np.flatnonzero(out < 0).tolist():
            row = logits[i] / scale if scale != 1.0 else logits[i]
            out[i] = _choose_row(row, hi[i], lo[i])
    return out.astype(np.intp, copy=False)


def _choose_block(logits: np.ndarray, hi: np.ndarray, lo: np.ndarray,
                  scale: float) -> np.ndarray:
    """:func:`choose_by_inversion` on a block of rows, computed column by column (one row of
    weights per choice, in place wherever the loop's arithmetic allows)."""
    k, b = logits.shape[1], logits.shape[0]
    columns = np.empty((k, b))                                  # k × b, always a copy
    if scale != 1.0:
        np.divide(logits.T, scale, out=columns)
    else:
        columns[...] = logits.T
    top = np.maximum.reduce(columns, axis=0)                     # NaN propagates
    regular = np.isfinite(top)
    out = np.empty(b, dtype=np.intp)
    if not regular.all():
        irregular = np.flatnonzero(~regular)
        out[irregular] = [_choose_row(columns[:, i], hi[i], lo[i]) for i in irregular]
        if not regular.any():
            return out
        columns, top = columns[:, regular], top[regular]
        hi, lo = hi[regular], lo[regular]
    columns -= top
    weights = inv_boxcox(columns, 0.0, out=columns)             # libm exp; the largest is 1
    total = weights[0].copy()
    for j in range(1, k):
        total += weights[j]
    u = lo + _TAIL_OFFSET
    u *= _TAIL_SCALE
    u += hi
    u *= total
    if k > NETWORK_MAX_CHOICES:
        chosen = _invert_sorted_by_argsort(weights, u)
    else:
        chosen = _invert_sorted_by_network(weights, u)
    if chosen.size == out.size:
        return chosen
    out[regular] = chosen
    return out


def _invert_sorted_by_argsort(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The first index, in the stable ascending order of each column of ``weights`` (k × b),
    whose cumulative sum exceeds ``u`` (the last one if none does)."""
    k = weights.shape[0]
    order = np.argsort(weights, axis=0, kind="stable")
    acc = np.take_along_axis(weights, order, axis=0)
    for r in range(1, k):
        acc[r] += acc[r - 1]
    position = np.zeros(u.size, dtype=np.intp)
    for r in range(k - 1):  # the cumulative sums never decrease: count those <= u
        position += acc[r] <= u
    return np.take_along_axis(order, position[None, :], axis=0)[0]


def _invert_sorted_by_network(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`_invert_sorted_by_argsort` for k <= NETWORK_MAX_CHOICES: the sorted values by a
    sorting network of minima and maxima (exact: each output is one of the inputs), then the
    index of the chosen value, ties counted in index order."""
    k = weights.shape[0]
    rows = _sorted_rows(weights)
    acc = rows[0].copy()
    flag = np.empty(u.size, dtype=bool)
    step = flag.view(np.int8)  # 0/1 as a small integer: no casting in the counts below
    position = np.zeros(u.size, dtype=np.int8)  # k <= NETWORK_MAX_CHOICES
    for r in range(k - 1):  # the cumulative sums never decrease: count those <= u
        np.less_equal(acc, u, out=flag)
        position += step
        acc += rows[r + 1]
    picked = rows[k - 1]  # the weight at the chosen position of the ascending order
    for r in range(k - 1):
        np.copyto(picked, rows[r], where=position == r)
    # the chosen index: ties sit in index order, so it is the (position − #{weights <
    # picked})-th index, counting from 0, whose weight is picked; the indices before it are
    # those after which that count, less the indices with weight picked so far, is still >= 0
    for j in range(k):
        np.less(weights[j], picked, out=flag)
        position -= step
    chosen = np.zeros(u.size, dtype=np.int8)
    for j in range(k - 1):
        np.equal(weights[j], picked, out=flag)
        position -= step
        np.greater_equal(position, 0, out=flag)
        chosen += step
    return chosen.astype(np.intp)


def _sorted_rows(weights: np.ndarray) -> list[np.ndarray]:
    """The rows of a k × b array sorted per column (k new arrays): Batcher's odd-even merge
    network of :func:`sorting_network`."""
    buffer = weights.copy()
    rows, spare = list(buffer), np.empty_like(buffer[0])
    for a, b in sorting_network(len(rows)):
        np.minimum(rows[a], rows[b], out=spare)
        np.maximum(rows[a], rows[b], out=rows[b])
        rows[a], spare = spare, rows[a]
    return rows


@functools.cache
def sorting_network(n: int) -> tuple[tuple[int, int], ...]:
    """The comparators (i, j), i < j, of Batcher's odd-even merge sort for n items (that of
    the next power of two, without the comparators past n: padding sorts last).

    >>> sorting_network(3)
    ((0, 1), (0, 2), (1, 2))
    """
    size = 1
    while size < n:
        size *= 2
    pairs = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < n:
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return tuple(pairs)


def _choose_row(logits: np.ndarray, hi: float, lo: float) -> int:
    """One row of :func:`choose_by_inversion` element by element (rows with an infinite or
    NaN logit: insertion sort with the comparisons' NaN semantics)."""
    logits, k = logits.tolist(), logits.size  # Python floats: inf − inf is NaN, silently
    top = logits[0]
    for j in range(1, k):
        if logits[j] > top:
            top = logits[j]
    weights, order, total = [0.0] * k, [0] * k, 0.0
    for j in range(k):
        w = math.exp(logits[j] - top)  # NaN stays NaN; the difference is <= 0 otherwise
        weights[j] = w
        total += w
        pos = j
        while pos > 0 and weights[order[pos - 1]] > w:
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = j
    u = (hi + (lo + _TAIL_OFFSET) * _TAIL_SCALE) * total
    acc = 0.0
    for j in range(k):
        acc += weights[order[j]]
        if u < acc:
            return order[j]
    return order[k - 1]
