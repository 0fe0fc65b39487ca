"""What a fitted result was fitted on and on which scale it reports: the shared helpers of the
uncertainty modules (:mod:`latentbench.irt.inference`, :mod:`latentbench.irt._bootstrap`,
:mod:`latentbench.irt._scoring`) and the shape limits of the ability-interval methods."""

from __future__ import annotations

import copy
import hashlib
from typing import TYPE_CHECKING

import numpy as np

from latentbench._checks import is_number
from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._laplace import JointLaplace, joint_laplace
from latentbench.irt._objective import GaussianPenalty
from latentbench.irt._random_items import (
    ModelJackknife,
    RandomItemsFit,
    fit_random_items,
    item_bootstrap,
    model_jackknife,
    rescaled,
    text_order,
)
from latentbench.irt._stats import norm_ppf

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = [
    "ITEM_BOOTSTRAP",
    "JOINT_MAX_MODELS",
    "MODEL_JACKKNIFE",
    "RANDOM_ITEMS_MAX_ITEMS",
    "RANDOM_ITEMS_MAX_MODELS",
    "laplace_of",
    "model_jackknife_of",
    "per_trial_penalty",
    "random_items_fit",
    "reference_of",
    "trials_of",
]

RANDOM_ITEMS_MAX_MODELS = 200
"""Up to this many models (and :data:`RANDOM_ITEMS_MAX_ITEMS` items), a rank-1 MAP fit's ability
intervals come from the marginal likelihood over the items (:mod:`latentbench.irt._random_items`):
with few models the joint estimate's O(1/N) bias is as large as its standard error."""

RANDOM_ITEMS_MAX_ITEMS = 50_000
"""Above this many items the random-item likelihood (O(N J G) per iteration, G = 640) is skipped."""

JOINT_MAX_MODELS = 1000
"""Up to this many models, a MAP fit's ability SEs come from the joint Laplace approximation
(:mod:`latentbench.irt._laplace`, O(N^2 J)); above it the item-parameter part, O(1/N) of the
variance, is left out (block-diagonal information)."""


ITEM_BOOTSTRAP = 40
"""Replicates of the item bootstrap of a random-item fit (:func:`random_items_fit`); 0 turns it
off (e.g. ``latentbench.irt._fitted.ITEM_BOOTSTRAP = 0`` in a benchmark)."""

ITEM_BOOTSTRAP_MAX_MODELS = 100
"""The item bootstrap runs on random-item fits of at most this many reference models (chosen
by comparison, docs/model.md, "The item bootstrap up to 100 models"; 30 until 2026-12-08): the
fit's own 95% ability intervals without it cover 0.927-0.950 at 35-100 simulated models and
0.934-0.950 on BFCL's 35-model halves and its whole 71-model matrix (parametric replicas),
under 0.95 by up to 3 Monte Carlo se; with it 0.945-0.961 on every one of them
(``benchmarks/bench_bootstrap_models.py``). ``score_models`` keeps 30
(:data:`BOOTSTRAP_SCORES_MAX_MODELS`) ..."""

ITEM_BOOTSTRAP_MAX_CELLS = 200_000
"""... and at most this many cells (reference models x items): a replicate costs O(N J G) per
EM iteration (G = 640). Chosen by comparison (docs/model.md, "The item bootstrap on
MMLU-Pro's halves"; the limit was 2,000 items before): MMLU-Pro's calibration halves
(14 x 12,032 = 168,448 cells) cover 0.932 +/- 0.018 without the bootstrap and
0.964 +/- 0.012 with it (20 parametric replicas, paired difference +0.032 +/- 0.011), for
about 18 s more per ``standard_errors`` on the 2-core machine. The whole MMLU-Pro matrix
(29 x 12,032 = 348,928 cells) covers 0.948 without it and stays above the limit (the
bootstrap would add about 15 s to its ``latentbench fit``; with it, the limit raised in a
benchmark, it covers 0.957 +/- 0.009: inside the range either way). No shared matrix lies
between the two shapes: where the limit sits between them is not itself measured."""

