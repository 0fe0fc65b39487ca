"""The cBMM fit on a GPU against the default CPU kernels, side by side in one process.

For synthetic 2PL matrices at leaderboard sizes (default 2211 x 12032, 5000 x 20000 and
8000 x 40000; 20% of cells missing), print for every engine: median seconds over repeats,
sweeps, final objective, its relative gap to the CPU kernels', the largest difference of
the reported abilities (after the usual mean-0 / sd-1 normalisation), and time / CPU.

Engines: ``numba`` (``fit_cbmm`` default, the fused CPU kernels on every core), ``torch-cpu``
and ``torch-cuda`` (``device="cpu"`` / ``"cuda"``, the PyTorch engine). The user's path,
``TwoPL(device=...).fit`` (prior resolution, intervals), is timed once per engine at the
first size. Engines that cannot run here (no torch, no GPU) are listed as such.

Usage::

    python benchmarks/bench_device.py
    python benchmarks/bench_device.py --size 2211x12032 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

from latentbench import TwoPL
from latentbench.irt import fit_cbmm
from latentbench.synthetic import simulate_2pl

SIZES = ["2211x12032", "5000x20000", "8000x40000"]


def _engines() -> dict[str, str | None]:
    engines: dict[str, str | None] = {"numba": None}
    try:
        import torch
    except ImportError:
        print("torch: not installed (engines torch-cpu and torch-cuda not run)")
        return engines
    engines["torch-cpu"] = "cpu"
    if torch.cuda.is_available():
        engines["torch-cuda"] = "cuda"
        print(f"torch {torch.__version__}, GPU: {torch.cuda.get_device_name(0)}")
    else:
        print(f"torch {torch.__version__}: no GPU visible (engine torch-cuda not run)")
    return engines


def _synchronise(device: str | None) -> None:
    if device is not None and device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _abilities(U: np.ndarray) -> np.ndarray:
    theta = U[:, 0]
    return (theta - theta.mean()) / theta.std()


def run_size(
    size: str, engines: dict[str, str | None], repeats: int, tol: float, skip: set
) -> None:
    n, m = (int(x) for x in size.split("x"))
    Y = simulate_2pl(n, m, missing=0.2, random_state=0).matrix.scores
    print(f"\n{n} x {m}, 20% missing, float32 matrix {Y.size * 4 / 2**20:.0f} MB, tol {tol:g}")
    print(
        f"  {'engine':<11} {'median s':>9} {'min s':>8} {'sweeps':>7} {'objective':>16} "
        f"{'rel gap':>9} {'max|dθ|':>9} {'time/numba':>10}"
    )
    base_time = base_loss = None
    base_theta = None
    for name, device in engines.items():
        if name in skip:
            print(f"  {name:<11} skipped (--skip)")
            continue
        times, fit = [], None
        for _ in range(repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _synchronise(device)
                start = time.perf_counter()
                fit = fit_cbmm(Y, tol=tol, max_iter=5000, device=device)
                _synchronise(device)
                times.append(time.perf_counter() - start)
        assert fit is not None
        median = statistics.median(times)
        loss = float(fit.loss_history[-1])
        theta = _abilities(fit.U)
        if base_time is None:
            base_time, base_loss, base_theta = median, loss, theta
        gap = (loss - base_loss) / abs(base_loss)
        dtheta = float(np.abs(theta - base_theta).max())
        print(
            f"  {name:<11} {median:>9.2f} {min(times):>8.2f} {fit.n_iter:>7d} {loss:>16.6f} "
            f"{gap:>+9.1e} {dtheta:>9.1e} {median / base_time:>10.2f}"
        )


def run_user_path(size: str, engines: dict[str, str | None], skip: set, repeats: int) -> None:
    from latentbench import ResponseMatrix

    n, m = (int(x) for x in size.split("x"))
    matrix: ResponseMatrix = simulate_2pl(n, m, missing=0.2, random_state=0).matrix
    print(f"\nuser path TwoPL(device=...).fit at {n} x {m} (engines in turn, {repeats} rounds)")
    times: dict[str, list[float]] = {}
    thetas: dict[str, np.ndarray] = {}
    for _ in range(repeats):  # rounds, so that a first-call cost shows as the first round
        for name, device in engines.items():
            if name in skip:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                result = TwoPL(device=device).fit(matrix)
                _synchronise(device)
                times.setdefault(name, []).append(time.perf_counter() - start)
            thetas[name] = np.asarray(result.theta)
    first = next(iter(times))
    for name, seconds in times.items():
        dtheta = float(np.abs(thetas[name] - thetas[first]).max())
        rounds = " ".join(f"{t:.2f}" for t in seconds)
        print(
            f"  {name:<11} median {statistics.median(seconds):>7.2f} s (rounds {rounds})  "
            f"max|dθ| {dtheta:.1e}  ratio "
            f"{statistics.median(seconds) / statistics.median(times[first]):.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", action="append", help="NxJ (repeatable); default: all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--skip", default="", help="engines to skip, comma-separated")
    parser.add_argument("--no-user-path", action="store_true")
    parser.add_argument("--user-repeats", type=int, default=3, help="rounds of the user path")
    args = parser.parse_args()
    engines = _engines()
    skip = {s for s in args.skip.split(",") if s}
    # compile the CPU kernels and warm the GPU before anything is timed
    warm = simulate_2pl(60, 40, random_state=1).matrix
    for device in engines.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_cbmm(warm.scores, max_iter=5, device=device)
            TwoPL(device=device).fit(warm)
    sizes = args.size or SIZES
    if not args.no_user_path:
        run_user_path(sizes[0], engines, skip, args.user_repeats)
    for size in sizes:
        run_size(size, engines, args.repeats, args.tol, skip)


if __name__ == "__main__":
    main()
