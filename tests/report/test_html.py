"""The HTML report: sections, escaping, self-containment; the ``latentbench report`` command."""

from __future__ import annotations

import base64
import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.cli._fit import write_fit
from latentbench.cli._report import load_fit
from latentbench.exceptions import InputError
from latentbench.report import FIT_SECTIONS, SELECTION_SECTIONS, build_report
from latentbench.report._html import section_ids

_register()
runner = CliRunner()


def _images(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def test_fit_report_sections_escaping_and_self_containment(small_fit, hostile, tmp_path):
    matrix, result = small_fit
    HOSTILE_MODEL, HOSTILE_ITEM = hostile
    path = tmp_path / "r.html"
    html = build_report(result, matrix, path=path, title="T <&> report")
    assert path.read_text(encoding="utf-8") == html
    assert section_ids(html) == list(FIT_SECTIONS)
    # names from the input are escaped, never injected
    assert HOSTILE_MODEL not in html
    assert "&lt;script&gt;alert(&#34;m&#34;)&lt;/script&gt;" in html
    assert HOSTILE_ITEM not in html
    assert "T &lt;&amp;&gt; report" in html
    assert html.count("<script>") == 1  # only the page's own sorter
    # self-contained: no external resources, figures are embedded PNGs
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    images = _images(html)
    assert len(images) >= 4 and all(img.startswith(b"\x89PNG") for img in images)
    # every table is sortable and has numeric sort keys on numeric cells
    assert html.count('<table class="sortable">') >= 6
    assert 'data-sort="' in html
    # the order line names the best model first, with '>' / '~' between models
    best = result.abilities.sort_values("theta", ascending=False)["model"].iloc[0]
    line = re.search(r"Order of the top models[^<]*", html).group(0)
    assert best.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;") in line
    assert "&gt;" in line or "~" in line


def test_report_without_matrix_and_with_selection(small_fit, selection_run, hostile):
    _, result = small_fit
    HOSTILE_MODEL = hostile[0]
    html = build_report(result, selection=selection_run)
    ids = section_ids(html)
    assert ids == [
        "summary",
        "abilities",
        "rank-shifts",
        "items",
        "rank-agreement",
        *SELECTION_SECTIONS,
    ]
    assert "No response matrix was given" in html
    only = build_report(selection=json.loads(selection_run.to_json()))
    assert section_ids(only) == list(SELECTION_SECTIONS)
    assert HOSTILE_MODEL not in only
    with pytest.raises(InputError):
        build_report()


def test_report_with_bootstrap_intervals(small_fit):
    from latentbench.irt.inference import bootstrap

    matrix, result = small_fit
    boot = bootstrap(result, matrix, n_boot=20, method="items", random_state=0)
    html = build_report(result, matrix, bootstrap=boot)
    assert "basic bootstrap intervals (items bootstrap, 20 replicates)" in html
    assert section_ids(html) == list(FIT_SECTIONS)


def test_report_lists_flagged_items_and_rank_movers(small_fit):
    matrix, result = small_fit
    html = build_report(result, matrix)
    flagged = html.split('id="flagged-items"')[1].split("</section>")[0]
    constant = result.items.loc[result.items["constant"], "item"]
    for item in constant:
        assert f">{item}<" in flagged
    movers = html.split('id="rank-shifts"')[1].split("</section>")[0]
    top = result.abilities.loc[result.abilities["rank_shift"].abs().idxmax(), "model"]
    assert f">{top}<" in movers.replace("&lt;", "<").replace("&gt;", ">").replace("&#34;", '"')


def test_cli_from_fit_directory_responses_and_selection(small_fit, selection_run, tmp_path):
    matrix, result = small_fit
    fit_dir = tmp_path / "fit"
    write_fit(result, fit_dir)
    loaded = load_fit(fit_dir)
    assert loaded.model_ids == result.model_ids and loaded.item_ids == result.item_ids
    pd.testing.assert_series_equal(loaded.abilities["theta"], result.abilities["theta"])
    responses = tmp_path / "responses.csv"
    matrix.to_long().sample(frac=1.0, random_state=0).to_csv(responses, index=False)

    out = tmp_path / "a.html"
    outcome = runner.invoke(app, ["report", str(fit_dir), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert "flagged-items" not in section_ids(out.read_text())

    out = tmp_path / "b.html"
    outcome = runner.invoke(
        app, ["report", str(fit_dir), "--responses", str(responses), "--out", str(out), "-q"]
    )
    assert outcome.exit_code == 0, outcome.output
    assert section_ids(out.read_text()) == list(FIT_SECTIONS)

    out = tmp_path / "c.html"
    outcome = runner.invoke(app, ["report", str(responses), "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert "wrote" in outcome.output and section_ids(out.read_text()) == list(FIT_SECTIONS)

    selection = tmp_path / "selection.json"
    selection_run.to_json(selection)
    out = tmp_path / "d.html"
    outcome = runner.invoke(app, ["report", str(selection), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert section_ids(out.read_text()) == list(SELECTION_SECTIONS)


def test_cli_errors(tmp_path):
    outcome = runner.invoke(app, ["report", str(tmp_path / "missing.parquet")])
    assert outcome.exit_code == 2 and "does not exist" in outcome.output
    (tmp_path / "empty").mkdir()
    outcome = runner.invoke(app, ["report", str(tmp_path / "empty")])
    assert outcome.exit_code == 2 and "fit.json" in outcome.output
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    outcome = runner.invoke(app, ["report", str(bad)])
    assert outcome.exit_code == 2 and "selection.json" in outcome.output
