"""``latentbench estimate`` / ``tiny`` / ``compare`` on hostile command lines: a clear error
naming the option and the value, before any work."""

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


def _long(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"item": [str(j) for j in range(n)], "score": np.tile([1.0, 0.0], n // 2)})


def test_cli_refuses_budget_or_precision_with_items(tmp_path):
    calibration, new, items = (tmp_path / n for n in ("calib.parquet", "new.csv", "items.csv"))
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    _long().to_csv(new, index=False)
    items.write_text("item,order,probability\n0,1,0.1\n")
    for option in (["--budget", "10"], ["--precision", "0.01"]):
        args = ["estimate", str(calibration), str(new), "--items", str(items), *option]
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 2, outcome.output
        assert f"{option[0]} with --items" in outcome.output

    args = ["estimate", str(calibration), "--items", str(items), "--live", "run.toml"]
    outcome = runner.invoke(app, [*args, "--store", str(tmp_path / "run.duckdb")])
    assert outcome.exit_code == 2 and "with --live" in outcome.output
    assert not (tmp_path / "run.duckdb").exists()
    outcome = runner.invoke(app, ["estimate", "--store", str(tmp_path / "s.duckdb"), str(new)])
    assert outcome.exit_code == 2 and "needs --benchmark NAME" in outcome.output


def test_compare_names_the_option_for_a_file_of_several_models(tmp_path):
    calibration, many = tmp_path / "calib.parquet", tmp_path / "many.csv"
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    pd.concat([_long().assign(model=m) for m in ("x", "y", "z")]).to_csv(many, index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), str(many)])
    assert outcome.exit_code == 2
    assert "many.csv holds 3 models ('x', 'y', 'z'); name model A with --a" in outcome.output
    assert "model=" not in outcome.output and "estimate_many" not in outcome.output
    outcome = runner.invoke(app, ["compare", str(calibration), str(many), "--a", "x"])
    assert "name model B with --b" in outcome.output


def test_compare_names_an_unknown_model_among_all_the_files_models(tmp_path):
    """--b naming no model of its file: the list shown says it is cut short and how many
    there are, and a name differing only by case is pointed out (before: the first 5 shown
    as if they were all, and no word of 'm3' for 'M3')."""
    calibration, many = tmp_path / "calib.parquet", tmp_path / "many.csv"
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    pd.concat([_long().assign(model=f"m{i}") for i in range(7)]).to_csv(many, index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), str(many), "--a", "m0", "--b", "M3"])
    assert outcome.exit_code == 2
    text = " ".join(outcome.output.split())
    assert "--b 'M3': no such model in" in text and "many.csv" in text, text
    assert "(7 models: 'm0', 'm1', 'm2', 'm3', 'm4', ...)" in text, text
    assert "did you mean 'm3'?" in text, text


def test_compare_of_one_model_with_itself_speaks_cli(tmp_path):
    calibration, one = tmp_path / "calib.parquet", tmp_path / "one.csv"
    _long().assign(model="a").to_parquet(calibration)
    _long().assign(model="x").to_csv(one, index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), str(one), str(one)])
    assert outcome.exit_code == 2
    assert "A and B are both model 'x'" in outcome.output and "model_a" not in outcome.output


def test_compare_of_a_one_model_file_alone_asks_for_b(tmp_path):
    """`compare CAL one.csv` (B's file left out) said "A and B are both model 'x' ...; name
    them with --a / --b", advice that the file's one model cannot follow: it asks for B's
    results now. One file with --a and --b both naming 'x' keeps the old message."""
    calibration, one = tmp_path / "calib.parquet", tmp_path / "one.csv"
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    _long().assign(model="x").to_csv(one, index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), str(one)])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, text
    assert "one.csv holds one model ('x')" in text and "RESPONSES_B" in text, text
    assert "--a / --b" not in text, text
    outcome = runner.invoke(app, ["compare", str(calibration), str(one), "--b", "x"])
    assert outcome.exit_code == 2 and "RESPONSES_B" in " ".join(outcome.output.split())


def test_compare_of_two_models_with_the_same_answers_says_so(tmp_path):
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration, two = tmp_path / "calib.parquet", tmp_path / "two.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    pd.concat([_long().assign(model=m) for m in ("x", "y")]).to_csv(two, index=False)
    args = ["compare", str(calibration), str(two), "--a", "x", "--b", "y", "--budget", "3"]
    outcome = runner.invoke(app, args)
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, outcome.output
    assert "same answer on every one of the" in text and "--margin" in text
    assert "not certified (the two answered all 3 evaluated items identically)" in text


