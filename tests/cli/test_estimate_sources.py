"""``estimate`` / ``compare`` read a new model's results as a tool wrote them (``--source``):
the same answers give the same estimate as their table; a folder or a tool's file given as a
table, several benchmarks, a misplaced ``--metric`` are refused naming what to do."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import DataWarning, InputError
from latentbench.io.formats import read_results
from latentbench.select import estimate, lm_eval_samples, read_responses, tiny

_register()
runner = CliRunner()

DATE = "2024-05-01T12-30-45.123456"
N_ITEMS = 120
REAL = Path(__file__).parents[1] / "data" / "formats" / "real" / "lm-eval"


def _samples(folder: Path, model: str, task: str, scores: np.ndarray) -> Path:
    """lm-eval's ``--log_samples`` output of one model on one task (doc ids 0..n-1)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(dict(doc_id=i, doc={}, target=0, filter="none", metrics=["acc"], acc=float(s)))
        for i, s in enumerate(scores)
    ]
    (folder / f"samples_{task}_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
    results = {
        "results": {task: {}},
        "model_name": model,
        "lm_eval_version": "0.4.9",
        "config": {"model_args": f"pretrained={model}"},
    }
    (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    return folder


@pytest.fixture
def setup(tmp_path):
    """A 25-model calibration of ``taskA`` and two new models' lm-eval folders."""
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=27), rng.normal(size=N_ITEMS)
    Y = (rng.random((27, N_ITEMS)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    cal = pd.DataFrame(
        [(f"m{i}", "taskA", str(j), Y[i, j]) for i in range(25) for j in range(N_ITEMS)],
        columns=["model", "benchmark", "item", "score"],
    )
    cal.to_parquet(tmp_path / "cal.parquet")
    new = _samples(tmp_path / "out" / "org__new", "org/new", "taskA", Y[25])
    other = _samples(tmp_path / "out2" / "org__other", "org/other", "taskA", Y[26])
    return tmp_path, new, other


def _as_table(folder: Path, out: Path) -> Path:
    """The same answers as a long table (what ``ingest`` + ``export`` would give)."""
    frame, _ = read_results("lm-eval", folder)
    frame[["model", "benchmark", "item", "score", "metric"]].to_csv(out, index=False)
    return out


def _json(outcome) -> dict:
    assert outcome.exit_code == 0, outcome.output
    return json.loads(outcome.stdout)


def test_a_tool_folder_gives_the_estimate_of_its_table(setup):
    root, new, _ = setup
    cal = str(root / "cal.parquet")
    table = _as_table(new, root / "new.csv")
    args = ["--budget", "30", "--json"]
    by_tool = _json(runner.invoke(app, ["estimate", cal, str(new), "--source", "lm-eval", *args]))
    by_table = _json(runner.invoke(app, ["estimate", cal, str(table), "--budget", "30", "--json"]))
    assert by_tool["model"] == "org/new" == by_table["model"]
    for key in ("score", "lower", "upper", "n_evaluated", "rank", "theta"):
        assert by_tool[key] == by_table[key], key
    assert by_tool["n_evaluated"] == 30
    # the Python twin: read_responses(path, source=...) then estimate
    answers = read_responses(new, source="lm-eval")
    assert list(answers) == ["org/new"]
    result = estimate(root / "cal.parquet", answers["org/new"].rename("org/new"), budget=30)
    assert (result.score, result.lower, result.upper) == (
        by_tool["score"],
        by_tool["lower"],
        by_tool["upper"],
    )


def test_a_fixed_design_is_scored_from_the_tools_results(setup):
    root, new, _ = setup
    cal, items = str(root / "cal.parquet"), root / "items.csv"
    outcome = runner.invoke(app, ["tiny", cal, "--k", "20", "--out", str(items)])
    assert outcome.exit_code == 0, outcome.output
    args = ["estimate", cal, "--items", str(items), "--json"]
    by_tool = _json(runner.invoke(app, [*args[:2], str(new), *args[2:], "--source", "lm-eval"]))
    table = str(_as_table(new, root / "new.csv"))
    by_table = _json(runner.invoke(app, [*args[:2], table, *args[2:]]))
    assert by_tool["n_evaluated"] == 20 and by_tool["stopped"] == "items"
    assert (by_tool["score"], by_tool["lower"], by_tool["upper"]) == (
        by_table["score"],
        by_table["lower"],
        by_table["upper"],
    )


def test_compare_reads_two_tool_folders(setup):
    root, new, other = setup
    cal = str(root / "cal.parquet")
    args = ["compare", cal, str(new), str(other), "--budget", "60", "--json"]
    by_tool = _json(runner.invoke(app, [*args, "--source", "lm-eval"]))
    tables = [str(_as_table(f, root / f"{f.name}.csv")) for f in (new, other)]
    by_table = _json(runner.invoke(app, ["compare", cal, *tables, "--budget", "60", "--json"]))
    assert by_tool == by_table


def test_compare_scores_a_fixed_design_from_two_tool_folders(setup):
    """Two models run by lm-eval on a tiny design's items only (2026-12-06): ``compare
    --source lm-eval --items`` gives what the same answers as tables give."""
    root, new, other = setup
    cal, items = str(root / "cal.parquet"), root / "items.csv"
    assert runner.invoke(app, ["tiny", cal, "--k", "25", "--out", str(items)]).exit_code == 0
    keep = set(pd.read_csv(items, dtype={"item": str})["item"])
    folders = []
    for folder, name in ((new, "org/new"), (other, "org/other")):
        frame, _ = read_results("lm-eval", folder)
        scores = frame.set_index("item")["score"]
        answered = np.array([scores[str(j)] for j in range(N_ITEMS) if str(j) in keep])
        lines = [json.dumps(dict(doc_id=j, doc={}, target=0, filter="none", metrics=["acc"],
                                 acc=float(s)))
                 for j, s in zip(sorted(keep, key=int), answered, strict=True)]  # fmt: skip
        target = _samples(root / "tiny" / folder.name, name, "taskA", answered)
        next(target.glob("samples_*.jsonl")).write_text("\n".join(lines) + "\n")
        folders.append(target)
    args = ["--items", str(items), "--json"]
    by_tool = _json(runner.invoke(app, ["compare", cal, *map(str, folders), *args,
                                        "--source", "lm-eval"]))  # fmt: skip
    tables = [str(_as_table(f, root / f"tiny_{f.name}.csv")) for f in folders]
    by_table = _json(runner.invoke(app, ["compare", cal, *tables, *args]))
    assert by_tool == by_table
    assert by_tool["n_evaluated"] == 25 and by_tool["n_items"] == N_ITEMS
    assert by_tool["options"]["design"] == "fixed" and by_tool["warnings"] == []


def test_a_folder_or_a_tool_file_given_as_a_table_names_source(setup):
    root, new, _ = setup
    cal = str(root / "cal.parquet")
    samples = next(new.glob("samples_*.jsonl"))
    for path in (new, samples):
        for command in (["estimate", cal, str(path)], ["compare", cal, str(path), str(path)]):
            outcome = runner.invoke(app, command)
            assert outcome.exit_code == 2, outcome.output
            assert f"RESPONSES {path}" in outcome.output
            assert "give --source TOOL (lm-eval, lighteval" in outcome.output
            assert "Traceback" not in outcome.output


def test_results_of_several_benchmarks_are_refused_naming_them():
    folder = REAL / "v0.4.13.dev0" / "Qwen__Qwen3-8B"  # two tasks, doc ids 0-9 each
    with (
        pytest.raises(InputError, match=r"lm-eval results of 2 benchmarks \('negotiationtom_b"),
        pytest.warns(DataWarning, match="missing by design"),  # run with --limit
    ):
        read_responses(folder, source="lm-eval")
    one = next(folder.glob("samples_negotiationtom_belief_*.jsonl"))
    with pytest.warns(DataWarning, match="missing by design"):
        answers = read_responses(one, source="lm-eval")
    assert list(answers) == ["Qwen/Qwen3-8B"] and len(answers["Qwen/Qwen3-8B"]) == 10


def test_results_of_several_benchmarks_name_one_spelling_of_group(setup):
    # the refusal said '(group=NAME; --group NAME)' in Python and on the command line, and
    # '--group NAME' for how a Python user's calibration was ingested
    tmp_path, new, _ = setup
    _samples(new, "org/new", "taskB", np.ones(3))
    with pytest.raises(InputError) as caught:
        read_responses(new, source="lm-eval")
    assert str(caught.value).endswith(
        "for a calibration ingested with group=NAME (item ids TASK/ID), read them with the "
        "same group=NAME"
    )
    result = runner.invoke(
        app, ["estimate", str(tmp_path / "cal.parquet"), str(new), "--source", "lm-eval"]
    )
    assert result.exit_code == 2
    assert " ".join(result.output.split()).endswith(
        "for a calibration ingested with --group NAME (item ids TASK/ID), read them with the "
        "same --group NAME"
    )


def test_metric_and_source_options_are_checked(setup, tmp_path):
    root, new, _ = setup
    cal = str(root / "cal.parquet")
    table = str(_as_table(new, root / "new.csv"))
    outcome = runner.invoke(app, ["estimate", cal, table, "--metric", "acc"])
    assert outcome.exit_code == 2 and "or with --source TOOL" in outcome.output
    outcome = runner.invoke(app, ["estimate", cal, str(new), "--source", "lm-evall"])
    assert outcome.exit_code == 2
    assert "--source 'lm-evall': expected table or one of lm-eval, lighteval" in outcome.output
    assert ", table," not in outcome.output
    args = ["--source", "lm-eval", "--metric", "acc", "--json"]
    outcome = runner.invoke(app, ["estimate", cal, str(new), *args])
    assert _json(outcome)["n_evaluated"] == 100
    outcome = runner.invoke(app, ["compare", cal, table, table, "--metric", "acc"])
    assert outcome.exit_code == 2 and "or with --source TOOL" in outcome.output  # as estimate
    with pytest.raises(InputError, match="metric='acc': applies to a tool's results"):
        read_responses(table, metric="acc")
    with pytest.raises(InputError, match="expected a path, not a DataFrame"):
        read_responses(pd.read_csv(table), source="lm-eval")
    with pytest.raises(InputError, match="no such file or folder"):
        read_responses(tmp_path / "nowhere", source="lm-eval")


def test_commands_reading_a_table_name_ingest_for_a_tools_results(setup):
    _, new, _ = setup
    samples = next(new.glob("samples_*.jsonl"))
    results = next(new.glob("results_*.json"))
    commands = (
        ["fit", str(new)],
        ["fit", str(samples)],
        ["select", "replay", str(samples)],
        ["report", str(samples)],
        ["report", str(new)],  # said 'lacks abilities.csv, items.csv, fit.json'
        ["report", str(results)],  # said 'is not a selection.json (no 'arms')'
    )
    for command in commands:
        outcome = runner.invoke(app, command)
        assert outcome.exit_code == 2, outcome.output
        assert "a tool's results? read them into a store with `latentbench ingest TOOL" in (
            outcome.output
        ), command


def _mmlu_like(root: Path, models: list[str], Y: np.ndarray, tasks: int = 3) -> Path:
    """lm-eval folders of ``tasks`` tasks ``mmlu_t0 ...`` whose doc ids restart in each (the
    items of ``Y``'s columns split between them)."""
    per = Y.shape[1] // tasks
    for m, name in enumerate(models):
        folder = root / name.replace("/", "__")
        folder.mkdir(parents=True)
        for t in range(tasks):
            scores = Y[m, t * per : (t + 1) * per]
            one = _samples(root / "tmp" / name / f"t{t}", name, f"mmlu_t{t}", scores)
            sample = next(one.glob("samples_*.jsonl"))
            sample.rename(folder / sample.name)
        results = {
            "results": {f"mmlu_t{t}": {} for t in range(tasks)},
            "model_name": name,
            "lm_eval_version": "0.4.9",
            "config": {"model_args": f"pretrained={name}"},
        }
        (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    return root


def test_tasks_read_as_one_benchmark_calibrate_and_estimate(tmp_path):
    rng = np.random.default_rng(5)
    theta, b = rng.normal(size=21), rng.normal(size=90)
    Y = (rng.random((21, 90)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    names = [f"org/m{i}" for i in range(20)]
    history = _mmlu_like(tmp_path / "hist", names, Y[:20])
    new = _mmlu_like(tmp_path / "new", ["org/new"], Y[20:]) / "org__new"
    store = str(tmp_path / "s.duckdb")
    outcome = runner.invoke(  # without --group: three benchmarks whose doc ids restart
        app, ["ingest", "lm-eval", str(history), "--store", str(tmp_path / "t.duckdb")]
    )
    assert outcome.exit_code == 0, outcome.output
    outcome = runner.invoke(
        app, ["ingest", "lm-eval", str(history), "--store", store, "--group", "mmlu"]
    )
    assert outcome.exit_code == 0, outcome.output
    frame, _ = read_results("lm-eval", history, group="mmlu")
    assert set(frame["benchmark"]) == {"mmlu"} and frame["item"].nunique() == 90
    assert {"mmlu_t0/0", "mmlu_t2/29"} <= set(frame["item"])
    base = ["estimate", "--store", store, "--benchmark", "mmlu", str(new), "--source", "lm-eval"]
    outcome = runner.invoke(app, base)  # the new model's three tasks, not grouped: refused
    assert outcome.exit_code == 2 and "results of 3 benchmarks" in outcome.output
    assert "--group NAME" in outcome.output
    # a calibration of one task is not told to read the new results "as it was ingested"
    # with a group (it was not: its ids are doc ids, and TASK/ID would match none of them)
    said = " ".join(outcome.output.split())
    assert "as the calibration was ingested" not in said
    assert "for a calibration of one of them (item ids its doc ids), give that" in said
    by_tool = _json(runner.invoke(app, [*base, "--group", "mmlu", "--budget", "40", "--json"]))
    assert by_tool["n_items"] == 90 and by_tool["n_evaluated"] == 40
    table = tmp_path / "new.csv"
    grouped, _ = read_results("lm-eval", new, group="mmlu")
    grouped[["model", "benchmark", "item", "score"]].to_csv(table, index=False)
    args = ["estimate", "--store", store, "--benchmark", "mmlu", str(table), "--budget", "40"]
    by_table = _json(runner.invoke(app, [*args, "--json"]))
    for key in ("score", "lower", "upper", "rank", "theta"):
        assert by_tool[key] == by_table[key], key


def test_a_group_of_tasks_with_different_metrics_or_with_benchmark_is_refused(tmp_path):
    folder = REAL / "v0.4.13.dev0" / "Qwen__Qwen3-8B"  # acc on one task, exact_match on the other
    with pytest.raises(InputError, match=r"group='n': its 2 tasks were read with different metr"):
        read_results("lm-eval", folder, group="n")
    with pytest.raises(InputError, match="benchmark='x' and group='n'"):
        read_results("lm-eval", folder, group="n", benchmark="x")
    with pytest.warns(DataWarning):  # one task: still TASK/ID, as its group's other tasks
        frame, _ = read_results("lm-eval", next(folder.glob("*belief*.jsonl")), group="n")
    assert set(frame["item"]) == {f"negotiationtom_belief/{i}" for i in range(10)}
    outcome = runner.invoke(app, ["estimate", "c.parquet", "r.csv", "--group", "g"])
    assert outcome.exit_code == 2 and "--group reads a tool's tasks" in outcome.output


def _calibration(tmp_path: Path, items: list[str], benchmark: str | None) -> Path:
    rng = np.random.default_rng(9)
    theta, b = rng.normal(size=20), rng.normal(size=len(items))
    Y = (rng.random((20, len(items))) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(
        [(f"m{i}", item, Y[i, j]) for i in range(20) for j, item in enumerate(items)],
        columns=["model", "item", "score"],
    )
    if benchmark is not None:
        frame["benchmark"] = benchmark
    path = tmp_path / f"cal-{benchmark}.parquet"
    frame.to_parquet(path)
    return path


def test_tiny_writes_lm_eval_samples_sorted_per_task(tmp_path):
    cal = _calibration(tmp_path, [str(j) for j in range(60)], "arc_easy")
    items, samples = tmp_path / "items.csv", tmp_path / "samples.json"
    args = ["tiny", str(cal), "--k", "15", "--out", str(items), "--lm-eval-samples", str(samples)]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    design = pd.read_csv(items, dtype={"item": str})
    written = json.loads(samples.read_text())
    # lm-eval logs the k-th listed doc as the k-th id: the ids must be sorted
    assert written == {"arc_easy": sorted(int(i) for i in design["item"])}
    assert "--tasks arc_easy --samples" in outcome.output
    assert f"--source lm-eval --items {items}" in outcome.output
    assert lm_eval_samples(items, task="arc_easy") == written
    # a group's TASK/ID items: one list per task, tasks sorted (as the bridge's plans)
    grouped = _calibration(tmp_path, [f"mmlu_{t}/{j}" for t in "abc" for j in range(20)], "mmlu")
    items2, samples2 = tmp_path / "items2.csv", tmp_path / "samples2.json"
    args = ["tiny", str(grouped), "--k", "12", "--out", str(items2), "--lm-eval-samples",
            str(samples2)]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert f"--source lm-eval --group mmlu --items {items2}" in " ".join(outcome.output.split())
    design = pd.read_csv(items2, dtype={"item": str})
    written = json.loads(samples2.read_text())
    tasks = sorted({item.split("/")[0] for item in design["item"]})
    assert list(written) == tasks and len(tasks) > 1
    for name in tasks:
        ids = [int(i.split("/")[1]) for i in design["item"] if i.startswith(name + "/")]
        assert written[name] == sorted(ids)


def test_tiny_lm_eval_samples_refusals(tmp_path):
    unnamed = _calibration(tmp_path, [str(j) for j in range(30)], None)
    out, samples = str(tmp_path / "items.csv"), tmp_path / "s.json"
    base = ["tiny", str(unnamed), "--k", "5", "--out", out]
    outcome = runner.invoke(app, [*base, "--lm-eval-samples", str(samples)])
    assert outcome.exit_code == 2 and "the calibration names no benchmark; give --task" in (
        outcome.output
    )
    outcome = runner.invoke(app, [*base, "--force", "--task", "arc"])
    assert outcome.exit_code == 2 and "--task names the lm-eval task of --lm-eval-samples" in (
        outcome.output
    )
    outcome = runner.invoke(app, [*base, "--force", "--lm-eval-samples", str(tmp_path / "s.txt")])
    assert outcome.exit_code == 2 and "expected a file name ending in .json" in outcome.output
    samples.write_text("{}")
    outcome = runner.invoke(app, [*base, "--lm-eval-samples", str(samples)])
    assert outcome.exit_code == 2 and "exists; pass --force" in outcome.output
    outcome = runner.invoke(
        app, [*base, "--force", "--lm-eval-samples", str(samples), "--task", "arc"]
    )
    assert outcome.exit_code == 0, outcome.output
    assert list(json.loads(samples.read_text())) == ["arc"]
    padded = pd.DataFrame({"item": ["007", "12"], "order": [1, 2], "probability": [0.5, 0.5]})
    with pytest.raises(InputError, match=r"'007'.*not written as lm-eval logs it \('7'\)"):
        lm_eval_samples(padded, task="arc")
    padded["item"] = ["arc/7", "arc/012"]
    with pytest.raises(InputError, match=r"'arc/012'.*not written as lm-eval logs it \('12'\)"):
        lm_eval_samples(padded)
    grouped = _calibration(tmp_path, [f"t{t}/{j}" for t in range(2) for j in range(10)], "g")
    design = tiny(grouped, 4)
    with pytest.raises(InputError, match=r"is not an lm-eval doc id \(a TASK/ID of a group"):
        lm_eval_samples(design, task="t0")
    with pytest.raises(InputError, match=r"item '\d+' names no task"):
        lm_eval_samples(tiny(unnamed, 3))


def test_tiny_prints_the_estimate_command_that_scores_its_design(tmp_path):
    """The printed command is runnable as printed: it names the calibration given to tiny
    and, for a group's TASK/ID items, the --group that reads the logs with those ids."""
    grouped = _calibration(tmp_path, [f"mmlu_{t}/{j}" for t in "ab" for j in range(20)], "mmlu")
    items, samples = tmp_path / "items.csv", tmp_path / "samples.json"
    args = ["tiny", str(grouped), "--k", "8", "--out", str(items), "--lm-eval-samples",
            str(samples)]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert f"latentbench estimate {grouped} OUT --source lm-eval --group mmlu --items {items}" in (
        outcome.output
    )
    plain = _calibration(tmp_path, [str(j) for j in range(40)], "arc_easy")
    outcome = runner.invoke(app, [*args[:1], str(plain), *args[2:], "--force"])
    assert outcome.exit_code == 0, outcome.output
    assert f"latentbench estimate {plain} OUT --source lm-eval --items {items}" in outcome.output
    # the design on standard output: no file name to guess (./items.csv may be another design)
    stdout = ["tiny", str(plain), "--k", "8", "--out", "-", "--force", "--lm-eval-samples",
              str(samples)]  # fmt: skip
    outcome = runner.invoke(app, stdout)
    assert outcome.exit_code == 0, outcome.output
    assert "--source lm-eval --items ITEMS.csv`" in outcome.output


def test_results_that_give_no_answers_say_which_records_were_dropped(tmp_path):
    """--split of no run drops every record: the error says so, not 'the table has no rows'
    (nor only the HELM files skipped for the run's per_instance_stats.json)."""
    import shutil

    helm = REAL.parent / "helm-0.5.1"
    with pytest.raises(InputError, match=r"records dropped from the other files: other split"):
        read_results("helm", helm, metric="exact_match", split="valid")
    runs = tmp_path / "runs"
    shutil.copytree(helm, runs)
    for extra in runs.rglob("display_predictions.json"):
        extra.unlink()
    with pytest.raises(InputError, match=r"gave no answers \(other split \(test; --split test"):
        read_responses(runs, source="helm", metric="exact_match", split="valid")


def test_a_task_run_twice_into_one_folder_is_read_with_duplicates(setup):
    """lm-eval writes a re-run beside the first run (another timestamp): the conflict names
    --duplicates, which estimate and compare take (as ingest does), and read_responses too."""
    root, new, other = setup
    later = "2024-06-01T08-00-00.000000"
    first = next(new.glob("samples_*.jsonl"))
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    lines[0]["acc"] = 1.0 - lines[0]["acc"]
    (new / first.name.replace(DATE, later)).write_text(
        "\n".join(json.dumps(line) for line in lines) + "\n"
    )
    results = new / f"results_{DATE}.json"
    (new / results.name.replace(DATE, later)).write_text(results.read_text())
    cal = str(root / "cal.parquet")
    base = ["estimate", cal, str(new), "--source", "lm-eval", "--budget", "20", "--json"]
    outcome = runner.invoke(app, base)
    assert outcome.exit_code == 2 and "--duplicates latest" in outcome.output
    latest = _json(runner.invoke(app, [*base, "--duplicates", "latest"]))
    answers = read_responses(new, source="lm-eval", duplicates="latest")["org/new"]
    assert answers["0"] == lines[0]["acc"]
    by_python = estimate(cal, answers.rename("org/new"), budget=20)
    assert (latest["score"], latest["lower"]) == (by_python.score, by_python.lower)
    args = ["compare", cal, str(new), str(other), "--source", "lm-eval", "--budget", "20"]
    assert runner.invoke(app, [*args, "--duplicates", "mean"]).exit_code == 0
    outcome = runner.invoke(app, ["estimate", cal, "r.csv", "--duplicates", "latest"])
    assert outcome.exit_code == 2 and "--duplicates reads a tool's results" in outcome.output
    with pytest.raises(InputError, match="duplicates='mean': applies to a tool's results"):
        read_responses(root / "r.csv", duplicates="mean")


def test_a_tools_results_not_read_as_the_calibration_was_say_how_to_read_them(tmp_path):
    """A tool's results carry no 'benchmark' column to rewrite: results read with another
    group name, without the calibration's group, with a group the calibration lacks, or of a
    task the calibration renamed (ingest --benchmark) are refused saying how to read them."""
    rng = np.random.default_rng(2)
    Y = (rng.random((21, 60)) < 0.5).astype(float)
    history = _mmlu_like(tmp_path / "hist", [f"org/m{i}" for i in range(20)], Y[:20], tasks=2)
    new = _mmlu_like(tmp_path / "new", ["org/new"], Y[20:], tasks=2) / "org__new"
    grouped, _ = read_results("lm-eval", history, group="mmlu")
    grouped.to_parquet(tmp_path / "grouped.parquet")
    task0 = next(new.glob("samples_mmlu_t0_*"))
    base = ["estimate", str(tmp_path / "grouped.parquet"), "--source", "lm-eval"]
    outcome = runner.invoke(app, [*base[:2], str(new), *base[2:], "--group", "mmlux"])
    assert outcome.exit_code == 2, outcome.output
    assert "lm-eval results of benchmark 'mmlux'" in outcome.output
    assert "read them with that group name (--group mmlu)" in outcome.output
    assert "write 'mmlu' in that column" not in outcome.output
    outcome = runner.invoke(app, [*base[:2], str(task0), *base[2:]])
    assert outcome.exit_code == 2
    assert (
        "its tasks were ingested as one benchmark; read these results the same way"
        in (outcome.output)
        and "--group mmlu)" in outcome.output
    )
    # a calibration of one task's own ids, the results read as a group
    frame, _ = read_results("lm-eval", [next(f.glob("samples_mmlu_t0_*")) for f in
                                        history.glob("org__m*")])  # fmt: skip
    frame.to_parquet(tmp_path / "t0.parquet")
    answers = read_responses(task0, source="lm-eval", group="mmlu_t0")
    with pytest.raises(InputError, match=r"read as a group's TASK/ID ids \('mmlu_t0/0'\) but"):
        estimate(tmp_path / "t0.parquet", answers["org/new"].rename("org/new"), budget=5)
    # the task renamed at ingest (--benchmark anatomy): ingest and export under that name
    frame.assign(benchmark="anatomy").to_parquet(tmp_path / "anatomy.parquet")
    outcome = runner.invoke(
        app, ["estimate", str(tmp_path / "anatomy.parquet"), str(task0), "--source", "lm-eval"]
    )
    assert outcome.exit_code == 2
    assert "`latentbench ingest lm-eval PATH --store new.duckdb --benchmark anatomy`" in (
        outcome.output
    )
    assert "group=" not in outcome.output and "in that column" not in outcome.output


def test_a_group_metric_that_some_task_lacks_is_said(tmp_path):
    """--metric acc for a group whose other task has no acc: the error says that task lacks
    it (it said to choose a metric with --metric, which had been given)."""
    folder = REAL / "v0.4.13.dev0" / "Qwen__Qwen3-8B"  # acc on one task, exact_match on the other
    with pytest.raises(
        InputError,
        match=r"^group='n': metric='acc' was given, but 1 of its 2 tasks have no metric "
        r"'acc' and were read with another \(negotiationtom_intention: exact_match\)",
    ):
        read_results("lm-eval", folder, group="n", metric="acc")
    store = str(tmp_path / "s.duckdb")
    args = ["ingest", "lm-eval", str(folder), "--store", store, "--group", "n", "--metric", "acc"]
    outcome = runner.invoke(app, args)
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, said
    # the command line's spelling only: flags, no Python keyword
    assert said.startswith("error: --group n: --metric acc was given, but 1 of its 2 tasks "
                           "have no metric 'acc'"), said  # fmt: skip
    assert "(without --group)" in said and "group=" not in said and "metric=" not in said, said


def test_compare_reads_a_tools_split(tmp_path, setup):
    root, new, _ = setup
    cal, table = str(root / "cal.parquet"), str(_as_table(new, root / "new.csv"))
    outcome = runner.invoke(app, ["compare", cal, table, table, "--split", "valid"])
    assert outcome.exit_code == 2 and (
        "--split applies only with --store STORE --benchmark NAME, or with --source TOOL"
    ) in " ".join(outcome.output.split())
    outcome = runner.invoke(app, ["compare", cal, table, table, "--group", "g"])
    assert outcome.exit_code == 2 and "--group and --duplicates read a tool's results" in (
        " ".join(outcome.output.split())
    )
    helm = REAL.parent / "helm-0.5.1"
    args = ["compare", cal, str(helm), str(helm), "--source", "helm", "--metric", "exact_match"]
    outcome = runner.invoke(app, [*args, "--split", "valid"])  # read: no run has that split
    assert outcome.exit_code == 2 and "other split (test; --split test keeps it)" in (
        " ".join(outcome.output.split())
    )


def _two_filters(folder: Path, model: str, scores: np.ndarray) -> Path:
    """lm-eval's samples of ``taskA`` under two filters: ``strict`` scores ``scores``,
    ``loose`` scores every doc 1 (as gsm8k's strict-match and flexible-extract)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(dict(doc_id=i, doc={}, target=0, filter=name, metrics=["acc"], acc=value))
        for i, s in enumerate(scores)
        for name, value in (("strict", float(s)), ("loose", 1.0))
    ]
    (folder / f"samples_taskA_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
    results = {"results": {"taskA": {}}, "model_name": model, "lm_eval_version": "0.4.9",
               "config": {"model_args": f"pretrained={model}"}}  # fmt: skip
    (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    return folder


def test_a_filter_given_as_task_equals_name_reads_as_in_ingest(setup):
    """The reader's advice, ``--filter 'taskA=NAME'``, is taken by ``estimate`` and
    ``compare --source`` as ``ingest`` takes it (it was read as a filter named
    'taskA=strict', 'unknown filter'); ``read_responses`` takes the mapping."""
    root, _, _ = setup
    cal = str(root / "cal.parquet")
    rng = np.random.default_rng(5)
    new = _two_filters(root / "f" / "org__new", "org/new", (rng.random(N_ITEMS) < 0.6) * 1.0)
    other = _two_filters(root / "g" / "org__oth", "org/oth", (rng.random(N_ITEMS) < 0.4) * 1.0)
    base = ["estimate", cal, str(new), "--source", "lm-eval", "--budget", "30", "--json"]
    asked = runner.invoke(app, base)
    assert asked.exit_code == 2 and "--filter 'taskA=NAME'" in asked.output, asked.output
    plain = _json(runner.invoke(app, [*base, "--filter", "strict"]))
    for given in (["--filter", "taskA=strict"], ["--filter", "taskA=strict", "--metric", "acc"],
                  ["--filter", "taskA=strict", "--metric", "taskA=acc"]):  # fmt: skip
        assert _json(runner.invoke(app, [*base, *given])) == plain, given
    wrong = runner.invoke(app, [*base, "--filter", "taskA=nope"])
    assert wrong.exit_code == 2 and "unknown filter 'nope' for 'taskA'" in wrong.output
    pair = ["compare", cal, str(new), str(other), "--source", "lm-eval", "--budget", "40"]
    assert _json(runner.invoke(app, [*pair, "--filter", "taskA=strict", "--json"])) == _json(
        runner.invoke(app, [*pair, "--filter", "strict", "--json"])
    )
    by_mapping = read_responses(new, source="lm-eval", filter={"taskA": "strict"})
    by_name = read_responses(new, source="lm-eval", filter="strict")
    pd.testing.assert_series_equal(by_mapping["org/new"], by_name["org/new"])


def test_a_missing_calibration_is_named_before_the_results_files(tmp_path: Path) -> None:
    """``compare cal a`` and ``estimate cal a`` with neither file present named ``a`` (the
    results, read first) and not the calibration, the first argument; a calibration missing
    beside a results file that holds two models asked for ``--a`` instead."""
    two = tmp_path / "two.csv"
    pd.DataFrame({"model": ["m1", "m2"], "q1": [1.0, 0.0], "q2": [0.0, 1.0]}).to_csv(
        two, index=False
    )
    cal = tmp_path / "cal"
    for args in (
        ["compare", cal, tmp_path / "a"],
        ["compare", cal, two],
        ["estimate", cal, tmp_path / "a"],
        ["tiny", cal, "--k", "2"],
    ):
        out = runner.invoke(app, [str(a) for a in args])
        said = " ".join(out.output.split())
        assert out.exit_code == 2, said
        assert f"calibration {cal}: no such file or directory; expected a fit directory" in said


def test_a_missing_calibration_is_named_first_with_live_too(tmp_path: Path) -> None:
    """``compare CAL --live RUN.toml --store S`` with CAL missing named the configuration's
    first problem (here its unknown section) and not the calibration, the first argument,
    where ``estimate`` with the same arguments names the calibration."""
    cal, run = tmp_path / "cal", tmp_path / "run.toml"
    run.write_text('[endpoint]\nurl = "http://127.0.0.1:9/v1"\n')
    for command in ("compare", "estimate"):
        args = [command, str(cal), "--live", str(run), "--store", str(tmp_path / "r.duckdb")]
        out = runner.invoke(app, args)
        said = " ".join(out.output.split())
        assert out.exit_code == 2, said
        assert f"calibration {cal}: no such file or directory; expected a fit directory" in said


def test_a_calibration_that_is_a_broken_link_is_named_as_one(tmp_path: Path) -> None:
    """A CALIBRATION that is a symbolic link to nothing was said to be no such file (``ls``
    lists it); the message names the link and where it points."""
    cal = tmp_path / "cal"
    cal.symlink_to(tmp_path / "gone")
    out = runner.invoke(app, ["estimate", str(cal), str(tmp_path / "a")])
    said = " ".join(out.output.split())
    assert out.exit_code == 2, said
    assert (
        f"calibration {cal}: a symbolic link to {tmp_path / 'gone'}, which does not exist" in said
    )
