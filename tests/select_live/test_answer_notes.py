"""Answers without text, the printed estimate and dead endpoints (the live path's last gaps).

Each test was written against the failure first: the stored cells had no note, a null content
failed its cell (and a resume paid for it again), the raw estimate was not kept, and a dead
endpoint under ``on_error = "zero"`` was scored 0 to the end of the run.
"""

from __future__ import annotations

import socket
import warnings

import numpy as np
import pytest

from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live


def _observations(path, run_id):
    with Store(path, read_only=True) as db:
        return db.selection_observations(run_id)


def test_an_empty_answer_is_noted_on_its_cell_and_counted_in_the_summary(live_setup):
    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["empty"] * 10
    cfg = LiveConfig.from_toml(s.write_config())
    path = s.tmp / "empty.duckdb"
    with pytest.warns(Warning, match="empty text"):
        result = run_live(cfg, path)
    assert result.status == "done"
    obs = _observations(path, result.run_id)
    blank = obs[obs["model"] == "model-0"]
    assert len(blank) > 0 and (blank["score"] == 0).all() and blank["error"].isna().all()
    assert blank["note"].str.startswith("empty answer").all()
    assert obs.loc[obs["model"] != "model-0", "note"].isna().all()
    assert f"{len(blank)} answer(s) had empty text" in result.message
    # a resumed session reads the count from the store (nothing asked again)
    n = len(s.state.requests)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = run_live(cfg, path)
    assert len(s.state.requests) == n
    assert f"{len(blank)} answer(s) had empty text" in again.message


def test_a_null_content_is_a_paid_answer_scored_0_with_its_reason_never_asked_again(live_setup):
    # content null (finish_reason "length": the token limit spent on reasoning) is a complete,
    # paid answer: scored 0 with the reason on the cell, one request, and not asked again on
    # resume (it failed the cell, so on_error = "stop" ended the run and a resume paid again)
    s = live_setup
    for item in s.items:
        s.state.faults[("model-1", item["id"])] = ["null_length"] * 10
    cfg = LiveConfig.from_toml(s.write_config(oracle={"retries": 3}))
    path = s.tmp / "null.duckdb"
    with pytest.warns(Warning, match="without text"):
        result = run_live(cfg, path)
    assert result.status == "done" and result.errors.empty
    obs = _observations(path, result.run_id)
    null = obs[obs["model"] == "model-1"]
    assert len(null) > 0 and (null["score"] == 0).all() and null["error"].isna().all()
    assert (null["attempts"] == 1).all()
    assert null["note"].str.contains(r"content null, finish_reason 'length'").all()
    assert null["note"].str.contains("raise max_tokens").all()
    asked = [c for c in s.state.requests if c[0] == "model-1"]
    assert len(asked) == len(set(asked)) == len(null)  # one request per cell, no retry
    assert f"{len(null)} answer(s) had no text (content null)" in result.message
    n = len(s.state.requests)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = run_live(cfg, path)
    assert len(s.state.requests) == n and again.status == "done"


def test_the_stored_record_keeps_the_unclipped_estimate_beside_the_printed_one(live_setup):
    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    result = run_live(cfg, s.tmp / "raw.duckdb")
    sel = result.selection
    assert sel is not None and sel.estimates_unclipped is not None
    np.testing.assert_allclose(sel.estimates, np.clip(sel.estimates_unclipped, 0.0, 1.0))
    with Store(s.tmp / "raw.duckdb", read_only=True) as db:
        final = db.selection_decisions(result.run_id)[-1]
    for arm, raw in zip(final["arms"], sel.estimates_unclipped, strict=True):
        assert arm["estimate_unclipped"] == pytest.approx(float(raw))
        assert arm["lower"] <= arm["estimate"] <= arm["upper"]


