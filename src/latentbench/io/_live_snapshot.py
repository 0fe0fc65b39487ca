"""A live run's progress snapshot: a small JSON file beside its store, for other terminals.

A live run (``select live``, ``estimate --live``) holds its DuckDB store open for writing
until it stops, and DuckDB lets no other process open it meanwhile. So that a teammate can
see how far it is, the run writes ``STORE.progress.json`` at its start, after each batch and
when it ends (:class:`SnapshotWriter`), each time replaced whole
(:func:`~latentbench.io._outputs.replace_whole`): a reader never sees half of it. It is a
view, never the truth: the store is. ``latentbench ls --store STORE`` shows it while the run
holds the store (:func:`read_snapshot`), ``report`` and ``export`` add its one-line summary
(:func:`snapshot_summary`) to their refusal. When the run ends the file is kept with the
final status (``final: true``).

Fields: ``format`` (``latentbench-live-progress/1``), ``run_id``, ``kind`` (``select``,
``estimate`` or ``compare``), ``status`` (``running``, then the run's final status: ``done``,
``capped``, ``interrupted``, ``failed``, ``waiting``), ``final``, ``pid`` (the writer), ``store``,
``started``/``updated`` (UTC ISO), ``batch`` (batches this session, the initial ones
included), ``spent`` (cells evaluated for the run, all sessions), ``planned``, ``left``
(cells the run may still reveal), ``spend_cap`` and ``requests_left`` (paid requests, all
sessions; None without a cap), and ``answer``: for ``select`` the current ``best`` with
``estimate``, ``lower``, ``upper`` and ``certified`` (None while the run goes on: known when
it ends); for ``estimate`` a list of ``models``, each with ``model``, ``score``, ``lower``,
``upper`` and ``n_evaluated``.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from latentbench.io._outputs import process_exists, replace_whole

__all__ = [
    "SNAPSHOT_FORMAT",
    "SnapshotWriter",
    "read_snapshot",
    "snapshot_path",
    "snapshot_summary",
]

SNAPSHOT_FORMAT = "latentbench-live-progress/1"
"""The ``format`` field of a snapshot."""


def snapshot_path(store: str | os.PathLike[str]) -> Path:
    """``STORE.progress.json``: where the live run of ``store`` writes its snapshot.

    Parameters
    ----------
    store : path-like
        The store file.

    Returns
    -------
    Path
    """
    return Path(os.fspath(store) + ".progress.json")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SnapshotWriter:
    """Writes the snapshot of one live run session (nothing for an in-memory store).

    Parameters
    ----------
    store : path-like
        The store's path (``":memory:"``: nothing is written).
    run_id : str
    kind : {"select", "estimate", "compare"}
    spend_cap : int, optional
        The run's cap on paid requests (all sessions).

    Notes
    -----
    A snapshot that cannot be written (a read-only folder, a full disk) is said once as a
    :class:`~latentbench.exceptions.DataWarning` and never stops the run: the store holds
    every cell.
    """

    def __init__(
        self,
        store: str | os.PathLike[str],
        run_id: str,
        kind: str,
        spend_cap: int | None = None,
    ) -> None:
        self.path = None if os.fspath(store) == ":memory:" else snapshot_path(store)
        self.state: dict[str, Any] = {
            "format": SNAPSHOT_FORMAT,
            "run_id": run_id,
            "kind": kind,
            "status": "running",
            "final": False,
            "pid": os.getpid(),
            "store": os.fspath(store),
            "started": _now(),
            "updated": None,
            "batch": 0,
            "spent": None,
            "planned": None,
            "left": None,
            "spend_cap": spend_cap,
            "requests_left": None,
            "answer": None,
        }
        self._warned = False

    def __repr__(self) -> str:
        state = self.state
        return (
            f"SnapshotWriter({os.fspath(self.path) if self.path else ':memory:'!r}, "
            f"run_id={state['run_id']!r}, kind={state['kind']!r}, status={state['status']!r}, "
            f"batch={state['batch']})"
        )

    def update(self, **fields: Any) -> None:
        """Set ``fields`` and write the snapshot whole.

        Parameters
        ----------
        **fields : Any
            Snapshot keys and their new values (JSON-serialisable). A ``requests`` count is not
            stored: with a ``spend_cap`` it sets ``requests_left`` (the cap less it, at least 0).

        Notes
        -----
        A snapshot that cannot be written gives one :class:`~latentbench.exceptions.DataWarning`
        per writer; the run goes on. An in-memory store (``":memory:"``) writes no file.
        """
        self.state.update(fields)
        if self.state["spend_cap"] is not None and "requests" in fields:
            self.state["requests_left"] = max(self.state["spend_cap"] - fields["requests"], 0)
        self.state.pop("requests", None)
        self.state["updated"] = _now()
        if self.path is None:
            return
        text = json.dumps(self.state, indent=1, allow_nan=False, default=_plain) + "\n"
        try:
            replace_whole(self.path, text, encoding="utf-8")
        except (OSError, ValueError) as exc:
            if not self._warned:
                from latentbench.exceptions import DataWarning

                self._warned = True
                warnings.warn(
                    f"{self.path}: the live run's progress snapshot could not be written "
                    f"({getattr(exc, 'strerror', None) or exc}); the run goes on, every cell "
                    "is in the store",
                    DataWarning,
                    stacklevel=2,
                )

    def finish(self, status: str, **fields: Any) -> None:
        """Write the final snapshot: the run's ``status``, ``final: true``.

        Parameters
        ----------
        status : str
            The run's final status (e.g. ``done``, ``failed``, ``interrupted``).
        **fields : Any
            Further snapshot keys to set, as in :meth:`update`.
        """
        self.update(status=status, final=True, **fields)

    @contextmanager
    def until_end(self) -> Iterator[None]:
        """A block whose exception (a second Ctrl-C, a store that cannot be written) ends
        the snapshot as the store's run does: ``interrupted`` or ``failed``, final.

        Yields
        ------
        None
            The exception is raised again after the final snapshot is written.
        """
        try:
            yield
        except BaseException as exc:
            self.finish("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
            raise


def _plain(value: Any) -> Any:
    """JSON for numpy scalars (``float(np.float64)``); NaN becomes None (``allow_nan``)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return None if number != number else number


