"""Real tool outputs damaged as they are in practice (h186's walk of ingestion): each case
was read without a word before, into fewer items or under the wrong name."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

_INSPECT = Path("real/inspect/good/data_arc_qwen.json")
_OPENCOMPASS = Path(
    "opencompass/outputs/default/20240601_101010/results/internlm2-7b-hf/"
    "ceval-computer_network.json"
)
_LIGHTEVAL = Path(
    "lighteval/details/meta-llama/Llama-3.1-8B-Instruct/2025-01-30T12-34-56.123456/"
    "details_leaderboard|arc:challenge|25_2025-01-30T12-34-56.123456.parquet"
)


def _lighteval_copy(formats: Path, tmp_path: Path, ids: list[str | None]) -> Path:
    """The lighteval fixture (3 docs) with ``doc.id`` replaced, every doc scored 1."""
    rows = pq.read_table(formats / _LIGHTEVAL).to_pylist()
    for row, ident in zip(rows, ids, strict=True):
        row["doc"]["id"] = ident
        row["metric"]["acc"] = 1.0
    folder = tmp_path / "details" / "org" / "model" / _LIGHTEVAL.parent.name
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / _LIGHTEVAL.name)
    return tmp_path / "details"


def test_empty_lighteval_doc_ids_are_refused_not_merged_into_one_item(formats, tmp_path):
    # three docs with id "" (lighteval's Doc.id default) were one item, two of them
    # dropped as "the same observation"; now refused where the first blank id is
    details = _lighteval_copy(formats, tmp_path, ["", "", ""])
    with pytest.raises(InputError) as caught:
        read_results("lighteval", [details], metric="acc")
    message = str(caught.value)
    assert f"{_LIGHTEVAL.name}, record 0: field 'doc.id': item id '' is empty" in message
    assert "(and in 2 more rows); expected an id" in message  # every doc, not one


def test_an_empty_inspect_sample_id_is_refused_and_the_store_left_as_it_was(formats, tmp_path):
    log = json.loads((formats / _INSPECT).read_text())
    (tmp_path / "good.json").write_text(json.dumps(log))
    log["eval"]["model"] = "other/model"
    log["samples"][1]["id"] = ""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "log.json").write_text(json.dumps(log))
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest_files("inspect", [tmp_path / "good.json"])
        before = store.long()
        empty = r"log\.json, record 1: field 'id': item id '' is empty"
        with pytest.raises(InputError, match=empty):
            store.ingest_files("inspect", [tmp_path / "logs"])
        pd.testing.assert_frame_equal(store.long(), before)


def test_an_empty_opencompass_replica_list_is_counted_as_dropped(formats, tmp_path):
    data = json.loads((formats / _OPENCOMPASS).read_text())
    data["details"]["0"]["correct"] = []  # no replica scored: was dropped without a word
    folder = tmp_path / "20240601_101010" / "results" / "m"
    folder.mkdir(parents=True)
    (folder / "ceval.json").write_text(json.dumps(data))
    frame, report = read_results("opencompass", [tmp_path])
    assert sorted(frame["item"]) == ["1", "2"]
    assert report.dropped == {"correctness list empty (no replica)": 1}
    assert report.records_read == 3


def test_inspect_samples_scored_under_two_metric_names_are_refused(formats, tmp_path):
    log = json.loads((formats / _INSPECT).read_text())
    mixed = copy.deepcopy(log)
    mixed["samples"][0]["scores"]["choice"]["value"] = {"a": 1}  # the others: "I", "C"
    (tmp_path / "log.json").write_text(json.dumps(mixed))
    # the three rows were all labelled metric 'a', two of them read from a plain value
    with pytest.raises(InputError) as caught:
        read_results("inspect", [tmp_path / "log.json"])
    message = str(caught.value)
    assert "record 1 (samples[1]): scorer 'choice' gives a single value" in message
    assert "record 0 (samples[0]) gives metric 'a'" in message


def test_a_text_score_in_an_every_eval_ever_record_names_its_field_once(formats, tmp_path):
    run = formats / "real/eee/data/demo-source/demo-org/demo-model"
    aggregate = next(p for p in run.iterdir() if not p.name.endswith("_samples.jsonl"))
    record = json.loads((run / f"{aggregate.stem}_samples.jsonl").read_text())
    record["evaluation"]["score"] = "1.0"
    (tmp_path / aggregate.name).write_bytes(aggregate.read_bytes())
    (tmp_path / f"{aggregate.stem}_samples.jsonl").write_text(json.dumps(record) + "\n")
    # was "field evaluation.'score': ... expected a number or a number"
    with pytest.raises(InputError) as caught:
        read_results("eee", [tmp_path])
    assert str(caught.value).endswith(
        "_samples.jsonl:1: field 'evaluation.score': value '1.0' has type str; expected a number"
    )


def test_the_lm_eval_bridge_names_a_damaged_line_and_how_to_fix_the_file(tmp_path):
    """Known item: one acc of 2.0 (an edited or damaged line; acc is a 0-1 metric, chosen
    in the config) stops the whole log. The refusal stays (docs/ingest.md: a defect in any
    file stops the read); the message named the line but only said to choose a 0-1 metric,
    which acc already is. Nothing of the log is kept: once the line is fixed it reads whole."""
    import numpy as np

    from latentbench.select.oracles import LmEvalBridgeOracle

    out = tmp_path / "out" / "m-a"
    out.mkdir(parents=True)
    meta = {"config": {"model": "x", "model_args": "pretrained=m-a"}, "lm_eval_version": "f"}
    (out / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(meta))
    rows = [{"doc_id": k, "filter": "none", "metrics": ["acc"], "acc": [1.0, 2.0, 0.0][k]}
            for k in range(3)]  # fmt: skip
    log = out / "samples_t_2026-01-01T00-00-00.000000.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bridge = LmEvalBridgeOracle(
        ["a"], ["m-a"], ["0", "1", "2"], "t", tmp_path / "out", tmp_path / "plans", metric="acc"
    )
    with pytest.raises(InputError) as caught:
        list(bridge.evaluate_cells(0, np.array([0, 1, 2])))
    said = str(caught.value)
    assert f"{log}:2: field 'acc': value 2.0 is outside [0, 1]" in said, said
    assert f"correct line 2 of {log}" in said, said
    assert "move the file out of" in said, said
    rows[1]["acc"] = 0.0
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bridge._logged() == {("m-a", "0"): 1.0, ("m-a", "1"): 0.0, ("m-a", "2"): 0.0}


def test_a_command_line_task_choice_given_to_python_says_to_pass_a_mapping(formats):
    # the CLI's `--filter gsm8k=strict-match`, copied into read_results, was refused as an
    # unknown filter 'gsm8k=strict-match' listing 'strict-match' among those available
    with pytest.raises(InputError) as caught:
        read_results(
            "lm-eval", formats / "lm-eval/v0.4.9", metric="acc", filter="gsm8k=strict-match"
        )
    said = str(caught.value)
    assert "unknown filter 'gsm8k=strict-match' for 'gsm8k'" in said
    assert "expected a name, or TASK=NAME as a mapping: filter={'gsm8k': 'strict-match'}" in said


def test_latest_among_runs_without_a_run_time_says_which_file_won(formats, tmp_path):
    """A HELM run done again into suite v10 after v9 (HELM writes no run time): with
    --duplicates latest the file read last won, and a folder's files are read in path
    order, so v9 ('v10' < 'v9') won, reported as "replaced by a later run" and no more."""
    run = formats / "helm/benchmark_output/runs/v1/boolq:model=openai_gpt2"
    for suite in ("v9", "v10"):
        (tmp_path / suite / run.name).mkdir(parents=True)
        for file in run.iterdir():
            (tmp_path / suite / run.name / file.name).write_bytes(file.read_bytes())
    stats = tmp_path / "v10" / run.name / "per_instance_stats.json"
    rows = json.loads(stats.read_text())
    rows[0]["stats"][0]["mean"] = 1 - rows[0]["stats"][0]["mean"]
    stats.write_text(json.dumps(rows))
    with pytest.warns(DataWarning) as caught:
        frame, report = read_results("helm", tmp_path, metric="exact_match", duplicates="latest")
    assert frame.loc[frame["item"].eq("id10") & frame["trial"].eq(0), "score"].tolist() == [1.0]
    note = next(n for n in report.notes if "no run time" in n)
    winner, loser = (
        str(tmp_path / s / run.name / "per_instance_stats.json") for s in ("v9", "v10")
    )
    assert "1 conflicting key has no run time that tells its rows apart" in note, note
    assert f"{winner}, record 0 over {loser}, record 0" in note, note
    assert any(note in str(w.message) for w in caught)


def test_a_link_to_nothing_in_a_results_folder_is_said_not_passed_over(formats, tmp_path):
    """A results folder copied with its symbolic links (cp -r, rsync without -L; a hub
    cache whose blobs were removed): a link whose target is gone matched no file, and that
    model's results were left out without a word."""
    run = formats / "lm-eval/v0.4.9/EleutherAI__pythia-160m"
    (tmp_path / "a").mkdir()
    for file in run.iterdir():
        (tmp_path / "a" / file.name).write_bytes(file.read_bytes())
    (tmp_path / "b").mkdir()
    gone = tmp_path / "elsewhere" / "blob"
    link = tmp_path / "b" / "samples_arc_easy_2024-05-01T12-30-45.123456.jsonl"
    link.symlink_to(gone)
    _, report = read_results("lm-eval", tmp_path, metric="acc", filter={"gsm8k": "strict-match"})
    assert report.skipped_files == [
        {
            "file": str(link),
            "reason": f"a symbolic link to {gone}, which does not exist: not read (copy the "
            "folder with the files its links point to, e.g. cp -rL)",
        }
    ]
    with pytest.raises(InputError) as caught:  # only the link: said with the error
        read_results("lm-eval", tmp_path / "b")
    assert f"{link} is a symbolic link to {gone}, which does not exist" in str(caught.value)


