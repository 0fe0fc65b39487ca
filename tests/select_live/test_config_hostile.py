"""Hostile live configurations (issue 30, items 8, 10-12, 14) and the oracle registry (issue 31).

Credentials in ``base_url``, a proxy rank no history can have, ``run_id`` paths, control
characters reaching the terminal, a full disk mid-run and a device as the items file.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.store import Store
from latentbench.select.live import (
    ORACLES,
    LiveConfig,
    OracleOptions,
    oracle,
    oracle_help,
    run_live,
)
from latentbench.select.oracles import CallableOracle

_register()


def _edit(config: Path, old: str, new: str) -> Path:
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new, 1))
    return config


def _oracle_section(config: Path, body: str) -> Path:
    """Replace the ``[oracle]`` table of ``config`` by ``body``."""
    text = config.read_text()
    start = text.index("[oracle]\n")
    end = text.index("\n[", start)
    config.write_text(text[:start] + "[oracle]\n" + body + "\n" + text[end:])
    return config


def _live(config: Path, store: Path):
    return CliRunner().invoke(
        app, ["select", "live", "--config", str(config), "--store", str(store), "--quiet"]
    )


# ------------------------------------------------------------------ item 8: credentials
@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("http://user:pw-SECRET-123@127.0.0.1:{port}/v1", "pw-SECRET-123"),
        ("http://tok-SECRET-456@127.0.0.1:{port}/v1", "tok-SECRET-456"),
        ("http://127.0.0.1:{port}/v1?api_key=sk-SECRET-789", "sk-SECRET-789"),
        # a key pasted as the base_url was quoted by "expected an http:// or https:// URL";
        # a token in the fragment and Azure Functions' ?code= key were accepted and stored
        ("sk-proj-SECRET-abc123", "SECRET-abc123"),
        ("http://127.0.0.1:{port}/v1#access_token=SECRET-def456", "SECRET-def456"),
        ("http://127.0.0.1:{port}/v1?code=SECRET-ghi789", "SECRET-ghi789"),
    ],
)
def test_credentials_in_base_url_are_refused_and_never_stored(live_setup, url, secret):
    s = live_setup
    config = s.write_config()
    _edit(
        config,
        f'base_url = "http://127.0.0.1:{s.port}/v1"',
        f'base_url = "{url.format(port=s.port)}"',
    )
    store = s.tmp / "cred.duckdb"
    outcome = _live(config, store)
    assert outcome.exit_code == 2, outcome.output
    assert "api_key_env" in outcome.output and secret not in outcome.output
    assert "Traceback" not in outcome.output
    assert not store.exists() or secret.encode() not in store.read_bytes()


# ------------------------------------------------------------------ item 10: sizes
@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("rank = 100000", r"\[proxy\] rank=100000; expected an integer in \[1, 24\]"),
        ("rank = 0", r"rank=0; expected an integer in \[1, 24\]"),
        ("max_iter = 10000000000", r"max_iter=10000000000; expected an integer in"),
        ("cv_grid = [1, 2, 100000]", r"cv_grid=\[1, 2, 100000\]; expected a list"),
    ],
)
def test_size_like_proxy_options_are_bounded_by_the_data(live_setup, line, pattern):
    s = live_setup
    config = _edit(s.write_config(), "rank = 2", line)
    cfg = LiveConfig.from_toml(config)
    with pytest.raises(InputError, match=pattern):
        run_live(cfg, s.tmp / "sizes.duckdb")
    assert not (s.tmp / "sizes.duckdb").exists()  # refused before any run row: no store


# ------------------------------------------------------------------ item 11: run_id, terminal
@pytest.mark.parametrize("run_id", ["../../escape", "/abs", ".hidden", "a/b", "x\x00y", "x\x1b[2J"])
def test_run_id_must_be_a_plain_name(live_setup, run_id):
    s = live_setup
    config = s.write_config(run={"run_id": run_id})
    with pytest.raises(InputError, match=r"\[run\] run_id=.*; expected 1-128 letters"):
        LiveConfig.from_toml(config)


HOSTILE = "bench\x00\x1b[2J\u202eevil\u2028x\r"


def test_control_characters_from_the_config_never_reach_the_terminal(live_setup):
    s = live_setup
    config = s.write_config(run={"benchmark": HOSTILE, "budget": 16})
    _edit(config, f'name = "{s.names[0]}"', 'name = "model\\u001b]0;pwned\\u0007-0"')
    outcome = CliRunner().invoke(
        app, ["select", "live", "--config", str(config), "--store", str(s.tmp / "t.duckdb")]
    )
    assert outcome.exit_code == 0, outcome.output
    text = outcome.output
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2028\u2029]", text), repr(text)
    # an error quoting the benchmark is sanitised as well
    with Store(s.tmp / "t.duckdb", read_only=True) as db:
        assert HOSTILE in db.benchmarks()  # the store keeps the name as given


# ------------------------------------------------------------------ item 12: disk full
def test_disk_full_during_select_live_is_an_error_line_with_the_resume_command(
    live_setup, monkeypatch
):
    s = live_setup
    config = s.write_config()
    store = s.tmp / "full.duckdb"
    from latentbench.io.store import Store as StoreClass

    real = StoreClass.add_observations
    calls = {"n": 0}

    def filling(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 6:
            raise duckdb.TransactionException(
                "TransactionContext Error: Failed to commit: could not write file: No space left"
            )
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StoreClass, "add_observations", filling)
    outcome = _live(config, store)
    monkeypatch.setattr(StoreClass, "add_observations", real)
    text = outcome.output
    assert outcome.exit_code == 1, text
    assert "Traceback" not in text and text.count("error:") == 1
    assert "No space left" in text and "resume with: latentbench select live --config" in text
    # resuming afterwards works and loses nothing
    again = _live(config, store)
    assert again.exit_code == 0, again.output
    assert "from the store" in again.output


# ------------------------------------------------------------------ item 14: items path
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_as_the_items_file_is_named_as_such(live_setup):
    s = live_setup
    config = _edit(s.write_config(), 'path = "items.jsonl"', 'path = "/dev/zero"')
    cfg = LiveConfig.from_toml(config)
    with pytest.raises(InputError, match=r"/dev/zero: .*not a regular file"):
        cfg.load_items()


def test_items_file_not_utf8_or_too_deep_is_a_clean_error(tmp_path):
    from latentbench.io import load_items

    bad = tmp_path / "items.jsonl"
    bad.write_bytes(b'{"id": "a", "prompt": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"items\.jsonl.*UTF-8"):
        load_items(bad)
    bad.write_text('{"id": "a", "prompt": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InputError, match=r"items\.jsonl:1: .*nested"):
        load_items(bad)


# ------------------------------------------------------------------ issue 31: oracle registry
def test_unknown_oracle_kind_lists_the_registered_kinds(live_setup):
    s = live_setup
    config = s.write_config(oracle={"kind": "anthropic"})
    with pytest.raises(InputError, match=r"\[oracle\] kind='anthropic'; expected one of"):
        LiveConfig.from_toml(config)
    assert set(ORACLES) >= {"openai", "python", "lm-eval"}
    for kind in ORACLES:
        assert kind in oracle_help()


def test_a_kind_option_of_another_kind_is_refused_naming_the_kind(live_setup):
    s = live_setup
    config = s.write_config(oracle={"task": "x"})
    with pytest.raises(InputError, match=r"\[oracle\] \(kind='openai'\) has unknown key"):
        LiveConfig.from_toml(config)


def test_a_new_oracle_is_one_registration(live_setup):
    """A new kind: its options dataclass and one builder; config, checks and help follow."""
    from dataclasses import dataclass, field

    s = live_setup

    @dataclass(frozen=True)
    class EchoOptions(OracleOptions):
        level: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0})

    built = {}

    @oracle("echo-test", summary="scores every cell as `level`", options=EchoOptions)
    def _echo(config, items):
        built["level"] = config.oracle.level
        n = len(config.models)
        return CallableOracle(
            lambda model, batch: [config.oracle.level] * len(batch),
            config.model_ids[:n],
            [it["id"] for it in items],
        )

    try:
        assert "echo-test (scores every cell as `level`)" in oracle_help()
        shown = CliRunner().invoke(app, ["select", "live", "--help"], terminal_width=200)
        assert "echo-test" in shown.output and "scores every cell as" in shown.output
        config = _oracle_section(
            s.write_config(run={"budget": 16}),
            'kind = "echo-test"\nlevel = 0.5',
        )
        cfg = LiveConfig.from_toml(config)
        result = run_live(cfg, s.tmp / "echo.duckdb")
        assert result.status == "done" and built == {"level": 0.5}
        # every stored cell was scored `level` by the new oracle (the estimates are doubly
        # robust: unbiased for 0.5, not equal to it on one draw)
        from latentbench.io.store import Store

        with Store(s.tmp / "echo.duckdb", read_only=True) as db:
            scores = db.selection_observations(result.run_id)["score"]
        assert len(scores) == result.selection.evaluations_total and set(scores) == {0.5}
        bad = _oracle_section(s.write_config(), 'kind = "echo-test"\nlevel = 2.0')
        with pytest.raises(InputError, match=r"level=2\.0; expected a number in \[0, 1\]"):
            LiveConfig.from_toml(bad)
    finally:
        ORACLES.pop("echo-test")


def test_size_like_policy_options_are_bounded_by_the_data(live_setup):
    s = live_setup
    config = s.write_config(run={"policy": "ucbe_lrf"})
    _edit(config, "refit_every = 3", "refit_every = 3\nn_ensemble = 1000000000")
    cfg = LiveConfig.from_toml(config)
    m, n = len(s.names), len(s.items)
    high = 2**27 // (m * n)
    pattern = (
        rf"\[policy\]: policy 'ucbe_lrf' option n_ensemble=1000000000; expected an integer "
        rf"in \[1, {high:,}\] for {m} models x {n} items"
    )
    with pytest.raises(InputError, match=pattern):
        run_live(cfg, s.tmp / "policy.duckdb")
    assert s.state.requests == []  # nothing was paid for
    assert not (s.tmp / "policy.duckdb").exists()  # refused before any run row: no store


def test_a_misspelt_answer_field_is_refused_before_any_request(live_setup):
    """`answer_field = "anwser"` read every reference as "" and scored every paid answer 0
    (the run ended `done`, exit 0): refused, naming the file, the line and the field."""
    s = live_setup
    config = _edit(s.write_config(s.tmp / "typo.toml"), 'path = "items.jsonl"',
                   'path = "items.jsonl"\nanswer_field = "anwser"')  # fmt: skip
    store = s.tmp / "typo.duckdb"
    with pytest.raises(InputError, match=r"items.jsonl:1: field 'anwser' is missing \(fields: "):
        run_live(LiveConfig.from_toml(config), store)
    assert not s.state.requests
    # a python scorer may not need a reference: a missing one is still read as ""
    from latentbench.io import load_items

    items = load_items(s.tmp / "items.jsonl", answer_field="anwser")
    assert {it["answer"] for it in items} == {""}


def test_pulse_without_a_history_and_a_missing_history_are_refused_before_paying(live_setup):
    """policy = "pulse" without [proxy] was refused after its initial batch was paid (32
    requests, a failed run stored); a missing history file was reported as a store that
    could not be written (exit 1). Both are now configuration errors naming the key."""
    s = live_setup
    store = s.tmp / "early.duckdb"
    config = s.write_config(s.tmp / "noproxy.toml")
    text = config.read_text()
    config.write_text(text.replace('[proxy]\nhistory = "history.csv"\nrank = 2\n', ""))
    with pytest.raises(InputError, match=r"noproxy.toml: \[run\] policy = 'pulse' needs \[proxy\]"):
        run_live(LiveConfig.from_toml(config), store)
    assert not s.state.requests
    assert not store.exists()  # refused before any run row: no store
    for name, target in (("missing", "histroy.csv"), ("folder", ".")):
        bad = _edit(s.write_config(s.tmp / f"{name}.toml"), 'history = "history.csv"',
                    f'history = "{target}"')  # fmt: skip
        with pytest.raises(InputError, match=rf"{name}.toml: \[proxy\] history = .*: (no such "
                           "file|not a file); expected a response matrix file"):  # fmt: skip
            run_live(LiveConfig.from_toml(bad), s.tmp / f"{name}.duckdb")
    outcome = CliRunner().invoke(app, ["select", "live", "--config", str(s.tmp / "missing.toml"),
                                       "--store", str(s.tmp / "m.duckdb")])  # fmt: skip
    assert outcome.exit_code == 2 and "no such file" in " ".join(outcome.output.split())
    assert not s.state.requests


def test_a_base_url_without_a_scheme_names_the_file_and_the_table(live_setup):
    s = live_setup
    config = _edit(s.write_config(s.tmp / "scheme.toml"), f'"http://127.0.0.1:{s.port}/v1"',
                   f'"127.0.0.1:{s.port}/v1"')  # fmt: skip
    with pytest.raises(InputError, match=r"scheme.toml: \[\[models\]\] #1: base_url = "
                       r"'127\.0\.0\.1:\d+/v1'; expected an http:// or https:// URL"):  # fmt: skip
        LiveConfig.from_toml(config)


def test_a_proxy_option_out_of_range_names_the_file_and_the_table(live_setup):
    """``[proxy] sigma = -1`` was refused as "sigma=-1; expected a positive number", with
    neither the file nor the table; now both, before any request."""
    s = live_setup
    for option, shown in (("sigma = -1", "sigma=-1"), ('l2 = "x"', "l2='x'")):
        config = _edit(s.write_config(s.tmp / "opt.toml"), "rank = 2", f"rank = 2\n{option}")
        with pytest.raises(InputError, match=rf"opt.toml: \[proxy\] {shown}; expected a "):
            run_live(LiveConfig.from_toml(config), s.tmp / "opt.duckdb")
    assert not s.state.requests