def test_tiny_never_overwrites_a_design_silently(tmp_path, monkeypatch):
    calibration = tmp_path / "calib.parquet"
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(6) for j in range(20)]
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    monkeypatch.chdir(tmp_path)
    for expected in ("items.csv", "items-2.csv"):  # the default: a free name
        outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "3"])
        assert outcome.exit_code == 0, outcome.output
        assert f"to {expected}" in outcome.output
    design = (tmp_path / "items.csv").read_text()
    outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "4", "--out", "items.csv"])
    assert outcome.exit_code == 2 and "--out items.csv exists" in outcome.output
    assert (tmp_path / "items.csv").read_text() == design
    args = ["tiny", str(calibration), "--k", "4", "--out", "items.csv", "--force"]
    assert runner.invoke(app, args).exit_code == 0
    assert len(pd.read_csv(tmp_path / "items.csv")) == 4


def test_tiny_never_overwrites_its_calibration_even_with_force(tmp_path, monkeypatch):
    """``tiny fit/ --out fit/items.csv --force`` replaced the fit's item parameters with the
    design (the fit was then unreadable), and ``tiny cal.parquet --out cal.parquet --force``
    the calibration matrix itself (hostile walk, 2026-12-06)."""
    calibration = tmp_path / "calib.parquet"
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(6) for j in range(20)]
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    fit = tmp_path / "fit"
    assert runner.invoke(app, ["fit", str(calibration), "--out", str(fit)]).exit_code == 0
    monkeypatch.chdir(tmp_path)
    kept = {path: path.read_bytes() for path in (calibration, *fit.iterdir())}
    for cal, out, option in (
        (fit, fit / "items.csv", "--out"),
        (fit, "fit/./items.csv", "--out"),
        (calibration, calibration, "--out"),
        (calibration, "calib.parquet", "--out"),
        (fit, fit / "fit.json", "--lm-eval-samples"),
    ):
        extra = ["--out", "design.csv"] if option != "--out" else []
        args = ["tiny", str(cal), "--k", "3", option, str(out), *extra, "--force"]
        outcome = runner.invoke(app, args)
        said = " ".join(outcome.output.split())
        assert outcome.exit_code == 2 and "the calibration" in said, (args, said)
        assert f"{option} {Path(out)}" in said
    assert {path: path.read_bytes() for path in kept} == kept
    outcome = runner.invoke(app, ["tiny", str(fit), "--k", "3", "--out", "fit/design.csv"])
    assert outcome.exit_code == 0, outcome.output  # a new file beside the fit's: fine


def test_a_model_without_answers_does_not_cost_the_others_their_estimates(tmp_path):
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration, new, out = tmp_path / "calib.parquet", tmp_path / "new.csv", tmp_path / "est"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    good = _long().assign(model="good")
    empty = _long().assign(model="empty", score=np.nan)
    pd.concat([good, empty]).to_csv(new, index=False)
    args = ["estimate", str(calibration), str(new), "--budget", "5", "--out", str(out)]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2
    text = " ".join(outcome.output.split())
    assert "good: score" in text and "model 'empty' not estimated" in text
    written = json.loads((out / "estimate.json").read_text())
    # the file itself says it is partial, and why (only estimate_status.json did)
    assert written["complete"] is False
    assert [r["model"] for r in written["estimates"]] == ["good"]
    assert [(r["model"], r["reason"]) for r in written["not_estimated"]] == [("empty", "failed")]
    assert list(pd.read_csv(out / "estimates.csv")["model"]) == ["good"]
    again = " ".join(runner.invoke(app, args).output.split())  # --out DIR reused: said
    assert "(replacing the earlier estimate.json, estimates.csv" in again
    # the failure is saved beside the estimates and read back (it was lost)
    status = json.loads((out / "estimate_status.json").read_text())
    assert status["complete"] is False and list(status["failures"]) == ["empty"]
    from latentbench.select import EstimateSet

    back = EstimateSet.read(out)
    assert not back.complete and list(back.failures) == ["empty"]
    # a complete call into the same folder removes the stale status
    pd.concat([good]).to_csv(new, index=False)
    assert runner.invoke(app, args).exit_code == 0
    assert not (out / "estimate_status.json").exists() and EstimateSet.read(out).complete


