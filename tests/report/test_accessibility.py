"""The report for a reader with a screen reader, a colour-blind or grey view, or no mouse
(WCAG 2.1 AA), checked on the page's HTML (the browser checks are in
test_accessibility_browser.py)."""

from __future__ import annotations

import html as html_lib
import re
from html.parser import HTMLParser

import pytest

from latentbench.report import build_report


class _Outline(HTMLParser):
    """Tables (caption, region), CSV controls, findings and figures of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict[str, str]] = []
        self.wraps: list[dict[str, str | None]] = []
        self.csv: list[str] = []
        self.links: list[str] = []
        self.notes: list[str] = []
        self.imgs: list[str] = []
        self._in: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "div" and "table-wrap" in cls:
            self.wraps.append(a)
        elif tag == "table":
            self.tables.append({"caption": ""})
        elif tag == "caption":
            self._in, self._text = "caption", ""
        elif tag == "button" and "csv" in cls:
            self._in, self._text = "button", ""
        elif tag == "a" and a.get("download"):
            self._in, self._text = "a", ""
        elif tag == "li" and "note" in cls:
            self._in, self._text = "note", ""
        elif tag == "img":
            self.imgs.append(a.get("alt") or "")

    def handle_endtag(self, tag: str) -> None:
        if self._in == "caption" and tag == "caption":
            self.tables[-1]["caption"] = self._text.strip()
        elif self._in == "button" and tag == "button":
            self.csv.append(self._text.strip())
        elif self._in == "a" and tag == "a":
            self.links.append(self._text.strip())
        elif self._in == "note" and tag == "li":
            self.notes.append(self._text.strip())
        else:
            return
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text += data


def _outline(page: str) -> _Outline:
    parser = _Outline()
    parser.feed(page)
    return parser


@pytest.fixture(scope="module")
def fit_page(small_fit, selection_run):
    matrix, result = small_fit
    return build_report(result, matrix, selection=selection_run)


def test_every_table_has_a_name_a_screen_reader_reads(fit_page):
    # four of the fit page's seven tables had no caption: a screen reader's table list said
    # "table" for each
    outline = _outline(fit_page)
    assert outline.tables
    assert all(t["caption"] for t in outline.tables), outline.tables
    # each scroll box is a named region a keyboard can scroll (Tab reaches it)
    assert len(outline.wraps) == len(outline.tables)
    for wrap in outline.wraps:
        assert wrap.get("tabindex") == "0" and wrap.get("role") == "region", wrap
        assert wrap.get("aria-label"), wrap


def test_a_csv_control_says_which_table_it_saves(fit_page):
    # every button read "CSV" and every link "download all N rows (CSV)": a list of the
    # page's controls (a screen reader's) held a row of identical names
    outline = _outline(fit_page)
    names = outline.csv  # each button's name: its text, the part only a screen reader reads too
    assert names and all(n.startswith("CSV: save the table") for n in names), names
    assert len(set(names)) == len(names), names
    # two long tables of one section, each with its download link
    import pandas as pd

    from latentbench.report._blocks import _Section, _table, render_page

    section = _Section("items", "Items")
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(50)], "a": range(50)})
    for name in ("first", "second"):
        section.tables.append(_table(frame, limit=10, name=name, download=True))
    links = _outline(render_page([section], "t")).links
    assert len(links) == 2 and len(set(links)) == 2, links
    assert all("Items (first)" in link or "Items (second)" in link for link in links), links


def test_a_note_is_marked_in_words_not_by_its_colour_alone():
    # a "note" finding (a caveat among the findings: not certified, no signal, not one
    # scale) differed from the others only by its brown colour (WCAG 1.4.1): a grey or
    # colour-blind view, and a screen reader, lost it
    from latentbench.report._blocks import _Section, render_page

    section = _Section("findings", "Findings")
    section.findings = [{"text": "An ordinary finding."}, {"text": "A caveat.", "note": True}]
    outline = _outline(render_page([section], "t"))
    assert outline.notes == ["Note: A caveat."], outline.notes


def test_a_figure_says_what_it_shows_not_only_its_kind(small_fit):
    # the item curves' alt text was "item characteristic curves": what a figure is, not what
    # it shows (WCAG 1.1.1)
    matrix, result = small_fit
    outline = _outline(build_report(result, matrix))
    assert outline.imgs
    for alt in outline.imgs:
        alt = html_lib.unescape(alt)
        assert " against " in alt and len(alt) > 60, alt
        assert re.search(r"\d", alt), alt  # how many curves


def _styles(handles: list) -> list[tuple[str, str]]:
    """What tells a legend's entries apart besides colour: line style and marker."""
    out = []
    for h in handles:
        style = h.get_linestyle() if hasattr(h, "get_linestyle") else ""
        marker = h.get_marker() if hasattr(h, "get_marker") else ""
        out.append((str(style), str(marker)))
    return out


