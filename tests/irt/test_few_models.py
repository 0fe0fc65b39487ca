"""A reporting scale set by fewer than FEW_MODELS models, or by fewer than FEW_ITEMS_MODELS on
fewer than FEW_ITEMS items: the ability intervals under-cover there
(benchmarks/bench_coverage.py --kinds binomial1), so the fit says so in one warning, in
``Uncertainty.caveat``, in fit.json and in the report; outside those shapes it says nothing."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from latentbench.exceptions import LatentbenchWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt.inference import (
    FEW_ITEMS,
    FEW_ITEMS_MODELS,
    FEW_MODELS,
    standard_errors,
)
from latentbench.synthetic import simulate_2pl


def _fit(n_models: int, seed: int = 0, empty_rows: int = 0, n_items: int = 300):
    data = simulate_2pl(n_models + empty_rows, n_items, random_state=seed)
    scores = data.matrix.scores.astype(float)
    scores[n_models:] = np.nan  # models without a cell: they do not set the scale
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        return TwoPL().fit(matrix), matrix


def _caveats(result, matrix):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = standard_errors(result, matrix)
    said = [str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)]
    return unc, [m for m in said if m.startswith("ability intervals: only ")]


def test_few_models_warn_once_and_record_the_caveat():
    result, matrix = _fit(FEW_MODELS - 2)
    unc, said = _caveats(result, matrix)
    assert len(said) == 1
    assert f"only {FEW_MODELS - 2} model(s) set the reporting scale" in said[0]
    assert unc.caveat is not None and unc.caveat in said[0]
    # the intervals are still given, finite and holding their own estimate
    ab = unc.abilities
    assert np.all(np.isfinite(ab["se"].to_numpy(float)))
    assert np.all((ab["lower"] <= ab["theta"]) & (ab["theta"] <= ab["upper"]))


@pytest.mark.parametrize("n_models", [FEW_MODELS, FEW_MODELS + 4])
def test_enough_models_say_nothing(n_models):
    result, matrix = _fit(n_models)
    unc, said = _caveats(result, matrix)
    assert said == [] and unc.caveat is None


def test_few_models_on_few_items_get_the_caveat_too():
    n = FEW_ITEMS_MODELS - 5
    result, matrix = _fit(n, n_items=FEW_ITEMS // 2)
    unc, said = _caveats(result, matrix)
    assert (
        len(said) == 1
        and f"only {n} models set the reporting scale, on {FEW_ITEMS // 2} items" in said[0]
    )
    assert unc.caveat is not None
    for models, items in ((n, FEW_ITEMS), (FEW_ITEMS_MODELS, FEW_ITEMS // 2)):
        result, matrix = _fit(models, n_items=items)
        unc, said = _caveats(result, matrix)
        assert said == [] and unc.caveat is None, (models, items)


def test_models_without_cells_do_not_count():
    result, matrix = _fit(FEW_MODELS - 1, empty_rows=3)
    assert result.shape[0] >= FEW_MODELS
    unc, said = _caveats(result, matrix)
    assert len(said) == 1
    assert unc.caveat is not None and f"only {FEW_MODELS - 1} model(s)" in unc.caveat


def test_fit_json_and_report_carry_the_caveat(tmp_path):
    from latentbench.report import build_report

    result, matrix = _fit(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        result.save(tmp_path / "fit", matrix=matrix)
        html = build_report(result, matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert "set the reporting scale" in info["ability_intervals"]["caveat"]
    assert "only 5 model(s) set the reporting scale" in html


def test_score_models_on_a_small_calibration_says_so():
    data = simulate_2pl(FEW_MODELS + 2, 300, random_state=3)
    ids, items = data.matrix.model_ids, data.matrix.item_ids
    small = ResponseMatrix(data.matrix.scores[: FEW_MODELS - 2], ids[: FEW_MODELS - 2], items)
    new = ResponseMatrix(data.matrix.scores[FEW_MODELS - 2 :], ids[FEW_MODELS - 2 :], items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        result = TwoPL().fit(small)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scored = result.score_models(new)
    said = [str(w.message) for w in caught if "calibration's scale is set by" in str(w.message)]
    assert len(said) == 1 and f"set by {FEW_MODELS - 2} models on 300 items" in said[0]
    assert "calibration's scale" in scored.attrs["checks"]["caveat"]["text"]
    # a calibration of enough models says nothing of the kind
    big = simulate_2pl(FEW_MODELS + 5, 300, random_state=4).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        result = TwoPL().fit(big)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh = [f"new{i}" for i in range(len(new.model_ids))]
        scored = result.score_models(ResponseMatrix(new.scores, fresh, big.item_ids))
    assert not any("calibration's scale" in str(w.message) for w in caught)
    assert "caveat" not in scored.attrs["checks"]
