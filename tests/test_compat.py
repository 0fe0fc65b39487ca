"""Text columns and CSV reading are the same on pandas 2.3 and 3.1+ (latentbench._compat)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench._compat import PANDAS_3, TEXT, read_csv, text_array


def test_a_missing_text_cell_stays_missing():
    # pandas 2: pd.array([None], dtype="str") is the text 'None'
    array = text_array(["a", None, np.nan])
    assert array.dtype == TEXT
    assert array.isna().tolist() == [False, True, True]
    assert pd.Series([None, "b"], dtype=object).astype(TEXT).isna().tolist() == [True, False]


def test_text_is_pandas_3s_str_dtype():
    if PANDAS_3:
        assert pd.api.types.pandas_dtype("str") == TEXT
    assert TEXT.storage == "pyarrow" and np.isnan(TEXT.na_value)


@pytest.mark.parametrize("dtype", [TEXT, str])
def test_a_nul_inside_a_field_is_kept(tmp_path, dtype):
    # pandas 2's C parser ended the cell at the NUL: 'a\x00b' and 'a\x00c' both read as 'a'
    path = tmp_path / "t.csv"
    path.write_bytes(b'id,score,n\x00m\na\x00b,1,x\n"a\x00c",0,\nplain,1,\x00\n')
    frame = read_csv(path, dtype={"id": dtype}, keep_default_na=False, na_values=[""])
    assert frame["id"].tolist() == ["a\x00b", "a\x00c", "plain"]
    assert frame["n\x00m"].iloc[0] == "x" and pd.isna(frame["n\x00m"].iloc[1])
    assert frame["n\x00m"].iloc[2] == "\x00"
    assert frame["score"].tolist() == [1, 0, 1]


def test_floats_read_back_exactly(tmp_path):
    # pandas 2's default C parser read 1.0355706445030841 back as 1.035570644503084
    values = np.random.default_rng(0).normal(size=2000) * 10.0 ** np.arange(-6, 14).repeat(100)
    path = tmp_path / "f.csv"
    pd.DataFrame({"x": values}).to_csv(path, index=False)
    np.testing.assert_array_equal(read_csv(path)["x"].to_numpy(), values)
    with path.open("a") as handle:  # a NUL in a text column: the same floats
        handle.write("a\x00b\n")
    frame = read_csv(path, dtype={"x": TEXT}, keep_default_na=False)
    assert frame["x"].iloc[-1] == "a\x00b"
    np.testing.assert_array_equal(frame["x"].iloc[:-1].astype(float).to_numpy(), values)


def test_written_tables_have_one_schema(tmp_path):
    # pandas 2 wrote the ids of to_long() and tiny() as Arrow string, pandas 3 as large_string
    import pyarrow.parquet as pq

    from latentbench import ResponseMatrix
    from latentbench.select import tiny
    from latentbench.synthetic import simulate_2pl

    matrix = simulate_2pl(12, 30, random_state=0).matrix
    assert isinstance(matrix, ResponseMatrix)
    long = matrix.to_long()
    wide = matrix.to_wide()
    assert wide.index.dtype == TEXT and wide.columns.dtype == TEXT
    design = tiny(matrix, k=5, cache=False)
    for frame, columns in ((long, ("model", "item")), (design, ("item", "calibration_hash"))):
        frame.to_parquet(tmp_path / "t.parquet", index=False)
        schema = pq.read_schema(tmp_path / "t.parquet")
        assert [str(schema.field(c).type) for c in columns] == ["large_string"] * len(columns)


def test_to_wide_is_the_callers_copy():
    # pandas 2 (no copy-on-write) shared the matrix's read-only scores: setting a cell raised
    from latentbench.synthetic import simulate_2pl

    matrix = simulate_2pl(4, 5, random_state=0).matrix
    before = matrix.scores.copy()
    wide = matrix.to_wide()
    wide.iloc[0, 0] = np.nan
    np.testing.assert_array_equal(matrix.scores, before)
