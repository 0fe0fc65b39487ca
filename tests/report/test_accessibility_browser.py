"""The report with a keyboard alone (WCAG 2.1.1, 2.4.7, 4.1.2): every control the page
offers is reached with Tab and works with Enter, Space or the keys its label names. Run in
headless Chromium (see test_render.py) and skipped without one."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from latentbench.report import build_report

sys.path.insert(0, str(Path(__file__).parent))
from _cdp import Browser

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="no chromium binary on PATH (install with .ci/install-chromium.sh)"
    ),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pipe client needs Linux"),
]

_KEYS = {"Tab": 9, "Enter": 13, " ": 32, "ArrowLeft": 37, "+": 187, "0": 48, "n": 78, "p": 80}
_CODES = {
    "Tab": "Tab",
    "Enter": "Enter",
    " ": "Space",
    "ArrowLeft": "ArrowLeft",
    "+": "Equal",
    "n": "KeyN",
    "p": "KeyP",
}


def _press(browser: Browser, key: str) -> None:
    text = {"Enter": "\r", " ": " ", "+": "+", "0": "0", "n": "n", "p": "p"}.get(key)
    browser.send(
        "Input.dispatchKeyEvent",
        session=True,
        type="keyDown" if text else "rawKeyDown",
        key=key,
        code=_CODES.get(key, "Digit0"),
        windowsVirtualKeyCode=_KEYS[key],
        **({"text": text} if text else {}),
    )
    browser.send(
        "Input.dispatchKeyEvent",
        session=True,
        type="keyUp",
        key=key,
        code=_CODES.get(key, "Digit0"),
        windowsVirtualKeyCode=_KEYS[key],
    )


_ACTIVE = """(() => { const e = document.activeElement;
  return {tag: e.tagName, cls: e.className || '', name: e.getAttribute('aria-label') || '',
          text: (e.textContent || '').trim().slice(0, 60),
          inTh: !!e.closest('th'),
          sort: e.closest('th') ? e.closest('th').getAttribute('aria-sort') : null,
          plot: e.closest('div.iplot') ? e.closest('div.iplot').dataset.spec : null}; })()"""


def _tab_stops(browser: Browser, n: int) -> list[dict]:
    stops = []
    for _ in range(n):
        _press(browser, "Tab")
        stops.append(browser.evaluate(_ACTIVE))
    return stops


@pytest.fixture(scope="module")
def page(tmp_path_factory, small_fit, selection_run):
    matrix, result = small_fit
    path = tmp_path_factory.mktemp("a11y") / "fit.html"
    build_report(result, matrix, selection=selection_run, path=path, title="fit report")
    return path


def test_a_sortable_header_is_reached_with_tab_and_sorts_with_enter_and_space(browser, page):
    # the headers sorted on a mouse click only (a th is no control): a keyboard never sorted
    browser.open(page.as_uri(), width=1280)
    stops = _tab_stops(browser, 80)
    headers = [s for s in stops if s["inTh"]]
    assert headers, [s["tag"] + ":" + s["text"] for s in stops]
    assert all(s["tag"] == "BUTTON" for s in headers), headers[:3]
    # focus one header's button and sort with the keyboard
    browser.evaluate("document.querySelector('table.sortable th button').focus()")
    _press(browser, "Enter")
    assert browser.evaluate(_ACTIVE)["sort"] == "ascending"
    _press(browser, " ")
    assert browser.evaluate(_ACTIVE)["sort"] == "descending"
    order = browser.evaluate(
        "Array.from(document.querySelector('table.sortable').tBodies[0].rows)"
        ".map(r => r.cells[0].textContent.trim())"
    )
    assert order == sorted(order, key=str.lower, reverse=True) or len(set(order)) < 2
    # a screen reader hears the new order (a polite live region)
    said = browser.evaluate(
        "Array.from(document.querySelectorAll('[aria-live]')).map(e => e.textContent).join(' ')"
    )
    assert "descending" in said, said


def test_a_plot_is_zoomed_and_panned_from_the_keyboard(browser, page):
    # zoom and pan took the wheel or a drag; the canvas took no focus and no key
    browser.open(page.as_uri(), width=1280)
    stops = _tab_stops(browser, 120)
    canvases = [s for s in stops if s["tag"] == "CANVAS"]
    assert canvases, [s["tag"] + ":" + s["text"] for s in stops]
    assert all("arrow" in s["name"].lower() for s in canvases), canvases[:2]
    view = (
        "(() => { const h = document.querySelector('div.iplot');"
        " return [h.dataset.viewX, h.dataset.viewY]; })()"
    )
    browser.evaluate("document.querySelector('div.iplot canvas').focus()")
    before = browser.evaluate(view)
    _press(browser, "+")
    zoomed = browser.evaluate(view)
    assert zoomed != before and None not in zoomed
    _press(browser, "ArrowLeft")
    panned = browser.evaluate(view)
    assert panned != zoomed
    _press(browser, "0")
    assert browser.evaluate(view) == before
    # the zoom buttons say what they do, and of which plot
    names = browser.evaluate(
        "Array.from(document.querySelectorAll('.iplot-bar button'))"
        ".map(b => b.getAttribute('aria-label'))"
    )
    assert names and all(n and ("zoom" in n or "reset" in n) for n in names), names


def test_the_focus_is_visible_on_every_control(browser, page):
    # an explicit focus indicator (not each browser's default, which a sticky header's
    # scroll box or the canvas can hide): a 2 px or wider outline on what holds the focus
    browser.open(page.as_uri(), width=1280)
    widths = []
    for _ in range(40):
        _press(browser, "Tab")
        widths.append(
            browser.evaluate(
                "(() => { const s = getComputedStyle(document.activeElement);"
                " return [document.activeElement.tagName, s.outlineStyle,"
                " parseFloat(s.outlineWidth)]; })()"
            )
        )
    shown = [w for w in widths if w[0] != "BODY"]
    assert shown and all(w[1] == "solid" and w[2] >= 2 for w in shown), shown[:5]


def test_plot_groups_differ_by_marker_or_line_style_not_colour_alone(browser, page):
    # the groups of a plot (largest rank shift, flagged items, each model's band) differed by
    # colour alone, red beside blue (WCAG 1.4.1): one in a grey or red-green-blind view
    browser.open(page.as_uri(), width=1280)
    keys = browser.evaluate(
        "Array.from(document.querySelectorAll('div.iplot')).map(d => d.dataset.keys || '')"
    )
    legends = [k.split("|") for k in keys if k]
    assert len(legends) >= 2, keys  # the rank shifts, the item map and the selection's bands
    for legend in legends:
        styles = [entry.rsplit(":", 1)[1] for entry in legend]
        assert len(set(styles)) == len(styles), legend


def test_a_plots_points_are_read_from_the_keyboard_and_described(browser, page):
    # a point's name was in a hover tip only (the mouse's); a screen reader heard the plot's
    # title and nothing of what it shows
    browser.open(page.as_uri(), width=1280)
    browser.evaluate("document.querySelector('div.iplot canvas').focus()")
    described = browser.evaluate(
        "(() => { const c = document.querySelector('div.iplot canvas');"
        " const d = document.getElementById(c.getAttribute('aria-describedby') || '-');"
        " return d ? d.textContent : ''; })()"
    )
    assert " against " in described and " points" in described, described
    _press(browser, "n")
    said = browser.evaluate("document.getElementById('announce').textContent")
    tip = browser.evaluate("document.querySelector('div.iplot .iplot-tip').textContent")
    assert said and said == tip and "point 1 of" in said, (said, tip)
    _press(browser, "p")
    last = browser.evaluate("document.getElementById('announce').textContent")
    assert last != said and "point " in last, last


def test_a_long_cell_is_shown_whole_without_a_mouse(browser, tmp_path, small_fit):
    # a text over 48 characters was cut by an ellipsis on screen, whole only in a hover title
    # (the mouse's): a keyboard, touch or zoomed reader could not read it
    import pandas as pd

    matrix, result = small_fit
    items = pd.DataFrame(
        {"item": list(result.item_ids), "text": ["a long question " * 8] * len(result.item_ids)}
    )
    path = tmp_path / "long.html"
    build_report(result, matrix, item_metadata=items, path=path)
    browser.open(path.as_uri(), width=1280)
    cut = (
        "Array.from(document.querySelectorAll('td.text, tbody th.text'))"
        ".filter(td => td.scrollWidth > td.clientWidth + 1).length"
    )
    assert browser.evaluate(cut) > 0
    browser.evaluate(
        "(() => { const b = document.querySelector('td.text, tbody th.text')"
        ".closest('.table-wrap')"
        ".previousElementSibling.querySelector('button.whole'); b.focus(); })()"
    )
    assert browser.evaluate(_ACTIVE)["tag"] == "BUTTON"
    _press(browser, "Enter")
    assert browser.evaluate(
        "(() => { const t = document.querySelector('td.text, tbody th.text').closest('table');"
        " return [t.classList.contains('whole'),"
        " t.closest('.table-wrap').previousElementSibling.querySelector('button.whole')"
        ".getAttribute('aria-pressed')]; })()"
    ) == [True, "true"]
    still = browser.evaluate(
        "Array.from(document.querySelectorAll('table.whole td.text, table.whole tbody th.text'))"
        ".filter(td => td.scrollWidth > td.clientWidth + 1).length"
    )
    assert still == 0


def test_a_screen_reader_passes_the_plots_keys_to_it(browser, page):
    # the canvas was role="img": a screen reader in browse mode kept n, p, the arrows and
    # +/- as its own commands (next paragraph, ...), so the plot's keys never reached it
    browser.open(page.as_uri(), width=1280)
    roles = browser.evaluate(
        "Array.from(document.querySelectorAll('div.iplot canvas')).map(c => c.getAttribute('role'))"
    )
    assert roles and set(roles) == {"application"}, roles


def test_a_focused_plot_leaves_the_browsers_modified_keys_alone(browser, page):
    # the plot's keydown took any key named +, -, 0 or an arrow and prevented its default,
    # modifiers or not: with a plot focused, Ctrl and + / - / 0 (the browser's page zoom, how
    # a low-vision reader enlarges the page) zoomed the plot instead, and Alt+Left (back) panned
    browser.open(page.as_uri(), width=1280)
    view = (
        "(() => { const h = document.querySelector('div.iplot');"
        " return [h.dataset.viewX, h.dataset.viewY]; })()"
    )
    browser.evaluate(
        "window.__prevented = []; window.addEventListener('keydown',"
        " e => window.__prevented.push(e.key + ':' + e.defaultPrevented));"
        "document.querySelector('div.iplot canvas').focus()"
    )
    before = browser.evaluate(view)
    for key, code, vk, mods in (
        ("+", "Equal", 187, 2),  # Ctrl
        ("-", "Minus", 189, 2),
        ("0", "Digit0", 48, 2),
        ("ArrowLeft", "ArrowLeft", 37, 1),  # Alt
        ("n", "KeyN", 78, 4),  # Meta
    ):
        for kind in ("rawKeyDown", "keyUp"):
            browser.send(
                "Input.dispatchKeyEvent",
                session=True,
                type=kind,
                key=key,
                code=code,
                windowsVirtualKeyCode=vk,
                modifiers=mods,
            )
        assert browser.evaluate(view) == before, key
    prevented = browser.evaluate("window.__prevented")
    assert prevented and not any(p.endswith(":true") for p in prevented), prevented
    said = browser.evaluate("document.getElementById('announce').textContent")
    assert "point" not in said, said
    _press(browser, "+")  # the plain key still zooms
    assert browser.evaluate(view) != before


def test_a_plots_description_names_its_markers_and_count_in_words(browser, page, tmp_path):
    # the description said "largest rank shift: crosss" (a screen reader spells it) on every
    # fit page, and "1 points" for a plot of one point
    import json
    import re

    def descriptions(path):
        browser.open(path.as_uri(), width=1280)
        return browser.evaluate(
            "Array.from(document.querySelectorAll('div.iplot canvas')).map(c =>"
            " document.getElementById(c.getAttribute('aria-describedby')).textContent)"
        )

    said = descriptions(page)
    assert any("crosses" in d for d in said), said
    assert not any("crosss" in d or re.search(r"\b1 points\b", d) for d in said), said
    text = page.read_text()
    found = re.search(
        r'(<script type="application/json" id="plot-[0-9]+">)(.*?)(</script>)', text, re.S
    )
    assert found
    spec = json.loads(found.group(2))
    for key in ("x", "y", "name", "info", "lo", "hi", "group"):
        if key in spec:
            spec[key] = spec[key][:1]
    spec["labels"] = [0]
    one = tmp_path / "one.html"
    one.write_text(
        text[: found.start(2)] + json.dumps(spec).replace("<", "\\u003c") + text[found.end(2) :]
    )
    first = descriptions(one)[0]
    assert ", 1 point." in first or ", 1 point (" in first, first


def test_a_row_header_looks_as_the_cells_of_its_row(browser, page):
    # the first cell of a row became <th scope="row">: a browser's own style for <th> (bold,
    # centred) would change the tables' look; the page's style keeps it as a <td> was
    browser.open(page.as_uri(), width=1280)
    looks = browser.evaluate(
        "Array.from(document.querySelectorAll('tbody tr')).slice(0, 40).map(r => {"
        " const s = getComputedStyle(r.cells[0]), t = getComputedStyle(r.cells[1]);"
        " return [r.cells[0].tagName, s.fontWeight, s.textAlign, s.fontSize, s.paddingLeft,"
        " s.borderBottomColor, s.position,"
        " t.fontWeight, t.fontSize, t.paddingLeft, t.borderBottomColor]; })"
    )
    assert looks
    for tag, weight, align, size, pad, border, position, *td in looks:
        assert tag == "TH" and align == "left" and position == "sticky", looks[0]
        assert [weight, size, pad, border] == td, (looks[0], td)
