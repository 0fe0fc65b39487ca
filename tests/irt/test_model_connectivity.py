"""``TwoPL.fit`` says when the models fall in groups that share no item: their abilities are
then compared only through the priors (e.g. one file's item ids are ints, another's text)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._model import disconnected_models


def _long(models: list[str], items: list[str], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cells = [(m, i, float(rng.random() < 0.6)) for m in models for i in items]
    return pd.DataFrame(cells, columns=["model", "item", "score"])


def test_models_sharing_no_item_with_the_rest_are_named():
    frame = pd.concat(
        [
            _long(["a", "b", "c"], [f"q{j}" for j in range(30)], seed=0),
            _long(["z"], [str(j) for j in range(30)], seed=1),  # the same items, other ids
        ]
    )
    matrix = ResponseMatrix.from_long(frame)
    assert disconnected_models(matrix) == (2, ["z"])
    said = r"2 groups that share no item \(1 model\(s\) outside the largest: 'z'\)"
    with pytest.warns(DataWarning, match=said):
        TwoPL().fit(matrix)


def test_a_linked_matrix_with_an_empty_model_says_nothing():
    frame = _long(["a", "b", "c"], [f"q{j}" for j in range(30)], seed=0)
    wide = frame.pivot(index="model", columns="item", values="score")
    wide.loc["empty"] = np.nan  # no cell: flagged no_data, not a group of its own
    matrix = ResponseMatrix.from_wide(wide)
    assert disconnected_models(matrix) == (1, [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TwoPL().fit(matrix)
    assert not any("share no item" in str(w.message) for w in caught)


def test_the_groups_of_a_sparse_matrix_are_found_too():
    blocks = [
        _long([f"m{g}a", f"m{g}b"], [f"g{g}q{j}" for j in range(10)], seed=g) for g in range(5)
    ]
    matrix = ResponseMatrix.from_long(pd.concat(blocks))  # 20% observed: stored sparse
    assert matrix.is_sparse
    n_groups, outside = disconnected_models(matrix)
    assert n_groups == 5 and len(outside) == 8


def test_the_dense_shortcut_agrees_with_the_graph_on_random_masks():
    """The breadth-first shortcut (whole rows and columns of the mask) gives the graph's
    answer: on 300 random masks, from chains of blocks that barely link to disjoint ones,
    the number of groups and the models outside the largest are those of the sparse graph."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from latentbench.irt._model import _one_group

    rng = np.random.default_rng(0)
    shortcut_used = 0
    for trial in range(300):
        n, m = int(rng.integers(2, 12)), int(rng.integers(2, 15))
        observed = rng.random((n, m)) < rng.choice([0.05, 0.15, 0.3, 0.6])
        if trial % 3 == 0:  # block-diagonal: groups that share no item, maybe one link
            cut_n, cut_m = n // 2, m // 2
            observed[:cut_n, cut_m:] = False
            observed[cut_n:, :cut_m] = False
            if trial % 2 == 0:
                observed[0, m - 1] = True
        if not observed.any():  # a matrix needs an observed cell
            continue
        rows, cols = np.nonzero(observed)
        graph = coo_matrix((np.ones(rows.size), (rows, cols + n)), shape=(n + m, n + m))
        labels = connected_components(graph, directed=False)[1]
        has_data = observed.any(axis=1)
        n_groups = np.unique(labels[:n][has_data]).size
        shortcut_used += _one_group(observed)
        if _one_group(observed):
            assert n_groups == 1
        scores = np.where(observed, 1.0, np.nan).astype(np.float32)
        scores[observed & (rng.random((n, m)) < 0.5)] = 0.0
        matrix = ResponseMatrix(scores, [f"m{i}" for i in range(n)], [f"i{j}" for j in range(m)])
        found, outside = disconnected_models(matrix)
        assert found == n_groups
        if n_groups > 1:
            model_labels = labels[:n]
            sizes = np.bincount(model_labels[has_data])
            largest = int(np.argmax(sizes))
            expected = [f"m{i}" for i in np.flatnonzero(has_data & (model_labels != largest))]
            assert outside == expected
    assert 50 < shortcut_used < 300  # both paths taken


def test_the_split_is_kept_in_fit_json_and_said_by_the_report(tmp_path):
    # the warning was printed once by `fit` and lost: fit.json did not hold it, and the
    # report named a leader and one ability order across the groups without a word
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.irt import IRTResult

    _register()
    items = [f"q{j}" for j in range(20)]
    frame = pd.concat(
        [
            _long(["a", "b", "c", "d"], items[:10], seed=0),
            _long(["w", "x", "y", "z"], items[10:], seed=1),
        ]
    )
    path = tmp_path / "split.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(ResponseMatrix.from_long(frame))
    assert result.disconnected == {"n_groups": 2, "outside": ["w", "x", "y", "z"]}
    runner = CliRunner()
    fit = runner.invoke(app, ["fit", str(path), "--out", str(tmp_path / "fit")])
    assert fit.exit_code == 0, fit.output
    info = __import__("json").loads((tmp_path / "fit" / "fit.json").read_text())
    assert info["disconnected"]["n_groups"] == 2
    assert IRTResult.load(tmp_path / "fit").disconnected == info["disconnected"]
    report = runner.invoke(app, ["report", str(tmp_path / "fit"), "--out",
                                 str(tmp_path / "r.html")])  # fmt: skip
    assert report.exit_code == 0, report.output
    html = " ".join((tmp_path / "r.html").read_text().split())
    assert "models in 2 groups that share no item" in html
    assert "Not one scale: the observed cells split the models into 2 groups" in html
