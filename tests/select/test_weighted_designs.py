"""Weighted fixed designs: ``tiny(..., weights=)`` and ``estimate(..., items=, weights=)``,
and the ``target`` column of ``estimates.csv``."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.select import EstimateSet, compare, estimate, estimate_many, tiny
from latentbench.select._estimate import TABLE_COLUMNS
from latentbench.select._estimate_calibration import Calibration, from_matrix
from latentbench.select._estimate_design import design_probabilities

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_estimate_audit import scramble, simulate  # a rank-r world; wrong item parameters

DESIGN_COLUMNS = ["item", "order", "probability", "weight", "floor", "seed",
                  "calibration_hash", "k"]  # fmt: skip


def matrix(Y: np.ndarray) -> ResponseMatrix:
    models = [f"m{i}" for i in range(Y.shape[0])]
    items = [f"q{j:04d}" for j in range(Y.shape[1])]
    return ResponseMatrix.from_wide(pd.DataFrame(Y, index=models, columns=items))


def groups_by_difficulty(cal: Calibration, Y: np.ndarray, sizes: list[int]) -> pd.Series:
    """Unequal groups by the calibration models' accuracy (the hardest items in the first,
    smallest group): a macro score far from the plain mean."""
    easy = np.argsort(np.nanmean(Y, axis=0), kind="stable")
    out = np.empty(cal.n_items, dtype=object)
    out[easy] = np.repeat([f"g{k}" for k in range(len(sizes))], sizes)
    return pd.Series(out, index=list(cal.item_ids))


def macro(y: np.ndarray, groups: pd.Series) -> float:
    return float(pd.Series(y, index=groups.to_numpy()).groupby(level=0).mean().mean())


@pytest.fixture(scope="module")
def small():
    Y = simulate(36, 300, 1, seed=3)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    groups = groups_by_difficulty(cal, Y[:30], [20, 50, 100, 130])
    return cal, Y, groups


def answers(cal: Calibration, y: np.ndarray) -> pd.Series:
    return pd.Series(y, index=list(cal.item_ids))


def test_tiny_draws_a_weighted_design(small):
    """The draw is in proportion to w x the typical model's residual sd (the floor in
    proportion to w), items of weight 0 are never drawn, and the design records its target
    and the weights' hash; ``weight`` is ``w / probability``."""
    cal, _, _ = small
    rng = np.random.default_rng(0)
    raw = rng.lognormal(size=cal.n_items)
    raw[:100] = 0.0  # a third of the items left out
    weights = pd.Series(raw, index=list(cal.item_ids))
    design = tiny(cal, k=60, weights=weights)
    assert list(design.columns) == [*DESIGN_COLUMNS, "target", "weights_hash"]
    assert set(design["target"]) == {"weighted"} and design["weights_hash"].nunique() == 1
    pos = cal.positions(design["item"].tolist())
    assert (raw[pos] > 0).all()  # weight 0: never drawn
    w = raw / raw.sum()
    # the first draw's probability, from the design's formula over the items of positive weight
    f0 = cal.population_prediction()
    positive = raw > 0
    pi = design_probabilities(f0[positive], np.ones(int(positive.sum()), dtype=bool), 0.5,
                              "residual", np.zeros(int(positive.sum())), w[positive])  # fmt: skip
    first = int(np.flatnonzero(np.flatnonzero(positive) == pos[0])[0])
    assert design["probability"].iloc[0] == pi[first]
    np.testing.assert_allclose(design["weight"], w[pos] / design["probability"], rtol=1e-15)
    with pytest.raises(InputError, match=r"k=201; expected an integer in \[1, 200\]"):
        tiny(cal, k=201, weights=weights)


