"""``estimate --live --weights`` and ``compare --live --weights``: weighted live runs, their run
ids and their resume."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.io import ResponseMatrix
from latentbench.select import compare, compare_live, estimate
from latentbench.select._estimate_live import estimate_live


def _calibration(s) -> ResponseMatrix:
    return ResponseMatrix.from_wide(pd.read_csv(s.tmp / "history.csv").set_index("model"))


def _groups(s, sizes: tuple[int, ...]) -> pd.Series:
    ids = [f"q{k:03d}" for k in range(s.Y.shape[1])]
    labels = np.repeat([f"g{k}" for k in range(len(sizes))], sizes)
    return pd.Series(labels, index=ids)


def _cli_inputs(s) -> tuple:
    """The calibration (the history) as a CSV and a weights file of two groups (a quarter of
    the items and the rest), for the CLI tests."""
    cal_path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(cal_path, index=False)
    n = s.Y.shape[1]
    weights = s.tmp / "w.csv"
    groups = _groups(s, (n // 4, n - n // 4)).rename_axis("item").rename("group")
    groups.reset_index().to_csv(weights, index=False)
    return cal_path, weights


def _table(s) -> dict[str, pd.Series]:
    ids = [it["id"] for it in s.items]
    return {name: pd.Series(s.Y[k], index=ids, name=name) for k, name in enumerate(s.names)}


def test_live_estimate_with_weights_is_the_replay_and_other_weights_are_another_run(
    live_setup,
):
    """A weighted live estimate draws and scores as the weighted estimate of the same answers;
    the weights' hash is part of the run's id: the same weights resume it (nothing paid
    again), other weights start a new run that reuses the paid answers (as a changed
    calibration does), and equal weights are the unweighted run itself."""
    s = live_setup
    config = s.write_config()
    store = s.tmp / "w.duckdb"
    cal = _calibration(s)
    n = s.Y.shape[1]
    groups = _groups(s, (n // 6, n // 3, n - n // 6 - n // 3))
    first = estimate_live(cal, config, store, model="model-2", budget=10, seed=3, weights=groups)
    assert first.options["weights"]["kind"] == "groups"
    assert first.summary().startswith("macro score over 3 groups")
    answers = dict(zip(groups.index, s.Y[2], strict=True))
    replay = estimate(cal, answers, model="model-2", budget=10, seed=3, weights=groups)
    assert (first.items, first.score, first.lower, first.upper, first.rank) == (
        replay.items, replay.score, replay.lower, replay.upper, replay.rank)  # fmt: skip
    paid = sum(s.state.answered.values())
    again = estimate_live(cal, config, store, model="model-2", budget=10, seed=3, weights=groups)
    assert again.options["live"]["run_id"] == first.options["live"]["run_id"]
    assert sum(s.state.answered.values()) == paid and again.options["live"]["n_paid"] == 0
    other = pd.Series(np.arange(1.0, n + 1.0), index=groups.index)
    moved = estimate_live(cal, config, store, model="model-2", budget=10, seed=3, weights=other)
    assert moved.options["live"]["run_id"] != first.options["live"]["run_id"]
    known = set(first.items)
    assert moved.options["live"]["n_reused"] == len(set(moved.items) & known)
    plain = estimate_live(cal, config, store, model="model-2", budget=10, seed=3)
    equal = estimate_live(cal, config, store, model="model-2", budget=10, seed=3,
                          weights={i: 1.0 for i in groups.index})  # fmt: skip
    assert equal.options["live"]["run_id"] == plain.options["live"]["run_id"]
    assert (equal.items, equal.score, equal.lower) == (plain.items, plain.score, plain.lower)


def test_live_estimate_cli_with_weights(live_setup):
    from latentbench.cli import _register, app

    _register()
    s = live_setup
    config = s.write_config()
    cal_path, weights = _cli_inputs(s)
    res = CliRunner().invoke(
        app,
        ["estimate", str(cal_path), "--live", str(config), "--store", str(s.tmp / "c.duckdb"),
         "--model", "model-1", "--budget", "6", "--weights", str(weights), "--json"],
        env={s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["options"]["weights"]["n_groups"] == 2 and data["n_evaluated"] == 6


def test_live_compare_with_weights_is_the_replay_and_other_weights_are_another_run(live_setup):
    """A weighted live comparison draws and scores as the weighted comparison of the same
    answers; the weights' hash is part of the run's id: the same weights resume it (nothing
    paid again), other weights start another run, and equal weights are the plain run."""
    s = live_setup
    config = s.write_config()
    store = s.tmp / "w.duckdb"
    cal = _calibration(s)
    n = s.Y.shape[1]
    groups = _groups(s, (n // 6, n // 3, n - n // 6 - n // 3))
    pair = {"model_a": "model-3", "model_b": "model-0", "budget": 12, "seed": 2}
    first = compare_live(cal, config, store, weights=groups, **pair)
    assert first.options["weights"]["kind"] == "groups"
    assert first.summary().startswith("macro difference over 3 groups model-3 - model-0")
    replay = compare(cal, _table(s), weights=groups, **pair)
    for field in ("items", "probabilities", "difference", "lower", "upper", "stopped"):
        assert getattr(first, field) == getattr(replay, field), field
    paid = sum(s.state.answered.values())
    again = compare_live(cal, config, store, weights=groups, **pair)
    assert again.options["live"]["run_id"] == first.options["live"]["run_id"]
    assert sum(s.state.answered.values()) == paid and again.options["live"]["n_paid"] == 0
    other = pd.Series(np.arange(1.0, n + 1.0), index=groups.index)
    moved = compare_live(cal, config, store, weights=other, **pair)
    assert moved.options["live"]["run_id"] != first.options["live"]["run_id"]
    # another run, which pays only for the items the first did not ask: the rest reused
    reused = moved.options["live"]["n_reused"]
    assert reused == 2 * len(set(moved.items) & set(first.items)) > 0
    assert sum(s.state.answered.values()) - paid == moved.options["live"]["n_paid"]
    plain = compare_live(cal, config, store, **pair)
    equal = compare_live(cal, config, store, weights={i: 1.0 for i in groups.index}, **pair)
    assert equal.options["live"]["run_id"] == plain.options["live"]["run_id"]
    assert (equal.items, equal.difference, equal.lower, equal.upper) == (
        plain.items, plain.difference, plain.lower, plain.upper)  # fmt: skip


def test_live_compare_cli_with_weights(live_setup):
    from latentbench.cli import _register, app

    _register()
    s = live_setup
    config = s.write_config()
    cal_path, weights = _cli_inputs(s)
    res = CliRunner().invoke(
        app,
        ["compare", str(cal_path), "--live", str(config), "--store", str(s.tmp / "c.duckdb"),
         "--a", "model-1", "--b", "model-2", "--budget", "6", "--weights", str(weights),
         "--json"],
        env={s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")},
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["options"]["weights"]["n_groups"] == 2 and data["n_evaluated"] <= 6
    assert data["summary"].startswith("macro difference over 2 groups")
