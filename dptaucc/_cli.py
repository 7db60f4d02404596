"""Command-line help from a module's docstring, without its Sphinx markup.

The package's command-line tools take their ``--help`` text from the module docstring, which
is written for the API docs: ``literal``, :mod:`roles` and ``\\`refs\\```. :func:`plain` turns
it into plain text for a terminal.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["plain"]

#: the width plain paragraphs are filled to
WIDTH = 92

#: ``(:mod:`lock`)`` and ``(..., :mod:`slurm`)``: pointers to a module for developers, dropped
#: from the help
_POINTER = re.compile(r"\s*\(:(?:mod|func|class|meth|data|attr):`[^`]+`\)"
                      r"|,\s*:(?:mod|func|class|meth|data|attr):`[^`]+`(?=\))")
#: ``:role:`~a.b.c```: the name (its last part with ``~``)
_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|ref|doc):`(~?)([^`<]+?)(?:\s*<[^>]+>)?`")


def plain(doc: str | None) -> str:
    """``doc`` as plain text: roles become their names, a parenthetical pointer to a module
    goes, double and single backquotes go, and each paragraph of plain lines is filled again
    (indented lines and lists are kept as written).

    >>> plain("``python -m x``: run it (:mod:`x.lock`); see :func:`~x.y.run` and ``--jobs``.")
    'python -m x: run it; see run and --jobs.'
    >>> plain("in arrays (``--executor slurm``, :mod:`slurm`).")
    'in arrays (--executor slurm).'
    """
    text = _POINTER.sub("", doc or "")
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    text = text.replace("``", "").replace("`", "")
    return "\n\n".join(_fill(p) for p in text.strip().split("\n\n"))


def _fill(paragraph: str) -> str:
    lines = paragraph.splitlines()
    if any(line[:1].isspace() or line.lstrip()[:2] in ("- ", "* ") for line in lines):
        return paragraph
    return textwrap.fill(" ".join(line.strip() for line in lines), WIDTH,
                         break_on_hyphens=False, break_long_words=False)
