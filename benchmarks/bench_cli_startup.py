"""CPU seconds of short commands in a fresh process, two source trees side by side.

A short command's time is mostly its start: the imports (numpy, pandas, numba, scipy, the
package) and the numba kernels it loads from the cache. The CLI tests that run a command in a
subprocess (terminals, closed pipes, signals, ASCII streams) pay it each time, and so does a
user at every ``latentbench ls``. Each case runs ``latentbench ...`` (``latentbench.cli.main``)
in a fresh process per tree (``PYTHONPATH`` the tree's ``src``), old and new alternating in one
window (``_timing.interleaved_seconds``), on a small synthetic store, fit and new model made
once with the new tree (warm numba caches: one untimed run of each case per tree first). Prints
per case the median CPU seconds (user + system, children included) of each tree and the
difference.

Cases: ``ls --store S --benchmark b --json``, ``export E.csv --store S --force``, ``ingest
table T.csv --store S2``, ``estimate FIT NEW.csv --budget 3 --json`` (16 models x 60 items).

Usage::

    python benchmarks/bench_cli_startup.py --old /tmp/old/src --new src --repeats 7

Measured 2026-12-07 (2 shared cores, load 3.4-4.1; the numba import moved out of ``import
latentbench.io`` and scipy.optimize out of ``latentbench.synthetic``), ``--repeats 5``, old ->
new CPU seconds: ``ls`` 1.34 -> 0.98, ``export`` 1.10 -> 0.89, ``ingest`` 1.37 -> 1.20,
``estimate`` 2.08 -> 1.93.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import interleaved_seconds

MAIN = "import sys; from latentbench.cli import main; sys.argv[0] = 'latentbench'; main()"


def _cpu_of(argv: list[str], src: Path, cwd: Path) -> float:
    """CPU seconds (user + system) of ``latentbench ARGV`` run with ``src`` first on the path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run(
        [sys.executable, "-c", MAIN, *argv], cwd=cwd, env=env, check=True, capture_output=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _inputs(folder: Path, src: Path) -> None:
    """The store, table, fit and new model the cases read, made with ``src``."""
    script = f"""
import sys
sys.path.insert(0, {str(src)!r})
from latentbench.synthetic import simulate_2pl
long = simulate_2pl(16, 60, random_state=4).matrix.to_long()
new = long["model"] == long["model"].iloc[-1]
long[~new].to_csv("cal.csv", index=False)
long[new].to_csv("new.csv", index=False)
"""
    subprocess.run([sys.executable, "-c", script], cwd=folder, check=True)
    env = {**os.environ, "PYTHONPATH": str(src)}
    for argv in (
        ["fit", "cal.csv", "--out", "fit", "-q"],
        ["ingest", "table", "cal.csv", "--benchmark", "b", "--store", "s.duckdb"],
    ):
        subprocess.run(
            [sys.executable, "-c", MAIN, *argv], cwd=folder, env=env, check=True,
            capture_output=True,
        )  # fmt: skip


CASES = {
    "ls": ["ls", "--store", "s.duckdb", "--benchmark", "b", "--json"],
    "export": ["export", "e.csv", "--store", "s.duckdb", "--force"],
    "ingest": ["ingest", "table", "new.csv", "--benchmark", "n", "--store", "s2.duckdb"],
    "estimate": ["estimate", "fit", "new.csv", "--budget", "3", "--json"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the old tree's src folder")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    folder = Path(tempfile.mkdtemp(prefix="bench-cli-startup-"))
    try:
        _inputs(folder, trees["new"])
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        for case, argv in CASES.items():

            def run(tree: Path, argv: list[str] = argv) -> float:
                (folder / "s2.duckdb").unlink(missing_ok=True)  # ingest: a new store each run
                return _cpu_of(argv, tree, folder)

            for tree in trees.values():
                run(tree)  # warm-up: the numba cache and the bytecode of each tree
            times = interleaved_seconds(
                {name: (lambda tree=tree: run(tree)) for name, tree in trees.items()},
                args.repeats,
            )
            old, new = (statistics.median(times[name]) for name in ("old", "new"))
            print(f"{case:9s} old {old:5.2f} s  new {new:5.2f} s  new - old {new - old:+.2f} s")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
