"""Leave-one-model-out calibrations shared by the ``bench_estimate*`` scripts."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Iterator

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt._objective import sigmoid
from latentbench.select._estimate_calibration import Calibration, from_matrix
from latentbench.select._estimate_design import (
    _VARIANCE_FLOOR,
    SequentialEstimate,
    design_probabilities,
)


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


def residual_features(Y: np.ndarray, fitted: np.ndarray, max_features: int = 16) -> np.ndarray:
    """Item features from the calibration models' residuals under the IRT fit, shape (n, p).

    The ``resridge`` variant of the benchmarks (issue 27; not a proxy of the library: see
    ``RESULTS_estimate.md``, "Residual ridge proxy").

    The residual matrix ``E = Y - fitted`` (``K x n``; 0 where a cell is not observed, i.e. the
    fit's own prediction there) carries the item structure the calibration's IRT fit misses
    (item clusters that some models do better on than their ability predicts). The features
    are the item scores on its leading principal directions, scaled by their singular values,
    ``p <= min(K, max_features)``, then all by one constant so that a feature's mean square
    over the items is 1 on average (the scale the ``ridge`` proxy's penalty grid assumes). The
    residuals are not standardized per model: a model the fit predicts well contributes
    little.

    Parameters
    ----------
    Y : ndarray of shape (K, n)
        Calibration models' scores in [0, 1], NaN where not observed.
    fitted : ndarray of shape (K, n)
        The calibration fit's probabilities.
    max_features : int
    """
    E = np.where(np.isfinite(Y), Y - fitted, 0.0)
    n = E.shape[1]
    if E.shape[0] == 0 or not np.any(E):
        return np.zeros((n, 0))
    _, S, Vt = np.linalg.svd(E, full_matrices=False)
    k = int(min(max_features, int((S > 1e-8 * S[0]).sum())))
    X = Vt[:k].T * S[:k]
    X = X / np.sqrt(np.mean(X * X))
    return np.ascontiguousarray(X)


class ProxyVariant(SequentialEstimate):
    """The estimate's engine with the design and / or the rounds' predicted variance taken from
    the IRT predictions ``f_irt`` instead of the proxy's ``f`` (both still predictable).

    ``design_from_irt``: the items are drawn as with ``proxy="irt"`` (the same draws as that
    proxy on the same random stream), so only the rounds' centring on ``f`` differs;
    ``variance_from_irt``: the precision weights and bet sizes are the IRT proxy's.
    """

    def __init__(
        self,
        *args: object,
        design_from_irt: bool = False,
        variance_from_irt: bool = False,
        **kwargs: object,
    ) -> None:
        self.design_from_irt = design_from_irt
        self.variance_from_irt = variance_from_irt
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def probabilities(self) -> np.ndarray:
        if not self.design_from_irt:
            return super().probabilities()
        return design_probabilities(
            self.f_irt, self.unrevealed, self.floor, self.proposal, self.norm2
        )

    def _item_variance(self, items: np.ndarray | None = None) -> np.ndarray:
        if not self.variance_from_irt:
            return super()._item_variance(items)
        f = self.f_irt if items is None else self.f_irt[items]
        return np.asarray(np.maximum(f * (1.0 - f), _VARIANCE_FLOOR))


def make_estimate(
    cal: Calibration, Ycal: np.ndarray, pop: np.ndarray, proxy: str, target: float | None
) -> SequentialEstimate:
    """The engine for a proxy name of the benchmarks: ``irt``, ``ridge`` (the library's), or
    ``resridge`` (the ridge proxy on :func:`residual_features` of the calibration models'
    answers ``Ycal``, shape (K, n_items)), optionally suffixed ``-d`` / ``-v`` / ``-vd``
    (:class:`ProxyVariant`: design / predicted variance from the IRT predictions)."""
    name, _, flags = proxy.partition("-")
    if name == "resridge":
        fit = np.asarray(sigmoid((cal.model_factors @ cal.V.T + cal.b) / cal.sigma))
        cal = dataclasses.replace(cal, item_features=residual_features(Ycal, fit))
        name = "ridge"
    return ProxyVariant(
        cal,
        pop,
        delta=0.05,
        proxy=name,
        target=target,
        design_from_irt="d" in flags,
        variance_from_irt="v" in flags,
    )