def test_the_figures_series_differ_by_more_than_colour(selection_run):
    # the policies' accuracy curves, the leading models' interval bands and the runs whose
    # interval missed the truth differed by colour alone (WCAG 1.4.1)
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from latentbench.report import plots

    curves = pd.DataFrame(
        {
            "pool": ["p"] * 9,
            "policy": ["pulse"] * 3 + ["ucb-e"] * 3 + ["uniform"] * 3,
            "evaluations": [0, 10, 20] * 3,
            "accuracy": [0.2, 0.5, 0.9, 0.1, 0.4, 0.8, 0.1, 0.2, 0.5],
            "se": [0.05] * 9,
        }
    )
    ax = plots.plot_experiment_curves(curves, "p", Figure().add_subplot())
    handles, labels = ax.get_legend_handles_labels()
    styles = _styles(handles)
    assert len(labels) == 3 and len(set(styles)) == 3, (labels, styles)

    record = selection_run.to_dict()
    rounds = len(selection_run.trace_evaluations)
    record["trace"]["lower"] = [list(selection_run.lower - 0.1 / (r + 1)) for r in range(rounds)]
    record["trace"]["upper"] = [list(selection_run.upper + 0.1 / (r + 1)) for r in range(rounds)]
    ax = plots.plot_selection_intervals(record, Figure().add_subplot(), top=4)
    legend = ax.get_legend()  # what the reader sees: the legend drawn
    handles, labels = legend.legend_handles, [t.get_text() for t in legend.get_texts()]
    styles = _styles(handles)
    assert len(labels) == 4 and len(set(styles)) == 4, (labels, styles)

    rng = np.random.default_rng(0)
    truth = rng.uniform(0.3, 0.8, 12)
    runs = pd.DataFrame(
        {
            "budget": 50,
            "truth": truth,
            "score": truth + rng.normal(0, 0.05, 12),
            "covered": [True] * 9 + [False] * 3,
        }
    )
    runs["lower"], runs["upper"] = runs["score"] - 0.03, runs["score"] + 0.03
    ax = plots.plot_estimate_intervals(runs, 50, Figure().add_subplot())
    handles, labels = ax.get_legend_handles_labels()
    markers = [h.lines[0].get_marker() if hasattr(h, "lines") else h.get_marker() for h in handles]
    assert len(labels) == 2 and len(set(markers)) == 2, (labels, markers)


def test_the_item_curves_differ_by_more_than_colour(small_fit):
    # six item curves in the default colour cycle, each a solid line: in grey, or to a
    # red-green-blind reader, the legend matched no curve (WCAG 1.4.1)
    from matplotlib.figure import Figure

    from latentbench.report import plots

    _, result = small_fit
    ax = plots.plot_item_curves(result, list(range(6)), Figure().add_subplot())  # the page's 6
    handles, labels = ax.get_legend_handles_labels()
    styles = _styles(handles)
    assert len(labels) == 6 and len(set(styles)) == 6, (labels, styles)


