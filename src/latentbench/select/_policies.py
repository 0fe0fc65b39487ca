"""The baseline policies and the registry of every selection policy.

Adding a policy: write its class (on :class:`~latentbench.select._base.UCBEBookkeeping` or
from scratch, following :class:`~latentbench.select.Policy`) and add one
:class:`PolicyInfo` line to :data:`POLICIES`; the experiment runner, the live configuration
and the command-line help read the names from there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from latentbench.exceptions import InputError
from latentbench.select._base import (
    DEPRECATED_OPTIONS,
    Policy,
    ProxyBookkeeping,
    UCBEBookkeeping,
    rename_deprecated,
)
from latentbench.select._pulse import Pulse
from latentbench.select._state import Observation, ProxyState, SelectionState

__all__ = [
    "POLICIES",
    "UCBE",
    "UCBELRF",
    "FullEvaluation",
    "NaivePooling",
    "PolicyInfo",
    "Uniform",
    "check_sizes",
    "make_policy",
    "parse_policy",
    "policy_help",
    "refuse_spec_delta",
]


class UCBE(UCBEBookkeeping):
    """UCB-E (Audibert, Bubeck & Munos 2010) on sample means.

    The estimate is the sample mean of revealed cells. There is no confidence sequence: the
    cells of an adaptively stopped row are not a martingale of per-round means.

    Parameters
    ----------
    a : float, default 1.0
        Exploration constant of the bonus ``sqrt(a / T_i)``.
    doubling : bool, default False
        Reveal ``min(B, T_i)`` cells per round (see :class:`UCBEBookkeeping`).
    """

    name = "ucbe"

    def __init__(self, *, a: float = 1.0, doubling: bool = False) -> None:
        super().__init__(a=a, doubling=doubling)


class Uniform(UCBEBookkeeping):
    """Round-robin over arms with uniform batches; sample-mean estimates."""

    name = "uniform"

    def __init__(self) -> None:
        super().__init__()
        self._next = 0

    def choose(self, state: SelectionState) -> int | None:
        """Round-robin: the next arm, after the last one chosen, that is not fully revealed.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.

        Returns
        -------
        int or None
            An arm's index in ``range(n_arms)``; None when every arm is fully revealed.
        """
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
        """Every unrevealed item of ``arm`` (the whole row; ``size`` is not used).

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.
        arm : int
            The arm :meth:`choose` returned.
        size : int
            The batch size (not used).

        Returns
        -------
        ndarray of int of shape (n_unrevealed,)
            Every item index not yet revealed for ``arm``, in a uniformly random order.
        """
        return state.uniform_items(arm, int(state.remaining()[arm]))


class NaivePooling(ProxyBookkeeping):
    """Naive-Pooling: UCB-E selection on plain imputation (biased, no intervals).

    ``mu_hat_i = (sum_{S_i} Y + sum_{not S_i} f) / n``, refreshed when arm i is pulled.

    Parameters
    ----------
    a : float, default 1.0
        UCB-E exploration constant.
    refit_every : int, "auto" or None, default "auto"
        Rounds between refits of the proxy, as PULSE (the method's Naive-Pooling baseline
        refits); ``None`` freezes it after the prewarm (``naive_frozen``).
    """

    name = "naive"

    def __init__(
        self, *, a: float = 1.0, refit_every: int | Literal["auto"] | None = "auto"
    ) -> None:
        super().__init__(a=a, ci="none", refit_every=refit_every)
        if refit_every is None:
            self.name = "naive_frozen"

    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        """Set up after the shared initial batch: estimates ``(revealed sum + predicted sum of the
        unrevealed cells) / n_items``.

        Parameters
        ----------
        state : SelectionState
            The run's cells: every arm's initial batch is recorded.
        proxy : ProxyState or None, optional
            The fitted proxy's predictions of every cell, used for the unrevealed cells.

        Raises
        ------
        InputError
            When ``proxy`` is None.
        """
        super().initialize(state, None)
        self._setup_proxy(state, proxy)
        self.est = (state.y_sum + self.f_all - self.f_obs) / state.n_items
        self._refresh_exact(state, np.arange(state.n_arms))

    def update(self, state: SelectionState, obs: Observation) -> None:
        """Record the proxy's predictions of the batch's cells (before ``state.record``).

        Parameters
        ----------
        state : SelectionState
            The run's cells before this batch.
        obs : Observation
            The batch: its arm, items and scores.
        """
        self._record_f(obs.arm, self.px.f[obs.arm, obs.items].astype(np.float64))

    def end_round(self, state: SelectionState, arm: int) -> None:
        """After ``state.record``: the arm's pooled estimate, full rows exact, and a proxy refit
        when one is due.

        Parameters
        ----------
        state : SelectionState
            The run's cells, this batch included.
        arm : int
            The arm just pulled.
        """
        self.est[arm] = (state.y_sum[arm] + self.f_all[arm] - self.f_obs[arm]) / state.n_items
        self._refresh_exact(state, np.array([arm]))
        self._maybe_refit(state)


ENSEMBLE_CELLS = 2**27
"""Upper bound of ``n_ensemble x models x items`` in :class:`UCBELRF` (about 4.5 GiB of
arrays at the bound; the default 64 fits 2,097,152 cells, e.g. 29 x 12,032 MMLU-Pro 6 times)."""

ALS_ITER = 10_000
"""Upper bound of :class:`UCBELRF`'s ``als_iter`` (time, not memory, grows with it)."""


