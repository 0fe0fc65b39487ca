"""The ability of a rank-r fit is the models' position along the items' mean loading.

Issue found by a new user (helper-50, finding 1): for rank > 1 (``--rank auto`` included),
``theta``, the ability ranks, the report's leader and its findings used the first factor,
which is identified only up to the fit's rotation: on BFCL at rank 4 the leader was 63rd by
accuracy (Spearman(theta, accuracy) = -0.085), and at rank 2 the worst model by accuracy was
3rd by ability.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._objective import general_direction
from latentbench.irt.inference import standard_errors

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _rank2_matrix(seed: int = 0, n: int = 40, j: int = 300) -> ResponseMatrix:
    """Two skills, two item groups loading on one each (V >= 0), abilities correlated."""
    rng = np.random.default_rng(seed)
    general = rng.normal(size=n)
    U = np.column_stack([general + 0.6 * rng.normal(size=n), general + 0.6 * rng.normal(size=n)])
    V = np.zeros((j, 2))
    V[: j // 2, 0] = rng.uniform(0.8, 1.6, j // 2)
    V[j // 2 :, 1] = rng.uniform(0.8, 1.6, j - j // 2)
    b = rng.normal(0, 1, j)
    Y = (rng.random((n, j)) < 1 / (1 + np.exp(-(U @ V.T + b)))).astype(float)
    return ResponseMatrix(Y, [f"m{i:02d}" for i in range(n)], [f"q{k:03d}" for k in range(j)])


def test_theta_is_the_position_along_the_mean_loading_whatever_the_factor_order():
    matrix = _rank2_matrix()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=2).fit(matrix)
    w = general_direction(result.V)
    assert np.all(w > 0) and np.isclose(np.linalg.norm(w), 1.0)
    np.testing.assert_allclose(result.theta, result.U @ w)
    np.testing.assert_allclose(result.abilities["theta"], result.U @ w)
    np.testing.assert_allclose(result.discrimination, result.V @ w)
    # the factors' order is arbitrary: swapping them leaves every ability as it is
    swapped = general_direction(result.V[:, ::-1])
    np.testing.assert_allclose(result.U[:, ::-1] @ swapped, result.theta)
    # and it orders models by their scores (either single factor does not, here)
    accuracy = matrix.model_accuracy()
    rho = spearmanr(result.theta, accuracy)[0]
    assert rho > 0.9
    assert rho > max(spearmanr(result.U[:, k], accuracy)[0] for k in range(2)) + 0.02
    # its interval: the variance of U w from the factors' covariance, containing theta
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        abilities = standard_errors(result, matrix).abilities
    np.testing.assert_allclose(abilities["theta"], result.theta)
    assert (
        (abilities["lower"] < abilities["theta"]) & (abilities["theta"] < abilities["upper"])
    ).all()
    assert (abilities["se"] <= abilities[["se_1", "se_2"]].max(axis=1) + 1e-12).all()


def test_rank3_discrimination_intervals_are_not_divided_by_a_loop_counter():
    # a loop over the factors reused the scale correction's name k: at rank 3 the items'
    # discrimination intervals were centred on a / 2
    matrix = _rank2_matrix(seed=1, n=30, j=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=3).fit(matrix)
        items = standard_errors(result, matrix).items
    a = items["discrimination"].to_numpy()
    centre = (items["discrimination_lower"] + items["discrimination_upper"]) / 2
    inside = items["discrimination_lower"] > 0  # not clipped at the bound
    np.testing.assert_allclose(centre[inside], a[inside], rtol=1e-9)


def test_bfcl_rank2_ability_follows_the_scores():
    path = SHARED_DATA / "bfcl_v2.parquet"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    matrix = ResponseMatrix.read(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=2).fit(matrix)
    ab = result.abilities
    assert spearmanr(ab["theta"], ab["accuracy"])[0] > 0.9
    top = ab.sort_values("rank_theta").head(10)
    assert top["rank_accuracy"].max() <= 20  # the worst model by accuracy was 3rd


def test_rank2_bootstrap_item_intervals_are_centred_on_the_reported_discrimination():
    # (review) the replicates held V_n w_n but the estimate stayed V[:, 0]: the basic
    # intervals 2 est - q mixed two axes and held no item's reported discrimination
    from latentbench.irt._bootstrap import bootstrap

    matrix = _rank2_matrix(seed=2, n=30, j=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=2).fit(matrix)
        boot = bootstrap(result, n_boot=20, method="parametric", random_state=1)
    items = boot.items()
    np.testing.assert_allclose(boot.estimate_discrimination, result.discrimination)
    inside = (items["discrimination_lower"] <= result.discrimination) & (
        result.discrimination <= items["discrimination_upper"]
    )
    assert inside.mean() > 0.8


def test_a_rank2_fit_directory_of_the_previous_version_loads_with_the_ability(tmp_path):
    # (review) a directory written when theta was the first factor: load rebuilt theta and
    # rank_theta from it while result.theta was U w, and a report without the responses
    # showed the saved (first-factor) table: two different leaders
    import json

    import pandas as pd

    from latentbench.irt import IRTResult

    matrix = _rank2_matrix(seed=3, n=30, j=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=2).fit(matrix)
        result.save(tmp_path / "fit", matrix)
    # as the previous version wrote it: theta (and theta_fit) the first factor, no hashes
    table = pd.read_csv(tmp_path / "fit" / "abilities.csv")
    table["theta"] = table["theta_1"]
    if "theta_fit" in table.columns:
        table["theta_fit"] = table["theta_1"]
    table.to_csv(tmp_path / "fit" / "abilities.csv", index=False)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())
    info.pop("tables_sha256")
    (tmp_path / "fit" / "fit.json").write_text(json.dumps(info))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = IRTResult.load(tmp_path / "fit")
    np.testing.assert_allclose(loaded.abilities["theta"], loaded.theta)
    np.testing.assert_allclose(loaded.theta, result.theta, atol=1e-6)
    assert loaded.saved_abilities is None
    best = loaded.abilities.sort_values("rank_theta").iloc[0]["model"]
    assert best == result.abilities.sort_values("rank_theta").iloc[0]["model"]


def test_rank2_score_models_puts_new_models_on_the_fits_ability():
    # (review) score_models returned the first factor: scoring the fit's own rows gave a
    # correlation of 0.38 with the fit's theta
    import pandas as pd

    matrix = _rank2_matrix(seed=4, n=30, j=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=2).fit(matrix)
        frame = pd.DataFrame(matrix.scores, index=matrix.model_ids, columns=matrix.item_ids)
        scored = result.score_models(frame)
    assert np.corrcoef(scored["theta"], result.theta)[0, 1] > 0.99


def test_rank2_estimate_restates_a_score_on_the_calibrations_ability():
    # (review) estimate's theta was the first factor: a calibration model's own answers gave
    # theta [-3.46, -0.85] against its fitted ability -4.53
    import pandas as pd

    from latentbench.select import estimate, load_calibration

    matrix = _rank2_matrix(seed=5, n=30, j=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = load_calibration(matrix, rank=2, cache=False)
        w = cal.direction
        assert w.shape == (2,) and np.all(w > 0)
        np.testing.assert_allclose(cal.abilities, cal.model_factors @ w)
        thetas = []
        for k in range(0, 30, 3):
            answers = pd.Series(matrix.scores[k], index=matrix.item_ids)
            result = estimate(cal, answers, budget=150, seed=0)
            assert result.theta_lower <= cal.abilities[k] <= result.theta_upper
            thetas.append(result.theta)
    assert spearmanr(thetas, cal.abilities[::3])[0] > 0.9


def test_synthetic_truth_uses_the_same_ability_direction_as_a_fit():
    """``SyntheticData.theta`` at rank > 1 is ``U w`` (it was the first factor, which a rank-2 fit
    is not comparable with); rank 1 is unchanged."""
    from latentbench.synthetic import simulate_2pl, simulate_low_rank

    one = simulate_2pl(20, 30, random_state=0)
    assert np.array_equal(one.theta, one.U[:, 0]) and np.array_equal(one.a, one.V[:, 0])
    data = simulate_low_rank(60, 300, rank=2, random_state=3)
    w = general_direction(data.V)
    assert np.allclose(data.theta, data.U @ w) and np.allclose(data.a, data.V @ w)
    fit = TwoPL(rank=2, tol=1e-6, max_iter=400).fit(data.matrix)
    truth_logit = (data.U @ data.V.T + data.b).mean(axis=1)
    assert spearmanr(data.theta, truth_logit)[0] > 0.95
    assert spearmanr(fit.theta, data.theta)[0] > 0.9


def test_a_report_of_a_previous_versions_rank2_fit_says_why_its_intervals_are_not_shown(
    tmp_path,
):
    # (upgrade walk) a rank-2 fit directory of the previous version reported without its
    # responses: abilities.csv's intervals (the first factor's) are set aside, and the report
    # said only "standard errors ... were not computed (pass --responses)", as if the file
    # held none; it now names the old directory as the reason and the fix (refit)
    import json

    import pandas as pd

    from latentbench.report import report_from

    matrix = _rank2_matrix(seed=3, n=30, j=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TwoPL(rank=2).fit(matrix).save(tmp_path / "fit", matrix)
    table = pd.read_csv(tmp_path / "fit" / "abilities.csv")  # as the previous version wrote it
    table["theta"] = table["theta_fit"] = table["theta_1"]
    table.to_csv(tmp_path / "fit" / "abilities.csv", index=False)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())
    info.pop("tables_sha256")
    info.pop("input", None)  # the responses are not at hand
    (tmp_path / "fit" / "fit.json").write_text(json.dumps(info))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = report_from(tmp_path / "fit")
    said = " ".join(" ".join(report.notes).split())
    assert "the intervals in abilities.csv were not used: a rank-2 fit directory written" in said
    assert "refit with `latentbench fit`" in said
