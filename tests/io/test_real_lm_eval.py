"""lm-eval outputs: a real 0.4.9.2 run (tests/data/formats/README.md) and the layouts other
versions write, rebuilt from it or from the 0.4.9 fixture as lm-eval lays them out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
RUN = next((DATA / "real" / "lm-eval" / "v0.4.9.2").iterdir())
DATE = "2026-01-21T03-44-18.458309"
RESULTS = RUN / f"results_{DATE}.json"
SAMPLES = RUN / f"samples_math_perturbed_full_{DATE}.jsonl"
MODEL = json.loads(RESULTS.read_text())["model_name"]
GSM8K = DATA / "lm-eval" / "v0.4.9" / "EleutherAI__pythia-160m"
DATE_047 = "2024-05-01T12-30-45.123456"


def raw_rows(path: Path) -> dict[str, float]:
    return {
        str(r["doc_id"]): float(r["exact_match"])
        for r in map(json.loads, path.read_text().splitlines())
    }


def test_real_run_matches_the_raw_file():
    frame, report = read_results("lm-eval", RUN)
    assert dict(zip(frame["item"], frame["score"], strict=True)) == raw_rows(SAMPLES)
    assert set(frame["model"]) == {MODEL}
    assert set(frame["source"]) == {"lm-eval 0.4.9.2"}
    assert set(frame["split"]) == {"test"}  # configs[task].test_split
    assert set(frame["filter"]) == {"none"}
    assert report.records_read == report.rows + sum(report.dropped.values())


def test_output_path_name_json_layout_names_the_model_from_its_results(tmp_path):
    """``--output_path out/run.json``: lm-eval writes ``out/run_<date>.json`` and flat samples."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(RESULTS, out / f"my_run_{DATE}.json")
    shutil.copy(SAMPLES, out / SAMPLES.name)
    frame, report = read_results("lm-eval", out)
    assert set(frame["model"]) == {MODEL}  # not "out"
    assert set(frame["source"]) == {"lm-eval 0.4.9.2"}
    assert not report.notes or "named after the folder" not in " ".join(report.notes)


def test_samples_named_json_are_read(tmp_path):
    """main in 2024-05/06 (and the Open LLM Leaderboard v2 details) wrote JSON lines to
    ``samples_<task>_<date>.json``."""
    run = tmp_path / RUN.name
    run.mkdir()
    shutil.copy(RESULTS, run / RESULTS.name)
    shutil.copy(SAMPLES, run / SAMPLES.name.replace(".jsonl", ".json"))
    frame, _ = read_results("lm-eval", run)
    assert set(frame["model"]) == {MODEL}
    assert dict(zip(frame["item"], frame["score"], strict=True)) == raw_rows(SAMPLES)
    # named directly with --benchmark: still the model of its results file, not the file stem
    frame, _ = read_results(
        "lm-eval", run / SAMPLES.name.replace(".jsonl", ".json"), benchmark="math"
    )
    assert set(frame["model"]) == {MODEL} and set(frame["benchmark"]) == {"math"}


def test_no_results_file_never_borrows_another_runs(tmp_path):
    """Two runs in one folder, one without its results file: no borrowed model name."""
    folder = tmp_path / "org__model"
    folder.mkdir()
    shutil.copy(RESULTS, folder / RESULTS.name)
    shutil.copy(SAMPLES, folder / SAMPLES.name)
    other = "2026-02-01T00-00-00.000000"
    shutil.copy(SAMPLES, folder / f"samples_math_perturbed_full_{other}.jsonl")
    frame, report = read_results("lm-eval", folder / f"samples_math_perturbed_full_{other}.jsonl")
    assert set(frame["model"]) == {"org/model"}  # the folder, with a note; not MODEL
    assert any("no results file of run 2026-02-01" in note for note in report.notes)
    # both runs together: different models, so no false duplicate
    frame, _ = read_results("lm-eval", folder)
    assert set(frame["model"]) == {"org/model", MODEL}


