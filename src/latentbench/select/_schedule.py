"""The one source of a run's default schedule: batch size and initial batch per model.

Every caller that needs a default batch size or initial batch (the run loop, replays,
experiments, live runs and the command line) asks :func:`default_schedule`, so a default is
written once.
"""

from __future__ import annotations

import math

from latentbench.exceptions import InputError

__all__ = ["DEFAULT_BATCH_SIZE", "MIN_BATCH_SIZE", "default_schedule"]

DEFAULT_BATCH_SIZE = 64
"""The largest default batch ``B`` (the paper's 64, kept for large benchmarks)."""

MIN_BATCH_SIZE = 8
"""The smallest default batch: below it the per-round overhead (a proxy refit every few
rounds, one confidence-sequence update per round) dominates on large pools."""

ITEMS_PER_ROUND = 128
"""A model's items are revealed in at least about this many rounds (``n_items / B``)."""

ROUNDS_PER_MODEL = 4
"""With a budget, it buys at least about this many rounds per model."""


def _floor_pow2(x: float) -> int:
    return 1 if x < 2 else 2 ** math.floor(math.log2(x))


def default_schedule(n_models: int, n_items: int, budget: int | None = None) -> tuple[int, int]:
    """Default batch size and initial batch for a pool, the same for every policy.

    The rule: ``B`` is the largest power of two with ``n_items / B >= 128`` (a model's row
    is revealed in at least about 128 rounds) and, when a budget is given, with
    ``budget / B >= 4 * n_models`` (the budget buys about 4 rounds per model), clipped to
    ``[8, 64]`` and to ``n_items``; the initial batch is one batch, ``B`` cells per model.

    Why: a round is the unit the policy decides on and the proxy learns from. With the
    paper's ``B = 64`` on a benchmark of a few hundred or thousand items, a model's row is
    used up in a few dozen rounds and a 64-cell start already costs a large share of what a
    certified answer needs; the saving PULSE's proxy buys then disappears (issue 29 reports
    0.0 % +- 6.1 against UCB-E at ``B = 64`` and 23.6 % at ``B = 8`` on a shared pool of
    this size). The benchmark of the ``pulse`` work stream chooses the final rule; this
    function is where it goes. On a large
    benchmark (``n_items >= 8192``) the rule gives the paper's 64. The same initial batch
    for every policy keeps comparisons between them about the adaptive part only.

    Parameters
    ----------
    n_models : int
        Candidate models (arms).
    n_items : int
        Items per model.
    budget : int, optional
        Post-initialisation cells, when the run has a budget.

    Returns
    -------
    batch_size, init_batch : int
        Cells per round and initial cells per model (both in ``1..n_items``).

    Examples
    --------
    >>> default_schedule(35, 1700)
    (8, 8)
    >>> default_schedule(1000, 9574, 400_000)
    (64, 64)
    """
    if n_models < 1 or n_items < 1:
        raise InputError(f"n_models={n_models!r}, n_items={n_items!r}; expected positive integers")
    if budget is not None and budget < 0:
        raise InputError(f"budget={budget!r}; expected a nonnegative integer or None")
    batch = _floor_pow2(n_items / ITEMS_PER_ROUND)
    if budget is not None:
        batch = min(batch, _floor_pow2(budget / (ROUNDS_PER_MODEL * n_models)))
    batch = max(MIN_BATCH_SIZE, min(DEFAULT_BATCH_SIZE, batch))
    batch = min(batch, n_items)
    return batch, batch
