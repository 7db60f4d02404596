"""Seeded fits give the records they gave before the kernels were rewritten: a faster kernel
must not change a seeded result.

Integers (labels, released counts, iteration counts) are pinned exactly, as SHA-256 digests.
Floats (DP-KMeans and DPM centres, DPM's released sums and interval σ, Fast-τCC's contingency
table, Smith's quantiles) are pinned as values and compared within the project's one float
tolerance (:mod:`dptaucc.testing`): numpy and BLAS pick other kernels on other CPUs (paper-mode
DP-KMeans's float Laplace runs through numpy's ``exp``/``log``/``log1p``/``expm1``/``cbrt``,
whose AVX-512 versions differ from the C library's in the last bit), so its centres differ in
their last digits from one machine to another while its labels do not.

The pins live in ``seeded_records.json`` beside this file. The integers were first pinned on
an x86-64 machine with AVX-512 and agree on one without it; ``python
tests/dptaucc/test_seeded_records.py --repin`` rewrites the file from this machine's fits:
only for a change that is meant to change seeded results, said so in its commit.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dptaucc import DPTauCC, FastTauCC
from dptaucc.testing import assert_floats_close

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64",
    reason="integers pinned on x86-64 Linux, whose C library rounds exp/log as pinned")

PINS = Path(__file__).with_name("seeded_records.json")


def _matrix() -> sp.csr_matrix:
    rng = np.random.default_rng(7)
    rows, cols = np.repeat(np.arange(3), 20), np.repeat(np.arange(3), 15)
    return sp.csr_matrix(rng.poisson(np.where(rows[:, None] == cols[None, :], 4.0, 0.4)))


def _dpm_matrix() -> sp.csr_matrix:
    rng = np.random.default_rng(7)
    rows, cols = np.repeat(np.arange(4), 60), np.repeat(np.arange(4), 30)
    return sp.csr_matrix(rng.poisson(np.where(rows[:, None] == cols[None, :], 3.0, 0.2)))


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.int64).tobytes()).hexdigest()[:16]


def _record(outputs: dict) -> dict:
    """Integer outputs as digests, float outputs as values."""
    arrays = {k: np.asarray(v) for k, v in outputs.items()}
    return {"integers": {k: _digest(a) for k, a in arrays.items() if a.dtype.kind in "biu"},
            "floats": {k: a.astype(float).tolist() for k, a in arrays.items()
                       if a.dtype.kind not in "biu"}}


def seeded_fits() -> dict[str, dict]:
    """DP-τCC, DP-KMeans (both modes) and Fast-τCC on a small planted matrix."""
    from dptaucc.baselines.dp_kmeans import DPKMeans

    X = _matrix()
    seen = {}
    for mode in ("corrected", "paper"):
        for seed, eps in ((0, 0.5), (1, 5.0)):
            m = DPTauCC(3, 3, epsilon=eps, random_state=seed, mode=mode).fit(X)
            seen[f"dp_taucc/{mode}/{seed}/{eps}"] = _record(  # paper mode: float table
                {"row_labels_": m.row_labels_, "column_labels_": m.column_labels_,
                 "dp_row_labels_": m.dp_row_labels_, "contingency_": m.contingency_})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # paper mode's bounds-from-data warning
                k = DPKMeans(3, epsilon=eps, random_state=seed, mode=mode).fit(X)
            outputs = {"cluster_centers_": k.cluster_centers_, "predict": k.predict(X),
                       "n_iter_": [k.n_iter_]}
            if mode == "paper":
                outputs["labels_"] = k.labels_
            else:
                outputs["cluster_sizes_"] = k.cluster_sizes_
            seen[f"dp_kmeans/{mode}/{seed}/{eps}"] = _record(outputs)
    for seed in (0, 1):
        m = FastTauCC(4, 4, random_state=seed).fit(X.astype(float) / 3)
        seen[f"fast_taucc/{seed}"] = _record(
            {"row_labels_": m.row_labels_, "column_labels_": m.column_labels_,
             "contingency_": m.contingency_})
    return seen


def seeded_dpm_fits() -> dict[str, dict]:
    """DPM: its quantile picks one of thousands of grid intervals, its tree one of hundreds of
    splits (the exponential mechanism's row-by-row path, :mod:`dptaucc.privacy.wide_choice`)."""
    from dptaucc.baselines.dpm import DPM
    from dptaucc.baselines.dpm.interval import smith_quantile

    from dptaucc.privacy import PrivacyLedger, make_sampler

    X = _dpm_matrix()
    seen = {}
    for mode in ("corrected", "paper"):
        for seed, eps in ((0, 1.0), (1, 5.0)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # paper mode's non-private steps
                m = DPM(epsilon=eps, random_state=seed, mode=mode).fit(X)
            seen[f"dpm/{mode}/{seed}/{eps}"] = _record(  # paper mode: float leaf counts
                {"cluster_centers_": m.cluster_centers_, "leaf_sums_": m.leaf_sums_,
                 "leaf_counts_": m.leaf_counts_, "interval_sigma_": [m.interval_sigma_],
                 "predict": m.predict(X)})
    values = np.random.default_rng(2).exponential(size=5000)
    seen["smith_quantile"] = _record({"quantiles": [
        smith_quantile(values, 0.65, 0.0, 10.0, eps, 1.65, make_sampler(s), PrivacyLedger())
        for s in range(5) for eps in (0.01, 1.0)]})
    return seen


def check_against_pins(seen: dict[str, dict], pins: dict[str, dict]) -> None:
    """Integers exactly, floats within the float tolerance; every failure named."""
    problems = []
    for key, record in seen.items():
        pinned = pins.get(key)
        if pinned is None:
            problems.append(f"{key}: not pinned")
            continue
        if record["integers"] != pinned["integers"]:
            changed = sorted(k for k in {*record["integers"], *pinned["integers"]}
                             if record["integers"].get(k) != pinned["integers"].get(k))
            problems.append(f"{key}: integers changed: {', '.join(changed)}")
        if sorted(record["floats"]) != sorted(pinned["floats"]):
            problems.append(f"{key}: float outputs {sorted(record['floats'])} != pinned "
                            f"{sorted(pinned['floats'])}")
            continue
        for name, values in record["floats"].items():
            try:
                assert_floats_close(values, pinned["floats"][name], f"{key}: {name}")
            except (AssertionError, ValueError) as exc:
                problems.append(str(exc))
    assert not problems, "\n".join(problems)


def _pins() -> dict[str, dict]:
    return json.loads(PINS.read_text(encoding="utf-8"))


def test_seeded_fits_keep_their_records():
    check_against_pins(seeded_fits(), _pins())


def test_seeded_dpm_fits_keep_their_records():
    check_against_pins(seeded_dpm_fits(), _pins())


def test_the_check_fails_on_a_changed_label_and_a_drifted_float():
    """The comparison itself: one label changed fails exactly; a float moved by 1e-12
    relative passes, by 1e-6 fails."""
    def record(labels, centres):
        return {"a": _record({"labels": labels, "centres": centres})}

    pins = record([0, 1, 1], [0.25, 3.0])
    check_against_pins(record([0, 1, 1], [0.25, 3.0 + 3e-12]), pins)
    with pytest.raises(AssertionError, match="a: integers changed: labels"):
        check_against_pins(record([0, 1, 0], [0.25, 3.0]), pins)
    with pytest.raises(AssertionError, match="a: centres differ beyond the float tolerance"):
        check_against_pins(record([0, 1, 1], [0.25, 3.000003]), pins)


if __name__ == "__main__":
    if sys.argv[1:] != ["--repin"]:
        raise SystemExit("usage: python tests/dptaucc/test_seeded_records.py --repin")
    PINS.write_text(json.dumps({**seeded_fits(), **seeded_dpm_fits()}, indent=1,
                               sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {PINS}")
