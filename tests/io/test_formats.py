"""Round trips fixture files -> read_results -> Store -> ResponseMatrix, for every source."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io.formats import (
    CANONICAL_COLUMNS,
    CANONICAL_SCHEMA,
    CanonicalRow,
    read_results,
)
from latentbench.io.formats._common import coerce_score
from latentbench.io.store import Store

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"

# the readers warn (DataWarning) about uneven item counts and fractional scores; the fixtures
# have both on purpose, and test_formats checks the warning itself
pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")


def roundtrip(tmp_path: Path, source: str, paths, **options) -> Store:
    frame, report = read_results(source, paths, **options)
    assert list(frame.columns) == list(CANONICAL_COLUMNS)
    assert not frame["score"].isna().any()
    store = Store(tmp_path / "store.duckdb")
    result = store.ingest(frame, report)
    assert result["n_new"] == len(frame) == report.rows
    return store


def test_schema_docs_and_arrow_schema_agree():
    assert tuple(CanonicalRow.__annotations__) == CANONICAL_COLUMNS
    assert tuple(CANONICAL_SCHEMA.names) == CANONICAL_COLUMNS


# ------------------------------------------------------------------ lm-eval
def test_lm_eval_jsonl_roundtrip(tmp_path, cells, expand):
    store = roundtrip(
        tmp_path,
        "lm-eval",
        FORMATS / "lm-eval" / "v0.4.9",
        metric={"arc_easy": "acc"},
        filter={"gsm8k": "strict-match"},
    )
    with store:
        assert cells(store.matrix("arc_easy")) == expand(
            {
                "EleutherAI/pythia-160m": {"0": 1, "1": 0, "2": 0, "3": 1},
                "EleutherAI/pythia-410m": {"0": 1, "1": 1, "3": 0},
                "meta-llama/Llama-3.2-1B": {"0": 1, "1": 1, "2": 1, "3": 1},
            }
        )
        assert cells(store.matrix("gsm8k")) == expand(
            {
                "EleutherAI/pythia-160m": {"0": 1, "1": 0, "2": 0},
                "EleutherAI/pythia-410m": {"0": 0, "1": 1, "2": 0},
            }
        )
        long = store.long("gsm8k")
    assert set(long["filter"]) == {"strict-match"}
    assert set(long["source"]) == {"lm-eval 0.4.9"}
    assert long["item_hash"].str.len().eq(64).all()
    assert str(long["run_timestamp"].iloc[0]) == "2024-05-01 12:30:45.123456"


def test_lm_eval_multi_filter_needs_a_choice_and_keeps_both(tmp_path):
    with pytest.raises(InputError, match=r"several filters \(flexible-extract, strict-match\)"):
        read_results("lm-eval", FORMATS / "lm-eval" / "v0.4.9", metric="acc")
    frame, report = read_results(
        "lm-eval",
        FORMATS / "lm-eval" / "v0.4.9" / "EleutherAI__pythia-160m",
        filter="flexible-extract",
        metric={"arc_easy": "acc"},
    )
    # arc_easy offers only the filter 'none': a filter given for every task falls back to it
    assert report.choices["gsm8k"]["filter"] == "flexible-extract"
    assert report.choices["arc_easy"]["filter"] == "none"
    assert report.dropped["other filter"] == 3
    gsm = frame[frame["benchmark"] == "gsm8k"].sort_values("item")
    assert gsm["score"].tolist() == [1.0, 1.0, 0.0]


def test_lm_eval_old_json_array_layout(tmp_path, cells, expand):
    store = roundtrip(tmp_path, "lm-eval", FORMATS / "lm-eval" / "v0.4.1", metric="acc_norm")
    with store:
        assert store.benchmarks() == ["arc_easy", "hellaswag"]
        assert cells(store.matrix("hellaswag")) == expand(
            {
                "EleutherAI/pythia-160m": {"0": 0, "1": 0, "2": 1},
                "EleutherAI/pythia-410m": {"0": 1, "2": 1},
            }
        )
        assert store.long("hellaswag")["source_model"].iloc[0] == "EleutherAI/pythia-160m"


def test_lm_eval_leaderboard_default_metric(tmp_path):
    run = tmp_path / "out" / "org__model"
    run.mkdir(parents=True)
    line = (
        '{"doc_id": %d, "filter": "none", "metrics": ["acc", "acc_norm"], "acc": 0, '
        '"acc_norm": %d}\n'
    )
    (run / "samples_leaderboard_bbh_navigate_2024-07-01T00-00-00.000001.jsonl").write_text(
        line % (0, 1) + line % (1, 0)
    )
    frame, report = read_results("lm-eval", tmp_path / "out")
    assert report.choices["leaderboard_bbh_navigate"]["metric"] == "acc_norm"
    assert report.choices["leaderboard_bbh_navigate"]["metric_chosen"] == "default"
    assert frame["score"].tolist() == [1.0, 0.0]
    assert frame["model"].iloc[0] == "org/model"  # sanitize_model_name undone
    assert frame["source_model"].iloc[0] == "org__model"


# ------------------------------------------------------------------ lighteval
def query_id(query: str) -> str:
    """The documented item id of a flat lighteval row: SHA-256 of ``example``, 16 hex digits."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]


