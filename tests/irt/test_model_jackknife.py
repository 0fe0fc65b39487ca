"""score_models: the calibration's models as a sample (delete-one jackknife; issue 28)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted


@pytest.fixture(scope="module")
def scored():
    """A 10-model calibration spread over [-1.2, 1.2] (400 items) and three new models: one
    in the field (0.1), one above it (2.6), one below (-2.6); scored without and with the
    jackknife (item bootstrap off: faster, and the jackknife is added to either se)."""
    rng = np.random.default_rng(5)
    theta = np.r_[np.linspace(-1.2, 1.2, 10), 0.1, 2.6, -2.6]
    a, b = rng.lognormal(0.0, 0.3, 400), rng.normal(0.0, 1.5, 400)
    Y = (rng.random((13, 400)) < expit(np.outer(theta, a) + b)).astype(np.float32)
    items = [f"i{j}" for j in range(400)]
    calibration = ResponseMatrix(Y[:10], [f"c{i}" for i in range(10)], items)
    new = ResponseMatrix(Y[10:], ["mid", "high", "low"], items)
    boot, jack = _fitted.ITEM_BOOTSTRAP, _fitted.MODEL_JACKKNIFE
    try:
        _fitted.ITEM_BOOTSTRAP = 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback, no detached model
            result = TwoPL().fit(calibration)
            _fitted.MODEL_JACKKNIFE = False
            off = result.score_models(new)
            _fitted.MODEL_JACKKNIFE = True
            on = result.score_models(new)
    finally:
        _fitted.ITEM_BOOTSTRAP, _fitted.MODEL_JACKKNIFE = boot, jack
    return result, off, on


def test_jackknife_adds_variance_and_keeps_the_centre(scored):
    """The centres are those without the jackknife; every se grows by the jackknife
    variance (law of total variance), recorded in the frame's checks."""
    _, off, on = scored
    np.testing.assert_array_equal(on["theta"], off["theta"])
    assert (on["se"] > off["se"]).all()
    assert (on["lower"] <= on["theta"]).all() and (on["theta"] <= on["upper"]).all()
    record = on.attrs["checks"]["model_jackknife"]
    assert record["refits"] == 10 and record["tol"] == _fitted.MODEL_JACKKNIFE_TOL
    assert "model_jackknife" not in off.attrs["checks"]


def test_jackknife_widens_new_models_beyond_the_calibration_field_most(scored):
    """A new model beyond the calibration's models is placed by how the items behave where
    no calibration model is: leaving out the calibration's extreme models moves it, a model
    inside the field less (measured: jackknife sd 0.09 in the field, 0.85 above it and 0.62
    below it, against se's of 0.16, 0.47 and 0.29 without it)."""
    _, off, on = scored
    sd = dict(zip(on["model"], np.sqrt(on["se"] ** 2 - off["se"] ** 2), strict=True))
    assert sd["high"] > 2 * sd["mid"] and sd["low"] > 2 * sd["mid"]
    assert sd["mid"] > 0.005


def test_every_refit_keeps_the_other_models_in_place(scored):
    """Each delete-one refit (EM from a uniform law) keeps the remaining models' abilities
    (correlation with the fit's > 0.99): a bootstrap over models, which copies rows, bent the
    law toward a copied model (correlation 0.62 on a stress calibration half)."""
    result, _, _ = scored
    jack, law = result.model_jackknife, result.random_items
    assert jack is not None and jack.theta.shape == (10, 10)
    for k in range(10):
        others = np.arange(10) != k
        assert np.isnan(jack.theta[k, k])
        assert np.corrcoef(jack.theta[k, others], law.theta[others])[0, 1] > 0.99
