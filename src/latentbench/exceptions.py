"""Warnings and errors raised by latentbench.

All warnings derive from :class:`LatentbenchWarning`, so users can filter everything the
library emits in one line (``warnings.filterwarnings("ignore", category=LatentbenchWarning)``).
The library never touches global warning filters.
"""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "DataWarning",
    "IdentifiabilityWarning",
    "InputError",
    "LatentbenchWarning",
    "NotFittedError",
]


class LatentbenchWarning(UserWarning):
    """Base class of every warning latentbench emits."""


class ConvergenceWarning(LatentbenchWarning):
    """An iterative fit stopped at ``max_iter`` before meeting its tolerance."""


class IdentifiabilityWarning(LatentbenchWarning):
    """A parameter has no finite or unique estimate (e.g. an all-correct row or column)."""


class DataWarning(LatentbenchWarning):
    """The input is valid but unusual (non-binary scores, duplicate columns, degenerate rows)."""


class InputError(ValueError):
    """Invalid user input; the message names the source, field, value and what was expected."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit``."""
