"""Selection runs in the store: the run record, its observations and its decisions."""

from __future__ import annotations

import functools
import json
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd

from latentbench._compat import TEXT
from latentbench._version import __version__
from latentbench.exceptions import InputError
from latentbench.io._secrets import mask_run_config
from latentbench.io._store_schema import utc_now, writes

__all__ = ["SelectionRuns"]

_FEW_ROWS = 16
"""Up to this many observations go in as one parameterised insert (no table built)."""


def _column(observations: Any, name: str, n: int) -> Any:
    """Column ``name`` as an array or a list of ``n`` values (None when absent); an array,
    not a Series, so that a frame's index never realigns it."""
    if name not in observations.keys():
        return [None] * n
    column = observations[name]
    return column.to_numpy() if hasattr(column, "to_numpy") else list(column)


def _missing(value: Any) -> bool:
    """None, NaN of any float type, ``pd.NA`` and ``NaT``: stored as NULL, as the table path
    stores them."""
    return value is None or bool(pd.isna(value))


def _none_if_missing(value: Any) -> Any:
    if _missing(value):
        return None
    # a frame's time column reads back as numpy datetime64 (``to_numpy``): DuckDB
    # 1.0-1.4 binds that parameter as BIGINT ("Unimplemented type for cast (BIGINT -> TIMESTAMP)")
    if isinstance(value, pd.Timestamp | np.datetime64):
        return pd.Timestamp(value).to_pydatetime()
    return value


def _float_or_none(value: Any) -> float | None:
    return None if _missing(value) else float(value)


def _int_or_none(value: Any) -> int | None:
    return None if _missing(value) else int(value)


