"""Replay experiments: exact-gap pools x policies x seeds (``docs/selection.md``, Experiments).

Runs fan out over local processes (``concurrent.futures`` with the fork start method where
available, so the matrices are shared, not copied; workers use single-threaded BLAS) or over
Ray (``engine="ray"``, optional extra). Every policy of a seed gets the same initial cells
(same ``random_state``).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import signal
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import check_event, check_jobs, check_seed, user_stacklevel
from latentbench._compat import TEXT
from latentbench._fork import forking
from latentbench._progress import ProgressCallback, notify
from latentbench._repr import html_block
from latentbench.exceptions import DataWarning, InputError
from latentbench.select._base import DEFAULT_DELTA
from latentbench.select._experiment_record import (
    CURVE_COLUMNS,
    ExperimentRecord,
    censored_savings,
    unmeasured_savings,
)
from latentbench.select._experiment_stats import (
    MIN_TAIL_SEEDS,
    _se,
    _tail_seeds,
    budget_sd_note,
    budget_to_accuracy,
    paired_saving,
    paired_saving_at_stop,
    wilson_interval,
)
from latentbench.select._policies import (
    POLICIES,
    lucb_bonus,
    make_policy,
    parse_policy,
    refuse_spec_delta,
    refuse_spec_init_batch,
)
from latentbench.select._run import check_select_delta, reads_delta, run_selection
from latentbench.select._schedule import default_schedule
from latentbench.select.oracles import MatrixOracle

if TYPE_CHECKING:
    import threading

    import pandas as pd

    from latentbench.io import ResponseMatrix
    from latentbench.select._proxy import LowRankProxy

Progress = Callable[[int, int], None]
Task = tuple[str, str, int]

__all__ = [
    "CURVE_COLUMNS",
    "ExperimentRecord",
    "ExperimentResult",
    "ExperimentSettings",
    "budget_to_accuracy",
    "exact_gap_pool",
    "experiment_from_matrix",
    "paired_saving",
    "paired_saving_at_stop",
    "parse_pools",
    "release_dates",
    "run_experiment",
    "split_models",
]


def limit_blas_threads(n: int = 1) -> bool:
    """Limit the BLAS libraries of this process to ``n`` threads (threadpoolctl).

    The per-run linear algebra is small; several worker processes each spinning a BLAS thread
    pool on the same cores slow the proxy refits down by an order of magnitude. Returns
    whether a BLAS library was found.
    """
    from threadpoolctl import threadpool_limits

    return bool(threadpool_limits(limits=n, user_api="blas").get_original_num_threads())


def split_models(
    n_models: int,
    *,
    how: str = "random",
    dates: np.ndarray | None = None,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Split rows into a history half and a test half.

    Parameters
    ----------
    n_models : int
    how : {"random", "date"}
        ``date`` puts the older half (by ``dates``) in the history
        (``docs/selection.md``, Experiments).
    dates : array-like of shape (n_models,), optional
        Sortable release dates (required for ``date``).
    random_state : int

    Returns
    -------
    history, test : ndarray of int of shapes (n_models // 2,), (n_models - n_models // 2,)
        Row indices of the two halves (together every row once).
    """
    random_state = check_seed(random_state, "random_state")
    if how == "date":
        if dates is None:
            raise InputError("split='date' needs model release dates")
        order = np.argsort(np.asarray(dates), kind="stable")
    elif how == "random":
        order = np.random.default_rng(random_state).permutation(n_models)
    else:
        raise InputError(f"split={how!r}; expected 'date' or 'random'")
    half = n_models // 2
    if half < 2:
        raise InputError(
            f"{n_models} models: halving them leaves {half} history model(s) and "
            f"{n_models - half} candidate(s); a history needs at least 2 models (and a selection "
            "2 candidates), so at least 4 models are needed"
        )
    return np.sort(order[:half]), np.sort(order[half:])


def exact_gap_pool(means: np.ndarray, gap: float | None, size: int = 1000) -> np.ndarray:
    """Exact-gap difficulty pool (``docs/selection.md``, Experiments).

    The best model; as #2 the model whose gap to the best is closest to ``gap`` (models ranked
    between them are dropped); then the next ``size - 2`` models below #2.

    Parameters
    ----------
    means : ndarray of shape (n,)
        True means of the candidate models.
    gap : float or None
        Target top-2 gap; ``None`` keeps the ``size`` best models.
    size : int

    Returns
    -------
    ndarray of int of shape (k,), k <= size
        Row indices into ``means``, best first.
    """
    means = np.asarray(means, dtype=np.float64)
    order = np.argsort(-means, kind="stable")
    if gap is None:
        return order[:size]
    if gap < 0:
        raise InputError(f"gap={gap!r}; expected a nonnegative number")
    top = order[0]
    dist = np.abs((means[top] - means[order[1:]]) - gap)
    k = 1 + int(np.argmin(dist))
    return np.concatenate(([top], order[k : k - 1 + size]))


