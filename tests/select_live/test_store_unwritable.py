"""A store that cannot be written once a live estimate or comparison has begun (a disk full,
a folder this user may not write: DuckDB writes ``STORE.wal`` there as it commits) is one
``error:`` line, exit 1, with what to do, as ``select live`` says it
(``test_config_hostile.py``); the answers committed before stay and the same command resumes.
Before, ``estimate --live`` and ``compare --live`` ended in DuckDB's traceback (seen with
``setpriv`` dropping root's ``CAP_DAC_OVERRIDE`` on the store's folder)."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from latentbench.io.store import Store

from .conftest import run_cli, said


@pytest.mark.parametrize(
    "command",
    [
        ["estimate", "{cal}", "--model", "model-1", "--budget", "6"],
        ["compare", "{cal}", "--a", "model-1", "--b", "model-2", "--budget", "6"],
    ],
)
def test_a_store_that_cannot_be_written_mid_run_is_one_error_line(live_setup, monkeypatch, command):
    s = live_setup
    config = s.write_config()
    cal = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal, index=False)
    store = s.tmp / "full.duckdb"
    args = [a.format(cal=cal) for a in command]
    args += ["--live", str(config), "--store", str(store), "--quiet"]
    real = Store.add_observations
    calls = {"n": 0}

    def filling(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise duckdb.TransactionException(
                "TransactionContext Error: Failed to commit: could not write file: No space left"
            )
        return real(self, *a, **k)

    monkeypatch.setattr(Store, "add_observations", filling)
    outcome = run_cli(*args, env={s.key_env: s.api_key})
    monkeypatch.setattr(Store, "add_observations", real)
    text = " ".join(outcome.output.split())  # stdout and stderr
    assert outcome.exit_code == 1, said(outcome)
    assert "Traceback" not in text and text.count("error:") == 1, text
    assert (
        f"error: {store}: the store could not be written (TransactionContext Error: Failed to "
        "commit: could not write file: No space left); the answers committed before are kept. "
        "Free the space or fix the store's folder"
    ) in text, text
    assert "then run the same command again: it resumes the run" in text, text
    paid = sum(s.state.answered.values())
    again = run_cli(*args, env={s.key_env: s.api_key})
    assert again.exit_code == 0, said(again)
    with Store(store, read_only=True) as db:
        stored = sum(len(db.selection_observations(r["run_id"])) for r in db.selection_runs())
    # the cells stored before were not asked again: only the one lost with the failed commit
    assert sum(s.state.answered.values()) <= stored + 1, (paid, stored)


def test_an_in_memory_store_is_refused_by_the_commands_that_write_one(live_setup):
    """``--store :memory:`` (DuckDB's in-memory database, which ``Store`` takes from Python)
    ended with the command: ``ingest`` said '4 new rows in :memory:' and kept none, and
    ``select live`` paid 128 requests, said '128 stored in all' and kept none (a re-run paid
    them again). Each command that writes its store refuses it before any work."""
    s = live_setup
    config = s.write_config()
    cal = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal, index=False)
    live = ["--live", str(config), "--store", ":memory:"]
    paid = "every answer paid for"
    commands = [
        ("the rows read", ["ingest", "table", str(cal), "--store", ":memory:", "--benchmark", "h"]),
        (paid, ["select", "live", "--config", str(config), "--store", ":memory:"]),
        (paid, ["estimate", str(cal), *live, "--model", "model-1"]),
        (paid, ["compare", str(cal), *live, "--a", "model-1", "--b", "model-2"]),
    ]
    for what, args in commands:
        outcome = run_cli(*args, env={s.key_env: s.api_key})
        text = " ".join(outcome.output.split())
        assert outcome.exit_code == 2, said(outcome)
        assert text.startswith(
            f"error: --store :memory:: an in-memory store ends with the command, so {what}"
        ), text
        assert "expected a store file (e.g. --store results.duckdb" in text, text
    assert s.state.requests == []  # nothing paid


@pytest.mark.parametrize(
    "command",
    [
        ["estimate", "{cal}", "--model", "model-1", "--budget", "6"],
        ["select", "live", "--config", "{config}"],
    ],
)
def test_a_store_error_that_is_no_failed_write_is_not_said_as_one(live_setup, monkeypatch, command):
    """Every DuckDB error mid-run was said as 'the store could not be written ... Free the
    space or fix the store's folder', an edited table's Binder Error too, where freeing space
    cures nothing; it is said as DuckDB refusing an operation, with what to do. A second
    Ctrl-C inside a query (DuckDB's InterruptException) ends as a Ctrl-C: exit 130."""
    s = live_setup
    config = s.write_config()
    cal = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal, index=False)
    store = s.tmp / "edited.duckdb"
    args = [a.format(cal=cal, config=config) for a in command] + ["--store", str(store), "-q"]
    if command[0] == "estimate":
        args += ["--live", str(config)]
    real = Store.add_observations
    for error, code, words in (
        (duckdb.BinderException("Binder Error: column 'score' not found"), 1,
         "DuckDB refused an operation on the store (Binder Error: column 'score' not found)"),
        (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), 130,
         "aborted" if command[0] == "select" else "interrupted (Ctrl-C)"),
    ):  # fmt: skip

        def failing(self, *a, error=error, **k):
            raise error

        monkeypatch.setattr(Store, "add_observations", failing)
        outcome = run_cli(*args, env={s.key_env: s.api_key})
        monkeypatch.setattr(Store, "add_observations", real)
        text = " ".join(outcome.output.split())
        assert outcome.exit_code == code, said(outcome)
        assert "Traceback" not in text and words in text, text
        assert "Free the space" not in text, text


def test_a_disk_full_at_the_autocheckpoint_is_said_as_a_failed_write(tmp_path, capsys):
    """A disk full while DuckDB checkpoints after a commit is its FatalException ('the
    autocheckpoint failed. Reopen the database'; every later query: 'database has been
    invalidated'), not an IOException: it was said as DuckDB refusing an operation on an
    edited store, with 'use a backup or give a new --store' (the run starts again there),
    where freeing the space and running the same command again resumes it. The text is
    DuckDB 2.0's, seen with RLIMIT_FSIZE below the store's checkpoint."""
    import typer

    from latentbench.cli._common import live_store_written, store_write_error

    store = tmp_path / "full.duckdb"
    for text in (
        "FATAL Error: Transaction COMMIT succeeded and is durable, but the autocheckpoint "
        "failed. Reopen the database instance to recover. Failed to create checkpoint because "
        f'of error: Could not write file "{store}": No space left on device',
        "FATAL Error: Failed: database has been invalidated because of a previous fatal error. "
        "The database must be restarted prior to being used again.",
    ):
        error = duckdb.FatalException(text)
        assert store_write_error(error)
        with pytest.raises(typer.Exit) as ended, live_store_written(store):
            raise error
        assert ended.value.exit_code == 1
        out = " ".join(capsys.readouterr().err.split())
        assert f"error: {store}: the store could not be written (FATAL Error:" in out, out
        assert "then run the same command again: it resumes the run" in out, out
        assert "DuckDB refused an operation" not in out, out
