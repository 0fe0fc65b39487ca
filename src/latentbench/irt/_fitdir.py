"""The fit directory (``latentbench fit --out DIR``): :func:`save_fit` writes it and
:func:`load_fit` reads it back (:meth:`IRTResult.save` and :meth:`IRTResult.load`)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._objective import GaussianPenalty, Normalisation

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["FILES", "load_fit", "save_fit"]

FILES = ("abilities.csv", "items.csv", "fit.json")


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
        The fitted matrix: ``abilities.csv`` then gains ``center``, ``se``, ``lower`` and
        ``upper`` (95% intervals, :func:`latentbench.irt.standard_errors`) after ``theta``.
    info : mapping, optional
        Extra JSON-ready entries for ``fit.json`` (e.g. the CLI's ``input``: path, SHA-256
        and layout of the responses), after the package version and :meth:`fit_info`.
    tables : mapping of str to DataFrame, optional
        Extra tables, each written as ``<name>.csv`` (e.g. ``heldout``).

    Returns
    -------
    dict
        ``{"abilities": path, "items": path, "fit": path}`` plus one entry per extra table.
    """
    from latentbench._version import __version__
    from latentbench.io._outputs import escape_spreadsheet, write_directory

    out = Path(directory)
    paths = {
        "abilities": out / "abilities.csv",
        "items": out / "items.csv",
        "fit": out / "fit.json",
    }
    abilities = result.abilities.copy()
    if matrix is not None:
        from latentbench.irt.inference import standard_errors

        uncertainty = standard_errors(result, matrix)
        unc = uncertainty.abilities
        at = list(abilities.columns).index("theta") + 1
        for offset, column in enumerate(("center", "se", "lower", "upper")):
            abilities.insert(int(at) + offset, column, unc[column].to_numpy())
    abilities = escape_spreadsheet(abilities, ("model",))
    items = escape_spreadsheet(result.items, ("item",))
    record: dict[str, Any] = {"latentbench_version": __version__, **result.fit_info()}
    record.update(info or {})
    if matrix is not None:
        record["ability_intervals"] = (
            f"95% intervals ({uncertainty.method}), columns center/se/lower/upper: "
            "lower/upper = center -/+ 1.96 se"
        )
    writers: dict[str, Callable[[Path], object]] = {
        "abilities.csv": lambda path: abilities.to_csv(path, index=False),
        "items.csv": lambda path: items.to_csv(path, index=False),
    }
    for name, table in (tables or {}).items():
        paths[name] = out / f"{name}.csv"
        writers[f"{name}.csv"] = partial(table.to_csv, index=False)
    # strict JSON (RFC 8259): a non-finite number is written as null, never as NaN/Infinity
    strict = _finite_or_null(record)
    writers["fit.json"] = lambda path: path.write_text(
        json.dumps(strict, indent=2, allow_nan=False)
    )
    # all together: a staging folder beside ``out``, fit.json moved in last
    write_directory(out, writers, last="fit.json")
    return paths


def load_fit(cls: type[IRTResult], directory: str | Path) -> IRTResult:
    """Rebuild a result from a directory written by :meth:`save` (``latentbench fit``).

    The raw (unnormalised) parameters are not saved, so ``raw`` is None, and neither is the
    matrix (pass it to :meth:`standard_errors` and friends). Directories written before the
    penalty was recorded get the ridge of their ``options["l2"]``.
    """
    directory = Path(directory)
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
    except (ValueError, KeyError, TypeError, IndexError, OSError) as exc:
        # a malformed file: say which one (the error names its file when it can)
        raise InputError(
            f"{directory}: cannot read the fit ({exc}); expected the output of "
            "`latentbench fit --out DIR`"
        ) from None


def _load(cls: type[IRTResult], paths: dict[str, Path]) -> IRTResult:
    from latentbench.io._outputs import unescape_spreadsheet

    def table(name: str, id_column: str, numeric: tuple[str, ...]) -> pd.DataFrame:
        path = paths[name]
        try:
            frame = pd.read_csv(path, dtype={id_column: str}, keep_default_na=False)
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
            text = frame[column].astype(str)
            values = pd.to_numeric(text.where(text != ""), errors="coerce")
            wrong = values.isna() & (text != "")
            if not wrong.any():
                frame[column] = values
            elif column in numeric:
                raise InputError(
                    f"{path}: column {column!r} holds {text[wrong].iloc[0]!r}; expected numbers"
                )
        return frame

    try:
        info = json.loads(paths["fit.json"].read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{paths['fit.json']}: not JSON ({exc})") from None
    if not isinstance(info, dict):
        raise InputError(f"{paths['fit.json']}: expected a JSON object")
    try:
        rank = int(info.get("rank", 1))
    except (TypeError, ValueError):
        raise InputError(
            f"{paths['fit.json']}: rank={info.get('rank')!r}; expected an integer"
        ) from None
    if rank < 1:
        raise InputError(f"{paths['fit.json']}: rank={rank}; expected an integer >= 1")
    thetas = ("theta",) if rank == 1 else tuple(f"theta_{k + 1}" for k in range(rank))
    discs = (
        ("discrimination",) if rank == 1 else tuple(f"discrimination_{k + 1}" for k in range(rank))
    )
    abilities = table("abilities.csv", "model", thetas)
    items = table("items.csv", "item", (*discs, "easiness"))
    U = abilities[list(thetas)].to_numpy(float)
    V = items[list(discs)].to_numpy(float)
    options = dict(info.get("options", {}))
    penalty = (
        GaussianPenalty.from_dict(info["penalty"])
        if "penalty" in info
        else GaussianPenalty.ridge(float(options.get("l2", 1e-2)))
    )
    scale = None
    if "raw_shift" in info:
        scale = Normalisation(np.asarray(info["raw_shift"], float), float(info["raw_scale"]))
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
    )


def _finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float (at any depth) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(item) for item in value]
    return value
