"""Two runs given one ``--out`` at the same moment (two fits in two terminals, a script run
twice): the folder ends with all the files of one of them, never some of each, and neither
fails because the other created the folder first (``write_directory``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

# one writer: its files tagged with its name, each move slowed (DELAY s) and its start
# delayed (START s) so that two writers overlap
WRITER = """
import os, sys, time
from pathlib import Path
from latentbench.io._outputs import write_directory

real = os.replace
out, tag, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
delay, start = float(sys.argv[4]), float(sys.argv[5])
def slow(a, b):
    time.sleep(delay)
    real(a, b)
os.replace = slow
writers = {f"t{k}.csv": (lambda p, k=k: p.write_text(f"{tag} {k}")) for k in range(5)}
writers["fit.json"] = lambda p: p.write_text(f"{tag} fit")
print("ready", flush=True)
while not go.exists():
    time.sleep(0.005)
time.sleep(start)
write_directory(out, writers, last="fit.json")
"""


@pytest.mark.parametrize(
    ("existing", "timing"),
    [
        # both find no folder and move theirs in: the second failed 'Directory not empty'
        (False, {"A": (0.1, 0.0), "B": (0.1, 0.0)}),
        # A moves a file every 0.2 s, B starts 0.3 s later, one every 0.01 s: B's first
        # files were replaced by A's later ones, A's first by B's
        (True, {"A": (0.2, 0.0), "B": (0.01, 0.3)}),
    ],
    ids=["new_folder", "reused_folder"],
)
def test_two_writers_of_one_folder_leave_the_files_of_one(
    tmp_path: Path, existing: bool, timing: dict[str, tuple[float, float]]
):
    out = tmp_path / "fit"
    if existing:  # an earlier run's folder, reused by both
        out.mkdir()
        for name in [f"t{k}.csv" for k in range(5)] + ["fit.json"]:
            (out / name).write_text("old")
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(out), tag, str(go), *map(str, timing[tag])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("A", "B")
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    go.touch()  # both at once
    started = time.monotonic()
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
    assert time.monotonic() - started < 30
    tags = {path.name: path.read_text().split()[0] for path in out.iterdir()}
    assert sorted(tags) == sorted([f"t{k}.csv" for k in range(5)] + ["fit.json"])
    assert len(set(tags.values())) == 1, f"files of both runs in one folder: {tags}"
    # nothing left beside it: no lock, no staging folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit", "go"]
