"""``tiny``, ``compare`` and ``experiment`` read a store benchmark (``--store S --benchmark B``)
as ``estimate`` does, and the store gives the same result as the matrix file of its cells.

They took only a fit directory or a matrix file (``experiment``: a matrix file), so a user who
ingested results had to export or fit them first. ``experiment``'s ``--split`` is the history
split (date / random): the store's data split is ``--benchmark-split`` there.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """``cal.csv`` (12 models, 50 items) ingested into ``s.duckdb`` as benchmark ``b``, and two
    new models ``new.csv`` and ``other.csv``."""
    rng = np.random.default_rng(0)
    ability = rng.normal(size=14)[:, None]
    difficulty = rng.normal(size=50)[None, :]
    scores = (rng.random((14, 50)) < 1 / (1 + np.exp(difficulty - ability))).astype(float)
    frame = pd.DataFrame(
        scores, index=[f"m{i:02d}" for i in range(14)], columns=[f"q{j:02d}" for j in range(50)]
    ).rename_axis("model")
    folder = tmp_path_factory.mktemp("store-calibration")
    frame.iloc[:12].to_csv(folder / "cal.csv")
    frame.iloc[12:13].to_csv(folder / "new.csv")
    frame.iloc[13:].to_csv(folder / "other.csv")
    args = ["ingest", "table", str(folder / "cal.csv"), "--store", str(folder / "s.duckdb")]
    assert runner.invoke(app, [*args, "--benchmark", "b", "-q"]).exit_code == 0
    # the same cells with lm-eval doc ids (0, 1, ...) as item ids: benchmark t
    frame.iloc[:12].set_axis([str(j) for j in range(50)], axis=1).to_csv(folder / "docs.csv")
    args = ["ingest", "table", str(folder / "docs.csv"), "--store", str(folder / "s.duckdb")]
    assert runner.invoke(app, [*args, "--benchmark", "t", "-q"]).exit_code == 0
    return folder


def _ok(args: list[str]) -> str:
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    return outcome.stdout


def _store(files: Path) -> list[str]:
    return ["--store", str(files / "s.duckdb"), "--benchmark", "b"]


def test_tiny_from_a_store_draws_the_design_of_its_matrix_file(files, tmp_path):
    by_store, by_file = tmp_path / "store.csv", tmp_path / "file.csv"
    _ok(["tiny", *_store(files), "--k", "12", "--out", str(by_store)])
    _ok(["tiny", str(files / "cal.csv"), "--k", "12", "--out", str(by_file)])
    store, file = pd.read_csv(by_store), pd.read_csv(by_file)
    # the same draw; the hash names the calibration (the store's cells, or the file)
    same = [c for c in store.columns if c != "calibration_hash"]
    pd.testing.assert_frame_equal(store[same], file[same])
    assert len(store) == 12 and store["calibration_hash"].nunique() == 1
    # each design scores with its own calibration, to the same estimate
    new = str(files / "new.csv")
    scored = [
        json.loads(_ok(["estimate", *_store(files), new, "--items", str(by_store), "--json"])),
        json.loads(
            _ok(["estimate", str(files / "cal.csv"), new, "--items", str(by_file), "--json"])
        ),
    ]
    for key in ("score", "lower", "upper", "n_evaluated", "theta"):
        assert scored[0][key] == scored[1][key], key


def test_compare_from_a_store_is_the_compare_of_its_matrix_file(files):
    models = [str(files / "new.csv"), str(files / "other.csv"), "--budget", "30", "--json"]
    by_store = json.loads(_ok(["compare", *_store(files), *models]))
    by_file = json.loads(_ok(["compare", str(files / "cal.csv"), *models]))
    assert by_store["calibration"]["source"] == f"{files / 's.duckdb'}:b"
    del by_store["calibration"], by_file["calibration"]
    assert by_store == by_file
    assert by_store["n_evaluated"] == 30 and by_store["model_a"] == "m12"


def _without_timings(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    return frame[[c for c in frame.columns if "seconds" not in c]]


def test_experiment_from_a_store_is_the_experiment_of_its_matrix_file(files, tmp_path):
    runs = ["--seeds", "2", "--pool-size", "5", "--budget", "50", "-q"]
    _ok(["experiment", *_store(files), *runs, "--out", str(tmp_path / "store")])
    _ok(["experiment", str(files / "cal.csv"), *runs, "--out", str(tmp_path / "file")])
    for name in ("summary.csv", "curves.csv"):
        pd.testing.assert_frame_equal(
            _without_timings(tmp_path / "store" / name), _without_timings(tmp_path / "file" / name)
        )
    held_out = ["--task", "estimate", "--seeds", "1", "--models", "m00,m05", "--budgets", "5,10"]
    _ok(["experiment", *_store(files), *held_out, "-q", "--out", str(tmp_path / "est-store")])
    _ok(["experiment", str(files / "cal.csv"), *held_out, "-q", "--out", str(tmp_path / "est")])
    for name in ("runs.csv", "summary.csv"):
        pd.testing.assert_frame_equal(
            _without_timings(tmp_path / "est-store" / name),
            _without_timings(tmp_path / "est" / name),
        )


COMMANDS = {
    "tiny": (["tiny"], []),
    "compare": (["compare"], ["{f}/new.csv", "{f}/other.csv"]),
    "experiment": (["experiment"], []),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--benchmark", "b"], "--benchmark applies to a store: it needs --store STORE.duckdb"),
        (
            ["--store", "{f}/s.duckdb", "--benchmark", "nope"],
            "--benchmark nope: unknown "
            "benchmark 'nope' in {f}/s.duckdb; expected one of the stored: b",
        ),
        (["--store", "{f}/s.duckdb"], "--store {f}/s.duckdb needs --benchmark NAME"),
        (["{f}/cal.csv", "--metric", "acc"], "--metric"),
    ],
    ids=["benchmark-without-store", "unknown-benchmark", "store-without-benchmark", "metric"],
)
def test_a_bad_store_source_is_one_line_naming_the_flag(files, tmp_path, command, options, said):
    words, results = COMMANDS[command]
    out = str(tmp_path / ("o.csv" if command == "tiny" else "o"))
    if options[0] == "{f}/cal.csv" and command == "compare":
        results = results[1:]  # cal.csv is the calibration: its two models follow
    args = [*words, *(a.format(f=files) for a in [*options, *results]), "--out", out]
    outcome = runner.invoke(app, args)
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, outcome.output
    assert text.startswith("error: ") and text.count("error:") == 1, text
    assert said.format(f=files) in text, text
    assert not Path(out).exists()


@pytest.mark.parametrize("command", ["tiny", "compare"])
def test_calibration_and_store_benchmark_both_given_is_refused(files, command):
    cal, store = str(files / "cal.csv"), str(files / "s.duckdb")
    extra = [str(files / "new.csv"), str(files / "other.csv")] if command == "compare" else []
    outcome = runner.invoke(app, [command, cal, *extra, "--store", store, "--benchmark", "b"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, text
    if command == "tiny":
        assert f"give CALIBRATION ({cal}) or --store {store} --benchmark b, not both" in text
    else:
        assert "with --store/--benchmark the calibration comes from the store: give only the " \
            f"models' results (got {cal}, {extra[0]} and {extra[1]})" in text  # fmt: skip
    outcome = runner.invoke(app, ["experiment", cal, "--store", store, "--benchmark", "b"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and f"give RESPONSES ({cal}) or --store {store}" in text, text


def test_experiment_spells_the_data_split_benchmark_split(files, tmp_path):
    """``--split`` is experiment's history split: the store's split is ``--benchmark-split``,
    and what the store says about it names that flag."""
    store = _store(files)
    outcome = runner.invoke(app, ["experiment", *store, "--benchmark-split", "valid"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "has no rows with --benchmark-split valid" in text, text
    outcome = runner.invoke(app, ["experiment", str(files / "cal.csv"), "--benchmark-split", "x"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2
    assert "--benchmark-split applies to a store: it needs --store STORE.duckdb" in text, text
    # the history split by date reads release dates beside a file; a store has none
    outcome = runner.invoke(app, ["experiment", *store, "--split", "date", "--out", "x"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "--split date with --store" in text, text
    assert "expected --split random" in text
    shown = runner.invoke(app, ["experiment", "--help"], terminal_width=200).output
    shown = " ".join(shown.replace("│", " ").split())
    assert "Not the data split of a store benchmark (--benchmark-split)" in shown
    assert "Not --split, which halves the models" in shown


def test_tinys_lm_eval_line_names_the_store_calibration(files, tmp_path):
    """The estimate command tiny prints for lm-eval's logs calibrates as tiny did."""
    samples = tmp_path / "samples.json"
    store = ["--store", str(files / "s.duckdb"), "--benchmark", "t"]
    args = ["tiny", *store, "--k", "5", "--out", str(tmp_path / "items.csv")]
    outcome = runner.invoke(app, [*args, "--lm-eval-samples", str(samples)])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, text
    assert json.loads(samples.read_text()).keys() == {"t"}  # the benchmark is the task
    assert f"latentbench estimate --store {files / 's.duckdb'} --benchmark t OUT" in text, text


