"""The store's table layout, its version and upgrade, and the canonical Arrow conversion.

The tables are described in :mod:`latentbench.io.store`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from latentbench._checks import bounded_scores
from latentbench._compat import text_array
from latentbench.exceptions import InputError
from latentbench.io.formats._common import (
    CANONICAL_COLUMNS,
    CANONICAL_SCHEMA,
    KEY_COLUMNS,
    UNKNOWN_SPLIT,
)

__all__ = [
    "DDL",
    "SCHEMA_VERSION",
    "STORE_KEY",
    "foreign_tables",
    "to_arrow",
    "upgrade_from_1",
    "utc_now",
    "writes",
]

SCHEMA_VERSION = 2
"""Version of the table layout below; a file with a newer version is refused, an older one is
upgraded in place (version 1 lacked ``split`` and ``flag``)."""

STORE_KEY: tuple[str, ...] = KEY_COLUMNS
"""Unique key of a row in ``responses`` (the tool version is provenance, not identity)."""

DDL = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS responses (
    model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    item VARCHAR NOT NULL,
    score DOUBLE NOT NULL,
    metric VARCHAR NOT NULL,
    filter VARCHAR NOT NULL,
    trial BIGINT NOT NULL,
    split VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    run_timestamp TIMESTAMP,
    item_hash VARCHAR,
    source_model VARCHAR NOT NULL,
    flag VARCHAR,
    run_id VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS merged_values (
    model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    item VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    filter VARCHAR NOT NULL,
    trial BIGINT NOT NULL,
    split VARCHAR NOT NULL,
    score DOUBLE NOT NULL,
    source VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS ingests (
    run_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    source VARCHAR,
    n_rows BIGINT,
    n_new BIGINT,
    report VARCHAR,
    package_version VARCHAR
);
CREATE TABLE IF NOT EXISTS fits (
    id VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    benchmark VARCHAR,
    options VARCHAR,
    summary VARCHAR,
    package_version VARCHAR
);
CREATE TABLE IF NOT EXISTS selection_runs (
    run_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    config VARCHAR,
    package_version VARCHAR,
    status VARCHAR
);
CREATE TABLE IF NOT EXISTS selection_observations (
    run_id VARCHAR NOT NULL,
    seq BIGINT NOT NULL,
    round BIGINT,
    model VARCHAR NOT NULL,
    item VARCHAR NOT NULL,
    score DOUBLE,
    error VARCHAR,
    requested_at TIMESTAMP,
    observed_at TIMESTAMP,
    attempts INTEGER,
    note VARCHAR,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS selection_decisions (
    run_id VARCHAR NOT NULL,
    round BIGINT NOT NULL,
    payload VARCHAR,
    PRIMARY KEY (run_id, round)
);
CREATE TABLE IF NOT EXISTS selection_requests (
    run_id VARCHAR NOT NULL,
    delta INTEGER NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);
"""


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


_Method = TypeVar("_Method", bound=Callable[..., Any])


