"""``estimate`` live through the real lm-eval: ``lm-eval run --samples`` for each asked item.

The bridge (``[oracle] kind = "lm-eval"``, ``execute = true``) runs the harness once per item the
estimate asks (the estimate draws one item per round), so the budget is kept at two: two
harness processes. The live result must equal a replay of the same answer table, and the local
server must see each asked cell exactly once.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from latentbench.io import ResponseMatrix
from latentbench.io.store import Store
from latentbench.select import estimate
from latentbench.select._estimate_live import estimate_live

from ..select_live.conftest import make_data
from .conftest import TableServer
from .test_lm_eval_bridge import _config, bridge_files

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("lm_eval") is None,
        reason="lm-eval is not installed (pip install '.[harness]')",
    ),
]

BUDGET = 2  # one harness process per asked item


@pytest.mark.slow
def test_estimate_through_real_lm_eval_equals_replay(tmp_path: Path, monkeypatch):
    Y, H, items = make_data(m=3, n=40, n_history=30, seed=8)
    server = TableServer(Y, items, [f"model-{k}" for k in range(3)])
    try:
        # the estimate's items are lm-eval doc ids; the calibration uses the same columns
        tasks, ids, hist = bridge_files(tmp_path, items, H, monkeypatch)
        calibration = ResponseMatrix.from_wide(hist)
        config = _config(tmp_path, server, tasks)
        store = tmp_path / "live.duckdb"
        live = estimate_live(calibration, config, store, model="model-1", budget=BUDGET, seed=5)
        counts = server.counts()
        # the same call again replays the store: no harness run, no request
        again = estimate_live(calibration, config, store, model="model-1", budget=BUDGET, seed=5)
        assert server.counts() == counts
    finally:
        server.close()
    replay = estimate(
        calibration,
        dict(zip(ids, Y[1], strict=True)),
        model="model-1",
        budget=BUDGET,
        seed=5,
    )

    assert live.stopped == "budget" and live.n_evaluated == BUDGET and live.n_items == 40
    assert live.items == replay.items and live.answers == replay.answers
    assert (live.score, live.lower, live.upper) == (replay.score, replay.lower, replay.upper)
    assert (live.theta, live.rank, live.rank_lower, live.rank_upper) == (
        replay.theta,
        replay.rank,
        replay.rank_lower,
        replay.rank_upper,
    )
    assert np.array_equal(np.asarray(live.answers), Y[1, [int(i) for i in live.items]])
    assert live.options["live"]["n_paid"] == BUDGET
    assert again.options["live"]["n_paid"] == 0 and again.items == live.items
    # each asked cell went through the harness to the server exactly once, nothing else did
    assert counts == {("model-1", items[int(i)]["id"]): 1 for i in live.items}
    # one harness process per asked item, each with its own results file
    results = sorted((tmp_path / "lm_eval_out").glob("*/results_*.json"))
    assert len(results) == BUDGET
    assert all(json.loads(p.read_text())["lm_eval_version"] for p in results)
    with Store(store, read_only=True) as db:
        observed = db.selection_observations(live.options["live"]["run_id"])
    assert sorted(observed["item"]) == sorted(live.items)
