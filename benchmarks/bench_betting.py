"""Benchmark the betting confidence sequences' hot path, compiled against NumPy, side by side.

Every revealed batch updates each candidate mean's capital under every horizon
(``select/_betting.py``): ``_capital_pass`` (numba, candidates innermost) against its NumPy
specification ``_capital_pass_reference``, and the mixtures' rejections ``_mix_and_reject``
(numba, exact mixtures only near a threshold) against ``_mix_and_reject_reference``, in this
process.

* kernel: one batch (b cells, H horizons, S candidates alive) at the shapes of a run;
* mixtures: the rejections of one batch (H processes, S candidates);
* replay: whole PULSE runs (default configuration, history proxy) on the BFCL candidate half
  of ``../shared/data``, with the compiled pass and with the NumPy one patched in; the script
  checks that both give the same estimates and bounds (the NumPy run patches in
  ``_wager_reference``, both kernels' references).

Prints medians over repeats and the ratio NumPy / compiled.

Usage::

    PYTHONPATH=src python benchmarks/bench_betting.py [--repeats 5] [--runs 10]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _timing import median_seconds

from latentbench.io import ResponseMatrix
from latentbench.select import (
    LowRankProxy,
    MatrixOracle,
    Pulse,
    _betting,
    run_selection,
    split_models,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bfcl_v2.parquet"


def kernel_case(b: int, H: int, S: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    n = 2000
    grid = np.linspace(0.3, 0.3 + S / 1000, S)
    offset = rng.random(b) * 800
    pool = n - 500 - np.arange(b, dtype=float)
    r = rng.random(b).round()
    bet = rng.random((H, b)) * 3
    args = (grid, n, offset, pool, r, -0.9, 0.95, bet, 0.5)

    def compiled() -> None:
        for _ in range(100):
            _betting._capital_pass(*args, np.zeros((H, S)), np.zeros((H, S)))

    def reference() -> None:
        for _ in range(100):
            _betting._capital_pass_reference(*args, np.zeros((H, S)), np.zeros((H, S)))

    compiled()
    a, c = median_seconds(compiled, repeats) * 10, median_seconds(reference, repeats) * 10
    print(f"| kernel, b = {b}, H = {H}, S = {S} | {a:.3f} ms | {c:.3f} ms | {c / a:.1f} |")


def mixture_case(H: int, S: int, repeats: int) -> None:
    rng = np.random.default_rng(1)
    up, down = rng.normal(0, 2, size=(H, S)), rng.normal(0, 2, size=(H, S))
    w = np.log(np.r_[0.85, np.full(H - 1, 0.15 / (H - 1))]) if H > 1 else np.zeros(1)
    args = (up, down, w, w, np.log(0.5), np.log(0.5), np.array([4.0, 3.5, 2.9]), np.zeros(S, bool))

    def run(kernel: Callable[..., None]) -> Callable[[], None]:
        def go() -> None:
            for _ in range(100):
                kernel(*args, np.zeros(S, bool), np.zeros(S, bool), np.zeros(S, bool))

        return go

    run(_betting._mix_and_reject)()
    a = median_seconds(run(_betting._mix_and_reject), repeats) * 10
    c = median_seconds(run(_betting._mix_and_reject_reference), repeats) * 10
    print(f"| mixtures and rejections, H = {H}, S = {S} | {a:.3f} ms | {c:.3f} ms | {c / a:.1f} |")


def replay_case(runs: int, repeats: int) -> None:
    scores = ResponseMatrix.read(DATA).scores.astype(np.float32)
    hist, test = split_models(scores.shape[0], random_state=0)
    proxy = LowRankProxy(random_state=0).fit(scores[hist])
    candidates = scores[test]

    def replay() -> list[np.ndarray]:
        out = []
        for seed in range(runs):
            res = run_selection(
                MatrixOracle(candidates), Pulse(), budget=8000, proxy=proxy, random_state=seed
            )
            out += [res.estimates, res.lower, res.upper, res.certificate_lower]
        return out

    compiled = _betting._wager
    fast = replay()
    t_fast = median_seconds(replay, repeats)
    _betting._wager = _betting._wager_reference
    try:
        slow = replay()
        t_slow = median_seconds(replay, repeats)
    finally:
        _betting._wager = compiled
    same = all(np.allclose(x, y, rtol=0, atol=1e-12) for x, y in zip(fast, slow, strict=True))
    print(
        f"| replay, BFCL candidates ({candidates.shape[0]} x {candidates.shape[1]}), "
        f"{runs} runs of 8,000 cells | {t_fast:.2f} s | {t_slow:.2f} s | {t_slow / t_fast:.1f} "
        f"| same results: {same} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    print("| case | compiled | NumPy | NumPy / compiled |")
    print("|---|---|---|---|")
    for b, H, S in [(16, 4, 100), (64, 4, 100), (64, 4, 1000), (64, 1, 300)]:
        kernel_case(b, H, S, args.repeats)
    for H, S in [(4, 1001), (5, 300)]:
        mixture_case(H, S, args.repeats)
    if DATA.exists():
        replay_case(args.runs, max(1, args.repeats // 2))


if __name__ == "__main__":
    main()
