"""The record of a finished (or unfinished) selection run, whatever it was read from.

A :class:`SelectionRecord` is built from a :class:`~latentbench.select.SelectionResult`, from a
``selection.json`` (``latentbench select replay``) or from a live run in a DuckDB store
(``latentbench select live``); the command line prints it and the report draws it, so neither
re-reads or re-checks the files itself.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from latentbench._checks import json_problem
from latentbench._repr import html_block
from latentbench.exceptions import InputError

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.io.store import Store
    from latentbench.select._run import SelectionResult

__all__ = ["SelectionRecord", "share_text"]

_STOP_WORDS = {
    "budget": "budget spent",
    "exhausted": "every cell revealed",
    "policy": "the policy chose no arm, cells left unrevealed",
}
"""What a run's recorded ``stopped`` means, said after it in the printed lines and the report
(``confidence`` is said with the run's certificate: :meth:`SelectionRecord.stopped_text`)."""


def share_text(cells: float, full: float) -> str:
    """``cells`` as a percentage of ``full`` with one decimal that never reads 100.0% or 0.0%
    when it is not (``>99.9%``, ``<0.1%``): the one wording of "n of a full evaluation" for
    the printed lines and the report (the report said 100.0%, and 0.0% saved, for a run the
    command said used >99.9%)."""
    share = cells / full
    text = f"{share:.1%}"
    if share < 1 and text == "100.0%":
        return ">99.9%"
    if share > 0 and text == "0.0%":
        return "<0.1%"
    return text


_EXPECTED = "expected the output of `latentbench select replay`"


def _check_arms(arms: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(arms, list) or not arms:
        raise InputError(f"{where}: 'arms' is {type(arms).__name__} {arms!r:.40}; {_EXPECTED}")
    for k, arm in enumerate(arms):
        if not isinstance(arm, dict) or "model" not in arm or "estimate" not in arm:
            raise InputError(f"{where}: arms[{k}] lacks 'model' or 'estimate'; {_EXPECTED}")
        estimate = arm["estimate"]
        if isinstance(estimate, bool) or not isinstance(estimate, (int, float)):
            raise InputError(f"{where}: arms[{k}].estimate is {estimate!r:.40}; expected a number")
    return arms


_ARM_NUMBERS = ("lower", "upper", "certificate_lower", "certificate_upper", "difference_lower",
                "estimate_unclipped")  # fmt: skip


_TRACE_LISTS = ("evaluations_post_init", "best_index", "arm", "arm_lower", "arm_upper",
                "initial_lower", "initial_upper")  # fmt: skip


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _is_count(value: Any) -> bool:
    """An integer >= 0 (as an int or a whole float; not NaN or infinity, which JSON readers
    accept and ``int()`` refuses with a traceback)."""
    return _is_number(value) and math.isfinite(value) and value >= 0 and int(value) == value


def _check_fields(data: Mapping[str, Any], arms: list[dict[str, Any]], where: str) -> None:
    """The fields a report and the command line read, beyond ``arms``' estimates: numbers
    where numbers are expected, a best model among the arms, counts that add up, a trace
    whose lists have matching lengths. A hand-edited file is refused here, naming the field
    and the value, not later with a traceback or a page that states the wrong thing."""
    _check_arm_numbers(arms, where)
    _check_best_model(data, arms, where)
    counts = _check_counts(data, where)
    _check_totals(data, arms, counts, where)
    trace = data.get("trace")
    if trace is None:
        return
    if not isinstance(trace, Mapping):
        raise InputError(f"{where}: 'trace' is {type(trace).__name__}; expected an object")
    _check_trace_values(trace, len(arms), where)
    _check_trace_lengths(trace, len(arms), where)
    _check_trace_indices(trace, len(arms), where)


def _check_arm_numbers(arms: list[dict[str, Any]], where: str) -> None:
    """Each arm's bounds: numbers or null; its ``n_observed``: a count or null."""
    for k, arm in enumerate(arms):
        for key in _ARM_NUMBERS:
            value = arm.get(key)
            if value is not None and not _is_number(value):
                raise InputError(
                    f"{where}: arms[{k}].{key} is {value!r:.40}; expected a number or null"
                )
        n = arm.get("n_observed")
        if n is not None and not _is_count(n):
            raise InputError(
                f"{where}: arms[{k}].n_observed is {n!r:.40}; expected a count (integer >= 0)"
            )


def _check_best_model(data: Mapping[str, Any], arms: list[dict[str, Any]], where: str) -> None:
    """``best_model``, when given, is one of the arms' models."""
    models = [str(a["model"]) for a in arms]
    best = data.get("best_model")
    if best is not None and str(best) not in models:
        raise InputError(
            f"{where}: best_model {best!r:.60} is none of the {len(models)} arms' models "
            f"(e.g. {models[0]!r}); expected one of them"
        )


def _check_counts(data: Mapping[str, Any], where: str) -> dict[str, int | None]:
    """The record's evaluation counts, each a count or null, as ints (None when absent)."""
    counts = {}
    for key in ("evaluations_total", "evaluations_init", "evaluations_post_init"):
        value = data.get(key)
        if value is not None and not _is_count(value):
            raise InputError(f"{where}: {key} is {value!r:.40}; expected a count (integer >= 0)")
        counts[key] = None if value is None else int(value)
    return counts


def _check_totals(
    data: Mapping[str, Any],
    arms: list[dict[str, Any]],
    counts: Mapping[str, int | None],
    where: str,
) -> None:
    """``evaluations_total`` is the sum of the arms' ``n_observed`` (not in a live run) and
    at least ``evaluations_init``."""
    total = counts["evaluations_total"]
    observed: list[int] = [int(a["n_observed"]) for a in arms if a.get("n_observed") is not None]
    live = bool(data.get("live_run"))  # a live run's total counts its failed cells too
    if total is not None and not live and len(observed) == len(arms):
        revealed = 0
        for n in observed:
            revealed += n
        if total != revealed:
            raise InputError(
                f"{where}: evaluations_total is {total:,} but the arms' n_observed add up to "
                f"{revealed:,}; expected the same count"
            )
    init = counts["evaluations_init"]
    if total is not None and init is not None and init > total:
        raise InputError(
            f"{where}: evaluations_init is {init:,}, more than evaluations_total {total:,}; "
            "expected the initial batch to be part of the total"
        )


def _check_trace_values(trace: Mapping[str, Any], n_arms: int, where: str) -> None:
    """The trace's known lists hold numbers (``lower`` / ``upper``: one row per round)."""
    for key, value in trace.items():
        if key in ("lower", "upper"):  # the dense form: one row of bounds per round
            rows = value if isinstance(value, list) else None
            if rows is None or not all(
                isinstance(r, list) and len(r) == n_arms and all(map(_is_number, r)) for r in rows
            ):
                raise InputError(
                    f"{where}: trace.{key} is {value!r:.40}; expected one list of "
                    f"{n_arms} numbers (one per arm) per round"
                )
        elif key in _TRACE_LISTS and (
            not isinstance(value, list) or not all(_is_number(v) or v is None for v in value)
        ):
            raise InputError(f"{where}: trace.{key} is {value!r:.40}; expected a list of numbers")


def _check_trace_lengths(trace: Mapping[str, Any], n_arms: int, where: str) -> None:
    """The per-round lists match in length; the initial bounds have one entry per arm."""
    groups = (("evaluations_post_init", "best_index", "lower", "upper"),
              ("arm", "arm_lower", "arm_upper"))  # fmt: skip
    for group in groups:
        lengths = {key: len(trace[key]) for key in group if key in trace}
        if len(set(lengths.values())) > 1:
            said = ", ".join(f"trace.{k} has {n:,}" for k, n in lengths.items())
            raise InputError(f"{where}: {said} entries; expected as many in each")
    for key in ("initial_lower", "initial_upper"):
        if key in trace and len(trace[key]) != n_arms:
            raise InputError(
                f"{where}: trace.{key} has {len(trace[key]):,} entries for {n_arms:,} arms; "
                "expected one per arm"
            )


def _check_trace_indices(trace: Mapping[str, Any], n_arms: int, where: str) -> None:
    """``trace.arm`` and ``trace.best_index`` hold arm indices (``arm``: -1 for the initial
    batch's round)."""
    for key, low in (("arm", -1), ("best_index", 0)):  # arm -1: the initial batch's round
        values = trace.get(key, [])
        bad = [v for v in values if v is None or not low <= v < n_arms or v != int(v)]
        if bad:
            raise InputError(
                f"{where}: trace.{key} holds {bad[0]!r}; expected arm indices in "
                f"{low}..{n_arms - 1}"
            )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class SelectionRecord:
    """A selection run as recorded: per-model results, spend, certificate and provenance.

    Attributes
    ----------
    policy : str
    best_model : str
        The recommended model.
    arms : list of dict
        One entry per model: ``model``, ``estimate``, ``n_observed`` and, when recorded,
        ``lower`` / ``upper`` (simultaneous intervals) and ``certificate_lower`` /
        ``certificate_upper`` (the certificate's one-sided bounds).
    evaluations_total : int
        Cells revealed, initial batch included.
    evaluations_init, evaluations_post_init : int or None
        The initial batch and what came after it (None for an unfinished live run).
    rounds : int or None
    stopped : str or None
        ``"budget"``, ``"confidence"``, ``"exhausted"`` or ``"policy"``.
    certified : bool or None
        Whether the best is certified at ``delta`` (None without intervals); within
        :attr:`epsilon` of the best when the run was given a tolerance.
    certified_after : int or None
        Post-init cells when the recommendation was first certified.
    certified_model : str or None
    delta : float or None
        Error probability of the certificate.
    seconds : float or None
    params : dict
        The run's parameters (``n_items``, ``history``, ``budget``, ``delta``, ...). A record
        written before the rename (key ``alpha``) reads with the key ``delta``.
    trace : dict
        The compact per-round trace of ``selection.json`` (empty when not recorded).
    live_run : dict or None
        For a run read from a store: ``store``, ``run_id``, ``status``, ``created_at``,
        ``runs_in_store``, ``failed_cells`` and ``config``.
    source : str
        Where the record was read from.
    """

    policy: str
    best_model: str
    arms: list[dict[str, Any]]
    evaluations_total: int
    evaluations_init: int | None = None
    evaluations_post_init: int | None = None
    rounds: int | None = None
    stopped: str | None = None
    certified: bool | None = None
    certified_after: int | None = None
    certified_model: str | None = None
    delta: float | None = None
    seconds: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)
    live_run: dict[str, Any] | None = None
    source: str = ""

    def __repr__(self) -> str:
        """Short: the policy, the pool, the recommendation, the certificate and the cells
        spent, as :class:`SelectionResult`'s (the arms: :meth:`to_frame`)."""
        certified = {True: "certified", False: "not certified", None: "no certificate"}
        stopped = f", stopped {self.stopped!r}" if self.stopped else ""
        where = f" (from {self.source})" if self.source else ""
        return (
            f"SelectionRecord(policy {self.policy!r}, {len(self.arms):,} arms: best "
            f"{self.best_model!r}, {certified[self.certified]}; {self.evaluations_total:,} "
            f"evaluations{stopped}{where})"
        )

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def from_result(cls, result: SelectionResult, *, source: str = "") -> SelectionRecord:
        """The record of a run in memory.

        Parameters
        ----------
        result : SelectionResult
            A finished run (``run_selection``, ``select.replay``).
        source : str, optional
            What to name in errors (default ``"a selection run"``).

        Returns
        -------
        SelectionRecord
        """
        return cls.from_dict(result.to_dict(trace=True), source=source or "a selection run")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "") -> SelectionRecord:
        """The record of a ``selection.json``-shaped dict, checked: an ``arms`` list whose
        entries name a ``model`` and hold a numeric ``estimate`` (bounds: numbers or null;
        ``n_observed``: counts), a ``best_model`` among them, counts that add up
        (``evaluations_total`` is the sum of ``n_observed``, except in a live run, whose
        total counts its failed cells, and at least ``evaluations_init``) and a ``trace``
        whose lists match in length.

        Parameters
        ----------
        data : mapping
            A ``selection.json``-shaped dict (``SelectionResult.to_dict()``).
        source : str, optional
            What to name in errors (a file's path; default ``"selection record"``).

        Returns
        -------
        SelectionRecord

        Raises
        ------
        InputError
            Not a selection record, naming ``source`` and the bad field.
        """
        where = source or "selection record"
        if not isinstance(data, Mapping) or "arms" not in data:
            raise InputError(f"{where} is not a selection.json (no 'arms'); {_EXPECTED}")
        arms = _check_arms(data["arms"], where)
        _check_fields(data, arms, where)
        params = dict(data.get("params") or {})
        if "alpha" in params and "delta" not in params:  # records written before the rename
            params["delta"] = params.pop("alpha")
        best = data.get("best_model")
        if best is None:
            best = max(arms, key=lambda a: float(a["estimate"]))["model"]
        total = data.get("evaluations_total")
        if total is None:
            total = sum(int(a.get("n_observed", 0)) for a in arms)
        delta = params.get("delta")
        return cls(
            policy=str(data.get("policy", "")),
            best_model=str(best),
            arms=[dict(a) for a in arms],
            evaluations_total=int(total),
            evaluations_init=_int(data.get("evaluations_init")),
            evaluations_post_init=_int(data.get("evaluations_post_init")),
            rounds=_int(data.get("rounds")),
            stopped=data.get("stopped"),
            certified=data.get("certified"),
            certified_after=_int(data.get("certified_after_post_init")),
            certified_model=data.get("certified_model"),
            delta=None if delta is None else float(delta),
            seconds=data.get("seconds"),
            params=params,
            trace=dict(data.get("trace") or {}),
            live_run=dict(data["live_run"]) if data.get("live_run") else None,
            source=where,
        )

    @classmethod
    def read_json(cls, path: str | os.PathLike[str]) -> SelectionRecord:
        """Read a ``selection.json``.

        Parameters
        ----------
        path : path-like
            The file (``select replay --out DIR`` writes ``DIR/selection.json``).

        Returns
        -------
        SelectionRecord

        Raises
        ------
        InputError
            Not JSON, or not a selection record (naming the file and the field).
        """
        path = Path(path)
        if not path.is_file():
            what = "a directory" if path.is_dir() else "no such file"
            raise InputError(f"{path}: {what}; expected a selection.json (select replay --out)")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:  # also a huge integer, nested too deeply
            raise InputError(
                f"{path}: not JSON ({json_problem(exc)}); expected a selection.json"
            ) from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_store(
        cls, store: Store | str | os.PathLike[str], run_id: str | None = None
    ) -> SelectionRecord:
        """A live selection run in a DuckDB store (the latest unless ``run_id`` is given).

        The run's final decision holds the finished selection; an unfinished run is
        summarised from its stored observations (mean score and count per model, no
        intervals).

        Parameters
        ----------
        store : Store or path-like
            An open :class:`~latentbench.io.Store`, or the path of its ``.duckdb`` file
            (opened read-only).
        run_id : str, optional
            The run (``latentbench ls --store`` lists them); default: the latest.

        Returns
        -------
        SelectionRecord

        Raises
        ------
        InputError
            No runs in the store, an unknown ``run_id``, or a run with no scored cells yet.
        """
        from latentbench.io.store import Store

        if not isinstance(store, Store):
            with Store(store, read_only=True) as db:
                return cls.from_store(db, run_id)
        where = store.path
        runs = store.selection_runs()
        if not runs:
            benchmarks = store.benchmarks()
            shown = ", ".join(benchmarks[:5]) + (", ..." if len(benchmarks) > 5 else "")
            ingested = (
                f"; its {len(benchmarks):,} benchmark{'s' if len(benchmarks) != 1 else ''} "
                f"({shown}) of ingested results {'are' if len(benchmarks) != 1 else 'is'} "
                f"fitted with `latentbench fit --store {where} --benchmark {benchmarks[0]} --out "
                "fit/`, and the fit reported with `latentbench report fit/`"
                if benchmarks
                else ""
            )
            raise InputError(
                f"{where}: no selection runs stored; `latentbench select live` writes them"
                + ingested
            )
        chosen = (
            runs[-1] if run_id is None else next((r for r in runs if r["run_id"] == run_id), None)
        )
        if chosen is None:
            names = ", ".join(str(r["run_id"]) for r in runs)
            raise InputError(f"{where}: no run {run_id!r}; stored runs: {names}")
        rid, status = chosen["run_id"], chosen["status"]
        from latentbench.select.live._run import is_compare_run, is_estimate_run, run_task

        selections = [str(r["run_id"]) for r in runs if run_task(r) == "select"]
        here = (
            f"selection runs here: {', '.join(selections)}"
            if selections
            else "the store holds no selection run"
        )
        if is_compare_run(chosen):  # compare --live: two models' comparison, not a selection
            raise InputError(
                f"{where}: run {rid!r} is a live comparison (latentbench compare --live), not a "
                "selection: its result is the comparison that command prints (stored as its "
                f"decision with phase 'final' or 'stopped'; latentbench report {where} --run-id "
                f"{rid} draws it); {here}"
            )
        if is_estimate_run(chosen):  # estimate --live: a model's estimate, not a selection
            # a completed session stores its result as 'final', one stopped early (capped,
            # interrupted, failed) as 'stopped' (stores written before: none)
            decided = store.selection_decisions(rid)
            finals = [d for d in decided if d.get("phase") == "final"]
            stops = [d for d in decided if d.get("phase") == "stopped"]
            if status == "done":
                stored = "stored as its decision with phase 'final'"
            elif stops and status != "running":
                stored = (
                    f"the run is {status}: the estimate where its latest session stopped is "
                    "stored as a decision with phase 'stopped'; re-run that command to resume "
                    "it"
                )
            elif finals:
                stored = (
                    f"the run is {status}: its last completed session's is stored as a decision "
                    "with phase 'final'; re-run that command to resume it"
                )
            else:
                stored = f"none stored: the run is {status}; re-run that command to resume it"
            raise InputError(
                f"{where}: run {rid!r} is a live estimate (latentbench estimate --live), not a "
                f"selection: its result is the estimate that command prints ({stored}); {here}"
            )
        decisions = store.selection_decisions(rid)
        final = next((d for d in reversed(decisions) if d.get("phase") == "final"), None)
        observations = store.selection_observations(rid)
        if final is not None:
            data: dict[str, Any] = {k: v for k, v in final.items() if k not in ("phase", "round")}
        else:
            scored = observations[observations["score"].notna()]
            grouped = scored.groupby("model")["score"].agg(["mean", "count"])
            arms = [
                {"model": str(m), "estimate": float(r["mean"]), "n_observed": int(r["count"])}
                for m, r in grouped.iterrows()
            ]
            if not arms:
                raise InputError(f"{where}: run {rid!r} ({status}) has no scored observations yet")
            best = max(arms, key=lambda a: float(a["estimate"]))  # type: ignore[arg-type]
            data = {
                "policy": "live (unfinished)",
                "best_model": best["model"],
                "arms": arms,
                "evaluations_total": len(observations),
            }
        data["live_run"] = {
            "store": str(where),
            "run_id": rid,
            "status": status,
            "created_at": str(chosen["created_at"]),
            "runs_in_store": len(runs),
            "failed_cells": int(observations["error"].notna().sum()),
            "config": chosen["config"],
        }
        return cls.from_dict(data, source=f"{where} run {rid}")

    # -- views ------------------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """The certificate's tolerance in score units (0, the best itself, for records
        written without one)."""
        return float(self.params.get("epsilon") or 0.0)

    @property
    def certificate_text(self) -> str:
        """What a certificate says: ``the best`` or ``within 0.01 of the best``."""
        eps = self.epsilon
        return f"within {eps:g} of the best" if eps > 0 else "the best"

    @property
    def n_models(self) -> int:
        """Candidate models."""
        return len(self.arms)

    @property
    def n_items(self) -> int | None:
        """Items per model (None when the record does not say)."""
        live = self.live_run or {}
        value = self.params.get("n_items") or (live.get("config") or {}).get("n_items")
        return None if not value else int(value)

    @property
    def full_evaluation(self) -> int | None:
        """Cells of a full evaluation (``n_models * n_items``), or None."""
        n = self.n_items
        return None if n is None else self.n_models * n

    @property
    def share(self) -> float | None:
        """``evaluations_total`` as a fraction of a full evaluation, or None."""
        full = self.full_evaluation
        return None if not full else self.evaluations_total / full

    def stopped_text(self) -> str | None:
        """Why the run stopped, as the printed lines and the report say it: the recorded
        ``stopped`` word first (what ``selection.json`` holds, so that a user who searches the
        file for what was printed finds it), then what it means: ``confidence (best certified
        at delta = 0.05)``, ``budget (budget spent)``, ``exhausted (every cell revealed)``; a
        live run's ``capped``, ``interrupted``, ... as they are. None when the record does not
        say.

        Returns
        -------
        str or None
        """
        stopped = self.stopped
        if stopped is None:
            return None
        if stopped == "confidence":
            what = "best" if self.epsilon <= 0 else f"a model {self.certificate_text}"
            at = "" if self.delta is None else f" at delta = {self.delta:g}"
            return f"confidence ({what} certified{at})"
        meaning = _STOP_WORDS.get(stopped)
        return stopped if meaning is None else f"{stopped} ({meaning})"

    def share_text(self, cells: int | None = None) -> str | None:
        """``cells`` (default ``evaluations_total``) as a percentage of a full evaluation
        (:func:`share_text`), or None when the record does not say its items.

        Parameters
        ----------
        cells : int, optional
            Cells to express; None: ``evaluations_total``.

        Returns
        -------
        str or None
        """
        full = self.full_evaluation
        if not full:
            return None
        return share_text(self.evaluations_total if cells is None else cells, full)

    def _repr_html_(self) -> str:
        """A notebook's view: the one-line repr, then the models by estimate (best first)."""
        return html_block(
            repr(self),
            lambda: self.to_frame().sort_values("estimate", ascending=False, kind="stable"),
            whole=".to_frame()",
            row_header=True,
        )

    def to_frame(self) -> pd.DataFrame:
        """Per-model table (pandas DataFrame): ``model``, ``estimate``, ``n_observed`` and the
        recorded bounds.

        Returns
        -------
        DataFrame of shape (n_models, n_columns)
            One row per record of :attr:`arms`.
        """
        import pandas as pd

        return pd.DataFrame(self.arms)

    def to_dict(self) -> dict[str, Any]:
        """The ``selection.json``-shaped dict of the record.

        Returns
        -------
        dict of str to Any
            The record's fields; those that are None are left out.
        """
        out: dict[str, Any] = {
            "policy": self.policy,
            "best_model": self.best_model,
            "evaluations_post_init": self.evaluations_post_init,
            "evaluations_init": self.evaluations_init,
            "evaluations_total": self.evaluations_total,
            "rounds": self.rounds,
            "stopped": self.stopped,
            "certified": self.certified,
            "certified_after_post_init": self.certified_after,
            "certified_model": self.certified_model,
            "seconds": self.seconds,
            "params": self.params,
            "arms": self.arms,
            "trace": self.trace,
        }
        if self.live_run is not None:
            out["live_run"] = self.live_run
        return {k: v for k, v in out.items() if v is not None}
