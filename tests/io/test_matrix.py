"""ResponseMatrix: construction, conversion, summary and one clear error per bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench import DataWarning, InputError, ResponseMatrix


def long_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["m1", "m1", "m2", "m2", "m3"],
            "item": ["q1", "q2", "q1", "q3", "q2"],
            "score": [1.0, 0.0, 0.5, 1.0, 1.0],
        }
    )


def test_from_long_keeps_missing_cells_missing():
    m = ResponseMatrix.from_long(long_frame())
    assert m.shape == (3, 3)
    assert m.model_ids == ["m1", "m2", "m3"]
    assert m.item_ids == ["q1", "q2", "q3"]
    assert np.isnan(m.scores[0, 2])  # m1 never saw q3: missing, not 0
    assert m.scores[1, 0] == pytest.approx(0.5)
    assert m.observed.sum() == 5
    assert not m.is_binary


def test_round_trip_long_wide_long():
    m = ResponseMatrix.from_long(long_frame())
    back = m.to_long().sort_values(["model", "item"]).reset_index(drop=True)
    expected = long_frame().sort_values(["model", "item"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)
    wide = m.to_wide()
    again = ResponseMatrix.from_wide(wide)
    np.testing.assert_array_equal(again.scores, m.scores)


def test_read_parquet_and_csv_long_and_wide(tmp_path):
    m = ResponseMatrix.from_long(long_frame())
    m.to_long().to_parquet(tmp_path / "long.parquet")
    m.to_long().to_csv(tmp_path / "long.csv", index=False)
    m.to_wide().to_csv(tmp_path / "wide.csv")
    m.to_wide().reset_index().to_parquet(tmp_path / "wide.parquet")
    for name in ("long.parquet", "long.csv", "wide.csv", "wide.parquet"):
        read = ResponseMatrix.read(tmp_path / name)
        np.testing.assert_array_equal(read.scores, m.scores, err_msg=name)
        assert read.model_ids == m.model_ids


def test_summary_reports_constant_and_empty():
    scores = np.array([[1, 1, np.nan], [0, 1, np.nan], [1, 0, np.nan]], dtype=float)
    m = ResponseMatrix(scores, ["a", "b", "c"], ["x", "y", "z"])
    s = m.summary()
    assert s.constant_models == ["a"]
    assert s.empty_items == ["z"]
    assert s.is_binary
    assert s.n_observed == 6
    assert "3 models x 3 items" in str(s)


def test_subset_by_ids_positions_and_mask():
    m = ResponseMatrix.from_long(long_frame())
    by_id = m.subset(models=["m3", "m1"], items=["q2"])
    assert by_id.model_ids == ["m3", "m1"] and by_id.item_ids == ["q2"]
    assert by_id.scores[0, 0] == 1.0 and by_id.scores[1, 0] == 0.0
    by_pos = m[[0, 1], :]
    assert by_pos.model_ids == ["m1", "m2"]
    by_mask = m.subset(items=np.array([True, True, False]))
    assert by_mask.item_ids == ["q1", "q2"]


def test_subset_refuses_one_bare_id_and_a_repeated_one():
    # subset(models="m1") raised numpy's "iteration over a 0-d array"; subset(models=["m1",
    # "m1"]) made a matrix with a repeated model id (which every constructor refuses); an
    # unknown id was shown as np.str_('x')
    m = ResponseMatrix.from_long(long_frame())
    with pytest.raises(InputError, match=r"models='m1': one id; expected a list of ids "):
        m.subset(models="m1")
    with pytest.raises(InputError, match=r"items='q1': one id; expected a list of ids "):
        m[:, "q1"]
    with pytest.raises(InputError, match=r"model id 'm1' is selected twice; ids must be unique"):
        m.subset(models=["m1", "m2", "m1"])
    with pytest.raises(InputError, match=r"item id 'q1' is selected twice"):
        m.subset(items=[0, -3])
    with pytest.raises(InputError, match=r"^unknown model id 'nope'$"):
        m.subset(models=["nope"])


def test_identical_duplicates_collapse_with_warning():
    frame = pd.concat([long_frame(), long_frame().iloc[[0]]])
    with pytest.warns(DataWarning, match="collapsed"):
        m = ResponseMatrix.from_long(frame)
    assert m.observed.sum() == 5


# ---------------------------------------------------------------- one clear error per case
def test_error_score_outside_unit_interval(tmp_path):
    frame = long_frame()
    frame.loc[3, "score"] = 1.5
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError) as info:
        ResponseMatrix.read(path)
    message = str(info.value)
    # the file's line (header on line 1), which holds the bad value
    assert "bad.csv" in message and "'score'" in message and "line 5" in message
    assert "1.5" in path.read_text().splitlines()[4]
    assert "1.5" in message and "[0, 1]" in message


def test_error_non_numeric_score(tmp_path):
    frame = long_frame().astype({"score": object})
    frame.loc[2, "score"] = "correct"
    path = tmp_path / "text.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError) as info:
        ResponseMatrix.read(path)
    message = str(info.value)
    assert "text.csv" in message and "line 4" in message and "'correct'" in message
    assert "correct" in path.read_text().splitlines()[3]
    assert "not numeric" in message


def test_error_conflicting_duplicate_pair():
    frame = pd.concat(
        [long_frame(), pd.DataFrame({"model": ["m1"], "item": ["q1"], "score": [0.0]})]
    )
    with pytest.raises(InputError) as info:
        ResponseMatrix.from_long(frame, source="dup.parquet")
    message = str(info.value)
    assert "dup.parquet" in message and "row 1 and row 6" in message  # 1-based rows
    assert "'m1'" in message and "'q1'" in message and "different scores" in message


def test_error_empty_input(tmp_path):
    path = tmp_path / "empty.csv"
    pd.DataFrame({"model": [], "item": [], "score": []}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"empty\.csv.*no rows"):
        ResponseMatrix.read(path)


def test_error_long_table_without_a_score_column(tmp_path):
    path = tmp_path / "long.csv"
    pd.DataFrame({"model": ["a", "b"], "item": ["q", "q"], "acc": [1, 0]}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"long\.csv: columns 'model' and 'item' .* no score"):
        ResponseMatrix.read(path)


def test_error_single_model():
    frame = long_frame()
    frame["model"] = "only"
    frame = frame.drop_duplicates(["model", "item"])
    with pytest.raises(InputError, match=r"only one model \('only'\).*at least 2 models"):
        ResponseMatrix.from_long(frame)


def test_error_single_item():
    frame = long_frame()
    frame["item"] = "q"
    frame = frame.drop_duplicates(["model", "item"])
    with pytest.raises(InputError, match=r"only one item \('q'\).*at least 2 items"):
        ResponseMatrix.from_long(frame)


def test_error_ids_not_strings_or_ints():
    frame = long_frame().astype({"item": object})
    frame.loc[1, "item"] = 2.5
    with pytest.raises(InputError) as info:
        ResponseMatrix.from_long(frame, source="ids.parquet")
    message = str(info.value)
    assert "ids.parquet" in message and "'item'" in message and "row 2:" in message
    assert "2.5" in message and "float" in message and "string or an integer" in message


def test_error_wide_frame_with_a_repeated_item_column():
    # a DataFrame with two columns of one name (pd.concat of two result tables) raised
    # AttributeError: 'DataFrame' object has no attribute 'dtype' from inside the coercion
    frame = pd.DataFrame([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], index=["a", "b"])
    frame.columns = ["q1", "q2", "q1"]
    with pytest.raises(InputError, match=r"item id 'q1' appears twice; ids must be unique"):
        ResponseMatrix.from_wide(frame)


def test_error_missing_id():
    frame = long_frame().astype({"model": object})
    frame.loc[4, "model"] = None
    with pytest.raises(InputError, match=r"column 'model', row 5: model id is missing"):
        ResponseMatrix.from_long(frame)


def test_error_missing_column():
    with pytest.raises(InputError, match=r"column 'score' is missing"):
        ResponseMatrix.from_long(long_frame().drop(columns="score"))


def test_error_unknown_file_type(tmp_path):
    path = tmp_path / "scores.xlsx"
    path.write_text("x")
    with pytest.raises(InputError, match=r"scores\.xlsx.*unknown file type"):
        ResponseMatrix.read(path)


def test_error_wide_non_numeric_names_column(tmp_path):
    wide = pd.DataFrame({"model": ["a", "b"], "q1": [1, 0], "q2": ["0", "oops"]})
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"wide\.csv: column 'q2', line 3: value 'oops'"):
        ResponseMatrix.read(path)


def test_integer_ids_are_accepted_and_stringified():
    frame = pd.DataFrame({"model": [1, 1, 2, 2], "item": [10, 11, 10, 11], "score": [1, 0, 0, 1]})
    m = ResponseMatrix.from_long(frame)
    assert m.model_ids == ["1", "2"] and m.item_ids == ["10", "11"]


def test_a_subset_keeps_the_files_layout_only_when_it_is_the_whole_file(tmp_path):
    """IRTResult.save records the file as the input of a matrix with its layout: a reorder of
    every row and column keeps it; a true subset does not (a row taken twice is refused)."""
    path = tmp_path / "m.csv"
    pd.DataFrame({"model": ["a", "b", "c"], "q1": [1.0, 0.0, 1.0], "q2": [0.0, 1.0, 1.0]}).to_csv(
        path, index=False
    )
    read = ResponseMatrix.read(path)
    assert read.layout is not None
    assert read.subset(models=["c", "a", "b"]).layout == read.layout
    assert read.subset(models=["a", "b"]).layout is None
    with pytest.raises(InputError, match="model id 'a' is selected twice"):
        read.subset(models=["a", "b", "c", "a"])


def test_wide_trailing_comma_is_no_item(tmp_path):
    """A wide CSV with a trailing comma on every line had a phantom item 'Unnamed: 3' with no
    data (fitted, with a discrimination, in items.csv); it is left out and named, as the long
    reader leaves out an item with no observed score."""
    path = tmp_path / "wide.csv"
    path.write_text("model,q0,q1,q2,\nm0,1,0,1,\nm1,0,0,1,\nm2,1,1,,\n")
    with pytest.warns(DataWarning, match=r"1 item column\(s\) with no observed score left out "):
        matrix = ResponseMatrix.read(path)
    assert matrix.item_ids == ["q0", "q1", "q2"]
    # the file's four item columns, the one left out named (it said 3 item columns)
    assert "4 item columns; 1 item column(s) with no observed score left out ('Unnamed: 4')" in (
        matrix.layout
    )
    assert matrix.dropped_items == ("Unnamed: 4",)
    assert np.isnan(matrix.scores[2, 2])  # an empty cell in a kept column stays missing


def test_a_long_table_whose_model_column_has_another_name_says_so(tmp_path):
    # it was read as a wide table and failed with "column 'item' ... is not numeric"
    rows = [(m, f"q{j}", float((i + j) % 2)) for i, m in enumerate("abc") for j in range(4)]
    path = tmp_path / "long.csv"
    pd.DataFrame(rows, columns=["level_0", "item", "score"]).to_csv(path, index=False)
    with pytest.raises(InputError) as caught:
        ResponseMatrix.read(path)
    text = str(caught.value)
    assert "no model column 'model'; column 'level_0' may hold them" in text
    assert "not numeric" not in text
    # named, it reads
    assert ResponseMatrix.read(path, model="level_0").shape == (3, 4)


def test_a_long_table_with_none_of_the_default_names_says_how_it_was_read(tmp_path):
    # `fit --help`'s own example (name, question, correct) without its options: read as a
    # wide table, it failed with "column 'question', line 2: value 'q1' is not numeric"
    path = tmp_path / "long.csv"
    path.write_text("name,question,correct\na,q1,1\na,q2,0\nb,q1,0\nb,q2,1\n")
    with pytest.raises(InputError) as caught:
        ResponseMatrix.read(path)
    text = str(caught.value)
    assert "read as a wide table (one row per model, ids in the first column 'name'" in text
    assert "--model-col/--item-col/--score-col" in text and "'q1' is not numeric" in text
    # named, it reads
    assert ResponseMatrix.read(path, model="name", item="question").shape == (2, 2)


def test_a_semicolon_file_and_a_column_in_two_roles_are_named(tmp_path):
    # "the table is empty" for a ';'-separated file of 4 rows; --model-col score fitted the
    # scores as model ids
    semi = tmp_path / "semi.csv"
    semi.write_text("model;item;score\na;q1;1\na;q2;0\nb;q1;0\nb;q2;1\n")
    with pytest.raises(InputError, match=r"one column named 'model;item;score': the file seems "
                       r"separated by ';'"):  # fmt: skip
        ResponseMatrix.read(semi)
    good = tmp_path / "long.csv"
    good.write_text("model,item,score\na,q1,1\na,q2,0\nb,q1,0\nb,q2,1\n")
    with pytest.raises(InputError, match="column 'score' given as the model column is also the "
                       "score column"):  # fmt: skip
        ResponseMatrix.read(good, model="score")


def test_a_missing_selection_file_is_named():
    from latentbench.select import SelectionRecord

    said = r"nowhere\.json: no such file; expected a selection\.json"
    with pytest.raises(InputError, match=said):
        SelectionRecord.read_json("nowhere.json")


@pytest.mark.parametrize("sparse", [False, True])
def test_an_empty_model_and_an_empty_item_read_alike_in_both_layouts(tmp_path, sparse):
    """A wide file kept a model with no observed score as a row with no data, a long file
    left it out; an item with none was left out by both, said in a warning only (the wide
    layout counted the item columns after it). Both layouts now keep the model (no data) and
    leave the item out, recorded in ``dropped_items`` and in ``layout`` with the file's
    count."""
    rng = np.random.default_rng(3)
    n_models, n_items = 12, 40
    scores = (rng.random((n_models, n_items)) < 0.5).astype(float)
    if sparse:  # below SPARSE_DENSITY: the long reader's sparse path
        scores[rng.random(scores.shape) < 0.92] = np.nan
        others = [i for i in range(n_models) if i != 5]
        for j in range(n_items):  # every item observed once at least (but q07, below)
            scores[others[j % len(others)], j] = 1.0
    scores[5] = np.nan  # model m05: no observed score
    scores[:, 7] = np.nan  # item q07: none either
    models = [f"m{i:02d}" for i in range(n_models)]
    items = [f"q{j:02d}" for j in range(n_items)]
    wide = pd.DataFrame(scores, columns=items).assign(model=models)[["model", *items]]
    wide.to_csv(tmp_path / "wide.csv", index=False)
    long = wide.melt(id_vars="model", var_name="item", value_name="score")
    long.to_csv(tmp_path / "long.csv", index=False)
    with pytest.warns(DataWarning, match=r"1 item column\(s\) with no observed score left out"):
        from_wide = ResponseMatrix.read(tmp_path / "wide.csv")
    said = r"1 model\(s\) with no observed score kept as rows with no data \('m05'\); 1 item"
    with pytest.warns(DataWarning, match=said):
        from_long = ResponseMatrix.read(tmp_path / "long.csv")
    assert from_long.is_sparse == sparse
    for matrix in (from_wide, from_long):
        assert matrix.model_ids == models
        assert matrix.item_ids == [name for name in items if name != "q07"]
        assert matrix.dropped_items == ("q07",)
        assert np.isnan(matrix.scores[5]).all() and matrix.summary().empty_models == ["m05"]
        assert matrix.subset(models=models[::-1]).dropped_items == ("q07",)  # the whole file
        assert matrix.subset(models=models[:3]).dropped_items == ()
    assert np.array_equal(from_wide.scores, from_long.scores, equal_nan=True)
    assert from_wide.layout == (
        "wide: model ids in column 'model', 40 item columns; 1 item column(s) with no "
        "observed score left out ('q07')"
    )
    assert from_long.layout == (
        "long: columns model, item, score; 1 item(s) with no observed score left out ('q07')"
    )


def test_the_repr_counts_in_words_a_reader_can_take_in():
    two = ResponseMatrix.from_wide(
        pd.DataFrame({"q1": [1.0, 0.0], "q2": [0.0, 1.0]}, index=["m", "n"])
    )
    one = two.subset(models=["m"], items=["q1"])  # a subset may hold one of each
    assert repr(one) == "ResponseMatrix(1 model x 1 item, 100.0% observed)"
    scores = np.full((2, 1_200), np.nan)
    scores[0], scores[1, :300] = 1.0, 0.0
    wide = pd.DataFrame(scores, index=["a", "b"], columns=[f"q{j}" for j in range(1_200)])
    assert repr(ResponseMatrix.from_wide(wide)) == (
        "ResponseMatrix(2 models x 1,200 items, 62.5% observed)"
    )


def test_a_wide_frame_with_multiindex_columns_says_how_to_flatten_them():
    cols = pd.MultiIndex.from_tuples([("mmlu", "q1"), ("mmlu", "q2"), ("gsm", "q1")])
    frame = pd.DataFrame([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], index=["a", "b"], columns=cols)
    with pytest.raises(InputError, match=r"2 levels \(a MultiIndex, first \('mmlu', 'q1'\)\)"):
        ResponseMatrix.from_wide(frame)
    frame.columns = ["/".join(map(str, c)) for c in frame.columns]  # the fix the message gives
    assert ResponseMatrix.from_wide(frame).item_ids == ["mmlu/q1", "mmlu/q2", "gsm/q1"]


def test_wide_text_cells_are_converted_in_one_pass_with_the_same_values(tmp_path, monkeypatch):
    """A wide CSV (every cell text) was converted column by column: ~1.5 ms per column, 17 s
    for MMLU-Pro's 12,032 items. All columns are now converted at once, to the same values
    (numbers, true/false, missing markers), and a cell that is not a number is still refused
    naming its column and line."""
    from latentbench.io import _matrix_checks

    rng = np.random.default_rng(0)
    cells = rng.choice(["1", "0", "0.25", " 1 ", "true", "FALSE", "NA", "", "1e-1"], (6, 40))
    frame = pd.DataFrame(cells, columns=[f"q{j}" for j in range(40)])
    frame.insert(0, "model", [f"m{i}" for i in range(6)])
    frame.loc[0, "q0"] = "1"  # no all-empty column
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    text = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    expected = np.column_stack([_matrix_checks.numeric_scores(text[f"q{j}"])[0] for j in range(40)])
    calls: list[int] = []
    plain = _matrix_checks.numeric_scores

    def counted(values):
        calls.append(len(values))
        return plain(values)

    monkeypatch.setattr(_matrix_checks, "numeric_scores", counted)
    matrix = ResponseMatrix.read(path)
    assert calls == [6 * 40]
    np.testing.assert_array_equal(matrix.scores, expected.astype(matrix.scores.dtype))
    frame.loc[3, "q17"] = "n/a?"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"column 'q17', line 5: value 'n/a\?' is not numeric"):
        ResponseMatrix.read(path)
