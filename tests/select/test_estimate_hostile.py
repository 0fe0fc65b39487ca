"""The new-model estimate's hostile walk (h184): the sequential engine driven by hand, the
calibration's scores at the bounds, ... each test reproduces one finding."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.cli._common import cli_spelling
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.select._estimate_calibration import from_matrix
from latentbench.select._estimate_design import SequentialEstimate

from .conftest import bare_calibration


def _matrix(n_models: int = 8, n_items: int = 40, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta, b = np.linspace(-1.0, 1.0, n_models), rng.normal(size=n_items)
    Y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    return pd.DataFrame(
        Y, index=[f"m{i}" for i in range(n_models)], columns=[f"q{j:03d}" for j in range(n_items)]
    )


@pytest.fixture(scope="module")
def cal():
    return from_matrix(ResponseMatrix.from_wide(_matrix()), rank=1)


# -- 1. SequentialEstimate.observe driven by hand ----------------------------------------------
def test_observing_an_item_twice_is_refused_naming_it(cal):
    """A second observe() of the same item was accepted: its answer counted twice in the
    revealed sum and the interval's certain bounds (the lower bound rose from 1/n to 2/n
    after two answers 1 to one item), and a third drew with probability 0 (z = inf, a
    RuntimeWarning). Now refused naming the item; the state is left as it was."""
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
    j, pi = seq.choose(np.random.default_rng(0))
    seq.observe(j, 1.0, pi)
    before = (seq.score, seq.interval, list(seq.order), seq.revealed_sum)
    item = cal.item_ids[j]
    with pytest.raises(InputError, match=f"item '{item}' \\(index {j}\\) was already observed"):
        seq.observe(j, 1.0, pi)
    with pytest.raises(InputError, match=f"item '{item}' \\(index {j}\\) was already observed"):
        seq.observe(j, 0.0, seq.probabilities())
    assert (seq.score, seq.interval, list(seq.order), seq.revealed_sum) == before


def test_observing_an_index_outside_the_population_or_without_probability_is_refused(cal):
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
    pi = seq.probabilities()
    for j in (-1, cal.n_items):
        with pytest.raises(InputError, match=f"item index j={j}; expected an index"):
            seq.observe(j, 1.0, pi)
    zero = pi.copy()
    zero[3] = 0.0
    with pytest.raises(InputError, match=r"item 'q003' \(index 3\) has probability 0\.0 in pi"):
        seq.observe(3, 1.0, zero)
    assert not seq.order and seq.unrevealed.all()


def test_a_population_of_unknown_or_repeated_positions_is_refused(cal):
    """A population holding -1 (what Calibration.positions gives for an unknown item id)
    was accepted and estimated the last item in its place; one listing an item twice made
    its answer weigh double in the target; a position past the calibration was a raw
    IndexError. Now each is refused naming the position or the item."""
    n = cal.n_items
    for pop, said in (
        ([0, -1], rf"position -1 \(entry 1\) is not one of the calibration's {n} items"),
        ([0, n], rf"position {n} \(entry 1\) is not one of the calibration's {n} items"),
        ([0, 5, 5], r"item 'q005' \(position 5\) is listed 2 times; expected each item once"),
    ):
        with pytest.raises(InputError, match=said):
            SequentialEstimate(cal, np.array(pop), delta=0.05)
    unknown = cal.positions(["q001", "no-such-item"])
    with pytest.raises(InputError, match=r"Calibration\.positions gives -1"):
        SequentialEstimate(cal, unknown, delta=0.05)


def test_drawing_after_every_item_is_revealed_is_refused(cal):
    """choose() on an exhausted run was a raw IndexError (index -4 out of bounds)."""
    seq = SequentialEstimate(cal, np.array([0, 1, 2]), delta=0.05)
    rng = np.random.default_rng(0)
    for _ in range(3):
        j, pi = seq.choose(rng)
        seq.observe(j, 1.0, pi)
    assert seq.exhausted and seq.interval == (1.0, 1.0)
    with pytest.raises(InputError, match=r"every item of the population \(3\) is revealed"):
        seq.choose(rng)


# -- 2. a calibration's responses at the bounds --------------------------------------------------
def _bare(Y: np.ndarray) -> object:
    """A calibration of ``Y``'s shape, random parameters, holding ``Y`` as its responses."""
    K, n = Y.shape
    return bare_calibration(K, n, responses=Y)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("value", "bound"), [(1 + 1e-12, 1), (-1e-12, 0), (1 + 1e-9, 1)])
