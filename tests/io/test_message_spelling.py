"""Small message rules (findings f7, f9, f10): plain numbers, 1-based Parquet rows, Python
keywords from the library and flags from the CLI, and drops that name their file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench import InputError, ResponseMatrix
from latentbench.cli import _register, app
from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
MAIN_2024_06 = FORMATS / "real" / "lm-eval" / "main-2024-06-793469e" / "meta-llama__Meta-Llama-3-8B"

_register()
runner = CliRunner()


def test_a_parquet_value_is_a_plain_number_on_its_1_based_row(tmp_path):
    path = tmp_path / "out.parquet"
    pd.DataFrame({"model": ["m1", "m1"], "item": ["a", "b"], "score": [1.0, 2.0]}).to_parquet(path)
    with pytest.raises(InputError) as info:
        read_results("table", path, benchmark="b")
    message = str(info.value)
    assert f"{path}, row 2: field 'score': value 2.0 is outside [0, 1]" in message
    assert "np.float64" not in message
    with pytest.raises(InputError, match=r"out\.parquet: column 'score', row 2 \(model="):
        ResponseMatrix.read(path)
    csv = tmp_path / "out.csv"
    csv.write_text("model,item,score\nm1,a,1.0\nm1,b,2.0\n")
    with pytest.raises(InputError, match=r"out\.csv:3: field 'score': value '2\.0'"):
        read_results("table", csv, benchmark="b")


def test_a_parquet_conflict_names_1_based_rows(tmp_path):
    path = tmp_path / "two.parquet"
    frame = pd.DataFrame({"model": ["m1", "m1"], "item": ["a", "a"], "score": [1.0, 0.0]})
    frame.to_parquet(path)
    with pytest.raises(InputError, match=r"two\.parquet, row 1 and .*two\.parquet, row 2 give"):
        read_results("table", path, benchmark="b")


def test_the_library_advises_python_keywords_and_the_cli_flags(tmp_path):
    with pytest.raises(InputError) as info:
        read_results("lm-eval", MAIN_2024_06, metric="acc")
    message = str(info.value)
    assert 'choose duplicates="latest" or duplicates="mean"' in message
    assert "--duplicates" not in message
    outcome = runner.invoke(
        app,
        [
            "ingest",
            "lm-eval",
            str(MAIN_2024_06),
            "--store",
            str(tmp_path / "s.duckdb"),
            "--metric",
            "acc",
        ],
    )
    assert outcome.exit_code == 2
    text = " ".join(outcome.output.split())
    assert "choose --duplicates latest or --duplicates mean" in text
    assert "duplicates=" not in text
    # the store's conflict with what it holds: the same two spellings
    late = sorted(MAIN_2024_06.glob("samples_*.json"))
    first, _ = read_results("lm-eval", late[0], metric="acc")
    second, _ = read_results("lm-eval", late[1], metric="acc")
    with Store(tmp_path / "t.duckdb") as store:
        store.ingest(first)
        with pytest.raises(InputError, match=r'choose duplicates="latest" or duplicates="mean"'):
            store.ingest(second)


def test_a_metric_absent_from_a_line_is_dropped_naming_the_file(tmp_path):
    run = tmp_path / "org__m"
    run.mkdir()
    date = "2024-05-01T12-30-45.123456"
    lines = [{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0},
             {"doc_id": 1, "filter": "none", "metrics": ["acc"]}]  # fmt: skip
    samples = run / f"samples_t_{date}.jsonl"
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    frame, report = read_results("lm-eval", tmp_path, metric="acc")
    assert len(frame) == 1
    assert report.dropped == {f"metric 'acc' absent in {samples}": 1}
