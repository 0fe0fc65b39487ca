"""Selection policies with one interface (``pulse.md`` §6, §7).

Every policy is driven by :func:`latentbench.select.run_selection` through the same calls:

* ``initialize(state, proxy_state)``: once, after the shared initial batch of every arm;
* ``choose(state) -> arm index`` (``None`` stops the run);
* ``select_items(state, arm, size)``: which unobserved items of the arm to reveal
  (uniform without replacement unless the policy says otherwise);
* ``update(state, observation)``: the revealed scores, *before* the state records them, so
  that every quantity the policy computes from ``state`` refers to the past;
* ``end_round(state)``: after the state recorded the batch (refits happen here, so new
  predictions first act in the next round);
* ``estimate()``: per-arm point estimates; ``interval()``: per-arm confidence bounds.

The shared :class:`SelectionState` holds the revealed cells. Uniform sampling without
replacement is implemented by a random reveal order per arm drawn up front: the next ``B``
entries of that order are a uniform ``B``-subset of the arm's unobserved items given the past.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from latentbench.exceptions import InputError
from latentbench.select._bounds import EBConfSeq, FreedmanConfSeq
from latentbench.select._estimators import dr_draw_estimates, dr_round_variance, plugin_lambda

__all__ = [
    "UCBE",
    "UCBELRF",
    "FullEvaluation",
    "NaivePooling",
    "Observation",
    "Policy",
    "Pulse",
    "SelectionState",
    "Uniform",
]


@dataclass
class Observation:
    """One revealed batch: ``scores[k]`` is the score of ``arm`` on ``items[k]``."""

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
    """

    def __init__(self, n_arms: int, n_items: int, rng: np.random.Generator) -> None:
        self.n_arms, self.n_items = n_arms, n_items
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
        self.rng = rng

    def remaining(self) -> np.ndarray:
        """Unrevealed cells per arm, shape (n_arms,)."""
        return self.n_items - self.n_obs

    def uniform_items(self, arm: int, size: int) -> np.ndarray:
        """``size`` unrevealed items of ``arm``, uniform without replacement given the past."""
        start = int(self._pointer[arm])
        order = self.order[arm]
        if self.n_obs[arm] == start:  # only uniform draws so far: the prefix is the observed set
            return order[start : start + size].astype(np.int64)
        # other reveals happened (e.g. UCB-E-LRF): skip revealed items in the order
        rest = order[start:]
        rest = rest[~self.observed[arm, rest]]
        return rest[:size].astype(np.int64)

    def record(self, obs: Observation, *, initial: bool = False) -> None:
        """Store a revealed batch (scores checked by the run loop: no NaN)."""
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