def _check_number(
    policy: str,
    key: str,
    value: Any,
    low: float,
    high: float | None,
    *,
    integer: bool = False,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    """Refuse ``value`` outside ``[low, high]`` (or not an integer when ``integer``; not a
    finite number), naming the policy, the option ``key``, the value and the range (without
    ``high``: ``[low, inf)``, an infinite value being refused)."""
    if integer:
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, bool
        )
        ok = ok and bool(np.isfinite(value))
    ok = ok and (value > low if open_low else value >= low)
    if high is not None:
        ok = ok and (value < high if open_high else value <= high)
    if not ok:
        left = "(" if open_low else "["
        right = ")" if open_high or high is None else "]"  # inf itself is refused
        top = "inf" if high is None else f"{high:,}" if integer else f"{high:g}"
        bottom = f"{low:,}" if integer else f"{low:g}"
        kind = "an integer" if integer else "a number"
        raise InputError(
            f"policy {policy!r} option {key}={value!r}; expected {kind} in "
            f"{left}{bottom}, {top}{right}"
        )


def _child_rng(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator derived from ``rng`` without drawing from it (its seed
    sequence spawned; one number drawn where it has no seed sequence to spawn from)."""
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError):  # a bit generator built without a SeedSequence
        return np.random.default_rng(int(rng.integers(2**63)))


class UCBELRF(UCBEBookkeeping):
    """UCB-E-LRF (Zhou et al., arXiv 2407.06172), as in ``banditeval``.

    Warm-up while fewer than ``warmup`` of all cells are revealed: uniform batches, round-robin
    over arms (the reference draws uniformly from the whole matrix). Then every
    ``refit_every`` rounds an ensemble of ``n_ensemble`` rank-1 factorisations (squared loss,
    ALS, ``als_iter`` sweeps, ridge ``ridge``, each dropping ``drop`` of the revealed cells,
    started from N(0, 1)) is refit from scratch; cell UCB = mean + ``eta`` sd (revealed cells:
    their value); arm index = row mean of cell UCBs; the batch is the arm's unrevealed cells
    with the largest ensemble sd. Estimate: revealed values plus the ensemble mean elsewhere
    (biased; no confidence sequence).

    Parameters
    ----------
    n_ensemble : int, default 64
        Factorisations in the ensemble (>= 1).
    eta : float, default 5.0
        Weight of the ensemble sd in a cell's UCB (>= 0).
    als_iter : int, default 10
        ALS sweeps per factorisation (1 to :data:`ALS_ITER`).
    ridge : float, default 0.1
        Ridge of the ALS solves (> 0).
    drop : float, default 0.05
        Share of the revealed cells each factorisation leaves out, in [0, 1).
    warmup : float, default 0.05
        Share of all cells revealed uniformly before the first fit, in [0, 1].
    refit_every : int, default 1
        Rounds between ensemble refits (>= 1).
    random_state : int, optional
        Seeds the ensemble (the dropped cells and the starting factors); None: a child of the
        run's generator (its ``random_state``), so the same seed gives the same run.
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
    ) -> None:
        super().__init__()
        _check_number(self.name, "n_ensemble", n_ensemble, 1, None, integer=True)
        _check_number(self.name, "als_iter", als_iter, 1, ALS_ITER, integer=True)
        _check_number(self.name, "refit_every", refit_every, 1, None, integer=True)
        _check_number(self.name, "eta", eta, 0.0, None)
        _check_number(self.name, "ridge", ridge, 0.0, None, open_low=True)
        _check_number(self.name, "drop", drop, 0.0, 1.0, open_high=True)
        _check_number(self.name, "warmup", warmup, 0.0, 1.0)
        self.n_ensemble, self.eta, self.als_iter = n_ensemble, eta, als_iter
        self.ridge, self.drop, self.warmup = ridge, drop, warmup
        self.refit_every = refit_every
        self.random_state = random_state

    def check_sizes(self, n_arms: int, n_items: int) -> None:
        """Refuse an ensemble the data cannot hold: ``n_ensemble`` x ``n_arms`` x ``n_items``
        values at most :data:`ENSEMBLE_CELLS` (each of the ensemble's five arrays takes 8
        bytes a value; ``n_ensemble = 100000`` on 30 x 1,000 asked for 112 GiB).

        Parameters
        ----------
        n_arms : int
            Models (rows) of the matrix.
        n_items : int
            Items (columns) of the matrix.

        Raises
        ------
        InputError
            Naming the option, its value and the allowed range for this shape.
        """
        cells = max(1, int(n_arms) * int(n_items))
        high = max(1, ENSEMBLE_CELLS // cells)
        if self.n_ensemble > high:
            raise InputError(
                f"policy {self.name!r} option n_ensemble={self.n_ensemble!r}; expected an "
                f"integer in [1, {high:,}] for {n_arms:,} models x {n_items:,} items (the "
                f"ensemble holds n_ensemble x models x items values, at most "
                f"{ENSEMBLE_CELLS:,})"
            )

    def initialize(self, state: SelectionState, proxy: ProxyState | None = None) -> None:
        """Set up after the shared initial batch (the proxy is not used: the ensemble is fitted
        on the revealed cells).

        Parameters
        ----------
        state : SelectionState
            The run's cells: every arm's initial batch is recorded.
        proxy : ProxyState or None, optional
            The fitted proxy's predictions of every cell; not used.

        Raises
        ------
        InputError
            When the ensemble is too large for the matrix (:meth:`check_sizes`).
        """
        self.check_sizes(state.n_arms, state.n_items)
        super().initialize(state, None)
        if self.random_state is not None:
            self._rng = np.random.default_rng(self.random_state)
        else:  # the run's: a seeded run is the same run (fresh entropy gave two runs of one seed
            # other estimates and cell counts); a child, so the run's own draws are as before
            self._rng = _child_rng(state.rng)
        self._next = 0
        self._mean: np.ndarray | None = None
        self._sd: np.ndarray | None = None

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
        """Round-robin while fewer than ``warmup`` of the cells are revealed; then the active arm
        whose mean over its row (revealed scores, else the ensemble's mean plus ``eta`` sds) is
        largest, the ensemble refitted every ``refit_every`` rounds.

        Parameters
        ----------
        state : SelectionState
            The run's cells so far.

        Returns
        -------
        int or None
            An arm's index in ``range(n_arms)``; None when every arm is fully revealed.
        """
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
        mean, sd = self._mean, self._sd
        assert mean is not None and sd is not None  # set by _fit_ensemble
        ucb = np.where(state.observed, np.nan_to_num(state.values), mean + self.eta * sd)
        idx = np.where(active, ucb.mean(axis=1), -np.inf)
        self._mode = "sd"
        return int(np.argmax(idx))

    def select_items(self, state: SelectionState, arm: int, size: int) -> np.ndarray:
        """The ``size`` unrevealed items of ``arm`` with the largest ensemble sd (uniform while
        warming up).

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
        ndarray of int of shape (<= size,)
            Item indices not yet revealed for ``arm``, in the order to reveal them.
        """
        if getattr(self, "_mode", "uniform") == "uniform" or self._sd is None:
            return state.uniform_items(arm, size)
        sd = np.where(state.observed[arm], -np.inf, self._sd[arm])
        top = np.argpartition(-sd, size - 1)[:size] if size < sd.size else np.arange(sd.size)
        top = top[np.isfinite(sd[top])]
        return top[np.argsort(-sd[top], kind="stable")]

    def update(self, state: SelectionState, obs: Observation) -> None:
        """Nothing: the ensemble is refitted on ``state`` in :meth:`choose`.

        Parameters
        ----------
        state : SelectionState
            The run's cells before this batch.
        obs : Observation
            The batch: its arm, items and scores.
        """
        pass

    def end_round(self, state: SelectionState, arm: int) -> None:
        """After ``state.record``: every arm's estimate (revealed scores, else the ensemble's
        mean) and full rows exact.

        Parameters
        ----------
        state : SelectionState
            The run's cells, this batch included.
        arm : int
            The arm just pulled.
        """
        if self._mean is not None:
            filled = np.where(state.observed, np.nan_to_num(state.values), self._mean)
            self.est = filled.mean(axis=1)
        else:
            self.est = state.y_sum / np.maximum(state.n_obs, 1)
        self._refresh_exact(state, np.arange(state.n_arms))


# ---------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class PolicyInfo:
    """One entry of :data:`POLICIES`.

    Attributes
    ----------
    factory : type
        The policy class.
    summary : str
        One line for help texts.
    defaults : dict
        Keyword arguments the name implies (e.g. ``naive_frozen`` sets ``refit_every``).
    """

    factory: Callable[..., Policy]
    summary: str
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def needs_proxy(self) -> bool:
        """Whether the policy needs a fitted proxy (history)."""
        return bool(getattr(self.factory, "needs_proxy", False))

    @property
    def options(self) -> tuple[str, ...]:
        """Keyword options the policy accepts (without deprecated spellings such as
        ``alpha``; see :attr:`deprecated_options`)."""
        params = inspect.signature(self.factory).parameters.values()
        return tuple(
            p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name not in DEPRECATED_OPTIONS
        )

    @property
    def deprecated_options(self) -> tuple[str, ...]:
        """Old spellings still accepted, with a warning, for options of this policy (e.g.
        ``alpha`` for ``delta``)."""
        return tuple(old for old, new in DEPRECATED_OPTIONS.items() if new in self.options)


POLICIES: dict[str, PolicyInfo] = {
    "pulse": PolicyInfo(Pulse, "PULSE: UCB-E on doubly robust estimates (proxy)"),
    "ucbe": PolicyInfo(UCBE, "UCB-E on sample means"),
    "ucbe_lrf": PolicyInfo(UCBELRF, "UCB-E-LRF: rank-1 ensemble UCB (biased)"),
    "naive": PolicyInfo(NaivePooling, "Naive-Pooling: imputation, proxy refit (biased)"),
    "naive_frozen": PolicyInfo(
        NaivePooling, "Naive-Pooling with the proxy frozen (biased)", {"refit_every": None}
    ),
    "uniform": PolicyInfo(Uniform, "round-robin with uniform batches"),
    "full": PolicyInfo(FullEvaluation, "evaluate every cell"),
}
"""Every selection policy by name; the single list the runner, live runs and the CLI use."""


_RUN_KEYS = ("init_batch", "item_order")
"""Spec keys that are options of the run, not of the policy."""


def _convert(value: str) -> Any:
    low = value.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def parse_policy(spec: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """Parse ``name[:key=value;key=value]`` into (label, name, policy options, run options).

    ``init_batch`` and ``item_order`` are run options (the initial batch per arm, the reveal
    order); every other key is an option of the policy class, e.g.
    ``pulse:init_batch=16;item_order=independent;weights=precision``.

    Parameters
    ----------
    spec : str
        A policy spec, as ``latentbench select replay --policy``.

    Returns
    -------
    label, name : str
        The spec as given (a label for tables) and the policy's name.
    policy_options, run_options : dict
        Keyword arguments of the policy class and of the run.

    Raises
    ------
    InputError
        Unknown policy name, or a part that is not ``key=value``.
    """
    if not isinstance(spec, str):
        hint = (
            "; replay() takes the name, run_selection(oracle, policy) takes a policy object"
            if isinstance(spec, Policy)
            else ""
        )
        raise InputError(
            f"policy={spec!r}; expected a policy name such as 'pulse' or "
            f"'pulse:key=value' (one of {sorted(POLICIES)}){hint}"
        )
    name, _, rest = spec.strip().partition(":")
    name = name.strip().lower()
    if name not in POLICIES:
        raise InputError(f"policy {name!r} is unknown; expected one of {sorted(POLICIES)}")
    kwargs: dict[str, Any] = {}
    run_kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.replace(";", ",").split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise InputError(f"policy option {part!r} in {spec!r}; expected key=value")
        key, value = key.strip(), value.strip()
        converted = _convert(value)
        if converted is None and not _admits_none(name, key):
            converted = value.lower()  # a word among the option's choices: ci=none
        (run_kwargs if key in _RUN_KEYS else kwargs)[key] = converted
    return spec.strip(), name, kwargs, run_kwargs


def lucb_bonus(name: str, stop: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """``{"bonus": "ci"}`` (LUCB sampling) for a fixed-confidence stop of a policy that takes a
    ``bonus`` and was given none, else ``{}``: the one rule ``select replay``, experiments and
    live runs apply. A policy given ``ci="none"`` has no intervals for LUCB to sample on and
    keeps its bonus; the run then certifies it on its revealed cells, as UCB-E (with LUCB it
    was refused: "bonus='ci' needs intervals", a bonus the user never set)."""
    if (
        stop == "confidence"
        and "bonus" in POLICIES[name].options
        and "bonus" not in given
        and given.get("ci") != "none"
    ):
        return {"bonus": "ci"}
    return {}


def _admits_none(name: str, key: str) -> bool:
    """Whether option ``key`` of policy ``name`` takes None (``refit_every=none``: never
    refit); one that does not (``ci``, whose choices include the word ``"none"``) keeps the
    word, so that ``pulse:ci=none`` is the documented ``ci="none"``, not a refused None."""
    param = inspect.signature(POLICIES[name].factory).parameters.get(key)
    return param is None or "None" in str(param.annotation)


def make_policy(
    spec: str,
    options: Mapping[str, Any] | None = None,
    *,
    where: str = "",
    shape: tuple[int, int] | None = None,
) -> Policy:
    """A fresh policy from a registry name or spec, plus keyword options.

    Parameters
    ----------
    spec : str
        A key of :data:`POLICIES`, optionally with options: ``pulse:weights=precision``
        (see :func:`parse_policy`; run options such as ``init_batch`` are ignored here).
    options : dict, optional
        More keyword arguments of the policy class; they override the spec's. A deprecated
        spelling (``alpha`` for ``delta``) is renamed with a :class:`FutureWarning`, in the
        spec and in ``options`` each.
    where : str
        Prefix of error messages (e.g. the configuration file and section).
    shape : (n_models, n_items), optional
        The data the policy will run on: size-like options are bounded by it now (see
        :func:`check_sizes`), before anything is evaluated. :func:`run_selection` checks
        them in any case.

    Returns
    -------
    Policy
        A new instance of the policy class (e.g. :class:`Pulse`), options applied.

    Raises
    ------
    InputError
        Unknown name, an option the policy does not take (the message lists those it does),
        an option value out of its range (named, with the range), or an option given in both
        its spellings.
    """
    prefix = f"{where}: " if where else ""
    try:
        _, name, spec_options, _ = parse_policy(spec)
    except InputError as exc:
        raise InputError(f"{prefix}{exc}") from None
    info = POLICIES[name]
    label = f"{prefix}policy {name!r}"
    accepted = info.options
    spec_options = rename_deprecated(spec_options, accepted, where=label)
    extra = rename_deprecated(options or {}, accepted, where=label)
    kwargs = {**info.defaults, **spec_options, **extra}
    unknown = sorted(set(kwargs) - set(info.options))
    if unknown:
        raise InputError(
            f"{prefix}policy {name!r} has no option(s) {unknown}; expected some of "
            f"{sorted(info.options)}"
        )
    try:
        policy = info.factory(**kwargs)
        if shape is not None:
            check_sizes(policy, *shape)
    except InputError as exc:
        raise InputError(f"{prefix}{exc}") from None
    return policy


def refuse_spec_delta(spec: str, where: str) -> None:
    """Refuse ``delta`` (or its old spelling ``alpha``) inside a policy spec where the run
    sets the error probability itself (``--delta``, ``delta=``): the run's value overrode the
    spec's, silently.

    Parameters
    ----------
    spec : str
        A policy spec (see :func:`parse_policy`).
    where : str
        How the user gave the spec, for the message: a flag (``"--policy"``,
        ``"--policies"``: the fix named is ``--delta``) or a Python argument (``"policy"``,
        ``"policies"``: the fix named is the ``delta=`` argument).

    Raises
    ------
    InputError
        The spec has ``delta`` or ``alpha`` and its policy takes ``delta`` (an option the
        policy does not take at all is left to :func:`make_policy`, which lists those it
        does); an unknown policy name.

    Examples
    --------
    >>> refuse_spec_delta("pulse:weights=precision", "--policy")  # no delta: nothing to say
    >>> refuse_spec_delta("pulse:delta=0.1", "--policy")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    latentbench.exceptions.InputError: --policy 'pulse:delta=0.1': delta is set by --delta ...
    """
    _, name, options, _ = parse_policy(spec)
    if "delta" not in POLICIES[name].options:
        return
    spellings = ("delta", *(old for old, new in DEPRECATED_OPTIONS.items() if new == "delta"))
    key = next((k for k in options if k in spellings), None)
    if key is None:
        return
    what = key if key == "delta" else f"{key} (the old spelling of delta)"
    if where.startswith("--"):
        given, fix = f"{where} {spec.strip()!r}", f"--delta (--delta {options[key]})"
    else:
        given, fix = f"{where}={spec.strip()!r}", f"the delta= argument (delta={options[key]})"
    raise InputError(f"{given}: {what} is set by {fix}, not in the policy spec")


def refuse_spec_init_batch(specs: str | Sequence[str], init_batch: int | None, where: str) -> None:
    """Refuse an ``init_batch`` given to the run (``--init-batch``, ``init_batch=``) that no
    policy uses: every spec (a replay's one) sets its own, different ``init_batch``, which
    won silently.

    In an experiment's list a spec's own ``init_batch`` beside the run's is a per-policy
    override of a shared start (the others start with the run's): that is left alone.

    Parameters
    ----------
    specs : str or sequence of str
        A policy spec (see :func:`parse_policy`), or an experiment's list of them.
    init_batch : int or None
        The run's initial batch as the user gave it (None: not given, nothing to compare).
    where : str
        The argument that holds the specs, in Python spelling (``"policy"``,
        ``"policies"``); the command line's flags are spelled by ``cli_spelling``.

    Raises
    ------
    InputError
        ``init_batch`` given and every spec has another (the same value twice is the same
        run); an unknown policy name.

    Examples
    --------
    >>> refuse_spec_init_batch("ucbe:init_batch=4", None, "policy")  # the spec alone
    >>> refuse_spec_init_batch("ucbe:init_batch=4", 4, "policy")  # the same value
    >>> refuse_spec_init_batch(["ucbe:init_batch=4", "pulse"], 10, "policies")  # pulse: 10
    >>> refuse_spec_init_batch("ucbe:init_batch=4", 10, "policy")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    latentbench.exceptions.InputError: init_batch=10 and policy='ucbe:init_batch=4' both set ...
    """
    if init_batch is None:
        return
    given = [specs] if isinstance(specs, str) else list(specs)
    owns = [parse_policy(spec)[3].get("init_batch") for spec in given]
    if not owns or any(own is None or own == init_batch for own in owns):
        return
    shown = ",".join(spec.strip() for spec in given)
    values = "/".join(dict.fromkeys(repr(own) for own in owns))
    whose = "the spec's" if len(given) == 1 else "the specs'"
    raise InputError(
        f"init_batch={init_batch!r} and {where}={shown!r} both set the initial batch "
        f"({init_batch!r} and {values} cells per model), and {whose} won; expected one of "
        f"them: drop init_batch= or {whose} init_batch"
    )


def check_sizes(policy: Policy, n_models: int, n_items: int) -> None:
    """Refuse size-like options of ``policy`` that the data cannot hold (e.g. ``ucbe_lrf``'s
    ``n_ensemble``): a policy with such options has a ``check_sizes(n_arms, n_items)``
    method raising :class:`~latentbench.exceptions.InputError`; others pass."""
    check = getattr(policy, "check_sizes", None)
    if callable(check):
        check(int(n_models), int(n_items))


def policy_help() -> str:
    """``name: summary`` of every policy, for command-line help."""
    return "; ".join(f"{k} ({v.summary})" for k, v in POLICIES.items())
