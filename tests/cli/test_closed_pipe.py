"""``latentbench ... | head -1``: the reader closes the pipe after one line. Click and rich
exited 1 there (a failure's status) after the command had written its files; now the command
exits quietly with 141 (128 + SIGPIPE), the status a shell reports for ``git log | head -1``
or ``ls | head -1``, with no traceback or message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import latentbench
from latentbench.cli import CLOSED_PIPE

PACKAGE_PARENT = Path(latentbench.__file__).resolve().parents[1]
MAIN = "from latentbench.cli import main; main()"


def _env() -> dict[str, str]:
    # the package this process imported, with its numba cache, as every other CLI process of
    # the suite uses: a fresh NUMBA_CACHE_DIR compiled fit's kernels anew in each run
    # (~1.6 s), and the repository's src/ where CI tests an installed copy compiled the
    # random-item kernels a second time there (~2.4 s), neither of which these tests check
    return {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}


def _closed_write_end() -> int:
    """The write end of a pipe whose reader is already gone: the first write fails."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["fit", "--help"]], ids=" ".join)
def test_output_to_a_closed_pipe_exits_141_without_a_word(tmp_path, args):
    write = _closed_write_end()
    try:
        done = subprocess.run(
            [sys.executable, "-c", MAIN, *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == CLOSED_PIPE == 141, done.stderr
    assert done.stderr == ""


def test_fit_piped_to_head_writes_its_files_and_exits_141(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        (rng.random((15, 30)) < 0.5).astype(float),
        index=pd.Index([f"m{i}" for i in range(15)], name="model"),
        columns=[f"q{j}" for j in range(30)],
    )
    frame.reset_index().to_csv(tmp_path / "small.csv", index=False)
    out = tmp_path / "res"
    # the shell's `| head -1`: the first line read, then the pipe closed
    process = subprocess.Popen(
        [sys.executable, "-c", MAIN, "fit", str(tmp_path / "small.csv"), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    said = process.stderr.read()
    assert process.wait(timeout=300) == CLOSED_PIPE, said
    assert first.startswith("input:")
    assert "Traceback" not in said and "Exception ignored" not in said, said
    assert (out / "fit.json").exists() and (out / "abilities.csv").exists()


# a command whose own work breaks a pipe that is not standard output's (a worker process
# that died, a socket): fit's engine raising BrokenPipeError
BROKEN_INSIDE = """
import latentbench.irt as irt
def broken(*args, **kwargs):
    raise BrokenPipeError(32, "Broken pipe (a worker's)")
irt.TwoPL.fit = broken
from latentbench.cli import main
main()
"""


def test_a_broken_pipe_inside_the_command_is_an_error_not_a_quiet_141(tmp_path):
    """Every BrokenPipeError exited 141 without a word, as for ``| head``: a command whose
    worker died looked, in a script, like one whose reader had had enough."""
    frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": ["x", "y", "x", "y"]})
    frame.assign(score=[1.0, 0.0, 0.0, 1.0]).to_csv(tmp_path / "small.csv", index=False)
    with open(tmp_path / "stdout.txt", "w") as stdout:  # a file, as in `... > log.txt`
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                BROKEN_INSIDE,
                "fit",
                str(tmp_path / "small.csv"),
                "--out",
                str(tmp_path / "res"),
            ],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            timeout=300,
        )
    assert done.returncode not in (0, CLOSED_PIPE), done.returncode
    assert "BrokenPipeError" in done.stderr and "a worker's" in done.stderr, done.stderr[-2000:]
