"""Readers for the per-item result files users already have.

Every reader yields the canonical long table (``docs/formats.md``; :class:`CanonicalRow`) and a
:class:`LoadReport`. Nothing is written anywhere: pass the frame to
:meth:`latentbench.io.Store.ingest` to keep it.

Sources and their documented defaults
-------------------------------------
============  ==========================================  =========================================
source        metric (``metric=``)                        filter (``filter=``)
============  ==========================================  =========================================
lm-eval       Open LLM Leaderboard v2 table (BBH, GPQA,   the only filter present; several
              MuSR: ``acc_norm``; MATH-hard:              (gsm8k ``strict-match`` /
              ``exact_match``; MMLU-Pro: ``acc``; IFEval:  ``flexible-extract``) must be chosen
              ``prompt_level_strict_acc``), else the only
              scalar metric present
lighteval     the only metric present                     ``none``
helm          the only stat present (usually several:     ``none`` (perturbed instances excluded;
              choose ``exact_match`` etc.)                ``include_perturbed=True`` keeps them)
inspect       ``value`` (or the one key of a dict value)  the scorer; the only one present
opencompass   ``correct``, else the only correctness      ``none``
              field present
table         ``metric`` column, else ``score``           ``filter`` column, else ``none``
============  ==========================================  =========================================

Each source is a module of this package whose ``read`` function is registered with
:func:`reader` (see ``docs/architecture.md``); :data:`SOURCES`, the file search and the
``latentbench ingest`` help come from that registry.

When several choices exist and no default applies, the reader refuses to guess: the
:class:`~latentbench.exceptions.InputError` lists the choices. ``metric`` and ``filter`` take one
name for every benchmark or a mapping ``{benchmark: name}`` (key ``"*"`` for the rest).
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from latentbench._checks import check_flag, user_stacklevel
from latentbench._compat import TEXT
from latentbench._progress import ProgressCallback, notify
from latentbench._text import counted
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._arrival import packed_advice, packed_kind, packed_note, unpacking
from latentbench.io._matrix_checks import twin_note
from latentbench.io.formats._common import (
    CANONICAL_COLUMNS,
    CANONICAL_SCHEMA,
    DUPLICATE_POLICIES,
    KEY_COLUMNS,
    TEXT_COLUMNS,
    CanonicalRow,
    LoadReport,
    expand,
    finish,
)
from latentbench.io.formats._registry import READERS, Reader, get_reader, reader

# Each reader module registers itself with @reader when imported; this order is the order of
# SOURCES and of the CLI help.
# isort: off
from latentbench.io.formats import _lm_eval  # noqa: F401
from latentbench.io.formats import _lighteval  # noqa: F401
from latentbench.io.formats import _helm  # noqa: F401
from latentbench.io.formats import _inspect  # noqa: F401
from latentbench.io.formats import _opencompass  # noqa: F401
from latentbench.io.formats import _table  # noqa: F401
from latentbench.io.formats import _eee  # noqa: F401
from latentbench.io.formats._eee_export import write_eee

# isort: on

__all__ = [
    "CANONICAL_COLUMNS",
    "CANONICAL_SCHEMA",
    "KEY_COLUMNS",
    "READERS",
    "SOURCES",
    "TEXT_COLUMNS",
    "CanonicalRow",
    "LoadReport",
    "Reader",
    "read_results",
    "reader",
    "write_eee",
]

SOURCES: tuple[str, ...] = tuple(READERS)
"""Names accepted by :func:`read_results` and ``latentbench ingest``."""


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one file is read (on again after, if it
    was on). A file's parsed records (JSON objects, thousands per file) hold no reference
    cycles, yet each allocation burst triggers collections that walk the whole heap: on 40
    models' lm-eval MMLU logs (2,280 files, 560,000 lines) they took half of the reading time.
    Whatever cyclic garbage a reader makes is collected once the collector is back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _aggregates_only(source: str, error: str) -> str:
    """For lm-eval's "FOLDER: no result files found" ``error``: a note naming the aggregate
    ``results_*.json`` files in FOLDER (a run without ``--log_samples``), or ""."""
    folder, _, rest = error.rpartition(": no result files found")
    if source != "lm-eval" or not rest.startswith(" (") or not Path(folder).is_dir():
        return ""
    found = sorted(Path(folder).rglob("results*.json"))
    if not found:
        return ""
    return (
        f"; it holds {len(found):,} aggregate results file(s) (e.g. {found[0].name}), which "
        "have no per-item scores: rerun lm-eval with --log_samples, which writes "
        "samples_<task>_<date>.jsonl beside them"
    )


def _look_alike_notes(frame: pd.DataFrame) -> list[str]:
    """Notes naming the models, and each benchmark's items, whose ids differ only by case,
    surrounding spaces or Unicode normalisation: kept verbatim as distinct (``Org/Model`` and
    ``org/model`` from two runs are two models to every fit), so said."""
    if not len(frame):
        return []
    notes = [twin_note("model", frame["model"].unique().tolist())]
    pairs = frame[["benchmark", "item"]].drop_duplicates()  # 2M rows: 0.1 s
    for benchmark, items in pairs.groupby("benchmark", sort=True)["item"]:
        note = twin_note("item", items.tolist())
        notes.append(f"benchmark {benchmark!r}: {note}" if note else "")
    return [note for note in notes if note]


_PACKED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")
"""Suffixes of a result file compressed on its own (``samples_x.jsonl.gz``)."""


def _refuse_packed(listed: list[str | Path], source: str, packed: bool = False) -> None:
    """Refuse a file named directly that is compressed or an archive (an Inspect ``.eval``
    log, a zip, excepted for ``inspect``; a file compressed on its own, for a reader that reads
    those: ``packed``), saying what it is and how to unpack it."""
    for raw in listed:
        path = Path(raw)
        if not path.is_file():
            continue
        kind = packed_kind(path)
        if kind is None or (source == "inspect" and kind == "zip archive"):
            continue
        if packed and unpacking(path) is not None:
            continue
        expected = "tables (.csv, .tsv, .parquet)" if source == "table" else f"{source} files"
        raise InputError(packed_advice(path, kind, expected))


def _packed_in_folders(
    listed: list[str | Path], patterns: tuple[str, ...], packed: bool = False
) -> list[tuple[Path, str]]:
    """Compressed result files under the folders of ``listed`` (a pattern's name with
    ``.gz``, ``.zip``, ... added), with what each is, that the reader does not read (with
    ``packed``, it reads a file compressed on its own: only archives and zstd without a zstd
    library are listed). One walk of each folder (its top level only when no pattern starts
    with ``**/``)."""
    import fnmatch

    names = [p.rpartition("/")[2] + suffix for p in patterns for suffix in _PACKED_SUFFIXES]
    deep = any(p.startswith("**/") for p in patterns)
    found: dict[Path, str] = {}
    for raw in listed:
        folder = Path(raw)
        if not folder.is_dir():
            continue
        walk = (
            os.walk(folder, followlinks=True) if deep else [(str(folder), [], os.listdir(folder))]
        )
        seen: set[str] = set()
        for root, dirs, files in walk:
            real = os.path.realpath(root)
            if real in seen:  # a link back up
                dirs[:] = []
                continue
            seen.add(real)
            for name in sorted(files):
                if not any(fnmatch.fnmatch(name, n) for n in names):
                    continue
                path = Path(root) / name
                kind = packed_kind(path) if path.is_file() else None
                if kind is not None and not (packed and unpacking(path) is not None):
                    found.setdefault(path.resolve(), kind)
    return list(found.items())


def _links_to_nothing(listed: list[str | Path], patterns: tuple[str, ...]) -> list[Path]:
    """Symbolic links under the folders of ``listed`` whose target does not exist and whose
    name a reader's pattern (or that name compressed) matches, or that may be a folder (no
    suffix): a results folder copied with its links (``cp -r``, ``rsync`` without ``-L``), a
    hub cache whose blobs were removed. The file search passes over them, so each is said."""
    import fnmatch

    names = [p.rpartition("/")[2] + suffix for p in patterns for suffix in ("", *_PACKED_SUFFIXES)]
    found: list[Path] = []
    for raw in listed:
        folder = Path(raw)
        if not folder.is_dir():
            continue
        seen: set[str] = set()
        for root, dirs, files in os.walk(folder, followlinks=True):
            real = os.path.realpath(root)
            if real in seen:  # a link back up
                dirs[:] = []
                continue
            seen.add(real)
            dirs.sort()
            for name in sorted(files):  # a link to nothing is listed among the files
                path = Path(root) / name
                if not (path.is_symlink() and not path.exists()):
                    continue
                if "." not in name or any(fnmatch.fnmatch(name, n) for n in names):
                    found.append(path)
    return found


def _link_note(path: Path) -> str:
    return (
        f"a symbolic link to {os.readlink(path)}, which does not exist: not read (copy the "
        "folder with the files its links point to, e.g. cp -rL)"
    )


def _archives_in(listed: list[str | Path]) -> list[tuple[Path, str]]:
    """Archives at the top of the folders of ``listed`` (``results.zip``, ``run.tar.gz``): a
    results folder packed whole, said when nothing else is found there."""
    found = []
    for raw in listed:
        folder = Path(raw)
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            kind = packed_kind(path) if path.is_file() else None
            if kind is not None and kind.endswith("archive"):
                found.append((path, kind))
    return found


def _path_list(paths: object) -> list[str | Path]:
    """``paths`` as a list, each a str or a path; a table in memory or another object (a
    DataFrame iterates over its column names) is refused, naming it."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    if isinstance(paths, pd.DataFrame | pd.Series) or not isinstance(paths, Iterable):
        table = (
            " (a table in memory: ResponseMatrix.from_long(frame) for a model, item, score "
            "table; Store(S).ingest(frame) for the canonical columns)"
            if isinstance(paths, pd.DataFrame | pd.Series)
            else ""
        )
        raise InputError(
            f"paths: a {type(paths).__name__}; expected a file or folder path, or a list of "
            f"them{table}"
        )
    listed = list(paths)
    for k, path in enumerate(listed, start=1):
        if not isinstance(path, str | os.PathLike):
            raise InputError(
                f"paths: item {k} is a {type(path).__name__} ({path!r}); expected a file or "
                "folder path"
            )
    return [path if isinstance(path, str) else Path(path) for path in listed]