def test_lighteval_struct_and_flat_layouts(tmp_path, cells, expand):
    store = roundtrip(
        tmp_path,
        "lighteval",
        FORMATS / "lighteval" / "details",
        metric={"arc:challenge|25": "acc_norm"},
    )
    with store:
        assert cells(store.matrix("gsm8k|0")) == expand(
            {
                "openai/gpt-4o-mini": {"0": 1, "1": 0, "2": 1, "3": 1},
                "meta-llama/Llama-3.1-8B-Instruct": {"0": 0, "1": 1, "3": 0},
                # flat (<= 0.10) rows are named by their query ("Question i?"), not position
                "HuggingFaceTB/SmolLM-135M": {
                    query_id("Question 0?"): 0,
                    query_id("Question 1?"): 0,
                    query_id("Question 2?"): 1,
                },
            }
        )
        # a null metric value is missing, not 0
        assert cells(store.matrix("arc:challenge|25")) == expand(
            {
                "openai/gpt-4o-mini": {"0": 1, "1": 1, "2": 0},
                "meta-llama/Llama-3.1-8B-Instruct": {"0": 0, "1": 1},
            }
        )


def test_lighteval_refuses_to_guess_between_metrics():
    with pytest.raises(InputError, match=r"several metrics \(acc, acc_norm\)"):
        read_results("lighteval", FORMATS / "lighteval" / "details")


# ------------------------------------------------------------------ HELM
HELM_MMLU = "mmlu:subject=anatomy,method=multiple_choice_joint"


def test_helm_roundtrip_excludes_perturbed_and_averages_trials(tmp_path, cells, expand):
    store = roundtrip(tmp_path, "helm", FORMATS / "helm" / "benchmark_output", metric="exact_match")
    with store:
        assert store.benchmarks() == ["boolq", HELM_MMLU]
        assert cells(store.matrix(HELM_MMLU)) == expand(
            {
                "openai/gpt2": {"id0": 1, "id1": 0, "id2": 0, "id3": 1},
                "meta/llama-7b": {"id0": 1, "id1": 1, "id2": 0},
                "eleutherai/pythia-6.9b": {"id0": 0, "id1": 0, "id3": 1},
            }
        )
        # two train trials reduced by their mean; id13 has no exact_match stat -> absent
        assert cells(store.matrix("boolq")) == expand(
            {
                "openai/gpt2": {"id10": 0.5, "id11": 1, "id12": 0},
                "meta_llama-7b": {"id10": 1, "id11": 0, "id12": 1},
            }
        )
        assert set(store.long("boolq")["trial"]) == {0, 1}