def test_estimate_json_names_the_models_not_estimated(tmp_path):
    """`estimate --json` on several models, one without usable answers: the JSON itself lists
    the model not estimated and why (it was only on stderr), and the exit status is 2."""
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration, new = tmp_path / "calib.parquet", tmp_path / "new.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    good = _long().assign(model="good")
    empty = _long().assign(model="empty", score=np.nan)
    pd.concat([good, empty]).to_csv(new, index=False)
    args = ["estimate", str(calibration), str(new), "--budget", "5", "--json"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2
    data = json.loads(outcome.stdout)
    assert data["complete"] is False and [r["model"] for r in data["estimates"]] == ["good"]
    (row,) = data["not_estimated"]
    assert row["model"] == "empty" and row["reason"] == "failed"
    assert "answered none" in row["message"] or "no usable" in row["message"], row
    assert "model 'empty' not estimated" in " ".join(outcome.stderr.split())
    # a complete call keeps the documented list of records
    good.to_csv(new, index=False)
    ok = runner.invoke(app, args)
    assert ok.exit_code == 0 and isinstance(json.loads(ok.stdout), dict)  # one model: a record
    pd.concat([good, good.assign(model="good2")]).to_csv(new, index=False)
    both = runner.invoke(app, args)
    assert both.exit_code == 0 and [r["model"] for r in json.loads(both.stdout)] == [
        "good",
        "good2",
    ]


def test_a_partial_estimate_json_reads_back_without_its_status_file(tmp_path):
    """estimate.json of a stopped call is marked partial by itself: read back without
    estimate_status.json, it still says which models are missing and why."""
    import threading

    from latentbench.select import EstimateSet, estimate_many

    calibration, many = _calibration_and_models(tmp_path)
    stop = threading.Event()
    part = estimate_many(calibration, many, budget=20, seed=1, stop_event=stop,
                         progress=lambda phase, done, total: done == 1 and stop.set())  # fmt: skip
    part.save(tmp_path / "est")
    (tmp_path / "est" / EstimateSet.STATUS_FILE).unlink()
    back = EstimateSet.read(tmp_path / "est")
    assert not back.complete and back.not_estimated == ("new11", "new12", "new13")
    assert [r.model for r in back] == ["new10"] and not back.single


def _calibration_and_models(tmp_path, n_new: int = 4):
    """A small calibration file and a results file of ``n_new`` new models."""
    rng = np.random.default_rng(3)
    ability, easy = rng.normal(size=10 + n_new), rng.normal(size=60)
    Y = (rng.random((10 + n_new, 60)) < 1 / (1 + np.exp(-(ability[:, None] + easy)))) * 1.0

    def cells(rows, prefix):
        return [(f"{prefix}{i}", str(j), Y[i, j]) for i in rows for j in range(60)]

    calibration, many = tmp_path / "calib.parquet", tmp_path / "many.csv"
    frame = pd.DataFrame(cells(range(10), "m"), columns=["model", "item", "score"])
    frame.to_parquet(calibration)
    new = pd.DataFrame(cells(range(10, 10 + n_new), "new"), columns=["model", "item", "score"])
    new.to_csv(many, index=False)
    return calibration, many


def test_estimate_many_stops_after_the_model_in_flight_and_keeps_the_others(tmp_path):
    """A stop (Ctrl-C in the command) during several models keeps the finished estimates,
    identical to a complete call's, and names the models not reached (they were lost)."""
    import threading

    from latentbench.select import estimate_many

    calibration, many = _calibration_and_models(tmp_path)
    full = estimate_many(calibration, many, budget=20, seed=1)
    stop = threading.Event()

    def progress(phase, done, total):
        if phase == "models" and done == 2:
            stop.set()  # as the signal handler does, while model 2 ends

    part = estimate_many(calibration, many, budget=20, seed=1, progress=progress,
                         stop_event=stop)  # fmt: skip
    assert [r.model for r in part] == ["new10", "new11"]
    assert part.not_estimated == ("new12", "new13")
    assert [r.to_dict() for r in part] == [r.to_dict() for r in full.results[:2]]
    assert part.summary().splitlines()[-1] == (
        "stopped after 2 of 4 models; not estimated: new12, new13"
    )
    assert full.not_estimated == () and "stopped" not in full.summary()


def test_estimate_command_ctrl_c_writes_the_finished_models_and_exits_130(tmp_path):
    """SIGINT during `estimate` over a file of several models: the finished ones are printed
    and written, the rest named, exit 130 (everything was lost before)."""
    import subprocess
    import sys

    calibration, many = _calibration_and_models(tmp_path)
    out = tmp_path / "est"
    # the real handler: the process interrupts itself once the second model is estimated
    script = (
        "import functools, os, signal\n"
        "import latentbench.select._estimate as e\n"
        "from latentbench.cli import main\n"
        "inner, calls = e.estimate, []\n"
        "@functools.wraps(inner)\n"
        "def estimate(*a, **k):\n"
        "    r = inner(*a, **k); calls.append(1)\n"
        "    if len(calls) == 2: os.kill(os.getpid(), signal.SIGINT)\n"
        "    return r\n"
        "e.estimate = estimate\n"
        "main()\n"
    )
    args = [sys.executable, "-c", script, "estimate", str(calibration), str(many),
            "--budget", "20", "--seed", "1", "--out", str(out)]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ,
                               "LATENTBENCH_CACHE_DIR": str(tmp_path / "cache")})  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert "stopping after the model in flight" in done.stderr
    assert "stopped after 2 of 4 models; not estimated: new12, new13" in done.stdout
    assert "interrupted (Ctrl-C): the estimates above are complete" in done.stderr
    saved = json.loads((out / "estimate.json").read_text())
    assert saved["complete"] is False  # the file itself is marked partial (it was not)
    assert [r["model"] for r in saved["estimates"]] == ["new10", "new11"]
    assert [(r["model"], r["reason"]) for r in saved["not_estimated"]] == [
        ("new12", "interrupted"),
        ("new13", "interrupted"),
    ]
    assert len(pd.read_csv(out / "estimates.csv")) == 2
    # the folder says it is partial (estimate.json alone did not)
    assert "estimate_status.json" in " ".join(done.stdout.split())
    status = json.loads((out / "estimate_status.json").read_text())
    assert status == {"complete": False, "not_estimated": ["new12", "new13"], "failures": {}}
    from latentbench.select import EstimateSet

    assert EstimateSet.read(out).not_estimated == ("new12", "new13")


