"""latentbench: trustworthy, cheap LLM evaluation on response matrices.

The public API:

- :class:`ResponseMatrix` (models x items, NaN = missing): ``from_long``, ``from_wide``, ``read``;
- :class:`TwoPL`, the cBMM fit of the 2PL / rank-r logistic model, returning an :class:`IRTResult`;
- :func:`read_results` (lm-eval, lighteval, HELM, Inspect, OpenCompass, tables) and
  :class:`Store`, the embedded DuckDB store;
- :func:`run_selection` with the policies in :mod:`latentbench.select` (PULSE, UCB-E, ...),
  returning a :class:`SelectionResult`;
- :func:`build_report` in :mod:`latentbench.report`;
- warnings under :class:`LatentbenchWarning`.

Subpackages: :mod:`latentbench.io`, :mod:`latentbench.irt`, :mod:`latentbench.select`,
:mod:`latentbench.report`, :mod:`latentbench.cli`.
"""

from latentbench._version import __version__
from latentbench.exceptions import (
    ConvergenceWarning,
    DataWarning,
    IdentifiabilityWarning,
    InputError,
    LatentbenchWarning,
    NotFittedError,
)
from latentbench.io import ResponseMatrix, read_results
from latentbench.irt import IRTResult, TwoPL
from latentbench.select import SelectionResult, run_selection

__all__ = [
    "ConvergenceWarning",
    "DataWarning",
    "IRTResult",
    "IdentifiabilityWarning",
    "InputError",
    "LatentbenchWarning",
    "NotFittedError",
    "ResponseMatrix",
    "SelectionResult",
    "Store",
    "TwoPL",
    "__version__",
    "read_results",
    "run_selection",
]


def __getattr__(name: str) -> object:
    # the store imports duckdb; load it on first use only
    if name == "Store":
        from latentbench.io.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
