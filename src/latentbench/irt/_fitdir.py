"""The fit directory (``latentbench fit --out DIR``): :func:`save_fit` writes it and
:func:`load_fit` reads it back (:meth:`IRTResult.save` and :meth:`IRTResult.load`)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._checks import as_path, json_problem, user_stacklevel
from latentbench._compat import TEXT, read_csv
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._objective import (
    SIGMA_RANGE,
    GaussianPenalty,
    Normalisation,
    general_direction,
)
from latentbench.irt._priors import PriorSelection
from latentbench.irt._random_items import RandomItemsFit
from latentbench.irt._reported import measured_models, rank_abilities, reported_abilities

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = [
    "FILES",
    "OPTIONAL_FILES",
    "RANDOM_ITEMS_FILE",
    "SavedPaths",
    "load_fit",
    "save_fit",
    "write_csv",
]

FILES = ("abilities.csv", "items.csv", "fit.json")

RANDOM_ITEMS_FILE = "random_items.npz"
"""The random-item fit behind the ability intervals (:class:`RandomItemsFit`), when they
used it: optional, read back only when fit.json names it with a matching SHA-256."""

OPTIONAL_FILES = (RANDOM_ITEMS_FILE, "heldout.csv")
"""Files a fit directory holds only from some fits (``fit --holdout`` writes heldout.csv):
a save into a former fit directory removes those it does not write, so that no file of an
earlier fit is left beside the new one."""


class SavedPaths(dict[str, Path]):
    """What :func:`save_fit` returns: every file written (name -> path), plus ``removed``:
    the files of an earlier fit in the same directory that this fit does not write
    (:data:`OPTIONAL_FILES`), removed."""

    removed: list[Path]

    def __init__(self, paths: Mapping[str, Path], removed: list[Path]) -> None:
        super().__init__(paths)
        self.removed = removed


_INTERVAL_COLUMNS = ("se", "lower", "upper", "theta_fit", "no_data", "center")
"""Columns of the reported abilities table that the fit's own table does not have."""


def write_csv(table: pd.DataFrame, path: Path) -> None:
    """Write ``table`` as CSV with every text field quoted.

    pandas quotes only fields holding the delimiter, a quote or ``\\n``: an id with a lone
    carriage return was written bare and read back as two rows. Quoting every non-numeric
    field keeps any id whole; :func:`load_fit` reads it back exactly. ``pd.read_csv`` with
    its defaults does not: it reads an id ``NA`` or ``None`` as missing, quoted or not
    (docs/formats.md, "Reading the CSV outputs in your own code", gives the options).
    """
    table.to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)


