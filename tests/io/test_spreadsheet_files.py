"""Hand-exported spreadsheet files (CSV/TSV saved from Excel or pandas), read by every route
that takes a results table: ``fit``/``select``/``report`` (``ResponseMatrix.read``),
``ingest table`` (``read_results("table", ...)``) and ``estimate``'s answers
(``read_responses``). The same file is read the same way, or refused the same way, with an
error naming the file, the place, the value and how to fix the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from latentbench import InputError, ResponseMatrix
from latentbench.io.formats import read_results
from latentbench.select import read_responses

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

ROUTES = ("fit", "ingest", "estimate")


def read_by(route: str, path: Path):
    """The file read as ``route`` reads it."""
    if route == "fit":
        return ResponseMatrix.read(path)
    if route == "ingest":
        return read_results("table", [path])
    return read_responses(path)


def wide_text(sep: str = ",", first: str = "model", extra: str = "") -> str:
    """A wide table of 4 models x 3 items (and the column ``extra`` when given)."""
    rows = [[first, "q1", "q2", "q3"], ["m1", "1", "0", "1"], ["m2", "0", "0", "1"],
            ["m3", "1", "1", "1"], ["m4", "0", "1", "0"]]  # fmt: skip
    if extra:
        rows[0].append(extra)
        for row in rows[1:]:
            row.append(f"{np.mean([float(v) for v in row[1:4]]):.3f}")
    return "\n".join(sep.join(row) for row in rows) + "\n"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("sep", "shown"), [(";", "';'"), ("\t", r"'\\t'")])
def test_a_file_separated_otherwise_is_named_by_every_route(tmp_path, route, sep, shown):
    path = tmp_path / "results.csv"
    path.write_text(wide_text(sep=sep).replace(".", ","))  # European Excel: decimal commas
    with pytest.raises(InputError, match=rf"results\.csv.*separated by {shown}.*comma"):
        read_by(route, path)


def test_ingest_says_an_encoding_error_once(tmp_path):
    path = tmp_path / "results.csv"
    path.write_bytes(wide_text().replace("m1", "Modèle").encode("cp1252"))
    with pytest.raises(InputError) as caught:
        read_results("table", [path])
    assert str(caught.value).count(str(path)) == 1
    assert "UTF-8" in str(caught.value)


@pytest.mark.parametrize("route", ROUTES)
def test_a_windows_csv_names_the_line_that_is_not_utf8(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_bytes(wide_text().replace("m3", "Modèle").encode("cp1252"))
    with pytest.raises(
        InputError, match=r"results\.csv: line 4: byte 0xe8 is not UTF-8.*CSV UTF-8"
    ):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["Average", "Total", "mean", "Accuracy"])
def test_a_summary_column_is_not_read_as_an_item(tmp_path, route, name):
    path = tmp_path / "results.csv"
    path.write_text(wide_text(extra=name))
    with pytest.raises(InputError, match=rf"results\.csv.*column '{name}'.*not an item.*delete"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_summary_row_is_not_read_as_a_model(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text(wide_text() + "Average,0.5,0.5,0.75\n")
    with pytest.raises(
        InputError, match=r"results\.csv(: line |:)6.*'Average'.*not a model.*delete"
    ):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["Average", " total", "MEAN"])
def test_a_long_tables_summary_item_is_not_read_as_an_item(tmp_path, route, name):
    """A long table with each model's average written as one more row (item 'Average')."""
    path = tmp_path / "results.csv"
    path.write_text(f"model,item,score\nm1,q1,1\nm1,q2,0\nm1,{name},0.5\nm2,q1,0\nm2,q2,1\n")
    with pytest.raises(
        InputError,
        match=rf"results\.csv(: line |:)4, column 'item': item '{name}' looks like a summary "
        "row.*not an item; delete its rows",
    ):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_long_tables_summary_model_is_not_read_as_a_model(tmp_path, route):
    """A long table with every item's average over the models as a model 'Total'."""
    path = tmp_path / "results.csv"
    path.write_text("model,item,score\nm1,q1,1\nm2,q1,0\nTotal,q1,0.5\nm1,q2,0\n")
    with pytest.raises(
        InputError, match=r"results\.csv(: line |:)4, column 'model': model 'Total'.*not a model"
    ):
        read_by(route, path)


