"""``compare`` against a live endpoint: two models of a ``select live`` configuration, paired.

Each round draws one item as :func:`~latentbench.select.compare` does (the same design,
estimator, confidence sequence and stops) and asks both models that item through the
configuration's oracle wrapped in :class:`~latentbench.select.live.DurableOracle`, as
:func:`~latentbench.select.estimate_live` does: every answer is committed to the store before
it is used, a stored answer is never requested again, the ``spend_cap`` of ``[run]`` bounds
the paid requests, and every question (a model and its item) is recorded as a decision. The
draws depend on the seed, the two names and the answers only, so running the same command (or
call) again after a crash replays the stored answers for free and continues where it stopped.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import check_event, check_seed
from latentbench._progress import ProgressCallback, notify
from latentbench.exceptions import InputError, LiveStop
from latentbench.io import SnapshotWriter
from latentbench.select._estimate import _check_options, _rng, _Said
from latentbench.select._estimate_calibration import load_calibration
from latentbench.select._estimate_compare import (
    _DEFAULT_COMPARE_BUDGET,
    CompareResult,
    _check_margin,
    _compare_result,
    _paired,
    _PairedRun,
    _weighted_pair,
)
from latentbench.select._estimate_design import check_design_options
from latentbench.select._estimate_live import (
    _RESUME,
    _calibrated_columns,
    _chosen_model,
    _estimate_config,
    _listed,
    record_live_session,
    stored_live_results,
    unused_settings_note,
)
from latentbench.select._estimate_weights import ItemWeights, read_weights

if TYPE_CHECKING:
    from latentbench.io.store import Store
    from latentbench.select._estimate import Proxy
    from latentbench.select.live import LiveConfig

__all__ = ["compare_live", "stored_comparisons"]


def compare_live(
    calibration: Any,
    config: LiveConfig | str | os.PathLike[str],
    store: Store | str | os.PathLike[str],
    *,
    model_a: str | None = None,
    model_b: str | None = None,
    budget: int | None = _DEFAULT_COMPARE_BUDGET,
    margin: float | None = None,
    delta: float = 0.05,
    seed: int = 0,
    floor: float = 0.5,
    rank: int = 1,
    proxy: Proxy = "irt",
    stop_event: threading.Event | None = None,
    progress: ProgressCallback | None = None,
    weights: Any = None,
) -> CompareResult:
    """Compare two models of a live configuration, paired; re-run the same call to resume.

    Parameters
    ----------
    calibration : path, IRTResult, ResponseMatrix or Calibration
        As in :func:`~latentbench.select.compare`.
    config : LiveConfig or path
        A ``select live`` configuration, as :func:`~latentbench.select.estimate_live` takes
        it (``on_error`` must be ``"stop"``; ``spend_cap`` and ``run_id`` apply).
    store : Store or path
        The DuckDB store; the run is recorded as a selection run whose id ends in
        ``-compare-<hash>`` (``task = "compare"``): its observations, one decision per
        question (rounds 0, 1, ...: model A's or B's, with the item; the two of a drawn item
        are consecutive), the result of each completed session as a decision at round -1, -2,
        ... (``phase = "final"``, ``compare`` = :meth:`CompareResult.to_dict`) and that of a
        session that stopped early with ``phase = "stopped"`` and its ``status``.
    model_a, model_b : str, optional
        The configuration's two models (``[[models]]`` names); with exactly two models, a
        name left out is the other one (both left out: the two in their order).
    budget, margin, delta, seed, floor, rank, proxy
        As in :func:`~latentbench.select.compare` (``budget`` and ``margin`` only stop the
        run: a resumed session may raise them; the others fix the run). The draw is
        :func:`compare`'s for the same seed and names: a live run whose answers equal a
        file's gives that file's result. ``compare_live(A, B)`` resumes the run of
        ``compare_live(B, A)`` (the draw is the unordered pair's) and mirrors it.
    stop_event : threading.Event, optional
        Set it to stop after the question in flight.
    progress : callable, optional
        ``progress("items asked", done, total)`` at the start and after each item asked of
        both models (``total``: the items planned), once the run's snapshot beside the store
        is written (a :data:`~latentbench._progress.ProgressCallback`).
    weights : path, DataFrame, Series or mapping, optional
        Compare weighted or macro scores, as :func:`~latentbench.select.compare`'s
        ``weights`` (over the configuration's items of positive weight, their weights
        renormalised when it holds only some). The run's id covers the weights' hash (when
        not all equal): a session with other weights is another run, which reuses the stored
        answers instead of resuming this one.

    Returns
    -------
    CompareResult
        ``stopped`` is ``sign``, ``equivalent``, ``budget`` or ``exhausted``, or why the live
        run stopped early (``capped``, ``interrupted``, ``failed``, ``waiting``): the interval
        is anytime-valid, so a run stopped early still reports a valid (wider) interval.
        ``options["live"]`` holds the run's id, the store and the answers paid, replayed and
        reused.

    Raises
    ------
    InputError
        A bad option, configuration or calibration, a model the configuration lacks, the same
        model twice, or a stored run whose configuration or questions differ.
    """
    check_event(stop_event)
    seed = check_seed(seed, "seed")
    _check_margin(margin)
    _check_options(budget, None, delta, need_stop=False)
    check_design_options(floor, "residual", "dr", proxy)  # before the store or calibration
    from latentbench.io.store import Store

    cfg = _estimate_config(config, "compare --live")
    name_a, name_b = _two_models(cfg, model_a, model_b)  # before the store is opened
    if not isinstance(store, Store):
        from latentbench.select.live._run import store_of_call

        with store_of_call(store) as db:  # removed if it is new and the call refused
            return compare_live(calibration, cfg, db, model_a=model_a, model_b=model_b,
                                budget=budget, margin=margin, delta=delta, seed=seed,
                                floor=floor, rank=rank, proxy=proxy,
                                stop_event=stop_event, progress=progress,
                                weights=weights)  # fmt: skip
    from latentbench.select.live import DurableOracle
    from latentbench.select.live._durable import unstored_note
    from latentbench.select.live._run import (
        _open_run,
        abort_oracle,
        empty_answers_note,
        no_text_note,
        resolve_run_id,
        reusable_answers,
        reused_note,
    )

    cal = load_calibration(calibration, rank=rank)
    checked = None if weights is None else read_weights(cal, weights)
    names = cfg.model_ids
    items = cfg.load_items()
    item_ids = [str(it["id"]) for it in items]
    columns, population, notes = _calibrated_columns(cfg, cal, item_ids, "difference")
    # the calibration's order, as compare() takes the items both answered: the same draw
    ascending = np.argsort(population, kind="stable")
    columns, both = columns[ascending], population[ascending]
    if checked is not None:  # the configuration's items of positive weight
        notes.clear()  # "the difference is the mean over" the configured items: said below
        kept = checked.weights[both] > 0
        pop = _weighted_pair(checked, both, name_a, name_b, notes, "the configuration holds")
        columns, both = columns[kept], pop
    unused = unused_settings_note(cfg, "compare --live")
    if unused:
        notes.append(unused)
    swap = name_b < name_a  # the draw is the unordered pair's, as compare()'s
    x_name, y_name = (name_b, name_a) if swap else (name_a, name_b)
    key = _run_key(x_name, y_name, cal.hash, seed, floor, delta, proxy, checked)
    run_id = resolve_run_id(store, cfg, f"-compare-{key}")
    inner = cfg.build_oracle(items)
    said = [_Said(note) for note in getattr(inner, "notes", None) or ()]  # warned when built
    _open_run(store, cfg, run_id, task="compare", notes=said)
    notes.extend(said)  # recorded with the result (not warned again)
    reused_notes: dict[tuple[str, str], str] = {}
    origins: dict[tuple[str, str], tuple[str, str]] = {}  # the run each reused answer's from
    planned = 2 * min(budget or len(columns), len(columns))  # questions: two per item
    durable = DurableOracle(
        store,
        run_id,
        inner,
        names,
        item_ids,
        on_error=cfg.run.on_error,
        spend_cap=cfg.run.spend_cap,
        planned=planned,
        stop_event=stop_event,
        reuse=reusable_answers(
            store, cfg, run_id, [x_name, y_name], notes=reused_notes, origins=origins
        ),
        reuse_notes=reused_notes,
    )
    unstored = unstored_note(durable)
    if unstored:  # a killed session's requests in flight: counted, said with the result
        notes.append(unstored)
    rows = (names.index(x_name), names.index(y_name))
    stops: list[LiveStop] = []
    snapshot = SnapshotWriter(store.path, run_id, "compare", spend_cap=cfg.run.spend_cap)

    def side(run: _PairedRun) -> dict[str, Any]:  # the comparison so far, as A - B
        point, lower, upper = run.point, run.lower, run.upper
        if swap:
            point, lower, upper = -point + 0.0, -upper + 0.0, -lower + 0.0
        return {"model_a": name_a, "model_b": name_b, "difference": float(point),
                "lower": float(lower), "upper": float(upper),
                "n_evaluated": len(run.order)}  # fmt: skip

    def watched(run: _PairedRun) -> None:  # the snapshot beside the store
        n = 2 * len(run.order)
        snapshot.update(batch=len(run.order), spent=durable.paid_total, planned=planned,
                        left=max(planned - n, 0), requests=durable.requests_total,
                        answer={"comparison": side(run)})  # fmt: skip
        notify(progress, "items asked", len(run.order), planned // 2)

    def answer(j: int) -> tuple[float, float]:
        # on_error is "stop" (checked): a failed cell raises LiveStop, never a score
        try:
            column = np.array([columns[j]])
            return (float(durable.evaluate(rows[0], column)[0]),
                    float(durable.evaluate(rows[1], column)[0]))  # fmt: skip
        except LiveStop as exc:
            stops.append(exc)
            raise

    snapshot.update(batch=0, spent=durable.paid_total, planned=planned, left=planned,
                    requests=durable.requests_total)  # fmt: skip
    notify(progress, "items asked", 0, planned // 2)
    try:
        with snapshot.until_end():
            run = _paired(cal, both, answer, _rng(seed, "\x00".join((x_name, y_name))),
                          budget, margin, delta, floor, proxy, observed=watched,
                          weights=checked)  # fmt: skip
    except BaseException as exc:  # a second Ctrl-C, a failed store write: nothing more asked
        abort_oracle(inner)
        interrupted = isinstance(exc, KeyboardInterrupt)
        store.set_selection_status(run_id, "interrupted" if interrupted else "failed")
        raise
    finally:
        close = getattr(inner, "close", None)
        if callable(close):
            close()
    status = stops[-1].status if stops else "done"
    if stops:
        notes.append(f"live run stopped early ({stops[-1]}); {_RESUME}")
    notes.extend(line for line in (empty_answers_note(inner), no_text_note(inner)) if line)
    if durable.n_reused:
        notes.append(reused_note(store.path, durable.reused, origins))
    options = {
        "seed": int(seed),
        "delta": float(delta),
        "budget": None if budget is None else int(budget),
        "margin": None if margin is None else float(margin),
        "floor": float(floor),
        "proxy": run.proxy_used,
        "live": {
            "run_id": run_id,
            "store": str(store.path),
            "n_paid": durable.n_paid,
            "n_replayed": durable.n_replayed,
            "n_reused": durable.n_reused,
        },
    }
    if checked is not None:  # the target's kind, groups and hash, as compare() records
        options["weights"] = checked.record(both, "in the configuration")
    result = _compare_result(cal, both, run, name_a, name_b, swap, delta, proxy, options, notes)
    _record_session(store, run_id, status, result)
    durable.record_unstored_said()  # said with the result: not by a later session again
    snapshot.finish(status, spent=durable.paid_total, requests=durable.requests_total,
                    answer={"comparison": side(run)})  # fmt: skip
    return result


def _two_models(cfg: LiveConfig, model_a: str | None, model_b: str | None) -> tuple[str, str]:
    """The configuration's two models to compare: as given, or (with exactly two models)
    the one left out; refused when the same or not configured."""
    names = cfg.model_ids
    if (model_a is None or model_b is None) and len(names) == 2:
        if model_a is None and model_b is None:
            model_a, model_b = names
        elif model_a is None:
            model_a = names[0] if model_b == names[1] else names[1]
        else:
            model_b = names[0] if model_a == names[1] else names[1]
    if model_a is None or model_b is None:
        raise InputError(
            f"{cfg.source}: {len(names)} models; name the two to compare with model_a= and "
            f"model_b= (models: {_listed(names)})"
        )
    for name in (model_a, model_b):
        _chosen_model(cfg, name)  # refuses one not configured, naming the models
    if model_a == model_b:
        raise InputError(
            f"model_a and model_b are both {model_a!r}; expected two models of {cfg.source} "
            f"(models: {_listed(names)})"
        )
    return model_a, model_b


def _run_key(
    x_name: str,
    y_name: str,
    cal_hash: str,
    seed: int,
    floor: float,
    delta: float,
    proxy: str,
    weights: ItemWeights | None = None,
) -> str:
    """The hash that ends the run's id: the sorted pair, calibration and options the draws
    depend on (not the budget or margin, which only stop the run), and the weights' hash
    when they are not all equal (equal weights draw as none: the same run)."""
    text = f"compare|{x_name}|{y_name}|{cal_hash}|{seed}|{floor}|{delta}|{proxy}"
    if weights is not None and not weights.equal:
        text += f"|weights={weights.hash}"
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _record_session(store: Store, run_id: str, status: str, result: CompareResult) -> None:
    """Store the session's result and the run's status, as a live estimate's are
    (:func:`~latentbench.select._estimate_live.record_live_session`, under ``compare``)."""
    record_live_session(store, run_id, status, "compare", result.to_dict())


def stored_comparisons(
    store: Store | str | os.PathLike[str], run_id: str | None = None
) -> list[tuple[str, CompareResult | None, str]]:
    """The live comparisons a store holds (``compare --live``), oldest run first: each run's
    id, its result and its status. The result is its last completed session's, or that of a
    later session that stopped early with more items (its ``stopped`` says why); None when no
    session stored one (a run killed).

    Parameters
    ----------
    store : Store or path-like
        An open store, or the path of its ``.duckdb`` file (opened read-only).
    run_id : str, optional
        Only this run (it must be a live comparison).

    Returns
    -------
    list of (str, CompareResult or None, str)

    Raises
    ------
    InputError
        No such run, a run that is not a live comparison, or a store without one.
    """
    from latentbench.io.store import Store

    if not isinstance(store, Store):
        with Store(store, read_only=True) as db:
            return stored_comparisons(db, run_id)
    return stored_live_results(store, run_id, "compare", CompareResult.from_dict)
