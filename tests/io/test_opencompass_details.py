"""OpenCompass ``details`` as ``OpenCompassTask.format_details`` writes them (open-compass/
opencompass ``opencompass/tasks/openicl_eval.py`` at a5acc4b; since 2023-10): a dict with a
``"type"`` marker (``PPL`` or ``GEN``) and one entry per example. No tool-written file of this
layout was found in a public repository, so the files are built here from that code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

PPL = {
    "accuracy": 50.0,
    "details": {
        "type": "PPL",
        "0": {
            "origin_prediction": {"A": {"PPL": 1.5}, "B": {"PPL": 2.5}},
            "predictions": "A",
            "references": "A",
            "correct": True,
        },
        "1": {
            "origin_prediction": {"A": {"PPL": 1.9}, "B": {"PPL": 1.1}},
            "predictions": "B",
            "references": "A",
            "correct": False,
        },
    },
}
GEN = {
    "accuracy": 100.0,
    "details": {
        "type": "GEN",
        "0": {
            "prompt": "1+1=",
            "origin_prediction": "2",
            "predictions": "2",
            "references": "2",
            "correct": True,
        },
    },
}
GEN_NO_DETAILS = {
    "score": 12.0,
    "details": {
        "type": "GEN",
        "0": {"prompt": "p", "origin_prediction": "x", "predictions": "x", "references": "y"},
    },
}


def _write(root: Path, model: str, dataset: str, content: dict) -> Path:
    path = root / "outputs" / "default" / "20241001_120000" / "results" / model / f"{dataset}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))
    return path


def test_ppl_and_gen_details_are_read(tmp_path):
    ppl = _write(tmp_path, "qwen2-7b-hf", "ARC-c", PPL)
    gen = _write(tmp_path, "qwen2-7b-hf", "gsm8k", GEN)
    frame, report = read_results("opencompass", tmp_path)
    raw = {
        (path.stem, key): float(entry["correct"])
        for path in (ppl, gen)
        for key, entry in json.loads(path.read_text())["details"].items()
        if key != "type"
    }
    assert {(r.benchmark, r.item): r.score for r in frame.itertuples()} == raw
    assert set(frame["metric"]) == {"correct"}
    assert report.records_read == report.rows + sum(report.dropped.values())


def test_gen_without_correctness_is_reported_not_fatal(tmp_path):
    _write(tmp_path, "m", "ARC-c", PPL)
    _write(tmp_path, "m", "summ", GEN_NO_DETAILS)
    frame, report = read_results("opencompass", tmp_path)
    assert set(frame["benchmark"]) == {"ARC-c"}
    assert [Path(s["file"]).name for s in report.skipped_files] == ["summ.json"]
    assert report.skipped_files[0]["reason"].startswith("GEN details without a correctness")
    assert report.records_read == report.rows + sum(report.dropped.values())
    only = tmp_path / "only"
    _write(only, "m", "summ", GEN_NO_DETAILS)
    with pytest.raises(InputError, match=r"^no usable results in 1 file: "):  # was '1 files'
        read_results("opencompass", only)


def test_a_run_folder_that_is_no_date_is_refused_by_name(tmp_path):
    """A folder shaped like a run folder but no date (month 13) raised a bare ValueError from
    strptime (helper-77)."""
    path = tmp_path / "outputs" / "20241399_101010" / "results" / "m" / "ARC-c.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(PPL))
    with pytest.raises(InputError, match=r"ARC-c\.json: folder '20241399_101010' has the shape"):
        read_results("opencompass", tmp_path)
