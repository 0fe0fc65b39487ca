"""CPU and wall time of a first ``latentbench fit`` (empty numba cache), trees side by side.

Each run is a fresh interpreter with its own empty ``NUMBA_CACHE_DIR``, so every kernel the
fit needs compiles, as on a new install, in CI or in a container. With several ``--src``
trees the runs alternate (A, B, A, B, ...) so that both see the same load; the medians of
wall and CPU seconds (user + system, the fit's process and its workers) are printed per tree.
On a loaded machine the CPU column is the one to compare.

Usage::

    PYTHONPATH=src python benchmarks/bench_first_fit.py ../shared/data/mmlu_pro.parquet
    python benchmarks/bench_first_fit.py FILE --src /old/tree/src --src src --repeats 3
    python benchmarks/bench_first_fit.py FILE --warm     # the default cache (after one run)
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


def run_once(path: str, src: str, warm: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one ``latentbench fit PATH`` with ``src`` first on the path."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": src}
        if not warm:
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba-cache")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "from latentbench.cli import main; main()", "fit", path,
             "--out", str(Path(tmp) / "fit"), "-q"],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="A score file latentbench fit reads.")
    parser.add_argument("--src", action="append", help="A tree's src folder (repeatable).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="Keep the default numba cache.")
    args = parser.parse_args()
    trees = args.src or [SRC]
    times: dict[str, list[tuple[float, float]]] = {src: [] for src in trees}
    for _ in range(args.repeats):
        for src in trees:
            times[src].append(run_once(args.path, src, args.warm))
    cache = "default numba cache" if args.warm else "empty numba cache"
    print(f"latentbench fit {args.path} ({cache}), {args.repeats} runs per tree, "
          f"load average {os.getloadavg()[0]:.1f}:")  # fmt: skip
    for src, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        each = ", ".join(f"{c:.1f}" for _, c in runs)
        print(f"  {src}: median wall {wall:.1f} s, CPU {cpu:.1f} s (CPU each: {each})")


if __name__ == "__main__":
    main()
