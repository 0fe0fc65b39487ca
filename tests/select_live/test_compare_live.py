"""``compare`` against the local OpenAI-compatible test server: paired, durable, resumable."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.io.store import Store
from latentbench.select import CompareResult, compare, compare_live, stored_comparisons

from .conftest import run_cli, said


def _calibration(s) -> ResponseMatrix:
    hist = pd.read_csv(s.tmp / "history.csv").set_index("model")
    return ResponseMatrix.from_wide(hist)


def _table(s) -> dict[str, pd.Series]:
    """The endpoint's answers as a file holds them: model -> Series over the item ids."""
    ids = [it["id"] for it in s.items]
    return {name: pd.Series(s.Y[k], index=ids, name=name) for k, name in enumerate(s.names)}


def _same(live, file) -> None:
    """The live result is the file's: the items, answers, difference, interval, verdict."""
    assert live.items == file.items
    assert (live.answers_a, live.answers_b) == (file.answers_a, file.answers_b)
    assert live.probabilities == file.probabilities
    assert (live.difference, live.lower, live.upper) == (file.difference, file.lower, file.upper)
    assert (live.stopped, live.higher, live.n_evaluated) == (
        file.stopped,
        file.higher,
        file.n_evaluated,
    )


@pytest.mark.parametrize(("a", "b", "budget", "margin"), [
    ("model-0", "model-3", 30, None),
    ("model-3", "model-0", 30, None),  # the pair's draw, mirrored
    ("model-1", "model-2", 48, 0.4),  # every item, or equivalent within the margin
])  # fmt: skip
def test_live_compare_equals_compare_on_the_same_answers(live_setup, a, b, budget, margin):
    s = live_setup
    config = s.write_config()
    cal = _calibration(s)
    live = compare_live(cal, config, s.tmp / "c.duckdb", model_a=a, model_b=b, budget=budget,
                        margin=margin, seed=4)  # fmt: skip
    file = compare(cal, _table(s), model_a=a, model_b=b, budget=budget, margin=margin, seed=4)
    _same(live, file)
    assert (live.model_a, live.model_b) == (a, b)
    # both models asked each drawn item once, nothing else
    assert sum(s.state.answered.values()) == 2 * live.n_evaluated
    assert set(s.state.answered) == {(m, i) for m in (a, b) for i in live.items}
    assert live.options["live"]["n_paid"] == 2 * live.n_evaluated


def test_live_compare_resumes_without_paying_twice_and_records_its_questions(live_setup):
    s = live_setup
    config = s.write_config()
    cal = _calibration(s)
    store = s.tmp / "r.duckdb"
    first = compare_live(cal, config, store, model_a="model-1", model_b="model-2", budget=6)
    assert first.stopped == "budget" and first.n_evaluated == 6
    again = compare_live(cal, config, store, model_a="model-1", model_b="model-2", budget=6)
    _same(again, first)
    assert again.options["live"]["n_paid"] == 0
    assert again.options["live"]["n_replayed"] == 12 and sum(s.state.answered.values()) == 12
    # the other order resumes the same run (the pair's draw), mirrored
    swapped = compare_live(cal, config, store, model_a="model-2", model_b="model-1", budget=10)
    assert swapped.options["live"]["run_id"] == first.options["live"]["run_id"]
    assert swapped.items[:6] == first.items and swapped.answers_b[:6] == first.answers_a
    assert sum(s.state.answered.values()) == 2 * swapped.n_evaluated
    assert max(s.state.answered.values()) == 1
    file = compare(_calibration(s), _table(s), model_a="model-2", model_b="model-1", budget=10)
    _same(swapped, file)
    with Store(store, read_only=True) as db:
        run_id = first.options["live"]["run_id"]
        decisions = db.selection_decisions(run_id)
        run = db.selection_run(run_id)
    asked = sorted((d for d in decisions if d["round"] >= 0), key=lambda d: d["round"])
    # one decision per question: the two of a drawn item consecutive (the sorted pair's order)
    assert [d["items"] for d in asked] == [[i] for i in swapped.items for _ in range(2)]
    assert [d["model"] for d in asked[:2]] == ["model-1", "model-2"]
    finals = [d for d in decisions if d.get("phase") == "final"]
    assert sorted(d["compare"]["n_evaluated"] for d in finals) == [6, 6, 10]
    assert run["config"]["task"] == "compare" and run_id.startswith("live-")
    assert "-compare-" in run_id
    [(rid, stored, status)] = stored_comparisons(store)
    assert rid == run_id and status == "done" and stored == swapped
    # the progress snapshot beside the store: the comparison as the last session ended
    from latentbench.io import read_snapshot, snapshot_summary

    snap = read_snapshot(store)
    assert snap["kind"] == "compare" and snap["final"] and snap["status"] == "done"
    pair = snap["answer"]["comparison"]
    assert (pair["model_a"], pair["lower"], pair["n_evaluated"]) == ("model-2", swapped.lower, 10)
    line = snapshot_summary(snap)
    assert "(compare --live, done; PID" in line and "model-2 - model-1" in line