ITEM_BOOTSTRAP_TOL = 3e-3
"""The EM's stopping tolerance in the bootstrap's replicates (abilities started at the fit's)."""

ITEM_BOOTSTRAP_SEED = 0
"""Seed of the item bootstrap's resamples (fixed: the same intervals on every call)."""


MODEL_JACKKNIFE = True
"""Whether :meth:`IRTResult.score_models` adds the calibration's delete-one jackknife over its
models to the scored abilities' variance (:func:`model_jackknife_of`); False turns it off
(e.g. ``latentbench.irt._fitted.MODEL_JACKKNIFE = False`` in a benchmark)."""

MODEL_JACKKNIFE_MAX_MODELS = 30
"""The jackknife runs on calibrations of at most this many reference models (one EM refit per
model; the item bootstrap's limit until 2026-12-08, as ``score_models``' carrying of it still
is, :data:`BOOTSTRAP_SCORES_MAX_MODELS`: a scale set by few models) ..."""

MODEL_JACKKNIFE_MAX_CELLS = 200_000
"""... and at most this many cells (reference models x items; the item bootstrap's limit,
:data:`ITEM_BOOTSTRAP_MAX_CELLS`): each refit costs O(N J G) per EM iteration (about 38 s for
the 12 refits of a 14 x 12,032 MMLU-Pro calibration half on the 2-core machine) and the new
models' scores against the refits one batched product per Newton step
(:func:`latentbench.irt._scoring._newton_batch`). Was 2,000 items (the per-model scoring
loops made one ``score_models`` call on an MMLU-Pro half take over 10 minutes); raised with
the batched scoring, and chosen by comparison on MMLU-Pro's halves (docs/model.md, "Carrying
the bootstrap and the jackknife to new models at 12,000 items"): their ``score_models``
intervals covered 0.930 +/- 0.018 without the bootstrap's replicate scores and the
jackknife, 0.973 +/- 0.010 with both (20 parametric replicas; the same with the jackknife
alone, 0.943 with the replicate scores alone: slightly over the target's 0.97). No shared
fit of at most 30 models and 2,000 items changes (at most 60,000 cells). Since 2026-12-04
the item limit :data:`MODEL_JACKKNIFE_MAX_ITEMS` is back and takes MMLU-Pro's halves out
again (they now get the replicate scores alone, 0.943): the cell limit bounds the cost."""

BOOTSTRAP_SCORES_MAX_CELLS = 200_000
"""``score_models`` carries the calibration's item bootstrap to the new models (each scored
against every replicate's law, :func:`latentbench.irt._scoring._bootstrap_scores`) on
calibrations of at most this many cells (reference models x items): the bootstrap's own limit,
so every calibration of at most :data:`BOOTSTRAP_SCORES_MAX_MODELS` models that ran the
bootstrap carries it (0 turns the carrying off, e.g. in a benchmark). Was 2,000 items: the
per-model loops cost 267 s more for 15 new models on an MMLU-Pro half (14 x 12,032, 40
replicates); the batched scoring (:func:`latentbench.irt._scoring._newton_batch`: all new
models in one product per replicate and Newton step) takes a few seconds there."""

BOOTSTRAP_SCORES_MAX_MODELS = 30
"""... and of at most this many reference models: the item bootstrap's model limit until
2026-12-08, when :data:`ITEM_BOOTSTRAP_MAX_MODELS` was raised for the fit's own intervals.
``score_models`` keeps the limit its intervals were chosen at (BFCL's 35-model halves
over-covered, 0.974 +/- 0.007, with a 40-model limit: docs/model.md), so a calibration of
31 or more models scores new models as before."""

