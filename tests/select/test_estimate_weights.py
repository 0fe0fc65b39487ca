"""``estimate(..., weights=...)``: a weighted (e.g. macro-over-tasks) full-benchmark score."""

from __future__ import annotations

import dataclasses
import html
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import EstimateResult, estimate, estimate_many
from latentbench.select import _estimate_calibration as calibration_module
from latentbench.select._estimate import TABLE_COLUMNS
from latentbench.select._estimate_calibration import Calibration, from_matrix
from latentbench.select._estimate_design import SequentialEstimate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_estimate_audit import scramble, simulate  # a rank-r world; wrong item parameters

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # as tests/conftest.py finds it


def matrix(Y: np.ndarray) -> ResponseMatrix:
    models = [f"m{i}" for i in range(Y.shape[0])]
    items = [f"q{j:04d}" for j in range(Y.shape[1])]
    return ResponseMatrix.from_wide(pd.DataFrame(Y, index=models, columns=items))


def dense(cal: Calibration) -> np.ndarray:
    """The calibration's kept responses as float64 with NaN where not observed."""
    Y = np.asarray(cal.responses, dtype=np.float64)
    return np.where(Y < 0, np.nan, Y) if cal.responses.dtype == np.int8 else Y


def groups_by_difficulty(cal: Calibration, sizes: list[int]) -> pd.Series:
    """Unequal groups of items by their calibration accuracy (the hardest in the first, the
    smallest, group): a macro score far from the plain mean."""
    easy = np.argsort(np.nanmean(dense(cal), axis=0), kind="stable")
    label = np.repeat([f"g{k}" for k in range(len(sizes))], sizes)
    out = np.empty(cal.n_items, dtype=object)
    out[easy] = label
    return pd.Series(out, index=list(cal.item_ids))


def macro(y: np.ndarray, groups: pd.Series) -> float:
    return float(pd.Series(y, index=groups.to_numpy()).groupby(level=0).mean().mean())


@pytest.fixture(scope="module")
def small():
    Y = simulate(36, 300, 1, seed=3)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    return cal, Y[30:]


def same_result(a: EstimateResult, b: EstimateResult) -> None:
    """Digit for digit: the items, answers, probabilities, score, interval, theta and rank."""
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d["options"].pop("weights", None)
        d.pop("summary")
        d.pop("warnings")
    assert da == db
    assert np.array_equal(a.trajectory, b.trajectory)


def test_equal_weights_are_the_unweighted_estimate_on_synthetic_data(small):
    """All-equal weights (any scale, or groups of equal size) draw the same items and give the
    same score, interval, theta and rank as no weights, bit for bit."""
    cal, Y = small
    items = list(cal.item_ids)
    for y, name in ((Y[0], "a"), (Y[3], "b")):
        plain = estimate(cal, y, model=name, budget=60, seed=4)
        for weights in (
            pd.DataFrame({"item": items, "weight": 0.37}),
            {i: 3 for i in items},
            pd.Series([f"g{j % 3}" for j in range(300)], index=items),  # 3 groups of 100
        ):
            same_result(plain, estimate(cal, y, model=name, budget=60, seed=4, weights=weights))


def test_equal_weights_are_the_unweighted_estimate_on_a_shared_matrix(tmp_path):
    """The same on BFCL (leave one model out), through the file the command line reads."""
    if not (DATA / "bfcl_v2.parquet").exists():
        pytest.skip("shared data not present")
    long = pd.read_parquet(DATA / "bfcl_v2.parquet")
    held = sorted(long["model"].unique())[5]
    cal = from_matrix(ResponseMatrix.from_long(long[long["model"] != held]), rank=1)
    y = long[long["model"] == held].set_index("item")["score"]
    path = tmp_path / "w.csv"
    pd.DataFrame({"item": list(cal.item_ids), "weight": 1.0}).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = estimate(cal, y, model=held, budget=100)
        weighted = estimate(cal, y, model=held, budget=100, weights=path)
    same_result(plain, weighted)
    assert weighted.summary().startswith("score ")  # all equal: the plain mean


