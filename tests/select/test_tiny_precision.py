"""``tiny(precision=)`` / ``latentbench tiny --precision``: the design's size chosen for a
target half-width, predicted by replaying the calibration models' answers with the engine of
``estimate(items=)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.select import estimate, tiny
from latentbench.select._estimate_calibration import from_matrix

_register()
runner = CliRunner()
PRECISION = 0.08


def _world(seed: int = 0, m: int = 30, held: int = 12, n: int = 400):
    """``m`` calibration models and ``held`` new ones from one 2PL world on ``n`` items."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=m + held)
    a, b = rng.lognormal(0.0, 0.3, n), rng.normal(size=n)
    P = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    Y = (rng.random(P.shape) < P).astype(np.float64)
    frame = pd.DataFrame(
        Y, index=[f"m{i:02d}" for i in range(m + held)], columns=[f"q{j:03d}" for j in range(n)]
    )
    M = ResponseMatrix.from_wide(frame)
    return M.subset(models=list(M.model_ids[:m])), M.subset(models=list(M.model_ids[m:]))


@pytest.fixture(scope="module")
def world():
    cal, new = _world()
    return cal, new, tiny(cal, precision=PRECISION)


def _half_width(cal, answers: ResponseMatrix, model: str, design: pd.DataFrame) -> float:
    res = estimate(cal, answers.subset(models=[model]), model=model, items=design)
    return (res.upper - res.lower) / 2.0


def test_precision_chooses_k_and_records_the_prediction(world):
    """Before: tiny had no precision (a TypeError); the user learnt the width after the run."""
    _, _, design = world
    k = len(design)
    assert 1 < k < 400 and (design["k"] == k).all()
    assert list(design.columns[8:]) == [
        "precision", "delta", "predicted_half_width", "predicted_half_width_p90",
        "predicted_models",
    ]  # fmt: skip
    row = design.iloc[0]
    assert row["precision"] == PRECISION and row["delta"] == 0.05
    assert row["predicted_half_width"] <= PRECISION < row["predicted_half_width_p90"]
    assert row["predicted_models"] == 30


def test_the_prediction_is_estimate_items_on_each_calibration_model(world):
    """The predicted half-widths are those ``estimate(items=)`` reports for the calibration
    models on the design (one implementation): median and 90th percentile exactly."""
    cal, _, design = world
    widths = [_half_width(cal, cal, m, design) for m in cal.model_ids]
    assert np.median(widths) == design["predicted_half_width"].iloc[0]
    assert np.quantile(widths, 0.9) == design["predicted_half_width_p90"].iloc[0]


def test_held_out_models_realise_about_the_predicted_half_width(world):
    """New models from the same world, scored on the design: their median half-width is
    within [0.85, 1.2] of the predicted median. Tolerance: across the 12 new models the
    half-width varies by about 9% (sd), so their median has a Monte Carlo SE of about 3%;
    the prediction is in-sample (optimistic), by +4% on average over 6 seeded runs
    (3 worlds x precision 0.05 and 0.08: ratios 0.95 to 1.11); the band is 4-5 SE wide
    each side around that."""
    cal, new, design = world
    realised = [_half_width(cal, new, m, design) for m in new.model_ids]
    ratio = np.median(realised) / design["predicted_half_width"].iloc[0]
    assert 0.85 <= ratio <= 1.2, ratio


def test_k_falls_as_the_precision_loosens(world):
    cal, _, design = world
    ks = [len(design)] + [len(tiny(cal, precision=h)) for h in (0.12, 0.2)]
    assert ks[0] > ks[1] > ks[2], ks


def test_precision_options_are_checked(world):
    cal, _, _ = world
    with pytest.raises(InputError, match="give one"):
        tiny(cal, 20, precision=0.1)
    with pytest.raises(InputError, match=r"delta=0\.1 without precision"):
        tiny(cal, 20, delta=0.1)
    with pytest.raises(InputError, match=r"precision=0\.5"):
        tiny(cal, precision=0.5)
    with pytest.raises(InputError, match="delta=2"):
        tiny(cal, precision=0.1, delta=2)
    with pytest.raises(InputError, match="does not keep"):  # parameters only: no answers
        tiny(from_matrix(cal), precision=0.1)
    fitted = from_matrix(cal)  # ... unless they are given
    assert len(tiny(fitted, precision=0.2, responses=cal)) == len(tiny(cal, precision=0.2))


def test_a_precision_reached_only_by_every_item_gives_the_whole_benchmark():
    """A precision below what any part of the items reaches: every item (the interval is the
    mean itself), predicted half-width 0."""
    cal, _ = _world(1, m=6, held=1, n=40)
    design = tiny(cal, precision=0.001)
    assert len(design) == 40 and design["predicted_half_width"].iloc[0] == 0.0


def test_cli_tiny_precision_prints_the_chosen_k(world, tmp_path):
    cal, _, _ = world
    path = tmp_path / "cal.parquet"
    cal.to_long().to_parquet(path)
    out = tmp_path / "items.csv"
    outcome = runner.invoke(app, ["tiny", str(path), "--precision", "0.2", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    k = len(pd.read_csv(out))
    assert f"k = {k} items for a predicted half-width of 0." in outcome.output
    assert "(median over the 30 calibration models; 90th percentile" in outcome.output
    assert "in-sample: a new model unlike them may need more" in outcome.output
    both = ["tiny", str(path), "--k", "5", "--precision", "0.2", "--out", str(out), "--force"]
    outcome = runner.invoke(app, both)
    assert outcome.exit_code == 2 and "give --k 5 or --precision 0.2, not both" in outcome.output


def test_precision_with_unequal_weights_is_refused(world):
    """A design sized for a precision is sized on the plain mean; with unequal weights (a
    weighted design) it is refused, naming the weights, not sized for the wrong target; with
    equal weights it is the plain design (said)."""
    cal, _, design = world
    items = list(cal.item_ids)
    unequal = pd.Series(np.where(np.arange(len(items)) < 100, 3.0, 1.0), index=items)
    with pytest.raises(InputError, match=r"precision=0\.08 with weights .*choose k by hand"):
        tiny(cal, precision=PRECISION, weights=unequal)
    equal = pd.Series(2.0, index=items)
    with pytest.warns(UserWarning, match="same weight"):
        same = tiny(cal, precision=PRECISION, weights=equal)
    pd.testing.assert_frame_equal(same, design)