MODEL_JACKKNIFE_GROUPS = 12
"""Largest number of refits of the jackknife: up to this many reference models it leaves out
one model at a time, above it one of this many seeded groups of models (delete-a-group; the
cost is one EM refit per group)."""

MODEL_JACKKNIFE_TOL = 1e-4
"""The refits' EM stopping tolerance (the fit's own; 3e-3 inflated some jackknife sds by up to
1.7 times: the jackknife multiplies each refit's deviation, convergence noise included)."""


MODEL_JACKKNIFE_MAX_ITEMS = 2_000
"""... and at most this many items. The jackknife adds how much the scale moves with *which*
models calibrate; the truth new models are scored against is standardised over those same
models, so that spread is estimation error only while the calibration models' abilities are
themselves noisy, i.e. with few items per model. Measured (``score_models`` coverage, 20
parametric replicas each, with / without the jackknife): 805 items (AlpacaEval halves)
0.961 / 0.945 and 0.928 / 0.907; 1,000 items (stress and rank-2 halves, 11 models) 0.950 /
0.914 and 0.950 / 0.923; 2,000 items (22 x 2000 halves, the limit's own shape) 0.968 /
0.964 and 0.964 / 0.964; 2,854 items (the stress and rank-2 matrices of the issue's shape,
11-model halves) **0.977 / 0.955 and 0.968 / 0.950** (paired +0.023 +/- 0.011, +0.018 +/-
0.014); 12,032 items (MMLU-Pro halves, 14 models) 0.973 / 0.943. 2,000 was the jackknife's first
item limit (benchmarks/RESULTS_item_bootstrap.md, "The model jackknife by items" and "The
model jackknife at 2,000 items")."""


def _model_jackknife_applies(n_models: int, n_items: int) -> bool:
    """Whether ``score_models`` on a calibration of this shape adds the model jackknife."""
    return (
        MODEL_JACKKNIFE
        and 4 <= n_models <= MODEL_JACKKNIFE_MAX_MODELS
        and n_models * n_items <= MODEL_JACKKNIFE_MAX_CELLS
        and n_items <= MODEL_JACKKNIFE_MAX_ITEMS
    )


def _item_bootstrap_applies(n_models: int, n_items: int) -> bool:
    """Whether a random-item fit of this shape gets the item bootstrap."""
    return (
        ITEM_BOOTSTRAP > 1
        and n_models <= ITEM_BOOTSTRAP_MAX_MODELS
        and n_models * n_items <= ITEM_BOOTSTRAP_MAX_CELLS
    )


def _uses_random_items(n_models: int, n_items: int) -> bool:
    """Whether a rank-1 MAP fit of this shape gets random-item ability intervals."""
    return n_models <= RANDOM_ITEMS_MAX_MODELS and n_items <= RANDOM_ITEMS_MAX_ITEMS


