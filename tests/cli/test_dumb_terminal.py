"""A dumb terminal (``TERM=dumb``: an editor's shell, a braille or speech terminal) gets the
results and plain progress lines: no blank line, cursor code or redrawn bar from the progress
display, which such a terminal cannot redraw (docs/usability.md). Under ``NO_COLOR`` a
terminal gets no colour and no other style either (no bold, no dim): the live progress line
is drawn and erased, and the screen left holds the results only."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time

import pytest

from latentbench.cli._common import PROGRESS_LINE_EVERY
from latentbench.synthetic import simulate_2pl

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")


def _on_a_pty(argv: list[str], env: dict[str, str]) -> bytes:
    import pty

    leader, follower = pty.openpty()
    code = "import sys; from latentbench.cli import main; sys.argv[0] = 'latentbench'; main()"
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, **env},
        close_fds=True,
    )
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the pty
            break
        if not chunk:
            break
        out += chunk
    child.wait(timeout=120)
    os.close(leader)
    return out


def test_a_dumb_terminal_gets_the_results_and_no_progress_residue(tmp_path):
    # the progress display, disabled only off a terminal, left a blank line at the top of
    # the output of a dumb terminal (it cannot redraw, so it drew nothing but the line end)
    data = simulate_2pl(13, 80, random_state=4).matrix.to_long()
    new = data["model"] == data["model"].iloc[-1]
    data[~new].to_parquet(tmp_path / "cal.parquet")
    data[new].to_parquet(tmp_path / "new.parquet")
    env = {"TERM": "dumb", "COLUMNS": "100", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    # and it is told the command is alive: a plain line as each phase starts (a long fit,
    # replay or estimate printed nothing until its results, for minutes on a real matrix)
    for argv, phase in (
        (["fit", str(tmp_path / "cal.parquet"), "--out", str(tmp_path / "fit")], "fitting ..."),
        (
            ["estimate", str(tmp_path / "fit"), str(tmp_path / "new.parquet")],
            "reading the answers ...",
        ),
        (
            [
                "select",
                "replay",
                str(tmp_path / "cal.parquet"),
                "--no-history",
                "--budget",
                "200",
                "--out",
                str(tmp_path / "sel"),
            ],
            "running the selection ...",
        ),
    ):
        began = time.monotonic()
        text = _on_a_pty(argv, env).decode("utf-8", "replace")
        seconds = time.monotonic() - began
        said = text.replace("\r\n", "\n").split("\n")
        assert phase in said, (argv[0], text)
        progress = [line for line in said if line.endswith(" ...") or " ... " in line]
        # a line a phase, not one a sweep: a phase's start line, then a timed line at most
        # every PROGRESS_LINE_EVERY seconds (a cold numba cache on a loaded machine makes a
        # phase long enough for those; they are counted against the command's own time)
        timed = [line for line in progress if _TIMED.search(line)]
        assert len(progress) - len(timed) <= 6, progress
        assert len(timed) <= seconds / PROGRESS_LINE_EVERY, (seconds, progress)
        assert "wrote" in text or "score" in text, text
        assert "\x1b" not in text, repr(text[:300])
        lines = text.replace("\r\n", "\n").split("\n")
        assert lines[0].strip(), (argv[0], repr(text[:200]))  # the first line says something
        assert "\r" not in "\n".join(lines), repr(text[:300])  # nothing drawn over a line


_TIMED = re.compile(r" \.\.\.( [\d,]+(/[\d,]+)?)? \(\d+ s\)(: |$)")
"""A timed progress line: ``PHASE ... [DONE[/TOTAL]] (N s)[: detail]``."""

_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def _screen(text: str) -> list[str]:
    """The lines a terminal shows after ``text``: printable characters written at the cursor,
    ``\\r``, ``\\n``, erase-line (``ESC[2K``), cursor up (``ESC[nA``) and the cursor's
    hide/show; any other escape code fails the test (it is not one the display needs)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    k = 0
    while k < len(text):
        found = _CSI.match(text, k)
        if found:
            args, final = found.groups()
            if final == "K" and args == "2":
                lines[row] = []
            elif final == "A":
                row = max(0, row - int(args or 1))
            elif final in "lh" and args == "?25":
                pass
            else:
                raise AssertionError(f"unexpected escape code {found.group()!r}")
            k = found.end()
            continue
        char = text[k]
        k += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append([])
        elif char == "\x1b":
            raise AssertionError(f"unexpected escape {text[k - 1 : k + 8]!r}")
        else:
            line = lines[row]
            line.extend(" " * (col - len(line)))
            line[col : col + 1] = [char]
            col += 1
    return ["".join(line).rstrip() for line in lines]


def test_an_experiment_on_a_dumb_terminal_says_its_runs_in_plain_lines(tmp_path, monkeypatch):
    # experiment drew its runs' bar only where it could redraw: a dumb terminal got the one
    # "1 of N runs done ... more minutes" line (--task estimate: nothing) and then silence
    # for the whole experiment; now a line as the runs start and one every few seconds
    simulate_2pl(16, 60, random_state=4).matrix.to_long().to_parquet(tmp_path / "cal.parquet")
    env = {"TERM": "dumb", "COLUMNS": "100", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    cal = str(tmp_path / "cal.parquet")
    for argv, phase in (
        (["experiment", cal, "--seeds", "2", "--budget", "100", "--out", str(tmp_path / "a")],
         "runs ..."),
        (["experiment", cal, "--task", "estimate", "--seeds", "1", "--budgets", "30",
          "--out", str(tmp_path / "b")],
         "held-out runs ..."),
    ):  # fmt: skip
        text = _on_a_pty(argv, env).decode("utf-8", "replace")
        said = text.replace("\r\n", "\n").split("\n")
        assert said[0] == phase, (argv[3], text[:400])  # said before the first run ends
        assert "wrote" in text, text
        assert "\x1b" not in text and "\r" not in "\n".join(said), repr(text[:300])
    # and a line every PROGRESS_LINE_EVERY seconds while the runs last (the callback given)
    import io
    import time

    from rich.console import Console

    from latentbench.cli import _common, _select

    clock = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    buffer = io.StringIO()
    console = Console(file=buffer, width=100)
    monkeypatch.setattr(_select, "err_console", console)
    # the one decision of every command (_common.plain_progress): a terminal, not redrawn
    monkeypatch.setattr(_common, "on_a_terminal", lambda stream: True)
    monkeypatch.setattr(_common, "can_redraw", lambda stream: False)
    lines = _select._runs_lines(False)
    assert lines is not None and _select._runs_lines(True) is None  # none under -q
    for done in range(0, 7):
        lines("runs", done, 6)
        clock[0] += 6.0
    assert buffer.getvalue().splitlines() == [
        "runs ...", "runs ... 2/6 (12 s)", "runs ... 4/6 (24 s)", "runs ... 6/6 (36 s)"
    ]  # fmt: skip
    assert _common.PROGRESS_LINE_EVERY == 10.0


def test_no_color_draws_no_style_and_leaves_the_results_only(tmp_path):
    # NO_COLOR (no-color.org): rich's no_color drops colours but kept bold and dim, so the
    # progress line's phase and fit's "input:" heading were still written in bold on a
    # terminal (ESC[1m); the live line may move the cursor, and is erased when it ends
    data = simulate_2pl(40, 300, random_state=4).matrix.to_long()
    data.to_parquet(tmp_path / "cal.parquet")
    env = {"TERM": "xterm-256color", "NO_COLOR": "1", "COLUMNS": "100",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    argv = ["fit", str(tmp_path / "cal.parquet"), "--out", str(tmp_path / "fit")]
    text = _on_a_pty(argv, env).decode("utf-8", "replace")
    assert "wrote" in text, text
    sgr = re.findall(r"\x1b\[[0-9;]*m", text)
    assert not sgr, sgr[:5]
    assert "\x1b[?25l" in text  # a live line was drawn (a capable terminal): not a log
    screen = [line for line in _screen(text) if line]
    assert screen[0].startswith("input: long"), screen[:3]
    assert not any("fitting" in line or "0:00:" in line for line in screen), screen
    assert any(line.startswith("wrote") for line in screen), screen


def test_progress_lines_are_one_a_phase_and_one_every_few_seconds(monkeypatch):
    import io
    import time

    from rich.console import Console

    from latentbench.cli import _common

    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    buffer = io.StringIO()
    show = _common.progress_lines(Console(file=buffer, width=80))
    show("choosing the prior", 1, 5)
    for sweep in range(1, 200):  # 2 s apart: a line at most every PROGRESS_LINE_EVERY s
        clock[0] += 2.0
        show("fitting", sweep, None)
    show("writing", None, None)
    lines = buffer.getvalue().splitlines()
    assert lines[:3] == ["choosing the prior ...", "fitting ...", "fitting ... 6 (10 s)"]
    assert lines[-1] == "writing ..."
    assert len(lines) == 3 + 398 // 10  # one every 10 s of the fit's 396 s
    assert "\x1b" not in buffer.getvalue() and "\r" not in buffer.getvalue()
