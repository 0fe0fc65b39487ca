"""The SQUAREM step (:mod:`latentbench.irt._squarem`) gives the same bits on every Python."""

from __future__ import annotations

import math

import numpy as np

from latentbench.irt._squarem import squarem_step


def _point(*parts: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, c = (np.asarray(p, dtype=float) for p in parts)
    return a, b, c


def test_the_step_length_sums_the_squared_norms_alike_on_every_python():
    """``squarem_step`` added its parts' squared norms with the builtin ``sum()``, which
    compensates its rounding from Python 3.12 (Neumaier) and not on 3.11: the same point
    gave a step length one unit in the last place apart, which the EM's feedback grew to
    0.006 in an item bootstrap's interval (tests/irt/test_invariances.py failed on 3.13
    only). Here two parts' squares are each under half an ulp of the first's, together over
    half: a compensated sum rounds up, a left-to-right one does not, and the step length is
    the left-to-right one (3.11's) everywhere."""
    tiny = [2.0**-27] * 3  # squared norm 3 * 2**-54: 0.375 ulp of a value in [2, 4)
    for k in range(1, 200):
        p = 1.5 + k * 2.0**-20  # p * p exact, in [2, 4)
        a, b = p * p, 3 * 2.0**-54
        if math.sqrt(math.fsum([a, b, b])) != math.sqrt((a + b) + b):
            break
    else:
        raise AssertionError("no p whose root tells the two sums apart")
    x0 = _point([0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    x1 = _point([p], tiny, tiny)
    # v = x2 - 2 x1 + x0 = (1, 0, 0): squared norm 1
    x2 = _point([2 * p + 1.0], [2 * t for t in tiny], [2 * t for t in tiny])
    alpha, _, v = squarem_step(x0, x1, x2, step_max=1e4)
    assert [float(np.sum(x * x)) for x in v] == [1.0, 0.0, 0.0]
    assert alpha == -math.sqrt((a + b) + b)
