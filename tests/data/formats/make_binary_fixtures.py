"""Rebuild the binary fixtures (lighteval parquet, Inspect .eval zips, a Parquet table).

Run from anywhere: ``python tests/data/formats/make_binary_fixtures.py``. The records follow the
schemas in ``shared/design/formats.md`` §2 and §4; they were written by hand, not produced by the
tools. The outputs are checked in; this script documents how they were made.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------ lighteval
def lighteval_struct(
    path: Path, rows: list[tuple[str, dict[str, float | None]]], task: str
) -> None:
    """lighteval >= 0.11: struct columns doc, model_response, metric; item = doc.id."""
    docs = [
        {
            "id": doc_id,
            "query": f"Question {doc_id}?",
            "choices": ["A", "B"],
            "gold_index": [0],
            "instruction": "",
            "task_name": task,
            "num_samples": 1,
        }
        for doc_id, _ in rows
    ]
    responses = [
        {
            "input": f"Question {doc_id}?",
            "text": ["A"],
            "text_post_processed": ["A"],
            "output_tokens": [[32]],
            "argmax_logits_eq_gold": [],
        }
        for doc_id, _ in rows
    ]
    table = pa.table(
        {
            "doc": pa.array(docs),
            "metric": pa.array([m for _, m in rows]),
            "model_response": pa.array(responses),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def lighteval_flat(path: Path, metrics: list[dict[str, float]]) -> None:
    """lighteval <= 0.10: flat columns with a 'metrics' dict; item = row order."""
    n = len(metrics)
    table = pa.table(
        {
            "choices": pa.array([["A", "B"]] * n),
            "example": pa.array([f"Question {i}?" for i in range(n)]),
            "full_prompt": pa.array([f"Q: Question {i}?\nA:" for i in range(n)]),
            "gold": pa.array([["A"]] * n),
            "gold_index": pa.array([[0]] * n),
            "metrics": pa.array(metrics),
            "predictions": pa.array([["A"]] * n),
            "specifics": pa.array([None] * n, type=pa.string()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def build_lighteval() -> None:
    root = HERE / "lighteval" / "details"
    ts = "2025-01-30T12-34-56.123456"
    gsm = "lighteval|gsm8k|0"
    arc = "leaderboard|arc:challenge|25"
    lighteval_struct(
        root / "openai" / "gpt-4o-mini" / ts / f"details_{gsm}_{ts}.parquet",
        [
            ("0", {"extractive_match": 1.0}),
            ("1", {"extractive_match": 0.0}),
            ("2", {"extractive_match": 1.0}),
            ("3", {"extractive_match": 1.0}),
        ],
        gsm,
    )
    lighteval_struct(
        root / "meta-llama" / "Llama-3.1-8B-Instruct" / ts / f"details_{gsm}_{ts}.parquet",
        [
            ("0", {"extractive_match": 0.0}),
            ("1", {"extractive_match": 1.0}),
            ("3", {"extractive_match": 0.0}),
        ],
        gsm,
    )
    lighteval_struct(
        root / "openai" / "gpt-4o-mini" / ts / f"details_{arc}_{ts}.parquet",
        [
            ("0", {"acc": 1.0, "acc_norm": 1.0}),
            ("1", {"acc": 0.0, "acc_norm": 1.0}),
            ("2", {"acc": 1.0, "acc_norm": 0.0}),
        ],
        arc,
    )
    lighteval_struct(
        root / "meta-llama" / "Llama-3.1-8B-Instruct" / ts / f"details_{arc}_{ts}.parquet",
        [
            ("0", {"acc": 0.0, "acc_norm": 0.0}),
            ("1", {"acc": 1.0, "acc_norm": 1.0}),
            ("2", {"acc": 1.0, "acc_norm": None}),
        ],
        arc,
    )
    old = "2024-06-01T08-00-00.000000"
    lighteval_flat(
        root / "HuggingFaceTB" / "SmolLM-135M" / old / f"details_{gsm}_{old}.parquet",
        [{"extractive_match": 0.0}, {"extractive_match": 0.0}, {"extractive_match": 1.0}],
    )
    bad = HERE / "lighteval" / "bad" / "details" / "m" / ts / f"details_{gsm}_{ts}.parquet"
    lighteval_struct(bad, [("0", {"em": 1.0}), ("1", {"em": 3.5})], gsm)


# ------------------------------------------------------------------ Inspect
def _spec(task: str, model: str, created: str) -> dict:
    return {
        "eval_id": f"{task}-{model}".replace("/", "-"),
        "run_id": "Rk3Pq9",
        "created": created,
        "task": task,
        "task_id": "t1",
        "task_version": 0,
        "dataset": {"name": task, "samples": 4},
        "model": model,
        "model_args": {},
        "config": {"epochs": 2},
        "packages": {"inspect_ai": "0.3.63"},
    }


def _sample(sid: str | int, epoch: int, scores: dict, error: str | None = None) -> dict:
    return {
        "id": sid,
        "epoch": epoch,
        "input": f"Question {sid}",
        "target": "A",
        "messages": [],
        "output": {"model": "m", "choices": []},
        "scores": scores,
        "metadata": {},
        "error": {"message": error, "traceback": ""} if error else None,
    }


def write_eval(path: Path, spec: dict, samples: list[dict]) -> None:
    """A .eval zip with the members Inspect writes (header, journal, summaries, samples)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {
        "version": 2,
        "status": "success",
        "eval": spec,
        "plan": {},
        "results": {},
        "stats": {},
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "_journal/start.json", json.dumps({"version": 2, "eval": spec, "plan": {}})
        )
        for sample in samples:
            archive.writestr(
                f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample)
            )
        archive.writestr("summaries.json", json.dumps([]))
        archive.writestr("reductions.json", json.dumps([]))
        archive.writestr("header.json", json.dumps(header))


