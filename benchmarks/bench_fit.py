"""Benchmark the cBMM fit against the reference baselines, side by side in one process.

For synthetic 2PL matrices of the published sizes (2211 x 541, 1324, 5761, 12032; dense and
with 20% of cells missing) and for the real matrices in ``../shared/data``, print for every
method: median seconds over repeats, peak extra memory (resident set, measured in a forked
child), sweeps / iterations, final objective, its relative gap to ours, and time / ours.

Methods: ``ours`` (latentbench.irt.fit_cbmm), ``lbfgsb`` (joint ML with SciPy L-BFGS-B,
analytic gradients, a >= 0 bounds), ``textbook`` (the published block order with a Python
loop of SciPy NNLS per item), and ``girth`` (twopl_jml) when that package is installed.

Usage::

    python benchmarks/bench_fit.py --size 2211x12032
    python benchmarks/bench_fit.py --size 2211x12032 --missing 0.2
    python benchmarks/bench_fit.py                 # all published sizes, dense and 20% missing
    python benchmarks/bench_fit.py --real          # the shared real matrices
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import fit_cbmm
from latentbench.irt.baselines import fit_lbfgsb, fit_textbook_cbmm, objective
from latentbench.synthetic import simulate_2pl

SIZES = ["2211x541", "2211x1324", "2211x5761", "2211x12032"]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _methods(tol: float) -> dict[str, Callable[[np.ndarray], object]]:
    methods: dict[str, Callable[[np.ndarray], object]] = {
        "ours": lambda Y: fit_cbmm(Y, tol=tol, max_iter=5000),
        "lbfgsb": lambda Y: fit_lbfgsb(Y, tol=tol),
        "textbook": lambda Y: fit_textbook_cbmm(Y, tol=tol, max_iter=5000),
    }
    try:  # optional comparison, never required
        from girth import twopl_jml  # type: ignore[import-not-found]

        def girth_jml(Y: np.ndarray) -> object:
            # girth takes items x participants; dense binary data only (no missing, no
            # fractional scores); it returns item parameters only, so no objective is shown
            if np.isnan(Y).any() or not np.isin(Y, (0, 1)).all():
                raise ValueError("girth comparison: dense binary matrices only")
            return twopl_jml(Y.T.astype(int))

        methods["girth-jml"] = girth_jml
    except ImportError:
        pass
    return methods


def _read_status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _peak_child(method: Callable[[np.ndarray], object], Y: np.ndarray, queue: mp.Queue) -> None:
    float(np.nansum(Y))  # touch the (shared) matrix pages so they count before the baseline
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set
    except OSError:
        pass
    base = _read_status("VmRSS")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        method(Y)
    queue.put(_read_status("VmHWM") - base)


def peak_extra_bytes(method: Callable[[np.ndarray], object], Y: np.ndarray) -> float:
    """Peak resident memory added by one call, measured in a forked child (Linux)."""
    if not Path("/proc/self/clear_refs").exists():
        return float("nan")
    context = mp.get_context("fork")
    queue: mp.Queue = context.Queue()
    child = context.Process(target=_peak_child, args=(method, Y, queue))
    child.start()
    child.join()
    return float(queue.get()) if not queue.empty() else float("nan")


def run_one(
    name: str,
    Y: np.ndarray,
    tol: float,
    repeats: int,
    slow_repeats: int,
    methods: list[str],
    memory: bool,
) -> None:
    available = _methods(tol)
    rows = []
    ours_time = ours_loss = None
    for method in methods:
        if method not in available:
            print(f"  {method}: not available")
            continue
        function = available[method]
        n_rep = repeats if method == "ours" else slow_repeats
        times, fit = [], None
        try:
            for _ in range(n_rep):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    fit = function(Y)
                    times.append(time.perf_counter() - start)
        except Exception as exc:  # a baseline that cannot run here is reported, not fatal
            print(f"  {method}: NA ({exc})")
            continue
        median = statistics.median(times)
        if hasattr(fit, "U"):
            loss = objective(Y, fit.U, fit.V, fit.b, 1.0, 1e-2)
            sweeps = fit.n_iter
        else:
            loss, sweeps = float("nan"), -1
        peak = peak_extra_bytes(function, Y) if memory else float("nan")
        if method == "ours":
            ours_time, ours_loss = median, loss
        rows.append((method, median, peak, sweeps, loss))
    matrix_mb = Y.size * 4 / 2**20
    print(
        f"\n{name}: {Y.shape[0]} x {Y.shape[1]}, {np.isnan(Y).mean():.0%} missing, "
        f"float32 matrix {matrix_mb:.0f} MB, tol {tol:g}"
    )
    print(
        f"  {'method':<10} {'median s':>9} {'peak MB':>8} {'x matrix':>8} {'sweeps':>7} "
        f"{'objective':>16} {'rel gap':>9} {'time/ours':>9}"
    )
    for method, median, peak, sweeps, loss in rows:
        gap = (loss - ours_loss) / abs(ours_loss) if ours_loss else float("nan")
        ratio = median / ours_time if ours_time else float("nan")
        print(
            f"  {method:<10} {median:>9.2f} {peak / 2**20:>8.0f} {peak / 2**20 / matrix_mb:>8.2f} "
            f"{sweeps:>7d} {loss:>16.6f} {gap:>+9.2e} {ratio:>9.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", action="append", help="NxJ (repeatable); default: all")
    parser.add_argument(
        "--missing",
        type=float,
        action="append",
        help="fraction of missing cells (repeatable); default 0 and 0.2",
    )
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=5, help="repeats of our fit")
    parser.add_argument("--slow-repeats", type=int, default=1, help="repeats of the baselines")
    parser.add_argument(
        "--methods", default="ours,lbfgsb,textbook", help="comma-separated; also girth-jml"
    )
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--real", action="store_true", help="fit the shared real matrices")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    methods = args.methods.split(",")
    # compile the kernels outside the timings
    fit_cbmm(simulate_2pl(50, 40, random_state=0).matrix.scores)
    if args.real:
        for path in sorted(SHARED.glob("*.parquet")):
            if path.stem.endswith(("_models", "_items")):
                continue
            Y = ResponseMatrix.read(path).scores
            run_one(
                path.stem, Y, args.tol, args.repeats, args.slow_repeats, methods, not args.no_memory
            )
        return
    for size in args.size or SIZES:
        n, m = (int(x) for x in size.lower().split("x"))
        for missing in args.missing if args.missing is not None else [0.0, 0.2]:
            data = simulate_2pl(n, m, missing=missing, random_state=args.seed)
            run_one(
                f"synthetic 2PL {size}",
                data.matrix.scores,
                args.tol,
                args.repeats,
                args.slow_repeats,
                methods,
                not args.no_memory,
            )


if __name__ == "__main__":
    main()
