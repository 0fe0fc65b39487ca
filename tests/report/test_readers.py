"""The report as its readers see it: mailed around (scripts stripped), printed, opened by
people who did not run it. The browser checks run in headless Chromium (see test_render.py)
and are skipped without one; the others read the page's HTML."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from latentbench.report import build_report

sys.path.insert(0, str(Path(__file__).parent))
from _cdp import Browser

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)


class _PlotText(HTMLParser):
    """The text inside each ``div.iplot`` (what a reader sees there without scripts)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: dict[str, str] = {}
        self._open: str | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("class") == "iplot":
            self._open, self._depth = str(a["data-spec"]), 0
            self.texts[self._open] = ""
        elif self._open is not None and tag == "div":
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag == "div":
            if self._depth == 0:
                self._open = None
            else:
                self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.texts[self._open] += data


def test_every_plot_says_what_it_shows_without_scripts(small_fit, selection_run, hostile):
    # an e-mail client strips the page's script: each plot's box then said nothing at all
    matrix, result = small_fit
    page = build_report(result, matrix, selection=selection_run)
    parser = _PlotText()
    parser.feed(page)
    specs = dict(
        re.findall(r'<script type="application/json" id="(plot-\d+)">([^<]*)</script>', page)
    )
    assert parser.texts and set(parser.texts) == set(specs)
    for plot_id, text in parser.texts.items():
        title = json.loads(specs[plot_id])["title"]
        assert title in text and "script" in text, (title, text)
    assert hostile[0] not in page  # the text is escaped like every other name


def test_a_long_cell_is_whole_on_the_page_for_print_and_touch(small_fit):
    # a cell over 48 characters was cut to 45 and '...' in the HTML, the whole text only in a
    # hover title: gone on paper, on a touch screen and for a screen reader
    matrix, result = small_fit
    page = build_report(result, matrix)
    cells = re.findall(r'<t[dh][^>]* class="text" title="([^"]*)">([^<]*)</t[dh]>', page)
    assert cells
    assert all(text == title for title, text in cells), cells[:2]
    reasons = [html_lib.unescape(t) for _, t in cells]
    assert any(len(r) > 48 for r in reasons)


def _print_view(browser: Browser, page: Path) -> dict[str, object]:
    """Open ``page`` at an A4 page's width as printed (CSS media 'print')."""
    browser.open(page.as_uri(), width=720)
    browser.send("Emulation.setEmulatedMedia", session=True, media="print")
    browser.settle()  # the print layout drawn (was a fixed 200 ms)
    try:
        return _printed(browser)
    finally:  # the tests after it see the screen again
        browser.send("Emulation.setEmulatedMedia", session=True, media="")


