"""``latentbench report FIT_DIR`` and the responses file recorded in fit.json."""

from __future__ import annotations

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io import ResponseMatrix, file_sha256
from latentbench.irt import TwoPL

_register()
runner = CliRunner()


def test_a_recorded_responses_file_changed_since_the_fit_is_not_used_silently(tmp_path):
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=8), rng.normal(size=24)
    Y = (rng.random((8, 24)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(8)], columns=[f"q{j}" for j in range(24)])
    data = tmp_path / "responses.csv"
    frame.rename_axis("model").reset_index().to_csv(data, index=False)
    fit = tmp_path / "fit"  # as `latentbench fit` records its input
    TwoPL().fit(ResponseMatrix.from_wide(frame)).save(
        fit, info={"input": {"path": str(data), "sha256": file_sha256(data)}}
    )
    # the same ids, other scores: the report would mix the fit with data it was not fitted on
    (1 - frame).rename_axis("model").reset_index().to_csv(data, index=False)
    outcome = runner.invoke(app, ["report", str(fit), "--out", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert f"{data} (recorded in fit.json) has changed since the fit" in text
    assert "standard errors and item flags were not computed" in text
