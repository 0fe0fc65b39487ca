"""Invariances of the fit: the same cells give the same estimates and intervals per id.

- a model listed without any observed cell (a wide file's empty row, which a long file
  leaves out): no other model's ability or interval moves.
"""

from __future__ import annotations

import warnings

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._reported import reported_abilities
from latentbench.synthetic import simulate_2pl


def _fit(matrix: ResponseMatrix, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(**options).fit(matrix)
        uncertainty = result.standard_errors()
    table = reported_abilities(result, uncertainty).set_index("model")
    return result, uncertainty, table


def test_a_model_without_cells_moves_no_other_model(tmp_path):
    """A wide file lists an unevaluated model as an empty row (a long file leaves it out).
    Its estimate is the prior's mean, yet it set the reporting scale: the others' abilities
    moved by up to 0.049 at 30 x 200, and with it counted as a 31st model the item bootstrap
    (at most 30 models) was dropped, every other interval changing by up to 0.56 (se by 0.29).
    It sets no scale now: no other model moves beyond the fit's tolerance."""
    data = simulate_2pl(30, 200, missing=0.1, random_state=3)
    scores = np.asarray(data.matrix.scores, dtype=float)
    models = [f"m{i}" for i in range(30)]
    items = [f"q{j}" for j in range(200)]
    _, uncertainty, table = _fit(ResponseMatrix(scores, models, items))
    padded = np.vstack([scores, np.full((1, len(items)), np.nan)])
    result, unc, other = _fit(ResponseMatrix(padded, [*models, "unevaluated"], items))
    assert unc.method == uncertainty.method == "random-item marginal likelihood + item bootstrap"
    assert bool(other.loc["unevaluated", "no_data"]) and other.loc["unevaluated", "se"] == 1.0
    kept = other.loc[table.index]
    np.testing.assert_allclose(kept["theta_fit"], table["theta_fit"], atol=1e-3)
    for column in ("theta", "se", "lower", "upper"):
        np.testing.assert_allclose(kept[column], table[column], atol=1e-3, err_msg=column)
    # it is off the reporting scale, not detached from it
    info = result.fit_info()
    assert info["off_scale_models"] == ["unevaluated"]
    assert info["detached_models"] == []
