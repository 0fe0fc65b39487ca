"""A paired best-arm certificate: betting confidence sequences on per-item differences.

Under one shared reveal order (``SelectionState(shared_order=True)``: one uniformly random
permutation ``pi`` of the items, drawn before any cell and independent of the scores), arms
``i`` and ``j`` with ``T_i`` and ``T_j`` cells have both seen the items ``pi(1), ...,
pi(min(T_i, T_j))``. The differences ``d_k = y_i(pi(k)) - y_j(pi(k))`` in that order are then
a draw without replacement from the finite population of the ``n`` per-item differences,
whose mean is ``mu_i - mu_j``: given ``pi(1..k-1)``, ``pi(k)`` is uniform over the other
items. A betting confidence sequence (:class:`~latentbench.select._betting.BettingConfSeq`,
one arm, no proxy) on ``u_k = (d_k + 1) / 2`` in [0, 1] whose bets depend on ``d_1..d_{k-1}``
only is a nonnegative martingale at the true mean in the filtration of ``pi(1..k)``, so by
Ville's inequality its bound holds at every ``k`` at once: also at the random,
data-dependent positions ``min(T_i, T_j)`` at which the selection loop reads it (the pulls
decide how far along ``pi`` each arm gets and when the bound is read, never the order
itself). That holds whatever the arms' choices and whatever the other arms' cells (which,
under the shared order, show items further along ``pi``): the bound of a pair is a fixed
function of the pair's own differences in the order ``pi``.

A best ``b`` is certified when the lower bound on ``mu_b - mu_j`` is above 0 for every other
arm ``j``. Each one-sided bound has level ``delta / (m - 1)``. A wrong certificate (``b``
certified, the true best ``i* != b``) needs the lower bound on ``mu_b - mu_{i*}`` to be above
its true value (negative); among the pairs that contain ``i*`` these are ``m - 1`` one-sided
events, so a certified best is wrong with probability at most ``delta``, at any stopping time.
The same holds for the lower bounds above ``-epsilon`` (a model within ``epsilon`` of the best)
and with fully revealed rivals at or below a fully revealed ``b`` left out
(:mod:`latentbench.select._certify`). Pairs are created when first needed (the leader's) and
fed the pair's whole common prefix then, in the same order: the bound is the same function of
the pair's differences whenever it is created, so creating it late changes nothing in the
argument.

**Levels from the initial batch** (``levels="plausible"``, the default). Only the ``m - 1``
pairs that contain the true best need their level summed to ``delta``, so each arm ``i``
may split ``delta`` over the bounds "``j`` beats ``i``" unevenly: the level of the lower
bound on ``mu_j - mu_i`` is ``delta w_j / (1 - w_i)`` for weights ``w`` (summing to 1), and
for every ``i`` these sum to ``delta``. The weights are set from the initial batch (the
first ``t0`` items of the order, seen by every arm): ``w = 1 / (2 m) + q / 2`` with ``q``
proportional to ``exp(-z_j^2 / 2)``, ``z_j`` the initial leader's lead over ``j`` in units
of the standard error of their paired difference on those items. A best whose start
looked plausible then certifies at about ``delta w_best`` (for three plausible arms,
``delta / 2`` against the close ones), where the even split gives ``delta / (m - 1)``;
any arm's level is at least ``delta / (2 m)``, so an unlucky start costs at most about
``log 2`` nats. The levels depend on the first ``t0`` items, so the pairs bet only on the
items after them (their capitals start at position ``t0 + 1``; the first ``t0`` cells
enter the sums as known values). Conditionally on ``pi(1..t0)`` the rest of the order is a
uniform permutation of the other items, so Ville's inequality holds for each pair at its
level given the start, and the union over the pairs that contain the true best is
``delta`` given the start, hence also unconditionally. ``levels="uniform"``:
``delta / (m - 1)`` each, betting from the first item.

No proxy enters the differences: the predictions of arm ``i`` after its ``T_i`` cells depend
on items beyond ``min(T_i, T_j)`` when ``T_i > T_j``, so they are not predictable in the
pair's filtration. With an order per arm (history-free runs) no items are shared and this
certificate does not apply (:class:`~latentbench.select.Pulse` falls back to the per-arm
one).
"""

