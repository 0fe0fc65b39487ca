"""Ingest 2 million synthetic long-format rows into the store and build one benchmark's matrix.

Usage::

    python benchmarks/bench_ingest.py [--rows 2000000] [--repeats 3]

Prints rows per second and seconds (median of ``--repeats``) for reading the rows from a long
Parquet file with the ``table`` reader, for ``Store.ingest`` into a fresh store file, for
re-ingesting the same rows (idempotent: nothing new), and for ``Store.matrix`` on one benchmark.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from latentbench.exceptions import DataWarning
from latentbench.io.formats import CANONICAL_COLUMNS, TEXT_COLUMNS, read_results
from latentbench.io.store import Store


def synthetic(
    n_rows: int, n_benchmarks: int = 4, n_models: int = 250, seed: int = 0
) -> pd.DataFrame:
    """A canonical long table: n_benchmarks x n_models x (n_rows / ...) items, ~10% missing."""
    rng = np.random.default_rng(seed)
    per_bench = n_rows // n_benchmarks
    n_items = int(np.ceil(per_bench / n_models / 0.9))
    cells = n_models * n_items
    frames = []
    for b in range(n_benchmarks):
        keep = np.sort(rng.choice(cells, size=per_bench, replace=False))
        model_idx, item_idx = np.divmod(keep, n_items)
        ability = rng.normal(size=n_models)
        difficulty = rng.normal(size=n_items)
        p = 1 / (1 + np.exp(-(ability[model_idx] - difficulty[item_idx])))
        models = np.array([f"org/model-{m:04d}" for m in range(n_models)], dtype=object)
        items = np.array([str(i) for i in range(n_items)], dtype=object)
        frames.append(
            pd.DataFrame(
                {
                    "model": models[model_idx],
                    "benchmark": f"bench_{b}",
                    "item": items[item_idx],
                    "score": (rng.random(per_bench) < p).astype(np.float64),
                    "metric": "acc",
                    "filter": "none",
                    "trial": 0,
                    "split": "test",
                    "source": "synthetic",
                    "source_file": f"synthetic/bench_{b}.jsonl",
                    "run_timestamp": pd.Timestamp("2025-01-01"),
                    "item_hash": None,
                    "source_model": models[model_idx],
                    "flag": None,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)[list(CANONICAL_COLUMNS)]
    for column in TEXT_COLUMNS:
        frame[column] = frame[column].astype("str")
    frame["run_timestamp"] = frame["run_timestamp"].astype("datetime64[us]")
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    frame = synthetic(args.rows)
    n = len(frame)
    ingest, reingest, matrix, reading = [], [], [], []
    shape = None
    with tempfile.TemporaryDirectory() as tmp:
        parquet = Path(tmp) / "long.parquet"
        frame[["model", "benchmark", "item", "score"]].to_parquet(parquet)
        for _ in range(args.repeats):
            start = time.perf_counter()
            with warnings.catch_warnings():  # random gaps: item counts differ by design
                warnings.simplefilter("ignore", DataWarning)
                table, _report = read_results("table", parquet)
            reading.append(time.perf_counter() - start)
            assert len(table) == n
        for repeat in range(args.repeats):
            path = Path(tmp) / f"store_{repeat}.duckdb"
            with Store(path) as store:
                start = time.perf_counter()
                result = store.ingest(frame)
                ingest.append(time.perf_counter() - start)
                assert result["n_new"] == n
                start = time.perf_counter()
                result = store.ingest(frame)
                reingest.append(time.perf_counter() - start)
                assert result["n_new"] == 0
            with Store(path, read_only=True) as store:
                start = time.perf_counter()
                m = store.matrix("bench_0")
                matrix.append(time.perf_counter() - start)
                shape = m.shape
    t_ingest, t_reingest, t_matrix, t_read = (
        statistics.median(x) for x in (ingest, reingest, matrix, reading)
    )
    print(f"rows: {n:,} (4 benchmarks, 250 models); repeats: {args.repeats} (median)")
    print(f"read long parquet (table): {t_read:6.2f} s  {n / t_read:12,.0f} rows/s")
    print(f"ingest (fresh store):     {t_ingest:7.2f} s  {n / t_ingest:12,.0f} rows/s")
    print(f"re-ingest (idempotent):   {t_reingest:7.2f} s  {n / t_reingest:12,.0f} rows/s")
    n_bench = n // 4
    print(
        f"matrix bench_0 {shape[0]}x{shape[1]}: {t_matrix:7.2f} s  "
        f"{n_bench / t_matrix:12,.0f} rows/s ({n_bench:,} rows)"
    )


if __name__ == "__main__":
    main()
