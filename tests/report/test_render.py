"""``latentbench report`` on every shared data set renders in headless Chromium.

Chromium (Debian ``chromium``) is installed by ``.ci/install-chromium.sh``; without a binary
these tests are skipped with that reason. The page is loaded twice: once with ``--dump-dom``
(URL fragment ``#selftest``: the page sorts every table by a click and records the outcome in
``data-*`` attributes of ``<html>``, along with any JavaScript error and broken images), and once
for a screenshot saved under ``tmp_path``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.report import FIT_SECTIONS

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
DATASETS = ["mmlu_pro", "bfcl_v2", "alpacaeval2_weighted", "alpacaeval1_gpt4"]
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH (install with .ci/install-chromium.sh)"
)

_register()
runner = CliRunner()


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=3000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _html_attributes(dom: str) -> dict[str, str]:
    tag = re.search(r"<html[^>]*>", dom)
    assert tag, dom[:500]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(0)))


@pytest.mark.parametrize("name", DATASETS)
def test_report_of_shared_data_renders(tmp_path, name):
    path = SHARED / f"{name}.parquet"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    fit_dir = tmp_path / "fit"
    outcome = runner.invoke(app, ["fit", str(path), "--out", str(fit_dir), "--quiet"])
    assert outcome.exit_code == 0, outcome.output
    page = tmp_path / f"{name}.html"
    outcome = runner.invoke(
        app, ["report", str(fit_dir), "--responses", str(path), "--out", str(page), "-q"]
    )
    assert outcome.exit_code == 0, outcome.output

    dumped = _chromium(tmp_path / "profile", "--dump-dom", page.as_uri() + "#selftest")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    attributes = _html_attributes(dom)
    assert attributes.get("data-ready") == "1", attributes
    assert "data-js-errors" not in attributes, attributes["data-js-errors"]
    assert attributes.get("data-selftest") == "ok"
    assert int(attributes["data-sortable-tables"]) >= 6
    assert int(attributes.get("data-images", "0")) >= 4
    assert attributes.get("data-images-broken") == "0"
    assert re.findall(r'<section id="([^"]+)"', dom) == list(FIT_SECTIONS)

    flagged = dom.split('id="flagged-items"')[1].split("</section>")[0]
    movers = dom.split('id="rank-shifts"')[1].split("</section>")[0]
    assert flagged.count("<tr>") > 1 and movers.count("<tr>") > 1
    if name == "mmlu_pro":
        # 876 items are constant across the 29 models: all flagged (table shows 300 rows)
        assert "(showing 300 of" in flagged
        assert "Models whose rank moves most" in movers

    shot = tmp_path / f"{name}.png"
    taken = _chromium(
        tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()
    )
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
