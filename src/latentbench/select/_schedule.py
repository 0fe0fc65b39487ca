"""Default batch size and initial batch of a selection run, chosen from the pool's shape."""

from __future__ import annotations

import math

from latentbench.exceptions import InputError

__all__ = ["default_schedule"]

MIN_BATCH = 8
MAX_BATCH = 64
ROUNDS_PER_MODEL = 200


def default_schedule(n_models: int, n_items: int, budget: int | None) -> tuple[int, int]:
    """(batch, init cells per model) -- provisional."""
    if n_models < 1 or n_items < 1:
        raise InputError(f"n_models={n_models!r}, n_items={n_items!r}; expected positive")
    per_model = float(n_items)
    if budget is not None:
        per_model = min(per_model, budget / n_models)
    raw = max(per_model / ROUNDS_PER_MODEL, 1.0)
    batch = 2 ** int(math.floor(math.log2(raw)))
    batch = max(MIN_BATCH, min(MAX_BATCH, batch))
    batch = min(batch, n_items)
    return batch, batch
