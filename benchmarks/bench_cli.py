"""Start-up time of the command line: ``latentbench --help`` and ``latentbench fit --help``.

Each case runs in a fresh interpreter (subprocess), ``--repeats`` times, interleaved with the
baseline: the same command after importing what the old start-up imported up front (numpy,
pandas, scipy, numba and the fitting code, via ``latentbench.irt`` and ``latentbench.select``).
Prints the median wall-clock seconds per case and the ratio to the baseline.

Usage: ``PYTHONPATH=src python benchmarks/bench_cli.py [--repeats 7]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
LAZY = "from latentbench.cli import main; main()"
EAGER = "import latentbench.irt, latentbench.select, latentbench.report; " + LAZY
CASES = {"--help": ["--help"], "fit --help": ["fit", "--help"], "--version": ["--version"]}


def _time(code: str, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": SRC}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    _time(LAZY, ["--help"])  # warm the file cache and __pycache__
    _time(EAGER, ["--help"])
    print(f"{'case':<14} {'lazy (s)':>9} {'eager (s)':>10} {'ratio':>6}")
    for name, argv in CASES.items():
        lazy, eager = [], []
        for _ in range(args.repeats):  # interleaved, so both see the same machine load
            lazy.append(_time(LAZY, argv))
            eager.append(_time(EAGER, argv))
        a, b = statistics.median(lazy), statistics.median(eager)
        print(f"{name:<14} {a:>9.3f} {b:>10.3f} {a / b:>6.2f}")
    print(f"(median of {args.repeats} fresh interpreters each; target: --help < 0.5 s)")


if __name__ == "__main__":
    main()
