"""The IRT twins of ``latentbench fit`` (the hostile walk of 2026-12-05)."""

from __future__ import annotations

import pytest

from latentbench.exceptions import InputError
from latentbench.irt import TwoPL
from latentbench.synthetic import simulate_2pl


def test_an_l2_with_the_default_prior_is_refused_as_the_command_refuses_it():
    # F3: TwoPL(l2=1.0).fit(m) gave the default fit and recorded l2=None, silently
    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with pytest.raises(InputError, match=r"l2=1\.0 with prior='auto'.*expected prior=None"):
        TwoPL(l2=1.0).fit(matrix)
    with pytest.raises(InputError, match=r"l2=1\.0"):
        TwoPL(l2=1.0).validate()
    assert TwoPL(prior=None, l2=1.0).fit(matrix).options["l2"] == 1.0
    assert TwoPL().fit(matrix).options["l2"] is None  # the default still fits
