"""A model at the floor or the ceiling (every observed score 0, or every one 1) in a rank > 1
fit: the data bound its ability on one side only, so its interval is open on the far side
and it is said, as at rank 1 (audit h229)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from latentbench.exceptions import LatentbenchWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.synthetic import simulate_2pl


def _with_constant_models() -> ResponseMatrix:
    data = simulate_2pl(20, 60, missing=0.3, random_state=3)
    scores = np.array(data.matrix.scores)
    scores[0] = np.where(np.isnan(scores[0]), np.nan, 1.0)  # every observed answer right
    scores[1] = np.where(np.isnan(scores[1]), np.nan, 0.0)  # every one wrong
    return ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)


@pytest.mark.parametrize("prior", ["auto", None], ids=["map", "joint-ml"])
def test_a_rank_2_fits_constant_models_are_open_on_the_far_side_and_said(prior):
    """Before: a rank-2 fit gave them a two-sided Gaussian interval at the mode without a
    word (joint ML: a perfect model's upper end 25.9, where the ridge stopped it; MAP: the
    leader 'statistically separated' on the prior's curvature), no ``constant_models`` in
    the checks, so neither fit.json nor the report said it; rank 1 opens (joint ML) or makes
    exact (MAP) these intervals, and says so."""
    matrix = _with_constant_models()
    fit = TwoPL(rank=2, prior=prior, max_iter=300).fit(matrix)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = fit.standard_errors(matrix)
    said = [str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)]
    floor = [m for m in said if "floor or ceiling" in m]
    assert len(floor) == 1 and "'model_00', 'model_01'" in floor[0], said
    assert "open on the far side" in floor[0] and "reporting scale" not in floor[0]
    assert unc.checks is not None and unc.checks["constant_models"] == ["model_00", "model_01"]
    top, bottom = unc.abilities.iloc[0], unc.abilities.iloc[1]
    assert top["upper"] == np.inf and np.isfinite(top["lower"])
    assert bottom["lower"] == -np.inf and np.isfinite(bottom["upper"])
    others = unc.abilities.iloc[2:]
    assert np.isfinite(others[["lower", "upper"]].to_numpy()).all()
    assert top["lower"] < top["theta"] and bottom["theta"] < bottom["upper"]
