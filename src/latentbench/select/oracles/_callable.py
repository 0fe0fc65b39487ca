"""Oracle (b): a Python function scores a model on a batch of items."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from latentbench._checks import bounded_score
from latentbench._repr import short_ids, short_value
from latentbench.exceptions import InputError
from latentbench.select.oracles._openai import redact_environment
from latentbench.select.oracles._protocol import BatchFromCells, CellResult, now_utc

__all__ = ["CallableOracle"]


class CallableOracle(BatchFromCells):
    """Oracle (b): a Python function ``score(model, items) -> scores``.

    Parameters
    ----------
    score : callable
        ``score(model_id: str, item_ids: list[str]) -> sequence of float`` (NaN = failure).
    model_ids, item_ids : sequence of str

    Raises
    ------
    InputError
        When ``score`` is not callable.

    Notes
    -----
    An exception, a result of the wrong length or a score outside [0, 1] is recorded as an
    error for the cells concerned (never as a score). The error text has the values of the
    environment variables named like ``*KEY*``, ``*TOKEN*``, ``*SECRET*`` or ``*PASSWORD*``
    redacted (``***``), as the lm-eval bridge's harness output has; a value shorter than 8
    characters (``MAX_TOKENS=512``) is a setting, left as it is.
    """

    def __init__(
        self,
        score: Callable[[str, list[str]], Sequence[float]],
        model_ids: Sequence[str],
        item_ids: Sequence[str],
    ) -> None:
        if not callable(score):
            raise InputError(f"score={score!r}; expected a callable score(model, items)")
        self.score = score
        self.model_ids = [str(m) for m in model_ids]
        self.item_ids = [str(i) for i in item_ids]
        self.n_models, self.n_items = len(self.model_ids), len(self.item_ids)
        self.n_calls = 0

    def __repr__(self) -> str:
        """``CallableOracle(score=my_scorer, models=[a, b], n_items=100, n_calls=0)``."""
        return (
            f"CallableOracle(score={short_value(self.score)}, models={short_ids(self.model_ids)}, "
            f"n_items={self.n_items:,}, n_calls={self.n_calls:,})"
        )

    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Call the function once for the batch; yield one result per item.

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        item_indices : ndarray of int of shape (batch,)
            The items' columns, in ``range(n_items)``.

        Yields
        ------
        CellResult
            One per item, in batch order; a failed call, text, a wrong shape, NaN or a score
            outside [0, 1] gives NaN with its ``error``.
        """
        items = [self.item_ids[int(k)] for k in item_indices]
        started = now_utc()
        self.n_calls += len(items)
        error: str | None = None
        values = np.full(len(items), np.nan)
        try:
            returned = self.score(self.model_ids[model_index], items)
            given = np.asarray(returned, dtype=object).ravel()
            texts = [v for v in given if isinstance(v, str | bytes)]
            if texts:  # "1" would read as 1.0: a score is a number, never text
                error = f"score() returned text ({texts[0]!r}); expected numbers in [0, 1]"
            else:
                raw = np.asarray(returned, dtype=np.float64)
                if raw.shape != (len(items),):
                    error = f"score() returned shape {raw.shape}; expected ({len(items)},)"
                else:
                    values = raw
        except (Exception, SystemExit) as exc:  # user code: any failure is a per-cell error
            # (SystemExit too: sys.exit() in a scorer ended the run with status 3, "capped")
            error = f"score() raised {type(exc).__name__}: {exc}"
        if error is not None:  # user code quoting its API key (a URL's ?key=, an echo)
            error = redact_environment(error)
        done = now_utc()
        for k, value in enumerate(values):
            cell_error = error
            bounded = bounded_score(float(value))  # a rounding past 0 or 1 is the bound
            if cell_error is None and bounded is None:
                cell_error, value = f"score {float(value)!r} outside [0, 1]", np.nan
            elif cell_error is None and np.isnan(value):
                cell_error = "score() returned NaN; expected a score in [0, 1] (NaN: failed)"
            elif cell_error is None:
                value = bounded
            yield CellResult(k, float(value), cell_error, 1, started, done)