def test_weighted_round_is_unbiased_and_in_its_range(small):
    """The exact expectation of a weighted round over its design is the weighted mean, every
    possible round lies in the range given to the betting sequence, and ``w_j / pi_j`` is at
    most ``sum_U w / floor`` (the floor in proportion to the weights)."""
    cal, Y = small
    bad = scramble(cal, 1 / 3, seed=0)  # a wrong predictor
    y = Y[2]
    rng = np.random.default_rng(1)
    w = rng.lognormal(sigma=1.5, size=cal.n_items)
    seq = SequentialEstimate(bad, np.arange(cal.n_items), delta=0.05, weights=w, floor=0.3)
    W = w * cal.n_items / w.sum()
    for _ in range(25):
        j, pi = seq.choose(rng)
        seq.observe(j, float(y[j]), pi)
    pi = seq.probabilities()
    U = seq.unrevealed
    assert pi[U].sum() == pytest.approx(1.0) and (pi[~U] == 0).all()
    n = seq.n
    center = (seq.revealed_sum + (W * seq.f)[U].sum()) / n
    z = center + W * (y - seq.f) / (n * np.where(U, pi, 1.0))
    target = float((w * y).sum() / w.sum())
    assert float((pi[U] * z[U]).sum()) == pytest.approx(target, abs=1e-12)
    assert (W[U] / pi[U] <= W[U].sum() / 0.3 * (1 + 1e-12)).all()
    # the range the round is told: both answers of every unrevealed item inside it
    j, pi = seq.choose(rng)
    f = seq.f.copy()
    seq.observe(j, float(y[j]), pi)
    _, lo, hi, _, c, bounds = seq.last_round
    for answer in (0.0, 1.0):
        zz = c + W[U] * (answer - f[U]) / (n * pi[U])
        assert (zz >= lo - 1e-12).all() and (zz <= hi + 1e-12).all()
    assert bounds[0] <= target <= bounds[1]


def test_items_of_weight_zero_are_never_drawn_nor_read(small):
    cal, Y = small
    items = list(cal.item_ids)
    weight = np.where(np.arange(300) < 100, 0.0, 1.0)
    y = pd.Series(Y[1], index=items)
    y.iloc[:100] = np.nan  # unanswered and weight 0: no warning about unanswered items
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = estimate(cal, y, model="z", budget=300, weights=dict(zip(items, weight, strict=True)))
    assert r.n_items == 200 and r.n_evaluated == 200 and r.stopped == "exhausted"
    assert not set(r.items) & set(items[:100])
    assert r.score == r.lower == r.upper == pytest.approx(Y[1][100:].mean())
    assert "after 200 of 200 items" in r.summary()


def test_rank_and_theta_use_the_weighted_scores(small):
    """The rank counts the calibration models whose weighted observed score is higher; the
    summary and the record name the macro score and keep the weights' kind and hash."""
    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    Yc = dense(cal)
    theirs = np.array([macro(row, groups) for row in Yc])
    for y in Y:
        r = estimate(cal, y, model="new", budget=80, weights=groups)
        assert r.rank == 1 + int((theirs > r.score).sum())
        assert r.rank_lower == 1 + int((theirs > r.upper).sum())
        assert r.rank_upper == 1 + int((theirs > r.lower).sum())
        assert r.theta_lower <= r.theta <= r.theta_upper
    assert r.summary().startswith("macro score over 4 groups ")
    record = r.to_dict()["options"]["weights"]
    assert record["kind"] == "groups" and record["n_groups"] == 4 and len(record["hash"]) == 16
    back = EstimateResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.summary() == r.summary()
    # the same weights as item weights: the same estimate, recorded as item weights
    w = 1.0 / groups.map(groups.value_counts())
    r2 = estimate(cal, y, model="new", budget=80, weights=w)
    assert r2.items == r.items and r2.score == pytest.approx(r.score, abs=1e-12)
    assert r2.options["weights"]["kind"] == "items"
    assert r2.summary().startswith("weighted score ")


