"""Item bootstrap of the random-item fit (issue 28: small calibrations' intervals)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from latentbench import ResponseMatrix
from latentbench.irt import IRTResult, TwoPL, _fitted
from latentbench.irt._random_items import _Problem, _run_em, resamples
from latentbench.synthetic import simulate_2pl


def test_multiplicities_equal_copied_items():
    """An item counted m times (weights on its log-likelihood terms) is the same EM as the
    matrix with the item copied m times."""
    data = simulate_2pl(10, 60, random_state=3)
    scores = np.asarray(data.matrix.scores, float)
    scores[np.random.default_rng(0).random(scores.shape) < 0.1] = np.nan
    counts = resamples(5, 60, 1)[0]
    items = np.flatnonzero(counts)
    grid_a = np.repeat(np.linspace(0, 3, 6), 8)
    grid_b = np.tile(np.linspace(-4, 4, 8), 6)
    weighted = _Problem(scores[:, items], grid_a, grid_b, weights=counts[items])
    copied = _Problem(np.repeat(scores, counts, axis=1), grid_a, grid_b)
    theta = np.linspace(-1.5, 1.5, 10)
    log_w = np.full(grid_a.size, -np.log(grid_a.size))
    assert weighted.posterior(theta, log_w)[1] == pytest.approx(copied.posterior(theta, log_w)[1])
    ref = np.ones(10, bool)
    one = _run_em(weighted, theta, ref, 1e-8, 300)
    two = _run_em(copied, theta, ref, 1e-8, 300)
    np.testing.assert_allclose(one[0], two[0], atol=1e-6)
    np.testing.assert_allclose(one[1], two[1], atol=1e-5)


@pytest.fixture(scope="module")
def few_models():
    """A 2PL matrix of 16 models x 300 items (a calibration of the size that under-covered)."""
    data = simulate_2pl(16, 300, random_state=11)
    return data, TwoPL().fit(data.matrix)


def test_intervals_of_few_models_widen_by_the_item_bootstrap(few_models):
    """The law-fixed information leaves out the item law's own error: the intervals take
    the larger of the law-fixed se and the item bootstrap's sd, model by model; the
    bootstrap's replicates redo the estimator's EM from a uniform law, and their spread is
    above the law-fixed se for most models (without the bootstrap the ratio is 1 by
    definition: this fails without the change)."""
    _, result = few_models
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no detached model
        unc = result.standard_errors()
    law = result.random_items
    assert unc.method == "random-item marginal likelihood + item bootstrap"
    assert law.n_boot == _fitted.ITEM_BOOTSTRAP and law.boot_theta.shape == (40, 16)
    summary = unc.checks["item_bootstrap"]
    assert summary["replicates"] == 40 and summary["seed"] == _fitted.ITEM_BOOTSTRAP_SEED
    se = unc.abilities["se"].to_numpy()
    np.testing.assert_allclose(se, np.maximum(law.se, law.boot_sd))
    assert summary["sd_ratio_median"] > 1.0 and summary["models_widened"] >= 8
    ab = unc.abilities
    assert np.all((ab["lower"] <= ab["theta"]) & (ab["theta"] <= ab["upper"]))
    # replicates are standardised like the fit (mean 0, sd 1 over the models)
    np.testing.assert_allclose(law.boot_theta.mean(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(law.boot_theta.std(axis=1), 1.0, atol=1e-9)


def test_item_bootstrap_round_trips_and_switches_off(few_models, tmp_path, monkeypatch):
    """Saved with the fit (random_items.npz) and read back: the same intervals without a
    refit; ``ITEM_BOOTSTRAP = 0`` gives the law-fixed intervals."""
    data, result = few_models
    first = result.standard_errors()
    result.save(tmp_path / "fit", data.matrix)
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.random_items is not None and loaded.random_items.n_boot == 40
    monkeypatch.setattr(_fitted, "item_bootstrap", None)  # a refit would fail here
    again = loaded.standard_errors(data.matrix)
    np.testing.assert_allclose(again.abilities["se"], first.abilities["se"])
    assert again.method == first.method
    monkeypatch.setattr(_fitted, "ITEM_BOOTSTRAP", 0)
    plain = TwoPL().fit(data.matrix).standard_errors()
    assert plain.method == "random-item marginal likelihood"
    assert "item_bootstrap" not in plain.checks
    assert np.all(plain.abilities["se"].to_numpy() <= first.abilities["se"].to_numpy() + 1e-12)


def _new_models(data) -> ResponseMatrix:
    """Four new models answering the simulated items (seeded), on the calibration's items."""
    rng = np.random.default_rng(3)
    theta = rng.standard_normal(4)
    p = 1 / (1 + np.exp(-(np.outer(theta, data.a.ravel()) + data.b.ravel())))
    return ResponseMatrix(
        (rng.random(p.shape) < p).astype(np.float32), [f"n{i}" for i in range(4)],
        data.matrix.item_ids,
    )  # fmt: skip


