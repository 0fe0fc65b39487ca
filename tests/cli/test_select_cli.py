"""``latentbench select replay``: what the last lines say when the run cannot certify."""

from __future__ import annotations

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


def test_a_tie_at_the_top_after_every_cell_is_named(tmp_path):
    candidates = _wide(["a", "b", "c"], seed=0)
    best = candidates.mean(axis=1).idxmax()
    candidates.loc["twin"] = candidates.loc[best]  # the same answers: no certificate can exist
    history = _wide([f"h{i}" for i in range(6)], seed=1)
    cand, hist = tmp_path / "cand.csv", tmp_path / "hist.csv"
    candidates.reset_index().to_csv(cand, index=False)
    history.reset_index().to_csv(hist, index=False)
    out = str(tmp_path / "run")
    args = ["select", "replay", str(cand), "--history", str(hist), "-q", "--out", out]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert "stopped: every cell revealed" in text and "not certified" in text
    other = "twin" if f"best {best}:" in text else best
    assert f"(every cell revealed: tied with {other} at" in text
