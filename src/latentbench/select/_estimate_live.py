"""``estimate`` against a live endpoint: the oracles, store and resume of ``select live``.

The new model's answers come from the configuration's oracle (OpenAI-compatible endpoint,
lm-eval bridge, ...) through :class:`~latentbench.select.live.DurableOracle`: every answer is
committed to the store before it is used, a stored answer is never requested again, the
``spend_cap`` of ``[run]`` bounds the paid requests, and every round's item is recorded as a
decision. The draws depend on the seed, the model and the answers only, so running the same
command (or call) again after a crash replays the stored answers for free and continues where
it stopped (a changed configuration or calibration is refused: the replayed round would ask
another item).
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import check_event, check_seed, user_stacklevel
from latentbench._progress import ProgressCallback, notify
from latentbench.exceptions import DataWarning, InputError, LiveStop
from latentbench.io import SnapshotWriter
from latentbench.select._estimate import (
    _DEFAULT_BUDGET,
    _DEFAULT_FLOOR,
    EstimateResult,
    Proposal,
    Proxy,
    _check_options,
    _finish,
    _near_models,
    _rng,
    _Said,
    _weighted,
    floor_note,
    precision_budget,
    proxy_note,
    run_sequential,
)
from latentbench.select._estimate_calibration import load_calibration
from latentbench.select._estimate_design import SequentialEstimate, check_design_options
from latentbench.select._estimate_weights import ItemWeights, read_weights

if TYPE_CHECKING:
    from collections.abc import Callable

    from latentbench.io.store import Store
    from latentbench.select._estimate_calibration import Calibration
    from latentbench.select.live import LiveConfig

__all__ = ["estimate_live", "stored_estimates"]

_RESUME = "run the same command (or call) again to resume"
"""How a live run stopped early is resumed, in its notes: the same ``latentbench`` command,
or the same Python call (:func:`estimate_live`, :func:`~latentbench.select.compare_live`)."""

_TARGET_ROUND = -(10**12)
"""Round of the decision that fixes a run's target half-width (far below the sessions'
results at -1, -2, ...)."""


def _session_target(
    store: Store, run_id: str, target: float | None, kind: str | None, notes: list[str]
) -> tuple[float | None, str | None]:
    """The half-width the run's confidence sequence is sized for, and what it was sized for
    (``precision`` or ``budget``), fixed by its first session.

    A resumed session may ask another precision or budget after seeing answers; the bets on
    the rounds already played must not depend on it, so the first session's value (recorded
    as a ``phase = "target"`` decision) is used for the whole run. A run started before
    targets were recorded (item decisions but no target) keeps none; one recorded before
    budgets sized the sequence was sized for its precision, or for nothing. A run an earlier
    version left unsized where this session would size it (for its budget or precision) is
    continued as it was (its bets are played), and a line appended to ``notes`` says so: its
    interval is valid but not the one a new run prints, which must not pass silently.
    """
    decisions = store.selection_decisions(run_id)
    for d in decisions:
        if d.get("phase") == "target":
            value = d.get("target")
            if value is None:
                # "sized_for" is recorded since budgets size the sequence: a target of None
                # without it is an earlier version's run without a precision
                if "sized_for" not in d and target is not None:
                    notes.append(_unsized_note(run_id, store))
                return None, None
            return float(value), str(d.get("sized_for") or "precision")
    if any(int(d["round"]) >= 0 for d in decisions):
        if target is not None:
            notes.append(_unsized_note(run_id, store))
        return None, None
    decision = {"phase": "target", "target": target, "sized_for": kind}
    store.add_decision(run_id, _TARGET_ROUND, decision)
    return target, kind


def _unsized_note(run_id: str, store: Store) -> str:
    """The warning of a run resumed as an earlier version started it: without a target."""
    return (
        f"run {run_id!r} in {store.path} was started by an earlier latentbench version that "
        "did not size the interval for a budget or precision (its first session recorded no "
        "target); it is continued as it was, since its bets were placed: the interval is "
        "valid but not the one a new run prints (usually wider; options.sized_for is null); "
        "another seed or store starts a new run, sized for its first session's budget or "
        "precision"
    )


def estimate_live(
    calibration: Any,
    config: LiveConfig | str | os.PathLike[str],
    store: Store | str | os.PathLike[str],
    *,
    model: str | None = None,
    budget: int | None = _DEFAULT_BUDGET,
    precision: float | None = None,
    delta: float = 0.05,
    seed: int = 0,
    proposal: Proposal = "residual",
    floor: float = _DEFAULT_FLOOR,
    rank: int = 1,
    proxy: Proxy = "irt",
    stop_event: threading.Event | None = None,
    weights: Any = None,
    progress: ProgressCallback | None = None,
) -> EstimateResult:
    """Estimate a model of a live configuration; re-run the same call to resume.

    Parameters
    ----------
    calibration : path, IRTResult, ResponseMatrix or Calibration
        As in :func:`~latentbench.select.estimate`.
    config : LiveConfig or path
        A ``select live`` configuration (``[[models]]``, ``[items]``, ``[oracle]``,
        ``[scorer]``, ``[run]``: its ``spend_cap`` and ``run_id`` apply (``on_error`` must be
        ``"stop"``, the default: a failed cell scored 0 would void the interval); its
        policy, budget and proxy are not used: a warning names those it sets).
    store : Store or path
        The DuckDB store; the run is recorded as a selection run whose id ends in
        ``-estimate-<hash>``: its observations, one decision per item (rounds 0, 1, ...) and
        the result of each completed session as a decision at round -1, -2, ...
        (``phase = "final"``, ``estimate`` = :meth:`EstimateResult.to_dict`), that of a
        session that stopped early (capped, interrupted, failed) with ``phase = "stopped"``
        and its ``status`` (what a report draws when no session completed), and the
        half-width the interval is sized for (the first session's ``precision``, else the
        half-width anticipated at the end of its ``budget``: a resumed session with another
        ``precision`` or ``budget`` stops at its own but keeps the run's bets) as a
        ``phase = "target"`` decision (with ``sized_for``: ``precision`` or ``budget``).
    model : str, optional
        The configuration's model to estimate (required when it lists several).
    budget, precision, delta, seed, proposal, floor, rank, proxy
        As in :func:`~latentbench.select.estimate` (the run's id covers the proxy that ran
        when it is not ``irt``, so a run started before the ridge proxy existed resumes with
        ``proxy="irt"``). A ``precision`` with no budget given runs until it is reached:
        ``[run] spend_cap`` bounds what it pays.
    stop_event : threading.Event, optional
        Set it to stop after the item in flight.
    weights : path, DataFrame, Series or mapping, optional
        Estimate a weighted score, as :func:`~latentbench.select.estimate`'s ``weights``
        (over the configuration's items of positive weight, their weights renormalised when
        it holds only some). The run's id covers the weights' hash (when not all equal): a
        session with other weights is another run, which reuses the stored answers instead
        of paying for them again, as a changed calibration does.
    progress : callable, optional
        ``progress("items asked", done, total)`` at the start and after each item taken in
        (``total``: the items planned, the budget or every item; None for a precision with
        no budget, which takes as many as it needs), once the run's snapshot is written
        (a :data:`~latentbench._progress.ProgressCallback`).

    Returns
    -------
    EstimateResult
        ``stopped`` is ``precision``, ``budget`` or ``exhausted``, or why the live run stopped
        early (``capped``, ``interrupted``, ``failed``): the interval is anytime-valid, so a
        run stopped early still reports a valid (wider) interval.
    """
    check_event(stop_event)
    seed = check_seed(seed, "seed")
    from latentbench.io.store import Store
    from latentbench.select.live import DurableOracle
    from latentbench.select.live._durable import unstored_note
    from latentbench.select.live._run import (
        _open_run,
        empty_answers_note,
        no_text_note,
        resolve_run_id,
        reusable_answers,
        reused_note,
        store_of_call,
    )

    _check_options(budget, precision, delta)
    budget = precision_budget(budget, precision)
    check_design_options(floor, proposal, "dr", proxy)  # before the store or the calibration
    cfg = _estimate_config(config)
    if not isinstance(store, Store):
        with store_of_call(store) as db:  # removed if it is new and the call refused
            return estimate_live(
                calibration,
                cfg,
                db,
                model=model,
                budget=budget,
                precision=precision,
                delta=delta,
                seed=seed,
                proposal=proposal,
                floor=floor,
                rank=rank,
                proxy=proxy,
                stop_event=stop_event,
                weights=weights,
                progress=progress,
            )
    cal = load_calibration(calibration, rank=rank)
    checked = None if weights is None else read_weights(cal, weights)
    names = cfg.model_ids
    model = _chosen_model(cfg, model)
    items = cfg.load_items()
    item_ids = [str(it["id"]) for it in items]
    columns, population, notes = _calibrated_columns(cfg, cal, item_ids)
    w_pop = model_scores = None
    if checked is not None:  # the configuration's items of positive weight
        notes.clear()  # "the score is the mean over" the configured items: said below instead
        kept = population[checked.weights[population] > 0]
        columns = columns[checked.weights[population] > 0]
        population, w_pop, model_scores = _weighted(
            cal, checked, model, kept, notes, "the configuration holds"
        )
    seq = SequentialEstimate(
        cal, population, delta=delta, floor=floor, proposal=proposal, proxy=proxy,
        weights=w_pop,
    )  # fmt: skip
    notes.extend(proxy_note(cal, proxy, seq.proxy_used))
    notes.extend(floor_note(proposal, floor))
    unused = unused_settings_note(cfg)
    if unused:
        notes.append(unused)
    if budget is None and cfg.run.spend_cap is None:  # said before anything is asked
        unbounded = (
            f"precision={precision:g} with no budget and no [run] spend_cap: the run asks "
            f"items until its interval is that narrow, up to all {len(columns):,} of the "
            "configuration; give budget= or set [run] spend_cap to bound what it asks"
        )
        warnings.warn(unbounded, DataWarning, stacklevel=user_stacklevel())
        notes.append(_Said(unbounded))
    key = _run_key(seq, model, cal.hash, seed, proposal, floor, delta, checked)
    run_id = resolve_run_id(store, cfg, f"-estimate-{key}")
    inner = cfg.build_oracle(items)
    said = [_Said(note) for note in getattr(inner, "notes", None) or ()]  # warned when built
    _open_run(store, cfg, run_id, task="estimate", notes=said)
    notes.extend(said)  # recorded with the result (not warned again)
    wanted: float | None
    kind: str | None
    if precision is not None:
        wanted, kind = precision, "precision"
    else:  # sized for the budget's end (None when it reveals every item)
        wanted = None if budget is None else seq.budget_target(budget)
        kind = None if wanted is None else "budget"
    target, kind = _session_target(store, run_id, wanted, kind, notes)
    seq.set_target(target)
    reused_notes: dict[tuple[str, str], str] = {}
    origins: dict[tuple[str, str], tuple[str, str]] = {}  # the run each reused answer's from
    durable = DurableOracle(
        store,
        run_id,
        inner,
        names,
        item_ids,
        on_error=cfg.run.on_error,
        spend_cap=cfg.run.spend_cap,
        planned=budget or len(columns),
        stop_event=stop_event,
        reuse=reusable_answers(store, cfg, run_id, [model], notes=reused_notes, origins=origins),
        reuse_notes=reused_notes,
    )
    unstored = unstored_note(durable)
    if unstored:  # a killed session's requests in flight: counted, said with the result
        notes.append(unstored)
    row = names.index(model)
    planned = budget or len(columns)
    # a precision alone takes as many items as it needs: no total (a bar at 3 of 12,032)
    total = None if budget is None and precision is not None else planned
    snapshot = SnapshotWriter(store.path, run_id, "estimate", spend_cap=cfg.run.spend_cap)

    def watched() -> None:  # the snapshot beside the store: the estimate so far
        lower, upper = seq.interval
        n = len(seq.order)
        snapshot.update(
            batch=n, spent=durable.paid_total, planned=planned, left=max(planned - n, 0),
            requests=durable.requests_total,
            answer={"models": [{"model": model, "score": float(seq.score), "lower": float(lower),
                                "upper": float(upper), "n_evaluated": n}]},
        )  # fmt: skip
        notify(progress, "items asked", n, total)

    def answer(j: int) -> float:
        # on_error is "stop" (checked above): a failed cell raises LiveStop, never a score
        return float(durable.evaluate(row, np.array([columns[j]]))[0])

    watched()
    with snapshot.until_end():
        stopped, status, probs = _play(
            seq, answer, inner, store, run_id, notes, _rng(seed, model), budget, precision,
            watched,
        )  # fmt: skip
    notes.extend(line for line in (empty_answers_note(inner), no_text_note(inner)) if line)
    options = {
        "seed": int(seed),
        "delta": float(delta),
        "budget": budget,
        "precision": precision,
        "target": seq.cs.target,
        "sized_for": kind,
        "proposal": proposal,
        "floor": float(floor),
        "proxy": seq.proxy_used,
        "design": "adaptive",
        "live": {
            "run_id": run_id,
            "store": str(store.path),
            "n_paid": durable.n_paid,
            "n_replayed": durable.n_replayed,
            "n_reused": durable.n_reused,
        },
    }
    if checked is not None:
        options["weights"] = checked.record(population, "in the configuration")
    if durable.n_reused:
        notes.append(reused_note(store.path, durable.reused, origins))
    result = _finish(cal, seq, model, stopped, probs, options, notes, model_scores)
    _record_session(store, run_id, status, result)
    durable.record_unstored_said()  # said with the result: not by a later session again
    snapshot.finish(status, spent=durable.paid_total, requests=durable.requests_total,
                    answer={"models": [{"model": model, "score": float(result.score),
                                        "lower": float(result.lower),
                                        "upper": float(result.upper),
                                        "n_evaluated": int(result.n_evaluated)}]})  # fmt: skip
    return result


def _estimate_config(
    config: LiveConfig | str | os.PathLike[str], command: str = "estimate --live"
) -> LiveConfig:
    """The configuration, refused unless its ``on_error`` is ``"stop"`` (before anything is
    asked or stored); ``command`` names the command in the error."""
    from latentbench.select.live import LiveConfig

    cfg = config if isinstance(config, LiveConfig) else LiveConfig.from_toml(config)
    if cfg.run.on_error != "stop":
        raise InputError(
            f"{cfg.source}: [run] on_error = {cfg.run.on_error!r} does not apply to {command}"
            ": a failed cell scored 0 is not the model's answer, and the score's "
            "interval would not hold its true score; expected on_error = 'stop' (the "
            "default: a failed cell stops the run; the same command (or call) then asks it "
            "again)"
        )
    if cfg.history is not None and not cfg.history.is_file():  # hashed into the run's key
        raise InputError(
            f"{cfg.source}: [proxy] history = {str(cfg.history)!r}: no such file; {command} "
            "does not use it (the calibration stands in for a history), but it keys the run "
            "(a resume must match it): restore the file, or drop [proxy] history from the "
            "configuration (another run, which reuses the answers stored for this one)"
        )
    return cfg


#: ``[run]`` keys that only ``select live`` reads, with what ``estimate --live`` and
#: ``compare --live`` use instead
_SELECT_ONLY_RUN = {
    "budget": "budget=",
    "seed": "seed=",
    "batch_size": "its own design",
    "init_batch": "its own design",
    "policy": "its own design",
    "stop": "precision= and budget=",
    "epsilon": "precision= and budget=",
    # the benchmark select live copies its scores under: these copy none into responses
    "benchmark": "the run's own tables in place of the responses table",
}


def unused_settings_note(cfg: LiveConfig, command: str = "estimate --live") -> str | None:
    """The line naming what ``cfg`` sets that only ``select live`` reads (None when nothing).

    ``[run]`` options of the selection (``budget``, ``seed``, ``batch_size``, ``init_batch``,
    ``policy``, ``stop``, ``epsilon``, and ``benchmark``: they copy no score into the
    ``responses`` table) that differ from their defaults, a ``[policy]`` table
    and a ``[proxy]`` table (its ``history``: the calibration stands in for it) are not used
    by ``estimate --live`` and ``compare --live``, which take these from their own options:
    a configuration written for ``select live`` would otherwise run with settings its author
    did not choose, and nothing would say so. They still key the run (its id, and what a
    resume must match), which the line says too.
    """
    from latentbench.select.live._options import RunOptions

    default = RunOptions()
    changed = [key for key in _SELECT_ONLY_RUN if getattr(cfg.run, key) != getattr(default, key)]
    named = ", ".join(f"{key} = {getattr(cfg.run, key)!r}" for key in changed)
    parts = [f"[run] {named}"] if changed else []
    instead = list(dict.fromkeys(_SELECT_ONLY_RUN[key] for key in changed))
    if cfg.policy_options:
        parts.append(f"[policy] {', '.join(sorted(cfg.policy_options))}")
        instead.append("its own design")
    proxy = [*(["history"] if cfg.history is not None else []), *sorted(cfg.proxy_options)]
    if proxy:
        parts.append(f"[proxy] {', '.join(proxy)}")
        instead.append("the calibration in place of a history")
    if not parts:
        return None
    if command.startswith("compare"):  # compare stops on its margin, not a precision
        instead = [use.replace("precision=", "margin=") for use in instead]
    keyed = changed != ["benchmark"] or len(parts) > 1  # the identity lacks only benchmark
    return (
        f"{cfg.source}: {'; '.join(parts)}: select live's settings, not used by {command} "
        f"(it uses {', '.join(dict.fromkeys(instead))})" + (f"; {_STILL_KEYED}" if keyed else "")
    )


_STILL_KEYED = (
    "they still key the run: changing one later starts another run (its answers reused), or "
    "is refused with [run] run_id"
)
"""What the select-only settings still do: the run's id and the configuration a resume must
match are the configuration's identity, theirs included (a run.toml told they were not used,
then edited, was refused: 'started with a different configuration (changed: budget: 96 ->
200)', or started afresh under another id)."""


