"""``estimate`` against the local OpenAI-compatible test server: durable, resumable, capped."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.exceptions import DataWarning
from latentbench.io import ResponseMatrix
from latentbench.io.store import Store
from latentbench.select._estimate_live import estimate_live

from .conftest import run_cli, said


def _calibration(s) -> ResponseMatrix:
    hist = pd.read_csv(s.tmp / "history.csv").set_index("model")
    return ResponseMatrix.from_wide(hist)


def test_live_estimate_resumes_without_paying_twice(live_setup):
    s = live_setup
    config = s.write_config()
    store = s.tmp / "est.duckdb"
    cal = _calibration(s)
    first = estimate_live(cal, config, store, model="model-2", budget=12, seed=3)
    assert first.stopped == "budget" and first.n_evaluated == 12
    # the answers are the endpoint's (Y of model-2 on the asked items)
    cols = [int(i[1:]) for i in first.items]
    assert np.array_equal(np.asarray(first.answers), s.Y[2, cols])
    assert sum(s.state.answered.values()) == 12
    assert first.options["live"]["n_paid"] == 12
    # the same call again: every answer replayed from the store, the same result
    again = estimate_live(cal, config, store, model="model-2", budget=12, seed=3)
    assert sum(s.state.answered.values()) == 12 and again.options["live"]["n_paid"] == 0
    assert again.items == first.items and again.lower == first.lower
    # a larger budget continues from where it stopped: only the new items are paid
    more = estimate_live(cal, config, store, model="model-2", budget=20, seed=3)
    assert more.items[:12] == first.items and sum(s.state.answered.values()) == 20
    with Store(store, read_only=True) as db:
        run_id = first.options["live"]["run_id"]
        decisions = db.selection_decisions(run_id)
    final = sorted((d for d in decisions if d.get("phase") == "final"), key=lambda d: -d["round"])
    assert [d["estimate"]["n_evaluated"] for d in final] == [12, 12, 20]


def test_live_estimate_keeps_the_first_sessions_target(live_setup):
    """A resumed session with another precision stops at its own but keeps the run's bets (the
    first session's target), so the bets on the rounds already played stay predictable."""
    s = live_setup
    config = s.write_config()
    store = s.tmp / "target.duckdb"
    cal = _calibration(s)
    first = estimate_live(cal, config, store, model="model-1", budget=6, precision=0.3, seed=5)
    assert first.options["target"] == 0.3
    more = estimate_live(cal, config, store, model="model-1", budget=10, precision=0.1, seed=5)
    assert more.options["target"] == 0.3 and more.items[: len(first.items)] == first.items
    with Store(store, read_only=True) as db:
        decisions = db.selection_decisions(first.options["live"]["run_id"])
    assert [d["target"] for d in decisions if d.get("phase") == "target"] == [0.3]
    assert sorted(d["round"] for d in decisions if d.get("phase") == "final") == [-2, -1]


def test_live_estimate_sized_for_its_first_budget_equals_the_replay(live_setup):
    """Without a precision the first session's budget sizes the run's sequence (recorded as
    the target decision with ``sized_for = "budget"``): the live result equals the replay of
    the same answers with that budget, and a resumed session with a larger budget or a
    precision keeps that target (its bets on the rounds played are the first session's)."""
    from latentbench.select import estimate

    s = live_setup
    config = s.write_config()
    store = s.tmp / "budget.duckdb"
    cal = _calibration(s)
    first = estimate_live(cal, config, store, model="model-0", budget=8, seed=2)
    answers = dict(zip([f"q{k:03d}" for k in range(s.Y.shape[1])], s.Y[0], strict=True))
    replay = estimate(cal, answers, model="model-0", budget=8, seed=2)
    assert first.options["sized_for"] == "budget" and first.options["target"] is not None
    assert first.options["target"] == pytest.approx(replay.options["target"])
    assert (first.items, first.lower, first.upper) == (replay.items, replay.lower, replay.upper)
    more = estimate_live(cal, config, store, model="model-0", budget=14, precision=0.2, seed=2)
    assert more.options["target"] == first.options["target"]
    assert more.options["sized_for"] == "budget" and more.items[:8] == first.items
    with Store(store, read_only=True) as db:
        decisions = db.selection_decisions(first.options["live"]["run_id"])
    targets = [d for d in decisions if d.get("phase") == "target"]
    assert [(d["target"], d["sized_for"]) for d in targets] == [(first.options["target"], "budget")]


def test_live_estimate_spend_cap_then_resume(live_setup):
    s = live_setup
    store = s.tmp / "cap.duckdb"
    cal = _calibration(s)
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 5})
    r = estimate_live(cal, capped, store, model="model-0", budget=10, seed=1)
    assert r.stopped == "capped" and r.n_evaluated == 5
    assert r.lower <= r.upper and sum(s.state.answered.values()) == 5
    # in Python the call is what is run again (the note said "re-run the same command")
    assert any(w.endswith("; run the same command (or call) again to resume") for w in r.warnings)
    assert not any("re-run" in w for w in r.warnings), r.warnings


