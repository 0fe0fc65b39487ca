"""The embedded store: one DuckDB file holding the canonical long table and run records.

Tables
------
``meta`` (key, value)
    ``schema_version`` and the ``package_version`` that created the file.
``responses``
    The canonical long table (``docs/formats.md``,
    :data:`~latentbench.io.formats.CANONICAL_COLUMNS`) plus ``run_id`` (the ingest that added
    the row) and ``ingested_at``. A row is unique on (``model``, ``benchmark``, ``item``,
    ``metric``, ``filter``, ``trial``, ``split``): the tool and its version (``source``) are
    provenance, so the same value written by two tool versions is stored once and a different
    value is a conflict.
``merged_values`` (the key columns, score, source, source_file, ingested_at)
    The values a ``duplicates="mean"`` row of ``responses`` is the mean of, one per
    (file, value): re-ingesting a file already averaged in adds nothing.
``ingests`` (run_id, created_at, source, n_rows, n_new, report JSON, package_version)
    One row per :meth:`Store.ingest` call that added rows; ``report`` is the
    :class:`~latentbench.io.formats.LoadReport` (choices of metric and filter included).
``fits`` (id, created_at, benchmark, options JSON, summary JSON, package_version)
    One row per recorded IRT fit (:meth:`Store.record_fit`).
``selection_runs`` (run_id, created_at, config JSON, package_version, status)
    One row per live selection run.
``selection_observations`` (run_id, seq, round, model, item, score, error, ...)
    Then ``requested_at``, ``observed_at``, ``attempts`` (paid requests) and ``note`` (a
    scored answer's remark: empty text, content null). Every observation of a selection run,
    in order (``seq``), written before it is used.
    ``score`` is NULL when the request failed; ``error`` then holds the reason.
``selection_decisions`` (run_id, round, payload JSON)
    What the policy decided at each round.
``selection_requests`` (run_id, delta, recorded_at)
    The ledger of a live run's HTTP requests (chat-completions oracle): ``delta`` 1 committed
    before each request is sent, -1 for one refunded (it never reached a server). Its sum
    counts the requests of cells a killed session never stored; ``spend_cap`` counts the
    larger of it and the stored ``attempts``. Absent in older stores until they are next
    opened for writing.

JSON columns are stored as text (``VARCHAR``), so no DuckDB extension is needed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import numbers
import os
import re
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from latentbench._checks import check_flag, user_stacklevel
from latentbench._version import __version__
from latentbench.exceptions import DataWarning, InputError, QueryInterrupted, StoreInUse
from latentbench.io._arrival import tilde_hint
from latentbench.io._live_snapshot import read_snapshot, snapshot_summary
from latentbench.io._long_keys import trial_notes
from latentbench.io._matrix import ResponseMatrix
from latentbench.io._outputs import staging_path
from latentbench.io._store_runs import SelectionRuns
from latentbench.io._store_schema import (
    DDL,
    SCHEMA_VERSION,
    STORE_KEY,
    foreign_tables,
    to_arrow,
    upgrade_from_1,
    utc_now,
    writes,
)
from latentbench.io.formats._common import (
    CANONICAL_COLUMNS,
    CANONICAL_SCHEMA,
    DUPLICATE_POLICIES,
    SCORE_TOLERANCE,
    LoadReport,
    resolve_duplicates,
)
from latentbench.io.formats._report import same_weights, shown_revision

__all__ = ["SCHEMA_VERSION", "IngestResult", "Store"]


_INCOMING_COLUMNS = ", ".join(f"i.{c}" for c in CANONICAL_COLUMNS)
_RESPONSE_COLUMNS = ", ".join((*CANONICAL_COLUMNS, "run_id", "ingested_at"))
_JOIN = " AND ".join(f"i.{c} = r.{c}" for c in STORE_KEY)
_AVERAGED_COLUMNS = ", ".join(f"a.{c}" for c in (*STORE_KEY, "score", "source", "source_file"))
_AVERAGED_SCHEMA = pa.schema(
    [CANONICAL_SCHEMA.field(c) for c in (*STORE_KEY, "score", "source", "source_file")]
)
"""The rows a ``duplicates="mean"`` read averaged into one (``_averaged`` while ingesting)."""


def _same_key(a: str, b: str) -> str:
    return " AND ".join(f"{a}.{c} = {b}.{c}" for c in STORE_KEY)


_A_MEAN = (
    f"EXISTS (SELECT 1 FROM merged_values m WHERE {_same_key('m', 'r')}) "
    f"OR EXISTS (SELECT 1 FROM _averaged a WHERE {_same_key('a', 'i')})"
)
"""An incoming row ``i`` or its stored row ``r`` is a mean (of values ``"mean"`` records)."""

_EQUAL_OF_A_MEAN = (
    f"SELECT {', '.join(f'i.{c}' for c in STORE_KEY)}, i.score, i.source_file "
    f"FROM _incoming i JOIN responses r ON {_JOIN} AND abs(i.score - r.score) <= "
    f"{SCORE_TOLERANCE} AND NOT EXISTS (SELECT 1 FROM _averaged a WHERE "
    f"{_same_key('a', 'i')}) AND EXISTS (SELECT 1 FROM merged_values m WHERE "
    f"{_same_key('m', 'r')}) UNION ALL SELECT {', '.join(f'a.{c}' for c in STORE_KEY)}, "
    f"a.score, a.source_file FROM _averaged a JOIN responses r ON {_same_key('a', 'r')} "
    f"JOIN _incoming i ON {_same_key('a', 'i')} AND abs(i.score - r.score) <= "
    f"{SCORE_TOLERANCE}"
)
"""The values of incoming rows equal to their stored row where either is a mean: a plain
incoming row's own value, or the values an incoming mean averages."""


def _averaged_table(parts: list[pd.DataFrame]) -> pa.Table:
    """The rows averaged by a read (or by :meth:`Store.ingest` itself) as one Arrow table."""
    names = list(_AVERAGED_SCHEMA.names)
    frames = [p[names] for p in parts if len(p)]
    if not frames:
        return _AVERAGED_SCHEMA.empty_table()
    frame = pd.concat(frames, ignore_index=True)
    return pa.Table.from_pandas(frame, preserve_index=False).select(names).cast(_AVERAGED_SCHEMA)


class IngestResult(dict):
    """What :meth:`Store.ingest` did: ``run_id``, ``n_rows`` offered, ``n_new`` inserted,
    ``n_present`` already in the store with the same score (or already averaged in by
    ``duplicates="mean"``), ``n_replaced`` stored rows changed and ``n_older`` conflicting
    rows not written because the stored row is newer (``duplicates="latest"``) (a dict,
    JSON-ready)."""


WORK_MEMORY = 2 * 1024**3
"""DuckDB's memory limit in bytes while a whole-table statement runs (an ingest, an export,
the summary of ``ls``): above it DuckDB's sorts, joins and groupings spill to temporary files
beside the store instead of holding every row in memory (under DuckDB's own default, 80% of
the machine's memory, a 24M-row export peaked at 9 GB). The rows written are the same."""

_UNITS = {"bytes": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4}
_UNITS.update({"kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4})


def _limit_bytes(text: str) -> float:
    """DuckDB's spelling of a memory limit (``'18.8 GiB'``) in bytes; unknown: infinite."""
    found = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]+)\s*", text)
    if found is None or found.group(2).lower() not in _UNITS:
        return float("inf")
    return float(found.group(1)) * _UNITS[found.group(2).lower()]


def _own_spill_folder(connection: duckdb.DuckDBPyConnection, spill: str) -> bool:
    """Point ``connection``'s spills at a folder of this process's own beside the store
    (``S.duckdb.tmp-PID``), which DuckDB removes as it closes: processes reading one store at
    once (two ``ls``, ``report`` and ``export``, read-only) each spill into their own. In the
    one default ``S.duckdb.tmp``, DuckDB 1.4 crashed (its spill files are named alike in
    every process) and DuckDB 2.0 left the folder behind when its maker closed first. A
    folder set by the caller, or one already spilled into (DuckDB cannot switch then), is
    kept. Returns whether the folder was set here."""
    ((database,),) = connection.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    if database is None or str(database) + ".tmp" != spill:
        return False  # not DuckDB's ``FILE.tmp``: the caller's
    own = f"{spill}-{os.getpid()}".replace("'", "''")
    try:
        connection.execute(f"SET temp_directory = '{own}'")
    except duckdb.Error:  # spilled into already: DuckDB keeps that folder
        return False
    return True


_DEFAULT_MEMORY_LIMIT: list[str] = []


def _default_memory_limit() -> str:
    """DuckDB's default memory limit on this machine, as a new database spells it (``'25.1
    GiB'``): asked of an in-memory database once per process, not at every statement
    :func:`_bounded_memory` bounds (opening one took ~20 ms: an ingest, an export and a
    summary paid it each time)."""
    if not _DEFAULT_MEMORY_LIMIT:
        with duckdb.connect() as fresh:
            query = "SELECT current_setting('memory_limit')"
            _DEFAULT_MEMORY_LIMIT.append(str(fresh.execute(query).fetchall()[0][0]))
    return _DEFAULT_MEMORY_LIMIT[0]


