"""The selection loop (``docs/selection.md``, The loop) and its result object."""

from __future__ import annotations

import copy
import json
import math
import numbers
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import check_flag, check_seed, is_integer
from latentbench._repr import html_block
from latentbench.exceptions import InputError
from latentbench.select._base import DEFAULT_DELTA, Policy, UCBEBookkeeping
from latentbench.select._betting import BettingConfSeq
from latentbench.select._certify import certifies, certifies_differences, check_epsilon
from latentbench.select._policies import check_sizes
from latentbench.select._schedule import default_schedule
from latentbench.select._state import Observation, ProxyState, SelectionState
from latentbench.select.oracles import Oracle

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.select._proxy import LowRankProxy

__all__ = ["SelectionResult", "run_selection"]


@dataclass(eq=False)  # arrays: == by identity, not a ValueError
class SelectionResult:
    """Outcome of one selection run.

    Attributes
    ----------
    policy : str
        Policy name.
    best : int
        Recommended arm: the argmax of the policy's final estimates, before they are
        clipped to [0, 1] for ``estimates``.
    estimates : ndarray of shape (n_arms,)
        Final point estimates (for PULSE: the average of per-round DR estimates), clipped to
        [0, 1], the range of a mean score (``best`` is the argmax before clipping).
    lower, upper : ndarray of shape (n_arms,) or None
        Simultaneous anytime-valid bounds (None for policies without intervals).
    n_observed : ndarray of shape (n_arms,)
        Revealed cells per arm (``T_i``).
    evaluations_init : int
        Cells revealed by the shared initial batch (``n_arms * init_batch``).
    evaluations_post_init : int
        Cells revealed after it (the paper's budget convention).
    rounds : int
        Post-initialisation rounds.
    trace_evaluations : ndarray of shape (rounds + 1,)
        Post-init cells spent after each round (0 = after the initial batch).
    trace_best : ndarray of shape (rounds + 1,)
        Recommended arm after each round.
    trace_arm, trace_arm_lower, trace_arm_upper : ndarray of shape (rounds + 1,) or None
        The arm pulled in each round and its bounds after it (only the pulled arm's interval
        changes in a round), entry 0 standing for the initial batch (arm -1, NaN bounds);
        with the initial bounds they give :meth:`interval_trajectories` (NaN bounds for a
        policy without intervals).
    initial_lower, initial_upper : ndarray of shape (n_arms,) or None
        Every arm's bounds after the initial batch.
    stopped : str
        ``"budget"``, ``"confidence"`` (fixed-confidence stop), ``"exhausted"`` (every row
        fully revealed) or ``"policy"`` (the policy chose no arm while cells were left: its
        own rule, :meth:`Policy.choose <latentbench.select.Policy.choose>` returning None).
    model_ids : list of str or None
    seconds : float
        Wall-clock time of the run (initial batch, prewarm, loop).
    proxy_seconds : float
        Time spent in proxy fits (prewarm and refits).
    n_refits : int
    covered : bool or None
        With known true means: whether every arm's interval covered its mean after every
        round (simultaneous anytime coverage).
    params : dict
    certificate_lower, certificate_upper : ndarray of shape (n_arms,) or None
        The one-sided bounds that certify the best (policies with betting intervals; see
        ``BettingConfSeq.certificate``): the best's lower bound above every other arm's upper
        bound (minus :attr:`epsilon`; fully revealed rivals at or below a fully revealed best
        left out, :mod:`latentbench.select._certify`) certifies it with error probability
        ``delta``. Not simultaneous intervals.
    certified_after : int or None
        Post-init cells spent when the recommended arm was first certified (by that rule,
        checked after the initial batch and after every round); None if it never was, or
        without intervals. The certificate holds at any stopping time, so stopping there
        would have returned a certified best.
        With ``stop="budget"`` the pulls are the policy's (UCB-E's for PULSE), not LUCB's:
        ``stop="confidence"`` usually certifies with fewer cells.
    certified_arm : int or None
        The arm certified then (the recommendation at that round).
    difference_lower : ndarray of shape (n_arms,) or None
        With PULSE's paired certificate (``Pulse(certificate="paired")`` and a shared order):
        lower bounds on ``mu_best - mu_j`` for every arm ``j`` (``inf`` at ``best``); the best
        is certified when all are above 0 (``-epsilon``), and ``certified`` uses them. None
        otherwise.
    final_certified : bool or None
        The run's own verdict on the final recommendation (the rule its stop uses, with the
        revealed cells' exact means); :attr:`certified` returns it when set.
    estimates_unclipped : ndarray of shape (n_arms,) or None
        The policy's final estimates before clipping (for PULSE the unbiased doubly robust
        mean, which can leave [0, 1] early in a run); kept for the record as
        ``estimate_unclipped`` per arm in :meth:`to_dict`. ``estimates`` is what is printed,
        inside the printed interval.
    """

    policy: str
    best: int
    estimates: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    n_observed: np.ndarray
    evaluations_init: int
    evaluations_post_init: int
    rounds: int
    trace_evaluations: np.ndarray
    trace_best: np.ndarray
    stopped: str
    model_ids: list[str] | None = None
    seconds: float = 0.0
    proxy_seconds: float = 0.0
    n_refits: int = 0
    covered: bool | None = None
    params: dict[str, Any] = field(default_factory=dict)
    trace_arm: np.ndarray | None = None
    trace_arm_lower: np.ndarray | None = None
    trace_arm_upper: np.ndarray | None = None
    initial_lower: np.ndarray | None = None
    initial_upper: np.ndarray | None = None
    certificate_lower: np.ndarray | None = None
    certificate_upper: np.ndarray | None = None
    certified_after: int | None = None
    certified_arm: int | None = None
    difference_lower: np.ndarray | None = None
    final_certified: bool | None = None
    estimates_unclipped: np.ndarray | None = None

    def __repr__(self) -> str:
        """Short: the policy, the pool, the recommendation with its estimate (and interval),
        the certificate and the cells spent (the arrays: :meth:`to_dict`)."""
        best = self.best
        interval = (
            f" [{float(self.lower[best]):.3f}, {float(self.upper[best]):.3f}]"
            if self.lower is not None and self.upper is not None
            else ""
        )
        certified = {True: "certified", False: "not certified", None: "no certificate"}
        return (
            f"SelectionResult(policy {self.policy!r}, {len(self.estimates):,} arms: best "
            f"{self.best_id!r} at {float(self.estimates[best]):.3f}{interval}, "
            f"{certified[self.certified]}; {self.evaluations_total:,} evaluations "
            f"({self.evaluations_init:,} initial), {self.rounds:,} rounds, stopped "
            f"{self.stopped!r})"
        )

    def interval_trajectories(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Simultaneous bounds of the chosen arms after every round.

        Only the pulled arm's interval changes in a round, so the run records the pulled arm
        and its new bounds (``trace_arm``, ``trace_arm_lower``, ``trace_arm_upper``) plus every
        arm's bounds after the initial batch; this rebuilds the dense trajectories.

        Parameters
        ----------
        arms : array-like of int, shape (k,)

        Returns
        -------
        lower, upper : ndarray of shape (rounds + 1, k)
            NaN when the policy has no intervals.
        """
        trace = self.to_dict(trace=True)["trace"]
        if "arm" not in trace:  # no intervals recorded: NaN, one row per round
            shape = (len(self.trace_evaluations), np.asarray(arms).size)
            return np.full(shape, np.nan), np.full(shape, np.nan)
        return interval_trajectories(trace, arms)

    @property
    def epsilon(self) -> float:
        """The certificate's tolerance (``run_selection``'s ``epsilon``; 0: the best itself)."""
        return float(self.params.get("epsilon", 0.0) or 0.0)

    @property
    def certified(self) -> bool | None:
        """Whether the best's lower bound exceeds every other arm's upper bound minus
        :attr:`epsilon` (None without intervals): the recommendation is then within
        ``epsilon`` of the true best with probability at least ``1 - delta`` (the true best
        itself at ``epsilon = 0``), whatever the stopping rule."""
        if self.lower is None or self.upper is None:
            return None
        if self.final_certified is not None:  # the run's verdict (from its cells)
            return self.final_certified
        eps = self.epsilon
        n_items = self.params.get("n_items")
        # a fully revealed row's estimate is its mean (every built-in policy)
        kw: dict[str, Any] = {
            "epsilon": eps,
            "exact": None if n_items is None else self.n_observed >= int(n_items),
            "means": self.estimates,
        }
        if self.difference_lower is not None:
            return certifies_differences(self.difference_lower, self.best, **kw)
        lower, upper = self.lower, self.upper
        if self.certificate_lower is not None and self.certificate_upper is not None:
            lower, upper = self.certificate_lower, self.certificate_upper
        return certifies(lower, upper, self.best, **kw)

    @property
    def evaluations_total(self) -> int:
        """All revealed cells, initial batch included (what a user pays)."""
        return self.evaluations_init + self.evaluations_post_init

    @property
    def best_id(self) -> str | int:
        """The recommended model's id (its index ``best`` when the run has no ``model_ids``)."""
        return self._id(self.best)

    @property
    def certified_id(self) -> str | int | None:
        """Id of the arm first certified (``certified_arm``), or None."""
        return None if self.certified_arm is None else self._id(self.certified_arm)

    def _id(self, arm: int) -> str | int:
        return self.model_ids[arm] if self.model_ids else arm

    def best_at(self, evaluations: np.ndarray) -> np.ndarray:
        """Recommended arm once ``evaluations`` post-init cells were spent.

        Parameters
        ----------
        evaluations : array-like of int, shape (G,)

        Returns
        -------
        ndarray of int, shape (G,)
            The recommendation of the last round whose spend is ``<= evaluations`` (after the
            end of the run: the final recommendation).
        """
        pos = np.searchsorted(self.trace_evaluations, np.asarray(evaluations), side="right") - 1
        return self.trace_best[np.clip(pos, 0, None)]

    def certificate_crossed(self) -> dict[str, list[float]]:
        """``{model: [certificate_lower, certificate_upper]}`` of the arms whose certificate
        bounds cross (the lower above the upper: one of the two one-sided statements is
        false, an event the certificate allows with probability at most ``delta``).

        Returns
        -------
        dict of str to list of float
            Empty when no bounds cross or the run has no certificate bounds.
        """
        lo, hi = self.certificate_lower, self.certificate_upper
        if lo is None or hi is None:
            return {}
        return {
            str(self._id(int(i))): [float(lo[i]), float(hi[i])]
            for i in np.flatnonzero(np.asarray(hi) < np.asarray(lo) - 1e-12)
        }

    def to_dict(self, *, trace: bool = True) -> dict[str, Any]:
        """JSON-ready dictionary.

        Parameters
        ----------
        trace : bool, default True
            Include the per-round ``trace`` (cells spent, recommended arm and, with intervals,
            the pulled arm's bounds: what :func:`~latentbench.select.interval_trajectories`
            reads).

        Returns
        -------
        dict
            ``policy``, ``best_index`` / ``best_model``, the per-arm table ``arms``, the
            evaluations spent, ``certified``, ``params``, ... (the content of
            ``selection.json``).
        """
        trace = check_flag(trace, "trace")  # "no" included the trace
        ids = self.model_ids or [str(i) for i in range(len(self.estimates))]
        arms = []
        for i, name in enumerate(ids):
            row = {
                "model": name,
                "estimate": float(self.estimates[i]),
                "n_observed": int(self.n_observed[i]),
            }
            if self.lower is not None and self.upper is not None:
                row["lower"], row["upper"] = float(self.lower[i]), float(self.upper[i])
            if self.certificate_lower is not None and self.certificate_upper is not None:
                row["certificate_lower"] = float(self.certificate_lower[i])
                row["certificate_upper"] = float(self.certificate_upper[i])
            if self.difference_lower is not None and i != self.best:
                row["difference_lower"] = float(self.difference_lower[i])
            if self.estimates_unclipped is not None:  # the record's raw value, labelled
                row["estimate_unclipped"] = float(self.estimates_unclipped[i])
            arms.append(row)
        out: dict[str, Any] = {
            "policy": self.policy,
            "best_model": str(self.best_id),
            "best_index": int(self.best),
            "evaluations_post_init": int(self.evaluations_post_init),
            "evaluations_init": int(self.evaluations_init),
            "evaluations_total": int(self.evaluations_total),
            "rounds": int(self.rounds),
            "stopped": self.stopped,
            "certified": self.certified,
            "certified_after_post_init": self.certified_after,
            "certified_model": None if self.certified_id is None else str(self.certified_id),
            "seconds": self.seconds,
            "proxy_seconds": self.proxy_seconds,
            "n_refits": self.n_refits,
            "params": self.params,
            "arms": arms,
        }
        if trace:
            out["trace"] = {
                "evaluations_post_init": self.trace_evaluations.tolist(),
                "best_index": self.trace_best.tolist(),
            }
            if self.trace_arm is not None and self.initial_lower is not None:
                out["trace"].update(
                    arm=self.trace_arm.tolist(),
                    arm_lower=_floats(self.trace_arm_lower),
                    arm_upper=_floats(self.trace_arm_upper),
                    initial_lower=_floats(self.initial_lower),
                    initial_upper=_floats(self.initial_upper),
                )
        return out

    def to_json(self, path: str | Path | None = None, *, trace: bool = True) -> str:
        """Serialise to JSON; also write it to ``path`` when given.

        Parameters
        ----------
        path : path-like, optional
            Also write the text there (refused, before writing, where it cannot be written).
        trace : bool, default True
            As in :meth:`to_dict`.

        Returns
        -------
        str
            The JSON text.
        """
        text = json.dumps(self.to_dict(trace=trace), indent=1)
        if path is not None:
            from latentbench.io import check_destination
            from latentbench.io._outputs import replace_whole

            check_destination(Path(path), "file", flag="path=")  # a folder, no parent: said
            replace_whole(Path(path), text)  # whole or not at all
        return text

    def _repr_html_(self) -> str:
        """A notebook's view: the one-line repr, then the models by estimate (best first)."""
        return html_block(
            repr(self),
            lambda: self.to_frame().sort_values("estimate", ascending=False, kind="stable"),
            whole=".to_frame()",
            row_header=True,
        )

    def to_frame(self) -> pd.DataFrame:
        """Per-arm table (pandas DataFrame): model, estimate, lower, upper, n_observed.

        Returns
        -------
        DataFrame of shape (n_models, n_columns)
        """
        import pandas as pd

        return pd.DataFrame(self.to_dict(trace=False)["arms"])


