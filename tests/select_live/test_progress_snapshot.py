"""A live run is watchable from another terminal: it writes ``STORE.progress.json`` (replaced
whole) at its start, after each batch and when it ends; ``ls`` of the store it holds shows that
snapshot (exit 0) instead of only refusing, ``report`` and ``export`` keep refusing but add its
summary, and a snapshot whose writer is gone is never shown as the live run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

from latentbench.io import read_snapshot, snapshot_path, snapshot_summary
from latentbench.io.store import Store

from .conftest import run_cli, said

CLI = "from latentbench.cli import main; main()"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", CLI, *args]


def test_ls_of_a_store_a_live_selection_holds_shows_its_snapshot(live_setup):
    s = live_setup
    config = s.write_config(oracle={"concurrency": 1, "timeout": 60.0})
    store = s.tmp / "run.duckdb"
    env = {**os.environ, s.key_env: s.api_key}
    s.state.hold_after = 12  # 12 paid: the first initial batch (8 cells) done, the next held
    command = _cli("select", "live", "--config", str(config), "--store", str(store), "--quiet")
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the live run never reached the hold"
        # the watchers in this process: the live run's lock refuses it as any other
        shown = run_cli("ls", "--store", store, env=env)
        assert shown.exit_code == 0, said(shown)
        text = " ".join(shown.stdout.split())
        assert f"{store} is held by a live run (PID {first.pid})" in text, text
        assert "its last progress snapshot (run.duckdb.progress.json), not the store" in text
        assert "(select live, running; PID" in text and "batch 1, spent 8 cells" in text, text
        assert "s ago" in text, text
        as_json = run_cli("ls", "--store", store, "--json", env=env)
        assert as_json.exit_code == 0, said(as_json)
        snap = json.loads(as_json.stdout)["live_snapshot"]
        assert snap["kind"] == "select" and snap["status"] == "running" and snap["live"]
        assert snap["pid"] == first.pid and not snap["final"]
        assert snap["batch"] == 1 and snap["spent"] == 8 and snap["planned"] == 4 * 8 + 96
        assert snap["left"] == 4 * 8 + 96 - 8 and snap["answer"] is None  # no leader yet
        assert snap["started"].endswith("Z") and snap["updated"].endswith("Z")
        for watcher in (
            ("report", store, "--out", s.tmp / "live.html"),
            ("export", s.tmp / "rows.csv", "--store", store),
        ):  # still refused, now with the snapshot's line
            done = run_cli(*watcher, env=env)
            assert done.exit_code == 2, said(done)
            message = " ".join(done.stderr.split())
            assert "a live run holds its store until it stops" in message, message
            assert "Its last progress snapshot: run live-" in message, message
            assert "batch 1, spent 8 cells" in message, message
        assert first.poll() is None
    finally:
        s.state.release.set()
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err.decode()
    # kept when the run ends, final, with the outcome the store records
    snap = read_snapshot(store)
    assert snap is not None and snap["final"] and snap["status"] == "done" and not snap["live"]
    with Store(store, read_only=True) as db:
        (run,) = db.selection_runs()
        frame = db.selection_observations(run["run_id"])
    assert snap["run_id"] == run["run_id"] and snap["spent"] == len(frame)
    best = snap["answer"]["best"]
    assert f"best model {best}: estimate {snap['answer']['estimate']:.3f}" in err.decode()
    assert isinstance(snap["answer"]["certified"], bool)
    assert "(select live, done; PID" in snapshot_summary(snap)


def test_ls_of_a_store_a_live_estimate_holds_shows_its_estimate(live_setup):
    s = live_setup
    config = s.write_config(oracle={"concurrency": 1, "timeout": 60.0})
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    store = s.tmp / "est.duckdb"
    env = {**os.environ, s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    s.state.hold_after = 6  # six items stored, the seventh held
    command = _cli("estimate", str(cal_path), "--live", str(config), "--store", str(store),
                   "--model", "model-3", "--budget", "16", "--seed", "2", "--json")  # fmt: skip
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the run never reached the hold"
        done = run_cli("ls", "--store", store, "--json", env=env)
        assert done.exit_code == 0, said(done)
        snap = json.loads(done.stdout)["live_snapshot"]
        assert snap["kind"] == "estimate" and snap["status"] == "running" and snap["live"]
        assert snap["spent"] == 6 and snap["batch"] == 6 and snap["left"] == 10
        (row,) = snap["answer"]["models"]
        assert row["model"] == "model-3" and row["n_evaluated"] == 6
        assert row["lower"] <= row["score"] <= row["upper"]
        text = run_cli("ls", "--store", store, env=env).stdout
        assert "(estimate --live, running; PID" in text and "model-3 " in text, text
        assert "on 6 items" in text, text
    finally:
        s.state.release.set()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    result = json.loads(out)
    snap = read_snapshot(store)
    assert snap is not None and snap["final"] and snap["status"] == "done"
    (row,) = snap["answer"]["models"]
    assert (row["score"], row["lower"], row["upper"]) == (
        result["score"], result["lower"], result["upper"]
    )  # fmt: skip
    assert row["n_evaluated"] == result["n_evaluated"] == 16


def test_a_snapshot_whose_writer_is_gone_is_not_shown_as_live(live_setup):
    """A run killed (SIGKILL) leaves its snapshot at 'running': read back, it is stale (its
    PID is gone), and a snapshot of another process than the store's holder is not live."""
    s = live_setup
    config = s.write_config(oracle={"concurrency": 1, "timeout": 60.0})
    store = s.tmp / "run.duckdb"
    env = {**os.environ, s.key_env: s.api_key}
    s.state.hold_after = 12
    command = _cli("select", "live", "--config", str(config), "--store", str(store), "--quiet")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the live run never reached the hold"
        live = read_snapshot(store)
        assert live is not None and live["live"] and live["pid"] == proc.pid
        other = read_snapshot(store, holder=os.getpid())  # not the process holding the store
        assert other is not None and not other["live"]
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(s.wait) == -signal.SIGKILL
    finally:
        proc.kill()
        s.state.release.set()
    stale = read_snapshot(store)
    assert stale is not None and stale["status"] == "running" and not stale["live"]
    assert "running, stale: its process is gone" in snapshot_summary(stale)
    # the store is free again: ls lists the store itself (the truth), no snapshot
    done = run_cli("ls", "--store", store, env=env)
    assert done.exit_code == 0, said(done)
    assert "last progress snapshot" not in done.stdout and "live runs: 1 selection" in done.stdout


def test_no_snapshot_for_an_in_memory_store_and_a_foreign_file_is_ignored(tmp_path: Path):
    from latentbench.io import SnapshotWriter

    SnapshotWriter(":memory:", "r1", "select").update(batch=1)
    assert not Path(":memory:.progress.json").exists()
    store = tmp_path / "s.duckdb"
    snapshot_path(store).write_text('{"format": "something else", "pid": 1}')
    assert read_snapshot(store) is None
    snapshot_path(store).write_text("{half")
    assert read_snapshot(store) is None


def test_a_snapshot_that_cannot_be_written_is_said_once_and_the_run_goes_on(tmp_path: Path):
    import warnings

    from latentbench.exceptions import DataWarning
    from latentbench.io import SnapshotWriter

    store = tmp_path / "s.duckdb"
    snapshot_path(store).mkdir()  # a folder where the file goes: it cannot be written
    writer = SnapshotWriter(store, "r1", "select", spend_cap=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.update(batch=1, requests=4)
        writer.finish("done", requests=6)
    said = [w for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert "progress snapshot could not be written" in str(said[0].message)
    assert "the run goes on, every cell is in the store" in str(said[0].message)
    assert writer.state["requests_left"] == 4 and writer.state["final"]
