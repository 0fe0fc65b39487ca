"""Editing ``[proxy] history`` starts a new run (its hash is part of the identity): the run
it does not resume, and what that run paid beside the new spend cap, are said and recorded
(it started silently, reusing the stored answers under a cap of its own)."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from latentbench.exceptions import DataWarning
from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live


def test_an_edited_history_names_the_run_it_leaves_and_what_it_paid(live_setup):
    s = live_setup
    config = s.write_config(s.tmp / "cap.toml", run={"spend_cap": 40})
    store = s.tmp / "edited.duckdb"
    first = run_live(LiveConfig.from_toml(config), store)
    assert first.status == "capped"
    paid = sum(s.state.answered.values())
    with warnings.catch_warnings():  # the same files again: a resume, nothing said
        warnings.simplefilter("error", DataWarning)
        again = run_live(LiveConfig.from_toml(config), store)
    assert again.run_id == first.run_id
    history = pd.read_csv(s.tmp / "history.csv")
    history.iloc[0, 1] = 1 - history.iloc[0, 1]  # one cell of the history edited
    history.to_csv(s.tmp / "history.csv", index=False)
    said = (
        rf"starting run 'live-[0-9a-f]+', not resuming run '{first.run_id}' \(capped, "
        rf"{paid} paid\): \[proxy\] history changed .*this run's spend_cap counts only its "
        rf"own requests, beside the {paid} already paid"
    )
    with pytest.warns(DataWarning, match=said):
        second = run_live(LiveConfig.from_toml(config), store)
    assert second.run_id != first.run_id
    with Store(store, read_only=True) as db:
        record = db.selection_run(second.run_id)["config"]
    assert record["abandons"] == [
        {"run_id": first.run_id, "why": "history", "changed": ["[proxy] history"],
         "status": "capped", "requests": paid}
    ]  # fmt: skip