def _checked(oracle: Oracle, arm: int, items: np.ndarray) -> np.ndarray:
    """Scores of one batch; a missing (NaN) score is an error, never silently 0."""
    scores = np.asarray(oracle.evaluate(arm, items), dtype=np.float64)
    if np.isnan(scores).any():
        raise InputError(
            f"model {arm}: the oracle returned {int(np.isnan(scores).sum())} missing score(s); "
            "a failed evaluation must be retried, stopped on, or scored explicitly (e.g. "
            "on_error='zero' in a live run, MatrixOracle(missing='zero') in a replay)"
        )
    return scores


def _certificate(policy: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The policy's best-arm certificate bounds (its ``certificate()``), or None."""
    method = getattr(policy, "certificate", None)
    out = method() if callable(method) else None
    return None if out is None else (np.asarray(out[0]), np.asarray(out[1]))


def _leader_certified(
    policy: Any,
    intervals: tuple[np.ndarray, np.ndarray],
    leader: int,
    epsilon: float,
    state: SelectionState,
) -> bool:
    """Whether ``leader`` is certified within ``epsilon`` of the best: by the policy's own rule
    when it has one (``certifies``, e.g. PULSE's paired certificate), else its lower bound
    above every other arm's upper bound minus ``epsilon`` (certificate bounds when the policy
    has them, else its intervals; fully revealed rivals at or below a fully revealed leader,
    by the means of their cells, need no bound: :func:`latentbench.select._certify.certifies`)."""
    rule = getattr(policy, "certifies", None)
    if callable(rule):
        return bool(rule(leader, epsilon=epsilon))
    lo, hi = _certificate(policy) or intervals
    exact = state.n_obs >= state.n_items
    means = state.y_sum / state.n_items
    return certifies(
        np.asarray(lo), np.asarray(hi), leader, epsilon=epsilon, exact=exact, means=means
    )


def _floats(values: np.ndarray | None) -> list[float | None]:
    """JSON-safe list (NaN -> None)."""
    if values is None:
        return []
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(values, dtype=float)]


