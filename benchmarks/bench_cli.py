"""Start-up time of the command line: ``latentbench --help`` and ``latentbench fit --help``.

Each case runs in a fresh interpreter (subprocess), ``--repeats`` times, interleaved with the
baseline: the same command after importing what the old start-up imported up front (numpy,
pandas, scipy, numba and the fitting code, via ``latentbench.irt`` and ``latentbench.select``).
Prints the median wall-clock and CPU (user + system) seconds per case and the ratio to the
baseline; on a loaded machine the CPU time is the steadier of the two.

Then the first run in a fresh environment (``--first-run``, on by default): every numba
kernel compiled from nothing, measured in a fresh ``NUMBA_CACHE_DIR`` (an empty numba cache,
which is what a new venv, CI job, notebook kernel or container has; the Python bytecode cache
is warm, as it is after ``pip install``), once each:

- ``latentbench fit`` of a 30 x 500 synthetic matrix (read, fit with the default priors,
  95% intervals, write the tables), target <= 5 s on an idle 2-core machine;
- ``latentbench demo`` (its whole first run), target <= 30 s.

Usage: ``PYTHONPATH=src python benchmarks/bench_cli.py [--repeats 7] [--no-first-run]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
LAZY = "from latentbench.cli import main; main()"
EAGER = "import latentbench.irt, latentbench.select, latentbench.report; " + LAZY
CASES = {"--help": ["--help"], "fit --help": ["fit", "--help"], "--version": ["--version"]}


def _time(
    code: str, args: list[str], env_extra: dict[str, str] | None = None, cwd: str | None = None
) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh interpreter running ``code``."""
    env = {**os.environ, "PYTHONPATH": SRC, **(env_extra or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def first_run() -> None:
    """First ``fit`` of 30 x 500 and first ``demo``, each with an empty numba cache."""
    import numpy as np

    with tempfile.TemporaryDirectory() as work:
        rng = np.random.default_rng(0)
        theta, a, b = rng.normal(size=30), rng.uniform(0.5, 1.5, 500), rng.normal(size=500)
        y = rng.random((30, 500)) < 1 / (1 + np.exp(-(np.outer(theta, a) + b)))
        lines = ["model,item,score"] + [
            f"m{i},q{j},{int(y[i, j])}" for i in range(30) for j in range(500)
        ]
        Path(work, "responses.csv").write_text("\n".join(lines) + "\n")
        rows = []
        for name, argv, target in (
            ("fit 30 x 500", ["fit", "responses.csv", "--out", "fit", "-q"], 5.0),
            ("demo", ["demo"], 30.0),
        ):
            cache = tempfile.mkdtemp(dir=work)
            wall, cpu = _time(LAZY, argv, {"NUMBA_CACHE_DIR": cache}, cwd=work)
            again = _time(
                LAZY,
                [*argv[:-2], "again", "-q"] if name != "demo" else argv,
                {"NUMBA_CACHE_DIR": cache},
                cwd=work,
            )
            rows.append((name, wall, cpu, again[0], again[1], target))
    print(
        f"\nfirst run with an empty numba cache (fresh NUMBA_CACHE_DIR), then again with it "
        f"filled; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(
        f"{'case':<14} {'first wall':>10} {'first cpu':>10} {'again wall':>10} "
        f"{'again cpu':>10} {'target':>7}"
    )
    for name, wall, cpu, wall2, cpu2, target in rows:
        print(f"{name:<14} {wall:>10.2f} {cpu:>10.2f} {wall2:>10.2f} {cpu2:>10.2f} {target:>6.0f}s")
    print("(seconds; on a loaded machine the CPU time is what an idle one would take as wall)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--first-run", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--only-first-run", action="store_true")
    args = parser.parse_args()
    if args.only_first_run:
        first_run()
        return
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
    if args.first_run:
        first_run()


if __name__ == "__main__":
    main()