def test_live_compare_spend_cap_then_resume(live_setup):
    """A cap between the two answers of an item: that item is left out (the interval of the
    items answered stays valid, stopped 'capped'); a raised cap resumes, paying A's answer
    to it never again, and ends where an uncapped run ends."""
    s = live_setup
    cal = _calibration(s)
    store = s.tmp / "cap.duckdb"
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 7})
    with pytest.warns(DataWarning, match="live run stopped early"):
        r = compare_live(cal, capped, store, model_a="model-0", model_b="model-2", budget=8)
    assert r.stopped == "capped" and r.n_evaluated == 3 and r.lower <= r.upper
    assert sum(s.state.answered.values()) == 7  # the 4th item: A paid, B not asked
    assert any("live run stopped early" in w for w in r.warnings)
    # in Python the call is what is run again (the note said "re-run the same command")
    assert any(w.endswith("; run the same command (or call) again to resume") for w in r.warnings)
    assert not any("re-run" in w for w in r.warnings), r.warnings
    [(_, stored, status)] = stored_comparisons(store)
    assert status == "capped" and stored == r
    raised = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 7})
    raised.write_text(raised.read_text().replace("spend_cap = 7", "spend_cap = 100"))
    more = compare_live(cal, raised, store, model_a="model-0", model_b="model-2", budget=8)
    assert more.stopped == "budget" and more.options["live"]["n_replayed"] == 7
    assert max(s.state.answered.values()) == 1 and sum(s.state.answered.values()) == 16
    _same(more, compare(cal, _table(s), model_a="model-0", model_b="model-2", budget=8))
    [(_, stored, status)] = stored_comparisons(store)
    assert status == "done" and stored == more


def _cli(s, *args: str):
    from latentbench.cli import _register, app

    _register()
    env = {s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    return CliRunner().invoke(app, ["compare", *args], env=env)


def test_live_compare_cli_saves_the_result_and_resumes(live_setup):
    s = live_setup
    config = s.write_config()
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    store = s.tmp / "cli.duckdb"
    args = [str(cal_path), "--live", str(config), "--store", str(store), "--a", "model-3",
            "--b", "model-0", "--budget", "12", "--seed", "2",
            "--out", str(s.tmp / "cmp")]  # fmt: skip
    res = _cli(s, *args, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert "[proxy] history, rank: select live's settings, not used by compare --live (it uses " \
        "--budget, --seed, its own design, the calibration in place of a history)" in " ".join(
            res.stderr.split())  # fmt: skip
    file = compare(cal_path, _table(s), model_a="model-3", model_b="model-0", budget=12, seed=2)
    assert data["items"] == list(file.items)
    assert (data["difference"], data["lower"], data["upper"]) == (
        file.difference,
        file.lower,
        file.upper,
    )
    saved = CompareResult.read(s.tmp / "cmp")
    assert saved.items == file.items and saved.options["live"]["n_paid"] == 24
    res = _cli(s, *args)  # re-run: replayed, printed as the file's comparison prints
    assert res.exit_code == 0, res.output
    assert file.summary() in " ".join(res.output.split())
    assert sum(s.state.answered.values()) == 24
    # capped: exit 3, and how to resume
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 5})
    res = _cli(s, str(cal_path), "--live", str(capped), "--store", str(s.tmp / "cap.duckdb"),
               "--a", "model-1", "--b", "model-2")  # fmt: skip
    assert res.exit_code == 3, res.output
    assert "(raise [run] spend_cap first)" in " ".join(res.output.split())


