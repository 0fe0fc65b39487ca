"""``ls --store S --json`` carries the store's live runs as the text does (their count by kind,
the latest run, how to report them): it printed the benchmarks only, so a store of live runs
listed as ``[]`` in JSON while the text said ``live runs: ...``. A store without live runs
prints the list as before."""

from __future__ import annotations

import json
import time

from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io import Store

_register()
runner = CliRunner()


def _store(tmp_path, *, benchmark: bool, tasks: list[str]):
    path = tmp_path / "s.duckdb"
    if benchmark:
        wide = tmp_path / "w.csv"
        wide.write_text("model,q1,q2\nm1,1,0\nm2,0,1\n")
        args = ["ingest", "table", str(wide), "--benchmark", "b", "--store", str(path)]
        assert runner.invoke(app, args).exit_code == 0
    with Store(path) as db:
        for k, task in enumerate(tasks):
            run_id = db.start_selection({"task": task}, run_id=f"run-{k}-{task}")
            db.set_selection_status(run_id, "done" if k < len(tasks) - 1 else "interrupted")
            time.sleep(0.01)  # created_at orders them
    return path


def _ls(path, *extra):
    outcome = runner.invoke(app, ["ls", "--store", str(path), *extra])
    assert outcome.exit_code == 0, outcome.output
    return outcome.output


def test_ls_json_carries_the_live_runs_the_text_shows(tmp_path):
    path = _store(tmp_path, benchmark=True, tasks=["select", "estimate", "estimate", "compare"])
    text = " ".join(_ls(path).split())
    said = (
        "live runs: 1 selection (select live), 2 estimates (estimate --live), 1 comparison "
        "(compare --live); latest run-3-compare (interrupted). Their report: latentbench report "
        "STORE (the latest run; its live estimates all together when it is one), --run-id RUN "
        "for one run"
    )
    assert said in text
    shown = json.loads(_ls(path, "--json"))
    assert [row["benchmark"] for row in shown["benchmarks"]] == ["b"]
    live = shown["live_runs"]
    assert (live["selection"], live["estimate"], live["compare"]) == (1, 2, 1)
    assert live["latest"] == {"run_id": "run-3-compare", "kind": "compare", "status": "interrupted"}
    assert f"Their report: {live['report']}" in text


def test_ls_json_of_a_store_of_live_runs_only_is_not_empty(tmp_path):
    path = _store(tmp_path, benchmark=False, tasks=["estimate"])
    assert "live runs: 0 selections (select live), 1 estimate" in " ".join(_ls(path).split())
    shown = json.loads(_ls(path, "--json"))
    assert shown["benchmarks"] == []
    assert shown["live_runs"]["estimate"] == 1 and shown["live_runs"]["latest"]["kind"] == (
        "estimate"
    )


def test_ls_json_of_a_store_without_live_runs_is_the_list_it_was(tmp_path):
    path = _store(tmp_path, benchmark=True, tasks=[])
    shown = json.loads(_ls(path, "--json"))
    assert isinstance(shown, list) and [row["benchmark"] for row in shown] == ["b"]
    assert "live runs" not in _ls(path)


def test_ls_of_a_run_stored_as_running_says_its_session_was_killed(tmp_path):
    """A live run killed (SIGKILL, a crash) stays ``running`` in the store, and ``ls`` said
    'latest RUN (running)' of a store it could open, which a live run holds until it stops:
    it says the session was killed or crashed, and that the same command resumes it."""
    path = _store(tmp_path, benchmark=False, tasks=["select"])
    with Store(path) as db:
        db.set_selection_status("run-0-select", "running")  # what a killed session leaves
    text = " ".join(_ls(path).split())
    assert (
        "latest run-0-select (running: stored as running, but no process holds the store (a "
        "live run holds it until it stops): its last session was killed or crashed before it "
        "recorded how it ended; the same command resumes it). Their report:"
    ) in text, text
    latest = json.loads(_ls(path, "--json"))["live_runs"]["latest"]
    assert latest["status"] == "running" and "killed or crashed" in latest["note"]
