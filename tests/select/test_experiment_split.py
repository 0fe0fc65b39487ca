"""``split_models`` refuses a split that leaves a history or a pool too small to run."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select import split_models


@pytest.mark.parametrize("n_models", [2, 3])
def test_too_few_models_to_halve_are_refused_with_the_counts(n_models):
    with pytest.raises(InputError, match=rf"{n_models} models: halving them leaves 1 history"):
        split_models(n_models, how="random")


def test_four_models_give_two_and_two():
    history, candidates = split_models(4, how="random", random_state=0)
    assert len(history) == len(candidates) == 2


def test_degenerate_experiments_are_refused():
    """`--budget 0` printed a table of nan +- nan; `--pool-size 1` "selected" from one model."""
    from latentbench.exceptions import InputError
    from latentbench.select import experiment_from_matrix

    scores = (np.random.default_rng(0).random((12, 30)) < 0.5).astype(float)
    with pytest.raises(InputError, match=r"pool_size=1; expected an integer >= 2"):
        experiment_from_matrix(scores, pool_size=1, seeds=1, budget=50)
    with pytest.raises(InputError, match=r"budget=0; expected a positive number"):
        experiment_from_matrix(scores, seeds=1, budget=0)
    with pytest.raises(InputError, match=r"seeds=0; expected at least one seed"):
        experiment_from_matrix(scores, seeds=0, budget=50)
