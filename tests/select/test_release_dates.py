"""The release-date sidecar of ``split="date"``: which columns it takes, said when missing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.select import release_dates


def _files(tmp_path, sidecar: dict) -> str:
    path = tmp_path / "lb.parquet"
    pd.DataFrame({"model": ["a", "b"], "item": ["i", "i"], "score": [1.0, 0.0]}).to_parquet(path)
    pd.DataFrame(sidecar).to_parquet(tmp_path / "lb_models.parquet")
    return str(path)


@pytest.mark.parametrize("column", ["created_date", "release_date", "date"])
def test_each_documented_date_column_is_read(tmp_path, column):
    days = pd.to_datetime(["2024-01-01", "2024-02-01"])
    path = _files(tmp_path, {"model": ["a", "b"], column: days})
    assert np.array_equal(release_dates(path, ["b", "a"]), np.asarray(days[::-1]))


def test_a_sidecar_without_a_date_column_names_the_columns_it_takes(tmp_path):
    """BFCL's `bfcl_v2_models.parquet` has a 'model' column and no date: the error said it had
    no 'model' and 'created_date' columns, naming neither 'release_date' nor 'date', which are
    read too (docs/selection.md)."""
    path = _files(tmp_path, {"model": ["a", "b"], "n_categories": [3, 4]})
    with pytest.raises(InputError) as err:
        release_dates(path, ["a", "b"])
    message = str(err.value)
    assert "'created_date', 'release_date' or 'date'" in message
    assert "has no 'model'" not in message and "'n_categories'" in message


def test_a_sidecar_without_a_model_column_says_so(tmp_path):
    path = _files(tmp_path, {"name": ["a", "b"], "date": pd.to_datetime(["2024-01-01"] * 2)})
    with pytest.raises(InputError, match=r"lb_models.parquet has no 'model' column"):
        release_dates(path, ["a", "b"])
