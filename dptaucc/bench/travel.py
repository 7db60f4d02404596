"""Which fields of a record travel between machines, and how two records of one job compare.

Every column of a record (:data:`dptaucc.bench.run.COLUMNS`, and the ``p_*`` parameters) is
one of four kinds (docs/records.md):

* ``exact``: the same on every machine. The job's identity and parameters, the data's shape,
  the status, the cluster counts found, the privacy flags and the named non-private steps;
* ``float``: floats that pass through kernels the CPU chooses (numpy's ``exp``/``log``/
  ``cbrt``, BLAS, the C library): equal within the float tolerance of :mod:`dptaucc.testing`.
  The ε/δ spent and the metrics (NMI and ARI of the same labels, τ of the same table);
* ``ledger``: the JSON ledger, entry by entry: its words exactly, its numbers within the
  float tolerance;
* ``machine``: about the machine and the moment (times, memory, load, provenance), never
  compared.

:func:`compare_records` lists the fields in which two records of one job differ.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dptaucc.testing import float_difference, floats_close, relative_difference

__all__ = ["EXACT_FIELDS", "FLOAT_FIELDS", "MACHINE_FIELDS", "LEDGER_FIELD", "OUTCOME_FIELDS",
           "FieldDifference", "field_kind", "compare_records"]

#: the same on every machine (``p_*`` parameter columns too)
EXACT_FIELDS = (
    "run_id", "experiment", "algorithm", "mode", "dataset", "seed", "epsilon",
    "end_to_end_dp", "non_private_steps", "private", "n_rows", "n_cols", "nnz", "n_classes",
    "row_labels_private", "k_found", "l_found", "status", "warnings", "random_state")
#: floats computed through CPU-chosen kernels: equal within the float tolerance
FLOAT_FIELDS = (
    "delta", "epsilon_spent", "epsilon_mechanisms", "delta_spent", "nmi_rows", "ari_rows",
    "nmi_rows_private", "ari_rows_private", "nmi_rows_released", "ari_rows_released",
    "nmi_cols", "ari_cols", "tau_rc", "tau_cr", "tau_hat_rc", "tau_hat_cr")
#: the ledger (JSON): words exactly, numbers within the float tolerance
LEDGER_FIELD = "ledger"
#: about the machine and the moment; ``error`` is a traceback naming this machine's paths
MACHINE_FIELDS = (
    "fit_time_s", "eval_time_s", "peak_rss_mb", "error", "git_sha", "versions", "started_at",
    "blas_threads", "python", "os", "cpu", "blas", "octave", "load_1m", "other_busy_cpus",
    "slurm_job_id", "slurm_array_task", "host", "workers")
#: what a fit found (scores of its labels, cluster counts): the fields in which a method whose
#: DP outputs pass through a CPU-dependent float path may legitimately differ
OUTCOME_FIELDS = (
    "nmi_rows", "ari_rows", "nmi_rows_private", "ari_rows_private", "nmi_rows_released",
    "ari_rows_released", "nmi_cols", "ari_cols", "tau_rc", "tau_cr", "tau_hat_rc",
    "tau_hat_cr", "k_found", "l_found")

_KINDS = {**{f: "exact" for f in EXACT_FIELDS}, **{f: "float" for f in FLOAT_FIELDS},
          **{f: "machine" for f in MACHINE_FIELDS}, LEDGER_FIELD: "ledger"}


def field_kind(name: str) -> str:
    """``exact``, ``float``, ``ledger`` or ``machine``; a column this module does not know
    (one the engine adds later) is compared exactly.

    >>> field_kind("nmi_rows"), field_kind("p_h"), field_kind("fit_time_s")
    ('float', 'exact', 'machine')
    """
    return _KINDS.get(name, "exact")


@dataclass(frozen=True)
class FieldDifference:
    """One field in which two records of a job differ.

    >>> a = {"run_id": "x", "epsilon_spent": 1.0, "status": "ok"}
    >>> diffs = compare_records(a, {**a, "epsilon_spent": 1.25, "status": "failed"})
    >>> [(d.field, d.size, d.relative, d.within_tolerance) for d in diffs]
    [('epsilon_spent', 0.25, 0.2, False), ('status', inf, inf, False)]
    """

    field: str
    committed: Any
    here: Any
    #: the largest absolute difference of the numbers in it (inf when not comparable)
    size: float
    within_tolerance: bool
    #: the largest relative difference of the numbers in it (inf when not comparable)
    relative: float = math.inf


def _plain(value: Any) -> Any:
    """A table cell or a record value as plain Python: missing (None, NaN, pandas NA) ->
    None, the store's "inf" -> inf, numpy scalars -> Python numbers."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(value, value)
    if hasattr(value, "item") and not isinstance(value, (list, dict)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    return a == b if not (_number(a) and _number(b)) else float(a) == float(b)


def _float_field(name: str, a: Any, b: Any) -> FieldDifference | None:
    if a is None and b is None:
        return None
    if not (_number(a) and _number(b)):
        return FieldDifference(name, a, b, math.inf, False)
    if float(a) == float(b):
        return None
    return FieldDifference(name, a, b, float_difference(a, b), floats_close(a, b),
                           relative_difference(a, b))


def _ledger_numbers(value: Any) -> tuple[list, list[float]]:
    """The ledger's words (its structure with every number replaced) and its numbers."""
    numbers: list[float] = []

    def walk(node):
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if _number(node):
            numbers.append(float(node))
            return "#"
        return node

    return walk(json.loads(value) if isinstance(value, str) else value), numbers


def _ledger_field(a: Any, b: Any) -> FieldDifference | None:
    if a == b:
        return None
    if a is None or b is None:
        return FieldDifference(LEDGER_FIELD, a, b, math.inf, False)
    (words_a, nums_a), (words_b, nums_b) = _ledger_numbers(a), _ledger_numbers(b)
    if words_a != words_b or len(nums_a) != len(nums_b):
        return FieldDifference(LEDGER_FIELD, a, b, math.inf, False)
    if nums_a == nums_b:
        return None
    return FieldDifference(LEDGER_FIELD, a, b, float_difference(nums_a, nums_b),
                           floats_close(nums_a, nums_b), relative_difference(nums_a, nums_b))


def compare_records(committed: Mapping, here: Mapping) -> list[FieldDifference]:
    """The fields (of either record; machine fields left out) in which ``here`` differs from
    ``committed``, with the size of each difference.

    >>> a = {"run_id": "x", "nmi_rows": 0.5, "k_found": 3, "fit_time_s": 1.0}
    >>> compare_records(a, {**a, "fit_time_s": 9.0})  # times are the machine's
    []
    >>> [(d.field, d.within_tolerance) for d in compare_records(a, {**a, "nmi_rows": 0.5 + 1e-15})]
    [('nmi_rows', True)]
    >>> [(d.field, d.size) for d in compare_records(a, {**a, "k_found": 2})]
    [('k_found', 1.0)]
    """
    out = []
    for name in sorted({*committed, *here}):
        kind = field_kind(name)
        if kind == "machine":
            continue
        a, b = _plain(committed.get(name)), _plain(here.get(name))
        if kind == "float":
            diff = _float_field(name, a, b)
        elif kind == "ledger":
            diff = _ledger_field(a, b)
        elif _equal(a, b):
            diff = None
        else:
            numbers = _number(a) and _number(b)
            diff = FieldDifference(name, a, b, float_difference(a, b) if numbers else math.inf,
                                   False, relative_difference(a, b) if numbers else math.inf)
        if diff is not None:
            out.append(diff)
    return out