def test_score_models_carries_the_bootstrap_to_new_models(few_models, monkeypatch):
    """A new model is scored in every replicate against that replicate's law, its own items
    resampled with the calibration's: its se is at least the law-fixed one, larger for some;
    the reported ability and the interval are unchanged in centre."""
    data, result = few_models
    new = _new_models(data)
    scored = result.score_models(new)
    monkeypatch.setattr(_fitted, "ITEM_BOOTSTRAP", 0)
    plain = TwoPL().fit(data.matrix).score_models(new)
    np.testing.assert_allclose(scored["theta"], plain["theta"], atol=1e-8)
    assert np.all(scored["se"].to_numpy() >= plain["se"].to_numpy() - 1e-12)
    assert np.any(scored["se"].to_numpy() > plain["se"].to_numpy() * 1.02)


def test_limits_cells_and_score_models_cells(few_models, monkeypatch):
    """The bootstrap runs on fits of at most ``ITEM_BOOTSTRAP_MAX_MODELS`` reference models and
    ``ITEM_BOOTSTRAP_MAX_CELLS`` cells: an MMLU-Pro calibration half (14 x 12,032) gets it,
    the whole matrix (29 x 12,032) and 101 models do not (31-100 do since 2026-12-08); the
    model jackknife of
    ``score_models`` has the same limits and at most 2,000 items (MMLU-Pro's halves and the
    22 x 2,854 stress matrices' halves do not get it: it over-covered there).
    ``score_models`` carries the bootstrap to new models up to ``BOOTSTRAP_SCORES_MAX_CELLS``
    cells; above, its intervals are those without the bootstrap."""
    assert _fitted._item_bootstrap_applies(14, 12_032)
    assert not _fitted._item_bootstrap_applies(29, 12_032)
    assert _fitted._item_bootstrap_applies(31, 300) and _fitted._item_bootstrap_applies(100, 300)
    assert not _fitted._item_bootstrap_applies(101, 300)
    assert not _fitted._model_jackknife_applies(14, 12_032)
    assert not _fitted._model_jackknife_applies(11, 2_854)
    assert _fitted._model_jackknife_applies(11, 1_000)
    assert _fitted._model_jackknife_applies(29, 805)
    assert not _fitted._model_jackknife_applies(29, 12_032)
    assert not _fitted._model_jackknife_applies(31, 300)
    data, result = few_models
    new = _new_models(data)
    monkeypatch.setattr(_fitted, "MODEL_JACKKNIFE", False)
    assert result.standard_errors().method.endswith("+ item bootstrap")
    carried = result.score_models(new)
    monkeypatch.setattr(_fitted, "BOOTSTRAP_SCORES_MAX_CELLS", data.matrix.scores.size - 1)
    capped = result.score_models(new)
    monkeypatch.setattr(_fitted, "ITEM_BOOTSTRAP", 0)
    plain = TwoPL().fit(data.matrix).score_models(new)
    np.testing.assert_allclose(capped["se"], plain["se"], rtol=1e-10)
    np.testing.assert_allclose(capped["theta"], plain["theta"], atol=1e-10)
    assert np.any(carried["se"].to_numpy() > capped["se"].to_numpy() * 1.02)


def test_fits_of_31_to_100_models_are_bootstrapped_and_score_models_keeps_30(monkeypatch):
    """A fit of 35 models ran no item bootstrap (the limit was 30), and its own intervals
    covered 0.930 +/- 0.007 at 35 x 300 (0.955 with it: benchmarks/bench_bootstrap_models.py);
    it runs now and widens some models. ``score_models`` against such a calibration keeps
    its intervals (its limit stays at 30 models): the same as with no bootstrap at all."""
    data = simulate_2pl(38, 60, random_state=5)
    cal = ResponseMatrix(data.matrix.scores[:35], data.matrix.model_ids[:35], data.matrix.item_ids)
    new = ResponseMatrix(data.matrix.scores[35:], data.matrix.model_ids[35:], data.matrix.item_ids)
    result = TwoPL().fit(cal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unc = result.standard_errors()
        scored = result.score_models(new)
    assert unc.method == "random-item marginal likelihood + item bootstrap"
    assert unc.checks["item_bootstrap"]["models_widened"] > 0
    monkeypatch.setattr(_fitted, "ITEM_BOOTSTRAP", 0)
    plain = TwoPL().fit(cal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert plain.standard_errors().method == "random-item marginal likelihood"
        unbooted = plain.score_models(new)
    np.testing.assert_allclose(scored["se"], unbooted["se"], rtol=1e-10)
    np.testing.assert_allclose(scored["theta"], unbooted["theta"], atol=1e-10)
