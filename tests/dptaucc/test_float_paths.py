"""The float tolerance and the second float paths (dptaucc.testing): what `make
test-float-paths` switches off really is off, and `--other-float-kernels` fails a test that
pins numpy's floats bit for bit while the tolerance still holds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dptaucc.testing import (
    FLOAT_ATOL,
    FLOAT_RTOL,
    assert_floats_close,
    floats_close,
    other_float_kernels,
    second_float_path,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_tolerance_is_the_documented_one():
    assert (FLOAT_RTOL, FLOAT_ATOL) == (1e-8, 1e-12)
    text = (REPO / "docs" / "records.md").read_text(encoding="utf-8")
    assert "`|a − b| ≤ 1e-12 + 1e-8·max(|a|, |b|)`" in text
    assert floats_close(1.0, 1.0 + 0.9e-8) and not floats_close(1.0, 1.0 + 1.1e-8)
    assert floats_close(0.0, 0.9e-12) and not floats_close(0.0, 1.1e-12)
    assert not floats_close([1.0, np.inf], [1.0, -np.inf])
    with pytest.raises(ValueError, match="shapes differ"):
        floats_close([1.0], [1.0, 2.0])


def test_other_kernels_break_a_bitwise_pin_but_not_the_tolerance():
    x = np.linspace(-30.0, 30.0, 2001)
    own = {f: getattr(np, f)(x) for f in ("exp", "expm1", "cbrt", "tanh")}
    with other_float_kernels(seed=5):
        moved = {f: getattr(np, f)(x) for f in own}
        out = np.empty_like(x)
        np.exp(x, out=out)  # an out= argument is moved too
    for f in own:
        assert not np.array_equal(moved[f], own[f]), f
        assert_floats_close(moved[f], own[f], f)
    assert np.array_equal(out, moved["exp"])
    assert np.array_equal(np.exp(x), own["exp"])  # restored


def _probe(tmp_path: Path) -> Path:
    """A test pinning np.exp bit for bit, beside a copy of the suite's conftest.py."""
    shutil.copy(REPO / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(textwrap.dedent("""
        import numpy as np
        try:  # numpy's own ufuncs, whatever np.exp is
            from numpy._core import umath
        except ImportError:  # numpy < 2
            from numpy.core import umath

        def test_pins_exp_bit_for_bit():
            x = np.linspace(0.1, 5.0, 500)
            assert np.exp(x).tolist() == umath.exp(x).tolist()
    """))
    return tmp_path


@pytest.mark.parametrize("option, passes", [((), True), (("--other-float-kernels",), False)])
def test_the_pytest_option_fails_a_test_that_pins_numpy_floats(tmp_path, option, passes):
    probe = _probe(tmp_path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--rootdir", str(probe), *option, str(probe / "test_probe.py")],
                         capture_output=True, text=True, cwd=probe, timeout=300)
    assert (run.returncode == 0) == passes, run.stdout[-2000:]
    assert ("1 passed" if passes else "1 failed") in run.stdout


def test_the_second_float_path_switches_the_kernels_off():
    env = second_float_path()
    assert env["DPTAUCC_NATIVE"] == "0"
    script = textwrap.dedent("""
        import json
        import numpy as np
        from threadpoolctl import threadpool_info
        try:
            from numpy._core._multiarray_umath import __cpu_features__
        except ImportError:
            from numpy.core._multiarray_umath import __cpu_features__
        from dptaucc.kernels import native_kernels
        print(json.dumps({"features": __cpu_features__, "native": native_kernels() is not None,
                          "cores": sorted({lib.get("architecture") or "" for lib in
                                           threadpool_info()
                                           if lib.get("internal_api") == "openblas"})}))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=300, check=True)
    seen = json.loads(run.stdout)
    assert not seen["native"]
    off = env.get("NPY_DISABLE_CPU_FEATURES", "").split(",")
    assert all(not seen["features"][f] for f in off if f), off
    if "OPENBLAS_CORETYPE" in env:
        assert seen["cores"] == [env["OPENBLAS_CORETYPE"]]
