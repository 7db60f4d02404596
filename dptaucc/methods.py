"""One place per method: the facts of each built-in method, declared beside its estimator.

Every built-in estimator module declares ``METHOD = MethodInfo(...)``: its config name, display
label, colour and line style, family, neighbouring relation, the input it accepts (its
``domain``), modes and protocol facts. This
module collects them lazily (importing an estimator module only when its facts are asked for);
the benchmark's configs, figures, report and validation read them from here.

Adding a built-in method: its package (estimator + ``METHOD``), its config
``conf/algorithm/<name>.yaml``, its audit scenarios (``METHOD.audit``, docs/audit.md), its docs
page, and its module in :data:`BUILTIN_MODULES`.

Examples
--------
>>> from dptaucc.methods import method
>>> info = method("dp_taucc")
>>> info.label, info.neighbours, info.domain, info.modes
('DP-τCC', 'one cell +1', 'counts', ('corrected', 'paper'))
>>> method("fccm").private
False
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

__all__ = ["MethodInfo", "BUILTIN_MODULES", "COUNTS", "NON_NEGATIVE_REALS", "DOMAINS", "method",
           "methods"]

#: a method's input domain: whole non-negative counts (fractional values refused before any
#: work), or any non-negative reals
COUNTS = "counts"
NON_NEGATIVE_REALS = "non-negative reals"
DOMAINS = (COUNTS, NON_NEGATIVE_REALS)


@dataclass(frozen=True)
class MethodInfo:
    """The public facts of one method (nothing here depends on data).

    Examples
    --------
    >>> from dptaucc.methods import MethodInfo
    >>> MethodInfo("mine", "mypkg.Mine", "Mine", "tab:pink", "-", "k-means",
    ...            "one row replaced").private
    True
    """

    #: config name (``conf/algorithm/<name>.yaml``) and the ``algorithm`` column of the records
    name: str
    #: import path of the estimator class
    estimator: str
    #: display name in figures and the report
    label: str
    #: matplotlib colour and line style in the figures
    color: str
    linestyle: str
    #: what kind of method it is (co-clustering, k-means, NMF, ...)
    family: str
    #: the neighbouring relation its corrected-mode guarantee holds for, in short
    neighbours: str
    #: its modes (empty for a non-private method, which takes no ε and no mode)
    modes: tuple[str, ...] = ("corrected", "paper")
    #: ``"paper"``: a private method of the paper's Fig. 2; ``"reference"``: the paper's
    #: non-private reference (Fast-τCC); ``"extra"``: another method of the benchmark;
    #: ``"variant"``: a variant of one of them under another neighbour relation, drawn only in
    #: the comparison under that relation (DP-τCC for one row replaced)
    role: str = "extra"
    #: (ε, δ)-DP: the job's δ is passed
    uses_delta: bool = False
    #: a co-clusterer (``column_labels_``, ``contingency_``, τ statistics)
    coclusters: bool = False
    #: the experiment protocol runs it only for ε below this (None: every ε)
    max_epsilon: float | None = None
    #: import path of the module declaring its privacy-audit scenarios (a ``scenarios()``
    #: returning :class:`dptaucc.audit.scenarios.AuditScenarios`, or ``"module:function"``);
    #: imported only by the audit. None: the audit's default scenarios (docs/audit.md)
    audit: str | None = None
    #: modes whose DP outputs pass through float kernels that the CPU chooses (numpy's
    #: vector maths, BLAS) so that a last-bit difference can flip a discrete outcome: another
    #: machine may draw other noise for a few seeds (measured: docs/records.md)
    float_path: tuple[str, ...] = ()
    #: its corrected-mode ε also holds when one whole row is replaced (directly, or as one
    #: removal plus one addition by group privacy): drawn in the one-relation comparison
    row_level: bool = False
    #: matplotlib marker of its points in the figures (with ``color``, distinct per method)
    marker: str = "o"
    #: the values of X it accepts (:data:`DOMAINS`), decided by its privacy calibration: a
    #: method whose guarantee covers any change of one row takes :data:`NON_NEGATIVE_REALS`;
    #: one that releases integer counts of X with integer noise takes :data:`COUNTS` (a
    #: fractional count would come out with its fractional part exact). The estimator reads
    #: it (``_domain``), the input contract test checks both agree.
    domain: str = NON_NEGATIVE_REALS

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"MethodInfo {self.name!r}: domain must be one of "
                             f"{', '.join(map(repr, DOMAINS))}, got {self.domain!r}")

    @property
    def private(self) -> bool:
        """Takes ``epsilon`` and ``mode`` (a non-private method runs once per seed)."""
        return bool(self.modes)


#: config name -> module that declares the built-in method's ``METHOD``, in display order
BUILTIN_MODULES = {
    "dp_taucc": "dptaucc.dp_taucc",
    "dp_taucc_row": "dptaucc.dp_taucc_row",
    "fast_taucc": "dptaucc.fast_taucc",
    "dp_kmeans": "dptaucc.baselines.dp_kmeans",
    "dphd": "dptaucc.baselines.dphd.estimator",
    "dpnmf": "dptaucc.baselines.nmf_dp.model",
    "dpm": "dptaucc.baselines.dpm.estimator",
    "colored_noise": "dptaucc.baselines.colored_noise.estimator",
    "fccm": "dptaucc.baselines.fccm.collaborative",
}


@cache
def method(name: str) -> MethodInfo:
    """The facts of the built-in method ``name`` (``KeyError`` for another name)."""
    if name not in BUILTIN_MODULES:
        raise KeyError(f"no built-in method {name!r}; built-in: {', '.join(BUILTIN_MODULES)}")
    info = importlib.import_module(BUILTIN_MODULES[name]).METHOD
    if info.name != name:
        raise ValueError(f"{BUILTIN_MODULES[name]}.METHOD is named {info.name!r}, not {name!r}")
    return info


def methods() -> tuple[MethodInfo, ...]:
    """Every built-in method, in display order.

    Examples
    --------
    >>> from dptaucc.methods import methods
    >>> [m.name for m in methods() if not m.private]
    ['fast_taucc', 'fccm']
    """
    return tuple(method(name) for name in BUILTIN_MODULES)
