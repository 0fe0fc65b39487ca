"""Integer options of the public functions take integers only: ``budget=100.0`` was read as
100 items while ``k=100.0``, ``seed=1.0`` and ``rank=1.0`` were refused (one rule:
:func:`latentbench._checks.check_count`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench import InputError, TwoPL, estimate
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def small():
    matrix = simulate_2pl(30, 80, random_state=1).matrix
    answers = pd.Series(np.asarray(matrix.scores)[0], index=matrix.item_ids)
    return matrix, answers


@pytest.mark.parametrize("budget", [100.0, 100.5, True, 0, -3, "100", float("nan")])
def test_estimate_budget_refused(small, budget):
    matrix, answers = small
    with pytest.raises(InputError, match=rf"budget={budget!r}; expected a positive integer"):
        estimate(matrix, answers, model="x", budget=budget)


def test_estimate_budget_numpy_integer_taken(small):
    matrix, answers = small
    result = estimate(matrix, answers, model="x", budget=np.int64(20), seed=0)
    assert result.n_evaluated == 20


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_iter", 50.0), ("max_iter", 50.5), ("max_iter", True), ("max_rank", 2.0),
     ("random_state", 1.0), ("random_state", -1)],
)  # fmt: skip
def test_twopl_integer_options_refused(small, option, value):
    with pytest.raises(InputError, match=rf"{option}={value!r}; expected (None, )?an integer >= "):
        TwoPL(**{option: value}).fit(small[0])


def test_check_count():
    from latentbench._checks import check_count

    assert check_count(np.int32(3), "k") == 3 and type(check_count(np.int32(3), "k")) is int
    assert check_count(0, "n", minimum=0) == 0
    for bad in (3.0, True, "3", None, 0):
        with pytest.raises(InputError, match=rf"k={bad!r}; expected an integer >= 1"):
            check_count(bad, "k")
