"""Start-up time of the command line: ``latentbench --help`` and ``latentbench fit --help``.

Each case runs in a fresh interpreter (subprocess), ``--repeats`` times, interleaved with the
baseline: the same command after importing what the old start-up imported up front (numpy,
pandas, scipy, numba and the fitting code, via ``latentbench.irt`` and ``latentbench.select``).
Prints the median wall-clock and CPU (user + system) seconds per case and the ratio to the
baseline; on a loaded machine the CPU time is the steadier of the two.

Usage: ``PYTHONPATH=src python benchmarks/bench_cli.py [--repeats 7]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
LAZY = "from latentbench.cli import main; main()"
EAGER = "import latentbench.irt, latentbench.select, latentbench.report; " + LAZY
CASES = {"--help": ["--help"], "fit --help": ["fit", "--help"], "--version": ["--version"]}


def _time(code: str, args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh interpreter running ``code``."""
    env = {**os.environ, "PYTHONPATH": SRC}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    _time(LAZY, ["--help"])  # warm the file cache and __pycache__
    _time(EAGER, ["--help"])
    print(
        f"{'case':<14} {'lazy wall':>9} {'eager wall':>10} {'ratio':>6} "
        f"{'lazy cpu':>9} {'eager cpu':>10} {'ratio':>6}"
    )
    for name, argv in CASES.items():
        lazy, eager = [], []
        for _ in range(args.repeats):  # interleaved, so both see the same machine load
            lazy.append(_time(LAZY, argv))
            eager.append(_time(EAGER, argv))
        a, b = (statistics.median(w for w, _ in runs) for runs in (lazy, eager))
        c, d = (statistics.median(u for _, u in runs) for runs in (lazy, eager))
        print(f"{name:<14} {a:>9.3f} {b:>10.3f} {a / b:>6.2f} {c:>9.3f} {d:>10.3f} {c / d:>6.2f}")
    print(
        f"(seconds, median of {args.repeats} fresh interpreters each; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; target: --help < 0.5 s)"
    )


if __name__ == "__main__":
    main()