def interval_trajectories(trace: dict[str, Any], arms: Any) -> tuple[np.ndarray, np.ndarray]:
    """Dense per-round bounds of ``arms`` from a compact trace (see ``SelectionResult``).

    Parameters
    ----------
    trace : dict
        The ``trace`` of ``SelectionResult.to_dict()`` / ``selection.json``, with ``arm``,
        ``arm_lower``, ``arm_upper``, ``initial_lower``, ``initial_upper``.
    arms : array-like of int, shape (k,)

    Returns
    -------
    lower, upper : ndarray of shape (rounds + 1, k)
    """
    arms = np.asarray(arms, dtype=np.int64)
    pulled = np.asarray(trace.get("arm", []), dtype=np.int64)
    n_rounds = pulled.size
    out = []
    for key in ("lower", "upper"):
        start = np.asarray(trace.get(f"initial_{key}", []), dtype=float)
        step = np.asarray(trace.get(f"arm_{key}", []), dtype=float)
        dense = np.full((n_rounds, arms.size), np.nan)
        if start.size == 0 or n_rounds == 0:
            out.append(dense)
            continue
        for col, arm in enumerate(arms):
            hit = pulled == arm
            hit[0] = True  # round 0: the initial bounds
            values = np.where(pulled == arm, step, np.nan)
            values[0] = start[arm]
            last = np.maximum.accumulate(np.where(hit, np.arange(n_rounds), 0))
            dense[:, col] = values[last]
        out.append(dense)
    return out[0], out[1]


