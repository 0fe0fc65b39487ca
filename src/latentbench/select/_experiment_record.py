"""An experiment as written to its directory (``latentbench experiment --out DIR``): what a
report needs, read back with its checks."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from latentbench.exceptions import InputError

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.select._experiment import ExperimentResult

__all__ = ["CURVE_COLUMNS", "ExperimentRecord"]


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
