"""Self-diagnosis of the ability intervals (issue 28): one ability per model, fallbacks that
announce themselves, stress matrices shaped like the failure, scoring one model at a time."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from latentbench.exceptions import LatentbenchWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._validity import DISAGREEMENT, check
from latentbench.synthetic import simulate_2pl, simulate_stress


def _inside(ab: pd.DataFrame) -> np.ndarray:
    return np.asarray((ab["lower"] <= ab["theta"]) & (ab["theta"] <= ab["upper"]))


@pytest.fixture(scope="module")
def stress():
    """A small stress matrix: 20 models x 800 items, half the items near-uninformative,
    constant items, a broken model near 0 % and one near 100 %."""
    data = simulate_stress(20, 800, random_state=3)
    return data, TwoPL().fit(data.matrix)


@pytest.fixture(scope="module")
def steps():
    """Items that behave as steps (a 2PL with every discrimination 15): the random-item law
    has no interior maximum in ``a`` and piles up at its grid's edge."""
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=20), rng.normal(size=400)
    p = 1.0 / (1.0 + np.exp(-15.0 * (theta[:, None] + b)))
    scores = (rng.random(p.shape) < p).astype(np.float32)
    matrix = ResponseMatrix(scores, [f"m{i}" for i in range(20)], [f"i{j}" for j in range(400)])
    return matrix, TwoPL().fit(matrix)


def test_the_item_law_piling_at_the_grid_edge_falls_back_with_one_warning(steps):
    matrix, result = steps
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = result.standard_errors()
    mine = [w for w in caught if issubclass(w.category, LatentbenchWarning)]
    assert len(mine) == 1, [str(w.message) for w in mine]
    assert "outside its validity" in str(mine[0].message)
    assert "piles up" in str(mine[0].message)
    assert unc.method == "joint Laplace"
    assert unc.fallback is not None
    assert unc.checks is not None and unc.checks["edge_mass"] > 0.05
    # one ability per model: the interval is built on the reported theta, always inside
    ab = unc.abilities
    assert _inside(ab).all()
    np.testing.assert_allclose(ab["theta"], result.theta)
    assert spearmanr(ab["theta"], matrix.model_accuracy())[0] >= 0.95


def test_detached_models_do_not_set_the_scale_and_get_prior_sensitivity_intervals(stress):
    """The broken models near 0 % and 100 % are detached: the scale is set by the others
    (mean 0, sd 1 over them), one warning names them, their intervals span their estimates
    under every candidate prior and hold their theta; the others keep the random-item
    intervals."""
    data, result = stress
    assert result.normalisation is not None
    reference = result.normalisation.mask(20)
    assert list(np.flatnonzero(~reference)) == [0, 1]
    theta = result.theta
    assert abs(theta[reference].mean()) < 1e-9 and abs(theta[reference].std() - 1) < 1e-9
    assert theta[0] < -5 and theta[1] > 5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = result.standard_errors()
    mine = [str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)]
    assert len(mine) == 1 and "detached" in mine[0] and "model_00" in mine[0], mine
    # at most 30 models and 2,000 items: the law-fixed se widened by the item bootstrap
    assert unc.method == "random-item marginal likelihood + item bootstrap" and unc.fallback is None
    assert unc.detached is not None and unc.detached["models"] == ["model_00", "model_01"]
    assert unc.detached["method"] == "prior sensitivity"
    ab = unc.abilities
    assert _inside(ab).all()
    for i, model in enumerate(unc.detached["models"]):
        for value in unc.detached["estimates"][model]:
            assert ab["lower"][i] < value < ab["upper"][i]
    assert spearmanr(ab["theta"], data.matrix.model_accuracy())[0] >= 0.95


