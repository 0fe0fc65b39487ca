"""What a live run pays for, counted at the server: the spend cap, the request timeout, kills.

Issue 15, items 11-13: the spend cap counted stored rows (not HTTP requests), ``timeout``
bounded each socket read (not the request), and a SIGKILL could repeat a whole batch of paid
requests (docs/live.md promises at most ``concurrency``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live
from latentbench.select.oracles import ChatEndpoint
from latentbench.select.oracles._openai import ChatCompletionsOracle

from .conftest import run_cli, said

WAIT = 30.0


def _all_faulty(s, fault: str, n: int = 50) -> None:
    for name in s.names:
        for item in s.items:
            s.state.faults[(name, item["id"])] = [fault] * n


def test_spend_cap_counts_http_requests_not_stored_rows(live_setup):
    # every answer is a billed 200 with garbage: each cell is retried (1 + 3 requests)
    s = live_setup
    _all_faulty(s, "garbage")
    cap = 20
    config = s.write_config(run={"spend_cap": cap}, oracle={"retries": 3})
    path = s.tmp / "cap.duckdb"
    result = run_live(LiveConfig.from_toml(config), path)
    assert result.status == "capped", result.message
    assert 0 < s.state.n_posts <= cap
    # the same command again: the cap is spent, nothing more is requested
    again = run_live(LiveConfig.from_toml(config), path)
    assert again.status == "capped"
    assert s.state.n_posts <= cap
    # a larger cap resumes; billed requests stay within it across sessions
    bigger = s.write_config(s.tmp / "bigger.toml", run={"spend_cap": 45}, oracle={"retries": 3})
    third = run_live(LiveConfig.from_toml(bigger), path)
    assert third.status in ("capped", "failed")
    assert cap < s.state.n_posts <= 45


def test_spend_cap_with_good_answers_matches_cells(live_setup):
    s = live_setup
    config = s.write_config(run={"spend_cap": 40}, oracle={"retries": 3})
    result = run_live(LiveConfig.from_toml(config), s.tmp / "good.duckdb")
    assert result.status == "capped"
    assert s.state.n_posts == result.paid_total <= 40  # one request per cell


def test_timeout_bounds_the_whole_request(live_setup):
    # a slow-drip body (one byte per 0.1 s, 20 s in all) against timeout = 1 s
    s = live_setup
    item = s.items[0]
    s.state.faults[("model-0", item["id"])] = ["drip"]
    endpoint = ChatEndpoint(
        "model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", api_key_env=s.key_env
    )
    oracle = ChatCompletionsOracle([endpoint], s.items, timeout=1.0, retries=0)
    started = time.monotonic()
    with oracle:
        cells = list(oracle.evaluate_cells(0, np.array([0])))
    elapsed = time.monotonic() - started
    s.state.timeout_release.set()
    assert len(cells) == 1 and np.isnan(cells[0].score)
    assert "timeout after 1s" in cells[0].error
    assert elapsed < 8.0, elapsed  # 20 s before (each one-byte read was within 1 s)


# a store whose commits are slow (a loaded disk): answers arrive faster than they are stored
_SLOW_COMMIT = """
import sys, time
from latentbench.io.store import Store
_add = Store.add_observations
def _slow(self, *args, **kwargs):
    time.sleep(0.03)
    return _add(self, *args, **kwargs)
Store.add_observations = _slow
from latentbench.cli import main
sys.argv = ["latentbench", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_sigkill_at_random_points_repeats_at_most_concurrency_requests(live_setup):
    s = live_setup
    concurrency, kills = 2, 3
    config = s.write_config(
        run={"batch_size": 16, "budget": 96}, oracle={"concurrency": concurrency}
    )
    store = s.tmp / "killed.duckdb"
    env = {**os.environ, s.key_env: s.api_key}
    command = [sys.executable, "-c", _SLOW_COMMIT, "select", "live", "--config", str(config),
               "--store", str(store), "--quiet", "--json"]  # fmt: skip
    total = 4 * 8 + 96
    rng = random.Random(5)
    for _ in range(kills):
        s.state.reached.clear()
        s.state.notify_at = len(s.state.requests) + rng.randint(3, 20)
        err = s.tmp / "err.txt"
        with err.open("w") as fe:
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=fe, env=env)
        try:
            assert s.state.reached.wait(WAIT), err.read_text()
            proc.send_signal(signal.SIGKILL)
            proc.wait(WAIT)
        finally:
            proc.kill()
    s.state.notify_at = None
    # the resume in this process: it reads only the store the killed processes left
    done = run_cli(*command[3:], env={s.key_env: s.api_key})
    assert done.exit_code == 0, said(done)
    with Store(store, read_only=True) as db:
        run_id = db.connection.execute("SELECT run_id FROM selection_runs").fetchall()[0][0]
        rows = db.selection_observations(run_id)
    cells = set(zip(rows["model"], rows["item"], strict=True))
    assert len(cells) == len(rows) == total
    repeated = len(s.state.requests) - len(set(s.state.requests))
    assert set(s.state.requests) == cells
    assert repeated <= kills * concurrency, repeated