def test_a_json_result_file_cut_short_says_so(formats, tmp_path):
    # a HELM run killed while writing per_instance_stats.json: the error gave the parser's
    # complaint and column only ("Expecting property name enclosed in double quotes")
    run = formats / "helm/benchmark_output/runs/v1/boolq:model=openai_gpt2"
    (tmp_path / run.name).mkdir()
    text = (run / "per_instance_stats.json").read_text()
    (tmp_path / run.name / "per_instance_stats.json").write_text(text[: len(text) // 2])
    (tmp_path / run.name / "run_spec.json").write_text((run / "run_spec.json").read_text())
    with pytest.raises(InputError) as caught:
        read_results("helm", tmp_path, metric="exact_match")
    assert str(caught.value).endswith(
        "; the file ends mid-document: it seems cut short (a run killed while writing it, a "
        "copy that stopped); expected a whole JSON file: write or copy it again"
    ), caught.value


def test_lighteval_rows_with_and_without_a_doc_id_are_refused(formats, tmp_path):
    # a null doc.id among ids took the row's position as its item: row 1 became item '1',
    # which is another doc's id in lighteval >= 0.11 (the row index in the split)
    details = _lighteval_copy(formats, tmp_path, ["7", None, "9"])
    with pytest.raises(InputError) as caught:
        read_results("lighteval", [details], metric="acc")
    assert f"{_LIGHTEVAL.name}, record 1: field 'doc.id' is null in 1 of 3 rows" in str(
        caught.value
    )
    frame, _ = read_results(
        "lighteval", [_lighteval_copy(formats, tmp_path / "none", [None] * 3)], metric="acc"
    )
    assert list(frame["item"]) == ["0", "1", "2"]  # no id at all: row positions, as documented


def test_inspect_logs_without_a_model_are_refused_not_read_as_one_model(formats, tmp_path):
    """Two models' logs, one with ``eval.model`` empty and one without it, were both model
    'unknown': their samples merged into one model without a word (docs/formats.md: an
    empty model id is an error). Refused, naming the file and the field; ``model=`` names it."""
    log = json.loads((formats / _INSPECT).read_text())
    log["eval"]["model"] = ""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.json").write_text(json.dumps(log))
    other = copy.deepcopy(log)
    del other["eval"]["model"]
    for k, sample in enumerate(other["samples"]):
        sample["id"] = 100 + k  # other items: nothing conflicted to give it away
    (tmp_path / "logs" / "b.json").write_text(json.dumps(other))
    with pytest.raises(InputError, match=r"a\.json: field 'eval\.model' is ''; expected the model"):
        read_results("inspect", [tmp_path / "logs" / "a.json"])
    with pytest.raises(InputError, match=r"b\.json: field 'eval\.model' is missing; .*model=NAME"):
        read_results("inspect", [tmp_path / "logs" / "b.json"])
    frame, _ = read_results("inspect", [tmp_path / "logs" / "b.json"], model="org/named")
    assert set(frame["model"]) == {"org/named"} and len(frame) == 3


def test_a_json_result_file_not_utf8_names_the_line_and_the_byte(formats, tmp_path):
    # an instance id edited in a Windows editor (cp1252 'é'): the error said 'not UTF-8 text
    # (invalid continuation byte)', no line, no byte, where the JSON-lines readers of EEE
    # and items files name both
    run = formats / "helm/benchmark_output/runs/v1/boolq:model=openai_gpt2"
    (tmp_path / "run").mkdir()
    lines = (run / "per_instance_stats.json").read_bytes().split(b"\n")
    at = next(k for k, line in enumerate(lines) if b'"instance_id"' in line)
    column = lines[at].index(b'"id') + 2  # 1-based column of the byte after the quote
    lines[at] = lines[at].replace(b'"id', b'"\xe9id', 1)
    (tmp_path / "run" / "per_instance_stats.json").write_bytes(b"\n".join(lines))
    with pytest.raises(InputError) as caught:
        read_results("helm", tmp_path, metric="exact_match")
    assert str(caught.value) == (
        f"{tmp_path / 'run' / 'per_instance_stats.json'}: not UTF-8 text (line {at + 1}: "
        f"byte 0xe9 at column {column}); expected a JSON file"
    )
    samples = next((formats / "lm-eval/v0.4.9/EleutherAI__pythia-160m").glob("samples_arc*"))
    (tmp_path / "lm").mkdir()
    lines = samples.read_bytes().split(b"\n")
    lines[1] = lines[1][:9] + b"\x96" + lines[1][9:]  # cp1252 en dash
    (tmp_path / "lm" / samples.name).write_bytes(b"\n".join(lines))
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", tmp_path / "lm", metric="acc")
    assert str(caught.value) == (
        f"{tmp_path / 'lm' / samples.name}: not UTF-8 text (line 2: byte 0x96 at column 10); "
        "expected lm-eval samples"
    )


def test_a_file_not_utf8_with_cr_line_ends_names_the_line_its_reader_counts(formats, tmp_path):
    # lm-eval samples and JSON files are read with universal newlines (CR-only line ends, an
    # old Mac editor, read), and a JSON error counts CR lines; the line of a byte that is not
    # UTF-8 counted LF alone: 'line 1: byte 0x96 at column 2,311' for a byte on line 3
    samples = next((formats / "lm-eval/v0.4.9/EleutherAI__pythia-160m").glob("samples_arc*"))
    (tmp_path / "lm").mkdir()
    lines = [line for line in samples.read_bytes().split(b"\n") if line]
    lines[2] = lines[2][:9] + b"\x96" + lines[2][9:]
    (tmp_path / "lm" / samples.name).write_bytes(b"\r".join(lines) + b"\r")
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", tmp_path / "lm", metric="acc")
    assert str(caught.value) == (
        f"{tmp_path / 'lm' / samples.name}: not UTF-8 text (line 3: byte 0x96 at column 10); "
        "expected lm-eval samples"
    )
    (tmp_path / "lm" / samples.name).write_bytes(b"\r\n".join(lines) + b"\r\n")  # CRLF: the same
    with pytest.raises(InputError, match=r"\(line 3: byte 0x96 at column 10\)"):
        read_results("lm-eval", tmp_path / "lm", metric="acc")
