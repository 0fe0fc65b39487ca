"""``latentbench select replay`` and ``latentbench experiment`` end to end on small files."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

from .conftest import lowrank_data

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    Y, _, _, _ = lowrank_data(40, 150, r=2, seed=12)
    tmp = tmp_path_factory.mktemp("sel")
    models = [f"m{i:02d}" for i in range(40)]
    items = [f"q{j:03d}" for j in range(150)]
    frame = pd.DataFrame(Y, index=models, columns=items).rename_axis("model")
    long = frame.reset_index().melt(id_vars="model", var_name="item", value_name="score")
    long[long.model.isin(models[:20])].to_parquet(tmp / "history.parquet")
    long[long.model.isin(models[20:])].to_parquet(tmp / "candidates.parquet")
    long.to_parquet(tmp / "all.parquet")
    return tmp, Y


def test_replay_writes_selection_json(files):
    tmp, _Y = files
    out = tmp / "rep"
    result = runner.invoke(
        app,
        [
            "select",
            "replay",
            str(tmp / "candidates.parquet"),
            "--history",
            str(tmp / "history.parquet"),
            "--budget",
            "600",
            "--policy",
            "pulse",
            "--seed",
            "3",
            "--rank",
            "2",
            "--batch-size",
            "16",
            "--init-batch",
            "8",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "selection.json").read_text())
    assert data["evaluations_post_init"] == 600
    assert data["evaluations_total"] == 600 + 20 * 8
    assert data["best_model"] in {f"m{i:02d}" for i in range(20, 40)}
    assert {"lower", "upper", "estimate"} <= set(data["arms"][0])
    assert len(data["trace"]["best_index"]) == data["rounds"] + 1
    assert data["params"]["history"]["proxy rank"] == 2
    assert len(data["params"]["history"]["input_sha256"]) == 64
    assert "cells used:" in result.output and "certified" in result.output


def test_replay_split_is_recorded_and_printed(files):
    tmp, _Y = files
    out = tmp / "split"
    args = ["select", "replay", str(tmp / "all.parquet"), "--budget", "200", "--seed", "5"]
    args += ["--rank", "2", "--batch-size", "16", "--init-batch", "8", "--stop", "confidence"]
    result = runner.invoke(app, [*args, "--delta", "0.05", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "selection.json").read_text())
    record = data["params"]["history"]
    assert record["history ids"] and record["proxy rank"] == 2
    assert len(record["input_sha256"]) == 64 and record["input"].endswith("all.parquet")
    assert "random half" in result.output and "delta = 0.05" in result.output
    text = " ".join(result.output.split())  # the note, once, in CLI words; not a warning
    assert "pass --history, --history-store or --no-history" in text
    assert text.count("history split") == 1 and "warning: history split" not in text
    assert data["params"]["delta"] == 0.05 and data["certified"] in (True, False)


def test_replay_history_free_uses_every_model(files):
    tmp, _Y = files
    out = tmp / "free"
    args = ["select", "replay", str(tmp / "all.parquet"), "--no-history", "--budget", "300"]
    args += ["--batch-size", "16", "--init-batch", "8", "--seed", "1", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "selection.json").read_text())
    assert len(data["arms"]) == 40  # no split: every model is a candidate
    record = data["params"]["history"]
    assert record["history models"] == 0 and record["source"].startswith("none")
    assert "history-free" in result.output and "random half" not in result.output
    assert data["evaluations_post_init"] == 300


def test_replay_history_from_store(files):
    from latentbench.io.store import Store

    tmp, _Y = files
    db = tmp / "hist.duckdb"
    with Store(db) as store:
        store.ingest_files("table", [tmp / "history.parquet"], benchmark="toy")
    out = tmp / "store"
    args = ["select", "replay", str(tmp / "candidates.parquet"), "--history-store", str(db)]
    args += ["--history-benchmark", "toy", "--rank", "2", "--budget", "200", "--out", str(out)]
    args += ["--batch-size", "16", "--init-batch", "8"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "selection.json").read_text())
    record = data["params"]["history"]
    assert record["history models"] == 20 and "toy" in record["source"]
    assert len(data["arms"]) == 20 and record["proxy rank"] == 2
    # exclusive options and a missing benchmark are clear errors
    bad = runner.invoke(app, [*args[:7], "--no-history", "--out", str(tmp / "x")])
    assert bad.exit_code != 0 and "exclude each other" in bad.output
    bad = runner.invoke(app, [*args[:4], str(db), "--out", str(tmp / "y")])
    assert bad.exit_code != 0 and "go together" in bad.output


def test_replay_candidates_from_a_store(files):
    """--store --benchmark reads the candidates from the store: the same run as from the file
    the store was filled from, recorded with the store's query and a hash of its cells; the
    history's benchmark defaults to the same store."""
    from latentbench.io.store import Store

    tmp, _Y = files
    db = tmp / "runs.duckdb"
    with Store(db) as store:
        store.ingest_files("table", [tmp / "candidates.parquet"], benchmark="new")
        store.ingest_files("table", [tmp / "history.parquet"], benchmark="old")
    common = ["--rank", "2", "--budget", "200", "--batch-size", "16", "--init-batch", "8"]
    from_file = runner.invoke(
        app, ["select", "replay", str(tmp / "candidates.parquet"), "--history",
              str(tmp / "history.parquet"), *common, "--out", str(tmp / "sf")],
    )  # fmt: skip
    assert from_file.exit_code == 0, from_file.output
    args = ["select", "replay", "--store", str(db), "--benchmark", "new"]
    result = runner.invoke(app, [*args, "--history-benchmark", "old", *common, "--out",
                                 str(tmp / "ss")])  # fmt: skip
    assert result.exit_code == 0, result.output
    a = json.loads((tmp / "sf" / "selection.json").read_text())
    b = json.loads((tmp / "ss" / "selection.json").read_text())
    assert a["best_model"] == b["best_model"] and a["trace"] == b["trace"]
    assert [r["estimate"] for r in a["arms"]] == [r["estimate"] for r in b["arms"]]
    record = b["params"]["history"]
    assert record["input_store"]["benchmark"] == "new" and "old" in record["source"]
    assert len(record["input_store"]["cells_sha256"]) == 64
    # the history read from the store is recorded as the candidates are (a file's has its hash)
    assert record["history_store"]["benchmark"] == "old"
    assert record["history_store"]["cells_sha256"] != record["input_store"]["cells_sha256"]
    assert len(record["history_store"]["cells_sha256"]) == 64 and "history_sha256" not in record
    assert record["input"] == f"store {db}, benchmark new"
    # without a history: the random half is named by the store's benchmark
    half = runner.invoke(app, [*args, *common, "--out", str(tmp / "sh")])
    assert half.exit_code == 0, half.output
    record = json.loads((tmp / "sh" / "selection.json").read_text())["params"]["history"]
    assert record["source"] == f"random half of store {db}, benchmark new (seed 0)"
    # a file and a store, a benchmark without a store, nothing: clear errors
    for bad_args, said in (
        ([*args, str(tmp / "candidates.parquet")], "not both"),
        (["select", "replay", "--benchmark", "new"], "applies to a store: it needs --store"),
        (["select", "replay"], "--store STORE --benchmark NAME"),
        (["select", "replay", "--store", str(db)], "needs --benchmark"),
        ([*args[:4], "--benchmark", "nope"], "nope"),
        # --history-store defaults to --store: not named when the user gave --history instead
        (
            [*args, "--history", str(tmp / "history.parquet"), "--history-benchmark", "old"],
            "--history-benchmark old exclude each other",
        ),
    ):
        bad = runner.invoke(app, [*bad_args, "--out", str(tmp / "bad")])
        assert bad.exit_code != 0 and said in " ".join(bad.output.split()), bad.output
        assert not (tmp / "bad" / "selection.json").exists()


