"""Sparse-native fitting: cost in proportion to the observed cells (issue 12).

Everything is run side by side in one process, so a slow or contended machine slows every
method alike; the ratios are what to read.

Parts (``--part``):

``missing``
    Synthetic 2PL 1000 x 5000 at 0, 50, 90, 97 and 99% cells missing (MCAR). For every
    method: sweeps / iterations, seconds per fit (median of ``--repeats``), final objective
    and its relative gap to the best one. Methods: ``sparse`` (observed-cells majorizer,
    :func:`latentbench.irt._sparse.fit_sparse`), ``dense`` (fill-in majorizer,
    :func:`latentbench.irt.fit_cbmm`), ``lbfgsb`` (the project's L-BFGS-B baseline,
    :func:`latentbench.irt.baselines.fit_lbfgsb`, same objective, same start).
``large``
    ``--models`` x ``--items`` with ``--density`` observed (default 50,000 x 200,000 at 1%:
    100M cells), generated in row chunks straight into the row-compressed layout (never
    dense). Rank-1 fit: seconds, sweeps, peak extra resident memory against the storage of the
    observed cells, Spearman correlation of theta with the truth.
``from-long`` (or ``--from-long``)
    The user's path, end to end: a long table (``model``, ``item``, ``score`` columns, string
    ids, one row per observed cell, as read from Parquet) of ``--models`` x ``--items`` at
    ``--density`` -> :meth:`ResponseMatrix.from_long` -> ``TwoPL().fit`` (defaults: priors
    resolved from the data) -> the 95% ability intervals that ``latentbench fit`` writes
    (:func:`latentbench.irt.standard_errors`). Each path runs in a fresh subprocess that also
    builds the long table, so its peak resident memory (``getrusage`` ``ru_maxrss``) counts the
    table itself. Printed next to the dense path on the same number of observed cells (a
    complete matrix of about ``sqrt(n_obs / 2.5)`` x ``2.5 sqrt(n_obs / 2.5)``...). Defaults
    20,000 x 50,000 at 1% (10M cells).
``proxy``
    A history-free PULSE proxy refit: 1,000 candidates x 12,000 items with 5% revealed cells
    (the full rank-r fit of candidates and items), then 1% more cells revealed and the fit
    redone warm-started from the previous one.
``refit-small``
    The refit of a small history-free run: ``--models`` candidates (default 3) x ``--items``
    (default 600) with a fifth of the cells revealed, rank 1 and 2, fitted from scratch as
    :class:`~latentbench.select.OnlineProxy` refits: CPU time per fit and per sweep (median of
    ``--repeats`` batches of 40 fits). There the costs around the cell pass (the per-model
    solve, the rebalancing) weigh as much as the pass itself.

Usage::

    python benchmarks/bench_sparse.py --part missing
    python benchmarks/bench_sparse.py --part large --models 5000 --items 20000
    python benchmarks/bench_sparse.py --part proxy
    python benchmarks/bench_sparse.py --part refit-small --repeats 7
    python benchmarks/bench_sparse.py --from-long                       # 10M cells
    python benchmarks/bench_sparse.py --from-long --models 50000 --items 200000   # 100M
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from latentbench.io._cells import ObservedCells
from latentbench.irt import fit_cbmm
from latentbench.irt._sparse import fit_sparse
from latentbench.irt.baselines import fit_lbfgsb


def _rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _synthetic(n: int, m: int, rng: np.random.Generator):
    theta = rng.normal(size=n)
    a = rng.uniform(0.5, 1.0, m)
    b = rng.normal(0.0, 0.5, m)
    return theta, a, b


def part_missing(repeats: int, levels: list[float], tol: float, skip: set[str]) -> None:
    rng = np.random.default_rng(0)
    n, m = 1000, 5000
    theta, a, b = _synthetic(n, m, rng)
    p = 1 / (1 + np.exp(-(np.outer(theta, a) + b)))
    full = (rng.random((n, m)) < p).astype(np.float32)
    methods = {
        "sparse": lambda Y, cells: fit_sparse(cells, tol=tol),
        "dense": lambda Y, cells: fit_cbmm(Y, tol=tol),
        "lbfgsb": lambda Y, cells: fit_lbfgsb(Y, tol=tol),
    }
    print(f"1000 x 5000 synthetic 2PL, tol {tol:g}, median of {repeats}")
    print(
        f"{'missing':>8} {'method':>7} {'sweeps':>7} {'seconds':>9} {'objective':>14} "
        f"{'rel.gap':>9} {'time/sparse':>11}"
    )
    for missing in levels:
        Y = full.copy()
        Y[np.random.default_rng(1).random((n, m)) < missing] = np.nan
        start = time.perf_counter()
        cells = ObservedCells.from_dense(Y)
        build = time.perf_counter() - start
        rows = {}
        for name, method in methods.items():
            if name in skip:
                continue
            times = []
            for _ in range(repeats):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    fit = method(Y, cells)
                    times.append(time.perf_counter() - t0)
            rows[name] = (fit.n_iter, statistics.median(times), fit.loss)
        best = min(r[2] for r in rows.values())
        for name, (sweeps, seconds, loss) in rows.items():
            print(
                f"{missing:>8.0%} {name:>7} {sweeps:>7d} {seconds:>9.3f} {loss:>14.4f} "
                f"{(loss - best) / abs(best):>9.1e} {seconds / rows['sparse'][1]:>11.1f}",
                flush=True,
            )
        print(f"{'':>8} (building the observed-cells layout from the dense array: {build:.3f} s)")


def generate_csr(
    n: int, m: int, density: float, seed: int = 0, chunk_cells: int = 1_000_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A 2PL matrix with each cell observed with probability ``density``, in row chunks of
    about ``chunk_cells`` observed cells (their temporaries stay small against the whole),
    straight into CSR arrays (row pointers, int32 columns, float32 scores); never dense.

    Returns (row_ptr, cols, values, theta)."""
    chunk_rows = max(1, int(chunk_cells / (m * density)))
    rng = np.random.default_rng(seed)
    theta, a, b = _synthetic(n, m, rng)
    capacity = int(n * m * density + 6 * np.sqrt(n * m * density) + 1024)
    cols = np.empty(capacity, dtype=np.int32)
    values = np.empty(capacity, dtype=np.float32)
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    filled = 0
    for lo in range(0, n, chunk_rows):
        hi = min(n, lo + chunk_rows)
        cells = (hi - lo) * m
        # exact Bernoulli(density) pattern by geometric gaps between observed cells
        gaps = rng.geometric(density, size=int(cells * density * 1.05) + 1000)
        position = np.cumsum(gaps) - 1
        while position[-1] < cells:  # pragma: no cover - vanishingly rare
            more = rng.geometric(density, size=gaps.size)
            position = np.concatenate([position, position[-1] + np.cumsum(more)])
        position = position[position < cells]
        r, c = np.divmod(position, m)
        del position, gaps
        logit = theta[lo + r] * a[c] + b[c]
        y = (rng.random(r.size) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        k = r.size
        cols[filled : filled + k] = c
        values[filled : filled + k] = y
        row_ptr[lo + 1 : hi + 1] = filled + np.cumsum(np.bincount(r, minlength=hi - lo))
        filled += k
        del r, c, logit, y
    return row_ptr, cols[:filled], values[:filled], theta


def part_large(n: int, m: int, density: float, tol: float) -> None:
    base = _rss("VmRSS")
    start = time.perf_counter()
    row_ptr, cols, values, theta = generate_csr(n, m, density)
    generated = time.perf_counter() - start
    start = time.perf_counter()
    cells = ObservedCells.from_csr(row_ptr, cols, values, (n, m))
    del row_ptr, cols, values
    built = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_sparse(cells, tol=tol)
    peak = _rss("VmHWM") - base
    rho = spearmanr(fit.U[:, 0], theta).statistic
    nobs = cells.n_observed
    print(f"{n} x {m}, density {density:g}: {nobs:,} observed cells")
    print(f"  generate {generated:.1f} s, build CSR+CSC {built:.1f} s")
    print(
        f"  fit rank 1: {fit.seconds:.1f} s, {fit.n_iter} sweeps ({fit.n_passes} passes over the "
        f"cells, {1e9 * fit.seconds / (fit.n_passes * nobs):.1f} ns per cell and pass), "
        f"converged {fit.converged}, objective {fit.loss:.6f}"
    )
    print(
        f"  storage {cells.nbytes / 1e9:.2f} GB ({cells.nbytes / nobs:.1f} B/cell); peak extra "
        f"RSS {peak / 1e9:.2f} GB = {peak / nobs:.1f} B/cell = {peak / (12 * nobs):.2f} x 12 B/cell"
    )
    print(f"  Spearman(theta, truth) = {rho:.4f}")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def long_table(n: int, m: int, density: float, seed: int = 0):
    """The long table a user reads from Parquet: string ids (shared objects, as pyarrow's
    ``to_pandas`` gives them), float scores, one row per observed cell, rows shuffled."""
    import pandas as pd

    row_ptr, cols, values, theta = generate_csr(n, m, density, seed)
    rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(row_ptr))
    del row_ptr
    order = np.random.default_rng(seed + 1).permutation(rows.size)
    width_m, width_i = len(str(n - 1)), len(str(m - 1))
    model_names = np.array([f"model-{i:0{width_m}d}" for i in range(n)], dtype=object)
    item_names = np.array([f"item-{j:0{width_i}d}" for j in range(m)], dtype=object)
    frame = pd.DataFrame(
        {
            "model": model_names[rows[order]],
            "item": item_names[cols[order]],
            "score": values[order].astype(np.float64),
        }
    )
    return frame, theta, model_names


