"""Store.matrix at leaderboard scale: the cells are read as integer codes, not as one Python
string per cell for the model and the item (a 4,000 x 20,000 benchmark with 24M cells took
7.7 GB in `fit --store`)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning
from latentbench.io import ResponseMatrix
from latentbench.io.formats import read_results
from latentbench.io.store import Store


@pytest.fixture
def stored(tmp_path):
    rng = np.random.default_rng(3)
    models = [f"organisation-{i % 7}/a-long-model-name-{i:04d}" for i in range(120)]
    items = [f"task{j // 50:02d}/question-{j % 50:04d}" for j in range(400)]
    seen = rng.random((120, 400)) < 0.3  # mostly missing: the sparse path
    seen[:, :8] = True
    rows, cols = np.nonzero(seen)
    frame = pd.DataFrame(
        {
            "model": [models[i] for i in rows],
            "item": [items[j] for j in cols],
            "score": (rng.random(rows.size) < 0.5).astype(float),
        }
    ).sample(frac=1.0, random_state=0)  # any order
    path = tmp_path / "long.parquet"
    frame.to_parquet(path, index=False)
    with pytest.warns(DataWarning, match="disagree on the item count"):  # on purpose
        table, report = read_results("table", [path], benchmark="b")
    store = Store(tmp_path / "s.duckdb")
    store.ingest(table, report)
    yield store, frame
    store.close()


def test_store_matrix_equals_the_long_file(stored):
    store, frame = stored
    matrix = store.matrix("b")
    expected = ResponseMatrix.from_long(frame)
    assert matrix.is_sparse == expected.is_sparse
    assert matrix.model_ids == sorted(frame["model"].unique())
    assert matrix.model_ids == expected.model_ids and matrix.item_ids == expected.item_ids
    np.testing.assert_array_equal(np.asarray(matrix.scores), np.asarray(expected.scores))


def test_store_matrix_reads_no_string_per_cell(stored):
    store, frame = stored
    store.matrix("b")  # warm
    tracemalloc.start()
    store.matrix("b")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # before: ~200 bytes a cell (two object arrays and their strings)
    assert peak < 100 * len(frame)
