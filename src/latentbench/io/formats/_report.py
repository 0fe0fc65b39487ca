"""The load report: what a reader did (files, rows, drops with reasons, choices, coverage)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latentbench._text import counted

__all__ = ["LoadReport"]


def _sorted_codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes of ``values`` in the order of their sorted distinct values."""
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int32 if len(uniques) < 2**31 else np.int64), pd.Index(uniques)


def _distinct_runs(key: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort ``key`` (group * width + value) in place; return each group with at least one
    value and its number of distinct values, groups ascending."""
    key.sort()
    new = np.empty(len(key), dtype=bool)
    new[0] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    groups = key[new] // width
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    return groups[starts], np.diff(np.r_[starts, len(groups)])


def _item_counts(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Distinct items per (benchmark, model), sorted, and per benchmark: the values of
    ``groupby(...)["item"].nunique()``, from integer codes sorted in place (a groupby of 24M
    rows held a gigabyte of temporaries more)."""
    columns = [frame[c] for c in ("benchmark", "model", "item")]
    if any(column.isna().any() for column in columns):  # no reader gives one: pandas' rules
        per = frame.groupby(["benchmark", "model"], sort=True)["item"].nunique()
        return per, frame.groupby("benchmark")["item"].nunique()
    (bench, benches), (model, models), (item, items) = map(_sorted_codes, columns)
    n_models, n_items = len(models), len(items)
    key = bench.astype(np.int64) * n_items + item
    firsts, totals = _distinct_runs(key, n_items)
    del key
    key = (bench.astype(np.int64) * n_models + model) * n_items + item
    pairs, counts = _distinct_runs(key, n_items)
    del key
    index = pd.MultiIndex.from_arrays(
        [benches[pairs // n_models], models[pairs % n_models]], names=["benchmark", "model"]
    )
    per = pd.Series(counts, index=index, name="item")
    return per, pd.Series(totals, index=benches[firsts].rename("benchmark"), name="item")


@dataclass
class LoadReport:
    """What a reader did: files, rows, drops with reasons, choices made and coverage.

    Attributes
    ----------
    source : str
        Reader name (``lm-eval``, ``lighteval``, ``helm``, ``inspect``, ``opencompass``,
        ``table``).
    files : list of str
        Files read, in order.
    records_read : int
        Records (lines, rows, instances, samples, entries) read from the files.
    rows : int
        Canonical rows produced.
    dropped : dict of str to int
        Records that produced no row, by reason (e.g. ``"perturbed instance"``,
        ``"errored sample (missing)"``, ``"metric absent"``).
    choices : dict of str to dict
        Per benchmark: ``metric``, ``filter`` and how each was chosen (``given``, ``default``,
        ``only``).
    non_binary : list of str
        Benchmarks with scores other than 0 and 1 (kept, not rounded; a 2PL fit needs an
        explicit threshold or binomial counts).
    coverage : list of dict
        Per benchmark and model: ``n_items`` observed, ``fraction`` of the benchmark's items.
    notes : list of str
        Warnings worth reading (e.g. models disagree on a benchmark's item count).
    skipped_files : list of dict
        Files read but not used, each ``{"file", "reason"}`` (e.g. an Inspect log that was
        cancelled before any sample was scored); their records count in ``dropped``.
    flagged : dict of str to int
        Rows kept with a ``flag`` (e.g. errored samples scored 0), by reason.
    renamed : dict of str to list of str
        Per benchmark named by ``benchmark=``: the benchmark (task) names the files give,
        which it replaces (every reader records them: :meth:`rename`); several are refused,
        since their items would merge.
    subsampled : dict of str to dict
        Per model, the tasks it was evaluated on only in part (lm-eval ``--limit`` or
        ``--samples``, from the run's ``n-samples``): task -> ``[evaluated, of]`` docs; said in
        one note per model.
    revisions : dict of str to str or None
        lm-eval: per samples file read, the weights' ``revision=`` in its run's
        ``config.model_args`` (None: the run names none), recorded when no ``model=`` names
        the model. lm-eval names two checkpoints of one repository as one model; the store
        keeps this with the ingest, so that a later ingest of another checkpoint that scores
        a doc otherwise is said as such (:meth:`~latentbench.io.store.Store.ingest`).
    """

    source: str
    files: list[str] = field(default_factory=list)
    records_read: int = 0
    rows: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    choices: dict[str, dict[str, str]] = field(default_factory=dict)
    non_binary: list[str] = field(default_factory=list)
    coverage: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    flagged: dict[str, int] = field(default_factory=dict)
    renamed: dict[str, list[str]] = field(default_factory=dict)
    subsampled: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    revisions: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the rows that duplicates="mean" averaged into one (key columns, score, source,
        # source_file), for Store.ingest's merged_values; not a field: not in to_dict / JSON
        self._averaged: list[pd.DataFrame] = []
        # lm-eval: per model its runs' weights, same_weights(revision) -> (revision, results
        # file), so that two checkpoints read as one model are said (the field revisions
        # keeps each samples file's revision)
        self._revisions: dict[str, dict[str | None, tuple[str | None, str]]] = {}

    def __repr__(self) -> str:
        """Short: the counts (files, records, rows, drops, benchmarks, notes); the lists are
        the attributes (``files``, ``coverage``: one entry per file and per model)."""
        benchmarks = {entry["benchmark"] for entry in self.coverage} or set(self.choices)
        dropped = sum(self.dropped.values())
        return (
            f"LoadReport(source {self.source!r}: {counted(len(self.files), 'file')}, "
            f"{counted(self.records_read, 'record')}, {counted(self.rows, 'row')}, "
            f"{dropped:,} dropped; "
            f"{len(benchmarks):,} benchmark(s), {len(self.notes):,} note(s))"
        )

    def rename(self, benchmark: str | None, original: str) -> None:
        """Record that ``benchmark=`` (when given) replaces the files' benchmark ``original``.

        Parameters
        ----------
        benchmark : str or None
            The benchmark name given by the user; None records nothing.
        original : str
            The benchmark name the files carry.
        """
        if benchmark is None:
            return
        names = self.renamed.setdefault(benchmark, [])
        if original not in names:
            names.append(original)

    def skip_file(self, path: str | Path, reason: str, records: int = 0) -> None:
        """Record a file that gave no rows, with the reason; its records count as dropped.

        Parameters
        ----------
        path : str or Path
            The file skipped.
        reason : str
            Why it gave no rows.
        records : int, default 0
            Records it held, counted as dropped for ``file skipped: <reason>``.
        """
        self.skipped_files.append({"file": str(path), "reason": reason})
        self.drop(f"file skipped: {reason}", records)

    def flag(self, reason: str, count: int = 1) -> None:
        """Count ``count`` rows kept with a flag for ``reason``.

        Parameters
        ----------
        reason : str
            Why the rows are flagged.
        count : int, default 1
            Rows to add to the count (0 records nothing).
        """
        if count:
            self.flagged[reason] = self.flagged.get(reason, 0) + count

    def drop(self, reason: str, count: int = 1) -> None:
        """Count ``count`` records dropped for ``reason``.

        Parameters
        ----------
        reason : str
            Why the records are dropped.
        count : int, default 1
            Records to add to the count (0 records nothing).
        """
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + count

    def choose(self, benchmark: str, kind: str, name: str, how: str) -> None:
        """Record the metric/filter chosen for a benchmark.

        Parameters
        ----------
        benchmark : str
            The benchmark the choice is for.
        kind : str
            What was chosen (e.g. ``metric`` or ``filter``): the key under ``choices``.
        name : str
            The name chosen.
        how : str
            How it was chosen, stored under ``<kind>_chosen``.
        """
        entry = self.choices.setdefault(benchmark, {})
        entry[kind] = name
        entry[f"{kind}_chosen"] = how

    def summarise(self, frame: pd.DataFrame) -> None:
        """Fill ``rows``, ``non_binary``, ``coverage`` and ``notes`` from the final frame.

        Parameters
        ----------
        frame : DataFrame
            The long table read, with columns ``benchmark``, ``model``, ``item`` and
            ``score``.
        """
        self.rows = len(frame)
        if not len(frame):
            return
        fractional = (frame["score"] != 0) & (frame["score"] != 1)
        self.non_binary = sorted(frame.loc[fractional, "benchmark"].unique().tolist())
        per, totals = _item_counts(frame)
        self.coverage = [
            {
                "benchmark": bench,
                "model": model,
                "n_items": int(n),
                "fraction": float(n / totals[bench]),
            }
            for (bench, model), n in zip(per.index, per.to_numpy(), strict=True)
        ]
        for bench, counts in per.groupby(level=0):
            if counts.nunique() > 1:
                self.notes.append(
                    f"models disagree on the item count of {bench!r}: "
                    f"{int(counts.min()):,} to {int(counts.max()):,} items"
                )
        for bench in self.non_binary:
            self.notes.append(f"{bench!r} has non-binary scores (kept as fractions)")
        for model, tasks in self.subsampled.items():
            self.notes.append(_subsample_note(model, tasks))

    def subsample(self, model: str, task: str, evaluated: int, of: int) -> None:
        """Record that ``model`` was evaluated on ``evaluated`` of the ``of`` docs of ``task``.

        Parameters
        ----------
        model : str
            The model subsampled.
        task : str
            The task whose docs were subsampled.
        evaluated : int
            Docs the model was evaluated on.
        of : int
            Docs in the task.
        """
        self.subsampled.setdefault(model, {})[task] = [evaluated, of]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy.

        Returns
        -------
        dict of str to Any
            The report's fields (``dataclasses.asdict``).
        """
        return asdict(self)

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text (keys sorted).

        Returns
        -------
        str
        """
        return json.dumps(self.to_dict(), sort_keys=True)

    def __str__(self) -> str:
        lines = [
            f"{self.source}: {counted(len(self.files), 'file')}, "
            f"{counted(self.records_read, 'record')}, {counted(self.rows, 'row')}"
        ]
        for reason, count in sorted(self.dropped.items()):
            lines.append(f"  dropped {count:,}: {reason}")
        for reason, count in sorted(self.flagged.items()):
            lines.append(f"  flagged {count:,}: {reason}")
        for skipped in self.skipped_files:
            lines.append(f"  skipped {skipped['file']}: {skipped['reason']}")
        lines.extend(self._choice_lines())
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def _choice_lines(self, most: int = 3) -> list[str]:
        """One line per benchmark's metric and filter choice; more than ``most`` benchmarks
        chosen alike (MMLU's 57 tasks read as one group) share one line naming the first
        ``most``."""
        alike: dict[str, list[str]] = {}
        for bench, choice in sorted(self.choices.items()):
            said = (
                f"metric={choice.get('metric')!r} ({choice.get('metric_chosen')}), "
                f"filter={choice.get('filter')!r} ({choice.get('filter_chosen')})"
            )
            alike.setdefault(said, []).append(bench)
        lines: list[str] = []
        for said, benches in alike.items():
            if len(benches) <= most:
                lines.extend(f"  {bench}: {said}" for bench in benches)
            else:
                shown = ", ".join(benches[:most])
                lines.append(
                    f"  {len(benches):,} tasks ({shown}, ... {len(benches) - most:,} more): {said}"
                )
        return sorted(lines)


def _subsample_note(model: str, tasks: dict[str, list[int]]) -> str:
    """One note for a model's subsampled tasks: each task with its counts (the first five of
    many, then the totals), so that a design spread over MMLU's 57 tasks is one sentence."""
    how = "(--limit or --samples): the other items are missing by design"
    if len(tasks) == 1:
        ((task, (evaluated, of)),) = tasks.items()
        return f"{task!r} for {model!r} evaluated {evaluated:,} of {of:,} docs {how}"
    shown = [
        f"{task!r} {evaluated:,} of {of:,}" for task, (evaluated, of) in list(tasks.items())[:5]
    ]
    more = f", ... {len(tasks) - 5:,} more" if len(tasks) > 5 else ""
    evaluated = sum(counts[0] for counts in tasks.values())
    of = sum(counts[1] for counts in tasks.values())
    return (
        f"{model!r} evaluated {evaluated:,} of {of:,} docs of {len(tasks):,} tasks "
        f"({', '.join(shown)}{more}) {how}"
    )


DEFAULT_REVISION = "main"
"""The revision a Hugging Face model loads when ``model_args`` give none."""


def same_weights(revision: str | None) -> str | None:
    """A run's ``revision=`` as its weights compare: none and :data:`DEFAULT_REVISION` are
    one (lm-eval's hf model loads ``main`` when none is given)."""
    return None if revision == DEFAULT_REVISION else revision


def shown_revision(revision: str | None) -> str:
    """A run's weights as a message names them: ``revision='step1000'`` or ``no revision``
    (:attr:`LoadReport.revisions`)."""
    return "no revision" if revision is None else f"revision={revision!r}"
