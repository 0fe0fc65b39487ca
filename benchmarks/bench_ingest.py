"""Ingest 2 million synthetic long-format rows into the store and build one benchmark's matrix.

Usage::

    python benchmarks/bench_ingest.py [--rows 2000000] [--repeats 3] [--lm-eval-models 10]

Prints rows per second and seconds (median of ``--repeats``) for reading the rows from a long
Parquet file with the ``table`` reader, for ``Store.ingest`` into a fresh store file, for
re-ingesting the same rows (idempotent: nothing new), and for ``Store.matrix`` on one benchmark.
Then reads ``--lm-eval-models`` models' lm-eval ``--log_samples`` folders of MMLU as one
benchmark (``read_results("lm-eval", ..., group="mmlu")``: 57 tasks of 100-1,500 docs, about
14,000 lines of 2-3 kB per model, as lm-eval 0.4.x writes them); 0 skips it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
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


def write_lm_eval_mmlu(root: Path, n_models: int, seed: int = 0) -> int:
    """``n_models`` lm-eval output folders (``org__model-k/``) of 57 MMLU-like tasks, each a
    ``results_<date>.json`` and one ``samples_<task>_<date>.jsonl`` per task whose lines carry
    what lm-eval 0.4.x logs for a 4-choice question (doc, the 4 prompts, resps,
    filtered_resps, hashes, acc). Returns the number of lines written."""
    rng = np.random.default_rng(seed)
    sizes = np.clip(rng.lognormal(5.2, 0.7, 57).astype(int), 100, 1500)
    words = np.array("the of a which following is most likely when process system value".split())
    sha = lambda text: hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
    tasks = {}
    for t, size in enumerate(sizes):
        docs = []
        for i in range(size):
            question = " ".join(rng.choice(words, rng.integers(12, 60)))
            choices = [" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(4)]
            prompt = f"About subject {t}.\n\n{question}\n" + "".join(
                f"{letter}. {c}\n" for letter, c in zip("ABCD", choices, strict=True)
            )
            doc = {"question": question, "subject": f"s{t}", "choices": choices, "answer": i % 4}
            args = {
                f"gen_args_{k}": {"arg_0": prompt, "arg_1": f" {c}"} for k, c in enumerate("ABCD")
            }
            docs.append((doc, args, sha(json.dumps(doc)), sha(prompt)))
        tasks[f"mmlu_s{t:02d}"] = docs
    difficulty = {task: rng.normal(size=len(docs)) for task, docs in tasks.items()}
    lines = 0
    for m in range(n_models):
        date = f"2025-01-01T00-00-{m % 60:02d}.{m:06d}"
        folder = root / f"org__model-{m}"
        folder.mkdir(parents=True)
        ability = rng.normal()
        for task, docs in tasks.items():
            p = 1 / (1 + np.exp(-(ability - difficulty[task])))
            correct = rng.random(len(docs)) < p
            with open(folder / f"samples_{task}_{date}.jsonl", "w") as handle:
                for i, (doc, args, doc_hash, prompt_hash) in enumerate(docs):
                    ll = [round(float(x), 6) for x in -rng.exponential(2.0, 4)]
                    record = {
                        "doc_id": i,
                        "doc": doc,
                        "target": doc["answer"],
                        "arguments": args,
                        "resps": [[[x, False]] for x in ll],
                        "filtered_resps": [[x, False] for x in ll],
                        "filter": "none",
                        "metrics": ["acc"],
                        "doc_hash": doc_hash,
                        "prompt_hash": prompt_hash,
                        "target_hash": sha(str(doc["answer"])),
                        "acc": float(correct[i]),
                    }
                    handle.write(json.dumps(record) + "\n")
            lines += len(docs)
        results = {
            "results": {task: {"acc,none": 0.5} for task in tasks},
            "configs": {task: {"task": task, "test_split": "test"} for task in tasks},
            "config": {"model": "hf", "model_args": f"pretrained=org/model-{m}"},
            "model_name": f"org/model-{m}",
            "lm_eval_version": "0.4.9",
        }
        (folder / f"results_{date}.json").write_text(json.dumps(results))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lm-eval-models", type=int, default=10)
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
    if args.lm_eval_models > 0:
        with tempfile.TemporaryDirectory() as tmp:
            lines = write_lm_eval_mmlu(Path(tmp), args.lm_eval_models)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                table, _report = read_results("lm-eval", tmp, group="mmlu")
                times.append(time.perf_counter() - start)
                assert len(table) == lines
        t_lm = statistics.median(times)
        print(
            f"read lm-eval MMLU logs ({args.lm_eval_models} models x 57 tasks, "
            f"{lines:,} lines, group='mmlu'): {t_lm:6.2f} s  {lines / t_lm:12,.0f} lines/s"
        )


if __name__ == "__main__":
    main()