def test_live_estimate_cli(live_setup):
    from latentbench.cli import _register, app

    _register()
    s = live_setup
    config = s.write_config()
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    res = CliRunner().invoke(
        app,
        [
            "estimate",
            str(cal_path),
            "--live",
            str(config),
            "--store",
            str(s.tmp / "c.duckdb"),
            "--model",
            "model-1",
            "--budget",
            "8",
            "--json",
        ],
        env={s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")},
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["model"] == "model-1" and data["n_evaluated"] == 8
    # the configuration is select live's: what only select live reads is said, not silently
    # dropped (its [run] budget = 96 and [proxy] history were ignored without a word)
    said_line = " ".join(res.stderr.split())
    assert (
        "[run] budget = 96, seed = 7, batch_size = 8, init_batch = 8; [policy] refit_every; "
        "[proxy] history, rank: select live's settings, not used by estimate --live (it uses "
        "--budget, --seed, its own design, the calibration in place of a history)"
    ) in said_line
    assert any("not used by estimate --live" in note for note in data["warnings"])
    # capped: the hint keeps its "[run]" (rich read it as markup and printed "raise  spend_cap")
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 3})
    args = ["estimate", str(cal_path), "--live", str(capped), "--store",
            str(s.tmp / "cap.duckdb"), "--model", "model-1", "--budget", "8"]  # fmt: skip
    env = {s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    res = CliRunner().invoke(app, args, env=env)
    assert res.exit_code == 3 and "(raise [run] spend_cap first)" in " ".join(res.output.split())


def test_live_estimate_calibrated_on_the_same_store(live_setup):
    """--store S --benchmark B --live: the calibration is S's benchmark B, the run is durable in
    S too; the result equals the one calibrated on the same matrix from a file."""
    from latentbench.cli import _register, app

    _register()
    s = live_setup
    config = s.write_config()
    hist = pd.read_csv(s.tmp / "history.csv").set_index("model")
    long = hist.stack().rename("score").reset_index()
    long.columns = ["model", "item", "score"]
    frame = long.assign(
        benchmark="hist", metric="acc", filter="none", trial=0, split="test", source="test",
        source_file="history.csv", run_timestamp=pd.NaT, item_hash=None,
        source_model=long["model"], flag=None,
    )  # fmt: skip
    store = s.tmp / "both.duckdb"
    with Store(store) as db:
        db.ingest(frame)
    env = {s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    args = ["estimate", "--store", str(store), "--benchmark", "hist", "--live", str(config),
            "--model", "model-1", "--budget", "6", "--seed", "4", "--json"]  # fmt: skip
    res = CliRunner().invoke(app, args, env=env)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["n_evaluated"] == 6 and data["calibration"]["source"] == f"{store}:hist"
    assert sum(s.state.answered.values()) == 6
    reference = estimate_live(
        _calibration(s), config, s.tmp / "ref.duckdb", model="model-1", budget=6, seed=4
    )
    # the store sorts the models by name (h0, h1, h10, ...): the same fit up to rounding
    assert data["items"] == list(reference.items)
    assert data["score"] == pytest.approx(reference.score, abs=1e-12)
    assert (data["lower"], data["upper"]) == (reference.lower, reference.upper)
    with Store(store, read_only=True) as db:  # the run is stored beside the benchmark
        observed = db.selection_observations(data["options"]["live"]["run_id"])
        assert db.benchmarks() == ["hist"]
    assert sorted(observed["item"]) == sorted(data["items"])
    res = CliRunner().invoke(app, args, env=env)  # re-run: replayed from the store
    assert res.exit_code == 0 and json.loads(res.stdout)["options"]["live"]["n_paid"] == 0


@pytest.mark.slow
def test_live_estimate_sigkill_and_resume(live_setup, monkeypatch):
    """SIGKILL with a request in flight; the same command resumes: the same result as an
    uninterrupted run, nothing stored is asked again, at most the one in-flight cell twice."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from collections import Counter

    s = live_setup
    config = s.write_config()
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    env = {**os.environ, s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}

    def command(store):
        return [sys.executable, "-c", "from latentbench.cli import main; main()", "estimate",
                str(cal_path), "--live", str(config), "--store", str(store), "--model",
                "model-3", "--budget", "16", "--seed", "2", "--json"]  # fmt: skip

    # the uninterrupted reference run, in this process (the same calibration cache)
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", env["LATENTBENCH_CACHE_DIR"])
    ref = estimate_live(
        cal_path, config, s.tmp / "ref.duckdb", model="model-3", budget=16, seed=2
    ).to_dict()
    s.state.requests.clear()
    s.state.answered.clear()
    s.state.hold_after = 6  # the 7th request is held: six items stored, one in flight
    proc = subprocess.Popen(command(s.tmp / "kill.duckdb"), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert s.state.held.wait(s.wait), "the run never reached the hold"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(s.wait) == -signal.SIGKILL
    finally:
        proc.kill()
    s.state.hold_after = None
    before = Counter(s.state.answered)
    assert sum(before.values()) == 6
    time.sleep(0.05)
    # the same command again, in this process: it reads only the store the killed one left
    resumed = run_cli(*command(s.tmp / "kill.duckdb")[3:], env=env)
    assert resumed.exit_code == 0, said(resumed)
    out = json.loads(resumed.stdout)
    assert out["items"] == ref["items"] and out["answers"] == ref["answers"]
    assert (out["score"], out["lower"], out["upper"]) == (ref["score"], ref["lower"], ref["upper"])
    assert out["options"]["live"]["n_replayed"] == 6 and out["options"]["live"]["n_paid"] == 10
    # nothing answered before the kill was asked again
    assert max(s.state.answered.values()) == 1 and sum(s.state.answered.values()) == 16


def test_live_estimate_imports_a_scorer_next_to_the_config(live_setup, monkeypatch):
    """A `module:function` scorer beside the config imports from any working directory
    (the Python API, as `select live` does), first there, and what it imports when it runs
    resolves there too; a module of that name imported from elsewhere is an error."""
    from latentbench.exceptions import InputError

    s = live_setup
    monkeypatch.setattr(sys, "path", list(sys.path))  # restored after the test
    tag = s.tmp.name.replace("-", "_")
    module, helper = f"myscorer_{tag}", f"myhelper_{tag}"
    (s.tmp / f"{helper}.py").write_text(
        "def same(a, b):\n    return float(str(a).strip() == str(b).strip())\n"
    )
    (s.tmp / f"{module}.py").write_text(
        f"def score(response, reference):\n    import {helper}\n"
        f"    return {helper}.same(response, reference)\n"
    )
    config = s.write_config()
    text = config.read_text().replace(
        'kind = "exact_match"', f'kind = "python"\nfunction = "{module}:score"'
    )
    config.write_text(text)
    monkeypatch.chdir(s.tmp.parent)
    res = estimate_live(_calibration(s), config, s.tmp / "py.duckdb", model="model-1", budget=8)
    assert res.n_evaluated == 8 and "failed" not in res.stopped
    (s.tmp / "json.py").write_text("def score(response, reference):\n    return 1.0\n")
    config.write_text(text.replace(f"{module}:score", "json:score"))
    with pytest.raises(InputError, match=r"'json' is already imported from .* shadows"):
        estimate_live(_calibration(s), config, s.tmp / "py2.duckdb", model="model-1", budget=8)


def test_live_estimate_checks_its_design_before_any_work(live_setup):
    """A bad floor / proposal / proxy is refused before the store is created or the
    calibration fitted (it was refused only once both were done)."""
    from latentbench.exceptions import InputError

    s = live_setup
    config = s.write_config()
    for option in ({"floor": 0.0}, {"proposal": "best"}, {"proxy": "oracle"}):
        path = s.tmp / "never.duckdb"
        with pytest.raises(InputError, match=next(iter(option))):
            estimate_live(s.tmp / "missing-calibration.parquet", config, path, **option)
        assert not path.exists()


def test_live_estimate_says_a_floor_the_uniform_proposal_does_not_use(live_setup):
    """estimate_live(..., proposal="uniform", floor=0.3) ran as without the floor, unsaid
    (as estimate did): the warning names it and the result keeps it in its warnings."""
    s = live_setup
    config, cal = s.write_config(), _calibration(s)
    with pytest.warns(DataWarning, match=r"floor=0\.3 not used: proposal='uniform'"):
        one = estimate_live(cal, config, s.tmp / "f.duckdb", model="model-0", budget=4,
                            proposal="uniform", floor=0.3)  # fmt: skip
    assert any(w.startswith("floor=0.3 not used") for w in one.warnings)
    other = estimate_live(cal, config, s.tmp / "g.duckdb", model="model-0", budget=4,
                          proposal="uniform")  # fmt: skip
    assert not any("floor" in w for w in other.warnings)


def test_live_estimate_refuses_failed_cells_scored_zero(live_setup):
    """on_error = "zero" scored a failed cell 0 in the estimate without a word (a model
    whose every request failed printed score 0.000 [0.000, 0.252], exit 0): refused before
    anything is asked or stored, naming the file and the key."""
    from latentbench.exceptions import InputError

    s = live_setup
    config = s.write_config(s.tmp / "zero.toml", run={"on_error": "zero"})
    path = s.tmp / "zero.duckdb"
    with pytest.raises(InputError, match=r"zero.toml: \[run\] on_error = 'zero' does not") as err:
        estimate_live(_calibration(s), config, path, model="model-1", budget=8)
    assert "the same command (or call) then asks it again" in str(err.value)  # Python too
    assert not path.exists() and not s.state.requests


def test_live_estimate_names_every_model_when_none_is_given(live_setup):
    from latentbench.cli import _register, app
    from latentbench.exceptions import InputError

    s = live_setup
    config = s.write_config()
    with pytest.raises(InputError, match=r"name the one to estimate with model=NAME \(one of "):
        estimate_live(_calibration(s), config, s.tmp / "n.duckdb")
    _register()
    args = ["estimate", str(s.tmp / "history.csv"), "--live", str(config), "--store",
            str(s.tmp / "n.duckdb")]  # fmt: skip
    outcome = CliRunner().invoke(app, args)
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "with --model NAME" in text
    assert all(f"model-{k}" in text for k in range(len(s.names)))


def test_a_new_run_reuses_answers_paid_by_another(live_setup):
    """Another seed or calibration on the same store starts a new run, but the answers already
    paid for the same model, items, scorer and oracle are stored into it, not paid again; a
    changed oracle option (temperature) or an injected oracle's answers are never reused."""
    s = live_setup
    config = s.write_config()
    store = s.tmp / "reuse.duckdb"
    cal = _calibration(s)
    first = estimate_live(cal, config, store, model="model-2", budget=12, seed=3)
    paid = sum(s.state.answered.values())
    assert paid == 12
    other = estimate_live(cal, config, store, model="model-2", budget=12, seed=4)
    shared = set(first.items) & set(other.items)
    live = other.options["live"]
    assert other.options["live"]["run_id"] != first.options["live"]["run_id"]
    assert live["n_reused"] == len(shared) and live["n_paid"] == 12 - len(shared)
    assert sum(s.state.answered.values()) == paid + 12 - len(shared)
    cols = [int(i[1:]) for i in other.items]  # reused answers are the endpoint's
    assert np.array_equal(np.asarray(other.answers), s.Y[2, cols])
    if shared:
        assert any("not paid again" in w for w in other.warnings)
    # a retry option does not change answers; a temperature does
    again = s.write_config(s.tmp / "retries.toml", oracle={"retries": 5})
    third = estimate_live(cal, again, store, model="model-2", budget=12, seed=6)
    known = set(first.items) | set(other.items)
    assert third.options["live"]["n_reused"] == len(set(third.items) & known)
    assert third.options["live"]["n_paid"] == 12 - len(set(third.items) & known)
    hot = s.write_config(s.tmp / "hot.toml", oracle={"temperature": 1.0})
    fourth = estimate_live(cal, hot, store, model="model-2", budget=12, seed=3)
    assert fourth.options["live"]["n_reused"] == 0 and fourth.options["live"]["n_paid"] == 12


def test_a_run_stored_before_answer_options_were_part_of_its_identity_resumes(live_setup):
    """The identity now holds the oracle's answer options and the models' endpoints (a run
    resumed with another temperature mixed two configurations' answers); a run stored before
    that resumes under its run_id as it was."""
    from latentbench.select.live import LiveConfig
    from latentbench.select.live._run import _open_run

    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config(run={"run_id": "old-run"}))
    record = cfg.to_record()
    record["identity"].pop("answers")
    with Store(s.tmp / "old.duckdb") as db:
        db.start_selection(record, run_id="old-run")
        assert _open_run(db, cfg, "old-run") is True
    hot = LiveConfig.from_toml(s.write_config(s.tmp / "hot.toml", oracle={"temperature": 1.0}))
    assert hot.default_run_id() != LiveConfig.from_toml(s.write_config()).default_run_id()
    assert hot.identity()["answers"]["oracle"] == {"temperature": 1.0}


def test_a_run_stored_under_its_old_default_id_resumes_there(live_setup):
    """A capped run stored before the identity held the answer options, under the default
    run id of then: the same configuration resumes it (its cap, its paid cells), where the
    new default id would have started a new run and gone past the cap (review of the day)."""
    from latentbench.select.live import LiveConfig
    from latentbench.select.live._run import resolve_run_id

    s = live_setup
    store = s.tmp / "legacy.duckdb"
    capped = s.write_config(s.tmp / "cap6.toml", run={"spend_cap": 6})
    cfg = LiveConfig.from_toml(capped)
    first = estimate_live(_calibration(s), cfg, store, model="model-2", budget=12, seed=3)
    assert first.stopped == "capped" and sum(s.state.answered.values()) == 6
    new_id = first.options["live"]["run_id"]
    suffix = new_id[len(cfg.default_run_id()) :]
    old_id = cfg.default_run_id(legacy=True) + suffix
    with Store(store) as db:  # the same run as code before the change stored it
        record = db.selection_run(new_id)["config"]
        record["identity"].pop("answers")
        for key in ("task", "answers_from"):
            record.pop(key)
        db.start_selection(record, run_id=old_id)
        cells = db.selection_observations(new_id).drop(columns=["run_id"], errors="ignore")
        db.add_observations(old_id, cells)
        db.connection.execute("DELETE FROM selection_observations WHERE run_id = ?", [new_id])
        db.connection.execute("DELETE FROM selection_decisions WHERE run_id = ?", [new_id])
        db.connection.execute("DELETE FROM selection_runs WHERE run_id = ?", [new_id])
        assert resolve_run_id(db, cfg, suffix) == old_id
    again = estimate_live(_calibration(s), cfg, store, model="model-2", budget=12, seed=3)
    assert again.options["live"]["run_id"] == old_id and again.stopped == "capped"
    assert sum(s.state.answered.values()) == 6  # the cap holds: nothing new was paid


def test_answers_of_an_injected_oracle_are_never_reused(live_setup):
    """A run whose answers came from an oracle passed in (a replay through the store) gives
    none to later runs, and a configured run is not resumed with another oracle."""
    from latentbench.select import MatrixOracle
    from latentbench.select.live import LiveConfig, run_live

    s = live_setup
    store = s.tmp / "injected.duckdb"
    cfg = LiveConfig.from_toml(s.write_config(run={"budget": 16}))
    with Store(store) as db:
        run_live(cfg, db, oracle=MatrixOracle(np.ones_like(s.Y)))  # all answers 1: not real
    r = estimate_live(_calibration(s), cfg, store, model="model-1", budget=10, seed=2)
    assert r.options["live"]["n_reused"] == 0 and r.options["live"]["n_paid"] == 10
    cols = [int(i[1:]) for i in r.items]
    assert np.array_equal(np.asarray(r.answers), s.Y[1, cols])
    other = s.tmp / "configured.duckdb"
    small = LiveConfig.from_toml(s.write_config(s.tmp / "small.toml", run={"budget": 16}))
    with Store(other) as db:
        run_live(small, db)  # the configured oracle
        with pytest.raises(Exception, match="started with the configured oracle"):
            run_live(small, db, oracle=MatrixOracle(np.ones_like(s.Y)))


def test_workflow_options_keep_the_run_and_a_selection_named_estimate_is_a_selection(
    live_setup,
):
    """Options that change how answers are obtained (retries, timeouts; the harness's
    timeout, folders, execute) stay out of the identity; a selection run whose run_id holds
    '-estimate-' is still a selection for report and ls."""
    from latentbench.select.live import LiveConfig
    from latentbench.select.live._run import is_estimate_run

    s = live_setup
    base = LiveConfig.from_toml(s.write_config())
    slow = LiveConfig.from_toml(s.write_config(s.tmp / "slow.toml", oracle={"retries": 9}))
    assert slow.default_run_id() == base.default_run_id()
    assert is_estimate_run({"run_id": "gpt-estimate-1", "config": {"task": "select"}}) is False
    assert is_estimate_run({"run_id": "live-0123-estimate-0123456789", "config": {}}) is True
    assert is_estimate_run({"run_id": "gpt-estimate-1", "config": {}}) is False


def test_live_estimate_ctrl_c_prints_a_valid_interval_and_resumes(live_setup, monkeypatch):
    """Ctrl-C (SIGINT) during `estimate --live`: the item in flight is finished and stored,
    the interval so far is printed with stopped = interrupted, exit 130; the same command
    then resumes without asking a stored item again (it exited 130 silently before)."""
    import os
    import signal
    import subprocess
    import sys
    from collections import Counter

    s = live_setup
    config = s.write_config()
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    env = {**os.environ, s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    store = s.tmp / "int.duckdb"
    command = [sys.executable, "-c", "from latentbench.cli import main; main()", "estimate",
               str(cal_path), "--live", str(config), "--store", str(store), "--model",
               "model-1", "--budget", "12", "--seed", "4", "--json"]  # fmt: skip
    s.state.hold_after = 5  # the 6th request is held: five items stored, one in flight
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the run never reached the hold"
        proc.send_signal(signal.SIGINT)
        s.state.hold_after = None
        s.state.release.set()  # the item in flight is answered, then the run stops
        out, err = proc.communicate(timeout=s.wait)
    finally:
        proc.kill()
    assert proc.returncode == 130, err.decode()
    first = json.loads(out)
    assert first["stopped"] == "interrupted" and first["n_evaluated"] == 6
    assert first["lower"] <= first["score"] <= first["upper"]
    assert "re-run the same command to resume" in " ".join(err.decode().split())
    assert sum(Counter(s.state.answered).values()) == 6
    # the same command again, in this process: it reads only the store the stopped one left
    resumed = run_cli(*command[3:], env=env)
    assert resumed.exit_code == 0, said(resumed)
    done = json.loads(resumed.stdout)
    assert done["n_evaluated"] == 12 and done["items"][:6] == first["items"]
    assert max(s.state.answered.values()) == 1 and sum(s.state.answered.values()) == 12


def test_a_live_estimate_store_is_listed_and_drawn_by_report_for_what_it_is(live_setup):
    """`ls` on a store that holds only live runs said nothing (an empty table); `report` on it
    said 'not a selection.json (no arms)', then refused it as a live estimate, not a
    selection. It now draws the estimates' page from the stored results (every run's last
    completed session), and says which runs have none (capped, interrupted)."""
    import html as markup
    import re

    from latentbench.cli import _register, app

    _register()
    s = live_setup
    store = s.tmp / "est_only.duckdb"
    one = estimate_live(_calibration(s), s.write_config(), store, model="model-0", budget=4, seed=1)
    runner = CliRunner()
    listed = runner.invoke(app, ["ls", "--store", str(store)])
    assert listed.exit_code == 0, listed.output
    said = " ".join(listed.output.split())
    assert "live runs: 0 selections (select live), 1 estimate (estimate --live)" in said
    # it pointed at 'a selection run's report' only, and report now draws live estimates
    assert "Their report: latentbench report STORE (the latest run; its live estimates" in said

    def page(path, out):
        drawn = runner.invoke(app, ["report", str(path), "--out", str(out), "-q"])
        assert drawn.exit_code == 0, drawn.output
        return markup.unescape(" ".join(re.sub(r"<[^>]+>", " ", out.read_text()).split()))

    text = page(store, s.tmp / "r.html")
    assert (
        f"model-0: {one.summary()}." in text
        and "estimate-summary" in (s.tmp / "r.html").read_text()
    )
    # a run capped by its spend cap: the page drew 'No model was estimated'; it draws the
    # estimate where it stopped (valid at every step) and says it stopped at the cap
    capped = s.tmp / "est_capped.duckdb"
    config = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 2})
    with pytest.warns(DataWarning, match="live run stopped early"):
        result = estimate_live(_calibration(s), config, capped, model="model-0", budget=4)
    assert result.stopped == "capped" and result.n_evaluated == 2
    text = page(capped, s.tmp / "r2.html")
    assert "No model was estimated" not in text
    assert f"model-0: {result.summary()}." in text
    assert (
        "stopped at its spend cap ([run] spend_cap: the paid requests allowed) before its "
        "budget, after 2 item(s); the page shows the estimate where it stopped (status capped"
    ) in text
    assert "re-run its command to resume it" in text
    # a store written before stopped sessions were recorded holds no result for it: said
    import duckdb

    with duckdb.connect(str(capped)) as con:
        con.execute("DELETE FROM selection_decisions WHERE payload LIKE '%\"stopped\"%'")
    text = page(capped, s.tmp / "r2b.html")
    assert "No model was estimated" in text
    assert "status capped: no session completed; re-run its command to resume it" in text
    # a completed session, then a capped one: the completed one's result is drawn
    both = s.tmp / "est_both.duckdb"
    done = estimate_live(_calibration(s), config, both, model="model-1", budget=2)
    with pytest.warns(DataWarning, match="live run stopped early"):
        estimate_live(_calibration(s), config, both, model="model-1", budget=4)
    text = page(both, s.tmp / "r3.html")
    assert f"model-1: {done.summary()}." in text
    assert "its latest session stopped (capped); the page shows its last completed" in text
    (s.tmp / "cmp").mkdir()
    (s.tmp / "cmp" / "compare.json").write_text("{}")
    refused = runner.invoke(app, ["report", str(s.tmp / "cmp"), "--out", str(s.tmp / "c.html")])
    text = " ".join(refused.output.split())  # a comparison has a page: an empty one is named
    assert refused.exit_code == 2 and "compare.json: not a compare.json" in text


