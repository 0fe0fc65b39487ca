"""Shared fixtures for the select tests: small seeded low-rank data and a hostile proxy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


def lowrank_data(m: int, n: int, r: int = 2, seed: int = 0, spread: float = 1.0):
    """Binary (m, n) matrix from a rank-r logistic model; returns Y, U, V, b."""
    rng = np.random.default_rng(seed)
    U = rng.normal(0.0, spread, size=(m, r))
    V = np.abs(rng.normal(0.0, 1.0, size=(n, r)))
    b = rng.normal(0.0, 1.0, size=n)
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + b)))
    Y = (rng.random((m, n)) < P).astype(np.float32)
    return Y, U, V, b


class HostileProxy:
    """Duck-typed proxy whose predictions are as wrong as possible and change at every refit.

    ``f`` is ``1 - Y`` shifted by a refit-dependent offset, so predictions are anti-correlated
    with the truth; a refit moves ``u`` by an amount that depends on the revealed data (still
    predictable: it only uses the past).
    """

    def __init__(self, Y: np.ndarray):
        self.Y = np.asarray(Y, dtype=np.float32)
        self.prior_mean_ = np.zeros(1)
        self.n_items = self.Y.shape[1]

    def prior_prediction(self) -> np.ndarray:
        return np.full(self.n_items, 0.5)

    def fit_models(self, values, U0=None, rows=None):
        U = np.zeros((values.shape[0], 1)) if U0 is None else np.array(U0, dtype=float)
        idx = np.arange(values.shape[0]) if rows is None else np.asarray(rows)
        obs_mean = np.nan_to_num(np.nanmean(values[idx], axis=1), nan=0.0)
        U[idx, 0] += 1.0 + obs_mean
        return U

    def predict(self, U):
        j = np.arange(self.n_items)
        rows = []
        for i, u in enumerate(np.asarray(U)[:, 0]):
            shift = 0.8 * ((u / 2.7) % 1.0) - 0.4 + 0.1 * np.sin(u * 3.0 + j)
            rows.append(np.clip(1.0 - self.Y[i % self.Y.shape[0]] + shift, 0.0, 1.0))
        return np.asarray(rows, dtype=np.float32)


@pytest.fixture
def small_problem():
    Y, U, V, b = lowrank_data(8, 240, r=2, seed=3)
    return Y, U, V, b


def bare_calibration(K: int = 4, n: int = 3, **kw: object) -> Any:
    """A ``Calibration`` of ``K`` models x ``n`` items with random parameters (``kw``: its
    other fields, e.g. ``responses``)."""
    from latentbench.select._estimate_calibration import Calibration

    rng = np.random.default_rng(0)
    return Calibration(
        item_ids=tuple(f"q{j}" for j in range(n)),
        V=rng.normal(size=(n, 1)),
        b=rng.normal(size=n),
        sigma=1.0,
        model_ids=tuple(f"m{k}" for k in range(K)),
        model_scores=np.full(K, 0.5),
        model_factors=rng.normal(size=(K, 1)),
        source="test",
        hash="0" * 16,
        **kw,
    )


@pytest.fixture
def tmp_path(ram_tmp_path):
    """These tests' files in memory (``ram_tmp_path``): a DuckDB store syncs at every commit."""
    return ram_tmp_path
