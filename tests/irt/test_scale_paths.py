"""What a fit at leaderboard scale (thousands of models x tens of thousands of items) pays
for once, not twice, and without listing a dense matrix's cells: the ability intervals'
floor/ceiling check and the cached standard errors behind `latentbench fit`'s tables."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import latentbench.irt.inference as inference
from latentbench.exceptions import LatentbenchWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def fitted():
    data = simulate_2pl(60, 400, missing=0.2, random_state=5)
    scores = np.array(data.matrix.scores)
    scores[3] = np.where(np.isnan(scores[3]), np.nan, 1.0)  # at the ceiling
    scores[7] = np.where(np.isnan(scores[7]), np.nan, 0.0)  # at the floor
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    return matrix, TwoPL().fit(matrix)


def test_floor_ceiling_cells_dense_and_sparse_agree(fitted):
    matrix, result = fitted
    observed = ~np.isnan(np.asarray(matrix.scores))
    rows, top, cells_of = inference._floor_ceiling_cells(result, matrix, np.ones(60, bool))
    assert np.flatnonzero(rows).tolist() == [3, 7]
    assert top[3] == 1.0 and top[7] == 0.0
    for i in (0, 3, 7, 59):
        np.testing.assert_array_equal(cells_of(i), np.flatnonzero(observed[i]))
    r, c = np.nonzero(observed)
    sparse = ResponseMatrix.from_cells(
        r, c, np.asarray(matrix.scores)[r, c], matrix.model_ids, matrix.item_ids
    )
    assert sparse.is_sparse
    rows_s, top_s, cells_s = inference._floor_ceiling_cells(result, sparse, np.ones(60, bool))
    np.testing.assert_array_equal(rows_s, rows)
    np.testing.assert_array_equal(top_s, top)
    for i in (0, 3, 7, 59):
        np.testing.assert_array_equal(cells_s(i), cells_of(i))


def test_floor_ceiling_cells_does_not_list_every_dense_cell(fitted):
    # before: np.nonzero of the whole grid (two int64 indices) and a float64 copy of every
    # observed value, 24 bytes a cell: 2 GB at 4,000 x 20,000
    matrix, result = fitted
    n_cells = matrix.scores.size
    tracemalloc.start()
    inference._floor_ceiling_cells(result, matrix, np.ones(60, bool))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2 * n_cells  # bytes: the per-model reductions, not a list of cells


def test_constant_models_keep_their_one_sided_intervals(fitted):
    matrix, result = fitted
    with pytest.warns(LatentbenchWarning, match="at the floor or ceiling"):
        table = inference.standard_errors(result, matrix).abilities.set_index("model")
    top, bottom = table.loc[matrix.model_ids[3]], table.loc[matrix.model_ids[7]]
    assert top["lower"] < top["theta"] < top["upper"]
    assert bottom["lower"] < bottom["theta"] < bottom["upper"]
    assert top["lower"] > table["theta"].median() > bottom["upper"]


def test_standard_errors_of_the_kept_matrix_are_computed_once(monkeypatch):
    data = simulate_2pl(40, 120, random_state=2)
    result = TwoPL().fit(data.matrix)
    calls = []
    original = inference.information_blocks

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(inference, "information_blocks", counting)
    first = result.standard_errors()
    again = inference.standard_errors(result, data.matrix)
    assert len(calls) == 1
    assert first.abilities.equals(again.abilities) and first.items.equals(again.items)
    first.abilities.loc[0, "lower"] = -99.0  # a copy each time: the cache is not changed
    assert result.standard_errors().abilities.loc[0, "lower"] != -99.0
    inference.standard_errors(result, level=0.9)  # other options: computed
    assert len(calls) == 2
    other = ResponseMatrix(
        np.array(data.matrix.scores), data.matrix.model_ids, data.matrix.item_ids
    )
    inference.standard_errors(result, other)  # another matrix object: computed
    assert len(calls) == 3
    inference.standard_errors(result, other)  # (a loaded fit's matrix, as a report reads it)
    assert len(calls) == 3
    inference.standard_errors(result, np.array(data.matrix.scores))  # an array: never cached
    inference.standard_errors(result, np.array(data.matrix.scores))
    assert len(calls) == 5


def test_fit_save_then_table_computes_once(monkeypatch, tmp_path):
    # the CLI's order: save the fit directory (abilities.csv), then print the same table
    data = simulate_2pl(40, 120, random_state=4)
    result = TwoPL().fit(data.matrix)
    calls = []
    original = inference.information_blocks
    monkeypatch.setattr(
        inference, "information_blocks", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    result.save(tmp_path / "fit", data.matrix)
    result.standard_errors(data.matrix)
    assert len(calls) == 1


def _planted(missing: float) -> tuple[ResponseMatrix, object]:
    data = simulate_2pl(300, 80, missing=missing, random_state=8)
    scores = np.array(data.matrix.scores)
    scores[:, 5] = scores[:, 9]  # a duplicate pair
    scores[:12, 6] = 1.0 - np.nan_to_num(scores[:12, 17])  # near-agreement, by chance or not
    scores[12:, 6] = np.where(np.isnan(scores[12:, 17]), scores[12:, 6], scores[12:, 17])
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    return matrix, TwoPL().fit(matrix)


def _brute_force_disagreements(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seen = ~np.isnan(scores)
    y = np.nan_to_num(scores)
    both = seen[:, :, None] & seen[:, None, :]
    dis = both * (y[:, :, None] * (1 - y[:, None, :]) + (1 - y[:, :, None]) * y[:, None, :])
    return both.sum(axis=0), dis.sum(axis=0)


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_duplicate_items_counts_match_the_pairwise_definition(missing):
    from latentbench.irt.diagnostics import duplicate_items

    matrix, result = _planted(missing)
    found = duplicate_items(result, matrix, min_agreement=0.9, block=16)
    assert len(found) > 0
    pair = found[(found["item_a"] == matrix.item_ids[5]) & (found["item_b"] == matrix.item_ids[9])]
    assert bool(pair["identical"].iloc[0]) and bool(pair["duplicate"].iloc[0])
    common, dis = _brute_force_disagreements(np.asarray(matrix.scores, dtype=np.float64))
    ids = {item: j for j, item in enumerate(matrix.item_ids)}
    a = found["item_a"].map(ids).to_numpy()
    b = found["item_b"].map(ids).to_numpy()
    np.testing.assert_array_equal(found["n_common"].to_numpy(), common[a, b])
    np.testing.assert_allclose(found["disagreements"].to_numpy(), dis[a, b], atol=1e-9)
    # every pair at the thresholds is listed
    upper = np.triu(np.ones_like(common, dtype=bool), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = 1.0 - dis / common
    const = np.zeros(common.shape[0], bool)
    const[matrix.constant_items()] = True
    expected = upper & (common >= 10) & (agree >= 0.9) & ~const[:, None] & ~const[None, :]
    assert len(found) == int(expected.sum())


def test_duplicate_items_of_a_complete_matrix_keeps_no_full_copies():
    # before: observed, p, q, yes and no as full arrays besides the fitted probabilities,
    # 40 bytes a cell (3.2 GB at 4,000 x 20,000)
    from latentbench.irt.diagnostics import duplicate_items

    matrix, result = _planted(0.0)
    result.predict_proba()  # warm
    tracemalloc.start()
    duplicate_items(result, matrix, block=16)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 25 * matrix.scores.size
