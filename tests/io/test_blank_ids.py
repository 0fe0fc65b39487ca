"""An id of spaces only is refused where it is: its line in a CSV, its row in a Parquet file.
It was refused later, among the unique ids, as "row 0" (a position in that list, not the
file's: the whitespace id on line 4 of a long CSV was 'row 0')."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench import ResponseMatrix
from latentbench.exceptions import InputError


def test_a_blank_model_id_in_a_long_csv_names_its_line(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("model,item,score\na,x,1\na,y,0\n  ,x,0\nb,y,1\n")
    with pytest.raises(
        InputError, match=r"long\.csv: column 'model', line 4: model id '  ' is blank"
    ):
        ResponseMatrix.read(path)


def test_a_blank_model_id_in_a_wide_csv_names_its_line(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text('model,x,y\na,1,0\n" ",0,1\nb,1,1\n')
    with pytest.raises(
        InputError, match=r"wide\.csv: column 'model', line 3: model id ' ' is blank"
    ):
        ResponseMatrix.read(path)


def test_a_blank_item_id_in_a_parquet_file_names_its_row(tmp_path):
    path = tmp_path / "long.parquet"
    frame = pd.DataFrame({"model": ["a", "a", "c", "b"], "item": ["x", "\t", "x", "y"]})
    frame.assign(score=[1.0, 0.0, 0.0, 1.0]).to_parquet(path)
    with pytest.raises(InputError, match=r"column 'item', row 2: item id '\\t' is blank"):
        ResponseMatrix.read(path)


def test_a_blank_header_item_and_an_array_id_are_named_by_position(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,x, \na,1,0\nc,0,1\n")
    with pytest.raises(InputError, match=r"wide\.csv: item id 2 of 2 is blank, ' '"):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=r"model id 3 of 3 is empty"):
        ResponseMatrix(np.ones((3, 2)), ["a", "b", ""], ["x", "y"])
