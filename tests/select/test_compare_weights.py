"""``compare(..., weights=)`` / ``latentbench compare --weights``: which of two models has the
higher weighted or macro score (docs/estimate.md, "Weighted and macro differences")."""

from __future__ import annotations

import html
import json
import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.select import CompareResult, compare, tiny
from latentbench.select._estimate_calibration import Calibration, from_matrix

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_estimate_audit import simulate  # a rank-r world

DELTA = 0.2


def matrix(Y: np.ndarray) -> ResponseMatrix:
    models = [f"m{i}" for i in range(Y.shape[0])]
    items = [f"q{j:04d}" for j in range(Y.shape[1])]
    return ResponseMatrix.from_wide(pd.DataFrame(Y, index=models, columns=items))


def by_difficulty(Y: np.ndarray) -> np.ndarray:
    """Item indices from the hardest to the easiest for the calibration models."""
    return np.argsort(Y.mean(axis=0), kind="stable")


def groups_of(cal: Calibration, order: np.ndarray, sizes: list[int]) -> pd.Series:
    """Unequal groups in ``order`` (the hardest items in the first, smallest group)."""
    out = np.empty(cal.n_items, dtype=object)
    out[order] = np.repeat([f"g{k}" for k in range(len(sizes))], sizes)
    return pd.Series(out, index=list(cal.item_ids))


def macro(d: np.ndarray, groups: pd.Series) -> float:
    return float(pd.Series(d, index=groups.to_numpy()).groupby(level=0).mean().mean())


def answers(cal: Calibration, y: np.ndarray) -> pd.Series:
    return pd.Series(y, index=list(cal.item_ids))


@pytest.fixture(scope="module")
def small():
    Y = simulate(34, 300, 1, seed=3)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    groups = groups_of(cal, by_difficulty(Y[:30]), [20, 50, 100, 130])
    return cal, Y, groups


def run(cal, ya, yb, **kwargs) -> CompareResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare(cal, answers(cal, ya), answers(cal, yb), model_a="A", model_b="B",
                       **kwargs)  # fmt: skip


def same_run(a: CompareResult, b: CompareResult) -> None:
    """Every field but ``options`` (which records the weights) is the same, bit for bit."""
    left, right = a.to_dict(), b.to_dict()
    left.pop("options"), right.pop("options")
    assert left == right
    assert {k: v for k, v in b.options.items() if k != "weights"} == a.options


@pytest.mark.parametrize("kwargs", [{"budget": 60}, {"budget": 40, "margin": 0.3},
                                    {"budget": None, "delta": 0.5}])  # fmt: skip
def test_equal_weights_are_the_plain_compare_bit_for_bit(small, kwargs):
    cal, Y, _ = small
    plain = run(cal, Y[30], Y[31], seed=2, **kwargs)
    equal = run(cal, Y[30], Y[31], seed=2, weights={i: 3.0 for i in cal.item_ids}, **kwargs)
    same_run(plain, equal)
    assert equal.options["weights"]["equal"] is True


def test_equal_weights_on_a_plain_design_are_the_plain_compare_bit_for_bit(small):
    cal, Y, _ = small
    design = tiny(cal, k=25, seed=5)
    plain = run(cal, Y[30], Y[31], items=design)
    equal = run(cal, Y[30], Y[31], items=design, weights={i: 1 for i in cal.item_ids})
    same_run(plain, equal)


def test_every_item_revealed_gives_the_exact_macro_difference(small):
    """Run to the last item, the interval is the exact macro difference (sum W d / sum W,
    no rounding): 0 for +1 and -1 on two items of groups of the same size, while the plain
    difference of these answers is also 0 but the weighting of a third item is not."""
    cal, Y, groups = small
    a = Y[32].copy()
    b = a.copy()
    g = groups.to_numpy()
    first = np.flatnonzero(g == "g0")[:2]  # two items of the 20-item group
    third = np.flatnonzero(g == "g3")[0]  # one of the 130-item group
    a[first[0]], b[first[0]] = 1.0, 0.0
    a[first[1]], b[first[1]] = 0.0, 1.0
    r = run(cal, a, b, budget=None, delta=1e-9, weights=groups)
    assert (r.stopped, r.n_evaluated) == ("exhausted", cal.n_items)
    assert r.difference == r.lower == r.upper == 0.0
    a[third], b[third] = 1.0, 0.0
    r = run(cal, a, b, budget=None, delta=1e-9, weights=groups)
    assert r.lower == r.upper == r.difference
    assert math.isclose(r.difference, macro(a - b, groups), rel_tol=1e-12)
    assert math.isclose(r.difference, 1 / (4 * 130), rel_tol=1e-12)


