"""``split_models`` refuses a split that leaves a history or a pool too small to run."""

from __future__ import annotations

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
