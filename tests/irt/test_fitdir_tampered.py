"""A fit directory whose tables were edited or truncated is refused with the file, the line
and the value, never fitted on (``IRTResult.load``, hence ``report`` and ``estimate``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
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


def test_a_map_fit_without_its_prior_selection_says_its_intervals_change(saved, tmp_path):
    import json

    fit = _copy(saved, tmp_path)
    record = json.loads((fit / "fit.json").read_text())
    assert record["options"]["prior"] == "auto"
    del record["prior_selection"]
    (fit / "fit.json").write_text(json.dumps(record))
    with pytest.warns(DataWarning, match=r"no prior_selection .* observed-information"):
        loaded = IRTResult.load(fit)
    assert loaded.prior_selection is None


def test_a_joint_ml_fit_loads_without_a_word(tmp_path):
    import warnings

    rng = np.random.default_rng(2)
    Y = (rng.random((6, 20)) < 0.6).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(6)], columns=[f"q{j}" for j in range(20)])
    TwoPL(prior=None).fit(ResponseMatrix.from_wide(frame)).save(tmp_path / "fit")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        assert IRTResult.load(tmp_path / "fit").prior_selection is None


def test_a_table_edited_since_the_fit_is_said_on_load(tmp_path):
    # an edited discrimination flowed into IRTResult.load without a word, and an edited
    # theta in abilities.csv was silently ignored
    import warnings

    from latentbench.exceptions import DataWarning
    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult, TwoPL

    rng = np.random.default_rng(0)
    Y = (rng.random((8, 30)) < 0.6).astype(float)
    matrix = ResponseMatrix(Y, [f"m{i}" for i in range(8)], [f"q{j}" for j in range(30)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TwoPL().fit(matrix).save(tmp_path / "fit", matrix)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # an untouched directory: silent
        assert IRTResult.load(tmp_path / "fit").saved_abilities is not None
    items = tmp_path / "fit" / "items.csv"
    items.write_text(items.read_text().replace('"q0",', '"q0",9', 1))
    with pytest.warns(DataWarning, match=r"items\.csv: edited since the fit"):
        IRTResult.load(tmp_path / "fit")
    import csv

    abilities = tmp_path / "fit" / "abilities.csv"
    table = pd.read_csv(abilities)
    table.loc[0, "theta"] = 9.99
    table.to_csv(abilities, index=False, quoting=csv.QUOTE_NONNUMERIC)
    with pytest.warns(DataWarning, match=r"abilities\.csv: edited since the fit .* its theta, se "
                      "and intervals are not used"):  # fmt: skip
        loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.saved_abilities is None  # a report does not show edited intervals as fitted