def test_a_raw_estimate_below_0_is_printed_inside_its_interval():
    from latentbench.select import UCBE, MatrixOracle
    from latentbench.select._run import run_selection

    class Shifted(UCBE):  # the policy's estimates leave [0, 1], as a DR mean can
        def estimates(self) -> np.ndarray:
            return super().estimates() - 0.5

    Y = np.zeros((3, 40))
    Y[0, :10] = Y[1, :20] = Y[2, :30] = 1
    res = run_selection(MatrixOracle(Y), Shifted(), budget=30, batch_size=5, init_batch=5,
                        random_state=0)  # fmt: skip
    assert res.estimates_unclipped is not None and res.estimates_unclipped.min() < 0
    row = res.to_dict()["arms"][int(np.argmin(res.estimates_unclipped))]
    assert row["estimate"] == 0.0 and row["estimate_unclipped"] < 0
    if "lower" in row:
        assert row["lower"] <= row["estimate"] <= row["upper"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_dead_endpoint_ends_the_run_even_when_failures_are_scored_0(live_setup):
    # connection refused: nothing sent, nothing paid, so spend_cap does not end the run; under
    # on_error = "zero" every cell of the dead model was scored 0 to the end of the budget
    s = live_setup
    path = s.write_config(run={"on_error": "zero", "spend_cap": 400},
                          oracle={"retries": 1})  # fmt: skip
    tail = '/v1"\nmodel = "model-2"'
    text = path.read_text().replace(f"127.0.0.1:{s.port}{tail}", f"127.0.0.1:{_free_port()}{tail}")
    assert text != path.read_text()
    path.write_text(text)
    result = run_live(LiveConfig.from_toml(path), s.tmp / "dead.duckdb")
    assert result.status == "failed" and result.selection is None
    assert "model-2" in result.message and "nothing reached a server" in result.message
    assert "not stored" in result.message or "nothing paid" in result.message
    obs = _observations(s.tmp / "dead.duckdb", result.run_id)
    assert (obs["model"] != "model-2").all()  # no 0 stored for an answer never given


def test_select_live_prints_the_count_of_answers_without_text(live_setup):
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["empty"] * 10
        s.state.faults[("model-3", item["id"])] = ["null_length"] * 10
    _register()
    args = ["select", "live", "--config", str(s.write_config()), "--store", str(s.tmp / "p.duckdb")]
    outcome = CliRunner().invoke(app, args, env={s.key_env: s.api_key})
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, outcome.output
    assert "answer(s) had empty text" in text
    assert "answer(s) had no text (content null) and were scored 0" in text


def test_notes_are_stored_by_both_insert_paths_and_an_older_store_reads_without_them(tmp_path):
    import duckdb
    import pandas as pd

    n = 20  # one row at a time (a parameterised insert) and a table of many
    columns = {
        "seq": list(range(n)),
        "model": ["m"] * n,
        "item": [f"q{k}" for k in range(n)],
        "score": [0.0] * n,
        "note": ["empty answer (blank text)" if k % 3 == 0 else None for k in range(n)],
    }
    path = tmp_path / "notes.duckdb"
    with Store(path) as db:
        many = db.start_selection({"x": 1})
        db.add_observations(many, pd.DataFrame(columns))
        few = db.start_selection({"x": 2})
        for k in range(n):
            db.add_observations(few, {c: v[k : k + 1] for c, v in columns.items()})
        for run in (many, few):
            notes = db.selection_observations(run)["note"]
            assert [None if pd.isna(v) else v for v in notes] == columns["note"]
    with duckdb.connect(str(path)) as con:  # a store written before notes
        con.execute("ALTER TABLE selection_observations DROP COLUMN note")
    with Store(path, read_only=True) as db:
        old = db.selection_observations(many)
    assert len(old) == n and old["note"].isna().all()
    with Store(path) as db:  # opened for writing: the column is added, empty
        assert db.selection_observations(many)["note"].isna().all()
        db.add_observations(many, {"seq": [n], "model": ["m"], "item": ["z"], "note": ["x"]})
        assert db.selection_observations(many)["note"].iloc[-1] == "x"


def test_an_answer_reused_from_another_run_keeps_its_note(live_setup):
    # a second run (another seed) reuses the paid cells of the first: a null-content answer
    # came over as a plain 0, and the second run's summary did not count it
    s = live_setup
    for item in s.items:
        s.state.faults[("model-1", item["id"])] = ["null_length"] * 10
    path = s.tmp / "reuse.duckdb"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = run_live(LiveConfig.from_toml(s.write_config()), path)
        n = len(s.state.requests)
        second = run_live(LiveConfig.from_toml(s.write_config(run={"seed": 8})), path)
    assert first.run_id != second.run_id
    obs = _observations(path, second.run_id)
    reused = obs[(obs["attempts"] == 0) & (obs["model"] == "model-1")]
    assert len(reused) > 0 and len(s.state.requests) > n
    assert reused["note"].str.contains("content null").all()
    counted = int(obs["note"].notna().sum())
    assert f"{counted} answer(s) had no text (content null)" in second.message


def test_select_live_prints_its_warnings_as_clean_lines(live_setup):
    """The run's warnings came out raw (a file path and the ``return run_live(...)`` source
    line, helper-68's walk): one ``warning:`` line each, as every other command prints them."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["empty"] * 10
    _register()
    args = ["select", "live", "--config", str(s.write_config()), "--store", str(s.tmp / "w.duckdb")]
    outcome = CliRunner().invoke(app, args, env={s.key_env: s.api_key})
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert "warning: run " in text and "had empty text" in text
    assert ".py:" not in outcome.output and "run_live(" not in outcome.output
