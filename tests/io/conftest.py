"""Shared fixtures for the io tests (pytest runs with ``--import-mode=importlib``, so test
modules take these as fixtures instead of importing this file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from latentbench.io import ResponseMatrix

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture
def formats() -> Path:
    return FORMATS


def observed_cells(matrix: ResponseMatrix) -> dict[tuple[str, str], float]:
    """Every observed cell as {(model, item): score}; missing cells are absent."""
    scores = matrix.scores
    rows, cols = np.nonzero(~np.isnan(scores))
    return {
        (matrix.model_ids[r], matrix.item_ids[c]): round(float(scores[r, c]), 6)
        for r, c in zip(rows, cols, strict=True)
    }


def expand_table(table: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    """{model: {item: score}} -> {(model, item): score}."""
    return {(m, i): float(v) for m, row in table.items() for i, v in row.items()}


@pytest.fixture
def cells():
    """``cells(matrix)``: every observed cell as {(model, item): score}."""
    return observed_cells


@pytest.fixture
def expand():
    """``expand({model: {item: score}})`` -> {(model, item): score}."""
    return expand_table
