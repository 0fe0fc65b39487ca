"""A live run's store used by other processes at once, as a team does: a reader watching
progress (``ls``, ``report``, ``export``) and the same command run again in another terminal
are refused at once, naming the live run's PID and command and what to do; the live run goes on
and loses no observation, and the second run pays for no cell."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from latentbench.exceptions import InputError, StoreInUse
from latentbench.io.store import Store

from .conftest import run_cli

CLI = "from latentbench.cli import main; main()"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", CLI, *args]


def _cli_saying_when_it_waits(mark: Path, *args: str) -> list[str]:
    """:func:`_cli` whose store, held by another process, makes the file ``mark`` when it
    first waits for it (its pause between two tries)."""
    code = (
        "import time\n"
        "import latentbench.io.store as store\n"
        "class _Time:\n"
        "    def __getattr__(self, name):\n"
        "        return getattr(time, name)\n"
        "    def sleep(self, seconds):\n"
        f"        open({str(mark)!r}, 'a').close()\n"
        "        time.sleep(seconds)\n"
        "store.time = _Time()\n" + CLI
    )
    return [sys.executable, "-c", code, *args]


def test_a_store_held_by_a_live_run_names_it_and_is_refused_at_once(live_setup):
    s = live_setup
    config = s.write_config(oracle={"concurrency": 1, "timeout": 60.0})  # held, not retried
    store = s.tmp / "run.duckdb"
    env = {**os.environ, s.key_env: s.api_key}
    s.state.hold_after = 12  # the live run stops at the 13th request: 12 paid, store held
    command = _cli("select", "live", "--config", str(config), "--store", str(store), "--quiet")
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert s.state.held.wait(s.wait), "the live run never reached the hold"
        n_requests = len(s.state.requests)
        # the watchers in this process (the live run's lock refuses it as any other); the
        # same live run started again (a forgotten terminal) as a process, the real entry point
        watchers = [  # ls shows the run's progress snapshot instead (test_progress_snapshot)
            ("report", store, "--out", s.tmp / "live.html"),
            ("export", s.tmp / "rows.csv", "--store", store),
            command,
        ]
        for watcher in watchers:
            if watcher is command:
                done = subprocess.run(watcher, env=env, capture_output=True, text=True, timeout=60)
                code, stdout, stderr = done.returncode, done.stdout, done.stderr
            else:
                ran = run_cli(*watcher, env=env)
                code, stdout, stderr = ran.exit_code, ran.stdout, ran.stderr
                assert ran.exception is None or isinstance(ran.exception, SystemExit), ran
            assert code == 2, (watcher, stdout, stderr)
            message = " ".join(stderr.split())
            assert f"{store}: the store is in use by another process" in message, message
            assert f"PID {first.pid} runs `" in message, message
            assert "select live --config" in message, message
            assert "a live run holds its store until it stops" in message, message
            assert "the same command resumes it" in message, message
            assert "Traceback" not in stderr
        # refused at once, not after the wait given for a short holder (an hour here: no
        # wall-clock bound, a refusal within the join's minute is one that did not wait)
        refused: list[BaseException] = []

        def open_it() -> None:
            try:
                Store(store, wait=3600).close()
            except StoreInUse as exc:
                refused.append(exc)

        opener = threading.Thread(target=open_it, daemon=True)
        opener.start()
        opener.join(60)
        assert refused and refused[0].live, "a live run's store was waited for"
        # the second live run paid for nothing; the first is still held where it was
        assert len(s.state.requests) == n_requests
        assert first.poll() is None
    finally:
        s.state.release.set()
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err.decode()
    with Store(store, read_only=True) as db:
        ((run_id, status),) = db.connection.execute(
            "SELECT run_id, status FROM selection_runs"
        ).fetchall()
        frame = db.selection_observations(run_id)
    assert status == "done"
    # every request the run paid for is one stored observation, none lost
    assert len(frame) == len(s.state.requests) == len(set(s.state.requests))
    assert frame["score"].notna().all()


def test_a_store_held_briefly_is_waited_for(tmp_path: Path, store_held):
    """Two ingests at the same moment: the second waited for nothing and failed 'in use';
    now it waits for the first to let the store go (a few seconds), and both land."""
    store = tmp_path / "same.duckdb"
    table = tmp_path / "rows.csv"
    table.write_text("model,item,score\nm1,i1,1\nm1,i2,0\nm2,i1,0\nm2,i2,1\n")
    waiting = tmp_path / "waiting"
    Store(store).close()  # the store the holder (a bare DuckDB connection) holds
    with store_held(store, read_only=False) as pid:
        assert pid
        ingest = subprocess.Popen(
            _cli_saying_when_it_waits(
                waiting, "ingest", "table", str(table), "--store", str(store)
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # the holder lets go once the ingest found the store held and waits (a fixed 3 s
        # before, which never checked that the ingest had got that far)
        deadline = time.monotonic() + 60
        while not waiting.exists() and ingest.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert waiting.exists(), "the ingest never waited for the held store"
    out, err = ingest.communicate(timeout=60)
    assert ingest.returncode == 0, err
    assert "4 new rows" in out, out
    with Store(store, read_only=True) as db:
        assert db.connection.execute("SELECT count(*) FROM responses").fetchall() == [(4,)]


def test_a_store_opened_while_another_process_writes_it_waits(tmp_path: Path, store_held):
    """Store() while another process holds the file (a short ingest) waits for it, up to
    ``wait`` seconds, instead of failing at once; with ``wait=0`` it refuses at once."""

    store = tmp_path / "same.duckdb"
    Store(store).close()
    holding = store_held(store, read_only=False)
    pid = holding.__enter__()
    release = threading.Timer(1.0, holding.__exit__, (None, None, None))
    release.start()
    try:
        started = time.monotonic()
        try:
            Store(store, wait=0)
        except Exception as exc:  # refused at once: the holder still holds it
            assert f"(PID {pid})): DuckDB lets one process write" in str(exc)
            assert "waited" not in str(exc)
        else:
            raise AssertionError("wait=0 opened a store another process holds")
        with Store(store) as db:  # waits for the holder to let it go
            assert time.monotonic() - started >= 0.9
            db.connection.execute("SELECT 1")
    finally:
        release.join()


def test_the_holders_command_is_shown_escaped(tmp_path: Path):
    """The holder's command, read from /proc, keeps its non-ASCII text and shows control
    characters escaped (an argument holding a terminal escape never acts on the terminal)."""
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("no /proc: the holder's command is not known (the PID still is)")
    store = tmp_path / "held.duckdb"
    Store(store).close()
    code = (
        "import sys; from latentbench.io.store import Store; "
        f"s = Store({str(store)!r}); print('ready', flush=True); sys.stdin.readline()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, "café", "\x1b[31mred"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(InputError) as caught:
            Store(store, wait=0)
        message = str(caught.value)
        assert f"PID {holder.pid} runs `" in message, message
        assert "café \\x1b[31mred`" in message, message
        assert "\x1b" not in message
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
