"""Leave-one-model-out experiment of :func:`~latentbench.select.estimate` on a matrix.

Each model in turn is the new one and the others calibrate (one fit per held-out model);
the estimate runs to the largest budget (and on to ``precision`` when asked), and every
budget's score, interval, error and coverage is recorded: at each budget ``b``, what
:func:`~latentbench.select.estimate` with ``budget=b`` reports (its interval sized for ``b``;
the same draws). The engine of
``latentbench experiment --task estimate`` (see ``benchmarks/bench_estimate.py`` for the
comparison with the baselines).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import check_event, is_number, json_problem, user_stacklevel
from latentbench._progress import ProgressCallback, notify
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._files import read_csv_ids
from latentbench.io._matrix_checks import same_id
from latentbench.select._estimate import _check_delta, _near_models, _rng
from latentbench.select._estimate_calibration import Calibration, from_matrix
from latentbench.select._estimate_design import SequentialEstimate
from latentbench.select._experiment import _input_provenance, not_a_matrix
from latentbench.select._experiment_stats import wilson_interval

if TYPE_CHECKING:
    import threading

    import pandas as pd

    from latentbench.io import ResponseMatrix

__all__ = ["EstimateExperiment", "estimate_experiment", "summarize_estimate_experiment"]

RUN_COLUMNS = ("model", "seed", "budget", "truth", "score", "lower", "upper", "error",
               "covered", "items_to_precision", "n_items", "uniform_error",
               "covered_throughout", "contradicted", "limit")  # fmt: skip
"""Columns of :attr:`EstimateExperiment.runs` (``runs.csv``)."""


@dataclasses.dataclass(frozen=True, eq=False)  # a table: == by identity, not a ValueError
class EstimateExperiment:
    """A leave-one-model-out experiment of :func:`~latentbench.select.estimate`: what
    :func:`estimate_experiment` returns and ``latentbench experiment --task estimate``
    writes (``runs.csv``, ``summary.csv``, ``summary.json``).

    Attributes
    ----------
    runs : DataFrame
        One row per (held-out model, seed, budget), columns :data:`RUN_COLUMNS`: the score's
        ``truth`` (the model's mean over the items it answered, ``n_items``), the estimate
        ``score`` with its interval ``[lower, upper]``, ``error`` (score - truth),
        ``covered``, ``items_to_precision`` (NaN when not reached), ``uniform_error``:
        the expected absolute error of the mean of ``budget`` items drawn uniformly without
        replacement from the model's own answers (exact for 0/1 scores, the normal
        approximation otherwise), the baseline the estimate has to beat;
        ``covered_throughout``: the interval held the truth after every item up to
        ``budget`` (what the anytime guarantee is about), ``contradicted``: the answers
        had rejected every candidate score by then (the confidence sequence emptied, and
        the interval fell back to the certain range; see
        :attr:`~latentbench.select.EstimateResult.contradicted_at`), and ``limit``: the
        most items the run could use (its model's answered items, or ``max_items``).
    params : dict
        The experiment's options (``task``, ``input`` and its ``n_models``, ``budgets``,
        ``seeds``, ``models``,
        ``precision``, ``max_items``, ``delta``, ``rank``; ``not_run`` when it was stopped;
        ``no_score``: models without an observed score, left out; ``not_recorded``: budget ->
        the held-out models with fewer items than it).
    warnings : tuple of str
        What the experiment said about its inputs (repeated options, models without a
        score, budgets beyond some models' items), then one line per calibration fit that
        warned (``calibration fit without 'MODEL': message``).
    """

    runs: pd.DataFrame
    params: dict[str, Any]
    warnings: tuple[str, ...] = ()

    @property
    def not_run(self) -> tuple[str, ...]:
        """The held-out models an interrupted experiment did not reach (``stop_event``,
        Ctrl-C in the command); empty when it ran to the end."""
        return tuple(self.params.get("not_run") or ())

    @property
    def summary(self) -> dict[str, Any]:
        """:func:`summarize_estimate_experiment` of :attr:`runs` (``by_budget``,
        ``precision``)."""
        return summarize_estimate_experiment(self)

    @staticmethod
    def precision_text(precision: float, reach: Mapping[str, Any]) -> str:
        """The items to ``±precision`` in words (:func:`precision_line`), as the command and
        the report print them.

        Parameters
        ----------
        precision : float
            The half-width the runs had to reach.
        reach : Mapping of str to Any
            The ``precision`` record of :func:`summarize_estimate_experiment` (``runs``,
            ``reached``, ``median_items``, ...).

        Returns
        -------
        str
        """
        return precision_line(precision, reach)

    @staticmethod
    def censored_median(items: np.ndarray, limits: np.ndarray) -> tuple[float | None, bool]:
        """:func:`censored_median`: a median of items to the precision where the runs that
        did not reach it count.

        Parameters
        ----------
        items : ndarray of shape (n_runs,)
            Items each run needed to reach the precision; NaN for a run that did not.
        limits : ndarray of shape (n_runs,) or scalar
            Items each run could use (a run that did not reach the precision needs more).

        Returns
        -------
        median : float or None
            The median, or its lower bound when ``exact`` is False; None when there are no
            runs.
        exact : bool
            False when the runs that did not reach the precision can move the median.
        """
        return censored_median(items, limits)

    def by_budget(self) -> pd.DataFrame:
        """The per-budget summary as a table (``summary.csv``).

        Returns
        -------
        DataFrame
            One row per budget.
        """
        import pandas as pd

        return pd.DataFrame(self.summary["by_budget"])

    def save(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``runs.csv``, ``summary.csv`` and ``summary.json`` into ``directory``
        (created); returns their paths.

        Parameters
        ----------
        directory : path-like
            Created when absent.

        Returns
        -------
        list of Path
            ``runs.csv``, ``summary.csv``, ``summary.json``.
        """
        from latentbench.io import check_destination
        from latentbench.io._outputs import csv_text, write_directory

        folder = Path(directory)
        check_destination(folder, "dir", flag="directory=")  # a file there: said
        params = {**self.params, "warnings": list(self.warnings)}
        text = json.dumps({"params": params, **self.summary}, indent=1, allow_nan=False)
        runs, by_budget = self.runs, self.by_budget()
        # all together, summary.json last: a failed save, or another saving into the same
        # folder at once, never leaves one experiment's tables beside another's summary
        write_directory(folder, {
            "runs.csv": lambda path: path.write_bytes(csv_text(runs).encode("utf-8")),
            "summary.csv": lambda path: by_budget.to_csv(path, index=False),
            "summary.json": lambda path: path.write_text(text, encoding="utf-8"),
        }, last="summary.json", flag="directory=")  # fmt: skip
        return [folder / name for name in ("runs.csv", "summary.csv", "summary.json")]

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> EstimateExperiment:
        """An experiment written by :meth:`save` (or ``latentbench experiment --task
        estimate --out DIR``); a missing or foreign file is named.

        Parameters
        ----------
        directory : path-like
            The experiment's output directory.

        Returns
        -------
        EstimateExperiment

        Raises
        ------
        InputError
            A missing or foreign file, named.
        """
        import pandas as pd

        folder = Path(directory)
        for name in ("summary.json", "runs.csv"):
            if not (folder / name).is_file():
                raise InputError(
                    f"{folder}: no {name}; expected the directory of `latentbench experiment "
                    "--task estimate --out DIR`"
                )
        summary = folder / "summary.json"
        try:
            saved = json.loads(summary.read_text(encoding="utf-8"))
            params = saved["params"]
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            raise InputError(
                f"{summary}: not an experiment summary ({json_problem(exc)})"
            ) from None
        task = params.get("task") if isinstance(params, dict) else None
        if task != "estimate":
            raise InputError(
                f"{summary}: task {task!r}; expected an estimate experiment (latentbench "
                "experiment --task estimate)"
            )
        try:  # ids as text: a model called NA, null or None keeps its name
            runs = read_csv_ids(folder / "runs.csv", ("model",))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InputError(f"{folder / 'runs.csv'}: not a CSV table ({exc})") from None
        later = ("uniform_error", "covered_throughout", "contradicted", "limit")  # newer
        missing = [c for c in RUN_COLUMNS if c not in runs.columns and c not in later]
        if missing:
            raise InputError(f"{folder / 'runs.csv'}: lacks column(s) {missing}")
        kept = {k: v for k, v in params.items() if k != "warnings"}
        record = cls(runs, kept, tuple(params.get("warnings") or ()))
        _check_agrees(record, saved.get("by_budget"), folder)
        return record


def estimate_experiment(
    matrix: ResponseMatrix | str | os.PathLike[str],
    *,
    budgets: tuple[int, ...] = (30, 100, 300),
    seeds: int = 3,
    models: list[str] | None = None,
    precision: float | None = 0.02,
    max_items: int | None = None,
    delta: float = 0.05,
    rank: int = 1,
    progress: ProgressCallback | None = None,
    stop_event: threading.Event | None = None,
) -> EstimateExperiment:
    """Leave-one-model-out estimates of every model's full-benchmark score.

    Parameters
    ----------
    matrix : ResponseMatrix or path
        At least 3 models; a path is read with :meth:`~latentbench.io.ResponseMatrix.read`.
        A store benchmark's (``latentbench experiment --store S --benchmark B``) is
        ``Store(S).matrix(B)``.
    budgets : tuple of int, default (30, 100, 300)
        Items at which the estimate is recorded (a repeat is recorded once). A budget above
        a model's items is not recorded for it (``params["not_recorded"]``, and a warning).
    seeds : int, default 3
        Runs per model (seeds ``0 .. seeds - 1``), as the command's default.
    models : list of str, optional
        Held-out models (default: all).
    precision : float or None, default 0.02
        Also record the items needed for this half-width (the run continues past the largest
        budget until it is reached, or ``max_items``), from a confidence sequence sized for it,
        as :func:`~latentbench.select.estimate` with ``precision``. The interval at each budget
        ``b`` is the one ``estimate(budget=b)`` reports: a sequence sized for ``b`` fed the
        same rounds (``params["sized_for"] == "budget"``; the draws do not depend on the
        sizing).
    max_items : int, optional
        Most items per run (default: all the model answered).
    delta : float, default 0.05
        Error probability of each run's confidence sequence (the interval covers the truth at
        every step with probability at least ``1 - delta``), in [1e-16, 1) as for
        :func:`~latentbench.select.estimate`.
    rank : int
        Rank of the calibration fits.
    progress : callable, optional
        ``progress("held-out runs", done, total)`` after each (model, seed) run (a
        :data:`~latentbench._progress.ProgressCallback`, as every long call takes).
    stop_event : threading.Event, optional
        When set (another thread, a signal handler: Ctrl-C in the command), the experiment
        stops after the held-out model in flight (all its seeds) and returns the models
        finished; the others are listed in ``params["not_run"]``
        (:attr:`EstimateExperiment.not_run`) and one warning says so.

    Returns
    -------
    EstimateExperiment
        ``runs``: one row per (model, seed, budget), with the error of the uniform sample
        mean at the same budget beside it; ``params``; ``warnings``: the notes on the inputs
        (each also emitted as a :class:`~latentbench.exceptions.DataWarning`) and the
        calibration fits that warned (one warning is also emitted for them all).

    Raises
    ------
    InputError
        A ``delta`` outside [1e-16, 1) (:func:`~latentbench.select.estimate`'s), an empty
        ``models``, ``max_items < 1``, budgets above every held-out model's items
        (nothing would be recorded; the largest usable budget is named), or no held-out
        model with an observed score. A model without any observed score is left out, and
        said (``params["no_score"]``).
    """
    check_event(stop_event)
    _check_delta(delta)  # estimate's rule: below 1e-16 the level 1 - delta reads as 1.0
    import pandas as pd

    from latentbench.io import ResponseMatrix

    if isinstance(matrix, str | os.PathLike):
        matrix = ResponseMatrix.read(matrix)
    elif not isinstance(matrix, ResponseMatrix):
        raise not_a_matrix(matrix, "matrix")
    chosen, budgets, notes = _checked_options(matrix, models, budgets, seeds, max_items, precision)
    ids = matrix.model_ids
    notes += _twin_notes(ids)  # notes: said once each, and kept in the result (summary.json)
    Y = np.asarray(matrix.scores, dtype=np.float64)
    answered = {m: int(np.isfinite(Y[k]).sum()) for k, m in enumerate(ids)}
    empty = [m for m in ids if answered[m] == 0]
    chosen, said = _leave_out_unscored(matrix.source, ids, chosen, empty)
    notes += said
    settings = _Settings(budgets, seeds, precision, max_items, delta, rank)
    _check_feasible(settings, len(ids) - len(empty) - 1, [answered[m] for m in chosen])
    runs = _run_held_out(matrix, Y, chosen, empty, settings, progress, stop_event)
    table = pd.DataFrame(runs.rows, columns=list(RUN_COLUMNS))
    notes += _outcome_notes(table, runs.short, _cap(max_items), len(chosen))
    params = _experiment_params(matrix, models, chosen, empty, settings, runs)
    return EstimateExperiment(table, params, _warn_outcome(notes, runs, len(chosen)))


@dataclasses.dataclass(frozen=True)
class _Settings:
    """The checked options of one :func:`estimate_experiment` (budgets sorted, unique)."""

    budgets: tuple[int, ...]
    seeds: int
    precision: float | None
    max_items: int | None
    delta: float
    rank: int


@dataclasses.dataclass
class _Runs:
    """What the held-out loop gathers: the table's rows, budget -> the models with fewer
    items than it, the first warning of each calibration fit that warned, the models an
    interruption left, and the (model, seed) runs done."""

    rows: list[dict[str, object]] = dataclasses.field(default_factory=list)
    short: dict[int, list[str]] = dataclasses.field(default_factory=dict)
    fit_warnings: list[tuple[str, type[Warning], str]] = dataclasses.field(default_factory=list)
    not_run: list[str] = dataclasses.field(default_factory=list)
    done: int = 0


@dataclasses.dataclass(frozen=True)
class _HeldOut:
    """One held-out model: its answers ``y`` (answered items only), their positions ``pop``
    in its calibration, its ``truth`` (their mean), the most items a run can use, and the
    uniform sample mean's expected error at each budget."""

    name: str
    pop: np.ndarray
    y: np.ndarray
    truth: float
    limit: int
    uniform: dict[int, float]


_Mark = tuple[float, float, float, bool, bool]
"""A run at a budget: ``(score, lower, upper, covered_throughout, contradicted)``."""


def _checked_options(
    matrix: ResponseMatrix,
    models: list[str] | None,
    budgets: Any,
    seeds: Any,
    max_items: int | None,
    precision: float | None,
) -> tuple[list[str], tuple[int, ...], list[str]]:
    """The held-out models, the budgets (sorted, each once) and the notes on repeats; an
    :class:`~latentbench.exceptions.InputError` for the first option that is wrong."""
    if isinstance(models, str):
        raise InputError(f"models={models!r}; expected a list of model names, e.g. [{models!r}]")
    if isinstance(budgets, numbers.Integral) and not isinstance(budgets, bool):
        budgets = (int(budgets),)
    if isinstance(budgets, (str, bool)) or not all(
        isinstance(b, numbers.Integral) and not isinstance(b, bool) for b in budgets
    ):
        raise InputError(f"budgets={budgets!r}; expected item counts such as (30, 100, 300)")
    if isinstance(seeds, bool) or not isinstance(seeds, numbers.Integral):
        raise InputError(f"seeds={seeds!r}; expected an integer >= 1")
    if matrix.n_models < 3:
        raise InputError(f"{matrix.n_models} models; the experiment needs at least 3")
    chosen, notes = _held_out_models(matrix.model_ids, models, matrix.source)
    if not budgets or any(int(b) < 1 for b in budgets):
        raise InputError(f"budgets={tuple(budgets)!r}; expected positive item counts")
    if len(set(budgets)) < len(budgets):
        notes.append(f"budgets: repeated value(s) in {list(budgets)} recorded once")
    if seeds < 1:
        raise InputError(f"seeds={seeds!r}; expected at least 1")
    _check_run_length(max_items, precision)
    return chosen, tuple(sorted({int(b) for b in budgets})), notes


def _held_out_models(
    ids: list[str], models: list[str] | None, source: str | None = None
) -> tuple[list[str], list[str]]:
    """``models`` (default: all of ``ids``), each once, and a note when one was repeated;
    an :class:`~latentbench.exceptions.InputError` when none or an unknown one is given
    (naming ``source``, the matrix's file, and the ids it holds)."""
    notes: list[str] = []
    if models is not None and not list(models):
        raise InputError(
            "models=[] (no held-out model); expected at least one model name, or None for all"
        )
    chosen = ids if models is None else list(dict.fromkeys(models))
    if models is not None and len(chosen) < len(list(models)):
        twice = [m for m in chosen if list(models).count(m) > 1]
        notes.append(f"models: {_names(twice)} given more than once; held out once")
    unknown = [m for m in chosen if m not in ids]
    if unknown:
        near = next((h for m in unknown if (h := _near_models(m, dict.fromkeys(ids)))), "")
        raise InputError(
            f"{source or 'the matrix'}: no model{'s' if len(unknown) > 1 else ''} "
            f"{_names(unknown, 3)} (its models: {_names(ids)}){near}; expected the ids of "
            "the models to hold out"
        )
    return chosen, notes


def _check_run_length(max_items: int | None, precision: float | None) -> None:
    """Refuse a ``max_items`` that is not an item count and a ``precision`` outside (0, 0.5)."""
    if max_items is not None and (
        isinstance(max_items, bool) or not isinstance(max_items, numbers.Integral) or max_items < 1
    ):
        raise InputError(f"max_items={max_items!r}; expected an item count >= 1, or None")
    if precision is not None and not (is_number(precision) and 0 < precision < 0.5):
        raise InputError(
            f"precision={precision!r}; expected a half-width in (0, 0.5) or None (a score in "
            "[0, 1] has an interval of half-width 0.5 before any item)"
        )


def _twin_notes(ids: list[str]) -> list[str]:
    """One note per group of model ids that differ only by spaces or case (or Unicode
    normalisation: NFC and NFD ``é``, shown escaped)."""
    twins: dict[str, list[str]] = {}
    for m in ids:
        twins.setdefault(same_id(m), []).append(m)
    return [  # "m" and "m ": two models?
        f"model ids {_names(group, shown=ascii)} differ only by spaces or case (or Unicode "
        f"normalisation): they are run as "
        f"{len(group)} models, each calibrated with the others; merge them in the input "
        "if they are one"
        for group in twins.values()
        if len(group) > 1
    ]


def _leave_out_unscored(
    source: str | None, ids: list[str], chosen: list[str], empty: list[str]
) -> tuple[list[str], list[str]]:
    """The held-out models less those without an observed score (``empty``: no truth to
    estimate, nothing to calibrate with), and the note saying so; an
    :class:`~latentbench.exceptions.InputError` when no held-out model or fewer than 3
    models are left."""
    if not empty:
        return chosen, []
    note = (
        f"{_names(empty)} ha{'s' if len(empty) == 1 else 've'} no observed score: left "
        "out (not held out, not in the calibrations)"
    )
    chosen = [m for m in chosen if m not in empty]
    if not chosen:
        raise InputError(
            f"{source}: every held-out model ({_names(empty)}) has no observed "
            "score; expected models with answers"
        )
    if len(ids) - len(empty) < 3:
        raise InputError(
            f"{source}: {len(ids) - len(empty)} models with an observed score "
            f"({_names(empty)} ha{'s' if len(empty) == 1 else 've'} none); the experiment "
            "needs at least 3"
        )
    return chosen, [note]


def _cap(max_items: int | None) -> str:
    """What bounds a run's items, in words."""
    return "answered" if max_items is None else f"answered or max_items={max_items}"


def _check_feasible(settings: _Settings, fitted: int, answered: list[int]) -> None:
    """Refuse, before the first fit, a rank above the ``fitted`` models of each held-out
    calibration and budgets above every held-out model's items (``answered``, capped)."""
    rank, max_items = settings.rank, settings.max_items
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 1:
        raise InputError(
            f"rank={rank!r}; expected an integer >= 1 (each held-out calibration is fitted at "
            "this rank; 'auto' would choose a rank per held-out model)"
        )
    if rank > fitted:  # as `fit` refuses it, before the first fit
        raise InputError(
            f"rank={rank}: each held-out calibration has {fitted} models; expected a rank of "
            f"at most {fitted}"
        )
    most = max(n if max_items is None else min(max_items, n) for n in answered)
    if min(settings.budgets) > most:
        raise InputError(
            f"budgets={list(settings.budgets)}: more than the items ({_cap(max_items)}) of "
            f"every held-out model, so no estimate would be recorded; expected a budget of at "
            f"most {most:,}"
        )


def _run_held_out(
    matrix: ResponseMatrix,
    Y: np.ndarray,
    chosen: list[str],
    empty: list[str],
    settings: _Settings,
    progress: ProgressCallback | None,
    stop_event: threading.Event | None,
) -> _Runs:
    """Every held-out model's runs, in ``chosen``'s order, until ``stop_event`` is set (then
    the models left are ``not_run``)."""
    ids = matrix.model_ids
    runs = _Runs()
    total = len(chosen) * settings.seeds
    for k, name in enumerate(chosen):
        if stop_event is not None and stop_event.is_set():
            runs.not_run = list(chosen[k:])
            break
        i = ids.index(name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            others = [m for m in ids if m != name and m not in empty]
            cal = from_matrix(matrix.subset(models=others), rank=settings.rank)
        if caught:
            runs.fit_warnings.append((name, caught[0].category, str(caught[0].message)))
        model = _held_out(matrix, cal, Y[i], name, settings)
        for b in settings.budgets:
            if b > model.limit:
                runs.short.setdefault(int(b), []).append(name)
        for seed in range(settings.seeds):
            reached, marks = _run_seed(cal, model, seed, settings)
            runs.rows += _seed_rows(model, seed, reached, marks, settings.budgets)
            runs.done += 1
            notify(progress, "held-out runs", runs.done, total)
    return runs


def _held_out(
    matrix: ResponseMatrix, cal: Calibration, scores: np.ndarray, name: str, settings: _Settings
) -> _HeldOut:
    """The held-out model ``name`` with its row of ``scores``, as its runs see it."""
    answered = np.isfinite(scores)
    item_ids = matrix.item_ids
    pop = cal.positions([item_ids[j] for j in np.flatnonzero(answered)])
    y = scores[answered]
    limit = y.size if settings.max_items is None else min(settings.max_items, y.size)
    uniform = {b: uniform_error(y, b) for b in settings.budgets}
    return _HeldOut(name, pop, y, float(y.mean()), limit, uniform)


def _run_seed(
    cal: Calibration, model: _HeldOut, seed: int, settings: _Settings
) -> tuple[int | None, dict[int, _Mark]]:
    """One run of the estimate on ``model``: the items it took to reach the precision (None:
    not reached) and its :data:`_Mark` at each budget it got to."""
    budgets, precision, truth = settings.budgets, settings.precision, model.truth
    seq = SequentialEstimate(cal, model.pop, delta=settings.delta, target=precision)
    # each budget's interval from a sequence sized for it, fed the same rounds: what
    # ``estimate(budget=b)`` reports (the draws do not depend on the sizing)
    sized = {b: seq.sized_sequence(b) for b in budgets if b <= model.limit}
    throughout = dict.fromkeys(sized, True)  # covered after every item so far
    rng = _rng(seed, model.name)
    reached = None
    marks: dict[int, _Mark] = {}
    for t in range(1, model.limit + 1):
        j, pi = seq.choose(rng)
        seq.observe(j, float(model.y[j]), pi)
        for b in [b for b in sized if b >= t]:
            cs = sized[b]
            assert seq.last_round is not None  # set by observe
            cs.update(*seq.last_round)
            lo, up = seq.interval if seq.exhausted else (cs.lower, cs.upper)
            throughout[b] = throughout[b] and lo <= truth <= up
            if b == t:
                emptied = cs.contradicted_at is not None
                marks[t] = (seq.point(seq.point_kind, cs), lo, up, throughout[b], emptied)
        lo, up = seq.interval
        if precision is not None and reached is None and (up - lo) / 2 <= precision:
            reached = t
        if t >= max(budgets) and (precision is None or reached is not None):
            break
    return reached, marks


def _seed_rows(
    model: _HeldOut,
    seed: int,
    reached: int | None,
    marks: dict[int, _Mark],
    budgets: tuple[int, ...],
) -> list[dict[str, object]]:
    """The rows (:data:`RUN_COLUMNS`) of one run, one per budget it got to."""
    rows: list[dict[str, object]] = []
    truth = model.truth
    for b in budgets:
        if b not in marks:
            continue
        score, lo, up, held, emptied = marks[b]
        rows.append(
            {
                "model": model.name,
                "seed": seed,
                "budget": b,
                "truth": truth,
                "score": score,
                "lower": lo,
                "upper": up,
                "error": score - truth,
                "covered": bool(lo <= truth <= up),
                "items_to_precision": np.nan if reached is None else reached,
                "n_items": model.y.size,
                "uniform_error": model.uniform[b],
                "covered_throughout": held,
                "contradicted": emptied,
                "limit": model.limit,  # the most items the run could use
            }
        )
    return rows


def _outcome_notes(
    table: pd.DataFrame, short: dict[int, list[str]], cap: str, n_chosen: int
) -> list[str]:
    """The notes on the runs: those whose confidence sequence emptied, and the budgets not
    recorded for some models (said, not dropped silently)."""
    notes: list[str] = []
    emptied = table[table["contradicted"].astype(bool)].drop_duplicates(["model", "seed"])
    if len(emptied):  # valid (the certain range) but wider: said, and counted per budget
        n_runs = len(table.drop_duplicates(["model", "seed"]))
        notes.append(
            f"{len(emptied)} of {n_runs} runs: the answers contradicted the confidence "
            f"sequence (every candidate score rejected; e.g. {emptied['model'].iloc[0]!r}, "
            f"seed {int(emptied['seed'].iloc[0])}); their intervals fell back to the certain "
            "range from then on (summary: 'contradicted', and 'coverage_throughout', the "
            "runs covered after every item)"
        )
    for b, names in sorted(short.items()):
        notes.append(
            f"budget {b}: more than the items ({cap}) of {len(names)} of {n_chosen} "
            f"held-out models ({_names(names)}); not recorded for them"
        )
    return notes


def _experiment_params(
    matrix: ResponseMatrix,
    models: list[str] | None,
    chosen: list[str],
    empty: list[str],
    settings: _Settings,
    runs: _Runs,
) -> dict[str, Any]:
    """:attr:`EstimateExperiment.params`."""
    params: dict[str, Any] = {
        "task": "estimate",
        "input": matrix.source,
        "budgets": [int(b) for b in settings.budgets],
        "seeds": int(settings.seeds),
        "models": None if models is None else list(chosen),
        "n_models": int(matrix.n_models),
        "precision": settings.precision,
        "max_items": settings.max_items,
        "delta": settings.delta,
        "rank": int(settings.rank),
        "sized_for": "budget",  # each budget's interval; runs saved before 2026-12-06: precision
    }
    # which version of the matrix (its file's SHA-256, or a store's cells' hash) and which
    # latentbench ran it, for a reader of summary.json or of its report who did not run it
    provenance = _input_provenance(matrix)
    params["latentbench_version"] = provenance["latentbench_version"]
    entry = provenance.get("input") or {}
    digest = entry.get("sha256") or entry.get("cells_sha256")
    if digest:
        params["input_sha256"] = digest
    if empty:
        params["no_score"] = list(empty)
    if runs.short:
        params["not_recorded"] = {str(b): names for b, names in sorted(runs.short.items())}
    if runs.not_run:  # stopped: the table covers the models before
        params["not_run"] = runs.not_run
    return params


def _warn_outcome(notes: list[str], runs: _Runs, n_chosen: int) -> tuple[str, ...]:
    """Emit the notes, the interruption and one warning for all the calibration fits that
    warned (pointing at the caller's line); the lines kept with the result."""
    for note in notes:
        warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    not_run, fit_warnings = runs.not_run, runs.fit_warnings
    if not_run:
        warnings.warn(
            f"stopped after {n_chosen - len(not_run):,} of {n_chosen:,} held-out models; "
            f"not run: {', '.join(not_run[:5])}{', ...' if len(not_run) > 5 else ''}",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    lines = (*notes, *(f"calibration fit without {m!r}: {text}" for m, _, text in fit_warnings))
    if fit_warnings:  # one line for all the held-out fits, kept with the result
        name, category, message = fit_warnings[0]
        note = (
            f"{len(fit_warnings)} of {n_chosen} calibration fits warned (first, without "
            f"{name!r}: {message})"
        )
        warnings.warn(note, category, stacklevel=user_stacklevel())
    return lines


def _check_agrees(record: EstimateExperiment, saved: Any, folder: Path) -> None:
    """Warn when ``runs.csv`` no longer gives the per-budget models, runs and error that
    ``summary.json`` holds (an edited file): every page drawn from the directory is
    recomputed from ``runs.csv``."""
    if not isinstance(saved, list):
        return
    now = {row["budget"]: row for row in record.summary["by_budget"]}
    for row in saved:
        if not isinstance(row, dict):
            return
        mine = now.get(row.get("budget"))
        same = mine is not None and all(mine.get(k) == row.get(k) for k in ("models", "runs"))
        if same and mine is not None and None not in (mine.get("mae"), row.get("mae")):
            same = math.isclose(float(mine["mae"]), float(row["mae"]), rel_tol=1e-9)
        if not same:
            warnings.warn(
                f"{folder}: runs.csv and summary.json disagree at budget {row.get('budget')!r} "
                f"(summary.json: {row.get('models')!r} models, {row.get('runs')!r} runs; "
                f"runs.csv: {None if mine is None else mine['models']!r} models, "
                f"{None if mine is None else mine['runs']!r} runs); the figures are "
                "recomputed from runs.csv (edited?)",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
            return


def _names(names: list[str], most: int = 5, shown: Callable[[str], str] = repr) -> str:
    """``'a', 'b' and 3 more``: model ids quoted, so that a space or a comma in one shows
    (``shown=ascii``: escaped where not ASCII, so NFC and NFD ``é`` read apart)."""
    text = ", ".join(shown(m) for m in names[:most])
    return text + (f" and {len(names) - most} more" if len(names) > most else "")


def uniform_error(y: np.ndarray, n: int) -> float:
    """Expected absolute error of the mean of ``n`` of the scores ``y`` drawn uniformly
    without replacement, as an estimate of ``y.mean()``.

    Exact for 0/1 scores (hypergeometric); otherwise the normal approximation
    ``sqrt(2 / pi) * sd``, ``sd**2 = var(y) (N - n) / (n (N - 1))``. 0 when ``n >= N``.
    """
    from scipy.stats import hypergeom

    y = np.asarray(y, dtype=np.float64)
    size = y.size
    if n >= size:
        return 0.0
    if np.all((y == 0.0) | (y == 1.0)):
        ones = int(y.sum())
        k = np.arange(max(0, n - (size - ones)), min(n, ones) + 1)
        pmf = hypergeom.pmf(k, size, ones, n)
        return float(np.sum(pmf * np.abs(k / n - ones / size)))
    sd = math.sqrt(float(y.var()) * (size - n) / (n * (size - 1)))
    return math.sqrt(2.0 / math.pi) * sd


def _number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def precision_line(precision: float, reach: Mapping[str, Any]) -> str:
    """The items to ``±precision`` in words, from :func:`summarize_estimate_experiment`'s
    ``precision`` (``reach``): the runs and the models that did not reach it count (how
    many, which, and a median over every run, ``>=`` when they bound it), never left out."""
    runs, reached = int(reach["runs"]), int(reach["reached"])
    of = reach.get("median_answered")
    head = f"items to ±{precision:g}: "
    if runs and reached == runs:
        scale = f" of a median {of:,.0f} answered ({reach['median_items'] / of:.0%})" if of else ""
        return (
            f"{head}median {reach['median_items']:,.0f}{scale} (mean {reach['mean_items']:,.0f}) "
            f"in the {reached:,} of {runs:,} runs that reached it"
        )
    limit = reach.get("limit")
    within = f" within {limit:,.0f} items" if limit is not None else ""
    models = reach.get("models")
    never = list(reach.get("not_reached_models") or ())
    who = ""
    if models is not None:
        who = f" (not reached by {len(never):,} of {int(models):,} models"
        shown = ", ".join(never[:5]) + (", ..." if len(never) > 5 else "")
        who += f": {shown})" if never else ")"
    if not reached:
        return f"{head}not reached in any of {runs:,} runs{within}{who}"
    median_all, exact = reach.get("median_all"), bool(reach.get("median_all_exact", True))
    if median_all is None:
        overall = "beyond the items a run could use"
    else:
        overall = f"{'' if exact else '>= '}{median_all:,.0f}"
    return (
        f"{head}reached in {reached:,} of {runs:,} runs{within}{who}; median over all "
        f"{runs:,} runs {overall} (the runs that did not reach it count as needing more), "
        f"{reach['median_items']:,.0f} (mean {reach['mean_items']:,.0f}) over the "
        f"{reached:,} that reached it"
    )


def censored_median(items: np.ndarray, limits: np.ndarray) -> tuple[float | None, bool]:
    """The median of the items runs needed to reach a precision, runs that did not reach it
    (NaN in ``items``) counted as needing more than their ``limits`` (the items they could
    use): ``(median, exact)``. ``exact`` is False when those runs can move the median; the
    value is then its lower bound (each such run counted at its limit: the median is at
    least that). None when there are no runs."""
    items = np.asarray(items, dtype=np.float64)
    if items.size == 0:
        return None, True
    limits = np.broadcast_to(np.asarray(limits, dtype=np.float64), items.shape)
    missed = ~np.isfinite(items)
    low = float(np.median(np.where(missed, limits, items)))
    high = float(np.median(np.where(missed, np.inf, items)))
    return _number(low), bool(missed.sum() == 0 or low == high)


def summarize_estimate_experiment(table: pd.DataFrame | EstimateExperiment) -> dict[str, Any]:
    """Per-budget error, coverage and width of an :func:`estimate_experiment` table, and the
    items its runs needed to reach the precision.

    Standard errors are over held-out models (each model's runs averaged first), since a
    model's seeds share its calibration and truth.

    Parameters
    ----------
    table : DataFrame or EstimateExperiment
        The output of :func:`estimate_experiment` (or its ``runs``).

    Returns
    -------
    dict
        ``by_budget``: one dict per budget with ``budget``, ``models``, ``runs``, ``mae``
        (mean absolute error of the score), ``mae_se``, ``coverage`` (fraction of runs whose
        interval held the truth), ``coverage_se``, ``coverage_lower`` and ``coverage_upper``
        (the Wilson 95% interval of ``coverage`` over the held-out models, which stays
        informative where every run covered and the SE is 0), ``half_width`` (mean); ``precision``:
        ``runs``, ``reached`` (runs that reached the precision), ``median_items`` and
        ``mean_items`` over those (None when none did), ``median_answered`` (the median of
        the runs' items answered, the scale of those counts: a count near it was reached by
        running out of items); so that the runs and models that never reached it count,
        also ``models`` (held-out models), ``not_reached_models`` (those none of whose runs
        reached it), ``limit`` (the most items a run could use: ``max_items``, or the
        model's items; the runs' ``limit`` column; None when unknown, a table without that
        column: its runs' largest recorded budgets then bound it below), ``median_all`` and
        ``median_all_exact`` (the
        median over every run, one that did not reach the precision counted as needing more
        than its limit: :func:`censored_median`; when not exact, ``median_all`` is a lower
        bound, printed ``>=``). SEs are None with one model. With
        the ``covered_throughout`` and ``contradicted`` columns, also ``coverage_throughout``
        (the runs covered after every item up to the budget, the anytime guarantee) and
        ``contradicted`` (runs whose confidence sequence had emptied). With
        the ``uniform_error`` column, also ``uniform_mae`` (the uniform sample mean's expected
        error at the same budget, averaged like ``mae``), ``mae_ratio`` (``mae /
        uniform_mae``) and ``mae_ratio_se`` (delta method over held-out models).
    """
    max_items, known = None, False  # known: each run's limit (the items it could use)
    if isinstance(table, EstimateExperiment):
        max_items, known = table.params.get("max_items"), True
        table = table.runs
    needed = {"model", "seed", "budget", "error", "covered", "lower", "upper"}
    missing = sorted(needed - set(table.columns))
    if missing:
        raise InputError(f"table lacks column(s) {missing}; expected estimate_experiment's")
    frame = table.assign(
        abs_error=table["error"].abs(),
        covered=table["covered"].astype(float),
        half_width=(table["upper"] - table["lower"]) / 2,
    )
    by_budget: list[dict[str, Any]] = []
    for _, part in frame.groupby("budget", sort=True):
        per_model = part.groupby("model")[["abs_error", "covered", "half_width"]].mean()
        n = len(per_model)
        se = per_model.std(ddof=1) / math.sqrt(n) if n > 1 else None
        wilson = wilson_interval(float(per_model["covered"].mean()), n)
        by_budget.append(
            {
                "budget": int(part["budget"].iloc[0]),
                "models": n,
                "runs": len(part),
                "mae": _number(per_model["abs_error"].mean()),
                "mae_se": None if se is None else _number(se["abs_error"]),
                "coverage": _number(per_model["covered"].mean()),
                "coverage_se": None if se is None else _number(se["covered"]),
                "coverage_lower": _number(wilson[0]),
                "coverage_upper": _number(wilson[1]),
                "half_width": _number(per_model["half_width"].mean()),
                **_throughout(part),
                **_against_uniform(part),
            }
        )
    runs = frame.drop_duplicates(["model", "seed"])
    items = runs["items_to_precision"] if "items_to_precision" in runs else runs["budget"] * np.nan
    reached = items.dropna()
    precision: dict[str, Any] = {
        "runs": len(runs),
        "reached": len(reached),
        "median_items": _number(float(reached.median())) if len(reached) else None,
        "mean_items": _number(float(reached.mean())) if len(reached) else None,
    }
    if "n_items" in runs and len(runs):  # the scale of those counts: near it, the deterministic
        # bounds closed the interval (the benchmark ran out), not the estimate
        precision["median_answered"] = _number(float(runs["n_items"].median()))
    # the runs and models that never reached it count: a median over the others alone
    # would leave them out without a word
    if "limit" in runs and runs["limit"].notna().all():  # recorded with each run
        limits, known = runs["limit"].to_numpy(dtype=np.float64), True
    elif known and "n_items" in runs:  # an older experiment's: its items, capped
        limits = runs["n_items"].to_numpy(dtype=np.float64)
        if max_items is not None:
            limits = np.minimum(limits, float(max_items))
    else:  # a table without its limits (a cap is not known): a run that missed the
        # precision used at least its largest recorded budget, a lower bound of its limit
        largest = frame.groupby(["model", "seed"], sort=False)["budget"].max()
        keys = list(zip(runs["model"], runs["seed"], strict=True))
        limits = largest.reindex(keys).to_numpy(dtype=np.float64)
        known = False
    median_all, exact = censored_median(items.to_numpy(dtype=np.float64), limits)
    hit = items.notna().groupby(runs["model"], sort=False).any()
    precision["models"] = len(hit)
    precision["not_reached_models"] = [str(m) for m in hit.index[~hit.to_numpy()]]
    finite = limits[np.isfinite(limits)]
    precision["limit"] = _number(float(finite.max())) if finite.size and known else None
    if not known:
        exact = exact and bool(items.notna().all())  # a lower bound unless all reached
    precision["median_all"] = median_all
    precision["median_all_exact"] = exact
    return {"by_budget": by_budget, "precision": precision}


def _throughout(part: pd.DataFrame) -> dict[str, float | int | None]:
    """``coverage_throughout`` (runs whose interval held the truth after every item up to
    the budget, averaged per model as ``coverage``) and ``contradicted`` (runs whose
    confidence sequence had emptied by then); empty for tables written before them."""
    if "covered_throughout" not in part or part["covered_throughout"].isna().any():
        return {}
    held = part.assign(held=part["covered_throughout"].astype(float))
    out: dict[str, float | int | None] = {
        "coverage_throughout": _number(held.groupby("model")["held"].mean().mean())
    }
    if "contradicted" in part and not part["contradicted"].isna().any():
        out["contradicted"] = int(part["contradicted"].astype(bool).sum())
    return out


def _against_uniform(part: pd.DataFrame) -> dict[str, float | None]:
    """``uniform_mae``, ``mae_ratio`` and its SE over models for one budget's runs (empty
    without the ``uniform_error`` column, as in tables written before it)."""
    if "uniform_error" not in part or part["uniform_error"].isna().all():
        return {}
    per_model = part.groupby("model")[["abs_error", "uniform_error"]].mean()
    mine, base = per_model["abs_error"].to_numpy(), per_model["uniform_error"].to_numpy()
    n, level = len(per_model), float(base.mean())
    ratio = float(mine.mean()) / level if level > 0 else math.nan
    se = (
        float(np.std(mine - ratio * base, ddof=1)) / math.sqrt(n) / level
        if n > 1 and level > 0
        else None
    )
    return {
        "uniform_mae": _number(level),
        "mae_ratio": _number(ratio),
        "mae_ratio_se": None if se is None else _number(se),
    }
