"""Size-like policy options are bounded by the data (issue 30 item 10, follow-up): refused
with the option, its value and the allowed range, before any cell is evaluated."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select import MatrixOracle, make_policy, run_selection
from latentbench.select._policies import ENSEMBLE_CELLS, UCBELRF


class CountingOracle(MatrixOracle):
    def __init__(self, scores):
        super().__init__(scores)
        self.calls = 0

    def evaluate(self, model_index, item_indices):
        self.calls += 1
        return super().evaluate(model_index, item_indices)


def test_n_ensemble_is_bounded_by_the_data_before_any_cell_is_evaluated():
    m, n = 30, 1000
    high = ENSEMBLE_CELLS // (m * n)
    assert high == 4473
    pattern = r"n_ensemble=100000; expected an integer in \[1, 4,473\] for 30 models x 1,000"
    with pytest.raises(InputError, match=r"^--policy: policy 'ucbe_lrf' option " + pattern):
        make_policy("ucbe_lrf:n_ensemble=100000", where="--policy", shape=(m, n))
    make_policy("ucbe_lrf", {"n_ensemble": high}, shape=(m, n))  # the bound itself is allowed
    # run_selection checks in any case, before the initial batch reaches the oracle
    oracle = CountingOracle(np.random.default_rng(0).random((m, n)))
    with pytest.raises(InputError, match=pattern):
        run_selection(oracle, UCBELRF(n_ensemble=100_000), budget=10, batch_size=4)
    assert oracle.calls == 0
    # the default fits the largest real matrix (MMLU-Pro, 29 x 12,032) several times over
    UCBELRF().check_sizes(29, 12_032)


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"n_ensemble": 0}, r"n_ensemble=0; expected an integer in \[1, inf\)"),
        ({"n_ensemble": 2.5}, r"n_ensemble=2\.5; expected an integer"),
        ({"n_ensemble": True}, r"n_ensemble=True; expected an integer"),
        ({"als_iter": 10**9}, r"als_iter=1000000000; expected an integer in \[1, 10,000\]"),
        ({"refit_every": 0}, r"refit_every=0; expected an integer in \[1, inf\)"),
        ({"drop": 1.0}, r"drop=1\.0; expected a number in \[0, 1\)"),
        ({"warmup": -0.1}, r"warmup=-0\.1; expected a number in \[0, 1\]"),
        ({"ridge": 0.0}, r"ridge=0\.0; expected a number in \(0, inf\)"),
        ({"eta": float("nan")}, r"eta=nan; expected a number in \[0, inf\)"),
        # inf is refused, so the range does not include it (it printed [0, inf])
        ({"eta": float("inf")}, r"eta=inf; expected a number in \[0, inf\)"),
        ({"eta": "big"}, r"eta='big'; expected a number"),
    ],
)
def test_ucbe_lrf_options_out_of_range_are_named(options, pattern):
    with pytest.raises(InputError, match=r"^cfg: \[policy\]: policy 'ucbe_lrf' option " + pattern):
        make_policy("ucbe_lrf", options, where="cfg: [policy]")
