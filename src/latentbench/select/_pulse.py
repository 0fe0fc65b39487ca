"""PULSE: UCB-E selection on doubly robust estimates with a low-rank proxy."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from latentbench._checks import check_flag, is_integer, is_number
from latentbench.exceptions import InputError
from latentbench.select import _certify
from latentbench.select._base import DEFAULT_DELTA, ProxyBookkeeping, make_confseq, resolve_delta
from latentbench.select._betting import HORIZONS, BettingConfSeq, checked_weights
from latentbench.select._bounds import EBConfSeq, FreedmanConfSeq
from latentbench.select._estimators import dr_draw_estimates, dr_round_variance, plugin_lambda
from latentbench.select._paired import PairedCertificate, plausible_levels
from latentbench.select._state import Observation, ProxyState, SelectionState

__all__ = ["Pulse"]

CERTIFIED_SPLIT = 0.9
"""``Pulse(bonus="ci")``'s share of ``delta`` on the certificate's upper bounds (each at
``0.9 delta``; each lower bound at ``0.1 delta / (n_arms - 1)``). Chosen by comparing variants
on the four shared pools (``benchmarks/RESULTS_select.md`` §3)."""

CERTIFIED_WEIGHTS = (0.55, 0.15, 0.15, 0.15)
"""``Pulse(bonus="ci")``'s prior weights of the certificate's horizons (200, 800, 3,200 and
12,800 effective cells); the interval keeps (0.85, 0.05, 0.05, 0.05). Chosen by comparing
variants on the four shared pools (``benchmarks/RESULTS_select.md`` §3)."""

_TIE = 1e-9
"""Margin by which a certified arm's lower bound must exceed every other upper bound."""

MIN_GRID = 1000
"""Fewest candidate means of PULSE's confidence sequences (``BettingConfSeq``'s default).
With ``bonus="ci"`` the grid has ``max(MIN_GRID, n_items)`` points: a bound is padded by one
step, and 0.001 is 8 % of MMLU-Pro's top-two gap, while a step of ``1 / n_items`` is the
resolution of a mean over the pool (binary scores: every possible mean is a grid point). The
cost grows with the grid, so smaller pools keep 1,000."""

GRID_CELLS = 2**27
"""Upper bound of ``n_arms x horizons x (certificate_grid + 1)``, the values of each of the
betting sequences' arrays (1 GiB of float64 at the bound): ``certificate_grid = 100000000``
on 4 models asked for 11.9 GiB, and failed with a MemoryError after the initial batch."""