def test_helm_perturbed_instances_on_request(tmp_path, cells):
    frame, report = read_results(
        "helm",
        FORMATS / "helm" / "benchmark_output",
        metric="exact_match",
        include_perturbed=True,
    )
    assert set(frame["filter"]) == {"none", "typo"}
    assert "perturbed instance (include_perturbed=False)" not in report.dropped
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(frame, report)
        with pytest.raises(InputError, match=r"several \(metric, filter, split\) choices"):
            store.matrix(HELM_MMLU)
        typo = store.matrix(HELM_MMLU, filter="typo")
        assert typo.shape == (3, 4) and set(cells(typo).values()) == {0.0}


def test_helm_requires_a_stat_choice():
    with pytest.raises(InputError, match=r"several metrics .*exact_match.*quasi_exact_match"):
        read_results("helm", FORMATS / "helm" / "benchmark_output")


# ------------------------------------------------------------------ Inspect
def test_inspect_eval_zip_and_json_logs(tmp_path, cells, expand):
    store = roundtrip(
        tmp_path,
        "inspect",
        FORMATS / "inspect" / "logs",
        filter={"theory_of_mind": "model_graded_fact"},
    )
    with store:
        # epochs are trials (mean); the errored epoch of sample 4 is missing, not 0
        assert cells(store.matrix("arc_challenge")) == expand(
            {
                "openai/gpt-4o": {"1": 0.5, "2": 1, "3": 0, "4": 1},
                "anthropic/claude-3-5-sonnet-latest": {"1": 1, "2": 0, "4": 1},
            }
        )
        # P = 0.5 is kept, not rounded
        assert cells(store.matrix("theory_of_mind")) == expand(
            {
                "openai/gpt-4o": {"tom_1": 1, "tom_2": 0.5, "tom_3": 0},
                "mistral/mistral-large-latest": {"tom_1": 0.5, "tom_3": 1},
            }
        )
        long = store.long("arc_challenge")
    assert set(long["filter"]) == {"choice"} and set(long["source"]) == {"inspect_ai 0.3.63"}
    assert long["run_timestamp"].min().isoformat() == "2025-02-01T10:00:00"


def test_inspect_errored_as_zero_and_renamed_eval(tmp_path):
    renamed = tmp_path / "log.bin"
    shutil.copy(
        FORMATS / "inspect" / "logs" / "2025-02-01T10-00-00+00-00_arc-challenge_abc123.eval",
        renamed,
    )
    frame, report = read_results("inspect", renamed, errored="zero")
    sample4 = frame[frame["item"] == "4"].sort_values("trial")["score"].tolist()
    assert sample4 == [0.0, 1.0]
    frame, report = read_results("inspect", renamed)
    assert report.dropped == {"errored sample (missing; --errored zero scores it 0)": 1}
    assert frame[frame["item"] == "4"]["score"].tolist() == [1.0]


def test_inspect_needs_a_scorer_choice():
    with pytest.raises(InputError, match=r"several scorers \(match, model_graded_fact\)"):
        read_results("inspect", FORMATS / "inspect" / "logs")


# ------------------------------------------------------------------ OpenCompass
def test_opencompass_replicas_are_trials(tmp_path, cells, expand):
    store = roundtrip(tmp_path, "opencompass", FORMATS / "opencompass" / "outputs")
    with store:
        assert store.benchmarks() == ["ceval-computer_network", "gsm8k"]
        assert cells(store.matrix("gsm8k")) == expand(
            {
                "qwen2-7b-hf": {"0": 0.5, "1": 1, "2": 0},
                "internlm2-7b-hf": {"0": 1, "2": 0.5},
            }
        )
        assert cells(store.matrix("ceval-computer_network")) == expand(
            {
                "qwen2-7b-hf": {"0": 1, "1": 0, "2": 1},
                "internlm2-7b-hf": {"0": 1, "1": 1, "2": 0},
            }
        )
        long = store.long("gsm8k")
    assert sorted(long["trial"].unique().tolist()) == [0, 1]
    assert len(long) == 10  # 3 x 2 + 2 x 2 replicas; predictions/ files ignored
    assert str(long["run_timestamp"].iloc[0]) == "2024-06-01 10:10:10"


