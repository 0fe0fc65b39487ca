"""Counts as counts (issue 28): K trials per cell give the binomial likelihood."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL, detect_trials, reported_abilities
from latentbench.synthetic import simulate_2pl


def _binomial(n_models: int, n_items: int, trials: int, seed: int):
    data = simulate_2pl(n_models, n_items, random_state=seed)
    rng = np.random.default_rng(100 + seed)
    scores = (rng.binomial(trials, data.probabilities) / trials).astype(np.float32)
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    theta = data.theta.ravel()
    return matrix, (theta - theta.mean()) / theta.std()


def test_detect_trials_reads_the_score_grid():
    matrix, _ = _binomial(10, 50, 10, 0)
    assert detect_trials(matrix.scores) == 10
    assert detect_trials(np.array([[0.0, 1.0], [1.0, np.nan]])) == 1  # binary
    assert detect_trials(np.array([[0.0, 0.5, 1.0, 0.5]])) == 1  # a 1/2 grid: draws, not 2 trials
    assert detect_trials(np.array([[0.0, 0.25, 0.75, 0.5, 1 / 3]])) == 12
    assert detect_trials(np.array([[0.1234, 0.5, 0.77, 0.9]])) == 1  # continuous


def test_three_trials_are_read_from_their_grid():
    """A 1/3 grid (pass@1 over 3 samples, 3 judges, a store's mean over 3 epochs) has two
    fractional values, 1/3 and 2/3: it was never read as 3 trials (three distinct fractional
    values were required), although `fit --trials auto` says K >= 3 and a 1/4 or 1/5 grid
    is read. Both grid values must occur; a single fractional value is no grid."""
    matrix, _ = _binomial(12, 60, 3, 4)
    assert detect_trials(matrix.scores) == 3
    assert detect_trials(np.array([[0.0, 1 / 3, 1.0, 1 / 3]])) == 1  # one value: no grid
    assert detect_trials(np.array([[0.0, 0.25, 0.75, 1.0]])) == 1  # 2 of a 1/4 grid's 3 values
    with pytest.warns(match=r"read as 3 trials"):
        assert TwoPL().fit(matrix).options["trials"] == 3


def test_trials_narrow_the_intervals_by_about_root_k():
    matrix, _ = _binomial(30, 200, 10, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        soft = TwoPL(trials=1).fit(matrix).standard_errors().abilities["se"]
        counts = TwoPL(trials=10).fit(matrix).standard_errors().abilities["se"]
    ratio = float(np.median(soft / counts))
    assert 2.0 < ratio < 4.5, ratio  # sqrt(10) = 3.2; the priors and the items' law move it


def test_python_default_reads_the_grid_as_the_cli_does(tmp_path):
    """TwoPL() and `latentbench fit` both read a 1/10 grid as 10 trials (the same fit, said
    once): the Python default was 1 trial (soft labels), intervals about 3x wider."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.exceptions import DataWarning

    matrix, _ = _binomial(12, 60, 10, 3)
    with pytest.warns(DataWarning, match=r"grid of 1/10 \(.*\): read as 10 trials"):
        estimator = TwoPL()
        result = estimator.fit(matrix)
    assert result.options["trials"] == 10 and estimator.get_params()["trials"] == "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # cross_validate resolves K once, quietly
        TwoPL(trials=10).cross_validate(matrix, n_splits=1)
    with pytest.warns(DataWarning):
        assert TwoPL().cross_validate(matrix, n_splits=1).table.shape[0] == 2
    path = tmp_path / "m.csv"
    matrix.to_wide().to_csv(path)
    _register()
    res = CliRunner().invoke(app, ["fit", str(path), "--out", str(tmp_path / "f"), "--quiet"])
    assert res.exit_code == 0, res.output
    cli = pd.read_csv(tmp_path / "f" / "abilities.csv")
    assert json.loads((tmp_path / "f" / "fit.json").read_text())["options"]["trials"] == 10
    ours = reported_abilities(result, result.standard_errors()).set_index("model")
    ours = ours.reindex(cli["model"].astype(str))
    for column in ("theta", "lower", "upper"):
        np.testing.assert_allclose(cli[column].to_numpy(), ours[column].to_numpy(), atol=1e-6)


def test_scores_off_the_trials_grid_are_said():
    """--trials 10 on scores that are not multiples of 1/10: one DataWarning with an example
    (was silent)."""
    from latentbench.exceptions import DataWarning

    matrix, _ = _binomial(6, 30, 10, 4)
    scores = matrix.scores.copy()
    scores[2, 5] = 0.55
    odd = ResponseMatrix(scores, matrix.model_ids, matrix.item_ids)
    with pytest.warns(DataWarning, match=r"1 of 180 observed scores are not multiples of 1/10"):
        TwoPL(trials=10).fit(odd)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        TwoPL(trials=10).fit(matrix)  # on the grid: nothing to say


def test_bad_trials_are_refused():
    from latentbench.exceptions import InputError

    matrix, _ = _binomial(5, 20, 3, 2)
    with pytest.raises(InputError, match="trials"):
        TwoPL(trials=0).fit(matrix)


@pytest.mark.slow
def test_binomial_intervals_cover_and_match_the_error():
    """K = 10 trials per cell, 30 models x 300 items, 10 data sets: 95% ability intervals
    cover the truth (3.5 Monte Carlo se, never below the binomial one) and the mean se is
    within 15% of the RMSE (measured 45 x 400, 6 sets: 0.952, se / RMSE 0.969)."""
    covered, se, sq = [], [], []
    for seed in range(10):
        matrix, truth = _binomial(30, 300, 10, seed)
        ab = TwoPL(trials=10).fit(matrix).standard_errors().abilities
        covered.append(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"])))
        se.append(ab["se"].mean())
        sq.append(np.mean((ab["theta"] - truth) ** 2))
    values = np.array(covered)
    mc = max(values.std(ddof=1) / np.sqrt(values.size), np.sqrt(0.95 * 0.05 / 300))
    assert abs(values.mean() - 0.95) <= 3.5 * mc, (values.mean(), mc)
    ratio = float(np.mean(se) / np.sqrt(np.mean(sq)))
    assert 0.85 <= ratio <= 1.15, ratio


def test_a_few_fractional_cells_are_not_k_trials():
    """Three partial-credit cells among 397 binary answers (or one average column among 40
    binary items) were read as K trials per cell, so every binary cell counted K times and the
    intervals shrank about 2x: now 1 trial, said with the count of fractional cells."""
    from latentbench.exceptions import DataWarning

    data = simulate_2pl(10, 40, random_state=5)
    scores = data.matrix.scores.copy()
    scores[0, 3], scores[1, 10], scores[3, 0] = 0.25, 0.5, 0.75
    assert detect_trials(scores) == 1
    from latentbench.irt._counts import trials_grid

    assert trials_grid(scores) == (4, 3, 400)
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    with pytest.warns(DataWarning, match=r"3 of 400 observed cells are fractional") as record:
        result = TwoPL().fit(matrix)
    assert result.options["trials"] == 1
    assert not any("read as 4 trials" in str(w.message) for w in record)
    # an average column: 10 of 410 cells on a 1/40 grid
    avg = np.round(data.matrix.scores.mean(axis=1, keepdims=True) * 40) / 40
    assert detect_trials(np.hstack([data.matrix.scores, avg])) == 1


def test_the_k_trials_note_counts_the_fractional_cells():
    from latentbench.exceptions import DataWarning

    matrix, _ = _binomial(8, 30, 10, 6)
    fractional = int(np.count_nonzero((matrix.scores > 0) & (matrix.scores < 1)))
    with pytest.warns(DataWarning, match=rf"grid of 1/10 \({fractional} of 240 observed cells"):
        assert TwoPL().fit(matrix).options["trials"] == 10


def test_the_off_grid_warning_formats_its_counts_and_spells_the_flag_on_the_command_line():
    """``fit --trials 3`` warned "trials=3: 215 of 42604 ...": the Python keyword on the
    command line and counts without separators. The library says ``trials=3: 1,200 of
    1,200``; the command line ``--trials 3: 1,200 of 1,200``."""
    from latentbench.cli._common import cli_spelling
    from latentbench.exceptions import DataWarning
    from latentbench.irt._model import _warn_off_grid

    scores = np.full((20, 60), 0.5)  # not a multiple of 1/3
    matrix = ResponseMatrix(scores, [f"m{k}" for k in range(20)], [f"i{j}" for j in range(60)])
    with pytest.warns(DataWarning) as caught:
        _warn_off_grid(matrix, 3)
    text = str(caught[0].message)
    assert text.startswith("trials=3: 1,200 of 1,200 observed scores are not multiples of 1/3")
    assert cli_spelling(text).startswith("--trials 3: 1,200 of 1,200 observed scores")