def test_estimate_many_reads_the_weights_once(small, tmp_path):
    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    path = tmp_path / "groups.parquet"
    groups.rename_axis("item").rename("group").reset_index().to_parquet(path)
    rows = pd.DataFrame(Y[:3], index=["a", "b", "c"], columns=list(cal.item_ids))
    many = estimate_many(cal, rows, budget=40, weights=path)
    for name, r in zip("abc", many, strict=True):
        alone = estimate(cal, rows.loc[name], model=name, budget=40, weights=groups)
        assert r.to_dict() == alone.to_dict() | {"options": r.options}
        assert r.options["weights"]["source"] == f"weights {path}"


@pytest.mark.parametrize(
    ("table", "said"),
    [
        (lambda ids: pd.DataFrame({"item": ids[:-3], "weight": 1.0}), "3 of the calibration's"),
        (lambda ids: pd.DataFrame({"item": [*ids, "zz"], "weight": 1.0}), "'zz'"),
        (lambda ids: pd.DataFrame({"item": [*ids, ids[0]], "weight": 1.0}), "listed 2 times"),
        (lambda ids: pd.DataFrame({"item": ids, "weight": [-1.0] + [1.0] * 299}), "-1.0"),
        (lambda ids: pd.DataFrame({"item": ids, "weight": [np.nan] + [1.0] * 299}), "nan"),
        (lambda ids: pd.DataFrame({"item": ids, "weight": [np.inf] + [1.0] * 299}), "inf"),
        (lambda ids: pd.DataFrame({"item": ids, "weight": 0.0}), "0 for every item"),
        (lambda ids: pd.DataFrame({"item": ids, "w": 1.0}), "neither 'weight' nor 'group'"),
        (lambda ids: pd.DataFrame({"item": ids, "weight": 1.0, "group": "a"}), "both"),
        (lambda ids: pd.DataFrame({"id": ids, "weight": 1.0}), "no column 'item'"),
        (lambda ids: pd.DataFrame({"item": ids, "group": [None] + ["a"] * 299}), "'group'"),
        (lambda ids: 0.5, "expected a CSV/Parquet path"),
    ],
)
def test_unusable_weights_are_refused_by_name(small, table, said):
    cal, Y = small
    with pytest.raises(InputError, match="weights") as info:
        estimate(cal, Y[0], budget=10, weights=table(list(cal.item_ids)))
    assert said in str(info.value)


def test_unusable_weights_files_name_the_file_and_field(small, tmp_path):
    cal, Y = small
    path = tmp_path / "w.csv"
    pd.DataFrame({"item": list(cal.item_ids), "weight": ["1"] * 299 + ["heavy"]}).to_csv(
        path, index=False
    )
    with pytest.raises(InputError) as info:
        estimate(cal, Y[0], budget=10, weights=path)
    message = str(info.value)
    assert str(path) in message and "'weight'" in message and "'heavy'" in message
    assert "q0299" in message and "expected a finite number >= 0" in message
    with pytest.raises(InputError, match="no such file"):
        estimate(cal, Y[0], budget=10, weights=tmp_path / "none.csv")


