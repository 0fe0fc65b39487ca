"""The HTML report: sections, escaping, self-containment; the ``latentbench report`` command."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._files import input_record
from latentbench.irt import IRTResult
from latentbench.report import FIT_SECTIONS, SELECTION_SECTIONS, build_report

_register()
runner = CliRunner()


def section_ids(html: str) -> list[str]:
    """The ids of the report's sections, in order."""
    return re.findall(r'<section id="([^"]+)"', html)


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
    assert html.count("<script>") == 1  # only the page's own script (plus JSON data blocks)
    # self-contained: no external resources, figures are embedded PNGs, and the page's
    # Content-Security-Policy forbids any request
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert "default-src 'none'" in html
    images = _images(html)
    assert len(images) >= 1 and all(img.startswith(b"\x89PNG") for img in images)
    # the ability plot, the rank-shift scatter and the item map are interactive
    specs = re.findall(r'<script type="application/json" id="(plot-\d+)">([^<]*)</script>', html)
    assert len(specs) == 3 and html.count('class="iplot"') == 3
    names = json.loads(specs[0][1])["name"]
    assert HOSTILE_MODEL in names  # JSON keeps the name; '<' is escaped as \u003c in the page
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
        "findings",
        "abilities",
        "rank-shifts",
        "items",
        "rank-agreement",
        "summary",
        *SELECTION_SECTIONS,
    ]
    assert "No response matrix was given" in html
    findings = html.split('id="findings"')[1].split("</section>")[0]
    assert "item flags were not computed" in findings
    only = build_report(selection=json.loads(selection_run.to_json()))
    assert section_ids(only) == list(SELECTION_SECTIONS)
    assert HOSTILE_MODEL not in only
    with pytest.raises(InputError):
        build_report()
    # a selection.json's path was refused without saying how to read it
    with pytest.raises(InputError, match=r"selection is a str; .* \(a file: SelectionRecord"):
        build_report(selection="selection.json")


def test_build_report_refuses_a_folder_or_a_missing_folder_before_the_work(small_fit, tmp_path):
    # path=FOLDER raised IsADirectoryError, path=missing/r.html FileNotFoundError, both
    # after the whole page was built
    matrix, result = small_fit
    with pytest.raises(InputError, match=r"^path=.* is a directory; expected the file"):
        build_report(result, matrix, path=tmp_path)
    with pytest.raises(InputError, match=r"^path=.*r\.html: the folder .*gone does not exist"):
        build_report(result, matrix, path=tmp_path / "gone" / "r.html")


def test_report_with_bootstrap_intervals(small_fit):
    from latentbench.irt.inference import bootstrap

    matrix, result = small_fit
    boot = bootstrap(result, matrix, n_boot=20, method="items", random_state=0)
    html = build_report(result, matrix, bootstrap=boot)
    assert "basic bootstrap intervals (items bootstrap, 20 replicates)" in html
    assert section_ids(html) == list(FIT_SECTIONS)


def test_bootstrap_findings_name_the_tables_interval_method(small_fit):
    """With a bootstrap, the table's intervals are the bootstrap's, but the Findings still said
    "Ability intervals: joint Laplace (fallback ...)": now they name the bootstrap, and warn
    when it has fewer than 100 replicates."""
    from latentbench.irt.inference import bootstrap

    matrix, result = small_fit
    boot = bootstrap(result, matrix, n_boot=20, method="items", random_state=0)
    html = build_report(result, matrix, bootstrap=boot)
    findings = html.split('id="findings"')[1].split('id="abilities"')[0]
    assert "Ability intervals: 95% basic bootstrap intervals (items bootstrap, 20 replicates)" in (
        findings
    )
    assert "Only 20 replicates" in findings
    assert "(fallback:" not in findings