def test_a_model_at_the_floor_is_left_out_of_the_item_law_not_a_reason_to_fall_back():
    """One broken model (every answer wrong) switched every model to the joint Laplace
    intervals; now the item law is fitted without it, the others keep their random-item
    intervals (the same as without the broken model), and it gets its exact posterior
    interval; said in one warning and in the checks. It does not set the reporting scale
    either: its position is where the prior stops it (it had compressed the others' sd to
    about 0.8), so the others have mean 0 and sd 1."""
    from latentbench.irt._fitted import random_items_fit

    data = simulate_2pl(20, 300, random_state=4)
    scores = data.matrix.scores.copy()
    scores[0] = 0.0  # every answer wrong
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    fit = TwoPL().fit(matrix)
    assert fit.normalisation is not None
    assert list(np.flatnonzero(~fit.normalisation.mask(20))) == [0]  # (old: [])
    np.testing.assert_allclose([fit.theta[1:].mean(), fit.theta[1:].std()], [0, 1], atol=1e-6)
    with pytest.warns(LatentbenchWarning, match="floor or ceiling") as caught:
        unc = fit.standard_errors()
    assert not any("outside its validity" in str(w.message) for w in caught)
    assert not any("detached" in str(w.message) for w in caught)  # it is not detached
    assert unc.detached is None
    assert unc.method.startswith("random-item")
    assert unc.fallback is None
    assert unc.checks["constant_models"] == [data.matrix.model_ids[0]]
    assert _inside(unc.abilities).all()
    law = random_items_fit(fit)
    assert not law.in_law[0] and law.in_law[1:].all()
    # the law's abilities sit on the fit's reporting scale (same mean and sd over its models)
    np.testing.assert_allclose(
        [law.theta[1:].mean(), law.theta[1:].std()],
        [fit.theta[1:].mean(), fit.theta[1:].std()],
        atol=1e-9,
    )
    # ... and are the clean fit's, standardised the same way (the broken model changes only
    # the reporting scale)
    clean_fit = TwoPL().fit(data.matrix.subset(models=np.arange(1, 20)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        clean = clean_fit.standard_errors().abilities
    ours = unc.abilities.iloc[1:]
    shift, scale = law.theta[1:].mean(), law.theta[1:].std()
    np.testing.assert_allclose((ours["theta"] - shift) / scale, clean["theta"], atol=0.02)
    np.testing.assert_allclose(ours["se"] / scale, clean["se"], rtol=0.1)
    # ... and that standardisation is now the identity: the others are not rescaled
    assert abs(shift) < 0.05 and abs(scale - 1.0) < 0.05  # (old: sd about 0.8)
    np.testing.assert_allclose(ours["theta"], clean["theta"], atol=0.1)
    # its own interval: the exact posterior below the field, two-sided and finite
    row = unc.abilities.iloc[0]
    assert np.isfinite(row["lower"]) and np.isfinite(row["upper"]) and row["upper"] < -1.0
    # a new model scored against it takes the random-item route, on its own
    new = pd.Series(data.complete[5].astype(float), index=data.matrix.item_ids, name="copy5")
    # saved and loaded: the same scale; fit.json says it is off the scale, not detached
    import json
    import tempfile
    from pathlib import Path

    from latentbench.irt import IRTResult

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        fit.save(Path(tmp) / "fit", matrix)
        info = json.loads((Path(tmp) / "fit" / "fit.json").read_text())
        loaded = IRTResult.load(Path(tmp) / "fit")
    assert info["off_scale_models"] == [data.matrix.model_ids[0]] and info["detached_models"] == []
    assert loaded.normalisation is not None
    np.testing.assert_array_equal(loaded.normalisation.mask(20), fit.normalisation.mask(20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        scored = fit.score_models(new)
    assert abs(float(scored["theta"].iloc[0]) - float(unc.abilities["theta"].iloc[5])) < 0.1


def test_rescaled_item_law_keeps_every_probability():
    from latentbench.irt._fitted import random_items_fit
    from latentbench.irt._random_items import rescaled

    data = simulate_2pl(15, 60, random_state=2)
    fit = TwoPL().fit(data.matrix)
    law = random_items_fit(fit)
    scores = data.matrix.scores.astype(float)
    moved = rescaled(law, 0.7, 1.9, scores, float(fit.sigma))
    logits = np.outer(law.theta, law.grid_a) + law.grid_b
    np.testing.assert_allclose(np.outer(moved.theta, moved.grid_a) + moved.grid_b, logits)
    np.testing.assert_allclose(moved.se, 1.9 * law.se)
    np.testing.assert_allclose(moved.item_mean[:, 0], law.item_mean[:, 0] / 1.9, rtol=1e-6)
    assert moved.weights is law.weights and moved.edge_mass == law.edge_mass


def test_disagreement_and_a_singular_information_are_detected():
    """The detector on a valid random-item fit, then on the same fit with the marginal
    abilities moved beyond their uncertainty, and with a singular covariance."""
    data = simulate_2pl(20, 300, random_state=5)
    result = TwoPL().fit(data.matrix)
    unc = result.standard_errors()
    # at most 30 models and 2,000 items: the law-fixed se widened by the item bootstrap
    assert unc.fallback is None and unc.method == "random-item marginal likelihood + item bootstrap"
    law = result.random_items
    se_laplace = np.full(20, 0.1)
    ids = data.matrix.model_ids
    assert check(law, result.theta, se_laplace, data.matrix.scores, ids).valid
    moved = law.theta.copy()
    moved[7] += (DISAGREEMENT + 1) * np.sqrt(law.se[7] ** 2 + 0.1**2)
    law_moved = type(law)(**{**law.__dict__, "theta": moved})
    found = check(law_moved, result.theta, se_laplace, data.matrix.scores, ids)
    # detected and named, but not a reason to leave the random-item likelihood
    assert found.disagrees and "disagree" in found.disagreement and ids[7] in found.disagreement
    assert found.valid and found.values["disagreement"] > DISAGREEMENT
    singular = type(law)(**{**law.__dict__, "covariance": np.zeros_like(law.covariance)})
    found = check(singular, result.theta, se_laplace, data.matrix.scores, ids)
    assert any("singular" in r for r in found.reasons)


def test_fit_json_records_the_fallback(tmp_path, steps):
    import json

    matrix, result = steps
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result.save(tmp_path / "fit", matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())["ability_intervals"]
    assert info["method"] == "joint Laplace"
    assert "piles up" in info["fallback"]
    assert info["checks"]["edge_mass"] > 0.05
    abilities = pd.read_csv(tmp_path / "fit" / "abilities.csv")
    assert _inside(abilities).all()


def test_fit_json_records_the_detached_models_and_load_keeps_the_scale(tmp_path, stress):
    import json

    from latentbench.irt import IRTResult

    data, result = stress
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result.save(tmp_path / "fit", data.matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert info["detached_models"] == ["model_00", "model_01"]
    detached = info["ability_intervals"]["detached"]
    assert detached["models"] == ["model_00", "model_01"]
    assert detached["method"] == "prior sensitivity"
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.normalisation is not None
    np.testing.assert_array_equal(loaded.normalisation.mask(20), result.normalisation.mask(20))


def test_score_models_scores_one_model_alone_and_independently():
    data = simulate_2pl(24, 300, random_state=6)
    cal = TwoPL().fit(data.matrix.subset(models=np.arange(20)))
    scores = data.complete[20:].astype(float)
    ids = [f"new{i}" for i in range(4)]
    frame = pd.DataFrame(scores, index=ids, columns=data.matrix.item_ids)
    together = cal.score_models(frame)
    alone = cal.score_models(frame.iloc[0])  # a Series: one model
    assert alone["model"].tolist() == ["new0"]
    np.testing.assert_allclose(
        alone[["theta", "se"]].to_numpy(), together[["theta", "se"]].to_numpy()[:1]
    )
    other = cal.score_models(frame.iloc[[0, 3]])
    np.testing.assert_allclose(
        other[["theta", "se"]].to_numpy()[0], together[["theta", "se"]].to_numpy()[0]
    )
    one_item = cal.score_models(frame.iloc[[1], :1])
    assert np.isfinite(one_item[["theta", "se"]].to_numpy()).all()
    assert (one_item["lower"] <= one_item["theta"]).all() and (
        one_item["theta"] <= one_item["upper"]
    ).all()


def test_score_models_reads_a_numeric_wide_frame_without_a_call_per_item(monkeypatch):
    """score_models read a wide frame by ``pd.to_numeric`` column by column (one call per
    item: 1.1 s of a 20 x 12,000 frame's scoring, a tenth of a 300-item one's): a frame whose
    columns are all numeric (floats, integers, booleans, nullable) is read whole, to the
    same values; a column of text still goes through ``to_numeric`` (and its refusal)."""
    from latentbench.exceptions import InputError
    from latentbench.irt._scoring import _new_models

    calls = []
    to_numeric = pd.to_numeric
    monkeypatch.setattr(pd, "to_numeric", lambda *a, **k: calls.append(1) or to_numeric(*a, **k))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"f": [1.0, np.nan], "i": [1, 0], "b": [True, False], "n": pd.array([None, 1], "Int64"),
         **{f"q{j}": rng.random(2) for j in range(40)}},
        index=["m0", "m1"],
    )  # fmt: skip
    scores, models, items = _new_models(frame)
    assert calls == [] and models == ["m0", "m1"] and items == list(frame.columns)
    expected = np.column_stack([[1.0, np.nan], [1, 0], [1, 0], [np.nan, 1], frame.iloc[:, 4:]])
    np.testing.assert_array_equal(scores, expected)
    texts = frame.assign(t=["1", "0.5"])
    assert _new_models(texts)[0][:, -1].tolist() == [1.0, 0.5] and len(calls) == 45
    with pytest.raises(InputError, match="a score is not numeric"):
        _new_models(frame.assign(t=["1", "yes"]))


def test_score_models_no_data_gets_the_spread_and_all_correct_a_finite_interval():
    data = simulate_2pl(22, 300, random_state=7)
    cal = TwoPL().fit(data.matrix.subset(models=np.arange(20)))
    items = data.matrix.item_ids
    frame = pd.DataFrame(
        [np.full(300, np.nan), np.ones(300), np.zeros(300), data.complete[21].astype(float)],
        index=["empty", "perfect", "zero", "ordinary"],
        columns=items,
    )
    scored = cal.score_models(frame).set_index("model")
    assert scored.loc["empty", "no_data"]
    assert scored.loc["empty", "theta"] == 0.0 and scored.loc["empty", "se"] == 1.0
    # narrower than nothing is wrong: the no-data model's interval is the widest
    assert scored.loc["empty", "se"] > scored["se"].drop("empty").max()
    for name in ("perfect", "zero"):
        row = scored.loc[name]
        assert row["constant"]
        assert np.isfinite([row["theta"], row["se"], row["lower"], row["upper"]]).all()
        assert 0 < row["se"] < 5
    assert scored.loc["perfect", "theta"] > scored["theta"].drop(["perfect", "empty"]).max()
    assert scored.loc["zero", "theta"] < scored["theta"].drop(["zero", "empty"]).min()


def test_a_model_without_observed_cells_gets_the_priors_interval_and_a_flag():
    """... and nothing else changes: no fallback, no 'degenerate fit' warning (the intervals'
    own check says nothing), and score_models keeps the random-item route."""
    from latentbench.irt._scoring import _scores_with_random_items

    data = simulate_2pl(20, 200, random_state=8)
    scores = data.matrix.scores.copy()
    scores[3] = np.nan
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = result.standard_errors()
    mine = [str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)]
    assert mine == [] and unc.fallback is None
    assert unc.method == "random-item marginal likelihood + item bootstrap"
    assert _scores_with_random_items(result)
    ab = unc.abilities
    assert ab["no_data"].tolist() == [i == 3 for i in range(20)]
    # the prior's spread, never narrower than an observed model's interval
    assert ab.loc[3, "se"] == 1.0
    assert ab.loc[3, "se"] > ab.drop(index=3)["se"].max()


def test_identical_models_share_one_ability_and_rank():
    scores = np.zeros((3, 40), dtype=np.float32)
    matrix = ResponseMatrix(scores, ["a", "b", "c"], [f"i{j}" for j in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
    assert result.abilities["theta"].tolist() == [0.0, 0.0, 0.0]
    assert result.abilities["rank_theta"].tolist() == [1, 1, 1]


@pytest.fixture(scope="module")
def disagreement_probe():
    """The 20 x 300 2PL data of :func:`disagreeing` and its disagreement statistic at the real
    limit (once per module: the tests only read the data, whose arrays are read-only)."""
    data = simulate_2pl(20, 300, random_state=6)
    probe = TwoPL().fit(data.matrix)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LatentbenchWarning)  # no check fires at the real limit
        value = probe.standard_errors().checks["disagreement"]
    return data, value


@pytest.fixture()
def disagreeing(monkeypatch, disagreement_probe):
    """A 20 x 300 2PL fit whose disagreement check fires: the limit lowered below the
    matrix's own value (the check's statistic is the same; only where it fires moves)."""
    import latentbench.irt._validity as validity

    data, value = disagreement_probe
    assert 0.2 < value < DISAGREEMENT
    monkeypatch.setattr(validity, "DISAGREEMENT", value / 2)
    return data, value


def _one_warning(result):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = result.standard_errors()
    mine = [str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)]
    assert len(mine) == 1, mine
    return unc, mine[0]


def test_a_disagreement_keeps_the_bootstrapped_random_item_intervals_and_says_so(disagreeing):
    """Where the item bootstrap runs (<= 30 models), the random-item intervals carry the item
    law's own error: they are kept (they covered 0.943 where the check fired on AlpacaEval 2,
    the joint Laplace ones 0.690), with one warning naming the model and the value."""
    data, value = disagreeing
    result = TwoPL().fit(data.matrix)
    unc, message = _one_warning(result)
    assert unc.method == "random-item marginal likelihood + item bootstrap"
    assert unc.fallback is None
    assert "disagree" in message and "kept" in message and f"{value:.1f} combined se" in message
    assert unc.checks["disagreement_action"] == "kept"
    ab = unc.abilities
    np.testing.assert_allclose(ab["theta"], result.random_items.theta)
    assert _inside(ab).all()
    # and in the outputs: the report's findings say it too
    from latentbench.report import build_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(result, data.matrix)
    assert "disagree beyond their uncertainty" in page and "intervals are kept" in page


def test_a_disagreement_without_the_item_bootstrap_widens_to_the_union(disagreeing, monkeypatch):
    """Where no item bootstrap runs, neither estimate is known to be right: each interval is
    widened to cover the joint Laplace interval around the fit's own ability as well; the
    fallback is recorded and warned. score_models keeps the random-item route (its Laplace
    route covered 0.632 on the AlpacaEval 2 replicas where the check fires, this one 0.908)."""
    import latentbench.irt._fitted as fitted
    from latentbench.irt._fitted import laplace_of

    data, _ = disagreeing
    monkeypatch.setattr(fitted, "ITEM_BOOTSTRAP", 0)
    result = TwoPL().fit(data.matrix)
    unc, message = _one_warning(result)
    assert unc.method == "random-item marginal likelihood, union with joint Laplace"
    assert unc.checks["disagreement_action"] == "union"
    assert unc.fallback is not None and "disagree" in unc.fallback
    assert "widened" in message and "theta_fit" in message
    ab = unc.abilities
    theta_ri = result.random_items.theta
    se_ri = result.random_items.se
    np.testing.assert_allclose(ab["theta"], theta_ri)
    sd_lap = np.sqrt(np.diag(laplace_of(result, data.matrix.scores).covariance()))
    z = 1.959963984540054
    tol = 1e-9
    assert (ab["lower"] <= theta_ri - z * se_ri + tol).all()
    assert (ab["upper"] >= theta_ri + z * se_ri - tol).all()
    assert (ab["lower"] <= result.theta - z * sd_lap + tol).all()
    assert (ab["upper"] >= result.theta + z * sd_lap - tol).all()
    # the union, not wider: each end is one of the two intervals' ends
    np.testing.assert_allclose(
        ab["lower"], np.minimum(theta_ri - z * se_ri, result.theta - z * sd_lap)
    )
    np.testing.assert_allclose(ab["se"], (ab["upper"] - ab["lower"]) / (2 * z))
    assert _inside(ab).all()
    from latentbench.irt._scoring import _scores_with_random_items

    assert _scores_with_random_items(result)


def test_every_model_at_the_floor_or_ceiling_falls_back_instead_of_crashing():
    """With no model left for the item law the fit crashed (review, 2026-12-05); now the law
    is fitted with the constant models, and the check names them and falls back."""
    data = simulate_2pl(8, 30, random_state=3)
    scores = data.matrix.scores.copy()
    scores[:4], scores[4:] = 0.0, 1.0
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        unc = TwoPL().fit(matrix).standard_errors()
    assert unc.method == "joint Laplace"
    assert "floor or ceiling" in (unc.fallback or "")
    assert np.isfinite(unc.abilities[["lower", "upper"]].to_numpy()).all()


@pytest.fixture(scope="module")
def broken_calibration() -> tuple[Any, Any, pd.DataFrame]:
    """15 simulated models, the lowest one's row set to 0 (broken), the clean 14 and a
    mid-range new model (accuracy 0.59). Fitted once for the module: the tests only read the
    fits (the random-item law and the model jackknife they compute are cached on the fit,
    the same whichever test asks first)."""
    data = simulate_2pl(18, 80, random_state=7)
    scores = data.matrix.scores.astype(float)
    ids, items = data.matrix.model_ids, data.matrix.item_ids
    low = int(np.argsort(scores[:15].mean(axis=1))[0])
    broken = scores[:15].copy()
    broken[low] = 0.0
    keep = [i for i in range(15) if i != low]
    with_broken = TwoPL().fit(ResponseMatrix(broken, ids[:15], items))
    clean = TwoPL().fit(ResponseMatrix(scores[keep], [ids[i] for i in keep], items))
    new = pd.DataFrame(scores[15:16], index=[ids[15]], columns=items)
    return with_broken, clean, new


def test_a_mid_range_new_model_against_a_calibration_with_a_broken_model_is_finite(
    broken_calibration,
):
    """The undamped Newton bounced between 0.872 and -0.128 (negative information there) and
    was read as a likelihood without a maximum: upper = inf (review, 2026-12-05). Now the new
    model's score is the clean calibration's (the broken model does not set the scale)."""
    from latentbench.irt._fitted import law_scale, random_items_fit

    with_broken, clean, new = broken_calibration
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scored = with_broken.score_models(new)
        reference = clean.score_models(new)
    assert not any("no finite marginal estimate" in str(w.message) for w in caught)
    assert np.isfinite(scored[["lower", "upper"]].to_numpy()).all()
    shift, scale = law_scale(with_broken, random_items_fit(with_broken))
    # the broken model does not set the reporting scale (old: scale < 0.9, it widened it)
    assert scale == pytest.approx(1.0, abs=1e-9) and shift == pytest.approx(0.0, abs=1e-9)
    standardised = (float(scored["theta"].iloc[0]) - shift) / scale
    assert standardised == pytest.approx(float(reference["theta"].iloc[0]), abs=0.03)


def test_the_model_jackknife_runs_on_the_laws_own_scale(broken_calibration):
    """The jackknife refits standardise their abilities; run on the rescaled law they were
    another estimator (new models' se x 0.6-1.6, review 2026-12-05). Its abilities are the
    jackknife of the law on its own standardised scale, carried to the reporting scale."""
    from latentbench.irt._fitted import (
        MODEL_JACKKNIFE_GROUPS,
        MODEL_JACKKNIFE_TOL,
        law_models_of,
        law_scale,
        model_jackknife_of,
        random_items_fit,
    )
    from latentbench.irt._random_items import model_jackknife, rescaled

    with_broken, _, _ = broken_calibration
    law = random_items_fit(with_broken)
    rows = law_models_of(with_broken, law)
    shift, scale = law_scale(with_broken, law)
    scores = np.asarray(with_broken.matrix.scores, float)[rows]
    part = copy.copy(law)
    part.theta = law.theta[rows]
    own = rescaled(part, -shift / scale, 1.0 / scale, scores, float(with_broken.sigma))
    np.testing.assert_allclose([own.theta.mean(), own.theta.std()], [0.0, 1.0], atol=1e-9)
    direct = model_jackknife(
        scores, own, float(with_broken.sigma), groups=MODEL_JACKKNIFE_GROUPS,
        tol=MODEL_JACKKNIFE_TOL,
    )  # fmt: skip
    jack = model_jackknife_of(with_broken)
    assert jack is not None
    np.testing.assert_allclose(jack.theta, shift + scale * direct.theta, atol=1e-9)


def test_a_joint_ml_fit_says_a_constant_model_is_off_the_scale_not_detached():
    """Review, 2026-12-05: with constant models off the scale, a joint-ML fit (no prior, so
    no exact posterior) sent a model with every score 1 to the detached intervals: warned
    "detached", listed so in the uncertainty while fit.json said it was not. Now it is said
    once as at the ceiling, and its interval is open upwards (the likelihood has no maximum)."""
    data = simulate_2pl(15, 80, random_state=2)
    scores = data.matrix.scores.copy()
    scores[9] = 1.0  # every answer right
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    fit = TwoPL(prior=None).fit(matrix)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unc = fit.standard_errors()
    said = [str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)]
    assert not any("detached" in m for m in said), said  # (old: "2 model(s) detached")
    assert sum("floor or ceiling" in m and "model_09" in m for m in said) == 1, said
    assert unc.detached is None or "model_09" not in unc.detached["models"]
    assert unc.checks is not None and unc.checks["constant_models"] == ["model_09"]
    row = unc.abilities.iloc[9]
    assert row["upper"] == np.inf and np.isfinite(row["lower"])
    assert row["lower"] > unc.abilities["theta"].drop(index=9).median()


def test_a_constant_model_does_not_inflate_a_joint_ml_fits_scale_correction():
    """Review (helper-71): the joint-ML scale correction ``k`` averaged the abilities' se**2
    over every model; a constant model's (20-30) pushed it to its cap of 2: every ability se
    x 4, every item se / 2 (the items' intervals then under-cover). Over the models that set
    the scale, one broken model leaves the others' intervals as they were."""
    data = simulate_2pl(30, 120, random_state=4)
    scores = data.matrix.scores.copy()
    clean = TwoPL(prior=None).fit(data.matrix)
    scores[0] = 1.0
    broken = TwoPL(prior=None).fit(
        ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        ref, ours = clean.standard_errors(), broken.standard_errors()
    assert ours.scale_factor < 1.2 and ours.scale_factor == pytest.approx(
        ref.scale_factor, abs=0.05
    )
    items = ours.items["discrimination_se"].median() / ref.items["discrimination_se"].median()
    models = ours.abilities["se"].iloc[1:].median() / ref.abilities["se"].iloc[1:].median()
    assert 0.8 < items < 1.25 and 0.8 < models < 1.25, (items, models)  # (old: 0.49, 3.8)


def test_a_constant_model_among_too_few_others_is_said_to_set_the_scale():
    """Review (helper-71): with fewer than three other models a constant model still sets
    the scale (``CONSTANT_MIN_OTHERS``), but the warning said it did not."""
    rng = np.random.default_rng(0)
    scores = (rng.random((3, 40)) < np.array([[0.4], [0.6], [0.5]])).astype(float)
    scores[0] = 1.0
    fit = TwoPL(prior=None).fit(ResponseMatrix(scores, ["m0", "m1", "m2"], list(range(40))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit.standard_errors()
    said = [str(w.message) for w in caught if "floor or ceiling" in str(w.message)]
    assert len(said) == 1 and "still set the reporting scale" in said[0], said