@pytest.mark.parametrize(("extra", "message"), [
    (["--budget", "5"], "--live needs --store"),
    (["--store", "S.duckdb", "--items", "d.csv"], "--items d.csv with --live"),
    (["--store", "S.duckdb", "answers.csv"], "no results files"),
    (["--store", "S.duckdb", "--source", "lm-eval"], "--source reads a results file"),
    (["--store", "S.duckdb", "--a", "model-0", "--b", "model-0"], "both 'model-0'"),
    (["--store", "S.duckdb", "--a", "model-0", "--b", "nope"], "no model 'nope'"),
    (["--store", "S.duckdb", "--a", "model-0", "--b", "Model-1"],
     "no model 'Model-1' (models: model-0, model-1, model-2, model-3); did you mean 'model-1'? "
     "It differs from 'Model-1' only by case or surrounding spaces; model names are matched "
     "exactly"),
    (["--store", "S.duckdb", "--a", "model-0"], "4 models; name the two"),
])  # fmt: skip
def test_live_compare_cli_refuses_what_does_not_go_with_live(live_setup, extra, message):
    s = live_setup
    config = s.write_config()
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    extra = [str(s.tmp / e) if e == "S.duckdb" else e for e in extra]
    res = _cli(s, str(cal_path), "--live", str(config), *extra)
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())
    assert sum(s.state.answered.values()) == 0
    assert not (s.tmp / "S.duckdb").exists()  # refused before the store is made


def test_live_compare_refuses_a_changed_configuration_and_a_changed_calibration_is_a_new_run(
    live_setup,
):
    """As estimate_live: a run of a set run_id resumed with other answer options is refused
    before anything is asked; another calibration is another run (its own id), whose cells
    the first run paid are reused, never paid again."""
    s = live_setup
    cal = _calibration(s)
    store = s.tmp / "changed.duckdb"
    named = s.write_config(s.tmp / "named.toml", run={"run_id": "ckpts"})
    first = compare_live(cal, named, store, model_a="model-0", model_b="model-1", budget=5)
    paid = sum(s.state.answered.values())
    hot = s.write_config(s.tmp / "hot.toml", run={"run_id": "ckpts"}, oracle={"temperature": 1.0})
    with pytest.raises(InputError, match="different configuration"):
        compare_live(cal, hot, store, model_a="model-0", model_b="model-1", budget=5)
    assert sum(s.state.answered.values()) == paid
    other = ResponseMatrix.from_wide(
        pd.read_csv(s.tmp / "history.csv").set_index("model").iloc[:-3]
    )
    config = s.write_config()
    with pytest.warns(DataWarning, match="came from earlier runs"):
        a = compare_live(cal, config, store, model_a="model-0", model_b="model-1", budget=5)
    with pytest.warns(DataWarning, match="came from earlier runs"):
        b = compare_live(other, config, store, model_a="model-0", model_b="model-1", budget=5)
    assert a.options["live"]["run_id"] != b.options["live"]["run_id"]
    assert a.options["live"]["n_reused"] == 10  # the named run's answers: the same cells
    assert b.options["live"]["n_paid"] == 2 * len(set(b.items) - set(first.items))
    assert np.isfinite(b.difference)


