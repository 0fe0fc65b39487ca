"""Leave-one-model-out calibrations shared by the ``bench_estimate*`` scripts."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator

import numpy as np

from latentbench import ResponseMatrix
from latentbench.select._estimate_calibration import Calibration, from_matrix


def held_out(
    M: ResponseMatrix, models: Iterable[int]
) -> Iterator[tuple[int, Calibration, np.ndarray, np.ndarray]]:
    """For each model index ``i`` of ``models``: the rank-1 calibration of every other model
    (fit warnings silenced), the items model ``i`` answered (indices, shape (n,)) and its
    scores on them (float64, shape (n,))."""
    Y = np.asarray(M.scores, dtype=np.float64)
    for i in models:
        others = [M.model_ids[k] for k in range(M.n_models) if k != i]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = from_matrix(M.subset(models=others), rank=1)
        pop = np.flatnonzero(np.isfinite(Y[i]))
        yield i, cal, pop, Y[i][pop]