def test_cli_weights(small, tmp_path, monkeypatch):
    """``--weights`` prints the macro score and records the weights; with ``--items`` of a
    design drawn without them it is refused (exit 2; tests/select/test_weighted_designs.py)."""
    from latentbench.cli import _register, app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _register()
    cal, Y = small
    matrix(dense(cal)).to_long().to_csv("cal.csv", index=False)
    pd.DataFrame({"item": list(cal.item_ids), "score": Y[0]}).to_csv("new.csv", index=False)
    groups_by_difficulty(cal, [20, 50, 100, 130]).rename_axis("item").rename(
        "group"
    ).reset_index().to_csv("w.csv", index=False)
    runner = CliRunner()
    out = runner.invoke(app, ["estimate", "cal.csv", "new.csv", "--weights", "w.csv",
                              "--budget", "30", "--out", "est"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "macro score over 4 groups" in out.output
    assert "interval of the weighted full-benchmark score" in out.output
    saved = json.loads((tmp_path / "est" / "estimate.json").read_text())
    assert saved["options"]["weights"]["kind"] == "groups"
    tiny_out = runner.invoke(app, ["tiny", "cal.csv", "--k", "5", "--out", "d.csv"])
    assert tiny_out.exit_code == 0, tiny_out.output
    refused = runner.invoke(app, ["estimate", "cal.csv", "new.csv", "--weights", "w.csv",
                                  "--items", "d.csv"])  # fmt: skip
    assert refused.exit_code == 2 and "drawn for the plain mean" in refused.output


DELTA = 0.2


def floor_of(runs: int, delta: float = DELTA) -> float:
    """``1 - delta`` less 3 Monte Carlo standard errors of a coverage at ``1 - delta``."""
    return 1.0 - delta - 3.0 * math.sqrt(delta * (1.0 - delta) / runs)


def test_weighted_interval_covers_the_weighted_target_with_a_wrong_calibration():
    """30 calibration models x 400 items of a rank-3 world fitted at rank 1 and a third of its
    item parameters scrambled; the target is the macro score over 6 unequal groups (the
    hardest items in the smallest) or an item-weighted score (log-normal weights). Coverage
    at every step, at delta 0.2, is at least 1 - delta less 3 MC standard errors.
    (Measured: 0.867 of 120 macro runs, 0.833 of 60 item-weighted runs; floors 0.690 and
    0.645. The unweighted estimate held the macro target in 0.525 of the same 120 runs: the
    macro score is 0.08 to 0.13 below the plain mean here.)"""
    Y = simulate(36, 400, 3, seed=11)
    fitted = from_matrix(matrix(Y[:30]), rank=1)
    groups = groups_by_difficulty(fitted, [15, 30, 45, 70, 100, 140])
    bad = scramble(fitted, 1 / 3, seed=2)
    rng = np.random.default_rng(5)
    w = rng.lognormal(sigma=1.0, size=400)
    cases = [(groups, [macro(y, groups) for y in Y[30:]], 20),
             (pd.Series(w, index=list(fitted.item_ids)), [(w @ y) / w.sum() for y in Y[30:]],
              10)]  # fmt: skip
    for weights, truths, seeds in cases:
        hits = []
        for i, (y, truth) in enumerate(zip(Y[30:], truths, strict=True)):
            for s in range(seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = estimate(bad, y, model=f"new{i}", budget=60, delta=DELTA, seed=s,
                                 weights=weights)  # fmt: skip
                tr = r.trajectory
                hits.append(bool(((tr[:, 1] <= truth) & (truth <= tr[:, 2])).all()))
                assert r.lower <= r.score <= r.upper
        assert np.mean(hits) >= floor_of(len(hits)), (np.mean(hits), len(hits))


def test_kept_responses_are_compact_and_give_the_observed_weighted_scores(tmp_path):
    """Binary responses are kept as int8 (-1 missing), fractional ones as float32; the
    weighted scores are over each model's observed cells; the disk cache keeps them."""
    rng = np.random.default_rng(0)
    Y = (rng.random((12, 50)) < 0.6).astype(float)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    compact = calibration_module.compact_responses(Y)
    assert compact.dtype == np.int8 and ((compact == -1) == np.isnan(Y)).all()
    half = np.where(np.isnan(Y), np.nan, Y * 0.5 + 0.25)
    assert calibration_module.compact_responses(half).dtype == np.float32
    w = rng.random(50)
    for data in (compact, calibration_module.compact_responses(half)):
        values = np.where(np.isnan(Y), np.nan, np.asarray(data, float))
        values[values < 0] = np.nan
        seen = ~np.isnan(values)
        expected = (np.nan_to_num(values) * w).sum(axis=1) / (seen * w).sum(axis=1)
        got = calibration_module.observed_weighted_scores(data, w)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    path = tmp_path / "cal.parquet"
    matrix(np.where(np.isnan(Y), np.nan, Y)).to_long().to_parquet(path)
    first = calibration_module.load_calibration(path, cache=tmp_path / "c")
    calibration_module._MEMORY.clear()
    again = calibration_module.load_calibration(path, cache=tmp_path / "c")
    assert again is not first and np.array_equal(again.responses, first.responses)
    assert again.responses.dtype == np.int8


def test_a_calibration_without_responses_ranks_against_fitted_weighted_scores(small):
    cal, Y = small
    bare = dataclasses.replace(cal, responses=None)
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    with pytest.warns(DataWarning, match="holds no responses"):
        r = estimate(bare, Y[0], model="new", budget=40, weights=groups)
    fitted = calibration_module._fitted(cal.model_factors, cal.V, cal.b, cal.sigma)
    theirs = np.array([macro(row, groups) for row in fitted])
    assert r.rank == 1 + int((theirs > r.score).sum())


def test_the_report_does_not_draw_plain_scores_beside_a_weighted_one(small, tmp_path):
    """The report drew the calibration models' plain scores next to a weighted estimate (two
    quantities on one axis); it now says why they are not drawn."""
    from latentbench.report._estimate import _reference

    cal, Y = small
    path = tmp_path / "cal.parquet"
    matrix(dense(cal)).to_long().to_parquet(path)
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = estimate(path, Y[0], model="new", budget=20, cache=tmp_path / "c")
        weighted = estimate(path, Y[0], model="new", budget=20, cache=tmp_path / "c",
                            weights=groups)  # fmt: skip
    assert _reference(plain)[0] is not None
    scores, said = _reference(weighted)
    assert scores is None and "weighted score" in said


def test_a_fully_revealed_weighted_benchmark_is_its_exact_weighted_mean(small):
    cal, Y = small
    w = np.random.default_rng(3).lognormal(size=300)
    r = estimate(cal, Y[4], model="all", budget=300, weights=pd.Series(w, index=cal.item_ids))
    assert r.stopped == "exhausted" and r.lower == r.upper == r.score
    assert r.score == pytest.approx(float(w @ Y[4] / w.sum()), abs=1e-12)
    assert "(exact)" in r.summary()


def test_a_fully_revealed_weighted_score_is_never_past_its_bounds(small):
    """Every answer 1 (or 0) under unequal weights is the score 1 (or 0) exactly: the weights
    rescaled to mean 1 do not sum to n exactly, so ``sum W y / n`` gave 1.0000000000000007
    (a score past 1, ranked below a calibration model's 1.0) or 0.9999999999999992."""
    cal, _ = small
    items = list(cal.item_ids)
    rng = np.random.default_rng(1)
    for k in range(12):
        w = pd.Series(rng.uniform(0.1, 3.0, cal.n_items), index=items)
        for answer in (1.0, 0.0):
            r = estimate(cal, np.full(cal.n_items, answer), model=f"m{k}", budget=cal.n_items,
                         weights=w)  # fmt: skip
            assert r.stopped == "exhausted"
            assert r.score == r.lower == r.upper == answer
            assert r.trajectory[-1].tolist() == [answer] * 3


def test_estimates_csv_says_a_score_is_weighted(small, tmp_path):
    """``estimates.csv`` (the table users load) named a macro score ``score`` with nothing to
    tell it from a plain mean; it now carries a ``target`` column (``macro over 4 groups``; the
    hash is in ``options["weights"]``), and a plain estimate's table is the one it was."""
    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    rows = pd.DataFrame(Y[:2], index=["a", "b"], columns=list(cal.item_ids))
    weighted = estimate_many(cal, rows, budget=30, weights=groups)
    weighted.save(tmp_path / "w")
    table = pd.read_csv(tmp_path / "w" / "estimates.csv")
    assert table["target"].tolist() == ["macro over 4 groups"] * 2
    plain = estimate_many(cal, rows, budget=30)
    plain.save(tmp_path / "p")
    table = pd.read_csv(tmp_path / "p" / "estimates.csv")
    assert "target" not in table.columns and table.shape[1] == len(TABLE_COLUMNS)


def test_a_weights_file_defect_is_named_as_written(small, tmp_path):
    """A CSV's negative or blank weight was shown as ``np.float64(-2.0)`` / ``np.float64(nan)``
    (NumPy's repr), and a blank item id as an item ``''`` the calibration does not hold; now
    the value as written, with the file's line."""
    cal, _ = small
    items = list(cal.item_ids)
    cases = [
        ({3: "-2"}, "weight", "line 5", "is -2;"),
        ({3: ""}, "weight", "line 5", "is empty;"),
        ({3: "abc"}, "weight", "line 5", "is 'abc';"),
    ]
    for edits, column, line, said in cases:
        frame = pd.DataFrame({"item": items, column: ["1"] * len(items)})
        for k, v in edits.items():
            frame.loc[k, column] = v
        path = tmp_path / "w.csv"
        frame.to_csv(path, index=False)
        with pytest.raises(InputError) as caught:
            estimate(cal, np.ones(cal.n_items), model="x", weights=path)
        text = str(caught.value)
        assert "np.float64" not in text and line in text and said in text, text
    frame = pd.DataFrame({"item": items, "weight": 1.0})
    frame.loc[3, "item"] = " "
    frame.to_csv(tmp_path / "w.csv", index=False)
    with pytest.raises(InputError, match="field 'item' is empty on line 5"):
        estimate(cal, np.ones(cal.n_items), model="x", weights=tmp_path / "w.csv")


def test_items_of_weight_zero_do_not_make_a_complete_answer_look_partial(small):
    """A model that answered every item while the weights leave some out (weight 0) has the
    weighted full-benchmark score; the command's legend said 'of the weighted score on the
    items answered' and the report 'mean score over the items it answered (not the full
    benchmark)', comparing n_items with all the calibrated items. The report now also names
    the weighted score instead of 'the model's mean score'."""
    from latentbench.cli._estimate import interval_legend
    from latentbench.report import build_estimate_report

    cal, Y = small
    items = list(cal.item_ids)
    weight = dict(zip(items, np.where(np.arange(300) < 100, 0.0, 1.0 + np.arange(300) % 3),
                      strict=True))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = estimate(cal, Y[1], model="z", budget=30, weights=weight)
    assert r.n_items == 200 and not r.answered_subset
    legend = interval_legend([r])
    assert "of the weighted full-benchmark score" in legend, legend
    page = html.unescape(build_estimate_report(r))
    assert "over the items it answered" not in page
    assert "weighted score over the benchmark's items" in page
    y = Y[1].copy()
    y[150:170] = np.nan  # 20 items of positive weight not answered: a part, said so
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = estimate(cal, y, model="p", budget=30, weights=weight)
    assert part.answered_subset and "on the items answered" in interval_legend([part])
    assert "over the items it answered" in build_estimate_report(part)


def test_a_model_that_answered_groups_unevenly_is_told_how_they_weigh(small):
    """A model that answered 2 of the 20 items of a group: the renormalised macro weights
    weigh that group a tenth of the others (no longer a macro score over the groups of its
    answers), and a group it answered none of is left out: the warning says both."""
    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    g = groups.to_numpy()
    y = pd.Series(Y[1], index=list(cal.item_ids))
    y.iloc[np.flatnonzero(g == "g0")[:18]] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = estimate(cal, y, model="z", budget=20, weights=groups)
        said = " ".join(r.warnings)
        assert "the groups no longer weigh the same" in said
        assert "from 2 of 20 items ('g0') to 50 of 50 ('g1')" in said
        y.iloc[np.flatnonzero(g == "g0")] = np.nan
        said = " ".join(estimate(cal, y, model="z", budget=20, weights=groups).warnings)
    assert "1 of the 4 groups has no item answered ('g0'): it is left out" in said
    assert "no longer weigh the same" not in said  # the other three: every item answered


def test_the_report_gives_a_weighted_draw_its_weight(small):
    """The items table's caption said each draw weighs 1 / (items x probability), the plain
    mean's weight; in a weighted score it weighs w / probability."""
    import html

    from latentbench.report import build_estimate_report

    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = estimate(cal, Y[0], model="new", budget=20, weights=groups)
        plain = estimate(cal, Y[0], model="new", budget=20)
    page = html.unescape(" ".join(build_estimate_report(weighted).split()))
    assert "1 / (items x probability)" not in page
    assert "its weight in the estimate is w / probability" in page
    page = html.unescape(" ".join(build_estimate_report(plain).split()))
    assert "its weight in the estimate is 1 / (items x probability))." in page


def test_the_report_items_table_shows_each_items_target_weight(small, tmp_path):
    """The items table of a weighted estimate had no weight column (the caption named w,
    the page did not show it): each item's target_weight is now kept (estimate.json's
    ``target_weights``, read back) and shown; a plain estimate's record and table are as
    before."""
    from latentbench.report import build_estimate_report
    from latentbench.select import EstimateSet

    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = estimate(cal, Y[0], model="new", budget=20, weights=groups)
        plain = estimate(cal, Y[0], model="new", budget=20)
    sizes = groups.value_counts()
    expected = [1 / (4 * sizes[groups[i]]) for i in weighted.items]
    assert np.allclose(weighted.target_weights, expected, rtol=1e-12)
    weighted.save(tmp_path / "w")
    assert EstimateSet.read(tmp_path / "w")[0].target_weights == weighted.target_weights
    page = html.unescape(build_estimate_report(weighted))
    assert ">target_weight<" in page and "w the item's target_weight" in page
    assert plain.target_weights == () and "target_weights" not in plain.to_dict()
    assert ">target_weight<" not in html.unescape(build_estimate_report(plain))


@pytest.mark.parametrize(
    ("field", "edit", "said"),
    [
        ("target_weights", lambda v: v[:-1], "field 'target_weights' holds 19 values; "
         "expected 20, one per item of field 'items' or none"),
        ("target_weights", lambda v: ["0.05", *v[1:]], "field 'target_weights' holds '0.05' "
         "(1 such value(s)); expected a finite number for each item"),
        ("answers", lambda v: v[:-1], "field 'answers' holds 19 values; expected 20, one per "
         "item of field 'items'"),
        ("answers", lambda v: ["x", *v[1:]], "field 'answers' holds 'x' (1 such value(s)); "
         "expected a score in [0, 1] for each item"),
        ("answers", lambda v: [None, *v[1:]], "field 'answers' holds None (1 such value(s)); "
         "expected a score in [0, 1] for each item"),
        ("probabilities", lambda v: ["x", *v[1:]], "field 'probabilities' holds 'x' (1 such "
         "value(s)); expected a finite number > 0 for each item"),
        ("items", lambda v: "a" * len(v), "field 'items' holds 'aaaaaaaaaaaaaaaaaaaa' "
         "(a str); expected a list"),
        ("answers", lambda v: {str(i): a for i, a in enumerate(v)}, " (a dict); expected a "
         "list"),
    ],
)  # fmt: skip
def test_an_edited_per_item_field_of_estimate_json_is_refused(small, tmp_path, field, edit, said):
    """An estimate.json edited so that target_weights (or answers) no longer give one value
    per item read back, and the report's items table then failed with pandas' 'All arrays
    must be of the same length' traceback (a text weight was shown as text): now refused when
    read, naming the file and the field. A record without target_weights (a plain one, or
    one written before them) reads as before."""
    from latentbench.select import EstimateSet

    cal, Y = small
    groups = groups_by_difficulty(cal, [20, 50, 100, 130])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = estimate(cal, Y[0], model="new", budget=20, weights=groups)
    record = weighted.to_dict()
    assert EstimateResult.from_dict({**record, "target_weights": []}).target_weights == ()
    record[field] = edit(record[field])
    (tmp_path / "estimate.json").write_text(json.dumps(record))
    with pytest.raises(InputError) as info:
        EstimateSet.read(tmp_path)
    assert str(info.value).endswith(said), str(info.value)
    assert str(tmp_path / "estimate.json") in str(info.value)
