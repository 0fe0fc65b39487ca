"""The one source of a run's default schedule: batch size and initial batch per model.

Every caller that needs a default batch size (the run loop, replays, experiments, live runs and
the command line) asks this module, so a default is written once.
"""

from __future__ import annotations

__all__ = ["DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 64
"""Cells per round ``B`` when nothing else is given (the paper's 64)."""
