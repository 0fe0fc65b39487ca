"""lighteval 0.13.0 and 0.10.0 output written by lighteval itself (tests/data/formats/README.md).

The run is lighteval's own smoke run with its ``DummyModelConfig`` (random log-probabilities,
fixed text, two samples per task), committed by the Every Eval Ever project to pin the shape of
lighteval's output. The scores mean nothing, the layout and the values are lighteval's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from latentbench.exceptions import InputError
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


# ----------------------------------------------------------------- lighteval 0.10.0 (flat)
RUN_010 = RUN.parent / "lighteval-0.10.0"
"""``tests/data/formats/make_lighteval_fixtures.py``: ``lighteval custom`` (0.10.0) with a
deterministic model class, three models, two custom tasks (``community|arith|0``, ``em``;
``community|mcq|0``, ``acc``); the files are lighteval's own output."""


def query_id(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]


def raw_flat(path: Path) -> dict[str, float]:
    """Query id of ``example`` -> the one value of ``metrics``, straight from the parquet."""
    table = pq.read_table(path)
    metrics = table.column("metrics").to_pylist()
    assert all(len(m) == 1 for m in metrics)
    examples = table.column("example").to_pylist()
    assert len(set(examples)) == len(examples)
    return {
        query_id(q): float(next(iter(m.values()))) for q, m in zip(examples, metrics, strict=True)
    }


def test_0_10_details_match_the_raw_files_cell_by_cell():
    frame, report = read_results("lighteval", RUN_010)
    files = sorted(RUN_010.glob("details/**/*.parquet"))
    assert len(files) == 6
    for path in files:
        model = "/".join(path.parent.relative_to(RUN_010 / "details").parts[:-1])
        task = path.name.removeprefix("details_community|").rsplit("_", 1)[0]  # 'arith|0'
        mine = frame[(frame["model"] == model) & (frame["benchmark"] == task)]
        assert dict(zip(mine["item"], mine["score"], strict=True)) == raw_flat(path)
    assert set(frame["model"]) == {"fixture/alpha", "fixture/beta", "fixture/gamma"}
    assert report.choices["arith|0"]["metric"] == "em"
    assert report.choices["mcq|0"]["metric"] == "acc"
    assert report.records_read == report.rows + sum(report.dropped.values()) == 33


def test_0_10_rows_follow_processing_order_so_items_are_named_by_query():
    """The rows of a 0.10 details file are not in dataset order (the dataset is the
    generator's ``ARITH`` list), so a row position is no item id; the query is."""
    spec = importlib.util.spec_from_file_location(
        "make_lighteval_fixtures", RUN.parents[1] / "make_lighteval_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    dataset = [f"{row['question']} Answer:" for row in generator.ARITH]
    path = next(RUN_010.glob("details/fixture/alpha/*/details_community|arith|0_*.parquet"))
    written = pq.read_table(path).column("example").to_pylist()
    assert sorted(written) == sorted(dataset) and written != dataset
    frame, _ = read_results("lighteval", RUN_010)
    arith = frame[frame["benchmark"] == "arith|0"]
    # every model's rows are the same six questions
    assert {m: set(g["item"]) for m, g in arith.groupby("model")} == {
        m: {query_id(q) for q in dataset} for m in arith["model"].unique()
    }


def test_0_10_split_and_aggregates_come_from_the_results_files():
    """``config_tasks`` is keyed ``community|arith`` in 0.10 (no few-shot count)."""
    frame, _ = read_results("lighteval", RUN_010)
    assert set(frame["split"]) == {"test"}
    for results in RUN_010.glob("results/**/results_*.json"):
        data = json.loads(results.read_text())
        assert data["config_tasks"]["community|arith"]["evaluation_splits"] == ["test"]
        model = "/".join(results.parent.relative_to(RUN_010 / "results").parts)
        for task, metric in (("arith|0", "em"), ("mcq|0", "acc")):
            rows = frame[(frame["model"] == model) & (frame["benchmark"] == task)]
            assert rows["score"].mean() == pytest.approx(
                data["results"][f"community|{task}"][metric]
            )


def test_0_10_run_stores_once(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        assert store.ingest(*read_results("lighteval", RUN_010))["n_new"] == 33
        assert store.ingest(*read_results("lighteval", RUN_010))["n_new"] == 0


def _with_edit_distance(tmp_path: Path) -> tuple[Path, Path]:
    """The real 0.13.0 run with squad_v2 also scored by lighteval's copyright grouping
    (``Metrics.copyright``: edit_distance is declared higher_is_better False), 0 and 1 per
    doc, and its results file declaring it as lighteval serialises a MetricGrouping."""
    import shutil

    import pyarrow as pa

    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    (path,) = run.glob("details/**/details_squad_v2*.parquet")
    table = pq.read_table(path)
    metrics = table.column("metric").to_pylist()
    for k, values in enumerate(metrics):
        values["edit_distance"] = float(k % 2)
    column = table.column_names.index("metric")
    pq.write_table(table.set_column(column, "metric", pa.array(metrics)), path)
    results = next(run.glob("results/**/results_*.json"))
    meta = json.loads(results.read_text())
    meta["config_tasks"]["squad_v2|0"]["metrics"].append(
        {
            "metric_name": ["longest_common_prefix_length", "edit_distance", "edit_similarity"],
            "higher_is_better": {
                "longest_common_prefix_length": True,
                "edit_distance": False,
                "edit_similarity": True,
            },
            "category": "GENERATIVE",
        }
    )
    results.write_text(json.dumps(meta))
    return path, results


def test_a_metric_where_lower_is_better_is_refused_not_read_as_correctness(tmp_path):
    """A per-sample metric lighteval declares higher_is_better False (the copyright grouping's
    edit_distance, 0 for an exact copy) was offered among the metrics and, named with metric=,
    stored as a correctness score, 0 (the best answer) read as a wrong one, with no word. It is
    not offered; asked for, it is refused naming the file, the metric and what marks it: the
    run's results file, else lighteval's own declaration."""
    path, results = _with_edit_distance(tmp_path)
    with pytest.raises(InputError) as caught:
        read_results("lighteval", path, metric="edit_distance")
    assert str(caught.value) == (
        f"{path}: metric 'edit_distance' is one where lower is better ({results}: "
        "config_tasks['squad_v2|0'].metrics[1] says higher_is_better['edit_distance']: false); "
        "expected a score where higher is better (1 a correct answer), as every fit reads it: "
        "choose one of em, or write the scores the other way round"
    )
    frame, report = read_results("lighteval", path)  # em, the only score offered
    assert set(frame["metric"]) == {"em"} and report.choices["squad_v2|0"]["metric"] == "em"
    results.unlink()  # no results file: lighteval's declaration
    with pytest.raises(InputError, match=r"lower is better \(lighteval declares it higher_is_b"):
        read_results("lighteval", path, metric="edit_distance")
