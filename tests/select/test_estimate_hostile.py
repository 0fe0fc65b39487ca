"""The new-model estimate's hostile walk (h184): the sequential engine driven by hand, the
calibration's scores at the bounds, ... each test reproduces one finding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.select._estimate_calibration import from_matrix
from latentbench.select._estimate_design import SequentialEstimate


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
