"""How closely two machines' results must agree: the one float tolerance of the project.

Integers (labels, noisy counts, iteration counts, grid steps) are the same on every machine and
are compared exactly. Floats that pass through numpy's vector maths, BLAS or the C library may
differ in their last bits from one CPU to another (numpy picks other ``exp``/``log``/``cbrt``
kernels where AVX-512 is present; OpenBLAS picks its products by CPU). Such floats agree within
the tolerance below, which the test suite and ``make verify`` share (docs/records.md).

The tolerance: ``|a − b| ≤ FLOAT_ATOL + FLOAT_RTOL·max(|a|, |b|)``, with infinities and NaNs
equal only to themselves. It sits between what kernels do and what a real change does
(docs/records.md): the largest difference measured between two float paths is 7.5e-11
relative (a DP-KMeans noise scale found by bisection on ``exp``/``log`` results a ulp apart;
ledger ε sums, centres and the NMI of the same labels differ by 1e-16 to 1e-13), while one
flipped label among 4,069 rows moves an NMI by 1.6e-5 relative or more, and an off-by-a-factor
bug (a noise scale, a sensitivity) by far more.

>>> floats_close(0.1 + 0.2, 0.3), floats_close(1.0, 1.0 + 1e-6)
(True, False)
>>> float_difference([1.0, 2.0], [1.0, 2.5])
0.5

:func:`other_float_kernels` makes numpy round as another CPU's kernels might (one ulp up, down
or not at all): a test or a sample of records that passes under it does not depend on the
kernels this CPU happens to have (``pytest --other-float-kernels``,
``python -m dptaucc.bench.verify --other-float-kernels 1``). :func:`second_float_path` names
the environment of ``make test-float-paths``: numpy's widest kernels and OpenBLAS's kernel of
this CPU switched off (``python -m dptaucc.testing`` prints it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FLOAT_RTOL", "FLOAT_ATOL", "floats_close", "float_difference",
           "relative_difference", "assert_floats_close", "CPU_DEPENDENT_UFUNCS",
           "other_float_kernels", "second_float_path"]

#: relative part of the tolerance: above the kernels' last-bit differences (7.5e-11 at most,
#: measured), below any real change (one flipped label: 1.6e-5 or more)
FLOAT_RTOL = 1e-8
#: absolute part, for values near zero (an NMI of 0, a centre coordinate of 0)
FLOAT_ATOL = 1e-12


def _pair(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} != {b.shape}")
    return a, b


def floats_close(a: Any, b: Any) -> bool:
    """True when every element of ``a`` and ``b`` (same shape) agrees within the tolerance;
    infinities and NaNs match only themselves (NaN matches NaN).

    >>> floats_close([1.0, np.nan, np.inf], [1.0 + 1e-12, np.nan, np.inf])
    True
    >>> floats_close(np.inf, 1e308), floats_close(0.0, 1e-13), floats_close(0.0, 1e-11)
    (False, True, False)
    """
    a, b = _pair(a, b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= FLOAT_ATOL + FLOAT_RTOL * np.maximum(np.abs(a), np.abs(b))
    return bool(np.all(same | (np.isfinite(a) & np.isfinite(b) & near)))


def float_difference(a: Any, b: Any) -> float:
    """The largest absolute difference between ``a`` and ``b`` (0 when equal, inf when one
    is infinite or NaN where the other is not): the size a report shows.

    >>> float_difference(np.nan, np.nan), float_difference(1.0, np.nan)
    (0.0, inf)
    """
    a, b = _pair(a, b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    return float(diff.max()) if diff.size else 0.0


def relative_difference(a: Any, b: Any) -> float:
    """The largest ``|a − b| / max(|a|, |b|)`` (0 where both are 0 or equal, inf where one is
    infinite or NaN and the other not): the size to hold against :data:`FLOAT_RTOL`.

    >>> relative_difference([2.0, 0.0, 8.0], [2.0, 0.0, 10.0])
    0.2
    """
    a, b = _pair(a, b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    rel = np.where(same, 0.0, np.where(np.isnan(rel), np.inf, rel))
    return float(rel.max()) if rel.size else 0.0


def assert_floats_close(actual: Any, expected: Any, what: str = "values") -> None:
    """Raise ``AssertionError`` naming ``what`` and the largest difference when ``actual``
    and ``expected`` are not :func:`floats_close`.

    >>> assert_floats_close([0.5], [0.5 + 1e-15], "centres")
    >>> assert_floats_close([0.5], [0.6], "centres")
    Traceback (most recent call last):
    ...
    AssertionError: centres differ beyond the float tolerance (...): largest difference 0.1
    """
    if not floats_close(actual, expected):
        raise AssertionError(
            f"{what} differ beyond the float tolerance (rtol {FLOAT_RTOL:g}, atol "
            f"{FLOAT_ATOL:g}): largest difference {float_difference(actual, expected):.3g}")


#: numpy functions whose float kernels numpy picks by CPU: ``exp`` and ``log`` have AVX-512F
#: versions, the others Intel's SVML on AVX-512 (elsewhere the C library's). A test that pins
#: their results bit for bit passes on one machine and fails on another.
CPU_DEPENDENT_UFUNCS = (
    "exp", "log", "log1p", "expm1", "exp2", "log2", "log10", "cbrt", "power", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh")

_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of bits·φ·2⁶⁴


class _OtherKernel:
    """A numpy ufunc whose inexact float results move by at most one ulp, as a function of
    the result alone (as a kernel: the same input always gives the same output) and a seed."""

    def __init__(self, ufunc: np.ufunc, seed: list[int]):
        self._ufunc, self._seed = ufunc, seed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ufunc, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self._ufunc(*args, **kwargs)
        arr = np.asarray(out)
        if arr.dtype.kind != "f" or arr.size == 0:
            return out
        bits = np.atleast_1d(arr).astype(np.float64).view(np.uint64) ^ np.uint64(self._seed[0])
        step = ((bits * _MIX) >> np.uint64(62)).reshape(arr.shape)  # 0-3: up, down, kept, kept
        inexact = np.isfinite(arr) & (arr != np.round(arr))  # 0, 1, 2, ±inf, NaN: exact
        moved = np.where(step == 0, np.nextafter(arr, np.inf),
                         np.where(step == 1, np.nextafter(arr, -np.inf), arr))
        moved = np.where(inexact, moved, arr).astype(arr.dtype, copy=False)
        if isinstance(out, np.ndarray) and out.ndim:
            out[...] = moved  # in place: an ``out=`` argument gets the moved values too
            return out
        return moved[()]


class other_float_kernels:  # noqa: N801 (used as a function and a context manager)
    """Make numpy's :data:`CPU_DEPENDENT_UFUNCS` round as another CPU's kernels might: every
    inexact float result moves one ulp up (a quarter of them), down (a quarter) or stays, a
    fixed function of the result and ``seed``. Only calls through the ``numpy`` module's
    attributes (``np.exp(x)``) are affected; the C code of numpy, scipy and BLAS is not.
    For tests and ``make verify-other`` only.

    >>> x = np.linspace(0.1, 5.0, 1000)
    >>> with other_float_kernels(seed=1) as kernels:
    ...     moved, again, own = np.exp(x), np.exp(x), kernels.numpy_own("exp")(x)
    >>> ulps = np.abs(moved.view(np.int64) - own.view(np.int64))
    >>> bool((moved == again).all()), int(ulps.max()), round(float((ulps > 0).mean()), 1)
    (True, 1, 0.5)
    >>> float(np.exp(0.0)), float(np.log(1.0))  # exact results stay exact
    (1.0, 0.0)
    """

    def __init__(self, seed: int = 0):
        self._seed = [int(seed) & 0xFFFFFFFFFFFFFFFF]
        self._saved = {name: getattr(np, name) for name in CPU_DEPENDENT_UFUNCS}
        self._own = {name: getattr(f, "_ufunc", f) for name, f in self._saved.items()}
        for name, ufunc in self._own.items():  # inside another one: replaces it, not stacked
            setattr(np, name, _OtherKernel(ufunc, self._seed))

    def numpy_own(self, name: str) -> np.ufunc:
        """numpy's own function ``name`` (its kernel on this CPU)."""
        return self._own[name]

    def reseed(self, seed: int) -> None:
        """Another kernel from now on (each test its own, the same in every run)."""
        self._seed[0] = int(seed) & 0xFFFFFFFFFFFFFFFF

    def restore(self) -> None:
        """The functions numpy had before (its own ones, unless inside another block)."""
        for name, ufunc in self._saved.items():
            setattr(np, name, ufunc)

    def __enter__(self) -> other_float_kernels:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


