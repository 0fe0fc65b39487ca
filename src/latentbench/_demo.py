"""The demo: the main job on a built-in synthetic leaderboard (no download, no server).

:func:`demo` is the Python twin of ``latentbench demo``: it fits a 200 x 1,000 leaderboard
with planted flaws, then picks the best candidate of a second, leaderboard-like matrix with
PULSE (one certified run, then PULSE against UCB-E on several seeds), writes the fit, the
responses and an HTML report, and returns everything in a :class:`DemoResult`.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from latentbench._progress import ProgressCallback, notify

if TYPE_CHECKING:
    import numpy as np

    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult
    from latentbench.select import EstimateResult, ExperimentResult, SelectionResult

__all__ = [
    "DEMO_OUTPUTS",
    "DEMO_SEEDS",
    "DemoResult",
    "demo",
    "demo_matrix",
    "earlier_outputs",
    "first_budget",
    "no_interval",
    "saving",
]

DEMO_MODELS = 200
DEMO_ITEMS = 1000
DEMO_SEEDS = 20
"""Selection runs per policy: the fewest at which the saving's interval is honest at
:data:`TARGET` (one run may still be wrong where 95% of them are first right; with 12, the
demo's count until 2026-12-07, that point was the slowest run's, whose bootstrap interval
undercovers and printed a saving against UCB-E that 20 to 60 runs do not show:
``select._experiment_stats.MIN_TAIL_SEEDS``)."""
DEMO_OUTPUTS = ("fit", "responses.parquet", "candidates.parquet", "calibration.parquet",
                "new_model.parquet", "report.html")  # fmt: skip
"""What :func:`demo` writes in its folder (``fit/`` a folder), replacing an earlier demo's."""
DEMO_ESTIMATE_BUDGET = 100
"""Items the demo's new model is estimated from (of the second leaderboard's 1,000)."""
TARGET = 0.95
DEMO_SELECTION_SEED = 1
"""Seed of the demo's certified PULSE run: ``latentbench select replay`` on the files
``candidates`` and ``calibration`` (as its history) with ``--seed 1`` gives the same run."""


def demo_matrix(
    n_models: int = DEMO_MODELS,
    n_items: int = DEMO_ITEMS,
    missing: float = 0.1,
    random_state: int = 7,
) -> tuple[ResponseMatrix, dict[str, list[str]]]:
    """A leaderboard-like synthetic matrix with planted flaws.

    2PL responses (theta ~ N(0, 1), a ~ LogNormal(0, 0.3), b ~ N(0, 1)), a fraction
    ``missing`` of cells missing at random, plus 20 items answered at random (zero
    discrimination), 20 exact duplicates of other items and 10 items everyone gets right.
    Returns the matrix and the planted ids.
    """
    import numpy as np

    from latentbench.io import ResponseMatrix
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(n_models, n_items, missing=missing, random_state=random_state)
    rng = np.random.default_rng(random_state + 1)
    scores = np.array(data.matrix.scores, copy=True)
    observed = ~np.isnan(scores)
    columns = rng.choice(n_items, size=50, replace=False)
    noise, duplicate, easy = columns[:20], columns[20:40], columns[40:]
    scores[:, noise] = (rng.random((n_models, noise.size)) < 0.5).astype(np.float32)
    sources = rng.choice(np.setdiff1d(np.arange(n_items), columns), size=duplicate.size)
    scores[:, duplicate] = scores[:, sources]
    scores[:, easy] = 1.0
    scores[~observed] = np.nan
    ids = data.matrix.item_ids
    matrix = ResponseMatrix(
        scores,
        [f"llm-{i:03d}" for i in range(n_models)],
        ids,
        source="latentbench demo (synthetic)",
    )
    planted = {
        "zero_discrimination": [ids[j] for j in noise],
        "duplicates": [ids[j] for j in duplicate],
        "constant": [ids[j] for j in easy],
    }
    return matrix, planted


