"""``estimate --model A`` on a file whose rows name ``'A '`` and ``'a'`` (a spreadsheet's
trailing space, another casing) but not ``'A'``: names are matched exactly, so the error says
which names differ from it only by case or spaces, with their answers, all of them (it named
the first one only, without saying that matching is exact)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.select import estimate, estimate_many
from latentbench.select._estimate_calibration import from_matrix
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    matrix = simulate_2pl(10, 30, random_state=2).matrix
    cal = from_matrix(matrix, rank=1)
    wide = pd.DataFrame(matrix.scores[:4], index=["A ", "a", "B", "z"], columns=matrix.item_ids)
    wide.iloc[1, :10] = np.nan  # 'a' answered 20 items
    long = (
        wide.rename_axis("model")
        .reset_index()
        .melt(id_vars="model", var_name="item", value_name="score")
        .dropna()
    )
    path = tmp_path_factory.mktemp("near") / "answers.csv"
    long.to_csv(path, index=False)
    return cal, path, wide


def test_a_model_without_rows_names_every_near_name_with_its_answers(setup):
    cal, path, wide = setup
    near = (
        "; did you mean 'A ' or 'a'? They differ from 'A' only by case or surrounding spaces "
        "('A ': 30 answer(s), 'a': 20 answer(s)); model names are matched exactly: give the "
        "one meant as it is written"
    )
    for responses in (path, wide):
        with pytest.raises(InputError) as err:
            estimate(cal, responses, model="A", budget=10)
        assert str(err.value).endswith(near) and "'B', " in str(err.value), err.value
        with pytest.raises(InputError) as err:
            estimate_many(cal, responses, models=["A"], budget=10)
        assert str(err.value).endswith(near) and "'B', " in str(err.value), err.value


def test_matching_stays_exact_and_a_name_without_near_names_says_nothing_more(setup):
    cal, path, _ = setup
    result = estimate(cal, path, model="a", budget=10)  # 'a' itself: its 20 answers only
    assert result.model == "a"
    with pytest.raises(InputError) as err:
        estimate(cal, path, model="C", budget=10)
    assert str(err.value).endswith(")") and "did you mean" not in str(err.value), err.value
