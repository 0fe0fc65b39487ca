"""Default batch size and initial batch of a selection run, chosen from the pool's shape.

A selection run reveals an initial batch of ``init`` cells of every candidate, then rounds of
``B`` cells of one candidate at a time. Both numbers trade off the same way:

* a **large** start is paid on every candidate, hopeless ones included, and a large ``B``
  gives few rounds, so the proxy (refit about 20 times over the planned rounds) and the
  adaptive choice of candidates have little to act on;
* a **small** start leaves a candidate whose first cells were unlucky with a low estimate for
  long (UCB-E does not revisit it until its rivals' bonuses have shrunk), and a small ``B``
  means many rounds: compute and, in a live run, one round trip per round.

:func:`default_schedule` sizes both from the cells a candidate can receive, ``n_items`` or,
with a budget, the budget's share per candidate: ``B = init`` is the power of two nearest to
that divided by :data:`ROUNDS_PER_MODEL`, clipped to [:data:`MIN_BATCH`, :data:`MAX_BATCH`].
Below about 15,000 cells per candidate this is 16; it reaches 64 at about 30,000 (the
number of rounds, i.e. compute and, live, round trips, stays near 640 per fully evaluated
candidate).

How the constants were chosen (``benchmarks/RESULTS_select.md``, "Batch schedule"): on the
shared pools (BFCL gap 0.02, 29 x 1,700; MMLU-Pro, 15 x 10,326; AlpacaEval 1 and 2, 27 x 754
and 29 x 797) evaluations to 95 % identification were measured for ``B`` in {8, 16, 32, 64}
(MMLU-Pro: 16 and 64) with the same start for PULSE and UCB-E. At 40 seeds ``B = 16`` with a
16-cell start had the largest saving on BFCL and MMLU-Pro and was within one paired-bootstrap
SE of the best on AlpacaEval 1 (the best there was 8); AlpacaEval 2 is decided by any start.
With more seeds (200; 400 on BFCL) a 64-cell start saves more post-init on BFCL (45.3 % against
39.1 % +- 4.1, a gap of 6.2 +- 3.7) but costs about 940 more cells in total; with the start held
at 16 cells, ``B = 16`` is the best batch there, and 16 / 16 has the lowest total but for
8 / 16 (+63 +- 83 cells). A start of
8 cells let unlucky candidates be starved for thousands of cells (worst seeds on BFCL: 9,504
PULSE and 11,532 UCB-E post-init cells, against about 4,700 and 3,500 from 16 cells), hence
``MIN_BATCH = 16``. No shared pool has more than 10,326 items, so the growth to 64 for longer
benchmarks follows the cost of rounds, not a measured saving.
"""

from __future__ import annotations

import math
import numbers

from latentbench._checks import is_integer
from latentbench.exceptions import InputError

__all__ = ["MAX_BATCH", "MIN_BATCH", "ROUNDS_PER_MODEL", "default_schedule"]

MIN_BATCH = 16
"""Smallest batch and start: 8-cell starts starve unlucky candidates (see the module notes)."""
MAX_BATCH = 64
"""Largest batch and start (the paper's B)."""
ROUNDS_PER_MODEL = 640
"""Rounds that fully evaluate one candidate: ``B ~ cells per candidate / ROUNDS_PER_MODEL``."""


def default_schedule(n_models: int, n_items: int, budget: int | None = None) -> tuple[int, int]:
    """Batch size and initial batch (cells per model) for a pool of this shape.

    Parameters
    ----------
    n_models : int
        Candidate models in the pool (>= 1).
    n_items : int
        Items of the benchmark (>= 1).
    budget : int or None
        Post-initialisation cells the run may spend, or None (the run stops when the best is
        certified, or when every cell is revealed).

    Returns
    -------
    batch : int
        Cells revealed per round, ``B``.
    init : int
        Cells of every model in the initial batch (equal to ``B``, at most ``n_items``).

    Raises
    ------
    InputError
        A count below 1 or a negative budget.

    Examples
    --------
    >>> default_schedule(29, 1700, None)
    (16, 16)
    >>> default_schedule(15, 10326, None)
    (16, 16)
    >>> default_schedule(15, 40000, None)
    (64, 64)
    """
    for name, value in (("n_models", n_models), ("n_items", n_items)):
        if not is_integer(value) or value < 1:
            raise InputError(f"{name}={value!r}; expected an integer >= 1")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 0
    ):
        raise InputError(f"budget={budget!r}; expected a nonnegative integer or None")
    per_model = float(n_items)
    if budget is not None:
        per_model = min(per_model, budget / n_models)
    raw = max(per_model / ROUNDS_PER_MODEL, 1.0)
    batch = 2 ** round(math.log2(raw))
    batch = max(MIN_BATCH, min(MAX_BATCH, batch))
    batch = min(batch, n_items)
    return batch, batch
