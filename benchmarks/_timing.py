"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``run``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
