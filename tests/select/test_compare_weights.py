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
    with pytest.raises(InputError, match=r"drawn for the plain mean .*tiny --weights"):
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
