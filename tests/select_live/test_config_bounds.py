"""Live-run configuration bounds (issue 15, item 14): refused before anything is written."""

from __future__ import annotations

import pytest

from latentbench.exceptions import InputError
from latentbench.select.live import LiveConfig, run_live


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("retries = 1000000", r"retries=1000000; expected an integer in \[0, 100\]"),
        ("retries = 2.7", r"retries=2\.7; expected an integer"),
        ("timeout = nan", r"timeout=nan; expected a number in"),
        ("timeout = 0.0", r"timeout=0\.0; expected a number in"),
        ("backoff = 1e308", r"backoff=1e\+308; expected a number in \[0, 3600\]"),
        ("max_backoff = inf", r"max_backoff=inf; expected a number in"),
        ("concurrency = 100000", r"concurrency=100000; expected an integer in \[1, 256\]"),
    ],
)
def test_oracle_options_out_of_bounds_are_refused(live_setup, line, pattern):
    s = live_setup
    text = s.write_config().read_text()
    key = line.split(" = ")[0]
    lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key} = ")]
    at = lines.index("[oracle]") + 1
    lines.insert(at, line)
    config = s.tmp / "bounds.toml"
    config.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=pattern):
        LiveConfig.from_toml(config)


def test_a_configuration_refused_late_leaves_no_running_run(live_setup, monkeypatch):
    # the run row used to be written before the oracle was built, so a refusal there left a
    # run 'running' forever
    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    monkeypatch.delenv(s.key_env)
    path = s.tmp / "late.duckdb"
    with pytest.raises(InputError):
        run_live(cfg, path)
    assert not path.exists()  # no run row, nor the store this call made: removed