@pytest.mark.slow
def test_live_compare_sigkill_and_ctrl_c_then_resume(live_setup, monkeypatch):
    """SIGKILL with model B's answer to the third item in flight, then the same command; then
    Ctrl-C mid-run (exit 130, stopped 'interrupted', a valid interval), then the same command
    again: the result of an uninterrupted run, nothing stored asked again."""
    import os
    import signal
    import subprocess
    import sys

    s = live_setup
    config = s.write_config()
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    env = {**os.environ, s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    store = s.tmp / "kill.duckdb"

    def command(budget: int) -> list[str]:
        return [sys.executable, "-c", "from latentbench.cli import main; main()", "compare",
                str(cal_path), "--live", str(config), "--store", str(store), "--a", "model-2",
                "--b", "model-1", "--budget", str(budget), "--seed", "5", "--json"]  # fmt: skip

    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", env["LATENTBENCH_CACHE_DIR"])
    ref = compare(cal_path, _table(s), model_a="model-2", model_b="model-1", budget=16, seed=5)
    s.state.hold_after = 5  # the 6th request (B's answer to the 3rd item) is held
    proc = subprocess.Popen(command(16), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the run never reached the hold"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(s.wait) == -signal.SIGKILL
    finally:
        proc.kill()
    assert sum(s.state.answered.values()) == 5
    in_flight = s.state.requests[5]  # never answered to the killed run: asked again
    # resumed (B's answer to the 3rd item asked again, the 7th request), then Ctrl-C with the
    # 15th in flight (B's answer to the 7th item), which finishes that item
    s.state.held.clear()
    s.state.hold_after = len(s.state.requests) + 8
    proc = subprocess.Popen(command(16), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the resumed run never reached the hold"
        proc.send_signal(signal.SIGINT)
        s.state.hold_after = None
        s.state.release.set()  # the question in flight is answered, then the run stops
        out, err = proc.communicate(timeout=s.wait)
    finally:
        proc.kill()
    assert proc.returncode == 130, err.decode()
    stopped = json.loads(out)
    assert stopped["stopped"] == "interrupted" and stopped["n_evaluated"] == 7
    assert stopped["lower"] <= stopped["difference"] <= stopped["upper"]
    assert stopped["items"] == list(ref.items[:7])
    assert "re-run the same command to resume" in " ".join(err.decode().split())
    [(_, stored, status)] = stored_comparisons(store)
    assert status == "interrupted" and stored is not None and stored.n_evaluated == 7
    # the same command again, in this process: it reads only the store the stopped one left
    done = run_cli(*command(16)[3:], env=env)
    assert done.exit_code == 0, said(done)
    result = json.loads(done.stdout)
    assert result["items"] == list(ref.items)
    assert (result["answers_a"], result["answers_b"]) == (list(ref.answers_a), list(ref.answers_b))
    assert (result["difference"], result["lower"], result["upper"]) == (
        ref.difference,
        ref.lower,
        ref.upper,
    )
    assert result["options"]["live"]["n_replayed"] == 14
    # nothing answered before was asked again; the request in flight at the kill, released
    # with the one of the Ctrl-C, is answered to nobody and was asked again
    twice = {cell for cell, count in s.state.answered.items() if count > 1}
    assert twice <= {in_flight} and max(s.state.answered.values()) <= 2
    assert set(s.state.answered) == {(m, i) for m in ("model-1", "model-2") for i in ref.items}


def test_a_live_comparison_is_never_resumed_as_a_selection_or_an_estimate(live_setup):
    """The default id of `select live` (and of an estimate) on a store holding a live
    comparison of the same configuration is its own, never the comparison's."""
    from latentbench.select.live import LiveConfig
    from latentbench.select.live._run import resolve_run_id

    s = live_setup
    config = s.write_config()
    store = s.tmp / "mixed.duckdb"
    compare_live(_calibration(s), config, store, model_a="model-0", model_b="model-1", budget=3)
    cfg = LiveConfig.from_toml(config)
    with Store(store) as db:
        assert resolve_run_id(db, cfg) == cfg.default_run_id()
        suffix = "-estimate-0123456789"
        assert resolve_run_id(db, cfg, suffix) == cfg.default_run_id() + suffix


def test_a_store_of_a_live_comparison_is_listed_and_drawn_by_report(live_setup):
    from latentbench.cli import _register, app
    from latentbench.report import report_from
    from latentbench.select import SelectionRecord

    _register()
    s = live_setup
    cal = _calibration(s)
    store = s.tmp / "drawn.duckdb"
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 4})
    with pytest.warns(DataWarning, match="stopped early"):
        early = compare_live(cal, capped, store, model_a="model-0", model_b="model-3", budget=9)
    page = report_from(store, s.tmp / "early.html")
    text = page.path.read_text()
    assert early.summary().split(";")[0] in text and "stopped early (capped)" in text
    done = compare_live(cal, s.write_config(), store, model_a="model-0", model_b="model-3",
                        budget=9)  # fmt: skip
    page = report_from(store, s.tmp / "done.html")
    assert done.summary().split(";")[0] in page.path.read_text()
    run_id = done.options["live"]["run_id"]  # the same run, resumed (spend_cap is no identity)
    assert early.options["live"]["run_id"] == run_id
    page = report_from(store, s.tmp / "run.html", run_id=run_id)
    assert done.summary().split(";")[0] in page.path.read_text()
    res = CliRunner().invoke(app, ["ls", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "1 comparison (compare --live)" in " ".join(res.output.split())
    with pytest.raises(InputError, match="is a live comparison"):
        SelectionRecord.from_store(store, run_id)


def test_exporting_a_store_of_a_live_comparison_only_names_compare_live(live_setup):
    """`export` of a store holding only a `compare --live` run said that `estimate --live`
    never copies its answers into the responses, and that report draws an estimate's: the
    run is a comparison, which the note did not name."""
    from latentbench.cli import _register, app

    _register()
    s = live_setup
    store = s.tmp / "only.duckdb"
    done = compare_live(_calibration(s), s.write_config(), store, model_a="model-0",
                        model_b="model-1", budget=3)  # fmt: skip
    res = CliRunner().invoke(app, ["export", str(s.tmp / "all.csv"), "--store", str(store)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "holds no responses, only 1 live run(s)" in text
    assert done.options["live"]["run_id"] in text
    assert "`compare --live` never copy them into the responses" in text
    assert "a live comparison's result" in text


@pytest.mark.parametrize("stop", ["interrupt", "failure"])
def test_live_compare_stopped_between_the_two_answers_of_an_item_resumes_as_one_run(
    live_setup, stop
):
    """A stop request, or a failed request, after model A's answer to the 3rd item and
    before B's: the run stops with the two items both answered (A's paid answer stored);
    the same call then reuses A's answer (never paid twice) and ends where an uninterrupted
    run ends."""
    s = live_setup
    cal = _calibration(s)
    store = s.tmp / f"{stop}.duckdb"
    ref = compare(cal, _table(s), model_a="model-0", model_b="model-2", budget=8)
    event = None
    if stop == "interrupt":  # set by the server as it receives A's answer to the 3rd item
        s.state.notify_at = 5
        event = s.state.reached
    else:  # B's answer to the 3rd item fails on every attempt (retries = 3)
        s.state.faults[("model-2", ref.items[2])] = ["500"] * 4
    config = s.write_config()
    with pytest.warns(DataWarning, match="live run stopped early"):
        first = compare_live(cal, config, store, model_a="model-0", model_b="model-2",
                             budget=8, stop_event=event)  # fmt: skip
    assert first.stopped == ("interrupted" if stop == "interrupt" else "failed")
    assert first.n_evaluated == 2 and first.items == ref.items[:2]
    assert s.state.answered[("model-0", ref.items[2])] == 1  # A's answer, paid once
    assert s.state.answered[("model-2", ref.items[2])] == 0
    [(_, stored, status)] = stored_comparisons(store)
    assert status == first.stopped and stored == first
    s.state.notify_at = None
    again = compare_live(cal, config, store, model_a="model-0", model_b="model-2", budget=8)
    _same(again, ref)
    assert again.options["live"]["n_replayed"] == 5
    assert again.options["live"]["n_paid"] == 2 * ref.n_evaluated - 5
    assert max(s.state.answered.values()) == 1
    assert sum(s.state.answered.values()) == 2 * ref.n_evaluated
    with Store(store, read_only=True) as db:
        decisions = db.selection_decisions(first.options["live"]["run_id"])
    asked = sorted((d for d in decisions if d["round"] >= 0), key=lambda d: d["round"])
    assert [d["items"] for d in asked] == [[i] for i in ref.items for _ in range(2)]
    [(_, stored, status)] = stored_comparisons(store)
    assert status == "done" and stored == again


def test_ls_counts_live_runs_in_the_singular_and_the_plural(live_setup):
    """`ls` said "2 comparison (compare --live)" and "0 selection": every count agrees with
    its number."""
    from latentbench.cli import _register, app
    from latentbench.select import estimate_live

    _register()
    s = live_setup
    cal = _calibration(s)
    store = s.tmp / "counted.duckdb"
    config = s.write_config()
    for a, b in (("model-0", "model-1"), ("model-2", "model-3")):
        compare_live(cal, config, store, model_a=a, model_b=b, budget=2)
    estimate_live(cal, config, store, model="model-0", budget=2)
    res = CliRunner().invoke(app, ["ls", "--store", str(store)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "live runs: 0 selections (select live), 1 estimate (estimate --live), " in text
    assert "2 comparisons (compare --live)" in text


def test_a_snapshot_line_counts_in_the_singular_and_the_plural():
    """The line `ls` prints for a store a live run holds: "spent 1 cells", "on 1 items"."""
    from latentbench.io import snapshot_summary

    pair = {"model_a": "a", "model_b": "b", "difference": 0.0, "lower": -1.0, "upper": 1.0,
            "n_evaluated": 1}  # fmt: skip
    snap = {"run_id": "r", "kind": "compare", "status": "running", "live": True, "pid": 1,
            "batch": 1, "spent": 1, "left": 1, "requests_left": 1, "age_s": 1.0,
            "answer": {"comparison": pair}}  # fmt: skip
    line = snapshot_summary(snap)
    assert "spent 1 cell, 1 left" in line and "1 paid request left of the cap" in line
    assert "on 1 item;" in line
    snap.update(spent=2, requests_left=2, answer={"comparison": {**pair, "n_evaluated": 2}})
    line = snapshot_summary(snap)
    assert "spent 2 cells" in line and "2 paid requests left" in line and "on 2 items;" in line


def test_live_compare_on_fewer_items_than_calibrated_names_the_configuration(live_setup):
    """A live comparison whose configuration holds some of the calibrated items said "after
    N of the 48 items both answered (of 54)", the files' wording: live, both models are asked,
    and the 48 are the configuration's. The line, the command's legend and the page say so."""
    from latentbench.report import build_compare_report

    s = live_setup
    hist = pd.read_csv(s.tmp / "history.csv").set_index("model")
    rng = np.random.default_rng(0)
    extra = pd.DataFrame((rng.random((len(hist), 6)) < 0.5).astype(float), index=hist.index,
                         columns=[f"x{k}" for k in range(6)])  # fmt: skip
    wide = pd.concat([hist, extra], axis=1)
    cal_path = s.tmp / "calib54.csv"
    wide.reset_index().to_csv(cal_path, index=False)
    config = s.write_config()
    with pytest.warns(DataWarning, match="the configuration has 48 of the 54 calibrated items"):
        r = compare_live(ResponseMatrix.from_wide(wide), config, s.tmp / "few.duckdb",
                         model_a="model-0", model_b="model-3", budget=4)  # fmt: skip
    line = r.summary()
    assert "after 4 of the 48 items of the configuration (of 54)" in line, line
    assert "both answered" not in line
    page = build_compare_report(r)
    assert "over the 48 items of the configuration (of the calibration&#39;s 54" in page
    assert "48 items both answered" not in page
    res = _cli(s, str(cal_path), "--live", str(config), "--store", str(s.tmp / "few2.duckdb"),
               "--a", "model-0", "--b", "model-3", "--budget", "4")  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "of the difference of the two scores on the configuration's 48 items" in text, text
    assert "both answered" not in text


def test_an_estimate_reusing_a_comparison_s_answers_names_the_comparison(live_setup):
    """A live estimate that reused answers a live comparison paid for explained them as
    "(another seed or calibration)"; the note names the run they came from, and what it is."""
    from latentbench.select import estimate_live

    s = live_setup
    cal = _calibration(s)
    store = s.tmp / "origin.duckdb"
    config = s.write_config()
    pair = compare_live(cal, config, store, model_a="model-0", model_b="model-1", budget=6)
    run_id = pair.options["live"]["run_id"]
    with pytest.warns(DataWarning, match="came from earlier runs") as caught:
        one = estimate_live(cal, config, store, model="model-0", budget=40)
    n = one.options["live"]["n_reused"]
    assert n == len(set(one.items) & set(pair.items)) >= 2  # model-0's answers it paid for
    assert one.options["live"]["n_paid"] == one.n_evaluated - n
    said = [str(w.message) for w in caught if "came from earlier runs" in str(w.message)]
    assert len(said) == 1 and "another seed or calibration" not in said[0], said
    assert f"({n} from the live comparison {run_id!r})" in said[0], said
    assert said[0].startswith(f"{n} answers came from earlier runs in ")
    assert said[0] in one.warnings
    # and the other way: a comparison reusing the estimate's answers names the estimate
    with pytest.warns(DataWarning, match="came from earlier runs") as caught:
        other = compare_live(cal, config, store, model_a="model-0", model_b="model-2",
                             budget=8, seed=3)  # fmt: skip
    said = [str(w.message) for w in caught if "came from earlier runs" in str(w.message)]
    estimate_id = one.options["live"]["run_id"]
    assert f"from the live estimate {estimate_id!r}" in said[0], said
    assert other.options["live"]["n_reused"] >= 1
