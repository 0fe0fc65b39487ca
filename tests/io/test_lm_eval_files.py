"""lm-eval: files beside the samples that are not samples, and one benchmark name for several
tasks (finding f6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.formats import read_results

DATE = "2024-05-01T12-30-45.123456"


def two_tasks(root: Path) -> Path:
    """A model folder with taskA and taskB (doc ids 0-2 each), its results file and notes."""
    run = root / "out" / "org__m"
    run.mkdir(parents=True)
    for task, scores in (("taskA", [1, 1, 1]), ("taskB", [0, 1, 0])):
        lines = [
            json.dumps(
                {
                    "doc_id": i,
                    "doc": {},
                    "target": 0,
                    "filter": "none",
                    "metrics": ["acc"],
                    "acc": float(s),
                }
            )
            for i, s in enumerate(scores)
        ]
        (run / f"samples_{task}_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
    results = {
        "results": {"taskA": {}, "taskB": {}},
        "model_name": "org/m",
        "lm_eval_version": "0.4.9",
        "config": {"model_args": "pretrained=org/m"},
    }
    (run / f"results_{DATE}.json").write_text(json.dumps(results))
    (run / "notes.jsonl").write_text('{"foo": 1}\n')
    return run


def test_a_file_that_is_not_samples_is_skipped_and_said(tmp_path):
    run = two_tasks(tmp_path)
    frame, report = read_results("lm-eval", tmp_path / "out")
    assert sorted(frame["benchmark"].unique()) == ["taskA", "taskB"]
    assert len(frame) == 6
    (skipped,) = report.skipped_files
    assert skipped["file"] == str(run / "notes.jsonl")
    assert "not an lm-eval samples file" in skipped["reason"]
    assert "notes.jsonl: not an lm-eval samples file" in str(report)


def test_a_file_of_samples_without_a_task_name_still_needs_one(tmp_path):
    run = two_tasks(tmp_path)
    (run / "mystery.jsonl").write_text('{"doc_id": 0, "acc": 1.0}\n')
    with pytest.raises(InputError, match=r"mystery.jsonl: cannot tell the task"):
        read_results("lm-eval", tmp_path / "out")


def test_one_benchmark_name_for_several_tasks_is_refused(tmp_path):
    run = two_tasks(tmp_path)
    files = [run / f"samples_{task}_{DATE}.jsonl" for task in ("taskA", "taskB")]
    with pytest.raises(
        InputError, match=r"benchmark='X': the files hold 2 tasks \('taskA', 'taskB'\)"
    ):
        read_results("lm-eval", files, benchmark="X")
    frame, _ = read_results("lm-eval", files[:1], benchmark="X")  # one task: renamed
    assert set(frame["benchmark"]) == {"X"} and len(frame) == 3
    _register()
    store = tmp_path / "s.duckdb"
    outcome = CliRunner().invoke(
        app, ["ingest", "lm-eval", *map(str, files), "--store", str(store), "--benchmark", "X"]
    )
    assert outcome.exit_code == 2
    assert "--benchmark 'X': the files hold 2 tasks ('taskA', 'taskB')" in outcome.output


@pytest.mark.parametrize("enabled", [True, False])
def test_files_are_parsed_with_the_collector_paused_and_it_is_left_as_found(
    tmp_path, monkeypatch, enabled
):
    """Speed (40 models' MMLU logs read in half the time): the cyclic garbage collector is off
    while a file's records are parsed, and afterwards as the caller had it."""
    import gc

    from latentbench.io.formats import _lm_eval

    two_tasks(tmp_path)
    during = []
    parse = _lm_eval._parse_lines

    def spy(path):
        during.append(gc.isenabled())
        return parse(path)

    monkeypatch.setattr(_lm_eval, "_parse_lines", spy)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        frame, _ = read_results("lm-eval", tmp_path / "out")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert len(frame) == 6 and during == [False, False]


def test_many_tasks_chosen_alike_share_one_report_line(tmp_path):
    """MMLU's 57 tasks read as one group printed 57 identical metric lines."""
    run = tmp_path / "out" / "org__m"
    run.mkdir(parents=True)
    tasks = [f"mmlu_{k}" for k in range(5)]
    for task in tasks:
        line = json.dumps({"doc_id": 0, "doc": {}, "target": 0, "filter": "none",
                           "metrics": ["acc"], "acc": 1.0})  # fmt: skip
        (run / f"samples_{task}_{DATE}.jsonl").write_text(line + "\n")
    results = {
        "results": {task: {} for task in tasks},
        "model_name": "org/m",
        "lm_eval_version": "0.4.9",
        "config": {"model_args": "pretrained=org/m"},
    }
    (run / f"results_{DATE}.json").write_text(json.dumps(results))
    _, report = read_results("lm-eval", tmp_path / "out", group="mmlu")
    lines = str(report).splitlines()
    alike = "metric='acc' (only), filter='none' (only)"
    assert f"  5 tasks (mmlu_0, mmlu_1, mmlu_2, ... 2 more): {alike}" in lines
    assert sum(alike in line for line in lines) == 1
    _, report = read_results("lm-eval", sorted(run.glob("samples_mmlu_[01]_*")), group="mmlu")
    assert [line for line in str(report).splitlines() if alike in line] == [
        f"  mmlu_0: {alike}",
        f"  mmlu_1: {alike}",
    ]


def test_a_folder_of_aggregate_results_only_names_log_samples(tmp_path):
    # a run without --log_samples leaves results_<date>.json only: the error said "no result
    # files found (looked for **/*.jsonl, **/samples_*.json)", not why nor what to rerun
    run = tmp_path / "out" / "org__m"
    run.mkdir(parents=True)
    (run / "results_2024-05-01T12-30-45.json").write_text(json.dumps({"results": {"t": {}}}))
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", tmp_path / "out")
    text = str(caught.value)
    assert "no result files found" in text and "results_2024-05-01T12-30-45.json" in text
    assert "--log_samples" in text and "no per-item scores" in text
