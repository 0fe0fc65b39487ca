"""Every Eval Ever: real instance-level files ingest, and store -> EEE -> store is identical."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.formats import read_results, write_eee
from latentbench.io.formats._eee import validate_aggregate, validate_instance
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

REAL = Path(__file__).resolve().parents[1] / "data" / "formats" / "real"
DEMO = REAL / "eee" / "data" / "demo-source" / "demo-org" / "demo-model"
CONVERTED = REAL / "eee" / "helm-converter" / "None_samples.jsonl"
MMLU = REAL / "helm" / "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "eee-schema-0.3.0"


def schema_errors(record: dict, name: str) -> list[str]:
    """Every violation of the vendored every_eval_ever 0.3.0 JSON schema ``name``."""
    schema = json.loads((SCHEMAS / name).read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(record)]


def test_real_instance_file_from_the_helm_converter_matches_the_raw_file():
    frame, report = read_results("eee", CONVERTED)
    raw = [json.loads(line) for line in CONVERTED.read_text().splitlines()]
    assert report.records_read == len(raw) == report.rows
    assert frame[["model", "benchmark", "item", "score", "item_hash"]].values.tolist() == [
        [r["model_id"], r["evaluation_name"], r["sample_id"], r["evaluation"]["score"],
         r["sample_hash"]]
        for r in raw
    ]  # fmt: skip
    assert set(frame["source"]) == {"every_eval_ever 0.2.1"}
    # the same HELM run read by the HELM reader gives the same scores (both splits)
    helm = pd.concat(
        read_results("helm", MMLU, metric="exact_match", split=split)[0]
        for split in ("test", "valid")
    )
    assert dict(zip(helm["item"], helm["score"], strict=True)) == dict(
        zip(frame["item"], frame["score"], strict=True)
    )


def test_real_aggregate_and_instance_pair():
    frame, report = read_results("eee", DEMO)
    assert report.records_read == report.rows == 1
    aggregate = json.loads(next(DEMO.glob("*-*[0-9a-f].json")).read_text())
    (record,) = [json.loads(line) for line in next(DEMO.glob("*_samples.jsonl")).open()]
    row = frame.iloc[0]
    assert len(frame) == 1
    assert row["metric"] == aggregate["evaluation_results"][0]["metric_config"]["metric_id"]
    assert row["score"] == record["evaluation"]["score"]
    assert row["run_timestamp"] == pd.Timestamp(int(aggregate["evaluation_timestamp"]), unit="s")
    is_correct, _ = read_results("eee", DEMO, metric="is_correct")
    assert is_correct["score"].tolist() == [float(record["evaluation"]["is_correct"])]


def _demo_record() -> dict:
    return json.loads(next(DEMO.glob("*_samples.jsonl")).read_text().splitlines()[0])


@pytest.mark.parametrize("kind", ["multi_turn", "agentic"])
def test_multi_turn_and_agentic_records(tmp_path, kind):
    record = _demo_record()
    record.update(
        interaction_type=kind,
        output=None,
        messages=[
            {"turn_idx": 0, "role": "user", "content": "What is 2 + 2?"},
            {"turn_idx": 1, "role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "name": "calc", "arguments": {"x": "2+2"}}]},
            {"turn_idx": 2, "role": "tool", "content": "4", "tool_call_id": ["c1"]},
            {"turn_idx": 3, "role": "assistant", "content": "4"},
        ],
        evaluation={"score": 0.5, "is_correct": False, "num_turns": 4, "tool_calls_count": 1},
    )  # fmt: skip
    path = tmp_path / "x_samples.jsonl"
    path.write_text(json.dumps(record) + "\n")
    frame, _ = read_results("eee", path)
    assert frame[["item", "score"]].values.tolist() == [["demo_0001", 0.5]]
    record["interaction_type"] = "chat"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match=r"x_samples\.jsonl:1: field 'interaction_type': value "):
        read_results("eee", path)


def test_validation_names_the_field():
    record = _demo_record()
    del record["evaluation"]["is_correct"]
    with pytest.raises(InputError, match=r"here: field 'evaluation\.is_correct' is missing"):
        validate_instance(record, "here")
    aggregate = json.loads(next(DEMO.glob("*-*[0-9a-f].json")).read_text())
    validate_aggregate(aggregate, "agg")
    aggregate["source_metadata"]["source_type"] = "rumour"
    with pytest.raises(InputError, match=r"source_metadata\.source_type'.*'rumour'"):
        validate_aggregate(aggregate, "agg")


def _mixed_store(path: Path) -> Store:
    store = Store(path)
    store.ingest(*read_results("inspect", REAL / "inspect" / "good"))
    store.ingest(*read_results("helm", REAL / "helm", metric="exact_match"))
    store.ingest(*read_results("inspect", REAL / "inspect", errored="zero"))
    extra = store.long("popularity").head(2).assign(trial=1, flag="second epoch", score=0.5)
    store.ingest(extra)
    return store


def test_round_trip_store_eee_store_is_identical(tmp_path):
    with _mixed_store(tmp_path / "a.duckdb") as store:
        original = store.long()
        files = write_eee(original, tmp_path / "eee")
        assert (
            len(files)
            == original.groupby(["model", "benchmark", "metric", "filter", "split"]).ngroups
        )
        for aggregate in files:  # every file validates, aggregate and instance level
            validate_aggregate(json.loads(aggregate.read_text()), str(aggregate))
            samples = aggregate.with_name(aggregate.stem + "_samples.jsonl")
            for number, line in enumerate(samples.read_text().splitlines(), start=1):
                validate_instance(json.loads(line), f"{samples}:{number}")
        frame, report = read_results("eee", tmp_path / "eee")
        assert report.rows == len(original)
        with Store(tmp_path / "b.duckdb") as copy:
            copy.ingest(frame, report)
            pd.testing.assert_frame_equal(copy.long(), original)
        # and back into the first store: nothing new, nothing conflicting
        assert store.ingest(frame, report)["n_new"] == 0


def test_cli_export_eee_and_ingest_eee(tmp_path):
    with _mixed_store(tmp_path / "a.duckdb") as store:
        original = store.long()
    _register()
    runner = CliRunner()
    result = runner.invoke(
        app, ["export", str(tmp_path / "out"), "--store", str(tmp_path / "a.duckdb"),
              "--format", "eee"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"wrote {len(original)} rows" in result.output
    result = runner.invoke(
        app, ["ingest", "eee", str(tmp_path / "out"), "--store", str(tmp_path / "b.duckdb")]
    )
    assert result.exit_code == 0, result.output
    with Store(tmp_path / "b.duckdb") as copy:
        pd.testing.assert_frame_equal(copy.long(), original)


def test_vendored_schema_accepts_the_real_0_3_0_files():
    """The schema files are the ones the real 0.3.0 demo output was written against."""
    aggregate = next(DEMO.glob("*-*[0-9a-f].json"))
    assert schema_errors(json.loads(aggregate.read_text()), "eval.schema.json") == []
    for line in next(DEMO.glob("*_samples.jsonl")).read_text().splitlines():
        assert schema_errors(json.loads(line), "instance_level_eval.schema.json") == []
    # and they are strict enough to fail: a record without its evaluation is refused
    record = json.loads(next(DEMO.glob("*_samples.jsonl")).read_text().splitlines()[0])
    del record["evaluation"]
    assert schema_errors(record, "instance_level_eval.schema.json")


def test_exported_files_validate_against_the_real_schema(tmp_path):
    """Every aggregate and instance record written by ``write_eee`` passes every_eval_ever's
    own JSON schemas (schema 0.3.0, vendored under tests/data/eee-schema-0.3.0)."""
    with _mixed_store(tmp_path / "a.duckdb") as store:
        files = write_eee(store.long(), tmp_path / "eee")
    n_records = 0
    for aggregate in files:
        assert schema_errors(json.loads(aggregate.read_text()), "eval.schema.json") == []
        samples = aggregate.with_name(aggregate.stem + "_samples.jsonl")
        for line in samples.read_text().splitlines():
            assert schema_errors(json.loads(line), "instance_level_eval.schema.json") == []
            n_records += 1
    assert n_records > 0


@pytest.mark.parametrize("in_the_way", ["folder at a file's name", "file at a folder's name"])
def test_export_into_a_folder_with_something_in_the_way_writes_nothing(tmp_path, in_the_way):
    """Exporting again into a folder where a record's path is taken by something of the other
    kind (a folder where a record goes, a file where its folder goes) is refused before any
    file moves, naming the path: before, the records ahead of it were replaced and the error
    said "nothing written"."""
    with _mixed_store(tmp_path / "a.duckdb") as store:
        frame = store.long()
    out = tmp_path / "eee"
    files = write_eee(frame, out)
    assert len(files) >= 2
    first_samples = files[0].with_name(files[0].stem + "_samples.jsonl")
    first_samples.write_text("stale\n", encoding="utf-8")
    if in_the_way == "folder at a file's name":
        blocked = files[-1]
        blocked.unlink()
        blocked.mkdir()
        expected = rf"{re.escape(str(blocked))} is a folder; expected a record file"
    else:
        blocked = files[-1].parent
        shutil.rmtree(blocked)
        blocked.write_text("not a folder", encoding="utf-8")
        expected = rf"{re.escape(str(blocked))} is a file; expected a folder"
    with pytest.raises(InputError, match=expected + r".*nothing written"):
        write_eee(frame, out)
    assert first_samples.read_text(encoding="utf-8") == "stale\n"  # nothing moved
    assert not list(tmp_path.glob("*.partial*")) and len(list(tmp_path.iterdir())) == 2


def test_a_score_where_lower_is_better_is_refused_not_read_as_correctness(tmp_path):
    # an aggregate result whose metric_config says lower is better (an error rate, a loss):
    # its records' evaluation.score was stored as it is, so 1 (an error) read as correct
    folder = tmp_path / "run"
    shutil.copytree(DEMO, folder)
    (aggregate,) = folder.glob("*-*[0-9a-f].json")
    doc = json.loads(aggregate.read_text())
    doc["evaluation_results"][0]["metric_config"].update(
        metric_id="error_rate", lower_is_better=True
    )
    aggregate.write_text(json.dumps(doc))
    with pytest.raises(InputError) as caught:
        read_results("eee", folder)
    message = str(caught.value)
    assert "_samples.jsonl:1: field 'evaluation.score': value 1.0 is metric 'error_rate'" in (
        message
    )
    assert f"{aggregate}: evaluation_results[0]: field 'metric_config.lower_is_better'" in message
    assert "with metric='is_correct'" in message
    frame, _ = read_results("eee", folder, metric="is_correct")  # the way out reads
    assert frame["metric"].tolist() == ["is_correct"]
    _register()
    store = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", "eee", str(folder), "--store", str(store)])
    assert result.exit_code == 2
    assert "correctness with --metric is_correct, or write" in " ".join(result.output.split())
    assert not store.exists()
