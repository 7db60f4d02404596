"""Run many jobs on local worker processes; a dying worker costs one job, not the sweep.

Jobs run in joblib's loky processes. When a worker dies (killed by the out-of-memory killer,
a segfault in native code, ``kill -9``), joblib stops the whole pool. :func:`map_resilient`
then knows which jobs were running (each job marks itself in a scratch folder while it
runs), reruns those one at a time in a fresh worker, so the job that kills its worker again
is identified and reported through ``on_death``, and carries on with the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

#: what joblib/loky raise when a worker process dies
POOL_DEATHS = ("TerminatedWorkerError", "BrokenProcessPool")


def is_pool_death(exc: BaseException) -> bool:
    return type(exc).__name__ in POOL_DEATHS


def _marked(work: Callable, markers: str, key: str, item: Any) -> tuple[str, Any]:
    """``work(item)`` with a marker file present while it runs (runs in the worker); it holds
    the worker's provenance (host, CPU, workers, BLAS threads), what a record of its death
    says."""
    from dptaucc.bench import provenance

    mark = Path(markers) / key
    mark.write_text(json.dumps({**provenance.machine(), **provenance.placement()}),
                    encoding="utf-8")
    try:
        return key, work(item)
    finally:
        mark.unlink(missing_ok=True)


def _read_marker(path: Path) -> dict | None:
    """The provenance a dead worker wrote into its marker (None when unreadable)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        path.unlink(missing_ok=True)


def _parallel(work: Callable, items: Sequence, keys: Sequence[str], n_jobs: int,
              markers: str) -> Iterator[tuple[str, Any]]:
    from joblib import Parallel, delayed

    # batches sized by joblib from the measured job times (a fraction of a second of work
    # each): sending jobs one by one cost 0.3-1.3 ms of inter-process traffic per job, as much
    # as many fits; a worker that dies loses only the job it was running (its marker)
    return Parallel(n_jobs=n_jobs, batch_size="auto", return_as="generator_unordered",
                    pre_dispatch="2*n_jobs")(
        delayed(_marked)(work, markers, k, it) for k, it in zip(keys, items, strict=True))


def map_resilient(work: Callable[[Any], Any], items: Sequence, n_jobs: int,
                  key: Callable[[Any], Hashable],
                  on_death: Callable[[Any, BaseException], Any],
                  on_restart: Callable[[int, int], None] | None = None) -> Iterator[Any]:
    """Yield ``work(item)`` for every item, in completion order, on ``n_jobs`` processes.

    ``key(item)`` names an item (unique). A job whose worker dies while it runs alone yields
    ``on_death(item, exc)`` instead of a result; jobs that were merely running beside it are
    rerun; the exception it gets carries the dead worker's provenance as ``placement`` (a
    dict, or None). ``on_restart(n_suspects, n_left)`` is told about each pool restart."""
    names = {str(key(it)): it for it in items}
    if len(names) != len(items):
        raise ValueError("map_resilient: item keys must be unique")
    markers = tempfile.mkdtemp(prefix="dptaucc-running-")
    left = dict(names)
    blind = 0  # deaths in a row that no running job explains
    try:
        while left:
            try:
                for name, result in _parallel(work, list(left.values()), list(left), n_jobs,
                                              markers):
                    left.pop(name, None)
                    yield result
            except Exception as exc:
                if not is_pool_death(exc):
                    raise
                suspects = [n for n in os.listdir(markers) if n in left]
                for n in os.listdir(markers):
                    (Path(markers) / n).unlink(missing_ok=True)
                blind = 0 if suspects else blind + 1
                if blind >= 3:
                    raise
                if on_restart is not None:
                    on_restart(len(suspects), len(left))
                for name in suspects:  # alone, so that a death names its job
                    item = left.pop(name)
                    try:
                        yield from (r for _, r in _parallel(work, [item], [name], 2, markers))
                    except Exception as solo:
                        if not is_pool_death(solo):
                            raise
                        solo.placement = _read_marker(Path(markers) / name)
                        yield on_death(item, solo)
    finally:
        shutil.rmtree(markers, ignore_errors=True)
