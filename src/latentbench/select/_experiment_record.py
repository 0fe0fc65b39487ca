"""An experiment as written to its directory (``latentbench experiment --out DIR``): what a
report needs, read back with its checks."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from latentbench.exceptions import InputError

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.select._experiment import ExperimentResult

__all__ = [
    "CURVE_COLUMNS",
    "ExperimentRecord",
    "budget_text",
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

    @classmethod
    def from_result(cls, result: ExperimentResult) -> ExperimentRecord:
        """The record of an experiment in memory."""
        return cls(result.params, result.pools, result.summary, result.curve_frame(), "result")

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> ExperimentRecord:
        """Read ``latentbench experiment --out DIR``.

        Raises
        ------
        InputError
            A missing or unreadable file, or a missing field, named with the file.
        """
        import pandas as pd

        directory = Path(directory)
        summary_path, curves_path = directory / "summary.json", directory / "curves.csv"
        for path in (summary_path, curves_path):
            if not path.is_file():
                raise InputError(
                    f"{directory}: no {path.name}; expected the output of `latentbench "
                    "experiment --out DIR`"
                )
        try:
            data = json.loads(summary_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{summary_path}: not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("summary"), list):
            raise InputError(f"{summary_path}: no 'summary' list; expected an experiment summary")
        curves = pd.read_csv(curves_path)
        absent = [c for c in CURVE_COLUMNS if c not in curves.columns]
        if absent:
            raise InputError(f"{curves_path}: lacks column(s) {absent}; expected {CURVE_COLUMNS}")
        return cls(
            dict(data.get("params") or {}),
            dict(data.get("pools") or {}),
            list(data["summary"]),
            curves,
            str(directory),
        )


# ------------------------------------------------------------------ wording shared by the
# table of `latentbench experiment` and the report, so that the two say the same


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None (a missing value: None, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def seeds_text(n: Any) -> str:
    """``1 seed``, ``3 seeds`` (``? seeds`` when not recorded)."""
    return "1 seed" if n == 1 else f"{n if n is not None else '?'} seeds"


def budget_text(value: Any, sd: Any = None, final: Any = None) -> str:
    """A budget to the target accuracy (``1,824 ± 159``), or what happened instead
    (``not reached (final accuracy 92 %)``): a curve that never reaches the target has no
    budget to print."""
    v = number(value)
    if v is None:
        f = number(final)
        return "not reached" + ("" if f is None else f" (final accuracy {100 * f:.0f} %)")
    s = number(sd)
    return f"{v:,.0f}" + ("" if s is None else f" ± {s:,.0f}")


def reference_row(
    summary: list[dict[str, Any]], row: dict[str, Any], reference: Any
) -> dict[str, Any] | None:
    """The reference policy's row of ``row``'s pool (None: no reference)."""
    if reference is None:
        return None
    return next(
        (r for r in summary if r.get("pool") == row.get("pool") and r.get("policy") == reference),
        None,
    )


def saving_missing(
    row: dict[str, Any], ref: dict[str, Any] | None, reference: Any, *, at_stop: bool = False
) -> str:
    """Why ``row`` has no saving against the reference, in words."""
    if ref is None:
        return "no reference"
    if ref is row or ref.get("policy") == row.get("policy"):
        return "reference"
    if at_stop:
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
