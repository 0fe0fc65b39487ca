"""Live selection through the real HTTP client equals the replay of the same matrix."""

from __future__ import annotations

import numpy as np

from latentbench.io.store import Store
from latentbench.select import MatrixOracle, run_selection
from latentbench.select.live import LiveConfig, run_live


def _cells(store: Store, run_id: str) -> list[tuple[int, str, str, float]]:
    frame = store.selection_observations(run_id)
    rows = zip(frame["round"], frame["model"], frame["item"], frame["score"], strict=True)
    return sorted((int(r), m, i, float(s)) for r, m, i, s in rows)


def test_live_equals_replay(live_setup):
    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    with Store(s.tmp / "live.duckdb") as db:
        live = run_live(cfg, db)
        live_cells = _cells(db, live.run_id)
        decisions = db.selection_decisions(live.run_id)
        # the scored cells are also in the canonical responses table (benchmark: items file)
        matrix = db.matrix("items", metric="exact_match")
        sources = db.connection.execute("SELECT DISTINCT source FROM responses").fetchall()
        status = db.connection.execute(
            "SELECT status, package_version FROM selection_runs"
        ).fetchall()
    with Store(s.tmp / "replay.duckdb") as db:
        replay_oracle = MatrixOracle(s.Y)
        replay = run_live(cfg, db, oracle=replay_oracle)
        replay_cells = _cells(db, replay.run_id)

    # the plain loop, no store at all
    plain_oracle = MatrixOracle(s.Y)
    plain = run_selection(
        plain_oracle,
        cfg.build_policy(),
        budget=cfg.run.budget,
        batch_size=cfg.run.batch_size,
        init_batch=cfg.run.init_batch,
        proxy=cfg.build_proxy([it["id"] for it in s.items]),
        random_state=cfg.run.seed,
        model_ids=s.names,
    )
    sel = live.selection
    assert live.status == "done" and status[0][0] == "done" and status[0][1]
    assert sel.best == replay.selection.best == plain.best
    assert sel.evaluations_total == plain.evaluations_total == 4 * 8 + 96
    # one HTTP request per cell, no retries, no cell twice
    assert len(s.state.requests) == plain_oracle.n_calls == sel.evaluations_total
    assert max(s.state.answered.values()) == 1
    assert live.n_paid == sel.evaluations_total and live.n_replayed == 0
    np.testing.assert_array_equal(sel.trace_best, plain.trace_best)
    np.testing.assert_allclose(sel.estimates, plain.estimates)
    # stored observations: same cells, same scores, same rounds as the replay
    assert live_cells == replay_cells
    assert len({(m, i) for _, m, i, _ in live_cells}) == len(live_cells)
    for _, m, i, score in live_cells:
        assert score == s.Y[s.names.index(m), int(i[1:])]
    assert sources == [(f"live:{live.run_id}",)]
    # every loop decision records the leader with its interval (PULSE has intervals)
    loop = [d for d in decisions if d["phase"] == "loop"]
    assert loop and all(d["leader"] in s.names and d["lower"] <= d["upper"] for d in loop)
    assert all("leader" not in d for d in decisions if d["phase"] == "init")
    assert int(matrix.observed.sum()) == len(live_cells)
    for r, model in enumerate(matrix.model_ids):
        for c, item in enumerate(matrix.item_ids):
            if matrix.observed[r, c]:
                assert matrix.scores[r, c] == s.Y[s.names.index(model), int(item[1:])]


def test_rerun_of_finished_run_is_free(live_setup):
    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    path = s.tmp / "live.duckdb"
    first = run_live(cfg, path)
    n = len(s.state.requests)
    second = run_live(cfg, path)
    assert second.resumed and second.status == "done"
    assert len(s.state.requests) == n  # nothing requested again
    assert second.n_paid == 0 and second.n_replayed == first.selection.evaluations_total
    assert second.selection.best == first.selection.best
    np.testing.assert_allclose(second.selection.estimates, first.selection.estimates)
