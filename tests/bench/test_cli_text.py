"""What the command-line tools print for people: plain-text ``--help`` (no Sphinx markup) and
the reproduce driver's end-of-run summary as a table."""

from __future__ import annotations

import importlib
import re

import pytest

from dptaucc.bench.reproduce import summary_lines

#: every command-line tool of the package whose help is its module's docstring
TOOLS = ["dptaucc.bench.reproduce", "dptaucc.audit.__main__", "dptaucc.bench.outputs",
         "dptaucc.bench.figures", "dptaucc.bench.report", "dptaucc.bench.collect",
         "dptaucc.audit.report", "dptaucc.audit.primitives", "dptaucc.datasets.__main__"]
#: what the docs' markup leaves in a terminal
MARKUP = re.compile(r"``|:(mod|func|class|meth|data|attr|exc|ref):|`[^`\n]+`")


@pytest.mark.parametrize("module", TOOLS)
def test_help_is_plain_text(module, capsys):
    with pytest.raises(SystemExit) as done:
        importlib.import_module(module).main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "usage: python -m" in text and not MARKUP.search(text), MARKUP.search(text)
    assert max(map(len, text.splitlines())) <= 100


def test_the_summary_is_a_table_not_a_dict():
    summary = {"fig2_real": {"total": 324, "pending": 300, "seconds": 61.04,
                             "statuses": {"ok": 298, "error": 1, "lost": 1},
                             "core_seconds": {"job_s": 118.36, "methods": {}}},
               "supp_h": {"total": 150, "pending": 0, "seconds": 0.0, "statuses": {}},
               "_seconds": 61.2, "_outcomes": []}
    lines = summary_lines(summary, ["fig2_real", "supp_h"])
    assert lines == [
        "experiment  jobs  already done  ran   ok  failed  wall s  job core-s",
        "fig2_real    324            24  300  298       2    61.0       118.4",
        "supp_h       150           150    0    0       0     0.0         0.0",
        "total        474           174  300  298       2    61.2       118.4"]
    dry = {"fig2_real": {"total": 324, "pending": 24, "estimated_cpu_s": 12.5,
                         "without_timing": 3}}
    assert summary_lines(dry, ["fig2_real"], dry_run=True)[1].split() == [
        "fig2_real", "324", "300", "24", "12", "3"]
    assert not any("{" in line or "'" in line for line in lines)
