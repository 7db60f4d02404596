"""Composing job configs and enumerating an experiment's sweep grid without Hydra's launcher.

The grid of an experiment is its ``hydra.sweeper.params`` (Hydra's own override syntax, parsed
with Hydra's parser), optionally updated with its ``bench.quick`` block. Group keys
(``algorithm``, ``dataset``) select config files; every other key sets a value.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

GROUPS = ("algorithm", "dataset", "paths", "experiment")
#: the experiments the reproduce driver runs, in its order (supp_runtime last: it is serial):
#: the paper's, and the crossover of every method under one row replaced (row_crossover)
EXPERIMENTS = ("fig2_real", "fig3_iterations", "supp_h", "supp_synthetic", "row_crossover",
               "supp_runtime")
#: sweep keys whose order decides which jobs share a worker's cached dataset
_ORDER = ("dataset", "dataset.n_cols", "seed", "algorithm", "mode")


#: Hydra's name for the packaged configs (the repository's ``conf/`` folder)
CONFIG_MODULE = "dptaucc.conf"


def config_dir() -> Path:
    """The packaged config directory: ``conf/`` of a checkout, ``dptaucc/conf`` of a wheel."""
    return Path(str(resources.files(CONFIG_MODULE)))


class UnknownChoiceError(ValueError):
    """A command line names a dataset, algorithm or experiment that has no config."""


def group_options(group: str, user_dirs: Iterable[str | os.PathLike] = ()) -> list[str]:
    """The configs of a group (``algorithm``, ``dataset``, ``experiment``): the packaged ones,
    those of ``$DPTAUCC_CONFIG_PATH`` and those of ``user_dirs``."""
    dirs = [config_dir(), *map(Path, user_dirs)]
    env = os.environ.get("DPTAUCC_CONFIG_PATH")
    if env and not env.startswith("pkg://"):
        dirs.append(Path(env.removeprefix("file://")))
    return sorted({p.stem for d in dirs for p in (d / group).glob("*.yaml")})


def check_choices(argv: Iterable[str]) -> None:
    """Refuse, in one message, a command-line choice of a config group that does not exist.

    ``argv`` holds Hydra overrides (``algorithm=dp_taucc``, ``dataset=cstr,classic3`` in a
    sweep) and flags (``--config-dir DIR``/``-cd DIR`` add a user's configs). Choices with
    Hydra's sweep functions or globs, and every choice when the command line sets
    ``hydra.searchpath``, are left to Hydra.
    """
    argv = list(argv)
    if any(a.lstrip("+~").startswith("hydra.searchpath") for a in argv):
        return
    user_dirs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--config-dir", "-cd")]
    user_dirs += [a.partition("=")[2] for a in argv if a.startswith("--config-dir=")]
    for override in argv:
        key, sep, value = override.lstrip("+").partition("=")
        if not sep or key not in ("algorithm", "dataset", "experiment") or "(" in value \
                or "*" in value:
            continue
        options = group_options(key, user_dirs)
        for choice in (c.strip() for c in value.split(",")):
            if choice and choice != "null" and choice not in options:
                raise UnknownChoiceError(f"unknown {key} {choice!r}: choose one of "
                                         f"{', '.join(options)} (or add your own config, see "
                                         "docs/extending.md)")


def to_plain(cfg: Any) -> Any:
    """Resolve an OmegaConf node into plain Python (dict/list/scalars); no ListConfig leaks out."""
    if isinstance(cfg, (DictConfig, ListConfig)):
        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


#: the largest job array submitted at once (SLURM's default MaxArraySize is 1001)
MAX_ARRAY_SIZE = 1000


def sweep_batch_size(launcher: Mapping) -> int:
    """Jobs that Hydra's sweeper hands the launcher at once (``hydra.sweeper.max_batch_size``).

    Hydra composes every job of a batch before the first one starts (about 0.1 s each), so
    small batches start a sweep within seconds whatever its size: 8 jobs for the serial
    launcher, 8 per worker for ``cores``; submitit launchers get arrays of at most
    :data:`MAX_ARRAY_SIZE` tasks."""
    target = str(launcher.get("_target_", ""))
    if "submitit" in target or target.endswith("SlurmLauncher"):  # ours: slurm_launcher
        return MAX_ARRAY_SIZE
    n_jobs = launcher.get("n_jobs")
    if isinstance(n_jobs, int) and n_jobs != 0:
        workers = n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)
        return 8 * workers
    return 8


OmegaConf.register_new_resolver("dptaucc.sweep_batch", sweep_batch_size, replace=True)


def resolve_sentinels(params: Mapping, n_classes: int, n_col_classes: int) -> dict:
    """Replace the parameter values ``classes`` / ``col_classes`` by the dataset's number of
    row / column classes (the paper runs every method with K = L = the number of classes)."""
    sentinel = {"classes": n_classes, "col_classes": n_col_classes}
    return {k: sentinel.get(v, v) if isinstance(v, str) else v for k, v in params.items()}


def estimator_kwargs(job: Mapping, n_classes: int, n_col_classes: int) -> dict:
    """The estimator's arguments for ``job`` (plain Python; no ListConfig reaches sklearn):
    its parameters with the sentinels resolved, plus ε, mode and δ for a private algorithm.
    The derived ``random_state`` is added by the caller."""
    alg = job["algorithm"]
    kwargs = resolve_sentinels(to_plain(alg.get("params") or {}), n_classes, n_col_classes)
    if alg.get("private", True):
        kwargs["epsilon"] = float(job["epsilon"])
        kwargs["mode"] = job["mode"]
        if alg.get("uses_delta") and job.get("delta") is not None:
            kwargs["delta"] = float(job["delta"])
    return kwargs


def list_experiments() -> list[str]:
    return sorted(p.stem for p in (config_dir() / "experiment").glob("*.yaml"))


def list_group(group: str) -> list[str]:
    return sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))


class Composer:
    """Cached Hydra compose calls (one per group selection); use as a context manager."""

    def __init__(self, conf_dir: Path | None = None):
        self.conf_dir = Path(conf_dir or config_dir())
        self._ctx = None

    def __enter__(self) -> Composer:
        from hydra import initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra

        self._cache: dict[tuple, DictConfig] = {}
        if GlobalHydra.instance().is_initialized():  # nested use: keep the outer context
            self._ctx = None
            return self
        self._ctx = initialize_config_dir(config_dir=str(self.conf_dir), version_base="1.3")
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(*exc)

    def compose(self, overrides: Iterable[str] = (), hydra: bool = False) -> DictConfig:
        from hydra import compose

        key = (tuple(overrides), hydra)
        if key not in self._cache:
            self._cache[key] = compose(
                config_name="config", overrides=list(overrides), return_hydra_config=hydra
            )
        return self._cache[key].copy()


def parse_sweep(params: Mapping[str, str]) -> dict[str, list]:
    """Hydra sweep strings (``0.1,0.2``, ``range(10)``) -> lists of typed values."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    out: dict[str, list] = {}
    for key, spec in params.items():
        (ovr,) = parser.parse_overrides([f"{key}={spec}"])
        out[key] = list(ovr.sweep_iterator()) if ovr.is_sweep_override() else [ovr.value()]
    return out


def experiment_grid(composer: Composer, experiment: str, scale: str = "paper",
                    overrides: Iterable[str] = (),
                    sweep: Mapping[str, str] | None = None) -> dict[str, list]:
    """The sweep axes of ``experiment`` at ``scale`` ("paper" or "quick").

    ``sweep`` replaces or adds axes (Hydra sweep strings), like sweep overrides on the
    command line of a multirun."""
    if scale not in ("paper", "quick"):
        raise ValueError(f"scale must be 'paper' or 'quick', got {scale!r}")
    cfg = composer.compose([f"experiment={experiment}", *overrides], hydra=True)
    return scale_grid(to_plain(cfg.hydra.sweeper.params), to_plain(cfg.bench.quick), scale,
                      sweep)


def scale_grid(params: Mapping[str, str] | None, quick: Mapping | None, scale: str,
               sweep: Mapping[str, str] | None = None) -> dict[str, list]:
    """The grid of an experiment from its ``hydra.sweeper.params`` and ``bench.quick``."""
    params = dict(params or {})
    if scale == "quick":
        params.update({k: str(v) for k, v in (quick or {}).items()})
    params.update(sweep or {})
    return parse_sweep(params)


def enumerate_jobs(composer: Composer, experiment: str, scale: str = "paper",
                   overrides: Iterable[str] = (),
                   sweep: Mapping[str, str] | None = None) -> list[dict]:
    """Every distinct job of an experiment as a plain resolved config, in cache-friendly order.

    ``overrides`` (plain Hydra overrides such as ``paths.results_dir=...``) apply to every job;
    ``sweep`` replaces grid axes (see :func:`experiment_grid`).
    Jobs outside the algorithm's protocol (e.g. DPNMF at ε >= 1) are dropped, and non-private
    algorithms collapse to one job per seed (their run_id ignores ε and mode).
    """
    return distinct_jobs(expand_experiment(composer, experiment, scale, overrides, sweep))


def expand_experiment(composer: Composer, experiment: str, scale: str = "paper",
                      overrides: Iterable[str] = (),
                      sweep: Mapping[str, str] | None = None) -> Iterator[dict]:
    """Every combination of the experiment's grid (see :func:`expand_grid`)."""
    overrides = tuple(overrides)
    grid = experiment_grid(composer, experiment, scale, overrides, sweep)
    return expand_grid(composer, (f"experiment={experiment}", *overrides), grid)


def expand_grid(composer: Composer, overrides: Iterable[str],
                grid: Mapping[str, list]) -> Iterator[dict]:
    """Every combination of ``grid`` on top of ``overrides``, as plain configs (duplicates and
    jobs outside the protocol included), dataset outermost so that neighbours share a matrix.

    Group keys (``algorithm``, ``dataset``) are composed once per selection; other keys are set
    in the plain config, so a large grid costs a few compose calls, not one per job."""
    overrides = tuple(overrides)
    keys = sorted(grid, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))
    base: dict[tuple, dict] = {}
    for values in itertools.product(*(grid[k] for k in keys)):
        assign = dict(zip(keys, values, strict=True))
        groups = (*overrides, *(f"{k}={v}" for k, v in assign.items() if k in GROUPS))
        if groups not in base:
            base[groups] = to_plain(composer.compose(groups))
        job = _copy_plain(base[groups])
        for k, v in assign.items():
            if k not in GROUPS:
                set_dotted(job, k, v)
        yield job


