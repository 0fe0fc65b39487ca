"""Sizing a fixed design for a target half-width (``tiny --precision``).

The half-width a design of ``k`` items gives a model is what ``estimate --items`` reports for
it: the same engine (:func:`~latentbench.select._estimate._design_engine`) replays each
calibration model's own answers on the design's first ``k`` items, and a confidence sequence
sized for ``k`` (:meth:`SequentialEstimate.sized_sequence`, as ``estimate --items`` sizes it)
is fed those rounds; for a weighted or macro design (``tiny --weights``) the engine is the
weighted one ``estimate --items --weights`` runs, so the half-width is the weighted score's.
The first ``k'`` items of a ``k``-item design are the ``k'``-item design
and a round does not depend on the sizing, so each model is replayed once, up to the largest
``k`` tried, and each candidate ``k`` costs only its confidence sequences. The prediction is
in-sample: the calibration models' answers made the calibration, so a new model unlike them
may need more items (docs/estimate.md, "Sizing a design for a half-width").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from latentbench.exceptions import InputError
from latentbench.select._estimate_calibration import Calibration
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import SequentialEstimate

__all__ = ["DesignSize", "size_design"]

_FIRST_K = 32
"""The first size tried."""
_K_TOLERANCE = 0.02
"""The search stops when the smallest passing size found is within 2% (at least one item) of
the largest failing one: the half-width is known to one step of the sequence's grid
(0.00025), 1.25% of a 0.02 precision, so about 2.5% of k (a half-width falls as 1 / sqrt(k))."""
_Round = tuple[float, float, float, float, float, tuple[float, float]]


@dataclass(frozen=True)
class DesignSize:
    """The size chosen for a target half-width, and what it was predicted from.

    Attributes
    ----------
    k : int
        Items of the design.
    median : float
        Median over the calibration models of the half-width at ``k``.
    p90 : float
        Their 90th percentile.
    n_models : int
        Calibration models that answered the design's first ``k`` items (the others are not
        counted).
    tried : dict of int to float
        Every size tried and its median half-width.
    """

    k: int
    median: float
    p90: float
    n_models: int
    tried: dict[int, float]


class _Unread(WeightedBettingCS):
    """A replayed model's own confidence sequence, which the sizing never reads: its rounds
    (:attr:`SequentialEstimate.last_round`) feed the sequences sized for each ``k`` instead,
    so updating it was one wasted sequence update per replayed answer. Its interval stays
    [0, 1] (the engine's trajectory, also unread, is clipped to it)."""

    def update(
        self,
        z: float,
        lo: float,
        hi: float,
        variance: float,
        center: float,
        bounds: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        """Nothing: the round is read from the engine's ``last_round``."""


class _Replays:
    """Each calibration model's rounds on the design's first items (replayed on demand)."""

    def __init__(
        self,
        engine: Callable[[], SequentialEstimate],
        draws: Callable[[int], np.ndarray],
        answers: np.ndarray,
    ) -> None:
        self.engine, self.draws, self.Y = engine, draws, answers
        self.base = engine()  # answers none: sizes the sequences (budget_target)
        self.seqs = [engine() for _ in range(answers.shape[0])]
        for seq in self.seqs:  # the rounds, not the model's own interval, are read
            seq.cs = _Unread(seq.delta)
        self.rounds: list[list[_Round]] = [[] for _ in self.seqs]
        self.stopped = np.zeros(answers.shape[0], dtype=bool)  # a design item unanswered
        self.n = self.base.n  # the items that can be drawn (of positive weight)
        # each calibrated item's index in the engine's population (a weighted design's
        # population is its items of positive weight; the plain one's, every item)
        self.index = np.full(answers.shape[1], -1, dtype=np.int64)
        self.index[self.base.population] = np.arange(self.n)

    def extend(self, k: int) -> None:
        """Replay every model up to ``k`` design items (or its first unanswered one)."""
        pos = self.draws(k)
        for m, seq in enumerate(self.seqs):  # a loop over models: each is one estimate
            rounds = self.rounds[m]
            for p in pos[len(rounds) : k].tolist():
                if self.stopped[m]:
                    break
                y = float(self.Y[m, p])
                if not math.isfinite(y):
                    self.stopped[m] = True
                    break
                seq.observe(int(self.index[p]), y, seq.probabilities())
                assert seq.last_round is not None
                rounds.append(seq.last_round)

    def half_widths(self, k: int) -> np.ndarray:
        """The half-width ``estimate --items`` gives each model that answered the first
        ``k`` items of the ``k``-item design, shape (models counted,)."""
        self.extend(k)
        counted = [m for m, r in enumerate(self.rounds) if len(r) >= k]
        if k >= self.n:  # every item answered: the interval is the mean itself
            return np.zeros(len(counted))
        out = np.empty(len(counted))
        for i, m in enumerate(counted):
            cs = self.base.sized_sequence(k)
            cs._replay(self.rounds[m][:k])  # the interval read after the k-th round only
            out[i] = (cs.upper - cs.lower) / 2.0
        return out


def size_design(
    cal: Calibration,
    answers: np.ndarray,
    *,
    precision: float,
    engine: Callable[[], SequentialEstimate],
    draws: Callable[[int], np.ndarray],
    weighted: bool = False,
) -> DesignSize:
    """The smallest design size whose median half-width over the calibration models is at
    most ``precision``.

    Parameters
    ----------
    cal : Calibration
        The calibration the design is drawn from.
    answers : ndarray of shape (K, n)
        The calibration models' scores on its items (NaN where missing).
    precision : float
        The target half-width, in (0, 0.5).
    engine : callable
        A fresh fixed-design estimate (no answer yet), as ``estimate --items`` builds it.
    draws : callable
        ``draws(k)``: the calibration positions of the design's first ``k`` items, shape
        (k,).
    weighted : bool, default False
        Whether ``engine`` scores a weighted (or macro) mean, not the plain one: its interval
        is then predicted by the replays alone up to every item of positive weight.

    Returns
    -------
    DesignSize

    Raises
    ------
    InputError
        If no calibration model answered the design's first items.
    """
    replays = _Replays(engine, draws, answers)
    n = replays.n
    # at k items the plain mean's interval lies within the revealed scores' certain range,
    # (n - k) / n wide: k >= n (1 - 2 precision) reaches any precision without a prediction;
    # a weighted mean's certain range is the unrevealed items' weight, which depends on the
    # items drawn: its search may go up to every item of positive weight (half-width 0)
    cap = n if weighted else min(n, max(1, math.ceil(n * (1.0 - 2.0 * precision) - 1e-9)))
    tried: dict[int, float] = {}
    widths: dict[int, np.ndarray] = {}

    def median(k: int) -> float:
        hw = replays.half_widths(k)
        if hw.size == 0:
            raise InputError(
                f"no calibration model answered the design's first {k:,} items: the "
                "half-width cannot be predicted; give the calibration's responses with "
                "fewer missing cells, or choose k by hand (k=)"
            )
        widths[k] = hw
        tried[k] = float(np.median(hw))
        return tried[k]

    lo, hi = 0, 0  # the largest size known to miss the precision, the smallest to reach it
    k = min(cap, _FIRST_K)
    while not hi:
        h = median(k)
        if h <= precision * (1 + 1e-9) or k >= cap:  # (a half-width is a grid step count)
            hi = k
            break
        lo = k  # a half-width falls about as 1 / sqrt(k): aim just past it, within 1.1-4x
        aim = math.ceil(1.02 * k * (h / precision) ** 2)
        k = min(cap, max(math.ceil(1.1 * k), min(4 * k, aim)))
    while hi - lo > max(1, int(_K_TOLERANCE * hi)):  # bisection (the medians are flat
        c = (lo + hi) // 2  # near the target and move by grid steps: no interpolation)
        if median(c) <= precision * (1 + 1e-9):
            hi = c
        else:
            lo = c
    hw = widths[hi]
    return DesignSize(
        k=hi,
        median=tried[hi],
        p90=float(np.quantile(hw, 0.9)),
        n_models=int(hw.size),
        tried=dict(sorted(tried.items())),
    )
