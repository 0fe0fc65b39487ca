"""``tiny(precision=)`` / ``latentbench tiny --precision``: the design's size chosen for a
target half-width, predicted by replaying the calibration models' answers with the engine of
``estimate(items=)``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import compare, estimate, tiny
from latentbench.select._estimate_calibration import from_matrix

_register()
runner = CliRunner()
PRECISION = 0.08


def _world(seed: int = 0, m: int = 30, held: int = 12, n: int = 400):
    """``m`` calibration models and ``held`` new ones from one 2PL world on ``n`` items."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=m + held)
    a, b = rng.lognormal(0.0, 0.3, n), rng.normal(size=n)
    P = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    Y = (rng.random(P.shape) < P).astype(np.float64)
    frame = pd.DataFrame(
        Y, index=[f"m{i:02d}" for i in range(m + held)], columns=[f"q{j:03d}" for j in range(n)]
    )
    M = ResponseMatrix.from_wide(frame)
    return M.subset(models=list(M.model_ids[:m])), M.subset(models=list(M.model_ids[m:]))


@pytest.fixture(scope="module")
def world():
    cal, new = _world()
    return cal, new, tiny(cal, precision=PRECISION)


LOOSE = 0.2


@pytest.fixture(scope="module")
def loose(world):
    """``world``'s design sized for 0.2 (read only: tests take its length)."""
    return tiny(world[0], precision=LOOSE)


def _half_width(cal, answers: ResponseMatrix, model: str, design: pd.DataFrame) -> float:
    res = estimate(cal, answers.subset(models=[model]), model=model, items=design)
    return (res.upper - res.lower) / 2.0


def test_precision_chooses_k_and_records_the_prediction(world):
    """Before: tiny had no precision (a TypeError); the user learnt the width after the run."""
    _, _, design = world
    k = len(design)
    assert 1 < k < 400 and (design["k"] == k).all()
    assert list(design.columns[8:]) == [
        "precision", "delta", "predicted_half_width", "predicted_half_width_p90",
        "predicted_models",
    ]  # fmt: skip
    row = design.iloc[0]
    assert row["precision"] == PRECISION and row["delta"] == 0.05
    assert row["predicted_half_width"] <= PRECISION < row["predicted_half_width_p90"]
    assert row["predicted_models"] == 30


def test_the_prediction_is_estimate_items_on_each_calibration_model(world):
    """The predicted half-widths are those ``estimate(items=)`` reports for the calibration
    models on the design (one implementation): median and 90th percentile exactly."""
    cal, _, design = world
    widths = [_half_width(cal, cal, m, design) for m in cal.model_ids]
    assert np.median(widths) == design["predicted_half_width"].iloc[0]
    assert np.quantile(widths, 0.9) == design["predicted_half_width_p90"].iloc[0]


def test_held_out_models_realise_about_the_predicted_half_width(world):
    """New models from the same world, scored on the design: their median half-width is
    within [0.85, 1.2] of the predicted median. Tolerance: across the 12 new models the
    half-width varies by about 9% (sd), so their median has a Monte Carlo SE of about 3%;
    the prediction is in-sample (optimistic), by +4% on average over 6 seeded runs
    (3 worlds x precision 0.05 and 0.08: ratios 0.95 to 1.11); the band is 4-5 SE wide
    each side around that."""
    cal, new, design = world
    realised = [_half_width(cal, new, m, design) for m in new.model_ids]
    ratio = np.median(realised) / design["predicted_half_width"].iloc[0]
    assert 0.85 <= ratio <= 1.2, ratio


def test_k_falls_as_the_precision_loosens(world, loose):
    cal, _, design = world
    ks = [len(design), len(tiny(cal, precision=0.12)), len(loose)]
    assert ks[0] > ks[1] > ks[2], ks