def test_compare_two_checkpoints_exported_under_one_model_name(tmp_path):
    """Two files of one model name (checkpoints) were refused with a hint (--a / --b) that
    could not work: they are compared, each labelled by its file."""
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration = tmp_path / "calib.parquet"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    for name, ones in (("ckpt1000", 10), ("ckpt2000", 34)):
        scores = np.r_[np.ones(ones), np.zeros(40 - ones)]
        frame = pd.DataFrame({"item": [str(j) for j in range(40)], "score": scores})
        frame.assign(model="org/my-model").to_csv(tmp_path / f"{name}.csv", index=False)
    args = ["compare", str(calibration), str(tmp_path / "ckpt1000.csv"),
            str(tmp_path / "ckpt2000.csv"), "--budget", "40", "--json"]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    record = json.loads(outcome.output)
    assert (record["model_a"], record["model_b"]) == (
        "org/my-model (ckpt1000)", "org/my-model (ckpt2000)")  # fmt: skip
    assert record["upper"] < 0  # the later checkpoint (0.85 against 0.25) certified higher


def _calibration(tmp_path):
    """A 10-model, 40-item calibration file and one new model's answers (long CSV)."""
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=11), rng.normal(size=40)
    Y = (rng.random((11, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    cells = [(f"m{i}", str(j), Y[i, j]) for i in range(10) for j in range(40)]
    calibration, new = tmp_path / "calib.parquet", tmp_path / "new.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    pd.DataFrame({"item": [str(j) for j in range(40)], "score": Y[10]}).to_csv(new, index=False)
    return calibration, new


def test_a_fixed_design_refuses_seed_and_names_bad_design_files(tmp_path, monkeypatch):
    """Findings 3 and 4 (hostile walk 2026-12-05): --seed with --items was recorded unused;
    a header-only file, a directory or a parquet design gave tracebacks (exit 1)."""
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calibration, new = _calibration(tmp_path)
    items = tmp_path / "items.csv"
    made = runner.invoke(app, ["tiny", str(calibration), "--k", "8", "--out", str(items)])
    assert made.exit_code == 0, made.output
    args = ["estimate", str(calibration), str(new), "--items"]
    outcome = runner.invoke(app, [*args, str(items), "--seed", "5"])
    assert outcome.exit_code == 2 and "--seed with --items" in outcome.output
    # --floor and --proposal, given (even at their defaults), as compare --items refuses them
    for option, value in (("--floor", "0.5"), ("--floor", "0.3"), ("--proposal", "residual")):
        outcome = runner.invoke(app, [*args, str(items), option, value])
        assert outcome.exit_code == 2 and f"{option} with --items" in outcome.output, outcome.output
    ok = runner.invoke(app, [*args, str(items), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["options"]["seed"] == 0  # the design's own
    header = tmp_path / "header.csv"
    header.write_text(items.read_text().splitlines()[0] + "\n")
    for bad, said in ((header, "no rows"), (tmp_path, "is a directory")):
        outcome = runner.invoke(app, [*args, str(bad)])
        assert outcome.exit_code == 2 and said in outcome.output, outcome.output
        assert "Traceback" not in outcome.output
    parquet = tmp_path / "items.parquet"
    outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "8", "--out", str(parquet)])
    assert outcome.exit_code == 0 and pd.read_parquet(parquet)["item"].tolist() == (
        pd.read_csv(items, dtype={"item": str})["item"].tolist()
    )
    from_parquet = runner.invoke(app, [*args, str(parquet), "--json"])
    assert from_parquet.exit_code == 0, from_parquet.output
    assert json.loads(from_parquet.stdout)["summary"] == json.loads(ok.stdout)["summary"]


def test_tiny_out_suffixes_stdout_and_grammar(tmp_path, monkeypatch):
    """Finding 11: --out x.parquet held CSV text, --out - wrote a file named '-',
    'wrote 1 items'."""
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    calibration, _ = _calibration(tmp_path)
    one = runner.invoke(app, ["tiny", str(calibration), "--k", "1", "--out", "one.csv"])
    assert one.exit_code == 0 and "wrote 1 item to one.csv" in one.output
    outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "3", "--out", "-"])
    assert outcome.exit_code == 0 and not (tmp_path / "-").exists()
    assert outcome.stdout.startswith("item,order,probability,weight,floor,seed,calibration_hash")
    assert len(outcome.stdout.splitlines()) == 4
    outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "3", "--out", "items.tsv"])
    assert outcome.exit_code == 2 and "expected a file name ending in .csv" in outcome.output
    assert not (tmp_path / "items.tsv").exists()