def test_a_store_of_live_estimates_is_drawn_as_a_series_of_runs(live_setup):
    """One store per series (docs/estimate.md): each checkpoint's live estimate is a run; the
    page draws them in the order they were started, a `run` column beside each model, and
    `--run-id` draws one."""
    from latentbench.cli import _register, app
    from latentbench.report import build_estimate_report

    _register()
    s = live_setup
    store = s.tmp / "series.duckdb"
    firsts = [
        estimate_live(_calibration(s), s.write_config(), store, model=m, budget=4, seed=1)
        for m in ("model-2", "model-0")
    ]
    page = build_estimate_report(store)
    assert "2 estimates from 2 runs against" in " ".join(page.split())
    assert page.index("model-2: score") < page.index("model-0: score")  # started first
    assert ">run<" in page.split('id="estimate-tables"')[1].replace(" ", "")
    from latentbench.io import Store

    with Store(store, read_only=True) as db:
        second = db.selection_runs()[1]["run_id"]
    out = s.tmp / "one.html"
    drawn = CliRunner().invoke(
        app, ["report", str(store), "--run-id", second, "--out", str(out), "-q"]
    )
    assert drawn.exit_code == 0, drawn.output
    one = out.read_text()
    assert "<title>latentbench estimate: series</title>" in one  # the store's stem
    assert "model-0: " + firsts[1].summary().split(" [")[0] in " ".join(one.split())
    assert "model-2: score" not in one


