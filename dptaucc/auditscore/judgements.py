"""Judgements of the mutants that survived the audit: equivalent, out of reach, or a gap.

``judgements.yaml`` beside this module maps a mutant id (:mod:`~dptaucc.auditscore.mutate`:
stable under edits elsewhere in its file) to ``verdict`` (``equivalent``: no input and no seed
can tell it from the original's privacy, e.g. a tie-break on a measure-zero event or a
constant used only in an error message; ``out of reach``: a real privacy change that no
sampling audit can resolve, e.g. a probability moved by about 2⁻⁵³, or one that only an
invalid call or an input of gigabytes shows; ``gap``: a real privacy change the audit could
see and does not) and a ``reason``, written by the person who read the mutant; ``where`` and
``mutation`` repeat what the mutant is, for the reader. A survivor nobody judged yet reads
*unjudged*.

>>> judgements = load_judgements()
>>> all(j["verdict"] in VERDICTS and j["reason"] for j in judgements.values())
True
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

__all__ = ["load_judgements", "VERDICTS"]

VERDICTS = ("equivalent", "out of reach", "gap")


def load_judgements(path: str | Path | None = None) -> dict[str, dict]:
    """``{mutant id: {"verdict", "reason", ...}}`` from ``judgements.yaml`` (or ``path``);
    a verdict outside :data:`VERDICTS` or an empty reason is a ``ValueError``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Path(d) / "judgements.yaml"
    ...     _ = path.write_text("m1: {verdict: equivalent, reason: a tie on a null event}")
    ...     load_judgements(path)
    {'m1': {'verdict': 'equivalent', 'reason': 'a tie on a null event'}}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Path(d) / "judgements.yaml"
    ...     _ = path.write_text("m1: {verdict: fine, reason: looks harmless}")
    ...     load_judgements(path)
    Traceback (most recent call last):
    ...
    ValueError: judgement m1: verdict must be one of ('equivalent', 'out of reach', 'gap')
    """
    text = (Path(path).read_text(encoding="utf-8") if path is not None else
            (resources.files("dptaucc.auditscore") / "judgements.yaml").read_text(
                encoding="utf-8"))
    data = yaml.safe_load(text) or {}
    for key, value in data.items():
        if not isinstance(value, dict) or value.get("verdict") not in VERDICTS:
            raise ValueError(f"judgement {key}: verdict must be one of {VERDICTS}")
        if not str(value.get("reason", "")).strip():
            raise ValueError(f"judgement {key}: a reason is required")
    return {str(k): v for k, v in data.items()}