def save_fit(
    result: IRTResult,
    directory: str | Path,
    matrix: ResponseMatrix | None = None,
    *,
    info: Mapping[str, Any] | None = None,
    tables: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, Path]:
    """Write the fit directory: ``abilities.csv``, ``items.csv`` and ``fit.json``.

    The directory format is owned here; :meth:`load` reads it back.

    Parameters
    ----------
    directory : path-like
        Created when absent; the files are overwritten. They are written all together:
        into a staging folder beside it, then moved in with ``fit.json`` last, so an
        interruption never leaves new tables beside a stale ``fit.json``. Model and item
        ids that a spreadsheet would run as formulas get a leading apostrophe (undone by
        :meth:`load`).
    matrix : ResponseMatrix, optional
        The fitted matrix; by default the one the result keeps (``result.matrix``, set by
        :meth:`TwoPL.fit <latentbench.irt.TwoPL.fit>`). With a matrix, ``abilities.csv``
        gains ``lower``, ``upper`` and ``se`` (95% intervals,
        :func:`latentbench.irt.standard_errors`) after ``theta``, which becomes the reported
        ability (``theta_fit`` keeps the fit's own estimate), and ``no_data``; the
        random-item fit is written as ``random_items.npz``. Without any (a loaded result), a
        :class:`~latentbench.exceptions.DataWarning` says that these are left out.
    info : mapping, optional
        Extra JSON-ready entries for ``fit.json`` (e.g. the CLI's ``input``: path, SHA-256
        and layout of the responses), after the package version and :meth:`fit_info`.
        Without an ``input`` entry, a ``matrix`` read from a file
        (:meth:`ResponseMatrix.read <latentbench.io.ResponseMatrix.read>`, all its rows and
        columns, in any order) records its path, SHA-256 and layout there, as ``latentbench
        fit`` does, so that ``report`` finds it; a subset of the file records nothing. A
        ``matrix`` from :meth:`Store.matrix <latentbench.io.store.Store.matrix>` records the
        store, benchmark, metric, filter, split and a hash of its cells, as ``latentbench fit
        --store`` does.
    tables : mapping of str to DataFrame, optional
        Extra tables, each written as ``<name>.csv`` (e.g. ``heldout``).

    Returns
    -------
    SavedPaths
        A dict ``{"abilities": path, "items": path, "fit": path}``, ``random_items`` when the
        random-item fit was written, and one entry per extra table: every file written. Its
        ``removed`` lists the files of an earlier fit that this one does not write
        (``random_items.npz``, ``heldout.csv``: :data:`OPTIONAL_FILES`), removed when the
        directory held a ``fit.json``; other files in the directory are kept.
    """
    from latentbench._version import __version__
    from latentbench.io._outputs import check_destination, escape_spreadsheet, write_directory

    out = as_path(directory, "directory")
    check_destination(out, "dir", flag="directory=")  # before the (not cheap) intervals
    paths = {
        "abilities": out / "abilities.csv",
        "items": out / "items.csv",
        "fit": out / "fit.json",
    }
    uncertainty = None
    if matrix is None:
        matrix = result.matrix
    if matrix is None:
        warnings.warn(
            f"{directory}: saved without the fitted matrix (none given, and the result keeps "
            "none, e.g. a loaded fit): abilities.csv has no intervals (lower, upper, se) and "
            "fit.json no input; pass save(directory, matrix) for the full fit directory",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    else:
        from latentbench.irt.inference import standard_errors

        uncertainty = standard_errors(result, matrix)
    abilities = escape_spreadsheet(reported_abilities(result, uncertainty), ("model",))
    items = escape_spreadsheet(result.items, ("item",))
    record: dict[str, Any] = {"latentbench_version": __version__, **result.fit_info()}
    # the fit's model order (abilities.csv is ordered by rank): load restores it
    record["model_order"] = list(result.model_ids)
    record.update(info or {})
    source = getattr(matrix, "source", None)
    # read from a file (ResponseMatrix.read sets layout), all of it: the file is the input
    if "input" not in record and getattr(matrix, "layout", None) and Path(str(source)).is_file():
        from latentbench.io._files import input_record

        record["input"] = input_record(str(source), matrix)
    if "input" not in record and getattr(matrix, "store_query", None):
        # from Store.matrix: the store's benchmark is the input, as `fit --store` records it
        from latentbench.io._files import store_input_record

        record["input"] = store_input_record(matrix)
    if uncertainty is not None:
        record["ability_intervals"] = {
            "method": uncertainty.method,
            "level": uncertainty.level,
            "columns": "theta (the reported ability), lower/upper = theta -/+ 1.96 se (a "
            "union fallback: the union's ends, se its half-width / 1.96; a detached model: "
            "see detached); theta_fit: the fit's own estimate",
            "fallback": uncertainty.fallback,
            "caveat": uncertainty.caveat,
            "checks": uncertainty.checks,
            "detached": uncertainty.detached,
        }
    # the tables as text, hashed into fit.json: load says when one was edited since
    texts = {
        "abilities.csv": abilities.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC).encode(),
        "items.csv": items.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC).encode(),
    }
    record["tables_sha256"] = {
        name: hashlib.sha256(data).hexdigest() for name, data in texts.items()
    }
    writers: dict[str, Callable[[Path], object]] = {
        name: partial(Path.write_bytes, data=data) for name, data in texts.items()
    }
    if uncertainty is not None and result.random_items is not None:
        # the random-item fit (the costly part of the intervals) is kept with the fit, so a
        # report of the directory reuses it; fit.json names it by its SHA-256
        blob = _random_items_bytes(result.random_items)
        record["ability_intervals"]["random_items"] = {
            "file": RANDOM_ITEMS_FILE,
            "sha256": hashlib.sha256(blob).hexdigest(),
        }
        writers[RANDOM_ITEMS_FILE] = lambda path: path.write_bytes(blob)
        paths["random_items"] = out / RANDOM_ITEMS_FILE
    for name, table in (tables or {}).items():
        paths[name] = out / f"{name}.csv"
        writers[f"{name}.csv"] = partial(write_csv, table)
    # strict JSON (RFC 8259): a non-finite number is written as null, never as NaN/Infinity
    strict = _finite_or_null(record)
    writers["fit.json"] = lambda path: path.write_text(
        json.dumps(strict, indent=2, allow_nan=False)
    )
    # a former fit directory: its optional files that this fit does not write are stale
    stale = (
        [out / name for name in OPTIONAL_FILES if name not in writers and (out / name).is_file()]
        if (out / "fit.json").is_file()
        else []
    )
    # all together: a staging folder beside ``out``, fit.json moved in last
    write_directory(
        out, writers, last="fit.json", remove=[path.name for path in stale], flag="directory="
    )
    return SavedPaths(paths, stale)


