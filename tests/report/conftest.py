"""Shared fixtures of the report tests: a small fit with hostile names, a selection run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.synthetic import simulate_2pl

HOSTILE_MODEL = '<script>alert("m")</script>'
HOSTILE_ITEM = "q&<b>\"'$x$"


@pytest.fixture(scope="session")
def small_fit():
    data = simulate_2pl(40, 60, missing=0.05, random_state=2)
    models = data.matrix.model_ids
    models[0] = HOSTILE_MODEL
    items = data.matrix.item_ids
    items[1] = HOSTILE_ITEM
    matrix = ResponseMatrix(data.matrix.scores, models, items)
    return matrix, TwoPL().fit(matrix)


@pytest.fixture(scope="session")
def selection_run():
    from latentbench.select import SelectionResult

    n = 6
    rng = np.random.default_rng(0)
    estimates = np.sort(rng.uniform(0.3, 0.8, n))
    return SelectionResult(
        policy="pulse",
        best=n - 1,
        estimates=estimates,
        lower=estimates - 0.1,
        upper=estimates + 0.1,
        n_observed=np.array([64, 70, 90, 120, 200, 260]),
        evaluations_init=6 * 64,
        evaluations_post_init=420,
        rounds=5,
        trace_evaluations=np.array([0, 64, 128, 192, 256, 420]),
        trace_best=np.array([3, 4, 5, 5, 5, 5]),
        stopped="budget",
        model_ids=[f"arm-{i}" for i in range(n - 1)] + [HOSTILE_MODEL],
    )


@pytest.fixture(scope="session")
def hostile():
    """The hostile (model, item) names planted in ``small_fit``."""
    return HOSTILE_MODEL, HOSTILE_ITEM


CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium per module for the report tests that drive one (``_cdp.py``). A
    test that changes the page's emulation (print media, scripts off, a key held) puts it back
    before it ends. Not one per session: its pipe reader is a thread, and a thread left alive
    for later tests fails tests/test_fork.py (they start with no thread but their own)."""
    if CHROMIUM is None or not sys.platform.startswith("linux"):
        pytest.skip("no chromium binary on PATH, or not Linux (the pipe client needs Linux)")
    sys.path.insert(0, str(Path(__file__).parent))
    from _cdp import Browser

    chrome = Browser(str(CHROMIUM), tmp_path_factory.mktemp("profile"))
    yield chrome
    chrome.close()
