"""A live run without a budget stops when the best is certified (issue 29 defaults)."""

from __future__ import annotations

from latentbench.io.store import Store
from latentbench.select import MatrixOracle, SelectionRecord, default_schedule
from latentbench.select.live import LiveConfig, run_live


def test_live_without_a_budget_stops_certified(live_setup):
    s = live_setup
    path = s.write_config()
    text = path.read_text().replace("budget = 96\n", "")
    text = text.replace("batch_size = 8\n", "").replace("init_batch = 8\n", "")
    path.write_text(text)
    cfg = LiveConfig.from_toml(path)
    assert cfg.run.budget is None and cfg.run.stop is None
    with Store(s.tmp / "defaults.duckdb") as db:
        live = run_live(cfg, db, oracle=MatrixOracle(s.Y))
        record = SelectionRecord.from_store(db, live.run_id)
    sel = live.selection
    assert live.status == "done" and sel is not None
    m, n = s.Y.shape
    batch, start = default_schedule(m, n)
    assert sel.params["stop"] == "confidence" and sel.params["batch_size"] == batch
    assert sel.evaluations_init == m * start
    assert sel.stopped in ("confidence", "exhausted")
    assert sel.stopped == "exhausted" or (sel.certified and sel.evaluations_total < m * n)
    assert record.best_model == str(sel.best_id) and record.n_items == n
