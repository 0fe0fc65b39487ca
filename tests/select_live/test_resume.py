"""SIGKILL partway through a live run, resume with the same command; Ctrl-C stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live

from .conftest import run_cli, said

WAIT = 30.0
CLI = "from latentbench.cli import main; main()"
CONCURRENCY = 4
INIT = 4 * 8  # 4 models x init_batch 8
HELD = {"concurrency": CONCURRENCY, "timeout": 2 * WAIT}
"""The oracle of the tests that hold requests at the server: its timeout is longer than the
tests wait (with the default 5 s, a CI machine slow to deliver the signal turned the held
batch into timeouts and retries, and the run ended 'failed' instead of 'interrupted')."""


def _command(config: Path, store: Path) -> list[str]:
    return [sys.executable, "-c", CLI, "select", "live", "--config", str(config),
            "--store", str(store), "--quiet", "--json"]  # fmt: skip


def _start(s, config: Path, store: Path, tag: str) -> tuple[subprocess.Popen, Path, Path]:
    out, err = s.tmp / f"{tag}.out", s.tmp / f"{tag}.err"
    env = {**os.environ, s.key_env: s.api_key}
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen(_command(config, store), stdout=fo, stderr=fe, env=env)
    return proc, out, err


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _observations(path: Path) -> list[tuple[str, str, float]]:
    with Store(path, read_only=True) as db:
        run_id = db.connection.execute("SELECT run_id FROM selection_runs").fetchall()[0][0]
        frame = db.selection_observations(run_id)
    return list(zip(frame["model"], frame["item"], frame["score"], strict=True))


def _decisions(path: Path) -> list[dict]:
    with Store(path, read_only=True) as db:
        run_id = db.connection.execute("SELECT run_id FROM selection_runs").fetchall()[0][0]
        return [
            {k: d.get(k) for k in ("round", "phase", "model", "items", "leader", "estimate")}
            for d in db.selection_decisions(run_id)
        ]


def _resume(s, config: Path, store: Path):
    """The same command again, in this process (it reads only the store, as a fresh process
    does; the run killed or interrupted before it was a process of its own)."""
    args = ["select", "live", "--config", config, "--store", store, "--quiet", "--json"]
    return run_cli(*args, env={s.key_env: s.api_key})


@pytest.fixture(scope="module")
def references() -> dict:
    """The uninterrupted runs of this module, by configuration text with the server's port
    taken out, filled by the first test that asks (the three kill/interrupt tests ran the same
    one each: each test's server answers from the same table, the seed is the same)."""
    return {}


def _reference(s, config: Path, references: dict):
    """An uninterrupted live run of ``config`` and its decisions, round by round (made once
    per module; then the server's logs are reset)."""
    key = config.read_text().replace(f":{s.port}/", ":PORT/")
    if key not in references:
        result = run_live(LiveConfig.from_toml(config), s.tmp / "reference.duckdb")
        references[key] = (result, _decisions(s.tmp / "reference.duckdb"))
        s.state.requests.clear()
        s.state.answered.clear()
    return references[key]


@pytest.mark.slow
def test_sigkill_and_resume(live_setup, references):
    s = live_setup
    config = s.write_config(oracle=HELD)
    reference, reference_decisions = _reference(s, config, references)
    store = s.tmp / "killed.duckdb"

    # hold every request after the 51st: round 3 is in flight (requests 49..56)
    s.state.hold_after = INIT + 2 * 8 + 3
    proc, _, err1 = _start(s, config, store, "killed")
    try:
        assert s.state.held.wait(WAIT), "the run never reached the hold"
        _until(lambda: s.state.n_held == CONCURRENCY, "every worker to be held")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(WAIT) == -signal.SIGKILL
    finally:
        proc.kill()
    s.state.hold_after = None  # new requests pass; the held ones stay held (never answered)
    answered_before = Counter(s.state.answered)
    requested_before = list(s.state.requests)
    stored_before = _observations(store)
    cells_before = {(m, i) for m, i, _ in stored_before}
    assert len(cells_before) == len(stored_before) > INIT  # partway: past the initial batch
    assert cells_before <= set(answered_before)  # stored only what was answered
    lost = set(answered_before) - cells_before  # answered, killed before its commit
    assert len(lost) <= CONCURRENCY
    in_flight = set(requested_before) - set(answered_before)
    assert len(in_flight) == CONCURRENCY

    again = _resume(s, config, store)
    assert again.exit_code == 0, said(again)
    resumed = json.loads(again.stdout)
    final = _observations(store)
    cells = [(m, i) for m, i, _ in final]

    # nothing stored before the kill was requested again, and nothing was lost
    requested_after = s.state.requests[len(requested_before) :]
    assert not set(requested_after) & cells_before
    assert set(stored_before) <= set(final)
    assert len(set(cells)) == len(cells) == reference.selection.evaluations_total
    # the only cells ever answered twice are those answered but not yet committed at the kill
    assert {c for c, k in s.state.answered.items() if k > 1} == lost
    assert resumed["resumed"] and resumed["status"] == "done"
    assert resumed["n_replayed"] == len(stored_before)
    assert resumed["n_paid"] == len(cells) - len(stored_before)
    assert resumed["paid_total"] == len(cells)
    # same decisions, round by round, and the same final answer as the uninterrupted run
    assert _decisions(store) == reference_decisions
    sel = resumed["selection"]
    assert sel["best_model"] == str(reference.selection.best_id)
    np.testing.assert_allclose([a["estimate"] for a in sel["arms"]], reference.selection.estimates)
    # the key never reaches the logs or the store file
    for path in (err1, store):
        assert s.api_key.encode() not in path.read_bytes()
    assert s.api_key not in again.stdout and s.api_key not in again.stderr
    print(
        f"\nkill/resume: {len(stored_before)} cells stored before SIGKILL, "
        f"{len(in_flight)} in flight, {len(lost)} answered-but-uncommitted; "
        f"resume replayed {resumed['n_replayed']}, paid {resumed['n_paid']}; "
        f"total {len(cells)} cells, {len(s.state.requests) - len(requested_before)} requests "
        "after resume"
    )


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_after_batch_and_resumes(live_setup, references, stop):
    """Ctrl-C, or SIGTERM (``kill``, ``docker stop``, a cancelled CI job: it ended the run
    at once, unsaid, the batch in flight paid and lost), stops after the batch in flight."""
    s = live_setup
    config = s.write_config(oracle=HELD)
    reference, _ = _reference(s, config, references)
    store = s.tmp / "interrupted.duckdb"
    s.state.hold_after = INIT + 2 * 8 + 3  # hold inside round 3 (cells 49..56)
    proc, _, err = _start(s, config, store, "interrupted")
    try:
        assert s.state.held.wait(WAIT), "the run never reached the hold"
        proc.send_signal(getattr(signal, stop))
        _until(lambda: "stopping after the batch" in err.read_text(), f"the {stop} message")
        s.state.hold_after = None
        s.state.release.set()  # the in-flight batch completes
        assert proc.wait(WAIT) == 130, err.read_text()
    finally:
        proc.kill()
    text = err.read_text()
    assert "interrupted" in text and "resume with" in text and "select live" in text
    with Store(store, read_only=True) as db:
        status = db.connection.execute("SELECT status FROM selection_runs").fetchall()[0][0]
    assert status == "interrupted"
    stored = _observations(store)
    assert len(stored) == INIT + 3 * 8  # the whole in-flight batch was committed
    assert all(not np.isnan(score) for _, _, score in stored)
    assert len(s.state.requests) == len(stored)  # nothing after the batch was requested

    again = _resume(s, config, store)
    assert again.exit_code == 0, said(again)
    result = json.loads(again.stdout)
    assert result["n_replayed"] == len(stored)
    assert result["selection"]["best_model"] == str(reference.selection.best_id)
    assert max(s.state.answered.values()) == 1


def test_a_new_endpoint_url_resumes_the_run_without_paying_again(live_setup):
    """The endpoint's URL may change between sessions (a server moved): the same
    configuration resumes its run, its cap included, and pays for no stored cell (it started
    a new run, paid every cell again and reset the cap). A run stored while the URLs were part
    of the identity (another default id) is found and resumed too. Both say where the
    stored answers were asked (a review found two servers serving different models under
    one name would share them)."""
    s = live_setup
    capped = s.write_config(s.tmp / "cap.toml", run={"spend_cap": 40})
    store = s.tmp / "moved.duckdb"
    first = run_live(LiveConfig.from_toml(capped), store)
    assert first.status == "capped"
    paid = sum(s.state.answered.values())
    moved = s.tmp / "moved.toml"  # the same server under another name, a larger cap
    moved.write_text(capped.read_text().replace("127.0.0.1", "localhost").replace(
        "spend_cap = 40", "spend_cap = 48"))  # fmt: skip
    cfg = LiveConfig.from_toml(moved)
    assert cfg.default_run_id() == LiveConfig.from_toml(capped).default_run_id()
    with pytest.warns(Warning, match=r"resumes with model 'model-0' at http://localhost:\d+/v1 "
                      r"\(asked at http://127\.0\.0\.1:\d+/v1 before\)"):  # fmt: skip
        second = run_live(cfg, store)
    assert second.run_id == first.run_id and second.status == "capped"
    assert sum(s.state.answered.values()) - paid <= 8  # the 8 cells the cap was raised by
    with Store(store, read_only=True) as db:
        assert len(db.selection_runs()) == 1
        record = db.selection_run(first.run_id)["config"]
    # said once: the record now holds the new address, and the move
    assert {m["base_url"] for m in record["models"]} == {f"http://localhost:{s.port}/v1"}
    assert [m["model"] for m in record["endpoint_moves"]] == s.names
    assert record["endpoint_moves"][0]["from"] == f"http://127.0.0.1:{s.port}/v1"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        third = run_live(cfg, store)
    assert third.status == "capped"
    assert not [w for w in caught if "resumes with" in str(w.message)]

    # a run stored by the code before: the URLs in its identity and so in its default id
    old = s.tmp / "old.duckdb"
    ran = run_live(LiveConfig.from_toml(capped), old)
    with Store(old) as db:
        record = db.selection_run(ran.run_id)["config"]
        for entry in record["identity"]["answers"]["models"].values():
            entry["base_url"] = f"http://127.0.0.1:{s.port}/v1"
        db.connection.execute(
            "UPDATE selection_runs SET run_id = 'live-0123456789abcdef', config = ? "
            "WHERE run_id = ?",
            [json.dumps(record), ran.run_id],
        )
        for table in ("selection_observations", "selection_decisions"):
            db.connection.execute(
                f"UPDATE {table} SET run_id = 'live-0123456789abcdef' WHERE run_id = ?",
                [ran.run_id],
            )
    before = sum(s.state.answered.values())
    with pytest.warns(Warning, match="resumes with model"):
        again = run_live(cfg, old)
    assert again.run_id == "live-0123456789abcdef" and again.status == "capped"
    assert sum(s.state.answered.values()) - before <= 8
    # another seed at the new address: a new run, reusing the answers, said
    other = s.tmp / "seed8.toml"
    other.write_text(moved.read_text().replace("seed = 7", "seed = 8"))
    with pytest.warns(
        Warning,
        match=r"answers of run 'live-\w+' \(\d+ stored\) are reused where this run asks "
        r"the same cells, for model",
    ):
        run_live(LiveConfig.from_toml(other), store)
