"""The exit status contract scripts and CI jobs branch on (docs/usability.md, "In scripts,
CI jobs and containers"): 0 success, 1 internal error, 2 bad input with one ``error:`` line
naming the file, 130 interrupted, 141 closed stdout. It was written nowhere as a whole.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import CLOSED_PIPE, _register, app
from latentbench.cli._select_live import EXIT_CODES

_register()
runner = CliRunner()
PAGE = Path(__file__).resolve().parents[2] / "docs" / "usability.md"


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## In scripts, CI jobs and containers")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


def test_the_exit_statuses_are_documented_as_the_code_has_them():
    section = _section()
    table = {int(m) for m in re.findall(r"^\| (\d+) \|", section, flags=re.M)}
    assert table == {0, 1, 2, 130, CLOSED_PIPE}
    assert "141" in section and CLOSED_PIPE == 141
    for status in EXIT_CODES.values():  # select live's own, beside the common ones
        assert re.search(rf"\b{status}\b", section), status


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "MISSING.csv"],
        ["report", "MISSING"],
        ["estimate", "MISSING.csv", "MISSING2.csv"],
        ["tiny", "MISSING.csv"],
        ["compare", "MISSING.csv", "MISSING2.csv", "--a", "x", "--b", "y"],
        ["select", "replay", "MISSING.csv"],
        ["experiment", "MISSING.csv"],
        ["ingest", "table", "MISSING.csv", "--store", "{tmp}/s.duckdb", "--benchmark", "b"],
        ["ls", "--store", "MISSING.duckdb"],
        ["export", "--store", "MISSING.duckdb", "{tmp}/out.csv"],
    ],
    ids=lambda args: " ".join(a for a in args[:2] if not a.startswith("MISSING")),
)
def test_a_missing_file_is_exit_2_with_one_error_line_naming_it(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert outcome.exit_code == 2, outcome.output
    assert outcome.stdout == ""
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), outcome.stderr
    assert "MISSING" in lines[0]