def parse_pools(text: str) -> list[tuple[str, float | None]]:
    """Parse ``gap:0.01,0.02,full`` into ``[("gap0.01", 0.01), ..., ("full", None)]``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    out: list[tuple[str, float | None]] = []
    for token in items:
        token = token.removeprefix("gap:").removeprefix("gap=")
        if token == "full":
            out.append(("full", None))
            continue
        try:
            gap = float(token)
        except ValueError:
            gap = math.nan
        if not (math.isfinite(gap) and gap >= 0):  # nan, inf: the nearest gap to nothing
            raise InputError(
                f"pools entry {token!r}; expected a gap like 0.02 (a finite number >= 0) or 'full'"
            )
        out.append((f"gap{gap:g}", gap))
    if not out:
        raise InputError(f"pools={text!r}; expected e.g. 'gap:0.01,0.02,full'")
    return out


@dataclass(frozen=True)
class ExperimentSettings:
    """What every run of an experiment shares; sent once to each worker process.

    Attributes
    ----------
    scores : ndarray of shape (n_models, n_items), float32
        Full matrix of the candidate models.
    pools : dict
        Pool name -> row indices into ``scores``.
    budget, batch_size : int
        Post-initialisation cells per run, and cells per round.
    init_batch : int or None
        Initial cells per model (None: each policy's default; a spec's ``init_batch`` wins).
    proxy : LowRankProxy or None
        Fitted on the history (PULSE and Naive-Pooling need it).
    grid : ndarray of shape (G,)
        Post-init budgets at which the recommendation is scored.
    stop : {"budget", "confidence"}
        Whether every run also stops at its first certificate.
    delta : float
        Error probability of the certificates.
    """

    scores: np.ndarray
    pools: dict[str, np.ndarray]
    budget: int
    batch_size: int
    init_batch: int | None
    proxy: LowRankProxy | None
    grid: np.ndarray
    stop: str = "budget"
    delta: float = 0.05


_SETTINGS: list[ExperimentSettings] = []


def _init_worker(settings: ExperimentSettings) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's graceful stop (forked)
    limit_blas_threads(1)
    _SETTINGS[:] = [settings]


def _run_task(task: Task) -> dict[str, Any]:
    pool_name, spec, seed = task
    return _run_one(_SETTINGS[0], pool_name, spec, seed)


def _run_one(settings: ExperimentSettings, pool_name: str, spec: str, seed: int) -> dict[str, Any]:
    scores = settings.scores[settings.pools[pool_name]]
    label, name, spec_kw, run_kw = parse_policy(spec)
    options = POLICIES[name].options
    extra: dict[str, Any] = {"delta": settings.delta} if "delta" in options else {}
    extra.update(lucb_bonus(name, settings.stop, spec_kw))  # LUCB sampling, as in a replay
    policy = make_policy(spec, extra)
    oracle = MatrixOracle(scores)
    mu = oracle.true_means()
    result = run_selection(
        oracle,
        policy,
        budget=settings.budget,
        batch_size=settings.batch_size,
        init_batch=run_kw.get("init_batch", settings.init_batch),
        item_order=run_kw.get("item_order"),
        proxy=settings.proxy,
        random_state=seed,
        stop=settings.stop,
        # a run without a certificate takes none: it would refuse one that is not the default
        delta=settings.delta if reads_delta(policy, settings.stop) else None,
        true_means=mu,
    )
    # right: a model with the largest true mean (an exact tie at the top has several)
    top = float(mu.max()) - 1e-12
    return {
        "pool": pool_name,
        "policy": label,
        "seed": seed,
        "correct": mu[result.best_at(settings.grid)] >= top,
        "covered": result.covered,
        "init": result.evaluations_init,
        "post": result.evaluations_post_init,
        "certified": bool(result.certified) if settings.stop == "confidence" else None,
        "final_correct": bool(mu[result.best] >= top),
        "seconds": result.seconds,
        "proxy_seconds": result.proxy_seconds,
    }


@dataclass(eq=False)  # arrays: == by identity, not a ValueError
class ExperimentResult:
    """Identification accuracy curves and budget-to-target summaries.

    Attributes
    ----------
    grid : ndarray of shape (G,)
        Post-init budgets of the curves.
    curves : dict
        ``(pool, policy) -> ndarray (n_seeds, G)`` of bool (recommendation correct).
    summary : list of dict
        One row per (pool, policy): budget to target (post-init and total: the crossing of the
        accuracy curve of all the seeds, None when that curve never reaches the target, with
        ``reached`` False and ``final_accuracy`` saying where it ended; ``_sd``: the SD of the
        crossing over bootstrap resamples of the seeds, None with one seed), % saved vs the
        reference policy (from the same crossings; None when either never reaches the
        target; its SE and interval None with one seed), empirical coverage (``coverage``:
        the share of runs whose intervals held every model's mean after every round, with
        its Wilson 95% interval over the runs, ``coverage_lower`` and ``coverage_upper``),
        seconds per run. With ``stop="confidence"`` also the cells at the stop,
        ``certified_fraction``, ``certified_correct`` and ``saving_censored``: None where
        every run of the policy and of the reference certified (or there is no saving),
        else how many runs of each did not certify within the budget and so count all of it,
        and which bound the saving (computed on those censored costs) is on the true one.
    pools : dict
        ``pool -> {"n_models", "top2_gap"}``: the pool's size and its measured gap between
        the two best means (a gap pool is named by that measured gap, e.g. ``gap0.021``).
    params : dict
        The run's settings (budget, batch sizes, stop, delta, seeds, target, reference
        policy, and from :func:`experiment_from_matrix` the split, rank and proxy fit), as
        ``summary.json``'s ``params``.
    """

    grid: np.ndarray
    curves: dict[tuple[str, str], np.ndarray]
    summary: list[dict[str, Any]]
    pools: dict[str, dict[str, Any]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """Short: pools, policies, seeds and the budget grid (the table: :meth:`to_frame`,
        the curves: :meth:`curve_frame`)."""
        policies = list(dict.fromkeys(policy for _, policy in self.curves))
        seeds = sorted({int(curve.shape[0]) for curve in self.curves.values()})
        top = f"{int(self.grid[-1]):,}" if len(self.grid) else "0"
        return (
            f"ExperimentResult({len(self.pools or {p for p, _ in self.curves}):,} pool(s) x "
            f"{len(policies)} policies ({', '.join(policies)}), "
            f"{'/'.join(map(str, seeds))} seed(s) each, curves to {top} post-init evaluations)"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the one-line repr, then the summary table."""
        return html_block(repr(self), self.to_frame, whole=".to_frame()")

    def to_frame(self) -> pd.DataFrame:
        """Summary table as a pandas DataFrame.

        Returns
        -------
        DataFrame
            One row per summary record (pool and policy).
        """
        import pandas as pd

        return pd.DataFrame(self.summary)

    def save(self, out: str | Path) -> list[Path]:
        """Write ``summary.json``, ``summary.csv`` and ``curves.csv`` into ``out`` (created);
        returns their paths, as the other results' ``save`` do.

        ``curves.csv`` is long: one row per pool, policy and budget, with columns ``pool``,
        ``policy``, ``evaluations`` (post-initialisation cells), ``accuracy`` (fraction of
        seeds whose recommendation was the true best) and ``se`` (its binomial standard error
        over seeds, ``sqrt(p (1 - p) / n_seeds)``).

        Parameters
        ----------
        out : path-like
            The directory (created when absent).

        Returns
        -------
        list of Path
            ``summary.json``, ``summary.csv``, ``curves.csv``.
        """

        from latentbench.io import check_destination
        from latentbench.io._outputs import write_directory

        out = Path(out)
        check_destination(out, "dir", flag="out=")  # a file there: said, not FileExistsError
        record = {"params": self.params, "pools": self.pools, "summary": self.summary}
        # strict JSON: a missing value is null, never a bare NaN token
        text = json.dumps(_plain(record), indent=1, allow_nan=False)
        summary, curves = self.to_frame(), self.curve_frame()
        # all together, summary.json last: a failed save, or another saving into the same
        # folder at once, never leaves one run's tables beside another's summary
        write_directory(out, {
            "summary.csv": lambda path: summary.to_csv(path, index=False),
            "curves.csv": lambda path: curves.to_csv(path, index=False),
            "summary.json": lambda path: path.write_text(text),
        }, last="summary.json")  # fmt: skip
        return [out / name for name in ("summary.json", "summary.csv", "curves.csv")]

    def write(self, out: str | Path) -> list[Path]:
        """Deprecated name of :meth:`save` (kept for scripts written before it).

        Parameters
        ----------
        out : str or Path
            The output directory, as for :meth:`save`.

        Returns
        -------
        list of Path
            The files written.

        Warns
        -----
        DeprecationWarning
            Always.
        """
        warnings.warn(
            "ExperimentResult.write is deprecated; use ExperimentResult.save (same files, "
            "returns their paths)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.save(out)

    def curve_frame(self) -> pd.DataFrame:
        """The accuracy curves as a long table (the columns of ``curves.csv``).

        Returns
        -------
        DataFrame
            Columns ``pool``, ``policy``, ``evaluations``, ``accuracy`` (mean over seeds) and
            ``se`` (its binomial standard error), one row per grid point of each curve.
        """
        import pandas as pd

        parts: list[pd.DataFrame] = []
        for (pool, pol), arr in self.curves.items():
            accuracy = np.asarray(arr, dtype=float).mean(axis=0)
            parts.append(
                pd.DataFrame(
                    {
                        "pool": pool,
                        "policy": pol,
                        "evaluations": np.asarray(self.grid),
                        "accuracy": accuracy,
                        "se": np.sqrt(accuracy * (1 - accuracy) / max(len(arr), 1)),
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)


def run_experiment(
    scores: np.ndarray,
    pools: dict[str, np.ndarray],
    policies: list[str],
    *,
    seeds: int | list[int] = 200,
    budget: int = 400_000,
    batch_size: int | None = None,
    init_batch: int | None = None,
    proxy: LowRankProxy | None = None,
    stop: str = "budget",
    delta: float = 0.05,
    target: float = 0.95,
    reference: str | None = None,
    engine: str = "local",
    n_jobs: int | None = None,
    grid_step: int | None = None,
    ray_address: str | None = None,
    progress: ProgressCallback | None = None,
    stop_event: threading.Event | None = None,
) -> ExperimentResult:
    """Run every policy on every pool for every seed and summarise.

    Parameters
    ----------
    scores : ndarray of shape (n_models, n_items)
        Full matrix of the candidate (test) models.
    pools : dict
        ``name -> row indices`` into ``scores`` (e.g. from :func:`exact_gap_pool`).
    policies : list of str
        Policy specs (see :func:`parse_policy`).
    seeds : int or list of int
        Number of seeds (``seed = 10000 * run``) or explicit seeds.
    budget : int
        Post-init cells per run (see :func:`run_selection`).
    batch_size, init_batch : int, optional
        By default :func:`~latentbench.select.default_schedule` of the largest pool: the same
        batch and the same start for every policy but one whose spec sets its own
        ``init_batch``; an ``init_batch`` here that every spec overrides (no policy uses
        it) is an error.
    proxy : LowRankProxy, optional
        Fitted on the history; needed by PULSE and Naive-Pooling.
    stop : {"budget", "confidence"}, default "budget"
        ``confidence``: every run also stops at its first certificate at ``delta`` (PULSE
        with LUCB sampling; UCB-E and uniform certified on their revealed cells); the summary
        then compares the cells at the stop.
    delta : float, default 0.05
        Error probability of the certificates (passed to the policies' ``delta``).
    target : float
        Identification accuracy for the budget summary.
    reference : str, optional
        Policy spec that "% saved" is computed against (default: the first ``ucbe`` spec).
    engine : {"local", "ray"}
    n_jobs : int, optional
        Local processes (default, or -1 as elsewhere: all cores; 1 runs in-process); 0, a
        negative number other than -1 or a fraction is refused.
    grid_step : int, optional
        Resolution of the curves (default ``batch_size``).
    ray_address : str, optional
    progress : callable, optional
        ``progress(phase, done, total)``, as every long operation takes it: phase ``"runs"``,
        ``done`` of ``total`` runs (a run is one pool, policy and seed).
    stop_event : threading.Event, optional
        When set (another thread, a signal handler: Ctrl-C in the command), the runs in
        flight finish, the others are not started, and the summary covers the seeds that
        every pool and policy completed (``params["n_seeds"]``, with ``params["seeds_asked"]``
        and one warning saying so; paired comparisons need the same seeds everywhere). The
        runs go seed by seed, so little is lost. Local engine only.

    Returns
    -------
    ExperimentResult
    """
    if not isinstance(policies, str):  # (a string is refused with the other options)
        refuse_spec_init_batch(policies, init_batch, "policies")  # read by no policy
    check_event(stop_event)
    check_select_delta(delta)  # before any run (a pulse run refused it after the others)
    seed_list, reference = _check_run_options(policies, engine, seeds, budget, reference, stop)
    _refuse_unread_delta(policies, stop, delta)
    n_jobs = check_jobs(n_jobs, none_ok=True)  # 0 and -5 ran on all cores, unsaid
    shared = _settings(scores, pools, budget, batch_size, init_batch, grid_step, proxy, stop,
                       delta)  # fmt: skip
    # seed by seed: a stopped experiment keeps whole seeds (every pool and policy)
    tasks = [(p, spec, s) for s in seed_list for p in pools for spec in policies]
    start = time.perf_counter()
    runs = None if progress is None else partial(notify, progress, "runs")
    results = _run_tasks(shared, tasks, engine, n_jobs, ray_address, runs, stop_event)
    asked = len(seed_list)
    if len(results) < len(tasks):  # stopped: the seeds every pool and policy completed
        seed_list, results = _complete_seeds(results, seed_list, len(pools) * len(policies))
        warnings.warn(
            f"stopped after {len(seed_list):,} of {asked:,} seeds; the summary covers those",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    elapsed = time.perf_counter() - start
    result = _summarise(results, shared, pools, policies, seed_list, target, reference, elapsed)
    if len(seed_list) < asked:
        result.params["seeds_asked"] = asked
    return result


def _check_run_options(
    policies: list[str],
    engine: str,
    seeds: int | list[int],
    budget: int,
    reference: str | None,
    stop: str,
) -> tuple[list[int], str | None]:
    """Refuse bad options of :func:`run_experiment` (in this order: policies, engine, seeds,
    budget, a delta in a spec, reference, stop); return the seeds and the stripped
    reference."""
    if isinstance(policies, str):
        raise InputError(
            f"policies={policies!r}; expected a list of policy specs, e.g. ['pulse', 'ucbe']"
        )
    if engine not in ("local", "ray"):
        raise InputError(f"engine={engine!r}; expected 'local' or 'ray'")
    seed_list = _seed_list(seeds)
    # an integer: 60.0 passed here and was refused by every run; NaN / inf raised from int()
    if not isinstance(budget, numbers.Integral) or isinstance(budget, bool) or budget < 1:
        raise InputError(f"budget={budget!r}; expected a positive number of cells per run")
    for spec in policies:
        refuse_spec_delta(spec, "policies")  # the run's delta= would override it, silently
    labels = [spec.strip() for spec in policies]
    if len(set(labels)) < len(labels):  # one label: its rows and curves counted each run twice
        again = next(label for label in labels if labels.count(label) > 1)
        raise InputError(f"policies: {again!r} repeats; expected distinct policy specs")
    if reference is not None:  # checked before the runs (it raised KeyError after them)
        reference = reference.strip()
        if reference not in [spec.strip() for spec in policies]:
            raise InputError(
                f"reference={reference!r}; expected one of the policies "
                f"{[spec.strip() for spec in policies]}"
            )
    if stop not in ("budget", "confidence"):
        raise InputError(f"stop={stop!r}; expected 'budget' or 'confidence'")
    return seed_list, reference


def _refuse_unread_delta(policies: Sequence[str], stop: str, delta: float) -> None:
    """Refuse a ``delta`` other than the default that no run of the experiment reads: at a
    budget stop every policy of the list is without intervals (UCB-E, uniform, ...), so none
    builds a certificate (the runs were the default's, unsaid). One policy that reads it is
    enough: the others' runs take none (:func:`~latentbench.select._run.reads_delta`)."""
    if stop != "budget" or float(delta) == DEFAULT_DELTA:
        return
    if any(reads_delta(make_policy(spec), stop) for spec in policies):
        return
    raise InputError(
        f"delta={delta:g} applies to a certificate, and none of policies "
        f"{','.join(spec.strip() for spec in policies)!r} has one with stop={stop!r}; expected "
        "stop='confidence' (a betting certificate on its revealed cells), a policy with "
        "intervals (e.g. pulse) or no delta="
    )


def _seed_list(seeds: int | list[int]) -> list[int]:
    """The seeds of ``seeds`` (a count: ``10000 * run``), at least one and distinct."""
    if isinstance(seeds, int | numbers.Integral):  # np.int64 too (it was iterated)
        seed_list = [10000 * k for k in range(int(seeds))]
    else:  # each a seed: 'a' or -1 named here, not by numpy's SeedSequence in a worker
        seed_list = [check_seed(seed, "seeds") for seed in seeds]
    if not seed_list:
        raise InputError(f"seeds={seeds!r}; expected at least one seed")
    if len(set(seed_list)) < len(seed_list):  # a repeated seed is one run counted twice
        again = next(s for s in seed_list if seed_list.count(s) > 1)
        raise InputError(f"seeds: {again!r} repeats; expected distinct seeds")
    return seed_list


def _settings(
    scores: np.ndarray,
    pools: dict[str, np.ndarray],
    budget: int,
    batch_size: int | None,
    init_batch: int | None,
    grid_step: int | None,
    proxy: LowRankProxy | None,
    stop: str,
    delta: float,
) -> ExperimentSettings:
    """What every run shares: the schedule (by default that of the largest pool) and the
    grid of the curves (``grid_step`` apart, ending at ``budget``)."""
    for key, value in (("batch_size", batch_size), ("grid_step", grid_step)):
        # before the curves' grid (0 divided by zero there, -4 left it empty: tracebacks)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1
        ):
            raise InputError(f"{key}={value!r}; expected a positive integer")
    largest = max((len(rows) for rows in pools.values()), default=1)
    schedule = default_schedule(largest, int(np.shape(scores)[1]), budget)
    batch_size = schedule[0] if batch_size is None else batch_size
    init_batch = schedule[1] if init_batch is None else init_batch
    grid = np.arange(0, budget + 1, grid_step or batch_size)
    if grid[-1] != budget:
        grid = np.append(grid, budget)
    return ExperimentSettings(
        scores=np.asarray(scores, dtype=np.float32),
        pools={k: np.asarray(v) for k, v in pools.items()},
        budget=int(budget),
        batch_size=int(batch_size),
        init_batch=None if init_batch is None else int(init_batch),
        proxy=proxy,
        grid=grid,
        stop=stop,
        delta=float(delta),
    )


def _run_tasks(
    shared: ExperimentSettings,
    tasks: list[Task],
    engine: str,
    n_jobs: int | None,
    ray_address: str | None,
    progress: Progress | None,
    stop_event: threading.Event | None,
) -> list[dict[str, Any]]:
    """The tasks' results, in their order: on Ray, in-process (one worker) or in a local
    pool of processes; a set ``stop_event`` starts no more tasks (local engine)."""
    if engine == "ray":
        return _run_ray(shared, tasks, ray_address, progress)
    workers = n_jobs if n_jobs is not None and n_jobs > 0 else os.cpu_count() or 1
    if workers != 1:
        return _run_local_pool(shared, tasks, workers, progress, stop_event)
    results: list[dict[str, Any]] = []
    for k, t in enumerate(tasks):
        if stop_event is not None and stop_event.is_set():
            break
        results.append(_run_one(shared, *t))
        if progress:
            progress(k + 1, len(tasks))
    return results


def _complete_seeds(
    results: list[dict[str, Any]], seed_list: list[int], per_seed: int
) -> tuple[list[int], list[dict[str, Any]]]:
    """The seeds whose ``per_seed`` runs (every pool and policy) all finished, and their
    results.

    Raises
    ------
    KeyboardInterrupt
        No seed finished.
    """
    counts = Counter(r["seed"] for r in results)
    seed_list = [s for s in seed_list if counts[s] == per_seed]
    if not seed_list:
        raise KeyboardInterrupt("stopped before any seed was complete")
    kept = set(seed_list)
    return seed_list, [r for r in results if r["seed"] in kept]


def _run_local_pool(
    shared: ExperimentSettings,
    tasks: list[Task],
    workers: int,
    progress: Progress | None,
    stop_event: threading.Event | None,
) -> list[dict[str, Any]]:
    """``tasks`` in ``workers`` processes, results in the tasks' order; once ``stop_event``
    is set, the tasks not started are cancelled and those in flight finish (the workers
    ignore Ctrl-C: the parent decides). An exception (a second Ctrl-C) cancels the queue
    instead of waiting for it."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, wait

    if stop_event is not None and stop_event.is_set():
        return []
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else "spawn")
    ex = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(shared,))  # fmt: skip
    try:
        with forking():  # the workers start at the first submit
            futures = [ex.submit(_run_task, t) for t in tasks]
        pending, n_done = set(futures), 0
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            n_done += len(done)
            if done and progress:
                progress(n_done, len(tasks))
            if stop_event is not None and stop_event.is_set():
                for f in pending:
                    f.cancel()  # not started: never run; in flight: finishes
                while pending:  # with a timeout: a signal the OS gave a pool thread (a
                    # second Ctrl-C) is handled on this thread, which only then runs Python
                    _, pending = wait(pending, timeout=0.2)
                break
        return [f.result() for f in futures if not f.cancelled()]
    except BaseException:  # a second Ctrl-C, a failed run: stop the workers, keep nothing
        for process in list((getattr(ex, "_processes", None) or {}).values()):
            process.terminate()
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        ex.shutdown(wait=True)


def _run_ray(
    shared: ExperimentSettings, tasks: list[Task], address: str | None, progress: Progress | None
) -> list[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise InputError(
            "engine='ray' needs the optional extra: pip install 'latentbench[ray]'"
        ) from None
    started = False
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        started = True
    try:
        ref = ray.put(shared)

        @ray.remote  # type: ignore[untyped-decorator,unused-ignore]  # untyped without ray
        def _remote(shared_ref: ExperimentSettings, task: Task) -> dict[str, Any]:
            return _run_one(shared_ref, *task)

        pending = [_remote.remote(ref, t) for t in tasks]
        out: list[dict[str, Any]] = ray.get(pending)
        if progress:
            progress(len(out), len(tasks))
        return out
    finally:
        if started:
            ray.shutdown()


def _summarise(
    results: list[dict[str, Any]],
    shared: ExperimentSettings,
    pools: dict[str, np.ndarray],
    policies: list[str],
    seed_list: list[int],
    target: float,
    reference: str | None,
    elapsed: float,
) -> ExperimentResult:
    grid = shared.grid
    curves: dict[tuple[str, str], np.ndarray] = {}
    meta: dict[tuple[str, str], list[dict[str, Any]]] = {}
    order = {s: k for k, s in enumerate(seed_list)}
    for res in results:
        key = (res["pool"], res["policy"])
        meta.setdefault(key, []).append(res)
    for key, rows in meta.items():
        rows.sort(key=lambda r: order[r["seed"]])
        curves[key] = np.stack([r["correct"] for r in rows])
    if reference is None:
        reference = next((p for p in policies if p.split(":")[0].strip() == "ucbe"), None)
    reference = None if reference is None else reference.strip()
    summary = []
    pool_info = {}
    for pool, pool_rows in pools.items():
        m = len(pool_rows)
        means = np.nan_to_num(shared.scores[pool_rows]).mean(axis=1, dtype=np.float64)
        srt = np.sort(means)[::-1]
        pool_info[pool] = {"n_models": m, "top2_gap": float(srt[0] - srt[1]) if m > 1 else None}
        ref_key = None if reference is None else (pool, reference.strip())
        for spec in policies:
            key = (pool, spec.strip())
            rows_ = meta[key]
            stats = budget_to_accuracy(curves[key], grid, target=target)
            stats90 = budget_to_accuracy(curves[key], grid, target=0.9)
            init = rows_[0]["init"]
            cov = [r["covered"] for r in rows_ if r["covered"] is not None]
            cov_ci = wilson_interval(float(np.mean(cov)), len(cov)) if cov else (None, None)
            # the estimate is the crossing of all the seeds' curve; the bootstrap its spread
            # (none from one seed: every resample is that seed; none where the crossing is
            # the slowest seed's, whose resamples can only move it one way: budget_sd_note)
            spread = len(rows_) > 1
            spread95 = spread and _tail_seeds(len(rows_), target) >= MIN_TAIL_SEEDS
            spread90 = spread and _tail_seeds(len(rows_), 0.9) >= MIN_TAIL_SEEDS
            row = {
                "pool": pool,
                "policy": spec.strip(),
                "n_models": m,
                "n_seeds": len(rows_),
                "init_evaluations": init,
                "budget_post_init": stats["point"],
                "budget_post_init_sd": stats["first_sd"] if spread95 else None,
                "budget_post_init_sustained": stats["sustained_point"],
                "budget_total": stats["point"] + init,
                "budget_post_init_90": stats90["point"],
                "budget_post_init_90_sd": stats90["first_sd"] if spread90 else None,
                "reached": bool(np.isfinite(stats["point"])),
                "reached_fraction": stats["reached"],
                "final_accuracy": float(curves[key][:, -1].mean()),
                "coverage": float(np.mean(cov)) if cov else None,
                "coverage_lower": cov_ci[0],
                "coverage_upper": cov_ci[1],
                "seconds_per_run": float(np.mean([r["seconds"] for r in rows_])),
            }
            post = np.array([r["post"] for r in rows_], dtype=float)
            if shared.stop == "confidence":
                cert = np.array([bool(r["certified"]) for r in rows_])
                right = np.array([bool(r["final_correct"]) for r in rows_])
                row.update(
                    cells_at_stop_post_init=float(post.mean()),
                    cells_at_stop_post_init_se=_se(post),
                    certified_fraction=float(cert.mean()),
                    certified_correct=float(right[cert].mean()) if cert.any() else None,
                )
            if ref_key is not None:
                ref_rows = meta[ref_key]
                if shared.stop == "confidence":
                    ref_post = np.array([r["post"] for r in ref_rows], dtype=float)
                    row.update(paired_saving_at_stop(post, ref_post, init, ref_rows[0]["init"]))
                else:
                    row.update(
                        paired_saving(
                            curves[key],
                            curves[ref_key],
                            grid,
                            init=init,
                            ref_init=ref_rows[0]["init"],
                            target=target,
                        )
                    )
            if not spread:  # one seed: a saving, but no SE or interval
                for name in ("saved_post_init_pct", "saved_total_pct"):
                    for part in ("se", "lo", "hi"):
                        if f"{name}_{part}" in row:
                            row[f"{name}_{part}"] = None
            summary.append(_plain(row))
    params = {
        "budget": shared.budget,
        "batch_size": shared.batch_size,
        "init_batch": shared.init_batch,
        "stop": shared.stop,
        "delta": shared.delta,
        "n_seeds": len(seed_list),
        "target": target,
        "reference": reference,
        "seconds": elapsed,
    }
    note = budget_sd_note(len(seed_list), target)
    if note is not None:  # the report's budget table (a stop's too) leaves those SDs out
        params["budget_sd_note"] = note
    # at a certified stop where neither the policy nor the reference certified: no saving
    summary = unmeasured_savings(summary, params)
    # where only some runs certified: the saving is on censored costs, and which bound it is
    summary = censored_savings(summary, params)
    return ExperimentResult(
        grid=grid, curves=curves, summary=summary, pools=pool_info, params=params
    )


def _plain(value: Any) -> Any:
    """``value`` as strict JSON: NaN and infinities (a budget never reached, a saving without
    its two crossings, an SE of one seed) become None, NumPy scalars Python ones."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if isinstance(value, (numbers.Real, np.floating)):
        return float(value) if math.isfinite(float(value)) else None
    return value


def _label_by_gap(pools: dict[str, np.ndarray], means: np.ndarray) -> dict[str, np.ndarray]:
    """Name each gap pool by its measured top-two gap (``gap0.063``), not the target it was
    built for (the nearest model may be far from the target on a small leaderboard); ``full``
    keeps its name. Equal names of different models get ``-2``, ``-3``, ...; a pool of the
    same models as an earlier gap pool (two targets whose nearest gap is the same) is run
    once, with a warning (it was run again under ``-2``, as if it were another pool)."""
    out: dict[str, np.ndarray] = {}
    asked: dict[str, str] = {}  # label -> the pool name that built it
    for name, rows in pools.items():
        same = next(
            (
                k
                for k, r in out.items()
                if k != "full" and np.array_equal(np.sort(r), np.sort(rows))
            ),
            None,
        )
        if same is not None and name != "full":  # "full" keeps its name and its row
            warnings.warn(
                f"pools: {name!r} selects the same {len(rows)} models as {asked[same]!r} "
                f"(measured top-two gap {same[3:]}); it is run once, as {same!r}",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
            continue
        label = name
        if name != "full" and len(rows) > 1:
            top = np.sort(means[rows])[::-1]
            label = f"gap{top[0] - top[1]:.3f}"
        base, k = label, 2
        while label in out:
            label, k = f"{base}-{k}", k + 1
        out[label], asked[label] = rows, name
    return out


def _show_columns(frame: Any) -> str:
    """A sidecar's columns for an error: the first eight, quoted, and how many more."""
    names = [repr(str(c)) for c in frame.columns]
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(names[:8]) + more if names else "no columns"


def release_dates(responses: str | os.PathLike[str], model_ids: Sequence[str]) -> np.ndarray:
    """The models' release dates from the sidecar beside a responses file
    (``NAME_models.parquet`` beside ``NAME.parquet``, columns ``model`` and ``created_date``,
    ``release_date`` or ``date``), in the order of ``model_ids``: what ``split="date"`` needs.

    Parameters
    ----------
    responses : path-like
        The responses file (``NAME.parquet``).
    model_ids : sequence of str
        The models whose dates are wanted.

    Returns
    -------
    ndarray of datetime64[ns], shape (n_models,)

    Raises
    ------
    InputError
        No sidecar, no model or date column, or a model without a date.
    """
    import pandas as pd

    path = Path(responses)
    side = path.with_name(path.stem + "_models.parquet")
    if not side.exists():
        raise InputError(
            f"split='date' needs release dates: {side.name} (columns 'model' and "
            "'created_date', 'release_date' or 'date') was not found beside the responses; "
            "pass dates= or use split='random'"
        )
    frame = pd.read_parquet(side)
    column = next((c for c in ("created_date", "release_date", "date") if c in frame.columns), None)
    if "model" not in frame.columns:
        raise InputError(
            f"{side.name} has no 'model' column (it has {_show_columns(frame)}); pass dates= "
            "or use split='random'"
        )
    if column is None:
        raise InputError(
            f"{side.name} has no date column: expected 'created_date', 'release_date' or "
            f"'date' (it has {_show_columns(frame)}); pass dates= or use split='random'"
        )
    lookup = dict(zip(frame["model"].astype(TEXT), pd.to_datetime(frame[column]), strict=False))
    missing = [m for m in model_ids if str(m) not in lookup]
    if missing:
        raise InputError(f"{side.name} has no date for model {missing[0]!r}")
    return np.array([lookup[str(m)] for m in model_ids], dtype="datetime64[ns]")


def _refuse_missing_candidate_cells(scores: np.ndarray, test: np.ndarray, matrix: Any) -> None:
    """A missing candidate cell, named by its model and item ids (of the file, not
    positions inside the candidate half) and the file when known, with the ways out."""
    holes = np.isnan(scores[test])
    if not holes.any():
        return
    row, col = (int(v) for v in np.argwhere(holes)[0])
    model_ids, item_ids = getattr(matrix, "model_ids", None), getattr(matrix, "item_ids", None)
    model = repr(str(model_ids[test[row]])) if model_ids is not None else f"row {test[row]}"
    item = repr(str(item_ids[col])) if item_ids is not None else f"column {col}"
    source = getattr(matrix, "source", None)
    n = int(holes.sum())
    count = "1 candidate cell is missing " if n == 1 else f"{n:,} candidate cells are missing "
    raise InputError(
        f"{f'{source}: ' if source else ''}{count}"
        f"(first: model {model}, item {item}); an experiment scores each candidate by its mean "
        "over every item: pass missing='drop-items' to drop the items with a missing "
        "candidate cell, missing='zero' to score them 0 explicitly, or drop incomplete models "
        "from the file"
    )


def not_a_matrix(source: object, what: str, *, arrays: bool = False) -> InputError:
    """The error for a ``source`` that is no matrix, no path (nor, with ``arrays``, an
    array): named by its role ``what``, with how to make a matrix of a table."""
    import pandas as pd

    table = (
        " (a table: ResponseMatrix.from_long(frame) or ResponseMatrix.from_wide(frame) "
        "makes it a matrix)"
        if isinstance(source, pd.DataFrame)
        else ""
    )
    array = ", an array of shape (n_models, n_items)" if arrays else ""
    return InputError(
        f"{what}: a {type(source).__name__}; expected a ResponseMatrix{array} or the path of a "
        f"Parquet/CSV file{table}"
    )


def _canonical_with_dates(
    matrix: ResponseMatrix, dates: np.ndarray | None
) -> tuple[ResponseMatrix, np.ndarray | None]:
    """``matrix`` in the canonical order of its ids (:func:`~latentbench.select._replay.
    _canonical`: the same cells as a wide file in another order or a long file give the same
    runs), and ``dates`` (one per row) in the same order."""
    from latentbench.select._replay import _canonical

    canonical = _canonical(matrix)
    if canonical is matrix or dates is None:
        return canonical, dates
    given = np.asarray(dates)
    if given.shape[:1] != (matrix.n_models,):
        return canonical, dates  # refused below with the count (split_models)
    row = {m: k for k, m in enumerate(matrix.model_ids)}
    return canonical, given[[row[m] for m in canonical.model_ids]]


def _check_simulation(simulate: Any, sim_rank: Any, shape: tuple[int, int]) -> int:
    """Refuse a ``simulate`` too small to halve into a history and candidates of 2 models
    each, and a ``sim_rank`` outside ``[1, min(shape)]`` (the ranks the source matrix of
    ``shape`` can fit), naming the keyword and the value; returns the rank (None: the
    default, 4, or ``min(shape)`` where that is smaller)."""
    if isinstance(simulate, bool) or not isinstance(simulate, numbers.Integral) or simulate < 4:
        raise InputError(
            f"simulate={simulate!r}; expected an integer >= 4 (the models to draw, halved "
            "into a history and candidates of at least 2 each)"
        )
    top = max(1, min(shape))
    if sim_rank is None:
        return min(SIM_RANK, top)
    if (
        isinstance(sim_rank, bool)
        or not isinstance(sim_rank, numbers.Integral)
        or not 1 <= int(sim_rank) <= top
    ):
        raise InputError(
            f"sim_rank={sim_rank!r}; expected an integer in [1, {top}] (min(models, items) = "
            f"min({shape[0]}, {shape[1]}) of the matrix the simulator is fitted to)"
        )
    return int(sim_rank)


SIM_RANK = 4
"""The simulator's default rank (``sim_rank=None``), capped at ``min(models, items)``."""


def experiment_from_matrix(
    matrix: ResponseMatrix | np.ndarray | str | os.PathLike[str],
    *,
    split: str = "random",
    dates: np.ndarray | None = None,
    pools: str | list[tuple[str, float | None]] = "gap:0.02",
    pool_size: int = 1000,
    policies: list[str] | tuple[str, ...] = ("pulse", "ucbe", "naive"),
    seeds: int | list[int] = 20,
    budget: int = 400_000,
    batch_size: int | None = None,
    init_batch: int | None = None,
    stop: str = "budget",
    delta: float = 0.05,
    rank: int | str = "auto",
    simulate: int | None = None,
    sim_rank: int | None = None,
    random_state: int = 0,
    engine: str = "local",
    n_jobs: int | None = None,
    progress: ProgressCallback | None = None,
    missing: str = "error",
    stop_event: threading.Event | None = None,
) -> ExperimentResult:
    """Python twin of ``latentbench experiment``: split, fit the proxy, build pools, run.

    Parameters
    ----------
    matrix : ResponseMatrix, ndarray of shape (n_models, n_items) or path
        Source scores, NaN = missing (see ``missing``); a path is read with
        :meth:`~latentbench.io.ResponseMatrix.read`. A store benchmark's (``latentbench
        experiment --store S --benchmark B``) is ``Store(S).matrix(B)``.
    split : {"random", "date"}
        How rows are halved into history and candidates (see :func:`split_models`).
    dates : array-like of shape (n_models,), optional
        Release dates for ``split="date"`` (with a path as ``matrix``, default: the sidecar
        beside it, :func:`release_dates`).
    pools : str or list
        ``"gap:0.01,0.02,full"`` or parsed pairs (see :func:`parse_pools`).
    pool_size : int
        Models per pool (at most the candidates available).
    policies : list of str, default ("pulse", "ucbe", "naive")
        Policy specs (:func:`~latentbench.select.parse_policy`), as the command's.
    seeds : int or list of int, default 20
        As the command's default (200 for publication-grade curves); see
        :func:`run_experiment`.
    budget, batch_size, init_batch, stop, delta
        See :func:`run_experiment`; ``budget`` is capped at the pool's unrevealed cells.
        The schedule (:func:`~latentbench.select.default_schedule`) is the largest pool's,
        the same for every policy.
    rank : int or "auto"
        Proxy rank (see :class:`~latentbench.select.LowRankProxy`); another value than
        ``"auto"`` is warned of when no policy learns a proxy (none uses it; no proxy is
        fitted then, ``params["proxy_rank"]`` is None).
    simulate : int, optional
        Replace the source by this many synthetic models drawn from a rank-``sim_rank``
        :class:`~latentbench.select.LeaderboardSimulator` fitted to it (``split`` is then
        random); at least 4 (a history and candidates of 2 each), else an
        :class:`~latentbench.exceptions.InputError`.
    sim_rank : int, optional
        Rank of the simulator fitted for ``simulate``, in ``[1, min(models, items)]`` of
        the source (else an :class:`~latentbench.exceptions.InputError`); by default 4, or
        ``min(models, items)`` of a source smaller than that.
    random_state : int
        Seeds the split and the simulator.
    engine, n_jobs
        See :func:`run_experiment`.
    progress : callable, optional
        ``progress(phase, done, total)``, as every long operation takes it
        (``docs/usability.md``): phase ``"runs"``, one call per run finished (seeds x pools x
        policies in all).
    missing : {"error", "zero", "drop-items"}, default "error"
        Missing cells of the candidate models: an error (the target mean needs every cell),
        scored 0 on purpose, or every item with a missing candidate cell dropped (for the
        history too; recorded in ``params["dropped_items"]``). A
        :class:`~latentbench.exceptions.DataWarning` says how many cells were scored 0 or
        items dropped (``params["missing_cells_scored_0"]`` / ``params["dropped_items"]``).
    stop_event : threading.Event, optional
        See :func:`run_experiment`.

    Returns
    -------
    ExperimentResult
    """
    check_event(stop_event)
    random_state = check_seed(random_state, "random_state")
    n_jobs = check_jobs(n_jobs, none_ok=True)  # before the split and the proxy fit
    from latentbench.select._proxy import LowRankProxy, check_rank, fit_history

    if isinstance(policies, str):
        raise InputError(
            f"policies={policies!r}; expected a list of policy specs, e.g. ['pulse', 'ucbe']"
        )
    check_select_delta(delta)  # before the proxy fit
    for spec in policies:  # before the proxy fit
        refuse_spec_delta(spec, "policies")
    refuse_spec_init_batch(policies, init_batch, "policies")  # read by no policy
    _refuse_unread_delta(policies, stop, delta)
    learns = any(POLICIES[parse_policy(s)[1]].needs_proxy for s in policies)
    if rank != "auto" and not learns:
        warnings.warn(  # accepted and not used: no proxy is fitted, and rank is not checked
            f"rank={rank!r} not used: policies {','.join(policies)!r} learn no proxy, and rank "
            "is the proxy's; drop rank, or add a policy that learns one (e.g. pulse)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    from latentbench.io import ResponseMatrix

    if isinstance(matrix, str | os.PathLike):
        path = matrix
        matrix = ResponseMatrix.read(path)
        if split == "date" and dates is None:  # the release dates beside the file
            dates = release_dates(path, matrix.model_ids)
    elif not isinstance(matrix, ResponseMatrix | np.ndarray):
        raise not_a_matrix(matrix, "matrix", arrays=True)
    # where the matrix came from (file and SHA-256, or store and cells' hash) and the version
    # that ran it, for a reader of summary.json or of its report who did not run it
    provenance = _input_provenance(matrix)
    if not isinstance(matrix, np.ndarray):  # ids: the canonical order, as replay takes it
        matrix, dates = _canonical_with_dates(matrix, dates)

    if isinstance(pool_size, bool) or int(pool_size) != pool_size or pool_size < 2:
        raise InputError(
            f"pool_size={pool_size!r}; expected an integer >= 2 (a pool to choose from)"
        )
    scores = np.asarray(getattr(matrix, "scores", matrix), dtype=np.float32)
    params: dict[str, Any] = {"split": split, "rank": rank, "pool_size": pool_size}
    params.update(provenance)
    if simulate is not None:
        from latentbench.synthetic import LeaderboardSimulator

        sim_rank = _check_simulation(simulate, sim_rank, scores.shape)  # before the fit
        sim = LeaderboardSimulator(rank=sim_rank).fit(scores)
        scores, _ = sim.sample(int(simulate), random_state)
        params.update(simulate=int(simulate), sim_rank=sim_rank, fidelity=sim.fidelity(scores))
        split, dates = "random", None
    hist, test = split_models(scores.shape[0], how=split, dates=dates, random_state=random_state)
    if missing == "error" and simulate is None:
        _refuse_missing_candidate_cells(scores, test, matrix)
    oracle = MatrixOracle(scores[test], missing=missing)
    candidates = oracle.scores
    if oracle.kept_items.size < scores.shape[1]:
        params["dropped_items"] = int(scores.shape[1] - oracle.kept_items.size)
        warnings.warn(
            f"missing='drop-items': dropped {params['dropped_items']:,} of {scores.shape[1]:,} "
            "items with a missing candidate cell (for the history too); each model's target is "
            f"its mean over the other {oracle.kept_items.size:,} (params['dropped_items'])",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    zeros = int(np.isnan(scores[test]).sum()) if missing == "zero" else 0
    if zeros:  # the user's choice, said (it changes each model's target)
        params["missing_cells_scored_0"] = zeros
        warnings.warn(
            f"missing='zero': {zeros:,} missing candidate cell(s) are scored 0, so each "
            "model's target is its mean with those zeros (params['missing_cells_scored_0'])",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    history = scores[hist][:, oracle.kept_items]
    what = f"the history ({len(hist)} models of the split)"
    proxy = None  # fitted only for a policy that reads it (its fit is most of a small run)
    if learns:
        check_rank(rank, history.shape, what)
        proxy = fit_history(LowRankProxy(rank=rank, random_state=random_state), history, what)
    means = candidates.mean(axis=1, dtype=np.float64)
    parsed = parse_pools(pools) if isinstance(pools, str) else list(pools)
    pool_rows = _label_by_gap(
        {name: exact_gap_pool(means, gap, pool_size) for name, gap in parsed}, means
    )
    largest = max(len(r) for r in pool_rows.values())
    n_items = candidates.shape[1]
    batch, start = default_schedule(largest, n_items, budget)
    batch_size = batch if batch_size is None else batch_size
    init_batch = start if init_batch is None else init_batch
    starts = [parse_policy(spec)[3].get("init_batch", init_batch) for spec in policies]
    cap = largest * (n_items - min(starts))
    if cap < 1:  # it was run_experiment's "budget=0" error, a budget nobody gave
        raise InputError(
            f"init_batch={min(starts)}; the initial batch takes all {n_items} item(s) of "
            "every candidate, leaving no cells to select; expected fewer initial cells per "
            "model than items (or a matrix with more items)"
        )
    # the user's init_batch was checked above; the default's, filled in, is passed only when
    # a policy starts with it (every spec's own: none, which run_experiment would refuse)
    shared_start = None if all(own != init_batch for own in starts) else init_batch
    result = run_experiment(
        candidates,
        pool_rows,
        list(policies),
        seeds=seeds,
        budget=int(min(budget, cap)),
        batch_size=batch_size,
        init_batch=shared_start,
        proxy=proxy,
        stop=stop,
        delta=delta,
        engine=engine,
        n_jobs=n_jobs,
        progress=progress,
        stop_event=stop_event,
    )
    params.update(
        n_history=int(hist.size),
        n_candidates=int(test.size),
        proxy_fit_seconds=None if proxy is None else proxy.fit_seconds_,
        proxy_rank=None if proxy is None else proxy.rank_,
    )
    result.params.update(params)
    return result


def _input_provenance(matrix: Any) -> dict[str, Any]:
    """``{"input": ..., "latentbench_version": ...}`` of an experiment's matrix: a file's path,
    SHA-256 and layout (as ``fit.json`` records them), or a store's benchmark and a hash of its
    cells; only the version for a matrix built in memory."""
    from latentbench import __version__
    from latentbench.io._files import input_record, store_input_record

    out: dict[str, Any] = {"latentbench_version": __version__}
    if isinstance(matrix, np.ndarray):
        return out
    source = getattr(matrix, "source", None)
    if getattr(matrix, "layout", None) and source is not None and Path(str(source)).is_file():
        out["input"] = input_record(str(source), matrix)
    elif (stored := store_input_record(matrix)) is not None:
        out["input"] = stored
    return out
