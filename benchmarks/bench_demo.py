"""Wall-clock and CPU time of ``latentbench demo``, first run included.

The demo runs in a fresh interpreter with an empty numba cache directory (``NUMBA_CACHE_DIR``),
so the kernels compile as on a first install. Prints wall seconds and the CPU seconds of the
demo process and its workers (user + system): on a loaded machine the wall time says more
about the other jobs than about the demo, the CPU time does not.

Usage: ``PYTHONPATH=src python benchmarks/bench_demo.py [--warm]``
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="Keep the default numba cache.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": SRC}
        if not args.warm:
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba-cache")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "from latentbench.cli import main; main()", "demo",
             "--out", str(Path(tmp) / "demo")],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    load = os.getloadavg()[0]
    print(f"demo ({'warm' if args.warm else 'cold numba cache'}): wall {wall:.1f} s, "
          f"CPU {cpu:.1f} s, {os.cpu_count()} cores, load average {load:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