def _pre_047_layout(tmp_path: Path, blocks: bool) -> Path:
    """gsm8k as lm-eval 0.4.3-0.4.6 wrote it: no 'filter' field, one line per doc and filter
    in filter_list order (``blocks``: all docs of a filter, then the next filter)."""
    run = tmp_path / GSM8K.name
    run.mkdir()
    date = "2024-05-01T12-30-45.123456"
    results = json.loads((GSM8K / f"results_{date}.json").read_text())
    results["configs"] = {
        "gsm8k": {
            "test_split": "test",
            "filter_list": [{"name": "strict-match"}, {"name": "flexible-extract"}],
        }
    }
    results.pop("lm_eval_version", None)
    (run / f"results_{date}.json").write_text(json.dumps(results))
    lines = [
        json.loads(x) for x in (GSM8K / f"samples_gsm8k_{date}.jsonl").read_text().splitlines()
    ]
    order = {"strict-match": 0, "flexible-extract": 1}
    if blocks:
        lines.sort(key=lambda r: (order[r["filter"]], r["doc_id"]))
    else:
        lines.sort(key=lambda r: (r["doc_id"], order[r["filter"]]))
    for line in lines:
        del line["filter"], line["metrics"]
    (run / f"samples_gsm8k_{date}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


@pytest.mark.parametrize("blocks", [True, False])
def test_multi_filter_without_filter_field_is_recovered(tmp_path, blocks):
    run = _pre_047_layout(tmp_path, blocks)
    for name in ("strict-match", "flexible-extract"):
        old, report = read_results("lm-eval", run, filter=name)
        new, _ = read_results("lm-eval", GSM8K / f"samples_gsm8k_{DATE_047}.jsonl", filter=name)
        columns = ["item", "score", "filter"]
        assert sorted(old[columns].values.tolist()) == sorted(new[columns].values.tolist())
        assert any("filters assigned by line order" in n for n in report.notes)
    with pytest.raises(InputError, match=r"several filters \(flexible-extract, strict-match\)"):
        read_results("lm-eval", run)


def test_multi_filter_without_filter_list_is_refused(tmp_path):
    run = _pre_047_layout(tmp_path, blocks=True)
    results = next(run.glob("results_*.json"))
    meta = json.loads(results.read_text())
    meta["configs"] = {}
    results.write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"no 'filter' field .*filter_list names 0 filters"):
        read_results("lm-eval", run)


def test_old_layout_without_task_names_the_benchmark_flag(tmp_path):
    path = tmp_path / "pretrained__x_task.jsonl"
    path.write_text('[{"doc_id": 0, "acc": 1}]')
    with pytest.raises(InputError, match=r"pass benchmark=NAME"):
        read_results("lm-eval", path)


# --- real runs of other lm-eval versions (tests/data/formats/README.md) ----------------------

MAIN_2024_06 = DATA / "real" / "lm-eval" / "main-2024-06-793469e" / "meta-llama__Meta-Llama-3-8B"
LATE, EARLY = "2024-06-17T16-06-39.458097", "2024-06-17T12-20-26.826621"
V0413 = DATA / "real" / "lm-eval" / "v0.4.13.dev0" / "Qwen__Qwen3-8B"
V0413_DATE = "2026-07-08T18-15-33.115417"
BAD_048 = DATA / "real" / "lm-eval" / "bad" / "v0.4.8" / "tgpred.json" / "gpt-4o-mini"


def raw_metric(path: Path, metric: str) -> dict[str, float]:
    """doc_id -> value of ``metric``, straight from a JSON-lines samples file."""
    return {
        str(r["doc_id"]): float(r[metric]) for r in map(json.loads, path.read_text().splitlines())
    }


