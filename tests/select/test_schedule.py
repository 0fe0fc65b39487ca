"""default_schedule: batch size and initial batch from the pool's shape."""

from __future__ import annotations

import pytest

from latentbench.exceptions import InputError
from latentbench.select._schedule import (
    MAX_BATCH,
    MIN_BATCH,
    ROUNDS_PER_MODEL,
    default_schedule,
)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((29, 1700, None), (16, 16)),  # BFCL gap 0.02
        ((27, 754, None), (16, 16)),  # AlpacaEval 1
        ((29, 797, None), (16, 16)),  # AlpacaEval 2
        ((15, 10326, None), (16, 16)),  # MMLU-Pro
    ],
)
def test_shared_pools(shape, expected):
    assert default_schedule(*shape) == expected


def test_bounds_and_monotone_in_items():
    previous = 0
    for n_items in (1, 5, 50, 500, 2_000, 5_000, 20_000, 10**6):
        batch, init = default_schedule(20, n_items, None)
        assert batch == init
        assert 1 <= batch <= min(n_items, MAX_BATCH)
        assert batch >= min(MIN_BATCH, n_items)
        assert batch >= previous
        previous = batch
    assert default_schedule(20, 10**6, None) == (MAX_BATCH, MAX_BATCH)


def test_batch_is_a_power_of_two_near_the_per_model_share():
    for n_items in (10_240, 20_480, 40_960):
        batch, _ = default_schedule(10, n_items, None)
        assert batch == n_items // ROUNDS_PER_MODEL
        assert batch & (batch - 1) == 0


def test_a_budget_shrinks_the_batch_to_its_per_model_share():
    unbounded = default_schedule(15, 40_000, None)
    assert unbounded == (MAX_BATCH, MAX_BATCH)
    assert default_schedule(15, 40_000, 10**9) == unbounded
    small = default_schedule(15, 40_000, 15 * 2_000)
    assert small[0] < unbounded[0]
    assert small == (MIN_BATCH, MIN_BATCH)
    assert default_schedule(15, 40_000, 0) == (MIN_BATCH, MIN_BATCH)


def test_tiny_benchmarks_never_exceed_their_items():
    assert default_schedule(3, 10, None) == (10, 10)
    assert default_schedule(1, 1, None) == (1, 1)


@pytest.mark.parametrize(
    "args",
    [(0, 100, None), (10, 0, None), (10, 100, -1), (1.5, 100, None), (True, 100, None)],
)
def test_bad_input_names_the_field(args):
    with pytest.raises(InputError, match=r"n_models|n_items|budget"):
        default_schedule(*args)