def earlier_outputs(out: str | Path) -> list[Path]:
    """The outputs of an earlier demo in ``out`` (of :data:`DEMO_OUTPUTS`) that :func:`demo`
    replaces: ``latentbench demo`` says so before it runs (outputs are never overwritten
    silently).

    Parameters
    ----------
    out : path
        The demo's folder.

    Returns
    -------
    list of Path
        Those that exist, in :data:`DEMO_OUTPUTS`'s order; empty for a new folder.
    """
    folder = Path(out)
    return [folder / name for name in DEMO_OUTPUTS if (folder / name).exists()]


def first_budget(curves: np.ndarray, grid: np.ndarray, target: float = TARGET) -> np.ndarray:
    """First budget at which the mean of each row block of ``curves`` reaches ``target``.

    Parameters
    ----------
    curves : ndarray of shape (B, S, G)
        B resamples of S seeds' 0/1 identification curves over the budget grid.
    grid : ndarray of shape (G,)

    Returns
    -------
    ndarray of shape (B,)
        NaN where the mean curve never reaches the target.
    """
    return _first_reached(curves.mean(axis=1), grid, target)


def _first_reached(means: np.ndarray, grid: np.ndarray, target: float) -> np.ndarray:
    """:func:`first_budget` of the mean curves ``means`` (shape (B, G)) themselves."""
    import numpy as np

    reached = means >= target
    first = np.argmax(reached, axis=1)
    return np.where(reached.any(axis=1), grid[first].astype(float), np.nan)


