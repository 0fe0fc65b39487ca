"""Peak memory and time of ``ingest table``, ``export``, ``fit`` and ``ls`` on a big long table.

Usage::

    python benchmarks/bench_ingest_memory.py [--models 2000] [--items 12000] [--repeats 1]
        [--formats parquet,csv] [--steps ingest,export,fit,ls] [--dir DIR] [--keep]

Writes a synthetic long table (``--models`` x ``--items`` rows, ids like real ones:
``org/model-name-7b`` and ``task/12345``, scores 0/1) as Parquet and/or CSV under ``--dir``
(a temporary folder unless given), then runs each CLI command as a subprocess under
``/usr/bin/time -f '%e %M'`` and prints its wall seconds and peak resident memory (GB, the
median of ``--repeats`` runs). ``ingest`` goes into a fresh store each run; ``export`` writes
the store's rows back as Parquet; ``fit`` runs ``latentbench fit --store S --benchmark b -q``;
``ls`` runs ``latentbench ls --store``. ``latentbench`` is the package on ``PYTHONPATH`` (run
it once per checkout to compare two versions). The store is kept only with ``--keep``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

_ORGS = ("meta-llama", "mistralai", "Qwen", "google", "microsoft", "allenai", "tiiuae")
_SIZES = ("0.5b", "1.8b", "7b", "13b", "34b", "70b")


def model_ids(n: int) -> list[str]:
    """``n`` distinct ids shaped like hub names: ``org/family-NNNN-variant-size``."""
    return [
        f"{_ORGS[k % len(_ORGS)]}/model-name-{k:04d}-instruct-{_SIZES[k % len(_SIZES)]}"
        for k in range(n)
    ]


def item_ids(n: int, n_tasks: int = 12) -> list[str]:
    """``n`` distinct ids ``task_T/NNNNN`` over ``n_tasks`` tasks."""
    return [f"task_{k % n_tasks:02d}/{k:05d}" for k in range(n)]


def synthetic_long(n_models: int, n_items: int, seed: int = 0) -> pa.Table:
    """Every (model, item) cell as one row ``model, item, score`` (0/1 from a 1PL draw)."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n_models)
    difficulty = rng.normal(size=n_items)
    models = pa.array(model_ids(n_models), type=pa.string())
    items = pa.array(item_ids(n_items), type=pa.string())
    model_index = np.repeat(np.arange(n_models, dtype=np.int32), n_items)
    item_index = np.tile(np.arange(n_items, dtype=np.int32), n_models)
    scores = np.empty(n_models * n_items)
    for m in range(n_models):  # one model at a time: no n_models x n_items float temporaries
        block = slice(m * n_items, (m + 1) * n_items)
        p = 1.0 / (1.0 + np.exp(-(ability[m] - difficulty)))
        scores[block] = (rng.random(n_items) < p).astype(np.float64)
    return pa.table(
        {
            "model": models.take(pa.array(model_index)),
            "item": items.take(pa.array(item_index)),
            "score": pa.array(scores),
        }
    )


def write_tables(folder: Path, n_models: int, n_items: int, formats: list[str]) -> dict[str, Path]:
    """The synthetic table written once per format (reused when already there)."""
    paths = {f: folder / f"long_{n_models}x{n_items}.{f}" for f in formats}
    if all(p.exists() for p in paths.values()):
        return paths
    table = synthetic_long(n_models, n_items)
    for fmt, path in paths.items():
        if path.exists():
            continue
        if fmt == "parquet":
            pq.write_table(table, path)
        else:
            pacsv.write_csv(table, path)
    return paths


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (GB) of ``command`` (``/usr/bin/time``); raises on failure."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "TIME %e %M", *command], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    line = [x for x in done.stderr.splitlines() if x.startswith("TIME ")][-1]
    _, seconds, kb = line.split()
    return float(seconds), int(kb) / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=2000)
    parser.add_argument("--items", type=int, default=12000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--formats", default="parquet,csv")
    parser.add_argument("--steps", default="ingest,export,fit,ls")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    formats = args.formats.split(",")
    steps = args.steps.split(",")
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench_ingest_memory_"))
    folder.mkdir(parents=True, exist_ok=True)
    tables = write_tables(folder, args.models, args.items, formats)
    found = shutil.which("latentbench") or str(Path(sys.executable).with_name("latentbench"))
    cli = [found]
    rows = args.models * args.items
    print(f"{args.models:,} models x {args.items:,} items = {rows:,} rows; {folder}")
    print(f"{'step':<28} {'seconds':>9} {'peak GB':>9}")

    def report(name: str, results: list[tuple[float, float]]) -> None:
        seconds = statistics.median(r[0] for r in results)
        peak = statistics.median(r[1] for r in results)
        print(f"{name:<28} {seconds:>9.1f} {peak:>9.2f}", flush=True)

    store = folder / "S.duckdb"
    for fmt in formats:
        if "ingest" in steps:
            results = []
            for _ in range(args.repeats):
                for stale in (store, store.with_name(store.name + ".wal")):
                    stale.unlink(missing_ok=True)
                command = ["ingest", "table", str(tables[fmt]), "--store", str(store)]
                results.append(timed([*cli, *command, "--benchmark", "b", "-q"]))
            report(f"ingest table ({fmt})", results)
    if not store.exists():
        raise SystemExit(f"{store}: no store (run the ingest step first)")
    if "export" in steps:
        out = folder / "export.parquet"
        results = []
        for _ in range(args.repeats):
            command = ["export", "--store", str(store), "--out", str(out), "--force"]
            results.append(timed([*cli, *command]))
        report("export (parquet)", results)
    if "fit" in steps:
        fitdir = folder / "fit"
        results = []
        for _ in range(args.repeats):
            shutil.rmtree(fitdir, ignore_errors=True)
            command = ["fit", "--store", str(store), "--benchmark", "b", "-q", "--out"]
            results.append(timed([*cli, *command, str(fitdir)]))
        report("fit --store", results)
    if "ls" in steps:
        results = [timed([*cli, "ls", "--store", str(store)]) for _ in range(args.repeats)]
        report("ls --store", results)
    if args.dir is None and not args.keep:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