from __future__ import annotations

import numpy as np

from latentbench.exceptions import InputError
from latentbench.select._betting import BettingConfSeq
from latentbench.select._state import SelectionState

__all__ = ["PairedCertificate", "plausible_levels"]

PAIRED_GRID = 5000
"""Grid of candidate means of ``u = (d + 1) / 2``: steps of 0.0004 in the difference
``d``, against the per-arm grid's 0.001 in a mean (top-two gaps of 0.01 are common)."""

_CHUNK = 64
"""Cells per update when a pair catches up (rejections are checked after each update)."""


class PairedCertificate:
    """Lower confidence bounds on ``mu_i - mu_j`` from the cells two arms share in one order.

    Parameters
    ----------
    n_arms, n_items : int
    delta : float
        Error probability of the certificate; each one-sided bound has level
        ``delta / (n_arms - 1)`` (module docstring).
    weights : tuple of float, "uniform" or None
        Prior weights of the horizons of the bets' mixture (``BettingConfSeq``'s ``weights``;
        None: its default).
    levels : ndarray of shape (n_arms, n_arms), optional
        ``levels[j, i]``: the level of the lower bound on ``mu_j - mu_i``; for every ``i`` the
        sum over ``j`` must be at most ``delta`` (:func:`plausible_levels`). Default: the even
        split ``delta / (n_arms - 1)``.
    start : int, default 0
        Cells of each pair's common prefix revealed without a bet (those the levels were
        set from).
    grid : int, optional
        Candidate means of ``(d + 1) / 2`` (default :data:`PAIRED_GRID`).

    Raises
    ------
    InputError
        For fewer than 2 arms, ``delta`` outside (0, 1), ``levels`` that are not positive of
        shape (n_arms, n_arms) or that sum to more than ``delta`` against an arm, or unknown
        ``weights``.

    Notes
    -----
    Valid only when every arm's revealed cells are the first ``T_i`` items of one shared
    order; :meth:`advance` checks that and raises otherwise.
    """

    def __init__(
        self,
        n_arms: int,
        n_items: int,
        delta: float,
        *,
        weights: tuple[float, ...] | str | None = None,
        levels: np.ndarray | None = None,
        start: int = 0,
        grid: int | None = None,
    ) -> None:
        if n_arms < 2:
            raise InputError(f"n_arms={n_arms!r}; a paired certificate needs at least 2 arms")
        if not 0 < delta < 1:
            raise InputError(f"delta={delta!r}; expected a value in (0, 1)")
        self.n_arms, self.n_items = int(n_arms), int(n_items)
        self.delta = float(delta)
        m = self.n_arms
        if levels is None:
            levels = np.full((m, m), self.delta / (m - 1))
        levels = np.asarray(levels, dtype=np.float64)
        off = ~np.eye(m, dtype=bool)
        if levels.shape != (m, m) or not (levels[off] > 0).all():
            raise InputError(f"levels: expected positive levels of shape ({m}, {m})")
        if (np.where(off, levels, 0.0).sum(axis=0) > self.delta * (1 + 1e-9)).any():
            raise InputError("levels: the levels against an arm sum to more than delta")
        self.levels = levels
        self.start = int(start)
        if isinstance(weights, str):
            if weights != "uniform":
                raise InputError(f"weights={weights!r}; expected 'uniform', a tuple or None")
            weights = (1.0, 1.0, 1.0, 1.0)
        self._weights = weights
        self._grid = int(PAIRED_GRID if grid is None else grid)
        self._pairs: dict[tuple[int, int], BettingConfSeq] = {}
        self._count: dict[tuple[int, int], int] = {}

    @property
    def n_pairs(self) -> int:
        """Pairs created so far."""
        return len(self._pairs)

    def _pair(self, i: int, j: int) -> tuple[BettingConfSeq, tuple[int, int]]:
        key = (i, j) if i < j else (j, i)
        cs = self._pairs.get(key)
        if cs is None:
            a, b = key  # u = (y_a - y_b + 1) / 2: its lower bound is mu_a - mu_b's
            cs = BettingConfSeq(
                1,
                self.n_items,
                self.delta,
                grid=self._grid,
                weights=self._weights if not isinstance(self._weights, str) else None,
                certificate_levels=(self.levels[a, b], self.levels[b, a]),
            )
            self._pairs[key] = cs
            self._count[key] = 0
        return cs, key

    def advance(self, state: SelectionState, i: int, j: int) -> None:
        """Feed the pair ``(i, j)`` the differences of the cells both arms now have.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.
        i, j : int
            The two arms.

        Raises
        ------
        InputError
            When the arms' cells are not prefixes of one shared item order.
        """
        if not state.shared_order or not (state.in_order(i) and state.in_order(j)):
            raise InputError(
                "the paired certificate needs every arm's cells to be a prefix of one shared "
                "item order"
            )
        cs, key = self._pair(i, j)
        a, b = key
        common = int(min(state.n_obs[a], state.n_obs[b]))
        done = self._count[key]
        order = state.order[a]
        zero = np.zeros(_CHUNK)
        while done < common:
            items = order[done : min(done + _CHUNK, common)]
            d = state.values[a, items].astype(np.float64) - state.values[b, items]
            if done < self.start:  # the cells the levels were set from: no bet
                items = items[: self.start - done]
            cs.update(
                0,
                (d[: items.size] + 1.0) / 2.0,
                zero[: items.size],
                0.0,
                0.0,
                0.0,
                0.0,
                wager=done >= self.start,
            )
            done += items.size
        self._count[key] = done

    def lower(self, state: SelectionState, arm: int) -> np.ndarray:
        """Lower bounds on ``mu_arm - mu_j`` for every arm ``j``, shape (n_arms,); ``+inf`` at
        ``arm``. Advances the pairs of ``arm`` first.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.
        arm : int
            The arm whose lead is bounded.

        Returns
        -------
        ndarray of shape (n_arms,)

        Raises
        ------
        InputError
            As :meth:`advance`.
        """
        out = np.full(self.n_arms, np.inf)
        for j in range(self.n_arms):  # one sequence per pair (at most n_arms - 1 here)
            if j != arm:
                out[j] = self.bound(state, arm, j)
        return out

    def bound(self, state: SelectionState, i: int, j: int) -> float:
        """Lower bound on ``mu_i - mu_j`` (advances the pair first).

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.
        i, j : int
            The two arms.

        Returns
        -------
        float

        Raises
        ------
        InputError
            As :meth:`advance`.
        """
        self.advance(state, i, j)
        cs, key = self._pair(i, j)
        lo, hi = cs.certificate()
        return float(2.0 * lo[0] - 1.0 if key[0] == i else 1.0 - 2.0 * hi[0])


