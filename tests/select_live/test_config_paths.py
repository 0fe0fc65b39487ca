"""Paths in a ``select live`` configuration: relative to the configuration file's folder
wherever the command runs from (docs/live.md), ``~`` the home folder (a TOML string is always
quoted, so no shell expands it), spaces kept."""

from __future__ import annotations

import shutil
from pathlib import Path

from latentbench.select.live import LiveConfig


def test_relative_paths_are_the_config_folders_from_any_cwd(live_setup, monkeypatch, tmp_path):
    s = live_setup
    folder = tmp_path / "my runs"  # a space in the folder
    folder.mkdir()
    config = s.write_config(folder / "run.toml")
    shutil.copy(s.tmp / "items.jsonl", folder / "items.jsonl")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = LiveConfig.from_toml(Path("..") / "my runs" / "run.toml")
    assert cfg.items_path == (folder / "items.jsonl").resolve()
    assert cfg.history == (folder / "history.csv").resolve()
    assert [item["id"] for item in cfg.load_items()] == [it["id"] for it in s.items]
    assert config.exists()


def test_a_tilde_in_the_config_is_the_home_folder(live_setup, monkeypatch, tmp_path):
    """``history = "~/h.csv"`` reads the home folder's file, not ``<config folder>/~/h.csv``;
    ``samples_dir = "~/samples"`` is not a folder named ``~`` beside the configuration."""
    s = live_setup
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    shutil.copy(s.tmp / "history.csv", home / "history.csv")
    shutil.copy(s.tmp / "items.jsonl", home / "items.jsonl")
    config = s.write_config()
    text = config.read_text()
    text = text.replace('history = "history.csv"', 'history = "~/history.csv"')
    text = text.replace('path = "items.jsonl"', 'path = "~/items.jsonl"')
    config.write_text(text)
    cfg = LiveConfig.from_toml(config)
    assert cfg.history == (home / "history.csv").resolve()
    assert cfg.items_path == (home / "items.jsonl").resolve()
    lm_eval = LiveConfig.from_dict(
        {
            "run": {"policy": "uniform", "budget": 8},
            "oracle": {
                "kind": "lm-eval",
                "task": "t",
                "samples_dir": "~/samples",
                "plan_dir": "~/plans",
            },
            "items": {"path": "~/items.jsonl"},
            "models": [
                {"name": "a", "lm_eval_model": "org/a"},
                {"name": "b", "lm_eval_model": "org/b"},
            ],
        },
        base_dir=tmp_path,
    )
    assert Path(lm_eval.oracle.samples_dir) == (home / "samples").resolve()
    assert Path(lm_eval.oracle.plan_dir) == (home / "plans").resolve()


def test_a_config_saved_by_notepad_and_a_folder_given_for_it(live_setup, tmp_path):
    """A byte-order mark before ``[run]`` reads (before: 'not valid TOML'); a folder given
    as the configuration is said to be a folder, not 'not found'."""
    import codecs

    import pytest

    from latentbench.exceptions import InputError

    s = live_setup
    config = s.write_config()
    plain = LiveConfig.from_toml(config)
    config.write_bytes(codecs.BOM_UTF8 + config.read_bytes().replace(b"\n", b"\r\n"))
    assert LiveConfig.from_toml(config).identity() == plain.identity()
    with pytest.raises(InputError, match=r"is a folder; expected the configuration"):
        LiveConfig.from_toml(tmp_path)