# ------------------------------------------------------------------ tables
def test_tables_long_wide_csv_and_parquet(tmp_path, cells, expand):
    table = FORMATS / "table"
    store = roundtrip(
        tmp_path, "table", [table / "long.csv", table / "wide.csv", table / "long.parquet"]
    )
    with store:
        assert cells(store.matrix("quiz")) == expand(
            {"m1": {"q1": 1, "q2": 0, "q3": 0.5}, "m2": {"q1": 0, "q3": 1}, "m3": {"q2": 1}}
        )
        assert cells(store.matrix("wide")) == expand(
            {"m1": {"q1": 1, "q2": 0}, "m2": {"q2": 1, "q3": 1}, "m3": {"q1": 0, "q2": 0, "q3": 1}}
        )
        numbers = store.matrix("numbers")
        assert numbers.item_ids == ["1", "2", "10"]  # numeric ids in numeric order


# ------------------------------------------------------------------ malformed input
@pytest.mark.parametrize(
    ("source", "path", "options", "pattern"),
    [
        (
            "lm-eval",
            "lm-eval/bad/truncated",
            {},
            r"samples_arc_easy_.*\.jsonl:3: invalid JSON line",
        ),
        (
            "lm-eval",
            "lm-eval/bad/string_score",
            {},
            r"\.jsonl:2: field 'acc': value 'correct' is a string",
        ),
        (
            "lm-eval",
            "lm-eval/bad/tuple_metric",
            {"metric": "f1"},
            r"\.jsonl:1: field 'f1'.* is a list",
        ),
        (
            "lm-eval",
            "lm-eval/v0.4.9",
            {"metric": "accuracy"},
            r"\.jsonl:1: unknown metric 'accuracy' for 'arc_easy'; available: acc, acc_norm",
        ),
        ("lm-eval", "lm-eval/v0.4.9", {"metric": "perplexity", "filter": "none"}, r"perplexity"),
        ("inspect", "inspect/bad/not_a_log.eval", {}, r"not_a_log\.eval: is a zip archive but not"),
        (
            "helm",
            "helm/bad",
            {"metric": "exact_match"},
            r"per_instance_stats\.json, record 1 \(instance 'id1'\): field 'exact_match\.mean': "
            r"value 'wrong'",
        ),
        (
            "opencompass",
            "opencompass/bad/results/m/ds.json",
            {},
            r"ds\.json: details\[1\]: field 'correct\[0\]': value 'maybe'",
        ),
        ("opencompass", "opencompass/bad/nodetails", {}, r"field 'details' is missing"),
        ("lighteval", "lighteval/bad", {}, r"record 1: field 'metric\.em': value 3\.5 is outside"),
        ("table", "table/bad_string.csv", {}, r"bad_string\.csv:3: field 'score': value 'oops'"),
    ],
)
def test_malformed_input_names_file_and_place(source, path, options, pattern):
    with pytest.raises(InputError, match=pattern):
        read_results(source, FORMATS / path, **options)


def test_unknown_source_and_missing_path(tmp_path):
    with pytest.raises(InputError, match=r"expected one of lm-eval, lighteval"):
        read_results("mlflow", tmp_path)
    with pytest.raises(InputError, match=r"no such file or directory"):
        read_results("helm", tmp_path / "nope")


