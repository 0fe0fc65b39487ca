"""What the selection loop asks of a source of scores: the oracle protocols, one cell's result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "EMPTY_NOTE",
    "NO_TEXT_NOTE",
    "BatchFromCells",
    "CellResult",
    "Oracle",
    "StreamingOracle",
    "now_utc",
]


CAPPED = "spend cap reached"
"""Start of the error of a cell the spend cap stopped (stored for its requests, not an answer)."""

EMPTY_NOTE = "empty answer"
"""Start of the note of a cell whose answer text was empty or blank (scored by the scorer)."""

NO_TEXT_NOTE = "no text (content null"
"""Start of the note of a cell answered without text (``content`` null: a refusal, a tool
call, the token limit spent on reasoning): a paid answer, scored 0 and not asked again."""


def now_utc() -> datetime:
    """The current UTC time without a time zone (the store's convention)."""
    return datetime.now(UTC).replace(tzinfo=None)


@runtime_checkable
class Oracle(Protocol):
    """Anything that scores a model on a batch of items.

    ``n_models`` and ``n_items`` give the size of the candidate pool and of the benchmark.
    """

    n_models: int
    n_items: int

    def evaluate(self, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Score model ``model_index`` on ``item_indices``.

        Parameters
        ----------
        model_index : int
            Row of the candidate pool, in ``0..n_models-1``.
        item_indices : ndarray of int, shape (b,)
            Columns of the benchmark, distinct.

        Returns
        -------
        ndarray of float, shape (b,)
            Scores in [0, 1]. A NaN (failed evaluation) stops the run with an error: an
            oracle must retry, stop, or score failures explicitly.
        """
        ...


@dataclass
class CellResult:
    """Outcome of one (model, item) evaluation.

    Attributes
    ----------
    position : int
        Index of the item in the batch handed to ``evaluate_cells``.
    score : float
        Score in [0, 1]; NaN when the evaluation failed.
    error : str or None
        Why it failed (after retries), without secrets.
    attempts : int
        Requests made for this cell that reached a server (what a provider may bill: a
        refused connection or an unknown host is not counted).
    requested_at, observed_at : datetime
        UTC time of the first request and of the final answer.
    capped : bool
        The spend cap stopped this cell before it was answered (``attempts`` requests were
        made for it): it is no answer, and a resumed run asks for it again.
    note : str or None
        A remark on a scored answer that a reader of the scores should see (it starts with
        :data:`EMPTY_NOTE` or :data:`NO_TEXT_NOTE`); stored with the cell.
    unsent : bool
        No attempt reached a server (connection refused, unknown host): nothing was paid, the
        cell is no answer (never scored, even with ``on_error = "zero"``) and it ends the run.
    """

    position: int
    score: float
    error: str | None = None
    attempts: int = 1
    requested_at: datetime = field(default_factory=now_utc)
    observed_at: datetime = field(default_factory=now_utc)
    capped: bool = False
    note: str | None = None
    unsent: bool = False


@runtime_checkable
class StreamingOracle(Protocol):
    """An oracle that yields each cell as soon as it is known (so each can be committed).

    :class:`~latentbench.select.live.DurableOracle` uses ``evaluate_cells`` when present and
    ``evaluate`` otherwise.
    """

    n_models: int
    n_items: int

    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Yield one :class:`CellResult` per item, in completion order.

        Parameters
        ----------
        model_index : int
            Row of the candidate pool, in ``0..n_models-1``.
        item_indices : ndarray of int, shape (k,)
            Columns to score.

        Yields
        ------
        CellResult
            One per item, as each completes (its ``position`` in ``item_indices``, its score
            or NaN with the error).
        """
        ...


class BatchFromCells:
    """Mixin of a :class:`StreamingOracle`: its plain :class:`Oracle` ``evaluate``, the cells
    its ``evaluate_cells`` yields gathered into one array in batch order (one place for what
    the chat-completions and callable oracles each wrote out)."""

    def evaluate(self: StreamingOracle, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Scores of a batch (NaN for failures); see :class:`~latentbench.select.Oracle`.

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        item_indices : ndarray of int of shape (batch,)
            The items' columns, in ``range(n_items)``.

        Returns
        -------
        ndarray of float of shape (batch,)
            Scores in [0, 1]; NaN for a failed cell.
        """
        out = np.full(len(item_indices), np.nan)
        for cell in self.evaluate_cells(model_index, item_indices):
            out[cell.position] = cell.score
        return out