def test_python_oracles_in_two_folders_do_not_share_answers(tmp_path):
    """The same run.toml beside two different myoracle.py: other answers, so another answer
    key and another run (a second review: one took the other's stored scores)."""
    from latentbench.select.live import LiveConfig

    ids = []
    for name, value in (("a", 1.0), ("b", 0.0)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "items.jsonl").write_text('{"id": "q1", "prompt": "p", "answer": "x"}\n')
        (folder / "myoracle.py").write_text(f"def score(model, item):\n    return {value}\n")
        (folder / "run.toml").write_text(
            '[run]\nbudget = 4\n[oracle]\nkind = "python"\nfunction = "myoracle:score"\n'
            '[items]\npath = "items.jsonl"\n[scorer]\nkind = "exact_match"\n'
            '[[models]]\nname = "m"\n[[models]]\nname = "n"\n'
        )
        cfg = LiveConfig.from_toml(folder / "run.toml")
        assert cfg.answer_options()["code"]["oracle"] is not None
        ids.append((cfg.default_run_id(), cfg.answer_options()["code"]["oracle"]))
    assert ids[0][0] != ids[1][0] and ids[0][1] != ids[1][1]
    # a's answers stored in a store: b finds none to reuse (the key holds the code too; a
    # third review found that b took a's stored 1.0s though its own oracle returns 0.0)
    from latentbench.select.live._run import _open_run, reusable_answers

    cfg_a = LiveConfig.from_toml(tmp_path / "a" / "run.toml")
    cfg_b = LiveConfig.from_toml(tmp_path / "b" / "run.toml")
    with Store(tmp_path / "shared.duckdb") as db:
        _open_run(db, cfg_a, ids[0][0])
        db.add_observations(ids[0][0], {"seq": [0], "model": ["m"], "item": ["q1"], "score": [1.0]})
        assert reusable_answers(db, cfg_b, ids[1][0], ["m"]) == {}
        assert reusable_answers(db, cfg_a, "another-run", ["m"]) == {("m", "q1"): 1.0}


