"""``[policy] delta`` above 0.5 is refused naming the key, before the run is stored."""

from __future__ import annotations

import pytest

from latentbench.exceptions import InputError
from latentbench.select.live import LiveConfig, run_live


def test_a_live_delta_above_one_half_is_refused_before_the_run_is_stored(live_setup):
    s = live_setup
    config = s.write_config()
    config.write_text(config.read_text().replace("refit_every = 3", "refit_every = 3\ndelta = 0.8"))
    with pytest.raises(InputError, match=r"run\.toml: \[policy\] delta=0\.8; expected a value "):
        run_live(LiveConfig.from_toml(config), s.tmp / "s.duckdb")
    assert not (s.tmp / "s.duckdb").exists()  # no run row, nor the store this call made
    assert not s.state.requests
