"""latentbench: trustworthy, cheap LLM evaluation on response matrices.

The public API:

- :class:`ResponseMatrix` (models x items, NaN = missing): ``from_long``, ``from_wide``, ``read``;
- :class:`TwoPL`, the cBMM fit of the 2PL / rank-r logistic model, returning an :class:`IRTResult`;
- warnings under :class:`LatentbenchWarning`.
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
from latentbench.io import ResponseMatrix
from latentbench.irt import IRTResult, TwoPL

__all__ = [
    "ConvergenceWarning",
    "DataWarning",
    "IRTResult",
    "IdentifiabilityWarning",
    "InputError",
    "LatentbenchWarning",
    "NotFittedError",
    "ResponseMatrix",
    "TwoPL",
    "__version__",
]