#: OpenBLAS core -> the next older x86-64 core whose kernels it can also run
#: (``OPENBLAS_CORETYPE``; Zen runs Haswell's kernels)
_OPENBLAS_LOWER = {"SapphireRapids": "Haswell", "Cooperlake": "Haswell", "SkylakeX": "Haswell",
                   "Haswell": "Sandybridge", "Zen": "Sandybridge", "Sandybridge": "Nehalem"}


def _numpy_features_to_disable() -> list[str]:
    """numpy's dispatched features that this CPU has, AVX-512 ones only where there are any
    (numpy then runs its AVX2 kernels), else all of them (numpy runs its baseline kernels).
    Only these may be named in ``NPY_DISABLE_CPU_FEATURES``: a baseline feature makes numpy
    refuse to import, a feature outside the dispatch list only warns."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    present = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    avx512 = [f for f in present if f.startswith("AVX512") or f == "X86_V4"]
    return avx512 or present


def second_float_path() -> dict[str, str]:
    """The environment that runs this machine's float code on other kernels: numpy's widest
    dispatched kernels off (``NPY_DISABLE_CPU_FEATURES``), OpenBLAS one core older
    (``OPENBLAS_CORETYPE``, on x86-64 when it names its core), the compiled DP-τCC kernels off
    (``DPTAUCC_NATIVE=0``).

    >>> env = second_float_path()
    >>> env["DPTAUCC_NATIVE"], set(env) <= {"NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE",
    ...                                      "DPTAUCC_NATIVE"}
    ('0', True)
    """
    env = {"DPTAUCC_NATIVE": "0"}
    features = _numpy_features_to_disable()
    if features:
        env["NPY_DISABLE_CPU_FEATURES"] = ",".join(features)
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # the [bench] extra is not installed: leave BLAS as it is
        return env
    cores = {lib.get("architecture") for lib in threadpool_info()
             if lib.get("internal_api") == "openblas"}
    lower = {_OPENBLAS_LOWER.get(str(core)) for core in cores}
    if len(lower) == 1 and None not in lower:
        env["OPENBLAS_CORETYPE"] = lower.pop()
    return env


if __name__ == "__main__":  # the environment of `make test-float-paths`, for `env`
    print(" ".join(f"{k}={v}" for k, v in second_float_path().items()))
