"""``spend_cap`` holds across a SIGKILL: every HTTP request is recorded in the store before it
is sent (the request ledger, ``selection_requests``), and a resumed run counts the larger of
the ledger and the stored cells' ``attempts``.

Before, the cap counted the stored cells' ``attempts`` only: the requests in flight when a
process was killed were paid but not stored, so each kill could take a run past its cap by
up to ``concurrency x (1 + retries)`` requests (seen: 12).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning
from latentbench.io import read_snapshot
from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live
from latentbench.select.oracles import ChatEndpoint
from latentbench.select.oracles._openai import ChatCompletionsOracle

from .conftest import run_cli, said

WAIT = 30.0
CLI = "from latentbench.cli import main; main()"


def _run_id(path) -> str:
    with Store(path, read_only=True) as db:
        return str(db.selection_runs()[0]["run_id"])


def _attempts(path, run_id: str) -> int:
    with Store(path, read_only=True) as db:
        return int(db.selection_observations(run_id)["attempts"].sum())


@pytest.mark.slow
def test_requests_in_flight_at_a_sigkill_count_against_the_spend_cap(live_setup):
    s = live_setup
    cap = 24
    config = s.write_config(run={"spend_cap": cap}, oracle={"concurrency": 4, "retries": 0})
    store = s.tmp / "killed.duckdb"
    # model-0's 8 cells and 4 of model-1's are answered (and stored: a request starts only
    # once the cell before it is stored); requests 13..16 are held, then the process killed
    s.state.hold_after, s.state.notify_at = 12, 16
    command = [sys.executable, "-c", CLI, "select", "live", "--config", str(config),
               "--store", str(store), "--quiet", "--json"]  # fmt: skip
    err = s.tmp / "killed.err"
    with err.open("w") as fe:
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=fe, env={**os.environ, s.key_env: s.api_key}
        )
    try:
        for _ in range(int(WAIT / 0.1)):  # until the 16th request, or the process ended
            if s.state.reached.wait(0.1) or proc.poll() is not None:
                break
        assert s.state.reached.is_set(), err.read_text()
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(WAIT) == -signal.SIGKILL
    finally:
        proc.kill()
    s.state.hold_after = None  # the held ones stay held (never answered); new ones pass
    assert s.state.n_posts == 16
    run_id = _run_id(store)
    assert _attempts(store, run_id) == 12  # the 4 held: paid, not stored

    again = run_cli(*command[3:], env={s.key_env: s.api_key})
    assert again.exit_code == 3, said(again)  # capped
    # every request the server received, both sessions: never past the cap (before: 28)
    assert s.state.n_posts <= cap, s.state.n_posts
    assert s.state.n_posts >= cap - 8  # stopped by the cap, a batch of 8 short at most
    line = (
        "4 request(s) sent by an earlier session were not stored with an answer (the process "
        "was killed, or stopped at once by a second Ctrl-C or an error): counted against "
        "spend_cap"
    )
    assert line in " ".join(again.stderr.split()), again.stderr
    result = json.loads(again.stdout)
    assert result["status"] == "capped" and line in result["notes"], result
    with Store(store, read_only=True) as db:
        assert db.selection_requests(run_id) == s.state.n_posts
    snapshot = read_snapshot(store)
    assert snapshot is not None and snapshot["requests_left"] == cap - s.state.n_posts


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_is_refunded_in_the_ledger(live_setup):
    s = live_setup
    dead = ChatEndpoint("m", f"http://127.0.0.1:{_free_port()}/v1", "m", s.key_env)
    live = ChatEndpoint("model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", s.key_env)
    oracle = ChatCompletionsOracle([dead, live], s.items, retries=1, backoff=0.0)
    recorded: list[int] = []
    oracle.set_ledger(recorded.append)  # called from the workers: list.append is atomic
    with oracle:
        refused = list(oracle.evaluate_cells(0, np.arange(3)))
        answered = list(oracle.evaluate_cells(1, np.arange(2)))
    assert all(c.unsent and c.attempts == 0 for c in refused)
    assert [c.attempts for c in answered] == [1, 1]
    # each refused attempt was recorded before it went out, then refunded
    assert sorted(recorded) == [-1] * 6 + [1] * 8 and sum(recorded) == 2 == s.state.n_posts
    assert oracle.n_requests == 2


def test_a_failed_ledger_write_sends_nothing(live_setup):
    s = live_setup
    live = ChatEndpoint("model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", s.key_env)
    oracle = ChatCompletionsOracle([live], s.items, retries=0)
    oracle.limit_requests(5)

    def full(delta: int) -> None:
        raise OSError("No space left on device")

    oracle.set_ledger(full)
    with oracle, pytest.raises(OSError, match="No space left"):
        list(oracle.evaluate_cells(0, np.arange(3)))
    assert s.state.n_posts == 0 and oracle.n_requests == 0
    assert oracle._allowance == 5  # given back


def test_a_store_without_the_ledger_resumes_counting_its_stored_attempts(live_setup):
    """A store written before the ledger (no ``selection_requests`` table) opens read-only
    without it and resumes counting the stored attempts, as before; from then on the ledger
    holds them too."""
    s = live_setup
    path = s.tmp / "old.duckdb"
    first = run_live(LiveConfig.from_toml(s.write_config(run={"spend_cap": 20})), path)
    assert first.status == "capped" and s.state.n_posts == 16  # 2 of the 4 initial batches
    with Store(path) as db:
        db.connection.execute("DROP TABLE selection_requests")  # as an earlier version wrote it
    with Store(path, read_only=True) as db:
        assert db.selection_requests(first.run_id) is None
    bigger = s.write_config(s.tmp / "bigger.toml", run={"spend_cap": 28})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        again = run_live(LiveConfig.from_toml(bigger), path)
    assert not [w for w in seen if "earlier session" in str(w.message)]
    assert again.status == "capped" and s.state.n_posts == 24 <= 28
    with Store(path, read_only=True) as db:
        assert db.selection_requests(first.run_id) == 24 == _attempts(path, first.run_id)


def _calibration(s):
    from latentbench.io import ResponseMatrix

    return ResponseMatrix.from_wide(pd.read_csv(s.tmp / "history.csv").set_index("model"))


def _session(task: str, cal, config, store, n_items: int):
    """One ``estimate --live`` (model-1) or ``compare --live`` (model-1 against model-2)
    session asking ``n_items`` items in all."""
    from latentbench.select._compare_live import compare_live
    from latentbench.select._estimate_live import estimate_live

    if task == "estimate":
        return estimate_live(cal, config, store, model="model-1", budget=n_items, seed=3)
    pair = {"model_a": "model-1", "model_b": "model-2"}
    return compare_live(cal, config, store, **pair, budget=n_items // 2, seed=3)


@pytest.mark.parametrize("task", ["estimate", "compare"])
def test_estimate_and_compare_live_count_the_ledger_and_say_it(live_setup, task):
    """``estimate --live`` and ``compare --live`` go through the same durable oracle: a run
    whose ledger holds requests its cells do not (a killed session's) counts them against
    the cap, and says so in a warning kept with the result."""
    s = live_setup
    config = s.write_config(run={"spend_cap": 10})
    store = s.tmp / f"{task}.duckdb"
    cal = _calibration(s)
    first = _session(task, cal, config, store, 8)  # 8 requests (compare: 4 items, 2 each)
    run_id = first.options["live"]["run_id"]
    assert s.state.n_posts == 8
    with Store(store) as db:  # as a session killed with 2 requests in flight leaves it
        db.record_requests(run_id, 2)
    s.state.n_posts = 0
    with pytest.warns(DataWarning) as seen:
        again = _session(task, cal, config, store, 12)
    line = (
        "2 request(s) sent by an earlier session were not stored with an answer (the process "
        "was killed, or stopped at once by a second Ctrl-C or an error): counted against "
        "spend_cap"
    )
    assert [str(w.message) for w in seen].count(line) == 1, [str(w.message) for w in seen]
    assert line in again.warnings, again.warnings
    assert s.state.n_posts == 0  # 10 of 10 counted: nothing more asked (before: 2 more)
    with warnings.catch_warnings(record=True) as seen:  # a later session: said already
        warnings.simplefilter("always")
        later = _session(task, cal, config, store, 12)
    assert line not in later.warnings and not [w for w in seen if line in str(w.message)]
    assert s.state.n_posts == 0  # still counted


def _endpoints(s) -> list[ChatEndpoint]:
    return [ChatEndpoint(n, f"http://127.0.0.1:{s.port}/v1", n, api_key_env=s.key_env)
            for n in s.names]  # fmt: skip


def test_an_oracle_passed_in_records_nothing_in_the_run_s_ledger_after_it(live_setup):
    """``run_live(..., oracle=X)`` left X recording in the run's ledger after the run: the
    caller's own requests with X were counted as the run's (a resumed run said an earlier
    session had sent them, and stopped that much short of its cap), and once the store was
    closed every request of X failed ("the store is closed")."""
    s = live_setup
    small = {"budget": 2, "init_batch": 2, "batch_size": 2}
    cfg = LiveConfig.from_toml(s.write_config(run=small))
    path = s.tmp / "passed.duckdb"
    with ChatCompletionsOracle(_endpoints(s), s.items, retries=0) as oracle:
        with Store(path) as db:
            first = run_live(cfg, db, oracle=oracle)
            paid = s.state.n_posts
            assert db.selection_requests(first.run_id) == paid
            # the caller's own requests with its oracle, not the run's
            assert oracle.evaluate(0, np.arange(3)).tolist() == s.Y[0, :3].tolist()
            assert db.selection_requests(first.run_id) == paid
        assert oracle.evaluate(1, np.arange(2)).tolist() == s.Y[1, :2].tolist()  # store closed
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            again = run_live(cfg, path, oracle=oracle)  # resumed: replayed from the store
    assert again.status == first.status and not again.notes, again.notes
    assert not [w for w in seen if "earlier session" in str(w.message)]


def test_a_cell_records_its_retries_in_the_ledger_it_started_with(live_setup):
    """A cell in flight when its oracle's ledger is unset or replaced (a run that ended with
    an error, its passed-in oracle released) records its retry in its run's ledger, not in
    the next one's (nor in none)."""
    s = live_setup
    s.state.faults[("model-0", s.items[0]["id"])] = ["500"]  # the first answer fails: retried
    s.state.hold_after = 0  # the first request is held until the ledger is replaced
    first: list[int] = []
    later: list[int] = []
    oracle = ChatCompletionsOracle(_endpoints(s), s.items, retries=1, backoff=0.0)
    oracle.set_ledger(first.append)
    with oracle:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(list, oracle.evaluate_cells(0, np.arange(1)))
            assert s.state.held.wait(WAIT)
            oracle.set_ledger(later.append)
            s.state.hold_after = None
            s.state.release.set()
            (cell,) = pending.result(WAIT)
    assert cell.error is None and cell.attempts == 2 and s.state.n_posts == 2
    assert first == [1, 1] and later == []


