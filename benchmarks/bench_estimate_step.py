"""Per-step time of ``estimate``, ``compare`` and ``tiny(precision=)`` in two source trees.

The sequential loop (draw, answer, update the posterior, the predictions and the confidence
sequence) is what ``estimate`` / ``compare`` spend their time in, and what the coverage tests
of ``tests/select`` spend theirs in. Each case runs in a fresh process per tree (``PYTHONPATH``
the tree's ``src`` and this folder), old and new alternating in one window
(``_timing.interleaved_seconds``); a process builds its world, runs the case once (warm-up),
then times it (CPU seconds, the machine being shared) and divides by the rounds it ran. Prints
per case the median microseconds per round of each tree and the ratio new / old.

Cases (seeded simulations of ``bench_estimate_audit``):

- ``compare-margin``: ``compare(margin=0.02, budget=400, delta=0.2)`` on the margin audit's
  world (42 x 400, rank-3 truth at rank 1; two models a fifth of the items apart), 4 seeds x
  the two cases of ``run_margin`` (test_compare_margin_and_sign_are_wrong_at_most_delta);
- ``estimate-2000``: ``estimate(budget=300)`` of a new model on a 30 x 2,000 calibration, 3
  seeds;
- ``estimate-small``: ``estimate`` at budget 60 and at precision 0.08 on 20 x 100
  (test_most_of_a_small_benchmark_drawn), 6 seeds;
- ``tiny-precision``: ``tiny(precision=0.08)`` on 30 x 400 (one call; rounds: the replays').

Usage::

    python benchmarks/bench_estimate_step.py --old /tmp/old/src --new src --repeats 5

Results (``RESULTS_estimate.md``, "Per-step time").
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _timing import interleaved_seconds

HERE = Path(__file__).resolve().parent

CASE = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from bench_estimate_audit import matrix, run_margin, simulate
import bench_estimate_audit
from latentbench.select import estimate, tiny
from latentbench.select import _estimate_cs
from latentbench.select._estimate_calibration import from_matrix

case = sys.argv[1]
rounds = [0]
advance = _estimate_cs.WeightedBettingCS._advance
def counted(self, *args):  # one round of a sequence (compare: one per pair of answers)
    rounds[0] += 1
    return advance(self, *args)
_estimate_cs.WeightedBettingCS._advance = counted
if case == "compare-margin":
    Y = simulate(42, 400, 3, seed=9)
    cal = from_matrix(matrix(Y[:40]), rank=1)
    bench_estimate_audit.from_matrix = lambda *a, **k: cal  # fitted once, outside the timing
    run = lambda: run_margin(4, 0.2, margin=0.02, budget=400, n=400)
elif case == "estimate-2000":
    Y = simulate(31, 2000, 3, seed=4)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    run = lambda: [estimate(cal, Y[30], seed=s, budget=300) for s in range(3)]
elif case == "estimate-small":
    Y = simulate(24, 100, 3, seed=1)
    cal = from_matrix(matrix(Y[:20]), rank=1)
    run = lambda: [
        (estimate(cal, Y[20], delta=0.2, seed=s, budget=60),
         estimate(cal, Y[21], delta=0.2, seed=s, budget=None, precision=0.08))
        for s in range(6)
    ]
else:
    Y = simulate(30, 400, 3, seed=2)
    responses = matrix(Y)
    cal = from_matrix(responses, rank=1)
    run = lambda: tiny(cal, precision=0.08, responses=responses)
run()
rounds[0] = 0
start = time.process_time()
run()
print(json.dumps([time.process_time() - start, rounds[0]]))
"""

CASES = ("compare-margin", "estimate-2000", "estimate-small", "tiny-precision")


def measure(src: Path, case: str) -> float:
    """Microseconds of CPU per round of ``case`` in a fresh process on the tree ``src``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(HERE)]))
    out = subprocess.run(
        [sys.executable, "-c", CASE, case], env=env, check=True, capture_output=True, text=True
    ).stdout
    seconds, rounds = json.loads(out.strip().splitlines()[-1])
    return 1e6 * seconds / max(rounds, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the baseline's src folder")
    parser.add_argument("--new", type=Path, default=HERE.parent / "src", help="src folder")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    args = parser.parse_args()
    print(f"{'case':<16} {'old us/round':>13} {'new us/round':>13} {'new/old':>8}")
    for case in args.cases:
        trees = {"old": args.old.resolve(), "new": args.new.resolve()}
        times = interleaved_seconds(
            {tag: functools.partial(measure, src, case) for tag, src in trees.items()},
            args.repeats,
        )
        old, new = (statistics.median(times[tag]) for tag in ("old", "new"))
        print(f"{case:<16} {old:>13.1f} {new:>13.1f} {new / old:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