def plausible_levels(initial: np.ndarray, delta: float) -> np.ndarray:
    """Levels of the paired bounds from the initial batch (module docstring).

    Parameters
    ----------
    initial : ndarray of shape (n_arms, t0)
        Every arm's scores on the same first ``t0`` items of the shared order.
    delta : float

    Returns
    -------
    ndarray of shape (n_arms, n_arms)
        ``levels[j, i] = delta w_j / (1 - w_i)`` (the diagonal unused), with
        ``w = 1 / (2 m) + q / 2`` and ``q`` proportional to ``exp(-z^2 / 2)``, ``z_j`` the
        initial leader's lead over ``j`` over the standard error of their paired mean
        difference (its variance with one pseudo-item of variance 1 added, so identical
        starts do not divide by 0). For every ``i`` the levels ``j != i`` sum to ``delta``.
    """
    Y = np.asarray(initial, dtype=np.float64)
    m, t0 = Y.shape
    lead = int(np.argmax(Y.mean(axis=1)))
    d = Y[lead][None, :] - Y  # (m, t0)
    gap = d.mean(axis=1)
    dev = ((d - gap[:, None]) ** 2).sum(axis=1)
    se = np.sqrt((dev + 1.0) / max(t0, 1) / max(t0, 1))
    q = np.exp(-0.5 * np.minimum(gap / se, 40.0) ** 2)
    w = 0.5 / m + 0.5 * q / q.sum()
    levels: np.ndarray = delta * w[:, None] / (1.0 - w[None, :])
    np.fill_diagonal(levels, 0.0)
    return levels