def _unstored_line(n: int) -> str:
    return (
        f"{n} request(s) sent by an earlier session were not stored with an answer (the "
        "process was killed, or stopped at once by a second Ctrl-C or an error): counted "
        "against spend_cap"
    )


def test_the_unstored_requests_are_said_once_not_by_every_later_session(live_setup):
    """The line on a killed session's unstored requests was said again by every later
    session, after clean stops too (capped, here): each read as one more kill. It is said by
    the session that finds them; a later one says only those unstored since (a new kill),
    and the cap keeps counting them all."""
    s = live_setup
    path = s.tmp / "said.duckdb"

    def session(cap: int):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = run_live(LiveConfig.from_toml(s.write_config(run={"spend_cap": cap})), path)
        return result, [str(w.message) for w in seen if "earlier session" in str(w.message)]

    first, said = session(8)  # one batch of 8, then capped
    assert first.status == "capped" and not said
    with Store(path) as db:  # as a session killed with 3 requests in flight leaves it
        db.record_requests(first.run_id, 3)
    for cap, n in ((16, 3), (24, None)):  # capped each time: clean stops
        result, said = session(cap)
        line = [] if n is None else [_unstored_line(n)]
        assert result.status == "capped" and result.notes == line, (cap, result.notes)
        assert [w.split(": ", 1)[1] for w in said] == line, (cap, said)
    with Store(path) as db:  # another kill: its 2 requests only are said
        db.record_requests(first.run_id, 2)
    result, said = session(32)
    assert result.notes == [_unstored_line(2)] and len(said) == 1, said
    with Store(path, read_only=True) as db:  # all counted against the cap
        paid = int(db.selection_observations(first.run_id)["attempts"].sum())
        assert db.selection_requests(first.run_id) == paid + 5 == s.state.n_posts + 5
    assert s.state.n_posts <= 32 - 5