def test_the_default_split_warning_names_each_commands_flag(files, tmp_path):
    """A benchmark of two splits is read at its test split, with a warning naming the flag
    that chooses another: ``--split`` for tiny (as estimate), ``--benchmark-split`` for
    experiment, whose ``--split`` is the history split."""
    wide = pd.read_csv(files / "cal.csv", index_col="model")
    long = wide.reset_index().melt(id_vars="model", var_name="item", value_name="score")
    table = tmp_path / "splits.csv"
    pd.concat([long.assign(split="test"), long.assign(split="valid")]).to_csv(table, index=False)
    store = ["--store", str(tmp_path / "sp.duckdb"), "--benchmark", "b"]
    _ok(["ingest", "table", str(table), *store, "-q"])
    said = "holds the splits 'test', 'valid'; using 'test' (choose another with"
    outcome = runner.invoke(app, ["tiny", *store, "--k", "3", "--out", str(tmp_path / "i.csv")])
    assert outcome.exit_code == 0 and f"{said} --split)" in outcome.output, outcome.output
    args = ["experiment", *store, "--seeds", "1", "--pool-size", "5", "--budget", "20", "-q"]
    outcome = runner.invoke(app, [*args, "--out", str(tmp_path / "e")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0 and f"{said} --benchmark-split)" in text, text


def test_a_task_equals_name_choice_names_the_store_benchmarks_metric(files):
    """``--metric TASK=NAME`` (as the same option reads a tool's results) chooses the store
    benchmark's metric when TASK is the benchmark: it was looked up as a metric named
    'b=score' ('no row has it'); another task's choice is refused naming the benchmark."""
    new = [str(files / "new.csv"), "--budget", "20", "--json"]
    plain = json.loads(_ok(["estimate", *_store(files), *new, "--metric", "score"]))
    by_task = json.loads(_ok(["estimate", *_store(files), *new, "--metric", "b=score"]))
    for result in (plain, by_task):
        result.pop("seconds", None)
    assert by_task == plain
    other = runner.invoke(app, ["estimate", *_store(files), *new, "--filter", "gsm8k=strict"])
    said = " ".join(other.output.split())
    assert other.exit_code == 2
    assert "--filter gsm8k=strict: a choice for task 'gsm8k'" in said
    assert "expected --filter NAME or --filter b=NAME" in said


def test_tiny_precision_on_a_store_replays_its_benchmark_s_answers(files, tmp_path):
    """``tiny --store S --benchmark B --precision H`` reads the benchmark's answers to predict
    the width (a store calibration carries parameters only), as from the matrix file."""
    store = ["--store", str(files / "s.duckdb"), "--benchmark", "b"]
    lines = []
    for source in (store, [str(files / "cal.csv")]):
        out = tmp_path / f"items{len(lines)}.csv"
        args = ["tiny", *source, "--precision", "0.25", "--out", str(out)]
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 0, outcome.output
        line = next(x for x in outcome.output.splitlines() if x.startswith("k = "))
        assert f"k = {len(pd.read_csv(out))} items" in line
        assert "median over the 12 calibration models" in line
        lines.append(line)
    assert lines[0] == lines[1]
