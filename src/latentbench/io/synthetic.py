"""Seeded synthetic response matrices with known truth (2PL and rank-r logistic models).

Missingness mechanisms:

- ``"mcar"``: exactly ``round(rate * N * J)`` cells hidden uniformly at random.
- ``"mar"``: each cell hidden with probability ``sigmoid(c + 2 (i/N - 1/2) + 2 (j/J - 1/2))``
  (depends on the row and column position only, not on the score), with ``c`` calibrated so
  the expected rate is ``rate``.
- ``"mnar"``: only incorrect responses (y = 0) are hidden, ``round(rate * N * J)`` of them
  (or all of them when there are fewer), the "MNAR_0" design of the cBMM paper. The observed
  data then over-state accuracy: a hard case for every estimator.

:class:`LeaderboardSimulator` (defined with the selection engine, re-exported here) fits a
rank-r logistic model to a real matrix and draws any number of new models from the fitted
distribution of model factors, on the real item structure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.select._simulator import LeaderboardSimulator

__all__ = [
    "LeaderboardSimulator",
    "SyntheticData",
    "apply_missing",
    "simulate_2pl",
    "simulate_low_rank",
]

Missingness = Literal["mcar", "mar", "mnar"]


@dataclass
class SyntheticData:
    """A simulated response matrix with its generating parameters.

    Attributes
    ----------
    matrix : ResponseMatrix
        Observed scores (NaN where hidden), shape (n_models, n_items).
    U : ndarray of shape (n_models, rank)
        True model factors (theta for the 2PL).
    V : ndarray of shape (n_items, rank)
        True item factors (a for the 2PL), nonnegative.
    b : ndarray of shape (n_items,)
        True intercepts.
    sigma : float
    probabilities : ndarray of shape (n_models, n_items)
        True P(correct) for every cell.
    complete : ndarray of shape (n_models, n_items)
        Scores before any cell was hidden.
    """

    matrix: ResponseMatrix
    U: np.ndarray
    V: np.ndarray
    b: np.ndarray
    sigma: float
    probabilities: np.ndarray
    complete: np.ndarray

    @property
    def theta(self) -> np.ndarray:
        return self.U[:, 0]

    @property
    def a(self) -> np.ndarray:
        return self.V[:, 0]


def apply_missing(
    scores: np.ndarray,
    rate: float,
    mechanism: Missingness = "mcar",
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Return a float32 copy of ``scores`` with cells hidden (NaN) by ``mechanism``."""
    if not 0 <= rate < 1:
        raise InputError(f"missing rate={rate!r}; expected a number in [0, 1)")
    rng = np.random.default_rng(random_state)
    out = np.array(scores, dtype=np.float32, copy=True)
    n, m = out.shape
    if rate == 0:
        return out
    count = round(rate * n * m)
    if mechanism == "mcar":
        hide = rng.choice(n * m, size=count, replace=False)
        out.reshape(-1)[hide] = np.nan
    elif mechanism == "mar":
        position = (np.arange(n)[:, None] / max(n - 1, 1) - 0.5) * 2 + (
            np.arange(m)[None, :] / max(m - 1, 1) - 0.5
        ) * 2
        shift = brentq(lambda c: expit(c + position).mean() - rate, -30, 30)
        out[rng.random((n, m)) < expit(shift + position)] = np.nan
    elif mechanism == "mnar":
        wrong = np.flatnonzero(out.reshape(-1) < 0.5)
        hide = rng.choice(wrong, size=min(count, wrong.size), replace=False)
        out.reshape(-1)[hide] = np.nan
    else:
        raise InputError(f"missing mechanism={mechanism!r}; expected 'mcar', 'mar' or 'mnar'")
    return out


def _finish(
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
    missing: float,
    mechanism: Missingness,
) -> SyntheticData:
    probabilities = expit((U @ V.T + b) / sigma)
    complete = (rng.random(probabilities.shape) < probabilities).astype(np.float32)
    observed = apply_missing(complete, missing, mechanism, rng)
    n, m = complete.shape
    width_n, width_m = len(str(n - 1)), len(str(m - 1))
    matrix = ResponseMatrix(
        observed,
        [f"model_{i:0{width_n}d}" for i in range(n)],
        [f"item_{j:0{width_m}d}" for j in range(m)],
        source="synthetic",
    )
    return SyntheticData(matrix, U, V, b, sigma, probabilities, complete)


def simulate_2pl(
    n_models: int,
    n_items: int,
    *,
    sigma: float = 1.0,
    a_log_sd: float = 0.3,
    b_sd: float = 1.0,
    missing: float = 0.0,
    mechanism: Missingness = "mcar",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    """Binary responses from the 2PL: theta ~ N(0, 1), a ~ LogNormal(0, a_log_sd), b ~ N(0, b_sd²).

    ``P(y = 1) = sigmoid((a_j theta_i + b_j) / sigma)``.
    """
    if n_models < 2 or n_items < 2:
        raise InputError(f"need at least 2 models and 2 items, got {n_models} x {n_items}")
    rng = np.random.default_rng(random_state)
    theta = rng.normal(size=(n_models, 1))
    a = rng.lognormal(0.0, a_log_sd, size=(n_items, 1))
    b = rng.normal(0.0, b_sd, size=n_items)
    return _finish(theta, a, b, sigma, rng, missing, mechanism)


def simulate_low_rank(
    n_models: int,
    n_items: int,
    rank: int,
    *,
    sigma: float = 1.0,
    sparsity: float = 0.0,
    b_sd: float = 0.5,
    missing: float = 0.0,
    mechanism: Missingness = "mcar",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    """Binary responses from the rank-r model of the cBMM paper's generator.

    U ~ N(0, 1) (n_models, rank); V ~ U(0.5, 1.0) with a fraction ``sparsity`` of entries set
    to 0; b ~ N(0, b_sd²).
    """
    if rank < 1:
        raise InputError(f"rank={rank!r}; expected an integer >= 1")
    rng = np.random.default_rng(random_state)
    U = rng.normal(size=(n_models, rank))
    V = rng.uniform(0.5, 1.0, size=(n_items, rank))
    if sparsity > 0:
        V[rng.random(V.shape) < sparsity] = 0.0
    b = rng.normal(0.0, b_sd, size=n_items)
    return _finish(U, V, b, sigma, rng, missing, mechanism)