class Pulse(ProxyBookkeeping):
    """PULSE: UCB-E selection on doubly robust estimates (``docs/selection.md``).

    Each round pulls ``argmax_i mu_hat_i + sqrt(a / T_i)`` and reveals a uniform batch from the
    arm's unobserved items. The per-round estimate is the clean DR estimate with the plug-in
    lambda; the arm's estimate is the inverse-variance-weighted average of its per-round
    estimates, and its interval a betting confidence sequence on the per-cell doubly robust
    terms. The proxy is refit on all revealed cells every ``refit_every`` rounds, at the end of
    the round.

    Each round's estimate is unbiased given the past, for any predictions and any lambda
    fixed before its draw (a poor proxy costs variance, not bias). The final estimates of an
    adaptive run are not unbiased: as for any bandit, the arms pulled most are those whose
    early estimates were high, and the recommended arm's estimate tends to be high (winner's
    curse). Read the estimates with their intervals, which stay valid (simultaneously over
    arms and time) under this adaptivity.

    Parameters
    ----------
    a : float, default 1.0
        UCB-E exploration constant.
    delta : float, optional
        Error probability of the certificate: a certified best is the true best with
        probability at least ``1 - delta``; also the simultaneous miscoverage of the
        intervals (``delta / n_arms`` per arm). Not a ``level`` (the coverage of one interval,
        as in :mod:`latentbench.irt`). None (the default): 0.05, or ``alpha`` when given.
    alpha : float, optional
        Deprecated spelling of ``delta`` (warns; giving both is an error).
    ci : {"betting", "eb", "freedman", "none"}, default "betting"
        Confidence sequences (see :class:`~latentbench.select._base.UCBEBookkeeping`).
    refit_every : int, "auto" or None, default "auto"
        Rounds between refits of the candidate factors (see
        :class:`~latentbench.select._base.ProxyBookkeeping`; ``None``: never).
    lam : {"plugin", "slope", "one", "zero"}, float or None, default None
        Proxy weight rule; any fixed value in [0, 1] is valid. None: ``plugin``, or ``slope``
        with ``bonus="ci"`` (the certificate's widths depend on each arm's residual
        variance, which ``slope`` minimises; on MMLU-Pro the plug-in weight averaged about
        0.2 over rounds where the slope is about 0.8). ``slope`` uses, at every
        round, the least-squares slope of the arm's revealed scores on their current
        predictions, clipped to [0, 1] (the weight that minimises the variance of
        ``Y - lam f``, estimated in-sample). ``plugin`` is the release's
        variance-minimising rule from the arm's past corrections; before an arm has any
        under the current predictions (first pull, after each refit) it uses the
        least-squares slope of the arm's revealed scores on their predictions, clipped to
        [0, 1] (the release uses 1, which trusts a poor proxy fully). When the item factors
        are learned online (no history, :class:`~latentbench.select.OnlineProxy`), a slope on
        the cells the proxy was fitted on is close to 1 whatever the proxy is worth, so
        ``plugin`` and ``slope`` use instead the within-arm slope of the post-initial scores on
        the predictions they were drawn under, pooled over arms and shrunk by its noise; 0
        until it stands out of its noise (``_out_of_sample_lambda``).
    init_estimate : {"mean", "prior"} or None, default None
        Pull 1 (the initial batch): its sample mean (``lam = 0``, as the release) or the DR
        estimate with the population-prior prediction (``lam = 1``; the history's prediction
        for a model not yet seen, fixed before the initial draw, so the estimate is unbiased
        whatever it is worth), which removes from the initial cells the part of their
        variance the items' known difficulty explains. With the prior, every round is
        weighted by its own predicted doubly robust variance. None: ``prior`` for
        identification with a history (``bonus`` ``ucbe`` or ``effective`` and a proxy that
        does not learn its items from the candidates), ``mean`` otherwise: the certified
        configuration (``bonus="ci"``, where the prior's wider first-round range cost the
        certificate 0.1-0.9 % of LUCB's cells on the four shared pools), history-free runs
        (an online proxy's prior is learned from those very cells, so it is not fixed before
        the draw), runs without a proxy and runs that do not use the proxy's predictions
        (``lam="zero"``: UCB-E's estimate exactly). Chosen by comparing the two on the shared pools
        (``benchmarks/RESULTS_select.md`` §1, "The prior's estimate of the initial batch"):
        to 95 % identification at 16 / 16, 200 seeds, the prior saved 287 +- 157 post-init
        cells on BFCL gap 0.02 (42.0 % +- 3.9 against UCB-E, 33.5 % +- 5.0 with the mean)
        and 1,868 +- 2,411 on MMLU-Pro, and cost 32 +- 157 on AlpacaEval 1. The value used
        is ``init_estimate_used`` after :meth:`initialize` and the result's
        ``params["init_estimate"]``.
    weights : {"precision", "equal"}, default "precision"
        Average of per-round estimates: weights proportional to the inverse of the
        model-predicted conditional variance of each round (fixed before each draw, so every
        round stays unbiased given the past), or equal weights (the release). The rounds'
        deviations are martingale differences, and inverse-variance weights are the most
        efficient fixed combination of them: they count the doubly robust rounds (residual
        variance below the initial batch's plain mean) and the rounds drawn from a smaller
        pool (finite-population factor ``(N/n)^2 (1/B - 1/N)``) for what they are worth.
        The initial batch (sample mean) is weighted with the per-cell variance ``p (1 - p)``
        of the population prior's mean prediction (the arm's own is unknown before its
        draw), so every later round is put on that scale: its weight uses
        ``(N/n)^2 (1/B - 1/N) p (1 - p)`` times the ratio of its predicted variance to that
        of a plain round (``lam = 0``) under the arm's current predictions. A round without
        the proxy then weighs exactly as a plain sample of its size; scaling the rounds by
        the arm's own predicted variance instead underweighted the initial batch of arms
        far from the population mean. Without a history the ratio is the one measured out of
        sample (``_out_of_sample_ratio``; exactly 1 at ``lam = 0``), and rounds with
        ``lam = 0`` average to exactly the plain mean of the arm's cells.
    legacy_stale_predictions : bool, default False
        Reproduce the release's stale-prediction sum (biased after refits), with the
        release's lambda of 1 before an arm has corrections.
    bonus : {"ucbe", "effective", "ci"}, default "ucbe"
        Selection rule. ``ucbe`` is the paper's, ``mu_hat_i + sqrt(a / T_i)``. Our extensions:
        ``effective`` is the UCB-E bonus in units of the estimate's own standard error,
        ``mu_hat_i + 2 sqrt(a * v_i)`` with ``v_i`` the estimated variance of ``mu_hat_i``
        from the residuals ``Y - lam f`` of each round (for a plain mean of ``T`` cells with
        ``p = 1/2`` this is exactly the UCB-E bonus; it explores too little with a useless
        proxy, so it is not the default). ``ci`` is LUCB (Kalyanakrishnan et al. 2012): the
        empirical best and the other arm with the largest upper bound are both pulled, one
        round each; it suits the fixed-confidence stop (``stop="confidence"``). Selection
        may use any past data, so none of these affects the per-round unbiasedness or the
        coverage.
    doubling : bool, default True
        Reveal ``min(B, T_i)`` cells per round (see
        :class:`~latentbench.select._base.UCBEBookkeeping`): after an initial batch of 32
        cells with ``B = 64`` an arm's first round reveals 32 cells, later rounds ``B``
        (with the default schedule, ``B`` equals the start, so every round reveals ``B``).
    revisit : bool, default False
        Revisit an arm whose UCB-E index has fallen below the recommended arm's estimate
        once it has waited ``T_j exp(z_j^2 / 4)`` cells (see ``_starved``), so that an arm
        whose start was unlucky is not ignored until its rivals are fully evaluated. Off by
        default: on the shared pools it cost 20 % +- 10 (BFCL gap 0.02) and 14 % +- 16
        (AlpacaEval 1) more cells to 95 % identification without lowering the worst seed
        there; it helped on MMLU-Pro, where long-wrong seeds set the crossing
        (``benchmarks/RESULTS_select.md`` §2), and on a constructed pool with a starved best
        arm (``tests/select/test_revisit.py``).
    pair : {"both", "greedy"}, default "greedy"
        With ``bonus="ci"``: which arm of the LUCB pair (the empirical best and the other
        arm with the highest certificate upper bound) is pulled. ``both`` pulls both, one
        round each (Kalyanakrishnan et al. 2012). ``greedy`` (our extension) pulls the one
        whose next cell is predicted to shrink the certificate's gaps the most: the
        leader's lower radius or the challenger's upper radius, each times the relative
        drop of ``sqrt(1/T - 1/n)`` from one more cell, the leader's counted once for every
        other arm whose upper bound is above its lower bound. LUCB's pairing gives the
        leader as many cells as all challengers together; on MMLU-Pro, where the best must
        be evaluated fully, the challengers then get about as many cells as the best.
        Past data only, so the certificate stays valid.
    certificate_weights : "uniform", "interval", tuple of float or None, default None
        Horizon weights of the certificate's mixtures (``BettingConfSeq``): None uses
        :data:`CERTIFIED_WEIGHTS` (0.55, 0.15, 0.15, 0.15) with ``bonus="ci"`` and the
        interval's (0.85, 0.05, 0.05, 0.05) otherwise; ``"interval"`` the interval's. Any fixed
        weights keep the certificate valid. The interval's weights pay ``log 20`` nats at the
        long horizons, where MMLU-Pro's close rivals are decided; ``uniform`` pays ``log 4``
        everywhere and cost AlpacaEval, whose many far rivals are decided at the shortest
        horizon (``benchmarks/RESULTS_select.md`` §3).
    target_weight : float, default 0.0
        Weight in the certificate's mixtures of one more capital process per arm whose bets
        are sized, before each batch, for the distance the arm's bound has to cover: the
        leader's estimate to the highest other upper bound, another arm's estimate to the
        leader's lower bound (``BettingConfSeq.set_target``; sized before the round's scores
        enter the estimate). Predictable, so valid. The fixed horizons'
        mixture pays ``log 20`` at the long horizons, where MMLU-Pro's certificate is
        decided; the targeted process at 0.5 pays ``log 2``. At 0.5 (30 seeds) it saved
        0.6 % +- 0.7 of LUCB's cells on MMLU-Pro and cost 1.9 % (BFCL), 2.9 % (AlpacaEval 1)
        and 4.6 % (AlpacaEval 2), so it is off.
    certificate_grid : int or None, default None
        Candidate means of the confidence sequences, ``0, 1/grid, ..., 1`` (each bound is
        padded by one step): None is ``max(1000, n_items)`` with ``bonus="ci"`` (a step of
        ``1 / n_items``; :data:`MIN_GRID`), else 1,000. Any grid is valid; a finer one costs
        time in proportion to the candidates inside the current interval, and memory: a given
        grid is bounded by :data:`GRID_CELLS` / (models x 4 horizons) - 1 (:meth:`check_sizes`,
        before anything is evaluated).
    certificate_split : float or None, default None
        Share of ``delta`` on the certificate's upper bounds (``BettingConfSeq``'s
        ``certificate_split``; each lower bound gets ``(1 - s) delta / (n_arms - 1)``): None
        is :data:`CERTIFIED_SPLIT` (0.9) with ``bonus="ci"``, else 0.5. Only the true best's
        upper bound and the other arms' lower bounds enter the error, so any fixed split is
        valid. The certified arm's lower bound is rarely what decides the stop: on the shared
        pools it is fully evaluated (MMLU-Pro, BFCL, AlpacaEval 1) or far ahead (AlpacaEval 2),
        while the rivals' upper bounds are where the cells go.

        The certified configuration's defaults (``pair="greedy"``, ``lam="slope"``,
        ``certificate_split=0.9``, ``certificate_weights=(0.55, 0.15, 0.15, 0.15)`` and a
        grid of ``max(1000, n_items)`` with ``bonus="ci"``) were chosen by comparing variants on
        the four shared pools (``benchmarks/RESULTS_select.md`` §3).
    certificate : {"arm", "paired"} or None, default None
        How the best is certified. ``arm`` (None: the default): its lower bound above every
        other arm's upper bound (per-arm bounds, ``BettingConfSeq.certificate``).
        ``paired``: lower bounds on ``mu_best - mu_j`` from betting confidence sequences on
        the per-item differences of the cells both arms have in the shared order
        (:mod:`latentbench.select._paired`; ``docs/selection.md``), all above 0; pulls the
        leader and the rival with the lowest paired bound, of the two the one with fewer
        cells. Only with one shared order (with a history, the default); with an order per
        arm it falls back to ``arm``. On the shared pools it needed 2 % fewer cells than
        ``arm`` on MMLU-Pro with uniform certificate weights (within the SE) and 39–79 %
        more elsewhere (``benchmarks/RESULTS_select.md`` §3), so it is off.
    paired_levels : {"plausible", "uniform"}, default "plausible"
        With ``certificate="paired"``: the level of each pair's bound set from the initial
        batch (the pairs then bet after it) or ``delta / (n_arms - 1)`` each.

    Notes
    -----
    The initial batch is paid on every arm, hopeless ones included. Its size and ``B`` are
    the run's (:func:`~latentbench.select.run_selection`), by default
    :func:`~latentbench.select.default_schedule` of the pool, the same for PULSE and its
    baselines (16 cells and ``B = 16`` on every shared pool). Every arm
    reveals its items in one shared random order (``default_item_order = "shared"``, common
    random numbers): arms with the same number of cells have seen the same items, so the
    per-item effect that the proxy does not capture cancels in their comparison. Each arm's
    order is still a uniform permutation, so the per-round unbiasedness and the intervals are
    unchanged. Without a history (:class:`~latentbench.select.OnlineProxy`, item factors
    learned from the candidates' cells) the order is one per arm: a shared order would show
    the proxy which items an arm draws next. Both defaults were chosen after comparing
    variants on the shared pools, and are measured there with the previous ones and with
    UCB-E in the same configurations side by side (``benchmarks/RESULTS_select.md``).
    """

    name = "pulse"
    default_item_order = "shared"

    def __init__(
        self,
        *,
        a: float = 1.0,
        delta: float | None = None,
        alpha: float | None = None,
        ci: str = "betting",
        refit_every: int | Literal["auto"] | None = "auto",
        lam: str | float | None = None,
        init_estimate: Literal["mean", "prior"] | None = None,
        weights: Literal["equal", "precision"] = "precision",
        legacy_stale_predictions: bool = False,
        bonus: Literal["ucbe", "effective", "ci"] = "ucbe",
        doubling: bool = True,
        revisit: bool = False,
        pair: Literal["both", "greedy"] = "greedy",
        certificate_weights: tuple[float, ...] | str | None = None,
        target_weight: float = 0.0,
        certificate_grid: int | None = None,
        certificate_split: float | None = None,
        certificate: Literal["arm", "paired"] | None = None,
        paired_levels: Literal["plausible", "uniform"] = "plausible",
    ) -> None:
        legacy_stale_predictions = check_flag(legacy_stale_predictions, "legacy_stale_predictions")
        revisit = check_flag(revisit, "revisit")  # "no" ran as True
        delta = resolve_delta(delta, alpha, default=DEFAULT_DELTA)
        super().__init__(a=a, delta=delta, ci=ci, refit_every=refit_every, doubling=doubling)
        self._set_estimator(bonus, ci, lam, init_estimate, weights)
        self.legacy_stale_predictions = legacy_stale_predictions
        self.revisit = revisit
        self._set_certificate(
            certified=bonus == "ci",
            pair=pair,
            certificate_weights=certificate_weights,
            target_weight=target_weight,
            certificate_grid=certificate_grid,
            certificate_split=certificate_split,
            certificate=certificate,
            paired_levels=paired_levels,
        )

    def _set_estimator(
        self,
        bonus: Literal["ucbe", "effective", "ci"],
        ci: str,
        lam: str | float | None,
        init_estimate: Literal["mean", "prior"] | None,
        weights: Literal["equal", "precision"],
    ) -> None:
        """Check and store the selection rule and the estimate's options (in this order)."""
        if bonus not in ("ucbe", "effective", "ci"):
            raise InputError(f"bonus={bonus!r}; expected 'ucbe', 'effective' or 'ci'")
        if bonus == "ci" and ci == "none":
            raise InputError("bonus='ci' needs intervals; set ci='betting'")
        self.bonus = bonus
        self.lam = _checked_lam(lam, bonus)
        if init_estimate not in (None, "mean", "prior"):
            raise InputError(f"init_estimate={init_estimate!r}; expected 'mean' or 'prior'")
        if weights not in ("equal", "precision"):
            raise InputError(f"weights={weights!r}; expected 'equal' or 'precision'")
        self.init_estimate = init_estimate
        self.weights = weights

    def _set_certificate(
        self,
        *,
        certified: bool,
        pair: Literal["both", "greedy"],
        certificate_weights: tuple[float, ...] | str | None,
        target_weight: float,
        certificate_grid: int | None,
        certificate_split: float | None,
        certificate: Literal["arm", "paired"] | None,
        paired_levels: Literal["plausible", "uniform"],
    ) -> None:
        """Check and store the certificate's options (in this order); ``certified``: the
        certified configuration (``bonus="ci"``), which has its own defaults."""
        if pair not in ("both", "greedy"):
            raise InputError(f"pair={pair!r}; expected 'both' or 'greedy'")
        self.pair = pair
        self.certificate_weights = certificate_weights
        if not (is_number(target_weight) and 0 <= target_weight < 1):
            raise InputError(f"target_weight={target_weight!r}; expected a value in [0, 1)")
        self.target_weight = float(target_weight)
        # None: set from the pool in initialize (certified: one step per item, >= 1,000)
        self.certificate_grid = _checked_grid(certificate_grid)
        self.certificate_split = _checked_split(certificate_split, certified)
        self._arm_weights = _arm_weights(certificate_weights, certified)
        if certificate is None:
            certificate = "arm"
        if certificate not in ("arm", "paired"):
            raise InputError(f"certificate={certificate!r}; expected 'arm', 'paired' or None")
        self.certificate_kind: str = certificate
        if paired_levels not in ("plausible", "uniform"):
            raise InputError(f"paired_levels={paired_levels!r}; expected 'plausible' or 'uniform'")
        self.paired_levels = paired_levels

    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        """Set up after the shared initial batch: every arm's first per-round estimate.

        That estimate is the initial batch's mean, or with ``init_estimate="prior"`` the doubly
        robust estimate around the proxy's prior prediction. The confidence sequences are set
        up too, and with ``certificate="paired"`` and a shared order the paired certificate.

        Parameters
        ----------
        state : SelectionState
            The run's cells: every arm's initial batch is recorded.
        proxy : ProxyState or None, optional
            The fitted proxy's predictions of every cell.

        Raises
        ------
        InputError
            When ``proxy`` is None.
        """
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
        self._last_spent = np.zeros(m, dtype=np.int64)  # post-init cells at each arm's last pull
        self.n_revisits = 0
        self.z_history: list[list[float]] = [[] for _ in range(m)]
        self._pending: int | None = None
        self._plain_var: float | None = None  # per-cell variance the initial batch is weighted by
        # per arm: sums of f, y, f^2, f y, the count and y^2 over post-init cells, f as used
        self._oos = np.zeros((m, 6))
        self._learns_items = bool(
            proxy is not None
            and getattr(proxy.proxy, "learns_items", False)
            and not self.legacy_stale_predictions
        )
        self._state = state
        # the paired certificate needs one shared order (else no items are shared): per-arm
        self._paired = None
        shared = state.shared_order and all(state.in_order(arm) for arm in range(m))
        pair_weights = self.certificate_weights
        if self.certificate_kind == "paired" and shared and m >= 2:
            t0 = int(state.n_obs.min())
            levels, start = None, 0
            if self.paired_levels == "plausible" and t0 > 0:
                # set from the initial batch (the same first t0 items for every arm); the
                # pairs then bet from item t0 + 1 on (docs/selection.md)
                levels = plausible_levels(state.values[:, state.order[0, :t0]], self.delta)
                start = t0
            self._paired = PairedCertificate(
                m,
                state.n_items,
                self.delta,
                weights=None if pair_weights == "interval" else pair_weights,
                levels=levels,
                start=start,
            )
        self._cs = make_confseq(
            self.ci,
            m,
            state.n_items,
            self.delta,
            state.n_items,
            certificate_weights=self._arm_weights,
            target_weight=self.target_weight,
            grid=self._grid(state.n_items),
            certificate_split=self.certificate_split,
        )
        n = state.n_items
        init_estimate = self.init_estimate
        if init_estimate is None:  # identification with a history: the prior's DR estimate
            history = proxy is not None and not self._learns_items
            uses_proxy = not (
                self.lam == "zero" or (not isinstance(self.lam, str) and not self.lam)
            )
            identifies = self.bonus != "ci"
            init_estimate = "prior" if history and identifies and uses_proxy else "mean"
        self.init_estimate_used: str = init_estimate
        lam0 = 1.0 if init_estimate == "prior" else 0.0
        # pull 1: the initial batch, drawn with the prior-mean prediction fixed beforehand
        T0 = state.n_obs.astype(np.float64)
        if init_estimate == "prior":
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
            self._plain_var = pbar * (1 - pbar)
        w0 = 1.0 / np.maximum(var0, 1e-8) if self.weights == "precision" else np.ones(m)
        for arm in range(m):
            items = state.order[arm, : int(state.n_obs[arm])]
            draws = dr_draw_estimates(0.0, F0, state.values[arm, items], f0[items], lam0, n, n)
            widths = (n - np.arange(items.size)) / n * (1.0 + lam0)
            self._add_round(arm, float(z0[arm]), float(w0[arm]), draws, widths)
            if isinstance(self._cs, BettingConfSeq):
                y0 = state.values[arm, items]
                self._cs.update(arm, y0, f0[items], lam0, F0, f0.min(), f0.max())
            resid = state.values[arm, items] - lam0 * f0[items]
            self._w2v[arm] += w0[arm] ** 2 * _round_var(resid, n, n)
            self.z_history[arm].append(float(z0[arm]))
        self._setup_proxy(state, proxy)
        # the proxy is prewarmed on the initial cells by the run loop; sums use the current f
        self._stale = self.f_obs.copy()
        self._refresh_exact(state, np.arange(m))

    def check_sizes(self, n_arms: int, n_items: int) -> None:
        """Refuse a ``certificate_grid`` the data cannot hold: ``n_arms`` x horizons x
        ``(certificate_grid + 1)`` values at most :data:`GRID_CELLS` in each of the betting
        sequences' arrays (the default grid is not bounded here).

        Parameters
        ----------
        n_arms : int
            Models (rows) of the matrix.
        n_items : int
            Items (columns) of the matrix (not used: the grid does not grow with them).

        Raises
        ------
        InputError
            Naming the option, its value and the largest this many models allow.
        """
        grid = self.certificate_grid
        per_step = max(1, int(n_arms)) * len(HORIZONS)
        high = max(2, GRID_CELLS // per_step - 1)
        if grid is not None and grid > high:
            raise InputError(
                f"policy {self.name!r} option certificate_grid={grid!r}; expected an integer in "
                f"[2, {high:,}] for {n_arms:,} models (the confidence sequences hold models x "
                f"{len(HORIZONS)} horizons x (grid + 1) values per array, at most "
                f"{GRID_CELLS:,})"
            )

    def _grid(self, n_items: int) -> int:
        """Candidate means of the confidence sequences: ``certificate_grid``, else
        ``max(1000, n_items)`` with ``bonus="ci"`` (a step of ``1 / n_items``, the resolution
        of a mean over the pool; :data:`MIN_GRID` at least) and 1,000 otherwise."""
        if self.certificate_grid is not None:
            return self.certificate_grid
        return max(MIN_GRID, n_items) if self.bonus == "ci" else MIN_GRID

    def estimate_variance(self) -> np.ndarray:
        """Estimated variance of each arm's point estimate, shape (n_arms,).

        Returns
        -------
        ndarray of shape (n_arms,)
        """
        return np.asarray(self._w2v / np.maximum(self._wsum, 1e-300) ** 2)

    def index(self, state: SelectionState) -> np.ndarray:
        """The index :meth:`choose` maximises, shape (n_arms,); ``-inf`` for fully revealed arms.

        ``estimate + sqrt(a / T_i)`` (UCB-E), or with ``bonus="effective"``
        ``estimate + 2 sqrt(a * estimate_variance)``.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.

        Returns
        -------
        ndarray of shape (n_arms,)
        """
        if self.bonus != "effective":
            return super().index(state)
        idx = self.est + 2.0 * np.sqrt(self.a * self.estimate_variance())
        idx[self.exact] = -np.inf
        return idx

    def choose(self, state: SelectionState) -> int | None:
        """The arm to pull next, or ``None`` to stop.

        With ``bonus="ci"``: LUCB on the certificate (the empirical best and the other arm
        with the highest upper bound, or on the paired certificate the rival with the lowest
        lower bound on the leader's lead). Otherwise the largest :meth:`index`, or with
        ``revisit`` an arm the index has given up on for longer than its plausibility allows.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.

        Returns
        -------
        int or None
            An arm's index in ``range(n_arms)``; None when every arm is fully revealed.
        """
        if self.bonus != "ci":
            arm = super().choose(state)
            if arm is not None and self.revisit:
                starved = self._starved(state)
                if starved is not None:
                    self.n_revisits += 1
                    return starved
            return arm
        active = ~self.exact
        if not active.any():
            return None
        if self._paired is not None:
            return self._paired_pick(state, active)
        # the second arm of the last LUCB pair, chosen with it (still from the past only)
        pending, self._pending = self._pending, None
        if pending is not None and active[pending]:
            return pending
        assert self._cs is not None  # bonus='ci' requires intervals (checked in __init__)
        certificate = self.certificate()
        assert certificate is not None
        hi = certificate[1]
        # LUCB: the empirical best and the other arm with the highest upper bound (exact arms
        # included: a fully evaluated rival is what the best must be separated from); both
        # are pulled (one round each), as the best's interval is in every comparison
        leader = int(np.argmax(self.est))
        upper = hi.copy()
        upper[leader] = -np.inf
        if self.exact[leader]:  # exact rivals of an exact leader are decided (_certify)
            upper[self.exact] = -np.inf
        challenger = int(np.argmax(upper))
        pair = [arm for arm in (leader, challenger) if active[arm]]
        if not pair:  # both exact: the stop rule decides; otherwise keep exploring
            return super().choose(state)
        if len(pair) == 2 and self.pair == "greedy":
            return self._greedy_pick(state, leader, challenger, certificate)
        if len(pair) == 2:
            self._pending = pair[1]
        return pair[0]

    def _paired_pick(self, state: SelectionState, active: np.ndarray) -> int | None:
        """LUCB on the paired certificate: the leader (largest estimate) and the rival whose
        lower bound on the leader's lead is lowest; of the two, the one with fewer cells
        (the pair's bound grows with the cells both have; a tie goes to the leader, whose
        cells serve every pair). If both are fully evaluated, the UCB-E index decides."""
        leader = int(np.argmax(self.est))
        lead = self.difference_lower(leader)
        assert lead is not None
        if self.exact[leader]:  # exact rivals of an exact leader are decided (_certify)
            lead = np.where(self.exact, np.inf, lead)
        rival = int(np.argmin(lead))
        pair = [arm for arm in (leader, rival) if active[arm]]
        if not pair:
            return super().choose(state)
        if len(pair) == 2 and state.n_obs[rival] < state.n_obs[leader]:
            return rival
        return pair[0]

    def difference_lower(self, arm: int) -> np.ndarray | None:
        """Lower bounds of the paired certificate on ``mu_arm - mu_j`` for every arm ``j``
        (``+inf`` at ``arm``), shape (n_arms,); None without one (``certificate="arm"``, or
        an order per arm). ``arm`` is certified when all are above 0 (above ``-epsilon``
        with a tolerance; :meth:`certifies`).

        Parameters
        ----------
        arm : int
            The arm whose lead is bounded.

        Returns
        -------
        ndarray of shape (n_arms,) or None
        """
        if self._paired is None:
            return None
        return self._paired.lower(self._state, arm)

    def certifies(self, arm: int, epsilon: float = 0.0) -> bool:
        """Whether ``arm`` is certified within ``epsilon`` of the best at ``delta`` (the best
        itself at 0): every paired lower bound on its lead above ``-epsilon``
        (``certificate="paired"`` with a shared order), else its certificate lower bound above
        every other arm's upper bound minus ``epsilon``; when ``arm``'s row is fully revealed,
        fully revealed rivals whose means are at most its own need no bound
        (:func:`latentbench.select._certify.certifies`).

        Parameters
        ----------
        arm : int
            The arm to certify.
        epsilon : float, default 0.0
            Tolerance: certified within ``epsilon`` of the best.

        Returns
        -------
        bool
            False when the policy has no certificate bounds (``ci="none"``).
        """
        lead = self.difference_lower(arm)
        if lead is not None:
            return _certify.certifies_differences(lead, arm, **self._exact_rivals(epsilon))
        bounds = self.certificate()
        if bounds is None:
            return False
        lo, hi = bounds
        # strictly above, beyond rounding: with a grid step of 1 / n_items a padded upper
        # bound can equal an exact mean (a fully evaluated arm's) up to the last bit; a fully
        # evaluated rival of a fully evaluated leader needs no bound (_certify)
        return _certify.certifies(lo, hi, arm, tie=_TIE, **self._exact_rivals(epsilon))

    def _exact_rivals(self, epsilon: float) -> dict[str, Any]:
        """``epsilon`` and the fully revealed rows with their means (the cells' own), for
        :mod:`latentbench.select._certify`."""
        state = self._state
        return {
            "epsilon": epsilon,
            "exact": state.n_obs >= state.n_items,
            "means": state.y_sum / state.n_items,
        }

    def _set_target(self, arm: int) -> None:
        """Size the certificate's targeted bets on ``arm`` from the past only (the estimates
        and certificate bounds before this batch): the leader against the highest other upper
        bound, any other arm against the leader's lower bound."""
        assert isinstance(self._cs, BettingConfSeq)
        lo, hi = self._cs.certificate()
        leader = int(np.argmax(self.est))
        if arm == leader:
            others = np.delete(hi, leader)
            distance = float(self.est[arm] - others.max()) if others.size else 0.0
            self._cs.set_target(arm, distance, lower=True)
        else:
            self._cs.set_target(arm, float(lo[leader] - self.est[arm]), lower=False)

    def _greedy_pick(
        self,
        state: SelectionState,
        leader: int,
        challenger: int,
        certificate: tuple[np.ndarray, np.ndarray],
    ) -> int:
        """The arm of the LUCB pair whose next cell is predicted to shrink the certificate's
        gaps the most: each arm's radius (the leader's lower, the challenger's upper) times
        the relative drop of ``sqrt(1/T - 1/n)`` from one more cell, the leader's counted once
        for every other arm whose upper bound is above its lower bound (it is in each of
        those comparisons)."""
        lo, hi = certificate
        n = state.n_items
        binding = max(int((np.delete(hi, leader) >= lo[leader]).sum()), 1)
        gains = []
        for arm, radius in (
            (leader, self.est[leader] - lo[leader]),
            (challenger, hi[challenger] - self.est[challenger]),
        ):
            t = float(state.n_obs[arm])
            now = max(1.0 / t - 1.0 / n, 1e-300)
            after = max(1.0 / (t + 1.0) - 1.0 / n, 0.0)
            gains.append(max(radius, 0.0) * (1.0 - math.sqrt(after / now)))
        return leader if binding * gains[0] >= gains[1] else challenger

    def _starved(self, state: SelectionState) -> int | None:
        """An arm the UCB-E index has given up on for longer than its plausibility allows.

        UCB-E pulls an arm only while its index ``est + sqrt(a / T)`` is the largest. An arm
        whose start was unlucky can have an index below the recommended arm's *estimate*;
        UCB-E then does not pull it again until every arm with a larger index is fully
        evaluated, and the recommendation stays wrong that long (issue 29: up to 8,896
        cells where UCB-E's worst case was 2,240). Such a given-up arm ``j`` is revisited
        (one round) once the cells revealed since its last pull exceed
        ``T_j exp(z_j^2 / 4)``, where ``z_j`` is the recommended arm's lead in units of
        ``j``'s plain standard error ``sqrt(p (1 - p) / T_j (1 - T_j / n))`` (``p`` its
        estimate clipped to [0.02, 0.98]; ``p (1 - p)`` bounds the variance of a score in
        [0, 1]). The allowance is the arm's own cells times the square root of the inverse
        normal likelihood of so unlucky a start: an arm 3 standard errors behind may wait
        9.5 times its cells, 4 behind 55 times, 6 behind 8,100 times. A revisit either lifts
        an unlucky arm's index above the leader's estimate (UCB-E then takes it over) or
        raises ``z`` of a truly worse arm (its standard error shrinks), so revisits of
        hopeless arms stop by themselves. Past data only, so the estimates and intervals
        stay valid. Returns the given-up arm that has waited longest relative to its
        allowance, or None.
        """
        leader = int(np.argmax(self.est))  # the recommendation (a full row counts too)
        T = state.n_obs.astype(np.float64)
        given_up = ~self.exact & (self.est + np.sqrt(self.a / np.maximum(T, 1)) < self.est[leader])
        if not given_up.any():
            return None
        p = np.clip(self.est, 0.02, 0.98)
        se = np.sqrt(p * (1 - p) / np.maximum(T, 1) * np.clip(1 - T / state.n_items, 1e-9, 1))
        z = np.maximum(self.est[leader] - self.est, 0.0) / se
        wait = (state.spent - self._last_spent).astype(np.float64)
        allowance = T * np.exp(np.minimum(z, 12.0) ** 2 / 4)
        ratio = np.where(given_up, wait / allowance, 0.0)
        j = int(np.argmax(ratio))
        return j if ratio[j] > 1.0 else None

    def update(self, state: SelectionState, obs: Observation) -> None:
        """Add the batch's doubly robust per-round estimate of the arm (before ``state.record``).

        The estimate is ``(revealed sum + lam * predicted sum of the unrevealed cells
        + sum(y - lam f) / pi) / n_items``, ``pi`` the batch's share of the unrevealed cells
        and ``lam`` as the ``lam`` option sets it; its weight (``weights``), the confidence
        sequences and the targeted bets are updated with it.

        Parameters
        ----------
        state : SelectionState
            The run's cells before this batch.
        obs : Observation
            The batch: its arm, items and scores (NaN counts as 0).
        """
        arm, items = obs.arm, obs.items
        if isinstance(self._cs, BettingConfSeq) and self.target_weight > 0:
            # first: the targeted bets must not see this batch (self.est changes below)
            self._set_target(arm)
        n = state.n_items
        y = np.nan_to_num(np.asarray(obs.scores, dtype=np.float64), nan=0.0)
        N = n - int(state.n_obs[arm])
        Bp = len(items)
        pi = Bp / N
        F = self.f_all[arm] - self.f_obs[arm]
        F2 = self.f2_all[arm] - self.f2_obs[arm]
        if isinstance(self.lam, str):
            if self.lam in ("plugin", "slope") and self._learns_items:
                lam = _out_of_sample_lambda(self._oos)
            elif self.lam == "slope":
                lam = _revealed_lambda(state, self.px.f, arm)
            elif self.lam == "plugin" and self.zn[arm] == 0 and not self.legacy_stale_predictions:
                lam = _revealed_lambda(state, self.px.f, arm)
            elif self.lam == "plugin":
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
        draws: np.ndarray | None = None
        widths: np.ndarray | float = 2.0
        if isinstance(self._cs, (EBConfSeq, FreedmanConfSeq)):  # the only users of the draws
            draws = dr_draw_estimates(state.y_sum[arm], F, y, f_b, lam, N, n)
            widths = (N - np.arange(Bp)) / n * (1.0 + lam)
        if self.weights == "precision":
            var = float(dr_round_variance(F, F2, N, Bp, lam, n))
            if self._plain_var is not None:
                # on the initial batch's scale: the proxy enters through the ratio of the
                # round's variance to a plain round's, so that within an arm a plain round
                # (lam = 0) weighs exactly as a plain sample of its size would
                base = (N / n) ** 2 * max(1.0 / Bp - 1.0 / N, 0.0) * self._plain_var
                if self._learns_items:
                    # history-free: the ratio measured out of sample (the model's own
                    # prediction trusts a proxy fitted on these very cells); 1 at lam = 0
                    var = base * _out_of_sample_ratio(self._oos, lam)
                else:
                    plain = float(dr_round_variance(F, F2, N, Bp, 0.0, n))
                    var = var / plain * base if plain > 1e-12 else base
            weight = 1.0 / max(var, 1e-8) if Bp < N else 1e8
        else:
            weight = 1.0
        self._add_round(arm, float(z), weight, draws, widths)
        if isinstance(self._cs, BettingConfSeq):
            pool = self.px.f[arm][~state.observed[arm]].astype(np.float64)
            self._cs.update(arm, y, f_b, lam, pool.sum(), pool.min(), pool.max())
        self._w2v[arm] += weight**2 * _round_var(y - lam * f_b, N, n)
        self.z_history[arm].append(float(z))
        self.lam_history.append(lam)
        self._last_spent[arm] = state.spent + Bp
        self._oos[arm] += (f_b.sum(), y.sum(), f_b @ f_b, f_b @ y, Bp, y @ y)
        self._record_f(arm, f_b)

    def end_round(self, state: SelectionState, arm: int) -> None:
        """After ``state.record``: mark full rows exact and refit the proxy when one is due.

        Parameters
        ----------
        state : SelectionState
            The run's cells, this batch included.
        arm : int
            The arm just pulled.
        """
        self._refresh_exact(state, np.array([arm]))
        if self._maybe_refit(state):
            self.zbar[:] = 0.0
            self.zn[:] = 0


_GAIN_T = 1.0 + math.sqrt(2.0)
"""The out-of-sample slope's t-statistic above which the proxy gets a weight: the estimated
variance gain ``(b^2 - s^2) Var f`` then exceeds its own standard error (``2 b s Var f``)."""


def _checked_lam(lam: str | float | None, bonus: str) -> str | float:
    """``lam`` checked; None: ``slope`` in the certified configuration (it minimises each
    arm's variance), else ``plugin``."""
    if lam is None:
        lam = "slope" if bonus == "ci" else "plugin"
    if isinstance(lam, str) and lam not in ("plugin", "slope", "one", "zero"):
        raise InputError(
            f"lam={lam!r}; expected 'plugin', 'slope', 'one', 'zero' or a number in [0, 1]"
        )
    if not isinstance(lam, str) and not (is_number(lam) and 0 <= lam <= 1):
        raise InputError(f"lam={lam!r}; expected a number in [0, 1]")
    return lam


def _checked_grid(certificate_grid: int | None) -> int | None:
    """``certificate_grid`` as an integer >= 2, or None (set from the pool later)."""
    if certificate_grid is not None and (not is_integer(certificate_grid) or certificate_grid < 2):
        raise InputError(f"certificate_grid={certificate_grid!r}; expected an integer >= 2")
    return None if certificate_grid is None else int(certificate_grid)


def _checked_split(certificate_split: float | None, certified: bool) -> float:
    """``certificate_split`` in (0, 1); None: :data:`CERTIFIED_SPLIT` if ``certified``,
    else 0.5."""
    if certificate_split is None:
        certificate_split = CERTIFIED_SPLIT if certified else 0.5
    if not (is_number(certificate_split) and 0 < certificate_split < 1):
        raise InputError(f"certificate_split={certificate_split!r}; expected a value in (0, 1)")
    return float(certificate_split)


def _arm_weights(
    certificate_weights: tuple[float, ...] | str | None, certified: bool
) -> tuple[float, ...] | str | None:
    """The per-arm certificate's horizon weights: ``"interval"`` gives None (the interval's
    own), None gives :data:`CERTIFIED_WEIGHTS` when ``certified``."""
    arm_weights = certificate_weights
    if arm_weights is None and certified:
        arm_weights = CERTIFIED_WEIGHTS
    if isinstance(arm_weights, str) and arm_weights == "interval":
        arm_weights = None
    elif isinstance(arm_weights, str) and arm_weights != "uniform":
        raise InputError(
            f"certificate_weights={certificate_weights!r}; expected 'uniform', 'interval', "
            "a tuple of weights or None"
        )
    elif arm_weights is not None and not isinstance(arm_weights, str):
        checked_weights(arm_weights)  # when the policy is made, not first when a run starts
    return arm_weights


def _centred_sums(sums: np.ndarray) -> tuple[float, float, float, float]:
    """Within-arm centred sums pooled over arms: ``S_ff``, ``S_fy``, ``S_yy`` (``nan`` when
    ``sums`` has no ``y^2`` column) and the residual degrees of freedom of the pooled slope."""
    cnt = sums[:, 4]
    count = np.maximum(cnt, 1.0)
    sff = float((sums[:, 2] - sums[:, 0] ** 2 / count).sum())
    sfy = float((sums[:, 3] - sums[:, 0] * sums[:, 1] / count).sum())
    syy = float((sums[:, 5] - sums[:, 1] ** 2 / count).sum()) if sums.shape[1] > 5 else np.nan
    dof = float(cnt.sum() - (cnt > 0).sum() - 1)
    return sff, sfy, syy, dof


def _out_of_sample_lambda(sums: np.ndarray) -> float:
    """Proxy weight for item factors learned online: the within-arm least-squares slope
    ``b`` of the scores revealed after the initial batch on the predictions they were drawn
    under, pooled over arms, shrunk by its sampling noise and clipped to [0, 1]; 0 before
    there are any.

    Those predictions were fixed before their cells were revealed, so the slope measures the
    proxy out of sample (the slope on the cells a proxy was fitted on is close to 1 even
    when its predictions for unseen cells are noise). With ``s`` the standard error of
    ``b``, the weight is ``b - s^2 / b`` when ``b > (1 + sqrt 2) s`` (:data:`_GAIN_T`) and
    exactly 0 otherwise: using ``lam = b`` changes the variance of ``Y - lam f`` by
    ``-(b_true^2 - s^2) Var f`` in expectation, a gain only when the slope stands out of its
    noise (beyond ``_GAIN_T``, the estimated gain exceeds its own standard error), so a proxy whose
    out-of-sample slope is indistinguishable from 0 gets weight 0 and PULSE's estimate is
    then exactly the plain mean (``_out_of_sample_ratio``). Uses only the past.

    Parameters
    ----------
    sums : ndarray of shape (n_arms, 5) or (n_arms, 6)
        Per arm: sums of f, y, f^2, f y, the number of cells and (optionally) y^2; without
        the ``y^2`` column the slope is not shrunk.
    """
    sff, sfy, syy, dof = _centred_sums(sums)
    if sff <= 1e-12:
        return 0.0
    b = sfy / sff
    if np.isfinite(syy):
        if dof < 1 or b <= 0:
            return 0.0
        s2 = max(syy - b * sfy, 0.0) / dof / sff  # squared standard error of b
        if b * b <= _GAIN_T * _GAIN_T * s2:
            return 0.0
        b -= s2 / b
    return float(np.clip(b, 0.0, 1.0))


def _out_of_sample_ratio(sums: np.ndarray, lam: float) -> float:
    """Variance of ``Y - lam f`` relative to that of ``Y``, measured on the scores revealed
    after the initial batch against the predictions they were drawn under (within arms,
    pooled; see :func:`_out_of_sample_lambda`): ``1 - (2 lam S_fy - lam^2 S_ff) / S_yy``,
    floored at 0.05. Exactly 1 at ``lam = 0`` or before there are any such cells, so a
    history-free round without the proxy is weighted as a plain sample of its size, and an
    arm whose every round had ``lam = 0`` has the plain mean of its cells as its estimate
    (inverse-variance weights of the Horvitz-Thompson rounds telescope to it). Past data
    only, so a weight built from it is fixed before the round's draw.
    """
    if lam == 0.0:
        return 1.0
    sff, sfy, syy, _ = _centred_sums(sums)
    if not syy > 1e-12:
        return 1.0
    return max(1.0 - (2.0 * lam * sfy - lam * lam * sff) / syy, 0.05)


def _revealed_lambda(state: SelectionState, f: np.ndarray, arm: int) -> float:
    """Proxy weight before an arm has corrections under the current predictions: the
    least-squares slope of its revealed scores on their predictions, clipped to [0, 1]
    (past data only, so still fixed before the draw; a useless proxy gets weight ~0)."""
    seen = state.observed[arm]
    y = state.values[arm, seen].astype(np.float64)
    p = f[arm, seen].astype(np.float64)
    if y.size < 2:
        return 0.0
    dp = p - p.mean()
    var = float(dp @ dp)
    if var <= 1e-12:
        return 0.0
    return float(np.clip(dp @ (y - y.mean()) / var, 0.0, 1.0))


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