def test_report_refuses_too_few_bootstrap_replicates(small_fit, tmp_path):
    """`report --bootstrap 2` gave intervals that excluded their own estimates, unannounced."""
    from latentbench.report import report_from

    matrix, _ = small_fit
    path = tmp_path / "m.csv"
    matrix.to_wide().to_csv(path)
    with pytest.raises(InputError, match=r"n_boot=50; expected 0 .* or an integer >= 100"):
        report_from(path, n_boot=50)
    outcome = runner.invoke(app, ["report", str(path), "--bootstrap", "2", "-q"])
    assert outcome.exit_code == 2 and "--bootstrap 2; expected 0" in outcome.output


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
    # a fit directory without intervals (save() now uses the kept matrix): one saved without it
    with pytest.warns(DataWarning, match="saved without the fitted matrix"):
        dataclasses.replace(result, matrix=None).save(fit_dir)
    loaded = IRTResult.load(fit_dir)
    assert loaded.model_ids == result.model_ids and loaded.item_ids == result.item_ids
    pd.testing.assert_series_equal(loaded.abilities["theta"], result.abilities["theta"])
    responses = tmp_path / "responses.csv"
    matrix.to_long().sample(frac=1.0, random_state=0).to_csv(responses, index=False)

    out = tmp_path / "a.html"
    outcome = runner.invoke(app, ["report", str(fit_dir), "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert "flagged-items" not in section_ids(out.read_text())
    assert "flags were not computed" in outcome.output  # said, not a silent "flagged (0)"
    assert "flags were not computed" in out.read_text()

    # fit.json records the responses: the report finds them without --responses
    result.save(fit_dir, matrix, info={"input": input_record(responses, matrix)})
    out = tmp_path / "a2.html"
    outcome = runner.invoke(app, ["report", str(fit_dir), "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert section_ids(out.read_text()) == list(FIT_SECTIONS)
    assert "recorded in fit.json" in outcome.output
    # a matrix read from a file records itself (a Python save was thinner than `fit --out`)
    from latentbench.io import ResponseMatrix

    read = ResponseMatrix.read(responses)  # ids sorted: aligned to the fit (keeps its source)
    read = read.subset(models=list(result.model_ids), items=list(result.item_ids))
    result.save(tmp_path / "py_fit", read)
    recorded = json.loads((tmp_path / "py_fit" / "fit.json").read_text())["input"]
    assert recorded == input_record(responses, read)
    out = tmp_path / "a3.html"
    outcome = runner.invoke(app, ["report", str(tmp_path / "py_fit"), "--out", str(out)])
    assert outcome.exit_code == 0 and "recorded in fit.json" in outcome.output
    assert section_ids(out.read_text()) == list(FIT_SECTIONS)
    part = read.subset(models=list(result.model_ids)[:6])  # not the file: nothing recorded
    from latentbench.irt import TwoPL

    TwoPL().fit(part).save(tmp_path / "part_fit", part)
    assert "input" not in json.loads((tmp_path / "part_fit" / "fit.json").read_text())

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
    # the run's directory (select replay --out DIR) is read as its selection.json
    run_dir = tmp_path / "sel"
    run_dir.mkdir()
    selection_run.to_json(run_dir / "selection.json")
    out = tmp_path / "e.html"
    outcome = runner.invoke(app, ["report", str(run_dir), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert section_ids(out.read_text()) == list(SELECTION_SECTIONS)


def test_cli_errors(tmp_path):
    outcome = runner.invoke(app, ["report", str(tmp_path / "missing.parquet")])
    assert outcome.exit_code == 2 and "does not exist" in outcome.output
    (tmp_path / "empty").mkdir()
    outcome = runner.invoke(app, ["report", str(tmp_path / "empty")])
    assert outcome.exit_code == 2 and "fit.json" in outcome.output
    (tmp_path / "est").mkdir()
    (tmp_path / "est" / "estimate.json").write_text("{}")
    outcome = runner.invoke(app, ["report", str(tmp_path / "est")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "estimate.json: not an estimate record" in text
    (tmp_path / "cmp").mkdir()
    (tmp_path / "cmp" / "compare.json").write_text("{}")
    outcome = runner.invoke(app, ["report", str(tmp_path / "cmp")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "compare.json: not a compare.json" in text
    (tmp_path / "exp").mkdir()  # experiment --task estimate: it said "no curves.csv"
    (tmp_path / "exp" / "summary.json").write_text('{"params": {"task": "estimate"}}')
    outcome = runner.invoke(app, ["report", str(tmp_path / "exp")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "no runs.csv; expected the directory of" in text
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    outcome = runner.invoke(app, ["report", str(bad)])
    assert outcome.exit_code == 2 and "selection.json" in outcome.output


def test_findings_lead_the_fit_report(small_fit):
    matrix, result = small_fit
    html = build_report(result, matrix)
    assert section_ids(html)[0] == "findings"
    findings = html.split('id="findings"')[1].split("</section>")[0]
    best = result.abilities.sort_values("theta", ascending=False)["model"].iloc[0]
    headline = re.search(r'<p class="headline">([^<]*)</p>', findings).group(1)
    escaped = best.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
    assert headline.startswith(f"{escaped} leads 40 models on 60 items")
    assert "statistically separated" in headline
    for text in ("Leader:", "Ties:", "Largest rank shifts", "Items to drop:"):
        assert text in findings
    n_constant = int(result.items["constant"].sum())
    assert f"{n_constant:,} constant" in findings


def test_flagged_items_ranked_by_severity(small_fit):
    from latentbench.irt.diagnostics import diagnose
    from latentbench.report._findings import FLAG_SEVERITY, _item_flags

    matrix, result = small_fit
    flags = _item_flags(diagnose(result, matrix))
    assert list(flags["severity"]) == sorted(flags["severity"])
    constant = set(result.items.loc[result.items["constant"], "item"])
    assert set(flags.loc[flags["severity"] == 1, "item"]) == constant
    assert (flags.loc[flags["severity"] == 1, "action"] == FLAG_SEVERITY["constant"][1]).all()
    assert flags["reason"].str.len().gt(0).all()


def test_flagged_table_offers_all_rows_as_csv(small_fit, monkeypatch):
    import latentbench.report._html as page

    matrix, result = small_fit
    html = build_report(result, matrix)
    assert 'class="csv"' in html  # every table has a CSV button
    # a table cut to its first rows links the full CSV
    monkeypatch.setattr(page, "_table", _limited(page._table))
    html = build_report(result, matrix)
    flagged = html.split('id="flagged-items"')[1].split("</section>")[0]
    data = re.search(r'href="data:text/csv;base64,([^"]+)"', flagged).group(1)
    frame = pd.read_csv(io.StringIO(base64.b64decode(data).decode()), keep_default_na=False)
    assert {"item", "severity", "flag", "reason"} <= set(frame.columns)
    assert len(frame) > 2


def _limited(table):
    def wrapped(frame, limit=None, *args, **kwargs):
        return table(frame, 2 if kwargs.get("download") else limit, *args, **kwargs)

    return wrapped


def test_selection_findings_name_a_store_history_in_words(selection_run):
    """A replay of a store benchmark records its history's input_store (store, benchmark,
    metric, ...); the findings printed it as Python's dict repr ("input_store: {'store': ...")."""
    data = json.loads(selection_run.to_json())
    store = {"store": "/data/s.duckdb", "benchmark": "bfcl", "metric": "score"}
    data["params"] = {"n_items": 300, "history": {"history models": 6, "input_store": store}}
    findings = build_report(selection=data).split('id="selection-summary"')[1]
    findings = findings.split("</section>")[0]
    said = "input_store: (store /data/s.duckdb, benchmark bfcl, metric score)"
    assert said in findings and "{" not in findings.split("History (learns")[1]


def test_selection_findings(selection_run):
    data = json.loads(selection_run.to_json())
    data["params"] = {"n_items": 300, "history": {"split": "random", "history models": 6}}
    html = build_report(selection=data)
    findings = html.split('id="selection-summary"')[1].split("</section>")[0]
    total = selection_run.evaluations_total
    assert "Best model: &lt;script&gt;alert(&#34;m&#34;)&lt;/script&gt;" in findings
    assert f"{total / 1800:.1%} of a full evaluation (6 models x 300 items = 1,800 cells)" in (
        findings
    )
    assert "Baseline: spread evenly" in findings and "History (learns the proxy" in findings
    assert "Not certified" in findings  # the fixture's intervals overlap
    assert "First certified" not in findings
    data["certified_after_post_init"], data["certified_model"] = 0, "m0"
    findings = build_report(selection=data).split('id="selection-summary"')[1]
    paid = selection_run.evaluations_init
    assert f"First certified after {paid:,} cells, {paid / 1800:.1%} of a full" in findings
    data["arms"][-1]["lower"] = 0.99
    assert "Certified" in build_report(selection=data)


def test_selection_headline_states_its_intervals_level(selection_run):
    """The headline gave 'interval [0.7, 0.9]' with no level, while the table caption and the
    certified finding beside it said 95%: the level comes from the run's delta."""
    data = json.loads(selection_run.to_json())
    data["params"] = {"n_items": 300, "delta": 0.05}
    page = build_report(selection=data).split('id="selection-summary"')[1]
    assert "Best model: " in page and "95% simultaneous anytime-valid interval [" in page
    data["params"]["delta"] = 0.1
    assert "90% simultaneous anytime-valid interval [" in build_report(selection=data)
    data["params"]["delta"] = 1e-7  # not rounded up to a 100% interval
    assert "99.99999% simultaneous anytime-valid interval [" in build_report(selection=data)
    data["params"].pop("delta")  # an older record without it: no level invented
    assert "anytime-valid interval [" not in build_report(selection=data)


def test_selection_findings_follow_the_allocation_and_the_stop(selection_run):
    """`--policy full` (every cell revealed) was said to have 'spent little on clearly weaker
    ones', and a run stopped because every cell was revealed 'went on to its budget'."""

    def findings(data):
        page = build_report(selection=data).split('id="selection-summary"')[1]
        return " ".join(page.split("</section>")[0].split())

    data = json.loads(selection_run.to_json())
    data["params"] = {"n_items": 300}
    text = findings(data)  # an adaptive allocation: the counts, not a verdict
    assert "spent little" not in text
    assert "the policy gave the best model 260 and the others a median of 90 (fewest 64" in text
    for arm in data["arms"]:
        arm["n_observed"] = 300
    data["evaluations_total"], data["stopped"] = 1800, "exhausted"
    data["evaluations_post_init"] = 1800 - data["evaluations_init"]
    data["certified_after_post_init"], data["certified_model"] = 0, "m0"
    text = findings(data)
    assert "spent little" not in text and "went on to its budget" not in text
    assert "every model got all its 300 cells (every cell revealed)" in text
    assert "the run went on until every cell was revealed" in text
    for arm in data["arms"]:
        arm["n_observed"] = 100
    data["evaluations_total"], data["stopped"] = 600, "budget"
    data["evaluations_post_init"] = 600 - data["evaluations_init"]
    text = findings(data)
    assert "spread the 600 cells evenly (100 to the best model)" in text
    assert "the run went on to its budget" in text


def test_item_categories(small_fit, tmp_path):
    from latentbench.report import read_item_metadata

    matrix, result = small_fit
    meta = pd.DataFrame(
        {"item": result.item_ids, "subject": ["math", "law", "art"] * (len(result.item_ids) // 3)}
    )
    path = tmp_path / "items.csv"
    meta.to_csv(path, index=False)
    html = build_report(result, matrix, item_metadata=read_item_metadata(path))
    section = html.split('id="categories"')[1].split("</section>")[0]
    assert "by subject" in section and section.count("<tr>") == 4
    assert "best_model" in section
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"name": ["a"]}).to_csv(bad, index=False)
    with pytest.raises(InputError, match="no 'item' column"):
        read_item_metadata(bad)


def test_a_metadata_columns_name_makes_a_plain_csv_file_name(small_fit, tmp_path):
    """A table's CSV file name (the "CSV" button's and the download link's) came from an
    item-metadata column's name as written: ``../<b>x</b>\\con:`` gave the file name
    ``by-../<b>x</b>\\con:.csv``, left to each browser to clean. It is now a plain name."""
    from latentbench.report import read_item_metadata

    matrix, result = small_fit
    hostile = '../<b>x</b>\\con:"q"*?|\x01 \u202e'
    meta = pd.DataFrame(
        {"item": result.item_ids, hostile: ["math", "law", "art"] * (len(result.item_ids) // 3)}
    )
    path = tmp_path / "items.csv"
    meta.to_csv(path, index=False)
    html = build_report(result, matrix, item_metadata=read_item_metadata(path))
    names = re.findall(r'data-name="([^"]*)"', html) + re.findall(r'download="([^"]*)"', html)
    assert names and all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in names), names
    assert all(not n.startswith(".") and ".." not in n for n in names), names
    assert "by-b-x-b-con-q" in " ".join(names)


def test_item_metadata_csv_keeps_items_called_na_or_none(tmp_path):
    # before: pandas' defaults read the ids NA and None as missing: "--items items.csv: item
    # nan appears twice"; with one of them, that item lost its category silently
    from latentbench.report import read_item_metadata

    items = ["NA", "None", "null", "001", "nan", "q1"]
    meta = pd.DataFrame({"item": items, "subject": ["NA", "law", "NA", "", "law", "art"]})
    for suffix, sep in ((".csv", ","), (".tsv", "\t")):
        path = tmp_path / f"items{suffix}"
        meta.to_csv(path, index=False, sep=sep)
        frame = read_item_metadata(path)
        assert frame["item"].tolist() == items
        # the categories are read as before: NA and an empty cell are missing
        assert frame["subject"].isna().tolist() == [True, False, True, True, False, False]


def test_report_from_is_the_commands_python_twin(small_fit, selection_run, tmp_path):
    from latentbench.report import report_from

    matrix, result = small_fit
    responses = tmp_path / "responses.csv"
    matrix.to_long().to_csv(responses, index=False)
    fit_dir = tmp_path / "fit"
    result.save(fit_dir)
    bare = report_from(fit_dir)  # nothing written, no responses: said in the notes
    assert bare.path is None and "flagged-items" not in section_ids(bare.html)
    assert any("not computed (pass responses=FILE)" in n for n in bare.notes)
    result.save(fit_dir, matrix, info={"input": input_record(responses, matrix)})
    page = report_from(fit_dir, tmp_path / "fit.html")
    assert page.path == tmp_path / "fit.html" and page.path.read_text() == page.html
    assert section_ids(page.html) == list(FIT_SECTIONS)
    assert [n for n in page.notes if "recorded in fit.json" in n]
    # its repr was the whole page (5 MB on MMLU-Pro) in a notebook cell: now where it went,
    # its size and its notes' count
    assert repr(page) == (
        f"Report({str(page.path)!r}, {len(page.html):,} characters of HTML, "
        f"{len(page.notes)} note{'s' if len(page.notes) != 1 else ''})"
    )
    assert repr(bare).startswith("Report(not written, ") and len(repr(bare)) < 100
    selection = tmp_path / "selection.json"
    selection_run.to_json(selection)
    assert section_ids(report_from(selection).html) == list(SELECTION_SECTIONS)
    # a selection's page shows its own run: a second one (drawn instead, silently, before)
    # and item metadata (no item table to annotate) are refused
    other = tmp_path / "other.json"
    selection_run.to_json(other)
    with pytest.raises(InputError, match=r"selection=.*other\.json: .* is a selection run"):
        report_from(selection, selection=other)
    with pytest.raises(InputError, match=r"items=.*: .* no item table"):
        report_from(selection, items=responses)
    said = runner.invoke(app, ["report", str(selection), "--selection", str(other)])
    assert said.exit_code == 2 and "error: --selection " in " ".join(said.output.split())
    with pytest.raises(InputError, match="n_boot=100 needs the responses"):
        report_from(_bare_fit(result, tmp_path), n_boot=100)
    with pytest.raises(InputError, match="method='jackknife'"):
        report_from(fit_dir, method="jackknife")  # type: ignore[arg-type]
    outcome = runner.invoke(app, ["report", str(fit_dir), "--method", "jackknife"])
    assert outcome.exit_code == 2 and "--method 'jackknife'" in outcome.output


def _bare_fit(result, tmp_path):
    bare = tmp_path / "bare-fit"
    result.save(bare)
    return bare


def test_a_long_tables_download_is_capped_and_says_so():
    import base64

    from latentbench.report._blocks import _table

    frame = pd.DataFrame({"item_a": range(500), "p_value": [k / 500 for k in range(500)]})
    table = _table(frame, limit=10, name="pairs", download=True, download_limit=100)
    assert table.total == 500 and table.download_rows == 100
    lines = base64.b64decode(table.download).decode().strip().splitlines()
    assert len(lines) == 101 and lines[1].startswith("0,")  # header + the first 100 rows
    whole = _table(frame, limit=10, name="pairs", download=True)
    assert whole.download_rows == 500


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["trace"].update(arm=d["trace"]["arm"][:2]), r"trace\.arm has 2, "),
        (lambda d: d["arms"][0].update(lower="abc"), r"arms\[0\]\.lower is 'abc'; expected a"),
        (lambda d: d.update(best_model="nobody"), r"best_model 'nobody' is none of the 6 arms'"),
        (lambda d: d.update(evaluations_total=5), r"evaluations_total is 5 but the arms' "),
        # JSON's NaN / Infinity are read by Python's json: a count, not a bare ValueError or
        # OverflowError from int() (helper-75)
        (lambda d: d["arms"][0].update(n_observed=math.nan), r"arms\[0\]\.n_observed is nan; "),
        (lambda d: d.update(evaluations_init=math.inf), r"evaluations_init is inf; expected a "),
    ],
)
def test_hand_edited_selection_json_is_refused(selection_run, tmp_path, edit, said):
    """A shortened trace or a string bound gave a traceback; a best model that is no arm or
    a total that is not the cells revealed gave a page that stated them."""
    from latentbench.report import report_from

    data = json.loads(selection_run.to_json())
    data["trace"].update(arm=[-1, 0, 1, 2], arm_lower=[0.1] * 4, arm_upper=[0.9] * 4)
    path = tmp_path / "selection.json"
    path.write_text(json.dumps(data))
    report_from(path)  # consistent: reports
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=said):
        report_from(path)


@pytest.mark.parametrize("where", ["params", "live_run"])
def test_a_live_records_fully_revealed_tie_is_said(where):
    """A live run's record keeps its items count in its configuration: the evaluations line
    read it there, the tie / revealed-rival check only in params, so a live page missed an
    exact tie between two fully revealed models."""
    from latentbench.report._html import build_report
    from latentbench.select import SelectionResult

    est = np.array([0.3, 0.4, 0.5, 0.6, 0.7, 0.7])
    run = SelectionResult(
        policy="pulse", best=5, estimates=est, lower=est - 0.1, upper=est + 0.1,
        n_observed=np.array([64, 70, 90, 120, 260, 260]), evaluations_init=384,
        evaluations_post_init=480, rounds=5, trace_evaluations=np.array([0, 64]),
        trace_best=np.array([4, 5]), stopped="confidence",
        model_ids=[f"arm-{i}" for i in range(6)],
    )  # fmt: skip
    data = json.loads(run.to_json())
    for k in (4, 5):  # both fully revealed: their bounds are their exact means
        data["arms"][k]["lower"] = data["arms"][k]["upper"] = 0.7
    if where == "params":
        data.setdefault("params", {})["n_items"] = 260
    else:
        data["live_run"] = {"config": {"n_items": 260}}
    findings = build_report(selection=data).split('id="selection-summary"')[1]
    assert "Tied: arm-4" in findings


@pytest.mark.parametrize(
    ("policy", "revealed", "said"),
    [
        ("ucbe", 100, "Not certified: ucbe reports no intervals"),
        ("ucbe_lrf", 100, "its estimates impute unrevealed cells and are biased"),
        ("full", 300, "Exact: every cell of every model is revealed"),
    ],
)
def test_a_run_without_intervals_says_what_backs_its_recommendation(
    selection_run, policy, revealed, said
):
    """`select replay` prints 'no intervals, not certified' for a run without intervals; the
    report said nothing about it (and 'the final intervals' of a run that has none), and a
    full evaluation, whose best is exact, was 'not certified' on the command line."""
    from latentbench.cli._select import certificate_line
    from latentbench.select import SelectionRecord

    data = json.loads(selection_run.to_json())
    data["params"], data["policy"] = {"n_items": 300}, policy
    for arm in data["arms"]:
        arm.pop("lower"), arm.pop("upper")
        arm["n_observed"] = revealed
    data["evaluations_total"], data["certified"] = 6 * revealed, None
    data["evaluations_post_init"] = 6 * revealed - data["evaluations_init"]
    page = build_report(selection=data)
    text = " ".join(page.split('id="selection-summary"')[1].split("</section>")[0].split())
    assert said in text and "Certified" not in text
    intervals = " ".join(page.split('id="selection-intervals"')[1].split("</section>")[0].split())
    assert "the final intervals" not in intervals and "no intervals" in intervals
    line = certificate_line(SelectionRecord.from_dict(data))
    assert line.endswith("exact, every cell of every model revealed" if revealed == 300 else
                         "no intervals, not certified")  # fmt: skip


def test_an_unfinished_live_run_says_why_it_has_no_intervals():
    data = {
        "policy": "live (unfinished)",
        "best_model": "a",
        "arms": [
            {"model": "a", "estimate": 0.8, "n_observed": 16},
            {"model": "b", "estimate": 0.6, "n_observed": 16},
        ],
        "evaluations_total": 32,
        "live_run": {"store": "s.duckdb", "run_id": "r", "status": "failed", "failed_cells": 16},
    }
    page = build_report(selection=data)
    text = " ".join(page.split('id="selection-summary"')[1].split("</section>")[0].split())
    assert "Not certified: the run has not finished (status failed)" in text
    assert "--stop confidence" not in text


def test_every_report_builder_refuses_an_existing_file_unless_forced(small_fit, tmp_path):
    """Docs walk (2026-12-06): ``build_report(path=...)`` overwrote an existing page while
    ``report_from`` and ``latentbench report`` refuse one without ``force``; every builder
    now refuses before any work, and ``force=True`` overwrites."""
    from latentbench.report import build_estimate_experiment_report, build_experiment_report

    matrix, result = small_fit
    page = tmp_path / "page.html"
    page.write_text("mine")
    with pytest.raises(InputError, match=r"page\.html exists; pass force=True"):
        build_report(result, matrix, path=page)
    for builder in (build_experiment_report, build_estimate_experiment_report):
        with pytest.raises(InputError, match=r"page\.html exists; pass force=True"):
            builder(tmp_path / "no-such-experiment", path=page)  # refused before reading it
    assert page.read_text() == "mine"
    build_report(result, matrix, path=page, force=True)
    assert page.read_text().startswith("<!DOCTYPE html>")


def _coin_flips(path, n_models: int, n_items: int) -> None:
    """A wide CSV of responses without signal (seeded coin flips)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        (rng.random((n_models, n_items)) < 0.5).astype(float),
        index=pd.Index([f"m{i}" for i in range(n_models)], name="model"),
        columns=[f"i{j}" for j in range(n_items)],
    )
    frame.reset_index().to_csv(path, index=False)


def test_an_unconverged_random_item_fit_is_said_once_and_kept_in_the_report(tmp_path):
    """Responses without signal (30 x 200 coin flips): the random-item EM behind the ability
    intervals stops at its own limit. `fit` said so as '--max-iter 2000 ... --tol 0.0001',
    options the user never gave (fit's --max-iter is the cBMM's, 5000), and the report of the
    saved fit directory said nothing (fit.json kept only checks.converged false)."""
    _coin_flips(tmp_path / "noise.csv", 30, 200)
    _register()
    runner = CliRunner()
    fitted = runner.invoke(
        app, ["fit", str(tmp_path / "noise.csv"), "--out", str(tmp_path / "fit"), "-q"]
    )
    assert fitted.exit_code == 0, fitted.output
    said = " ".join(fitted.output.split())
    assert said.count("random-item abilities stopped") == 1, said  # -q does not hide it
    assert "--max-iter 2000" not in said and "--tol 0.0001" not in said
    record = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert record["ability_intervals"]["checks"]["converged"] is False
    assert record["ability_intervals"]["fallback"] is None
    page = tmp_path / "report.html"
    out = runner.invoke(app, ["report", str(tmp_path / "fit"), "--out", str(page), "-q"])
    assert out.exit_code == 0, out.output
    assert "the random-item fit stopped at its iteration limit" in " ".join(
        page.read_text().split()
    )


def test_bootstrap_refits_that_stopped_early_are_said_on_the_page():
    """`report --bootstrap N`: refits that stopped before their tolerance were warned on
    stderr (and counted in BootstrapResult.converged), but the page said nothing of them."""
    import warnings

    from latentbench.exceptions import ConvergenceWarning
    from latentbench.irt import TwoPL
    from latentbench.synthetic import simulate_2pl

    matrix = simulate_2pl(12, 40, random_state=3).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the fit's own: said elsewhere
        result = TwoPL(max_iter=2).fit(matrix)
    with pytest.warns(ConvergenceWarning, match=r"of 5 bootstrap refits did not meet"):
        boot = result.bootstrap(matrix, n_boot=5, method="items", random_state=0)
    failed = int((~boot.converged).sum())
    assert failed > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(result, matrix, bootstrap=boot)
    assert f"{failed} of 5 refits stopped before meeting their tolerance" in " ".join(page.split())


def test_an_intercept_only_fit_is_kept_in_fit_json_and_said_by_its_report(tmp_path):
    """Coin flips fitted by joint ML with a strong ridge: every discrimination is ~0. The fit
    warned it (IdentifiabilityWarning), but fit.json and the report of the saved directory
    said nothing, and the page ranked the models on abilities that carry no data."""
    _coin_flips(tmp_path / "noise.csv", 20, 100)
    _register()
    runner = CliRunner()
    args = ["fit", str(tmp_path / "noise.csv"), "--joint-ml", "--l2", "10", "-q"]
    fitted = runner.invoke(app, [*args, "--out", str(tmp_path / "fit")])
    assert fitted.exit_code == 0, fitted.output
    said = " ".join(fitted.output.split())
    assert said.count("the fit is an intercept-only model") == 1, said
    record = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert "intercept-only model" in record["intercept_only"]
    assert IRTResult.load(tmp_path / "fit").intercept_only
    page = tmp_path / "report.html"
    out = runner.invoke(app, ["report", str(tmp_path / "fit"), "--out", str(page), "-q"])
    assert out.exit_code == 0, out.output
    assert "No signal: every item discrimination is ~0" in " ".join(page.read_text().split())


def test_a_joint_ml_fits_own_held_out_check_is_on_its_page(tmp_path):
    """A joint-ML fit at a fixed rank checks itself on held-out cells (fit.json keeps it,
    `fit` prints and warns it); its page said nothing of it and called the leader
    'statistically separated' on abilities the check found overfitted."""
    import html as markup
    import warnings

    from latentbench import synthetic
    from latentbench.irt import TwoPL

    matrix = synthetic.simulate_2pl(30, 60, random_state=1).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        fit = TwoPL(prior=None, rank=1).fit(matrix)
    check = fit.joint_ml_check
    assert check is not None and check["difference"] > 0.002  # the overfit this page must say
    fit.save(tmp_path / "fit")
    for source in (fit, IRTResult.load(tmp_path / "fit")):
        page = build_report(source, matrix if source is fit else None)
        text = markup.unescape(" ".join(re.sub(r"<[^>]+>", " ", page).split()))
        findings = text.split("Findings")[2] if text.count("Findings") > 1 else text
        assert "held-out" in findings and "additive model" in findings, findings[:800]
        assert f"{check['log_loss']:.3f}" in text and f"{check['additive_log_loss']:.3f}" in text
