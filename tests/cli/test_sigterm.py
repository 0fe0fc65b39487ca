"""SIGTERM (``kill PID``, ``docker stop``, a cancelled CI job) interrupts a command as Ctrl-C
does: it unwinds, says so on stderr and exits 130. It ended the process at once without a
word (status -15), its progress bar and temporary files left as they were."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# fit's engine stuck (a long fit): it says so on stdout, then waits to be stopped
STUCK = """
import sys, time
import latentbench.irt as irt
def stuck(*args, **kwargs):
    print("fitting", flush=True)
    while True:
        time.sleep(0.05)
irt.TwoPL.fit = stuck
from latentbench.cli import main
main()
"""


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_sigterm_interrupts_a_command_as_ctrl_c_does(tmp_path):
    frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": ["x", "y", "x", "y"]})
    frame.assign(score=[1.0, 0.0, 0.0, 1.0]).to_csv(tmp_path / "small.csv", index=False)
    out = tmp_path / "res"
    process = subprocess.Popen(
        [sys.executable, "-c", STUCK, "fit", str(tmp_path / "small.csv"), "--out", str(out), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "NUMBA_CACHE_DIR": str(tmp_path / "nb")},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "fitting"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err)
    assert "interrupted (SIGTERM): latentbench fit stopped before it finished" in err, err
    assert "Traceback" not in err
    assert not out.exists()