@pytest.mark.parametrize("metric", ["acc", "acc_norm"])
def test_2024_06_json_lines_in_dot_json_match_the_raw_file(metric):
    """main @ 793469e (2024-06) wrote JSON lines to ``samples_<task>_<date>.json``."""
    path = MAIN_2024_06 / f"samples_bias_classification_{LATE}.json"
    frame, report = read_results("lm-eval", path, metric=metric)
    assert dict(zip(frame["item"], frame["score"], strict=True)) == raw_metric(path, metric)
    assert set(frame["model"]) == {"meta-llama/Meta-Llama-3-8B"}
    assert set(frame["benchmark"]) == {"bias_classification"}
    assert set(frame["split"]) == {"test"}
    # no lm_eval_version in results files of that time: the commit is the provenance
    assert set(frame["source"]) == {"lm-eval git 793469e"}
    assert set(frame["item_hash"]) == {
        r["doc_hash"] for r in map(json.loads, path.read_text().splitlines())
    }
    assert report.records_read == len(path.read_text().splitlines())
    assert report.records_read == report.rows + sum(report.dropped.values())


def test_2024_06_list_valued_f1_is_not_an_item_score():
    """Per doc, lm-eval logs f1 as the (gold, prediction) pair the corpus f1 aggregates."""
    path = MAIN_2024_06 / f"samples_bias_classification_{LATE}.json"
    with pytest.raises(InputError, match=r"several metrics \(acc, acc_norm\)"):
        read_results("lm-eval", path)  # f1 is not offered
    with pytest.raises(InputError, match=rf"{path.name}:1: field 'f1': value \[1, 1\] is a list"):
        read_results("lm-eval", path, metric="f1")


def test_two_real_runs_in_one_folder_conflict_unless_a_policy_is_chosen(tmp_path):
    """The same model and task run twice (another prompt): different scores for one doc are
    an error naming both files; --duplicates latest keeps the later run."""
    with pytest.raises(InputError) as info:
        read_results("lm-eval", MAIN_2024_06, metric="acc")
    assert LATE in str(info.value) and EARLY in str(info.value)
    frame, report = read_results("lm-eval", MAIN_2024_06, metric="acc", duplicates="latest")
    late = raw_metric(MAIN_2024_06 / f"samples_bias_classification_{LATE}.json", "acc")
    assert dict(zip(frame["item"], frame["score"], strict=True)) == late
    assert report.records_read == 24
    # two stores: each run ingested separately, the second is refused, nothing averaged
    early, early_report = read_results(
        "lm-eval", MAIN_2024_06 / f"samples_bias_classification_{EARLY}.json", metric="acc"
    )
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(early, early_report)
        with pytest.raises(InputError, match=rf"{LATE}.*{EARLY}"):
            store.ingest(frame, report)
        store.ingest(frame, report, duplicates="latest")
        stored = store.long("bias_classification")
        assert dict(zip(stored["item"], stored["score"], strict=True)) == late


@pytest.mark.parametrize(("task", "metric"), [("belief", "acc"), ("intention", "exact_match")])
def test_0_4_13_dev_run_matches_the_raw_file(task, metric):
    path = V0413 / f"samples_negotiationtom_{task}_{V0413_DATE}.jsonl"
    frame, report = read_results("lm-eval", path)  # the only scalar metric of the task
    assert report.choices[f"negotiationtom_{task}"]["metric"] == metric
    assert dict(zip(frame["item"], frame["score"], strict=True)) == raw_metric(path, metric)
    assert set(frame["model"]) == {"Qwen/Qwen3-8B"}
    assert set(frame["source"]) == {"lm-eval 0.4.13.dev0"}
    assert set(frame["split"]) == {"test"}
    assert report.records_read == report.rows + sum(report.dropped.values()) == 10
    # --limit 20 of 13812 (or 4618) docs, recorded in n-samples
    assert any("evaluated 20 of" in note for note in report.notes)


def test_0_4_8_regression_metric_is_refused_naming_line_and_value():
    """A real 0.4.8 run scored by mean absolute error (Infinity when unparsable) has no item
    score in [0, 1]: a clear error, not a silent drop."""
    path = BAD_048 / "samples_polymer_tg_prediction_2025-06-30T19-40-09.461247.jsonl"
    with pytest.raises(InputError, match=rf"{path.name}:1: field 'mae': value inf is outside"):
        read_results("lm-eval", BAD_048)


