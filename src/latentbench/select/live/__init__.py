"""Live selection: real oracles, a durable store, and resumable runs.

The selection loop (:func:`latentbench.select.run_selection`) asks an oracle for the scores
of one model on a batch of items. Here that oracle is an LLM endpoint, a Python function or
the lm-evaluation-harness (:mod:`latentbench.select.oracles`), wrapped by
:class:`DurableOracle`, which

* answers every (model, item) already stored for the run from the store (no new call);
* commits every new result to the store before it is handed to the loop;
* records each round's decision, and refuses to continue when a replayed round differs from
  the stored one (a changed configuration or data file).

The loop is deterministic for a seed (all randomness comes from the seed), so re-running the
same configuration against the same store replays the stored cells for free, continues where
the last process stopped, and reaches the decision an uninterrupted run reaches.

Failed cells (after bounded retries) are stored with ``score`` NULL and the error text. They
reach the loop as NaN only with ``on_error = "zero"`` (the loop then scores them 0, and the
count is reported); the default ``on_error = "stop"`` ends the run after the batch, and the
next run retries exactly the failed cells.
"""

from latentbench.select.live._config import LiveConfig
from latentbench.select.live._durable import DurableOracle, LiveProgress
from latentbench.select.live._options import (
    ItemOptions,
    ModelOptions,
    OracleOptions,
    RunOptions,
    ScorerOptions,
)
from latentbench.select.live._oracles import (
    ORACLES,
    ChatOracleOptions,
    LmEvalOracleOptions,
    OracleInfo,
    PythonOracleOptions,
    oracle,
    oracle_help,
)
from latentbench.select.live._run import LiveResult, is_compare_run, is_estimate_run, run_live

__all__ = [
    "ORACLES",
    "ChatOracleOptions",
    "DurableOracle",
    "ItemOptions",
    "LiveConfig",
    "LiveProgress",
    "LiveResult",
    "LmEvalOracleOptions",
    "ModelOptions",
    "OracleInfo",
    "OracleOptions",
    "PythonOracleOptions",
    "RunOptions",
    "ScorerOptions",
    "is_compare_run",
    "is_estimate_run",
    "oracle",
    "oracle_help",
    "run_live",
]