def random_items_fit(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None = None
) -> RandomItemsFit:
    """The random-item marginal ML fit of the abilities, started from a rank-1 ``result``.

    Cached on the result (``result.random_items``) with a fingerprint of the scores, so the
    diagnostics, the report and the saved tables of one fit share one computation. With at
    most :data:`ITEM_BOOTSTRAP_MAX_MODELS` reference models and
    :data:`ITEM_BOOTSTRAP_MAX_CELLS` cells (reference models x items) it also runs the item
    bootstrap
    (:func:`latentbench.irt._random_items.item_bootstrap`, :data:`ITEM_BOOTSTRAP` replicates,
    kept on the fit: ``boot_theta``, ``boot_weights``, ``boot_seed``).
    """
    scores, _ = _observed(result, matrix)
    key = hashlib.blake2b(np.ascontiguousarray(scores).tobytes(), digest_size=16).hexdigest()
    cached = result.random_items
    if cached is not None and cached.data_key == key:
        return cached
    reference = reference_of(result)
    law_rows = reference & ~constant_models(scores)
    if int((law_rows & ~np.isnan(scores).all(axis=1)).sum()) < _LAW_MIN_MODELS:
        # (nearly) every model at the floor or ceiling: no law without them; fitted with them,
        # and the validity check names them and falls back to the joint Laplace intervals
        law_rows = reference
    # the detached models (far from all the others) are left out: their marginal likelihood
    # against a law the others set has no finite maximum in practice (the EM diverged), and
    # their intervals come from the prior sensitivity (irt._detached); so are the models at
    # the floor or the ceiling (every observed score 0, or every one 1: no finite marginal
    # estimate at all; their intervals are their exact posteriors, inference
    # ._constant_intervals); both put back at the fit's estimate with zero (co)variance
    theta0, a0, b0 = result.U[law_rows, 0], result.V[:, 0], result.b
    # constant models left out: the EM starts on the law's models' own standardised scale
    # (mean 0, sd 1 over those with cells), which it keeps; from the reporting scale (which
    # the constant models help to set) its grid of discriminations was too steep by 1 / sd (a
    # top of 11.25 instead of 5.06 with one broken model among 15)
    shift, scale = _law_standardising(result, scores, law_rows)
    if (shift, scale) != (0.0, 1.0):
        theta0, a0, b0 = (theta0 - shift) / scale, a0 * scale, b0 + a0 * shift
    fit = fit_random_items(
        scores[law_rows], theta0, a0, b0, float(result.sigma), trials=trials_of(result)
    )
    if _item_bootstrap_applies(int(law_rows.sum()), int(result.shape[1])):
        # the law's own estimation error: items resampled, the EM redone from the fit
        # (drawn in the order of the item ids, not of the columns: the same cells in a wide
        # file's column order and a long file's sorted ids get the same replicates)
        order = text_order(result.item_ids)
        theta_b, fit.boot_weights = item_bootstrap(
            scores[law_rows],
            fit,
            float(result.sigma),
            n_boot=ITEM_BOOTSTRAP,
            seed=ITEM_BOOTSTRAP_SEED,
            tol=ITEM_BOOTSTRAP_TOL,
            trials=trials_of(result),
            order=order,
        )
        fit.boot_seed = ITEM_BOOTSTRAP_SEED
        fit.boot_order = order
        fit.boot_theta = theta_b
    if (shift, scale) != (0.0, 1.0):
        # the law standardised its models (mean 0, sd 1 over those with cells); the reporting
        # scale standardises every reference model, a constant one included: matched by the
        # mean and sd of the law's models' fitted abilities (so the law's models, with the
        # constant ones at their fitted abilities, have mean 0 and sd 1 again)
        fit = rescaled(fit, shift, scale, scores[law_rows], float(result.sigma), trials_of(result))
        with_cells = ~np.isnan(scores[law_rows]).all(axis=1)
        fit.theta[~with_cells] = result.U[law_rows, 0][~with_cells]  # at their start
    if fit.boot_theta.size:
        boot = np.full((fit.boot_theta.shape[0], reference.size), np.nan)
        boot[:, law_rows] = fit.boot_theta
        fit.boot_theta = boot
    if not law_rows.all():
        theta = result.U[:, 0].copy()
        theta[law_rows] = fit.theta
        covariance = np.zeros((law_rows.size, law_rows.size))
        covariance[np.ix_(law_rows, law_rows)] = fit.covariance
        fit.theta, fit.covariance = theta, covariance
    fit.in_law = law_rows
    fit.data_key = key
    result.random_items = fit
    return fit