def test_a_samples_file_short_of_the_docs_its_run_evaluated_is_said(tmp_path):
    """A samples file cut short (a copy interrupted at a line, lines removed) lost those docs
    without a word: they are missing, and nothing said that the run evaluated them. The
    results file's n-samples 'effective' gives the count; the file's docs are compared."""
    out = tmp_path / "run"
    out.mkdir()
    results = json.loads(RESULTS.read_text())
    results["n-samples"]["math_perturbed_full"] = {"original": 5000, "effective": 10}
    (out / RESULTS.name).write_text(json.dumps(results))
    lines = SAMPLES.read_text().splitlines()
    (out / SAMPLES.name).write_text("\n".join(lines) + "\n")
    _, whole = read_results("lm-eval", out)
    assert not any("docs of task" in note for note in whole.notes)
    (out / SAMPLES.name).write_text("\n".join(lines[:7]) + "\n")
    frame, report = read_results("lm-eval", out)
    assert len(frame) == 7
    said = [note for note in report.notes if "docs of task" in note]
    assert len(said) == 1 and SAMPLES.name in said[0], report.notes
    assert "7 docs of task 'math_perturbed_full'" in said[0] and "says 10 were" in said[0]
    assert "3 are missing" in said[0]
    # one doc short: '1 is missing' (it said '1 are missing')
    (out / SAMPLES.name).write_text("\n".join(lines[:9]) + "\n")
    (said,) = [n for n in read_results("lm-eval", out)[1].notes if "docs of task" in n]
    assert "(n-samples 'effective'): 1 is missing (a file cut short or edited?)" in said


