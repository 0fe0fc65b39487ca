"""Reports render in headless Chromium: the fit, selection and live-run pages.

Chromium (Debian ``chromium``) is installed by ``.ci/install-chromium.sh``; without a binary
these tests are skipped with that reason. The browser is driven over the DevTools protocol
(``--remote-debugging-pipe``, see ``_cdp.py``), which records every request the page makes and
every console error or exception. Each page is opened at 1280 px and at 390 px; the URL
fragment ``#selftest`` makes the page sort every table by a click and check the order and the
CSV export, recording the outcome in ``data-*`` attributes of ``<html>``. Screenshots are kept
under ``.ci/artifacts/`` (the CI uploads that folder).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.report import FIT_SECTIONS

sys.path.insert(0, str(Path(__file__).parent))
from _cdp import Browser

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
ARTIFACTS = ROOT / ".ci" / "artifacts"
DATASETS = ["mmlu_pro", "bfcl_v2", "alpacaeval2_weighted", "alpacaeval1_gpt4"]
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="no chromium binary on PATH (install with .ci/install-chromium.sh)"
    ),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the pipe client needs Linux"),
]

_register()
runner = CliRunner()


def _check_page(browser: Browser, page: Path, name: str, headline: str) -> dict[str, str]:
    """Open ``page`` at both widths; assert no request leaves the file, no console error, the
    headline, sortable tables and plots; save screenshots; return the <html> attributes."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    attributes: dict[str, str] = {}
    for width, mobile in ((1280, False), (390, True)):
        browser.open(page.as_uri() + "#selftest", width=width, mobile=mobile)
        attributes = browser.evaluate(
            "Object.fromEntries(Array.from(document.documentElement.attributes)"
            ".map(a => [a.name, a.value]))"
        )
        assert attributes.get("data-ready") == "1", attributes
        assert "data-js-errors" not in attributes, attributes["data-js-errors"]
        assert attributes.get("data-csp-violations") == "0", attributes
        assert attributes.get("data-selftest") == "ok", attributes
        assert attributes.get("data-images-broken", "0") == "0"
        text = browser.evaluate("document.querySelector('p.headline').textContent")
        assert headline in text, text
        # the interactive plots drew their points
        drawn = browser.evaluate(
            "Array.from(document.querySelectorAll('div.iplot')).map(d => d.dataset.drawn)"
        )
        assert drawn and all(d and int(d) > 0 for d in drawn), drawn
        # a header click sorts a table (descending on the second click)
        order = browser.evaluate(
            """(() => { const t = document.querySelector('table.sortable');
            const th = t.tHead.rows[0].cells[0]; th.click(); th.click();
            return Array.from(t.tBodies[0].rows).map(r => r.cells[0].textContent.trim()); })()"""
        )
        assert order == sorted(order, key=str.lower, reverse=True) or len(set(order)) < 2
        browser.screenshot(ARTIFACTS / f"report-{name}-{width}.png", width, mobile)
        shot = (ARTIFACTS / f"report-{name}-{width}.png").read_bytes()
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
        requests = browser.requests()
        assert requests and all(u.startswith(("file://", "data:", "blob:")) for u in requests), [
            u for u in requests if not u.startswith(("file://", "data:", "blob:"))
        ]
        assert [u for u in requests if u.startswith("file://")] == [page.as_uri()] or all(
            u.split("#")[0] == page.as_uri() for u in requests if u.startswith("file://")
        )
        assert browser.errors() == []
        # a wide table scrolls inside its box instead of widening the page: no horizontal
        # scroll, at 390 px as at 1280 px
        # (against the requested width: a mobile browser widens its layout viewport to the
        # content, so scrollWidth <= innerWidth alone would pass a page 640 px wide)
        scroll = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert max(scroll) <= width + 1, f"page {scroll} px wide at {width} px"
        # every plot label and title lies inside its canvas (none cut at an edge)
        clipped = browser.evaluate(
            "Array.from(document.querySelectorAll('div.iplot')).map(d => "
            "[d.dataset.labelsClipped, d.dataset.titleClipped])"
        )
        assert all(c == ["0", "0"] for c in clipped), (width, clipped)
        # no table cell of a key-value table (the summaries) is cut with an ellipsis
        cut = browser.evaluate(
            "Array.from(document.querySelectorAll('table.kv td, table.kv tbody th')).filter(td => "
            "td.scrollWidth > td.clientWidth + 1).map(td => td.textContent)"
        )
        assert cut == [], (width, cut)
    return attributes


