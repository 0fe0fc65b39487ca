"""Speed of the random-item EM: the fused numba kernels against the NumPy reference.

For each shape, fits the default ``TwoPL()`` (item bootstrap off), records the arguments the
default pipeline passes to :func:`latentbench.irt._random_items.fit_random_items`, then times
that fit and the item bootstrap (:func:`~latentbench.irt._random_items.item_bootstrap`, the
pipeline's seed and tolerance, ``--boot`` replicates) with ``_random_items._FUSED`` False (the
NumPy reference path) and True (the fused kernels), and prints the median seconds of
``--repeats`` runs side by side with the largest differences of the results (abilities, law
weights, bootstrap abilities). Shapes: ``sim30x500`` (``simulate_2pl(30, 500,
random_state=0)``), ``alpaca29x805`` and ``mmlu14x12032`` (the first half, sorted, of the
models of the shared AlpacaEval 2 and MMLU-Pro matrices). The kernels are compiled (or loaded
from numba's cache) before any timing.

Usage::

    python benchmarks/bench_random_items_speed.py --only sim30x500,alpaca29x805
    python benchmarks/bench_random_items_speed.py --only mmlu14x12032 --boot 4 --repeats 1
    python benchmarks/bench_random_items_speed.py --standard-errors --repeats 2

``--cpu`` times CPU seconds of this process (``time.process_time``) instead of wall seconds:
the measure on a shared machine, and the way to compare two source trees (run this script
with ``PYTHONPATH`` set to each tree's ``src``, e.g. the E-step's running maxima, 2026-12-07:
``--only sim30x500,alpaca29x805 --cpu --repeats 5``).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted, _random_items
from latentbench.synthetic import simulate_2pl

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _half(path: Path) -> ResponseMatrix:
    matrix = ResponseMatrix.read(path)
    n = matrix.n_models // 2
    scores = np.asarray(matrix.scores)[:n]
    return ResponseMatrix(scores, list(matrix.model_ids)[:n], matrix.item_ids)


def _matrix(name: str, data: Path) -> ResponseMatrix:
    if name == "sim30x500":
        return simulate_2pl(30, 500, random_state=0).matrix
    if name == "alpaca29x805":
        return _half(data / "alpacaeval2_weighted.parquet")
    if name == "mmlu14x12032":
        return _half(data / "mmlu_pro.parquet")
    raise SystemExit(f"unknown shape {name}")


def _pipeline_call(matrix: ResponseMatrix) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """The arguments of the default pipeline's ``fit_random_items`` call, and its result."""
    captured: dict[str, Any] = {}
    original = _fitted.fit_random_items

    def spy(*args: Any, **kwargs: Any) -> Any:
        captured["args"], captured["kwargs"] = args, kwargs
        return original(*args, **kwargs)

    _fitted.fit_random_items = spy
    try:
        result = TwoPL().fit(matrix)
        _fitted.random_items_fit(result)
    finally:
        _fitted.fit_random_items = original
    return captured["args"], captured["kwargs"], result


_CLOCK = time.perf_counter
"""The clock of every timing (``--cpu``: ``time.process_time``)."""


def _timed(run: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = _CLOCK()
        out = run()
        times.append(_CLOCK() - start)
    return statistics.median(times), out


def _compare(name: str, args: argparse.Namespace) -> None:
    """Time and compare both paths on one shape; print two lines."""
    matrix = _matrix(name, args.data)
    call_args, call_kwargs, result = _pipeline_call(matrix)
    ref = _fitted.reference_of(result)
    scores = np.asarray(call_args[0], float)[ref]
    fits, boots, seconds = {}, {}, {}
    for fused in (False, True):
        _random_items._FUSED = fused
        seconds[fused, "fit"], fits[fused] = _timed(
            lambda: _random_items.fit_random_items(*call_args, **call_kwargs), args.repeats
        )
        fit = fits[False]  # both paths bootstrap the same (reference) fit
        seconds[fused, "boot"], boots[fused] = _timed(
            lambda fit=fit: _random_items.item_bootstrap(
                scores,
                fit,
                float(result.sigma),
                n_boot=args.boot,
                seed=_fitted.ITEM_BOOTSTRAP_SEED,
                tol=_fitted.ITEM_BOOTSTRAP_TOL,
                trials=call_kwargs.get("trials", 1),
            ),
            args.repeats,
        )
    fit_diff = max(
        float(np.abs(fits[True].theta - fits[False].theta).max()),
        float(np.abs(fits[True].weights - fits[False].weights).max()),
    )
    boot_diff = max(
        float(np.nanmax(np.abs(boots[True][0] - boots[False][0]))),
        float(np.abs(boots[True][1] - boots[False][1]).max()),
    )
    shape = f"{matrix.n_models}x{matrix.n_items}"
    for step, diff, iters in (
        ("fit", fit_diff, f"{fits[False].n_iter}/{fits[True].n_iter}"),
        (f"boot x{args.boot}", boot_diff, ""),
    ):
        key = "fit" if step == "fit" else "boot"
        old, new = seconds[False, key], seconds[True, key]
        print(
            f"{name:>14} {step:>14} {old:12.2f} {new:9.2f} {old / new:8.1f}x {iters:>8} "
            f"{diff:10.1e}  ({shape})",
            flush=True,
        )


def _standard_errors(repeats: int) -> None:
    """``TwoPL().fit(simulate_2pl(30, 500, random_state=0)).standard_errors()`` on both paths,
    alternating (the default pipeline: random-item fit and its 40-replicate bootstrap)."""
    matrix = simulate_2pl(30, 500, random_state=0).matrix
    tables: dict[bool, Any] = {}
    for _ in range(repeats):
        for fused in (False, True):
            _random_items._FUSED = fused
            result = TwoPL().fit(matrix)
            start = _CLOCK()
            tables[fused] = result.standard_errors().abilities
            seconds = _CLOCK() - start
            print(f"standard_errors 30x500 {'fused' if fused else 'reference'}: {seconds:.2f} s")
    columns = ["theta", "se", "lower", "upper"]
    diff = np.abs(tables[True][columns].to_numpy() - tables[False][columns].to_numpy()).max()
    print(f"largest difference of the abilities tables: {diff:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="sim30x500,alpaca29x805,mmlu14x12032")
    parser.add_argument("--boot", type=int, default=_fitted.ITEM_BOOTSTRAP)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument(
        "--standard-errors", action="store_true", help="time the 30 x 500 pipeline only"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="CPU seconds of this process, not wall seconds"
    )
    args = parser.parse_args()
    if args.cpu:
        global _CLOCK
        _CLOCK = time.process_time
    warnings.simplefilter("ignore")
    if args.standard_errors:
        _standard_errors(args.repeats)
        return
    _fitted.ITEM_BOOTSTRAP = 0  # the pipeline's fit without its bootstrap: timed below
    warm = simulate_2pl(6, 40, random_state=1).matrix.scores
    _random_items._FUSED = True  # compile (or load) the kernels before timing
    _random_items.fit_random_items(np.asarray(warm, float), np.zeros(6), np.ones(40), np.zeros(40))
    print(f"{'shape':>14} {'step':>14} {'reference s':>12} {'fused s':>9} {'speed-up':>9} "
          f"{'EM iter':>8} {'max |diff|':>10}")  # fmt: skip
    for name in args.only.split(","):
        _compare(name, args)


if __name__ == "__main__":
    main()
