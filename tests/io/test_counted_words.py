"""Counts that can be 1 take their noun in the singular (``latentbench._text.counted``):
'1 files' in a report's repr, '1 rows from 1 samples' in the Inspect note, and the like."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix, read_results

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
POPULARITY = DATA / "real" / "inspect" / "good" / "2025-05-12T20-28-13-04-00_popularity.json"


def test_a_load_report_of_one_file_says_one_file(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("model,item,score\norg/m,q1,1\n")
    _, report = read_results("table", path)
    assert repr(report).startswith("LoadReport(source 'table': 1 file, 1 record, 1 row, ")


def test_a_cancelled_inspect_log_of_one_scored_sample_says_one(tmp_path):
    """The real cancelled log (3 scored samples) cut to its first sample."""
    log = json.loads(POPULARITY.read_text())
    log["samples"] = log["samples"][:1]
    path = tmp_path / POPULARITY.name
    path.write_text(json.dumps(log))
    with pytest.warns(DataWarning, match="1 row from 1 sample was read"):
        _, report = read_results("inspect", path)
    assert f"{path}: status cancelled; 1 row from 1 sample was read" in report.notes


def test_a_repeated_doc_of_a_one_filter_list_says_one_filter(tmp_path):
    run = tmp_path / "org__model"
    run.mkdir()
    date = "2024-07-01T00-00-00.000001"
    configs = {"gsm8k": {"filter_list": [{"name": "strict-match"}]}}
    (run / f"results_{date}.json").write_text(
        json.dumps({"model_name": "org/model", "configs": configs})
    )
    line = '{"doc_id": 0, "exact_match": %d}\n'
    (run / f"samples_gsm8k_{date}.jsonl").write_text(line % 1 + line % 0)
    with pytest.raises(InputError, match=r"filter_list names 1 filter, so its lines"):
        read_results("lm-eval", run)


def test_a_table_of_one_column_says_one_column(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("x\n0.5\n")
    with pytest.raises(InputError, match=r"\(columns: \['x'\] \(1 column\)\)"):
        ResponseMatrix.read(path)


def test_a_design_of_one_item_says_one_item(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item,order,probability\nq1,0,1.0\n")
    with pytest.raises(InputError, match=r"written by `latentbench tiny` \(1 item\)"):
        ResponseMatrix.read(path)


def test_a_csr_layout_of_one_row_says_one_row():
    from latentbench.io._cells import ObservedCells

    with pytest.raises(InputError, match=r"not a valid CSR layout for 1 row$"):
        ObservedCells.from_csr(
            np.array([0], dtype=np.int64),
            np.array([0], dtype=np.int32),
            np.array([1.0], dtype=np.float32),
            (1, 1),
        )