def test_the_unstored_line_names_an_error_that_stopped_the_session(live_setup, monkeypatch):
    """An error that stops a session at once (here a store that could not be written) cuts
    its requests in flight, paid and unstored, as a second Ctrl-C does; the resumed run's
    line said the process was killed or aborted by a second Ctrl-C, neither of which
    happened."""
    import duckdb

    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config(run={"spend_cap": 8}, oracle={"retries": 0}))
    path = s.tmp / "error.duckdb"
    s.state.hold_after, s.state.notify_at = 1, 4  # requests 2 to 4 held: in flight

    def full(self, *args, **kwargs):
        assert s.state.reached.wait(WAIT)  # the first answer's commit, all 4 requests sent
        raise duckdb.TransactionException("Failed to commit: No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(Store, "add_observations", full)
        with pytest.raises(duckdb.TransactionException, match="No space left"):
            run_live(cfg, path)
    s.state.hold_after = None
    with pytest.warns(DataWarning) as seen:
        again = run_live(cfg, path)  # 4 unstored of 8: capped, nothing asked
    line = (
        "4 request(s) sent by an earlier session were not stored with an answer (the process "
        "was killed, or stopped at once by a second Ctrl-C or an error): counted against "
        "spend_cap"
    )
    assert again.status == "capped" and again.notes == [line], again.notes
    assert [str(w.message) for w in seen if "earlier session" in str(w.message)] == [
        f"run {again.run_id!r}: {line}"
    ]
    assert s.state.n_posts == 4


def test_a_slow_ledger_write_is_not_counted_against_the_request_s_timeout(live_setup):
    """The request's deadline started before its ledger write: a write slower than
    ``timeout`` (a busy disk, a checkpoint, ``concurrency`` writes in turn) cut the request
    before it was sent, and it was counted as a paid timeout (retried the same way, until
    the cell failed with nothing sent). ``timeout`` bounds the request, from its
    connection on."""
    s = live_setup
    live = ChatEndpoint("model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", s.key_env)
    oracle = ChatCompletionsOracle([live], s.items, timeout=0.2, retries=2, backoff=0.0)
    oracle.set_ledger(lambda delta: threading.Event().wait(0.3))  # longer than the timeout
    with oracle:
        (cell,) = oracle.evaluate_cells(0, np.arange(1))
    assert cell.error is None and cell.attempts == s.state.n_posts >= 1, (cell, s.state.n_posts)


def test_an_oracle_passed_to_a_capped_run_is_not_left_capped(live_setup):
    """``run_live(..., oracle=X)`` held X to the run's requests left (``limit_requests``) and
    left it so: after a run that reached its spend cap, the caller's own ``X.evaluate``
    returned NaN for every cell. The run's allowance is released with its ledger."""
    s = live_setup
    cfg = LiveConfig.from_toml(
        s.write_config(run={"budget": 8, "init_batch": 2, "batch_size": 2, "spend_cap": 3})
    )
    with ChatCompletionsOracle(_endpoints(s), s.items, retries=0) as oracle:
        with Store(s.tmp / "capped.duckdb") as db:
            result = run_live(cfg, db, oracle=oracle)
        assert result.status == "capped"
        assert oracle.evaluate(0, np.arange(3)).tolist() == s.Y[0, :3].tolist()