def test_precision_options_are_checked(world, loose):
    cal, _, _ = world
    with pytest.raises(InputError, match="give one"):
        tiny(cal, 20, precision=0.1)
    with pytest.raises(InputError, match=r"delta=0\.1 without precision"):
        tiny(cal, 20, delta=0.1)
    with pytest.raises(InputError, match=r"precision=0\.5"):
        tiny(cal, precision=0.5)
    with pytest.raises(InputError, match="delta=2"):
        tiny(cal, precision=0.1, delta=2)
    with pytest.raises(InputError, match="does not keep"):  # parameters only: no answers
        tiny(from_matrix(cal), precision=0.1)
    fitted = from_matrix(cal)  # ... unless they are given
    assert len(tiny(fitted, precision=LOOSE, responses=cal)) == len(loose)


def test_a_precision_reached_only_by_every_item_gives_the_whole_benchmark():
    """A precision below what any part of the items reaches: every item (the interval is the
    mean itself), predicted half-width 0."""
    cal, _ = _world(1, m=6, held=1, n=40)
    design = tiny(cal, precision=0.001)
    assert len(design) == 40 and design["predicted_half_width"].iloc[0] == 0.0


def test_cli_tiny_precision_prints_the_chosen_k(world, tmp_path):
    cal, _, _ = world
    path = tmp_path / "cal.parquet"
    cal.to_long().to_parquet(path)
    out = tmp_path / "items.csv"
    outcome = runner.invoke(app, ["tiny", str(path), "--precision", "0.2", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    k = len(pd.read_csv(out))
    assert f"k = {k} items for a predicted half-width of 0." in outcome.output
    assert "(median over the 30 calibration models; 90th percentile" in outcome.output
    assert "in-sample: a new model unlike them may need more" in outcome.output
    # scored at another delta than it was sized at: said in one line and in estimate.json
    one, est = tmp_path / "one.parquet", tmp_path / "est"
    cal.subset(models=["m00"]).to_long().to_parquet(one)
    scored = ["estimate", str(path), str(one), "--items", str(out), "--out", str(est)]
    outcome = runner.invoke(app, [*scored, "--delta", "0.1"])
    assert outcome.exit_code == 0, outcome.output
    said = "sized by tiny --precision for an interval at delta 0.05"
    assert f"{said} (median predicted half-width" in " ".join(outcome.output.split())
    written = json.loads((est / "estimate.json").read_text())["warnings"]  # one model
    assert [w for w in written if said in w and "scored here at delta 0.1" in w]
    both = ["tiny", str(path), "--k", "5", "--precision", "0.2", "--out", str(out), "--force"]
    outcome = runner.invoke(app, both)
    assert outcome.exit_code == 2 and "give --k 5 or --precision 0.2, not both" in outcome.output


def _macro(items: list[str]) -> pd.DataFrame:
    """A macro target over 4 groups of unequal sizes (20, 40, 100 and the rest of the items):
    an item of the smallest weighs 10x one of the largest."""
    sizes = np.repeat([0, 1, 2, 3], [20, 40, 100, len(items) - 160])
    return pd.DataFrame({"item": items, "group": [f"g{g}" for g in sizes]})


MACRO_PRECISION = 0.1


@pytest.fixture(scope="module")
def macro():
    """A smaller world than ``world`` (16 calibration models, 300 items: about 3 CPU-s for
    the sizing and the replays that check it) and its macro design sized for 0.1."""
    cal, _ = _world(2, m=16, held=1, n=300)
    groups = _macro(list(cal.item_ids))
    return cal, groups, tiny(cal, precision=MACRO_PRECISION, weights=groups)


def _weighted_widths(cal, design: pd.DataFrame, groups: pd.DataFrame) -> np.ndarray:
    """Each calibration model's half-width from ``estimate(items=design, weights=groups)``."""
    return np.array(
        [
            (r.upper - r.lower) / 2.0
            for r in (
                estimate(cal, cal.subset(models=[m]), model=m, items=design, weights=groups)
                for m in cal.model_ids
            )
        ]
    )


def test_precision_sizes_a_macro_design_as_estimate_scores_it(macro):
    """Before: tiny(precision=, weights=) was refused ("sized for a precision on the plain
    mean only"). Now the calibration models are replayed on the weighted design as
    ``estimate(items=, weights=)`` scores them: the recorded median and 90th percentile are
    theirs exactly, the median is at most the precision, and the design 2% smaller misses it
    (the search stops within 2% of k)."""
    cal, groups, design = macro
    k = len(design)
    assert list(design.columns[8:]) == [
        "target", "weights_hash", "precision", "delta", "predicted_half_width",
        "predicted_half_width_p90", "predicted_models",
    ]  # fmt: skip
    assert design["target"].iloc[0] == "macro over 4 groups" and (design["k"] == k).all()
    assert design["predicted_models"].iloc[0] == 16
    widths = _weighted_widths(cal, design, groups)
    # a half-width is a count of the sequence's grid steps: the precision up to rounding
    top = MACRO_PRECISION * (1 + 1e-9)
    assert np.median(widths) == design["predicted_half_width"].iloc[0] <= top
    assert np.quantile(widths, 0.9) == design["predicted_half_width_p90"].iloc[0]
    smaller = tiny(cal, int(0.98 * k), weights=groups)  # the first rows of the same draw
    assert list(smaller["item"]) == list(design["item"][: len(smaller)])
    assert np.median(_weighted_widths(cal, smaller, groups)) > MACRO_PRECISION


def test_precision_with_equal_weights_is_the_plain_design(world, loose):
    """Equal weights are the plain mean: the same k and the same design (said). Sized at
    ``LOOSE`` (``loose``): the sizing's replays are the same at any precision, a quarter of
    the cost of ``PRECISION``'s."""
    cal, _, _ = world
    equal = pd.Series(2.0, index=list(cal.item_ids))
    with pytest.warns(UserWarning, match="same weight"):
        same = tiny(cal, precision=LOOSE, weights=equal)
    pd.testing.assert_frame_equal(same, loose)


def test_cli_tiny_precision_on_a_fit_directory_takes_responses(world, tmp_path):
    """Before: the CLI had no --responses, and the error on a fit directory named only
    Python's responses=. Now the refusal names --responses, and with it the design is
    tiny(FIT_DIR, precision=, responses=)'s."""
    from latentbench.irt import TwoPL

    cal, _, _ = world
    fit_dir = tmp_path / "fit"
    TwoPL(rank=1, prior=None, max_iter=200).fit(cal).save(fit_dir)
    matrix = tmp_path / "cal.parquet"
    cal.to_long().to_parquet(matrix)
    out = tmp_path / "items.csv"
    base = ["tiny", str(fit_dir), "--precision", "0.2", "--out", str(out)]
    outcome = runner.invoke(app, base)
    assert outcome.exit_code == 2 and "--responses MATRIX_FILE" in outcome.output
    # the option refused is the flag given (it read "error: precision with calibration ...")
    assert outcome.output.startswith("error: --precision with calibration "), outcome.output
    outcome = runner.invoke(app, [*base, "--responses", str(matrix)])
    assert outcome.exit_code == 0, outcome.output
    expected = tiny(fit_dir, precision=0.2, responses=cal)
    pd.testing.assert_frame_equal(pd.read_csv(out), expected, check_dtype=False)
    assert f"k = {len(expected)} items for a predicted half-width" in outcome.output
    lone = ["tiny", str(fit_dir), "--k", "5", "--responses", str(matrix), "--out", "-"]
    outcome = runner.invoke(app, lone)
    assert outcome.exit_code == 2 and "without --precision" in outcome.output
    gone = [*base, "--responses", str(tmp_path / "none.parquet"), "--force"]
    outcome = runner.invoke(app, gone)
    assert outcome.exit_code == 2 and "--responses" in outcome.output
    assert "no such file" in outcome.output
    # a folder was said to be no such file
    outcome = runner.invoke(app, [*base, "--responses", str(tmp_path), "--force"])
    assert outcome.exit_code == 2 and "is a folder; expected the response-matrix file" in (
        " ".join(outcome.output.split())
    )


def test_a_design_scored_at_another_delta_than_it_was_sized_at_is_said(world):
    """Before: estimate(items=, delta=) and compare(items=, delta=) on a design sized at
    another delta said nothing, though its interval does not have the predicted half-width.
    Now one line, warned and kept in the result's warnings, names both deltas; nothing at the
    design's delta or on an unsized design; the result is unchanged."""
    cal, _, design = world
    one = cal.subset(models=["m00"])
    said = (
        r"items: sized by tiny --precision for an interval at delta 0\.05 \(median predicted "
        r"half-width 0\.0\d+ for precision 0\.08\), scored here at delta 0\.1: the interval "
        r"is narrower than predicted; score it with delta=0\.05, or size a "
        r"design at this delta \(tiny\(\.\.\., precision=H, delta=0\.1\)\)"
    )
    with pytest.warns(DataWarning, match=said):
        other = estimate(cal, one, model="m00", items=design, delta=0.1)
    assert sum("sized by tiny --precision" in w for w in other.warnings) == 1
    unsized = design.iloc[:, :8]  # the same items without the sizing's columns
    assert (other.lower, other.upper) == (
        (r := estimate(cal, one, model="m00", items=unsized, delta=0.1)).lower,
        r.upper,
    )
    assert not any("sized by" in w for w in r.warnings)
    same = estimate(cal, one, model="m00", items=design, delta=0.05)
    assert not any("sized by" in w for w in same.warnings)
    a, b = cal.subset(models=["m00"]), cal.subset(models=["m01"])
    said = (
        r"at delta 0\.05 \(.*, for one model's score, not a difference\), scored here at "
        r"delta 0\.2: the interval is narrower"
    )
    with pytest.warns(DataWarning, match=said):
        pair = compare(cal, a, b, model_a="m00", model_b="m01", items=design, delta=0.2)
    assert sum("sized by tiny --precision" in w for w in pair.warnings) == 1
    pair = compare(cal, a, b, model_a="m00", model_b="m01", items=design, delta=0.05)
    assert not any("sized by" in w for w in pair.warnings)


def test_responses_without_precision_is_refused(world, tmp_path):
    """Before: tiny(cal, k, responses=R) dropped R silently (the CLI refused --responses
    without --precision). Now it is refused as delta= without precision is, naming it."""
    cal, _, _ = world
    with pytest.raises(InputError, match=r"responses=<ResponseMatrix> without precision"):
        tiny(cal, 20, responses=cal)
    with pytest.raises(InputError, match=r"responses='.*r\.parquet' without precision"):
        tiny(cal, responses=tmp_path / "r.parquet")


def test_responses_are_matched_to_the_calibration_by_id(world, loose):
    """The responses' models and items are matched to the calibration's by id: items in
    another order or extra items give the same design. Before: a responses matrix lacking a
    calibrated item was read as every model leaving it unanswered, and was refused as 'no
    calibration model answered the design's first 32 items ... fewer missing cells' (or sized
    silently when the item fell after the design); now it is refused naming the items absent
    and the matrix expected. (The designs compared are sized at ``LOOSE``, ``loose``: the
    matching is the same at any precision, at a quarter of the cost of ``PRECISION``'s.)"""
    cal, _, design = world
    items = list(cal.item_ids)
    reordered = cal.subset(items=items[::-1])
    pd.testing.assert_frame_equal(tiny(cal, precision=LOOSE, responses=reordered), loose)
    frame = pd.DataFrame(np.asarray(cal.scores), index=list(cal.model_ids), columns=items)
    frame["extra"] = 1.0
    extra = ResponseMatrix.from_wide(frame)
    pd.testing.assert_frame_equal(tiny(cal, precision=LOOSE, responses=extra), loose)
    lacking = design["item"].iloc[-1]  # drawn last: the sizing used to reach it late or never
    for missing in ([lacking], items[:50]):
        short = cal.subset(items=[j for j in items if j not in missing])
        said = (
            rf"responses: {len(missing)} of the calibration's 400 items are not in it "
            rf"\('{missing[0]}'.*\); expected the matrix the calibration was made from"
        )
        with pytest.raises(InputError, match=said):
            tiny(cal, precision=PRECISION, responses=short)


def test_responses_lacking_calibration_models_are_said(world):
    """Before: calibration models absent from the responses were dropped silently (the
    prediction over fewer models, said only by predicted_models); now a warning names them
    and how many the prediction is over."""
    cal, _, _ = world  # (sized at LOOSE: what is said does not depend on the precision)
    some = cal.subset(models=list(cal.model_ids[:20]))
    said = (
        r"responses: 10 of the calibration's 30 models are not in it \('m20', 'm21', 'm22', "
        r"\.\.\.\): the half-width is predicted from the other 20 \(predicted_models\)"
    )
    with pytest.warns(DataWarning, match=said):
        design = tiny(cal, precision=LOOSE, responses=some)
    assert design["predicted_models"].iloc[0] == 20


def test_a_delta_equal_as_printed_is_the_design_s_delta(world):
    """Before: a design whose delta was read back as float32 (0.05 -> 0.0500000007, a
    pipeline that stores its columns in single precision) or scored at --delta 0.050000001
    warned 'sized ... at delta 0.05, scored here at delta 0.05: the interval is narrower than
    predicted', a line that contradicts itself about a difference that moves no interval.
    Now deltas equal to the 6 digits the line prints are the same delta (no line), and a
    delta that differs is said with both values distinct."""
    cal, _, design = world
    one = cal.subset(models=["m00"])
    single = design.assign(delta=np.float32(0.05))
    assert float(single["delta"].iloc[0]) != 0.05
    for frame, delta in ((single, 0.05), (design, 0.050000001)):
        res = estimate(cal, one, model="m00", items=frame, delta=delta)
        assert not any("sized by" in w for w in res.warnings), res.warnings
    with pytest.warns(DataWarning, match=r"at delta 0\.05 \(.*scored here at delta 0\.0501:"):
        estimate(cal, one, model="m00", items=design, delta=0.0501)


def test_precision_with_zero_weights_draws_and_predicts_only_weighted_items():
    """Weights of 0 on a third of the items: the design holds none of them, and the recorded
    median and 90th percentile are those ``estimate(items=, weights=)`` reports for the
    calibration models (the replays index the weighted population, not every item). A check
    of the sizing's population mapping (passes before and after this review)."""
    cal, _ = _world(3, m=14, held=1, n=200)
    items = list(cal.item_ids)
    w = pd.Series(np.random.default_rng(5).uniform(0.2, 3.0, len(items)), index=items)
    w.iloc[::3] = 0.0
    design = tiny(cal, precision=MACRO_PRECISION, weights=w)
    assert (w[design["item"]] > 0).all() and design["target"].iloc[0] == "weighted"
    widths = _weighted_widths(cal, design, w)
    assert np.median(widths) == design["predicted_half_width"].iloc[0]
    assert np.quantile(widths, 0.9) == design["predicted_half_width_p90"].iloc[0]


def _replays(cal_matrix: ResponseMatrix, weights=None):
    """The sizing's replays of ``cal_matrix``'s models on its design (seed 0, floor 0.1), as
    ``tiny(precision=)`` builds them, and a fresh engine maker (the plain path's)."""
    from latentbench.select._estimate import (
        _calibration_answers,
        _design_engine,
        _draw_stream,
        load_calibration,
    )
    from latentbench.select._estimate_weights import read_weights
    from latentbench.select._tiny_precision import _Replays

    cal = load_calibration(cal_matrix)
    checked = None if weights is None else read_weights(cal, weights)
    stream, _ = _draw_stream(cal, 0.1, 0, checked)

    def engine():
        return _design_engine(cal, 0.1, 0.05, weights=checked)

    draws = lambda m: np.asarray([j for j, _ in stream(m)], dtype=np.int64)  # noqa: E731
    return _Replays(engine, draws, _calibration_answers(cal_matrix, None, cal)), engine, draws


@pytest.mark.parametrize("case", ["plain", "weighted", "zero weights"])
def test_the_sizing_s_replays_equal_the_plain_replays_bit_for_bit(case):
    """The sizing replays each model without its own sequence (never read: before, every
    replayed answer also updated it, one sequence update per answer) and feeds each size's
    sequence its rounds with the interval refreshed after the last only
    (``WeightedBettingCS._replay``). Every round and every half-width is the plain path's
    bit for bit: a full engine per model (its sequence updated), then a sequence sized for
    ``k`` fed the same rounds one :meth:`update` at a time. Fails before: the replayed
    engines' own sequences counted every answer."""
    cal_m, _ = _world(4, m=8, held=1, n=120)
    weights = None
    if case != "plain":
        items = list(cal_m.item_ids)
        weights = pd.Series(np.random.default_rng(6).uniform(0.2, 3.0, len(items)), index=items)
        if case == "zero weights":
            weights.iloc[::4] = 0.0
    replays, engine, draws = _replays(cal_m, weights)
    # a model that stops: counted only up to its first unanswered item (the 61st drawn)
    replays.Y[2, draws(61)[60]] = np.nan
    sizes = []
    for k in (20, 45, 90):
        hw = replays.half_widths(k)
        plain = []
        for m in range(replays.Y.shape[0]):
            seq, rounds = engine(), []
            for p in draws(k).tolist():
                y = float(replays.Y[m, p])
                if not np.isfinite(y):
                    break
                seq.observe(int(replays.index[p]), y, seq.probabilities())
                rounds.append(seq.last_round)
            assert rounds == replays.rounds[m][: len(rounds)]  # every round, bit for bit
            if len(rounds) == k:
                cs = replays.base.sized_sequence(k)
                for row in rounds:
                    cs.update(*row)
                plain.append((cs.upper - cs.lower) / 2.0)
        assert np.array_equal(hw, np.asarray(plain))
        sizes.append(hw.size)
    assert sizes == [8, 8, 7], sizes  # the stopped model counted, then not
    assert all(seq.cs.count == 0 for seq in replays.seqs)  # never updated


def _cs_rounds(seed: int, t: int, *, zero_variance: bool, closed: bool, biased: bool):
    """``t`` synthetic rounds ``(z, lo, hi, variance, center, bounds)`` of a mean near 0.6."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(t):
        lo, hi = 0.6 - rng.uniform(0.1, 0.6), 0.6 + rng.uniform(0.1, 0.4)
        z = float(np.clip(0.6 + (0.3 if biased else 0.0) + rng.normal(0, 0.08), lo, hi))
        v = 0.0 if zero_variance and s % 3 == 0 else float(rng.uniform(0.001, 0.02))
        width = 0.0 if closed and s == t - 1 else 0.4 * (1 - s / t)
        out.append((z, lo, hi, v, 0.6 + rng.normal(0, 0.02), (0.6 - width, 0.6 + width)))
    return out


@pytest.mark.parametrize("target", [None, 0.03])
@pytest.mark.parametrize(
    "kind", ["plain", "zero variances", "closed bounds", "contradicted", "no round"]
)
def test_a_sequence_replayed_at_once_is_the_sequence_updated_round_by_round(target, kind):
    """``WeightedBettingCS._replay`` (the sizing's: the interval refreshed after the last
    round only) leaves every capital, rejection, bound and ``contradicted_at`` of
    :meth:`update` round by round, bit for bit; fails before (no ``_replay``)."""
    from latentbench.select._estimate_cs import WeightedBettingCS

    rounds = _cs_rounds(
        7,
        0 if kind == "no round" else 150,
        zero_variance=kind == "zero variances",
        closed=kind == "closed bounds",
        biased=kind == "contradicted",
    )
    a, b = WeightedBettingCS(0.05, target=target), WeightedBettingCS(0.05, target=target)
    for row in rounds:
        a.update(*row)
    b._replay(rounds)
    if kind == "contradicted":
        assert a.contradicted_at is not None and a.contradicted_at < len(rounds) - 1
    for name in ("_log_up", "_log_down", "_rejected"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    same = ("lower", "upper", "contradicted_at", "count", "variance_ratio", "_det", "_effective")
    assert [getattr(a, n) for n in same] == [getattr(b, n) for n in same]


@pytest.mark.parametrize("target", [None, 0.03])
def test_a_round_updates_both_sides_as_one_side_at_a_time(target):
    """Each round of ``WeightedBettingCS`` computes the upward and downward capitals as one
    (rows, 2, candidates) array (fewer array calls per round for ``tiny --precision``'s
    replays): every capital and rejection is the one side at a time arithmetic's (as before,
    recomputed here from the sequence's state each round) bit for bit, with zero variances,
    closed bounds and a contradiction."""
    from latentbench.select._estimate_cs import WeightedBettingCS

    for kind in ("zero variances", "closed bounds", "contradicted"):
        cs = WeightedBettingCS(0.05, target=target)
        rounds = _cs_rounds(
            11,
            120,
            zero_variance=kind == "zero variances",
            closed=kind == "closed bounds",
            biased=kind == "contradicted",
        )
        for z, lo, hi, variance, center, bounds in rounds:
            up, down, rejected = cs._log_up.copy(), cs._log_down.copy(), cs._rejected.copy()
            v = max(variance, 1e-12)
            v_ref = v if cs.count == 0 else cs._v_ref
            effective = cs._effective + v_ref / v
            rho, h = cs.variance_ratio, cs._horizons.size
            bets = np.sqrt(2.0 * cs._bet_log[:h] / (rho * np.maximum(effective, cs._horizons))) * (
                np.sqrt(v_ref) / v
            )
            if target is not None:
                now = np.sqrt(2.0 * cs._bet_log[h] / (rho * effective)) * (np.sqrt(v_ref) / v)
                bets = np.r_[bets, min(target / (rho * v), now)]
            alive = np.flatnonzero(~rejected)
            if alive.size:
                sl = slice(alive[0], alive[-1] + 1)
                m, bet = cs._grid[sl], bets[:, None]
                with np.errstate(divide="ignore"):
                    cap_up = np.where(m > lo, cs._c / np.maximum(m - lo, 1e-300), np.inf)
                    cap_down = np.where(m < hi, cs._c / np.maximum(hi - m, 1e-300), np.inf)
                up[:, sl] += np.log1p(np.maximum(np.minimum(bet, cap_up) * (z - m), -0.999))
                down[:, sl] += np.log1p(np.maximum(-np.minimum(bet, cap_down) * (z - m), -0.999))
                w = cs._log_weight[:, None]
                top = [(a[:, sl] + w).max(axis=0) for a in (up, down)]
                mix = [
                    t + np.log(np.exp(a[:, sl] + w - t).sum(axis=0))
                    for a, t in zip((up, down), top, strict=True)
                ]
                capital = np.logaddexp(np.log(cs.theta) + mix[0], np.log1p(-cs.theta) + mix[1])
                rejected[sl] |= (m < lo - 1e-9) | (m > hi + 1e-9) | (capital >= cs._threshold)
            cs.update(z, lo, hi, variance, center, bounds)
            assert np.array_equal(cs._log_up, up) and np.array_equal(cs._log_down, down)
            assert np.array_equal(cs._rejected, rejected)
        assert (cs.contradicted_at is not None) == (kind == "contradicted")