def test_macro_sign_is_certified_wrong_at_most_delta_where_the_plain_sign_is_opposite():
    """A user's shape: 30 calibration models x 400 items of a rank-3 world fitted at rank 1,
    a macro target over 4 groups of 20, 40, 140 and 200 items (the hardest in the smallest).
    B beats A on 6 of the 20 hardest items, A beats B on 20 items of the other groups: the
    plain difference is +0.035, the macro one -0.036. Over 100 seeds at budget 120, the
    certified sign is wrong (A higher) at most ``delta`` plus 3 MC SE, the final interval
    misses the macro difference as rarely, and the macro sign is certified (the test has
    power). Measured: the weighted run certified B 35 times and A never, and missed the
    macro difference 5 times; the plain compare of the same answers certified A (wrong for
    this target) 19 times and missed it 88 times; with the round's weight W_J left out of the
    round's value (a mutation), 40 misses: this test fails."""
    n = 400
    Y = simulate(31, n, 3, seed=5)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    order = by_difficulty(Y[:30])
    sizes = [20, 40, 140, 200]
    groups = groups_of(cal, order, sizes)
    a = Y[30].copy()
    b = a.copy()
    rng = np.random.default_rng(0)
    starts = np.cumsum([0, *sizes])
    for k, m in ((0, 6), (1, 2), (2, 7), (3, 11)):
        pick = rng.choice(order[starts[k] : starts[k + 1]], m, replace=False)
        a[pick], b[pick] = (0.0, 1.0) if k == 0 else (1.0, 0.0)
    truth = macro(a - b, groups)
    assert (a - b).mean() > 0.03 and truth < -0.03  # opposite signs
    seeds = 100
    wrong = missed = certified = 0
    for s in range(seeds):
        r = run(cal, a, b, weights=groups, seed=s, delta=DELTA, budget=120)
        certified += r.higher is not None
        wrong += r.higher == "A"
        missed += not r.lower <= truth <= r.upper
        assert r.lower <= r.difference <= r.upper
    limit = DELTA + 3 * math.sqrt(DELTA * (1 - DELTA) / seeds)
    assert wrong / seeds <= limit, (wrong, certified)
    assert missed / seeds <= limit, (missed, certified)
    assert certified >= 20, certified  # the macro sign is certified: the test has power


def test_a_design_drawn_for_the_weights_is_compared_and_others_are_refused(small):
    cal, Y, groups = small
    weighted = tiny(cal, k=20, weights=groups)
    r = run(cal, Y[30], Y[31], items=weighted, weights=groups)
    assert list(r.items) == weighted["item"].tolist() and r.stopped == "items"
    assert np.allclose(r.probabilities, weighted["probability"], rtol=1e-5)
    assert r.options["weights"]["hash"] == weighted["weights_hash"].iloc[0]
    assert r.options["design"] == "fixed"
    assert r.summary().startswith("macro difference over 4 groups A - B = ")
    with pytest.raises(InputError, match=r"drawn by tiny --weights .*pass the same weights"):
        run(cal, Y[30], Y[31], items=weighted)
    other = {i: float(k + 1) for k, i in enumerate(cal.item_ids)}
    with pytest.raises(
        InputError,
        match=r"drawn for weights [0-9a-f]{16}, not for weights "
        r"\(mapping item -> weight\) .*weights [0-9a-f]{16}",
    ):
        run(cal, Y[30], Y[31], items=weighted, weights=other)  # fmt: skip
    plain = tiny(cal, k=20)
    with pytest.raises(
        InputError,
        match=r"drawn for the plain mean .*make the design with tiny\(\.\.\., weights=\)",
    ):
        run(cal, Y[30], Y[31], items=plain, weights=groups)


