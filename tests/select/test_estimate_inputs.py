"""Hostile inputs to ``estimate`` / ``compare`` / ``tiny``: a clear error that names the file,
the field and the value, or a warning that names the model; never a silent loss."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import estimate, read_responses, tiny
from latentbench.select._estimate_calibration import from_matrix


@pytest.fixture(scope="module")
def cal():
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=12), rng.normal(size=40)
    Y = (rng.random((12, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(12)], columns=[str(j) for j in range(40)])
    return from_matrix(ResponseMatrix.from_wide(frame), rank=1)


def _long(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"item": [str(j) for j in range(n)], "score": np.tile([1.0, 0.0], n // 2)})


# ------------------------------------------------------------------ read_responses
def test_wide_text_cell_is_an_error_naming_file_model_column_value(tmp_path):
    wide = _long().set_index("item").T.assign(model="new")
    wide = wide[["model", *map(str, range(40))]].astype(object)
    wide.iloc[0, 4] = "yes"  # item column '3'
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        read_responses(path)
    text = str(err.value)
    assert "wide.csv" in text and "'new'" in text and "'3'" in text and "'yes'" in text


def test_wide_repeated_model_is_an_error_naming_it(tmp_path):
    wide = _long().set_index("item").T.assign(model="new")
    path = tmp_path / "wide.csv"
    pd.concat([wide, wide]).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"wide\.csv: model 'new' is on line 2 and line 3"):
        read_responses(path)


def test_wide_score_outside_unit_interval_is_an_error(tmp_path):
    wide = _long().set_index("item").T.assign(model="new")
    wide["5"] = 7.0
    path = tmp_path / "wide.parquet"
    wide.to_parquet(path, index=False)
    with pytest.raises(InputError, match=r"wide\.parquet: model 'new'.*'5': value 7\.0 is outside"):
        read_responses(path)


def test_missing_item_id_is_an_error_not_an_item_named_none(tmp_path):
    frame = _long().astype({"item": object})
    frame.loc[3, "item"] = None
    path = tmp_path / "new.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(InputError, match=r"new\.parquet: column 'item', row 4: item id is missing"):
        read_responses(path)


def test_float_item_ids_are_refused_as_by_the_matrix_reader(tmp_path):
    frame = _long().assign(item=np.arange(40, dtype=float))  # 7.0 would never match 7
    path = tmp_path / "new.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(InputError, match=r"item id 0\.0 has type float"):
        read_responses(path)


def test_score_outside_unit_interval_names_file_line_and_plain_value(tmp_path):
    frame = _long()
    frame.loc[2, "score"] = 100.0
    path = tmp_path / "new.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        read_responses(path)
    text = str(err.value)
    assert "new.csv" in text and "line 4" in text and "100.0" in text
    assert "np.float64" not in text


@pytest.mark.parametrize("layout", ["long", "wide"])
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_an_infinite_score_is_refused_not_read_as_unanswered(tmp_path, layout, value):
    # inf was read as a missing answer (a fixed design then said the item was not answered)
    frame = _long()
    frame.loc[2, "score"] = value
    if layout == "wide":
        frame = frame.set_index("item").T.assign(model="new")
    path = tmp_path / "new.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=rf"new\.csv: .*'2'.*'?{value!r}'? is outside \[0, 1\]"):
        read_responses(path)


@pytest.mark.parametrize("kind", ["series", "vector"])
def test_an_infinite_answer_in_memory_is_refused_not_read_as_unanswered(cal, kind):
    y = np.r_[0.0, 1.0, np.inf, np.zeros(37)]
    answers = pd.Series(y, index=[str(j) for j in range(40)]) if kind == "series" else y
    with pytest.raises(InputError, match=r"item '2': score inf is outside \[0, 1\]"):
        estimate(cal, answers, model="new", budget=5, cache=False)


def test_true_false_and_missing_markers_read_as_the_matrix_reader_does(tmp_path):
    path = tmp_path / "new.csv"
    path.write_text("item,score\n0,true\n1,False\n2,NA\n3,\n4,0.5\n")
    got = read_responses(path)["new"]
    assert got.index.tolist() == ["0", "1", "2", "3", "4"]
    np.testing.assert_array_equal(got.to_numpy(), [1.0, 0.0, np.nan, np.nan, 0.5])


def test_an_empty_file_is_an_error_not_a_run_with_no_model(tmp_path):
    path = tmp_path / "new.csv"
    path.write_text("model,item,score\n")
    with pytest.raises(InputError, match=r"new\.csv: the table has no rows"):
        read_responses(path)


def test_a_long_table_without_a_score_column_says_so(tmp_path):
    path = tmp_path / "new.csv"
    _long().rename(columns={"score": "acc"}).to_csv(path, index=False)
    with pytest.raises(
        InputError, match=r"new\.csv: column 'item' \(a long table\) but no score.*'acc'"
    ):
        read_responses(path)
    _long().rename(columns={"score": "acc"}).assign(model="m").to_csv(path, index=False)
    with pytest.raises(
        InputError, match=r"new\.csv: column 'item' \(a long table\) but no score.*'acc'"
    ):
        read_responses(path)


# ------------------------------------------------------------------ estimate's answers
def test_no_common_item_id_says_which_ids_differ(cal):
    answers = pd.Series(1.0, index=[f"q{j}" for j in range(40)])
    with pytest.raises(InputError) as err:
        estimate(cal, answers, model="new", budget=5, cache=False)
    text = str(err.value)
    assert "'q0'" in text and "'0'" in text and "'new'" in text


def test_unknown_items_warning_names_the_model_and_an_example(cal):
    answers = pd.Series(1.0, index=[*map(str, range(40)), "extra-1"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimate(cal, answers, model="new", budget=5, cache=False)
    notes = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert any("'new'" in n and "'extra-1'" in n for n in notes), notes


def test_out_of_range_answer_shows_a_plain_number(cal):
    answers = pd.Series(np.r_[2.0, np.zeros(39)], index=[str(j) for j in range(40)])
    with pytest.raises(InputError) as err:
        estimate(cal, answers, model="new", budget=5, cache=False)
    assert "score 2.0 is outside" in str(err.value)
    assert "np.float64" not in str(err.value)


def test_precision_not_reached_at_the_budget_is_said(cal):
    answers = pd.Series(np.tile([1.0, 0.0], 20), index=[str(j) for j in range(40)])
    with pytest.warns(DataWarning, match=r"'new': precision 0.001 not reached: half-width"):
        result = estimate(cal, answers, model="new", budget=5, precision=0.001, cache=False)
    assert result.stopped == "budget"
    assert any("precision 0.001 not reached" in w for w in result.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # reached (every item revealed): silent
        done = estimate(cal, answers, model="new", budget=None, precision=0.001, cache=False)
    assert done.half_width <= 0.001


@pytest.mark.parametrize("precision", [0.5, 2.0, 0.0, -0.1, float("nan"), float("inf")])
def test_a_precision_outside_the_scores_half_range_is_refused(cal, precision):
    # 2.0 was taken: "score 1.000 [0.001, 1.000] after 1 of 40 items; would rank 1st"
    answers = pd.Series(np.tile([1.0, 0.0], 20), index=[str(j) for j in range(40)])
    with pytest.raises(InputError, match=r"expected a half-width in \(0, 0\.5\)"):
        estimate(cal, answers, model="new", precision=precision, cache=False)


def test_a_calibration_of_few_models_says_theta_rests_on_their_scale(cal):
    from latentbench.irt.inference import FEW_MODELS

    rng = np.random.default_rng(1)
    Y = (rng.random((FEW_MODELS - 3, 40)) < 0.6).astype(float)
    ids = [f"m{i}" for i in range(FEW_MODELS - 3)]
    frame = pd.DataFrame(Y, index=ids, columns=[str(j) for j in range(40)])
    small = from_matrix(ResponseMatrix.from_wide(frame), rank=1)
    answers = pd.Series(np.tile([1.0, 0.0], 20), index=[str(j) for j in range(40)])
    with pytest.warns(DataWarning, match=rf"reporting scale of {FEW_MODELS - 3} calibration"):
        result = estimate(small, answers, model="new", budget=5, cache=False)
    assert any("read theta's interval as approximate" in w for w in result.warnings)
    # the 12-model calibration is silent about it
    assert not any(
        "reporting scale" in w
        for w in estimate(cal, answers, model="new", budget=5, cache=False).warnings
    )


def test_a_fixed_design_refuses_a_precision_it_cannot_stop_at(cal, tmp_path):
    design = tiny(cal, 10, cache=False)
    answers = pd.Series(np.tile([1.0, 0.0], 20), index=[str(j) for j in range(40)])
    with pytest.raises(InputError, match=r"precision=0\.01 with a fixed design"):
        estimate(cal, answers, model="new", items=design, precision=0.01, cache=False)


def test_a_design_item_without_answer_names_the_item_and_the_design_file(cal, tmp_path):
    path = tmp_path / "items.csv"
    design = tiny(cal, 10, cache=False)
    design.to_csv(path, index=False)
    missing = str(design["item"].iloc[3])
    answers = pd.Series(1.0, index=[str(j) for j in range(40) if str(j) != missing])
    with pytest.raises(InputError) as err:
        estimate(cal, answers, model="new", items=path, cache=False)
    text = str(err.value)
    assert f"did not answer 1 of the 10 items of {path}: {missing!r} (order 4)" in text
    assert "'new'" in text


def test_a_model_column_under_another_name_is_named(tmp_path):
    """Two models under 'Model': refused, naming the column (it read as one model with each
    item twice); one model under 'model_name': read, with a warning naming the column."""
    two = pd.concat([_long().assign(Model="a"), _long().assign(Model="b")])
    path = tmp_path / "two.csv"
    two.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"no 'model' column and column 'Model' holds 2 names.*"
                       r"rename 'Model' to 'model'"):  # fmt: skip
        read_responses(path)
    other = pd.concat([_long().assign(M="a"), _long().assign(M="b", score=1 - _long()["score"])])
    other.to_csv(path, index=False)  # no look-alike column: the items repeat with other scores
    with pytest.raises(InputError, match=r"item '0' is on line \d+ again with another score"):
        read_responses(path)
    path = tmp_path / "one.csv"
    _long().assign(model_name="a").to_csv(path, index=False)
    with pytest.warns(DataWarning, match=r"named after the file 'one'\); if 'model_name'"):
        assert list(read_responses(path)) == ["one"]
    path = tmp_path / "renamed.csv"  # a long table whose item / score columns are named else
    _long().rename(columns={"item": "question", "score": "ok"}).assign(model="a").to_csv(
        path, index=False
    )
    with pytest.raises(InputError, match=r"or a long table with columns 'item' and 'score'"):
        read_responses(path)


def test_ids_spelled_with_leading_zeros_are_pointed_out(cal):
    """Zero-padded ids match no calibrated item: the warning (or error) says that they would
    without the zeros (it only said they were ignored)."""
    two = pd.Series(1.0, index=[f"{j:02d}" for j in range(40)])  # '00'-'09' vs '0'-'9'
    with pytest.warns(DataWarning, match=r"10 of them match a calibrated item once leading zeros"):
        estimate(cal, two, model="new", budget=5, cache=False)
    three = pd.Series(1.0, index=[f"{j:03d}" for j in range(40)])
    with pytest.raises(InputError, match=r"40 of them match .* \(e\.g\. '000' and '0'\)"):
        estimate(cal, three, model="new", budget=5, cache=False)


def test_a_repeated_row_is_collapsed_and_a_conflicting_one_named(tmp_path):
    """As the matrix reader: the same (model, item, score) twice is collapsed with a warning
    (it was refused); the same pair with two scores names both rows."""
    path = tmp_path / "rep.csv"
    frame = _long().assign(model="a")
    pd.concat([frame, frame.iloc[[3]]]).to_csv(path, index=False)
    with pytest.warns(DataWarning, match=r"1 repeated \(model, item\) rows with identical"):
        assert len(read_responses(path)["a"]) == 40
    clash = frame.iloc[[3]].assign(score=1.0 - frame["score"].iloc[3])
    pd.concat([frame, clash]).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"line 5 and line 42 both give model 'a', item '3', "
                       r"with different scores"):  # fmt: skip
        read_responses(path)
    one = tmp_path / "one.csv"  # one model, no model column: the same
    pd.concat([_long(), _long().iloc[[3]]]).to_csv(one, index=False)
    with pytest.warns(DataWarning, match="identical scores were collapsed"):
        assert list(read_responses(one)) == ["one"]


def test_answers_labelled_with_another_benchmark_are_flagged_on_every_route(tmp_path, monkeypatch):
    """Item ids such as 0, 1, 2 are shared by many benchmarks: a new model's answers to
    another benchmark were scored against the calibration without a word (helper-45, f1b).
    The labels of the answers' file are compared with the calibration's, whether it comes
    from a file (fitted, or from the disk cache), a fit directory or a store benchmark."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.io.store import Store
    from latentbench.select import load_calibration

    _register()

    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    Y = (rng.random((8, 40)) < 0.6).astype(float)
    cells = pd.DataFrame(
        [(f"m{i}", str(j), Y[i, j]) for i in range(8) for j in range(40)],
        columns=["model", "item", "score"],
    ).assign(benchmark="mmlu", metric="acc")
    cells.to_parquet(tmp_path / "cal.parquet")
    answers = pd.DataFrame({"model": "new", "item": [str(j) for j in range(40)],
                            "score": (rng.random(40) < 0.5) * 1.0, "metric": "acc"})  # fmt: skip
    answers.assign(benchmark="gsm8k").to_csv(tmp_path / "other.csv", index=False)
    answers.assign(benchmark="mmlu").to_csv(tmp_path / "same.csv", index=False)
    # another benchmark is refused (it was only a warning), naming the file, the column, its
    # value and the calibration's; another metric is a warning naming the file
    said = (
        "column 'benchmark' is 'gsm8k' for model 'new'; expected the calibration's benchmark 'mmlu'"
    )
    answers.assign(benchmark="mmlu", metric="f1").to_csv(tmp_path / "metric.csv", index=False)
    said_metric = (
        "metric.csv: model 'new': its answers are labelled metric 'f1' (calibration: 'acc')"
    )

    def warned(calibration, file, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result = estimate(calibration, tmp_path / file, budget=10, seed=0, **kw)
            except InputError as exc:
                text = " ".join(str(exc).split())
                assert f"in {tmp_path / file}: " in text and said in text, text
                return True
        assert any(said_metric in w for w in result.warnings) == (file == "metric.csv")
        return False

    assert warned(tmp_path / "cal.parquet", "other.csv")  # fitted here
    assert not warned(tmp_path / "cal.parquet", "metric.csv")  # a warning, checked inside
    assert warned(tmp_path / "cal.parquet", "other.csv")  # again, from the disk cache
    assert not warned(tmp_path / "cal.parquet", "same.csv")
    fit = CliRunner().invoke(app, ["fit", str(tmp_path / "cal.parquet"), "--out",
                                   str(tmp_path / "fit")])  # fmt: skip
    assert fit.exit_code == 0, fit.output
    assert warned(tmp_path / "fit", "other.csv") and not warned(tmp_path / "fit", "same.csv")
    frame = cells.assign(filter="none", trial=0, split="test", source="t", source_file="t",
                         run_timestamp=pd.NaT, item_hash=None, source_model=cells["model"],
                         flag=None)  # fmt: skip
    with Store(tmp_path / "s.duckdb") as db:
        db.ingest(frame)
    store = load_calibration(tmp_path / "s.duckdb", benchmark="mmlu", cache=False)
    assert warned(store, "other.csv") and not warned(store, "same.csv")
    # the command prints it
    out = CliRunner().invoke(app, ["estimate", str(tmp_path / "cal.parquet"),
                                   str(tmp_path / "other.csv"), "--budget", "10"])  # fmt: skip
    assert out.exit_code == 2 and said in " ".join(out.output.split())


def test_a_cached_calibration_carries_the_labels_of_the_benchmark_asked_for(tmp_path):
    # (review) two benchmarks with identical cells share one cached calibration, which kept
    # the first one's labels: gsm8k answers against the mmlu calibration were not flagged
    from latentbench.io.store import Store
    from latentbench.select import load_calibration

    rng = np.random.default_rng(0)
    Y = (rng.random((8, 40)) < 0.6).astype(float)
    cells = pd.DataFrame(
        [(f"m{i}", str(j), Y[i, j]) for i in range(8) for j in range(40)],
        columns=["model", "item", "score"],
    )

    def frame(bench):
        c = cells.assign(benchmark=bench, metric="acc")
        return c.assign(filter="none", trial=0, split="test", source="t", source_file="t",
                        run_timestamp=pd.NaT, item_hash=None, source_model=c["model"],
                        flag=None)  # fmt: skip

    with Store(tmp_path / "s.duckdb") as db:
        db.ingest(frame("gsm8k"))
        db.ingest(frame("mmlu"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = load_calibration(tmp_path / "s.duckdb", benchmark="gsm8k", cache=tmp_path / "c")
        second = load_calibration(tmp_path / "s.duckdb", benchmark="mmlu", cache=tmp_path / "c")
    assert first.hash == second.hash  # one fit, shared
    assert first.labels["benchmark"] == "gsm8k" and second.labels["benchmark"] == "mmlu"


@pytest.mark.parametrize("delta", [1e-16, 1.5e-16, 1e-20, 5e-324])
def test_a_tiny_delta_gives_a_valid_result_or_a_one_line_refusal_not_a_traceback(cal, delta):
    """delta=1e-20 raised StatisticsError (the ability's normal quantile at 1 - delta/2,
    which is 1.0 in floating point) and 5e-324 'target=inf; expected a half-width > 0' (the
    budget's target from 2 / (delta w), which overflows) (hostile walk, 2026-12-06). Such a
    delta, whose level 1 - delta is 1.0 in floats, is refused in one line since (h191: the
    records said level 1.0, the legend '100%'); the smallest taken, 1e-16, gives a valid
    result (its normal quantile at 1 - delta/2 is 1.0 in floats too)."""
    from latentbench.select import compare

    y = np.tile([1.0, 0.0, 1.0, 1.0], 10)
    answers = pd.Series(y, index=[str(j) for j in range(40)])
    if delta < 1e-16:
        with pytest.raises(InputError, match=r"expected a value in \[1e-16, 1\)"):
            estimate(cal, answers, model="new", delta=delta, cache=False, budget=10)
        return
    for kw in (dict(budget=10), dict(items=tiny(cal, 10))):
        result = estimate(cal, answers, model="new", delta=delta, cache=False, **kw)
        assert result.lower <= y.mean() <= result.upper
        assert np.isfinite([result.theta, result.theta_lower, result.theta_upper]).all()
        assert result.level == 1 - delta < 1
    pair = compare(cal, answers.rename("a"), (1 - answers).rename("b"), delta=delta, budget=10)
    assert pair.lower <= 2 * y.mean() - 1 <= pair.upper


def test_a_delta_near_1_is_shown_as_given_in_the_contradiction_note(cal):
    answers = pd.Series(np.tile([1.0, 0.0], 20), index=[str(j) for j in range(40)])
    kw = dict(model="new", budget=30, delta=0.9999999, cache=False, seed=2)
    result = estimate(cal, answers, **kw)  # seed 2: contradicted at item 3 (a scan)
    said = [w for w in result.warnings if "contradicted" in w]
    assert said and all("delta=0.9999999" in w for w in said), result.warnings


def test_what_reading_the_answers_said_is_kept_with_the_result_and_said_once(cal, tmp_path):
    """Reading the answers' file said that rows were collapsed (or trials averaged, ...), but
    estimate.json's and compare.json's warnings did not keep it (hostile walk, 2026-12-06)."""
    from latentbench.select import compare, estimate_many

    frame = _long().assign(model="new")
    path = tmp_path / "new.csv"
    pd.concat([frame, frame.iloc[[3]]]).to_csv(path, index=False)
    collapsed = "1 repeated (model, item) rows with identical scores were collapsed"
    for run in (
        lambda: estimate(cal, path, budget=5, cache=False),
        lambda: next(iter(estimate_many(cal, path, budget=5, cache=False))),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run()
        said = [str(w.message) for w in caught if collapsed in str(w.message)]
        assert len(said) == 1, said  # at the read, not again with the result
        assert any(collapsed in w for w in result.warnings), result.warnings
        assert any(collapsed in w for w in result.to_dict()["warnings"])
    other = _long().assign(model="other", score=1.0)
    both = tmp_path / "both.csv"
    pd.concat([frame, frame.iloc[[3]], other]).to_csv(both, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pair = compare(cal, both, model_a="new", model_b="other", budget=5)
    assert len([w for w in caught if collapsed in str(w.message)]) == 1
    assert len([w for w in pair.warnings if collapsed in w]) == 1, pair.warnings


def test_answers_are_matched_to_items_without_iterating_their_index(cal, monkeypatch):
    """A file's item ids come as a string Index (Arrow-backed under pandas 3), whose
    element-by-element iteration costs ~7 ms per 12,000 items in every estimate; the ids are
    taken in one ``tolist`` instead, and the answers are the same."""
    answers = pd.Series(
        np.arange(len(cal.item_ids)) % 2, index=pd.Index(cal.item_ids, dtype="string")
    )
    expected = estimate(cal, answers.to_dict(), model="m", budget=5, seed=0)
    iterated: list[int] = []
    plain = pd.Index.__iter__

    def counted(self):
        iterated.append(len(self))
        return plain(self)

    monkeypatch.setattr(pd.Index, "__iter__", counted)
    result = estimate(cal, answers, model="m", budget=5, seed=0)
    assert len(cal.item_ids) not in iterated
    assert (result.score, result.lower, result.upper) == (
        expected.score,
        expected.lower,
        expected.upper,
    )


def test_answers_that_are_all_missing_say_so_naming_the_file_and_what_was_expected(cal, tmp_path):
    """A model whose rows all have an empty score answered nothing: the error names the file,
    the model, its missing scores and what was expected (before: only 'answered none of the
    40 calibrated items', no file, nor why, the count unformatted)."""
    path = tmp_path / "new.csv"
    _long(4).assign(model="A", score=np.nan)[["model", "item", "score"]].to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        estimate(cal, path)
    text = str(err.value)
    assert "answered none" in text and "new.csv" in text and "'A'" in text, text
    assert "missing" in text and "expected" in text, text
    with pytest.raises(InputError, match=r"answered none of the 40 .*expected"):
        estimate(cal, np.full(40, np.nan), model="x")  # a vector: no file to name


def test_compare_with_a_side_that_answered_nothing_names_that_side(cal):
    """Not 'A and B answered no calibrated item in common' when one of them answered none."""
    from latentbench.select import compare

    empty = pd.Series(np.nan, index=[str(j) for j in range(40)], name="A")
    full = _long().set_index("item")["score"].rename("B")
    for a, b in ((empty, full), (full, empty)):
        with pytest.raises(InputError) as err:
            compare(cal, a, b)
        text = str(err.value)
        assert "'A' answered none of the 40 calibrated items" in text, text
        assert "in common" not in text and "expected" in text, text