def test_a_failed_command_leaves_no_empty_out_folder(tmp_path, monkeypatch):
    """Finding 11: estimate / compare created --out DIR before failing."""
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calibration, new = _calibration(tmp_path)
    items = tmp_path / "items.csv"
    runner.invoke(app, ["tiny", str(calibration), "--k", "8", "--out", str(items)])
    partial = tmp_path / "partial.csv"
    first = pd.read_csv(items, dtype={"item": str})["item"].iloc[0]
    frame = pd.read_csv(new, dtype={"item": str})
    frame[frame["item"] != first].to_csv(partial, index=False)
    out = tmp_path / "est"
    outcome = runner.invoke(
        app, ["estimate", str(calibration), str(partial), "--items", str(items), "--out", str(out)]
    )
    assert outcome.exit_code == 2 and "did not answer 1 of the 8 items" in outcome.output
    assert not out.exists()
    out = tmp_path / "cmp" / "deeper"
    args = ["compare", str(calibration), str(new), "--a", "nosuch", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 2
    assert not (tmp_path / "cmp").exists()
    args = ["compare", str(calibration), str(new), str(partial), "--margin", "1"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2 and "--margin 1.0; expected a number in (0, 1)" in outcome.output


def test_a_call_that_estimates_no_model_marks_an_earlier_estimate_in_out(tmp_path):
    """Every model of a call failing (or Ctrl-C before the first ended) wrote nothing and
    left the earlier call's estimate.json in --out looking current: it is marked stale, with
    this call's failures."""
    from latentbench.select import EstimateSet

    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration, new, out = tmp_path / "calib.parquet", tmp_path / "new.csv", tmp_path / "est"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    _long().assign(model="good").to_csv(new, index=False)
    args = ["estimate", str(calibration), str(new), "--budget", "5", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0 and EstimateSet.read(out).complete
    empty = _long().assign(score=np.nan)
    both = [empty.assign(model="e1"), empty.assign(model="good")]  # 'good' fails this time
    pd.concat(both).to_csv(new, index=False)
    outcome = runner.invoke(app, [*args, "--json"])
    assert outcome.exit_code == 2
    assert [r["model"] for r in json.loads(outcome.stdout)["not_estimated"]] == ["e1", "good"]
    assert "is from an earlier call" in " ".join(outcome.stderr.split())
    back = EstimateSet.read(out)
    assert [r.model for r in back] == ["good"]  # the earlier estimate, kept and marked
    # (review: the last call's failures were mixed in, 'good' both estimated and failed)
    assert not back.complete and list(back.failures) == ["(the last call)"]
    status = json.loads((out / EstimateSet.STATUS_FILE).read_text())
    assert set(status["last_call"]["failures"]) == {"e1", "good"}


def test_compare_twin_reads_one_file_of_two_models_and_the_command_takes_its_options(tmp_path):
    """``compare(cal, file)`` pairs a file's two models as the command does (``responses_b``
    was required in Python), and the command passes ``--floor``, ``--rank``, ``--proxy``
    (Python-only before): the same result from both."""
    from latentbench.select import compare

    rng = np.random.default_rng(1)
    ability = rng.normal(size=10)
    easy = rng.normal(size=60)
    p = 1 / (1 + np.exp(-(ability[:, None] + easy[None, :])))
    cells = [(f"m{i}", f"q{j}", float(rng.random() < p[i, j])) for i in range(8) for j in range(60)]
    calibration, two = tmp_path / "calib.parquet", tmp_path / "two.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    new = [(f"m{i}", f"q{j}", float(rng.random() < p[i, j])) for i in (8, 9) for j in range(60)]
    pd.DataFrame(new, columns=["model", "item", "score"]).to_csv(two, index=False)
    options = {"budget": 30, "seed": 2, "floor": 0.3, "proxy": "ridge"}
    ours = compare(calibration, two, **options)  # (old: TypeError, responses_b missing)
    assert (ours.model_a, ours.model_b) == ("m8", "m9")
    assert ours.options["floor"] == 0.3 and ours.options["proxy"] == "ridge"
    assert compare(calibration, two, model_b="m8", **options).model_a == "m9"
    args = ["compare", str(calibration), str(two), "--budget", "30", "--seed", "2",
            "--floor", "0.3", "--proxy", "ridge", "--json"]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    printed = json.loads(outcome.stdout)
    assert printed["items"] == list(ours.items)
    assert printed["difference"] == pytest.approx(ours.difference)
    outcome = runner.invoke(app, [*args[:3], "--proxy", "nearest"])
    assert outcome.exit_code == 2 and "--proxy 'nearest'" in outcome.output


def test_compare_two_checkpoints_run_on_a_tiny_design(tmp_path):
    """The training team's path (2026-12-06): ``tiny`` writes a design, two checkpoints are
    run on its items only, and ``compare --items`` compares their full-benchmark scores as
    ``compare(items=)`` does (before, the command had no --items and compared the two on the
    design's items alone); --budget, --seed or --floor with --items are refused (exit 2), and
    the page of the comparison says what would decide it with a design."""
    from latentbench.report import build_compare_report
    from latentbench.select import compare

    rng = np.random.default_rng(3)
    ability, easy = rng.normal(size=12), rng.normal(size=200)
    p = 1 / (1 + np.exp(-(ability[:, None] + easy[None, :])))
    Y = (rng.random(p.shape) < p).astype(float)
    cells = [(f"m{i}", f"q{j}", Y[i, j]) for i in range(10) for j in range(200)]
    calibration, items = tmp_path / "calib.parquet", tmp_path / "items.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    assert runner.invoke(app, ["tiny", str(calibration), "--k", "40", "--out", str(items)]
                         ).exit_code == 0  # fmt: skip
    design = pd.read_csv(items, dtype={"item": str})
    paths = []
    for i, name in ((10, "ckpt1000"), (11, "ckpt2000")):
        rows = [("m", f"q{j}", Y[i, j]) for j in range(200) if f"q{j}" in set(design["item"])]
        paths.append(tmp_path / f"{name}.csv")
        pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(paths[-1], index=False)
    args = ["compare", str(calibration), *map(str, paths), "--items", str(items)]
    outcome = runner.invoke(app, [*args, "--json"])
    assert outcome.exit_code == 0, outcome.output
    printed = json.loads(outcome.stdout)
    ours = compare(calibration, *paths, items=items)
    assert printed["items"] == list(ours.items) == design["item"].tolist()
    assert printed["difference"] == pytest.approx(ours.difference)
    assert printed["n_items"] == 200 and printed["options"]["design"] == "fixed"
    assert (printed["model_a"], printed["model_b"]) == ("m (ckpt1000)", "m (ckpt2000)")
    assert printed["warnings"] == [] and "warning:" not in outcome.output  # nothing to say
    for option, value in (("--budget", "40"), ("--seed", "1"), ("--floor", "0.3")):
        outcome = runner.invoke(app, [*args, option, value])
        assert outcome.exit_code == 2 and f"{option} with --items" in outcome.output
    outcome = runner.invoke(app, args[:4])  # no --items: the design's items alone, said
    assert outcome.exit_code == 0 and "--items DESIGN.csv" in outcome.output
    page = build_compare_report(ours)
    assert "a fixed design (latentbench tiny)" in page
    assert ours.higher is None  # two checkpoints of close ability, 40 items: undecided
    assert "A larger design (latentbench tiny --k" in page and "--budget" not in page
    # the checkpoints' every answer: those outside the design are said to be unused, on
    # stderr and in the JSON, by compare --items and estimate --items alike
    full = []
    for i, name in ((10, "full1000"), (11, "full2000")):
        full.append(tmp_path / f"{name}.csv")
        rows = [("m", f"q{j}", Y[i, j]) for j in range(200)]
        pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(full[-1], index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), *map(str, full), "--items",
                                  str(items), "--json"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    said = (f"320 answers outside the 40 items of {items} were not used ('m (full1000)': 160, "
            "'m (full2000)': 160)")  # fmt: skip
    assert said in " ".join(outcome.stderr.split())
    assert [w for w in json.loads(outcome.stdout)["warnings"] if said in w]
    outcome = runner.invoke(app, ["estimate", str(calibration), str(full[0]), "--items",
                                  str(items), "--json"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    said = f"'m': 160 answers outside the 40 items of {items} were not used"
    assert said in " ".join(outcome.stderr.split())


def test_compare_out_writes_the_items_table(tmp_path):
    """``compare --out DIR`` wrote compare.json only; it also writes compare_items.csv, one
    row per item drawn (ids such as ``NA`` or ``007`` kept as written), named in the wrote
    line, and the same table as the saved result's."""
    from latentbench.io._files import read_csv_ids
    from latentbench.select import CompareResult

    rng = np.random.default_rng(4)
    ability, easy = rng.normal(size=10), rng.normal(size=50)
    p = 1 / (1 + np.exp(-(ability[:, None] + easy[None, :])))
    ids = ["NA", "007", *(f"q{j}" for j in range(2, 50))]
    cells = [(f"m{i}", ids[j], float(rng.random() < p[i, j])) for i in range(10) for j in range(50)]
    table = pd.DataFrame(cells, columns=["model", "item", "score"])
    calibration, two = tmp_path / "calib.parquet", tmp_path / "two.csv"
    table[table.model.isin([f"m{i}" for i in range(8)])].to_parquet(calibration)
    pair = table[table.model == "m8"]  # m9: m8 but for one item, run to the last item
    pair = pd.concat([pair, pair.assign(model="m9", score=np.r_[1 - pair.score.iloc[:1],
                                                                pair.score.iloc[1:]])])  # fmt: skip
    pair.to_csv(two, index=False)
    out = tmp_path / "cmp"
    args = ["compare", str(calibration), str(two), "--budget", "50", "--delta", "1e-6",
            "--out", str(out)]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    said = " ".join(outcome.output.split())
    assert f"wrote {out / 'compare.json'}, {out / 'compare_items.csv'}" in said
    written = read_csv_ids(out / "compare_items.csv", ("item",))
    result = CompareResult.read(out)
    assert written["item"].tolist() == list(result.items) and len(written) == 50
    assert {"NA", "007"} <= set(written["item"])
    pd.testing.assert_frame_equal(written, result.to_frame(), check_dtype=False)


@pytest.mark.parametrize(
    ("option", "value", "keyword"),
    [
        ("--k", "0", {"k": 0}),
        ("--precision", "0.7", {"precision": 0.7}),
        ("--floor", "0", {"floor": 0.0}),
        ("--rank", "0", {"rank": 0}),
        ("--seed", "-1", {"seed": -1}),
    ],
)
def test_tiny_refuses_an_option_out_of_range_before_looking_at_out(
    tmp_path, monkeypatch, option, value, keyword
):
    """`tiny CAL --k 0 --out EXISTING.csv` said the --out exists before it said --k 0 was
    invalid (fixing --out then failed on --k). The options that need no data are refused
    first now, in tiny's own words (its Python message, rewritten into flags)."""
    from latentbench.cli._common import cli_spelling
    from latentbench.exceptions import InputError
    from latentbench.select import tiny

    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calibration, _ = _calibration(tmp_path)
    existing = tmp_path / "items.csv"
    existing.write_text("item,order,probability\n0,1,0.1\n")
    outcome = runner.invoke(app, ["tiny", str(calibration), option, value, "--out", str(existing)])
    assert outcome.exit_code == 2, outcome.output
    assert "exists" not in outcome.output
    with pytest.raises(InputError) as said:
        tiny(calibration, **keyword)
    assert f"error: {cli_spelling(str(said.value))}" in " ".join(outcome.output.split())
    assert existing.read_text() == "item,order,probability\n0,1,0.1\n"


def test_tiny_refuses_a_delta_out_of_range_before_looking_at_out(tmp_path):
    """As the other options: --delta (with --precision) out of range, or below estimate's
    1e-16, is said before --out exists."""
    from latentbench.cli._common import cli_spelling
    from latentbench.exceptions import InputError
    from latentbench.select._estimate import _check_delta

    calibration, existing = tmp_path / "calib.parquet", tmp_path / "items.csv"
    existing.write_text("")
    for delta in ("2", "1e-20"):
        outcome = runner.invoke(app, ["tiny", str(calibration), "--precision", "0.1",
                                      "--delta", delta, "--out", str(existing)])  # fmt: skip
        assert outcome.exit_code == 2 and "exists" not in outcome.output, outcome.output
        with pytest.raises(InputError) as said:
            _check_delta(float(delta))
        assert f"error: {cli_spelling(str(said.value))}" in " ".join(outcome.output.split())


def test_tiny_refuses_k_below_one_before_reading_the_calibration(tmp_path):
    """tiny(CAL, k=0) read (and fitted) the calibration before refusing k; a missing one was
    said instead of k. k >= 1 needs no data: refused first (the item count, an upper bound,
    is checked after the calibration is read, as before)."""
    from latentbench.exceptions import InputError
    from latentbench.select import tiny

    for k in (0, -3):
        with pytest.raises(InputError, match=rf"^k={k}; expected an integer >= 1 \(the number"):
            tiny(tmp_path / "no-such.parquet", k)


def test_tiny_refuses_every_option_out_of_range_before_reading_the_calibration(tmp_path):
    """tiny(CAL, floor=0) read (and fitted) the calibration before refusing the floor (a
    missing one was said instead); the options that need no data are refused first now, by
    the public check the command line runs too, in the order of its parameters."""
    from latentbench.exceptions import InputError
    from latentbench.select import check_tiny_options, tiny

    missing = tmp_path / "no-such.parquet"
    for keyword, said in (
        ({"floor": 0.0}, r"^floor=0\.0; expected a value in \(0, 1\]$"),
        ({"floor": "half"}, r"^floor='half'; expected a value in \(0, 1\]$"),
        ({"rank": 0, "seed": -1}, r"^rank=0; expected an integer >= 1$"),
        ({"k": 0, "seed": -1}, r"^k=0; expected an integer >= 1 \(the number of items"),
    ):
        with pytest.raises(InputError, match=said):
            tiny(missing, **keyword)
        with pytest.raises(InputError, match=said):
            check_tiny_options(**keyword)
    check_tiny_options(precision=0.1, delta=0.05)  # in range: nothing said


def test_tiny_on_the_command_line_checks_its_options_with_the_library(tmp_path, monkeypatch):
    """The command line repeated six of the library's range rules (to say them before --out
    was looked at); it runs the library's public check instead (one rule, one place): what
    that check says is what the command says, before --out."""
    import inspect

    import latentbench.cli._estimate as cli_estimate
    from latentbench.exceptions import InputError

    def refuse(k=100, **options):
        raise InputError(f"floor={options['floor']!r}; expected a value the library chose")

    monkeypatch.setattr("latentbench.select.check_tiny_options", refuse)
    existing = tmp_path / "items.csv"
    existing.write_text("")
    outcome = runner.invoke(
        app, ["tiny", str(tmp_path / "c.parquet"), "--floor", "0.3", "--out", str(existing)]
    )
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "error: --floor 0.3; expected a value the library" in said
    assert "(the number of items to draw)" not in inspect.getsource(cli_estimate)


def test_a_precision_alone_runs_until_it_is_reached(tmp_path):
    """--precision with no --budget stopped at the default's 100 items, short of it (BFCL:
    half-width 0.128 for an asked 0.03, with a warning to raise the budget): it now runs
    until the precision; a --budget given still bounds it, and so does the Python twin's."""
    rng = np.random.default_rng(3)
    ability, easy = rng.normal(size=13), rng.normal(size=400)
    Y = (rng.random((13, 400)) < 1 / (1 + np.exp(-(ability[:, None] + easy)))) * 1.0
    cells = [(f"m{i}", str(j), Y[i, j]) for i in range(13) for j in range(400)]
    frame = pd.DataFrame(cells, columns=["model", "item", "score"])
    calibration, new = tmp_path / "calib.parquet", tmp_path / "new.csv"
    frame[frame.model != "m12"].to_parquet(calibration)
    frame[frame.model == "m12"].assign(model="x").to_csv(new, index=False)
    args = ["estimate", str(calibration), str(new), "--precision", "0.08", "--json"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    data = json.loads(outcome.stdout)
    assert data["stopped"] == "precision" and 100 < data["n_evaluated"] < 400
    assert (data["upper"] - data["lower"]) / 2 <= 0.08 and data["options"]["budget"] is None
    bounded = runner.invoke(app, [*args, "--budget", "100"])
    assert bounded.exit_code == 0, bounded.output
    data = json.loads(bounded.stdout)
    assert data["stopped"] == "budget" and data["n_evaluated"] == 100
    assert "precision 0.08 not reached" in " ".join(bounded.stderr.split())
    from latentbench import ResponseMatrix, estimate
    from latentbench.exceptions import DataWarning

    matrix = ResponseMatrix.from_long(frame[frame.model != "m12"])
    answers = frame[frame.model == "m12"].set_index("item")["score"]
    twin = estimate(matrix, answers, model="x", precision=0.08)
    assert twin.stopped == "precision" and twin.items == tuple(json.loads(outcome.stdout)["items"])
    with pytest.warns(DataWarning, match="precision 0.08 not reached"):
        assert estimate(matrix, answers, model="x", precision=0.08, budget=100).n_evaluated == 100


def test_a_floor_the_uniform_proposal_does_not_use_is_said(tmp_path):
    """`estimate --proposal uniform --floor 0.3` drew the same items with the same interval
    as without --floor, not a word said (the floor is the uniform share of the residual or
    information design: the uniform one is uniform whatever it is). Now a warning names the
    floor and the proposal, kept in the result's warnings; the estimate is unchanged, and no
    word without --floor or with another proposal."""
    import warnings

    from latentbench.exceptions import DataWarning
    from latentbench.select import estimate

    calibration, new = _calibration(tmp_path)
    answers = pd.read_csv(new, dtype={"item": str}).set_index("item")["score"]
    plain = estimate(calibration, answers, proposal="uniform", budget=20)
    with pytest.warns(DataWarning, match=r"^floor=0\.3 not used: proposal='uniform' draws"):
        floored = estimate(calibration, answers, proposal="uniform", floor=0.3, budget=20)
    assert (floored.items, floored.score, floored.lower) == (plain.items, plain.score, plain.lower)
    assert any(w.startswith("floor=0.3 not used") for w in floored.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        estimate(calibration, answers, proposal="residual", floor=0.3, budget=20)
    said = (
        "warning: --floor 0.5 not used: --proposal uniform draws the same design whatever the floor"
    )
    args = ["estimate", str(calibration), str(new), "--budget", "20", "--proposal", "uniform"]
    for extra, warned in ((["--floor", "0.5"], True), ([], False)):  # the default's value too
        outcome = runner.invoke(app, [*args, *extra])
        text = " ".join(outcome.output.split())
        assert outcome.exit_code == 0 and (said in text) is warned, text
        assert "floor=" not in text and "after 20 of 40 items" in text
