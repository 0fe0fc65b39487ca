"""Bootstrap of a fitted IRT model: refits on redrawn or resampled data (:func:`bootstrap`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from multiprocessing import get_all_start_methods, get_context
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from latentbench._checks import check_jobs, check_seed, user_stacklevel
from latentbench._fork import forking
from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._cbmm import fit_cbmm
from latentbench.irt._fitted import _observed, _z, reference_of
from latentbench.irt._objective import general_direction, normalise
from latentbench.irt._random_items import text_order
from latentbench.irt._ranks import rank_intervals

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["BootstrapMethod", "BootstrapResult", "Interval", "bootstrap"]


BootstrapMethod = Literal["parametric", "items", "models"]
Interval = Literal["basic", "percentile"]
_NO_THETA = "a 'models' bootstrap has no ability draws; use 'parametric' or 'items'"


@dataclass(eq=False)  # arrays: == by identity, not a ValueError
class BootstrapResult:
    """Bootstrap replicates of the reported parameters.

    Attributes
    ----------
    method : {"parametric", "items", "models"}
    theta : ndarray of shape (n_boot, n_models) or None
        Ability draws (rank > 1: along each replicate's mean loading, as
        :attr:`IRTResult.theta`), on each replicate's normalised scale. None for
        ``method="models"`` (resampled models have no identity).
    discrimination, easiness : ndarray of shape (n_boot, n_items) or None
        Item draws; None for ``method="items"``.
    estimate_theta : ndarray of shape (n_models,)
    estimate_discrimination, estimate_easiness : ndarray of shape (n_items,)
    model_ids, item_ids : list of str
    level : float
        Default level of the percentile intervals.
    seconds : float
        Wall-clock time of all replicates.
    converged : ndarray of bool, shape (n_boot,)
        Whether each replicate's refit met its tolerance (False also for a replicate skipped
        because its resample held no observed cell).
    refit_warnings : dict of str to int
        Each distinct warning the refits raised, with the number of replicates that raised it.
    """

    method: str
    theta: np.ndarray | None
    discrimination: np.ndarray | None
    easiness: np.ndarray | None
    estimate_theta: np.ndarray
    estimate_discrimination: np.ndarray
    estimate_easiness: np.ndarray
    model_ids: list[str]
    item_ids: list[str]
    level: float = 0.95
    seconds: float = 0.0
    converged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    refit_warnings: dict[str, int] = field(default_factory=dict)

    @property
    def n_boot(self) -> int:
        """Number of replicates kept (0 when none holds draws)."""
        draws = self.theta if self.theta is not None else self.discrimination
        return 0 if draws is None else int(draws.shape[0])

    def __repr__(self) -> str:
        """Short: method, replicates, shape, converged refits and time (the draws: ``theta``,
        ``discrimination``, ``easiness``; the intervals: :meth:`abilities`, :meth:`items`)."""
        return (
            f"BootstrapResult(method {self.method!r}, {self.n_boot:,} replicates of "
            f"{len(self.model_ids):,} models x {len(self.item_ids):,} items, "
            f"{int(np.count_nonzero(self.converged)):,} converged, {self.seconds:.2f} s)"
        )

    def abilities(self, level: float | None = None, interval: Interval = "basic") -> pd.DataFrame:
        """Bootstrap intervals for abilities.

        Parameters
        ----------
        level : float, optional
            Default: the level given to :func:`bootstrap`.
        interval : {"basic", "percentile"}, default "basic"
            ``"basic"``: ``(2 est - q_hi, 2 est - q_lo)``, which removes the bias the refits
            share with the fit (joint ML and the normalisation shrink abilities slightly towards
            0, and a percentile interval doubles that shrinkage). ``"percentile"``:
            ``(q_lo, q_hi)``.

        Returns
        -------
        DataFrame
            ``model``, ``theta`` (the fit's estimate), ``se`` (sd of the draws), ``lower``,
            ``upper``.

        Raises
        ------
        InputError
            For a ``"models"`` bootstrap, which draws no abilities.
        """
        if self.theta is None:
            raise InputError(_NO_THETA)
        lo, hi = _interval(self.theta, self.estimate_theta, level or self.level, interval)
        return pd.DataFrame(
            {
                "model": self.model_ids,
                "theta": self.estimate_theta,
                "se": self.theta.std(axis=0, ddof=1),
                "lower": lo,
                "upper": hi,
            }
        )

    def items(self, level: float | None = None, interval: Interval = "basic") -> pd.DataFrame:
        """Bootstrap intervals for item parameters (see :meth:`abilities` for ``interval``).

        Parameters
        ----------
        level : float, optional
            Default: the level given to :func:`bootstrap`.
        interval : {"basic", "percentile"}, default "basic"
            As in :meth:`abilities`.

        Returns
        -------
        DataFrame
            ``item``, ``discrimination``, ``discrimination_se``, ``discrimination_lower``
            (clipped at 0), ``discrimination_upper``, ``easiness``, ``easiness_se``,
            ``easiness_lower``, ``easiness_upper``; one row per item (n_items rows).

        Raises
        ------
        InputError
            For an ``"items"`` bootstrap, which draws no item parameters.
        """
        if self.discrimination is None or self.easiness is None:
            raise InputError("an 'items' bootstrap has no item draws; use 'parametric' or 'models'")
        level = level or self.level
        a_lo, a_hi = _interval(self.discrimination, self.estimate_discrimination, level, interval)
        b_lo, b_hi = _interval(self.easiness, self.estimate_easiness, level, interval)
        return pd.DataFrame(
            {
                "item": self.item_ids,
                "discrimination": self.estimate_discrimination,
                "discrimination_se": self.discrimination.std(axis=0, ddof=1),
                "discrimination_lower": np.maximum(a_lo, 0.0),
                "discrimination_upper": a_hi,
                "easiness": self.estimate_easiness,
                "easiness_se": self.easiness.std(axis=0, ddof=1),
                "easiness_lower": b_lo,
                "easiness_upper": b_hi,
            }
        )

    def rank_intervals(
        self, level: float | None = None, measured: np.ndarray | None = None
    ) -> pd.DataFrame:
        """Rank intervals from the ability draws; see :func:`rank_intervals`.

        Parameters
        ----------
        level : float, optional
            Default: the level given to :func:`bootstrap`.
        measured : ndarray of bool of shape (n_models,), optional
            The models with an observed cell; the others are not ranked. None: all.

        Returns
        -------
        DataFrame
            One row per model, with the columns of :func:`rank_intervals`.

        Raises
        ------
        InputError
            For a ``"models"`` bootstrap, which draws no abilities.
        """
        if self.theta is None:
            raise InputError(_NO_THETA)
        return rank_intervals(
            self.theta,
            self.model_ids,
            estimate=self.estimate_theta,
            level=level or self.level,
            measured=measured,
        )


def _interval(
    draws: np.ndarray, estimate: np.ndarray, level: float, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _percentiles(draws, level)
    if kind == "percentile":
        return lo, hi
    if kind == "basic":
        return 2 * estimate - hi, 2 * estimate - lo
    raise InputError(f"interval={kind!r}; expected 'basic' or 'percentile'")


def _percentiles(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    _z(level)
    alpha = 1 - level
    return (
        np.nanquantile(draws, alpha / 2, axis=0),
        np.nanquantile(draws, 1 - alpha / 2, axis=0),
    )


def _replicates(
    scores: np.ndarray,
    init: tuple[np.ndarray, np.ndarray, np.ndarray],
    probabilities: np.ndarray,
    method: str,
    seeds: list[np.random.SeedSequence],
    fit_options: dict[str, Any],
    order: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Run a chunk of replicates (top level so that worker processes can import it).

    ``order``: the models' and the items' positions in the order the draws number them
    (:func:`text_order` of their ids; default, or None: their positions).

    Returns the draws, each replicate's convergence and the distinct warnings the refits
    raised with their counts (recorded, not shown: :func:`bootstrap` warns once).
    """
    import warnings

    U0, V0, b0 = init
    N, J = scores.shape
    # the draws number the models and items in the ids' text order, not by position, so that
    # the same cells in another row or column order get the same replicates (an order that
    # is the positions' leaves the draws exactly as they were)
    row_order, col_order = (np.arange(N), np.arange(J)) if order is None else order
    row_order = np.asarray(row_order, dtype=np.intp)
    col_order = np.asarray(col_order, dtype=np.intp)
    rows_moved = not np.array_equal(row_order, np.arange(N))
    cols_moved = not np.array_equal(col_order, np.arange(J))
    # the fit's reporting scale: the same reference models in every replicate
    fit_options = dict(fit_options)
    reference = fit_options.pop("reference", None)
    observed = ~np.isnan(scores)
    out_theta = np.full((len(seeds), N), np.nan)
    out_a = np.full((len(seeds), J), np.nan)
    out_b = np.full((len(seeds), J), np.nan)
    converged = np.zeros(len(seeds), bool)
    raised: dict[str, int] = {}
    for k, seed in enumerate(seeds):
        rng = np.random.default_rng(seed)
        if method == "parametric":
            uniform = rng.random((N, J))  # cell (i, j): the i-th model and j-th item as text
            if rows_moved or cols_moved:
                placed = np.empty_like(uniform)
                placed[np.ix_(row_order, col_order)] = uniform
                uniform = placed
            Y = (uniform < probabilities).astype(np.float32)
            Y[~observed] = np.nan
            start = (U0, V0, b0)
        elif method == "items":
            cols = col_order[rng.integers(0, J, size=J)]
            Y = scores[:, cols]
            start = (U0, V0[cols], b0[cols])
        else:
            rows = row_order[rng.integers(0, N, size=N)]
            Y = scores[rows]
            start = (U0[rows], V0, b0)

        if np.isnan(Y).all():
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = fit_cbmm(Y, init=start, **fit_options)
        for message in {f"{w.category.__name__}: {w.message}" for w in caught}:
            raised[message] = raised.get(message, 0) + 1
        converged[k] = fit.converged
        ref = reference if reference is None or method != "models" else reference[rows]
        if ref is not None and ref.sum() < 2:
            ref = None  # a resample without two reference models: its own reference
        U_n, V_n, b_n, _ = normalise(fit.U, fit.V, fit.b, ref)
        # rank > 1: along the replicate's own mean loading (its factors' rotation is its own)
        w = general_direction(V_n)
        theta, a, b = U_n @ w, V_n @ w, b_n
        if method in ("parametric", "items"):
            out_theta[k] = theta
        if method in ("parametric", "models"):
            out_a[k], out_b[k] = a, b
    return out_theta, out_a, out_b, converged, raised


def _worker_init() -> None:
    try:
        import numba

        numba.set_num_threads(1)
    except Exception:  # pragma: no cover - numba is a dependency
        pass


def bootstrap(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None = None,
    *,
    n_boot: int = 200,
    method: BootstrapMethod = "parametric",
    level: float = 0.95,
    n_jobs: int = 1,
    tol: float = 1e-5,
    random_state: int | np.random.SeedSequence | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BootstrapResult:
    """Bootstrap the fit: redraw or resample the data, refit, collect reported parameters.

    Parameters
    ----------
    result : IRTResult
    matrix : ResponseMatrix or ndarray of shape (n_models, n_items), optional
        The matrix the result was fitted on (default: the one the result keeps).
    n_boot : int, default 200
        Number of replicates.
    method : {"parametric", "items", "models"}, default "parametric"
        ``"parametric"``: every observed cell redrawn as Bernoulli(fitted p) (fractional scores
        become binary), same missing pattern; gives abilities and item parameters.
        ``"items"``: items resampled with replacement (the benchmark as a sample of questions);
        gives abilities only. ``"models"``: models resampled with replacement; gives item
        parameters only.
    level : float, default 0.95
        Default level of the percentile intervals.
    n_jobs : int, default 1
        Worker processes (``concurrent.futures``; fork where available, else spawn; -1 = all
        cores). Results
        do not depend on ``n_jobs``: replicate k always uses the k-th child seed.
    tol : float, default 1e-5
        Stopping tolerance of each refit (warm-started at the fit, so few sweeps are needed).
    random_state : int, SeedSequence or None
        Seed of the draws, which number the models and items in the text order of their ids,
        not by position: the same cells in another row or column order get the same
        replicates (to the refits' tolerance).
    progress : callable(done, total), optional
        Called as replicates finish (the work is then split into smaller chunks; the results
        do not change).

    Returns
    -------
    BootstrapResult

    Raises
    ------
    InputError
        ``method`` not one of the three, ``n_boot`` < 2, ``level`` outside (0, 1), or no matrix
        (a result loaded from disk keeps none).
    """
    import time

    if method not in ("parametric", "items", "models"):
        raise InputError(f"method={method!r}; expected 'parametric', 'items' or 'models'")
    if int(n_boot) != n_boot or n_boot < 2:
        raise InputError(f"n_boot={n_boot!r}; expected an integer >= 2")
    n_jobs = check_jobs(n_jobs)  # type: ignore[assignment]  # 0 or -5 ran one worker
    _z(level)
    start_time = time.perf_counter()
    scores, _ = _observed(result, matrix)
    scores = np.ascontiguousarray(scores, dtype=np.float32)
    raw = result.raw
    init = (raw.U, raw.V, raw.b) if raw is not None else (result.U, result.V, result.b)
    probabilities = result.predict_proba() if method == "parametric" else np.empty((0, 0))
    options = result.options
    fit_options = {
        "rank": int(result.rank),
        "sigma": float(result.sigma),
        "penalty": result.penalty,
        "tol": float(tol),
        "max_iter": int(options.get("max_iter", 1000)),
        "accelerate": bool(options.get("accelerate", True)),
        "reference": reference_of(result) if result.rank == 1 else None,
    }
    if random_state is not None and not isinstance(random_state, np.random.SeedSequence):
        random_state = check_seed(random_state, "random_state")  # 'x', -1: named, not numpy's
    seed = (
        random_state
        if isinstance(random_state, np.random.SeedSequence)
        else np.random.SeedSequence(random_state)
    )
    seeds = seed.spawn(int(n_boot))
    # the draws follow the ids' text order (a wide file's columns and a long file's sorted
    # ids get the same replicates)
    order = (text_order(result.model_ids), text_order(result.item_ids))
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    n_jobs = max(1, min(int(n_jobs), int(n_boot)))
    # with a progress hook: about 20 chunks, so that the hook is called often
    n_chunks = n_jobs if progress is None else max(n_jobs, min(int(n_boot), 20))
    chunks = [list(c) for c in np.array_split(np.arange(n_boot), n_chunks)]
    # one chunk's replicates: the same fit for every chunk, its own seeds (picklable)
    run = partial(_replicates, scores, init, probabilities, method)
    if n_jobs == 1:
        parts = []
        for chunk in chunks:
            parts.append(run([seeds[i] for i in chunk], fit_options, order))
            if progress is not None:
                progress(sum(len(c) for c in chunks[: len(parts)]), int(n_boot))
    else:
        # fork where the platform has it (no re-import of the caller's script, so it works from
        # a plain script without a __main__ guard; numba's workqueue layer is fork-safe)
        method_name = "fork" if "fork" in get_all_start_methods() else "spawn"
        with ProcessPoolExecutor(
            max_workers=n_jobs, mp_context=get_context(method_name), initializer=_worker_init
        ) as pool:
            with forking():  # the workers start at the first submit
                futures = [
                    pool.submit(run, [seeds[i] for i in chunk], fit_options, order)
                    for chunk in chunks
                ]
            if progress is not None:
                done = 0
                sizes = {f: len(c) for f, c in zip(futures, chunks, strict=True)}
                for future in as_completed(futures):
                    done += sizes[future]
                    progress(done, int(n_boot))
            parts = [f.result() for f in futures]
    theta = np.vstack([p[0] for p in parts])
    a = np.vstack([p[1] for p in parts])
    b = np.vstack([p[2] for p in parts])
    converged = np.concatenate([p[3] for p in parts])
    raised: dict[str, int] = {}
    for part in parts:
        for message, count in part[4].items():
            raised[message] = raised.get(message, 0) + count
    _warn_refits(converged, raised, tol)
    return BootstrapResult(
        method=method,
        theta=theta if method != "models" else None,
        discrimination=a if method != "items" else None,
        easiness=b if method != "items" else None,
        estimate_theta=np.asarray(result.theta, dtype=float),
        estimate_discrimination=np.asarray(result.discrimination, dtype=float),
        estimate_easiness=np.asarray(result.b, dtype=float),
        model_ids=list(result.model_ids),
        item_ids=list(result.item_ids),
        level=level,
        seconds=time.perf_counter() - start_time,
        converged=converged,
        refit_warnings=raised,
    )


def _warn_refits(converged: np.ndarray, raised: dict[str, int], tol: float) -> None:
    """One warning for the replicates that did not converge, one per other distinct warning."""
    import builtins
    import warnings

    from latentbench import exceptions
    from latentbench.exceptions import ConvergenceWarning

    failed = int((~converged).sum())
    if failed:
        warnings.warn(
            f"{failed} of {converged.size} bootstrap refits did not meet tol={tol:g} (their "
            "draws are kept; BootstrapResult.converged says which)",
            ConvergenceWarning,
            stacklevel=user_stacklevel(),
        )
    for message, count in raised.items():
        if message.startswith("ConvergenceWarning"):
            continue  # counted above
        # the refit's own category (recorded by name: workers send strings), so that a
        # filter on LatentbenchWarning or RuntimeWarning still catches it
        name = message.split(":", 1)[0]
        category = getattr(exceptions, name, None) or getattr(builtins, name, None)
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category = UserWarning
        warnings.warn(
            f"{count} of {converged.size} bootstrap refits warned: {message}",
            category,
            stacklevel=user_stacklevel(),
        )