def test_tiny_with_equal_weights_draws_the_plain_design(small):
    """Equal weights (groups of equal size) draw the plain design, bit for bit, written as
    the plain design (a warning says so): the weighted score is the plain mean, so the
    design is scored with or without the weights and compare takes it. Without weights the
    table is the one tiny wrote before."""
    cal, Y, _ = small
    plain = tiny(cal, k=40, seed=4)
    assert list(plain.columns) == DESIGN_COLUMNS
    groups = pd.Series(np.repeat(["a", "b"], 150), index=list(cal.item_ids))
    with pytest.warns(UserWarning, match="same weight.*plain mean.*without 'target'"):
        equal = tiny(cal, k=40, seed=4, weights=groups)
    pd.testing.assert_frame_equal(equal, plain)
    # scored without the weights, with them and with other equal weights: the plain estimate
    y = answers(cal, Y[30])
    a = estimate(cal, y, model="new", items=equal)
    b = estimate(cal, y, model="new", items=equal, weights=groups)
    c = estimate(cal, y, model="new", items=equal, weights={i: 3.0 for i in cal.item_ids})
    assert (a.score, a.lower, a.upper) == (b.score, b.lower, b.upper) == (c.score, c.lower,
                                                                          c.upper)  # fmt: skip
    assert b.summary().startswith("score ")  # equal weights: the plain mean
    r = compare(cal, y, answers(cal, Y[31]), model_a="a", model_b="b", items=equal)
    assert r.n_evaluated == 40


def test_estimate_scores_the_weighted_target_on_a_weighted_design(small):
    """A design over every item of positive weight is exact: the estimate is the weighted
    mean; the rank compares it with the calibration models' macro scores."""
    cal, Y, groups = small
    left_out = groups.copy()
    weights = pd.Series(np.where(groups == "g3", 0.0, np.where(groups == "g0", 3.0, 1.0)),
                        index=groups.index)  # fmt: skip
    design = tiny(cal, k=int((weights > 0).sum()), weights=weights)
    y = Y[31]
    r = estimate(cal, answers(cal, y), model="new", items=design, weights=weights)
    truth = float(weights.to_numpy() @ y / weights.sum())
    assert r.stopped == "items" and r.lower == r.upper
    assert r.score == pytest.approx(truth, abs=1e-12)
    assert r.options["weights"]["kind"] == "items" and r.options["design"] == "fixed"
    assert r.summary().startswith("weighted score")
    w = weights.to_numpy() / weights.sum()
    others = np.nan_to_num(Y[:30]) @ w
    assert r.rank == 1 + int((others > r.score).sum())
    # a macro design at k = 40: its interval is sized for its 40 items and says macro
    macro_design = tiny(cal, k=40, seed=1, weights=left_out)
    m = estimate(cal, answers(cal, y), model="new", items=macro_design, weights=left_out)
    assert m.n_evaluated == 40 and m.options["k"] == 40 and m.lower < m.upper
    assert m.summary().startswith("macro score over 4 groups")


def test_a_design_is_scored_with_the_weights_it_was_drawn_for_only(small):
    """A weighted design without its weights, or with others; a plain design with weights
    that are not all equal: refused, naming what differs. A plain design with equal weights
    is the plain estimate bit for bit."""
    cal, Y, groups = small
    y = answers(cal, Y[30])
    weighted = tiny(cal, k=30, weights=groups)
    plain = tiny(cal, k=30)
    with pytest.raises(InputError, match=r"drawn by tiny --weights .*macro over 4 groups.*pass "
                       "the same weights"):  # fmt: skip
        estimate(cal, y, model="new", items=weighted)
    other = pd.Series(np.arange(1.0, 301.0), index=groups.index)
    with pytest.raises(InputError, match=r"drawn for weights [0-9a-f]{16}, not for weights"):
        estimate(cal, y, model="new", items=weighted, weights=other)
    with pytest.raises(InputError, match=r"drawn for the plain mean .*tiny\(\.\.\., weights=\)"):
        estimate(cal, y, model="new", items=plain, weights=groups)
    with pytest.raises(InputError, match="drawn for the plain mean"):
        estimate_many(cal, pd.DataFrame({"new": Y[30]}, index=groups.index).T.rename_axis(
            "model").reset_index(), items=plain, weights=groups)  # fmt: skip
    a = estimate(cal, y, model="new", items=plain)
    b = estimate(cal, y, model="new", items=plain, weights={i: 2.0 for i in cal.item_ids})
    assert (a.items, a.score, a.lower, a.upper, a.rank) == (b.items, b.score, b.lower,
                                                            b.upper, b.rank)  # fmt: skip
    assert np.array_equal(a.trajectory, b.trajectory)