def model_jackknife_of(result: IRTResult) -> ModelJackknife | None:
    """The jackknife over the reference models of a random-item fit, or None (delete-one up
    to :data:`MODEL_JACKKNIFE_GROUPS` models, delete-a-group above).

    Computed on first use (by :meth:`IRTResult.score_models`) and cached on the result
    (``result.model_jackknife``, keyed by the random-item fit's fingerprint of the scores);
    None where it does not apply (:data:`MODEL_JACKKNIFE`, at least 4 and at most
    :data:`MODEL_JACKKNIFE_MAX_MODELS` reference models, at most
    :data:`MODEL_JACKKNIFE_MAX_CELLS` cells). Not saved with the fit: a loaded result keeps no
    matrix, and ``score_models`` then holds the items fixed.
    """
    law = random_items_fit(result)
    reference = law_models_of(result, law)
    if not _model_jackknife_applies(int(reference.sum()), int(result.shape[1])):
        return None
    cached = result.model_jackknife
    if cached is not None and cached.data_key == law.data_key:
        return cached
    scores, _ = _observed(result, None)
    fit = copy.copy(law)
    fit.theta = law.theta[reference]
    shift, scale = law_scale(result, law)
    if (shift, scale) != (0.0, 1.0):
        # the refits standardise their abilities (mean 0, sd 1): run them on the law's own
        # standardised scale, as it was fitted, and carry their abilities to the reporting
        # scale after (on the rescaled grid they were another estimator: se x 0.6-1.6)
        fit = rescaled(
            fit,
            -shift / scale,
            1.0 / scale,
            scores[reference],
            float(result.sigma),
            trials_of(result),
        )
    jack = model_jackknife(
        scores[reference],
        fit,
        float(result.sigma),
        groups=MODEL_JACKKNIFE_GROUPS,
        tol=MODEL_JACKKNIFE_TOL,
        trials=trials_of(result),
        order=text_order([result.model_ids[i] for i in np.flatnonzero(reference)]),
    )
    if (shift, scale) != (0.0, 1.0):
        jack.theta = shift + scale * jack.theta
    jack.data_key = law.data_key
    result.model_jackknife = jack
    return jack


def fitted_matrix(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None
) -> ResponseMatrix | np.ndarray:
    """The matrix the result was fitted on: ``matrix``, or the one the result keeps
    (``matrix=None``), checked against the fit's model and item ids (a sparse matrix is left
    sparse)."""
    if matrix is None:
        if result.matrix is None:
            raise InputError(
                "this result holds no matrix (it was loaded from disk); pass the matrix it was "
                "fitted on"
            )
        matrix = result.matrix
    if isinstance(matrix, ResponseMatrix) and (
        matrix.model_ids != result.model_ids or matrix.item_ids != result.item_ids
    ):
        raise InputError(
            "the matrix's model / item ids differ from the fit's; pass the matrix the "
            "result was fitted on"
        )
    return matrix


def _observed(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Scores (float32, NaN missing) and observed mask of the matrix the result was fitted on.

    ``matrix=None`` takes the matrix the result keeps (``result.matrix``).
    """
    matrix = fitted_matrix(result, matrix)
    if isinstance(matrix, ResponseMatrix):
        scores = matrix.scores
    else:
        scores = np.asarray(matrix, dtype=np.float32)
    if scores.shape != tuple(result.shape):
        raise InputError(
            f"matrix has shape {scores.shape}; expected the fitted shape {tuple(result.shape)}"
        )
    return scores, ~np.isnan(scores)


_LAW_MIN_MODELS = 3
"""Fewest models with cells, none at the floor or ceiling, for the item law to be fitted
without the constant ones (fewer: with them, and the intervals fall back)."""


def _law_standardising(
    result: IRTResult, scores: np.ndarray, law_rows: np.ndarray
) -> tuple[float, float]:
    """(shift, scale): the mean and sd of the fit's abilities over the law's models with cells,
    which map the law's standardised abilities to the reporting scale (``theta = shift +
    scale * standardised``); (0, 1) when the law holds every reference model (or fewer than two
    with cells, or no spread)."""
    if np.array_equal(law_rows, reference_of(result)):
        return 0.0, 1.0
    fitted = result.U[law_rows & ~np.isnan(scores).all(axis=1), 0]
    if fitted.size < 2 or not float(fitted.std()) > 0:
        return 0.0, 1.0
    return float(fitted.mean()), float(fitted.std())


def law_scale(result: IRTResult, law: RandomItemsFit) -> tuple[float, float]:
    """(shift, scale) that :func:`random_items_fit` applied to the law's standardised abilities
    to put them on the fit's reporting scale (:func:`_law_standardising`)."""
    return _law_standardising(result, _observed(result, None)[0], law_models_of(result, law))