def test_items_of_weight_zero_are_never_drawn_and_shared_answers_are_said(small):
    cal, Y, _ = small
    w = {i: (1.0 + k % 3 if k < 150 else 0.0) for k, i in enumerate(cal.item_ids)}
    r = run(cal, Y[30], Y[31], budget=None, delta=1e-9, weights=w)
    kept = set(list(cal.item_ids)[:150])
    assert set(r.items) <= kept and r.n_items == 150
    assert r.summary().startswith("weighted difference A - B = ")
    a = Y[30].copy()
    a[:100] = np.nan  # A answered 50 of the 150 items of positive weight
    with pytest.warns(UserWarning, match="share answers on 50 of the 150 items of positive"):
        compare(cal, answers(cal, a), answers(cal, Y[31]), model_a="A", model_b="B",
                budget=10, weights=w)  # fmt: skip
    a[:150] = np.nan
    with pytest.raises(InputError, match="'A' and 'B' answered in common none of the 150 items"):
        run(cal, a, Y[31], budget=10, weights=w)


def test_unusable_weights_are_refused_by_file_field_and_value(small, tmp_path):
    cal, Y, _ = small
    path = tmp_path / "w.csv"
    table = pd.DataFrame({"item": list(cal.item_ids), "weight": 1.0})
    table.loc[3, "weight"] = -2.0
    table.to_csv(path, index=False)
    said = f"weights {path}: field 'weight' of item 'q0003' (line 5) is -2.0; expected a finite"
    with pytest.raises(InputError, match=re.escape(said)):
        run(cal, Y[30], Y[31], budget=10, weights=path)
    table.iloc[1:].assign(weight=1.0).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"1 of the calibration's 300 items not listed"):
        run(cal, Y[30], Y[31], budget=10, weights=path)


def test_the_record_holds_the_target(small, tmp_path):
    cal, Y, groups = small
    r = run(cal, Y[30], Y[31], budget=30, weights=groups)
    assert {k: r.options["weights"][k] for k in ("kind", "n_groups", "equal")} == {
        "kind": "groups", "n_groups": 4, "equal": False}  # fmt: skip
    back = CompareResult.read(r.save(tmp_path / "cmp"))
    assert back == r and back.options["weights"] == r.options["weights"]
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert saved["summary"].startswith("macro difference over 4 groups A - B")
    assert len(saved["options"]["weights"]["hash"]) == 16