def test_a_table_in_memory_is_no_path_and_is_named_as_such(tmp_path):
    # a DataFrame was read as the list of its column names: "model: no such file or
    # directory"; read_results reads files, and the message says what takes a table
    frame = pd.DataFrame({"model": ["a", "b"], "item": ["x", "x"], "score": [1.0, 0.0]})
    with pytest.raises(InputError) as info:
        read_results("table", frame)
    message = str(info.value)
    assert message.startswith("paths: a DataFrame; expected a file or folder path")
    assert "ResponseMatrix.from_long(frame)" in message
    with pytest.raises(InputError, match=r"paths: item 2 is a float \(1\.5\); expected a file"):
        read_results("table", [tmp_path / "a.csv", 1.5])


def test_the_load_reports_repr_is_its_counts():
    # its dataclass repr listed every file and every (benchmark, model) coverage entry: 6 KB
    # for one table of 53 models, and one line per file for lm-eval's 2,280 MMLU logs
    _, report = read_results("helm", FORMATS / "real" / "helm", metric="exact_match")
    assert repr(report) == (
        f"LoadReport(source 'helm': {len(report.files)} files, {report.records_read} records, "
        f"{report.rows} rows, {sum(report.dropped.values())} dropped; 3 benchmark(s), "
        f"{len(report.notes)} note(s))"
    )


def test_duplicate_key_across_files_names_both(tmp_path):
    for name, score in (("a", 1), ("b", 0), ("c", 1)):
        (tmp_path / f"{name}.csv").write_text(f"model,item,score,benchmark\nm1,q1,{score},quiz\n")
    files = [tmp_path / "a.csv", tmp_path / "b.csv"]
    with pytest.raises(InputError, match=r"a\.csv:2 and .*b\.csv:2 give different scores"):
        read_results("table", files)
    frame, _ = read_results("table", files, duplicates="latest")
    assert frame["score"].tolist() == [0.0]  # the later file wins (no timestamps)
    frame, report = read_results("table", files, duplicates="mean")
    assert frame["score"].tolist() == [0.5]
    assert frame["flag"].tolist() == ["mean of 2 conflicting values"]
    # the same value twice is one observation, not a conflict
    frame, report = read_results("table", [tmp_path / "a.csv", tmp_path / "c.csv"])
    assert len(frame) == 1 and frame["flag"].isna().all()
    assert report.records_read == report.rows + sum(report.dropped.values())


def test_models_and_items_without_a_score_are_named(tmp_path):
    """A model whose every cell is empty (a failed run) is stored with no row: the load
    report only counted its empty cells among the others; now a note names it (and an item
    column or item with no score), in a wide and in a long table."""
    (tmp_path / "wide.csv").write_text("model,q1,q2,q3\na,1,0,\nbroken,,,\nc,0,1,\n")
    (tmp_path / "long.csv").write_text(
        "model,item,score\na,q1,1\nbroken,q1,\nbroken,q2,\na,q2,0\na,q3,\n"
    )
    for name in ("wide.csv", "long.csv"):
        frame, report = read_results("table", tmp_path / name, benchmark="b")
        assert "broken" not in set(frame["model"])
        notes = " ".join(report.notes)
        assert f"{name}: 1 model(s) with no observed score ('broken'): no row of theirs" in notes
        assert f"{name}: 1 item(s) with no observed score ('q3'): no row of theirs" in notes
        assert "note: " in str(report) and "'broken'" in str(report)


def test_a_conflict_names_two_rows_that_differ(tmp_path):
    """A key given 0, 0 and 1: the error names a row with 0 and the row with 1 (it named the
    first two rows, 'give different scores (0.0 and 0.0)')."""
    (tmp_path / "t.csv").write_text("model,item,score\nm1,q1,0\nm1,q2,1\nm1,q1,0\nm1,q1,1\n")
    with pytest.raises(
        InputError, match=r"t\.csv:2 and .*t\.csv:5 give different scores \(0\.0 and 1\.0\)"
    ):
        read_results("table", tmp_path / "t.csv", benchmark="b")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, 1.0),
        (False, 0.0),
        ("False", 0.0),
        ("0.25", 0.25),
        (1, 1.0),
        (None, None),
        (float("nan"), None),
    ],
)
def test_coerce_score_accepts(value, expected):
    assert coerce_score(value, "f:1", "acc") == expected