class _CellCertificate:
    """A certificate for a policy without intervals: betting confidence sequences on the
    revealed cells of each arm (no proxy), fed with every batch.

    Valid when the policy reveals uniform cells without replacement given the past (the
    default ``select_items`` of :class:`~latentbench.select._base.UCBEBookkeeping`): each
    arm's cells are then a uniform sample of its row whatever the arm choices were.
    """

    def __init__(self, state: SelectionState, delta: float) -> None:
        self.delta = float(delta)
        self._cs = BettingConfSeq(state.n_arms, state.n_items, self.delta)
        zero = np.zeros(state.n_items)
        for arm in range(state.n_arms):
            items = state.order[arm, : int(state.n_obs[arm])]
            self._cs.update(arm, state.values[arm, items], zero[: items.size], 0, 0, 0, 0)

    @classmethod
    def for_policy(cls, policy: Policy, state: SelectionState, delta: float) -> _CellCertificate:
        if not reveals_uniform_cells(policy):
            raise InputError(
                f"stop='confidence' (the default without a budget: stop when the best is "
                f"certified) needs a policy with intervals or one that reveals uniform cells; "
                f"{policy.name!r} has no intervals and chooses its items: give a budget, or "
                "stop='budget' to evaluate every cell"
            )
        return cls(state, delta)

    def update(self, obs: Observation) -> None:
        y = np.asarray(obs.scores, dtype=np.float64)
        self._cs.update(obs.arm, y, np.zeros(y.size), 0, 0, 0, 0)

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        return self._cs.interval()

    def certificate(self) -> tuple[np.ndarray, np.ndarray]:
        return self._cs.certificate()


@dataclass(frozen=True)
class _RunOptions:
    """``run_selection``'s options with their defaults filled in and checked."""

    budget: int
    stop: str
    batch_size: int
    init_batch: int
    item_order: str
    epsilon: float


