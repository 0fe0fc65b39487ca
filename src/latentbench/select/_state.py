"""What a selection run has revealed, and the proxy's predictions for the pool.

Uniform sampling without replacement is implemented by a random reveal order per arm drawn up
front: the next ``B`` entries of that order are a uniform ``B``-subset of the arm's unobserved
items given the past. The order is either drawn independently for every arm or shared by all
arms (one permutation: common random numbers, so arms with the same number of cells have seen
the same items); each arm's order is a uniform permutation either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from latentbench.select._proxy import LowRankProxy

__all__ = ["Observation", "ProxyState", "SelectionState"]


@dataclass
class Observation:
    """One revealed batch: ``scores[k]`` is the score of ``arm`` on ``items[k]``.

    Attributes
    ----------
    arm : int
        Row of the candidate in the pool.
    items : ndarray of int, shape (k,)
        Columns revealed, in the order they were revealed.
    scores : ndarray of float, shape (k,)
        Their scores in [0, 1].
    """

    arm: int
    items: np.ndarray
    scores: np.ndarray


class SelectionState:
    """Revealed cells of a selection run, shared by the loop and the policy.

    Parameters
    ----------
    n_arms, n_items : int
        Pool size and benchmark size.
    rng : numpy.random.Generator
        Draws the reveal order of every arm.
    shared_order : bool, default False
        One reveal order for all arms instead of one per arm (kept as ``shared_order``).

    Attributes
    ----------
    values : ndarray of shape (n_arms, n_items), float32
        Revealed scores, NaN where unrevealed.
    observed : ndarray of shape (n_arms, n_items), bool
    n_obs : ndarray of shape (n_arms,), int
        ``T_i``, revealed cells per arm.
    y_sum : ndarray of shape (n_arms,)
        Sum of revealed scores per arm.
    spent, spent_init : int
        Cells revealed after / during the initial batch.
    rounds : int
        Completed post-initialisation rounds.
    planned_rounds : int
        Rounds the budget allows at most (``ceil(min(budget, unrevealed cells) / B)``), set
        by the run loop after the initial batch; refit schedules are relative to it.
    """

    def __init__(
        self, n_arms: int, n_items: int, rng: np.random.Generator, *, shared_order: bool = False
    ) -> None:
        self.n_arms, self.n_items = n_arms, n_items
        self.shared_order = bool(shared_order)
        if shared_order:
            self.order = np.tile(rng.permutation(n_items).astype(np.int32), (n_arms, 1))
        else:
            base = np.broadcast_to(np.arange(n_items, dtype=np.int32), (n_arms, n_items))
            self.order = rng.permuted(base, axis=1)
        self.values = np.full((n_arms, n_items), np.nan, dtype=np.float32)
        self.observed = np.zeros((n_arms, n_items), dtype=bool)
        self.n_obs = np.zeros(n_arms, dtype=np.int64)
        self._pointer = np.zeros(n_arms, dtype=np.int64)
        self.y_sum = np.zeros(n_arms)
        self.spent = 0
        self.spent_init = 0
        self.rounds = 0
        self.planned_rounds = 1
        self.rng = rng

    def __repr__(self) -> str:
        """``SelectionState(3 arms x 1,700 items, 96 cells revealed, 2 rounds)``."""
        return (
            f"SelectionState({self.n_arms:,} arms x {self.n_items:,} items, "
            f"{int(self.n_obs.sum()):,} cells revealed, {self.rounds:,} rounds)"
        )

    def remaining(self) -> np.ndarray:
        """Unrevealed cells per arm, shape (n_arms,).

        Returns
        -------
        ndarray of int of shape (n_arms,)
        """
        return self.n_items - self.n_obs

    def in_order(self, arm: int) -> bool:
        """Whether ``arm``'s revealed cells are exactly the first ``T_arm`` items of its
        order (only uniform draws so far).

        Parameters
        ----------
        arm : int
            The arm's index.

        Returns
        -------
        bool
        """
        return bool(self._pointer[arm] == self.n_obs[arm])

    def uniform_items(self, arm: int, size: int) -> np.ndarray:
        """``size`` unrevealed items of ``arm``, uniform without replacement given the past.

        Parameters
        ----------
        arm : int
            The arm's index.
        size : int
            Items wanted (fewer when fewer are unrevealed).

        Returns
        -------
        ndarray of int64 of shape (<= size,)
            Item indices, the next ones of the arm's random order not yet revealed.
        """
        start = int(self._pointer[arm])
        order = self.order[arm]
        if self.n_obs[arm] == start:  # only uniform draws so far: the prefix is the observed set
            return np.asarray(order[start : start + size], dtype=np.int64)
        # other reveals happened (e.g. UCB-E-LRF): skip revealed items in the order
        rest = order[start:]
        rest = rest[~self.observed[arm, rest]]
        return np.asarray(rest[:size], dtype=np.int64)

    def record(self, obs: Observation, *, initial: bool = False) -> None:
        """Store a revealed batch (scores checked by the run loop: no NaN).

        Parameters
        ----------
        obs : Observation
            The batch: its arm, items and scores.
        initial : bool, default False
            Whether it is the initial batch (counted in ``spent_init``, else in ``spent``).
        """
        scores = np.asarray(obs.scores, dtype=np.float32)
        self.values[obs.arm, obs.items] = scores
        self.observed[obs.arm, obs.items] = True
        k = len(obs.items)
        self.n_obs[obs.arm] += k
        if self.n_obs[obs.arm] <= self.n_items:
            order = self.order[obs.arm]
            p = int(self._pointer[obs.arm])
            if np.array_equal(order[p : p + k], obs.items):
                self._pointer[obs.arm] = p + k
        self.y_sum[obs.arm] += float(scores.sum(dtype=np.float64))
        if initial:
            self.spent_init += k
        else:
            self.spent += k


class ProxyState:
    """Predictions of a :class:`~latentbench.select.LowRankProxy` for the candidate pool.

    Shared by the policies that use the proxy; refits are exact per row and warm-started.

    Parameters
    ----------
    proxy : LowRankProxy
        Fitted on the history.
    n_arms : int
    """

    def __init__(self, proxy: LowRankProxy, n_arms: int) -> None:
        self.proxy = proxy
        self.U = np.tile(proxy.prior_mean_, (n_arms, 1))
        self.f = np.broadcast_to(
            proxy.prior_prediction().astype(np.float32), (n_arms, proxy.n_items)
        ).copy()
        self.n_refits = 0
        self.refit_seconds = 0.0

    def refit(
        self, values: np.ndarray, rows: np.ndarray | None = None, *, fitted: bool = False
    ) -> np.ndarray:
        """Refit ``U`` on all revealed cells (rows given: only those) and update ``f``.

        Parameters
        ----------
        values : ndarray of shape (n_arms, n_items)
            The revealed scores (NaN where unrevealed).
        rows : ndarray of int of shape (k,), optional
            The arms to refit; None: all. A proxy that learns its items refits every arm.
        fitted : bool, default False
            A proxy that learns its items was just fitted on ``values``: take its factors
            (the fit it would repeat), counted as a refit with that fit's seconds.

        Returns
        -------
        ndarray of int of shape (k,)
            The arms refitted (every arm when ``rows`` is None or the proxy learns its items).
        """
        start = time.perf_counter()
        if getattr(self.proxy, "learns_items", False):  # history-free: item factors move too
            if fitted:
                self.U = np.array(self.proxy.U_history_, dtype=np.float64)
                start -= self.proxy.fit_seconds_
            else:
                self.U = self.proxy.refit_all(values)  # type: ignore[attr-defined]
            self.f = self.proxy.predict(self.U)
            self.n_refits += 1
            self.refit_seconds += time.perf_counter() - start
            return np.arange(values.shape[0])
        rows = np.arange(values.shape[0]) if rows is None else np.asarray(rows)
        if rows.size:
            self.U = (
                self.proxy.fit_models(values, U0=self.U, rows=rows)
                if rows.size < len(self.U)
                else self.proxy.fit_models(values, U0=self.U)
            )
            self.f[rows] = self.proxy.predict(self.U[rows])
        self.n_refits += 1
        self.refit_seconds += time.perf_counter() - start
        return rows
