"""``estimate`` and ``compare`` say what their bracketed interval is.

Found on a newcomer's walk: ``latentbench estimate fit/ new --source lm-eval`` printed
``score 0.539 [0.510, 0.656] after 100 of 14,008 items; would rank 14th (7th–15th) of 41``
and ``compare`` ``A - B = -0.162 [-0.303, -0.006] ...``: no level (and the same line under
``--delta 0.2``), no word of what the interval covers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(1)
    theta, b = np.linspace(-1.5, 1.5, 22), rng.normal(size=200)
    Y = (rng.random((22, 200)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i:02d}" for i in range(22)], columns=[f"q{j}" for j in range(200)]
    )
    folder = tmp_path_factory.mktemp("interval")
    frame.iloc[:20].rename_axis("model").to_csv(folder / "calibration.csv")
    frame.iloc[20:].rename_axis("model").to_csv(folder / "new.csv")
    return folder


@pytest.mark.parametrize(("delta", "level"), [(None, "95%"), ("0.2", "80%")])
def test_estimate_names_its_interval(files, delta, level):
    args = ["estimate", str(files / "calibration.csv"), str(files / "new.csv"), "--budget", "30"]
    args += ["--model", "m20"] + (["--delta", delta] if delta else [])
    outcome = runner.invoke(app, args)
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, text
    assert f"{level} interval of the full-benchmark score" in text, text


def test_compare_names_its_interval(files):
    args = ["compare", str(files / "calibration.csv"), str(files / "new.csv"), "--a", "m20"]
    outcome = runner.invoke(app, [*args, "--b", "m21", "--budget", "30"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, text
    assert "95% interval of the difference" in text, text


def test_the_selection_table_says_what_its_bounds_are(files):
    args = ["select", "replay", str(files / "calibration.csv"), "--no-history", "--budget", "60"]
    outcome = runner.invoke(app, [*args, "--out", str(files / "sel")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, text
    assert "lower, upper: simultaneous 95% intervals" in text, text
    assert "certificate_lower, certificate_upper:" in text, text