class Policy:
    """Base class: UCB-E-style bookkeeping shared by all policies.

    Parameters
    ----------
    a : float
        Exploration constant of the UCB-E bonus ``sqrt(a / T_i)``.
    alpha : float
        Miscoverage of the simultaneous confidence sequences.
    ci : {"eb", "freedman", "none"}
        Confidence sequence on the per-round estimates.
    doubling : bool
        Our extension (a smaller, adaptive start): a round reveals ``min(B, T_i)`` cells of
        arm i instead of ``B``, so with a small initial batch an arm's sample grows
        16, 32, 64, 128, ... and cells go to arms that stay competitive. The batch size is
        fixed before the draw, so estimates stay unbiased and intervals valid.
    """

    name = "policy"
    uses_proxy = False

    def __init__(
        self, *, a: float = 1.0, alpha: float = 0.1, ci: str = "eb", doubling: bool = False
    ) -> None:
        if a < 0:
            raise InputError(f"a={a!r}; expected a nonnegative number")
        if ci not in ("eb", "freedman", "none"):
            raise InputError(f"ci={ci!r}; expected 'eb', 'freedman' or 'none'")
        self.a, self.alpha, self.ci = a, alpha, ci
        self.doubling = bool(doubling)

    # -- lifecycle -------------------------------------------------------------------------
    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        """Set up after the shared initial batch (cells already recorded in ``state``)."""
        m = state.n_arms
        self._n = state.n_items
        self.zsum = np.zeros(m)
        self._wsum = np.zeros(m)
        self.zcount = np.zeros(m, dtype=np.int64)
        self.est = np.zeros(m)
        self.exact = np.zeros(m, dtype=bool)
        init_b = max(int(state.n_obs.max()), 1)
        k_max = 1 + math.ceil(max(state.n_items - int(state.n_obs.min()), 0) / init_b)
        self._cs: EBConfSeq | FreedmanConfSeq | None
        if self.ci == "eb":
            self._cs = EBConfSeq(m, self.alpha)
        elif self.ci == "freedman":
            self._cs = FreedmanConfSeq(m, self.alpha, max_pulls=max(k_max, state.n_items))
        else:
            self._cs = None
        with np.errstate(invalid="ignore", divide="ignore"):
            first = state.y_sum / np.maximum(state.n_obs, 1)
        for arm in range(m):
            self._add_round(arm, float(first[arm]))
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
        """UCB-E index ``estimate + sqrt(a / T_i)``; ``-inf`` for fully observed arms."""
        idx = self.est + np.sqrt(self.a / np.maximum(state.n_obs, 1))
        idx[self.exact] = -np.inf
        return idx

    def choose(self, state: SelectionState) -> int | None:
        """Arm with the largest UCB-E index (ties: lowest index); ``None`` if all are full."""
        idx = self.index(state)
        arm = int(np.argmax(idx))
        return None if not np.isfinite(idx[arm]) else arm

    def select_items(self, state: SelectionState, arm: int, size: int) -> np.ndarray:
        """Uniform without replacement among ``arm``'s unrevealed items."""
        if self.doubling:
            size = int(min(size, max(1, state.n_obs[arm])))
        return state.uniform_items(arm, size)

    def update(self, state: SelectionState, obs: Observation) -> None:
        """Sample-mean update (UCB-E); called before ``state.record``."""
        y = np.nan_to_num(np.asarray(obs.scores, dtype=np.float64), nan=0.0)
        arm = obs.arm
        total = state.y_sum[arm] + y.sum()
        count = state.n_obs[arm] + y.size
        self.est[arm] = total / count

    def end_round(self, state: SelectionState, arm: int) -> None:
        """After ``state.record``: mark full rows exact."""
        self._refresh_exact(state, np.array([arm]))

    def estimate(self) -> np.ndarray:
        """Point estimates, shape (n_arms,)."""
        return self.est.copy()

    def interval(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Simultaneous ``(lower, upper)`` bounds, or ``None`` when the policy has none."""
        return None if self._cs is None else self._cs.interval()


class UCBE(Policy):
    """UCB-E (Audibert, Bubeck & Munos 2010) on sample means; ``pulse.md`` §7.

    The estimate is the sample mean of revealed cells (no confidence sequence: the cells of
    an adaptively stopped row are not a martingale of per-round means; ``ci`` is ignored).
    """

    name = "ucbe"

    def __init__(
        self, *, a: float = 1.0, alpha: float = 0.1, ci: str = "none", doubling: bool = False
    ) -> None:
        super().__init__(a=a, alpha=alpha, ci="none", doubling=doubling)


class Uniform(Policy):
    """Round-robin over arms with uniform batches; sample-mean estimates (``pulse.md`` §7)."""

    name = "uniform"

    def __init__(self, *, a: float = 1.0, alpha: float = 0.1, ci: str = "none") -> None:
        super().__init__(a=a, alpha=alpha, ci="none")
        self._next = 0

    def choose(self, state: SelectionState) -> int | None:
        m = state.n_arms
        for step in range(m):
            arm = (self._next + step) % m
            if not self.exact[arm]:
                self._next = arm + 1
                return arm
        return None


class FullEvaluation(Uniform):
    """Reveal every cell, one whole row per round; exact at cost ``n_arms * n_items``."""

    name = "full"

    def select_items(self, state: SelectionState, arm: int, size: int) -> np.ndarray:
        return state.uniform_items(arm, int(state.remaining()[arm]))


class ProxyState:
    """Predictions of a :class:`~latentbench.select.LowRankProxy` for the candidate pool.

    Shared by the policies that use the proxy; refits are exact per row and warm-started.

    Parameters
    ----------
    proxy : LowRankProxy
        Fitted on the history.
    n_arms : int
    """

    def __init__(self, proxy, n_arms: int) -> None:
        self.proxy = proxy
        self.U = np.tile(proxy.prior_mean_, (n_arms, 1))
        self.f = np.broadcast_to(
            proxy.prior_prediction().astype(np.float32), (n_arms, proxy.n_items)
        ).copy()
        self.n_refits = 0
        self.refit_seconds = 0.0

    def refit(self, values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Refit ``U`` on all revealed cells (rows given: only those) and update ``f``."""
        import time

        start = time.perf_counter()
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


class _ProxyPolicy(Policy):
    """Shared proxy bookkeeping: pool sums of f and f^2, refit schedule."""

    uses_proxy = True

    def __init__(
        self,
        *,
        a: float = 1.0,
        alpha: float = 0.1,
        ci: str = "eb",
        refit_every: int | None = 1000,
        doubling: bool = False,
    ) -> None:
        super().__init__(a=a, alpha=alpha, ci=ci, doubling=doubling)
        if refit_every is not None and refit_every < 1:
            raise InputError(f"refit_every={refit_every!r}; expected a positive integer or None")
        self.refit_every = refit_every

    def _setup_proxy(self, state: SelectionState, proxy: ProxyState | None) -> None:
        if proxy is None:
            raise InputError(f"policy {self.name!r} needs a proxy; pass history or a proxy")
        self.px = proxy
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
        if self.refit_every is None or state.rounds % self.refit_every != 0:
            return False
        rows = np.flatnonzero(self._touched)
        self.px.refit(state.values, rows)
        self._recompute_sums(state, rows)
        self._touched[:] = False
        return True


class Pulse(_ProxyPolicy):
    """PULSE: UCB-E selection on doubly robust estimates (``pulse.md`` §3–§6).

    Each round pulls ``argmax_i mu_hat_i + sqrt(a / T_i)`` and reveals a uniform batch from the
    arm's unobserved items. The per-round estimate is the clean DR estimate (§3.2) with the
    plug-in lambda (§4); the arm's estimate is the (weighted) average of its per-round
    estimates and its interval the confidence sequence on them (§5). The proxy is refit on all
    revealed cells every ``refit_every`` rounds, at the end of the round.

    Parameters
    ----------
    a : float, default 1.0
        UCB-E exploration constant.
    alpha : float, default 0.1
        Simultaneous miscoverage of the intervals (``alpha / n_arms`` per arm).
    ci : {"eb", "freedman", "none"}, default "eb"
    refit_every : int or None, default 1000
        Rounds between refits of the candidate factors (``None``: never).
    lam : {"plugin", "one", "zero"} or float, default "plugin"
        Proxy weight rule; any fixed value in [0, 1] is valid.
    init_estimate : {"mean", "prior"}, default "mean"
        Pull 1 (the initial batch): its sample mean (``lam = 0``, as the release) or the DR
        estimate with the population-prior prediction (``lam = 1``; predictions fixed before
        the initial draw, so still unbiased).
    weights : {"equal", "precision"}, default "equal"
        Average of per-round estimates: equal weights (the release) or weights proportional to
        the inverse of the model-predicted conditional variance (fixed before each draw).
    legacy_stale_predictions : bool, default False
        Reproduce the release's stale-prediction sum (§3.5; biased after refits).
    bonus : {"ucbe", "effective", "ci"}, default "ucbe"
        Selection rule. ``ucbe`` is the paper's, ``mu_hat_i + sqrt(a / T_i)``. Our extensions:
        ``effective`` replaces ``T_i`` by the effective sample size of the DR estimate,
        ``mu_hat_i + 2 sqrt(a * v_i)`` with ``v_i`` the estimated variance of ``mu_hat_i``
        from the residuals ``Y - lam f`` of each round (for a plain mean of ``T`` cells with
        ``p = 1/2`` this is exactly the UCB-E bonus); ``ci`` (LUCB-style) pulls, of the leader
        and the challenger with the largest upper bound, the one with the wider interval; it
        suits the fixed-confidence stop (``stop="confidence"``). Selection may use any past
        data, so none of these affects unbiasedness or coverage.
    doubling : bool, default False
        Reveal ``min(B, T_i)`` cells per round (see :class:`Policy`).
    """

    name = "pulse"

    def __init__(
        self,
        *,
        a: float = 1.0,
        alpha: float = 0.1,
        ci: str = "eb",
        refit_every: int | None = 1000,
        lam: str | float = "plugin",
        init_estimate: Literal["mean", "prior"] = "mean",
        weights: Literal["equal", "precision"] = "equal",
        legacy_stale_predictions: bool = False,
        bonus: Literal["ucbe", "effective", "ci"] = "ucbe",
        doubling: bool = False,
    ) -> None:
        super().__init__(a=a, alpha=alpha, ci=ci, refit_every=refit_every, doubling=doubling)
        if bonus not in ("ucbe", "effective", "ci"):
            raise InputError(f"bonus={bonus!r}; expected 'ucbe', 'effective' or 'ci'")
        if bonus == "ci" and ci == "none":
            raise InputError("bonus='ci' needs intervals; set ci='eb' or 'freedman'")
        self.bonus = bonus
        if isinstance(lam, str) and lam not in ("plugin", "one", "zero"):
            raise InputError(f"lam={lam!r}; expected 'plugin', 'one', 'zero' or a number in [0, 1]")
        if not isinstance(lam, str) and not 0 <= float(lam) <= 1:
            raise InputError(f"lam={lam!r}; expected a number in [0, 1]")
        if init_estimate not in ("mean", "prior"):
            raise InputError(f"init_estimate={init_estimate!r}; expected 'mean' or 'prior'")
        if weights not in ("equal", "precision"):
            raise InputError(f"weights={weights!r}; expected 'equal' or 'precision'")
        self.lam = lam
        self.init_estimate = init_estimate
        self.weights = weights
        self.legacy_stale_predictions = legacy_stale_predictions

    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        m = state.n_arms
        self._n = state.n_items
        self.zsum = np.zeros(m)
        self.zcount = np.zeros(m, dtype=np.int64)
        self._wsum = np.zeros(m)
        self._w2v = np.zeros(m)
        self.est = np.zeros(m)
        self.exact = np.zeros(m, dtype=bool)
        self.zbar = np.zeros(m)
        self.zn = np.zeros(m, dtype=np.int64)
        self.lam_history: list[float] = []
        self.z_history: list[list[float]] = [[] for _ in range(m)]
        if self.ci == "eb":
            self._cs = EBConfSeq(m, self.alpha)
        elif self.ci == "freedman":
            self._cs = FreedmanConfSeq(m, self.alpha, max_pulls=state.n_items)
        else:
            self._cs = None
        n = state.n_items
        lam0 = 1.0 if self.init_estimate == "prior" else 0.0
        # pull 1: the initial batch, drawn with the prior-mean prediction fixed beforehand
        T0 = state.n_obs.astype(np.float64)
        if self.init_estimate == "prior":
            if proxy is None:
                raise InputError("init_estimate='prior' needs a proxy")
            f0 = proxy.proxy.prior_prediction().astype(np.float64)
            F0 = f0.sum()
            f_init = np.where(state.observed, f0[None, :], 0.0).sum(axis=1)
            pi0 = T0 / n
            z0 = (F0 + (state.y_sum - f_init) / pi0) / n
            var0 = dr_round_variance(F0, (f0 * f0).sum(), n, T0, 1.0, n)
        else:
            f0 = np.zeros(n)
            F0 = 0.0
            z0 = state.y_sum / np.maximum(T0, 1)
            # weights must be fixed before the draw: the Bernoulli variance at the prior
            # prediction (never the observed initial scores)
            pbar = 0.5 if proxy is None else float(proxy.proxy.prior_prediction().mean())
            pbar = min(max(pbar, 0.05), 0.95)
            var0 = pbar * (1 - pbar) / np.maximum(T0, 1) * (1 - T0 / n)
        w0 = 1.0 / np.maximum(var0, 1e-8) if self.weights == "precision" else np.ones(m)
        for arm in range(m):
            items = state.order[arm, : int(state.n_obs[arm])]
            draws = dr_draw_estimates(0.0, F0, state.values[arm, items], f0[items], lam0, n, n)
            widths = (n - np.arange(items.size)) / n * (1.0 + lam0)
            self._add_round(arm, float(z0[arm]), float(w0[arm]), draws, widths)
            resid = state.values[arm, items] - lam0 * f0[items]
            self._w2v[arm] += w0[arm] ** 2 * _round_var(resid, n, n)
            self.z_history[arm].append(float(z0[arm]))
        self._setup_proxy(state, proxy)
        # the proxy is prewarmed on the initial cells by the run loop; sums use the current f
        self._stale = self.f_obs.copy()
        self._refresh_exact(state, np.arange(m))

    def estimate_variance(self) -> np.ndarray:
        """Estimated variance of each arm's point estimate, shape (n_arms,)."""
        return self._w2v / np.maximum(self._wsum, 1e-300) ** 2

    def index(self, state: SelectionState) -> np.ndarray:
        if self.bonus != "effective":
            return super().index(state)
        idx = self.est + 2.0 * np.sqrt(self.a * self.estimate_variance())
        idx[self.exact] = -np.inf
        return idx

    def choose(self, state: SelectionState) -> int | None:
        if self.bonus != "ci":
            return super().choose(state)
        active = ~self.exact
        if not active.any():
            return None
        lo, hi = self._cs._lower, self._cs._upper
        leader = int(np.argmax(self.est))
        upper = np.where(active, hi, -np.inf)
        upper[leader] = -np.inf
        challenger = int(np.argmax(upper))
        if not np.isfinite(upper[challenger]):
            return leader if active[leader] else None
        if not active[leader]:
            return challenger
        wide = (hi[leader] - lo[leader]) >= (hi[challenger] - lo[challenger])
        return leader if wide else challenger

    def update(self, state: SelectionState, obs: Observation) -> None:
        arm, items = obs.arm, obs.items
        n = state.n_items
        y = np.nan_to_num(np.asarray(obs.scores, dtype=np.float64), nan=0.0)
        N = n - int(state.n_obs[arm])
        Bp = len(items)
        pi = Bp / N
        F = self.f_all[arm] - self.f_obs[arm]
        F2 = self.f2_all[arm] - self.f2_obs[arm]
        if isinstance(self.lam, str):
            if self.lam == "plugin":
                lam = float(plugin_lambda(F, F2, pi, self.zbar[arm], self.zn[arm]))
            else:
                lam = 1.0 if self.lam == "one" else 0.0
        else:
            lam = float(self.lam)
        f_b = self.px.f[arm, items].astype(np.float64)
        corr = (y - lam * f_b).sum() / pi
        z = (state.y_sum[arm] + lam * F + corr) / n
        if self.legacy_stale_predictions:
            z += lam / n * (self.f_obs[arm] - self._stale[arm])
            self._stale[arm] += f_b.sum()
        self.zbar[arm] = (self.zn[arm] * self.zbar[arm] + corr) / (self.zn[arm] + 1)
        self.zn[arm] += 1
        draws = dr_draw_estimates(state.y_sum[arm], F, y, f_b, lam, N, n)
        widths = (N - np.arange(Bp)) / n * (1.0 + lam)
        if self.weights == "precision":
            var = float(dr_round_variance(F, F2, N, Bp, lam, n))
            weight = 1.0 / max(var, 1e-8) if Bp < N else 1e8
        else:
            weight = 1.0
        self._add_round(arm, float(z), weight, draws, widths)
        self._w2v[arm] += weight**2 * _round_var(y - lam * f_b, N, n)
        self.z_history[arm].append(float(z))
        self.lam_history.append(lam)
        self._record_f(arm, f_b)

    def end_round(self, state: SelectionState, arm: int) -> None:
        self._refresh_exact(state, np.array([arm]))
        if self._maybe_refit(state):
            self.zbar[:] = 0.0
            self.zn[:] = 0


def _round_var(resid: np.ndarray, pool: int, n: int, floor: float = 0.01) -> float:
    """Estimated conditional variance of a round's DR estimate from its batch residuals.

    ``(N/n)^2 (1/B' - 1/N) s2`` with ``s2`` the sample variance of the residuals, floored at
    ``floor`` so that a batch of identical residuals does not end exploration.
    """
    B = resid.size
    if B >= pool:
        return 0.0
    s2 = float(resid.var(ddof=1)) if B > 1 else 0.25
    return (pool / n) ** 2 * (1.0 / B - 1.0 / pool) * max(s2, floor)


class NaivePooling(_ProxyPolicy):
    """Naive-Pooling: UCB-E selection on plain imputation (``pulse.md`` §7; biased, no CI).

    ``mu_hat_i = (sum_{S_i} Y + sum_{not S_i} f) / n``, refreshed when arm i is pulled.
    ``refit_every=None`` is "Naive-Pooling" (proxy frozen after the prewarm); an integer is
    "Naive-Pooling+refit".
    """

    name = "naive"

    def __init__(
        self, *, a: float = 1.0, alpha: float = 0.1, ci: str = "none", refit_every=None
    ) -> None:
        super().__init__(a=a, alpha=alpha, ci="none", refit_every=refit_every)
        if refit_every is not None:
            self.name = "naive_refit"

    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        super().initialize(state, None)
        self._setup_proxy(state, proxy)
        self.est = (state.y_sum + self.f_all - self.f_obs) / state.n_items
        self._refresh_exact(state, np.arange(state.n_arms))

    def update(self, state: SelectionState, obs: Observation) -> None:
        self._record_f(obs.arm, self.px.f[obs.arm, obs.items].astype(np.float64))

    def end_round(self, state: SelectionState, arm: int) -> None:
        self.est[arm] = (state.y_sum[arm] + self.f_all[arm] - self.f_obs[arm]) / state.n_items
        self._refresh_exact(state, np.array([arm]))
        self._maybe_refit(state)


class UCBELRF(Policy):
    """UCB-E-LRF (Zhou et al., arXiv 2407.06172), as in ``banditeval`` (``pulse.md`` §7).

    Warm-up while fewer than ``warmup`` of all cells are revealed: uniform batches, round-robin
    over arms (the reference draws uniformly from the whole matrix). Then every
    ``refit_every`` rounds an ensemble of ``n_ensemble`` rank-1 factorisations (squared loss,
    ALS, ``als_iter`` sweeps, ridge ``ridge``, each dropping ``drop`` of the revealed cells,
    started from N(0, 1)) is refit from scratch; cell UCB = mean + ``eta`` sd (revealed cells:
    their value); arm index = row mean of cell UCBs; the batch is the arm's unrevealed cells
    with the largest ensemble sd. Estimate: revealed values plus the ensemble mean elsewhere
    (biased; no confidence sequence).
    """

    name = "ucbe_lrf"

    def __init__(
        self,
        *,
        n_ensemble: int = 64,
        eta: float = 5.0,
        als_iter: int = 10,
        ridge: float = 0.1,
        drop: float = 0.05,
        warmup: float = 0.05,
        refit_every: int = 1,
        random_state: int | None = None,
        alpha: float = 0.1,
        a: float = 1.0,
        ci: str = "none",
    ) -> None:
        super().__init__(a=a, alpha=alpha, ci="none")
        self.n_ensemble, self.eta, self.als_iter = n_ensemble, eta, als_iter
        self.ridge, self.drop, self.warmup = ridge, drop, warmup
        self.refit_every = refit_every
        self.random_state = random_state

    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        super().initialize(state, None)
        self._rng = np.random.default_rng(self.random_state)
        self._next = 0
        self._mean = None
        self._sd = None

    def _fit_ensemble(self, state: SelectionState) -> None:
        E, (m, n) = self.n_ensemble, state.values.shape
        obs = state.observed[None, :, :] & (self._rng.random((E, m, n)) >= self.drop)
        Y = np.where(obs, np.nan_to_num(state.values)[None], 0.0)
        W = obs.astype(np.float64)
        u = self._rng.standard_normal((E, m))
        v = self._rng.standard_normal((E, n))
        for _ in range(self.als_iter):
            u = np.einsum("emn,en->em", Y, v) / (np.einsum("emn,en->em", W, v * v) + self.ridge)
            v = np.einsum("emn,em->en", Y, u) / (np.einsum("emn,em->en", W, u * u) + self.ridge)
        pred = u[:, :, None] * v[:, None, :]
        self._mean = pred.mean(axis=0)
        self._sd = pred.std(axis=0)

    def choose(self, state: SelectionState) -> int | None:
        active = ~self.exact
        if not active.any():
            return None
        if state.observed.mean() < self.warmup:
            m = state.n_arms
            for step in range(m):
                arm = (self._next + step) % m
                if active[arm]:
                    self._next = arm + 1
                    self._mode = "uniform"
                    return arm
        if self._mean is None or state.rounds % self.refit_every == 0:
            self._fit_ensemble(state)
        ucb = np.where(
            state.observed, np.nan_to_num(state.values), self._mean + self.eta * self._sd
        )
        idx = np.where(active, ucb.mean(axis=1), -np.inf)
        self._mode = "sd"
        return int(np.argmax(idx))

    def select_items(self, state: SelectionState, arm: int, size: int) -> np.ndarray:
        if getattr(self, "_mode", "uniform") == "uniform" or self._sd is None:
            return state.uniform_items(arm, size)
        sd = np.where(state.observed[arm], -np.inf, self._sd[arm])
        top = np.argpartition(-sd, size - 1)[:size] if size < sd.size else np.arange(sd.size)
        top = top[np.isfinite(sd[top])]
        return top[np.argsort(-sd[top], kind="stable")]

    def update(self, state: SelectionState, obs: Observation) -> None:
        pass

    def end_round(self, state: SelectionState, arm: int) -> None:
        if self._mean is not None:
            filled = np.where(state.observed, np.nan_to_num(state.values), self._mean)
            self.est = filled.mean(axis=1)
        else:
            self.est = state.y_sum / np.maximum(state.n_obs, 1)
        self._refresh_exact(state, np.arange(state.n_arms))