@contextmanager
def _bounded_memory(connection: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Lower ``connection``'s memory limit to :data:`WORK_MEMORY` for the statements of the
    block when it has DuckDB's default limit, then reset it. A limit set on the connection
    (``store.connection.execute("SET memory_limit = ...")``) is the caller's: kept as it is
    (DuckDB spells it to 0.1 GiB, so setting it back from that spelling would drift). Where
    DuckDB cannot spill (an in-memory store, a store in a folder that cannot be written) the
    limit is left as it is: a spill there would fail where holding the rows succeeded."""
    query = "SELECT current_setting('memory_limit')"
    current = str(connection.execute(query).fetchall()[0][0])
    default = _default_memory_limit()
    spill = str(connection.execute("SELECT current_setting('temp_directory')").fetchall()[0][0])
    # DuckDB spills beside a store file (``S.duckdb.tmp``); an in-memory store (``.tmp`` in
    # the working folder) or a folder that cannot be written keeps DuckDB's default
    folder = os.path.dirname(spill).encode("utf-8")  # DuckDB's UTF-8, under any locale
    spills = os.path.isabs(spill) and os.access(folder, os.W_OK)
    if current != default or _limit_bytes(current) <= WORK_MEMORY or not spills:
        yield
        return
    own = _own_spill_folder(connection, spill)
    connection.execute(f"SET memory_limit = '{WORK_MEMORY}B'")
    try:
        yield
    finally:
        connection.execute("RESET memory_limit")
        if own:
            try:  # nothing spilled: DuckDB's folder again
                connection.execute("RESET temp_directory")
            except duckdb.Error:  # spilled into: kept until the store closes (then removed)
                pass


TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".json", ".jsonl")
"""Names that are a table's, never a store's."""


def duckdb_path(path: str | os.PathLike[str]) -> str:
    """``path`` as DuckDB takes it: the bytes the system has for it, as UTF-8 text.

    Under a locale whose encoding is not UTF-8 (``LC_ALL=C`` with Python's UTF-8 mode off)
    Python spells the non-ASCII bytes of a path as surrogate escapes (``\\udcc3\\udca9`` for
    ``é``), which DuckDB cannot take (``std::bad_cast``); DuckDB opens the UTF-8 text of
    those bytes, the same file. A path whose bytes are not UTF-8 cannot be given to DuckDB:
    an :class:`InputError` naming it.
    """
    text = os.fspath(path)
    raw = os.fsencode(text)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        shown = raw.decode("utf-8", "backslashreplace")
        raise InputError(
            f"{shown}: the path is not UTF-8 text (its bytes are in another encoding) and "
            "DuckDB opens UTF-8 paths only; expected a UTF-8 path: rename the file or folder, "
            "or use a path without those characters"
        ) from None


def _without_meta(path: str) -> str:
    """The error for a DuckDB file with no table, not even ``meta``, opened read-only: a new
    file, or a copy of a store whose writes were all still in its ``.wal`` (DuckDB moves them
    into the file at a checkpoint, when the store is closed: a writer killed before that
    leaves them in ``PATH.wal``, and a copy of the file alone has none of them)."""
    wal = Path(path + ".wal")
    if wal.exists():  # replayed by DuckDB, and still no table
        return (
            f"{path}: an empty DuckDB database without latentbench's 'meta' table (its "
            f"{wal.name} adds none); expected a latentbench store"
        )
    return (
        f"{path}: an empty DuckDB database without latentbench's 'meta' table, and no "
        f"{wal.name} next to it; expected a latentbench store. If it is a copy of a store "
        "whose writer was killed or crashed before closing it, the store's tables are in the "
        f"original's .wal file: copy that file too, as {wal.name} (the store's name + .wal), "
        "or open the original store"
    )


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")
"""Control, bidi and line-separator characters: shown escaped in a holder's command."""

_LIVE_WORDS = ("select live", "--live")
"""Words of a command that holds its store until it stops (a live run)."""


_STORE_WAIT = 5.0
"""Seconds a :class:`Store` waits by default for a store another process holds; the
environment variable ``LATENTBENCH_STORE_WAIT`` sets it for every command and Store."""


def _default_wait() -> float:
    """``LATENTBENCH_STORE_WAIT`` where set (seconds, a finite number >= 0), else
    5 seconds (an empty value is unset); another value is an :class:`InputError` naming it."""
    value = os.environ.get("LATENTBENCH_STORE_WAIT")
    if value is None or not value.strip():
        return _STORE_WAIT
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    return _checked_wait(seconds, f"LATENTBENCH_STORE_WAIT={value!r} (environment)")


def _checked_wait(seconds: object, given: str) -> float:
    """``seconds`` as a float when it is a finite number >= 0, else an :class:`InputError`
    that names it as ``given``."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, numbers.Real)
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise InputError(
            f"{given}: expected the seconds to wait for a store another process holds, a "
            f"finite number >= 0 (e.g. 60; 0 refuses at once; unset: {_STORE_WAIT:g})"
        )
    return float(seconds)


def _connect(
    path: str, read_only: bool, wait: float, given: bool = False
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to ``path``; while another process holds it, tried again for up to
    ``wait`` seconds (not when that process is a live run), then an :class:`InputError`
    naming that process, its command where the system tells it, and what to do (``given``:
    the wait is the Store's own ``wait``, which ``LATENTBENCH_STORE_WAIT`` does not set)."""
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        try:
            return duckdb.connect(duckdb_path(path), read_only=read_only)
        except duckdb.Error as exc:
            held = re.search(r"Conflicting lock is held in (.*?\(PID (\d+)\)|\S+)", str(exc))
            if held is not None:  # another process's lock: the file is a store, in use
                pid = int(held.group(2)) if held.group(2) else None
                command = _holder_command(pid)
                live = command is not None and any(w in command for w in _LIVE_WORDS)
                if time.monotonic() < deadline and not live:
                    time.sleep(0.1)  # a short command (an ingest, a report) ends soon
                    continue
                raise StoreInUse(
                    _in_use(path, held.group(1), pid, command, wait, live, given), path, pid, live
                ) from None
            if "different configuration" in str(exc):  # open in this process, another mode
                raise InputError(
                    f"{path}: this process already holds the store open (a Store of it "
                    "not closed, read-only here and writable there or the other way round: "
                    "DuckDB opens one file in one mode per process); expected the open Store "
                    "object passed instead of its path (e.g. load_calibration(store, "
                    "benchmark=...)), or that Store closed first"
                ) from None
            raise InputError(unreadable(path, exc)) from None


_DAMAGED = (
    "corrupt",
    "checksum",
    "could not read enough bytes",
    "serialization error",
    "failed to load metadata",
)
"""Words of DuckDB's errors for a file cut short or written over in its middle."""


def damaged(exc: BaseException) -> bool:
    """Whether DuckDB's error ``exc`` says that the store's file is cut short or written
    over (a block it cannot read, a checksum that does not match). The file names DuckDB
    quotes in its text are left out: a store in a folder ``corrupted-disk-recovery`` that
    cannot be written is no damaged store."""
    lower = re.sub(r'"[^"]*"|\'[^\']*\'', '""', str(exc)).lower()
    return isinstance(exc, duckdb.Error) and any(word in lower for word in _DAMAGED)


def _said_damaged(cls: type[Store]) -> type[Store]:
    """``cls`` (:class:`Store`) with each public method's DuckDB error for a damaged file
    (:func:`damaged`: a block past the header cut short or written over, found only when
    a query reads it) raised as an :class:`InputError` naming the store's file, what is
    wrong and what to do (:func:`unreadable`), not DuckDB's exception as a traceback; and
    a query interrupted by Ctrl-C as the ``KeyboardInterrupt`` it is."""
    seen: set[str] = set()
    for klass in cls.__mro__[:-1]:  # its own methods and those it inherits (not object's)
        for name, method in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)  # the one the class uses (a property, an override)
            if inspect.isfunction(method):
                setattr(cls, name, _damage_said(method))
    return cls


def _damage_said(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of a :class:`Store` raising a damaged file's DuckDB error as an
    :class:`InputError` (see :func:`_said_damaged`)."""

    @functools.wraps(method)
    def said(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except duckdb.Error as exc:
            if not damaged(exc):
                raise
            raise InputError(unreadable(self.path, exc)) from None
        except RuntimeError as exc:
            if str(exc) != _QUERY_INTERRUPTED:
                raise
            # a signal's handler raised while DuckDB ran a query: DuckDB raises this in its
            # place, whichever signal. Ctrl-C (SIGINT, or SIGTERM as the command line takes
            # it) is said by every command as an interruption (exit 130; it was a traceback
            # and exit 1); QueryInterrupted is a RuntimeError too, so a caller's own handler
            # (a signal.alarm timeout) is still caught as DuckDB's error was
            raise QueryInterrupted(f"{self.path}: {_QUERY_INTERRUPTED}") from None

    return said


_QUERY_INTERRUPTED = "Query interrupted"
"""DuckDB's ``RuntimeError`` for a signal's ``KeyboardInterrupt`` raised while it runs a query
(its Python client checks for signals between tasks)."""


def unwritable(path: str, what: str, exc: BaseException) -> str:
    """The error of a write of ``what`` to the store ``path`` that DuckDB refused (``exc``:
    a folder or ``.wal`` file this user may not write, a disk full), made in one transaction
    (nothing of it was written)."""
    text = " ".join(str(exc).split())
    return (
        f"{path}: cannot write {what} (DuckDB says: {text}); nothing was written; expected a "
        f"store this user may write, in a folder it may write (DuckDB writes {Path(path).name}"
        ".wal beside the file as it commits) on a disk with space: fix the permissions or free "
        "the space and run it again, or work on a copy in a folder of yours"
    )


def unreadable(path: str, exc: BaseException) -> str:
    """What is wrong with the store ``path`` that DuckDB could not open or read (``exc``,
    its error), and what to do: a file that is no DuckDB database (an empty one apart), one
    written by a newer DuckDB, one damaged (cut short, written over), one the user may not
    read or write, else DuckDB's reason. Every case says that nothing was written."""
    text = " ".join(str(exc).split())
    lower = text.lower()
    nothing = "; nothing was written"
    if "not a valid duckdb database file" in lower:
        try:
            empty = os.path.getsize(path) == 0
        except OSError:
            empty = False
        if empty:
            return (
                f"{path}: an empty file (0 bytes), not a DuckDB database; expected a "
                "latentbench store: remove the file (it holds nothing) and the command makes "
                "a new store there, or give another name" + nothing
            )
        return (
            f"{path}: not a DuckDB database (a file of another kind, or one written over "
            "from its start); expected a latentbench store (the DuckDB file that "
            "`latentbench ingest` or a live run made), or a new name for a new store" + nothing
        )
    if "version number" in lower or "storage version" in lower:
        return (
            f"{path}: written by a newer DuckDB than this one ({duckdb.__version__}; DuckDB "
            f"says: {text}); expected a store this DuckDB reads: upgrade DuckDB (pip install "
            "-U duckdb) or use the latentbench that wrote it" + nothing
        )
    if damaged(exc) and "wal" in lower.split():
        wal = Path(path).name + ".wal"
        return (
            f"{path}: its write-ahead log {wal} (the writes since the store's last checkpoint) "
            f"is damaged (DuckDB says: {text}); expected a whole one: use a backup of both "
            f"files, or move {wal} aside to open the store as of its last checkpoint (the "
            f"writes only {wal} holds are then lost)" + nothing
        )
    if damaged(exc):
        return (
            f"{path}: the store file is damaged (cut short or written over: a copy made "
            f"while it was written, a disk that filled, a transfer that stopped; DuckDB says: "
            f"{text}); expected a whole store: use a backup or the original, or copy it again "
            "once no process writes it (with its .wal file beside it, if any)" + nothing
        )
    if "permission denied" in lower:
        return (
            f"{path}: permission denied (DuckDB says: {text}); expected a store file (and "
            "folder) this user may read, and write for a command that writes it: change its "
            "permissions, or work on a copy" + nothing
        )
    return f"{path}: cannot open as a DuckDB store (DuckDB says: {text})" + nothing


def _holder_command(pid: int | None) -> str | None:
    """The command line of process ``pid`` as a person typed it (``latentbench select live
    --config run.toml ...``: a console script's interpreter left out), its control
    characters escaped; None where the system does not tell (no ``/proc``, another user's)."""
    if pid is None:
        return None
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    words = [w.decode("utf-8", "backslashreplace") for w in raw.split(b"\0") if w]
    if len(words) > 1 and Path(words[1]).name in ("latentbench", "latentbench.exe"):
        words = words[1:]  # python /venv/bin/latentbench ...: the console script
    if words and Path(words[0]).name in ("latentbench", "latentbench.exe"):
        words[0] = "latentbench"
    text = _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], " ".join(words))
    return text if len(text) <= 300 else text[:297] + "..."


