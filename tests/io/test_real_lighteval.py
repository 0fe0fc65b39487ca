"""lighteval 0.13.0 output written by lighteval itself (tests/data/formats/README.md).

The run is lighteval's own smoke run with its ``DummyModelConfig`` (random log-probabilities,
fixed text, two samples per task), committed by the Every Eval Ever project to pin the shape of
lighteval's output. The scores mean nothing, the layout and the values are lighteval's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

RUN = Path(__file__).resolve().parents[1] / "data" / "formats" / "real" / "lighteval-0.13.0"
DETAILS = sorted(RUN.glob("details/**/*.parquet"))
RESULTS = next(RUN.glob("results/**/results_*.json"))


def raw_rows(path: Path) -> dict[str, float]:
    """doc.id -> the one metric value of each row, straight from the parquet file."""
    table = pq.read_table(path)
    ids = table.column("doc").combine_chunks().field("id").to_pylist()
    metrics = table.column("metric").to_pylist()
    assert all(len(m) == 1 for m in metrics)
    return {doc_id: float(next(iter(m.values()))) for doc_id, m in zip(ids, metrics, strict=True)}


def test_details_match_the_raw_files():
    frame, report = read_results("lighteval", RUN)
    assert len(DETAILS) == 2
    for path in DETAILS:
        task = path.name.removeprefix("details_").rsplit("_", 1)[0]  # 'anli:r1|0'
        mine = frame[frame["benchmark"] == task]
        assert dict(zip(mine["item"], mine["score"], strict=True)) == raw_rows(path)
    assert set(frame["model"]) == {"eee-smoke/dummy-model"}
    assert report.choices["anli:r1|0"]["metric"] == "acc"
    assert report.choices["squad_v2|0"]["metric"] == "em"
    assert report.records_read == report.rows + sum(report.dropped.values()) == 4


def test_split_comes_from_the_results_file_of_the_run():
    """``config_tasks[task].evaluation_splits`` of ``results_<timestamp>.json``."""
    config = json.loads(RESULTS.read_text())["config_tasks"]
    frame, _ = read_results("lighteval", RUN)
    splits = frame.groupby("benchmark")["split"].unique().map(list).to_dict()
    assert splits == {
        task: config[task]["evaluation_splits"] for task in ("anli:r1|0", "squad_v2|0")
    }
    assert splits == {"anli:r1|0": ["test_r1"], "squad_v2|0": ["validation"]}


def test_real_run_stores_and_reingests_as_nothing_new(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        assert store.ingest(*read_results("lighteval", RUN))["n_new"] == 4
        assert store.ingest(*read_results("lighteval", RUN))["n_new"] == 0
        stored = store.long("squad_v2|0")
        assert stored["item"].tolist() == sorted(raw_rows(DETAILS[1]))