def test_an_old_record_with_other_kinds_defaults_resumes(live_setup):
    """Records stored before each oracle kind had its own options held every kind's defaults
    (execute = false for an openai oracle): not a change of answer options."""
    from latentbench.select.live import LiveConfig
    from latentbench.select.live._run import _same_answers_as_stored

    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    record = cfg.to_record()
    record["oracle"] = {**record["oracle"], "execute": False, "harness_timeout": None}
    assert _same_answers_as_stored(cfg, record) == []
    record["oracle"]["temperature"] = 0.7
    assert _same_answers_as_stored(cfg, record) == ["oracle.temperature"]


def test_an_old_run_with_other_answer_options_is_not_resumed(live_setup):
    """A run stored before the identity held the answer options, at temperature 0.2: the same
    configuration at 1.0 would have resumed it under the old default id and mixed answers; it
    is an error naming the option (a new run beside it would start past its cap)."""
    from latentbench.select.live import LiveConfig
    from latentbench.select.live._run import resolve_run_id

    s = live_setup
    cool = LiveConfig.from_toml(s.write_config(s.tmp / "cool.toml", oracle={"temperature": 0.2}))
    hot = LiveConfig.from_toml(s.write_config(s.tmp / "hot2.toml", oracle={"temperature": 1.0}))
    assert cool.default_run_id(legacy=True) == hot.default_run_id(legacy=True)
    record = cool.to_record()
    record["identity"].pop("answers")
    with Store(s.tmp / "old_hot.duckdb") as db:
        db.start_selection(record, run_id=cool.default_run_id(legacy=True))
        assert resolve_run_id(db, cool) == cool.default_run_id(legacy=True)
        with pytest.raises(
            Exception, match=r"other answer options \(changed: oracle.temperature\)"
        ):
            resolve_run_id(db, hot)


def test_lm_eval_model_args_are_per_model(tmp_path):
    """One [[models]] entry without model_args replaced every model's by the defaults (the
    other's base_url was lost without a word); each model now keeps its own."""
    from latentbench.select.live import LiveConfig

    (tmp_path / "items.jsonl").write_text('{"id": "0"}\n{"id": "1"}\n')
    (tmp_path / "run.toml").write_text(
        '[run]\nbudget = 4\n[oracle]\nkind = "lm-eval"\ntask = "t"\n'
        'backend = "local-chat-completions"\n[items]\npath = "items.jsonl"\n'
        '[[models]]\nname = "model-a"\nmodel_args = "model=model-a,base_url=http://h/v1"\n'
        '[[models]]\nname = "model-b"\nlm_eval_model = "org/b"\n'
    )
    cfg = LiveConfig.from_toml(tmp_path / "run.toml")
    oracle = cfg.build_oracle(cfg.load_items())
    assert oracle.model_args == ["model=model-a,base_url=http://h/v1", "pretrained=org/b"]