def _copy_plain(node: Any) -> Any:
    """A deep copy of plain config data (dicts, lists, scalars); much cheaper than
    ``copy.deepcopy`` for the tens of thousands of jobs of a paper grid."""
    if isinstance(node, dict):
        return {k: _copy_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy_plain(v) for v in node]
    return node


def distinct_jobs(jobs: Iterable[dict]) -> list[dict]:
    """Jobs inside their algorithm's protocol, one per run_id (first occurrence kept)."""
    out: dict[str, dict] = {}
    for job in jobs:
        if in_protocol(job):
            out.setdefault(run_id(job), job)
    return list(out.values())


def off_grid(job: Mapping, grid: Mapping[str, list]) -> dict[str, Any]:
    """The axes of ``grid`` on which ``job`` takes a value outside the grid ({key: value})."""
    out = {}
    for key, values in grid.items():
        value = get_dotted(job, f"{key}.name" if key in GROUPS else key)
        if not any(_same(value, v) for v in values):
            out[key] = value
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12)
    return str(a) == str(b)


def get_dotted(cfg: Mapping, key: str) -> Any:
    """``a.b.c`` of a plain nested dict (None where the path does not exist)."""
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def set_dotted(cfg: dict, key: str, value: Any) -> None:
    """Set ``a.b.c`` in a plain nested dict; the key must already exist (typos fail loudly)."""
    *path, last = key.split(".")
    node = cfg
    for part in path:
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"sweep key {key!r} is not in the config")
        node = node[part]
    if not isinstance(node, dict) or last not in node:
        raise KeyError(f"sweep key {key!r} is not in the config")
    node[last] = value