@pytest.mark.parametrize("value", ["C", "P", "N", "I", "yes"])
def test_coerce_score_inspect_letters(value):
    assert (
        coerce_score(value, "f:1", "s", inspect=True)
        == {"C": 1, "P": 0.5, "N": 0, "I": 0, "yes": 1}[value]
    )
    with pytest.raises(InputError):
        coerce_score(value, "f:1", "s")


@pytest.mark.parametrize("value", [[1, 0], (0, 1), {"a": 1}, 1.5, -0.1, float("inf"), "abc"])
def test_coerce_score_rejects(value):
    with pytest.raises(InputError, match=r"f:7: field 'acc'"):
        coerce_score(value, "f:7", "acc")


def test_notes_are_reported_and_warned_once():
    with pytest.warns(DataWarning) as caught:
        _, report = read_results("opencompass", FORMATS / "opencompass" / "outputs")
    assert len(caught) == 1
    assert "models disagree on the item count of 'gsm8k': 2 to 3 items" in str(caught[0].message)
    assert report.non_binary == []  # replicas are 0/1 rows; fractions appear only in the matrix


def test_limit_subsample_is_noted(tmp_path):
    run = tmp_path / "org__model"
    run.mkdir()
    date = "2024-07-01T00-00-00.000001"
    (run / f"results_{date}.json").write_text(
        '{"model_name": "org/model", "n-samples": {"arc_easy": {"original": 10, "effective": 2}}}'
    )
    line = '{"doc_id": %d, "filter": "none", "acc": 1}\n'
    (run / f"samples_arc_easy_{date}.jsonl").write_text(line % 0 + line % 1)
    with pytest.warns(DataWarning, match="evaluated 2 of 10 docs"):
        frame, report = read_results("lm-eval", tmp_path)
    assert report.choices["arc_easy"] == {
        "metric": "acc",
        "metric_chosen": "only",
        "filter": "none",
        "filter_chosen": "only",
    }
    assert frame["model"].tolist() == ["org/model", "org/model"]


def test_a_design_over_many_tasks_is_one_note_per_model(tmp_path):
    """A tiny design run with lm-eval --samples touches most of MMLU's 57 tasks: one note
    for the model (the first five tasks, then the totals), not one sentence per task."""
    date = "2024-07-01T00-00-00.000001"
    tasks = [f"mmlu_t{t}" for t in range(7)]
    line = '{"doc_id": %d, "filter": "none", "acc": 1}\n'
    for name in ("org/a", "org/b"):
        run = tmp_path / name.replace("/", "__")
        run.mkdir()
        counts = {task: {"original": 10 + t, "effective": 2} for t, task in enumerate(tasks)}
        (run / f"results_{date}.json").write_text(
            json.dumps({"model_name": name, "n-samples": counts})
        )
        for task in tasks:
            (run / f"samples_{task}_{date}.jsonl").write_text(line % 3 + line % 5)
    with pytest.warns(DataWarning) as caught:
        frame, report = read_results("lm-eval", tmp_path, group="mmlu")
    assert len(frame) == 28 and len(caught) == 1
    notes = [note for note in report.notes if "missing by design" in note]
    assert notes == [
        f"'{name}' evaluated 14 of 91 docs of 7 tasks ('mmlu_t0' 2 of 10, 'mmlu_t1' 2 of 11, "
        "'mmlu_t2' 2 of 12, 'mmlu_t3' 2 of 13, 'mmlu_t4' 2 of 14, ... 2 more) (--limit or "
        "--samples): the other items are missing by design"
        for name in ("org/a", "org/b")
    ]
    assert report.subsampled["org/a"]["mmlu_t6"] == [2, 16]


