"""An experiment as written to its directory (``latentbench experiment --out DIR``): what a
report needs, read back with its checks."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from latentbench._checks import json_problem
from latentbench._compat import TEXT
from latentbench.exceptions import InputError

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.select._experiment import ExperimentResult

__all__ = [
    "CURVE_COLUMNS",
    "ExperimentRecord",
    "budget_text",
    "censored_bound",
    "censored_savings",
    "number",
    "reference_row",
    "saving_missing",
    "seeds_text",
]


CURVE_COLUMNS = ("pool", "policy", "evaluations", "accuracy", "se")
"""Columns of ``curves.csv``."""


@dataclass(frozen=True)
class ExperimentRecord:
    """An experiment as written to its directory (``summary.json``, ``curves.csv``): what a
    report needs, without the per-seed arrays.

    Attributes
    ----------
    params, pools : dict
        As :class:`ExperimentResult`.
    summary : list of dict
        One row per (pool, policy) (see :class:`ExperimentResult`).
    curves : DataFrame
        Long: ``pool``, ``policy``, ``evaluations`` (post-init cells), ``accuracy`` (fraction
        of seeds whose recommendation was the true best) and ``se`` (its standard error).
    source : str
    """

    params: dict[str, Any]
    pools: dict[str, dict[str, Any]]
    summary: list[dict[str, Any]]
    curves: pd.DataFrame
    source: str = ""

    # the wording of a summary row (set below the class: the module's functions of the same
    # names), for the report and the command line
    number: ClassVar[Callable[[Any], float | None]]
    seeds_text: ClassVar[Callable[[Any], str]]
    budget_text: ClassVar[Callable[..., str]]
    reference_row: ClassVar[Callable[..., dict[str, Any] | None]]
    saving_missing: ClassVar[Callable[..., str]]
    censored_bound: ClassVar[Callable[..., str | None]]

    @classmethod
    def from_result(cls, result: ExperimentResult) -> ExperimentRecord:
        """The record of an experiment in memory.

        Parameters
        ----------
        result : ExperimentResult
            The experiment's result.

        Returns
        -------
        ExperimentRecord
        """
        return cls(result.params, result.pools, result.summary, result.curve_frame(), "result")

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> ExperimentRecord:
        """Read ``latentbench experiment --out DIR``.

        Parameters
        ----------
        directory : path-like
            The experiment's output directory (``summary.json`` and ``curves.csv``).

        Returns
        -------
        ExperimentRecord

        Raises
        ------
        InputError
            A missing or unreadable file, or a missing field, named with the file.
        """
        import pandas as pd

        directory = Path(directory)
        summary_path, curves_path = directory / "summary.json", directory / "curves.csv"
        if not curves_path.is_file() and (directory / "runs.csv").is_file():
            raise InputError(
                f"{directory}: no curves.csv but a runs.csv: the output of `latentbench "
                "experiment --task estimate --out DIR`, which EstimateExperiment.read reads "
                "(ExperimentRecord reads a selection experiment's)"
            )
        for path in (summary_path, curves_path):
            if not path.is_file():
                raise InputError(
                    f"{directory}: no {path.name}; expected the output of `latentbench "
                    "experiment --out DIR`"
                )
        try:
            data = json.loads(summary_path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:  # JSON, UTF-8, a huge integer, too deep
            raise InputError(f"{summary_path}: not JSON ({json_problem(exc)})") from None
        if not isinstance(data, dict) or not isinstance(data.get("summary"), list):
            raise InputError(f"{summary_path}: no 'summary' list; expected an experiment summary")
        if not isinstance(data.get("params"), dict):
            raise InputError(
                f"{summary_path}: no 'params' object (the seeds, budget, reference policy, "
                "...); expected the summary.json of `latentbench experiment --out DIR`"
            )
        _check_summary(data["summary"], summary_path)
        reference = data["params"].get("reference")
        policies = sorted({row["policy"] for row in data["summary"]})
        if reference is not None and reference not in policies:
            raise InputError(
                f"{summary_path}: params.reference is {reference!r:.40}, which has no row in "
                f"'summary' (policies {policies}); expected the policy the savings are against"
            )
        try:
            # ids as text, as summary.json holds them (a pool named "2024" is not a number,
            # nor one named "NA" a missing value)
            from latentbench.io._files import read_csv_ids

            curves = read_csv_ids(curves_path, ("pool", "policy"))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InputError(f"{curves_path}: not a CSV table ({exc})") from None
        absent = [c for c in CURVE_COLUMNS if c not in curves.columns]
        if absent:
            raise InputError(f"{curves_path}: lacks column(s) {absent}; expected {CURVE_COLUMNS}")
        _check_curves(curves, curves_path)
        params, summary = dict(data.get("params") or {}), list(data["summary"])
        if params.get("stop") != "confidence" and any("reached" not in r for r in summary):
            # written before the budgets were the crossing of all the seeds' curve (they were
            # the mean over the bootstrap resamples that reached the target, a number even
            # when the curve never does): the crossings again, from curves.csv, said
            summary = _crossings(summary, curves, float(params.get("target", 0.95)))
            params["budgets_recomputed"] = (
                "budgets recomputed from curves.csv as the crossing of all the seeds' curve "
                "(this summary.json was written by an earlier version)"
            )
        # an earlier version wrote 0.0 ± 0.0 where no run certified: no saving, said
        summary = unmeasured_savings(summary, params)
        # and no saving_censored: said again, from the rows' certified shares
        if any("saving_censored" not in row for row in summary):
            summary = censored_savings(summary, params)
        return cls(params, dict(data.get("pools") or {}), summary, curves, str(directory))


_SUMMARY_NUMBERS = (
    "n_models", "n_seeds", "init_evaluations", "budget_post_init", "budget_post_init_sd",
    "budget_post_init_sustained", "budget_total", "budget_post_init_90",
    "budget_post_init_90_sd", "reached_fraction", "final_accuracy", "coverage",
    "coverage_lower", "coverage_upper", "seconds_per_run", "cells_at_stop_post_init",
    "cells_at_stop_post_init_se", "certified_fraction", "certified_correct",
    *(f"{name}{part}" for name in ("saved_post_init_pct", "saved_total_pct")
      for part in ("", "_se", "_lo", "_hi", "_resamples")),
)  # fmt: skip
"""Fields of a summary row that are numbers (or null: not reached, no reference, one seed)."""


def _check_summary(rows: list[Any], path: Path) -> None:
    """Each row of ``summary.json``: an object with a pool and a policy, and numbers (or
    null) where the table and the report print numbers."""
    for k, row in enumerate(rows):
        if not isinstance(row, dict) or not all(
            isinstance(row.get(key), str) for key in ("pool", "policy")
        ):
            raise InputError(
                f"{path}: summary[{k}] is {row!r:.60}; expected an object with a 'pool' and a "
                "'policy' name"
            )
        for key in _SUMMARY_NUMBERS:
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise InputError(
                    f"{path}: summary[{k}] ({row['pool']}, {row['policy']}): {key} is "
                    f"{value!r:.40}; expected a number or null"
                )
        value = row.get("saving_censored")
        if value is not None and not isinstance(value, str):
            raise InputError(
                f"{path}: summary[{k}] ({row['pool']}, {row['policy']}): saving_censored is "
                f"{value!r:.40}; expected text or null"
            )


def _crossings(
    summary: list[dict[str, Any]], curves: pd.DataFrame, target: float
) -> list[dict[str, Any]]:
    """Rows with ``budget_post_init`` (``_90``), ``budget_total``, ``reached`` and
    ``budget_post_init_sustained`` set from the row's curve as a new experiment sets them
    (:func:`latentbench.select._experiment_stats._crossings`); None where never."""
    import numpy as np

    from latentbench.select._experiment_stats import _crossings as crossings

    out = []
    for row in summary:
        mine = (curves["pool"].astype(TEXT) == str(row.get("pool"))) & (
            curves["policy"].astype(TEXT) == str(row.get("policy"))
        )
        part = curves[mine].sort_values("evaluations")
        grid = part["evaluations"].to_numpy(float)
        accuracy = part["accuracy"].to_numpy(float)
        first, sustained = crossings(accuracy, grid, target)
        first90, _ = crossings(accuracy, grid, 0.9)
        row = {**row, "budget_post_init": number(first), "budget_post_init_90": number(first90),
               "budget_post_init_sustained": number(sustained)}  # fmt: skip
        init = number(row.get("init_evaluations"))
        row["budget_total"] = (
            None
            if row["budget_post_init"] is None or init is None
            else (row["budget_post_init"] + init)
        )
        row["reached"] = bool(np.isfinite(first))
        out.append(row)
    return out


def _nan(value: Any) -> bool:
    """A NaN or infinity read back from a summary.json written before null (allowed)."""
    return isinstance(value, float) and not math.isfinite(value)


def _check_curves(curves: pd.DataFrame, path: Path) -> None:
    """``curves.csv``: numbers in ``evaluations`` (>= 0), ``accuracy`` (in [0, 1]) and ``se``
    (>= 0); the first bad cell is named with its line."""
    import numpy as np
    import pandas as pd

    rules = {  # column: (lowest, highest, what is expected)
        "evaluations": (0.0, math.inf, "a number of cells >= 0"),
        "accuracy": (0.0, 1.0, "a share in [0, 1]"),
        "se": (0.0, math.inf, "a standard error >= 0"),
    }
    for column, (low, high, expected) in rules.items():
        values = pd.to_numeric(curves[column], errors="coerce")
        bad = values.isna() | (values < low) | (values > high)
        if bad.any():
            k = int(bad.to_numpy().argmax())
            cell = curves[column].iloc[k]
            if isinstance(cell, np.generic):  # as written (1.5), not np.float64(1.5)
                cell = cell.item()
            shown = "an empty cell" if pd.isna(cell) else f"value {cell!r}"
            raise InputError(
                f"{path}: column {column!r}, line {k + 2}: {shown}; expected {expected}"
            )


# ------------------------------------------------------------------ wording shared by the
# table of `latentbench experiment` and the report, so that the two say the same


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None (a missing value: None, NaN, text).

    Parameters
    ----------
    value : Any
        A recorded value.

    Returns
    -------
    float or None
        None for a bool, a non-number or a value that is not finite.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def seeds_text(n: Any) -> str:
    """``1 seed``, ``3 seeds`` (``? seeds`` when not recorded).

    Parameters
    ----------
    n : Any
        The recorded number of seeds, or None.

    Returns
    -------
    str
    """
    return "1 seed" if n == 1 else f"{n if n is not None else '?'} seeds"


def budget_text(value: Any, sd: Any = None, final: Any = None) -> str:
    """A budget to the target accuracy (``1,824 ± 159``), or what happened instead
    (``not reached (final accuracy 92 %)``): a curve that never reaches the target has no
    budget to print.

    Parameters
    ----------
    value : Any
        The budget; missing (None, NaN) when the target was not reached.
    sd : Any, optional
        Its standard deviation over seeds, printed after ``±`` when a number.
    final : Any, optional
        The final accuracy, printed when the target was not reached.

    Returns
    -------
    str
    """
    v = number(value)
    if v is None:
        f = number(final)
        return "not reached" + ("" if f is None else f" (final accuracy {100 * f:.0f} %)")
    s = number(sd)
    return f"{v:,.0f}" + ("" if s is None else f" ± {s:,.0f}")


def reference_row(
    summary: list[dict[str, Any]], row: dict[str, Any], reference: Any
) -> dict[str, Any] | None:
    """The reference policy's row of ``row``'s pool (None: no reference).

    Parameters
    ----------
    summary : list of dict of str to Any
        The summary rows.
    row : dict of str to Any
        A summary row (its ``pool``).
    reference : Any
        The reference policy's name, or None.

    Returns
    -------
    dict of str to Any or None
        None without a reference or when the pool has no row of it.
    """
    if reference is None:
        return None
    return next(
        (r for r in summary if r.get("pool") == row.get("pool") and r.get("policy") == reference),
        None,
    )


_SAVING_FIELDS = tuple(
    f"{name}{part}"
    for name in ("saved_post_init_pct", "saved_total_pct")
    for part in ("", "_se", "_lo", "_hi", "_resamples")
)


def no_certified_saving(reference: Any, budget: Any) -> str:
    """Why a saving at a certified stop was not measured: no run of either policy certified.

    Parameters
    ----------
    reference : Any
        The reference policy's name.
    budget : Any
        The runs' post-init budget (None when not recorded).

    Returns
    -------
    str
    """
    cells = number(budget)
    within = "" if cells is None else f" ({cells:,.0f} post-init cells)"
    return (
        f"no saving measured: no run of the policy or of {reference} certified within the "
        f"budget{within}, so both counted their whole budget; a larger budget is needed"
    )


def unmeasured_savings(
    summary: list[dict[str, Any]], params: dict[str, Any]
) -> list[dict[str, Any]]:
    """The rows of a certified-stop experiment with their savings null (``None``) where
    neither the policy nor the reference certified any run: both then count the whole
    budget, and ``0.0 ± 0.0`` would read as a measured saving. Their
    ``saved_post_init_pct_no_interval`` and ``saved_total_pct_no_interval`` say why
    (:func:`no_certified_saving`). Other rows, and a ``--stop budget`` experiment's, as given.

    Parameters
    ----------
    summary : list of dict
        The summary rows (:class:`ExperimentResult`'s ``summary``).
    params : dict
        The experiment's parameters (its ``stop``, ``reference`` and ``budget``).

    Returns
    -------
    list of dict
        The rows, those without a measured saving copied with it null.
    """
    reference = params.get("reference")
    if params.get("stop") != "confidence" or reference is None:
        return summary
    out = []
    for row in summary:
        ref = reference_row(summary, row, reference)
        if (
            ref is not None
            and ref.get("policy") != row.get("policy")
            and number(row.get("certified_fraction")) == 0
            and number(ref.get("certified_fraction")) == 0
            and any(key in row for key in _SAVING_FIELDS)
        ):
            why = no_certified_saving(reference, params.get("budget"))
            row = {**row, **{key: None for key in _SAVING_FIELDS if key in row}}
            row["saved_post_init_pct_no_interval"] = why
            row["saved_total_pct_no_interval"] = why
        out.append(row)
    return out


def _uncertified(row: dict[str, Any]) -> tuple[int, int] | None:
    """``(runs that did not certify, runs)`` of a certified-stop row (None: not recorded)."""
    share, n = number(row.get("certified_fraction")), number(row.get("n_seeds"))
    if share is None or n is None:
        return None
    return round((1 - share) * n), round(n)


def censored_bound(row: dict[str, Any], ref: dict[str, Any] | None) -> str | None:
    """Which bound a saving at a certified stop is on the true one, where some runs did not
    certify within the budget and count all of it (a cost under-stated): ``"a lower bound"``
    where only the reference's runs did so, ``"an upper bound"`` where only the policy's
    did, ``"neither a lower nor an upper bound"`` where both did.

    Parameters
    ----------
    row : dict of str to Any
        A summary row of a certified-stop experiment (its ``certified_fraction`` and
        ``n_seeds``).
    ref : dict of str to Any or None
        The reference policy's row of the same pool (:func:`reference_row`).

    Returns
    -------
    str or None
        None where every run of both certified, for the reference's own row, without a
        reference, and where the shares are not recorded.
    """
    if ref is None or ref.get("policy") == row.get("policy"):
        return None
    mine, theirs = _uncertified(row), _uncertified(ref)
    if mine is None or theirs is None or (mine[0] == 0 and theirs[0] == 0):
        return None
    if mine[0] == 0:
        return "a lower bound"
    if theirs[0] == 0:
        return "an upper bound"
    return "neither a lower nor an upper bound"


def _censored_text(row: dict[str, Any], ref: dict[str, Any], reference: Any) -> str | None:
    """``saving_censored`` of ``row`` (:func:`censored_savings`)."""
    bound = censored_bound(row, ref)
    mine, theirs = _uncertified(row), _uncertified(ref)
    if bound is None or mine is None or theirs is None:
        return None
    who = {"a lower bound": reference, "an upper bound": row.get("policy")}.get(bound, "both")
    return (
        f"{theirs[0]} of {theirs[1]} runs of {reference} and {mine[0]} of {mine[1]} of "
        f"{row.get('policy')} did not certify within the budget and count it: the saving is "
        f"{bound} ({who} would have needed more cells)"
    )


def censored_savings(summary: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a certified-stop experiment with ``saving_censored``: where some runs of
    the policy or of the reference did not certify within the budget, each counted its whole
    budget, so the saving (kept as computed) is measured on censored costs. It says how many
    runs of each did not certify and which bound the saving is (:func:`censored_bound`):
    ``"3 of 20 runs of ucbe and 0 of 20 of pulse did not certify within the budget and count
    it: the saving is a lower bound (ucbe would have needed more cells)"``. None where every
    run certified, where there is no saving (the reference's row; no run of either certified:
    :func:`unmeasured_savings`), and without a reference. A ``--stop budget`` experiment's
    rows as given.

    Parameters
    ----------
    summary : list of dict
        The summary rows (:class:`ExperimentResult`'s ``summary``).
    params : dict
        The experiment's parameters (its ``stop`` and ``reference``).

    Returns
    -------
    list of dict
        The rows, copied with ``saving_censored``.
    """
    reference = params.get("reference")
    if params.get("stop") != "confidence":
        return summary
    out = []
    for row in summary:
        ref = reference_row(summary, row, reference)
        measured = any(
            number(row.get(name)) is not None for name in ("saved_post_init_pct", "saved_total_pct")
        )
        said = _censored_text(row, ref, reference) if ref is not None and measured else None
        out.append({**row, "saving_censored": said})
    return out


def saving_missing(
    row: dict[str, Any], ref: dict[str, Any] | None, reference: Any, *, at_stop: bool = False
) -> str:
    """Why ``row`` has no saving against the reference, in words.

    Parameters
    ----------
    row : dict of str to Any
        A summary row.
    ref : dict of str to Any or None
        The reference policy's row of the same pool (:func:`reference_row`).
    reference : Any
        The reference policy's name.
    at_stop : bool, default False
        Whether the saving is measured at the stop (the reference used no post-init cells).

    Returns
    -------
    str
    """
    if ref is None:
        return "no reference"
    if ref is row or ref.get("policy") == row.get("policy"):
        return "reference"
    if at_stop:
        shares = (number(row.get("certified_fraction")), number(ref.get("certified_fraction")))
        if shares == (0, 0):
            return "not measured: no run certified"
        return f"{reference} used no post-init cells"
    own = number(row.get("budget_post_init")) is not None
    theirs = number(ref.get("budget_post_init")) is not None
    if not own and not theirs:
        return f"neither it nor {reference} reached it"
    if not own:
        return "not reached"
    if not theirs:
        return f"{reference} not reached"
    return f"{reference} needs no post-init cells"


# the wording above, shared by the report and the command line (which reaches the library
# through its public names only): ExperimentRecord.number(...), .budget_text(...), ...
ExperimentRecord.number = number
ExperimentRecord.seeds_text = seeds_text
ExperimentRecord.budget_text = budget_text
ExperimentRecord.reference_row = reference_row
ExperimentRecord.saving_missing = saving_missing
ExperimentRecord.censored_bound = censored_bound