def in_protocol(job: Mapping) -> bool:
    """Does the experiment protocol run this algorithm at this ε and in this mode? (DPNMF:
    ε < 1 only, as the authors' Fig. 2 script runs it; an algorithm whose config lists its
    ``modes``, e.g. DP-τCC's row variant, only in those.)"""
    alg = job["algorithm"]
    if not alg.get("private", True):
        return True
    modes = alg.get("modes")
    if modes is not None and job.get("mode") not in modes:
        return False
    cap = alg.get("max_epsilon")
    return cap is None or float(job["epsilon"]) < float(cap)


def job_identity(job: Mapping) -> dict:
    """The part of a resolved config that defines a job (paths and Hydra settings excluded).

    Non-private algorithms ignore ε, δ and mode, so those are blanked: one job per seed.
    """
    alg = job["algorithm"]
    private = bool(alg.get("private", True))
    eps = float(job["epsilon"]) if private else None
    if eps is not None and math.isinf(eps):
        eps = "inf"
    delta = job.get("delta")
    return {
        "experiment": job["bench"]["experiment"],
        # hashed under "target" (the key's name before configs used Hydra's `_target_`), so
        # that run ids, and the stored results they name, stay the same
        "algorithm": {"name": alg.get("name"), "target": alg.get("_target_"),
                      "params": alg.get("params")},
        "mode": job["mode"] if private else None,
        "dataset": {k: v for k, v in job["dataset"].items()},
        "epsilon": eps,
        "delta": (float(delta) if private and alg.get("uses_delta") and delta is not None
                  else None),
        "seed": int(job["seed"]),
    }


def run_id(job: Mapping) -> str:
    """16 hex digits of the SHA-256 of the job identity (canonical JSON).

    Paths are not part of a job, and numbers are compared by value:

    >>> from dptaucc.bench.configs import Composer, to_plain
    >>> with Composer() as composer:
    ...     a = to_plain(composer.compose(["epsilon=2"]))
    ...     b = to_plain(composer.compose(["epsilon=2.0", "paths.results_dir=elsewhere"]))
    >>> run_id(a), run_id(a) == run_id(b)
    ('996e272d512649dc', True)
    """
    blob = json.dumps(job_identity(job), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def derived_seed(job: Mapping) -> int:
    """The estimator's random_state: derived from the whole job identity (distinct per job)."""
    return int(run_id(job)[:8], 16)