def test_fit_report_renders(browser, tmp_path, small_fit):
    from latentbench.report import build_report

    matrix, result = small_fit
    page = tmp_path / "fit.html"
    build_report(result, matrix, path=page, title="fit report")
    attributes = _check_page(browser, page, "fit", "leads 40 models on 60 items")
    assert int(attributes["data-plots"]) == 3
    assert int(attributes["data-sortable-tables"]) >= 6


def test_selection_report_renders(browser, tmp_path, selection_run):
    from latentbench.report import build_report

    page = tmp_path / "selection.html"
    build_report(selection=selection_run, path=page, title="selection report")
    _check_page(browser, page, "selection", "Best model:")


def test_live_run_report_renders(browser, tmp_path, selection_run):
    from latentbench.io.store import Store

    store = tmp_path / "run.duckdb"
    with Store(store) as db:
        run_id = db.start_selection({"n_items": 300, "policy": "pulse"})
        names = selection_run.model_ids
        import pandas as pd

        db.add_observations(
            run_id,
            pd.DataFrame(
                {"seq": range(len(names)), "round": 0, "model": names, "item": "q1", "score": 1.0}
            ),
        )
        db.add_decision(run_id, 1, {"phase": "final", **selection_run.to_dict(trace=False)})
        db.set_selection_status(run_id, "done")
    page = tmp_path / "live.html"
    outcome = runner.invoke(app, ["report", str(store), "--out", str(page), "-q"])
    assert outcome.exit_code == 0, outcome.output
    html = page.read_text()
    assert run_id in html and "status done" in html
    _check_page(browser, page, "live", "Best model:")


@pytest.mark.parametrize("name", DATASETS)
def test_report_of_shared_data_renders(browser, tmp_path, shared_fit, name):
    path = SHARED / f"{name}.parquet"
    fit_dir, _ = shared_fit(name)  # `latentbench fit PATH --out FIT_DIR`, fitted once a session
    page = tmp_path / f"{name}.html"
    args = ["report", str(fit_dir), "--out", str(page), "-q"]  # responses found via fit.json
    items = SHARED / f"{name.split('_')[0] if name.startswith('alpaca') else name}_items.parquet"
    if name.startswith("alpacaeval"):
        items = SHARED / "alpacaeval_items.parquet"
    if items.exists():
        args += ["--items", str(items)]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    html = page.read_text()
    expected = list(FIT_SECTIONS) + (["categories"] if items.exists() else [])
    import re

    assert re.findall(r'<section id="([^"]+)"', html) == expected
    flagged = html.split('id="flagged-items"')[1].split("</section>")[0]
    assert flagged.count("<tr>") > 1
    if name == "mmlu_pro":
        assert "showing 300 of" in flagged and "download all" in flagged
    _check_page(browser, page, name, "leads")
    info = json.loads((fit_dir / "fit.json").read_text())
    assert info["input"]["path"] == str(path.resolve())


LONG_NAMES = [
    "Claude 4.5 Opus (FC) 2025-11-01",
    "GPT-5.1 2025-11-13 (Prompt, reasoning high)",
    "Gemini-3-Pro-Preview (FC, thinking budget 32k)",
    "x" * 90,  # one unbreakable id
] + [f"open-model-{i}-instruct-v2.5-72B-awq" for i in range(16)]


def _long_selection(n_rounds: int = 60) -> dict:
    """A replay-like selection.json: long model names, per-round bounds, a history file named
    by a 64-character SHA-256 (what issue 32 saw overflow a 390 px screen)."""
    import numpy as np

    n = len(LONG_NAMES)
    rng = np.random.default_rng(3)
    estimate = np.sort(rng.uniform(0.2, 0.85, n))[::-1]
    spend = np.arange(n_rounds) * 40
    width = 0.6 / np.sqrt(1 + np.arange(n_rounds) / 3)
    lower = np.clip(estimate[None, :] - width[:, None], 0, 1)
    upper = np.clip(estimate[None, :] + width[:, None], 0, 1)
    n_observed = (20 + 400 * estimate**3).astype(int)
    arms = [
        {
            "model": name,
            "estimate": float(e),
            "lower": float(lo),
            "upper": float(hi),
            "n_observed": int(k),
        }
        for name, e, lo, hi, k in zip(
            LONG_NAMES, estimate, lower[-1], upper[-1], n_observed, strict=True
        )
    ]
    return {
        "policy": "pulse",
        "best_model": LONG_NAMES[0],
        "arms": arms,
        "evaluations_init": 20 * n,
        "evaluations_post_init": int(spend[-1]),
        "evaluations_total": int(n_observed.sum()),
        "rounds": n_rounds,
        "stopped": "budget",
        "params": {
            "n_items": 2854,
            "history": {
                "file": "/data/leaderboards/bfcl_v2_history_models_with_a_long_name.parquet",
                "sha256": "9f" * 32,
                "n_models": 60,
            },
        },
        "trace": {
            "evaluations_post_init": spend.tolist(),
            "best_index": [0] * n_rounds,
            "lower": lower.tolist(),
            "upper": upper.tolist(),
        },
    }