def test_a_rounding_past_a_bound_in_given_responses_is_that_bound(value, bound, dtype):
    """Given responses were checked after float32 storage: 1 + 1e-12 was kept as float32's
    1.0 (and made a 0/1 matrix float32, not int8) while -1e-12 was refused. Now read as every
    reader of scores reads them (docs/formats.md): a rounding past 0 or 1 within 1e-9 is
    that bound, so a 0/1 matrix with one is still kept as 0/1."""
    Y = np.array([[0.0, 1.0, 0.0]] * 4, dtype=dtype)
    Y[1, 2] = value
    Y[2, 0] = np.nan
    kept = _bare(Y).responses
    assert kept.dtype == (np.int8 if dtype == np.float64 else np.float32)
    assert kept[1, 2] == bound and kept[0, 1] == 1 and (kept[2, 0] == -1 or np.isnan(kept[2, 0]))


@pytest.mark.parametrize("value", [1 + 2e-9, 1 + 5e-8, -2e-9])
def test_a_float64_score_past_the_rounding_is_refused_before_float32_rounds_it(value):
    """1 + 2e-9 and 1 + 5e-8 were accepted as float32's 1.0 (the readers refuse them: no
    rounding puts a score that far past 1). Now refused naming the value as given, the cell
    and what was expected."""
    Y = np.array([[0.0, 0.5, 1.0]] * 4)
    Y[3, 1] = value
    with pytest.raises(InputError) as info:
        _bare(Y)
    assert str(info.value) == (
        f"calibration: field 'responses' holds {value!r} (model 'm3', item 'q1'; 1 such "
        "cell(s)); expected NaN (not observed) or a number in [0, 1] in the float64 array given"
    )


# -- 3. a new model whose answers are a calibration model's ---------------------------------------
def _twin_notes(result: object) -> list[str]:
    return [w for w in result.warnings if "gave the same answers as calibration model" in w]