def test_replay_history_from_a_store_split_and_metric(files):
    """A history benchmark with two splits and two metrics: the choice is made with
    --history-split / --history-metric, and the store's advice names those options."""
    from latentbench.io.store import Store

    tmp, _Y = files
    db = tmp / "hist_choices.duckdb"
    history = pd.read_parquet(tmp / "history.parquet")
    test, valid = tmp / "history_test.parquet", tmp / "history_valid.parquet"
    history.assign(split="test").to_parquet(test)
    history.assign(score=1.0 - history["score"], split="valid").to_parquet(valid)
    with Store(db) as store:
        store.ingest_files("table", [test, valid], benchmark="toy", metric="acc")
    args = ["select", "replay", str(tmp / "candidates.parquet"), "--history-store", str(db)]
    args += ["--history-benchmark", "toy", "--rank", "2", "--budget", "100"]
    args += ["--batch-size", "16", "--init-batch", "8"]
    result = runner.invoke(app, [*args, "--out", str(tmp / "split_default")])
    assert result.exit_code == 0, result.output
    assert "using 'test' (choose another with --history-split)" in " ".join(result.output.split())
    out = tmp / "split_valid"
    result = runner.invoke(app, [*args, "--history-split", "valid", "--out", str(out)])
    assert result.exit_code == 0 and "using 'test'" not in result.output, result.output
    record = json.loads((out / "selection.json").read_text())["params"]["history"]
    assert "(split 'valid')" in record["source"] and record["history models"] == 20
    with Store(db) as store:  # a second metric: a choice is needed
        store.ingest_files("table", [test], benchmark="toy", metric="f1")
    bad = runner.invoke(app, [*args, "--out", str(tmp / "split_bad")])
    assert bad.exit_code == 2
    text = " ".join(bad.output.split())
    assert "pass --history-metric, --history-filter and --history-split" in text, text
    result = runner.invoke(app, [*args, "--history-metric", "f1", "--out", str(tmp / "metric_f1")])
    assert result.exit_code == 0, result.output
    bad = runner.invoke(
        app, [*args[:3], "--history", str(tmp / "history.parquet"), "--history-split", "valid"]
    )
    assert bad.exit_code == 2
    assert "--history-split: only with --history-store and --history-benchmark" in bad.output


