"""Weighted-score leftovers: integer group codes, equal weights, fitted scores by blocks, the
few-models count, and the values a calibration's kept responses may hold."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from latentbench.exceptions import InputError

from .conftest import bare_calibration


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        (np.int8(2), "2"),
        (np.int8(-5), "-5"),
        (np.float32(1.5), "1.5"),
        (np.float32(np.inf), "inf"),
        (np.float32(-0.25), "-0.25"),
    ],
)
def test_kept_responses_outside_their_values_are_refused(bad, shown):
    """An int8 array with 2 or -5, a float32 with 1.5 or inf was kept as is (a weighted score
    of 2 ranked against); now refused naming the value, the cell and what is expected."""
    dtype = np.asarray(bad).dtype
    Y = np.zeros((4, 3), dtype=dtype)
    Y[0, 0] = -1 if dtype == np.int8 else np.nan
    Y[2, 1] = bad
    with pytest.raises(InputError, match="responses") as info:
        bare_calibration(responses=Y)
    said = str(info.value)
    assert shown in said and "'m2'" in said and "'q1'" in said
    assert ("-1 (not observed), 0 or 1" if dtype == np.int8 else "NaN (not observed)") in said


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
@pytest.mark.parametrize("rest", [0.0, 0.25])  # kept as int8 (binary), or float32
def test_given_float64_responses_refuse_an_infinite_score(bad, rest):
    """Float64 responses (as a user passes them) were kept compactly with every non-finite
    cell as not observed: an inf or -inf score was silently a missing cell. Now refused as
    the readers refuse it, naming the field, the model, the item, the value and what is
    expected; NaN stays not observed."""
    Y = np.full((4, 3), rest)
    Y[0, 0] = np.nan
    Y[1, 2] = bad
    Y[3, 0] = bad
    with pytest.raises(InputError) as info:
        bare_calibration(responses=Y)
    said = str(info.value)
    assert said.startswith(f"calibration: field 'responses' holds {bad!r} (model 'm1', item "
                           "'q2'; 2 such cell(s)); expected a score in [0, 1] or NaN (not "
                           "observed)"), said  # fmt: skip
    Y[1, 2] = Y[3, 0] = np.nan
    kept = bare_calibration(responses=Y).responses
    assert kept.dtype == (np.int8 if rest == 0.0 else np.float32)
    assert (kept[0, 0] == -1) if rest == 0.0 else np.isnan(kept[0, 0])


def test_given_responses_of_objects_are_read_as_scores_and_a_bad_cell_is_named():
    """An object array (a list holding None, a frame of object columns) raised numpy's
    TypeError ('ufunc isfinite not supported'), valid scores or not. Now None and NaN are
    not observed, numbers are scores, and an infinite score or a text is refused naming the
    field, the model, the item and the value; a wrong shape is said before any cell."""
    Y = np.array([[0.0, 1.0, None], [1, 0, 0], [0, np.nan, 1], [1, 1, 0]], dtype=object)
    kept = bare_calibration(responses=Y).responses
    assert kept.dtype == np.int8 and kept.tolist()[0] == [0, 1, -1] and kept[2, 1] == -1
    Y[1, 1] = 0.25
    kept = bare_calibration(responses=Y).responses
    assert kept.dtype == np.float32 and kept[1, 1] == np.float32(0.25) and np.isnan(kept[0, 2])
    for bad, shown in ((-np.inf, "-inf"), ("high", "'high'"), (2, "2.0")):
        Y[3, 2] = bad
        with pytest.raises(InputError) as info:
            bare_calibration(responses=Y)
        said = str(info.value)
        assert said.startswith(f"calibration: field 'responses' holds {shown} (model 'm3', "
                               "item 'q2'; 1 such cell(s)); expected "), said  # fmt: skip
    with pytest.raises(InputError, match=r"responses of shape \(3,\); expected \(4, 3\)"):
        bare_calibration(responses=np.array([0.0, np.inf, 1.0]))


def test_kept_responses_within_their_values_are_kept():
    Y8 = np.array([[-1, 0, 1]] * 4, dtype=np.int8)
    assert bare_calibration(responses=Y8).responses.dtype == np.int8
    Y32 = np.array([[np.nan, 0.0, 0.25]] * 4, dtype=np.float32)
    assert bare_calibration(responses=Y32).responses.dtype == np.float32
    cal = bare_calibration(responses=np.full((4, 3), np.nan, dtype=np.float32))
    assert np.isnan(cal.responses).all()
    assert dataclasses.replace(cal, responses=None).responses is None


def test_fitted_weighted_scores_are_computed_by_blocks_of_rows():
    """A fit directory's weighted scores built the models x items float64 probabilities (and
    their temporaries) at once: 4 x 300 x 20,000 x 8 bytes; now by blocks, the same scores."""
    import tracemalloc

    from latentbench.select._estimate_calibration import _fitted
    from latentbench.select._estimate_weights import weighted_model_scores

    K, n = 300, 20_000
    cal = bare_calibration(K, n)
    w = np.random.default_rng(1).random(n)
    w /= w.sum()
    full = K * n * 8
    tracemalloc.start()
    try:
        scores, observed = weighted_model_scores(cal, w)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not observed
    expected = _fitted(cal.model_factors, cal.V, cal.b, cal.sigma) @ w
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    assert peak < full / 2, f"peak {peak / 1e6:.0f} MB; the full array is {full / 1e6:.0f} MB"


def few_with_a_weighted_score():
    """Nine calibration models, three of them with no answer on the items of positive weight
    (a plain score, a NaN weighted score), and a new model's answers."""
    import pandas as pd

    from latentbench.io import ResponseMatrix
    from latentbench.select._estimate_calibration import from_matrix

    rng = np.random.default_rng(5)
    K, n = 10, 60
    theta = np.linspace(-1.5, 1.5, K)
    Y = (rng.random((K, n)) < 1 / (1 + np.exp(-(theta[:, None] + rng.normal(size=n))))).astype(
        float
    )
    Y[:3, :20] = np.nan
    items = [f"q{j:02d}" for j in range(n)]
    frame = pd.DataFrame(Y[:9], index=[f"m{k}" for k in range(9)], columns=items)
    cal = from_matrix(ResponseMatrix.from_wide(frame), rank=1)
    weights = pd.Series(np.r_[np.ones(20), np.zeros(n - 20)], index=items)
    return cal, Y[9], weights