class SelectionRuns:
    """The selection-run methods of :class:`~latentbench.io.store.Store` (a mixin over its
    connection)."""

    path: str
    _read_only: bool  # Store's: the methods marked ``writes`` refuse a read-only store
    _ledger_lock: threading.Lock  # Store's: one thread at a time on the ledger's cursor
    _ledger_cursor: duckdb.DuckDBPyConnection | None

    if TYPE_CHECKING:

        @property
        def connection(self) -> duckdb.DuckDBPyConnection: ...  # Store.connection

        def ingest(self, frame: pd.DataFrame) -> Any: ...  # Store.ingest

    @writes("a selection run to its selection_runs table")
    def start_selection(self, config: dict[str, Any], *, run_id: str | None = None) -> str:
        """Create a ``selection_runs`` row with status ``running``; returns its ``run_id``.

        Parameters
        ----------
        config : dict of str to Any
            The run's configuration, stored as JSON (values JSON cannot hold as text).
        run_id : str, optional
            The run's id; a new random hex id when None or empty.

        Returns
        -------
        str
            The run's id.

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        run_id = run_id or uuid.uuid4().hex
        self.connection.execute(
            "INSERT INTO selection_runs VALUES (?, ?, ?, ?, 'running')",
            [run_id, utc_now(), json.dumps(config, default=str, sort_keys=True), __version__],
        )
        return run_id

    @writes("the run's status to its selection_runs table")
    def set_selection_status(self, run_id: str, status: str) -> None:
        """Set the status of a selection run (e.g. ``done``, ``failed``, ``interrupted``).

        Parameters
        ----------
        run_id : str
            The run's id (a run not in the store changes nothing).
        status : str
            Its new status.

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        self.connection.execute(
            "UPDATE selection_runs SET status = ? WHERE run_id = ?", [status, run_id]
        )

    @writes("the run's config to its selection_runs table")
    def set_selection_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Replace the ``config`` record of a selection run (e.g. the endpoints it is asked at
        now, after a resume from another address).

        Parameters
        ----------
        run_id : str
            The run's id (a run not in the store changes nothing).
        config : dict of str to Any
            The new configuration, stored as JSON.

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        self.connection.execute(
            "UPDATE selection_runs SET config = ? WHERE run_id = ?",
            [json.dumps(config, default=str, sort_keys=True), run_id],
        )

    @writes("the observations to its selection_observations table")
    def add_observations(
        self, run_id: str, observations: pd.DataFrame | Mapping[str, Sequence[Any]]
    ) -> int:
        """Append observations of a selection run in one transaction; returns the count.

        Parameters
        ----------
        run_id : str
            The run the observations belong to.
        observations : DataFrame of shape (n, <= 10), or a mapping column -> n values
            Columns ``seq`` (int, unique within the run), ``model``, ``item`` and optionally
            ``round``, ``score`` (NaN/None when the request failed), ``error``,
            ``requested_at``, ``observed_at``, ``attempts`` (HTTP requests paid for the cell),
            ``note`` (a remark on a scored answer, e.g. its text was empty).
            A live run commits each paid cell as it arrives: a few rows go in as one
            parameterised insert, without building a table.

        Returns
        -------
        int
            The number of observations stored (n).

        Raises
        ------
        InputError
            When ``seq``, ``model`` or ``item`` is missing, or a ``seq`` is already stored for
            the run (then none of the rows is stored); on a store opened ``read_only``
            (naming its file; nothing is written).
        """
        columns = ("seq", "round", "model", "item", "score", "error", "requested_at", "observed_at",
                   "attempts", "note")  # fmt: skip
        given = list(observations.keys())
        missing = [c for c in ("seq", "model", "item") if c not in given]
        if missing:
            raise InputError(f"observations lack the columns {missing}; expected {columns}")
        n = len(observations["seq"])
        values = {c: _column(observations, c, n) for c in columns}
        insert = (
            "INSERT INTO selection_observations (run_id, seq, round, model, item, score, "
            "error, requested_at, observed_at, attempts, note) "
        )
        try:
            if n <= _FEW_ROWS:
                rows = [
                    (run_id, int(values["seq"][k]), _int_or_none(values["round"][k]),
                     str(values["model"][k]), str(values["item"][k]),
                     _float_or_none(values["score"][k]), _none_if_missing(values["error"][k]),
                     _none_if_missing(values["requested_at"][k]),
                     _none_if_missing(values["observed_at"][k]),
                     _int_or_none(values["attempts"][k]), _none_if_missing(values["note"][k]))
                    for k in range(n)
                ]  # fmt: skip
                # one statement (one transaction): a repeated seq stores none of the rows
                marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * n)
                self.connection.execute(insert + "VALUES " + marks, [v for r in rows for v in r])
                return n
            frame = pd.DataFrame({"run_id": run_id}, index=range(n))
            for column in columns:
                frame[column] = values[column]
            frame["model"] = frame["model"].astype(TEXT)
            frame["item"] = frame["item"].astype(TEXT)
            self.connection.register("_observations", frame)
            try:
                self.connection.execute(
                    insert + "SELECT run_id, seq, round, model, item, score, error, "
                    "requested_at, observed_at, attempts, note FROM _observations"
                )
            finally:
                self.connection.unregister("_observations")
        except duckdb.ConstraintException as exc:
            raise InputError(f"run {run_id!r}: an observation seq is repeated ({exc})") from None
        return n

    @writes("the decision to its selection_decisions table")
    def add_decision(self, run_id: str, round: int, payload: dict[str, Any]) -> None:
        """Record what the policy decided at ``round`` (JSON payload).

        Parameters
        ----------
        run_id : str
            The run's id.
        round : int
            The round of the decision.
        payload : dict of str to Any
            The decision, stored as JSON.

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        self.connection.execute(
            "INSERT INTO selection_decisions VALUES (?, ?, ?)",
            [run_id, int(round), json.dumps(payload, default=str, sort_keys=True)],
        )

    @writes("the request to its selection_requests table")
    def record_requests(self, run_id: str, delta: int) -> None:
        """Record ``delta`` HTTP requests of run ``run_id`` in the request ledger, committed
        when it returns: a live run records 1 before each request is sent and -1 for one that
        never reached a server (so a killed session's requests in flight are counted).

        Safe to call from several threads at once, beside the store's other writes: the
        ledger has a cursor of its own, used by one thread at a time.

        Parameters
        ----------
        run_id : str
            The run's id.
        delta : int
            Requests to add (negative for a refund).

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        with self._ledger_lock:
            self._ledger_cursor = self._ledger_cursor or self.connection.cursor()
            self._ledger_cursor.execute(
                "INSERT INTO selection_requests VALUES (?, ?, ?)", [run_id, int(delta), utc_now()]
            )

    @writes("the request to its selection_requests table")
    def request_ledger(self, run_id: str) -> Callable[[int], None]:
        """The request ledger of run ``run_id`` as a callable ``ledger(delta)``
        (:meth:`record_requests`), for
        :meth:`ChatCompletionsOracle.set_ledger
        <latentbench.select.oracles.ChatCompletionsOracle.set_ledger>`. Its cursor is opened
        here, in the calling thread, before any worker thread records.

        Parameters
        ----------
        run_id : str
            The run's id.

        Returns
        -------
        callable
            ``ledger(delta)``: records ``delta`` requests of the run, committed on return.

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        with self._ledger_lock:
            self._ledger_cursor = self._ledger_cursor or self.connection.cursor()
        return functools.partial(self.record_requests, run_id)

    def selection_requests(self, run_id: str) -> int | None:
        """The requests of run ``run_id`` in the request ledger (its sum; 0 when it holds
        none), or None for a store without the ledger (written by an earlier version and
        opened read-only).

        Parameters
        ----------
        run_id : str
            The run's id.

        Returns
        -------
        int or None
        """
        try:
            row = self.connection.execute(
                "SELECT coalesce(sum(delta), 0) FROM selection_requests WHERE run_id = ?",
                [run_id],
            ).fetchone()
        except duckdb.CatalogException:  # an older store, opened read-only: no ledger
            return None
        return int(row[0]) if row is not None else 0

    def _close_ledger_cursor(self) -> None:
        """Close the ledger's cursor (idempotent; the caller holds ``_ledger_lock``; before
        the connection: an open cursor keeps the file open)."""
        if getattr(self, "_ledger_cursor", None) is not None:
            self._ledger_cursor.close()  # type: ignore[union-attr]
            self._ledger_cursor = None

    def redact_selection_config(self, run_id: str) -> list[str]:
        """Mask, in the store, a key that an earlier version stored in the ``config`` record of
        run ``run_id`` (an lm-eval ``model_args`` with ``api_key=...``, a ``base_url`` with a
        password: today's version refuses them); every read masks it already.

        Parameters
        ----------
        run_id : str
            The run's id (no run of that id: nothing is masked).

        Returns
        -------
        list of str
            The fields masked (e.g. ``models[0].model_args``); empty when none held a key.

        Raises
        ------
        InputError
            When a field holds a key and the store is opened ``read_only`` (naming its file;
            nothing is written). With nothing to mask, nothing is written: an empty list.
        """
        rows = self.connection.execute(
            "SELECT config FROM selection_runs WHERE run_id = ?", [run_id]
        ).fetchall()
        if not rows:
            return []
        masked, fields = mask_run_config(_raw_config(rows[0][0]))
        if fields:
            self.set_selection_config(run_id, masked)
        return fields

    def selection_run(self, run_id: str) -> dict[str, Any] | None:
        """The ``selection_runs`` row of ``run_id`` (``config`` parsed, a key an earlier
        version stored in it masked as ``***``), or None if absent.

        Parameters
        ----------
        run_id : str
            The run's id.

        Returns
        -------
        dict of str to Any or None
            Keys ``run_id``, ``created_at``, ``config``, ``package_version`` and ``status``;
            None when the store has no such run.
        """
        rows = self.connection.execute(
            "SELECT run_id, created_at, config, package_version, status FROM selection_runs "
            "WHERE run_id = ?",
            [run_id],
        ).fetchall()
        if not rows:
            return None
        rid, created, config, version, status = rows[0]
        return {
            "run_id": rid,
            "created_at": created,
            "config": _parse_config(config),
            "package_version": version,
            "status": status,
        }

    def selection_runs(self) -> list[dict[str, Any]]:
        """Every ``selection_runs`` row, oldest first (``config`` parsed), as
        :meth:`selection_run` gives one.

        Returns
        -------
        list of dict of str to Any
            One record per run, with the keys of :meth:`selection_run`'s.
        """
        rows = self.connection.execute(
            "SELECT run_id, created_at, config, package_version, status FROM selection_runs "
            "ORDER BY created_at"
        ).fetchall()
        return [
            {
                "run_id": rid,
                "created_at": created,
                "config": _parse_config(config),
                "package_version": version,
                "status": status,
            }
            for rid, created, config, version, status in rows
        ]

    def selection_observations(self, run_id: str) -> pd.DataFrame:
        """Observations of a run in ``seq`` order (``note`` None throughout for a store
        written before notes, opened read-only).

        Parameters
        ----------
        run_id : str
            The run's id.

        Returns
        -------
        DataFrame
            One row per observation, with the columns of the ``selection_observations`` table
            (empty for a run with none).
        """
        frame = self.connection.execute(
            "SELECT * FROM selection_observations WHERE run_id = ? ORDER BY seq", [run_id]
        ).df()
        if "note" not in frame.columns:
            frame["note"] = pd.Series([None] * len(frame), index=frame.index, dtype=object)
        return frame

    def selection_decisions(self, run_id: str) -> list[dict[str, Any]]:
        """Decision payloads of a run in round order (each with its ``round``).

        Parameters
        ----------
        run_id : str
            The run's id.

        Returns
        -------
        list of dict of str to Any
            Each stored payload with its ``round`` added.
        """
        rows = self.connection.execute(
            "SELECT round, payload FROM selection_decisions WHERE run_id = ? ORDER BY round",
            [run_id],
        ).fetchall()
        return [{"round": r, **json.loads(p)} for r, p in rows]

    @writes("the run's scored cells to its responses table")
    def publish_selection(
        self,
        run_id: str,
        *,
        benchmark: str,
        metric: str,
        source_models: dict[str, str] | None = None,
    ) -> int:
        """Copy a selection run's scored cells into ``responses`` (idempotent).

        Source ``live:<run_id>``, filter ``none``, trial 0; failed cells (NULL score) get no
        row (missing, never 0).

        Parameters
        ----------
        run_id : str
        benchmark, metric : str
            Benchmark and metric of the copied rows.
        source_models : dict, optional
            Store model id -> the model id the endpoint serves (``source_model``).

        Returns
        -------
        int
            Rows offered to :meth:`ingest` (already present rows are not duplicated).

        Raises
        ------
        InputError
            On a store opened ``read_only`` (naming its file; nothing is written).
        """
        rows = self.selection_observations(run_id)
        rows = rows[rows["score"].notna()]
        if rows.empty:
            return 0
        served = source_models or {}
        frame = pd.DataFrame(
            {
                "model": rows["model"].astype(TEXT).to_numpy(),
                "benchmark": benchmark,
                "item": rows["item"].astype(TEXT).to_numpy(),
                "score": rows["score"].astype(float).to_numpy(),
                "metric": metric,
                "filter": "none",
                "trial": 0,
                "source": f"live:{run_id}",
                "source_file": f"{self.path}#selection_observations/{run_id}",
                "run_timestamp": pd.to_datetime(rows["observed_at"]).to_numpy(),
                "item_hash": None,
                "source_model": [served.get(str(m), str(m)) for m in rows["model"]],
            }
        )
        self.ingest(frame)
        return len(frame)


def _parse_config(text: str | None) -> dict[str, Any]:
    """A stored run configuration (JSON), a key an earlier version stored in it masked
    (:func:`~latentbench.io._secrets.mask_run_config`); ``{}`` when empty or unreadable."""
    return mask_run_config(_raw_config(text))[0]


def _raw_config(text: str | None) -> dict[str, Any]:
    """A stored run configuration (JSON) as stored; ``{}`` when empty or unreadable."""
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
