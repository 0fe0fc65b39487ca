"""The page of a paired comparison (``latentbench compare --out DIR``, then ``latentbench
report DIR``): refused before ("holds a comparison, which has no report")."""

from __future__ import annotations

import html as markup
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench import select
from latentbench.cli import _register, app
from latentbench.report import COMPARE_SECTIONS, build_compare_report

runner = CliRunner()
_register()
HOSTILE = "<b>m</b>"


def _text(page: str) -> str:
    return markup.unescape(" ".join(re.sub(r"<[^>]+>", " ", page).split()))


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    rng = np.random.default_rng(0)
    theta, b = np.linspace(-2, 2, 20), rng.normal(size=150)
    p = 1 / (1 + np.exp(-(theta[:, None] + b)))
    wide = pd.DataFrame(
        (rng.random(p.shape) < p).astype(float),
        index=[f"m{i}" for i in range(20)],
        columns=[f"q{j}" for j in range(150)],
    )
    path = tmp_path_factory.mktemp("cmp") / "calibration.parquet"
    wide.rename_axis("model").reset_index().to_parquet(path)
    return path, wide


def test_a_certified_comparison_and_the_command(calibration, tmp_path):
    path, wide = calibration
    strong, weak = wide.loc["m19"].rename(HOSTILE), wide.loc["m0"].rename("weak")
    result = select.compare(str(path), strong, weak, budget=150)
    assert result.higher == HOSTILE
    result.save(tmp_path / "cmp")
    out = tmp_path / "page.html"
    outcome = runner.invoke(app, ["report", str(tmp_path / "cmp"), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    page = out.read_text()
    assert re.findall(r'<section[^>]* id="([^"]+)"', page) == list(COMPARE_SECTIONS)
    text = _text(page)
    assert result.summary() in text
    assert f"{HOSTILE} is higher than weak: the 95% interval of the difference excludes 0" in text
    assert "<b>m</b>" not in page and "&lt;b&gt;m&lt;/b&gt;" in page  # escaped
    assert f"SHA-256 {result.calibration_hash[:12]}" in text
    rows = page.split('id="compare-tables"')[1].count("<tr") - 1
    assert rows == min(result.n_evaluated, 30)  # report --top's default


def test_a_comparison_not_certified_says_what_would_decide_it(calibration):
    path, wide = calibration
    a, b = wide.loc["m10"].rename("a"), wide.loc["m11"].rename("b")
    result = select.compare(str(path), a, b, budget=10)
    assert result.higher is None
    text = _text(build_compare_report(result))
    assert "Not certified: the 95% interval of the difference holds 0" in text
    assert "the point difference does not rank the two" in text and "--margin M" in text


@pytest.mark.parametrize("names", [("item", "b"), ("a", "probability"), ("order", "item")])
def test_a_model_named_like_a_column_keeps_every_column(calibration, names):
    """A model named ``item`` (or ``order``, ``probability``): its answers' column took that
    name's place, the items table showing answers as item ids and losing a column."""
    path, wide = calibration
    a, b = wide.loc["m10"].rename(names[0]), wide.loc["m11"].rename(names[1])
    result = select.compare(str(path), a, b, budget=10)
    page = build_compare_report(result)
    table = page.split('id="compare-tables"')[1]
    headers = re.findall(r"<th scope=\"col\">(.*?)</th>", table)[:5]
    assert headers == ["order", "item", "answer_a", "answer_b", "probability"]
    assert result.items[0] in _text(table)


@pytest.mark.parametrize("field", ["difference", "lower", "level", "n_evaluated"])
def test_an_edited_compare_json_is_refused_naming_the_field(calibration, tmp_path, field):
    """A compare.json with null for a number was read as it was, and its page failed with a
    TypeError traceback (``report DIR``)."""
    import json

    path, wide = calibration
    result = select.compare(str(path), wide.loc["m10"].rename("a"), wide.loc["m11"], budget=10)
    result.save(tmp_path / "cmp")
    record = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    record[field] = None
    (tmp_path / "cmp" / "compare.json").write_text(json.dumps(record))
    outcome = runner.invoke(app, ["report", str(tmp_path / "cmp"), "--out", str(tmp_path / "p")])
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, outcome.output
    assert "compare.json" in said and f"field '{field}' holds None" in said


def test_a_comparison_on_the_items_both_answered_says_so(calibration):
    """Two models sharing answers on some items only: the command says the interval is of
    'the two scores on the items both answered'; the page said 'over the benchmark's items'."""
    path, wide = calibration
    a = wide.loc["m10"].rename("a").copy()
    a.iloc[:50] = np.nan  # answered 100 of the 150 items
    result = select.compare(str(path), a, wide.loc["m11"].rename("b"), budget=10)
    assert result.n_calibrated > result.n_items
    text = _text(build_compare_report(result))
    assert "over the benchmark's items" not in text
    assert (
        "a's mean score minus b's over the 100 items both answered (of the calibration's 150"
        in (text)
    )


def test_a_comparison_at_97_5_percent_says_97_5(calibration):
    path, wide = calibration
    a, b = wide.loc["m10"].rename("a"), wide.loc["m11"].rename("b")
    text = _text(build_compare_report(select.compare(str(path), a, b, budget=10, delta=0.025)))
    assert "a 97.5% anytime-valid interval" in text and "98%" not in text


def test_a_tiny_delta_is_never_shown_as_a_100_percent_interval(calibration):
    """delta=1e-7 showed as 'a 100% anytime-valid interval' (rounded to 6 decimals): a
    certainty no finite sample gives."""
    path, wide = calibration
    a, b = wide.loc["m10"].rename("a"), wide.loc["m11"].rename("b")
    page = build_compare_report(select.compare(str(path), a, b, budget=10, delta=1e-7))
    text = _text(page.split('id="compare-summary"')[1].split('id="compare-tables"')[0])
    assert "a 99.99999% anytime-valid interval" in text and "100%" not in text