def test_the_few_models_note_counts_the_models_ranked_by_the_weighted_score():
    """The note counted the models with a plain score (9, no note) although three have no
    weighted score and are not ranked: theta rests on 6, and the note says so."""
    import warnings

    from latentbench.select import estimate

    cal, y, weights = few_with_a_weighted_score()
    assert int(np.isfinite(cal.model_scores).sum()) == 9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = estimate(cal, y, model="new", budget=10)
        r = estimate(cal, y, model="new", budget=10, weights=weights)
    assert not any("reporting scale" in w for w in plain.warnings)
    assert r.n_ranked == 7
    said = [w for w in r.warnings if "reporting scale" in w]
    assert said and "of 6 calibration model(s) with a weighted score" in said[0]


def test_equal_weights_are_called_the_score_and_target_the_mean(tmp_path, monkeypatch):
    """All-equal weights give the plain estimate bit for bit, but the summary said ``weighted
    score``, the legend ``weighted full-benchmark score``, estimates.csv and tiny's design
    ``target`` ``weighted`` (or ``macro over 2 groups``) and the report left the calibration
    models out as another quantity. Now ``score``, ``mean`` (tiny: the plain design, no
    ``target`` column) and the plain report, as without
    weights; a weighted score still says so."""
    import json

    import pandas as pd
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.report import build_estimate_report

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _register()
    cal, y, _ = few_with_a_weighted_score()
    items = list(cal.item_ids)
    cells = np.asarray(cal.responses, dtype=np.float64)
    frame = pd.DataFrame(np.where(cells < 0, np.nan, cells), index=list(cal.model_ids),
                         columns=items)  # fmt: skip
    frame.rename_axis("model").reset_index().melt("model", var_name="item", value_name="score")\
        .dropna().to_csv("cal.csv", index=False)  # fmt: skip
    pd.DataFrame({"item": items, "score": y}).to_csv("new.csv", index=False)
    pd.DataFrame({"item": items, "weight": 2.5}).to_csv("equal.csv", index=False)
    pd.DataFrame({"item": items, "group": np.repeat(["a", "b"], 30)}).to_csv(
        "halves.csv", index=False
    )
    pd.DataFrame({"item": items, "weight": np.arange(60) + 1.0}).to_csv("w.csv", index=False)
    runner = CliRunner()
    for weights, label, target in (
        ("equal.csv", "score", "mean"),
        ("halves.csv", "score", "mean"),
        ("w.csv", "weighted score", "weighted"),
    ):
        out_dir = f"est_{weights}"
        out = runner.invoke(app, ["estimate", "cal.csv", "new.csv", "--weights", weights,
                                  "--budget", "10", "--out", out_dir])  # fmt: skip
        assert out.exit_code == 0, out.output
        assert out.output.startswith(f"{label} 0."), out.output
        weighted = target != "mean"
        assert ("weighted full-benchmark score" in out.output) == weighted, out.output
        table = pd.read_csv(Path(out_dir) / "estimates.csv")
        assert table["target"].tolist() == [target]
        saved = json.loads((Path(out_dir) / "estimate.json").read_text())
        assert saved["options"]["weights"]["equal"] is not weighted
        text = build_estimate_report(out_dir)
        assert ("weighted score" in text) == weighted
        assert ("the calibration models are not drawn" in text.lower()) == weighted
        design = runner.invoke(app, ["tiny", "cal.csv", "--k", "5", "--weights", weights,
                                     "--out", f"d_{weights}"])  # fmt: skip
        assert design.exit_code == 0, design.output
        written = pd.read_csv(f"d_{weights}")
        if weighted:
            assert set(written["target"]) == {target}
        else:  # equal weights: the plain design, written as without them (no target column)
            assert "target" not in written.columns and "weights_hash" not in written.columns