def test_selection_report_with_long_names_fits_390px(browser, tmp_path):
    from latentbench.report import build_report

    page = tmp_path / "selection-long.html"
    build_report(selection=_long_selection(), path=page, title="selection report")
    html = page.read_text()
    assert "9f" * 32 not in html and "9f" * 6 + "\u2026" in html  # the digest, shortened
    # the two selection figures are interactive like the rest (no PNG left in the page)
    assert "data:image/png" not in html
    attributes = _check_page(browser, page, "selection-long", "Best model:")
    assert int(attributes["data-plots"]) == 3


def test_the_csv_buttons_file_escapes_every_formula_a_spreadsheet_would_run(browser, tmp_path):
    """The "CSV" button's file (written by the page's script) escapes a text cell a
    spreadsheet would run as a formula as the download links and the fit's tables do: a
    leading apostrophe unless the whole cell is a number. It tested ``parseFloat``, which
    reads a number off the cell's start, so ``+1+SUM(A1)`` and ``-1+1|cmd`` (a DDE payload)
    were saved bare."""
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.report import build_report
    from latentbench.synthetic import simulate_2pl

    numbers = ["-0.5", "-1,234.5"]
    formulas = ["+1+SUM(A1)", "-1+1|cmd", "-2+3", "=HYPERLINK(1)", "@SUM(1)", *numbers]
    data = simulate_2pl(30, 60, random_state=2)
    models = formulas + data.matrix.model_ids[len(formulas) :]
    matrix = ResponseMatrix(data.matrix.scores, models, data.matrix.item_ids)
    page = tmp_path / "formulas.html"
    build_report(TwoPL().fit(matrix), matrix, path=page)
    browser.open(page.as_uri(), width=1280, mobile=False)
    csv_text = browser.evaluate(
        """(async () => { let blob = null; const make = URL.createObjectURL;
        URL.createObjectURL = b => { blob = b; return make.call(URL, b); };
        HTMLAnchorElement.prototype.click = function () {};
        document.querySelector('button.csv[data-name="abilities"]').click();
        return await blob.text(); })()"""
    )
    import csv
    import io

    rows = list(csv.reader(io.StringIO(csv_text)))
    column = rows[0].index("model")
    saved = {row[column] for row in rows[1:]}
    for name in formulas[: -len(numbers)]:
        assert "'" + name in saved and name not in saved, (name, sorted(saved))
    assert set(numbers) <= saved  # a number is left as it is, thousands separators and all


_LATE = """<!doctype html><html><head><meta http-equiv="Content-Security-Policy"
content="default-src 'none'; script-src 'unsafe-inline'; img-src data:"><script>
document.addEventListener("securitypolicyviolation", function () {
  document.documentElement.setAttribute("data-csp-violations", "1"); });
window.addEventListener("load", function () {
  setTimeout(function () { throw new Error("late timer"); }, 0);
  requestAnimationFrame(function () { console.error("late frame"); });
  var img = new Image(); img.src = "https://example.invalid/x.png";
  document.body.appendChild(img); });
</script></head><body>late</body></html>"""


def test_what_a_page_queues_at_its_load_is_seen_by_these_checks(browser, tmp_path):
    """``Browser.open`` waits two frames and a task after the load (not a fixed 200 ms): an
    error in a timer or a frame callback and a blocked request that a page queues at its load
    are all seen by the checks of ``_check_page``."""
    page = tmp_path / "late.html"
    page.write_text(_LATE)
    browser.open(page.as_uri(), width=1280)
    assert browser.evaluate("document.documentElement.getAttribute('data-csp-violations')") == "1"
    errors = browser.errors()
    assert any("late frame" in e for e in errors) and any("Uncaught" in e for e in errors)
    assert any("violates the following Content Security Policy" in e for e in errors), errors
    assert "https://example.invalid/x.png" in browser.requests()