def _process_exists(pid: int) -> bool:
    """Whether process ``pid`` exists (a snapshot whose writer is gone is stale). Not asked
    on Windows: False there (only the store's holder, as DuckDB names it, vouches for a
    snapshot)."""
    return bool(process_exists(pid))


def read_snapshot(
    store: str | os.PathLike[str], holder: int | None = None
) -> dict[str, Any] | None:
    """The snapshot of ``store``'s live run, or None where there is none (or it is not one).

    Adds ``age_s`` (seconds since ``updated``) and ``live``: True only when the snapshot is
    not final and its writer (``pid``) still runs, and is ``holder`` where that is given (the
    process holding the store, as DuckDB names it); a snapshot left by a run that was killed
    (its PID gone), or by another process than the one holding the store now, has ``live``
    False and ``status`` as it was written.

    Parameters
    ----------
    store : path-like
        The store file (the snapshot is :func:`snapshot_path`'s).
    holder : int, optional
        PID of the process holding the store now.

    Returns
    -------
    dict or None
        The snapshot's fields plus ``age_s`` and ``live``.
    """
    path = snapshot_path(store)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        return None
    age = None
    try:
        updated = datetime.fromisoformat(str(data.get("updated")).replace("Z", "+00:00"))
        age = max((datetime.now(UTC) - updated).total_seconds(), 0.0)
    except ValueError:
        pass
    pid = data.get("pid")
    data["age_s"] = age
    data["live"] = bool(
        not data.get("final")
        and isinstance(pid, int)
        and (pid == holder if holder is not None else _process_exists(pid))
    )
    return data


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "age unknown"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _counted(n: Any, word: str) -> str:
    """``n`` and ``word`` in the number it takes (``1 cell``, ``2 cells``); a value that is
    not a count (a snapshot edited or cut) as it is, with the plural."""
    return f"{n} {word if n == 1 and not isinstance(n, bool) else word + 's'}"


def _interval(answer: dict[str, Any], value: str) -> str:
    lower, upper = answer.get("lower"), answer.get("upper")
    text = f"{answer[value]:.3f}" if answer.get(value) is not None else "?"
    if lower is not None and upper is not None:
        text += f" [{lower:.3f}, {upper:.3f}]"
    return text


def snapshot_summary(snapshot: dict[str, Any]) -> str:
    """One line: ``run R (select live, running; PID 123): batch 7, spent 56 cells, 44 left;
    best m2 0.710 [0.600, 0.800]; snapshot 3 s ago``; a stale one says so.

    Parameters
    ----------
    snapshot : dict
        As :func:`read_snapshot` returns it.

    Returns
    -------
    str
    """
    kind = {"select": "select live", "compare": "compare --live"}.get(
        str(snapshot.get("kind")), "estimate --live"
    )
    state = str(snapshot.get("status"))
    if not snapshot.get("live") and not snapshot.get("final"):
        state += ", stale: its process is gone, the store says how far it got"
    parts = [
        f"run {snapshot.get('run_id')} ({kind}, {state}; PID {snapshot.get('pid')}): "
        f"batch {snapshot.get('batch')}, spent {_counted(snapshot.get('spent'), 'cell')}"
        + (f", {snapshot['left']} left" if snapshot.get("left") is not None else "")
    ]
    if snapshot.get("requests_left") is not None:
        parts.append(f"{_counted(snapshot['requests_left'], 'paid request')} left of the cap")
    answer = snapshot.get("answer") or {}
    if snapshot.get("kind") == "select" and answer.get("best") is not None:
        certified = answer.get("certified")
        word = "" if certified is None else ", certified" if certified else ", not certified"
        parts.append(f"best {answer['best']} {_interval(answer, 'estimate')}{word}")
    pair = answer.get("comparison") if isinstance(answer, dict) else None
    if isinstance(pair, dict):
        parts.append(
            f"{pair.get('model_a')} - {pair.get('model_b')} {_interval(pair, 'difference')} on "
            f"{_counted(pair.get('n_evaluated'), 'item')}"
        )
    for row in answer.get("models", []) if isinstance(answer, dict) else []:
        evaluated = _counted(row.get("n_evaluated"), "item")
        parts.append(f"{row.get('model')} {_interval(row, 'score')} on {evaluated}")
    parts.append(f"snapshot {_age(snapshot.get('age_s'))}")
    return "; ".join(parts)