def test_integer_codes_with_0_are_read_as_weights_and_said_so():
    """A Series of integer group codes 0, 1, 2 was read as weights without a word: group 0
    weighed 0 and its items left the target. Read as weights still (as documented: numbers
    are weights), but warned in one line saying how to pass groups, and recorded; text codes
    give the macro score, floats and bools no warning."""
    import warnings

    import pandas as pd

    from latentbench.exceptions import DataWarning
    from latentbench.select import estimate
    from latentbench.select._estimate_weights import read_weights

    cal, y, _ = few_with_a_weighted_score()
    codes = pd.Series(np.arange(60) % 3, index=list(cal.item_ids))
    with pytest.warns(DataWarning, match=r"integer values with 0 are read as weights") as said:
        checked = read_weights(cal, codes)
    assert len([w for w in said if "integer values" in str(w.message)]) == 1
    assert "20 item(s) of weight 0" in checked.note and "'group' column" in checked.note
    assert checked.n_positive == 40 and checked.record()["note"] == checked.note
    with pytest.warns(DataWarning, match="integer values"):
        r = estimate(cal, y, model="new", budget=10, weights=dict(codes))
    assert sum("integer values" in w for w in r.warnings) == 1
    assert r.options["weights"]["note"] == checked.note.replace("Series", "mapping")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        for quiet in (codes.astype(float), codes > 0, codes + 1):
            assert read_weights(cal, quiet).note is None
        groups = read_weights(cal, codes.astype(str))
    assert groups.kind == "groups" and groups.n_groups == 3 and groups.note is None
    assert "note" not in groups.record()


@pytest.mark.parametrize(
    ("Y", "shown", "given"),
    [
        (np.array([[0.0, 0.5, 2.0]] * 4), "2.0", "float64"),
        (np.array([[0.0, 0.5, 1.1]] * 4), "1.1", "float64"),
        (np.array([[0, 1, 3]] * 4, dtype=np.int64), "3", "int64"),
        (np.array([[0, 1, 2]] * 4, dtype=np.int8), "2", "int8"),
        (np.array([[0.0, 0.5, 1.5]] * 4, dtype=np.float32), "1.5", "float32"),
    ],
)
def test_an_out_of_range_score_is_said_as_given(Y, shown, given):
    """A float64 score of 2.0 (or an int64 3) was refused as '... in a float32 array': the
    dtype it is kept as, not the one the user gave, and 1.1 was shown as float32's
    1.100000023841858. Now the value and the dtype are the user's; what is refused is
    unchanged."""
    with pytest.raises(InputError) as info:
        bare_calibration(responses=Y)
    said = str(info.value)
    values = "-1 (not observed), 0 or 1" if given == "int8" else (
        "NaN (not observed) or a number in [0, 1]")  # fmt: skip
    assert said == (
        f"calibration: field 'responses' holds {shown} (model 'm0', item 'q2'; 4 such "
        f"cell(s)); expected {values} in the {given} array given"
    ), said
