"""A fit directory whose tables were edited or truncated is refused with the file, the line
and the value, never fitted on (``IRTResult.load``, hence ``report`` and ``estimate``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.irt import IRTResult, TwoPL


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=10), rng.normal(size=30)
    Y = (rng.random((10, 30)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(10)], columns=[f"q{j}" for j in range(30)]
    )
    matrix = ResponseMatrix.from_wide(frame)
    out = tmp_path_factory.mktemp("fit") / "fit"
    TwoPL().fit(matrix).save(out)
    return out


def _copy(saved, tmp_path):
    import shutil

    target = tmp_path / "edited"
    shutil.copytree(saved, target)
    return target


def test_the_untouched_directory_loads(saved):
    assert IRTResult.load(saved).shape == (10, 30)


def test_items_rows_deleted_are_refused(saved, tmp_path):
    fit = _copy(saved, tmp_path)
    items = pd.read_csv(fit / "items.csv")
    items.iloc[:-3].to_csv(fit / "items.csv", index=False)
    with pytest.raises(InputError, match=r"items\.csv: 27 rows, but fit\.json says n_items = 30"):
        IRTResult.load(fit)


def test_an_emptied_discrimination_is_refused(saved, tmp_path):
    fit = _copy(saved, tmp_path)
    items = pd.read_csv(fit / "items.csv")
    items.loc[4, "discrimination"] = np.nan
    items.to_csv(fit / "items.csv", index=False)
    item = items.loc[4, "item"]
    with pytest.raises(
        InputError, match=rf"column 'discrimination', line 6 \(item '{item}'\): empty"
    ):
        IRTResult.load(fit)


def test_an_infinite_ability_is_refused(saved, tmp_path):
    fit = _copy(saved, tmp_path)
    abilities = pd.read_csv(fit / "abilities.csv")
    column = "theta_fit" if "theta_fit" in abilities else "theta"
    abilities.loc[2, column] = np.inf
    abilities.to_csv(fit / "abilities.csv", index=False)
    with pytest.raises(InputError, match=rf"abilities\.csv: column '{column}', line 4 .*: inf"):
        IRTResult.load(fit)
