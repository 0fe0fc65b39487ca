"""A live run started before ``alpha`` was renamed ``delta`` resumes under either spelling."""

from __future__ import annotations

import json
import threading

import pytest

from latentbench.io.store import Store
from latentbench.select import MatrixOracle
from latentbench.select.live import LiveConfig, run_live


def _config(s, key: str):
    path = s.write_config(s.tmp / f"{key}.toml")
    text = path.read_text().replace("refit_every = 3", f"refit_every = 3\n{key} = 0.2")
    path.write_text(text)
    return path


def test_run_stored_with_alpha_resumes_with_delta(live_setup):
    s = live_setup
    with pytest.warns(FutureWarning, match=r"\[policy\]: alpha is deprecated; use delta"):
        old = LiveConfig.from_toml(_config(s, "alpha"))
    new = LiveConfig.from_toml(_config(s, "delta"))
    assert old.default_run_id() == new.default_run_id()

    # an uninterrupted run, for reference
    with Store(s.tmp / "whole.duckdb") as db:
        whole = run_live(new, db, oracle=MatrixOracle(s.Y))
    # a run interrupted after its first batch, its stored identity as the old code wrote it
    stop = threading.Event()
    with Store(s.tmp / "split.duckdb") as db:
        first = run_live(old, db, oracle=MatrixOracle(s.Y), stop_event=stop,
                         progress=lambda p: stop.set())  # fmt: skip
        assert first.status != "done"
        stored = db.selection_run(first.run_id)["config"]
        assert stored["identity"]["policy_params"] == {"delta": 0.2, "refit_every": 3}
        stored["identity"]["policy_params"] = {"alpha": 0.2, "refit_every": 3}
        db.connection.execute(
            "UPDATE selection_runs SET config = ? WHERE run_id = ?",
            [json.dumps(stored, sort_keys=True), first.run_id],
        )
        resumed = run_live(new, db, oracle=MatrixOracle(s.Y))
    assert resumed.run_id == first.run_id == whole.run_id
    assert resumed.status == "done" and resumed.selection is not None
    assert whole.selection is not None
    assert resumed.selection.best == whole.selection.best
    assert resumed.selection.n_observed.tolist() == whole.selection.n_observed.tolist()
    assert resumed.selection.params["delta"] == 0.2


def test_the_command_shows_the_deprecation_in_one_line(live_setup):
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    s = live_setup
    args = ["select", "live", "--config", str(_config(s, "alpha")), "--store"]
    outcome = CliRunner().invoke(app, [*args, str(s.tmp / "cli.duckdb"), "-q", "--json"])
    assert outcome.exit_code == 0, outcome.output
    lines = [line for line in outcome.output.splitlines() if "alpha is deprecated" in line]
    assert len(lines) == 1 and lines[0].startswith("FutureWarning: ")
    assert "use delta" in lines[0] and "warnings.warn" not in outcome.output