def _from_long_child(n: int, m: int, density: float, tol: float) -> None:
    """One path in this (fresh) process; prints one JSON line."""
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL, standard_errors

    start = time.perf_counter()
    frame, theta, names = long_table(n, m, density)
    generated = time.perf_counter() - start
    table_bytes = int(frame.memory_usage(deep=False).sum()) + sum(sys.getsizeof(s) for s in names)
    after_table = _rss("VmRSS")
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}

    def timed(name, run):
        start, before = time.perf_counter(), _cpu()
        value = run()
        times[name], cpu[name] = time.perf_counter() - start, _cpu() - before
        return value

    matrix = timed("from_long", lambda: ResponseMatrix.from_long(frame))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = timed("fit", lambda: TwoPL(tol=tol).fit(matrix))
        unc = timed("intervals", lambda: standard_errors(result, matrix))
    order = np.argsort([int(str(k).split("-")[1]) for k in result.model_ids])
    rho = float(spearmanr(result.theta[order], theta).statistic)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    record = {
        "n_obs": len(frame),
        "sparse": bool(matrix.is_sparse),
        "generate_s": generated,
        "table_bytes": table_bytes,
        "rss_after_table": after_table,
        "peak_rss": peak,
        "sweeps": int(result.n_iter),
        "converged": bool(result.converged),
        "spearman": rho,
        "interval_method": unc.method,
        "mean_se": float(unc.abilities["se"].mean()),
        "cpu_s": sum(cpu.values()),
        **{f"{k}_s": v for k, v in times.items()},
    }
    print(json.dumps(record))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _run_child(n: int, m: int, density: float, tol: float, max_rss: float | None = None) -> dict:
    """One path in a fresh process; stopped (and reported) if its resident memory passes
    ``max_rss`` bytes, so that a run too large for the machine does not starve it."""
    command = [sys.executable, __file__, "--child", str(n), str(m), str(density), str(tol)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = Path(f"/proc/{child.pid}/status")
    while child.poll() is None:
        if max_rss is not None and status.exists():
            rss = next(
                (int(x.split()[1]) * 1024 for x in status.read_text().splitlines() if "VmRSS" in x),
                0,
            )
            if rss > max_rss:
                child.kill()
                child.wait()
                return {"error": f"stopped at {rss / 1e9:.1f} GB resident (--max-rss)", "rc": -9}
        time.sleep(0.2)
    out, err = child.communicate()
    if child.returncode != 0:
        return {"error": (err.strip().splitlines() or ["killed"])[-1], "rc": child.returncode}
    return json.loads(out.strip().splitlines()[-1])


def part_from_long(
    n: int, m: int, density: float, tol: float, dense: bool = True, max_rss: float | None = None
) -> None:
    n_obs = n * m * density
    dense_n = max(2, round(np.sqrt(n_obs / 2.5)))
    dense_m = max(2, round(n_obs / dense_n))
    print(
        f"user's path: long table -> ResponseMatrix.from_long -> TwoPL().fit -> standard_errors,"
        f" each in a fresh process (peak RSS = ru_maxrss, long table included); load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    header = (
        f"{'path':<34} {'cells':>11} {'from_long':>9} {'fit':>7} {'intervals':>9} {'total':>7} "
        f"{'cpu':>7} {'peak RSS':>9} {'B/cell':>7} {'table':>8} {'sweeps':>6} {'rho':>6}"
    )
    print(header)
    for label, (rows, cols, dens) in (
        (f"sparse {n:,} x {m:,} at {density:g}", (n, m, density)),
        (f"dense  {dense_n:,} x {dense_m:,} complete", (dense_n, dense_m, 1.0)),
    )[: 2 if dense else 1]:
        rec = _run_child(rows, cols, dens, tol, max_rss)
        if "error" in rec:
            print(f"{label:<34} failed (rc {rec['rc']}): {rec['error']}")
            continue
        total = rec["from_long_s"] + rec["fit_s"] + rec["intervals_s"]
        print(
            f"{label:<34} {rec['n_obs']:>11,} {rec['from_long_s']:>8.1f}s {rec['fit_s']:>6.1f}s "
            f"{rec['intervals_s']:>8.1f}s {total:>6.1f}s {rec['cpu_s']:>6.1f}s "
            f"{rec['peak_rss'] / 1e9:>7.2f}GB "
            f"{rec['peak_rss'] / rec['n_obs']:>7.0f} {rec['table_bytes'] / 1e9:>6.2f}GB "
            f"{str(rec['sweeps']) + ('' if rec['converged'] else '*'):>6} {rec['spearman']:>6.3f}",
            flush=True,
        )
    print(
        "  (* = not converged; seconds are wall; cpu = user + system of the three steps, all "
        "threads, the figure to read on a loaded machine; table = the long DataFrame's own "
        "bytes; B/cell = peak RSS / observed cells, interpreter and libraries included)"
    )


def part_proxy(n: int, m: int, revealed: float, rank: int, tol: float) -> None:
    rng = np.random.default_rng(2)
    U = rng.normal(size=(n, rank))
    V = rng.uniform(0.2, 1.0, size=(m, rank))
    b = rng.normal(0, 1, m)
    mask = rng.random((n, m))
    P = 1 / (1 + np.exp(-(U @ V.T + b)))
    Y_all = (rng.random((n, m)) < P).astype(np.float32)

    def cells_at(fraction: float) -> ObservedCells:
        rows, cols = np.nonzero(mask < fraction)
        return ObservedCells.from_coo(rows, cols, Y_all[rows, cols], (n, m))

    first = cells_at(revealed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold = fit_sparse(first, rank=rank, tol=tol)
        second = cells_at(revealed + 0.01)
        start = time.perf_counter()
        again = fit_sparse(second, rank=rank, tol=tol, init=(cold.U, cold.V, cold.b))
        warm = time.perf_counter() - start
        scratch = fit_sparse(second, rank=rank, tol=tol)
    print(f"proxy refit {n} x {m}, rank {rank}, {revealed:.0%} -> {revealed + 0.01:.0%} revealed")
    print(f"  cold fit at {revealed:.0%}: {cold.seconds:.3f} s, {cold.n_iter} sweeps")
    print(f"  refit warm-started: {warm:.3f} s, {again.n_iter} sweeps, objective {again.loss:.3f}")
    print(
        f"  refit from scratch: {scratch.seconds:.3f} s, {scratch.n_iter} sweeps, objective "
        f"{scratch.loss:.3f}"
    )


def part_refit_small(n: int, m: int, repeats: int) -> None:
    rng = np.random.default_rng(5)
    b = rng.normal(0.0, 3.0, m)
    P = 1 / (1 + np.exp(-(np.linspace(1.0, -1.0, n)[:, None] + b[None, :])))
    Y = (rng.random((n, m)) < P).astype(np.float32)
    Y[rng.random((n, m)) > 0.2] = np.nan
    cells = ObservedCells.from_dense(Y)
    for rank in (1, 2):
        sweeps = fit_sparse(cells, rank=rank, tol=1e-5).n_iter  # (compiles on a cold cache)
        per_fit = []
        for _ in range(repeats):
            start = _cpu()
            for _ in range(40):
                fit_sparse(cells, rank=rank, tol=1e-5)
            per_fit.append((_cpu() - start) / 40)
        fit_ms = 1e3 * float(np.median(per_fit))
        print(
            f"refit {n} x {m}, a fifth revealed, rank {rank}: {fit_ms:.2f} ms CPU per fit, "
            f"{sweeps} sweeps, {1e3 * fit_ms / sweeps:.0f} us per sweep"
        )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        n, m, density, tol = sys.argv[2:6]
        _from_long_child(int(n), int(m), float(density), float(tol))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        choices=["missing", "large", "proxy", "refit-small", "from-long"],
        default="missing",
    )
    parser.add_argument("--from-long", action="store_true", help="same as --part from-long")
    parser.add_argument("--no-dense", action="store_true", help="from-long: sparse path only")
    parser.add_argument(
        "--max-rss", type=float, default=None, help="from-long: stop a path above this many GB"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--missing", type=float, nargs="*", default=[0.0, 0.5, 0.9, 0.97, 0.99])
    parser.add_argument("--skip", nargs="*", default=[], help="methods to leave out")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--models", type=int, default=None, help="default 50,000 (large), 20,000")
    parser.add_argument("--items", type=int, default=None, help="default 200,000 (large), 50,000")
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--rank", type=int, default=2)
    args = parser.parse_args()
    if args.from_long:
        args.part = "from-long"
    if args.part == "refit-small":
        part_refit_small(args.models or 3, args.items or 600, args.repeats)
        return
    small = args.part == "from-long"
    args.models = args.models or (20_000 if small else 50_000)
    args.items = args.items or (50_000 if small else 200_000)
    if args.part == "from-long":
        max_rss = None if args.max_rss is None else args.max_rss * 1e9
        part_from_long(args.models, args.items, args.density, args.tol, not args.no_dense, max_rss)
    elif args.part == "missing":
        part_missing(args.repeats, args.missing, args.tol, set(args.skip))
    elif args.part == "large":
        part_large(args.models, args.items, args.density, args.tol)
    else:
        part_proxy(1000, 12000, 0.05, args.rank, args.tol)


if __name__ == "__main__":
    main()