def read_results(
    source: str,
    paths: str | Path | Iterable[str | Path],
    *,
    benchmark: str | None = None,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    model: str | None = None,
    include_perturbed: bool = False,
    errored: str = "missing",
    duplicates: str = "error",
    layout: str = "auto",
    split: str | None = None,
    group: str | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[pd.DataFrame, LoadReport]:
    """Read result files of one tool into the canonical long table.

    Parameters
    ----------
    source : str
        The tool that wrote the files: a registered reader (:data:`SOURCES`: ``"lm-eval"``,
        ``"lighteval"``, ``"helm"``, ``"inspect"``, ``"opencompass"``, ``"table"``,
        ``"eee"``).
    paths : path-like or iterable of path-like
        Files, or directories searched recursively for the tool's result files.
    benchmark : str, optional
        Benchmark name for every row, overriding the task name the files give.
    metric : str or mapping of str to str, optional
        Metric per benchmark (Inspect: the key of a dict-valued score). ``None`` uses the
        documented default or the only one present, and otherwise raises an error listing the
        choices.
    filter : str or mapping of str to str, optional
        lm-eval filter or Inspect scorer, chosen like ``metric``.
    model : str, optional
        Canonical model id for every row, overriding the one the files give (the tool's own
        name is kept in ``source_model``).
    include_perturbed : bool
        HELM: keep perturbed instances (their ``filter`` is the perturbation name).
    errored : {"missing", "zero"}
        Inspect: a sample with an error is missing (default) or scored 0.
    duplicates : {"error", "latest", "mean"}
        One key (model, benchmark, item, metric, filter, trial, split) given different values:
        an error naming both files (default), the latest run wins, or the mean is kept
        (flagged). The same value from two files or tool versions is kept once.
    layout : {"auto", "long", "wide"}
        ``table`` only.
    split : str, optional
        HELM: the split to keep (default ``test``; other splits are dropped with a reason).
    group : str, optional
        Read every task (benchmark) the files hold as **one** benchmark of this name, each
        item named ``TASK/ID``: lm-eval's MMLU, say, is 57 tasks whose doc ids restart in
        each (``group="mmlu"`` gives one 14,042-item benchmark to fit, select on or estimate
        against). Always prefixed, even for one task, so that a later model's results read the
        same way have the same ids. The tasks must share one metric, filter and split (choose
        them with ``metric=`` / ``filter=`` / ``split=``). Not with ``benchmark=``, which
        renames one task and keeps its ids.
    progress : callable(phase, done, total), optional
        Told each file as it is read (``"reading files"``, files done of total) and the final
        ``"combining rows"`` step; see :mod:`latentbench._progress`.

    ``include_perturbed``, ``errored``, ``layout`` and ``split`` are source options: giving one
    a non-default value for a source that does not take it is an error, never silently
    ignored.

    Returns
    -------
    frame : DataFrame of shape (n_rows, 14)
        The canonical long table, columns :data:`CANONICAL_COLUMNS`; one row per observation,
        no NaN scores.
    report : LoadReport
        Files, record counts, drops with reasons, the metric and filter chosen per benchmark,
        non-binary benchmarks and coverage.

    Warns
    -----
    DataWarning
        Once, listing ``report.notes``: models disagree on a benchmark's item count, a run
        was a ``--limit`` subsample, or a benchmark has non-binary scores (kept as fractions).

    Raises
    ------
    InputError
        Unknown source, an option the source does not take, missing files, malformed records
        (naming the file, line or record, the field, the value and what was expected), an
        unknown or ambiguous metric/filter, or a duplicate key.

    Examples
    --------
    >>> frame, report = read_results("lm-eval", "out/", filter="strict-match")  # doctest: +SKIP
    """
    reader = get_reader(source)
    include_perturbed = check_flag(include_perturbed, "include_perturbed")  # "no" kept them
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise InputError(f"group={group!r}; expected a benchmark name")
    if group is not None and benchmark is not None:
        raise InputError(
            f"benchmark={benchmark!r} and group={group!r}: benchmark renames one task, group "
            "reads several as one benchmark; expected one of them"
        )
    if duplicates not in DUPLICATE_POLICIES:
        raise InputError(
            f"duplicates={duplicates!r}; expected one of {', '.join(DUPLICATE_POLICIES)}"
        )
    for name, choice in (("metric", metric), ("filter", filter)):
        if choice is not None and not isinstance(choice, (str, Mapping)):
            raise InputError(f"{name}={choice!r}; expected a name or a mapping benchmark -> name")
    kwargs = reader.arguments_for(
        {"benchmark": benchmark, "metric": metric, "filter": filter, "model": model},
        {
            "include_perturbed": include_perturbed,
            "errored": errored,
            "layout": layout,
            "split": split,
        },
    )
    if source in ("table", "eee"):  # one metric for every row: a TASK=NAME would be ignored
        for kind, choice in (("metric", metric), ("filter", filter)):
            if isinstance(choice, Mapping):
                given = " ".join(f"{task}={name}" for task, name in choice.items())
                raise InputError(
                    f"{kind} {given}: source {source!r} takes one {kind} name for all its "
                    "rows, not TASK=NAME"
                )
    listed = _path_list(paths)
    _refuse_packed(listed, source, reader.packed)
    packed = _packed_in_folders(listed, reader.patterns, reader.packed)
    dangling = _links_to_nothing(listed, reader.patterns)
    try:
        found = expand(listed, reader.search, shown=reader.patterns)
        files = reader.select(found, [Path(p) for p in listed])
    except InputError as exc:
        also = _aggregates_only(source, str(exc))
        packed = packed or _archives_in(listed)
        if packed:
            path, kind = packed[0]
            also += (
                f"; {len(packed):,} compressed file(s) there are not read: "
                f"{packed_advice(path, kind, f'{source} files')}"
            )
        if dangling:
            also += (
                f"; {len(dangling):,} symbolic link(s) there point to nothing: "
                f"{dangling[0]} is {_link_note(dangling[0])}"
            )
        raise InputError(f"{exc}{also}") from None
    report = LoadReport(source=source, files=[str(f) for f in files])
    for path, kind in packed:  # a gzipped samples file beside the others: said, never dropped
        report.skip_file(path, packed_note(kind, path))
    for path in dangling:  # a model's run linked in from a folder that is not there
        report.skip_file(path, _link_note(path))
    frames = []
    for done, file in enumerate(files):
        notify(progress, "reading files", done, len(files))
        with _collector_paused():
            frames.append(reader.read(file, report, **kwargs))
    for name, tasks in report.renamed.items():
        if len(tasks) > 1:
            shown = ", ".join(map(repr, tasks[:6])) + (", ..." if len(tasks) > 6 else "")
            raise InputError(
                f"benchmark={name!r}: the files hold {len(tasks):,} tasks ({shown}); one "
                "benchmark name for all of them would merge their items (item ids such as "
                "lm-eval's doc ids restart in every task). Expected the files of one task: "
                "ingest each task's files with its own benchmark name, or leave benchmark "
                "unset to keep the task names"
            )
    if reader.names_choices:
        _check_named(report, metric=metric, filter=filter)
    if model is not None:
        report.notes += _one_name_notes(frames, model)
    notify(progress, "combining rows", len(files), len(files))
    frame = finish(
        frames, duplicates, report, named=model is not None, item_field=reader.item_field
    )
    if group is not None:
        frame = _grouped(frame, group, {"metric": metric, "filter": filter})
        report._averaged = [_grouped_keys(rows, group) for rows in report._averaged]
    if not len(frame) and report.skipped_files:
        reasons = "; ".join(f"{s['file']}: {s['reason']}" for s in report.skipped_files)
        other = [f"{reason}: {n:,}" for reason, n in report.dropped.items()
                 if not reason.startswith("file skipped: ")]  # fmt: skip
        also = f" (records dropped from the other files: {'; '.join(other)})" if other else ""
        raise InputError(
            f"no usable results in {counted(len(report.files), 'file')}: {reasons}{also}"
        )
    report.notes += _look_alike_notes(frame)
    report.summarise(frame)
    if report.notes:
        # the caller's line, also through Store.ingest_files
        warnings.warn(
            f"{source}: " + "; ".join(report.notes), DataWarning, stacklevel=user_stacklevel()
        )
    return frame, report


def _one_name_notes(frames: list[pd.DataFrame], model: str) -> list[str]:
    """The note of ``model=NAME`` given to files of several models (``source_model``): every
    row is named one model, so their answers to one item are kept once when equal and
    conflict when not (legitimate for one model's runs under two names, never unsaid)."""
    names = sorted({str(n) for f in frames if len(f) for n in f["source_model"].unique()})
    if len(names) < 2:
        return []
    shown = ", ".join(map(repr, names[:4])) + (", ..." if len(names) > 4 else "")
    return [
        f"model={model!r} names the rows of {len(names):,} models of the files ({shown}) as "
        "one model: their answers to one item are kept once where they agree; unless they "
        "are one model's runs, read each model's files on their own"
    ]


def _grouped(
    frame: pd.DataFrame, group: str, given: Mapping[str, object] | None = None
) -> pd.DataFrame:
    """The tasks of ``frame`` as one benchmark ``group``, items ``TASK/ID``; refused when the
    tasks were read with different metrics, filters or splits (the group's matrix holds one
    score per (model, item)); ``given``: the ``metric`` / ``filter`` asked for (a name some
    task lacks is said: choosing it again cannot help)."""
    if not len(frame):
        return frame
    for column in ("metric", "filter", "split"):
        chosen = frame.groupby("benchmark", sort=True)[column].unique()
        values = sorted({str(v) for vs in chosen for v in vs})
        name = (given or {}).get(column)
        if len(values) > 1 and isinstance(name, str):
            lacking = [(t, vs) for t, vs in chosen.items() if name not in map(str, vs)]
            shown = "; ".join(f"{t}: {', '.join(map(str, vs))}" for t, vs in lacking[:6])
            raise InputError(
                f"group={group!r}: {column}={name!r} was given, but "
                f"{len(lacking):,} of its {len(chosen):,} tasks have no {column} {name!r} and were "
                "read with another "
                f"({shown}{'; ...' if len(lacking) > 6 else ''}); expected tasks that share one "
                f"{column}: group only those, and read the others as benchmarks of their own "
                "(without group=)"
            )
        if len(values) > 1:
            shown = "; ".join(
                f"{task}: {', '.join(map(str, vs))}" for task, vs in list(chosen.items())[:6]
            )
            how = (
                "give the files of tasks evaluated on one split"
                if column == "split"
                else f"choose it with {column}="
            )
            raise InputError(
                f"group={group!r}: its {len(chosen):,} tasks were read with different {column}s "
                f"({shown}{'; ...' if len(chosen) > 6 else ''}); expected one {column} for "
                f"the group: {how}"
            )
    frame = _grouped_keys(frame, group)
    clash = frame.duplicated(list(KEY_COLUMNS), keep=False)
    if clash.any():
        row = frame.loc[clash].iloc[0]
        raise InputError(
            f"group={group!r}: two tasks give the same item id {row['item']!r} (a task name "
            "and an item id with '/' in them); expected distinct TASK/ID names"
        )
    return frame.reset_index(drop=True)


def _grouped_keys(frame: pd.DataFrame, group: str) -> pd.DataFrame:
    """``frame``'s rows under benchmark ``group``, items ``TASK/ID``."""
    return frame.assign(
        item=frame["benchmark"].astype(TEXT) + "/" + frame["item"].astype(TEXT),
        benchmark=group,
    )


def _check_named(report: LoadReport, **choices: str | Mapping[str, str] | None) -> None:
    """A name given for every benchmark that no benchmark offers is a typo, not a default."""
    for kind, choice in choices.items():
        if isinstance(choice, str):
            used = [c for c in report.choices.values() if c.get(kind) == choice]
            if not used:
                offered = sorted({c[kind] for c in report.choices.values() if kind in c})
                raise InputError(
                    f"{', '.join(report.files)}: unknown {kind} {choice!r}; no benchmark offers "
                    f"it (chosen instead: {', '.join(offered) or '(none)'})"
                )
        elif isinstance(choice, Mapping):  # TASK=NAME: a task that was not read is a typo
            unknown = [t for t in choice if t != "*" and t not in report.choices]
            if unknown:
                read = sorted(report.choices)
                raise InputError(
                    f"{kind} {unknown[0]}={choice[unknown[0]]}: no benchmark {unknown[0]!r} was "
                    f"read; expected one of {', '.join(map(repr, read[:8]))}"
                    f"{', ...' if len(read) > 8 else ''} (the task name as the files give it)"
                )
