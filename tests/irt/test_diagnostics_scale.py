"""The item diagnostics at a leaderboard's size: blocks of items (memory), the pruned
near-duplicate search (the same pairs as every pair checked), one standard-errors
computation per options (latentbench.irt.diagnostics)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL, diagnostics, inference
from latentbench.irt.diagnostics import duplicate_items, item_fit, uninformative_items
from latentbench.synthetic import simulate_2pl


def _leaderboard(n_models: int, n_items: int, *, missing: bool, fractional: bool, seed: int):
    """A complete (or 30%-missing) 2PL matrix with five planted near-copies of items."""
    data = simulate_2pl(n_models, n_items, random_state=seed)
    rng = np.random.default_rng(seed)
    scores = np.array(data.complete, dtype=np.float32, copy=True)
    scores[:, :5] = scores[:, 10:15]
    flip = rng.random((n_models, 5)) < 0.01
    scores[:, :5] = np.where(flip, 1.0 - scores[:, :5], scores[:, :5])
    if fractional:
        scores[:, 20:40] = np.round(rng.random((n_models, 20)), 2)
    if missing:
        scores[rng.random(scores.shape) < 0.3] = np.nan
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    return matrix, TwoPL().fit(matrix)


def _every_pair(matrix: ResponseMatrix, min_agreement: float = 0.95, min_common: int = 10):
    """The candidate pairs, every pair checked in float64 (the definition)."""
    scores = matrix.scores.astype(np.float64)
    obs = ~np.isnan(scores)
    y = np.where(obs, scores, 0.0)
    common = obs.T.astype(float) @ obs
    dis = (y * obs).T @ ((1 - y) * obs) + ((1 - y) * obs).T @ (y * obs)
    constant = np.zeros(scores.shape[1], dtype=bool)
    constant[matrix.constant_items()] = True
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = 1.0 - dis / common
    keep = (common >= min_common) & (agree >= min_agreement - 1e-6)
    keep &= np.triu(np.ones_like(keep), 1) & ~constant[:, None] & ~constant[None, :]
    a, b = np.nonzero(keep)
    ids = matrix.item_ids
    return {(ids[i], ids[j]): (common[i, j], dis[i, j]) for i, j in zip(a, b, strict=True)}


@pytest.mark.parametrize(
    ("missing", "fractional"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_duplicate_candidates_are_every_pair_that_agrees(missing, fractional):
    matrix, result = _leaderboard(120, 700, missing=missing, fractional=fractional, seed=3)
    found = duplicate_items(result, matrix, block=64)  # several blocks and windows
    columns = ["item_a", "item_b", "n_common", "disagreements"]
    pairs = {(a, b): (c, d) for a, b, c, d in found[columns].itertuples(index=False)}
    expected = _every_pair(matrix)
    assert pairs.keys() == expected.keys()
    for pair, (common, dis) in expected.items():
        assert pairs[pair] == pytest.approx((common, dis), abs=1e-3)
    planted = {(matrix.item_ids[j], matrix.item_ids[j + 10]) for j in range(5)}
    flagged = found[found["duplicate"]]
    assert len(planted & set(zip(flagged["item_a"], flagged["item_b"], strict=True))) >= 3
    # the rows in the order of the first item, then the second, before sorting by p-value:
    # the same table with any block size
    again = duplicate_items(result, matrix, block=700)
    assert found.equals(again)


def test_a_complete_binary_matrix_skips_the_pairs_too_far_apart(monkeypatch):
    matrix, result = _leaderboard(200, 900, missing=False, fractional=False, seed=5)
    products = []
    original = diagnostics._keep

    def counting(rows, cols, *args, **kwargs):
        products.append(rows.size * cols.size)
        return original(rows, cols, *args, **kwargs)

    monkeypatch.setattr(diagnostics, "_keep", counting)
    found = duplicate_items(result, matrix, block=64)
    # the items' right answers spread over the models: most pairs are never multiplied
    assert sum(products) < 0.25 * 900 * 900
    assert set(zip(found["item_a"], found["item_b"], strict=True)) == set(_every_pair(matrix))


def test_item_diagnostics_by_blocks_are_the_same_numbers(monkeypatch):
    # 301 items: blocks of 4 leave one item at the end (merged: a one-column block sums
    # pairwise, the others row after row)
    matrix, result = _leaderboard(150, 301, missing=True, fractional=True, seed=7)
    whole_fit = item_fit(result, matrix)
    whole_info = uninformative_items(result, matrix)
    monkeypatch.setattr(diagnostics, "_BLOCK_CELLS", 150 * 4)
    assert diagnostics._item_blocks((150, 301))[-1] == (296, 301)
    blocked_fit = item_fit(result, matrix)
    blocked_info = uninformative_items(result, matrix)
    for whole, blocked in ((whole_fit, blocked_fit), (whole_info, blocked_info)):
        for column in whole.columns:
            left, right = whole[column].to_numpy(), blocked[column].to_numpy()
            if left.dtype == object:
                assert left.tolist() == right.tolist(), column
            else:
                assert left.dtype == right.dtype and left.tobytes() == right.tobytes(), column


def test_item_diagnostics_keep_few_matrix_sized_arrays(monkeypatch):
    # item_fit made nine N x J float64 temporaries at once (the report's 6.3 GB peak at
    # 4,000 x 20,000); by blocks of items, about one (the fitted probabilities)
    n_models, n_items = 300, 6000
    monkeypatch.setattr(diagnostics, "_BLOCK_CELLS", n_models * 500)  # 12 blocks
    matrix, result = _leaderboard(n_models, n_items, missing=True, fractional=False, seed=9)
    matrix_sized = n_models * n_items * 8
    for diagnostic in (item_fit, uninformative_items):
        diagnostic(result, matrix)  # standard errors cached, imports done
        tracemalloc.start()
        diagnostic(result, matrix)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 2.5 * matrix_sized, (diagnostic.__name__, peak / matrix_sized)


@pytest.mark.parametrize(("prior", "computed"), [("default", 1), (None, 2)])
def test_standard_errors_once_per_options_for_a_report(monkeypatch, prior, computed):
    # a report asks with the scale correction, without it (uninformative_items), then with
    # it again (rank_changes): the third was computed again (a cache of the last options),
    # and a MAP fit (the default), which the correction leaves alone, computed the same twice
    data = simulate_2pl(40, 120, random_state=2)
    result = (TwoPL() if prior == "default" else TwoPL(prior=None)).fit(data.matrix)
    calls = []
    original = inference.information_blocks
    monkeypatch.setattr(
        inference, "information_blocks", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    first = inference.standard_errors(result, data.matrix)
    plain = inference.standard_errors(result, data.matrix, scale_correction=False)
    again = inference.standard_errors(result, data.matrix)
    assert len(calls) == computed
    assert first.abilities.equals(again.abilities) and first.items.equals(again.items)
    same = plain.abilities.equals(first.abilities) and plain.items.equals(first.items)
    assert same == (prior == "default")
    other = ResponseMatrix(
        np.array(data.matrix.scores), data.matrix.model_ids, data.matrix.item_ids
    )
    inference.standard_errors(result, other)  # another matrix: computed, the cache its own
    inference.standard_errors(result, data.matrix)
    assert len(calls) == computed + 2


@pytest.mark.parametrize("missing", [False, True])
def test_fractional_disagreements_are_exact_sums_whatever_the_blas(missing):
    # before: a continuous matrix's disagreements were float32 matrix products, whose last
    # bits follow BLAS's thread count: report's near-duplicate CSV of AlpacaEval 2 differed
    # between OMP_NUM_THREADS=1 and 2 (0.9596277475 vs 0.9596275091). Now each candidate's
    # count is the float64 sum over its common models, in their order, on every machine.
    data = simulate_2pl(60, 80, random_state=11)
    rng = np.random.default_rng(11)
    scores = np.array(data.complete, dtype=np.float64, copy=True)
    scores[:, :10] = np.clip(scores[:, 10:20] + rng.normal(0, 0.01, (60, 10)), 0, 1)
    scores[:, 20:80] = rng.random((60, 60)) ** 3  # continuous, AlpacaEval 2-like
    if missing:
        scores[rng.random(scores.shape) < 0.2] = np.nan
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    result = TwoPL().fit(matrix)
    found = duplicate_items(result, matrix, min_agreement=0.9, block=16)
    assert len(found) >= 5
    ids = {item: j for j, item in enumerate(matrix.item_ids)}
    cells = np.asarray(matrix.scores, dtype=np.float64)
    for row in found.itertuples(index=False):
        a, b = ids[row.item_a], ids[row.item_b]
        both = ~np.isnan(cells[:, a]) & ~np.isnan(cells[:, b])
        ya, yb = cells[both, a], cells[both, b]
        exact = float(np.sum(ya * (1.0 - yb) + (1.0 - ya) * yb))
        assert row.n_common == int(both.sum())
        assert row.disagreements == pytest.approx(exact, rel=1e-12, abs=1e-12)
        assert row.agreement == pytest.approx(1.0 - exact / both.sum(), rel=1e-12)
    # the candidates are the pairs whose exact agreement reaches the threshold
    expected = {
        (matrix.item_ids[i], matrix.item_ids[j])
        for (i, j), (common, dis) in (
            ((ids[a], ids[b]), v) for (a, b), v in _every_pair(matrix, 0.9).items()
        )
        if common >= 10 and 1.0 - dis / common >= 0.9
    }
    assert set(zip(found["item_a"], found["item_b"], strict=True)) == expected