def _chosen_model(cfg: LiveConfig, model: str | None) -> str:
    """The configuration's model to estimate: ``model``, or its only one."""
    names = cfg.model_ids
    if model is None:
        if len(names) != 1:
            raise InputError(
                f"{cfg.source}: {len(names)} models; name the one to estimate with model=NAME "
                f"(one of {_listed(names)})"
            )
        model = names[0]
    if model not in names:
        raise InputError(
            f"{cfg.source}: no model {model!r} (models: {_listed(names)})"
            f"{_near_models(model, dict.fromkeys(names))}"
        )
    return model


def _calibrated_columns(
    cfg: LiveConfig, cal: Calibration, item_ids: list[str], target: str = "score"
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The positions in ``item_ids`` of the calibrated items, their positions in the
    calibration, and the note that says when some calibrated items are not configured (the
    ``target``, the score or the difference, is then over the configured ones)."""
    pos = cal.positions(item_ids)
    columns = np.flatnonzero(pos >= 0)
    if columns.size == 0:
        slashed = ["/" in str(i) for i in (item_ids[0], cal.item_ids[0])]
        hint = (
            " (the calibration's ids are a group's TASK/DOC_ID, as `ingest --group` names "
            "them: [oracle] group = 'NAME' with items TASK/DOC_ID, not task)"
            if slashed == [False, True] and cfg.oracle.kind == "lm-eval"
            else ""
        )
        raise InputError(
            f"{cfg.source}: none of the {len(item_ids):,} items (e.g. {item_ids[0]!r}) is in "
            f"the calibration; expected its item ids (e.g. {cal.item_ids[0]!r}){hint}"
        )
    notes: list[str] = []
    if columns.size < cal.n_items:
        notes.append(
            f"the configuration has {columns.size:,} of the {cal.n_items:,} calibrated "
            f"items; the {target} is the mean over those"
        )
    return columns, pos[columns], notes


def _run_key(
    seq: SequentialEstimate,
    model: str,
    cal_hash: str,
    seed: int,
    proposal: Proposal,
    floor: float,
    delta: float,
    weights: ItemWeights | None = None,
) -> str:
    """The hash that ends the run's id: the model, calibration and options the draws depend
    on (and the proxy, item order and weights, when not the first ones: weights that are
    all equal draw as none)."""
    tag = "" if seq.proxy_used == "irt" else f"|{seq.proxy_used}"
    if weights is not None and not weights.equal:
        tag += f"|weights={weights.hash}"
    if not np.array_equal(seq.draw_order, np.arange(seq.n)):
        # items listed out of their canonical order: draws made before they followed it
        # (2026-12-05) were in the file's order, so such a run is another run, not a resume
        # that would replay other items (its stored answers are reused, never paid again)
        tag += "|canonical"
    key = hashlib.sha256(f"{model}|{cal_hash}|{seed}|{proposal}|{floor}|{delta}{tag}".encode())
    return key.hexdigest()[:10]


def _play(
    seq: SequentialEstimate,
    answer: Callable[[int], float],
    inner: Any,
    store: Store,
    run_id: str,
    notes: list[str],
    rng: np.random.Generator,
    budget: int | None,
    precision: float | None,
    observed: Callable[[], None] | None = None,
) -> tuple[str, str, list[float]]:
    """Run the sequential estimate on the live answers: why it stopped, the run's status
    (``done``, or why the live run stopped early, noted in ``notes``) and the draws'
    probabilities. Any other exception marks the run interrupted or failed and propagates."""
    from latentbench.select.live._run import abort_oracle

    probs: list[float] = []
    status = "done"
    try:
        stopped, probs = run_sequential(
            seq, answer, rng, budget=budget, precision=precision, probs=probs,
            observed=observed,
        )  # fmt: skip
    except LiveStop as exc:
        stopped = status = exc.status
        notes.append(f"live run stopped early ({exc}); {_RESUME}")
    except BaseException as exc:  # a second Ctrl-C, a failed store write: nothing more asked
        abort_oracle(inner)
        interrupted = isinstance(exc, KeyboardInterrupt)  # as select live says it
        store.set_selection_status(run_id, "interrupted" if interrupted else "failed")
        raise
    finally:
        close = getattr(inner, "close", None)
        if callable(close):
            close()
    return stopped, status, probs


_STOPPED_ROUND = -(10**9)
"""Rounds of the results of sessions that stopped early (``phase = "stopped"``): -10^9,
-10^9 - 1, ..., apart from the completed sessions' (-1, -2, ...) and the target's."""


def _record_session(store: Store, run_id: str, status: str, result: EstimateResult) -> None:
    """Store the session's result and the run's status (:func:`record_live_session`, under
    ``estimate``)."""
    record_live_session(store, run_id, status, "estimate", result.to_dict())


def record_live_session(
    store: Store, run_id: str, status: str, key: str, result: dict[str, Any]
) -> None:
    """Store a live session's result (``result``, a record's dictionary, under ``key``:
    ``estimate`` or ``compare``) and the run's status: a completed session's as a decision
    with ``phase = "final"`` (rounds -1, -2, ...), one that stopped early (capped: the spend
    cap; interrupted; failed) as one with ``phase = "stopped"`` and its ``status`` (rounds
    from :data:`_STOPPED_ROUND` down), ``after_finals`` the completed sessions before it: its
    interval is valid (anytime), and a page of a run that never completed draws it.

    Parameters
    ----------
    store : Store
        The run's store.
    run_id : str
        The run.
    status : str
        ``done`` for a completed session, else why it stopped.
    key : str
        The field the result is stored under (``estimate``, ``compare``).
    result : dict
        The session's result, JSON-ready.
    """
    decisions = store.selection_decisions(run_id)
    finals = [d for d in decisions if d.get("phase") == "final"]
    if status == "done":
        store.add_decision(run_id, -1 - len(finals), {"phase": "final", key: result})
    else:
        stopped = [d for d in decisions if d.get("phase") == "stopped"]
        store.add_decision(
            run_id,
            _STOPPED_ROUND - len(stopped),
            {"phase": "stopped", "status": status, "after_finals": len(finals), key: result},
        )
    store.set_selection_status(run_id, status)


def _listed(names: list[str], shown: int = 12) -> str:
    """``a, b, c`` (every name up to ``shown``, then ``and N more``)."""
    listed = ", ".join(names[:shown])
    return listed + (f", and {len(names) - shown} more" if len(names) > shown else "")


def stored_estimates(
    store: Store | str | os.PathLike[str], run_id: str | None = None
) -> list[tuple[str, EstimateResult | None, str]]:
    """The live estimates a store holds (``estimate --live``), oldest run first: each run's
    id, its result and its status. The result is its last completed session's, or that of a
    later session that stopped early (capped by the spend cap, interrupted, failed) with more
    answers (its ``stopped`` says why; its interval is valid at every step); None when no
    session stored one (a run killed, or stored before stopped sessions were recorded).

    Parameters
    ----------
    store : Store or path-like
        An open store, or the path of its ``.duckdb`` file (opened read-only).
    run_id : str, optional
        Only this run (it must be a live estimate).

    Returns
    -------
    list of (str, EstimateResult or None, str)

    Raises
    ------
    InputError
        No such run, a run that is not a live estimate, or a store without live estimates.
    """
    from latentbench.io.store import Store

    if not isinstance(store, Store):
        with Store(store, read_only=True) as db:
            return stored_estimates(db, run_id)
    return stored_live_results(store, run_id, "estimate", EstimateResult.from_dict)


_LIVE_KINDS = {
    "select": ("a selection", "select live", "selections"),
    "estimate": ("a live estimate", "estimate --live", "live estimates"),
    "compare": ("a live comparison", "compare --live", "live comparisons"),
}
"""What each task of a stored run is called: a run, the command that writes it, its runs."""


def stored_live_results(
    store: Store, run_id: str | None, task: str, from_dict: Callable[[dict[str, Any]], Any]
) -> list[tuple[str, Any, str]]:
    """The results of the live runs of ``task`` (``estimate``, ``compare``) a store holds,
    oldest run first (:func:`stored_estimates`, ``stored_comparisons``): each run's id, its
    result (``from_dict`` of the stored record) and its status. The result is its last
    completed session's, or that of a later session that stopped early with more answers;
    None when no session stored one.

    Parameters
    ----------
    store : Store
        An open store.
    run_id : str or None
        Only this run (it must be of ``task``).
    task : str
        ``estimate`` or ``compare``: the runs read, and the field their results are under.
    from_dict : callable
        The result class's reader of a stored record.

    Returns
    -------
    list of (str, result or None, str)

    Raises
    ------
    InputError
        No such run, a run of another task, a store without a run of ``task``, or a stored
        record that cannot be read.
    """
    from latentbench.select.live._run import run_task

    runs = store.selection_runs()
    where = str(store.path)
    one, command, many = _LIVE_KINDS[task]
    if run_id is not None:
        chosen = [r for r in runs if r["run_id"] == run_id]
        if not chosen:
            names = ", ".join(str(r["run_id"]) for r in runs) or "none"
            raise InputError(f"{where}: no run {run_id!r}; stored runs: {names}")
        theirs = run_task(chosen[0])
        if theirs != task:
            what, writer, _ = _LIVE_KINDS.get(theirs, (f"a {theirs} run", theirs, ""))
            raise InputError(f"{where}: run {run_id!r} is {what} (latentbench {writer}), not {one}")
        runs = chosen
    runs = [r for r in runs if run_task(r) == task]
    if not runs:
        raise InputError(f"{where}: no {many} stored; `latentbench {command}` writes them")
    out: list[tuple[str, Any, str]] = []
    for run in runs:
        decisions = store.selection_decisions(run["run_id"])
        finals = [d for d in decisions if d.get("phase") == "final"]
        latest = min(finals, key=lambda d: int(d["round"])) if finals else None  # -1, -2, ...
        result = _stored_result(latest, where, str(run["run_id"]), task, from_dict)
        stops = [d for d in decisions if d.get("phase") == "stopped"]
        stop = min(stops, key=lambda d: int(d["round"])) if stops else None  # the latest
        if stop is not None and stop.get("after_finals") == len(finals):
            # the latest session stopped early after every completed one: its result, when
            # it holds more answers than the last completed session's
            early = _stored_result(stop, where, str(run["run_id"]), task, from_dict)
            if early is not None and (result is None or early.n_evaluated > result.n_evaluated):
                result = early
        out.append((str(run["run_id"]), result, str(run["status"])))
    return out


def _stored_result(
    decision: dict[str, Any] | None,
    where: str,
    run_id: str,
    key: str,
    from_dict: Callable[[dict[str, Any]], Any],
) -> Any:
    """The result of a stored session's decision, its record under ``key`` read by
    ``from_dict`` (None without one)."""
    if decision is None or not isinstance(decision.get(key), dict):
        return None
    try:
        return from_dict(decision[key])
    except InputError as exc:
        raise InputError(f"{where}: run {run_id!r}: {exc}") from None