def load_fit(cls: type[IRTResult], directory: str | Path) -> IRTResult:
    """Rebuild a result from a directory written by :meth:`save` (``latentbench fit``).

    The raw (unnormalised) parameters are not saved, so ``raw`` is None, and neither is the
    matrix (pass it to :meth:`standard_errors` and friends). Directories written before the
    penalty was recorded get the ridge of their ``options["l2"]``.
    """
    directory = as_path(directory, "directory")
    paths = {name: directory / name for name in FILES}
    missing = [name for name, p in paths.items() if not p.exists()]
    if missing:
        raise InputError(
            f"{directory} lacks {', '.join(missing)}; expected the output of "
            "`latentbench fit --out DIR`"
        )
    try:
        return _load(cls, paths)
    except InputError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, OSError, RecursionError) as exc:
        # a malformed file: say which one (the error names its file when it can)
        raise InputError(
            f"{directory}: cannot read the fit ({exc}); expected the output of "
            "`latentbench fit --out DIR`"
        ) from None


def _load(cls: type[IRTResult], paths: dict[str, Path]) -> IRTResult:
    """The result of a fit directory whose files exist (``paths``: name -> path), each file
    read and checked in turn; a malformed one is refused by name."""
    info, rank = _read_info(paths["fit.json"])
    thetas = ("theta",) if rank == 1 else tuple(f"theta_{k + 1}" for k in range(rank))
    discs = (
        ("discrimination",) if rank == 1 else tuple(f"discrimination_{k + 1}" for k in range(rank))
    )
    abilities = _read_table(paths["abilities.csv"], "model", thetas)
    # whole numbers, as the fit wrote them: the fit's table recomputes rank_theta and
    # rank_shift, but the saved table (a report without the responses) showed them as read,
    # 15.000 beside a model that is not ranked
    for column in ("rank_accuracy", "rank_theta", "rank_shift"):
        if column in abilities.columns:
            abilities[column] = _ranks(abilities[column])
    items = _read_table(paths["items.csv"], "item", (*discs, "easiness"))
    edited = _say_edited(paths, info)
    _check_complete(items, "item", (*discs, "easiness"), info.get("n_items"), paths["items.csv"])
    used = ("theta_fit",) if rank == 1 and "theta_fit" in abilities.columns else thetas
    _check_complete(abilities, "model", used, info.get("n_models"), paths["abilities.csv"])
    _check_accuracy(abilities, paths["abilities.csv"])
    saved = _saved_abilities(abilities, info, edited, rank)
    abilities = _fit_table(abilities, info.get("model_order"), paths["abilities.csv"])
    U = abilities[list(thetas)].to_numpy(float)
    V = items[list(discs)].to_numpy(float)
    if rank > 1:
        _rank_r_abilities(abilities, items, U, V)
    options = dict(info.get("options", {}))
    penalty = (
        GaussianPenalty.from_dict(info["penalty"])
        if "penalty" in info
        else GaussianPenalty.ridge(1e-2 if options.get("l2") is None else float(options["l2"]))
    )
    if options.get("prior") is not None and info.get("prior_selection") is None:
        warnings.warn(
            f"{paths['fit.json']}: a fit with prior {options['prior']!r} but no "
            "prior_selection (edited, or written by an older version): it is read as a "
            "joint-ML fit, so its ability intervals are the observed-information ones, not "
            "those `latentbench fit` reported",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    scale = _saved_normalisation(info, abilities)
    return cls(
        abilities=abilities,
        items=items,
        U=U,
        V=V,
        b=items["easiness"].to_numpy(float),
        sigma=float(info.get("sigma", 1.0)),
        rank=rank,
        loss=float(info.get("loss", np.nan)),
        neg_log_likelihood=float(info.get("neg_log_likelihood", np.nan)),
        loss_history=[],
        n_iter=int(info.get("iterations", 0)),
        converged=bool(info.get("converged", False)),
        seconds=float(info.get("seconds", 0.0)),
        options=options,
        shape=(len(abilities), len(items)),
        n_observed=int(info.get("n_observed", 0)),
        penalty=penalty,
        normalisation=scale,
        prior_selection=_prior_selection(info.get("prior_selection"), paths["fit.json"]),
        random_items=_load_random_items(paths["fit.json"].parent, info),
        disconnected=info.get("disconnected")
        if isinstance(info.get("disconnected"), dict)
        else None,
        restarted="restarted" in info,
        joint_ml_check=_joint_ml_check(info),
        saved_abilities=saved,
        saved_intervals=info.get("ability_intervals")
        if isinstance(info.get("ability_intervals"), dict)
        else None,
    )


def _joint_ml_check(info: dict[str, Any]) -> dict[str, float] | None:
    """A joint-ML fit's held-out check as ``fit.json`` keeps it (``heldout_check`` without a
    ``prior_selection``), or None."""
    check = info.get("heldout_check")
    if "prior_selection" in info or not isinstance(check, dict):
        return None
    keys = ("log_loss", "additive_log_loss", "difference")
    if not all(isinstance(check.get(k), int | float) for k in keys):
        return None
    return {k: float(check[k]) for k in keys}


def _read_info(path: Path) -> tuple[dict[str, Any], int]:
    """fit.json as a dict, and its rank (an integer >= 1), or an InputError naming ``path``."""
    try:
        info = json.loads(path.read_text())
    except (ValueError, RecursionError) as exc:  # also a huge integer, a value nested too deeply
        raise InputError(f"{path}: not JSON that can be read ({json_problem(exc)})") from None
    if not isinstance(info, dict):
        raise InputError(f"{path}: expected a JSON object")
    try:
        rank = int(info.get("rank", 1))
    except (TypeError, ValueError):
        raise InputError(f"{path}: rank={info.get('rank')!r}; expected an integer") from None
    if rank < 1:
        raise InputError(f"{path}: rank={rank}; expected an integer >= 1")
    sigma = info.get("sigma", 1.0)
    low, high = SIGMA_RANGE
    # a hand-edited temperature: 0 divides by zero, a negative one flips every item, NaN
    # poisons every estimate (bool is an int to Python: refused too); compared as read, not
    # through float(): JSON's integers have no limit and float(10**400) overflows
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not low <= sigma <= high:
        raise InputError(
            f"{path}: sigma={sigma!r}; expected a number in [{low:g}, {high:g}] (the fit's "
            "temperature, as `latentbench fit` wrote it)"
        )
    return info, rank


def _read_table(path: Path, id_column: str, numeric: tuple[str, ...]) -> pd.DataFrame:
    """A table ``fit`` wrote: the ids unescaped, the ``numeric`` columns (required) and every
    other column of numbers as floats (empty cells NaN); refused by name when unreadable, a
    required column is missing, or one holds text."""
    from latentbench.io._outputs import unescape_spreadsheet

    try:
        frame = read_csv(path, dtype={id_column: TEXT}, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a readable CSV table ({exc})") from None
    missing = [c for c in (id_column, *numeric) if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path}: lacks the column(s) {', '.join(missing)}; expected the table "
            "`latentbench fit` writes"
        )
    frame[id_column] = unescape_spreadsheet(frame[id_column])
    for column in frame.columns:  # empty cells of number columns are NaN (never "")
        if column == id_column or pd.api.types.is_numeric_dtype(frame[column]):
            continue
        text = frame[column].astype(TEXT)
        values = pd.to_numeric(text.where(text != ""), errors="coerce")
        wrong = values.isna() & (text != "")
        if not wrong.any():
            frame[column] = values
        elif column in numeric:
            raise InputError(
                f"{path}: column {column!r} holds {text[wrong].iloc[0]!r}; expected numbers"
            )
    return frame


def _ranks(values: pd.Series) -> pd.Series:
    """A rank column read back as the fit builds it: whole numbers with NA where a model is
    not ranked (``Int64``; read as floats when one is empty, the report showed 1.000 for 1);
    left as read when it holds another number (an edited table)."""
    numbers = pd.to_numeric(values, errors="coerce")
    known = numbers.dropna().to_numpy(dtype=float)
    if not (np.isfinite(known).all() and (known == np.round(known)).all()):
        return values
    return numbers.astype("Int64")


def _saved_abilities(
    abilities: pd.DataFrame, info: Mapping[str, Any], edited: set[str], rank: int
) -> pd.DataFrame | None:
    """The reported abilities with their intervals, as `fit` wrote them (for a report made
    without the responses: the same theta and interval as the file, not the fit's own);
    None when the table was edited, lacks them, holds a missing one or an infinite theta or
    se (an interval's end is infinite where it is open), or holds an old rank > 1 fit's first
    factor."""
    reported = ("theta", "se", "lower", "upper")
    # (a rank > 1 fit written before the ability was U w, i.e. before the tables' hashes:
    # its saved theta is the first factor, not the ability)
    old_factor = rank > 1 and "tables_sha256" not in info
    if not set(reported) <= set(abilities.columns) or "abilities.csv" in edited or old_factor:
        return None
    saved = abilities.copy()
    values = {c: pd.to_numeric(saved[c], errors="coerce").to_numpy(float) for c in reported}
    # an interval open on its far side (a detached model's, a joint-ML fit's model at the
    # floor or ceiling) ends at +-inf as fit wrote it: only a missing value or an infinite
    # theta or se marks an edited or partial table (one open end dropped every interval)
    if not all(np.isfinite(values[c]).all() for c in ("theta", "se")) or any(
        np.isnan(values[c]).any() for c in ("lower", "upper")
    ):
        return None  # an edited or partial table: not shown as the fit's
    return saved


def _rank_r_abilities(
    abilities: pd.DataFrame, items: pd.DataFrame, U: np.ndarray, V: np.ndarray
) -> None:
    """A rank > 1 fit's ability along the items' mean loading, whichever version wrote
    theta, with its ranks, and the discrimination along it (the tables changed in place)."""
    w = general_direction(V)
    abilities["theta"] = U @ w
    if "rank_theta" in abilities.columns:
        abilities["rank_theta"] = rank_abilities(
            abilities["theta"].to_numpy(float), measured_models(abilities)
        )
        if "rank_accuracy" in abilities.columns:
            abilities["rank_shift"] = abilities["rank_accuracy"] - abilities["rank_theta"]
    items["discrimination"] = V @ w


def _saved_normalisation(info: Mapping[str, Any], abilities: pd.DataFrame) -> Normalisation | None:
    """The normalisation fit.json records (None when it records none), with the models that
    do not set the scale (older fit.json: the detached ones only) left out of its reference."""
    if "raw_shift" not in info:
        return None
    detached = set(info.get("off_scale_models", info.get("detached_models")) or [])
    ids = [str(m) for m in abilities["model"]]
    reference = np.array([m not in detached for m in ids]) if detached else None
    return Normalisation(np.asarray(info["raw_shift"], float), float(info["raw_scale"]), reference)


def _say_edited(paths: Mapping[str, Path], info: Mapping[str, Any]) -> set[str]:
    """A warning per table whose content differs from the SHA-256 ``fit`` recorded: it is read
    as it is now (an edited discrimination is used as edited; the abilities are the fit's own
    ``theta_fit``, so an edited ``theta`` is not). Fits written before the hashes: silent.
    Returns the names of the edited tables."""
    edited: set[str] = set()
    recorded = info.get("tables_sha256")
    if not isinstance(recorded, Mapping):
        return edited
    for name in ("abilities.csv", "items.csv"):
        expected = recorded.get(name)
        if expected is None or name not in paths:
            continue
        if hashlib.sha256(paths[name].read_bytes()).hexdigest() != expected:
            effect = (
                "its parameters are used as they are now"
                if name == "items.csv"
                else "the fit's own abilities (theta_fit and the factors) are read from it as "
                "they are now; its theta, se and intervals are not used"
            )
            edited.add(name)
            warnings.warn(
                f"{paths[name]}: edited since the fit (its SHA-256 differs from the one in "
                f"fit.json): {effect}",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
    return edited


def _check_complete(
    frame: pd.DataFrame, id_column: str, numeric: tuple[str, ...], count: Any, path: Path
) -> None:
    """Refuse a table with rows missing against fit.json's count, or an empty parameter (an
    edited or truncated file would otherwise be fitted on, or give NaN predictions)."""
    if isinstance(count, int) and len(frame) != count:
        raise InputError(
            f"{path}: {len(frame):,} rows, but fit.json says n_{id_column}s = {count:,}; "
            "expected the files of one `latentbench fit --out DIR` (edited or truncated?)"
        )
    for column in numeric:
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{path}: column {column!r}, line {k + 2} ({id_column} "
                f"{str(frame[id_column].iloc[k])!r}): "
                f"{'empty' if np.isnan(values[k]) else float(values[k])}; expected a finite "
                "number (edited or truncated?)"
            )


def _check_accuracy(abilities: pd.DataFrame, path: Path) -> None:
    """Refuse an ``accuracy`` outside [0, 1], or a blank one for a model with observed
    scores (``n_observed`` > 0): the estimate ranks a new model against these, and would
    otherwise drop the model or rank against an impossible score."""
    if "accuracy" not in abilities.columns:
        return
    values = pd.to_numeric(abilities["accuracy"], errors="coerce").to_numpy(dtype=float)
    observed = (
        pd.to_numeric(abilities["n_observed"], errors="coerce").fillna(1).to_numpy() > 0
        if "n_observed" in abilities.columns
        else np.ones(values.size, dtype=bool)
    )
    bad = (np.isnan(values) & observed) | (np.isfinite(values) & ((values < 0) | (values > 1)))
    bad |= np.isinf(values)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raw = abilities["accuracy"].iloc[k]
        shown = "empty" if pd.isna(raw) else repr(raw) if isinstance(raw, str) else str(raw)
        raise InputError(
            f"{path}: column 'accuracy', line {k + 2} (model "
            f"{str(abilities['model'].iloc[k])!r}): {shown}; expected a score in [0, 1] "
            f"(edited?; {int(bad.sum()):,} such row(s))"
        )


def _random_items_bytes(fit: RandomItemsFit) -> bytes:
    """``fit`` as an ``.npz`` archive (one array per field), in memory."""
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {f.name: np.asarray(getattr(fit, f.name)) for f in fields(fit)}
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _load_random_items(directory: Path, info: dict[str, Any]) -> RandomItemsFit | None:
    """The saved random-item fit that fit.json names, or None (absent, changed or from another
    version, its fields or its item bootstrap's limits: the intervals are then recomputed,
    never read from a stale file)."""
    entry = (info.get("ability_intervals") or {}).get("random_items")
    if not isinstance(entry, dict):
        return None
    path = directory / RANDOM_ITEMS_FILE
    try:
        blob = path.read_bytes()
        if hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
            return None
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            values = {name: archive[name] for name in archive.files}
        kinds = {f.name: f.type for f in fields(RandomItemsFit)}
        if set(values) != set(kinds):
            return None
        scalars = {"log_likelihood": float, "n_iter": int, "converged": bool, "edge_mass": float,
                   "grid_top": float, "data_key": str, "boot_seed": int}  # fmt: skip
        law = RandomItemsFit(
            **{
                name: scalars[name](value.item()) if name in scalars else value
                for name, value in values.items()
            }
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return law if _bootstrapped_as_now(law) else None


def _bootstrapped_as_now(law: RandomItemsFit) -> bool:
    """Whether a saved random-item fit holds the item bootstrap exactly where this version
    runs it (:func:`latentbench.irt._fitted._item_bootstrap_applies` of its shape). A fit
    saved by a version with another limit is not reused: at 31-100 models one saved before
    2026-12-08 (limit 30) holds no replicates, and its intervals would be the law-fixed ones
    where a refit of the same matrix gives the bootstrapped ones."""
    from latentbench.irt._fitted import _item_bootstrap_applies

    n_law = int(law.in_law.sum()) if law.in_law.size else int(law.theta.size)
    return (law.n_boot >= 2) == _item_bootstrap_applies(n_law, int(law.item_mean.shape[0]))


def _fit_table(abilities: pd.DataFrame, order: Any, path: Path) -> pd.DataFrame:
    """The fit's own abilities table from a saved reported one.

    ``theta`` back to the fit's estimate (``theta_fit``), the interval columns dropped, the
    rows back in the fit's model order (``model_order`` of fit.json; directories written
    before it keep the file's order), the ranks recomputed from the fit's estimate.
    """
    if "theta_fit" in abilities.columns:
        abilities["theta"] = abilities["theta_fit"].to_numpy(float)
    abilities = abilities.drop(columns=[c for c in _INTERVAL_COLUMNS if c in abilities.columns])
    if isinstance(order, list):
        position = {model: k for k, model in enumerate(order)}
        models = abilities["model"].tolist()
        if len(position) != len(models) or set(position) != set(models):
            raise InputError(
                f"{path}: its models differ from fit.json's model_order; expected the files "
                "of one `latentbench fit --out DIR`"
            )
        abilities = abilities.iloc[np.argsort([position[m] for m in models])]
        abilities = abilities.reset_index(drop=True)
    # the fit's column order (the saved table leads with the rank)
    columns = [c for c in abilities.columns if c != "rank_theta"]
    if "rank_theta" in abilities.columns:
        at = columns.index("n_observed") + 1 if "n_observed" in columns else len(columns)
        columns.insert(at, "rank_theta")
    abilities = abilities[columns]
    if "rank_theta" in abilities.columns and "theta" in abilities.columns:
        abilities["rank_theta"] = rank_abilities(
            abilities["theta"].to_numpy(float), measured_models(abilities)
        )
        if "rank_accuracy" in abilities.columns:
            abilities["rank_shift"] = abilities["rank_accuracy"] - abilities["rank_theta"]
    return abilities


def _prior_selection(record: Any, path: Path) -> PriorSelection | None:
    """The prior selection recorded in fit.json (None for a joint-ML fit or an old file)."""
    if record is None:
        return None
    try:
        return PriorSelection(
            a_sd=float(record["a_sd"]),
            b_mean=float(record["b_mean"]),
            b_sd=float(record["b_sd"]),
            grid=[float(x) for x in record.get("grid", [])],
            # a non-finite loss was written as null
            heldout_log_loss=[
                float("nan") if x is None else float(x) for x in record.get("heldout_log_loss", [])
            ],
            additive_log_loss=float(record.get("additive_log_loss") or float("nan")),
            edge=_edge(record.get("edge")),
            edge_z=float(record.get("edge_z") or float("nan")),
            extended=[float(x) for x in record.get("extended", [])],
            additive_converged=_flag(record.get("additive_converged", True)),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError(
            f"{path}: prior_selection is {record!r:.80}; expected a_sd, b_mean and b_sd numbers"
        ) from None


def _flag(value: Any) -> bool:
    """A true/false field of fit.json (else a ValueError)."""
    if not isinstance(value, bool):
        raise ValueError(value)
    return value


def _edge(value: Any) -> Any:
    """fit.json's ``prior_selection.edge``: None, "lower" or "upper" (else a ValueError)."""
    if value not in (None, "lower", "upper"):
        raise ValueError(value)
    return value


def _finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float (at any depth) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(item) for item in value]
    return value