def test_cli_compare_weights(small, tmp_path, monkeypatch):
    from latentbench.cli import _register, app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _register()
    cal, Y, groups = small
    ResponseMatrix.from_wide(
        pd.DataFrame(Y[:30], index=[f"m{i}" for i in range(30)], columns=list(cal.item_ids))
    ).to_long().to_csv("cal.csv", index=False)
    both = pd.DataFrame(Y[30:32], index=["A", "B"], columns=list(cal.item_ids))
    both.rename_axis("model").reset_index().to_csv("ab.csv", index=False)
    groups.rename_axis("item").rename("group").reset_index().to_csv("w.csv", index=False)
    runner = CliRunner()
    out = runner.invoke(app, ["compare", "cal.csv", "ab.csv", "--a", "A", "--b", "B",
                              "--weights", "w.csv", "--budget", "30", "--out", "cmp"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "macro difference over 4 groups A - B = " in out.output
    assert "difference of the two full-benchmark macro scores over 4 groups" in out.output
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert saved["options"]["weights"]["kind"] == "groups"
    assert runner.invoke(app, ["tiny", "cal.csv", "--k", "5", "--out", "d.csv"]).exit_code == 0
    refused = runner.invoke(app, ["compare", "cal.csv", "ab.csv", "--a", "A", "--b", "B",
                                  "--weights", "w.csv", "--items", "d.csv"])  # fmt: skip
    assert refused.exit_code == 2 and "drawn for the plain mean" in refused.output


def test_the_report_page_says_the_weighted_target(small, tmp_path):
    """The page's interval sentence named 'mean score' for any comparison: with weights it
    names the macro score and the items of positive weight."""
    from latentbench.report import build_compare_report as compare_report

    cal, Y, groups = small
    r = run(cal, Y[30], Y[31], budget=30, weights=groups)
    page = html.unescape(" ".join(compare_report(r).split()))
    assert "A's macro score over 4 groups minus B's over the benchmark's 300 items of" in page
    assert "mean score" not in page
    plain = html.unescape(" ".join(compare_report(run(cal, Y[30], Y[31], budget=30)).split()))
    assert "A's mean score minus B's over the benchmark's items" in plain


def test_the_report_page_gives_a_weighted_draw_its_weight(small):
    """The items table's caption said each draw weighs 1 / (items x probability), the plain
    difference's weight; in a weighted difference it weighs w / probability (w normalised
    over the items of the target)."""
    from latentbench.report import build_compare_report as compare_report

    cal, Y, groups = small
    page = html.unescape(" ".join(compare_report(run(cal, Y[30], Y[31], budget=30,
                                                     weights=groups)).split()))  # fmt: skip
    assert "1 / (items x probability)" not in page
    assert "its weight in the estimate is w / probability" in page
    plain = html.unescape(" ".join(compare_report(run(cal, Y[30], Y[31], budget=30)).split()))
    assert "its weight in the estimate is 1 / (items x probability)" in plain


def test_shared_items_that_cover_groups_unevenly_are_said(small):
    """Two models sharing 2 of the 20 items of one group: the renormalised target weighs that
    group a tenth of the others, no longer a macro difference over the groups of the items
    both answered (here +0.047, while the target is -0.085 and its sign certified); the
    warning says how the groups weigh, and that a group left with no item is out of it."""
    cal, Y, groups = small
    g = groups.to_numpy()
    a, b = Y[30].copy(), Y[31].copy()
    a[np.flatnonzero(g == "g0")[:18]] = np.nan
    r = run(cal, a, b, budget=None, delta=1e-9, weights=groups)
    said = " ".join(r.warnings)
    assert "the groups no longer weigh the same" in said
    assert "from 2 of 20 items ('g0') to 50 of 50 ('g1')" in said
    shared = np.isfinite(a) & np.isfinite(b)
    macro_shared = np.mean([np.mean((a - b)[(g == k) & shared]) for k in np.unique(g)])
    assert r.higher == "B" and r.lower <= -0.085 <= r.upper and macro_shared > 0.04  # said
    a[np.flatnonzero(g == "g0")] = np.nan  # g0 left out entirely
    said = " ".join(run(cal, a, b, budget=20, weights=groups).warnings)
    assert "1 of the 4 groups has no item both answered ('g0')" in said
    # shared evenly (half of every group): the macro weights are kept, nothing more said
    a, b = Y[30].copy(), Y[31].copy()
    for k in np.unique(g):
        a[np.flatnonzero(g == k)[::2]] = np.nan
    said = " ".join(run(cal, a, b, budget=20, weights=groups).warnings)
    assert "no longer weigh the same" not in said and "items of positive weight" in said


# --------------------------------------------------------------------------- compare_items.csv


def table_of(folder: Path) -> pd.DataFrame:
    """``compare_items.csv`` as a user reads it back (ids kept as text)."""
    from latentbench.io._files import read_csv_ids

    return read_csv_ids(folder / "compare_items.csv", ("item", "group"))


def recomputed(t: pd.DataFrame) -> float:
    """The difference from the per-item table alone: each round's estimate ``baseline +
    design_weight (d - g)``, averaged with weights ``1 / round_variance`` and kept within the
    last row's interval (which is the exact difference once every item is drawn)."""
    d = (t["score_a"] - t["score_b"]).to_numpy()
    g = (t["prediction_a"] - t["prediction_b"]).to_numpy()
    z = t["baseline"].to_numpy() + t["design_weight"].to_numpy() * (d - g)
    assert np.allclose(z, t["round_estimate"], rtol=0, atol=1e-12)
    v = t["round_variance"].to_numpy()
    point = float((z / v).sum() / (1 / v).sum())
    return min(max(point, float(t["lower"].iloc[-1])), float(t["upper"].iloc[-1]))


CASES = {
    "plain": {"budget": 60},
    "macro": {"budget": 60, "weights": "groups"},
    "items": {"budget": 50, "weights": "items"},
    "macro-margin": {"budget": 80, "margin": 0.3, "weights": "groups"},
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("names", [("A", "B"), ("B", "A")])  # ("B", "A"): drawn mirrored
def test_the_items_table_recomputes_the_difference(small, tmp_path, case, names):
    """compare --out wrote compare.json only: nobody could see which items were drawn, with
    what probability and weight, nor recompute the (weighted) difference. compare_items.csv
    gives every round; the difference follows from it alone, to float precision."""
    cal, Y, groups = small
    kwargs = dict(CASES[case])
    if kwargs.get("weights") == "groups":
        kwargs["weights"] = groups
    elif kwargs.get("weights") == "items":
        kwargs["weights"] = {i: 1.0 + k % 4 for k, i in enumerate(cal.item_ids)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = compare(cal, answers(cal, Y[30]), answers(cal, Y[31]), model_a=names[0],
                    model_b=names[1], seed=2, **kwargs)  # fmt: skip
    r.save(tmp_path / "cmp")
    t = table_of(tmp_path / "cmp")
    assert len(t) == r.n_evaluated > 0 and t["order"].tolist() == list(range(1, len(t) + 1))
    assert t["item"].tolist() == list(r.items)
    assert math.isclose(recomputed(t), r.difference, rel_tol=1e-12, abs_tol=1e-15)
    assert (t["difference"].iloc[-1], t["lower"].iloc[-1], t["upper"].iloc[-1]) == (
        r.difference, r.lower, r.upper)  # fmt: skip
    ya, yb = Y[30], Y[31]  # model_a's answers are the first (named A, or B mirrored)
    position = {i: k for k, i in enumerate(cal.item_ids)}
    at = [position[i] for i in t["item"]]
    assert t["score_a"].tolist() == ya[at].tolist() and t["score_b"].tolist() == yb[at].tolist()
    if case == "plain":
        assert "target_weight" not in t and "group" not in t
        assert np.allclose(t["design_weight"], 1 / (cal.n_items * t["probability"]), rtol=1e-14)
        return
    # the item's weight in the target (summing to 1 over its items), and its draw's
    w = pd.Series(kwargs["weights"]) if case == "items" else None
    if w is None:  # macro: each of the 4 groups weighs 1/4, its items equally
        sizes = groups.value_counts()
        expected = [1 / (4 * sizes[groups[i]]) for i in t["item"]]
        assert t["group"].tolist() == [groups[i] for i in t["item"]]
    else:
        expected = (w[t["item"]] / w.sum()).tolist()
        assert "group" not in t
    assert np.allclose(t["target_weight"], expected, rtol=1e-12)
    assert np.allclose(t["design_weight"], t["target_weight"] / t["probability"], rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_every_item_drawn_the_table_gives_the_exact_difference(small, tmp_path, weighted):
    """Run to the last item, the difference is the exact one: the table's target weights
    (the plain mean without weights) recompute it, as do its rounds."""
    cal, Y, groups = small
    a, b = Y[32].copy(), Y[32].copy()  # a small difference: no sign certified before the end
    g = groups.to_numpy()
    first, third = np.flatnonzero(g == "g0")[:2], np.flatnonzero(g == "g3")[0]
    for j, (x, y) in zip((*first, third), ((1.0, 0.0), (0.0, 1.0), (1.0, 0.0)), strict=True):
        a[j], b[j] = x, y
    r = run(cal, a, b, budget=None, delta=1e-9, **({"weights": groups} if weighted
                                                    else {}))  # fmt: skip
    assert (r.stopped, r.n_evaluated) == ("exhausted", cal.n_items)
    r.save(tmp_path / "cmp")
    t = table_of(tmp_path / "cmp")
    d = t["score_a"] - t["score_b"]
    exact = float((t["target_weight"] * d).sum()) if weighted else float(d.mean())
    assert math.isclose(exact, r.difference, rel_tol=1e-12, abs_tol=1e-15)
    assert recomputed(t) == r.difference == r.lower == r.upper
    if weighted:
        assert math.isclose(float(t["target_weight"].sum()), 1.0, rel_tol=1e-12)
        assert t.groupby("group")["target_weight"].sum().round(12).eq(0.25).all()


def test_a_design_comparison_table_recomputes_its_difference(small, tmp_path):
    """On a fixed weighted design (every design item scored), as adaptively."""
    cal, Y, groups = small
    design = tiny(cal, k=30, seed=4, weights=groups)
    r = run(cal, Y[30], Y[31], items=design, weights=groups)
    r.save(tmp_path / "cmp")
    t = table_of(tmp_path / "cmp")
    assert t["item"].tolist() == design["item"].tolist()
    assert np.allclose(t["probability"], design["probability"], rtol=1e-14)
    assert np.allclose(t["design_weight"], design["weight"], rtol=1e-12)  # tiny's w / pi
    assert math.isclose(recomputed(t), r.difference, rel_tol=1e-12, abs_tol=1e-15)


def test_the_items_table_round_trips_through_read(small, tmp_path):
    """CompareResult.read(DIR) gives back the result, and its table is the file's."""
    cal, Y, groups = small
    r = run(cal, Y[30], Y[31], budget=40, weights=groups)
    r.save(tmp_path / "cmp")
    back = CompareResult.read(tmp_path / "cmp")
    assert back == r
    pd.testing.assert_frame_equal(back.to_frame(), table_of(tmp_path / "cmp"),
                                  check_dtype=False)  # fmt: skip
    pd.testing.assert_frame_equal(back.to_frame(), r.to_frame())


def test_a_record_without_rounds_reads_and_an_edited_one_is_refused(small, tmp_path):
    """A compare.json written before the rounds were kept reads back with the table it can
    give (order, item, probability and both scores); a rounds column of the wrong length is
    refused naming the field."""
    cal, Y, _ = small
    r = run(cal, Y[30], Y[31], budget=20)
    record = r.to_dict()
    record.pop("rounds")
    old = CompareResult.from_dict(record)
    assert old.to_frame().columns.tolist() == ["order", "item", "probability", "score_a",
                                               "score_b"]  # fmt: skip
    record = r.to_dict()
    record["rounds"]["baseline"] = record["rounds"]["baseline"][:-1]
    with pytest.raises(InputError, match="field 'rounds' holds 19 values of 'baseline'"):
        CompareResult.from_dict(record)


@pytest.mark.parametrize("field", ["answers_a", "answers_b", "probabilities"])
def test_an_edited_answers_field_is_refused_naming_it(small, tmp_path, field):
    """A compare.json edited so that a per-item field no longer gives one value per item
    read back, and its save (compare_items.csv) or the report's page failed with pandas'
    'All arrays must be of the same length': now refused when read, naming the field."""
    cal, Y, _ = small
    record = run(cal, Y[30], Y[31], budget=20).to_dict()
    record[field] = record[field][:-1]
    (tmp_path / "compare.json").write_text(json.dumps(record))
    with pytest.raises(InputError) as info:
        CompareResult.read(tmp_path).save(tmp_path / "again")
    assert str(info.value) == (
        f"{tmp_path / 'compare.json'}: field {field!r} holds 19 values; expected 20, one per "
        "item of field 'items'"
    )


@pytest.mark.parametrize(
    ("field", "bad", "expected"),
    [
        ("answers_a", "x", "a score in [0, 1]"),
        ("answers_b", None, "a score in [0, 1]"),
        ("answers_a", 7.0, "a score in [0, 1]"),
        ("probabilities", "x", "a finite number > 0"),
        ("probabilities", 0.0, "a finite number > 0"),
    ],
)  # fmt: skip
def test_an_edited_answer_or_probability_value_is_refused_naming_it(
    small, tmp_path, field, bad, expected
):
    """A compare.json edited so that an answer or a probability is a text, a null, or no
    score read back as the right length, and its save failed with numpy's 'could not convert
    string to float' (no file, no field) or wrote the 7.0 or the empty cell into
    compare_items.csv: now refused when read, naming the file, the field and the value."""
    cal, Y, _ = small
    record = run(cal, Y[30], Y[31], budget=20).to_dict()
    record[field][3] = bad
    (tmp_path / "compare.json").write_text(json.dumps(record))
    with pytest.raises(InputError) as info:
        CompareResult.read(tmp_path).save(tmp_path / "again")
    assert str(info.value) == (
        f"{tmp_path / 'compare.json'}: field {field!r} holds {bad!r} (1 such value(s)); "
        f"expected {expected} for each item"
    )


@pytest.mark.parametrize("field", ["items", "answers_a", "probabilities"])
def test_an_edited_per_item_list_made_a_text_or_an_object_is_refused(small, tmp_path, field):
    """A compare.json edited so that a per-item list is a text of as many characters (read as
    its characters: items 'a', 'a', ...) or an object (read as its keys: answers '0', '1',
    ...) read back silently; now refused when read, naming the file and the field."""
    cal, Y, _ = small
    record = run(cal, Y[30], Y[31], budget=20).to_dict()
    for bad in ("a" * 20, {str(i): v for i, v in enumerate(record[field])}):
        (tmp_path / "compare.json").write_text(json.dumps({**record, field: bad}))
        with pytest.raises(InputError) as info:
            CompareResult.read(tmp_path)
        assert str(info.value).startswith(f"{tmp_path / 'compare.json'}: field {field!r} holds "), (
            str(info.value)
        )
        assert str(info.value).endswith(f" (a {type(bad).__name__}); expected a list")


@pytest.mark.parametrize("bad", ["0.25", None, {"a": 1}, True])
def test_an_edited_round_value_is_refused_naming_the_field(small, tmp_path, bad):
    """An edited compare.json whose rounds hold a text, a null or an object for a number read
    back, then failed where the items table was made (save, the report's page) with
    numpy's ValueError or TypeError: now refused when read, naming the file, the field,
    the column and the value, as the record's other numbers are."""
    cal, Y, _ = small
    r = run(cal, Y[30], Y[31], budget=20)
    record = r.to_dict()
    record["rounds"]["difference"][3] = bad
    (tmp_path / "compare.json").write_text(json.dumps(record))
    with pytest.raises(InputError) as info:
        CompareResult.read(tmp_path).save(tmp_path / "again")
    assert str(info.value) == (
        f"{tmp_path / 'compare.json'}: field 'rounds' holds {bad!r} in 'difference' (1 such "
        "value(s)); expected a finite number for each item"
    )


def test_the_report_page_shows_each_items_weight(small):
    """The page's items table of a weighted difference had no weight column: the caption
    named w, but the page did not show it; it now shows each item's group, target_weight
    and design_weight (a plain comparison's table is as before)."""
    from latentbench.report import build_compare_report as compare_report

    cal, Y, groups = small
    r = run(cal, Y[30], Y[31], budget=30, weights=groups)
    page = html.unescape(compare_report(r))
    for column in ("group", "target_weight", "design_weight"):
        assert f"<th>{column}</th>" in page or f">{column}<" in page, column
    plain = html.unescape(compare_report(run(cal, Y[30], Y[31], budget=30)))
    assert ">target_weight<" not in plain and ">design_weight<" not in plain


def test_the_line_says_when_the_groups_weigh_by_the_share_answered(small):
    """Shared on 2 of one group's 20 items, the groups weigh by the share both answered:
    the line still said 'macro difference over 4 groups' (a warning said otherwise). It now
    says how they weigh, and over how many groups when one has no item; every item
    answered (or every group's same share), the line is as before."""
    cal, Y, groups = small
    g = groups.to_numpy()
    a, b = Y[30].copy(), Y[31].copy()
    a[np.flatnonzero(g == "g0")[:18]] = np.nan
    r = run(cal, a, b, budget=20, weights=groups)
    said = "difference over 4 groups (each weighed by the share of its items both answered)"
    assert r.summary().startswith(f"{said} A - B = "), r.summary()
    assert r.options["weights"]["weighed_by_share"] == "both answered"
    a[np.flatnonzero(g == "g0")] = np.nan  # g0 left out, the others whole: macro over 3
    r = run(cal, a, b, budget=20, weights=groups)
    assert r.summary().startswith("macro difference over 3 of 4 groups A - B = "), r.summary()
    a, b = Y[30].copy(), Y[31].copy()
    for k in np.unique(g):  # half of every group: the macro weights are kept
        a[np.flatnonzero(g == k)[::2]] = np.nan
    r = run(cal, a, b, budget=20, weights=groups)
    assert r.summary().startswith("macro difference over 4 groups A - B = ")
    assert not {"weighed_by_share", "n_groups_answered"} & set(r.options["weights"])
    r = run(cal, Y[30], Y[31], budget=20, weights=groups)
    assert r.summary().startswith("macro difference over 4 groups A - B = ")
    assert not {"weighed_by_share", "n_groups_answered"} & set(r.options["weights"])


def test_the_estimate_line_says_when_the_groups_weigh_by_the_share_answered(small):
    """As for compare: estimate's line said 'macro score over 4 groups' for a model that
    answered 2 of one group's 20 items."""
    from latentbench.select import estimate

    cal, Y, groups = small
    g = groups.to_numpy()
    a = Y[30].copy()
    a[np.flatnonzero(g == "g0")[:18]] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = estimate(cal, answers(cal, a), budget=20, weights=groups)
        whole = estimate(cal, answers(cal, Y[30]), budget=20, weights=groups)
    assert r.summary().startswith(
        "score over 4 groups (each weighed by the share of its items answered) "
    ), r.summary()
    assert whole.summary().startswith("macro score over 4 groups ")
    assert "weighed_by_share" not in whole.options["weights"]


def test_estimates_csv_target_says_how_the_groups_weigh_as_the_line(small, tmp_path):
    """estimates.csv's ``target`` column still said 'macro over 4 groups' where the line
    said the groups weigh by the share answered (or that one group has no item answered):
    it now says it as the line does; a model that answered every item keeps 'macro over 4
    groups'."""
    from latentbench.select import EstimateSet, estimate

    cal, Y, groups = small
    g = groups.to_numpy()
    a, gone = Y[30].copy(), Y[32].copy()
    a[np.flatnonzero(g == "g0")[:18]] = np.nan  # 2 of g0's 20 answered
    gone[np.flatnonzero(g == "g0")] = np.nan  # none of g0's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = [
            estimate(cal, answers(cal, y), model=name, budget=20, weights=groups)
            for name, y in (("share", a), ("whole", Y[31]), ("three", gone))
        ]
    EstimateSet(tuple(results)).save(tmp_path)
    table = pd.read_csv(tmp_path / "estimates.csv")
    assert table["target"].tolist() == [
        "over 4 groups (each weighed by the share of its items answered)",
        "macro over 4 groups",
        "macro over 3 of 4 groups",
    ]
    for result, target in zip(results, table["target"], strict=True):  # as the line says
        line = re.sub(r"^(macro )?", r"\1score ", target)
        assert result.summary().startswith(f"{line} "), (result.summary(), target)


def test_cli_legend_says_when_the_groups_weigh_by_the_share_answered(small, tmp_path, monkeypatch):
    """The command's legend said 'the two macro scores over 4 groups on the items both
    answered' when the groups weigh by the share both answered; it now says how they
    weigh, as the line does, and writes compare_items.csv with each item's group."""
    from latentbench.cli import _register, app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _register()
    cal, Y, groups = small
    ids = list(cal.item_ids)
    ResponseMatrix.from_wide(
        pd.DataFrame(Y[:30], index=[f"m{i}" for i in range(30)], columns=ids)
    ).to_long().to_csv("cal.csv", index=False)
    a = Y[30].copy()
    a[np.flatnonzero(groups.to_numpy() == "g0")[:18]] = np.nan
    both = pd.DataFrame([a, Y[31]], index=["A", "B"], columns=ids).rename_axis("model")
    both.reset_index().melt("model", var_name="item", value_name="score").dropna().to_csv(
        "ab.csv", index=False
    )
    groups.rename_axis("item").rename("group").reset_index().to_csv("w.csv", index=False)
    args = ["compare", "cal.csv", "ab.csv", "--a", "A", "--b", "B", "--weights", "w.csv"]
    out = CliRunner().invoke(app, [*args, "--budget", "30", "--out", "cmp"])
    text = " ".join(out.output.split())
    assert out.exit_code == 0, out.output
    share = "over 4 groups (each weighed by the share of its items both answered)"
    assert f"difference {share} A - B = " in text
    assert f"the difference of the two scores {share} on the items both answered" in text
    assert "macro" not in text.split("[ ]:")[1]
    written = table_of(tmp_path / "cmp")
    assert written["group"].tolist() == [groups[i] for i in written["item"]]