def test_a_weighted_design_with_its_hash_removed_is_not_read_as_plain(small, tmp_path):
    """An edited weighted design (tiny --weights' items CSV) without its 'weights_hash'
    column was read as a plain design: refused for a reason that named neither (its items
    'edited' by the plain replay, or 'drawn for the plain mean' with the weights). Now its
    'target' without 'weights_hash' is refused naming the file and both columns; with both
    removed, the refusal of the plain replay adds that the 'weight' column is a weighted
    design's (w / probability), so the columns were removed. A plain design refused for an
    edit says nothing of weights."""
    cal, Y, groups = small
    y = answers(cal, Y[30])
    weighted = tiny(cal, k=30, weights=groups)
    path = tmp_path / "d.csv"
    weighted.drop(columns=["weights_hash"]).to_csv(path, index=False)
    for weights in (None, groups):
        with pytest.raises(InputError) as info:
            estimate(cal, y, model="new", items=path, weights=weights)
        said = str(info.value)
        assert said.startswith(f"items {path}: column 'target' (macro over 4 groups) says the "
                               "design was drawn by tiny --weights, but it has no "
                               "'weights_hash' column"), said  # fmt: skip
        assert "expected both" in said, said
    with pytest.raises(InputError, match=r"column 'target' .*no 'weights_hash' column"):
        compare(cal, y, answers(cal, Y[31]), model_a="a", model_b="b", items=path,
                weights=groups)  # fmt: skip
    hint = "its 'weight' column is not 1 / (300 x probability) on 30 of its 30 rows"
    bare = weighted.drop(columns=["weights_hash", "target"])
    for design in (bare, bare.drop(columns=["seed"])):  # the replay's, the probabilities'
        for weights in (None, groups):
            with pytest.raises(InputError) as info:
                estimate(cal, y, model="new", items=design, weights=weights)
            said = str(info.value)
            assert hint in said and "'target' and 'weights_hash' columns were removed" in said
    plain = tiny(cal, k=30)
    swapped = plain.copy()
    swapped.loc[[0, 1], "item"] = swapped.loc[[1, 0], "item"].to_numpy()
    with pytest.raises(InputError, match="edited") as info:
        estimate(cal, y, model="new", items=swapped)
    assert "'weight' column" not in str(info.value)
    assert estimate(cal, y, model="new", items=plain).n_evaluated == 30


def test_compare_refuses_a_weighted_design_without_its_weights(small):
    """A weighted design never draws an item of weight 0, so it does not cover the plain
    difference: compare refuses it without the weights it was drawn for (with them it compares
    the weighted scores: tests/select/test_compare_weights.py)."""
    cal, Y, groups = small
    weighted = tiny(cal, k=20, weights=groups)
    with pytest.raises(InputError, match=r"drawn by tiny --weights .*pass the same weights"):
        compare(cal, answers(cal, Y[30]), answers(cal, Y[31]), model_a="a", model_b="b",
                items=weighted)  # fmt: skip


