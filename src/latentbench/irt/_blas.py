"""BLAS limited to one thread for the duration of a call (threadpoolctl).

The fits run many small or medium matrix products in a loop. With the BLAS library's own
threads, each product pays a hand-off to threads that spin between calls and compete with the
numba workers and with each other on a machine with few cores. Measured on the 2-core
development machine (load 4-9 from other jobs): the cBMM fit of 2211 x 12032 rank 1 took
0.69 s instead of 1.6 s (rank 16: 8 s instead of 44 s); the random-item EM of a 30 x 500
matrix 0.9 s of CPU instead of 6.0 s, of MMLU-Pro (29 x 12032) 18 s instead of 46 s, with
identical iterates. The products that remain are small or memory-bound, where one thread
loses little.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

__all__ = ["single_threaded_blas"]

T = TypeVar("T")

_CONTROLLER: ThreadpoolController | None = None


def single_threaded_blas(function: Callable[..., T]) -> Callable[..., T]:
    """Decorator: run ``function`` with the BLAS libraries limited to one thread."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        global _CONTROLLER
        if _CONTROLLER is None:
            _CONTROLLER = ThreadpoolController()
        with _CONTROLLER.limit(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return wrapper