def constant_models(scores: np.ndarray) -> np.ndarray:
    """Boolean (N,): the models with observed cells all 0 or all 1 (at the floor or the
    ceiling: no finite marginal or likelihood estimate), from (N, J) scores, NaN missing."""
    scores = np.asarray(scores, dtype=float)
    observed = ~np.isnan(scores)
    low = np.where(observed, scores, np.inf).min(axis=1, initial=np.inf)
    high = np.where(observed, scores, -np.inf).max(axis=1, initial=-np.inf)
    return np.asarray(observed.any(axis=1) & (low == high) & ((low == 0) | (low == 1)))


def law_models_of(result: IRTResult, law: RandomItemsFit) -> np.ndarray:
    """Boolean (N,): the models ``law`` (the result's random-item fit) was fitted on
    (``law.in_law``; a fit that did not record them: the reference models)."""
    rows = np.asarray(law.in_law, dtype=bool)
    return rows if rows.size == int(result.shape[0]) else reference_of(result)


def reference_of(result: IRTResult) -> np.ndarray:
    """Boolean (N,): the models that set the fit's reporting scale (all but the detached ones,
    :func:`latentbench.irt._objective.reference_models`)."""
    n = int(result.shape[0])
    if result.normalisation is None or result.rank != 1:
        return np.ones(n, dtype=bool)
    return result.normalisation.mask(n)


def _normalisation(result: IRTResult) -> tuple[np.ndarray, float]:
    """(mu, s): raw U = s * U + mu (rank 1); s = 1 for rank > 1 (centring only)."""
    if result.normalisation is None:
        return np.zeros(result.rank), 1.0
    return result.normalisation.shift, result.normalisation.scale


def _z(level: float) -> float:
    if not (is_number(level) and 0 < level < 1):
        raise InputError(f"level={level!r}; expected a number in (0, 1)")
    return norm_ppf(0.5 + level / 2)


def laplace_of(result: IRTResult, scores: np.ndarray) -> JointLaplace:
    """The joint Laplace approximation of a rank-1 MAP ``result`` on ``scores``.

    The fit's penalty (on the raw scale) is mapped to the reported coordinates: the abilities'
    curvature times ``s^2`` and the items' through ``A0`` (reported ``(a, b)`` to raw). With
    K trials per cell (:func:`trials_of`) it is in the per-trial convention: the penalty
    divided by K, so that its covariances are K times the true ones (divide them by K).
    """
    mu, s = _normalisation(result)
    penalty = per_trial_penalty(result)
    A0 = np.array([[1.0 / s, 0.0], [-float(mu[0]) / s, 1.0]])
    return joint_laplace(
        scores,
        result.U[:, 0],
        result.V[:, 0],
        result.b,
        float(result.sigma),
        float(penalty.model_curvature(1)[0, 0]) * s * s,
        A0.T @ penalty.item_curvature(1) @ A0,
        reference=reference_of(result),
    )


def trials_of(result: IRTResult) -> int:
    """Bernoulli trials behind every cell of the fit (``TwoPL(trials=K)``; 1 by default)."""
    return int(result.options.get("trials", 1) or 1)


def per_trial_penalty(result: IRTResult) -> GaussianPenalty:
    """The fit's penalty divided by its trials: with it, every curvature of the one-trial
    likelihood is the true one divided by K (``K NLL + P = K (NLL + P / K)``)."""
    return result.penalty.scaled(1.0 / trials_of(result))
