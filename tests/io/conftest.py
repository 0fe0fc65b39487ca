"""Shared helpers for the io tests: fixture paths and matrix-cell comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from latentbench.io import ResponseMatrix

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture
def formats() -> Path:
    return FORMATS


def cells(matrix: ResponseMatrix) -> dict[tuple[str, str], float]:
    """Every observed cell as {(model, item): score}; missing cells are absent."""
    scores = matrix.scores
    rows, cols = np.nonzero(~np.isnan(scores))
    return {
        (matrix.model_ids[r], matrix.item_ids[c]): round(float(scores[r, c]), 6)
        for r, c in zip(rows, cols, strict=True)
    }


def expand(table: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
    """{model: {item: score}} -> {(model, item): score}."""
    return {(m, i): float(v) for m, row in table.items() for i, v in row.items()}