def _run_options(
    policy: Policy,
    proxy: Any,
    m: int,
    n: int,
    budget: int | None,
    batch_size: int | None,
    init_batch: int | None,
    item_order: str | None,
    stop: str | None,
    epsilon: float,
) -> _RunOptions:
    """The run's options: defaults from the pool (:func:`default_schedule`), each checked."""
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 0
    ):
        raise InputError(f"budget={budget!r}; expected a nonnegative integer or None")
    if stop is None:
        stop = "confidence" if budget is None else "budget"
    schedule = default_schedule(max(m, 1), max(n, 1), budget)
    if batch_size is None:
        batch_size = schedule[0]
    if not is_integer(batch_size) or batch_size < 1:  # "2" or 2.5: named, not a TypeError
        raise InputError(f"batch_size={batch_size!r}; expected a positive integer")
    if init_batch is None:
        init_batch = schedule[1]
    # a proxy that learns item factors from the candidates' own cells (history-free) needs an
    # order per arm: under one shared order the other arms' cells show which items an arm
    # draws next, so its draws are not uniform given its predictions (biased estimates)
    learns_items = policy.needs_proxy and bool(getattr(proxy, "learns_items", False))
    if item_order is None:
        default = str(getattr(policy, "default_item_order", "independent"))
        item_order = "independent" if learns_items else default
    if item_order not in ("independent", "shared"):
        raise InputError(f"item_order={item_order!r}; expected 'independent' or 'shared'")
    if item_order == "shared" and learns_items:
        raise InputError(
            "item_order='shared' with a proxy that learns its item factors from the "
            "candidates' cells (history-free); expected item_order='independent': under one "
            "shared order the other arms' cells show which items an arm draws next, so its "
            "draws are not uniform given its predictions and the estimates are biased"
        )
    if not is_integer(init_batch) or not 1 <= init_batch <= n:
        raise InputError(f"init_batch={init_batch!r}; expected an integer in 1..{n}")
    check_sizes(policy, m, n)  # before any cell is evaluated
    if stop not in ("budget", "confidence"):
        raise InputError(f"stop={stop!r}; expected 'budget' or 'confidence'")
    return _RunOptions(
        budget=m * n if budget is None else int(budget),
        stop=stop,
        batch_size=int(batch_size),
        init_batch=int(init_batch),
        item_order=item_order,
        epsilon=check_epsilon(epsilon),
    )


def _prewarmed_proxy(
    policy: Policy, proxy: Any, state: SelectionState, m: int, n: int
) -> ProxyState | None:
    """The proxy's state, fitted on the initial cells, for a policy that uses one."""
    if not policy.needs_proxy:
        return None
    if proxy is None:
        raise InputError(f"policy {policy.name!r} needs a fitted proxy (history)")
    learns = bool(getattr(proxy, "learns_items", False))
    if learns:  # history-free: learn items from the batch
        proxy = copy.copy(proxy)  # the caller's object is left unfitted
        proxy.fit(state.values)
    if proxy.n_items != n:
        raise InputError(f"proxy has {proxy.n_items} items; the oracle has {n}")
    px = ProxyState(proxy, m)
    # prewarm on the initial cells (history-free: the fit just made, not a second one)
    px.refit(state.values, fitted=learns)
    return px


class _Trace:
    """What a run records round by round: cells spent, leader, pulled arm and its interval,
    and whether every interval held the known means (replay)."""

    def __init__(
        self,
        leader: int,
        first: tuple[np.ndarray, np.ndarray] | None,
        true_means: np.ndarray | None,
    ) -> None:
        self.spent = [0]
        self.best = [leader]
        self.arm = [-1]
        self.lower: list[float] = [np.nan]
        self.upper: list[float] = [np.nan]
        # copies taken now: a policy may hand out its live arrays
        self.initial_lower = None if first is None else np.array(first[0], dtype=float)
        self.initial_upper = None if first is None else np.array(first[1], dtype=float)
        self.mu = None if true_means is None else np.asarray(true_means, dtype=np.float64)
        self.covered: bool | None = None
        if self.mu is not None and first is not None:
            inside = (first[0] <= self.mu + 1e-12) & (self.mu <= first[1] + 1e-12)
            self.covered = bool(np.all(inside))

    def round(
        self, spent: int, leader: int, arm: int, now: tuple[np.ndarray, np.ndarray] | None
    ) -> None:
        self.spent.append(spent)
        self.best.append(leader)
        self.arm.append(arm)
        if now is None:  # a policy without intervals: NaN bounds, one per round as documented
            self.lower.append(np.nan)
            self.upper.append(np.nan)
            return
        lo, hi = float(now[0][arm]), float(now[1][arm])
        self.lower.append(lo)
        self.upper.append(hi)
        if self.covered and self.mu is not None:
            self.covered = bool(lo <= self.mu[arm] + 1e-12 and self.mu[arm] <= hi + 1e-12)


def _refuse_non_objects(oracle: Any, policy: Any) -> None:
    """Refuse a policy that is a name (or no policy) and an oracle that is an array (or no
    oracle), saying what makes one, before anything reads their attributes."""
    if isinstance(policy, str):
        raise InputError(
            f"policy={policy!r}: a name; expected a policy object: make_policy({policy!r}) "
            "(or UCBE(), Pulse(), ...); replay() takes the name"
        )
    if not isinstance(policy, Policy):
        raise InputError(
            f"policy: a {type(policy).__name__}; expected a policy object: make_policy(NAME) "
            "(or UCBE(), Pulse(), ...)"
        )
    if not isinstance(oracle, Oracle):
        raise InputError(
            f"oracle: a {type(oracle).__name__}; expected an oracle (n_models, n_items, "
            "evaluate): MatrixOracle(scores) replays a matrix of scores"
        )