def build_inspect() -> None:
    logs = HERE / "inspect" / "logs"
    choice = lambda v: {"choice": {"value": v, "answer": "A", "explanation": ""}}  # noqa: E731
    write_eval(
        logs / "2025-02-01T10-00-00+00-00_arc-challenge_abc123.eval",
        _spec("arc_challenge", "openai/gpt-4o", "2025-02-01T10:00:00+00:00"),
        [
            _sample(1, 1, choice("C")),
            _sample(1, 2, choice("I")),
            _sample(2, 1, choice("C")),
            _sample(2, 2, choice("C")),
            _sample(3, 1, choice("I")),
            _sample(3, 2, choice("I")),
            _sample(4, 1, {}, error="RateLimitError: 429"),
            _sample(4, 2, choice("C")),
        ],
    )
    write_eval(
        logs / "2025-02-01T11-00-00+00-00_arc-challenge_def456.eval",
        _spec("arc_challenge", "anthropic/claude-3-5-sonnet-latest", "2025-02-01T11:00:00+00:00"),
        [
            _sample(1, 1, choice("C")),
            _sample(1, 2, choice("C")),
            _sample(2, 1, choice("N")),
            _sample(2, 2, choice("I")),
            _sample(4, 1, choice("C")),
            _sample(4, 2, choice("C")),
        ],
    )
    both = lambda graded, match: {  # noqa: E731
        "model_graded_fact": {"value": graded, "answer": "x", "explanation": "judge"},
        "match": {"value": match, "answer": "x"},
    }
    for model, created, values in (
        (
            "openai/gpt-4o",
            "2025-02-02T09:00:00+00:00",
            [("tom_1", "C", 1), ("tom_2", "P", 0), ("tom_3", "I", 0)],
        ),
        (
            "mistral/mistral-large-latest",
            "2025-02-02T09:30:00+00:00",
            [("tom_1", "P", 1), ("tom_3", "C", 1)],
        ),
    ):
        log = {
            "version": 2,
            "status": "success",
            "eval": _spec("theory_of_mind", model, created),
            "plan": {},
            "results": {"scores": []},
            "stats": {},
            "samples": [_sample(sid, 1, both(g, m)) for sid, g, m in values],
        }
        name = f"{created[:19].replace(':', '-')}_theory-of-mind_{model.split('/')[0]}.json"
        (logs / name).write_text(json.dumps(log, indent=2) + "\n")
    bad = HERE / "inspect" / "bad"
    bad.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(bad / "not_a_log.eval", "w") as archive:
        archive.writestr("readme.txt", "just a zip")
        archive.writestr("data/values.csv", "a,b\n1,2\n")


# ------------------------------------------------------------------ tables
def build_table() -> None:
    table = pa.table(
        {
            "model": ["m1", "m1", "m2", "m2", "m3"],
            "item": ["1", "2", "1", "10", "2"],
            "score": [1.0, 0.0, 0.0, 1.0, 1.0],
            "benchmark": ["numbers"] * 5,
            "trial": [0, 0, 0, 0, 0],
        }
    )
    pq.write_table(table, HERE / "table" / "long.parquet")


if __name__ == "__main__":
    build_lighteval()
    build_inspect()
    build_table()
