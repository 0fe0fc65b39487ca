"""``latentbench select replay``: what the last lines say about an exact tie at the top."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


def _wide(models: list[str], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=len(models)), rng.normal(size=40)
    Y = (rng.random((len(models), 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    return pd.DataFrame(
        Y, index=pd.Index(models, name="model"), columns=[f"q{j}" for j in range(40)]
    )


def test_a_tie_at_the_top_is_named_and_stops_once_both_are_full(tmp_path):
    candidates = _wide(["a", "b", "c"], seed=0)
    best = candidates.mean(axis=1).idxmax()
    candidates.loc["twin"] = candidates.loc[best]  # the same answers: an exact tie
    history = _wide([f"h{i}" for i in range(6)], seed=1)
    cand, hist = tmp_path / "cand.csv", tmp_path / "hist.csv"
    candidates.reset_index().to_csv(cand, index=False)
    history.reset_index().to_csv(hist, index=False)
    out = str(tmp_path / "run")
    args = ["select", "replay", str(cand), "--history", str(hist), "-q", "--out", out]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    # the two tied rows are revealed fully; the run then stops once the others are separated
    # from their exact mean (certified: a best model), not after revealing every cell
    assert "stopped: confidence (best certified at delta = 0.05)" in text
    assert "stopped: exhausted" not in text
    assert saved_stop(tmp_path / "run") == "confidence"  # the word printed is the file's
    other = "twin" if f"best {best}:" in text else best
    assert f"certified at delta = 0.05 (tied with {other} at" in text
    assert "every cell of each revealed: a best model, not the only one" in text
    saved = json.loads((tmp_path / "run" / "selection.json").read_text())
    n_items = saved["params"]["n_items"]
    observed = {a["model"]: a["n_observed"] for a in saved["arms"]}
    assert observed[best] == observed["twin"] == n_items
    assert saved["evaluations_total"] < len(observed) * n_items


def saved_stop(run: Path) -> str:
    """The ``stopped`` field of the run's selection.json."""
    return json.loads((run / "selection.json").read_text())["stopped"]