class _Rows(HTMLParser):
    """Each table's body rows as the tags of their cells (``th row``, ``td``)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self._body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._body:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self._body:
            self.tables[-1][-1].append(f"th {a.get('scope')}" if tag == "th" else "td")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._body = False


def _rows(page: str) -> list[list[list[str]]]:
    parser = _Rows()
    parser.feed(page)
    return parser.tables


def test_the_cell_that_names_a_row_is_its_row_header(fit_page):
    # a row's model or item id was a <td> like its numbers: a screen reader moving down a
    # column said "0.41" without the model it belongs to (WCAG 1.3.1: a row header is
    # <th scope="row">)
    tables = _rows(fit_page)
    assert len(tables) >= 5
    for rows in tables:
        assert rows
        for cells in rows:
            assert cells[0] == "th row" and set(cells[1:]) <= {"td"}, cells


def test_a_first_column_that_repeats_down_the_rows_is_no_row_header():
    # the items each model answered: a row is one answer, its model repeats down the rows
    import pandas as pd

    from latentbench.report._blocks import _Section, _table, render_page

    section = _Section("items", "Items")
    frame = pd.DataFrame(
        {"model": ["a", "a", "b"], "item": ["i1", "i2", "i1"], "answer": [1, 0, 1]}
    )
    section.tables.append(_table(frame, name="answers", row_header=False))
    section.tables.append(_table(frame.drop(columns="model"), name="items"))
    answers, items = _rows(render_page([section], "t"))
    assert all(set(cells) == {"td"} for cells in answers), answers
    assert all(cells[0] == "th row" for cells in items), items


def test_a_row_header_looks_as_the_cell_it_replaced():
    # <th> is bold and centred by default: the page's style makes a body row's header look
    # as its <td> did (left-aligned, normal weight), a long one cut and shown whole as a
    # <td>'s text
    from latentbench.report._blocks import _Section, render_page

    page = render_page([_Section("s", "S")], "t")
    style = page.split("<style>")[1].split("</style>")[0]
    assert re.search(r"tbody th \{[^}]*font-weight: normal", style), style[:2000]
    for rule in ("td.text", "table.whole td.text", "table.kv td.text", "table.kv td"):
        selectors = [s.strip() for s in re.findall(r"([^{}]*)\{", style) if rule in s]
        assert selectors, rule
        assert all(rule.replace("td", "tbody th") in s for s in selectors), (rule, selectors)


def _luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2.1 relative luminance of an sRGB colour (channels 0..1)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast_on(rgba: tuple[float, ...], background: tuple[float, ...]) -> float:
    """Contrast of one point (colour ``rgba``, its alpha over ``background``) against the
    background: what a lone point of a map shows."""
    *rgb, alpha = rgba
    point = tuple(alpha * c + (1 - alpha) * b for c, b in zip(rgb, background[:3], strict=True))
    lighter, darker = sorted((_luminance(point), _luminance(background[:3])), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


@pytest.mark.parametrize("n_items", [300, 2500])
def test_an_item_maps_points_stand_out_from_the_page_at_3_to_1(n_items):
    # a dense item map (over 2,000 items) drew its points in #1f77b4 at 50% opacity: 2.0:1
    # on the white page, under WCAG 2.1's 3:1 for a graphic needed to read it (1.4.11)
    import json

    from matplotlib.colors import to_rgba

    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(30, n_items, random_state=5)
    matrix = ResponseMatrix(data.matrix.scores, data.matrix.model_ids, data.matrix.item_ids)
    page = build_report(TwoPL().fit(matrix), matrix)
    specs = [
        json.loads(s)
        for s in re.findall(r'<script type="application/json" id="plot-\d+">(.*?)</script>', page)
    ]
    maps = [s for s in specs if str(s.get("title", "")).startswith("Item map")]
    assert len(maps) == 1, [s.get("title") for s in specs]
    white = (1.0, 1.0, 1.0)  # the canvas is cleared to the page's white background
    for spec in maps:
        alpha = spec.get("alpha", 0.75)  # the page's script draws a point at this opacity
        assert alpha < 1  # overlapping points still show where a map is dense
        for group in spec["groups"]:
            rgba = (*to_rgba(group["color"])[:3], group.get("alpha", alpha))
            assert _contrast_on(rgba, white) >= 3.0, (group, alpha, _contrast_on(rgba, white))


def test_the_static_item_maps_points_stand_out_at_3_to_1(small_fit):
    import matplotlib.pyplot as plt

    from latentbench.report import plots

    _, result = small_fit
    fig, ax = plt.subplots()
    try:
        plots.plot_item_map(result, ax, flagged=[result.item_ids[0]])
        background = ax.get_facecolor()
        for collection in ax.collections:
            for rgba in collection.get_facecolors():
                assert rgba[3] < 1 or collection is ax.collections[1]  # items overlap: see-through
                assert _contrast_on(tuple(rgba), background) >= 3.0, (rgba, background)
    finally:
        plt.close(fig)


def test_the_item_curves_model_ticks_stand_out_at_3_to_1(small_fit):
    # the rug of models under the item curves was grey 0.4 at 60% opacity: 2.5:1 on the
    # white axes, under WCAG 2.1's 3:1 for a graphic needed to read the plot (1.4.11)
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    from latentbench.report import plots

    _, result = small_fit
    fig, ax = plt.subplots()
    try:
        plots.plot_item_curves(result, list(result.item_ids[:3]), ax, show_models=True)
        rug = ax.lines[-1]
        assert rug.get_marker() == "|" and rug.get_label().startswith("_")  # the models' ticks
        alpha = rug.get_alpha()
        assert alpha is not None and alpha < 1  # ticks of close models still show as denser
        rgba = (*to_rgba(rug.get_color())[:3], alpha)
        background = ax.get_facecolor()
        assert _contrast_on(rgba, background) >= 3.0, (rgba, _contrast_on(rgba, background))
    finally:
        plt.close(fig)
