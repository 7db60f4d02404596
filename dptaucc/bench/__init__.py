"""The experiment engine (needs the ``[bench]`` extra): Hydra configs in ``conf/``, one job ->
one record (:func:`dptaucc.bench.run.run`), a resumable store, collect, figures and report.

Entry points: ``python -m dptaucc.bench`` (Hydra, single job or ``-m`` sweep),
``python -m dptaucc.bench.reproduce``, ``.collect``, ``.figures``, ``.report``.
"""

from dptaucc.bench.run import run

__all__ = ["run"]
