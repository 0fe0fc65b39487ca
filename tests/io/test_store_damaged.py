"""A store file that DuckDB cannot open or read: said as the store's, with what to do.

A file that is no DuckDB database, an empty file, a store cut short (a copy made while it was
written, a transfer that stopped) or written over in its middle, one the user may not open, one
of a newer schema: each is one :class:`InputError` naming the file, what is wrong and what to
do, and the file is left as it was. Before, they surfaced as DuckDB's own text ('IO Error: ...
not a valid DuckDB database file!'), as a traceback (``ls`` of a store whose damaged block
only the summary reads), as another program's file (a store cut short at its half: 'a DuckDB
file of another program (tables: fits, ingests, ..., meta, responses, ...)') or, for a newer
schema, after this version had written its own tables into the file.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import read_results
from latentbench.io.store import Store

_register()


def _store(tmp_path: Path) -> Path:
    """A store of 10 models x 1,000 items (about 1.5 MB on disk)."""
    rng = np.random.default_rng(0)
    models, items = 10, 1000
    table = tmp_path / "scores.csv"
    pd.DataFrame(
        {
            "model": np.repeat([f"m{i}" for i in range(models)], items),
            "item": np.tile([f"q{j}" for j in range(items)], models),
            "score": rng.integers(0, 2, models * items),
        }
    ).to_csv(table, index=False)
    frame, report = read_results("table", table, benchmark="b", metric="acc")
    path = tmp_path / "whole.duckdb"
    with Store(path) as store:
        store.ingest(frame, report)
    return path


def _read_all(path: Path) -> str:
    """Open ``path`` and read what ``ls``, ``fit`` and ``export`` read."""
    with Store(path, read_only=True) as store:
        store.summary()
        store.matrix("b")
        store.long("b")
    return "read whole"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"hello\n", "not a DuckDB database (a file of another kind"),
        (b"", "an empty file (0 bytes), not a DuckDB database"),
    ],
)
@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_that_is_no_duckdb_database_says_what_it_is_and_what_to_do(
    tmp_path, content, said, read_only
):
    path = tmp_path / "results.duckdb"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        Store(path, read_only=read_only)
    message = str(caught.value)
    assert message.startswith(f"{path}: {said}"), message
    assert "expected a latentbench store" in message, message
    assert message.endswith("nothing was written"), message
    assert path.read_bytes() == content  # left as it was
    assert not Path(f"{path}.wal").exists()


def test_a_store_cut_short_is_said_damaged_wherever_it_is_found(tmp_path):
    """Cut at 15 points: refused when opened or when a read reaches the missing blocks, each
    time as the store's damage (never another program's file, never DuckDB's exception)."""
    data = _store(tmp_path).read_bytes()
    cut = tmp_path / "copy.duckdb"
    stages = []
    for k in range(1, 16):
        cut.write_bytes(data[: len(data) * k // 16])
        try:
            stage = _read_all(cut)
        except InputError as exc:
            message = str(exc)
            assert message.startswith(f"{cut}: the store file is damaged (cut short or "), (
                k,
                message,
            )
            assert "use a backup or the original, or copy it again" in message, message
            assert "of another program" not in message, message
            stage = "refused"
        stages.append(stage)
        assert cut.read_bytes() == data[: len(data) * k // 16]  # left as it was
    assert "refused" in stages, stages


def test_damage_that_only_a_read_finds_is_said_by_ls_and_export(tmp_path, monkeypatch):
    """A block past those an open reads (the rows' columns) is cut off: ``ls`` printed a
    traceback ending in DuckDB's 'IOException: IO Error: Could not read enough bytes', and
    ``export`` said 'cannot write the export (...)' as if the export's file were at fault."""
    data = _store(tmp_path).read_bytes()
    cut = tmp_path / "copy.duckdb"
    for k in range(15, 0, -1):  # the longest cut the open reads whole (15/16 at DuckDB 2.0)
        cut.write_bytes(data[: len(data) * k // 16])
        try:
            Store(cut, read_only=True).close()
        except InputError:
            continue
        break
    else:
        pytest.skip("every cut is refused at its open: no block only a read finds")
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    out = tmp_path / "all.parquet"
    for args in (["ls", "--store", str(cut)], ["export", str(out), "--store", str(cut)]):
        result = runner.invoke(app, args)
        said = result.output  # stdout and stderr
        if args[0] == "ls" and result.exit_code == 0:
            continue  # this cut spared the summary's columns; export reads them all
        assert result.exit_code == 2, (args, said, result.exception)
        assert "Traceback" not in said and "IOException" not in said, said
        assert f"error: {cut}: the store file is damaged" in said, said
        assert "cannot write the export" not in said, said
    assert not out.exists()


def test_a_store_of_a_newer_schema_is_refused_before_anything_is_written(tmp_path):
    """A newer version's store (schema 99, where ``selection_decisions`` is gone and
    ``selection_observations`` is a view): this version added its tables and ran its ALTERs
    into the file before reading its version, which then failed as DuckDB's own error (an
    ALTER of a view) or left the newer store with this version's tables in it."""
    path = tmp_path / "future.duckdb"
    Store(path).close()
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        con.execute("DROP TABLE selection_decisions")
        con.execute("DROP TABLE selection_observations")
        con.execute("CREATE VIEW selection_observations AS SELECT 1 AS seq")
    before = path.read_bytes()
    for read_only in (False, True):
        with pytest.raises(InputError) as caught:
            Store(path, read_only=read_only)
        message = str(caught.value)
        assert message.startswith(f"{path}: store schema version 99 is newer than this"), message
        assert "upgrade latentbench (the store was not changed)" in message, message
    assert path.read_bytes() == before
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    tables = {r[0] for r in rows}
    assert "selection_decisions" not in tables


@pytest.mark.parametrize(
    ("duckdb_says", "said"),
    [
        (
            'IO Error: Cannot open file "{path}": Permission denied',
            "permission denied (DuckDB says: ",
        ),
        (
            "IO Error: Trying to read a database file with version number 99, but we can only "
            "read version 67.",
            "written by a newer DuckDB than this one",
        ),
        ("IO Error: Something new", "cannot open as a DuckDB store (DuckDB says: IO Error: "),
    ],
)
def test_what_duckdb_refuses_at_the_open_is_said_with_the_store_and_what_to_do(
    tmp_path, monkeypatch, duckdb_says, said
):
    """DuckDB's refusals that a test cannot make for real here (the tests run as root, whom
    no permission stops; a file of a newer DuckDB storage version)."""
    path = tmp_path / "s.duckdb"

    def refuse(*args, **kwargs):
        raise duckdb.IOException(duckdb_says.format(path=path))

    monkeypatch.setattr(duckdb, "connect", refuse)
    with pytest.raises(InputError) as caught:
        Store(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {said}"), message
    assert message.endswith("nothing was written"), message


class _CommitFails:
    """A store connection whose COMMIT fails as DuckDB's does when it cannot write the
    store's ``.wal`` (a folder this user may not write) or the disk is full: the transaction
    is rolled back and ended, so a ROLLBACK after it is DuckDB's 'no transaction is active'."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, reason: str) -> None:
        self.connection, self.reason = connection, reason

    def execute(self, query: str, *args: object) -> duckdb.DuckDBPyConnection:
        if query == "COMMIT":
            self.connection.execute("ROLLBACK")
            raise duckdb.TransactionException(
                f"TransactionContext Error: Failed to commit: {self.reason}"
            )
        return self.connection.execute(query, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.connection, name)


@pytest.mark.parametrize(
    "reason",
    ['Cannot open file "{path}.wal": Permission denied', "No space left on device"],
)
def test_an_ingest_the_store_cannot_commit_is_said_and_writes_nothing(tmp_path, reason):
    """An ingest into a store in a folder this user may not write (DuckDB writes
    ``STORE.wal`` there as it commits: seen with ``setpriv`` dropping root's
    ``CAP_DAC_OVERRIDE``): ``ingest`` printed a traceback ending in 'TransactionException:
    cannot rollback - no transaction is active', which hid the reason."""
    path = tmp_path / "s.duckdb"
    table = tmp_path / "t.csv"
    table.write_text("model,item,score\nm1,q1,1\nm1,q2,0\n")
    frame, report = read_results("table", table, benchmark="b", metric="acc")
    with Store(path) as store:
        real = store.connection
        store.connection = _CommitFails(real, reason.format(path=path))  # type: ignore[assignment]
        with pytest.raises(InputError) as caught:
            store.ingest(frame, report)
        store.connection = real
        message = str(caught.value)
        assert message.startswith(f"{path}: cannot write the rows to its responses table"), message
        assert reason.format(path=path) in message, message
        assert "nothing was written; expected a store this user may write" in message, message
        assert store.benchmarks() == []  # nothing was written
        store.ingest(frame, report)  # the same store takes the rows once it can
        assert store.benchmarks() == ["b"]


def test_a_damaged_write_ahead_log_is_named_with_what_moving_it_aside_loses(tmp_path):
    """A store's ``.wal`` (its writes since the last checkpoint: a writer killed before it
    closed leaves one) written over in its middle: named as the damaged file, not the store."""
    table = tmp_path / "t.csv"
    table.write_text("model,item,score\nm1,q1,1\nm1,q2,0\n")
    frame, report = read_results("table", table, benchmark="b", metric="acc")
    path, copy = tmp_path / "s.duckdb", tmp_path / "copy.duckdb"
    Store(path).close()
    with Store(path) as store:
        store.ingest(frame, report)  # in s.duckdb.wal until the store closes
        copy.write_bytes(path.read_bytes())
        wal = bytearray(Path(f"{path}.wal").read_bytes())
    assert len(wal) > 200, "the ingest's rows are in the .wal while the store is open"
    wal[100:140] = b"\xff" * 40
    Path(f"{copy}.wal").write_bytes(bytes(wal))
    with pytest.raises(InputError) as caught:
        Store(copy, read_only=True)
    message = str(caught.value)
    assert message.startswith(f"{copy}: its write-ahead log copy.duckdb.wal (the writes"), message
    assert "move copy.duckdb.wal aside to open the store as of its last checkpoint" in message


class _InsertFails(_CommitFails):
    """A store connection whose autocommitted INSERT into ``fits`` fails as DuckDB's commit
    does when it cannot write the store's ``.wal``."""

    def execute(self, query: str, *args: object) -> duckdb.DuckDBPyConnection:
        if query.startswith("INSERT INTO fits"):
            raise duckdb.TransactionException(
                f"TransactionContext Error: Failed to commit: {self.reason}"
            )
        return self.connection.execute(query, *args)


def test_a_fit_the_store_cannot_commit_is_said_as_permissions_or_space(tmp_path):
    """``fit --store`` records its fit (a warning when it cannot): a commit refused for a
    folder this user may not write was said 'expected the fits table latentbench makes (id,
    created_at, ...)', as if the table had been edited."""
    path = tmp_path / "s.duckdb"
    reason = f'Cannot open file "{path}.wal": Permission denied'
    with Store(path) as store:
        real = store.connection
        store.connection = _InsertFails(real, reason)  # type: ignore[assignment]
        with pytest.raises(InputError) as caught:
            store.record_fit("b", summary={"n": 1})
        store.connection = real
        message = str(caught.value)
        assert message.startswith(f"{path}: cannot write the fit to its fits table"), message
        assert reason in message and "expected a store this user may write" in message, message
        assert "expected the fits table latentbench makes" not in message, message
        assert store.fits().empty


@pytest.mark.parametrize("folder", ["corrupted-disk-recovery", "checksums"])
def test_a_path_holding_a_damage_word_is_no_damaged_store(tmp_path, folder):
    """DuckDB's errors quote the files they name: an ingest that cannot write the ``.wal`` of
    a store in a folder named ``corrupted-disk-recovery`` was said 'the store file is damaged
    (cut short or written over ...): use a backup', because the folder's name held 'corrupt'
    (or 'checksum'); it is a store that cannot be written, as in any other folder."""
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / "s.duckdb"
    table = tmp_path / "t.csv"
    table.write_text("model,item,score\nm1,q1,1\nm1,q2,0\n")
    frame, report = read_results("table", table, benchmark="b", metric="acc")
    reason = f'Cannot open file "{path}.wal": Permission denied'
    with Store(path) as store:
        real = store.connection
        store.connection = _CommitFails(real, reason)  # type: ignore[assignment]
        with pytest.raises(InputError) as caught:
            store.ingest(frame, report)
        store.connection = real
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot write the rows to its responses table"), message
    assert "damaged" not in message, message


@pytest.mark.parametrize("read_only", [True, False])
def test_an_edited_schema_version_is_named_not_a_traceback(tmp_path, read_only):
    """A store whose ``meta`` table was edited to hold a schema version that is no number
    raised int()'s ValueError ('invalid literal for int() with base 10: 'x1''), a traceback
    from ``ls``; it names the table, key and value, what was expected and what to do."""
    path = _store(tmp_path)
    with duckdb.connect(str(path)) as db:
        db.execute("UPDATE meta SET value = 'x1' WHERE key = 'schema_version'")
    said = r"table 'meta', key 'schema_version', value 'x1'; expected a whole number"
    with pytest.raises(InputError, match=said):
        Store(path, read_only=read_only)
    outcome = CliRunner().invoke(app, ["ls", "--store", str(path)])
    assert outcome.exit_code == 2 and "Traceback" not in outcome.output, outcome.output
    assert "value 'x1'; expected a whole number" in " ".join(outcome.output.split())