def _printed(browser: Browser) -> dict[str, object]:
    return browser.evaluate(
        """(() => {
        const wraps = Array.from(document.querySelectorAll('.table-wrap'));
        return {
          cut_tables: wraps.filter(w => w.scrollHeight > w.clientHeight + 1).length,
          rows: Array.from(document.querySelectorAll('tbody tr'))
                  .filter(r => r.getBoundingClientRect().height > 0).length,
          all_rows: document.querySelectorAll('tbody tr').length,
          cut_cells: Array.from(document.querySelectorAll('td, tbody th'))
                  .filter(td => td.scrollWidth > td.clientWidth + 1).length,
          broken_numbers: Array.from(document.querySelectorAll('td, tbody th'))
                  .filter(td => td.dataset.sort !== '' && /^-?[0-9]/.test(td.textContent))
                  .filter(td => {
                    const r = document.createRange(); r.selectNodeContents(td);
                    return r.getClientRects().length > 1; }).length,
          buttons: Array.from(document.querySelectorAll('button'))
                  .filter(b => b.getBoundingClientRect().width > 0).length,
          width: document.documentElement.scrollWidth,
          meta: document.querySelector('header p.meta').innerText,
        }; })()"""
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pipe client needs Linux")
def test_a_printed_page_holds_every_row_and_every_cell(browser, tmp_path, small_fit):
    # on paper a table's box (480 px, scrolling) showed its first rows only, and long cells
    # ended in an ellipsis
    matrix, result = small_fit
    page = tmp_path / "fit.html"
    build_report(result, matrix, path=page, title="fit report")
    view = _print_view(browser, page)
    assert view["cut_tables"] == 0, view
    assert view["rows"] == view["all_rows"], view
    assert view["cut_cells"] == 0, view
    assert view["broken_numbers"] == 0, view  # a number is never split over two lines
    assert view["buttons"] == 0, view  # nothing to click on paper
    assert view["width"] <= 721, view  # nothing cut at the right edge
    # the zoom/drag/sort instructions are for a screen: on paper only what a blank cell means
    assert "zoom" not in view["meta"] and "click a header" not in view["meta"], view
    assert "a blank cell has no value" in view["meta"], view


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pipe client needs Linux")
def test_with_scripts_off_the_findings_tables_and_plot_texts_are_there(
    browser, tmp_path, small_fit
):
    matrix, result = small_fit
    page = tmp_path / "fit.html"
    build_report(result, matrix, path=page, title="fit report")
    browser.send("Emulation.setScriptExecutionDisabled", session=True, value=True)
    try:
        browser.send("Page.navigate", session=True, url="about:blank")
        browser.wait_for("Page.loadEventFired")
        browser.send("Page.navigate", session=True, url=page.as_uri())
        browser.wait_for("Page.loadEventFired")  # (no timer to wait on: scripts are off)
        seen = browser.evaluate(
            """(() => ({
            ready: document.documentElement.getAttribute('data-ready'),
            headline: document.querySelector('p.headline').innerText,
            rows: document.querySelectorAll('tbody tr').length,
            plots: Array.from(document.querySelectorAll('div.iplot')).map(d => d.innerText),
            meta: document.querySelector('header p.meta').innerText,
            }))()"""
        )
    finally:
        browser.send("Emulation.setScriptExecutionDisabled", session=True, value=False)
    assert seen["ready"] is None  # the page's script did not run
    assert "leads 40 models on 60 items" in seen["headline"]
    assert seen["rows"] > 40
    assert len(seen["plots"]) == 3 and all("interactive plot" in t for t in seen["plots"]), seen
    # before: the header told a reader without scripts to zoom, drag, sort and save CSV,
    # none of which works there; what a blank cell means is still said
    assert "zoom" not in seen["meta"] and "click a header" not in seen["meta"], seen
    assert "CSV" not in seen["meta"] and "a blank cell has no value" in seen["meta"], seen
    # with scripts on, the canvas replaces the text
    browser.open(page.as_uri(), width=1280)
    texts = browser.evaluate(
        "Array.from(document.querySelectorAll('div.iplot p')).map(p => p.textContent)"
    )
    assert texts == []
    meta = browser.evaluate("document.querySelector('header p.meta').innerText")
    assert "wheel or +/\u2212 to zoom" in meta and "click a header to sort" in meta, meta
    assert "a blank cell has no value" in meta, meta


def _fit_details(page: str) -> dict[str, str]:
    """The rows of a fit page's 'Fit details' table, as a reader sees them."""
    section = re.search(r'<section id="summary">.*?</section>', page, re.S)
    assert section is not None
    rows = re.findall(
        r'<tr><th scope="row"[^>]*>([^<]*)</th><td[^>]*>([^<]*)</td></tr>', section.group(0)
    )
    return {html_lib.unescape(k): html_lib.unescape(v) for k, v in rows}


def test_a_fit_page_names_its_responses_their_hash_and_the_fitting_version(small_fit, tmp_path):
    # the page named no input at all: a reader who did not run it could not tell which file
    # (or which version of it) the abilities came from, nor which latentbench fitted them
    from latentbench import __version__
    from latentbench.io import ResponseMatrix, file_sha256
    from latentbench.irt import TwoPL
    from latentbench.report import report_from

    matrix, _ = small_fit
    responses = tmp_path / "responses & <more>.csv"
    matrix.to_long().to_csv(responses, index=False)
    read = ResponseMatrix.read(responses)
    TwoPL().fit(read).save(tmp_path / "fit", read)
    digest = file_sha256(responses)

    rows = _fit_details(report_from(tmp_path / "fit").html)
    assert rows["fit directory"] == str(tmp_path / "fit")
    assert rows["fitted by"] == f"latentbench {__version__}"
    assert rows["responses"] == f"{responses} (recorded in fit.json)"
    assert rows["responses SHA-256"] == digest[:12] + "\u2026"

    # the file changed since: the page says the responses were not used, with the fit's hash
    responses.write_text(responses.read_text() + "\n")
    rows = _fit_details(report_from(tmp_path / "fit").html)
    assert "has changed since the fit" in rows["responses"] and "not used" in rows["responses"]
    assert rows["responses SHA-256"] == digest[:12] + "\u2026"

    # a responses file reported directly (fitted for the page) names itself and its hash
    rows = _fit_details(report_from(responses).html)
    assert rows["responses"] == str(responses)
    assert rows["responses SHA-256"] == file_sha256(responses)[:12] + "\u2026"


def test_a_false_flag_reads_no_and_a_blank_cell_is_explained(small_fit):
    # a False flag was an empty cell, as a missing value is: 'tied_with_next', 'significant',
    # 'constant' or 'poor_fit' left blank could mean "no" or "not computed"
    matrix, result = small_fit
    page = build_report(result, matrix)
    section = re.search(r'<section id="abilities">.*?</section>', page, re.S)
    assert section is not None
    header = re.findall(r'<th scope="col">([^<]*)</th>', section.group(0))
    column = header.index("tied_with_next")
    rows = re.findall(r'<tr>(<th scope="row".*?)</tr>', section.group(0), re.S)
    flags = [re.findall(r"<(t[dh])\b[^>]*>([^<]*)</\1>", row)[column][1] for row in rows]
    assert set(flags) == {"yes", "no"}, set(flags)
    assert "a blank cell has no value (not computed, or not applicable" in page


def test_the_header_gives_interactive_instructions_only_where_the_script_runs(small_fit):
    # before: "wheel ... to zoom ... click a header to sort; CSV saves a table" was plain
    # text, also where scripts are stripped (mail) and on paper, where none of it works
    matrix, result = small_fit
    page = build_report(result, matrix)
    meta = re.search(r'<p class="meta">(.*?)</p>', page, re.S)
    assert meta is not None
    hidden = re.findall(r'<span class="js-only">(.*?)</span>', meta.group(1), re.S)
    shown = re.sub(r'<span class="js-only">.*?</span>', "", meta.group(1), flags=re.S)
    assert len(hidden) == 1 and "to zoom" in hidden[0] and "click a header" in hidden[0]
    assert "zoom" not in shown and "CSV" not in shown and "a blank cell has no value" in shown
    assert re.search(r"\.js-only \{ display: none; \}", page)  # shown under html.js only
    assert 'root.classList.add("js")' in page


@pytest.mark.parametrize("delta", [0.05, 0.001])
def test_a_certified_selection_says_at_which_level(tmp_path, delta):
    # "Certified: ..." named the kind of bounds but not their level: a reader of the page
    # could not tell a 95% certificate from a 99.9% one
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.report import report_from
    from latentbench.synthetic import simulate_2pl

    _register()
    simulate_2pl(12, 300, random_state=4).matrix.to_long().to_csv(tmp_path / "r.csv", index=False)
    argv = ["select", "replay", str(tmp_path / "r.csv"), "--no-history", "--delta", str(delta)]
    outcome = CliRunner().invoke(app, [*argv, "--out", str(tmp_path / "run"), "-q"])
    assert outcome.exit_code == 0, outcome.output
    page = report_from(tmp_path / "run" / "selection.json").html
    level = f"{100 * (1 - delta):g}%"
    assert re.search(
        rf"Certified: [^<]*at delta = {delta:g}: the certified model is the best with "
        rf"probability at least {re.escape(level)}",
        page,
    ), re.findall(r"Certified[^<]*", page)


def test_a_selection_experiment_names_its_input_its_hash_and_version(tmp_path):
    # summary.json of `experiment --task select` kept no input at all, so its page could not
    # say which matrix (or which version of it) the curves came from
    from typer.testing import CliRunner

    from latentbench import __version__
    from latentbench.cli import _register, app
    from latentbench.io import file_sha256
    from latentbench.report import report_from
    from latentbench.synthetic import simulate_2pl

    _register()
    responses = tmp_path / "r & <s>.csv"
    simulate_2pl(24, 120, random_state=5).matrix.to_long().to_csv(responses, index=False)
    argv = ["experiment", str(responses), "--seeds", "2", "--budget", "300", "-q"]
    outcome = CliRunner().invoke(app, [*argv, "--out", str(tmp_path / "exp")])
    assert outcome.exit_code == 0, outcome.output
    params = json.loads((tmp_path / "exp" / "summary.json").read_text())["params"]
    digest = file_sha256(responses)
    assert params["input"]["path"] == str(responses.resolve())
    assert params["input"]["sha256"] == digest
    assert params["latentbench_version"] == __version__
    page = report_from(tmp_path / "exp").html
    said = html_lib.escape(
        f"Input: {responses.resolve()} (SHA-256 {digest[:12]}\u2026); run by latentbench "
        f"{__version__}.",
        quote=False,
    )
    assert said in page.replace("&#39;", "'").replace("&#34;", '"'), re.findall(r"Input[^<]*", page)


def test_a_selection_json_page_is_titled_by_its_run(tmp_path, selection_run):
    # `report run/selection.json` was titled "latentbench report: selection", naming no run
    from latentbench.report import report_from

    (tmp_path / "run-7").mkdir()
    selection_run.to_json(tmp_path / "run-7" / "selection.json")
    page = report_from(tmp_path / "run-7" / "selection.json").html
    assert "<title>latentbench report: run-7/selection.json</title>" in page
    assert "<title>latentbench report: run-7</title>" in report_from(tmp_path / "run-7").html


def test_a_flagged_item_on_the_item_map_is_said_in_words_not_only_red(small_fit):
    # the item map told flagged items from the others by colour alone (red); a reader who
    # cannot tell red from blue learnt nothing from the plot or its hover tip
    matrix, result = small_fit
    page = build_report(result, matrix)
    section = re.search(r'<section id="items">.*?</section>', page, re.S)
    assert section is not None
    spec = json.loads(re.findall(r'type="application/json" id="plot-\d+">([^<]*)<', section[0])[0])
    flagged = [bool(g) for g in spec["group"]]
    assert any(flagged) and not all(flagged)
    said = [info.endswith(", flagged") for info in spec["info"]]
    assert said == flagged


def test_every_table_saves_under_its_own_csv_name(small_fit):
    # the category tables all saved as table.csv: three downloads, one name
    matrix, result = small_fit
    items = pd.DataFrame(
        {
            "item": list(result.item_ids),
            "subject": [f"s{i % 3}" for i in range(len(result.item_ids))],
            "source": [f"src{i % 2}" for i in range(len(result.item_ids))],
        }
    )
    page = build_report(result, matrix, item_metadata=items)
    names = re.findall(r'<button type="button" class="csv" data-name="([^"]*)">', page)
    assert len(names) == len(set(names)), names
    assert {"by-subject", "by-source"} <= set(names)


def test_an_estimate_experiment_names_its_inputs_hash_and_version(tmp_path):
    # summary.json of `experiment --task estimate` kept the input's path only: a reader of
    # its page could not tell which version of the file (or which latentbench) it came from
    from typer.testing import CliRunner

    from latentbench import __version__
    from latentbench.cli import _register, app
    from latentbench.io import file_sha256
    from latentbench.report import report_from
    from latentbench.synthetic import simulate_2pl

    _register()
    responses = tmp_path / "responses.csv"
    simulate_2pl(12, 80, random_state=5).matrix.to_long().to_csv(responses, index=False)
    argv = ["experiment", str(responses), "--task", "estimate", "--budgets", "20", "--seeds", "1"]
    outcome = CliRunner().invoke(app, [*argv, "-q", "--out", str(tmp_path / "exp")])
    assert outcome.exit_code == 0, outcome.output
    params = json.loads((tmp_path / "exp" / "summary.json").read_text())["params"]
    digest = file_sha256(responses)
    assert params["input_sha256"] == digest
    assert params["latentbench_version"] == __version__
    page = report_from(tmp_path / "exp").html
    said = f"Input SHA-256 {digest[:12]}\u2026; run by latentbench {__version__}."
    assert said in page, re.findall(r"Input SHA[^<]*", page)


def test_a_compressed_matrix_page_is_titled_by_its_plain_name(tmp_path):
    """``report r.csv.gz`` was titled ``r.csv`` (the stem of the compressed name)."""
    import numpy as np

    from latentbench.report import report_from

    rng = np.random.default_rng(0)
    cells = [(f"m{i}", f"q{j}", float(rng.random() < 0.5)) for i in range(12) for j in range(30)]
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_csv(
        tmp_path / "r.csv.gz", index=False
    )
    assert "<title>latentbench report: r</title>" in report_from(tmp_path / "r.csv.gz").html