def run_selection(
    oracle: Oracle,
    policy: Policy,
    *,
    budget: int | None = None,
    batch_size: int | None = None,
    init_batch: int | None = None,
    item_order: str | None = None,
    proxy: LowRankProxy | None = None,
    random_state: int | np.random.Generator | None = None,
    stop: str | None = None,
    delta: float | None = None,
    epsilon: float = 0.0,
    true_means: np.ndarray | None = None,
    model_ids: list[str] | None = None,
) -> SelectionResult:
    """Run one best-model identification (``docs/selection.md``).

    Every arm first gets ``init_batch`` uniform cells (not charged to ``budget``); the proxy
    (when the policy uses one) is prewarmed on those cells; then each round the policy picks
    an arm and ``min(batch_size, remaining, budget - spent)`` of its unrevealed cells are
    revealed. Without a budget the run stops when the best is certified.

    Parameters
    ----------
    oracle : Oracle
        Source of scores (``n_models`` arms, ``n_items`` items).
    policy : Policy
        A fresh policy object (it keeps per-run state).
    budget : int, optional
        Post-initialisation cells. Without one, every unrevealed cell may be spent and the
        run stops at the first certificate (``stop="confidence"``).
    batch_size, init_batch : int, optional
        ``B``, cells per round, and cells per arm in the initial batch (>= 1); by default
        from :func:`~latentbench.select.default_schedule` (the pool's size and the budget;
        the same initial batch for every policy).
    item_order : {"independent", "shared"}, optional
        Reveal order of the cells: a random permutation per arm, or one permutation shared by
        every arm (common random numbers). By default the policy's ``default_item_order``
        ("shared" for PULSE, "independent" for the other policies, as in the paper), except
        with a proxy that learns its item factors from the candidates' cells (history-free,
        :class:`~latentbench.select.OnlineProxy`): there only "independent" is valid, as the
        other arms' cells would show which items an arm draws next under a shared order.
    proxy : LowRankProxy, optional
        Fitted proxy, required by PULSE and Naive-Pooling.
    random_state : int or Generator, optional
        Seeds the initial batch and every uniform draw (the same seed gives the same initial
        cells for every policy).
    stop : {"budget", "confidence"}, optional
        ``confidence`` also stops once the leader's lower bound exceeds every other arm's
        upper bound. Default: ``"confidence"`` without a budget, ``"budget"`` with one. A
        policy without intervals that reveals uniform cells (UCB-E, uniform,
        Naive-Pooling) is certified by a betting confidence sequence on its revealed
        cells (:class:`~latentbench.select._betting.BettingConfSeq`, valid because its
        cells are uniform draws without replacement given the past); its bounds are then
        the result's ``lower`` / ``upper``.
    delta : float, optional
        Error probability of that certificate, for a policy without intervals (default
        0.05). A policy with intervals certifies at its own ``delta`` (``Pulse()``: 0.05);
        a different ``delta`` here is an error (set the policy's: ``Pulse(delta=0.01)``),
        never ignored. So is a ``delta`` other than 0.05 for a run that builds no
        certificate (a policy without intervals and ``stop="budget"``), as ``epsilon`` is.
    epsilon : float, default 0.0
        Tolerance of the certificate, in score units: the recommendation is certified once
        its lower bound exceeds every other arm's upper bound minus ``epsilon``, so that it
        is within ``epsilon`` of the true best's mean with probability at least
        ``1 - delta`` (an epsilon-best arm). 0 certifies the best itself; two models whose
        means are equal then cannot be told apart before both are fully evaluated, where
        any ``epsilon > 0`` stops once the bounds are ``epsilon`` apart
        (``docs/selection.md``, "Exact ties, and certifying a model within `epsilon` of the
        best").
    true_means : ndarray of shape (n_arms,), optional
        Known means (replay): records whether the intervals always covered them.
    model_ids : list of str, optional

    Returns
    -------
    SelectionResult

    Raises
    ------
    InputError
        An option out of range (``budget``, ``batch_size``, ``init_batch``, ``delta``,
        ``stop``, ...), a policy or oracle that is not an object of those kinds, or
        ``model_ids`` / ``true_means`` of the wrong length.
    """
    start = time.perf_counter()
    _refuse_non_objects(oracle, policy)
    m, n = int(oracle.n_models), int(oracle.n_items)
    for value in (delta, getattr(policy, "delta", None)):
        check_select_delta(value)
    _refuse_second_delta(policy, delta)
    opts = _run_options(
        policy, proxy, m, n, budget, batch_size, init_batch, item_order, stop, epsilon
    )
    if model_ids is not None and len(model_ids) != m:
        raise InputError(f"model_ids has {len(model_ids)} entries; expected {m}")
    if true_means is not None:
        means = np.asarray(true_means, dtype=np.float64)
        if means.shape != (m,) or not np.isfinite(means).all():
            raise InputError(
                f"true_means of shape {means.shape}"
                + ("" if means.shape != (m,) else " with a missing or infinite value")
                + f"; expected one finite mean per arm, shape ({m},)"
            )
    budget, stop, batch_size, epsilon = opts.budget, opts.stop, opts.batch_size, opts.epsilon
    numpy_state = (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)
    if random_state is not None and not isinstance(random_state, numpy_state):
        random_state = check_seed(random_state, "random_state")  # 'x', -1: named, not numpy's
    rng = np.random.default_rng(random_state)
    state = SelectionState(m, n, rng, shared_order=opts.item_order == "shared")
    _initial_batch(oracle, state, m, opts.init_batch)
    left = int(state.remaining().sum())
    state.planned_rounds = max(1, math.ceil(min(budget, left) / batch_size))
    px = _prewarmed_proxy(policy, proxy, state, m, n)
    policy.initialize(state, px)
    monitor, first = _certifier(policy, state, stop, delta, epsilon)
    judge = monitor or policy
    trace = _Trace(int(np.argmax(policy.estimates())), first, true_means)
    stopped, certified_after, certified_arm = _rounds(
        oracle, policy, monitor, judge, state, trace, first, budget, batch_size, stop, epsilon
    )
    bounds = policy.intervals() if monitor is None else monitor.intervals()
    cert = None if bounds is None else _certificate(judge)
    raw = policy.estimates()
    best = int(np.argmax(raw))  # the policy's recommendation, from its own estimates
    # reported in the score range, as the intervals are: a doubly robust mean can leave
    # [0, 1] early in a run (-0.012 printed beside [0.0006, 0.916])
    est = np.clip(raw, 0.0, 1.0)
    lead = getattr(policy, "difference_lower", None)
    difference = lead(best) if monitor is None and callable(lead) else None
    final = None
    if bounds is not None:
        final = _leader_certified(judge, bounds, best, epsilon, state)
        # reported, an interval holds its estimate (widened to it: still valid)
        bounds = (np.minimum(bounds[0], est), np.maximum(bounds[1], est))
    result = SelectionResult(
        policy=policy.name,
        best=best,
        estimates=est,
        lower=None if bounds is None else bounds[0],
        upper=None if bounds is None else bounds[1],
        n_observed=state.n_obs.copy(),
        evaluations_init=int(state.spent_init),
        evaluations_post_init=int(state.spent),
        rounds=int(state.rounds),
        trace_evaluations=np.asarray(trace.spent, dtype=np.int64),
        trace_best=np.asarray(trace.best, dtype=np.int64),
        stopped=stopped,
        model_ids=model_ids,
        seconds=time.perf_counter() - start,
        proxy_seconds=0.0 if px is None else px.refit_seconds,
        n_refits=0 if px is None else max(px.n_refits - 1, 0),
        covered=trace.covered,
        trace_arm=np.asarray(trace.arm, dtype=np.int64),
        trace_arm_lower=np.asarray(trace.lower, dtype=float),
        trace_arm_upper=np.asarray(trace.upper, dtype=float),
        initial_lower=trace.initial_lower,
        initial_upper=trace.initial_upper,
        certificate_lower=None if cert is None else cert[0],
        certificate_upper=None if cert is None else cert[1],
        certified_after=certified_after,
        certified_arm=certified_arm,
        difference_lower=difference,
        final_certified=final,
        estimates_unclipped=np.asarray(raw, dtype=np.float64).copy(),
        params={
            "budget": int(budget),
            "n_items": n,
            "batch_size": int(batch_size),
            "init_batch": int(opts.init_batch),
            "item_order": opts.item_order,
            "stop": stop,
            "delta": getattr(policy, "delta", None) if monitor is None else monitor.delta,
            "epsilon": epsilon,
            "certificate": None if monitor is None else "betting on revealed cells",
            "a": getattr(policy, "a", None),
            "init_estimate": getattr(policy, "init_estimate_used", None),
        },
    )
    crossed = result.certificate_crossed()
    if crossed:  # said by replay and live runs (crossed_note), recorded here
        result.params["certificate_crossed"] = crossed
    return result