def test_table_overrides_keep_the_raw_model(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("model,q1,q2,q3\nmy-run-7,1,,0\n")
    frame, report = read_results("table", path, model="org/only", metric="acc", benchmark="b")
    assert set(frame["model"]) == {"org/only"}
    assert set(frame["source_model"]) == {"my-run-7"}
    assert set(frame["metric"]) == {"acc"} and set(frame["benchmark"]) == {"b"}
    assert report.dropped == {"empty cell (missing)": 1}


def test_lm_eval_repeated_doc_without_filter_field(tmp_path):
    run = tmp_path / "org__model"
    run.mkdir()
    line = '{"doc_id": 0, "exact_match": %d}\n'
    (run / "samples_gsm8k_2024-07-01T00-00-00.000001.jsonl").write_text(line % 1 + line % 0)
    with pytest.raises(
        InputError,
        match=r"\.jsonl:2: doc_id 0 with filter 'none' repeats .*\.jsonl:1"
        r" and no 'filter' field",
    ):
        read_results("lm-eval", tmp_path)


def test_a_wide_table_read_as_long_is_refused_by_name(tmp_path):
    """layout='long' on a table without item/score columns: an InputError naming the file,
    the missing columns and the other layout (a bare KeyError: 'score' before)."""
    from latentbench.exceptions import InputError
    from latentbench.io import read_results

    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2\nm1,1,0\nm2,0,1\n")
    with pytest.raises(InputError, match=r"wide\.csv: layout='long'; .*'item', 'score' missing"):
        read_results("table", path, layout="long")


def test_the_report_line_counts_in_words_with_thousands_separators():
    """``ingest`` printed 'table: 1 files, 119000 records, 119000 rows' (BFCL less one model)
    where every other line writes 1,700: a count takes its separators and its noun's number."""
    from latentbench.io.formats._report import LoadReport

    report = LoadReport(
        source="table", files=["cal.parquet"], records_read=119_000, rows=118_999,
        dropped={"empty score (missing)": 1_001},
    )  # fmt: skip
    lines = str(report).splitlines()
    assert lines[0] == "table: 1 file, 119,000 records, 118,999 rows"
    assert lines[1] == "  dropped 1,001: empty score (missing)"
    report.files.append("more.parquet")
    report.records_read, report.rows, report.dropped = 1, 1, {}
    assert str(report) == "table: 2 files, 1 record, 1 row"


def test_counts_in_notes_have_thousands_separators(tmp_path):
    """Every count in a note reads as the others do (``18,430``): a subsampled task's counts
    were printed ``2 of 13812`` beside the totals ``4 of 32,242``."""
    from latentbench.io.formats import LoadReport

    date = "2024-07-01T00-00-00.000001"
    run = tmp_path / "org__model"
    run.mkdir()
    counts = {
        "t_a": {"original": 13812, "effective": 2},
        "t_b": {"original": 18430, "effective": 2},
    }
    (run / f"results_{date}.json").write_text(
        json.dumps({"model_name": "org/m", "n-samples": counts})
    )
    line = '{"doc_id": %d, "filter": "none", "acc": 1}\n'
    for task in counts:
        (run / f"samples_{task}_{date}.jsonl").write_text(line % 3 + line % 5)
    with pytest.warns(DataWarning):
        _, report = read_results("lm-eval", tmp_path)
    (note,) = [n for n in report.notes if "evaluated" in n]
    assert "'t_a' 2 of 13,812, 't_b' 2 of 18,430)" in note
    assert "evaluated 4 of 32,242 docs of 2 tasks" in note

    # models that disagree on a benchmark's item count: both counts separated
    rows = [("a", i) for i in range(1000)] + [("b", i) for i in range(1001)]
    frame = pd.DataFrame(rows, columns=["model", "item"]).assign(benchmark="big", score=1.0)
    report = LoadReport(source="table")
    report.summarise(frame.astype({"item": str}))
    assert "models disagree on the item count of 'big': 1,000 to 1,001 items" in report.notes