@pytest.mark.parametrize("fractional", [False, True])
def test_answers_that_are_a_calibration_models_are_said(fractional):
    """A calibration model's results given again under another name were estimated and
    ranked against their own copy without a word (its score is known: it is in the
    calibration). Now one note names the calibration model and the way to leave the copy out
    of the rank; none for the model's own name (the rank's namesake rule says it), for one
    answer changed, or for the same answers on fewer items."""
    from latentbench.select import estimate

    frame = _matrix(n_items=80)  # past the first 64 items, which are compared first
    if fractional:  # kept as float32: the answers compared as float32 stores them
        frame.iloc[:, ::3] *= 0.5
    cal = from_matrix(ResponseMatrix.from_wide(frame), rank=1)
    row = frame.loc["m5"]
    with pytest.warns(UserWarning):
        result = estimate(cal, row.rename("copy"), budget=5)
    (note,) = _twin_notes(result)
    assert note.startswith(
        "model 'copy' gave the same answers as calibration model 'm5' on every item (80 "
        "answered; the same results under another name?)"
    ), note
    # the keyword in Python, the flag on the command line (it said "(--label m5; label=)")
    assert note.endswith("give it that name (label='m5') to leave the copy out of the rank")
    assert cli_spelling(note).endswith("give it that name (--label m5) to leave the copy out "
                                       "of the rank")  # fmt: skip
    with pytest.warns(UserWarning):
        assert not _twin_notes(estimate(cal, row.rename("m5"), budget=5))
    changed = row.copy()
    changed.iloc[70] = 1.0 - changed.iloc[70]
    fewer = row.copy()
    fewer.iloc[[3, 75]] = np.nan
    for other in (changed, fewer, fewer.iloc[:-10]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not _twin_notes(estimate(cal, other.rename("copy"), budget=5))


# -- 4. an edited estimate.json read back --------------------------------------------------------
@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"score": 1.5}, "field 'score' holds 1.5; expected a score in [0, 1]"),
        ({"lower": -0.2}, "field 'lower' holds -0.2; expected a score in [0, 1]"),
        ({"lower": 0.9, "upper": 0.1}, "fields 'lower' and 'upper' hold 0.9 > 0.1"),
        ({"level": 2}, "field 'level' holds 2; expected 1 - delta in (0, 1]"),
    ],
)
def test_an_edited_record_with_no_score_or_a_reversed_interval_is_refused(
    cal, tmp_path, edit, said
):
    """EstimateSet.read took an estimate.json edited to a score of 1.5, an interval from
    0.9 to 0.1 or a level of 2 as it was (the report drew them so); only their types were
    checked. Now refused naming the file, the field, the value and what was expected; the
    record as written reads back."""
    import json

    from latentbench.select import EstimateSet, estimate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimate(cal, _matrix(seed=9).iloc[0].rename("new"), budget=5).save(tmp_path)
    file = tmp_path / "estimate.json"
    assert EstimateSet.read(tmp_path)["new"].n_evaluated == 5
    record = json.loads(file.read_text())
    file.write_text(json.dumps({**record, **edit}))
    with pytest.raises(InputError) as info:
        EstimateSet.read(tmp_path)
    assert str(info.value).startswith(f"{file}: {said}"), str(info.value)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"difference": 1.5}, "field 'difference' holds 1.5; expected a difference of scores"),
        ({"lower": 0.4, "upper": -0.4}, "fields 'lower' and 'upper' hold 0.4 > -0.4"),
        ({"level": 0}, "field 'level' holds 0; expected 1 - delta in (0, 1]"),
    ],
)
def test_an_edited_comparison_with_a_reversed_interval_is_refused(cal, tmp_path, edit, said):
    """CompareResult.read took a compare.json edited to a difference of 1.5, a reversed
    interval or a level of 0 as it was. Now refused naming the field and the value."""
    import json

    from latentbench.select import CompareResult, compare

    rows = _matrix(seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compare(cal, rows.iloc[0].rename("a"), rows.iloc[1].rename("b"), budget=5)
    result.save(tmp_path)
    file = tmp_path / "compare.json"
    assert CompareResult.read(tmp_path).n_evaluated == 5
    file.write_text(json.dumps({**json.loads(file.read_text()), **edit}))
    with pytest.raises(InputError, match=re.escape(said)):
        CompareResult.read(tmp_path)


# -- 5. the legend's delta ------------------------------------------------------------------------
def test_the_legend_says_the_delta_given_and_its_level_below_100_percent(cal):
    """The legend recomputed --delta as 1 - level: a delta of 1e-300 (level 1.0 in floats)
    was printed '--delta 0', a value the command refuses. Now the delta given; the smallest
    delta taken (1e-16) has a level below 1, printed below 100%."""
    from latentbench.cli._estimate import interval_legend
    from latentbench.select import estimate

    answers = _matrix(seed=9).iloc[0].rename("new")
    for delta, shown, level in (
        (1e-16, "1e-16", "99.99999999999999%"),
        (0.05, "0.05", "95%"),
        (0.1, "0.1", "90%"),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = estimate(cal, answers, budget=5, delta=delta)
        assert result.level < 1
        legend = interval_legend([result])
        assert f"the {level} interval" in legend and f"(--delta {shown});" in legend


@pytest.mark.parametrize("delta", [1e-300, 5e-17, 1e-20])
def test_a_delta_whose_level_rounds_to_one_is_refused_by_estimate_and_compare(cal, delta):
    """A delta under ~5.6e-17 has the level 1 - delta = 1.0 in floats: estimate.json and
    compare.json recorded level 1.0 and the legends said '100% interval' (a certainty no
    sample of items gives). estimate, compare and tiny (its precision's delta) now refuse it,
    naming the smallest delta taken; the command line says it with --delta."""
    from latentbench.select import compare, estimate, tiny

    answers = _matrix(seed=9).iloc[0].rename("new")
    said = f"delta={delta!r}; expected a value in [1e-16, 1): below it the level 1 - delta "
    for call in (
        lambda: estimate(cal, answers, budget=5, delta=delta),
        lambda: estimate(cal, answers, items=tiny(cal, 5), delta=delta),
        lambda: compare(cal, answers, answers.rename("other"), budget=5, delta=delta),
        lambda: tiny(cal, precision=0.2, delta=delta),
    ):
        with pytest.raises(InputError) as info:
            call()
        assert str(info.value).startswith(said), str(info.value)
        assert cli_spelling(str(info.value)).startswith(f"--delta {delta!r}; expected a value")


def test_compare_says_when_model_a_or_b_is_a_calibration_models_copy():
    """compare said nothing when A or B was a calibration model's results under another name
    (estimate says it): one note each now, in estimate's words; none for a namesake or a
    changed answer."""
    from latentbench.select import compare

    frame = _matrix(n_items=80)
    cal = from_matrix(ResponseMatrix.from_wide(frame), rank=1)
    copy_a, copy_b = frame.loc["m5"].rename("copy-a"), frame.loc["m2"].rename("copy-b")
    with pytest.warns(UserWarning):
        result = compare(cal, copy_a, copy_b, budget=5)
    assert _twin_notes(result) == [
        f"model {name!r} gave the same answers as calibration model {twin!r} on every item (80 "
        "answered; the same results under another name?): its score is then known without an "
        "estimate, and it is compared as a new model"
        for name, twin in (("copy-a", "m5"), ("copy-b", "m2"))
    ]
    changed = copy_b.copy()
    changed.iloc[70] = 1.0 - changed.iloc[70]
    with warnings.catch_warnings(record=True) as said:  # the namesake m5: not a copy
        warnings.simplefilter("always")
        result = compare(cal, frame.loc["m5"], changed, budget=5)
    assert not _twin_notes(result) and not said