SELECT_DELTA_MAX = 0.5
"""Largest ``delta`` of a selection: a certificate that names the best model with probability
under 1/2 says less than a coin flip between two, and its one-sided bounds cross routinely
(``certificate_upper`` below ``certificate_lower`` on the leader at 0.8 and 0.999)."""


def check_select_delta(delta: Any) -> None:
    """Refuse a selection ``delta`` outside (0, 0.5] (None: the default)."""
    if delta is None:
        return
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < float(delta) < 1:
        raise InputError(f"delta={delta!r}; expected a value in (0, {SELECT_DELTA_MAX:g}]")
    if float(delta) > SELECT_DELTA_MAX:
        raise InputError(
            f"delta={delta!r}; expected a value in (0, {SELECT_DELTA_MAX:g}]: the certificate's "
            f"error probability (above {SELECT_DELTA_MAX:g} a certified best is right less often "
            "than a coin flip between two models, and its bounds cross)"
        )


def crossed_note(result: SelectionResult) -> str | None:
    """One line on the models whose certificate bounds cross (None: none do)."""
    crossed = result.params.get("certificate_crossed") or {}
    if not crossed:
        return None
    shown = ", ".join(
        f"{name} (lower {lo:.4f} > upper {hi:.4f})" for name, (lo, hi) in list(crossed.items())[:3]
    )
    more = f" and {len(crossed) - 3} more" if len(crossed) > 3 else ""
    return (
        f"the certificate's one-sided bounds cross on {shown}{more}: at least one of the "
        "statements the certificate rests on is false there (an event of probability <= "
        f"delta = {result.params.get('delta')}); recorded in params['certificate_crossed']"
    )


def _initial_batch(oracle: Oracle, state: SelectionState, m: int, init_batch: int) -> None:
    """Reveal ``init_batch`` uniform cells of every arm (not charged to the budget)."""
    for arm in range(m):
        items = state.uniform_items(arm, init_batch)
        state.record(Observation(arm, items, _checked(oracle, arm, items)), initial=True)