def test_estimates_table_says_a_weighted_target(small):
    """estimates.csv appends ``target`` when some score is weighted; a table of plain means
    keeps its columns."""
    cal, Y, groups = small
    wide = pd.DataFrame(Y[30:33], index=["a", "b", "c"], columns=list(cal.item_ids))
    frame = wide.rename_axis("model").reset_index()
    plain = estimate_many(cal, frame, budget=10)
    assert list(plain.to_frame().columns) == list(TABLE_COLUMNS)
    weighted = estimate_many(cal, frame, budget=10, weights=groups)
    table = weighted.to_frame()
    assert list(table.columns) == [*TABLE_COLUMNS, "target"]
    assert set(table["target"]) == {"macro over 4 groups"}
    items = pd.Series(np.arange(1.0, 301.0), index=groups.index)
    one = estimate_many(cal, frame, budget=10, weights=items, models=["a"]).to_frame()
    assert one["target"].tolist() == ["weighted"]
    mixed = EstimateSet((*plain.results[:1], *weighted.results[1:])).to_frame()
    assert mixed["target"].tolist() == ["mean", "macro over 4 groups", "macro over 4 groups"]


def test_cli_tiny_and_estimate_items_with_weights(small, tmp_path, monkeypatch):
    """tiny --weights writes the design's target and weights hash; estimate --items with the
    same --weights scores the macro score (estimates.csv says so); without them it exits 2."""
    from latentbench.cli import _register, app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _register()
    cal, Y, groups = small
    matrix(Y[:30]).to_long().to_csv("cal.csv", index=False)
    pd.DataFrame({"item": list(cal.item_ids), "score": Y[31]}).to_csv("new.csv", index=False)
    groups.rename_axis("item").rename("group").reset_index().to_csv("w.csv", index=False)
    runner = CliRunner()
    made = runner.invoke(app, ["tiny", "cal.csv", "--k", "25", "--weights", "w.csv",
                               "--out", "d.csv"])  # fmt: skip
    assert made.exit_code == 0, made.output
    design = pd.read_csv("d.csv", dtype={"weights_hash": str})
    assert list(design.columns) == [*DESIGN_COLUMNS, "target", "weights_hash"]
    out = runner.invoke(app, ["estimate", "cal.csv", "new.csv", "--items", "d.csv",
                              "--weights", "w.csv", "--out", "est"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "macro score over 4 groups" in out.output
    table = pd.read_csv(tmp_path / "est" / "estimates.csv")
    assert table["target"].tolist() == ["macro over 4 groups"]
    refused = runner.invoke(app, ["estimate", "cal.csv", "new.csv", "--items", "d.csv"])
    assert refused.exit_code == 2
    assert "drawn by tiny --weights" in " ".join(refused.output.split())


DELTA = 0.2


def test_weighted_design_interval_covers_the_macro_score_with_a_wrong_calibration():
    """30 calibration models x 400 items of a rank-3 world fitted at rank 1 with a third of
    its item parameters scrambled; the target is the macro score over 5 unequal groups (the
    hardest items in the smallest). Each of 12 weighted designs of k = 40 (seeds 0-11) scores
    the 6 new models: the interval holds the macro score at every step in at least 1 - delta
    less 3 MC standard errors of the runs (delta 0.2). (Measured: 0.847 of 72 runs, floor
    0.659, mean width 0.25; the plain design's interval held the macro score in 0.542 of the
    same 72: the macro score is 0.09 to 0.15 below the plain mean here.)"""
    Y = simulate(36, 400, 3, seed=11)
    fitted = from_matrix(matrix(Y[:30]), rank=1)
    groups = groups_by_difficulty(fitted, Y[:30], [15, 35, 60, 110, 180])
    bad = scramble(fitted, 1 / 3, seed=2)
    truths = [macro(y, groups) for y in Y[30:]]
    hits = []
    for seed in range(12):
        design = tiny(bad, k=40, seed=seed, weights=groups)
        for i, (y, truth) in enumerate(zip(Y[30:], truths, strict=True)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = estimate(bad, answers(bad, y), model=f"new{i}", items=design,
                             delta=DELTA, weights=groups)  # fmt: skip
            tr = r.trajectory
            hits.append(bool(((tr[:, 1] <= truth) & (truth <= tr[:, 2])).all()))
    floor = 1.0 - DELTA - 3.0 * math.sqrt(DELTA * (1.0 - DELTA) / len(hits))
    assert np.mean(hits) >= floor, (np.mean(hits), len(hits))
