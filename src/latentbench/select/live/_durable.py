"""Durability: every cell is stored before the loop sees it, and never requested twice."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from latentbench._checks import bounded_score
from latentbench.exceptions import (
    CellsFailed,
    EndpointUnreachable,
    InputError,
    RunInterrupted,
    SpendCapReached,
)
from latentbench.select.oracles import CellResult, Oracle, StreamingOracle
from latentbench.select.oracles._protocol import CAPPED, now_utc

if TYPE_CHECKING:
    from latentbench.io.store import Store
    from latentbench.select._base import Policy

__all__ = ["DurableOracle", "LiveProgress", "release_ledger", "run_requests", "unstored_note"]


@dataclass
class LiveProgress:
    """What the loop did in one batch, for progress displays.

    Attributes
    ----------
    call : int
        Batch number (0-based; the first ``n_models`` are the initial batch).
    phase : {"init", "loop"}
    model : str
    n_new, n_replayed, n_errors : int
        Cells of this batch evaluated now, answered from the store, failed.
    paid_total : int
        Evaluations made for the run so far, earlier sessions included.
    replayed_total : int
        Cells answered from the store in this session.
    revealed : int
        Cells the loop has seen (initial batch included).
    planned : int
        ``n_models * init_batch + budget``.
    stored_before : int
        Cells stored by earlier sessions that this one replays (answered, or failed with
        ``on_error = "zero"``): a resumed run has revealed at least these.
    leader : str or None
        Current recommendation (after the previous round), with ``estimate``, ``lower``,
        ``upper`` (None before the loop starts or without intervals). ``estimate`` is in
        [0, 1] and inside ``[lower, upper]``; ``estimate_unclipped`` is the policy's own value
        when it differs (a doubly robust mean can leave [0, 1]), else None.
    """

    call: int
    phase: str
    model: str
    n_new: int
    n_replayed: int
    n_errors: int
    paid_total: int
    replayed_total: int
    revealed: int
    planned: int
    leader: str | None = None
    estimate: float | None = None
    lower: float | None = None
    upper: float | None = None
    estimate_unclipped: float | None = None
    stored_before: int = 0

    @property
    def run_revealed(self) -> int:
        """Cells the run has revealed, all sessions (a resumed session replays the stored
        ones first: ``revealed`` alone counted this session's, beside ``paid_total`` of all)."""
        return max(self.revealed, self.stored_before)

    @property
    def budget_left(self) -> int:
        """Cells the run may still reveal (all sessions)."""
        return max(self.planned - self.run_revealed, 0)


def _leader(policy: Policy | None, model_ids: Sequence[str], started: bool) -> dict[str, Any]:
    """The current recommendation and its interval (empty before the loop starts)."""
    if policy is None or not started:
        return {}
    est = policy.estimates()
    best = int(np.argmax(est))
    # as a SelectionResult reports it: in the score range, inside its (widened) interval
    value = min(max(float(est[best]), 0.0), 1.0)
    out: dict[str, Any] = {"leader": model_ids[best], "estimate": value}
    if value != float(est[best]):  # the policy's own value, kept labelled in the decision
        out["estimate_unclipped"] = float(est[best])
    bounds = policy.intervals()
    if bounds is not None:
        out["lower"] = min(float(bounds[0][best]), value)
        out["upper"] = max(float(bounds[1][best]), value)
    return out


_NAN = "the oracle returned NaN (a failed evaluation, no score); expected a score in [0, 1]"
"""The error of a cell an oracle answered with NaN and no error of its own."""


def _in_range(value: float) -> tuple[float, str | None]:
    """An oracle's answer as stored, and the error of a score outside [0, 1] (every interval
    assumes bounded scores), else None. A rounding past 0 or 1 (``sum([0.05] * 20)`` is
    1.0000000000000002: :func:`~latentbench._checks.bounded_score`) is the bound.

    Parameters
    ----------
    value : float
        An oracle's answer without an error of its own (NaN is handled by :data:`_NAN`).

    Returns
    -------
    (float, str or None)
        The score (NaN when refused) and the error naming the value and the range; None
        for NaN or a score in [0, 1].
    """
    score = bounded_score(value)
    if score is not None:
        return score, None
    return math.nan, (
        f"the oracle returned {value!r}; expected a score in [0, 1] (rescale a percentage "
        "or choose a 0-1 metric)"
    )


def run_requests(
    store: Store, run_id: str, stored: pd.DataFrame | None = None
) -> tuple[int, int | None]:
    """The paid requests of run ``run_id``: those its stored cells hold (``attempts``; a row
    written before attempts were stored counts one) and the sum of its request ledger (None
    for a store without one: an older store opened read-only).

    Parameters
    ----------
    store : latentbench.io.store.Store
    run_id : str
    stored : DataFrame, optional
        The run's ``selection_observations`` when already read.

    Returns
    -------
    (int, int or None)
    """
    if stored is None:
        stored = store.selection_observations(run_id)
    attempts = stored["attempts"] if "attempts" in stored.columns else pd.Series(1, stored.index)
    return int(attempts.fillna(1).sum()), store.selection_requests(run_id)


_UNSTORED_SAID = "requests_unstored_said"
"""The key, in a run's ``config``, of the unstored requests a session has said."""


def _unstored_said(store: Store, run_id: str) -> int:
    """The unstored requests of run ``run_id`` an earlier session said (0: none)."""
    run = store.selection_run(run_id)
    config = run.get("config") if run is not None else None
    said = config.get(_UNSTORED_SAID) if isinstance(config, dict) else None
    return said if isinstance(said, int) and not isinstance(said, bool) and said > 0 else 0


def release_ledger(oracle: Any) -> None:
    """Unset the request ledger that :class:`DurableOracle` gave ``oracle`` (one with
    ``set_ledger``), when its run ends: an oracle passed to
    :func:`~latentbench.select.live.run_live` and used afterwards recorded its requests in the
    run's ledger (a resumed run then counted them as the run's, and said an earlier session
    had sent them), or failed on each once the store was closed. Its cells still in flight
    keep the ledger they started with. The run's request allowance (``limit_requests``) is
    lifted too: after a capped run, such an oracle answered every later cell with NaN.

    Parameters
    ----------
    oracle : object
        The run's oracle (nothing is done for one without ``set_ledger`` or
        ``limit_requests``).
    """
    ledger = getattr(oracle, "set_ledger", None)
    if callable(ledger):
        ledger(None)
    limit = getattr(oracle, "limit_requests", None)
    if callable(limit):
        limit(None)


def unstored_note(durable: DurableOracle) -> str:
    """The line saying how many requests an earlier session sent without storing their
    cells (the process was killed, or the session stopped at once by a second Ctrl-C or an
    error, such as a store that could not be written: either cuts the requests in flight):
    counted against ``spend_cap``; empty if none, or if an earlier session said them already
    (:meth:`DurableOracle.record_unstored_said`).

    Parameters
    ----------
    durable : DurableOracle

    Returns
    -------
    str
    """
    n = durable.requests_unstored
    if n <= 0:
        return ""
    return (
        f"{n} request(s) sent by an earlier session were not stored with an answer (the "
        "process was killed, or stopped at once by a second Ctrl-C or an error): counted "
        "against spend_cap"
    )


class DurableOracle:
    """Wrap an oracle so that every cell is stored before use and never requested twice.

    Parameters
    ----------
    store : latentbench.io.store.Store
    run_id : str
        A ``selection_runs`` row (created by the caller).
    inner : Oracle or StreamingOracle
    model_ids, item_ids : sequence of str
        Store ids of the rows and columns.
    policy : Policy, optional
        Read (never changed) for the leader shown in progress and decisions.
    on_error : {"stop", "zero"}, default "stop"
        ``stop``: after a batch with failed cells, raise :class:`CellsFailed` (the failures
        are stored; a resumed run requests those cells again). ``zero``: hand them to the
        loop as NaN (the loop scores them 0) and replay them as such on resume.
    spend_cap : int, optional
        Largest number of paid requests for the run (every HTTP request, retries included;
        one per cell for oracles that do not count requests), earlier sessions included. A
        batch with more new cells than the requests left raises :class:`SpendCapReached`
        before any request; an oracle with ``limit_requests`` (the chat-completions one) is
        held to the requests left, and a batch it cannot finish raises it after storing
        what was paid. An oracle with ``set_ledger`` (the chat-completions one) records each
        request in the store before sending it
        (:meth:`~latentbench.io.store.Store.request_ledger`), and the run's count is the
        larger of that ledger and the stored cells' ``attempts``: the requests in flight
        when a session was killed count too.
    planned : int
        Cells the run plans to reveal (progress only).
    stop_event : threading.Event, optional
        When set, the next batch raises :class:`RunInterrupted` (the current one finishes
        and is committed).
    progress : callable, optional
        Called with a :class:`LiveProgress` after each batch.
    reuse : mapping, optional
        ``(model, item) -> score`` paid for by other runs with the same answers to give
        (:func:`~latentbench.select.live._run.reusable_answers`): a cell found there is
        committed to this run with 0 requests instead of being asked again.
    reuse_notes : mapping, optional
        ``(model, item) -> note`` of reused answers that carry one (empty text, content
        null): stored with the cell here too.

    Raises
    ------
    InputError
        For ``on_error`` other than ``"stop"`` or ``"zero"``, or ids that do not match the inner
        shape of the oracle it wraps.

    Attributes
    ----------
    n_paid : int
        Cells evaluated by ``inner`` in this session.
    n_replayed : int
        Cells answered from the store in this session (this run's, or reused from another
        run's: ``n_reused`` of them).
    n_calls : int
        Batches seen.
    requests_total : int
        Paid requests for the run, earlier sessions included (what ``spend_cap`` bounds): the
        stored cells' ``attempts``, or the store's request ledger when it holds more (the
        requests in flight when an earlier session was killed).
    requests_unstored : int
        Requests an earlier session recorded in the ledger before sending them but never
        stored with a cell (the process was killed or crashed with them in flight), less
        those an earlier session already said (:meth:`record_unstored_said`);
        :func:`unstored_note` says them. All are counted in ``requests_total``.
    reused : list of (str, str)
        The cells ``(model, item)`` taken from ``reuse`` in this session (``n_reused`` of
        them), in the order asked.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        inner: Oracle | StreamingOracle,
        model_ids: Sequence[str],
        item_ids: Sequence[str],
        *,
        policy: Policy | None = None,
        on_error: str = "stop",
        spend_cap: int | None = None,
        planned: int = 0,
        stop_event: threading.Event | None = None,
        progress: Callable[[LiveProgress], None] | None = None,
        reuse: Mapping[tuple[str, str], float] | None = None,
        reuse_notes: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        if on_error not in ("stop", "zero"):
            raise InputError(f"on_error={on_error!r}; expected 'stop' or 'zero'")
        if len(model_ids) != inner.n_models or len(item_ids) != inner.n_items:
            raise InputError(
                f"{len(model_ids)} model ids and {len(item_ids)} item ids for an oracle of shape "
                f"({inner.n_models}, {inner.n_items})"
            )
        self.store, self.run_id, self.inner = store, run_id, inner
        self.model_ids = [str(m) for m in model_ids]
        self.item_ids = [str(i) for i in item_ids]
        self.n_models, self.n_items = inner.n_models, inner.n_items
        self.policy, self.on_error, self.spend_cap = policy, on_error, spend_cap
        self.planned, self.stop_event, self.progress = planned, stop_event, progress
        self.n_paid = self.n_replayed = self.n_calls = self.revealed = self.n_reused = 0
        self.reuse = dict(reuse or {})
        self.reused: list[tuple[str, str]] = []
        self.reuse_notes = reuse_notes if reuse_notes is not None else {}
        self.n_errors_replayed = 0
        self._known: dict[tuple[str, str], tuple[float, str | None]] = {}
        stored = store.selection_observations(run_id)
        requests_stored, sent = run_requests(store, run_id, stored)
        ledger = getattr(inner, "set_ledger", None)
        if callable(ledger):  # each HTTP request recorded before it is sent
            if sent is not None and sent < requests_stored:  # sessions before the ledger:
                store.record_requests(run_id, requests_stored - sent)  # held from now on
                sent = requests_stored
            ledger(store.request_ledger(run_id))
        unstored = max((sent or 0) - requests_stored, 0)
        self.requests_total = requests_stored + unstored  # all counted against the cap
        # said by the session that found them: a later one says those unstored since only
        self.requests_unstored = max(unstored - _unstored_said(store, run_id), 0)
        self._unstored = unstored
        for model, item, score, error in zip(
            stored["model"], stored["item"], stored["score"], stored["error"], strict=True
        ):
            if isinstance(error, str) and error.startswith(CAPPED):
                continue  # stored for its requests; not an answer: asked again
            value = float(score) if score is not None and not pd.isna(score) else math.nan
            prev = self._known.get((model, item))
            if prev is None or math.isnan(prev[0]):  # a score wins over an earlier failure
                self._known[(model, item)] = (value, None if pd.isna(error) else str(error))
        self.paid_total = len(stored)
        self.stored_before = sum(
            1 for value, _ in self._known.values() if not math.isnan(value) or on_error == "zero"
        )
        self._seq = int(stored["seq"].max()) + 1 if len(stored) else 0
        self._decisions = {d["round"]: d for d in store.selection_decisions(run_id)}
        self.errors: list[tuple[str, str, str]] = []

    def record_unstored_said(self) -> None:
        """Record, in the run's ``config`` (``requests_unstored_said``), that this session
        said the line of :func:`unstored_note`: a later session says only the requests left
        unstored since (another kill), not these again; all stay counted against
        ``spend_cap``. Nothing is written when there was nothing to say.
        """
        if self.requests_unstored <= 0:
            return
        run = self.store.selection_run(self.run_id)
        if run is not None and isinstance(run.get("config"), dict):
            record = {**run["config"], _UNSTORED_SAID: self._unstored}
            self.store.set_selection_config(self.run_id, record)

    # -------------------------------------------------------------- store writes
    def __repr__(self) -> str:
        """``DurableOracle(run_id='r1', inner=MatrixOracle(...), paid=48, replayed=0)``."""
        return (
            f"DurableOracle(run_id={self.run_id!r}, inner={self.inner!r}, "
            f"paid={self.n_paid:,}, replayed={self.n_replayed:,})"
        )

    def _commit(self, call: int, model: str, cells: list[tuple[str, CellResult]]) -> None:
        n = len(cells)
        attempts = [int(c.attempts) for _, c in cells]
        # columns of n values: a cell streamed alone is one cheap insert
        rows: dict[str, list[Any]] = {
            "seq": list(range(self._seq, self._seq + n)),
            "round": [call] * n,
            "model": [model] * n,
            "item": [item for item, _ in cells],
            "score": [None if math.isnan(c.score) else c.score for _, c in cells],
            "error": [c.error for _, c in cells],
            "requested_at": [c.requested_at for _, c in cells],
            "observed_at": [c.observed_at for _, c in cells],
            "attempts": list(attempts),
            "note": [c.note for _, c in cells],
        }
        self.store.add_observations(self.run_id, rows)
        self._seq += n
        self.paid_total += n
        self.requests_total += sum(attempts)
        for item, cell in cells:
            if not cell.capped:
                self._known[(model, item)] = (cell.score, cell.error)

    def _decide(self, call: int, model: str, ids: list[str]) -> None:
        payload = {
            "phase": "init" if call < self.n_models else "loop",
            "model": model,
            "items": ids,
            **_leader(self.policy, self.model_ids, call >= self.n_models),
        }
        prev = self._decisions.get(call)
        if prev is None:
            self.store.add_decision(self.run_id, call, payload)
            self._decisions[call] = {"round": call, **payload}
        elif prev.get("model") != model or prev.get("items") != ids:
            raise InputError(
                f"run {self.run_id!r}: round {call} asks {model!r} for {len(ids)} items but the "
                f"store recorded {prev.get('model')!r} with {len(prev.get('items') or [])} "
                "(different items); the configuration, seed or a data file changed since the "
                "run started; use a new store or run_id"
            )

    def record_final(self, payload: dict[str, Any]) -> None:
        """Record the run's final decision after the last batch (once; not on a replay).

        Parameters
        ----------
        payload : dict of str to Any
            The decision, stored as JSON at the round after the last batch.
        """
        if self.n_calls not in self._decisions:
            self.store.add_decision(self.run_id, self.n_calls, payload)
            self._decisions[self.n_calls] = {"round": self.n_calls, **payload}

    # -------------------------------------------------------------- the oracle
    def evaluate(self, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Scores of a batch: stored cells replayed, new ones evaluated and committed first.

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        item_indices : ndarray of int of shape (batch,)
            The items' columns, in ``range(n_items)``.

        Returns
        -------
        ndarray of float of shape (batch,)
            Scores in [0, 1]; a failed cell is 0 (``on_error = "zero"``: the user's choice;
            with ``"stop"`` a failure raises instead).

        Raises
        ------
        RunInterrupted, SpendCapReached, CellsFailed, PlanPending
            See the class description; everything evaluated before is committed.
        """
        if self.stop_event is not None and self.stop_event.is_set():
            raise RunInterrupted(
                f"stopped before batch {self.n_calls}; {self.paid_total} evaluations stored"
            )
        call = self.n_calls
        model = self.model_ids[model_index]
        items = np.asarray(item_indices, dtype=np.int64).ravel()
        ids = [self.item_ids[k] for k in items]
        self._decide(call, model, ids)
        scores = np.full(len(items), np.nan)
        todo = self._replay_known(model, ids, scores)
        todo = self._store_reused(call, model, ids, todo, scores)
        n_replayed = len(items) - len(todo)
        failures: list[tuple[str, str, str]] = []
        if todo:
            self._limit_spend(len(todo))
            sub = items[todo]
            stream = getattr(self.inner, "evaluate_cells", None)
            if stream is not None:
                self._evaluate_streamed(stream, call, model_index, sub, todo, ids, scores,
                                        failures)  # fmt: skip
            else:
                self._evaluate_plain(call, model_index, sub, todo, ids, scores, failures)
        self._account(call, model, len(items), len(todo), n_replayed, failures)
        if failures and self.on_error == "stop":
            raise CellsFailed(failures)
        # on_error = "zero": the user chose to score failed cells 0; do it here, explicitly
        return np.where(np.isnan(scores), 0.0, scores)

    def _replay_known(self, model: str, ids: list[str], scores: np.ndarray) -> list[int]:
        """Fill ``scores`` with the stored answers (a stored failure too with
        ``on_error="zero"``); return the positions still to evaluate."""
        todo: list[int] = []
        for pos, item in enumerate(ids):
            hit = self._known.get((model, item))
            if hit is not None and (not math.isnan(hit[0]) or self.on_error == "zero"):
                scores[pos] = hit[0]
                self.n_errors_replayed += int(math.isnan(hit[0]))
            else:
                todo.append(pos)
        return todo

    def _store_reused(
        self, call: int, model: str, ids: list[str], todo: list[int], scores: np.ndarray
    ) -> list[int]:
        """Store and use the cells of ``todo`` that another run paid for with the same
        answers (not asked again); return the positions still to evaluate."""
        found = [pos for pos in todo if (model, ids[pos]) in self.reuse]
        if not found:
            return todo
        stamp = now_utc()
        reused = [self.reuse[(model, ids[pos])] for pos in found]
        notes = [self.reuse_notes.get((model, ids[pos])) for pos in found]
        self._commit(call, model, [(ids[pos], CellResult(pos, v, None, 0, stamp, stamp,
                                                         note=note))
                                   for pos, v, note in zip(found, reused, notes,
                                                           strict=True)])  # fmt: skip
        scores[found] = reused
        self.n_reused += len(found)
        self.reused.extend((model, ids[pos]) for pos in found)
        return [pos for pos in todo if (model, ids[pos]) not in self.reuse]

    def _limit_spend(self, n_todo: int) -> None:
        """Refuse a batch of ``n_todo`` new cells that the spend cap cannot pay for; tell the
        oracle (``limit_requests``) how many requests are left."""
        limit = getattr(self.inner, "limit_requests", None)
        if self.spend_cap is None:
            return
        left = self.spend_cap - self.requests_total
        if n_todo > left:
            raise SpendCapReached(
                f"the next batch needs {n_todo} or more requests; "
                f"{self.requests_total} of spend_cap={self.spend_cap} are used"
            )
        if callable(limit):
            limit(left)

    def _evaluate_streamed(
        self,
        stream: Callable[[int, np.ndarray], Any],
        call: int,
        model_index: int,
        sub: np.ndarray,
        todo: list[int],
        ids: list[str],
        scores: np.ndarray,
        failures: list[tuple[str, str, str]],
    ) -> None:
        """Evaluate cell by cell, each committed as it arrives (before use); failures are
        appended to ``failures``. An unsent cell ends the run, a capped one too (after the
        batch)."""
        model = self.model_ids[model_index]
        n_capped = 0
        unreached: list[tuple[str, str, str]] = []
        for cell in stream(model_index, sub):
            pos = todo[cell.position]
            if cell.unsent:  # nothing reached a server: no answer, nothing paid
                unreached.append((model, ids[pos], cell.error or "not sent"))
                continue
            if cell.capped:
                n_capped += 1
                if cell.attempts > 0:  # paid requests are stored, never forgotten
                    self._commit(call, model, [(ids[pos], cell)])
                continue
            if cell.error is None:  # refused at the boundary: stored as a failure, never used
                score, bad = _in_range(cell.score)
                if score != cell.score or bad is not None:
                    cell = replace(cell, score=score, error=bad)
            self._commit(call, model, [(ids[pos], cell)])  # stored before use
            scores[pos] = cell.score
            if cell.error is not None or math.isnan(cell.score):
                failures.append((model, ids[pos], cell.error or _NAN))
        if unreached:  # a dead endpoint ends the run (spend_cap never counts it)
            self.errors.extend(failures + unreached)
            raise EndpointUnreachable(unreached)
        if n_capped:
            raise SpendCapReached(
                f"{n_capped} cell(s) of the batch were not answered: "
                f"{self.requests_total} of spend_cap={self.spend_cap} requests are used"
            )

    def _evaluate_plain(
        self,
        call: int,
        model_index: int,
        sub: np.ndarray,
        todo: list[int],
        ids: list[str],
        scores: np.ndarray,
        failures: list[tuple[str, str, str]],
    ) -> None:
        """Evaluate the batch in one call of a plain oracle, committed as one before use; NaN
        answers are appended to ``failures``."""
        model = self.model_ids[model_index]
        started = now_utc()
        plain = cast(Oracle, self.inner)
        values = np.array(plain.evaluate(model_index, sub), dtype=np.float64)  # a copy
        done = now_utc()
        cells = []
        for k, pos in enumerate(todo):
            value = float(values[k])
            error = _NAN if math.isnan(value) else None
            if error is None:  # a score outside [0, 1] is refused, stored as a failure
                value, error = _in_range(value)
                values[k] = value
            cells.append((ids[pos], CellResult(k, value, error, 1, started, done)))
            if error:
                failures.append((model, ids[pos], error))
        self._commit(call, model, cells)
        scores[todo] = values

    def _account(
        self,
        call: int,
        model: str,
        n_items: int,
        n_new: int,
        n_replayed: int,
        failures: list[tuple[str, str, str]],
    ) -> None:
        """Count the finished batch and report it to ``progress``."""
        self.n_calls += 1
        self.n_paid += n_new
        self.n_replayed += n_replayed
        self.revealed += n_items
        self.errors.extend(failures)
        if self.progress is not None:
            self.progress(
                LiveProgress(
                    call=call,
                    phase="init" if call < self.n_models else "loop",
                    model=model,
                    n_new=n_new,
                    n_replayed=n_replayed,
                    n_errors=len(failures),
                    paid_total=self.paid_total,
                    replayed_total=self.n_replayed,
                    revealed=self.revealed,
                    planned=self.planned,
                    stored_before=self.stored_before,
                    **_leader(self.policy, self.model_ids, call >= self.n_models),
                )
            )