def _refuse_second_delta(policy: Policy, delta: float | None) -> None:
    """A ``delta`` given to the run that differs from the one the policy certifies at (a
    policy with intervals uses its own) is refused: it would be ignored."""
    own = getattr(policy, "delta", None)
    with_intervals = getattr(policy, "ci", "none") != "none"  # (UCB-E keeps a delta it ignores)
    if delta is not None and with_intervals and own is not None and float(delta) != float(own):
        raise InputError(
            f"delta={delta:g}, but {type(policy).__name__} certifies at its own delta={own:g} "
            "(its intervals are built at it); expected the policy's delta, e.g. "
            f"{type(policy).__name__}(delta={delta:g}), and no delta= here"
        )


def _certifier(
    policy: Policy, state: SelectionState, stop: str, delta: float | None, epsilon: float
) -> tuple[_CellCertificate | None, tuple[np.ndarray, np.ndarray] | None]:
    """The betting certificate on revealed cells, for a run that stops at a certificate with
    a policy without intervals (else None), and the first intervals (None: no certificate,
    which ``epsilon > 0`` needs)."""
    monitor = None
    if stop == "confidence" and policy.intervals() is None:
        monitor = _CellCertificate.for_policy(policy, state, 0.05 if delta is None else delta)
    first = policy.intervals() if monitor is None else monitor.intervals()
    if epsilon > 0 and first is None:
        raise InputError(
            f"epsilon={epsilon:g} applies to a certificate, and {policy.name!r} has none with "
            f"stop={stop!r}; expected stop='confidence' (a betting certificate on its revealed "
            "cells) or epsilon=0"
        )
    if delta is not None and float(delta) != DEFAULT_DELTA and first is None:
        # nothing reads it: the run was the default's (select replay --delta 0.3, no word)
        raise InputError(
            f"delta={delta:g} applies to a certificate, and {policy.name!r} has none with "
            f"stop={stop!r}; expected stop='confidence' (a betting certificate on its revealed "
            "cells) or no delta="
        )
    return monitor, first


def reveals_uniform_cells(policy: Policy) -> bool:
    """Whether ``policy`` reveals uniform cells without replacement given the past (the
    default ``select_items`` of :class:`~latentbench.select._base.UCBEBookkeeping`), so that
    a betting certificate on its revealed cells is valid."""
    return isinstance(policy, UCBEBookkeeping) and (
        type(policy).select_items is UCBEBookkeeping.select_items
    )


def certifies_at_confidence(policy: Policy) -> bool:
    """Whether a run of ``policy`` can stop at a certificate (``stop="confidence"``): by its
    own intervals (``ci`` other than ``"none"``) or by the betting certificate on its revealed
    cells (:func:`reveals_uniform_cells`). Known before any cell is revealed; without it
    :func:`run_selection` refuses a confidence stop after the initial batch."""
    return getattr(policy, "ci", "none") != "none" or reveals_uniform_cells(policy)


def reads_delta(policy: Policy, stop: str) -> bool:
    """Whether a run of ``policy`` stopped by ``stop`` builds a certificate that a run's
    ``delta`` sets: the policy's intervals (``ci`` other than ``"none"``), or at a confidence
    stop the betting certificate on its revealed cells. Without one :func:`run_selection`
    refuses a ``delta`` other than the default (it would be ignored)."""
    return stop == "confidence" or getattr(policy, "ci", "none") != "none"


def _rounds(
    oracle: Oracle,
    policy: Policy,
    monitor: _CellCertificate | None,
    judge: Any,
    state: SelectionState,
    trace: _Trace,
    first: tuple[np.ndarray, np.ndarray] | None,
    budget: int,
    batch_size: int,
    stop: str,
    epsilon: float,
) -> tuple[str, int | None, int | None]:
    """The selection loop: a round per arm the policy picks, until the budget is spent, the
    cells run out or (``stop="confidence"``) the leader is certified. Returns why it stopped,
    and the cells spent when the leader was first certified and which arm it was."""
    stopped = "budget"
    certified_after: int | None = None
    certified_arm: int | None = None
    if first is not None and _leader_certified(judge, first, trace.best[0], epsilon, state):
        certified_after, certified_arm = 0, trace.best[0]
    while state.spent < budget and not (stop == "confidence" and certified_after is not None):
        choice = policy.choose(state)
        if choice is None:  # every cell revealed, or the policy's own rule stopped it
            stopped = "exhausted" if np.all(state.remaining() == 0) else "policy"
            break
        arm = choice
        size = int(min(batch_size, state.remaining()[arm], budget - state.spent))
        items = policy.select_items(state, arm, size)[: budget - state.spent]
        obs = Observation(arm, items, _checked(oracle, arm, items))
        policy.update(state, obs)
        if monitor is not None:
            monitor.update(obs)
        state.record(obs)
        state.rounds += 1
        policy.end_round(state, arm)
        leader = int(np.argmax(policy.estimates()))
        now = policy.intervals() if monitor is None else monitor.intervals()
        trace.round(state.spent, leader, arm, now)
        if now is None:
            continue
        if certified_after is None and _leader_certified(judge, now, leader, epsilon, state):
            certified_after, certified_arm = int(state.spent), leader
            if stop == "confidence":
                break
    if stop == "confidence" and certified_after is not None:
        stopped = "confidence"
    elif stopped == "budget" and np.all(state.remaining() == 0):
        stopped = "exhausted"
    return stopped, certified_after, certified_arm
