"""The abilities table a user reads: one ability per model, its interval around it.

:meth:`IRTResult.save` (``abilities.csv``) and the HTML report show this table. ``theta`` is
the estimate the interval is built on (:class:`~latentbench.irt.inference.Uncertainty`), so
every model's ``lower <= theta <= upper``; the fit's own estimate stays as the named extra
column ``theta_fit``; ranks are by the reported ``theta``; rows are ordered by rank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult
    from latentbench.irt.inference import Uncertainty

__all__ = [
    "LEADING",
    "TIE_TOLERANCE",
    "measured_models",
    "rank_abilities",
    "reported_abilities",
]

LEADING = ("rank_theta", "model", "theta", "lower", "upper", "se", "theta_fit")
"""The first columns of the reported table, in order."""


TIE_TOLERANCE = 1e-6
"""Abilities closer than this (on the reporting scale, sd 1) are equal for the ranks: the
fit's convergence tolerance leaves identical response rows up to 6e-7 apart, which ranked
one of two identical models 1st and the other 2nd (their theta printed the same)."""


def rank_abilities(theta: np.ndarray, measured: np.ndarray | None = None) -> Any:
    """Ranks of the abilities, 1 = best; equal abilities (within :data:`TIE_TOLERANCE` of the
    next one down) share the lowest rank.

    A model without an observed cell (``measured`` False) is not ranked: its ability is the
    prior's, not a measurement (NA, as its accuracy rank), and it does not push others down.

    Returns
    -------
    pandas IntegerArray of shape (n_models,), NA where not ranked
    """
    values = np.asarray(theta, float)
    ok = np.isfinite(values)
    if measured is not None:
        ok &= np.asarray(measured, dtype=bool)
    ranks = pd.array(np.zeros(values.size, dtype=np.int64), dtype="Int64")
    ranks[~ok] = pd.NA
    if ok.any():
        down = -values[ok]
        order = np.argsort(down, kind="stable")
        new_value = np.r_[True, np.diff(down[order]) > TIE_TOLERANCE]
        first = np.maximum.accumulate(np.where(new_value, np.arange(1, down.size + 1), 0))
        tied = np.empty(down.size, dtype=np.int64)
        tied[order] = first
        ranks[ok] = tied
    return ranks


def measured_models(table: pd.DataFrame) -> np.ndarray | None:
    """Which models of an abilities table have an observed cell (None: not known)."""
    if "n_observed" in table.columns:
        return (pd.to_numeric(table["n_observed"], errors="coerce").fillna(0) > 0).to_numpy()
    if "no_data" in table.columns:
        return ~table["no_data"].astype(bool).to_numpy()
    return None


def reported_abilities(result: IRTResult, uncertainty: Uncertainty | None) -> pd.DataFrame:
    """The fit's abilities with the reported ability and its interval, ordered by rank.

    Parameters
    ----------
    result : IRTResult
    uncertainty : Uncertainty or None
        Intervals of the fit (:func:`~latentbench.irt.inference.standard_errors`); None gives
        the fit's table ordered by rank.

    Returns
    -------
    DataFrame
        One row per model, best first: ``rank_theta``, ``model``, ``theta``, ``lower``,
        ``upper``, ``se``, ``theta_fit``, then ``accuracy``, ``n_observed``,
        ``rank_accuracy``, ``constant``, ``rank_shift`` (``rank_accuracy - rank_theta``),
        ``theta_1`` ... ``theta_r`` (rank > 1 only), ``no_data``.

    Raises
    ------
    InputError
        ``result`` is not an IRTResult, or ``uncertainty`` not an Uncertainty (or None).
    """
    from latentbench.irt._result import IRTResult
    from latentbench.irt.inference import Uncertainty

    if not isinstance(result, IRTResult) or not (
        uncertainty is None or isinstance(uncertainty, Uncertainty)
    ):
        swapped = isinstance(result, Uncertainty) and isinstance(uncertainty, IRTResult)
        raise InputError(
            f"reported_abilities(result={type(result).__name__}, uncertainty="
            f"{type(uncertainty).__name__}){': swapped' if swapped else ''}; expected result "
            "an IRTResult (a fit) and uncertainty its Uncertainty "
            "(result.standard_errors(matrix)) or None"
        )
    table = result.abilities.copy()
    table["theta_fit"] = result.theta
    if uncertainty is not None:
        unc = uncertainty.abilities
        for column in ("theta", "se", "lower", "upper", "no_data"):
            table[column] = unc[column].to_numpy()
    table["rank_theta"] = rank_abilities(table["theta"].to_numpy(float), measured_models(table))
    table["rank_shift"] = table["rank_accuracy"] - table["rank_theta"]
    leading = [c for c in LEADING if c in table.columns]
    table = table[leading + [c for c in table.columns if c not in leading]]
    ranks = table["rank_theta"].to_numpy(dtype=float, na_value=np.inf)  # unranked last
    order = np.argsort(ranks, kind="stable")
    return table.iloc[order].reset_index(drop=True)