def test_replay_drops_items_with_missing_cells_when_asked(files):
    tmp, _Y = files
    long = pd.read_parquet(tmp / "candidates.parquet")
    holes = long["item"].isin(["q003", "q077"]) & long["model"].isin(["m21", "m30"])
    path = tmp / "holes.parquet"
    long[~holes].to_parquet(path)  # four unobserved cells (no rows)
    base = ["select", "replay", str(path), "--history", str(tmp / "history.parquet")]
    base += ["--rank", "2", "--budget", "1200", "--batch-size", "16", "--init-batch", "8"]
    refused = runner.invoke(app, [*base, "--out", str(tmp / "refused")])
    assert refused.exit_code == 2 and "--missing drop-items" in refused.output
    out = tmp / "dropped"
    result = runner.invoke(app, [*base, "--missing", "drop-items", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "dropped 2 of 150 items" in text
    data = json.loads((out / "selection.json").read_text())
    assert data["params"]["n_items"] == 148
    assert data["params"]["history"]["dropped items"] == 2
    assert data["evaluations_total"] == 20 * 8 + 1200
    assert max(arm["n_observed"] for arm in data["arms"]) <= 148
    # the run went on after its first certificate (if any): the summary says when
    if data["certified_after_post_init"] is not None and data["certified_after_post_init"] < 1200:
        assert "first certified at delta = 0.05 with" in text


def test_replay_reports_bad_input(files):
    tmp, _ = files
    result = runner.invoke(
        app,
        [
            "select",
            "replay",
            str(tmp / "candidates.parquet"),
            "--policy",
            "thompson",
            "--out",
            str(tmp / "bad"),
        ],
    )
    assert result.exit_code == 2
    assert "thompson" in result.output


def test_experiment_command(files):
    tmp, _ = files
    out = tmp / "exp"
    result = runner.invoke(
        app,
        [
            "experiment",
            str(tmp / "all.parquet"),
            "--split",
            "random",
            "--pools",
            "gap:0.02,full",
            "--policies",
            "pulse,ucbe,naive",
            "--seeds",
            "3",
            "--budget",
            "500",
            "--batch-size",
            "16",
            "--init-batch",
            "8",
            "--pool-size",
            "10",
            "--rank",
            "2",
            "--n-jobs",
            "1",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert {r["policy"] for r in summary["summary"]} == {"pulse", "ucbe", "naive"}
    gap = summary["pools"][next(p for p in summary["pools"] if p != "full")]["top2_gap"]
    labels = {f"gap{gap:.3f}", "full"}  # pools are named by their measured top-two gap
    assert {r["pool"] for r in summary["summary"]} == labels
    curves = pd.read_csv(out / "curves.csv")
    assert list(curves.columns) == ["pool", "policy", "evaluations", "accuracy", "se"]
    assert set(curves["pool"]) == labels
    assert set(curves["policy"]) == {"pulse", "ucbe", "naive"}
    assert curves.groupby(["pool", "policy"])["evaluations"].max().eq(500).all()
    assert curves["accuracy"].between(0, 1).all() and (curves["se"] >= 0).all()
    bad = runner.invoke(
        app, ["experiment", str(tmp / "all.parquet"), "--split", "date", "--out", str(tmp / "bad")]
    )
    assert bad.exit_code == 2 and "date" in bad.output


def test_replay_without_options_stops_certified_and_says_what_it_used(files):
    """No budget: the run stops at the certificate and prints the cells used (count and
    share of a full evaluation) and the certificate; no hindsight line."""
    tmp, _Y = files
    out = tmp / "default"
    args = ["select", "replay", str(tmp / "candidates.parquet"), "--history"]
    result = runner.invoke(
        app, [*args, str(tmp / "history.parquet"), "--rank", "2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "selection.json").read_text())
    full = 20 * 150
    assert data["params"]["stop"] == "confidence" and data["params"]["delta"] == 0.05
    assert data["stopped"] in ("confidence", "exhausted")
    text = " ".join(result.output.split())
    share = f"{data['evaluations_total'] / full:.1%}"
    assert f"cells used: {data['evaluations_total']:,} of {full:,} ({share} of a full" in text
    assert "certified at delta = 0.05" in text and "unchanged since" not in text
    if data["stopped"] == "confidence":
        assert data["certified"] and data["evaluations_total"] < full
    # a baseline stops on confidence too, certified on its revealed cells
    ucbe = runner.invoke(app, [*args, str(tmp / "history.parquet"), "--policy", "ucbe",
                               "--stop", "confidence", "--out", str(tmp / "ucbe")])  # fmt: skip
    assert ucbe.exit_code == 0, ucbe.output
    base = json.loads((tmp / "ucbe" / "selection.json").read_text())
    assert base["params"]["certificate"] == "betting on revealed cells"
    assert base["certified"] is True or base["stopped"] == "exhausted"


def test_experiment_stops_on_confidence_and_reports(files):
    tmp, _ = files
    out = tmp / "exp-stop"
    args = ["experiment", str(tmp / "all.parquet"), "--pools", "full", "--policies",
            "pulse,ucbe", "--seeds", "3", "--budget", "600", "--pool-size", "8", "--rank", "2",
            "--jobs", "1", "--stop", "confidence", "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    pulse = next(r for r in summary["summary"] if r["policy"] == "pulse")
    assert summary["params"]["stop"] == "confidence"
    assert 0 <= pulse["certified_fraction"] <= 1 and pulse["cells_at_stop_post_init"] <= 600
    for key in ("saved_post_init_pct_se", "saved_post_init_pct_lo", "saved_post_init_pct_hi"):
        assert key in pulse
    assert "cells at the certified stop" in result.output and "±" in result.output
    html = tmp / "exp.html"
    report = runner.invoke(app, ["report", str(out), "--out", str(html)])
    assert report.exit_code == 0, report.output
    page = html.read_text()
    assert page.count("data:image/png") == 1 and "experiment-table" in page
    assert "pulse saves" in page and "paired bootstrap" in page


def test_experiment_ctrl_c_writes_the_complete_seeds_and_exits_130(files):
    """SIGINT during `experiment`: the runs in flight finish, the seeds every policy
    completed are printed, written and reported as interrupted, exit 130 (all was lost)."""
    import os
    import subprocess
    import sys

    tmp, _ = files
    out = tmp / "exp-int"
    script = (
        "import functools, os, signal\n"
        "import latentbench.select._experiment as e\n"
        "from latentbench.cli import main\n"
        "inner, calls = e._run_one, []\n"
        "@functools.wraps(inner)\n"
        "def run(*a, **k):\n"  # the real handler: SIGINT during the fifth run (seed 2)
        "    calls.append(1)\n"
        "    if len(calls) == 5: os.kill(os.getpid(), signal.SIGINT)\n"
        "    return inner(*a, **k)\n"
        "e._run_one = run\n"
        "main()\n"
    )
    args = [sys.executable, "-c", script, "experiment", str(tmp / "all.parquet"), "--pools",
            "full", "--policies", "pulse,ucbe", "--seeds", "4", "--budget", "300",
            "--pool-size", "8", "--rank", "2", "--jobs", "1", "--out", str(out)]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=os.environ)
    assert done.returncode == 130, done.stderr
    text = " ".join(done.stderr.split())
    assert "stopping after the runs in flight" in text
    # the fifth run (seed 2's first policy) finishes; its second is never started
    assert "cover the 2 of 4 seeds that every pool and policy completed" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["params"]["n_seeds"] == 2 and summary["params"]["seeds_asked"] == 4
    html = tmp / "exp-int.html"
    assert runner.invoke(app, ["report", str(out), "--out", str(html)]).exit_code == 0
    page = " ".join(html.read_text().split())
    assert "Interrupted: 2 of 4 seeds were completed by every pool and policy" in page


def test_a_missing_file_is_named_with_its_role(tmp_path):
    """`--history nosuch.parquet` said only "nosuch.parquet: file not found"."""
    from latentbench.exceptions import InputError
    from latentbench.select import replay

    data = tmp_path / "cands.csv"
    data.write_text("model,q1,q2\nm1,1,0\nm2,0,1\n")
    with pytest.raises(InputError, match=r"^history .*nosuch\.parquet: file not found"):
        replay(data, history=tmp_path / "nosuch.parquet")
    with pytest.raises(InputError, match=r"^responses .*nope\.csv: file not found"):
        replay(tmp_path / "nope.csv", no_history=True)


def test_release_dates_come_from_the_sidecar_in_python_too(files, tmp_path):
    """experiment_from_matrix(path, split="date") reads NAME_models.parquet as the command
    does (only the command read it; Python needed dates=)."""
    import numpy as np

    from latentbench.exceptions import InputError
    from latentbench.io import ResponseMatrix
    from latentbench.select import experiment_from_matrix, release_dates

    tmp, _Y = files
    path = tmp_path / "lb.parquet"
    pd.read_parquet(tmp / "all.parquet").to_parquet(path)
    matrix = ResponseMatrix.read(path)
    days = pd.date_range("2024-01-01", periods=matrix.n_models, freq="7D")[::-1]
    pd.DataFrame({"model": matrix.model_ids, "created_date": days}).to_parquet(
        tmp_path / "lb_models.parquet"
    )
    dates = release_dates(path, matrix.model_ids)
    assert np.array_equal(dates, np.asarray(days, dtype="datetime64[ns]"))
    kw = {"split": "date", "seeds": 1, "budget": 50, "policies": ["ucbe"], "pool_size": 8}
    by_path = experiment_from_matrix(path, **kw)
    by_hand = experiment_from_matrix(matrix, dates=dates, **kw)
    assert by_path.pools == by_hand.pools and by_path.curves.keys() == by_hand.curves.keys()
    for key, curve in by_path.curves.items():
        assert np.array_equal(curve, by_hand.curves[key])
    (tmp_path / "lb_models.parquet").unlink()
    with pytest.raises(InputError, match=r"lb_models.parquet .* not found .*; pass dates= or"):
        experiment_from_matrix(path, **kw)


@pytest.mark.parametrize("jobs", ["0", "-5"])
def test_experiment_with_no_workers_is_refused(files, jobs):
    """`experiment --jobs 0` (or -5) ran on every core, unsaid: refused, naming the option
    and what it takes, before any run (no output directory written)."""
    tmp, _ = files
    out = tmp / f"exp-jobs{jobs}"
    args = ["experiment", str(tmp / "all.parquet"), "--pools", "full", "--policies", "ucbe",
            "--seeds", "1", "--budget", "100", "--jobs", jobs, "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"--jobs {jobs}; expected -1 (all cores) or an integer >= 1" in result.output
    assert not (out / "summary.json").exists()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--simulate", "0"], "--simulate 0; expected an integer >= 4"),
        (["--simulate", "1"], "--simulate 1; expected an integer >= 4"),
        (["--simulate", "50", "--sim-rank", "0"], "--sim-rank 0; expected an integer in [1, 40]"),
        (["--simulate", "50", "--sim-rank", "41"], "--sim-rank 41; expected an integer in [1, 40]"),
        (["--sim-rank", "2"], "--sim-rank 2 without --simulate"),
    ],
)
def test_experiment_refuses_a_simulation_it_cannot_draw_naming_the_option(files, given, said):
    """--simulate 0 was refused as 'n_models=0', --sim-rank 0 as '--rank 0' (an option not
    given), --simulate 1 printed two numpy RuntimeWarnings before its error, --sim-rank 41 on
    40 models ran unsaid, and --sim-rank without --simulate was ignored: each is now one
    error naming the option given, before any fit or run (no output written)."""
    tmp, _ = files
    out = tmp / "exp-sim"
    args = ["experiment", str(tmp / "all.parquet"), "--seeds", "1", "--budget", "50"]
    result = runner.invoke(app, [*args, *given, "--out", str(out)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, text
    assert said in text and "RuntimeWarning" not in text, text
    assert not out.exists()


def test_select_messages_name_the_options_of_the_command_in_use(files, monkeypatch):
    """--history-benchmark alone was called '--history-store' (not given); a store's metric
    that matches no rows read "metric='nope', filter=None, split=None"; a file without a
    model column pointed select at `latentbench fit --model-col`; Ctrl-C named
    'latentbench replay'."""
    from latentbench.io.store import Store

    tmp, _Y = files
    db = tmp / "both.duckdb"
    with Store(db) as store:
        store.ingest_files("table", [tmp / "all.parquet"], benchmark="toy", metric="acc")
    base = ["select", "replay", "--store", str(db), "--benchmark", "toy", "--budget", "40"]
    base += ["--batch-size", "16", "--init-batch", "8", "--rank", "2"]
    out = runner.invoke(app, [*base, "--history-benchmark", "toy", "--out", str(tmp / "hb")])
    text = " ".join(out.output.split())
    assert out.exit_code == 0, text
    assert "--history-benchmark (benchmark 'toy' of store" in text
    assert "--history-store" not in text
    out = runner.invoke(app, [*base, "--metric", "nope", "--no-history"])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "has no rows with --metric nope;" in text, text
    hist = ["--history-benchmark", "toy", "--history-metric", "nope"]
    out = runner.invoke(app, [*base, *hist])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "has no rows with --history-metric nope;" in text, text
    # the Python twin names its own keywords (the store names only the choices asked for)
    from latentbench.exceptions import InputError
    from latentbench.select import replay

    with pytest.raises(InputError, match=r"has no rows with history_metric='nope'; available"):
        replay(tmp / "candidates.parquet", history_store=db, history_benchmark="toy",
               history_metric="nope", budget=40)  # fmt: skip

    long = pd.read_parquet(tmp / "candidates.parquet").rename(columns={"model": "name"})
    path = tmp / "no_model.csv"
    long.to_csv(path, index=False)
    out = runner.invoke(app, ["select", "replay", str(path), "--no-history", "--out", "x"])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "column 'name' may hold them" in text, text
    assert "--model-col" not in text and "latentbench fit" not in text
    out = runner.invoke(app, ["fit", str(path), "--out", str(tmp / "fit")])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "(or name it: --model-col NAME)" in text, text

    import latentbench.select as select

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(select, "replay", interrupted)
    args = ["select", "replay", str(tmp / "candidates.parquet"), "--no-history"]
    out = runner.invoke(app, [*args, "--out", str(tmp / "ctrl_c")])
    text = " ".join(out.output.split())
    assert out.exit_code == 130 and "latentbench select replay stopped before it" in text, text


def test_the_default_simulator_rank_fits_a_source_smaller_than_it(tmp_path):
    """The simulator's rank 4 by default refused a source of 3 models (h209's check named
    ``sim_rank=4``, never given; before it the 3 x 40 source ran): the default is now 4 capped
    at min(models, items), recorded; a rank given above that is still refused."""
    import numpy as np

    from latentbench.exceptions import InputError
    from latentbench.select import experiment_from_matrix

    rng = np.random.default_rng(0)
    Y = (rng.random((3, 40)) < 0.6).astype(float)
    result = experiment_from_matrix(
        Y, simulate=8, seeds=1, budget=40, policies=["uniform"], random_state=0
    )
    assert result.params["sim_rank"] == 3
    with pytest.raises(InputError, match=r"^sim_rank=4; expected an integer in \[1, 3\]"):
        experiment_from_matrix(Y, simulate=8, sim_rank=4, seeds=1, budget=40)
