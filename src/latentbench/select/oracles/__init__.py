"""Oracles: where the scores of (model, item) cells come from.

The selection loop only ever asks an oracle for the scores of one model on a batch of items
(:class:`Oracle`). :class:`MatrixOracle` replays a known response matrix;
:class:`CallableOracle`, :class:`ChatCompletionsOracle` and :class:`LmEvalBridgeOracle` make
real evaluations and also stream each cell as it completes (:class:`StreamingOracle`), so that
:class:`~latentbench.select.live.DurableOracle` can store every cell before it is used.
"""

from latentbench.select.oracles._callable import CallableOracle
from latentbench.select.oracles._lm_eval import LmEvalBridgeOracle
from latentbench.select.oracles._matrix import MatrixOracle
from latentbench.select.oracles._openai import ChatCompletionsOracle, ChatEndpoint
from latentbench.select.oracles._protocol import CellResult, Oracle, StreamingOracle

__all__ = [
    "CallableOracle",
    "CellResult",
    "ChatCompletionsOracle",
    "ChatEndpoint",
    "LmEvalBridgeOracle",
    "MatrixOracle",
    "Oracle",
    "StreamingOracle",
]