def _in_use(
    path: str,
    holder: str,
    pid: int | None,
    command: str | None,
    wait: float,
    live: bool,
    given: bool = False,
) -> str:
    """The refusal of a store another process holds (see :func:`_connect`): for a holder
    that is no live run (one that ends soon), how to wait longer for it (``given``: the
    Store's own ``wait``, else ``LATENTBENCH_STORE_WAIT``)."""
    message = (
        f"{path}: the store is in use by another process ({holder}): DuckDB lets one process "
        "write a store or several read it, never both at once"
    )
    if command is not None:
        message += f"; PID {pid} runs `{command}`"
    if live:
        message += (
            "; a live run holds its store until it stops (its progress prints where it runs); "
            "expected it free: wait until it ends, or stop it with Ctrl-C (the same command "
            "resumes it, paying for no stored cell again), then run this command"
        )
        snapshot = read_snapshot(path, holder=pid)
        if snapshot is not None and snapshot["live"]:  # never a stale one as the run's
            message += f". Its last progress snapshot: {snapshot_summary(snapshot)}"
        return message
    waited = f" (waited {wait:g} s)" if wait > 0 else ""
    longer = "longer " if wait > 0 else ""
    how = "pass wait=SECONDS" if given else "set LATENTBENCH_STORE_WAIT=SECONDS"
    return message + (
        f"{waited}; expected it free: wait until that process (an ingest, a live run, a "
        f"reader while this one writes) ends, or work on a copy of the file, or {how} to "
        f"wait {longer}for it"
    )


_SPLITS_SQL = """string_agg(
    CASE WHEN n_splits = 1 THEN split ELSE
        split || ' (' || n || CASE WHEN n = 1 THEN ' item' ELSE ' items' END
        || CASE WHEN split = 'test' THEN ', the default)' ELSE ')' END
    END, ', ' ORDER BY split <> 'test', split)"""
"""The ``splits`` text of :meth:`Store.summary` and :meth:`Store.coverage`, an aggregate over
rows of ``split``, ``n`` (its items) and ``n_splits`` (the benchmark's splits): ``test (9
items, the default), valid (1 item)``, ``test`` the default of :meth:`Store.matrix` where
there are others; a benchmark of one split shows its name alone (``unknown`` where the source
records none)."""


