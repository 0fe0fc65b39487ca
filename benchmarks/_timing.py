"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``run``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_seconds(
    runs: Mapping[str, Callable[[], T]],
    repeats: int,
    on_round: Callable[[int], None] | None = None,
) -> dict[str, list[T]]:
    """Seconds of each of ``runs`` over ``repeats`` rounds, alternating them in one window.

    Each value of ``runs`` does one measurement and returns it (seconds: its own wall clock, a
    time the measured process reports, or a tuple such as wall and CPU seconds). Round ``r``
    runs every entry once, in the given order on even rounds and reversed on odd ones (A B,
    B A, A B, ...), so that a change of the machine's load during the rounds falls on both
    sides alike. ``on_round`` is told each
    finished round's index (progress), if given.
    """
    times: dict[str, list[T]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            times[name].append(runs[name]())
        if on_round is not None:
            on_round(r)
    return times