def _resampled_means(curves: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``curves[rows].mean(axis=1)``, bit for bit, without the (B, S, G) copy.

    Each resample's mean curve is its count of each seed times that seed's 0/1 curve, over S:
    sums of 0/1 values are small integers, exact in any order of addition, and divided by S as
    the mean divides. Curves that are not all 0 or 1 (or fewer than ``rows`` names) take the
    copy.
    """
    import numpy as np

    curves = np.asarray(curves, float)
    n_seeds = rows.shape[1]
    if curves.shape[0] != n_seeds or not np.isin(curves, (0.0, 1.0)).all():
        return curves[rows].mean(axis=1)
    times = (rows[:, :, None] == np.arange(n_seeds)).sum(axis=1, dtype=float)
    return (times @ curves) / n_seeds


def saving(
    pulse: np.ndarray,
    reference: np.ndarray,
    grid: np.ndarray,
    init: int,
    full: int | None = None,
    n_boot: int = 2000,
    random_state: int = 0,
) -> dict[str, float]:
    """Evaluations (initial batch included) at which PULSE finds the best model in
    ``TARGET`` of the seeds, and the saving against ``reference`` (UCB-E curves of the same
    seeds) or against a full evaluation of ``full`` cells; a paired bootstrap over seeds gives
    90% intervals.

    Parameters
    ----------
    pulse, reference : ndarray of bool, shape (n_seeds, G)
        Per seed, whether the recommendation after ``grid[g]`` post-init cells was right.
    grid : ndarray of shape (G,)
    init : int
        Cells of the initial batch (added to every budget).
    full : int, optional
        Cells of a full evaluation.

    Returns
    -------
    dict
        ``pulse`` (evaluations, point estimate on all seeds), ``pulse_lo`` / ``pulse_hi``,
        ``vs_full`` / ``vs_full_lo`` / ``vs_full_hi`` (% saved; NaN without ``full``),
        ``vs_reference`` / ``vs_reference_lo`` / ``vs_reference_hi`` (% saved). The ``_lo``
        and ``_hi`` are NaN where :func:`no_interval` gives a reason (too few seeds).
    """
    import numpy as np

    rng = np.random.default_rng(random_state)
    n_seeds = pulse.shape[0]
    rows = np.vstack([np.arange(n_seeds), rng.integers(0, n_seeds, size=(n_boot, n_seeds))])
    p = _first_reached(_resampled_means(pulse, rows), grid, TARGET) + init
    r = _first_reached(_resampled_means(reference, rows), grid, TARGET) + init
    out: dict[str, float] = {"pulse": float(p[0])}
    out["pulse_lo"], out["pulse_hi"] = (float(v) for v in np.nanquantile(p[1:], [0.05, 0.95]))
    vs_ref = 100 * (1 - p / r)
    out["vs_reference"] = float(vs_ref[0])
    out["vs_reference_lo"], out["vs_reference_hi"] = (
        float(v) for v in np.nanquantile(vs_ref[1:], [0.05, 0.95])
    )
    if full:
        vs_full = 100 * (1 - p / full)
        out["vs_full"] = float(vs_full[0])
        out["vs_full_lo"], out["vs_full_hi"] = (
            float(v) for v in np.nanquantile(vs_full[1:], [0.05, 0.95])
        )
    if no_interval(n_seeds) is not None:  # the slowest seed's budget: no honest interval
        out.update({key: math.nan for key in out if key.endswith(("_lo", "_hi"))})
    return out


def no_interval(seeds: int, target: float = TARGET) -> str | None:
    """Why ``seeds`` runs give the budget to ``target`` accuracy and its savings no interval
    (None: they do). Below ``1 / (1 - target)`` runs (20 at 0.95) that budget is where every
    run is right, the slowest run's, and a bootstrap over runs undercovers it (the rule and
    its measurement: :data:`latentbench.select._experiment_stats.MIN_TAIL_SEEDS`).

    Parameters
    ----------
    seeds : int
        Selection runs per policy.
    target : float, default :data:`TARGET`

    Returns
    -------
    str or None
    """
    from latentbench.select._experiment_stats import MIN_TAIL_SEEDS, _seeds_needed, _tail_seeds

    if _tail_seeds(seeds, target) >= MIN_TAIL_SEEDS:
        return None
    need = _seeds_needed(target)
    return (  # the Python keyword (seeds=): ``latentbench demo`` says --seeds (cli_spelling)
        f"no interval: with {seeds} runs, {target:.0%} of them are first right where all are, "
        f"the slowest run's budget, which a bootstrap over runs cannot bound; "
        + (f"seeds={need} or more give one" if need else "no number of runs gives one")
    )


@dataclass(frozen=True, eq=False)  # arrays: == by identity, not a ValueError
class DemoResult:
    """What :func:`demo` computed and wrote.

    Attributes
    ----------
    matrix : ResponseMatrix
        The fitted synthetic leaderboard (200 x 1,000, 10% of cells missing).
    planted : dict
        Planted item ids: ``zero_discrimination``, ``duplicates``, ``constant``.
    fit : IRTResult
    uninformative : list of str
        Items whose discrimination is not significantly above 0 (score test, 5%).
    selection : SelectionResult
        One PULSE run on the second leaderboard's candidates, stopped when the best is
        certified at ``delta``.
    candidates : list of str
        The candidates' ids (the other models are the proxy's history).
    truth : ndarray of shape (n_candidates,)
        Their true mean scores.
    true_best : str
    n_history, batch_size, init_batch, full : int
        History models, cells per round, initial cells per candidate, cells of a full
        evaluation of the candidates.
    delta : float
    experiment : ExperimentResult
        PULSE and UCB-E on ``seeds`` seeds each, same start and batch size.
    stats : dict
        :func:`saving` of PULSE against UCB-E and against a full evaluation.
    ucbe : float
        UCB-E's evaluations to find the best in 95% of the seeds (initial batch included).
    seeds : int
    estimate : EstimateResult
        A new model's full-benchmark score from :data:`DEMO_ESTIMATE_BUDGET` items: the
        candidate of median true score, estimated against the history models (the
        calibration), as ``latentbench estimate CALIBRATION NEW_MODEL --budget 100`` does on
        the files ``calibration`` and ``new_model``.
    estimate_truth : float
        That model's true full-benchmark score (its mean over every item).
    paths : dict
        ``abilities``, ``items``, ``fit``, ``random_items`` (the fit's files),
        ``responses``, ``candidates`` (the selection's candidates: ``latentbench select
        replay CANDIDATES --history CALIBRATION --seed 1`` gives :attr:`selection`),
        ``calibration`` (the second leaderboard's history models), ``new_model``,
        ``report``.
    seconds : float
    """

    matrix: ResponseMatrix
    planted: dict[str, list[str]]
    fit: IRTResult
    uninformative: list[str]
    selection: SelectionResult
    candidates: list[str]
    truth: np.ndarray
    true_best: str
    n_history: int
    batch_size: int
    init_batch: int
    full: int
    delta: float
    experiment: ExperimentResult
    stats: dict[str, float]
    ucbe: float
    seeds: int
    estimate: EstimateResult
    estimate_truth: float
    paths: dict[str, Path]
    seconds: float

    def __repr__(self) -> str:
        """Short: the leaderboard, the fit, the certified selection and the saving (the
        headline in full: :meth:`summary`)."""
        run = self.selection
        found = "the true best" if run.best_id == self.true_best else f"true: {self.true_best}"
        certified = (
            f"PULSE certified {run.best_id!r} ({found}) after {run.evaluations_total:,} evaluations"
            if run.stopped == "confidence"
            else f"PULSE did not certify a best ({found})"
        )
        return (
            f"DemoResult({self.matrix.n_models:,} x {self.matrix.n_items:,} leaderboard, fit "
            f"rank {self.fit.rank}, {len(self.uninformative)} uninformative items; "
            f"{certified}; saves {self.stats['vs_full']:.1f}% of a full evaluation; "
            f"{self.seconds:.0f} s)"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the headline lines :meth:`summary` gives."""
        from latentbench._repr import html_block  # numpy: not at ``--help`` time

        return html_block(self.summary())

    def summary(self) -> str:
        """The headline of the selection and of the estimate, as ``latentbench demo`` prints
        them: the second leaderboard, PULSE's certified run, its saving over a full evaluation
        and its difference from UCB-E with the paired-bootstrap interval and the verdict; then
        the new model's score from :data:`DEMO_ESTIMATE_BUDGET` items (the first line of
        ``estimate.summary()``).

        Returns
        -------
        str
            Five lines: four of the selection, the last of the estimate.
        """
        run, full, n_cand = self.selection, self.full, len(self.candidates)
        n_models = self.n_history + n_cand
        lines = [
            f"A second leaderboard, calibrated to the structure of real ones: {n_models} models "
            f"x {_count(full // n_cand)} items. History: {self.n_history} models (they teach "
            "PULSE which items are alike; they are not candidates). Candidates: "
            f"{n_cand} models; a full evaluation costs {_count(full)} cells. Batches of "
            f"{self.batch_size} cells, {self.init_batch} per candidate to start."
        ]
        verdict = (
            "the true best" if run.best_id == self.true_best else f"true best: {self.true_best}"
        )
        if run.stopped == "confidence":
            lines.append(
                f"PULSE certified {run.best_id} as the best candidate ({verdict}) after "
                f"{_count(run.evaluations_total)} evaluations: "
                f"{100 * run.evaluations_total / full:.1f}% of a full evaluation (error "
                f"probability at most {self.delta}, whatever the data)."
            )
        else:
            lines.append(
                f"PULSE did not certify a best candidate before evaluating every cell ({verdict})."
            )
        stats = self.stats
        why = no_interval(self.seeds)
        if why is None:
            lines.append(
                f"PULSE finds the best candidate in {TARGET:.0%} of {self.seeds} runs after "
                f"{_count(stats['pulse'])} evaluations (90% interval "
                f"{_count(stats['pulse_lo'])} to {_count(stats['pulse_hi'])}): it saves "
                f"{stats['vs_full']:.1f}% of a full evaluation ({stats['vs_full_lo']:.1f}% to "
                f"{stats['vs_full_hi']:.1f}%)."
            )
            if stats["vs_reference_lo"] > 0:
                said = "PULSE needs fewer evaluations than UCB-E on this leaderboard"
            elif stats["vs_reference_hi"] < 0:
                said = "PULSE needs more evaluations than UCB-E on this leaderboard"
            else:
                said = "the interval covers 0: no demonstrated difference on this leaderboard"
            lines.append(
                f"UCB-E (no proxy, same start) needs {_count(self.ucbe)}: PULSE saves "
                f"{stats['vs_reference']:+.1f}% against it (90% interval "
                f"{stats['vs_reference_lo']:+.1f}% to {stats['vs_reference_hi']:+.1f}%; {said})."
            )
        else:  # too few runs for "95% of them": the budget at which all of them are right
            lines.append(
                f"PULSE finds the best candidate in all {self.seeds} runs after "
                f"{_count(stats['pulse'])} evaluations: it saves {stats['vs_full']:.1f}% of a "
                f"full evaluation ({why})."
            )
            lines.append(
                f"UCB-E (no proxy, same start) needs {_count(self.ucbe)}: PULSE saves "
                f"{stats['vs_reference']:+.1f}% against it ({why}; no demonstrated difference)."
            )
        lines.append(self.estimate.summary().splitlines()[0])
        return "\n".join(lines)


def _count(value: float) -> str:
    """A count for people, as the commands write it: ``12,032``, ``NaN`` as ``-``."""
    number = float(value)
    if math.isnan(number):
        return "-"
    if isinstance(value, numbers.Integral) or abs(number) >= 1000:
        return f"{number:,.0f}"
    return f"{number:.3f}"


def _median_candidate(truth: np.ndarray, candidates: np.ndarray) -> int:
    """The row (of the whole leaderboard) of the candidate whose true score is the median
    one: a typical new model."""
    import numpy as np

    k = int(np.argsort(truth, kind="stable")[truth.size // 2])
    return int(candidates[k])


def demo(
    out: str | Path = "latentbench-demo",
    *,
    seeds: int = DEMO_SEEDS,
    progress: ProgressCallback | None = None,
) -> DemoResult:
    """Run the main job on the built-in synthetic leaderboard: the Python twin of
    ``latentbench demo``.

    Parameters
    ----------
    out : path, default "latentbench-demo"
        Folder for ``fit/``, ``responses.parquet`` and ``report.html`` (created; reused: an
        earlier demo's files there, :func:`earlier_outputs`, are replaced).
    seeds : int, default 20
        Selection runs per policy (:data:`DEMO_SEEDS`; fewer give the savings no interval:
        :func:`no_interval`).
    progress : callable, optional
        ``progress(phase, done=None, total=None)`` as the work goes (the fit's phases, then
        the selection's).

    Returns
    -------
    DemoResult
    """
    import numpy as np

    from latentbench.exceptions import InputError
    from latentbench.io import ResponseMatrix, check_destination
    from latentbench.irt import TwoPL
    from latentbench.irt.diagnostics import uninformative_items
    from latentbench.report import build_report
    from latentbench.select import (
        LowRankProxy,
        MatrixOracle,
        Pulse,
        default_schedule,
        estimate,
        run_experiment,
        run_selection,
        split_models,
    )
    from latentbench.synthetic import leaderboard_like

    if isinstance(seeds, bool) or not isinstance(seeds, numbers.Integral) or seeds < 2:
        raise InputError(f"seeds={seeds!r}; expected an integer >= 2 (a saving needs seeds)")

    def tell(phase: str) -> None:
        notify(progress, phase)

    start = time.perf_counter()
    folder = Path(out)
    check_destination(folder, "dir", flag="out=")  # a file there: said before the work
    matrix, planted = demo_matrix()
    fit = TwoPL().fit(matrix, progress=progress)
    paths = dict(fit.save(folder / "fit", matrix))
    paths["responses"] = folder / "responses.parquet"
    matrix.to_long().to_parquet(paths["responses"], index=False)
    info = uninformative_items(fit, matrix)
    flat = [str(i) for i in info[info["uninformative"]]["item"]]

    # best-model selection on a leaderboard with the structure of real ones
    # (latentbench.synthetic.leaderboard_like, calibrated to the shared real matrices): half
    # the models are history (they teach PULSE's proxy the items), the other half candidates
    tell("best-model selection: one certified PULSE run")
    scores = leaderboard_like(DEMO_MODELS, DEMO_ITEMS, random_state=7)
    model_ids = [f"llm-{i:03d}" for i in range(DEMO_MODELS)]
    history, candidates = split_models(DEMO_MODELS, how="random", random_state=0)
    Y = scores[candidates]
    n_items = Y.shape[1]
    full = Y.size
    batch, init_cells = default_schedule(len(candidates), n_items, None)
    ids = [model_ids[i] for i in candidates]
    proxy = LowRankProxy(rank="auto", random_state=0).fit(scores[history])
    truth = Y.mean(axis=1, dtype=np.float64)
    delta = 0.05
    run = run_selection(
        MatrixOracle(Y),
        Pulse(bonus="ci", delta=delta),
        budget=full,
        batch_size=batch,
        init_batch=init_cells,
        proxy=proxy,
        random_state=DEMO_SELECTION_SEED,
        stop="confidence",
        model_ids=ids,
    )
    run.params["n_items"] = n_items
    run.params["history"] = {
        "split": "random half of the demo leaderboard's models (seed 0)",
        "history models": len(history),
        "candidates": len(candidates),
    }
    # the candidates as a file: `select replay` on it, with the history's file (the
    # calibration, below) and the run's seed, gives the same run (the demo prints the command)
    item_ids = [f"item-{j:04d}" for j in range(n_items)]
    paths["candidates"] = folder / "candidates.parquet"
    ResponseMatrix(Y, ids, item_ids).to_long().to_parquet(paths["candidates"], index=False)
    tell(f"running PULSE and UCB-E on {seeds} seeds each")
    budget = min(full - len(candidates) * init_cells, 8_000)
    experiment = run_experiment(
        Y,
        {"full": np.arange(len(candidates))},
        ["pulse", "ucbe"],
        seeds=seeds,
        budget=budget,
        batch_size=batch,
        init_batch=init_cells,
        proxy=proxy,
        n_jobs=2,
    )
    init = len(candidates) * init_cells
    grid = np.asarray(experiment.grid)
    stats = saving(
        experiment.curves[("full", "pulse")],
        experiment.curves[("full", "ucbe")],
        grid,
        init=init,
        full=full,
    )
    ucbe_curves = np.asarray(experiment.curves[("full", "ucbe")], float)[None]
    ucbe = float(first_budget(ucbe_curves, grid)[0] + init)

    # the job users do most: a new model's score from a few items, against the models known
    tell(f"estimating a new model from {DEMO_ESTIMATE_BUDGET} items")
    new = _median_candidate(truth, candidates)
    paths["calibration"] = folder / "calibration.parquet"
    paths["new_model"] = folder / "new_model.parquet"
    rows = [*history, new]  # one long table, then the new model's rows apart
    long = ResponseMatrix(scores[rows], [model_ids[i] for i in rows], item_ids).to_long()
    is_new = (long["model"] == model_ids[new]).to_numpy()
    long[~is_new].to_parquet(paths["calibration"], index=False)
    long[is_new].to_parquet(paths["new_model"], index=False)
    new_estimate = estimate(
        paths["calibration"], paths["new_model"], budget=DEMO_ESTIMATE_BUDGET, seed=0
    )
    tell("writing the HTML report")
    paths["report"] = folder / "report.html"
    build_report(
        fit,
        matrix,
        selection=run,
        path=paths["report"],
        force=True,  # the demo's folder is reused (its fit/ and files too)
        title="latentbench demo: synthetic leaderboard",
    )
    return DemoResult(
        matrix=matrix,
        planted=planted,
        fit=fit,
        uninformative=flat,
        selection=run,
        candidates=ids,
        truth=truth,
        true_best=ids[int(np.argmax(truth))],
        n_history=len(history),
        batch_size=batch,
        init_batch=init_cells,
        full=full,
        delta=delta,
        experiment=experiment,
        stats=stats,
        ucbe=ucbe,
        seeds=seeds,
        estimate=new_estimate,
        estimate_truth=float(scores[new].mean(dtype=np.float64)),
        paths={k: Path(v) for k, v in paths.items()},
        seconds=time.perf_counter() - start,
    )