def test_a_cap_of_zero_is_refused_and_a_capped_run_says_to_raise_it(live_setup):
    """`spend_cap = 0` capped at once and printed a resume command that capped again."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.exceptions import InputError

    s = live_setup
    zero = s.write_config(s.tmp / "zero.toml", run={"spend_cap": 0})
    with pytest.raises(InputError, match="spend_cap"):
        LiveConfig.from_toml(zero)
    _register()
    capped = s.write_config(s.tmp / "capped.toml", run={"spend_cap": 10})
    args = ["select", "live", "--config", str(capped), "--store", str(s.tmp / "c.duckdb")]
    outcome = CliRunner().invoke(app, args, env={s.key_env: s.api_key})
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 3, outcome.output
    assert "raise [run] spend_cap in" in text and "then resume with:" in text
    # every line whole, however narrow the terminal (a log broke "0 stored / in all")
    narrow = CliRunner().invoke(app, args, env={s.key_env: s.api_key, "COLUMNS": "40"})
    lines = narrow.output.splitlines()
    assert any(line.startswith("run live-") and "stored in all" in line for line in lines), lines
    assert any(line.startswith("the next batch needs") and "are used" in line for line in lines)


def test_abort_cuts_the_requests_in_flight_and_sends_no_retry(live_setup):
    """A second Ctrl-C (``abort``) waited for every retry of the batch (13.9 s at a 5 s
    timeout, 8 requests sent after it, paid and never stored): the requests in flight are
    cut, no request or retry follows, and the cells end with an error at once."""
    import threading

    s = live_setup
    for item in s.items[:4]:
        s.state.faults[("model-0", item["id"])] = ["timeout"] * 4
    endpoint = ChatEndpoint(
        "model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", api_key_env=s.key_env
    )
    # a timeout far above the bound asserted: cut by the abort, not by the timeout, even on
    # a loaded machine
    oracle = ChatCompletionsOracle([endpoint], s.items, timeout=60.0, retries=3,
                                   concurrency=2, backoff=0.01)  # fmt: skip
    cells = []
    worker = threading.Thread(target=lambda: cells.extend(oracle.evaluate_cells(0, np.arange(4))))
    worker.start()
    deadline = time.monotonic() + 10
    while len(s.state.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(s.state.requests) == 2  # two requests in flight, held past the timeout
    started = time.monotonic()
    oracle.abort()
    worker.join(30)
    elapsed = time.monotonic() - started
    oracle.close()
    s.state.timeout_release.set()
    assert not worker.is_alive() and elapsed < 20.0, elapsed
    assert len(s.state.requests) == 2 and oracle.n_requests == 2  # nothing sent after it
    assert len(cells) == 4 and all(np.isnan(c.score) and "aborted" in c.error for c in cells)


def test_an_oracle_passed_in_is_not_aborted_by_an_error_of_the_run(live_setup):
    """run_live(..., oracle=X) aborted the caller's own oracle on any exception (a bug in a
    progress callback): every later run with it failed, 'aborted (Ctrl-C)'. Only a run's own
    oracle is aborted, and only by a second Ctrl-C."""

    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config(s.tmp / "r.toml"))
    endpoints = [ChatEndpoint(n, f"http://127.0.0.1:{s.port}/v1", n, api_key_env=s.key_env)
                 for n in s.names]  # fmt: skip
    oracle = ChatCompletionsOracle(endpoints, s.items, timeout=5.0, retries=0)

    def broken(progress):
        raise RuntimeError("a bug in my progress callback")

    with pytest.raises(RuntimeError, match="progress callback"):
        run_live(cfg, s.tmp / "a.duckdb", oracle=oracle, progress=broken)
    again = run_live(cfg, s.tmp / "b.duckdb", oracle=oracle)
    assert again.status == "done" and len(again.errors) == 0
    oracle.close()


def test_a_store_error_mid_batch_sends_no_more_requests(live_setup, monkeypatch):
    """A store write that fails mid-batch (a full disk) ends the run at once: its own
    oracle is aborted, so the requests in flight are cut and none is retried (it waited for
    every retry, 12 requests paid after the error and never stored; second review)."""
    import duckdb

    s = live_setup
    # a timeout far above the bound asserted: the run ends at the error, not at a timeout
    cfg = LiveConfig.from_toml(s.write_config(oracle={"timeout": 30.0, "retries": 3,
                                                      "concurrency": 4}))  # fmt: skip
    real = Store.add_decision
    seen = {}

    def spy(self, run_id, call, payload):
        if call == 0 and not seen:  # the first batch: every cell but the first hangs
            seen["items"] = payload["items"]
            for item in payload["items"][1:]:
                s.state.faults[("model-0", item)] = ["timeout"] * 4
        return real(self, run_id, call, payload)

    at = {}

    def broken(self, run_id, rows):
        at.update(time=time.monotonic(), requests=len(s.state.requests))
        raise duckdb.IOException("disk full (simulated)")

    monkeypatch.setattr(Store, "add_decision", spy)
    monkeypatch.setattr(Store, "add_observations", broken)
    with pytest.raises(duckdb.IOException):
        run_live(cfg, s.tmp / "full.duckdb")
    elapsed = time.monotonic() - at["time"]
    s.state.timeout_release.set()
    assert elapsed < 15.0, elapsed
    # the batch's first requests only (4 in flight, some still on their way to the server
    # at the error): one per cell, no retry (16 before: every hanging cell retried 3 times)
    assert len(s.state.requests) <= 4 and at["requests"] >= 1


def test_a_signal_given_to_a_worker_thread_is_handled_while_requests_are_held(live_setup):
    """The OS may give a process's signal to any of its threads; Python runs the handler on
    the main thread once that thread runs Python again. The batch's consumer waited for a
    cell with no timeout, so a Ctrl-C given to a pool thread was handled only when a cell
    ended: in CI the held batch timed out four times first and the run ended 'failed'
    instead of 'interrupted'. Now the handler runs while every request is still held."""
    import threading

    class Handled(Exception):
        pass

    def handler(signum, frame):
        raise Handled

    s = live_setup
    s.state.hold_after = 0  # every request held until released
    endpoint = ChatEndpoint(
        "model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", api_key_env=s.key_env
    )
    oracle = ChatCompletionsOracle([endpoint], s.items, timeout=60.0, retries=0, concurrency=2)

    sent = []

    def kick() -> None:
        s.state.held.wait(30)
        pool = [t for t in threading.enumerate() if t.name.startswith("latentbench")]
        sent.append(time.monotonic())
        signal.pthread_kill(pool[0].ident, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, handler)
    kicker = threading.Thread(target=kick)
    try:
        kicker.start()
        with pytest.raises(Handled):
            list(oracle.evaluate_cells(0, np.arange(4)))
        waited = time.monotonic() - sent[0]
        # the server holds a request 30 s and then drops it (the cell ends, and the handler
        # ran then, before): handled long before, nothing answered
        assert waited < 15.0 and s.state.answered == {}, waited
    finally:
        signal.signal(signal.SIGUSR1, previous)
        s.state.release.set()
        kicker.join(30)
        oracle.close()


def test_a_batch_stopped_early_counts_only_the_cells_it_took(live_setup):
    """``n_calls`` ("cells evaluated") counted a whole batch when it was asked for: a batch
    of 6 stopped after its first cell said 6, with 2 requested and 4 never sent."""
    s = live_setup
    endpoint = ChatEndpoint(
        "model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", api_key_env=s.key_env
    )
    oracle = ChatCompletionsOracle([endpoint], s.items, timeout=30.0, retries=0, concurrency=2)
    cells = oracle.evaluate_cells(0, np.arange(6))
    first = next(cells)
    cells.close()  # the consumer stops: the cells not taken are cancelled
    assert first.error is None and oracle.n_calls == 1
    assert oracle.n_requests <= 3  # the two in flight and the one topped up, never six
    taken = list(oracle.evaluate_cells(0, np.arange(6, 10)))
    oracle.close()
    assert len(taken) == 4 and oracle.n_calls == 5
