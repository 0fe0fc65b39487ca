"""A dumb terminal (``TERM=dumb``: an editor's shell, a braille or speech terminal) gets the
results and nothing else: no blank line, cursor code or redrawn bar from the progress
display, which such a terminal cannot redraw (docs/usability.md)."""

from __future__ import annotations

import os
import select
import subprocess
import sys

import pytest

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
    for argv in (
        ["fit", str(tmp_path / "cal.parquet"), "--out", str(tmp_path / "fit")],
        ["estimate", str(tmp_path / "fit"), str(tmp_path / "new.parquet")],
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
    ):
        text = _on_a_pty(argv, env).decode("utf-8", "replace")
        assert "wrote" in text or "score" in text, text
        assert "\x1b" not in text, repr(text[:300])
        lines = text.replace("\r\n", "\n").split("\n")
        assert lines[0].strip(), (argv[0], repr(text[:200]))  # the first line says something
        assert "\r" not in "\n".join(lines), repr(text[:300])  # nothing drawn over a line
