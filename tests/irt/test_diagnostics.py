"""Diagnostics on synthetic data with planted flaws (latentbench.irt.diagnostics)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt.diagnostics import (
    diagnose,
    duplicate_items,
    item_fit,
    rank_agreement,
    rank_changes,
    uninformative_items,
)
from latentbench.synthetic import simulate_2pl

N_MODELS, N_ITEMS = 300, 200
ZERO_A = np.arange(0, 10)
DUP_COPIES, DUP_SOURCES = np.arange(20, 25), np.arange(40, 45)
NON_MONOTONE = np.arange(60, 65)
CONSTANT = np.arange(70, 73)
PLANTED = np.concatenate([ZERO_A, DUP_COPIES, DUP_SOURCES, NON_MONOTONE, CONSTANT])


@pytest.fixture(scope="module")
def planted():
    data = simulate_2pl(N_MODELS, N_ITEMS, random_state=1)
    rng = np.random.default_rng(5)
    scores = np.array(data.complete, copy=True)
    theta = data.theta
    # answered at random with an item-specific rate: discrimination exactly 0
    rates = expit(rng.normal(size=ZERO_A.size))
    scores[:, ZERO_A] = (rng.random((N_MODELS, ZERO_A.size)) < rates).astype(np.float32)
    scores[:, DUP_COPIES] = scores[:, DUP_SOURCES]
    # non-monotone: right for strong and weak models, wrong in the middle
    p = np.where(np.abs(theta)[:, None] > 0.8, 0.85, 0.15)
    scores[:, NON_MONOTONE] = (rng.random((N_MODELS, NON_MONOTONE.size)) < p).astype(np.float32)
    scores[:, CONSTANT] = 1.0
    scores[rng.random(scores.shape) < 0.05] = np.nan  # some missing cells
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    return matrix, TwoPL().fit(matrix)


def test_planted_duplicates_found_and_nothing_else(planted):
    matrix, result = planted
    dups = duplicate_items(result, matrix)
    flagged = dups[dups["duplicate"]]
    pairs = {frozenset(p) for p in zip(flagged["item_a"], flagged["item_b"], strict=True)}
    ids = matrix.item_ids
    expected = {frozenset((ids[a], ids[b])) for a, b in zip(DUP_COPIES, DUP_SOURCES, strict=True)}
    assert pairs == expected
    assert flagged["identical"].all() and (flagged["agreement"] == 1).all()
    assert (flagged["expected_disagreements"] > 30).all()  # far from chance agreement
    assert list(dups.columns) == [
        "item_a",
        "item_b",
        "n_common",
        "agreement",
        "disagreements",
        "expected_disagreements",
        "p_value",
        "identical",
        "duplicate",
    ]


def test_planted_zero_discrimination_items_are_uninformative(planted):
    matrix, result = planted
    diag = diagnose(result, matrix)
    items = diag.items.set_index("item")
    ids = np.array(matrix.item_ids)
    hits = items.loc[ids[ZERO_A], "uninformative"].sum()
    # each is flagged with probability >= 0.95 (one-sided 5% test of a = 0): P(hits < 8) < 0.02
    assert hits >= 8
    regular = np.setdiff1d(np.arange(N_ITEMS), PLANTED)
    false_rate = items.loc[ids[regular], "uninformative"].mean()
    assert false_rate < 0.05  # true a >= 0.4: power is high at 300 models
    # constant items are reported as constant, not as uninformative
    assert items.loc[ids[CONSTANT], "constant"].all()
    assert not items.loc[ids[CONSTANT], "uninformative"].any()
    assert set(diag.constant["item"]) == set(ids[CONSTANT])
    assert (diag.constant["value"] == 1.0).all()
    # duplicates recorded on both members
    assert set(items.loc[ids[DUP_COPIES], "duplicate_of"]) == set(ids[DUP_SOURCES])
    assert set(diag.flagged_items["item"]) >= set(ids[np.concatenate([CONSTANT, DUP_COPIES])])


def test_item_fit_flags_non_monotone_items_and_is_calibrated(planted):
    matrix, result = planted
    fit = item_fit(result, matrix)
    ids = np.array(matrix.item_ids)
    by_item = fit.set_index("item")
    assert by_item.loc[ids[NON_MONOTONE], "poor_fit"].sum() >= 4
    regular = np.setdiff1d(np.arange(N_ITEMS), PLANTED)
    # under the model, p-values are roughly uniform: ~5% below 0.05 (binomial sd ~1.6%)
    below = (by_item.loc[ids[regular], "p_value"] < 0.05).mean()
    assert below < 0.12
    assert by_item.loc[ids[regular], "poor_fit"].mean() < 0.03
    assert by_item.loc[ids[CONSTANT], "p_value"].isna().all()
    assert by_item.loc[ids[regular], "infit"].between(0.7, 1.3).mean() > 0.95


@pytest.mark.parametrize(("n_models", "n_items", "b_sd"), [(20, 200, 1.0), (30, 400, 2.0)])
def test_duplicate_flags_keep_their_family_wise_level_at_small_shapes(n_models, n_items, b_sd):
    """Matrices without duplicates, at the shapes users have: a pair flagged on at most 6 of
    40 (the level 0.05 gives 2 on average; 7 or more has probability 0.004). Bonferroni over
    the candidates alone (chosen for their agreement) flagged a pair on 70% (20 x 200) and
    15% (30 x 400) of such matrices."""
    flagged = 0
    for seed in range(40):
        data = simulate_2pl(n_models, n_items, b_sd=b_sd, random_state=1000 + seed)
        result = TwoPL().fit(data.matrix)
        flagged += bool(duplicate_items(result, data.matrix)["duplicate"].any())
    assert flagged <= 6


def test_clean_data_has_no_duplicates():
    data = simulate_2pl(150, 300, random_state=4)
    result = TwoPL(prior=None).fit(data.matrix)
    dups = duplicate_items(result, data.matrix, min_agreement=0.8)
    assert not dups["duplicate"].any()


def test_rank_changes_and_agreement(planted):
    matrix, result = planted
    moves = rank_changes(result, matrix)
    assert moves["abs_shift"].is_monotonic_decreasing
    assert (moves["abs_shift"] == moves["rank_shift"].abs()).all()
    assert {"rank_lower", "rank_upper", "significant"} <= set(moves.columns)
    assert (moves["rank_lower"] <= moves["rank_upper"]).all()
    plain = rank_changes(result)
    assert "significant" not in plain.columns
    agreement = rank_agreement(result, top=(10, 50))
    assert agreement["subset"].tolist() == ["all", "top 10", "top 50"]
    assert agreement.loc[0, "spearman"] > 0.95  # 2PL data: accuracy and ability agree
    assert agreement[["spearman", "kendall"]].abs().le(1).all().all()


def test_rank_agreement_detects_disagreement():
    # two groups of models: the stronger ones answer only the hard, discriminating items
    rng = np.random.default_rng(0)
    n, m = 40, 120
    theta = np.sort(rng.normal(size=n))
    a = np.r_[np.full(60, 2.0), np.full(60, 0.0)]
    b = np.r_[np.full(60, -1.0), rng.normal(size=60)]
    scores = (rng.random((n, m)) < expit(np.outer(theta, a) + b)).astype(np.float32)
    matrix = ResponseMatrix(scores, [f"m{i}" for i in range(n)], [f"q{j}" for j in range(m)])
    result = TwoPL().fit(matrix)
    agreement = rank_agreement(result, top=10)
    assert agreement.loc[0, "spearman"] < 0.999
    assert agreement.loc[0, "n_models"] == n


def test_random_answer_items_flagged_under_the_default_prior_at_a_small_shape():
    """30 models: the held-out choice takes a tight prior on a (centred at 1), which keeps a
    random item's a far from 0, so a test on the estimate (a / se) flags none of them; the
    score test of a = 0 does not involve the prior."""
    data = simulate_2pl(30, 200, random_state=12)
    rng = np.random.default_rng(13)
    scores = np.array(data.complete, copy=True)
    random_items = np.arange(20)
    scores[:, random_items] = (rng.random((30, random_items.size)) < 0.6).astype(np.float32)
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    result = TwoPL().fit(matrix)
    assert result.prior_selection is not None and result.prior_selection.a_sd == 0.25
    items = diagnose(result, matrix).items
    flagged = items["uninformative"].to_numpy()
    # each random item is flagged with probability 0.95: P(fewer than 15 of 20) < 0.003
    assert flagged[random_items].sum() >= 15
    # the MAP estimates of the random items stay well above 0
    assert (result.V[random_items, 0] > 0.5).all()
    # informative items missed (a ~ LogNormal(0, 0.3)) are a power question at 30 models
    # (36% at this seed: very easy or hard items carry little signal); far below the random ones
    regular = np.setdiff1d(np.arange(200), random_items)
    assert flagged[regular].mean() < 0.5


def test_rank_agreement_of_equal_models_is_nan_without_a_scipy_warning():
    # every model scored the same: scipy's ConstantInputWarning leaked into `report`
    import warnings

    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.irt.diagnostics import rank_agreement

    Y = np.ones((5, 12))
    Y[:, :6] = 0.0  # every model the same answers
    matrix = ResponseMatrix(Y, [f"m{i}" for i in range(5)], [f"q{j}" for j in range(12)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = rank_agreement(result)
    assert np.isnan(table.loc[0, "spearman"]) and table.loc[0, "n_models"] == 5


def test_rank_changes_intervals_are_the_reported_tables():
    """A joint-ML fit's reported se carries the scale correction (abilities.csv, the report);
    rank_changes drew its rank intervals (and 'significant') from the uncorrected se."""
    import warnings

    from latentbench.irt._reported import reported_abilities
    from latentbench.irt.inference import normal_draws, rank_intervals

    data = simulate_2pl(25, 60, missing=0.05, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(prior=None).fit(data.matrix)
        table = reported_abilities(result, result.standard_errors(data.matrix))
        moves = rank_changes(result, data.matrix).set_index("model")
    draws = normal_draws(table["theta"].to_numpy(), table["se"].to_numpy(), 2000, 0)
    ranks = rank_intervals(draws, table["model"].tolist(), estimate=table["theta"].to_numpy())
    ranks = ranks.set_index("model")
    assert (moves.loc[ranks.index, "rank_lower"].to_numpy() == ranks["rank_lower"]).all()
    assert (moves.loc[ranks.index, "rank_upper"].to_numpy() == ranks["rank_upper"]).all()


def test_rank_agreement_leaves_out_a_model_without_cells():
    import warnings

    data = simulate_2pl(20, 40, random_state=1)
    scores = np.vstack([data.matrix.scores, np.full((1, 40), np.nan)])
    matrix = ResponseMatrix(scores, [*data.matrix.model_ids, "none"], data.matrix.item_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        agreement = diagnose(result, matrix).rank_agreement.set_index("subset")
    assert agreement.loc["all", "n_models"] == 20
    assert np.isfinite(agreement.loc["all", "spearman"])


def test_uninformative_items_computes_no_ability_intervals(monkeypatch):
    """The table needs the discriminations' standard errors only: at few models the
    abilities' intervals (a random-item fit and its item bootstrap, 20 times the rest at 20 x
    200) were computed and thrown away. The columns are those of the full computation."""
    from latentbench.irt import inference

    data = simulate_2pl(20, 200, random_state=11)
    result = TwoPL().fit(data.matrix)
    expected = inference.standard_errors(result, data.matrix, scale_correction=False).items
    result.uncertainty_cache = None  # (computed again below, not taken from the cache)
    calls = []
    original = inference._ability_route
    monkeypatch.setattr(
        inference, "_ability_route", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    table = uninformative_items(result, data.matrix)
    assert calls == []
    assert table["se"].equals(expected["discrimination_se"])
    assert table["discrimination"].equals(expected["discrimination"])


def test_diagnose_computes_the_items_standard_errors_once(monkeypatch):
    """diagnose asks uninformative_items (the items' table) and rank_changes (the whole
    standard errors): on a fresh default fit, one computation of the information blocks."""
    from latentbench.irt import inference

    data = simulate_2pl(40, 120, random_state=12)
    result = TwoPL().fit(data.matrix)
    calls = []
    original = inference.information_blocks
    monkeypatch.setattr(
        inference, "information_blocks", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    diagnose(result, data.matrix)
    assert len(calls) == 1


def test_uninformative_test_keeps_its_level_at_20_models():
    """Items answered at random (a = 0) at 20 x 200, half the items: the one-sided 5% score
    test rejects a = 0 on 5.8% (+/- 0.4%) of them. Tested against the fitted abilities, which
    hold the item's own responses, it rejected 7.3%. Tolerance: 3.5 binomial se over the
    ~3,000 items tested (the spread across seeds gives about the same)."""
    hits = total = 0
    for seed in range(30):
        data = simulate_2pl(20, 200, random_state=2000 + seed)
        rng = np.random.default_rng(seed)
        scores = np.array(data.matrix.scores, dtype=np.float32)
        scores[:, :100] = rng.random((20, 100)) < expit(rng.normal(size=100))
        matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
        p_value = uninformative_items(TwoPL().fit(matrix), matrix)["p_value"].to_numpy()[:100]
        varies = scores[:, :100].std(axis=0) > 0
        hits += int((p_value[varies] <= 0.05).sum())
        total += int(varies.sum())
    assert hits / total <= 0.05 + 3.5 * np.sqrt(0.05 * 0.95 / total), (hits, total)


def test_item_fit_p_values_keep_their_level_at_20_models():
    """Well-fitting items (2PL data) at 20 x 200: p <= 0.05 on at most 5% (+ 3.5 binomial
    se) of them. Referred to chi-square with G - 2 = 1 df (3 ability groups) they were
    rejected on 9.6%; with G - 1 on 2.6% (``benchmarks/diag_levels.py``)."""
    hits = total = 0
    for seed in range(15):
        data = simulate_2pl(20, 200, random_state=3000 + seed)
        p_value = item_fit(TwoPL().fit(data.matrix), data.matrix)["p_value"].to_numpy()
        tested = ~np.isnan(p_value)
        hits += int((p_value[tested] <= 0.05).sum())
        total += int(tested.sum())
    assert hits / total <= 0.05 + 3.5 * np.sqrt(0.05 * 0.95 / total), (hits, total)