def test_module_sha256_finds_what_python_imports_and_never_raises(tmp_path, monkeypatch):
    import hashlib

    from latentbench.select._scorers import module_sha256

    (tmp_path / "name.py").write_text("x = 1\n")
    (tmp_path / "name").mkdir()
    (tmp_path / "name" / "__init__.py").write_text("x = 2\n")  # a package wins, as in Python
    expected = hashlib.sha256((tmp_path / "name" / "__init__.py").read_bytes()).hexdigest()
    assert module_sha256("name:f", tmp_path) == expected
    (tmp_path / "boom").mkdir()
    (tmp_path / "boom" / "__init__.py").write_text("raise RuntimeError('side effect')\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # found on sys.path: its parent raises
    assert module_sha256("boom.sub:f", None) is None  # no traceback from the user's code
    assert module_sha256(":f", tmp_path) is None and module_sha256("sys:exit", tmp_path) is None


def test_a_new_run_beside_one_with_other_answer_code_is_said(tmp_path):
    """Editing a python oracle (or scorer) after a failed run, then re-running the printed
    command, started a new run that paid every cell again without a word: a warning now
    names the run it does not resume and what changed."""
    import warnings as w

    from latentbench.exceptions import DataWarning
    from latentbench.select.live import LiveConfig, run_live

    (tmp_path / "items.jsonl").write_text(
        "".join(f'{{"id": "q{j}", "prompt": "p", "answer": "x"}}\n' for j in range(6))
    )
    (tmp_path / "myoracle.py").write_text("def score(model, item):\n    return 1.0\n")
    (tmp_path / "run.toml").write_text(
        '[run]\nbudget = 4\npolicy = "ucbe"\ninit_batch = 1\nbatch_size = 1\n'
        '[oracle]\nkind = "python"\nfunction = "myoracle:score"\n'
        '[items]\npath = "items.jsonl"\n[scorer]\nkind = "exact_match"\n'
        '[[models]]\nname = "m"\n[[models]]\nname = "n"\n'
    )
    store = tmp_path / "s.duckdb"
    with w.catch_warnings():
        w.simplefilter("error", DataWarning)  # the first run: nothing to say
        first = run_live(LiveConfig.from_toml(tmp_path / "run.toml"), store)
    (tmp_path / "myoracle.py").write_text("def score(model, item):\n    return 0.0\n")
    with pytest.warns(DataWarning, match=rf"starting run 'live-\w+'; run {first.run_id!r} has "
                      r"this configuration except .*changed: answers\.code\.oracle"):  # fmt: skip
        second = run_live(LiveConfig.from_toml(tmp_path / "run.toml"), store)
    assert second.run_id != first.run_id


def test_the_items_file_order_does_not_change_a_live_estimate(live_setup):
    """Draws follow the items' canonical order, whatever order the items file lists them
    in; such a run is capped and resumed as any other. (Its id differs from the one code
    before the change gave it, which drew in the file's order: such a stored run is not
    replayed with other items; checked against that code by hand, review of 2026-12-05.)"""
    s = live_setup
    cal = _calibration(s)
    sorted_run = estimate_live(cal, s.write_config(), s.tmp / "a.duckdb", model="model-2",
                               budget=10, seed=3)  # fmt: skip
    lines = (s.tmp / "items.jsonl").read_text().splitlines(keepends=True)
    order = np.random.default_rng(0).permutation(len(lines))
    (s.tmp / "items.jsonl").write_text("".join(lines[k] for k in order))
    capped = s.write_config(s.tmp / "cap.toml", run={"spend_cap": 4})
    first = estimate_live(cal, capped, s.tmp / "b.duckdb", model="model-2", budget=10, seed=3)
    assert first.stopped == "capped"
    capped.write_text(capped.read_text().replace("spend_cap = 4", "spend_cap = 40"))
    resumed = estimate_live(cal, capped, s.tmp / "b.duckdb", model="model-2", budget=10, seed=3)
    assert resumed.items == sorted_run.items
    # the same draws; the score's sums run over the items in the file's order, so it may
    # differ in the last bits (3e-16 here on one machine, 0 on another: the summation's SIMD
    # grouping depends on the CPU)
    assert resumed.score == pytest.approx(sorted_run.score, rel=1e-12, abs=1e-15)
    assert (resumed.lower, resumed.upper) == pytest.approx((sorted_run.lower, sorted_run.upper))
    assert resumed.options["live"]["run_id"] == first.options["live"]["run_id"]


def test_a_second_ctrl_c_marks_a_live_estimate_interrupted(live_setup, monkeypatch):
    """An abort (KeyboardInterrupt) left the estimate run 'failed' where select live says
    'interrupted'; its stored answers are kept either way."""
    from latentbench.select.live import DurableOracle

    s = live_setup
    real, calls = DurableOracle.evaluate, []

    def evaluate(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DurableOracle, "evaluate", evaluate)
    store = s.tmp / "abort.duckdb"
    with pytest.raises(KeyboardInterrupt):
        estimate_live(_calibration(s), s.write_config(), store, model="model-1", budget=8)
    with Store(store, read_only=True) as db:
        (run,) = db.selection_runs()
        assert run["status"] == "interrupted"
        assert len(db.selection_observations(run["run_id"])) == 2


def test_a_live_estimate_against_a_dead_endpoint_stops_unpaid_and_resumes(live_setup):
    """Connection refused on every attempt (nothing reached a server): the estimate stops
    early with the calibration's interval, stores no answer, says so, and a resumed call
    against a live endpoint pays every cell once."""
    import socket

    s = live_setup
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    path = s.write_config(oracle={"retries": 1})
    live_text = path.read_text()
    dead = s.tmp / "dead.toml"
    dead.write_text(live_text.replace(f"127.0.0.1:{s.port}/", f"127.0.0.1:{dead_port}/"))
    store = s.tmp / "dead.duckdb"
    cal = _calibration(s)
    r = estimate_live(cal, dead, store, model="model-2", budget=8, seed=3)
    assert r.stopped == "failed" and r.n_evaluated == 0
    assert 0.0 <= r.lower <= r.upper <= 1.0 and r.upper - r.lower > 0.2  # no narrow interval
    said = " ".join(r.warnings)
    assert "stopped early" in said and "resume" in said, said
    assert "model-2" in said and "nothing paid" in said, said
    assert sum(s.state.answered.values()) == 0
    with Store(store, read_only=True) as db:
        run_id = r.options["live"]["run_id"]
        assert db.selection_observations(run_id).empty  # nothing stored for unsent cells
    # the endpoint back: the same call pays its cells once
    dead.write_text(live_text)
    again = estimate_live(cal, dead, store, model="model-2", budget=8, seed=3)
    assert again.stopped == "budget" and again.n_evaluated == 8
    assert sum(s.state.answered.values()) == 8


def test_exporting_a_store_of_live_estimates_only_says_where_the_answers_are(live_setup):
    """`export` of a store that holds only an `estimate --live` run wrote 0 rows without a
    word; it says that the answers stay with the run, naming it."""
    from latentbench.cli import _register, app

    _register()
    s = live_setup
    store = s.tmp / "only.duckdb"
    first = estimate_live(_calibration(s), s.write_config(), store, model="model-1", budget=4)
    out = s.tmp / "all.parquet"
    res = CliRunner().invoke(app, ["export", str(out), "--store", str(store)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "wrote 0 rows" in text and "holds no responses, only 1 live run(s)" in text
    assert first.options["live"]["run_id"] in text and "selection_observations" in text
    # there is no estimate.json unless --out was given: the page draws the answers
    assert "estimate.json lists them" not in text and "`latentbench report STORE` draws" in text


def _as_before_sizing(monkeypatch: pytest.MonkeyPatch, recorded: bool = True) -> None:
    """Record a run's target as latentbench did before budgets sized the sequence (3dc024f,
    2026-12-05): ``{"phase": "target", "target": None}`` without ``sized_for`` when no
    precision was asked; the session then plays unsized. ``recorded=False``: as before
    targets were recorded at all (no target decision)."""
    from latentbench.select import _estimate_live as live

    def old(store, run_id, target, kind, *notes):
        if kind == "precision":
            store.add_decision(run_id, live._TARGET_ROUND, {"phase": "target", "target": target})
            return target, kind
        if recorded:
            store.add_decision(run_id, live._TARGET_ROUND, {"phase": "target", "target": None})
        return None, None

    monkeypatch.setattr(live, "_session_target", old)


def test_live_estimate_resumed_from_before_sizing_says_so(live_setup, monkeypatch):
    """A live estimate an earlier version started without a precision (no sized target) and
    this version resumes: it continues unsized, as its first session's bets were placed (the
    result of the uninterrupted unsized run, nothing paid twice), and a warning names the run
    and says that a new run's interval would differ (was silently another interval)."""
    s = live_setup
    config = s.write_config()
    cal = _calibration(s)
    with monkeypatch.context() as m:
        _as_before_sizing(m)
        first = estimate_live(cal, config, s.tmp / "old.duckdb", model="model-2", budget=6, seed=4)
        whole = estimate_live(cal, config, s.tmp / "ref.duckdb", model="model-2", budget=12, seed=4)
    assert first.options["sized_for"] is None and first.options["target"] is None
    paid = sum(s.state.answered.values())
    with pytest.warns(DataWarning, match="earlier latentbench version") as caught:
        resumed = estimate_live(
            cal, config, s.tmp / "old.duckdb", model="model-2", budget=12, seed=4
        )
    said = " ".join(str(w.message) for w in caught if "earlier" in str(w.message))
    assert first.options["live"]["run_id"] in said and "old.duckdb" in said
    assert resumed.options["sized_for"] is None and resumed.options["live"]["n_paid"] == 6
    assert sum(s.state.answered.values()) == paid + 6
    assert (resumed.items, resumed.lower, resumed.upper) == (whole.items, whole.lower, whole.upper)
    assert any("earlier latentbench version" in w for w in resumed.warnings)
    # a run this version started (its target recorded with sized_for) resumes without it
    estimate_live(cal, config, s.tmp / "new.duckdb", model="model-2", budget=6, seed=4)
    again = estimate_live(cal, config, s.tmp / "new.duckdb", model="model-2", budget=12, seed=4)
    assert again.options["sized_for"] == "budget"
    assert not any("earlier latentbench version" in w for w in again.warnings)
    # a run from before targets were recorded at all: the same
    with monkeypatch.context() as m:
        _as_before_sizing(m, recorded=False)
        estimate_live(cal, config, s.tmp / "older.duckdb", model="model-2", budget=6, seed=4)
    with pytest.warns(DataWarning, match="earlier latentbench version"):
        older = estimate_live(
            cal, config, s.tmp / "older.duckdb", model="model-2", budget=12, seed=4
        )
    assert (older.items, older.lower, older.upper) == (whole.items, whole.lower, whole.upper)
    # an old run with a precision was sized for it: resumed as sized, without the warning
    with monkeypatch.context() as m:
        _as_before_sizing(m)
        estimate_live(cal, config, s.tmp / "p.duckdb", model="model-1", budget=6, precision=0.3)
    sized = estimate_live(
        cal, config, s.tmp / "p.duckdb", model="model-1", budget=12, precision=0.3
    )
    assert sized.options["sized_for"] == "precision" and sized.options["target"] == 0.3
    assert not any("earlier latentbench version" in w for w in sized.warnings)


def test_a_store_of_live_estimates_names_no_estimates_csv(live_setup):
    """A store holds no estimates.csv: its page said the estimates beyond --top, and every
    digit, were in estimates.csv (an estimate folder's file)."""
    import html as markup
    import re

    from latentbench.report import build_estimate_report

    s = live_setup
    store = s.tmp / "two.duckdb"
    for model in ("model-2", "model-0"):
        estimate_live(_calibration(s), s.write_config(), store, model=model, budget=4, seed=1)
    page = build_estimate_report(store, top=1)
    text = markup.unescape(" ".join(re.sub(r"<[^>]+>", " ", page).split()))
    assert "The first 1 of 2 runs" in text, text
    assert "estimates.csv" not in text


def test_a_live_estimate_whose_next_session_was_killed_is_not_said_stopped_running(live_setup):
    """A completed session, then one killed (SIGKILL, power loss): the run stays 'running'.
    The page said 'its latest session stopped (running)', a contradiction; it says the session
    did not finish."""
    import html as markup
    import re

    from latentbench.report import build_estimate_report

    s = live_setup
    store = s.tmp / "killed.duckdb"
    done = estimate_live(_calibration(s), s.write_config(), store, model="model-1", budget=4)
    with Store(store) as db:
        run_id = db.selection_runs()[0]["run_id"]
        db.set_selection_status(run_id, "running")  # what a killed next session leaves
    text = markup.unescape(" ".join(re.sub(r"<[^>]+>", " ", build_estimate_report(store)).split()))
    assert f"model-1: {done.summary()}." in text
    assert "stopped (running)" not in text
    assert "did not finish (status running" in text, text


def test_only_what_select_live_reads_is_said_unused():
    """A configuration's select-only settings are named (estimate --live and compare --live
    ran with their own budget, seed and design and said nothing); what they do read
    (spend_cap, run_id, a default seed) is not."""
    from latentbench.select._estimate_live import unused_settings_note
    from latentbench.select.live import LiveConfig

    model = {"name": "m", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    base = {"items": {"path": "items.jsonl"}, "models": [model]}

    def note(command="estimate --live", **sections):
        return unused_settings_note(LiveConfig.from_dict({**base, **sections}, source="r.toml"),
                                    command)  # fmt: skip

    assert note() is None
    assert note(run={"spend_cap": 5, "seed": 0, "run_id": "mine"}) is None
    # select live copies its scores into responses under [run] benchmark; these copy none
    assert note(run={"benchmark": "b"}) == (
        "r.toml: [run] benchmark = 'b': select live's settings, not used by estimate --live "
        "(it uses the run's own tables in place of the responses table)"
    )
    assert note(run={"stop": "confidence", "epsilon": 0.01}, command="compare --live") == (
        "r.toml: [run] stop = 'confidence', epsilon = 0.01: select live's settings, not used "
        "by compare --live (it uses margin= and budget=); they still key the run: changing "
        "one later starts another run (its answers reused), or is refused with [run] run_id"
    )
    assert note(run={"policy": "ucbe"}, proxy={"history": "h.csv"}) == (
        "r.toml: [run] policy = 'ucbe'; [proxy] history: select live's settings, not used by "
        "estimate --live (it uses its own design, the calibration in place of a history); "
        "they still key the run: changing one later starts another run (its answers reused), "
        "or is refused with [run] run_id"
    )


def test_a_precision_alone_stopped_by_the_spend_cap_is_not_told_to_raise_a_budget(live_setup):
    """A precision with no budget runs until it is reached (the Python twin too: budget None
    in its options); stopped short by the spend cap, its warning said "raise the budget for a
    narrower interval", a budget the call never gave: the cap stopped it, and a resumed run
    goes on towards the precision."""
    s = live_setup
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 3})
    with pytest.warns(DataWarning, match="precision 0.01 not reached"):
        r = estimate_live(_calibration(s), capped, s.tmp / "p.duckdb", model="model-1",
                          precision=0.01, seed=1)  # fmt: skip
    assert r.stopped == "capped" and r.n_evaluated == 3 and r.options["budget"] is None
    (line,) = [w for w in r.warnings if "precision 0.01 not reached" in w]
    assert "raise the budget" not in line
    assert line.endswith("; resumed, the live run goes on towards it (raise [run] spend_cap first)")


def test_the_select_live_settings_said_unused_still_key_the_run(live_setup):
    """The note said the select-only settings were "not used", and a run.toml edited on its
    word was refused on resume ("started with a different configuration (changed: budget: 96
    -> 200)"): they key the run (its id, what a resume must match), which the note now says."""
    from latentbench.exceptions import InputError

    s = live_setup
    cal, store = _calibration(s), s.tmp / "keyed.duckdb"
    first = s.write_config(s.tmp / "a.toml", run={"run_id": "mine"})
    with pytest.warns(DataWarning, match="not used by estimate --live"):
        r = estimate_live(cal, first, store, model="model-1", budget=2, seed=1)
    (line,) = [w for w in r.warnings if "not used by estimate --live" in w]
    assert line.endswith(
        "; they still key the run: changing one later starts another run (its answers "
        "reused), or is refused with [run] run_id"
    )
    edited = s.write_config(s.tmp / "b.toml", run={"run_id": "mine", "budget": 200})
    with pytest.raises(InputError, match=r"changed: budget: 96 -> 200"):
        estimate_live(cal, edited, store, model="model-1", budget=3, seed=1)


def test_a_precision_alone_reports_progress_without_a_total(live_setup):
    """A live estimate with a precision and no budget takes as many items as it needs: its
    progress has no total (it said 3 of 48, every item, as if all were planned); with a
    budget the total is the budget."""
    s = live_setup
    config = s.write_config()
    cal = _calibration(s)
    seen = []
    # nothing bounds what it asks (no budget, no spend_cap): said before the first request
    with pytest.warns(DataWarning, match=r"precision=0.3 with no budget and no \[run\] spend"):
        first = estimate_live(cal, config, s.tmp / "p.duckdb", model="model-1", precision=0.3,
                              seed=1, progress=lambda *call: seen.append(call))  # fmt: skip
    assert "up to all 48 of the configuration; give budget= or" in " ".join(first.warnings)
    assert seen and {total for _, _, total in seen} == {None}
    assert [done for _, done, _ in seen] == list(range(len(seen)))
    seen.clear()
    estimate_live(cal, config, s.tmp / "b.duckdb", model="model-1", budget=5, seed=1,
                  progress=lambda *call: seen.append(call))  # fmt: skip
    assert {total for _, _, total in seen} == {5} and seen[-1][1] == 5
    # the command line: said once, in flags; a spend cap bounds it and says nothing
    args = [
        "estimate",
        str(s.tmp / "history.csv"),
        "--live",
        str(config),
        "--store",
        str(s.tmp / "p.duckdb"),
        "--model",
        "model-1",
        "--precision",
        "0.3",
        "--seed",
        "1",
    ]
    env = {s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    res = run_cli(*args, env=env)
    assert res.exit_code == 0, res.output
    said_line = " ".join(res.stderr.split())
    assert said_line.count("--precision 0.3 with no --budget and no [run] spend_cap: ") == 1
    assert "; give --budget or set [run] spend_cap to bound what it asks" in said_line
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 1000})
    args[3] = str(capped)
    args[5] = str(s.tmp / "c.duckdb")
    res = run_cli(*args, env=env)
    assert res.exit_code == 0 and "no [run] spend_cap" not in res.stderr


def test_a_missing_history_that_keys_the_run_is_named_with_its_way_out(live_setup):
    """estimate --live does not use [proxy] history, but the file is hashed into the run's
    key: a config whose history was deleted was refused with select live's words alone
    ('no such file; expected a response matrix file'). The refusal says why it matters here
    and the way out; dropping the key is another run, which reuses the answers paid for."""
    from latentbench.exceptions import InputError

    s = live_setup
    config = s.write_config()
    cal = _calibration(s)
    store = s.tmp / "h.duckdb"
    first = estimate_live(cal, config, store, model="model-1", budget=4, seed=2)
    text = config.read_text()
    gone = s.tmp / "gone.toml"
    gone.write_text(text.replace('history = "history.csv"', 'history = "deleted.csv"'))
    refusal = (r"gone.toml: \[proxy\] history = '.*deleted.csv': no such file; estimate "
               r"--live does not use it .* but it keys the run")  # fmt: skip
    with pytest.raises(InputError, match=refusal):
        estimate_live(cal, gone, store, model="model-1", budget=4, seed=2)
    dropped = s.tmp / "dropped.toml"
    dropped.write_text(text.replace('history = "history.csv"\n', ""))
    again = estimate_live(cal, dropped, store, model="model-1", budget=4, seed=2)
    assert again.options["live"]["run_id"] != first.options["live"]["run_id"]
    assert again.items == first.items and again.options["live"]["n_paid"] == 0
