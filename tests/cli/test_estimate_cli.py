"""``latentbench estimate`` / ``tiny`` / ``compare`` on hostile command lines: a clear error
naming the option and the value, before any work."""

from __future__ import annotations

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


def _long(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"item": [str(j) for j in range(n)], "score": np.tile([1.0, 0.0], n // 2)})


def test_cli_refuses_budget_or_precision_with_items(tmp_path):
    calibration, new, items = (tmp_path / n for n in ("calib.parquet", "new.csv", "items.csv"))
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    _long().to_csv(new, index=False)
    items.write_text("item,order,probability\n0,1,0.1\n")
    for option in (["--budget", "10"], ["--precision", "0.01"]):
        args = ["estimate", str(calibration), str(new), "--items", str(items), *option]
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 2, outcome.output
        assert f"{option[0]} with --items" in outcome.output
