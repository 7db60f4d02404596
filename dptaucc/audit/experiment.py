"""The audit experiment: every method of the suite, both layers, a gate (``make audit``).

Reads ``conf/audit/audit.yaml`` (the grid, the fit budgets, a ``quick`` size), builds each
estimator from its ``conf/algorithm/<name>.yaml`` (packaged or in ``$DPTAUCC_CONFIG_PATH``;
``_target_`` and parameters; "classes"
means the pair's planted number of clusters) and runs, per method:

* ``scope = "end-to-end"``: every scenario the method declares (found beside the method:
  :func:`~dptaucc.audit.methods.method_audits`) per mode and ε
  (:mod:`dptaucc.audit.endtoend`), claim = the fit's ε;
* ``scope = "call-site"`` (corrected mode): every call of a fit under the method's
  :func:`~dptaucc.audit.methods.call_site_setup` (:mod:`dptaucc.audit.callsite`), claim = the
  ε its ledger charged;
* ``scope = "ledger"`` (every private scenario and setup, one fit on D and one on D'): each
  call's charge against what its noise costs by the independent privacy map, and the ledger's
  totals against the ε (δ) given (:mod:`dptaucc.audit.ledger_check`); not statistical, so it
  takes no share of α;
* ``scope = "refit"`` (once per private method, its first corrected job, seeded path): one
  estimator refitted on D after fits on D' with other settings must equal a fresh fit on D
  (:mod:`dptaucc.audit.refit_check`); not statistical either.
* ``scope = "sweep"`` (once per private method, beside the refit check, seeded path): every
  call's exact cost, declared move and path, and the fitted attributes, on random
  neighbouring pairs (:mod:`dptaucc.audit.neighbour_sweep`); exact, no α.

With ``secure=True`` (``--secure``, :func:`plan`) the call sites and the ledger run on the
secure samplers (:mod:`dptaucc.audit.secure`), and a ``scope = "sampler"`` job draws each
primitive from fresh secure samplers; the end-to-end layer stays on the seeded path.

One record per (scope, scenario or call) in a parquet table, rewritten after every audit. The
level α of a method's audit is split evenly over its records (Bonferroni), so all its bounds
hold at once with probability 1 − α. :func:`violations` is the gate: corrected-mode records
whose ε_lower exceeds their claim. A catalogue bug (``bug``) is planted in every worker.
Needs the ``[bench]`` extra (pandas, pyarrow).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from joblib import Parallel, delayed

from .callsite import audit_call_site, call_sites, path_event
from .endtoend import audit_release
from .events import applicable
from .methods import algorithm_config, call_site_setup, method_audit, method_audits
from .pairs import other_form
from .redrawn import audit_call_site_redrawn
from .scenarios import CallSiteSetup, Scenario
from .stats import cp_lower, cp_upper
from .workers import bug_context

__all__ = ["AuditJob", "load_config", "plan", "job_alpha", "other_form_twin", "run_job", "run_all",
           "estimate", "unit_draws", "unit_held_out", "measurable_max", "violations",
           "RECORD_COLUMNS", "PRIMITIVES_JOB"]

#: scopes of the deterministic checks (no ε bound, no share of α): the ledger and the refit
CHECK_SCOPES = ("ledger", "refit", "sweep")
#: the name of the seeded primitives job in ``--methods`` and in its records' ``method``
PRIMITIVES_JOB = "primitives"

RECORD_COLUMNS = [
    "method", "mode", "epsilon", "delta", "epsilon_spent", "end_to_end_dp", "epsilon_lower",
    "scope", "step", "epsilon_claimed", "verdict", "event", "epsilon_lower_max", "n_fits",
    "time_s", "pair", "events", "alpha", "bug", "seed", "size", "git_sha", "versions",
    "started_at", "limit", "epsilon_pair", "pair_how",
]


def _conf_dir() -> Path:
    return Path(str(resources.files("dptaucc.conf")))


def load_config(size: str = "full") -> dict:
    """``conf/audit/audit.yaml`` with the ``quick`` overrides applied when ``size="quick"``.

    >>> full, quick = load_config(), load_config("quick")
    >>> quick["n_fits"] < full["n_fits"], quick["size"], "dp_taucc" in full["methods"]
    (True, 'quick', True)
    >>> load_config("tiny")
    Traceback (most recent call last):
    ...
    ValueError: size must be 'full' or 'quick', got 'tiny'
    """
    if size not in ("full", "quick"):
        raise ValueError(f"size must be 'full' or 'quick', got {size!r}")
    cfg = yaml.safe_load((_conf_dir() / "audit" / "audit.yaml").read_text(encoding="utf-8"))
    quick = cfg.pop("quick", {}) or {}
    if size == "quick":
        for key, value in quick.items():
            cfg[key] = value
    cfg["size"] = size
    return cfg


def _construct(alg: dict, kwargs: dict, random_state: int):
    """Build one estimator from its algorithm config, as the benchmark does (module-level, so
    a factory pickles to joblib workers)."""
    from dptaucc.bench.validate import make_estimator

    return make_estimator(alg, kwargs, random_state=random_state)


@dataclass(frozen=True)
class AuditJob:
    """One audit of a config: a method in a mode at an ε (end to end), or its call sites.

    >>> AuditJob("dp_taucc", "corrected", 1.0, 4000).label
    'dp_taucc/corrected ε=1'
    >>> AuditJob("fast_taucc", None, None, 4000).label, AuditJob("dpm", "corrected", None, 10,
    ...                                                         scope="call-site").label
    ('fast_taucc (not DP)', 'dpm/corrected call sites')
    """

    method: str
    mode: str | None  # None: a non-private method (one audit, no ε)
    epsilon: float | None  # end to end: the fit's ε; call sites: None (the setup's ε)
    n_fits: int
    time_limit: float | None = None
    scope: str = "end-to-end"
    secure: bool = False  # fits on the secure samplers (dptaucc.audit.secure)

    @property
    def label(self) -> str:
        if self.scope == "sampler":
            return "secure samplers, fresh" if self.secure else "primitives (seeded)"
        if self.mode is None:
            return f"{self.method} (not DP)"
        on = " (secure)" if self.secure else ""
        if self.scope == "call-site":
            return f"{self.method}/{self.mode} call sites{on}"
        return f"{self.method}/{self.mode} ε={self.epsilon:g}{on}"

    def factory(self, overrides: tuple[tuple[str, object], ...] = ()):
        """``random_state -> estimator`` with the config's parameters for this job's pair,
        then ``overrides`` (a scenario's settings)."""
        alg = algorithm_config(self.method)
        n_clusters = method_audit(self.method).pair.n_clusters
        kwargs = {k: (n_clusters if v in ("classes", "col_classes") else v)
                  for k, v in (alg.get("params") or {}).items()}
        if alg.get("private", True):
            if self.epsilon is not None:
                kwargs["epsilon"] = float(self.epsilon)
            kwargs["mode"] = self.mode
        kwargs.update(dict(overrides))
        if self.secure:
            from .secure import secure_factory

            return secure_factory(alg, kwargs)
        return functools.partial(_construct, alg, kwargs)


def plan(cfg: dict, methods: list[str] | None = None, secure: bool = False) -> list[AuditJob]:
    """The audits of a config: private methods × modes × ε end to end, plus their call sites
    (modes ``call_site_modes``); non-private methods once. ``secure``: the corrected call
    sites of the private methods on the secure samplers (``secure_call_site_draws`` draws per
    call), then the fresh-sampler job.

    >>> cfg = load_config("quick")
    >>> [job.label for job in plan(cfg, ["dp_taucc", "fast_taucc"])]  # call sites first
    ['dp_taucc/corrected call sites', 'dp_taucc/corrected ε=1', 'fast_taucc (not DP)']
    >>> [job.label for job in plan(cfg, ["dp_taucc", "fast_taucc"], secure=True)]
    ['dp_taucc/corrected call sites (secure)', 'secure samplers, fresh']

    Without ``methods``, or with :data:`PRIMITIVES_JOB` among them, the seeded primitives
    job comes first (every primitive of :mod:`dptaucc.audit.primitives` on its worst-case
    pair, ``primitive_outputs`` outputs per side: the paths no method's scenario takes, in
    seconds):

    >>> [job.label for job in plan(cfg, ["primitives", "fast_taucc"])]
    ['primitives (seeded)', 'fast_taucc (not DP)']
    >>> [job.label for job in plan(cfg, ["primitives"], secure=True)]  # no method named
    ['secure samplers, fresh']
    """
    if secure:
        return _plan_secure(cfg, None if methods is None else
                            [m for m in methods if m != PRIMITIVES_JOB])
    jobs = []
    if methods is None or PRIMITIVES_JOB in methods:
        jobs.append(AuditJob(PRIMITIVES_JOB, "corrected", None,
                             int(cfg.get("primitive_outputs", 400_000)), scope="sampler"))
        methods = None if methods is None else [m for m in methods if m != PRIMITIVES_JOB]
        if methods == []:
            return jobs
    per_method = cfg.get("n_fits_per_method") or {}
    for name in methods or cfg["methods"]:
        alg = algorithm_config(name)
        n = int(per_method.get(name, cfg["n_fits"]))
        limit = cfg.get("time_limit")
        if alg.get("private", True):  # call sites first: a 2x error there shows in seconds
            has = alg.get("modes") or ("paper", "corrected")  # the modes the method has
            if call_site_setup(name):
                jobs += [AuditJob(name, mode, None, int(cfg["call_site_draws"]), limit,
                                  "call-site") for mode in cfg.get("call_site_modes", [])
                         if mode in has]
            jobs += [AuditJob(name, mode, float(eps), n, limit)
                     for mode in cfg["modes"] if mode in has for eps in cfg["epsilons"]]
        else:
            jobs.append(AuditJob(name, None, None, n, limit))
    return jobs


def _plan_secure(cfg: dict, methods: list[str] | None) -> list[AuditJob]:
    draws = int(cfg.get("secure_call_site_draws", cfg["call_site_draws"]))
    jobs = [AuditJob(name, "corrected", None, draws, cfg.get("time_limit"), "call-site",
                     secure=True)
            for name in (cfg["methods"] if methods is None else methods)
            if algorithm_config(name).get("private", True) and call_site_setup(name)]
    return [*jobs, AuditJob("samplers", "corrected", None, int(cfg.get("fresh_samplers", 2000)),
                            scope="sampler", secure=True)]


def _probe(build, D, private: bool, bug: str | None, n: int = 2) -> tuple[float, bool, float]:
    """(ε spent, end-to-end DP, δ claimed) from ``n`` fits on D: ε spent is the largest
    ledger sum, or inf when the ledger names a non-private step (or the model has none)."""
    spent, e2e, delta = 0.0, private, 0.0
    with bug_context(bug):
        for i in range(n):
            model = build(10_000 + i)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    model.fit(D)
                except Exception:
                    continue
            ledger = getattr(model, "privacy_ledger_", None)
            if ledger is None or ledger.non_private_steps:
                e2e = False
            if ledger is not None:
                spent = max(spent, float(getattr(model, "epsilon_spent_", ledger.epsilon_spent)))
                delta = max(delta, float(ledger.budget_delta))
    return (spent if e2e else math.inf), e2e, delta


def _verdict(lower: float, claimed: float, event: str = "x") -> str:
    """"no evidence" when no event told D from D' (no bound, or no candidate above 0: an
    ε_lower of 0 proves nothing), "not DP" for a method without a claim, else "violation"
    or "ok".

    >>> _verdict(0.0, 1.0, ""), _verdict(0.3, 1.0, "x[0] <= 2"), _verdict(1.3, 1.0)
    ('no evidence', 'ok', 'violation')
    """
    if math.isnan(lower) or (lower <= 0 and not event):
        return "no evidence"
    if math.isnan(claimed):
        return "not DP"
    return "violation" if lower > claimed * (1 + 1e-9) else "ok"


def _base(job: AuditJob, seed: int, bug: str | None) -> dict:
    from dptaucc.bench import provenance

    return {"method": job.method, "mode": job.mode or "–", "scope": job.scope, "bug": bug or "",
            "seed": seed, "git_sha": provenance.git_sha(), "versions": provenance.versions(),
            "started_at": provenance.utc_now()}


#: calls audited on a method's other-form twin (the first audited calls of its first setup: a
#: slip on one input path upstream of the mechanisms, e.g. in a row embedding, moves every
#: later call)
TWIN_CALLS = 2


def other_form_twin(setup: CallSiteSetup) -> CallSiteSetup | None:
    """A method's first call-site setup on its pair's twin in the other input form
    (:func:`dptaucc.audit.pairs.other_form`: a sparse pair filled, a half-full one widened), so
    that the dense and the sparse input paths are both audited; the twin's calls are not a
    worst case (declared as their limit). None for a setup sampled by redraw (slow fits).

    >>> from dptaucc.audit.methods import call_site_setup
    >>> twin = other_form_twin(call_site_setup("dp_taucc")[0])
    >>> twin.pair.name, twin.limit_of("any step")[:42]
    ('all_zero_row (filled)', 'the other-form twin of all_zero_row: audit')
    """
    if setup.redraw_samples:
        return None
    why = (f"the other-form twin of {setup.pair.name}: audits the other input path (dense or "
           "sparse), not a worst case")
    return dataclasses.replace(setup, pair=other_form(setup.pair), limits=(("", why),))


def _n_units(job: AuditJob, bug: str | None) -> list:
    if job.scope == "end-to-end":
        return [s for s in method_audits(job.method) if not s.modes or job.mode in s.modes]
    units = []
    setups = list(call_site_setup(job.method))
    for setup in setups:
        calls = call_sites(job.factory(setup.params), setup.pair.D, bug)
        units += [(setup, c) for c in calls[setup.first:setup.first + setup.max_calls]
                  if not c.step.startswith(setup.skip)]
    twin = other_form_twin(setups[0]) if setups else None
    if twin is not None:
        try:
            calls = call_sites(job.factory(twin.params), twin.pair.D, bug)
        except Exception as error:  # a setup's parameters may fix the input's shape
            print(f"    {job.method}: no other-form twin ({twin.pair.name}: the fit raised "
                  f"{type(error).__name__}: {error})", flush=True)
            calls = []
        units += [(twin, c) for c in calls[twin.first:twin.first + twin.max_calls]
                  if not c.step.startswith(twin.skip)][:TWIN_CALLS]
    return units


def unit_draws(job: AuditJob, unit: tuple[CallSiteSetup, Any]) -> int:
    """Draws per side one audited call gets: the job's draws times its setup's
    ``more_draws`` factor, at most ``max_draws`` (:meth:`CallSiteSetup.draws_of`); a redrawn
    setup's samples (at most the job's draws on the secure samplers).

    >>> from types import SimpleNamespace
    >>> from dptaucc.audit.pairs import all_zero_row
    >>> setup = CallSiteSetup(all_zero_row(), (), more_draws=(("sums", 4.0),))
    >>> job = AuditJob("m", "corrected", None, 1000, scope="call-site")
    >>> [unit_draws(job, (setup, SimpleNamespace(step=s))) for s in ("counts", "sums")]
    [1000, 4000]
    """
    setup, call = unit
    if setup.redraw_samples:
        return min(setup.redraw_samples, job.n_fits) if job.secure else setup.redraw_samples
    return setup.draws_of(call.step, job.n_fits)


def unit_held_out(job: AuditJob, unit: tuple[CallSiteSetup, Any]) -> int:
    """Streamed held-out draws per side of one audited call
    (:meth:`CallSiteSetup.held_out_of` of its draws; of the job's draws on a redrawn setup,
    whose kept samples are fixed, so that a quick audit streams fewer): none on the secure
    samplers (that run checks the samplers, not how tight a call is).

    >>> from types import SimpleNamespace
    >>> from dptaucc.audit.pairs import all_zero_row
    >>> setup = CallSiteSetup(all_zero_row(), (), held_out=(("sums", 8.0),))
    >>> job = AuditJob("m", "corrected", None, 1000, scope="call-site")
    >>> [unit_held_out(job, (setup, SimpleNamespace(step=s))) for s in ("counts", "sums")]
    [0, 8000]
    >>> redrawn = CallSiteSetup(all_zero_row(), (), redraw_samples=50,
    ...                         held_out=(("sums", 8.0),))
    >>> unit_held_out(job, (redrawn, SimpleNamespace(step="sums")))  # 8 × the job's 1000
    8000
    """
    setup, call = unit
    if job.secure:
        return 0
    if setup.redraw_samples:
        return setup.held_out_of(call.step, job.n_fits)
    return setup.held_out_of(call.step, unit_draws(job, unit))


def _unit_record(job: AuditJob, unit, a: float, seed: int, bug: str | None, workers: int,
                 looks: int) -> dict:
    """The record of one end-to-end scenario or one audited call."""
    rec = _base(job, seed, bug)
    private = job.mode is not None
    if job.scope == "end-to-end":
        spec: Scenario = unit
        build = job.factory(spec.params)
        spent, e2e, delta = _probe(build, spec.pair.D, private, bug)
        # a scenario may fit at its own ε (and δ): the claim is the ε its fits are given
        fit_eps = dict(spec.params).get("epsilon", job.epsilon)
        claimed = math.nan if not private else float(fit_eps)
        n = max(4, math.ceil(job.n_fits * spec.share))
        events = applicable(spec.events, build(0))
        res = audit_release(build, spec.pair.D, spec.pair.D_prime, events, n_fits=n,
                            alpha=a, claim=claimed if private else math.inf, delta=delta,
                            seed=seed, bug=bug, n_jobs=workers, looks=looks,
                            derive=spec.derive)
        rec.update(epsilon=math.nan if fit_eps is None else float(fit_eps), delta=delta,
                   epsilon_spent=spent, end_to_end_dp=e2e, step="", pair=spec.pair.name,
                   epsilon_claimed=claimed, limit="")
    else:
        setup, call = unit
        build = job.factory(setup.params)
        spent, e2e, delta = _probe(build, setup.pair.D, private, bug, n=1)
        if setup.redraw_samples:
            res = audit_call_site_redrawn(build, setup.pair.D, setup.pair.D_prime,
                                          call.index, n_samples=unit_draws(job, unit),
                                          alpha=a, seed=seed, bug=bug, n_jobs=workers,
                                          n_histories=setup.n_histories,
                                          n_pilot=setup.n_pilot, craft=setup.craft,
                                          n_held=unit_held_out(job, unit))
        else:
            res = audit_call_site(build, setup.pair.D, setup.pair.D_prime, call.index,
                                  n_fits=unit_draws(job, unit), alpha=a, seed=seed, bug=bug,
                                  looks=looks, craft=setup.craft,
                                  n_histories=setup.n_histories, n_pilot=setup.n_pilot,
                                  n_held=unit_held_out(job, unit))
        rec.update(epsilon=float(dict(setup.params)["epsilon"]), delta=res.delta,
                   epsilon_spent=spent, end_to_end_dp=e2e,
                   step=f"#{call.index} {res.step} ({res.mechanism})",
                   pair=setup.pair.name, epsilon_claimed=res.epsilon_claimed,
                   limit=setup.limit_of(res.step))
        claimed = res.epsilon_claimed
        # the pair's exact cost under the call's declared law: above the charge, a violation
        rec.update(epsilon_pair=res.epsilon_pair, pair_how=res.pair_how)
    pair_over = job.scope != "end-to-end" and res.pair_exceeds
    differs, law = getattr(res, "path_differs", ""), getattr(res, "law_differs", "")
    rec.update(epsilon_lower=res.epsilon_lower,
               verdict="violation" if pair_over else _verdict(res.epsilon_lower, claimed,
                                                                res.event),
               event=path_event(differs) if differs else (law or res.event), n_fits=res.n_fits,
               time_s=res.elapsed_s,
               epsilon_lower_max=measurable_max(max(1, res.n_fits // 2), 8, a / looks),
               events=yaml.safe_dump(res.counts, sort_keys=False, allow_unicode=True),
               alpha=a)
    return rec


def _in_parallel(job: AuditJob, units: list, workers: int) -> bool:
    """Call sites sampled in this process run side by side, one per worker (each replays its
    own fits); end-to-end scenarios and redrawn call sites parallelise their fits instead."""
    return (job.scope == "call-site" and workers > 1 and len(units) > 1
            and not any(setup.redraw_samples for setup, _ in units))


def _ledger(job: AuditJob, unit, seed: int, bug: str | None, index: int) -> dict:
    """The ledger record of one scenario or setup (:mod:`dptaucc.audit.ledger_check`)."""
    from .ledger_check import ledger_record
    from .runner import fit_seed

    spec = unit if job.scope == "end-to-end" else unit[0]
    rec = _base(job, seed, bug)
    rec.update(ledger_record(job.factory(spec.params), spec.pair.D, spec.pair.D_prime,
                             seed=fit_seed(seed, 30_000 + 2 * index), bug=bug),
               pair=spec.pair.name, scope="ledger", alpha=0.0)
    return rec


def _refit(job: AuditJob, unit, seed: int, bug: str | None) -> dict | None:
    """The refit record of a job (:mod:`dptaucc.audit.refit_check`) on its first scenario's
    pair, the method's other scenarios' settings among the previous fits; None (a note
    printed) on the secure path, where no seed makes a refit comparable."""
    from .refit_check import History, refit_record
    from .runner import fit_seed

    spec = unit if job.scope == "end-to-end" else unit[0]
    if job.secure:
        print(f"    {job.label} refit: skipped (a secure fit has no seed, so a refit cannot be "
              "compared with a fresh fit; the seeded audit checks refits)", flush=True)
        return None
    others = [History(f"the settings of scenario {s.pair.name}", job.factory(s.params))
              for s in (*method_audits(job.method), *call_site_setup(job.method))
              if s.params != spec.params]
    rec = _base(job, seed, bug)
    rec.update(refit_record(job.factory(spec.params), spec.pair.D, spec.pair.D_prime,
                            seed=fit_seed(seed, 40_000), others=others, bug=bug),
               pair=spec.pair.name, scope="refit", alpha=0.0)
    return rec


def _sweep(job: AuditJob, seed: int, bug: str | None, n_pairs: int | None) -> dict | None:
    """The neighbour sweep's record of a private method (:mod:`dptaucc.audit.neighbour_sweep`);
    None (a note printed) on the secure path, whose draws no seed repeats on D and D′."""
    from .neighbour_sweep import N_PAIRS, sweep_record

    if job.secure:
        print(f"    {job.label} sweep: skipped (secure draws cannot be forced alike on D and "
              "D' from a seed; the seeded audit sweeps)", flush=True)
        return None
    rec = _base(job, seed, bug)
    rec.update(sweep_record(job.factory, job.method, seed=seed, bug=bug,
                            n_pairs=int(n_pairs or N_PAIRS)), alpha=0.0)
    return rec


def _sampler_records(job: AuditJob, seed: int, alpha: float, progress: bool) -> list[dict]:
    """The fresh-sampler job (secure): every primitive of :data:`~dptaucc.audit.primitives.
    FRESH_PRIMITIVES` at ε = 1, α split over them; the seeded primitives job: every primitive
    of :func:`~dptaucc.audit.primitives.primitive_names` on the seeded sampler at ε = 1,
    ``job.n_fits`` outputs per side, α split over them. Both jobs first run the exact
    conformance checks (:mod:`dptaucc.audit.conformance`)."""
    from .primitives import (
        FRESH_PRIMITIVES,
        audit_primitive,
        conformance_rows,
        fresh_sampler_rows,
        primitive_names,
        violated,
    )

    if job.secure:
        method, per = "samplers", alpha / len(FRESH_PRIMITIVES)
        rows = fresh_sampler_rows(1.0, job.n_fits, per)
    else:
        names = primitive_names(secure=False)
        method, per = PRIMITIVES_JOB, alpha / len(names)
        rows = [audit_primitive(name, 1.0, job.n_fits, seed=seed, alpha=per) for name in names]
    # the exact conformance checks (deterministic, no share of α) on either path: their cases
    # feed crafted randomness to the seeded kernels and to the secure ones alike
    records = _conformance_records(job, seed, conformance_rows(), progress)
    for row in rows:
        rec = _base(job, seed, None)
        rec.update(method=method, epsilon=1.0, delta=row["delta"], epsilon_spent=row["epsilon"],
                   end_to_end_dp=True, epsilon_lower=row["epsilon_lower"], scope="sampler",
                   step=f"{row['primitive']} ({row['path']})", epsilon_claimed=row["epsilon"],
                   verdict="violation" if violated(row) else "ok", event=row["event"],
                   n_fits=row["n"], time_s=row["seconds"], pair="worst-case pair",
                   epsilon_lower_max=math.nan, events="", alpha=per)
        records.append(rec)
        if progress:
            print(f"    {job.label} {rec['step']}: ε_lower = {rec['epsilon_lower']:.3f}, map "
                  f"{row['epsilon_map']:.3f} / claimed {rec['epsilon_claimed']:.3g} "
                  f"({rec['verdict']}, {rec['n_fits']} "
                  f"{'fresh samplers' if job.secure else 'outputs'} per side)", flush=True)
    return records


def _conformance_records(job: AuditJob, seed: int, rows: list[dict],
                         progress: bool) -> list[dict]:
    """One record per kernel group of :mod:`dptaucc.audit.conformance` (scope "sampler",
    step "conformance: <group>", pair "exact reference"): a kernel off its exact reference is
    a violation; no ε bound (``epsilon_lower`` NaN), no share of α."""
    records = []
    for row in rows:
        rec = _base(job, seed, None)
        rec.update(method="samplers" if job.secure else PRIMITIVES_JOB, epsilon=math.nan,
                   delta=math.nan, epsilon_spent=math.nan, end_to_end_dp=True,
                   epsilon_lower=math.nan,
                   scope="sampler", step=f"conformance: {row['primitive']}",
                   epsilon_claimed=math.nan,
                   verdict="ok" if row["conforms"] else "violation",
                   event=row["event"] if row["conforms"] else row["failed"], n_fits=row["n"],
                   time_s=row["seconds"], pair="exact reference", epsilon_lower_max=math.nan,
                   events="", alpha=0.0)
        records.append(rec)
        if progress:
            print(f"    {job.label} {rec['step']}: {rec['verdict']} ({row['n']} cases; "
                  f"{rec['event']})", flush=True)
    return records


def run_job(job: AuditJob, *, seed: int = 0, alpha: float = 0.05, n_jobs: int | None = 1,
            progress: bool = True, bug: str | None = None, looks: int = 2,
            stop_at_violation: bool = False, ledger_only: bool = False,
            refit: bool = False, sweep_pairs: int | None = None) -> list[dict]:
    """Audit one job: one record per end-to-end scenario, or per audited call, each at
    ``alpha / (number of records)``, so the job's bounds hold simultaneously at 1 − α; and
    (private methods) one ledger record per scenario or setup, first. Call sites sampled
    in-process run ``n_jobs`` at a time (a violation stops the job after the batch it is found
    in, with ``stop_at_violation``). ``ledger_only``: the ledger records alone (seconds).
    ``refit`` (a private method's job): a refit record after the ledger's (:func:`_refit`),
    then the neighbour sweep's (:func:`_sweep`).

    >>> [record] = run_job(AuditJob("fast_taucc", None, None, 20), progress=False)
    >>> record["scope"], record["verdict"], record["epsilon_lower"] > 0  # it reads the data
    ('end-to-end', 'not DP', True)
    >>> [r["verdict"] for r in run_job(AuditJob("dp_taucc", "corrected", 1.0, 20),
    ...                                progress=False, ledger_only=True)]
    ['ok', 'ok', 'ok', 'ok']
    """
    if job.scope == "sampler":
        return [] if ledger_only else _sampler_records(job, seed, alpha, progress)
    units = _n_units(job, bug)
    a = alpha / max(1, len(units))
    workers = max(1, int(n_jobs or 1))
    private = job.mode is not None
    parallel = _in_parallel(job, units, workers)
    batch = workers if parallel else 1
    records = []
    if private:
        specs = list(units) if job.scope == "end-to-end" else list(
            {id(setup): (setup, None) for setup, _ in units}.values())
        for i, unit in enumerate(specs):
            rec = _ledger(job, unit, seed, bug, i)
            records.append(rec)
            if progress:
                print(f"    {job.label} {rec['pair']} ledger: {rec['verdict']} "
                      f"({rec['event'][:160]})", flush=True)
            if stop_at_violation and rec["verdict"] == "violation" and job.mode == "corrected":
                return records
        checks = ((lambda: _refit(job, specs[0], seed, bug) if specs else None,
                   lambda r: f"{r['pair']} refit: {r['verdict']} ({r['step']}, "
                             f"{r['n_fits']} fits, {r['time_s']:.1f} s: {r['event'][:160]})"),
                  (lambda: _sweep(job, seed, bug, sweep_pairs),
                   lambda r: f"sweep: {r['verdict']} ({r['step']}, {r['time_s']:.1f} s: "
                             f"{r['event'][:200]})"))
        for check, line in checks if refit else ():
            rec = check()
            if rec is None:
                continue
            records.append(rec)
            if progress:
                print(f"    {job.label} {line(rec)}", flush=True)
            if stop_at_violation and rec["verdict"] == "violation" and job.mode == "corrected":
                return records
    if ledger_only:
        return records
    for start in range(0, len(units), batch):
        chunk = units[start:start + batch]
        if parallel:
            recs = Parallel(n_jobs=min(workers, len(chunk)))(
                delayed(_unit_record)(job, u, a, seed, bug, 1, looks) for u in chunk)
        else:
            recs = [_unit_record(job, u, a, seed, bug, workers, looks) for u in chunk]
        for rec in recs:
            records.append(rec)
            if progress:
                exact = rec.get("epsilon_pair", math.nan)
                pair = "" if exact is None or math.isnan(exact) else f", pair {exact:.3f}"
                print(f"    {job.label} {rec['pair']} {rec['step']}: ε_lower = "
                      f"{rec['epsilon_lower']:.3f} / claimed {rec['epsilon_claimed']:.3g}{pair} "
                      f"({rec['verdict']}, {rec['n_fits']} fits, {rec['time_s']:.1f} s)",
                      flush=True)
        if stop_at_violation and job.mode == "corrected" and any(
                r["verdict"] == "violation" for r in recs):
            break
    return records


def estimate(jobs: list[AuditJob], n_jobs: int, pairs: int = 20) -> list[dict]:
    """Time ``pairs`` pairs of fits of every end-to-end scenario in this process and estimate
    each job's wall time at its budget on ``n_jobs`` workers (call sites:
    :func:`_estimate_call_sites`).

    >>> cfg = {**load_config("quick"), "n_fits": 20, "n_fits_per_method": {}}
    >>> [row] = estimate(plan(cfg, ["fast_taucc"]), n_jobs=1, pairs=2)
    >>> row["audit"], row["fits_per_side"], row["estimated_s"] > 0
    ('fast_taucc (not DP)', 20, True)
    """
    rows = []
    for job in jobs:
        if job.scope == "sampler" and job.secure:  # ~5 ms an output, 4 primitives
            rows.append({"audit": job.label, "fits_per_side": job.n_fits, "ms_per_fit": 5.0,
                         "estimated_s": 2 * 4 * job.n_fits * 0.005})
            continue
        if job.scope == "sampler":  # seeded primitives: timed on a tenth of their outputs
            from .primitives import audit_primitive, primitive_names

            n = max(1000, job.n_fits // 10)
            took = sum(audit_primitive(name, 1.0, n, seed=0)["seconds"]
                       for name in primitive_names(secure=False))
            rows.append({"audit": job.label, "fits_per_side": job.n_fits,
                         "ms_per_fit": 1000 * took / (2 * n), "estimated_s": 10 * took})
            continue
        if job.scope == "call-site":
            rows.append(_estimate_call_sites(job, n_jobs))
            continue
        est, per_fit = 0.0, []
        for spec in method_audits(job.method):
            build = job.factory(spec.params)
            for n in (4, pairs):  # the first run warms up (imports, caches) and is not timed
                res = audit_release(build, spec.pair.D, spec.pair.D_prime, (), n_fits=n,
                                    alpha=0.05, looks=1)
            fit_s = res.elapsed_s / (2 * pairs)
            est += 2 * math.ceil(job.n_fits * spec.share) * fit_s / max(1, n_jobs)
            per_fit.append(fit_s)
        rows.append({"audit": job.label, "fits_per_side": job.n_fits,
                     "ms_per_fit": 1000 * per_fit[0], "estimated_s": est})
    return rows


#: draws per side at which a call-site setup is timed for --dry-run (two runs: fixed + per draw)
ESTIMATE_DRAWS = (50_000, 200_000)


def _estimate_call_sites(job: AuditJob, n_jobs: int) -> dict:
    """A call-site job's estimated wall time. Every setup's first audited call is timed at
    :data:`ESTIMATE_DRAWS` draws (or redrawn samples) per side, which gives its fixed cost
    (probe fits, the choice of history) and its cost per draw; each audited call, the
    other-form twin included, is then costed at the draws it really gets
    (:func:`unit_draws`: the job's draws times the setup's ``more_draws`` factor, at most
    ``max_draws``; a redrawn setup's samples; a setup's streamed held-out draws,
    :func:`unit_held_out`, timed with them). A call of fewer draws is timed at them. Calls
    run side by side on ``n_jobs`` workers unless a setup redraws."""
    units = _n_units(job, None)
    timed: dict[int, tuple[float, float]] = {}  # setup id -> (fixed s, s per draw)

    def seconds(unit: tuple[CallSiteSetup, Any], draws: int) -> float:
        setup, index = unit[0], unit[1].index
        build = job.factory(setup.params)
        # streamed held-out draws in the same proportion to the draws as the real call's
        held = unit_held_out(job, unit) * draws // max(1, unit_draws(job, unit))
        if setup.redraw_samples:
            return audit_call_site_redrawn(build, setup.pair.D, setup.pair.D_prime, index,
                                           n_samples=draws, alpha=0.05, seed=0,
                                           n_histories=setup.n_histories,
                                           n_pilot=setup.n_pilot, craft=setup.craft,
                                           n_held=held).elapsed_s
        return audit_call_site(build, setup.pair.D, setup.pair.D_prime, index, n_fits=draws,
                               alpha=0.05, looks=1, craft=setup.craft,
                               n_histories=setup.n_histories, n_pilot=setup.n_pilot,
                               n_held=held).elapsed_s

    total = 0.0
    for setup, call in units:
        draws = unit_draws(job, (setup, call))
        if id(setup) not in timed:
            small, large = ESTIMATE_DRAWS
            if draws <= large:
                timed[id(setup)] = (0.0, seconds((setup, call), draws) / draws)
            else:
                t_small, t_large = (seconds((setup, call), n) for n in (small, large))
                per_draw = max(0.0, (t_large - t_small) / (large - small))
                timed[id(setup)] = (max(0.0, t_small - small * per_draw), per_draw)
        fixed, per_draw = timed[id(setup)]
        total += fixed + draws * per_draw
    if _in_parallel(job, units, n_jobs):
        total /= min(n_jobs, len(units))
    per_draw = next(iter(timed.values()), (math.nan, math.nan))[1]
    return {"audit": job.label, "fits_per_side": job.n_fits, "ms_per_fit": 1000 * per_draw,
            "estimated_s": total}


def violations(records) -> list[dict]:
    """The gate: corrected-mode records whose ε_lower exceeds their claim.

    >>> records = [{"mode": "corrected", "verdict": "violation"},
    ...            {"mode": "corrected", "verdict": "ok"},
    ...            {"mode": "paper", "verdict": "violation"}]  # paper mode is expected to leak
    >>> violations(records)
    [{'mode': 'corrected', 'verdict': 'violation'}]
    """
    return [r for r in records if r["mode"] == "corrected" and r["verdict"] == "violation"]


def measurable_max(n_fits: int, n_events: int, alpha: float) -> float:
    """The largest ε_lower n fits per side can give with ``n_events`` events: an event seen in
    every fit on one side and in none on the other.

    >>> round(measurable_max(100, 3, 0.05), 2), round(measurable_max(1000, 3, 0.05), 2)
    (2.88, 5.2)
    """
    a = alpha / (4 * n_events)
    return max(0.0, float(math.log(cp_lower(n_fits, n_fits, a) / cp_upper(0, n_fits, a))))


def _write(records: list[dict], out: Path, size: str) -> None:
    import pandas as pd

    df = pd.DataFrame(records)
    df["size"] = size
    for column, empty in (("epsilon_pair", math.nan), ("pair_how", "")):  # call sites only
        if column not in df.columns:
            df[column] = empty
        df[column] = df[column].fillna(empty)
    df = df[[c for c in RECORD_COLUMNS if c in df.columns]]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".parquet.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(out)


def job_alpha(alpha: float, job: AuditJob, jobs: Sequence[AuditJob]) -> float:
    """The α one job is run at: a method's gate (its corrected jobs, call sites and end to end,
    every ε) holds at ``alpha`` in all, so each of its ``k`` corrected jobs gets ``alpha / k``
    (Bonferroni); other jobs (paper mode, not DP, the fresh samplers) keep ``alpha``.

    >>> jobs = [AuditJob("dp_taucc", "corrected", None, 10, scope="call-site"),
    ...         AuditJob("dp_taucc", "corrected", 1.0, 10), AuditJob("dp_taucc", "paper", 1.0, 10)]
    >>> [job_alpha(0.05, job, jobs) for job in jobs]
    [0.025, 0.025, 0.05]
    """
    def gated(j: AuditJob) -> bool:
        return j.mode == "corrected" and j.scope != "sampler"

    if not gated(job):
        return alpha
    return alpha / sum(1 for j in jobs if gated(j) and j.method == job.method)


def run_all(cfg: dict, jobs: list[AuditJob], out: Path | None, *, n_jobs: int | None,
            progress: bool = True, bug: str | None = None,
            stop_at_violation: bool = False, ledger_only: bool = False) -> list[dict]:
    """Run every job and (re)write ``out`` (if given) after each one.

    >>> import contextlib, io, tempfile
    >>> from pathlib import Path
    >>> cfg = {**load_config("quick"), "n_fits": 20, "n_fits_per_method": {}}
    >>> out = Path(tempfile.mkdtemp()) / "audit.parquet"
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     records = run_all(cfg, plan(cfg, ["fast_taucc"]), out, n_jobs=1, progress=False)
    >>> [r["verdict"] for r in records], out.exists()
    (['not DP'], True)
    """
    records: list[dict[str, Any]] = []
    refitted: set[str] = set()  # one refit check per method: its first corrected job
    for k, job in enumerate(jobs, 1):
        refit = job.mode == "corrected" and job.scope != "sampler" and job.method not in refitted
        if refit:
            refitted.add(job.method)
        recs = run_job(job, seed=int(cfg.get("seed", 0)),
                       alpha=job_alpha(float(cfg.get("alpha", 0.05)), job, jobs),
                       n_jobs=n_jobs, progress=progress, bug=bug,
                       looks=int(cfg.get("looks", 2)), stop_at_violation=stop_at_violation,
                       ledger_only=ledger_only, refit=refit,
                       sweep_pairs=cfg.get("neighbour_sweep_pairs"))
        records += recs
        if out is not None:
            _write(records, out, cfg["size"])
        if not recs:
            why = "nothing to audit (no call made by a fit on its pair): no evidence"
            if ledger_only:
                why = "not DP, no ledger to check" if job.mode is None else "no ledger: skipped"
            print(f"[{k}/{len(jobs)}] {job.label}: {why}", flush=True)
            continue
        ledger = [r for r in recs if r["scope"] in CHECK_SCOPES]
        if ledger:
            bad = [r for r in ledger if r["verdict"] == "violation"]
            n_refit = sum(r["scope"] == "refit" for r in ledger)
            n_sweep = sum(r["scope"] == "sweep" for r in ledger)
            print(f"[{k}/{len(jobs)}] {job.label}: ledger {len(ledger) - len(bad)}/"
                  f"{len(ledger)} ok" + (" (refit check included)" if n_refit else "")
                  + (" (neighbour sweep included)" if n_sweep else "")
                  + (f"; VIOLATION {bad[0]['scope']} {bad[0]['pair']}: {bad[0]['event']}"
                     if bad else ""), flush=True)
        recs = [r for r in recs if r["scope"] not in CHECK_SCOPES]
        if not recs:
            if stop_at_violation and violations(ledger):
                break
            continue
        ratio = [r["epsilon_lower"] / r["epsilon_claimed"] for r in recs
                 if r["epsilon_claimed"] > 0 and not math.isnan(r["epsilon_lower"])]
        best = max(recs, key=lambda r: -1 if math.isnan(r["epsilon_lower"])
                   else r["epsilon_lower"] / (r["epsilon_claimed"]
                                              if r["epsilon_claimed"] > 0 else 1.0))
        print(f"[{k}/{len(jobs)}] {job.label}: max ε_lower/claimed = "
              f"{max(ratio, default=math.nan):.2f} ({sum(r['time_s'] for r in recs):.0f} s) "
              f"{best['pair']} {best['step']} {best['event']}", flush=True)
        if stop_at_violation and violations(recs + ledger):
            break
    return records


def default_output(cfg: dict, results_dir: str | Path = "results") -> Path:
    return Path(results_dir) / cfg.get("output", "audit.parquet")
