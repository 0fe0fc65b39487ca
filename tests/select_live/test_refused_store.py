"""A live run refused before anything is written leaves no new store file behind (a bad
``[items]`` file or calibration was read after the store was made: an empty store stayed)."""

from __future__ import annotations

import pytest

from latentbench.exceptions import InputError
from latentbench.io.store import Store
from latentbench.select import compare_live
from latentbench.select._estimate_live import estimate_live
from latentbench.select.live import LiveConfig, run_live


def _gone(path) -> bool:
    return not path.exists() and not path.with_name(path.name + ".wal").exists()


def test_a_refused_live_run_leaves_no_new_store(live_setup):
    s = live_setup
    config = s.write_config()
    (s.tmp / "items.jsonl").write_text("{not json\n")
    new = s.tmp / "new.duckdb"
    with pytest.raises(InputError, match=r"items\.jsonl"):
        run_live(LiveConfig.from_toml(config), new)
    assert _gone(new)
    missing = s.tmp / "missing-calibration.parquet"
    with pytest.raises(InputError, match="missing-calibration"):
        estimate_live(missing, config, new, model="model-1", budget=8)
    assert _gone(new)
    with pytest.raises(InputError, match="missing-calibration"):
        compare_live(missing, config, new, model_a="model-0", model_b="model-1", budget=8)
    assert _gone(new)
    assert not s.state.requests


def test_a_refused_live_run_keeps_a_store_that_existed(live_setup):
    s = live_setup
    config = s.write_config()
    (s.tmp / "items.jsonl").write_text("{not json\n")
    old = s.tmp / "old.duckdb"
    with Store(old):  # made before the call (empty): never this call's to remove
        pass
    with pytest.raises(InputError, match=r"items\.jsonl"):
        run_live(LiveConfig.from_toml(config), old)
    with Store(old, read_only=True) as db:
        assert len(db.selection_runs()) == 0
