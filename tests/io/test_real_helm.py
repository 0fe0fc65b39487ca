"""HELM run folders published in a public repository (tests/data/formats/README.md)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

REAL = Path(__file__).resolve().parents[1] / "data" / "formats" / "real" / "helm"
MMLU = REAL / "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
NARRATIVE = REAL / "narrative_qa-model=openai_gpt2"
RUNS = sorted(p for p in REAL.iterdir() if p.is_dir())


def raw_means(path: Path, metric: str, split: str) -> dict[str, float]:
    """instance id -> mean of ``metric`` on ``split``, unperturbed, straight from the file."""
    out = {}
    for entry in json.loads(path.read_text()):
        if entry.get("perturbation") is not None:
            continue
        for stat in entry["stats"]:
            if stat["name"]["name"] == metric and stat["name"]["split"] == split:
                out[entry["instance_id"]] = stat["mean"]
    return out


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name.split(",")[0])
@pytest.mark.parametrize("split", ["test", "valid"])
def test_values_match_the_raw_file_per_split(run, split):
    frame, report = read_results("helm", run, metric="exact_match", split=split)
    expected = raw_means(run / "per_instance_stats.json", "exact_match", split)
    assert dict(zip(frame["item"], frame["score"], strict=True)) == expected
    assert set(frame["split"]) <= {split}
    assert report.records_read == report.rows + sum(report.dropped.values())
    assert report.choices[frame["benchmark"].iloc[0]]["split"] == split if len(frame) else True


def test_mmlu_test_split_by_default_matches_helm_stats():
    """HELM reports 0.111 on test for this run; valid and test are never merged."""
    frame, report = read_results("helm", MMLU, metric="exact_match")
    assert set(frame["split"]) == {"test"}
    assert len(frame) == 9
    stats = json.loads((MMLU / "stats.json").read_text())
    (helm_test,) = [
        s["mean"] for s in stats if s["name"] == {"name": "exact_match", "split": "test"}
    ]
    assert frame["score"].mean() == pytest.approx(helm_test)
    assert report.dropped == {"other split (valid; --split valid keeps it)": 1}


def test_non_scores_are_not_offered():
    with pytest.raises(InputError) as info:
        read_results("helm", MMLU)
    message = str(info.value)
    assert "exact_match" in message
    for name in ("batch_size", "num_prompt_tokens", "training_co2_cost", "logprob", "max_prob"):
        assert name not in message.split("(")[1]
    with pytest.raises(InputError, match=r"'num_prompt_tokens' is not an item score"):
        read_results("helm", MMLU, metric="num_prompt_tokens")


def test_one_value_outside_0_1_is_a_bad_cell_named_by_instance(tmp_path):
    # finding f5: one bad exact_match made the whole stat "not an item score"
    run = tmp_path / MMLU.name
    shutil.copytree(MMLU, run)
    entries = json.loads((run / "per_instance_stats.json").read_text())
    index, entry = next(
        (k, e)
        for k, e in enumerate(entries)
        if e.get("perturbation") is None
        and any(s["name"] == {"name": "exact_match", "split": "test"} for s in e["stats"])
    )
    for stat in entry["stats"]:
        if stat["name"] == {"name": "exact_match", "split": "test"}:
            stat["mean"] = 3.0
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    with pytest.raises(InputError) as info:
        read_results("helm", run, metric="exact_match")
    message = str(info.value)
    assert (
        f"per_instance_stats.json, record {index} (instance {entry['instance_id']!r}): field "
        "'exact_match.mean': value 3.0 is outside [0, 1]; expected a score in [0, 1]"
    ) in message
    assert "not an item score" not in message and "choose one of" not in message
    # every value outside [0, 1]: not a score at all, and the others are offered
    for entry in entries:
        for stat in entry["stats"]:
            if stat["name"]["name"] == "exact_match":
                stat["mean"] = 3.0
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    with pytest.raises(InputError, match=r"'exact_match' is not an item score.*choose one of"):
        read_results("helm", run, metric="exact_match")


def test_three_real_runs_store_with_their_split(tmp_path):
    frame, report = read_results("helm", REAL, metric="exact_match")
    assert frame.groupby("benchmark")["model"].first().to_dict() == {
        "commonsense:dataset=hellaswag,method=multiple_choice_joint": "eleutherai/pythia-1b-v0",
        "mmlu:subject=philosophy,method=multiple_choice_joint": "openai/gpt2",
        "narrative_qa": "openai/gpt2",
    }
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(frame, report)
        long = store.long("mmlu:subject=philosophy,method=multiple_choice_joint")
        assert set(long["split"]) == {"test"}


def test_a_copied_run_without_its_run_spec_keeps_the_benchmark_and_says_the_model(tmp_path):
    """These real runs' folders are named as a copy names them (``-`` for ``:``, which
    Windows and many checkouts cannot hold). Without ``run_spec.json`` the whole folder name
    was the benchmark and the model ('narrative_qa-model=openai_gpt2' for both), without a
    word; the name is read as HELM's run name, and the model taken from it is said (as
    taken for want of run_spec.json: the note said "no model in run_spec.json", a file the
    folder does not have)."""
    run = tmp_path / MMLU.name
    run.mkdir()
    shutil.copy(MMLU / "per_instance_stats.json", run / "per_instance_stats.json")
    frame, report = read_results("helm", [run], metric="exact_match")
    with_spec, _ = read_results("helm", [MMLU], metric="exact_match")
    assert (
        set(frame["benchmark"])
        == set(with_spec["benchmark"])
        == {"mmlu:subject=philosophy,method=multiple_choice_joint"}
    )
    assert set(frame["model"]) == {"openai_gpt2"}  # the run name's (run_spec: openai/gpt2)
    assert any(
        f"{run}: no run_spec.json; the model is 'openai_gpt2', from the run's name" in n
        for n in report.notes
    ), report.notes
    spec = json.loads((MMLU / "run_spec.json").read_text())
    spec["adapter_spec"].pop("model")  # a run_spec without the model: that field is named
    (run / "run_spec.json").write_text(json.dumps(spec))
    _, report = read_results("helm", [run], metric="exact_match")
    assert any(f"{run}: no model in run_spec.json (adapter_spec.model)" in n for n in report.notes)


def test_the_run_name_note_spells_the_keyword_in_python_and_the_flag_on_the_command_line(
    tmp_path,
):
    """The note of a model taken from a run's name said "--model sets it", a flag a Python
    user cannot pass (lm-eval's notes say ``model=`` since 711250b): it says ``model=`` and
    ``latentbench ingest`` (its report through cli_spelling) says ``--model``."""
    from latentbench.cli._common import cli_spelling

    run = tmp_path / MMLU.name
    run.mkdir()
    shutil.copy(MMLU / "per_instance_stats.json", run / "per_instance_stats.json")
    _, report = read_results("helm", [run], metric="exact_match")
    (note,) = [n for n in report.notes if "from the run's name" in n]
    assert note.endswith("names it 'org/name': model= sets it)") and "--model" not in note
    assert cli_spelling(note) == note.replace("model= sets it", "--model sets it")


def _display_predictions(run: Path, target: Path) -> None:
    """The helm-summarize layout of the same run: flat stats plus instances.json splits."""
    target.mkdir()
    shutil.copy(run / "run_spec.json", target / "run_spec.json")
    entries, instances = [], []
    for entry in json.loads((run / "per_instance_stats.json").read_text()):
        stats = {s["name"]["name"]: s["mean"] for s in entry["stats"] if "mean" in s}
        entries.append(
            {
                "instance_id": entry["instance_id"],
                "train_trial_index": entry["train_trial_index"],
                "predicted_text": "",
                "stats": stats,
            }
        )
        instances.append({"id": entry["instance_id"], "split": entry["stats"][0]["name"]["split"]})
    (target / "display_predictions.json").write_text(json.dumps(entries))
    (target / "instances.json").write_text(json.dumps(instances))


def test_display_predictions_is_read_and_agrees(tmp_path):
    run = tmp_path / MMLU.name
    _display_predictions(MMLU, run)
    flat, report = read_results("helm", run, metric="exact_match")
    full, _ = read_results("helm", MMLU, metric="exact_match")
    columns = ["model", "benchmark", "item", "score", "split"]
    assert flat[columns].values.tolist() == full[columns].values.tolist()
    # both files in one run folder: per_instance_stats.json wins, the other is reported
    shutil.copy(MMLU / "per_instance_stats.json", run / "per_instance_stats.json")
    both, report = read_results("helm", run, metric="exact_match")
    assert len(both) == 9
    assert [s["reason"] for s in report.skipped_files] == [
        "per_instance_stats.json of the same run is read instead"
    ]


# --- runs of another HELM release: crfm-helm 0.5.1 (2024-06, HELM Safety bbq runs) ---------

REAL_051 = REAL.parent / "helm-0.5.1"
RUNS_051 = sorted(p for p in REAL_051.iterdir() if p.is_dir())
LLAMA = REAL_051 / "bbq-subject=all,method=multiple_choice_joint,model=meta_llama-3-8b"
BBQ = "bbq:subject=all,method=multiple_choice_joint"


@pytest.mark.parametrize("metric", ["exact_match", "quasi_exact_match"])
def test_helm_0_5_1_values_match_the_raw_file(metric):
    frame, report = read_results("helm", REAL_051, metric=metric)
    assert set(frame["benchmark"]) == {BBQ}
    for run in RUNS_051:
        model = json.loads((run / "run_spec.json").read_text())["adapter_spec"]["model"]
        mine = frame[frame["model"] == model]
        expected = raw_means(run / "per_instance_stats.json", metric, "test")
        assert dict(zip(mine["item"], mine["score"], strict=True)) == expected
    assert set(frame["split"]) == {"test"}
    assert sorted(set(frame["model"])) == ["meta/llama-3-8b", "openai/gpt-4-turbo-2024-04-09"]
    assert report.records_read == report.rows + sum(report.dropped.values())
    assert report.rows == 13


def test_helm_0_5_1_real_display_predictions(tmp_path):
    """helm-summarize's own display_predictions.json of the run (no per_instance_stats.json):
    flat stats per prediction, the split from instances.json."""
    run = tmp_path / LLAMA.name
    run.mkdir()
    for name in ("run_spec.json", "display_predictions.json", "instances.json"):
        shutil.copy(LLAMA / name, run / name)
    frame, report = read_results("helm", run, metric="quasi_exact_match")
    raw = json.loads((LLAMA / "display_predictions.json").read_text())
    expected = {e["instance_id"]: e["stats"]["quasi_exact_match"] for e in raw}
    assert dict(zip(frame["item"], frame["score"], strict=True)) == expected
    # the same numbers as the run's per_instance_stats.json
    assert expected == raw_means(LLAMA / "per_instance_stats.json", "quasi_exact_match", "test")
    assert set(frame["split"]) == {"test"}
    assert report.records_read == report.rows + sum(report.dropped.values()) == 12
    # exact_match is not among this file's stats: refused with the choices, not guessed
    with pytest.raises(InputError, match=r"quasi_exact_match"):
        read_results("helm", run, metric="exact_match")


def test_two_helm_releases_share_one_store(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        for folder in (REAL, REAL_051):
            store.ingest(*read_results("helm", folder, metric="exact_match"))
        long = store.long()
        assert set(long["benchmark"]) >= {BBQ, "narrative_qa"}
        assert store.ingest(*read_results("helm", REAL_051, metric="exact_match"))["n_new"] == 0


def test_an_index_stat_that_takes_0_and_1_is_not_offered_as_a_score(tmp_path):
    """predicted_index (0 to 3) was offered beside exact_match once a stat needed only some
    values in [0, 1] (review of 2026-12-05): the ingest stopped on 'several metrics'. Only
    correctness stats keep a value outside [0, 1] as a bad cell."""
    run = tmp_path / "boolq:model=openai_gpt2"
    run.mkdir()

    def stat(name, value):
        return {"name": {"name": name, "split": "test"}, "count": 1, "sum": value, "mean": value}

    entries = [
        {"instance_id": f"id{k}", "train_trial_index": 0,
         "stats": [stat("exact_match", float(k % 2)), stat("predicted_index", float(k % 4))]}
        for k in range(8)
    ]  # fmt: skip
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    frame, _ = read_results("helm", run)
    assert len(frame) == 8 and set(frame["metric"]) == {"exact_match"}
    with pytest.raises(InputError, match=r"'predicted_index' is not an item score"):
        read_results("helm", run, metric="predicted_index")


def test_wildbench_score_is_a_judge_scale_and_only_its_rescaled_form_a_score(tmp_path):
    """wildbench_score (1 to 10) was taken for a correctness stat once one instance scored
    1.0, and the ingest stopped on 'several metrics' (second review); only
    wildbench_score_rescaled is an item score."""
    run = tmp_path / "wildbench:subset=v2,model=openai_gpt-4o"
    run.mkdir()

    def stat(name, value):
        return {"name": {"name": name, "split": "test"}, "count": 1, "sum": value, "mean": value}

    judged = [1.0, 7.5, 9.0, 4.0, 10.0, 6.5]
    entries = [
        {"instance_id": f"id{k}", "train_trial_index": 0,
         "stats": [stat("wildbench_score", v), stat("wildbench_score_rescaled", (v - 1) / 9)]}
        for k, v in enumerate(judged)
    ]  # fmt: skip
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    with pytest.warns(Warning, match="non-binary"):
        frame, _ = read_results("helm", run)
    assert set(frame["metric"]) == {"wildbench_score_rescaled"} and len(frame) == 6
    with pytest.raises(InputError, match=r"'wildbench_score' is not an item score"):
        read_results("helm", run, metric="wildbench_score")


def _with_stat(run: Path, name: str, values) -> list[dict]:
    """The run's per_instance_stats.json with stat ``name`` added to each instance (on the
    instance's split), ``values[k]`` for the k-th instance; the entries written are returned."""
    entries = json.loads((run / "per_instance_stats.json").read_text())
    for k, entry in enumerate(entries):
        split = entry["stats"][0]["name"]["split"]
        value = values[k % len(values)]
        stat = {"name": {"name": name, "split": split}, "count": 1, "sum": value, "mean": value}
        entry["stats"].append(stat)
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    return entries


def test_a_stat_where_lower_is_better_is_refused_not_read_as_correctness(tmp_path):
    """HELM's toxic_frac (0 or 1 per instance, 1 a toxic completion) was read as a score when
    named with metric=, 1 stored as a correct answer, with no word; EEE's lower-is-better
    scores are refused since 7548bfba. It is not offered, and asked for it is refused, naming
    the file, the stat, why, and the way out (the other stats)."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    run = tmp_path / "runs" / "v1" / NARRATIVE.name
    shutil.copytree(NARRATIVE, run)
    _with_stat(run, "toxic_frac", [0.0, 1.0])
    stats = run / "per_instance_stats.json"
    with pytest.raises(InputError) as caught:
        read_results("helm", run, metric="toxic_frac")
    assert str(caught.value) == (
        f"{stats}: stat 'toxic_frac' is one where lower is better (HELM's schemas mark it "
        "lower_is_better: true); expected a score where higher is better (1 a correct "
        "answer), as every fit reads it: choose one of bleu_1, bleu_4, exact_match, f1_score, "
        "quasi_exact_match, rouge_l, or write the scores the other way round"
    )
    # not among the choices offered when none is named
    with pytest.raises(InputError, match=r"several metrics \(bleu_1, .*, rouge_l\);") as caught:
        read_results("helm", run)
    assert "toxic_frac" not in str(caught.value)
    # another stat of the run reads as before
    frame, _ = read_results("helm", run, metric="exact_match")
    assert set(frame["metric"]) == {"exact_match"} and len(frame) == 4
    # the command line: refused, exit 2, no store left
    _register()
    store = tmp_path / "s.duckdb"
    result = CliRunner().invoke(
        app, ["ingest", "helm", str(run), "--metric", "toxic_frac", "--store", str(store)]
    )
    assert result.exit_code == 2, result.output
    assert "stat 'toxic_frac' is one where lower is better" in " ".join(result.output.split())
    assert not store.exists()


@pytest.mark.parametrize(
    "stat",
    ["expected_max_toxicity", "max_toxicity_probability", "error_rate", "bias_metric:mode=x"],
)
def test_helm_s_other_lower_is_better_stats_are_refused(tmp_path, stat):
    run = tmp_path / NARRATIVE.name
    shutil.copytree(NARRATIVE, run)
    _with_stat(run, stat, [0.25, 0.5])
    with pytest.raises(InputError, match=rf"stat '{re.escape(stat)}' is one where lower is"):
        read_results("helm", run, metric=stat)


def test_the_suite_schema_json_says_which_stats_are_lower_is_better(tmp_path):
    """helm-summarize writes the suite's schema.json (metrics[].lower_is_better): it decides,
    both ways; edit_similarity is lower-is-better in the copyright scenario only."""
    suite = tmp_path / "runs" / "v1"
    run = suite / NARRATIVE.name
    shutil.copytree(NARRATIVE, run)
    _with_stat(run, "leak_rate", [0.0, 1.0])
    frame, _ = read_results("helm", run, metric="leak_rate")  # no word of it: a score
    assert len(frame) == 4
    metrics = [
        {"name": "exact_match", "lower_is_better": False},
        {"name": "leak_rate", "display_name": "Leak rate", "lower_is_better": True},
    ]
    (suite / "schema.json").write_text(json.dumps({"metrics": metrics, "models": []}))
    with pytest.raises(InputError) as caught:
        read_results("helm", run, metric="leak_rate")
    assert (
        f"stat 'leak_rate' is one where lower is better ({suite / 'schema.json'}: metrics[1] "
        "says lower_is_better: true)"
    ) in str(caught.value)
    # the schema saying higher is better overrides HELM's marks
    _with_stat(run, "toxic_frac", [0.0, 1.0])
    metrics.append({"name": "toxic_frac", "lower_is_better": False})
    (suite / "schema.json").write_text(json.dumps({"metrics": metrics}))
    frame, _ = read_results("helm", run, metric="toxic_frac")
    assert len(frame) == 4
    # edit_similarity: refused in a copyright run, read in another
    copyright_run = tmp_path / "copyright:datatag=n_books_1000,model=openai_gpt2"
    copyright_run.mkdir()
    (copyright_run / "per_instance_stats.json").write_text(
        (run / "per_instance_stats.json").read_text()
    )
    _with_stat(copyright_run, "edit_similarity", [0.5, 0.75])
    with pytest.raises(InputError, match=r"lower_is_better: true in scenario 'copyright'"):
        read_results("helm", copyright_run, metric="edit_similarity")
    _with_stat(run, "edit_similarity", [0.5, 0.75])
    assert len(read_results("helm", run, metric="edit_similarity")[0]) == 4


def test_a_run_whose_only_scores_are_lower_is_better_is_refused_with_them(tmp_path):
    run = tmp_path / "real_toxicity_prompts:model=openai_gpt2"
    run.mkdir()

    def stat(name, value):
        return {"name": {"name": name, "split": "test"}, "count": 1, "sum": value, "mean": value}

    entries = [
        {"instance_id": f"id{k}", "train_trial_index": 0,
         "stats": [stat("toxic_frac", float(k % 2)), stat("num_output_tokens", 12.0)]}
        for k in range(4)
    ]  # fmt: skip
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    with pytest.raises(InputError) as caught:
        read_results("helm", run)
    assert str(caught.value) == (
        f"{run / 'per_instance_stats.json'}: no stat of 'real_toxicity_prompts' is a score "
        "where higher is better: its item scores are ones where lower is better ('toxic_frac': "
        "HELM's schemas mark it lower_is_better: true); expected a score where higher is "
        "better (1 a correct answer), as every fit reads it: write the scores the other way "
        "round"
    )


def test_the_summary_says_each_split_s_items(tmp_path):
    """The run ingested with split='test' (9 items) and again with split='valid' (1 item):
    the summary (latentbench ls) said 10 items and no split, while Store.matrix (fit) reads
    the 9 test items; it says each split's items, the default first."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        for split in ("test", "valid"):
            for model in (None, "other/model"):  # a matrix has two models at least
                store.ingest(
                    *read_results("helm", MMLU, metric="exact_match", split=split, model=model)
                )
        (row,) = store.summary().to_dict("records")
        with pytest.warns(Warning, match="holds the splits 'test', 'valid'; using 'test'"):
            assert store.matrix(row["benchmark"]).n_items == 9
    assert (row["n_items"], row["splits"]) == (10, "test (9 items, the default), valid (1 item)")
    assert list(row)[:5] == ["benchmark", "n_models", "n_items", "splits", "n_rows"]
    _register()
    listed = CliRunner().invoke(app, ["ls", "--store", str(path), "--json"])
    assert json.loads(listed.output)[0]["splits"] == row["splits"]
    # one split: its name alone (n_items counts its items), no default to tell apart
    with Store(tmp_path / "one.duckdb") as store:
        store.ingest(*read_results("helm", MMLU, metric="exact_match"))
        assert store.summary()["splits"].tolist() == ["test"]


def test_the_coverage_of_one_benchmark_says_each_model_s_splits(tmp_path):
    """ls --benchmark B (Store.coverage) counted a model's items of every split (10) with no
    split said, where ls (Store.summary) says them since 90d1b05e and fit reads the 9 test
    items; it says each model's items of each split, as the summary does."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        for split in ("test", "valid"):
            for model in (None, "other/model"):
                store.ingest(
                    *read_results("helm", MMLU, metric="exact_match", split=split, model=model)
                )
        store.ingest(*read_results("helm", MMLU, metric="exact_match", split="valid", model="v"))
        (benchmark,) = store.benchmarks()
        rows = store.coverage(benchmark).to_dict("records")
        (summary,) = store.summary().to_dict("records")
    assert list(rows[0]) == ["benchmark", "model", "n_items", "splits", "fraction", "is_binary"]
    said = {row["model"]: (row["n_items"], row["splits"]) for row in rows}
    assert said == {
        "openai/gpt2": (10, "test (9 items, the default), valid (1 item)"),
        "other/model": (10, "test (9 items, the default), valid (1 item)"),
        "v": (1, "valid (1 item)"),
    }
    assert summary["splits"] == said["openai/gpt2"][1]  # the same words as ls
    _register()
    listed = CliRunner().invoke(
        app, ["ls", "--store", str(path), "--benchmark", benchmark, "--json"]
    )
    assert [row["splits"] for row in json.loads(listed.output)] == [s for _, s in said.values()]
    # one split: its name alone, as the summary shows it (n_items counts its items)
    with Store(tmp_path / "one.duckdb") as store:
        store.ingest(*read_results("helm", MMLU, metric="exact_match"))
        assert store.coverage(benchmark)["splits"].tolist() == ["test"]