def test_a_long_dataframe_summary_row_is_refused_and_other_ids_pass() -> None:
    """The in-memory route says the row; ids that merely contain a summary word are items."""
    import pandas as pd

    frame = pd.DataFrame(
        {"model": ["a", "a", "b", "b"], "item": ["mean_q", "q2", "mean_q", "Overall"],
         "score": [1.0, 0.0, 0.0, 0.5]}
    )  # fmt: skip
    with pytest.raises(InputError, match=r"row 4, column 'item': item 'Overall'"):
        ResponseMatrix.from_long(frame)
    assert list(ResponseMatrix.from_long(frame.iloc[:3]).item_ids) == ["mean_q", "q2"]


@pytest.mark.parametrize("route", ROUTES)
def test_a_pandas_index_column_is_named(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text(",model,q1,q2\n0,m1,1,0\n1,m2,0,1\n2,m3,1,1\n3,m4,0,0\n")
    with pytest.raises(InputError, match=r"column 'Unnamed: 0'.*row numbers.*index=False"):
        read_by(route, path)


def test_ingest_counts_every_missing_marker_of_a_wide_table(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2,q3\nm1,NA,N/A,1\nm2,,null,0\nm3,nan,1,1\n")
    rows, report = read_results("table", [path])
    assert len(rows) == 4
    assert report.dropped == {"empty cell (missing)": 5}


def test_a_wide_row_without_a_model_id_names_its_line(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2\nm1,1,0\nm2,0,1\n,,\nm3,1,1\n")
    with pytest.raises(InputError, match=r"column 'model', line 4: model id is missing"):
        ResponseMatrix.read(path)


@pytest.mark.parametrize("first", ["Model", ""])
def test_estimate_reads_a_wide_file_with_ids_in_the_first_column_as_fit_does(tmp_path, first):
    path = tmp_path / "new.csv"
    path.write_text(wide_text(first=first))
    matrix = ResponseMatrix.read(path)
    answers = read_responses(path)
    assert sorted(answers) == matrix.model_ids
    for k, model in enumerate(matrix.model_ids):
        assert answers[model].index.tolist() == matrix.item_ids
        assert np.array_equal(answers[model].to_numpy(), matrix.scores[k])


@pytest.mark.parametrize("column", ["correct", "is_correct"])
def test_ingest_reads_a_correct_column_as_fit_does(tmp_path, column):
    path = tmp_path / "results.csv"
    path.write_text(f"model,item,{column}\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,\n")
    rows, _ = read_results("table", [path])
    matrix = ResponseMatrix.read(path)
    got = {(m, i): s for m, i, s in zip(rows.model, rows.item, rows.score, strict=True)}
    assert got == {("m1", "q1"): 1.0, ("m1", "q2"): 0.0, ("m2", "q1"): 0.0}
    assert int(matrix.observed.sum()) == 3


@pytest.mark.parametrize("route", ROUTES)
def test_long_columns_named_in_another_case_are_named(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text("Model,ITEM,Score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n")
    with pytest.raises(InputError, match=r"results\.csv.*'ITEM'.*'Score'.*rename"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_score_just_above_one_is_refused_by_every_route(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2\nm1,1.00000001,0\nm2,0,1\nm3,1,1\n")
    with pytest.raises(InputError, match=r"1\.00000001.*outside \[0, 1\].*round"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_file_of_percentages_says_to_divide_by_100(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2\nm1,100,0\nm2,50,100\nm3,0,25\n")
    with pytest.raises(InputError, match=r"100.*outside \[0, 1\].*0-100.*divide"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_percent_cell_says_how_to_write_it(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2\nm1,85%,0\nm2,0,1\nm3,1,1\n")
    with pytest.raises(InputError, match=r"'85%'.*write 0\.85"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_model_on_two_rows_of_a_wide_table_is_refused_naming_both_lines(tmp_path, route):
    # ingest kept one of the two rows ("same observation repeated in one file", kept once)
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2\nm1,1,0\nm2,0,1\nm1,1,0\n")
    with pytest.raises(InputError, match=r"results\.csv.*model 'm1' is on line 2 and line 4"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_an_excel_workbook_is_refused_saying_to_save_it_as_csv(tmp_path, route):
    path = tmp_path / "results.xlsx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError, match=r"results\.xlsx.*'\.xlsx'.*save it as 'CSV UTF-8"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["model", None])
def test_a_parquet_of_a_frame_indexed_by_model_reads_its_index(tmp_path, route, name):
    # wide.to_parquet() keeps the models in the index: every route said "no model column"
    import pandas as pd

    wide = pd.DataFrame(
        {"q1": [1.0, 0.0, 1.0], "q2": [0.0, 0.0, 1.0]},
        index=pd.Index(["m1", "m2", "m3"], name=name),
    )
    path = tmp_path / "results.parquet"
    wide.to_parquet(path)
    got = read_by(route, path)
    if route == "fit":
        assert got.model_ids == ["m1", "m2", "m3"] and got.item_ids == ["q1", "q2"]
        assert np.array_equal(got.scores, wide.to_numpy(dtype=np.float32))
    elif route == "ingest":
        assert sorted(set(got[0].model)) == ["m1", "m2", "m3"] and len(got[0]) == 6
    else:
        assert sorted(got) == ["m1", "m2", "m3"] and got["m3"].tolist() == [1.0, 1.0]


def test_a_parquet_with_row_numbers_as_index_reads_as_before(tmp_path):
    import pandas as pd

    long = pd.DataFrame(
        {"model": ["a", "a", "b", "b"], "item": ["q1", "q2"] * 2, "score": [1, 0, 0, 1.0]}
    )
    path = tmp_path / "long.parquet"
    long.iloc[[3, 1, 2, 0]].to_parquet(path)  # a non-range integer index, stored by pandas
    assert ResponseMatrix.read(path).shape == (2, 2)
    assert len(read_results("table", [path])[0]) == 4


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("cell", "said"), [("-", "leave the cell empty or write NA"), ("#DIV/0!", "Excel error")]
)
def test_a_dash_or_an_excel_error_is_refused_saying_what_to_do(tmp_path, route, cell, said):
    path = tmp_path / "results.csv"
    path.write_text(f"model,q1,q2\nm1,{cell},0\nm2,0,1\nm3,1,1\n")
    with pytest.raises(InputError, match=rf"results\.csv.*(line |:)2.*'{cell}'.*{said}"):
        read_by(route, path)


@pytest.mark.parametrize("route", ["fit", "ingest"])
def test_a_long_table_whose_model_column_is_capitalised_is_named(tmp_path, route):
    # ingest said "model 'm1' is on line 2 and line 3; expected one row per model"
    path = tmp_path / "results.csv"
    path.write_text("Model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n")
    with pytest.raises(
        InputError, match=r"results\.csv: column 'Model' looks like.*rename it model"
    ):
        read_by(route, path)


def test_estimate_still_reads_one_models_answers_with_a_model_lookalike_column(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("Model,item,score\nm1,q1,1\nm1,q2,0\n")
    with pytest.warns(UserWarning, match="name it 'model'"):
        answers = read_responses(path)
    assert list(answers) == ["mine"] and answers["mine"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("route", ROUTES)
def test_a_bad_cell_after_a_blank_line_names_its_file_line(tmp_path, route):
    # pandas skips blank lines, so the cell on line 5 was named "line 4" (one per blank line)
    path = tmp_path / "results.csv"
    path.write_text("model,q1,q2\nm1,1,0\n\nm2,0,1\n  \nm3,0,yes\n")
    with pytest.raises(InputError, match=r"results\.csv.*(line |:)6\b.*'yes'|'yes'.*line 6\b"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_long_table_with_blank_lines_names_the_file_line(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text("model,item,score\n\nm1,q1,1\nm1,q2,0\n\n\nm2,q1,0\nm2,q2,7\n")
    with pytest.raises(InputError, match=r"results\.csv.*(line |:)8\b"):
        read_by(route, path)


@pytest.mark.parametrize("route", ROUTES)
def test_a_repeated_model_after_a_blank_line_and_a_quoted_cell_names_both_lines(tmp_path, route):
    path = tmp_path / "results.csv"
    path.write_text('model,q1,q2\nm1,1,0\n\n"m2\nx",0,1\nm1,1,0\n')
    with pytest.raises(InputError, match=r"model 'm1' is on line 2 and line 6"):
        read_by(route, path)
