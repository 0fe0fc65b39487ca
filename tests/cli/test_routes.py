"""The same answer on every route (issue 28): ``report FILE`` and ``fit FILE --out d`` then
``report d`` agree; a saved fit reloads everything that changes an output; ids with a
carriage return survive the fit's CSV files (issue 30)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io import ResponseMatrix
from latentbench.irt import IRTResult, TwoPL
from latentbench.synthetic import simulate_2pl

_register()
runner = CliRunner()


def _invoke(*args: object):
    outcome = runner.invoke(app, [str(a) for a in args])
    assert outcome.exit_code == 0, outcome.output
    return outcome


def _page(path) -> str:
    """The report without what names the source or the time it was made."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"<title>.*?</title>", "", text)
    text = re.sub(r"<h1>latentbench report: .*?</h1>", "", text)
    text = re.sub(r"plot-\d+", "plot-N", text)  # a counter over the process's plots
    # the fit details' rows that name where the fit came from (a file fitted for the page,
    # or a fit directory and the file it recorded)
    text = re.sub(
        r'\n\s*<tr><th scope="row" data-sort="">'
        r"(fit directory|fitted by|responses|responses SHA-256)</th>.*?</tr>",
        "",
        text,
    )
    return re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", text)


def test_report_of_a_file_equals_report_of_its_fit_directory(tmp_path):
    path = tmp_path / "scores.parquet"
    simulate_2pl(25, 120, random_state=11).matrix.to_long().to_parquet(path)
    _invoke("report", path, "--out", tmp_path / "direct.html", "-q")
    _invoke("fit", path, "--out", tmp_path / "fit", "-q")
    _invoke("report", tmp_path / "fit", "--out", tmp_path / "via_fit.html", "-q")
    direct, via_fit = _page(tmp_path / "direct.html"), _page(tmp_path / "via_fit.html")
    assert "random-item marginal likelihood" in direct  # the intervals the fit uses
    assert direct == via_fit


def test_report_of_a_wide_file_with_an_unevaluated_model_equals_its_fit_directorys(tmp_path):
    """A wide file's empty row is a model without cells: not ranked, so its rank columns are
    empty in abilities.csv, and read back as floats they showed rank_accuracy 1.000, 2.000,
    ... on the fit directory's page (1, 2, ... on the file's)."""
    data = simulate_2pl(20, 80, random_state=14)
    wide = data.matrix.to_wide()
    wide.loc["unevaluated"] = np.nan
    path = tmp_path / "scores.csv"
    wide.rename_axis("model").reset_index().to_csv(path, index=False)
    _invoke("report", path, "--out", tmp_path / "direct.html", "-q")
    _invoke("fit", path, "--out", tmp_path / "fit", "-q")
    _invoke("report", tmp_path / "fit", "--out", tmp_path / "via_fit.html", "-q")
    direct, via_fit = _page(tmp_path / "direct.html"), _page(tmp_path / "via_fit.html")
    assert "unevaluated" in direct
    assert direct == via_fit
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.abilities["rank_accuracy"].dtype == "Int64"


def test_a_saved_fit_reloads_what_changes_an_output(tmp_path):
    data = simulate_2pl(20, 150, random_state=12)
    result = TwoPL().fit(data.matrix)
    before = result.standard_errors().abilities
    result.save(tmp_path / "fit", data.matrix)
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.prior_selection == result.prior_selection
    assert loaded.model_ids == result.model_ids  # the fit's order, not the file's rank order
    np.testing.assert_array_equal(loaded.U, result.U)
    pd.testing.assert_frame_equal(loaded.abilities, result.abilities, check_dtype=False)
    after = loaded.standard_errors(data.matrix).abilities
    pd.testing.assert_frame_equal(after, before)


def test_ids_with_a_carriage_return_survive_the_fit_files(tmp_path):
    data = simulate_2pl(20, 60, random_state=13)
    models = [f"m\r{i}" if i % 2 else f"m{i},\n\u2028" for i in range(20)]
    items = [f"i\r{j}" for j in range(60)]
    matrix = ResponseMatrix(data.matrix.scores, models, items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        result.save(tmp_path / "fit", matrix)
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.model_ids == models
    assert loaded.item_ids == items
    abilities = pd.read_csv(tmp_path / "fit" / "abilities.csv", dtype={"model": str})
    assert sorted(abilities["model"]) == sorted(models)
    _invoke("report", tmp_path / "fit", "--out", tmp_path / "r.html", "-q")
