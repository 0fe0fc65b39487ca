"""The policy interface and the UCB-E bookkeeping most policies share.

Every policy is driven by :func:`latentbench.select.run_selection` through the calls of
:class:`Policy`:

* ``initialize(state, proxy)``: once, after the shared initial batch of every arm;
* ``choose(state) -> arm index`` (``None`` stops the run);
* ``select_items(state, arm, size)``: which unobserved items of the arm to reveal
  (uniform without replacement unless the policy says otherwise);
* ``update(state, observation)``: the revealed scores, *before* the state records them, so
  that every quantity the policy computes from ``state`` refers to the past;
* ``end_round(state, arm)``: after the state recorded the batch (refits happen here, so new
  predictions first act in the next round);
* ``estimates()``: per-arm point estimates; ``intervals()``: per-arm confidence bounds.

A policy with intervals takes ``delta``: the error probability of its certificate (a
certified best is the true best with probability at least ``1 - delta``), which is also the
simultaneous miscoverage of its intervals over arms and time. ``alpha`` is its deprecated
spelling (:data:`DEPRECATED_OPTIONS`), accepted with a :class:`FutureWarning` for one release.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from latentbench._checks import check_flag, is_integer, is_number, user_stacklevel
from latentbench._repr import GivenArgumentsRepr
from latentbench.exceptions import InputError
from latentbench.select._betting import BettingConfSeq
from latentbench.select._bounds import EBConfSeq, FreedmanConfSeq
from latentbench.select._state import Observation, ProxyState, SelectionState

__all__ = [
    "DEFAULT_DELTA",
    "DEPRECATED_OPTIONS",
    "Policy",
    "ProxyBookkeeping",
    "UCBEBookkeeping",
    "rename_deprecated",
    "resolve_delta",
]

DEFAULT_DELTA = 0.05
"""A policy's default ``delta`` (error probability of its certificate and simultaneous
miscoverage of its intervals): the same as every command's ``--delta``, ``replay``'s,
``run_experiment``'s and ``run_selection``'s for a policy without intervals, so that
``run_selection(oracle, Pulse())`` certifies as ``latentbench select replay`` does (it was
0.1, the PULSE release's, until 2026-12-06)."""

DEPRECATED_OPTIONS: Mapping[str, str] = {"alpha": "delta"}
"""Old spellings of policy options and their names now; accepted, with a
:class:`FutureWarning`, for one release."""


def _deprecation(old: str, new: str, where: str) -> str:
    prefix = f"{where}: " if where else ""
    return (
        f"{prefix}{old} is deprecated; use {new} (same meaning and value; {old} will stop "
        "working in the next release)"
    )


def resolve_delta(
    delta: float | None, alpha: float | None, *, default: float = DEFAULT_DELTA
) -> float:
    """``delta``, or its deprecated spelling ``alpha`` (with a :class:`FutureWarning`), or
    ``default`` when neither is given.

    Raises
    ------
    InputError
        Both are given.
    """
    if alpha is None:
        return default if delta is None else delta
    if delta is not None:
        raise InputError(
            f"alpha={alpha!r} and delta={delta!r}; alpha is the deprecated spelling of delta: "
            "give delta only"
        )
    warnings.warn(_deprecation("alpha", "delta", ""), FutureWarning, stacklevel=user_stacklevel())
    return alpha


def rename_deprecated(
    options: Mapping[str, Any],
    accepted: Collection[str],
    *,
    where: str = "",
    warn: bool = True,
) -> dict[str, Any]:
    """``options`` with every deprecated key (:data:`DEPRECATED_OPTIONS`) renamed to its name
    now, where ``accepted`` (the policy's options) has that name; one :class:`FutureWarning`
    per renamed key when ``warn``, pointing at the first line outside latentbench.

    Raises
    ------
    InputError
        Both spellings of one option are given (``where`` prefixes the message).
    """
    out = dict(options)
    for old, new in DEPRECATED_OPTIONS.items():
        if old not in out or new not in accepted:
            continue
        if new in out:
            prefix = f"{where}: " if where else ""
            raise InputError(
                f"{prefix}{old}={out[old]!r} and {new}={out[new]!r}; {old} is the deprecated "
                f"spelling of {new}: give {new} only"
            )
        if warn:
            warnings.warn(
                _deprecation(old, new, where), FutureWarning, stacklevel=user_stacklevel()
            )
        out[new] = out.pop(old)
    return out


@runtime_checkable
class Policy(Protocol):
    """What :func:`~latentbench.select.run_selection` needs of a selection policy.

    Attributes
    ----------
    name : str
        Name in results and tables (a key of :data:`~latentbench.select.POLICIES`).
    needs_proxy : bool
        Whether ``initialize`` needs the proxy's predictions (a fitted
        :class:`~latentbench.select.LowRankProxy`).
    default_item_order : {"independent", "shared"}
        Reveal order when the run does not set one: one random order per arm, or one shared
        by all arms.
    """

    name: str
    needs_proxy: bool
    default_item_order: str

    def initialize(self, state: SelectionState, proxy: ProxyState | None) -> None:
        """Set up after the shared initial batch (cells already recorded in ``state``).

        Parameters
        ----------
        state : SelectionState
            The run's cells so far: every arm's initial batch is recorded.
        proxy : ProxyState or None
            The fitted proxy's predictions of every cell, when :attr:`needs_proxy`; else None.
        """
        ...

    def choose(self, state: SelectionState) -> int | None:
        """The arm to pull next, or ``None`` to stop.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.

        Returns
        -------
        int or None
            An arm's index in ``range(n_arms)``; None stops the run (the policy's own rule,
            e.g. a certificate).
        """
        ...

    def select_items(self, state: SelectionState, arm: int, size: int) -> np.ndarray:
        """At most ``size`` unrevealed items of ``arm`` to reveal, shape (<= size,).

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.
        arm : int
            The arm :meth:`choose` returned.
        size : int
            The batch size.

        Returns
        -------
        ndarray of int, shape (<= size,)
            Item indices not yet revealed for ``arm``, in the order to reveal them.
        """
        ...

    def update(self, state: SelectionState, obs: Observation) -> None:
        """Take in a revealed batch (before ``state`` records it).

        Parameters
        ----------
        state : SelectionState
            The run's cells before this batch.
        obs : Observation
            The batch: its arm, items and scores.
        """
        ...

    def end_round(self, state: SelectionState, arm: int) -> None:
        """After ``state`` recorded the batch of ``arm``.

        Parameters
        ----------
        state : SelectionState
            The run's cells, this batch included.
        arm : int
            The arm just pulled.
        """
        ...

    def estimates(self) -> np.ndarray:
        """Point estimates of every arm's mean, shape (n_arms,) (a copy).

        Returns
        -------
        ndarray of shape (n_arms,)
        """
        ...

    def intervals(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Simultaneous ``(lower, upper)`` bounds, each of shape (n_arms,), or ``None``.

        Returns
        -------
        tuple of 2 ndarray of shape (n_arms,), or None
            None when the policy has no intervals.
        """
        ...


_CI = ("betting", "eb", "freedman", "none")
REFITS = 20
"""Refits over a run with ``refit_every="auto"`` (every ``planned_rounds / REFITS`` rounds)."""
ConfSeq = BettingConfSeq | EBConfSeq | FreedmanConfSeq


def make_confseq(
    ci: str,
    n_arms: int,
    n_items: int,
    delta: float,
    max_pulls: int,
    *,
    certificate_weights: tuple[float, ...] | str | None = None,
    target_weight: float = 0.0,
    grid: int = 1000,
    certificate_split: float = 0.5,
) -> ConfSeq | None:
    """The confidence sequences named by ``ci`` at miscoverage ``delta`` (None for
    ``"none"``); ``certificate_weights``, ``target_weight``, ``grid`` and
    ``certificate_split`` go to :class:`BettingConfSeq`."""
    if ci == "betting":
        return BettingConfSeq(
            n_arms,
            n_items,
            delta,
            certificate_weights=certificate_weights,
            target_weight=target_weight,
            grid=grid,
            certificate_split=certificate_split,
        )
    if ci == "eb":
        return EBConfSeq(n_arms, delta)
    if ci == "freedman":
        return FreedmanConfSeq(n_arms, delta, max_pulls=max_pulls)
    return None


class UCBEBookkeeping(GivenArgumentsRepr):
    """UCB-E bookkeeping: per-round estimates, exact rows, the UCB-E index, uniform batches.

    Not a policy by itself; :class:`~latentbench.select.UCBE` and the other policies build on
    it and expose only the options they use.

    Parameters
    ----------
    a : float
        Exploration constant of the UCB-E bonus ``sqrt(a / T_i)``.
    delta : float, optional
        Error probability of the certificate: the simultaneous miscoverage of the confidence
        sequences (over arms and time); None: 0.05.
    ci : {"betting", "eb", "freedman", "none"}
        Confidence sequences: ``betting`` on the per-cell terms
        (:class:`~latentbench.select._betting.BettingConfSeq`); ``eb`` (empirical Bernstein)
        or ``freedman`` on the per-round estimates (wider; kept for comparison).
    doubling : bool
        Our extension (a smaller, adaptive start): a round reveals ``min(B, T_i)`` cells of
        arm i instead of ``B``, so with a small initial batch an arm's sample grows
        16, 32, 64, 128, ... and cells go to arms that stay competitive. The batch size is
        fixed before the draw, so the per-round estimates stay unbiased and the intervals
        valid.
    alpha : float, optional
        Deprecated spelling of ``delta`` (warns; giving both is an error).

    Raises
    ------
    InputError
        When ``a`` is negative or infinite, ``ci`` is not one of its values, ``delta`` is
        outside (0, 1), or both ``delta`` and ``alpha`` are given.
    """

    name = "policy"
    needs_proxy = False
    default_item_order = "independent"

    def __init__(
        self,
        *,
        a: float = 1.0,
        delta: float | None = None,
        ci: str = "none",
        doubling: bool = False,
        alpha: float | None = None,
    ) -> None:
        doubling = check_flag(doubling, "doubling")  # "no" ran as True
        delta = resolve_delta(delta, alpha)
        if not (is_number(a) and 0 <= a < math.inf):  # "x": named, not a TypeError from <;
            # inf: every index infinite, the run stopped after its start, said "exhausted"
            raise InputError(f"a={a!r}; expected a nonnegative number, finite")
        if ci not in _CI:
            raise InputError(f"ci={ci!r}; expected one of {_CI}")
        if not (is_number(delta) and 0 < delta < 1):
            raise InputError(f"delta={delta!r}; expected a value in (0, 1)")
        self.a, self.delta, self.ci = a, delta, ci
        self.doubling = doubling
        self._cs: ConfSeq | None = None

    @property
    def alpha(self) -> float:
        """Deprecated spelling of :attr:`delta` (one release; warns)."""
        warnings.warn(
            _deprecation("alpha", "delta", ""), FutureWarning, stacklevel=user_stacklevel()
        )
        return self.delta

    @alpha.setter
    def alpha(self, value: float) -> None:
        warnings.warn(
            _deprecation("alpha", "delta", ""), FutureWarning, stacklevel=user_stacklevel()
        )
        self.delta = value

    # -- lifecycle -------------------------------------------------------------------------
    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        """Set up after the shared initial batch (cells already recorded in ``state``).

        Parameters
        ----------
        state : SelectionState
            The run's cells: every arm's initial batch is recorded.
        proxy : ProxyState or None, optional
            Not used by UCB-E (the proxy policies set it up themselves).
        """
        m = state.n_arms
        self._n = state.n_items
        self.zsum = np.zeros(m)
        self._wsum = np.zeros(m)
        self.zcount = np.zeros(m, dtype=np.int64)
        self.est = np.zeros(m)
        self.exact = np.zeros(m, dtype=bool)
        init_b = max(int(state.n_obs.max()), 1)
        k_max = 1 + math.ceil(max(state.n_items - int(state.n_obs.min()), 0) / init_b)
        self._cs = make_confseq(self.ci, m, state.n_items, self.delta, max(k_max, state.n_items))
        with np.errstate(invalid="ignore", divide="ignore"):
            first = state.y_sum / np.maximum(state.n_obs, 1)
        for arm in range(m):
            self._add_round(arm, float(first[arm]))
            if isinstance(self._cs, BettingConfSeq):
                items = state.order[arm, : int(state.n_obs[arm])]
                zero = np.zeros(items.size)
                self._cs.update(arm, state.values[arm, items], zero, 0.0, 0.0, 0.0, 0.0)
        self._refresh_exact(state, np.arange(m))

    def _add_round(
        self,
        arm: int,
        z: float,
        weight: float = 1.0,
        draws: np.ndarray | None = None,
        widths: np.ndarray | float = 2.0,
    ) -> None:
        """Add a per-round estimate ``z`` (point estimate) and its per-draw estimates (CS)."""
        self.zsum[arm] += weight * z
        self.zcount[arm] += 1
        self._wsum[arm] += weight
        self.est[arm] = self.zsum[arm] / self._wsum[arm]
        seq = np.array([z]) if draws is None else draws
        if isinstance(self._cs, EBConfSeq):
            self._cs.update(arm, seq)
        elif isinstance(self._cs, FreedmanConfSeq):
            self._cs.update(arm, seq, widths)

    def _refresh_exact(self, state: SelectionState, arms: np.ndarray) -> None:
        full = arms[state.n_obs[arms] >= state.n_items]
        for arm in full:
            self.exact[arm] = True
            self.est[arm] = state.y_sum[arm] / state.n_items
            if self._cs is not None:
                self._cs.set_exact(arm, self.est[arm])

    def index(self, state: SelectionState) -> np.ndarray:
        """UCB-E index ``estimate + sqrt(a / T_i)``, shape (n_arms,); ``-inf`` for fully
        observed arms.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far (``T_i``: arm i's revealed cells, at least 1).

        Returns
        -------
        ndarray of shape (n_arms,)
        """
        idx = self.est + np.sqrt(self.a / np.maximum(state.n_obs, 1))
        idx[self.exact] = -np.inf
        return idx

    def choose(self, state: SelectionState) -> int | None:
        """Arm with the largest UCB-E index (ties: lowest index); ``None`` if all are full.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.

        Returns
        -------
        int or None
            An arm's index in ``range(n_arms)``; None when every arm is fully revealed.
        """
        idx = self.index(state)
        arm = int(np.argmax(idx))
        return None if not np.isfinite(idx[arm]) else arm

    def select_items(self, state: SelectionState, arm: int, size: int) -> np.ndarray:
        """Uniform without replacement among ``arm``'s unrevealed items, shape (<= size,).

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.
        arm : int
            The arm :meth:`choose` returned.
        size : int
            The batch size (with ``doubling``, at most the arm's revealed cells, at least 1).

        Returns
        -------
        ndarray of int of shape (<= size,)
            Item indices not yet revealed for ``arm``, in the order to reveal them.
        """
        if self.doubling:
            size = int(min(size, max(1, state.n_obs[arm])))
        return state.uniform_items(arm, size)

    def update(self, state: SelectionState, obs: Observation) -> None:
        """Sample-mean update (UCB-E); called before ``state.record``.

        Parameters
        ----------
        state : SelectionState
            The run's cells before this batch.
        obs : Observation
            The batch: its arm, items and scores (NaN counts as 0).
        """
        y = np.nan_to_num(np.asarray(obs.scores, dtype=np.float64), nan=0.0)
        arm = obs.arm
        total = state.y_sum[arm] + y.sum()
        count = state.n_obs[arm] + y.size
        self.est[arm] = total / count

    def end_round(self, state: SelectionState, arm: int) -> None:
        """After ``state.record``: mark full rows exact.

        Parameters
        ----------
        state : SelectionState
            The run's cells, this batch included.
        arm : int
            The arm just pulled.
        """
        self._refresh_exact(state, np.array([arm]))

    def estimates(self) -> np.ndarray:
        """Point estimates, shape (n_arms,).

        Returns
        -------
        ndarray of shape (n_arms,)
            A copy of every arm's estimated mean score.
        """
        return self.est.copy()

    def intervals(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Simultaneous ``(lower, upper)`` bounds, or ``None`` when the policy has none.

        Returns
        -------
        tuple of 2 ndarray of shape (n_arms,), or None
            The confidence sequences' bounds; None with ``ci="none"``.
        """
        return None if self._cs is None else self._cs.interval()

    def certificate(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Bounds that certify the best (``BettingConfSeq.certificate``; else the intervals).

        The best's lower bound above every other arm's upper bound certifies it with error
        probability ``delta``; with betting intervals these one-sided bounds are tighter than the
        simultaneous ones (the upper bounds need no union bound over arms).

        Returns
        -------
        tuple of 2 ndarray of shape (n_arms,), or None
            ``(lower, upper)``; None with ``ci="none"``.
        """
        if isinstance(self._cs, BettingConfSeq):
            return self._cs.certificate()
        return self.intervals()


class ProxyBookkeeping(UCBEBookkeeping):
    """Shared proxy bookkeeping: pool sums of f and f^2, refit schedule.

    ``refit_every`` is the number of rounds between refits of the candidate factors:
    ``"auto"`` (default) refits about 20 times over the rounds the budget allows
    (``ceil(planned_rounds / 20)``, so every round or few for small pools), an integer fixes
    the period, ``None`` never refits.

    Parameters
    ----------
    a : float, default 1.0
        Exploration constant of the UCB-E bonus ``sqrt(a / T_i)``.
    delta : float, optional
        Error probability of the certificate (default 0.05, as :class:`UCBEBookkeeping`).
    ci : {"betting", "eb", "freedman", "none"}, default "eb"
        Confidence sequences, as :class:`UCBEBookkeeping`.
    refit_every : int, "auto" or None, default "auto"
        Rounds between refits of the candidate factors (see above).
    doubling : bool, default False
        As :class:`UCBEBookkeeping`.
    alpha : float, optional
        Deprecated spelling of ``delta`` (warns; giving both is an error).

    Raises
    ------
    InputError
        When ``refit_every`` is not a positive integer, ``"auto"`` or None, or an option of
        :class:`UCBEBookkeeping` is out of range.
    """

    needs_proxy = True

    def __init__(
        self,
        *,
        a: float = 1.0,
        delta: float | None = None,
        ci: str = "eb",
        refit_every: int | Literal["auto"] | None = "auto",
        doubling: bool = False,
        alpha: float | None = None,
    ) -> None:
        delta = resolve_delta(delta, alpha)
        super().__init__(a=a, delta=delta, ci=ci, doubling=doubling)
        if (
            refit_every is not None
            and refit_every != "auto"
            and (not is_integer(refit_every) or refit_every < 1)
        ):
            raise InputError(
                f"refit_every={refit_every!r}; expected a positive integer, 'auto' or None"
            )
        self.refit_every = refit_every
        self._period: int | None = None

    def _setup_proxy(self, state: SelectionState, proxy: ProxyState | None) -> None:
        if proxy is None:
            raise InputError(f"policy {self.name!r} needs a proxy; pass history or a proxy")
        self.px = proxy
        if self.refit_every == "auto":  # about 20 refits over the rounds the budget allows
            self._period = max(1, math.ceil(state.planned_rounds / REFITS))
        else:
            self._period = self.refit_every
        self._touched = np.zeros(state.n_arms, dtype=bool)
        self._recompute_sums(state, np.arange(state.n_arms))

    def _recompute_sums(self, state: SelectionState, rows: np.ndarray) -> None:
        f = self.px.f[rows].astype(np.float64)
        if not hasattr(self, "f_all"):
            m = state.n_arms
            self.f_all, self.f2_all = np.zeros(m), np.zeros(m)
            self.f_obs, self.f2_obs = np.zeros(m), np.zeros(m)
        obs = state.observed[rows]
        self.f_all[rows] = f.sum(axis=1)
        self.f2_all[rows] = np.einsum("ij,ij->i", f, f)
        fo = np.where(obs, f, 0.0)
        self.f_obs[rows] = fo.sum(axis=1)
        self.f2_obs[rows] = np.einsum("ij,ij->i", fo, fo)

    def _record_f(self, arm: int, f_batch: np.ndarray) -> None:
        self.f_obs[arm] += f_batch.sum()
        self.f2_obs[arm] += (f_batch * f_batch).sum()
        self._touched[arm] = True

    def _maybe_refit(self, state: SelectionState) -> bool:
        if self._period is None or state.rounds % self._period != 0:
            return False
        rows = self.px.refit(state.values, np.flatnonzero(self._touched))
        self._recompute_sums(state, rows)
        self._touched[:] = False
        return True
