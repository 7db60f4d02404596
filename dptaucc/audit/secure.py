"""Auditing the secure path (``python -m dptaucc.audit --secure``).

Two things are audited on the secure samplers:

* **call sites, redrawn on them** (:func:`secure_factory`): every fit gets a
  :class:`ConditionedSecureSampler` — OpenDP's exact samplers and OS words for every mechanism
  draw, exactly as ``secure=True``, but a *seeded* generator for the choices that are not
  mechanism noise (initial partitions, projections, DPHD's seeds). The call-site audit
  conditions on that data-independent randomness (the same fit seed on D and on D'), which the
  secure path would otherwise make differ between the two sides. The noise of every audited
  call, and of each of its redraws, comes from the OS. Only the audit uses this sampler.
* **the samplers themselves, fresh** (:func:`dptaucc.audit.primitives.fresh_sampler_rows`):
  each primitive's output drawn
  from a *new* :class:`~dptaucc.privacy.SecureSampler`, one per output
  (:func:`dptaucc.audit.primitives.audit_primitive` with ``fresh=True``). A sampler that
  carries state a seed can reproduce (a numpy Generator seeded with a constant) draws the same
  first values in every fresh sampler, so the outputs no longer depend on randomness but on
  the input alone: ε_lower far above ε, where one long-lived sampler (whose later draws still
  look random) passes.
"""

from __future__ import annotations

import numpy as np

from dptaucc.privacy.samplers import SecureSampler

__all__ = ["ConditionedSecureSampler", "secure_factory", "secure_section"]


class ConditionedSecureSampler(SecureSampler):
    """A secure sampler whose ``rng`` (data-independent choices only) is seeded.

    >>> a, b = ConditionedSecureSampler(3), ConditionedSecureSampler(3)
    >>> bool(a.rng.integers(1000) == b.rng.integers(1000)), a.exact  # same public choices
    (True, True)
    >>> bool((a.discrete_laplace(64, 5.0) != b.discrete_laplace(64, 5.0)).any())  # OS noise
    True
    """

    def __init__(self, seed: int):
        super().__init__()
        self.rng = np.random.default_rng(seed)


def _construct_secure(alg: dict, kwargs: dict, random_state: int):
    from dptaucc.bench.validate import make_estimator

    return make_estimator(alg, {**kwargs, "secure": True},
                          random_state=ConditionedSecureSampler(int(random_state)))


def secure_factory(alg: dict, kwargs: dict):
    """``random_state -> estimator`` on the secure samplers (module docstring).

    >>> build = secure_factory({"name": "dp_taucc", "_target_": "dptaucc.DPTauCC"},
    ...                        {"epsilon": 0.5})
    >>> a, b = build(7), build(7)
    >>> a.secure, a.epsilon, type(a.random_state).__name__
    (True, 0.5, 'ConditionedSecureSampler')
    >>> bool(a.random_state.rng.integers(1000) == b.random_state.rng.integers(1000))
    True
    """
    import functools

    return functools.partial(_construct_secure, alg, dict(kwargs))


def secure_section(table) -> list[str]:
    """REPORT lines for ``audit_secure.parquet`` (``python -m dptaucc.audit --secure``), if
    stored: per method the call sites' largest ε_lower/claim and the ledger verdicts, and the
    fresh-sampler rows.

    >>> import tempfile
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"method": ["dpm"] * 3, "scope": ["call-site"] * 2 + ["ledger"],
    ...                      "epsilon_lower": [0.45, 0.2, 1.0], "epsilon_claimed": [0.5, 0.5, 1.0],
    ...                      "verdict": ["ok", "violation", "ok"], "n_fits": [1000, 1000, 4]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     rows.to_parquet(f"{d}/audit_secure.parquet")
    ...     lines = secure_section(f"{d}/audit_secure.parquet")
    >>> lines[-3:-1]
    ['| dpm | call-site | 2 | 1 | 0.90 | 1,000 |', '| dpm | ledger | 1 | 0 | nan | 4 |']
    >>> secure_section("no/such/audit_secure.parquet")  # not run: no section
    []
    """
    from pathlib import Path

    path = Path(table)
    if not path.exists():
        return []
    import pandas as pd

    df = pd.read_parquet(path)
    lines = ["### The secure path", "",
             "`python -m dptaucc.audit --secure`: each method's call sites redrawn on the secure "
             "samplers (OpenDP's exact samplers and OS words; data-independent choices seeded "
             "so both sides share them), its ledger checked on secure fits, and each primitive "
             "drawn from fresh secure samplers, one per output.", "",
             "| method | scope | records | violations | largest ε_lower/claim | draws per side |",
             "|---|---|---|---|---|---|"]
    for (method, scope), d in df.groupby(["method", "scope"], sort=False):
        ratio = (d["epsilon_lower"] / d["epsilon_claimed"]).max() if scope != "ledger" \
            else float("nan")
        lines.append(f"| {method} | {scope} | {len(d)} | {int((d['verdict'] == 'violation').sum())}"
                     f" | {ratio:.2f} | {int(d['n_fits'].max()):,} |")
    return [*lines, ""]