def writes(what: str) -> Callable[[_Method], _Method]:
    """Mark a store method that writes ``what`` (e.g. ``"the fit to its fits table"``): on a
    store opened ``read_only`` it is refused before any work, with an :class:`InputError`
    naming the store's file, what would have been written and how to get a writable store,
    not DuckDB's ``InvalidInputException`` ('Cannot execute statement of type "INSERT" ...
    attached in read-only mode')."""

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(self, "_read_only", False):
                raise InputError(
                    f"{self.path}: cannot write {what} (the store is opened read-only; "
                    "nothing was written); expected a store opened for writing "
                    "(Store(path), not read_only=True)"
                )
            return method(self, *args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate


def foreign_tables(connection: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of a DuckDB file that holds tables but is not a latentbench store (empty
    for a new or empty file, or a store of ours)."""
    tables = sorted(
        r[0]
        for r in connection.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_catalog = current_database()"
        ).fetchall()
    )
    if not tables:
        return []  # a new or empty file
    ours = False
    if "meta" in tables:
        try:
            found = connection.execute(
                "SELECT count(*) FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            ours = found is not None and found[0] > 0
        except (duckdb.BinderException, duckdb.ConversionException):  # another shape
            ours = False  # (a file cut short or written over raises on: said as damaged)
    return [] if ours else tables


def upgrade_from_1(connection: duckdb.DuckDBPyConnection) -> None:
    """Add ``split`` (``unknown``) and ``flag`` to a version-1 store, in one transaction."""
    con = connection
    con.execute("BEGIN TRANSACTION")
    try:
        columns = {r[0] for r in con.execute("DESCRIBE responses").fetchall()}
        if "split" not in columns:
            con.execute(f"ALTER TABLE responses ADD COLUMN split VARCHAR DEFAULT '{UNKNOWN_SPLIT}'")
        if "flag" not in columns:
            con.execute("ALTER TABLE responses ADD COLUMN flag VARCHAR")
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


_NULLABLE = ("run_timestamp", "item_hash", "flag")
_DEFAULTS: dict[str, str | None] = {"split": UNKNOWN_SPLIT, "flag": None}
"""Canonical columns a frame may omit, with the value they then take."""


def _schema_of(frame: pd.DataFrame) -> pa.Schema:
    """:data:`CANONICAL_SCHEMA`, with ``large_string`` for the text columns that ``frame``
    holds as Arrow ``large_string`` (the readers' text dtype): taken as they are, not copied
    into 32-bit offsets (DuckDB reads both alike; at 24M rows the copy was gigabytes)."""
    fields = []
    for field in CANONICAL_SCHEMA:
        dtype = frame[field.name].dtype
        large = isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
        large = large or (
            isinstance(dtype, pd.ArrowDtype) and dtype.pyarrow_dtype == pa.large_string()
        )
        text = pa.types.is_string(field.type)
        fields.append(field.with_type(pa.large_string()) if text and large else field)
    return pa.schema(fields)


def to_arrow(frame: pd.DataFrame | pa.Table) -> pa.Table:
    """Validate and convert a canonical frame to an Arrow table with the canonical schema."""
    names = (
        list(frame.column_names) if isinstance(frame, pa.Table) else list(map(str, frame.columns))
    )
    for column, default in _DEFAULTS.items():
        # columns added in schema 2: a frame built before them means "split unknown, no flag"
        if column not in names:
            if isinstance(frame, pa.Table):
                frame = frame.append_column(
                    column, pa.array([default] * frame.num_rows, type=pa.string())
                )
            else:
                frame = frame.assign(**{column: text_array([default] * len(frame))})
            names.append(column)
    missing = [c for c in CANONICAL_COLUMNS if c not in names]
    if missing:
        raise InputError(
            f"the frame lacks the canonical columns {missing}; expected {list(CANONICAL_COLUMNS)}"
        )
    if isinstance(frame, pd.DataFrame):
        for column in ("score", *(c for c in CANONICAL_COLUMNS if c not in _NULLABLE)):
            empty = frame[column].isna().to_numpy()
            if empty.any():
                k = int(np.flatnonzero(empty)[0])
                raise InputError(
                    f"{frame['source_file'].iloc[k]}: row {k}: column {column!r} is empty; "
                    "expected a value (missing cells have no row)"
                )
    try:
        if isinstance(frame, pa.Table):
            table = frame.select(list(CANONICAL_COLUMNS)).cast(CANONICAL_SCHEMA)
        else:
            table = pa.Table.from_pandas(
                frame[list(CANONICAL_COLUMNS)], schema=_schema_of(frame), preserve_index=False
            )
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError) as exc:
        raise InputError(f"the frame does not fit the canonical schema ({exc})") from None
    for column in (f.name for f in CANONICAL_SCHEMA if not f.nullable):
        if table.column(column).null_count:
            raise InputError(f"column {column!r} has empty values; expected a string in every row")
    raw = table.column("score").to_numpy()
    score, outside = bounded_scores(raw)  # a rounding past 0 or 1 is the bound
    bad = outside | np.isnan(score)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{table.column('source_file')[k].as_py()}: row {k}: score {float(score[k])!r} is "
            "outside "
            "[0, 1] or missing; expected a score in [0, 1] (missing cells have no row)"
        )
    if score is not raw:
        at = table.schema.get_field_index("score")
        table = table.set_column(at, table.schema.field(at), pa.array(score, pa.float64()))
    return table