def test_a_model_folder_linked_into_the_results_folder_is_read(tmp_path):
    """A results folder whose model folders are symbolic links (runs gathered from several
    places) is read as the real folders are; a link back up the tree is no cycle."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "model").symlink_to(RUN, target_is_directory=True)
    (results / "loop").symlink_to(results, target_is_directory=True)
    linked, _ = read_results("lm-eval", results)
    direct, _ = read_results("lm-eval", RUN)
    assert len(linked) == len(direct) > 0
    assert dict(zip(linked["item"], linked["score"], strict=True)) == dict(
        zip(direct["item"], direct["score"], strict=True)
    )


def test_a_samples_file_of_one_doc_short_of_its_run_says_one_doc(tmp_path):
    # the note of a file cut to its first doc said '1 docs of task ...'
    out = tmp_path / "run"
    out.mkdir()
    results = json.loads(RESULTS.read_text())
    results["n-samples"]["math_perturbed_full"] = {"original": 5000, "effective": 10}
    (out / RESULTS.name).write_text(json.dumps(results))
    (out / SAMPLES.name).write_text(SAMPLES.read_text().splitlines()[0] + "\n")
    (said,) = [n for n in read_results("lm-eval", out)[1].notes if "of task" in n]
    assert f"{SAMPLES.name}: 1 doc of task 'math_perturbed_full', but its run's" in said
    assert "says 10 were evaluated (n-samples 'effective'): 9 are missing" in said


# --- metrics where lower is better (higher_is_better: false) ----------------------------------


def _with_toxicity(tmp_path: Path, *, top_level: bool = True) -> Path:
    """The real 0.4.9.2 run with a second per-doc metric, 0/1 as realtoxicityprompts' metric
    ``toxicity_perspective_api`` logs it (1: a toxic completion), which the task's metric_list
    declares ``higher_is_better: false`` (lm-eval's realtoxicityprompts.yaml), so the results
    file says so (``higher_is_better``, or only ``configs`` before it was recorded)."""
    run = tmp_path / RUN.name
    run.mkdir()
    meta = json.loads(RESULTS.read_text())
    task = "math_perturbed_full"
    meta["configs"][task]["metric_list"].append(
        {"metric": "toxicity_perspective_api", "aggregation": "mean", "higher_is_better": False}
    )
    meta["higher_is_better"][task]["toxicity_perspective_api"] = False
    if not top_level:
        del meta["higher_is_better"]
    (run / RESULTS.name).write_text(json.dumps(meta))
    lines = [json.loads(line) for line in SAMPLES.read_text().splitlines()]
    for k, line in enumerate(lines):
        line["metrics"].append("toxicity_perspective_api")
        line["toxicity_perspective_api"] = k % 2
    (run / SAMPLES.name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


def test_a_metric_where_lower_is_better_is_refused_not_read_as_correctness(tmp_path):
    """A per-doc metric the results file marks higher_is_better: false (a 0/1 toxicity) was
    offered among the metrics and, named with metric=, stored as a correctness score, 1 (a
    toxic completion) read as a correct answer, with no word (HELM and EEE refuse theirs). It
    is not offered, and asked for it is refused, naming the file, the metric, what marks it and
    the way out."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    run = _with_toxicity(tmp_path)
    samples, results = run / SAMPLES.name, run / RESULTS.name
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", run, metric="toxicity_perspective_api")
    assert str(caught.value) == (
        f"{samples}: metric 'toxicity_perspective_api' is one where lower is better ({results}: "
        "higher_is_better['math_perturbed_full'] says toxicity_perspective_api: false); "
        "expected a score where higher is better (1 a correct answer), as every fit reads it: "
        "choose one of exact_match, or write the scores the other way round"
    )
    # not among the choices: exact_match is the only metric offered
    frame, _ = read_results("lm-eval", run)
    assert set(frame["metric"]) == {"exact_match"}
    assert dict(zip(frame["item"], frame["score"], strict=True)) == raw_rows(SAMPLES)
    # the command line: refused, exit 2, no store left
    _register()
    store = tmp_path / "s.duckdb"
    result = CliRunner().invoke(
        app,
        ["ingest", "lm-eval", str(run), "--metric", "toxicity_perspective_api", "--store",
         str(store)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "metric 'toxicity_perspective_api' is one where lower is better" in said
    assert not store.exists()


def test_configs_metric_list_marks_a_metric_where_lower_is_better(tmp_path):
    """A results file without the top-level higher_is_better: the task's config says it."""
    run = _with_toxicity(tmp_path, top_level=False)
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", run, metric="toxicity_perspective_api")
    assert (
        f"({run / RESULTS.name}: configs['math_perturbed_full'].metric_list[1] says "
        "higher_is_better: false)"
    ) in str(caught.value)


def test_the_only_metric_where_lower_is_better_is_refused(tmp_path):
    """The real 0.4.8 run's only metric is mae (higher_is_better: false): with errors in
    [0, 1] (a regression on a scaled target) it was stored as scores, the best model's the
    lowest; now refused. Its real values (inf, 259.6) are refused by the range check, which
    says lower is better too."""
    run = tmp_path / BAD_048.name
    shutil.copytree(BAD_048, run)
    samples = next(run.glob("samples_*.jsonl"))
    results = run / "results_2025-06-30T19-40-09.461247.json"
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", run)
    message = str(caught.value)
    assert message.startswith(f"{samples}:1: field 'mae': value inf is outside [0, 1]")
    assert message.endswith(
        "; and metric 'mae' is one where lower is better "
        f"({results}: higher_is_better"
        "['polymer_tg_prediction'] says mae: false): rescaled to [0, 1] it would still read "
        "reversed, as every fit reads 1 as a correct answer"
    )
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for line in lines:
        line["mae"] = min(line["mae"], 500.0) / 500.0
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", run)
    assert str(caught.value) == (
        f"{samples}: no metric of 'polymer_tg_prediction' is a score where higher is better: "
        f"its item scores are ones where lower is better ('mae': {results}: "
        "higher_is_better['polymer_tg_prediction'] says mae: false); expected a score where "
        "higher is better (1 a correct answer), as every fit reads it: write the scores the "
        "other way round"
    )
    with pytest.raises(InputError, match=r"metric 'mae' is one where lower is better .*"
                       r"choose one of \(none\), or write"):  # fmt: skip
        read_results("lm-eval", run, metric="mae")
    # without its results file: lm-eval's registry marks mae (higher_is_better=False)
    results.unlink()
    with pytest.raises(InputError, match=r"\('mae': lm-eval registers it with higher_is_better"):
        read_results("lm-eval", run)