@_said_damaged
class Store(SelectionRuns):
    """An embedded DuckDB store of responses, fits and selection runs (one file).

    Parameters
    ----------
    path : path-like
        The ``.duckdb`` file; created with the schema when absent. ``":memory:"`` works too.
    read_only : bool, default False
        Open without write access (several readers may share a file).
    wait : float or None, default None
        Seconds to wait, when another process holds the file (DuckDB lets one process write
        it, or several read it), for that process to let it go before refusing: two ingests
        started together run one after the other. A live run (``select live``,
        ``estimate --live``) holds its store until it stops: no wait then, the refusal names
        it at once. A finite number >= 0; None: the environment variable
        ``LATENTBENCH_STORE_WAIT`` where set and not empty (it sets the wait of every
        command), else 5 seconds.

    Raises
    ------
    StoreInUse
        When another process holds the file past ``wait`` (an :class:`InputError`).
    InputError
        For ``wait``, or ``LATENTBENCH_STORE_WAIT`` where ``wait`` is None, no finite number
        of seconds >= 0; for
        a table file (``.csv``, ``.parquet``, ...) or a folder given as the store, a
        read-only store that does not exist, a parent folder that does not exist, a file
        DuckDB cannot open (no DuckDB database, an empty file, a newer DuckDB's, one this user
        may not open), a store file damaged (cut short, written over: also raised by any
        method whose read finds it), a DuckDB file of another program, an existing DuckDB file
        with no table, a store of schema version 1 opened read-only, or a store newer than
        this latentbench (refused before anything is written to it).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from latentbench.io import read_results
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.csv")
    >>> pd.DataFrame(
    ...     {"model": ["m1", "m1", "m2", "m2"], "item": ["q1", "q2", "q1", "q2"],
    ...      "score": [1, 0, 1, 1]}
    ... ).to_csv(path, index=False)
    >>> frame, report = read_results("table", path, benchmark="arc_easy", metric="acc")
    >>> with Store(":memory:") as store:
    ...     _ = store.ingest(frame, report)
    ...     matrix = store.matrix("arc_easy", metric="acc")
    >>> matrix
    ResponseMatrix(2 models x 2 items, 100.0% observed)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        wait: float | None = None,
    ) -> None:
        read_only = check_flag(read_only, "read_only")  # "no" opened it read-only
        given = wait is not None  # the Store's own wait: the environment's is not read
        wait = _default_wait() if wait is None else _checked_wait(wait, f"wait={wait!r}")
        self.path = str(path)
        self._read_only = read_only  # its writes are refused (``writes``), not DuckDB's error
        suffix = Path(self.path).suffix.lower()
        if suffix in TABLE_SUFFIXES:  # DuckDB would open (or make) it as a database
            raise InputError(
                f"{self.path}: a store is a DuckDB file (e.g. results.duckdb), not a {suffix} "
                "table; read a table with `latentbench ingest table FILE --store S.duckdb`, or "
                "give it as the responses file"
            )
        if self.path != ":memory:" and Path(self.path).is_dir():
            raise InputError(
                f"{self.path}: is a folder; expected the store's DuckDB file (e.g. "
                "results.duckdb: a new name makes a new store)"
            )
        if read_only and self.path != ":memory:" and not Path(self.path).exists():
            raise InputError(f"{self.path}: store not found{tilde_hint(self.path)}")
        folder = Path(self.path).parent
        if self.path != ":memory:" and not folder.is_dir():  # as export says it
            state = "is not a folder" if folder.exists() else "does not exist"
            raise InputError(
                f"{self.path}: the folder {folder} {state}{tilde_hint(folder)}; expected the "
                "store's folder to exist (create it first)"
            )
        existed = self.path != ":memory:" and Path(self.path).is_file()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._ledger_lock = threading.Lock()  # the request ledger's cursor, one thread at a time
        self._ledger_cursor: duckdb.DuckDBPyConnection | None = None
        self._connection = _connect(self.path, read_only, wait, given)
        try:
            self._open(read_only, existed)
        except duckdb.Error as exc:  # a file damaged past its header: said, not DuckDB's
            self.close()
            raise InputError(unreadable(self.path, exc)) from None
        except BaseException:
            self.close()
            raise

    def _open(self, read_only: bool, existed: bool) -> None:
        """Check the file just connected to and, unless ``read_only``, make or upgrade its
        schema; a store of a newer schema is refused before anything is written to it."""
        self._refuse_foreign()
        if not read_only and existed:
            self._refuse_empty()
        self._refuse_newer()
        if not read_only:
            self.connection.execute(DDL)
            # paid requests per observation (spend cap); absent in stores written before it
            self.connection.execute(
                "ALTER TABLE selection_observations ADD COLUMN IF NOT EXISTS attempts INTEGER"
            )
            # a scored answer's remark (empty text, content null); absent in older stores
            self.connection.execute(
                "ALTER TABLE selection_observations ADD COLUMN IF NOT EXISTS note VARCHAR"
            )
            self.connection.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('package_version', ?) "
                "ON CONFLICT DO NOTHING",
                [str(SCHEMA_VERSION), __version__],
            )
        try:
            row = self.connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchall()
        except duckdb.CatalogException:  # read-only, and no table at all (another's: refused)
            raise InputError(_without_meta(self.path)) from None
        try:
            version = int(row[0][0]) if row else 0
        except (TypeError, ValueError):  # an edited meta table: said, not int()'s words
            self.close()
            raise InputError(
                f"{self.path}: table 'meta', key 'schema_version', value {row[0][0]!r}; "
                f"expected a whole number (this latentbench writes {SCHEMA_VERSION}): the store "
                "was edited; use a backup or the original (nothing was written)"
            ) from None
        if version == 1 and not read_only:
            upgrade_from_1(self.connection)
            version = SCHEMA_VERSION
        if version == 1:  # said so that a command-line user can act on it (ls, export, fit)
            self.close()
            raise InputError(
                f"{self.path}: store schema version 1 (before the split and flag columns), "
                "which a read-only open cannot upgrade; expected a store of schema "
                f'{SCHEMA_VERSION}: upgrade it in place once, with python -c "from '
                f'latentbench.io import Store; Store({str(self.path)!r}).close()" (or '
                "Store(path) in Python, or any ingest into it), then run this again; nothing "
                "was written"
            )

    def _refuse_newer(self) -> None:
        """Refuse a store of a schema newer than this latentbench's, before anything is
        written to it (its tables may differ from those this version would add or alter)."""
        found = self.connection.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_catalog = current_database() AND table_name = 'meta'"
        ).fetchone()
        if found is None or found[0] == 0:
            return  # a new file (another program's was refused before)
        row = self.connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchall()
        try:
            version = int(row[0][0]) if row else 0
        except (TypeError, ValueError):
            version = 0
        if version > SCHEMA_VERSION:
            raise InputError(
                f"{self.path}: store schema version {version} is newer than this latentbench "
                f"({__version__}, schema {SCHEMA_VERSION}); expected a store this version "
                "reads: upgrade latentbench (the store was not changed)"
            )

    def _refuse_foreign(self) -> None:
        """Refuse a DuckDB file that holds tables but is not a latentbench store (before any
        table of ours is created in it)."""
        tables = foreign_tables(self.connection)
        if tables:
            self.close()
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            raise InputError(
                f"{self.path}: a DuckDB file of another program (tables: {shown}); expected a "
                "latentbench store or a new file; nothing was written"
            )

    def _refuse_empty(self) -> None:
        """Refuse to start a store in an existing DuckDB file with no table: most likely a
        copy of a store whose tables were all still in its ``.wal`` (a writer running or
        killed), which a new store written into would hide for good."""
        found = self.connection.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_catalog = current_database()"
        ).fetchone()
        if found is not None and found[0] == 0:
            self.close()
            raise InputError(
                _without_meta(self.path)
                + "; nothing was written (a file of no use: remove it, and a new store is "
                "made there)"
            )

    # ------------------------------------------------------------------ lifecycle
    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection; a closed store (after :meth:`close` or its ``with`` block)
        raises an :class:`InputError` saying so, not DuckDB's or Python's error on None."""
        if self._connection is None:
            raise InputError(
                f"{self.path}: the store is closed (its with block ended, or close() was "
                f"called); open it again: Store({self.path!r})"
            )
        return self._connection

    @connection.setter
    def connection(self, value: duckdb.DuckDBPyConnection) -> None:
        self._connection = value  # e.g. a wrapper (tests that make DuckDB fail)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        lock = getattr(self, "_ledger_lock", None)
        with lock if lock is not None else contextlib.nullcontext():
            # the ledger's lock held across both: a worker recording a request in between
            # would open a new cursor on the connection about to close (and keep the file)
            self._close_ledger_cursor()
            if getattr(self, "_connection", None) is not None:
                self._connection.close()  # type: ignore[union-attr]
                self._connection = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

    @property
    def meta(self) -> dict[str, str]:
        """The ``meta`` table as a dict (``schema_version``, ``package_version``)."""
        return dict(self.connection.execute("SELECT key, value FROM meta").fetchall())

    # ------------------------------------------------------------------ ingest
    @writes("the rows to its responses table")
    def ingest(
        self,
        frame: pd.DataFrame | pa.Table,
        report: LoadReport | None = None,
        *,
        duplicates: str = "error",
    ) -> IngestResult:
        """Add canonical rows, all or none, in one transaction.

        The key is (model, benchmark, item, metric, filter, trial, split); the tool version
        (``source``) is provenance. A row whose key is stored with the same score is already
        present (re-ingesting, or the same result from another tool version or file format,
        adds nothing). A different score is a conflict, resolved by ``duplicates``.

        Parameters
        ----------
        frame : DataFrame or pyarrow.Table of shape (n_rows, 14)
            The canonical long table (:func:`latentbench.io.formats.read_results` output).
        report : LoadReport, optional
            Stored with the ingest record.
        duplicates : {"error", "latest", "mean"}
            A conflicting score (in ``frame`` or against the store): ``error`` raises naming
            both files; ``latest`` keeps the row with the later ``run_timestamp`` (the
            incoming row on ties or when either is unknown); ``mean`` stores the mean of
            every conflicting value ingested for the key (one per file and value: re-ingesting
            a file adds nothing), flagged. Nothing is averaged unless asked.

        Returns
        -------
        IngestResult
            ``run_id``, ``n_rows``, ``n_new`` (inserted), ``n_present`` (already stored with
            the same score, or already in the stored mean), ``n_replaced`` (stored rows changed
            by ``latest``/``mean``) and ``n_older`` (conflicting rows older than the stored
            one, not written by ``latest``).

        Raises
        ------
        InputError
            Missing columns, a score outside [0, 1], or a conflicting score for one key (naming
            both files); a store opened ``read_only`` (naming its file). The store is left
            unchanged.
        """
        if duplicates not in DUPLICATE_POLICIES:
            raise InputError(
                f"duplicates={duplicates!r}; expected one of {', '.join(DUPLICATE_POLICIES)}"
            )
        with _bounded_memory(self.connection):  # DuckDB's joins and groupings spill
            return self._ingest_rows(to_arrow(frame), report, duplicates)

    def _ingest_rows(
        self, table: pa.Table, report: LoadReport | None, duplicates: str
    ) -> IngestResult:
        """:meth:`ingest` of the canonical Arrow rows ``table``."""
        averaged = list(getattr(report, "_averaged", []))  # what a read's "mean" averaged
        table = self._one_row_per_key(table, duplicates, report, averaged)
        values = _averaged_table(averaged)
        n_rows = table.num_rows
        run_id = uuid.uuid4().hex
        now = utc_now()
        con = self.connection
        con.register("_incoming", table)
        con.register("_averaged", values)
        n_replaced = n_older = 0
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                conflict = con.execute(
                    "SELECT i.model, i.benchmark, i.item, i.metric, i.filter, i.trial, i.split, "
                    "i.score, r.score, i.source_file, r.source_file, i.source, r.source, "
                    f"r.run_id FROM _incoming i JOIN responses r ON {_JOIN} "
                    f"WHERE abs(i.score - r.score) > {SCORE_TOLERANCE} LIMIT 1"
                ).fetchall()
                if conflict and duplicates == "error":
                    c = conflict[0]
                    advice = self._other_weights(report, c[9], c[10], c[13]) or (
                        'choose duplicates="latest" or duplicates="mean"'
                    )
                    raise InputError(
                        f"{c[9]} ({c[11]}) gives score {c[7]!r} but {c[10]} ({c[12]}) is stored "
                        f"with {c[8]!r} for model={c[0]!r}, benchmark={c[1]!r}, item={c[2]!r}, "
                        f"metric={c[3]!r}, filter={c[4]!r}, trial={c[5]}, split={c[6]!r}; "
                        f"expected one value per key ({advice}); nothing was ingested"
                    )
                # the stored runs' weights before "latest" replaces their rows (replaced all,
                # the other checkpoint's rows were taken for them without a word)
                other_weights = self._other_weights_notes(report)
                agreeing = duplicates == "mean" and self._unrecorded_values()
                if conflict or agreeing:
                    n_replaced, n_older = self._resolve_stored_conflicts(duplicates, now, agreeing)
                for note in other_weights + self._disjoint_items():
                    if report is not None:
                        report.notes.append(note)
                    warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
                inserted = con.execute(
                    f"INSERT INTO responses ({_RESPONSE_COLUMNS}) SELECT {_INCOMING_COLUMNS}, "
                    f"?, ? FROM _incoming i ANTI JOIN responses r ON {_JOIN}",
                    [run_id, now],
                ).fetchall()
                n_new = int(inserted[0][0]) if inserted else 0
                # a new row that is a mean: its values, so that a later "mean" adds to them
                # (it took the mean as one value: a file of it re-ingested changed it)
                if values.num_rows:
                    con.execute(
                        f"INSERT INTO merged_values SELECT {_AVERAGED_COLUMNS}, ? FROM _averaged "
                        f"a WHERE EXISTS (SELECT 1 FROM responses r WHERE {_same_key('a', 'r')} "
                        "AND r.run_id = ?)",
                        [now, run_id],
                    )
                if n_new or n_replaced:
                    con.execute(
                        "INSERT INTO ingests VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [
                            run_id,
                            now,
                            report.source if report else None,
                            n_rows,
                            n_new,
                            report.to_json() if report else None,
                            __version__,
                        ],
                    )
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.TransactionException):  # a failed COMMIT
                    con.execute("ROLLBACK")  # ended the transaction (DuckDB rolled it back)
                raise
        except (duckdb.IOException, duckdb.TransactionException) as exc:  # cannot write: an
            if damaged(exc):  # unwritable folder (its .wal), a disk full
                raise
            raise InputError(
                unwritable(self.path, "the rows to its responses table", exc)
            ) from None
        finally:
            con.unregister("_incoming")
            con.unregister("_averaged")
        return IngestResult(
            run_id=run_id,
            n_rows=n_rows,
            n_new=n_new,
            n_present=n_rows - n_new - n_replaced - n_older,
            n_replaced=n_replaced,
            n_older=n_older,
        )

    def _other_weights(
        self, report: LoadReport | None, incoming: str, stored: str, stored_run: str
    ) -> str | None:
        """The advice for a conflict between an lm-eval run and a stored one of other weights
        (``revision=`` in ``config.model_args``), which lm-eval names as one model; None when
        either run's weights are unknown (:attr:`LoadReport.revisions`, kept in the stored
        ingest's report) or the same."""
        known = report.revisions if report is not None else {}
        if incoming not in known:
            return None
        then = self._stored_revisions([(stored_run, stored)])
        if stored not in then or same_weights(then[stored]) == same_weights(known[incoming]):
            return None
        return (
            "the incoming run names other weights in 'config.model_args' than the stored one "
            f"({shown_revision(known[incoming])}, stored {shown_revision(then[stored])}), "
            "which lm-eval names as one model: if they are two models (checkpoints of one), "
            'ingest this run with model=NAME, a name of its own; duplicates="latest" or '
            'duplicates="mean" would keep one checkpoint\'s answer or mix both'
        )

    def _stored_revisions(self, rows: list[tuple[str, str]]) -> dict[str, str | None]:
        """The weights' ``revision=`` of the samples files of stored lm-eval rows, each given
        as (``run_id``, ``source_file``): file -> revision, from the ``revisions`` of the
        ingests' reports (:attr:`LoadReport.revisions`). A file is looked up in the report of
        its row's ingest, else in those of the store's other lm-eval ingests: a row that
        ``duplicates="latest"`` replaced keeps the ``run_id`` of the ingest that added it and
        takes the incoming row's file, which that ingest's report does not hold. A file no
        report holds (an older store, a ``model=`` ingest) is left out."""
        out: dict[str, str | None] = {}
        if not rows:
            return out
        reports = self._ingest_revisions(
            "list_contains(?, run_id)", [sorted({run_id for run_id, _ in rows})]
        )
        for run_id, file in rows:
            if file in reports.get(run_id, {}):
                out[file] = reports[run_id][file]
        missing = {file for _, file in rows} - set(out)
        if missing:  # replaced rows: the report of the ingest that replaced them, the latest
            later = self._ingest_revisions(  # (to_json's spacing)
                "source = 'lm-eval' AND contains(report, '\"revisions\": {\"')", []
            )
            for revisions in later.values():
                out.update((f, r) for f, r in revisions.items() if f in missing)
        return out

    def _ingest_revisions(self, where: str, params: list[Any]) -> dict[str, dict[str, Any]]:
        """Per ingest matching ``where`` (oldest first), its report's ``revisions``; an
        ingest without them (an older store, another reader, a model= ingest) has none."""
        rows = self.connection.execute(
            f"SELECT run_id, report FROM ingests WHERE report IS NOT NULL AND {where} "
            "ORDER BY created_at, run_id",
            params,
        ).fetchall()
        out: dict[str, dict[str, Any]] = {}
        for run_id, text in rows:
            try:
                revisions = json.loads(text).get("revisions")
            except (ValueError, AttributeError):  # a report of another shape: nothing known
                revisions = None
            if isinstance(revisions, dict) and revisions:
                out[str(run_id)] = revisions
        return out

    def _other_weights_notes(self, report: LoadReport | None) -> list[str]:
        """Notes for incoming lm-eval runs of a model whose stored runs name other weights
        (``revision=`` in ``config.model_args``): lm-eval names both alike, so the incoming
        rows are stored as the same model's (its agreeing docs kept once, its other docs
        added), as :func:`read_results` says of two such runs read together."""
        known = report.revisions if report is not None else {}
        if not known:
            return []
        con = self.connection
        # per model: its runs' weights (no revision and 'main' one) -> (revision, file)
        incoming: dict[str, dict[str | None, tuple[str | None, str]]] = {}
        for model, file in con.execute(
            "SELECT DISTINCT model, source_file FROM _incoming ORDER BY model, source_file"
        ).fetchall():
            if file in known:
                run = (known[file], file)
                incoming.setdefault(model, {}).setdefault(same_weights(known[file]), run)
        if not incoming:
            return []
        stored_rows = con.execute(  # lm-eval's rows: no other reader records revisions
            "SELECT DISTINCT model, run_id, source_file FROM responses "
            "WHERE list_contains(?, model) AND starts_with(source, 'lm-eval') "
            "ORDER BY model, run_id, source_file",
            [sorted(incoming)],
        ).fetchall()
        revisions = self._stored_revisions([(str(r[1]), str(r[2])) for r in stored_rows])
        stored: dict[str, dict[str | None, tuple[str | None, str]]] = {}
        for model, _, file in stored_rows:
            if file in revisions:
                run = (revisions[file], file)
                stored.setdefault(model, {}).setdefault(same_weights(revisions[file]), run)
        notes = []
        for model, runs in incoming.items():
            before = stored.get(model, {})
            new = {r: f for r, f in runs.items() if r not in before}
            if not before or not new:
                continue
            (old_revision, old_file), (new_revision, new_file) = (
                next(iter(before.values())),
                next(iter(new.values())),
            )
            notes.append(
                f"model {model!r}: the incoming run names other weights in 'config.model_args' "
                f"than its stored runs ({shown_revision(new_revision)} in {new_file}, stored "
                f"{shown_revision(old_revision)} in {old_file}), which lm-eval names as one "
                "model: its rows are stored as that one model's (a doc scored alike kept once); "
                "if they are two models (checkpoints of one), ingest each run with model=NAME, "
                "a name of its own"
            )
        return notes

    def _disjoint_items(self) -> list[str]:
        """Notes for incoming (benchmark, metric, filter) whose items share none with the
        stored ones (another id convention, e.g. 'doc_0' against '0'): the new models would
        share no item with the stored models."""
        con = self.connection
        groups = "benchmark, metric, filter, split"  # another split has other items: compared

        def same(alias: str) -> str:  # the incoming rows of group g
            return " AND ".join(f"{alias}.{c} = g.{c}" for c in groups.split(", "))

        rows = con.execute(
            f"WITH inc AS (SELECT DISTINCT {groups}, item FROM _incoming), "
            # a join on the incoming groups, not a row-value ``(a, b) IN (SELECT ...)``:
            # DuckDB 1.0 binds that subquery as one column ("Subquery returns 4 columns")
            f"st AS (SELECT DISTINCT {groups}, item FROM responses "
            f"JOIN (SELECT DISTINCT {groups} FROM inc) USING ({groups})) "
            f"SELECT {groups}, "
            f"(SELECT count(*) FROM inc i2 WHERE {same('i2')}), "
            f"(SELECT min(item) FROM inc i2 WHERE {same('i2')}), "
            "count(*), min(item) "
            f"FROM st g GROUP BY {groups} "
            f"HAVING NOT EXISTS (SELECT 1 FROM inc i3 JOIN st s3 USING ({groups}, item) "
            f"WHERE {same('i3')}) "
            f"ORDER BY {groups}"
        ).fetchall()
        return [
            f"benchmark {bench!r} (metric {metric!r}, filter {filt!r}, split {split!r}): none of "
            f"the {n_in:,} incoming item ids is among the {n_st:,} stored (e.g. incoming "
            f"{ex_in!r}, stored {ex_st!r}; another id convention?): the new rows share no item "
            "with the stored models, whose abilities a fit then compares only through its priors"
            for bench, metric, filt, split, n_in, ex_in, n_st, ex_st in rows
        ]

    def _one_row_per_key(
        self,
        table: pa.Table,
        duplicates: str,
        report: LoadReport | None,
        averaged: list[pd.DataFrame],
    ) -> pa.Table:
        """Resolve a key repeated within the incoming rows (same rules as the readers; the
        rows a ``"mean"`` averages are added to ``averaged``)."""
        keys = ", ".join(STORE_KEY)
        con = self.connection
        con.register("_check", table)
        try:
            # one 64-bit hash per key first (about half the time of grouping the string key
            # columns); equal counts prove the keys distinct, a shortfall (a repeat or a hash
            # collision) is settled by the exact grouping
            ((shortfall,),) = con.execute(
                f"SELECT count(*) - count(DISTINCT hash({keys})) FROM _check"
            ).fetchall()
            repeated = (
                shortfall > 0
                and con.execute(
                    f"SELECT 1 FROM _check GROUP BY {keys} HAVING count(*) > 1 LIMIT 1"
                ).fetchall()
            )
        finally:
            con.unregister("_check")
        if not repeated:
            return table
        frame = resolve_duplicates(table.to_pandas(), duplicates, report, averaged=averaged)
        return to_arrow(frame.reset_index(drop=True))

    def _unrecorded_values(self) -> bool:
        """Whether an incoming row equal to its stored row carries values a ``"mean"`` must
        add: the stored row is a mean (its values in ``merged_values``) or the incoming one
        is (``_averaged``), and a value of the incoming row is not recorded yet. (Such a row
        was no conflict, so its values were lost: 0 and 1 stored 0.5, a file of 1 and 0
        agreed with it, and a later 1 gave 2/3 where the five values give 3/5.)"""
        return bool(
            self.connection.execute(
                f"SELECT 1 FROM ({_EQUAL_OF_A_MEAN}) i WHERE NOT EXISTS (SELECT 1 FROM "
                f"merged_values m WHERE {_same_key('m', 'i')} AND m.source_file = i.source_file "
                f"AND abs(m.score - i.score) <= {SCORE_TOLERANCE}) LIMIT 1"
            ).fetchall()
        )

    def _resolve_stored_conflicts(
        self, duplicates: str, now: object, agreeing: bool = False
    ) -> tuple[int, int]:
        """Apply ``latest`` or ``mean`` to stored rows that ``_incoming`` contradicts (with
        ``agreeing``, for ``mean``, also those it agrees with where either is a mean: their
        values are added); return the stored rows changed and (``latest``) the incoming rows
        older than the stored."""
        con = self.connection
        differs = f"{_JOIN} AND abs(i.score - r.score) > {SCORE_TOLERANCE}"
        if agreeing and duplicates == "mean":  # (only then: a slower join)
            differs = f"{_JOIN} AND (abs(i.score - r.score) > {SCORE_TOLERANCE} OR {_A_MEAN})"
        if duplicates == "latest":
            newer = (
                "(i.run_timestamp IS NULL OR r.run_timestamp IS NULL "
                "OR i.run_timestamp >= r.run_timestamp)"
            )
            ((n_older,),) = con.execute(
                f"SELECT count(*) FROM _incoming i JOIN responses r ON {differs} WHERE NOT {newer}"
            ).fetchall()
            updated = con.execute(
                "UPDATE responses r SET score = i.score, source = i.source, "
                "source_file = i.source_file, run_timestamp = i.run_timestamp, "
                "item_hash = i.item_hash, source_model = i.source_model, flag = i.flag "
                f"FROM _incoming i WHERE {differs} AND {newer}"
            ).fetchall()
            return (int(updated[0][0]) if updated else 0), int(n_older)
        return self._merge_means(differs, now), 0

    def _merge_means(self, differs: str, now: object) -> int:
        """``duplicates="mean"``: each stored row an incoming row contradicts becomes the mean
        of every value recorded for its key in ``merged_values`` (the stored value first, then
        one per incoming file and value): a file already averaged in changes nothing."""
        con = self.connection
        key = ", ".join(STORE_KEY)

        def same_key(a: str, b: str) -> str:
            return " AND ".join(f"{a}.{c} = {b}.{c}" for c in STORE_KEY)

        contested = f"SELECT r.* FROM _incoming i JOIN responses r ON {differs}"  # stored rows
        # values recorded for a stored row that is no longer their mean (replaced since, by
        # duplicates="latest") describe nothing stored: dropped, the stored value starts anew
        con.execute(
            f"DELETE FROM merged_values m WHERE EXISTS (SELECT 1 FROM ({contested}) r "
            f"WHERE {same_key('m', 'r')} AND abs(r.score - (SELECT avg(m2.score) FROM "
            f"merged_values m2 WHERE {same_key('m2', 'r')})) > {SCORE_TOLERANCE})"
        )
        con.execute(
            f"INSERT INTO merged_values SELECT {key}, r.score, r.source, r.source_file, ? "
            f"FROM ({contested}) r WHERE NOT EXISTS "
            f"(SELECT 1 FROM merged_values m WHERE {same_key('m', 'r')})",
            [now],
        )
        # the incoming values: a row's own, or for a row that is a mean of the read, the
        # values it averages (the mean itself counted as one value, and a file of it read
        # again later as another: 0.5 of 1 and 0, then 1 again, became 0.75)
        values = (
            f"SELECT {key}, score, source, source_file FROM _incoming i WHERE NOT EXISTS "
            f"(SELECT 1 FROM _averaged a WHERE {same_key('a', 'i')}) "
            f"UNION ALL SELECT {key}, score, source, source_file FROM _averaged"
        )
        con.execute(
            f"INSERT INTO merged_values SELECT {_AVERAGED_COLUMNS}, ? FROM ({values}) a "
            f"WHERE EXISTS (SELECT 1 FROM _incoming i JOIN responses r ON {differs} WHERE "
            f"{same_key('i', 'a')}) AND NOT EXISTS (SELECT 1 FROM merged_values m WHERE "
            f"{same_key('m', 'a')} AND m.source_file = a.source_file "
            f"AND abs(m.score - a.score) <= {SCORE_TOLERANCE})",
            [now],
        )
        updated = con.execute(
            "UPDATE responses r SET score = m.score, "
            "flag = 'mean of stored and incoming conflicting values' "
            f"FROM (SELECT {key}, avg(score) AS score FROM merged_values GROUP BY {key}) m "
            f"WHERE {same_key('m', 'r')} AND abs(m.score - r.score) > {SCORE_TOLERANCE} "
            f"AND EXISTS (SELECT 1 FROM _incoming i WHERE {same_key('i', 'r')})"
        ).fetchall()
        return int(updated[0][0]) if updated else 0

    @writes("the rows to its responses table")
    def ingest_files(
        self, source: str, paths: Any, **options: Any
    ) -> tuple[IngestResult, LoadReport]:
        """Read result files with :func:`~latentbench.io.formats.read_results` and ingest them.

        The Python twin of ``latentbench ingest SOURCE PATH... --store STORE``; ``options``
        are the keyword arguments of ``read_results`` (``benchmark``, ``metric``, ``filter``,
        ...). Nothing is written when reading fails.

        Parameters
        ----------
        source : str
            A registered reader (:data:`~latentbench.io.SOURCES`).
        paths : path-like or iterable of path-like
            Files, or directories searched for the tool's result files.
        **options
            Keyword arguments of :func:`~latentbench.io.read_results`.

        Returns
        -------
        IngestResult, LoadReport
            What :meth:`ingest` did and what reading found.

        Raises
        ------
        InputError
            As :meth:`ingest` and :func:`~latentbench.io.read_results`; a store opened
            ``read_only`` is refused before any file is read.
        """
        from latentbench.io.formats import read_results

        frame, report = read_results(source, paths, **options)
        duplicates = options.get("duplicates", "error")
        return self.ingest(frame, report, duplicates=duplicates), report

    # ------------------------------------------------------------------ queries
    def benchmarks(self) -> list[str]:
        """Benchmark names in the store, sorted.

        Returns
        -------
        list of str
        """
        rows = self.connection.execute(
            "SELECT DISTINCT benchmark FROM responses ORDER BY benchmark"
        ).fetchall()
        return [r[0] for r in rows]

    def models(self, benchmark: str | None = None) -> list[str]:
        """Model ids in the store (or with rows for ``benchmark``), sorted.

        Parameters
        ----------
        benchmark : str, optional
            Only the models with rows for this benchmark.

        Returns
        -------
        list of str
        """
        if benchmark is None:
            rows = self.connection.execute(
                "SELECT DISTINCT model FROM responses ORDER BY model"
            ).fetchall()
        else:
            rows = self.connection.execute(
                "SELECT DISTINCT model FROM responses WHERE benchmark = ? ORDER BY model",
                [benchmark],
            ).fetchall()
        return [r[0] for r in rows]

    def choices(self, benchmark: str) -> pd.DataFrame:
        """The (metric, filter) pairs stored for ``benchmark``, with row counts and sources.

        Parameters
        ----------
        benchmark : str
            A stored benchmark.

        Returns
        -------
        DataFrame
            Columns ``metric``, ``filter``, ``n_rows``, ``sources``.
        """
        return self.connection.execute(
            "SELECT metric, filter, count(*) AS n_rows, string_agg(DISTINCT source, ', ') AS "
            "sources FROM responses WHERE benchmark = ? GROUP BY metric, filter "
            "ORDER BY metric, filter",
            [benchmark],
        ).df()

    def summary(self) -> pd.DataFrame:
        """One row per benchmark: models, items, the splits and their items, rows, (metric,
        filter) choices, observed fraction of the model x item grid and whether every cell is
        0 or 1 (``is_binary``, on the cells :meth:`matrix` gives: trials averaged).

        ``n_items`` counts the items of every split; :meth:`matrix` (and ``fit``) reads one
        split, ``test`` by default where the benchmark has it, so ``splits`` says the items of
        each, ``test`` first (``test (9 items, the default), valid (1 item)``); a benchmark
        of one split shows its name alone (``unknown`` where the source records none).

        Returns
        -------
        DataFrame
            Columns ``benchmark``, ``n_models``, ``n_items``, ``splits``, ``n_rows``,
            ``observed_fraction``, ``is_binary``, ``choices`` and ``sources``, one row per
            benchmark in name order.
        """
        with _bounded_memory(self.connection):  # groupings of every row: they spill
            return self._summary()

    def _summary(self) -> pd.DataFrame:
        return self.connection.execute(
            f"""
            WITH reduced AS (  -- the cells as Store.matrix gives them: trials averaged
                SELECT benchmark, model, item, split, avg(score) AS score
                FROM responses GROUP BY benchmark, model, item, metric, filter, split
            ),
            cells AS (
                SELECT benchmark, model, item, bool_and(score = 0 OR score = 1) AS is_binary
                FROM reduced GROUP BY benchmark, model, item
            ),
            per AS (
                SELECT benchmark, count(DISTINCT model) AS n_models,
                       count(DISTINCT item) AS n_items, count(*) AS n_cells,
                       bool_and(is_binary) AS is_binary
                FROM cells GROUP BY benchmark
            ),
            rows AS (
                SELECT benchmark, count(*) AS n_rows,
                       string_agg(DISTINCT metric || '/' || filter, ', '
                                  ORDER BY metric || '/' || filter) AS choices,
                       string_agg(DISTINCT source, ', ' ORDER BY source) AS sources
                FROM responses GROUP BY benchmark
            ),
            split_items AS (  -- Store.matrix reads one split, 'test' where there is one
                SELECT benchmark, split, count(DISTINCT item) AS n
                FROM reduced GROUP BY benchmark, split
            ),
            splits AS (  -- 'test (9 items, the default), valid (1 item)'; one: its name
                SELECT benchmark, {_SPLITS_SQL} AS splits
                FROM (SELECT *, count(*) OVER (PARTITION BY benchmark) AS n_splits
                      FROM split_items)
                GROUP BY benchmark
            )
            SELECT per.benchmark, n_models, n_items, splits, n_rows,
                   n_cells / (n_models * n_items) AS observed_fraction, is_binary, choices, sources
            FROM per JOIN rows USING (benchmark) JOIN splits USING (benchmark)
            ORDER BY per.benchmark
            """
        ).df()

    def _known(self, benchmark: str) -> None:
        """Refuse a benchmark the store does not hold, listing those it does."""
        if benchmark not in set(self.benchmarks()):
            raise InputError(
                f"{self.path}: unknown benchmark {benchmark!r}; stored: "
                f"{', '.join(self.benchmarks()) or '(none)'}"
            )

    def coverage(self, benchmark: str | None = None) -> pd.DataFrame:
        """Per benchmark and model: items observed and the fraction of the benchmark's items.

        Parameters
        ----------
        benchmark : str, optional
            Only this benchmark.

        Returns
        -------
        DataFrame of shape (n_pairs, 6)
            Columns ``benchmark``, ``model``, ``n_items`` (observed for the model, any metric
            and split), ``splits`` (the model's items of each split, ``test`` first and said as
            the default where the benchmark holds other splits, as :meth:`summary` says them:
            ``test (9 items, the default), valid (1 item)``; :meth:`matrix` reads one split),
            ``fraction`` (of the distinct items anyone has for the benchmark), ``is_binary``
            (every cell 0 or 1, trials averaged, as :meth:`summary` says it).
        """
        if benchmark is not None:
            self._known(benchmark)
        where = "WHERE benchmark = ?" if benchmark is not None else ""
        params = [benchmark] if benchmark is not None else []
        with _bounded_memory(self.connection):  # groupings of every row: they spill
            return self._coverage(where, params)

    def _coverage(self, where: str, params: list[str]) -> pd.DataFrame:
        frame = self.connection.execute(
            f"""
            WITH reduced AS (  -- the cells as Store.matrix (and summary) take them: trials
                               -- averaged; the rows read once (joining them again cost 2x)
                SELECT benchmark, model, item, avg(score) AS score
                FROM responses {where} GROUP BY benchmark, model, item, metric, filter, split
            ),
            totals AS (
                SELECT benchmark, count(DISTINCT item) AS total FROM reduced GROUP BY benchmark
            )
            SELECT r.benchmark, r.model, count(DISTINCT r.item) AS n_items,
                   count(DISTINCT r.item) / any_value(t.total) AS fraction,
                   bool_and(r.score = 0 OR r.score = 1) AS is_binary
            FROM reduced r JOIN totals t USING (benchmark)
            GROUP BY r.benchmark, r.model ORDER BY r.benchmark, r.model
            """,
            params,
        ).df()
        frame.insert(3, "splits", self._model_splits(where, params, frame))
        return frame

    def _model_splits(self, where: str, params: list[str], frame: pd.DataFrame) -> list[str]:
        """Each coverage row's ``splits`` text, as :meth:`summary` says it
        (:data:`_SPLITS_SQL`): a benchmark of one split shows its name; for one of several,
        the model's items of each split are counted (one more pass over that benchmark's
        rows only: 17 ms for a 1M-row store of one split, about 0.2 s more for one of two)."""
        kinds = {
            benchmark: (n_splits, split)
            for benchmark, n_splits, split in self.connection.execute(
                f"SELECT benchmark, count(DISTINCT split), min(split) FROM responses {where} "
                "GROUP BY benchmark",
                params,
            ).fetchall()
        }
        several = sorted(b for b, (n_splits, _) in kinds.items() if n_splits > 1)
        texts: dict[tuple[str, str], str] = {}
        if several:
            rows = self.connection.execute(
                f"""
                WITH split_items AS (
                    SELECT benchmark, model, split, count(DISTINCT item) AS n,
                           2 AS n_splits  -- these benchmarks hold several splits
                    FROM responses WHERE list_contains(?, benchmark)
                    GROUP BY benchmark, model, split
                )
                SELECT benchmark, model, {_SPLITS_SQL} FROM split_items GROUP BY benchmark, model
                """,
                [several],
            ).fetchall()
            texts = {(b, m): text for b, m, text in rows}
        return [
            texts[(b, m)] if kinds[b][0] > 1 else str(kinds[b][1])
            for b, m in zip(frame["benchmark"], frame["model"], strict=True)
        ]

    def long(
        self,
        benchmark: str | None = None,
        *,
        metric: str | None = None,
        filter: str | None = None,
        split: str | None = None,
    ) -> pd.DataFrame:
        """The canonical long table (optionally one benchmark / metric / filter / split; an
        unknown benchmark, or a metric, filter or split that no row (of the benchmark) holds,
        is an error listing the values stored, not an empty table).

        Parameters
        ----------
        benchmark : str, optional
            Only this benchmark's rows.
        metric, filter, split : str, optional
            Only the rows with this metric / filter / split.

        Returns
        -------
        DataFrame
            One row per stored score, with the canonical columns (``model``, ``benchmark``,
            ``item``, ``score``, ``metric``, ``filter``, ``trial``, ``split``, ``source``, ...;
            ``docs/formats.md``).

        Raises
        ------
        InputError
            An unknown benchmark, or a metric, filter or split that none of its rows holds.
        """
        where, params = self._rows_of(benchmark, metric=metric, filter=filter, split=split)
        return self.connection.execute(
            f"SELECT {', '.join(CANONICAL_COLUMNS)} FROM responses {where} "
            "ORDER BY benchmark, model, item, metric, filter, trial, split",
            params,
        ).df()

    def _rows_of(
        self,
        benchmark: str | None,
        *,
        metric: str | None = None,
        filter: str | None = None,
        split: str | None = None,
    ) -> tuple[str, list[str]]:
        """The ``WHERE`` clause (and its parameters) of the rows of ``benchmark`` (None: all)
        with the given ``metric``, ``filter`` and ``split``; an unknown benchmark, or a value
        that none of its rows holds, is refused, listing the values stored."""
        if benchmark is not None:
            self._known(benchmark)
        clauses, params = [], []
        for column, value in (("benchmark", benchmark), ("metric", metric), ("filter", filter),
                              ("split", split)):  # fmt: skip
            if value is None:
                continue
            if column != "benchmark":
                stored = [
                    str(row[0])
                    for row in self.connection.execute(
                        f"SELECT DISTINCT {column} FROM responses "
                        f"{'WHERE benchmark = ?' if benchmark is not None else ''} "
                        f"ORDER BY {column}",
                        [benchmark] if benchmark is not None else [],
                    ).fetchall()
                ]
                if value not in stored:
                    scope = f"benchmark {benchmark!r}" if benchmark is not None else "the store"
                    raise InputError(
                        f"{self.path}: {column}={value!r}: no row of {scope} has it; stored "
                        f"{column}s: {', '.join(map(repr, stored)) or '(none)'}"
                    )
            clauses.append(f"{column} = ?")
            params.append(value)
        return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), params

    def matrix(
        self,
        benchmark: str,
        metric: str | None = None,
        filter: str | None = None,
        split: str | None = None,
    ) -> ResponseMatrix:
        """The (model x item) matrix of one benchmark for one (metric, filter, split).

        Trials (epochs, replicas, HELM train trials) of one cell are reduced by their mean, so
        a fractional cell can come from binary trials. Nothing else is averaged: one
        (metric, filter, split) is chosen, and the store holds one row per key. Absent (model,
        item) pairs are NaN.

        Parameters
        ----------
        benchmark : str
        metric, filter : str, optional
            Needed when the benchmark holds several; the error lists the choices.
        split : str, optional
            Default: ``test`` when the benchmark has test rows, else the only split stored.

        Returns
        -------
        ResponseMatrix of shape (n_models, n_items)
            Models sorted by name; items in numeric order when every id is an integer, else
            sorted as strings. ``source`` is ``"<store path>:<benchmark>"``, and
            ``layout`` says where it was read, and that trials were averaged when a cell
            has several (with the count, also said in a
            :class:`~latentbench.exceptions.DataWarning`, as reading the exported file says
            it); ``store_query`` the store, benchmark, metric, filter and split read (so that
            :meth:`IRTResult.save <latentbench.irt.IRTResult.save>` records the fit's input as
            ``latentbench fit --store`` does, and ``report`` reads it back). When fewer than
            25% of the cells are observed it stores only those cells (a
            :class:`~latentbench.io._sparse_matrix.SparseResponseMatrix`, built from the query
            result without a dense array).

        Raises
        ------
        InputError
            Unknown benchmark, several choices and none given, or a store (upgraded from
            schema 1) holding several rows for one key.
        """
        self._known(benchmark)
        triples = self.connection.execute(
            "SELECT DISTINCT metric, filter, split FROM responses WHERE benchmark = ? "
            "ORDER BY metric, filter, split",
            [benchmark],
        ).fetchall()
        chosen = [
            (m, f, s)
            for m, f, s in triples
            if (metric is None or m == metric)
            and (filter is None or f == filter)
            and (split is None or s == split)
        ]
        if split is None and len({s for _, _, s in chosen}) > 1:
            tests = [c for c in chosen if c[2] == "test"]
            if tests:  # the default, said: the other splits' rows are left out
                others = sorted({s for _, _, s in chosen} - {"test"})
                warnings.warn(
                    f"{self.path}: benchmark {benchmark!r} holds the splits 'test', "
                    f"{', '.join(map(repr, others))}; using 'test' (choose another with split=...)",
                    DataWarning,
                    stacklevel=user_stacklevel(),
                )
            chosen = tests or chosen
        listing = ", ".join(f"metric={m!r} filter={f!r} split={s!r}" for m, f, s in triples)
        if not chosen:
            asked = ", ".join(
                f"{name}={value!r}"
                for name, value in (("metric", metric), ("filter", filter), ("split", split))
                if value is not None
            )
            raise InputError(
                f"{self.path}: benchmark {benchmark!r} has no rows"
                + (f" with {asked}" if asked else "")
                + f"; available: {listing}"
            )
        if len(chosen) > 1:
            raise InputError(
                f"{self.path}: benchmark {benchmark!r} holds several (metric, filter, split) "
                f"choices ({listing}); pass metric=, filter= and split="
            )
        m, f, s = chosen[0]
        where = "WHERE benchmark = ? AND metric = ? AND filter = ? AND split = ?"
        params = [benchmark, m, f, s]
        # ids ordered here (a few thousand), the cells read as integer codes: 24M cells as
        # Python strings took 7.7 GB (fit --store of a 4,000 x 20,000 leaderboard)
        model_ids = pd.factorize(
            np.asarray(
                [
                    r[0]
                    for r in self.connection.execute(
                        f"SELECT DISTINCT model FROM responses {where}", params
                    ).fetchall()
                ],
                dtype=object,
            ),
            sort=True,
        )[1]
        item_ids = np.asarray(
            _item_order(
                r[0]
                for r in self.connection.execute(
                    f"SELECT DISTINCT item FROM responses {where}", params
                ).fetchall()
            ),
            dtype=object,
        )
        table = self._coded_cells(where, params, model_ids, item_ids)
        repeated = (
            self.connection.execute(
                f"SELECT model, item, trial, string_agg(source_file, ', ') FROM responses {where} "
                "GROUP BY model, item, trial HAVING count(*) > 1 LIMIT 1",
                params,
            ).fetchall()
            if np.asarray(table["n"]).size
            and int(np.asarray(table["n"]).max()) > 1  # several trials, or a repeat
            else []
        )
        if repeated:
            r = repeated[0]
            raise InputError(
                f"{self.path}: model {r[0]!r}, item {r[1]!r}, trial "
                f"{r[2]} of {benchmark!r} is stored more than once ({r[3]}); "
                "expected one row per key (a store from before schema 2 kept one row per tool "
                'version; export it and re-ingest with duplicates="latest" or "mean")'
            )
        mixed = (
            self.connection.execute(
                f"SELECT model, item, string_agg(DISTINCT source_file, ', ' ORDER BY source_file) "
                f"FROM responses {where} GROUP BY model, item "
                "HAVING count(DISTINCT source_file) > 1 AND max(score) - min(score) > ? LIMIT 1",
                [*params, SCORE_TOLERANCE],
            ).fetchall()
            if np.asarray(table["n"]).size and int(np.asarray(table["n"]).max()) > 1
            else []
        )
        if mixed:
            r = mixed[0]
            raise InputError(
                f"{self.path}: model {r[0]!r}, item {r[1]!r} of {benchmark!r} has trials from "
                f"several files that disagree ({r[2]}); their mean would be a score neither "
                "gave. Expected the trials of a cell from one run: ingest the other file under "
                "another benchmark= or metric="
            )
        # several trials of a cell (repeats were refused above): their mean, said as reading
        # the exported file says it, and recorded in the layout (fit.json's input)
        counts = np.asarray(table["n"])
        averaged = (
            trial_notes(0, int((counts > 1).sum()), int(counts.max()), "trial")[1]
            if counts.size
            else ""
        )
        if averaged:
            warnings.warn(
                f"{self.path}: benchmark {benchmark!r}: {averaged}",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
        model_codes, item_codes = np.asarray(table["mi"]), np.asarray(table["ij"])
        scores = table["score"]
        source = f"{self.path}:{benchmark}"
        from latentbench.io._cells import SPARSE_DENSITY

        if len(scores) < SPARSE_DENSITY * len(model_ids) * len(item_ids):
            # mostly missing: keep the observed cells only (never the dense array)
            out = ResponseMatrix.from_cells(
                np.asarray(model_codes),
                item_codes,
                np.asarray(scores),
                list(model_ids),
                list(item_ids),
                source=source,
            )
        else:
            dense = np.full((len(model_ids), len(item_ids)), np.nan, dtype=np.float32)
            dense[model_codes, item_codes] = scores
            out = ResponseMatrix(dense, list(model_ids), list(item_ids), source=source)
        out.layout = f"store {self.path}, benchmark {benchmark}" + (
            f"; {averaged}" if averaged else ""
        )
        read = (("benchmark", benchmark), ("metric", m), ("filter", f), ("split", s))
        out.labels = {name: str(value) for name, value in read if value is not None}
        if self.path != ":memory:":  # where the cells come from, for a saved fit's input
            out.store_query = {
                "store": str(Path(self.path).resolve()),
                "benchmark": benchmark,
                "metric": m,
                "filter": f,
                "split": s,
            }
        return out

    def _coded_cells(
        self, where: str, params: list[Any], model_ids: np.ndarray, item_ids: np.ndarray
    ) -> dict[str, Any]:
        """The cells of ``where`` as ``mi``, ``ij`` (positions in ``model_ids`` and
        ``item_ids``), ``score`` (the mean of its trials) and ``n`` (its rows): the ids are
        joined to their positions in DuckDB, so no cell's id becomes a Python string."""

        suffix = uuid.uuid4().hex[:12]
        names = (f"_lb_models_{suffix}", f"_lb_items_{suffix}")
        codes = (
            pd.DataFrame({"model": model_ids, "mi": np.arange(len(model_ids), dtype=np.int32)}),
            pd.DataFrame({"item": item_ids, "ij": np.arange(len(item_ids), dtype=np.int32)}),
        )
        for name, frame in zip(names, codes, strict=True):
            self.connection.register(name, frame)
        try:
            table: dict[str, Any] = self.connection.execute(
                "SELECT m.mi AS mi, i.ij AS ij, avg(r.score) AS score, count(*) AS n "
                f"FROM (SELECT model, item, score FROM responses {where}) AS r "
                f"JOIN {names[0]} AS m ON r.model = m.model "
                f"JOIN {names[1]} AS i ON r.item = i.item GROUP BY m.mi, i.ij",
                params,
            ).fetchnumpy()
        finally:
            for name in names:
                self.connection.unregister(name)
        return table

    # ------------------------------------------------------------------ export
    def export(
        self,
        path: str | os.PathLike[str],
        benchmark: str | None = None,
        *,
        metric: str | None = None,
        filter: str | None = None,
        split: str | None = None,
        force: bool = False,
    ) -> int:
        """Write the canonical long table (optionally one benchmark) to ``.parquet`` or ``.csv``.

        The file reads back with ``read_results("table", path)``, provenance included, and as
        a matrix (``ResponseMatrix.read``, ``latentbench fit FILE``) when it holds one metric,
        filter and split.

        Parameters
        ----------
        path : path-like
            The file to write (``.parquet`` / ``.pq`` or ``.csv``); its folder must exist.
        benchmark : str, optional
            Only this benchmark.
        metric, filter, split : str, optional
            Only the rows with this metric, filter or split (``latentbench export --metric,
            --filter, --split``): one matrix's rows, where the benchmark holds several. A value
            that no row (of the benchmark) holds is an error listing those stored.
        force : bool, default False
            Replace an existing file (refused otherwise, as ``latentbench export`` refuses it
            without ``--force``: it may be the file that was ingested).

        Returns
        -------
        int
            Rows written.

        Raises
        ------
        InputError
            An unknown suffix or benchmark, a metric, filter or split that no row holds, a
            missing folder, or an existing file without
            ``force``.
        """
        force = check_flag(force, "force")  # force="no" overwrote the file
        out = Path(path)
        suffix = out.suffix.lower()
        if suffix in (".parquet", ".pq"):
            options = "FORMAT parquet, COMPRESSION zstd"
        elif suffix == ".csv":
            options = "FORMAT csv, HEADER true"
        else:
            raise InputError(f"{out}: unknown export type {suffix!r}; expected .parquet or .csv")
        where, params = self._rows_of(benchmark, metric=metric, filter=filter, split=split)
        query = (
            f"SELECT {', '.join(CANONICAL_COLUMNS)} FROM responses {where} "
            "ORDER BY benchmark, model, item, metric, filter, trial, split"
        )
        if out.is_dir():
            raise InputError(f"{out} is a directory; expected the file to write")
        if not out.parent.is_dir():
            raise InputError(
                f"{out}: the folder {out.parent} does not exist{tilde_hint(out.parent)}"
            )
        if out.is_file() and not force:
            raise InputError(
                f"{out} exists (it may be the file that was ingested); pass force=True to "
                "overwrite it, or another path"
            )
        # a regular file (new or replaced) is written beside its final place and moved in, so
        # a failure (disk full) leaves the previous file, or none; a device or pipe is written
        # through
        final = out.resolve() if out.is_symlink() else out
        staged = not final.exists() or final.is_file()
        target = staging_path(final, suffix=suffix) if staged else final
        quoted = duckdb_path(target).replace("'", "''")
        try:
            with _bounded_memory(self.connection):  # the sort spills: the same bytes
                self.connection.execute(f"COPY ({query}) TO '{quoted}' ({options})", params)
            if staged:
                os.replace(target, final)
        except (duckdb.Error, OSError) as exc:  # unwritable, disk full, ...
            if damaged(exc):  # the store's file, not the export's
                raise InputError(unreadable(self.path, exc)) from None
            reason = str(exc).split("\n")[0]
            raise InputError(f"{out}: cannot write the export ({reason})") from None
        finally:
            if staged:
                target.unlink(missing_ok=True)
        count_query = f"SELECT count(*) FROM responses {where}"
        return int(self.connection.execute(count_query, params).fetchall()[0][0])

    # ------------------------------------------------------------------ fits
    @writes("the fit to its fits table")
    def record_fit(
        self,
        benchmark: str,
        result: Any = None,
        *,
        options: dict[str, Any] | None = None,
        summary: dict[str, Any] | None = None,
    ) -> str:
        """Record an IRT fit and return its id.

        Parameters
        ----------
        benchmark : str
            The benchmark fitted.
        result : object, optional
            A fit result; when it has ``fit_info()`` its dict is the summary, and a dict
            attribute ``options`` or ``params`` gives the options.
        options : dict, optional
            Estimator parameters (JSON-serialisable; other values are stored with ``str``).
        summary : dict, optional
            Fit summary (log-likelihood, convergence, shapes, ...).

        Returns
        -------
        str
            The new fit's id (random hex), a row of :meth:`fits`.

        Raises
        ------
        InputError
            When DuckDB cannot write the row (a ``fits`` table edited out of its columns, a
            disk full): the store's file, the table and DuckDB's reason, not its exception;
            a store opened ``read_only``: its file, and that a writable store was expected.
        """
        if result is not None:
            if summary is None and callable(getattr(result, "fit_info", None)):
                summary = result.fit_info()
            if options is None:
                for name in ("options", "params"):
                    value = getattr(result, name, None)
                    if isinstance(value, dict):
                        options = value
                        break
        fit_id = uuid.uuid4().hex
        row = [
            fit_id,
            utc_now(),
            benchmark,
            json.dumps(options or {}, default=str, sort_keys=True),
            json.dumps(summary or {}, default=str, sort_keys=True),
            __version__,
        ]
        try:
            self.connection.execute("INSERT INTO fits VALUES (?, ?, ?, ?, ?, ?)", row)
        except duckdb.Error as exc:  # an edited table, a disk full: said as the store's
            if damaged(exc):
                raise InputError(unreadable(self.path, exc)) from None
            if isinstance(exc, duckdb.IOException | duckdb.TransactionException):
                # permissions or space, not the table: said so (not "expected the table")
                raise InputError(unwritable(self.path, "the fit to its fits table", exc)) from None
            reason = str(exc).split("\n")[0]
            raise InputError(
                f"{self.path}: cannot write the fit to its fits table ({type(exc).__name__}: "
                f"{reason}); expected the fits table latentbench makes (id, created_at, "
                "benchmark, options, summary, package_version)"
            ) from None
        return fit_id

    def fits(self, benchmark: str | None = None) -> pd.DataFrame:
        """Recorded fits, newest last (``options`` and ``summary`` as JSON text).

        Parameters
        ----------
        benchmark : str, optional
            Only this benchmark's fits.

        Returns
        -------
        DataFrame
            Columns ``id``, ``created_at``, ``benchmark``, ``options``, ``summary``,
            ``package_version``.
        """
        if benchmark is None:
            return self.connection.execute("SELECT * FROM fits ORDER BY created_at").df()
        return self.connection.execute(
            "SELECT * FROM fits WHERE benchmark = ? ORDER BY created_at", [benchmark]
        ).df()


def _item_order(items: Iterable[object]) -> list[str]:
    """Integer-like ids in numeric order, otherwise string order."""
    values = [str(v) for v in items]
    if values and all(v.lstrip("-").isdigit() for v in values):
        return sorted(values, key=int)
    return sorted(values)
