"""Fits in worker processes, with a catalogue bug planted there when asked.

A monkeypatch made in the parent does not reach a fresh worker: each chunk of fits enters
``find_bug(bug).applied()`` itself (:mod:`dptaucc.audit.bugs`). Seeds come from
:func:`dptaucc.audit.runner.fit_seed`, so the results depend on (seed, index) only.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed

__all__ = ["bug_context", "in_chunks"]


def bug_context(bug: str | None):
    """``find_bug(bug).applied()``, or a no-op for None.

    >>> with bug_context(None):
    ...     pass
    >>> bug_context("no_such_bug")
    Traceback (most recent call last):
    ...
    ValueError: unknown bug 'no_such_bug'; known: [...]
    """
    if bug is None:
        return contextlib.nullcontext()
    from .catalogue import find_bug

    return find_bug(bug).applied()


def _chunk(task: Callable, args: tuple, seeds: Sequence[int], bug: str | None) -> list:
    with bug_context(bug), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [task(*args, int(s)) for s in seeds]


def in_chunks(task: Callable, args: tuple, seeds: Sequence[int], *, bug: str | None,
              n_jobs: int = 1) -> list[Any]:
    """``[task(*args, seed) for seed in seeds]``, in ``n_jobs`` processes (order kept).

    >>> import operator
    >>> in_chunks(operator.add, (100,), [3, 1, 2], bug=None)
    [103, 101, 102]
    """
    seeds = list(seeds)
    if n_jobs <= 1 or len(seeds) < 64:
        return _chunk(task, args, seeds, bug)
    parts = [list(p) for p in np.array_split(np.asarray(seeds, dtype=np.int64), n_jobs) if len(p)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = Parallel(n_jobs=n_jobs)(delayed(_chunk)(task, args, p, bug) for p in parts)
    return [x for part in out for x in part]
