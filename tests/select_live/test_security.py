"""API keys stay in the environment; item text is data; bad keys are errors, not zeros."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import load_items
from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live


def _store_bytes(path) -> bytes:
    data = path.read_bytes()
    wal = path.with_name(path.name + ".wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def test_key_never_stored_or_printed(live_setup):
    s = live_setup
    config = s.write_config()
    store = s.tmp / "cli.duckdb"
    _register()
    result = CliRunner().invoke(
        app, ["select", "live", "--config", str(config), "--store", str(store), "--json"]
    )
    assert result.exit_code == 0, result.output
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "best model" in output and s.api_key not in output
    assert json.loads(result.stdout[result.stdout.index("{") :])["status"] == "done"
    assert s.api_key.encode() not in _store_bytes(store)
    with Store(store, read_only=True) as db:
        stored = db.connection.execute("SELECT config FROM selection_runs").fetchall()[0][0]
    assert s.key_env in stored and s.api_key not in stored


def test_bad_key_is_a_per_cell_error_not_retried(live_setup, monkeypatch):
    s = live_setup
    wrong = "sk-wrong-DO-NOT-LEAK-123"
    monkeypatch.setenv(s.key_env, wrong)
    cfg = LiveConfig.from_toml(s.write_config())
    path = s.tmp / "badkey.duckdb"
    result = run_live(cfg, path)
    assert result.status == "failed"
    assert len(result.errors) == cfg.run.init_batch  # the first batch, every cell failed
    for error in result.errors["error"]:
        assert error.startswith("HTTP 401") and "***" in error and wrong not in error
    assert len(s.state.requests) == 0  # the server refused before logging a cell
    assert s.state.n_unauthorized == cfg.run.init_batch  # one attempt per cell: 401 is final
    assert wrong.encode() not in _store_bytes(path)
    with Store(path, read_only=True) as db:
        rows = db.selection_observations(result.run_id)
    assert rows["score"].isna().all() and len(rows) == cfg.run.init_batch


def test_missing_env_and_inline_key_are_refused(live_setup, monkeypatch):
    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    monkeypatch.delenv(s.key_env)
    with pytest.raises(InputError, match=s.key_env):
        run_live(cfg, s.tmp / "x.duckdb")
    text = s.write_config().read_text().replace("api_key_env", "api_key", 1)
    bad = s.tmp / "inline.toml"
    bad.write_text(text)
    with pytest.raises(InputError, match="api_key is not allowed"):
        LiveConfig.from_toml(bad)


def test_item_text_is_data(tmp_path):
    marker = tmp_path / "PWNED"
    prompt = f"__import__('os').system('touch {marker}') {{config}} $(touch {marker})"
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": 1, "prompt": prompt, "answer": "x"}) + "\n")
    items = load_items(path)
    assert items == [{"id": "1", "prompt": prompt, "answer": "x"}]
    assert not marker.exists()


def test_redirects_are_refused(live_setup):
    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["redirect"]
    result = run_live(LiveConfig.from_toml(s.write_config()), s.tmp / "redirect.duckdb")
    assert result.status == "failed" and len(result.errors) == 8
    for error in result.errors["error"]:
        assert error.startswith("HTTP 302: redirects are not followed")
        assert "after 1 attempt(s)" in error
    assert s.state.other_paths == []  # the key was not sent anywhere else
