"""Diagnostics of a fitted 2PL: uninformative, duplicate, misfitting and constant items; models
whose ability rank differs from their accuracy rank; rank agreement of accuracy and ability.

Every function takes the :class:`~latentbench.irt.IRTResult` and, where the responses are
needed, the :class:`~latentbench.io.ResponseMatrix` it was fitted on, and returns a DataFrame
with documented columns. :func:`diagnose` runs them all.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._fitted import _observed, fitted_matrix
from latentbench.irt._reported import measured_models, reported_abilities
from latentbench.irt._stats import chi2_sf, norm_sf, pair_disagreement_cdf
from latentbench.irt.inference import (
    _item_standard_errors,
    normal_draws,
    rank_intervals,
    standard_errors,
)

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = [
    "Diagnostics",
    "constant_items",
    "diagnose",
    "duplicate_items",
    "item_fit",
    "rank_agreement",
    "rank_changes",
    "uninformative_items",
]


def _benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """BH-adjusted p-values (q-values); NaN stays NaN."""
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    values = p[ok]
    m = values.size
    if m == 0:
        return q
    order = np.argsort(values)
    ranked = values[order] * m / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(ranked, 1.0)
    q[ok] = out
    return q


def uninformative_items(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray,
    *,
    min_discrimination: float = 0.1,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Items whose discrimination is (near) zero: they say nothing about ability.

    An item is flagged when ``a < min_discrimination`` or when its responses are not
    significantly positively associated with the fitted abilities: the score (Rao) test of
    ``a_j = 0`` with the abilities as the covariate,
    ``z_j = sum_i (y_ij - ybar_j)(theta_i - thetabar_j) / sqrt(v_j sum_i (theta_i - thetabar_j)^2)``
    over the item's observed models (``v_j`` the variance of its scores: ``ybar (1 - ybar)``
    for binary ones), scaled by ``sqrt((n_j - 1) / n_j)`` (the exact variance of the sum
    under permutation of the scores over the ``n_j`` models), one-sided at level ``alpha``.
    The test does not involve the prior on ``a``, so it works the same for the default MAP fit
    (whose prior, centred at a = 1, keeps a random-answer item's estimate well above 0) and
    for joint ML. The fitted abilities include the item's own responses, which made a = 0
    items look associated (p <= 0.05 on 6.5% of them at 20 x 200, 6% at 30 x 400;
    ``benchmarks/diag_levels.py``); each item is therefore tested against the abilities with
    its own responses taken out, one Newton step: ``theta_i - s_j (y_ij - p_ij) / I_i`` (``s_j``
    the item's slope on the logit scale, ``I_i`` the model's information over its observed
    items).

    Returns
    -------
    DataFrame
        One row per item (all items): ``item``, ``discrimination`` (the fit's estimate),
        ``se`` (that of the discrimination's interval in
        :func:`~latentbench.irt.inference.standard_errors`: for the default MAP fit the
        items' likelihood at the fitted abilities, the prior left out; NaN where that
        likelihood has no finite maximum, e.g. a constant item),
        ``z`` (score statistic), ``p_value`` (one-sided test of a = 0), ``uninformative``
        (flag). Constant items are flagged too (nothing to correlate).
    """
    # the items' table alone: the abilities' intervals are not used here
    unc = _item_standard_errors(result, matrix)
    a = unc["discrimination"].to_numpy()
    se = unc["discrimination_se"].to_numpy()
    scores, observed = _observed(result, matrix)
    z = _association_score(scores, observed, result.theta, own=_own_responses(result, observed))
    p_value = np.where(np.isnan(z), 1.0, norm_sf(np.nan_to_num(z)))
    return pd.DataFrame(
        {
            "item": unc["item"],
            "discrimination": a,
            "se": se,
            "z": z,
            "p_value": p_value,
            "uninformative": (a < min_discrimination) | (p_value > alpha),
        }
    )


_INFO_CHUNK = 512
"""Items per chunk of the models' information sums in :func:`_own_responses`."""


def _own_responses(
    result: IRTResult, observed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`_association_score` needs to take each item's own responses out of the
    abilities: the items' slopes on the logit scale (``a / sigma``), the fitted probabilities
    and the models' information ``I_i = sum_j s_j^2 p_ij (1 - p_ij)`` over their observed
    items (the prior's curvature left out: a slightly larger step, the conservative side)."""
    slope = np.asarray(result.discrimination, dtype=np.float64) / float(result.sigma)
    fitted = np.asarray(result.predict_proba(), dtype=np.float64)
    info = np.zeros(observed.shape[0])
    # chunks of a fixed width (not :func:`_item_blocks`): the same sums whatever the blocks
    for start in range(0, observed.shape[1], _INFO_CHUNK):
        part = slice(start, start + _INFO_CHUNK)
        p = fitted[:, part]
        info += (observed[:, part] * (slope[part] ** 2 * p * (1 - p))).sum(axis=1)
    return slope, fitted, info


def _association_score(
    scores: np.ndarray,
    observed: np.ndarray,
    theta: np.ndarray,
    *,
    own: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Score statistic of a_j = 0 per item (see :func:`uninformative_items`), shape (J,).

    ``own``: :func:`_own_responses`, to test each item against the abilities without its own
    responses (one Newton step); without it, against ``theta`` as given.

    Computed over blocks of items (:func:`_item_blocks`): a few ``N x block`` temporaries
    instead of six ``N x J`` float64 arrays (3.8 GB at 4,000 x 20,000); each item's sums are
    the same numbers, summed over the models in the same order (NumPy sums a block of two or
    more columns row after row, whatever its width).
    """
    J = scores.shape[1]
    z = np.empty(J)
    for start, stop in _item_blocks(scores.shape):
        part = slice(start, stop)
        w = observed[:, part].astype(np.float64)
        y = np.where(observed[:, part], scores[:, part], 0.0).astype(np.float64)
        if own is None:
            thetas = np.repeat(theta.astype(np.float64)[:, None], stop - start, axis=1)
        else:
            slope, fitted, info = own
            with np.errstate(divide="ignore", invalid="ignore"):
                step = slope[part] * (y - fitted[:, part]) * w / info[:, None]
            thetas = theta[:, None] - np.where(np.isfinite(step), step, 0.0)
        z[part] = _association_block(y, w, thetas)
    return z


def _association_block(y: np.ndarray, w: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """:func:`_association_score` of some items: scores ``y`` (0 where missing), observed
    weights ``w`` and each item's abilities ``thetas``, all ``N x block``."""
    n = w.sum(axis=0)
    safe = np.maximum(n, 1.0)
    y_bar = y.sum(axis=0) / safe
    t_bar = (w * thetas).sum(axis=0) / safe
    centred = (thetas - t_bar) * w
    s_tt = (centred * centred).sum(axis=0)
    cross = (centred * y).sum(axis=0)  # sum (y - ybar)(theta - tbar): centred sums to 0
    v = (w * (y - y_bar) ** 2).sum(axis=0) / safe
    # the permutation variance of ``cross`` is v s_tt n / (n - 1)
    denom = np.sqrt(v * s_tt * safe / np.maximum(n - 1.0, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where((denom > 0) & (n > 2), cross / np.where(denom > 0, denom, 1.0), np.nan)
    return np.asarray(z)


_BLOCK_CELLS = 1 << 21
"""Cells (models x items) per block of the per-item diagnostics: 16 MB a float64 temporary."""


def _item_blocks(shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive blocks of items covering ``shape[1]`` items, about
    :data:`_BLOCK_CELLS` cells each, none of a single item unless there is only one: NumPy sums a
    one-column block down the models pairwise, and a wider one row after row as the whole
    matrix (the per-item sums are then the same numbers whatever the blocks)."""
    n_models, n_items = shape[0], shape[1]
    width = max(2, _BLOCK_CELLS // max(n_models, 1))
    bounds = [(s, min(s + width, n_items)) for s in range(0, n_items, width)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < 2:
        bounds[-2:] = [(bounds[-2][0], n_items)]
    return bounds


def constant_items(matrix: ResponseMatrix) -> pd.DataFrame:
    """Items with a single observed value (every model right, or every model wrong).

    Returns
    -------
    DataFrame
        One row per constant item: ``item``, ``value`` (the common score), ``n_observed``.
    """
    idx = matrix.constant_items()
    scores = matrix.scores[:, idx]
    with np.errstate(all="ignore"):
        value = np.nanmax(scores, axis=0) if idx.size else np.zeros(0)
    return pd.DataFrame(
        {
            "item": [matrix.item_ids[j] for j in idx],
            "value": value.astype(float),
            "n_observed": matrix.n_observed_per_item()[idx],
        }
    )


def duplicate_items(
    result: IRTResult,
    matrix: ResponseMatrix,
    *,
    min_agreement: float = 0.95,
    min_common: int = 10,
    alpha: float = 0.05,
    block: int = 512,
) -> pd.DataFrame:
    """Pairs of items with (near) identical response patterns, beyond what the model explains.

    Two items agree on a model when both are right or both wrong (fractional scores: the
    expected agreement of independent Bernoulli draws). Easy items agree by chance, so agreement
    alone flags many pairs on small benchmarks; each candidate pair (agreement
    ``>= min_agreement`` on ``>= min_common`` models observed on both, neither item constant) is
    therefore tested against the fitted model: under conditional independence the number of
    disagreements ``D`` is a sum over the common models of Bernoulli variables with
    probabilities ``p_ij (1 - p_ik) + (1 - p_ij) p_ik`` (mean ``E``), and its exact lower tail
    ``P(D' <= D)`` is the p-value (:func:`~latentbench.irt._stats.pair_disagreement_cdf`).
    A pair is flagged at family-wise level ``alpha`` with Bonferroni over every pair of items
    that could have been a candidate, not only the candidates: these are chosen for their
    agreement, i.e. for small p-values (``tests/irt/test_diagnostics.py`` checks the level by
    simulation at 20-70 models).

    Parameters
    ----------
    result : IRTResult
    matrix : ResponseMatrix
    min_agreement : float, default 0.95
    min_common : int, default 10
    alpha : float, default 0.05
        Family-wise level, Bonferroni over the ``n (n - 1) / 2`` pairs of the ``n`` items
        that are not constant and are observed on ``min_common`` models or more.
    block : int, default 512
        Items per block of the pairwise products (memory ~ block x n_items x 4 bytes x 5).
        Binary scores take each pair once, and a complete binary matrix only the pairs whose
        right answers are within ``(1 - min_agreement) n_models`` of each other (no other
        pair can agree enough): at most about ``3 n_models n_items^2 / 2`` flops with
        missing cells, ``n_models n_items^2 / 2`` or much less without (fractional scores:
        ``6 n_models n_items^2``).

    Returns
    -------
    DataFrame
        One row per candidate pair, most significant first: ``item_a``, ``item_b``,
        ``n_common``, ``agreement`` (share of common models on which they agree),
        ``disagreements``, ``expected_disagreements``, ``p_value``, ``identical`` (no
        disagreement on the common models), ``duplicate`` (``p_value <= alpha / (n (n - 1) /
        2)``).
    """
    scores, observed = _observed(result, matrix)
    constant = np.zeros(scores.shape[1], dtype=bool)
    if isinstance(matrix, ResponseMatrix):
        constant[matrix.constant_items()] = True
    found = _candidate_pairs(scores, observed, constant, min_agreement, min_common, block)
    if found is not None and not _binary(scores):
        found = _exact_fractional(scores, observed, found, min_agreement, min_common, block)
    columns = [
        "item_a",
        "item_b",
        "n_common",
        "agreement",
        "disagreements",
        "expected_disagreements",
        "p_value",
        "identical",
        "duplicate",
    ]
    if found is None:
        return pd.DataFrame({c: [] for c in columns})
    ia, ib, common, disagree = found
    # expected disagreements for the candidate pairs only, the pairs of each block of
    # `block` first items together (the sums of each pair as before the pruning)
    # p = fitted, q = 1 - fitted on the observed cells, 0 elsewhere: built for the
    # candidates' columns only (two more N x J float64 arrays at 4,000 x 20,000: 1.3 GB)
    fitted = result.predict_proba()
    expected = np.empty(ia.size)
    cuts = np.flatnonzero(np.diff(ia // block)) + 1
    for part in np.split(np.arange(ia.size), cuts):
        a_glob, b_idx = ia[part], ib[part]
        seen_a = observed[:, a_glob]
        seen_b = observed[:, b_idx]
        p_a, p_b = fitted[:, a_glob] * seen_a, fitted[:, b_idx] * seen_b
        q_a, q_b = (1.0 - fitted[:, a_glob]) * seen_a, (1.0 - fitted[:, b_idx]) * seen_b
        expected[part] = np.einsum("ik,ik->k", p_a, q_b) + np.einsum("ik,ik->k", q_a, p_b)
    n_common = common.astype(np.float64)
    dis = disagree.astype(np.float64)
    p_value = pair_disagreement_cdf(fitted, observed, ia, ib, np.floor(dis + 1e-9))
    n_pairs = _tested_pairs(observed, constant, min_common)
    ids = result.item_ids
    out = pd.DataFrame(
        {
            "item_a": [ids[j] for j in ia],
            "item_b": [ids[j] for j in ib],
            "n_common": n_common.astype(int),
            "agreement": 1.0 - dis / n_common,
            "disagreements": dis,
            "expected_disagreements": expected,
            "p_value": p_value,
            "identical": dis <= 1e-9,
            "duplicate": p_value <= alpha / n_pairs,
        }
    )
    return out.sort_values(["p_value", "agreement"], ascending=[True, False], ignore_index=True)


def _tested_pairs(observed: np.ndarray, constant: np.ndarray, min_common: int) -> float:
    """The Bonferroni count of :func:`duplicate_items`: every pair of items that could have
    been a candidate (neither constant, each observed on ``min_common`` models or more; an
    upper bound on the pairs with ``min_common`` models in common). The candidates are chosen
    by their agreement, so counting only them would divide ``alpha`` among pairs picked for
    small p-values (measured: a flag on 70-88% of matrices without duplicates at 20-30 models)."""
    eligible = int(np.count_nonzero(~constant & (observed.sum(axis=0) >= min_common)))
    return max(eligible * (eligible - 1) / 2.0, 1.0)


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _candidate_pairs(
    scores: np.ndarray,
    observed: np.ndarray,
    constant: np.ndarray,
    min_agreement: float,
    min_common: int,
    block: int,
) -> Pairs | None:
    """:func:`duplicate_items`' candidate pairs: first and second item (``a < b``, in that
    order), models observed on both and disagreements (float32), or None for none.

    Binary scores (counts, exact in float32 below 2^24 models) take each pair once (the
    products of a block of items with the items after its start, not all of them); a
    complete binary matrix also skips the pairs whose right answers differ by more than
    ``(1 - min_agreement) n_models`` (they disagree on at least that many models): the items
    sorted by their right answers, each block of them against the window of items whose
    counts are close enough. Fractional scores keep the products of each block with every
    item, with a slack below ``min_agreement``: :func:`duplicate_items` sums their candidates
    again exactly (:func:`_exact_fractional`).
    """
    J = scores.shape[1]
    n_models = scores.shape[0]
    if not _binary(scores):
        return _candidate_pairs_fractional(
            scores, observed, constant, min_agreement, min_common, block
        )
    found: list[Pairs] = []
    if bool(observed.all()):
        # every cell observed, every score 0 or 1 (a dense leaderboard): the pair
        # disagrees on r_a + r_b - 2 (both right) models, one product instead of three
        yes = scores  # float32 0/1, no NaN
        right = yes.sum(axis=0, dtype=np.float64)  # each item's right answers
        order = np.argsort(right, kind="stable")
        ranked = right[order]
        # a pair farther apart than this has agreement < min_agreement (slack for float32)
        reach = (1.0 - min_agreement) * n_models + 1.0 + 1e-6 * n_models
        common_value = np.float32(n_models)
        for start in range(0, J, block):
            stop = min(start + block, J)
            end = int(np.searchsorted(ranked, ranked[stop - 1] + reach, side="right"))
            rows, cols = order[start:stop], order[start:end]
            both = yes[:, rows].T @ yes[:, cols]
            common = np.full(both.shape, common_value, dtype=np.float32)
            dis = (right[rows, None] + right[None, cols] - 2.0 * both).astype(np.float32)
            # each pair once: later in the order than the row (the block's own corner)
            later = np.arange(start, stop)[:, None] < np.arange(start, end)[None, :]
            kept = _keep(rows, cols, common, dis, later, constant, min_agreement, min_common)
            if kept is not None:
                found.append(kept)
    else:
        obs = observed.astype(np.float32)
        yes = np.where(observed, scores, 0.0).astype(np.float32)  # 0 where unobserved
        no = (1.0 - yes) * obs
        for start in range(0, J, block):
            stop = min(start + block, J)
            common = obs[:, start:stop].T @ obs[:, start:]
            dis = yes[:, start:stop].T @ no[:, start:] + no[:, start:stop].T @ yes[:, start:]
            rows, cols = np.arange(start, stop), np.arange(start, J)
            later = rows[:, None] < cols[None, :]
            kept = _keep(rows, cols, common, dis, later, constant, min_agreement, min_common)
            if kept is not None:
                found.append(kept)
    if not found:
        return None
    ia, ib, common, dis = (np.concatenate(x) for x in zip(*found, strict=True))
    # the first item first, then the second (the order of the rows before the pruning)
    first, second = np.minimum(ia, ib), np.maximum(ia, ib)
    order = np.lexsort((second, first))
    return first[order], second[order], common[order], dis[order]


def _binary(scores: np.ndarray) -> bool:
    """Whether every observed score (not NaN) is 0 or 1, checked a block of models at a
    time (no N x J temporaries)."""
    rows = max(1, _BLOCK_CELLS // max(scores.shape[1], 1))
    for start in range(0, scores.shape[0], rows):
        part = scores[start : start + rows]
        if not bool(((part == 0.0) | (part == 1.0) | np.isnan(part)).all()):
            return False
    return True


def _keep(
    rows: np.ndarray,
    cols: np.ndarray,
    common: np.ndarray,
    dis: np.ndarray,
    later: np.ndarray,
    constant: np.ndarray,
    min_agreement: float,
    min_common: int,
) -> Pairs | None:
    """The candidates among the products of items ``rows`` with items ``cols`` (``later``:
    the pairs to consider)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = 1.0 - dis / common
    cand = (common >= min_common) & (agree >= min_agreement) & later
    cand &= ~constant[rows, None] & ~constant[None, cols]
    r, c = np.nonzero(cand)
    if r.size == 0:
        return None
    return rows[r], cols[c], common[r, c], dis[r, c]


_FRACTIONAL_SLACK = 1e-4
"""How far below ``min_agreement`` a fractional pair's float32 agreement may fall and still be
checked exactly (:func:`_exact_fractional`): float32 sums over a few thousand models are off
by far less."""


def _exact_fractional(
    scores: np.ndarray,
    observed: np.ndarray,
    found: Pairs,
    min_agreement: float,
    min_common: int,
    block: int,
) -> Pairs | None:
    """The candidates of fractional scores with their common models and disagreements summed
    exactly (float64, over the models in their order, not by BLAS), those that reach
    ``min_agreement`` and ``min_common``: the float32 products that found them round in the
    last bits by the number of BLAS threads, so the table would differ between machines."""
    ia, ib = found[0], found[1]
    common = np.empty(ia.size)
    dis = np.empty(ia.size)
    cuts = np.flatnonzero(np.diff(ia // block)) + 1
    for part in np.split(np.arange(ia.size), cuts):
        a, b = ia[part], ib[part]
        both = observed[:, a] & observed[:, b]
        y_a = np.where(both, scores[:, a], 0.0).astype(np.float64)
        y_b = np.where(both, scores[:, b], 0.0).astype(np.float64)
        common[part] = both.sum(axis=0)
        dis[part] = np.einsum("ik,ik->k", y_a, 1.0 - y_b) + np.einsum("ik,ik->k", 1.0 - y_a, y_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = (common >= min_common) & (1.0 - dis / common >= min_agreement)
    if not keep.any():
        return None
    return ia[keep], ib[keep], common[keep], dis[keep]


def _candidate_pairs_fractional(
    scores: np.ndarray,
    observed: np.ndarray,
    constant: np.ndarray,
    min_agreement: float,
    min_common: int,
    block: int,
) -> Pairs | None:
    """:func:`_candidate_pairs` with fractional scores: each block of items against all."""
    J = scores.shape[1]
    obs = observed.astype(np.float32)
    y = np.where(observed, scores, 0.0).astype(np.float32)
    yes = y * obs
    no = (1.0 - y) * obs
    found: list[Pairs] = []
    every = np.arange(J)
    for start in range(0, J, block):
        stop = min(start + block, J)
        common = obs[:, start:stop].T @ obs
        dis = yes[:, start:stop].T @ no + no[:, start:stop].T @ yes
        rows = np.arange(start, stop)
        later = rows[:, None] < every[None, :]
        loose = min_agreement - _FRACTIONAL_SLACK  # made exact by _exact_fractional
        kept = _keep(rows, every, common, dis, later, constant, loose, min_common)
        if kept is not None:
            found.append(kept)
    if not found:
        return None
    ia, ib, common, dis = (np.concatenate(x) for x in zip(*found, strict=True))
    return ia, ib, common, dis


FIT_FULL_DF_GROUPS = 7
"""Groups from which :func:`item_fit` refers its chi-square to ``n_groups - 2`` degrees of
freedom (below: ``n_groups - 1``, conservative)."""


def item_fit(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray,
    *,
    n_groups: int | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Item fit statistics on the residuals.

    - ``infit`` / ``outfit``: information-weighted and unweighted mean squares of the
      standardised residuals ``(y - p) / sqrt(p (1 - p))`` (expected 1; > 1 noisier than the
      model, < 1 more deterministic), with their Wilson-Hilferty standardised forms
      ``infit_t`` / ``outfit_t``.
    - ``chi2``: Yen's Q1-type grouped statistic. Models are split into ``n_groups`` groups by
      ability; per group the observed and fitted mean scores are compared,
      ``sum_g n_g (O_g - E_g)^2 / (E_g (1 - E_g))``, referred to chi-square with
      ``n_groups - 2`` degrees of freedom (two item parameters estimated) from
      :data:`FIT_FULL_DF_GROUPS` groups on, ``n_groups - 1`` below (the ``df`` column says
      which): with few groups (fewer than 70 models by default) the ``n_groups - 2``
      reference rejected well-fitting 2PL items far more often than its level (p <= 0.05
      on 9.6% of them at 20 x 200, 7.7% at 40 x 400, 6.5% at 50 x 500, 4.3% at 70 x 1000),
      the ``n_groups - 1`` one on 2.6-2.9% (conservative; ``benchmarks/diag_levels.py``).
      Sensitive to item
      characteristic curves that are not logistic (e.g. non-monotone ones).

    Parameters
    ----------
    n_groups : int, optional
        Default ``min(10, max(3, n_models // 10))``.
    alpha : float, default 0.05
        False-discovery rate (Benjamini-Hochberg over items) for the ``poor_fit`` flag.

    Returns
    -------
    DataFrame
        One row per item: ``item``, ``infit``, ``outfit``, ``infit_t``, ``outfit_t``,
        ``chi2``, ``df``, ``p_value``, ``q_value`` (BH), ``poor_fit`` (``q_value <= alpha``;
        False for constant items, whose p-value is NaN).
    """
    scores, observed = _observed(result, matrix)
    N, J = scores.shape
    G = n_groups or min(10, max(3, N // 10))
    if G < 3:
        raise InputError(f"n_groups={G}; expected at least 3")
    order = np.argsort(result.theta, kind="stable")
    groups = np.array_split(order, G)
    fitted = result.predict_proba()
    # over blocks of items: a few N x block temporaries (nine N x J float64 arrays made the
    # report's peak, 6.3 GB at 4,000 x 20,000); the same numbers (see _item_blocks)
    columns = {name: np.empty(J) for name in ("infit", "outfit", "infit_t", "outfit_t", "chi2")}
    for start, stop in _item_blocks(scores.shape):
        part = slice(start, stop)
        got = _item_fit_block(scores[:, part], observed[:, part], fitted[:, part], groups)
        for name, values in zip(columns, got, strict=True):
            columns[name][part] = values
    infit, outfit = columns["infit"], columns["outfit"]
    infit_t, outfit_t, stat = columns["infit_t"], columns["outfit_t"], columns["chi2"]
    # with few groups the G - 2 reference is anti-conservative (see the docstring): G - 1
    df = G - 2 if G >= FIT_FULL_DF_GROUPS else G - 1
    constant = np.zeros(J, dtype=bool)
    if isinstance(matrix, ResponseMatrix):
        constant[matrix.constant_items()] = True
    p_value = np.where(constant, np.nan, chi2_sf(stat, df))
    q_value = _benjamini_hochberg(p_value)
    return pd.DataFrame(
        {
            "item": result.item_ids,
            "infit": infit,
            "outfit": outfit,
            "infit_t": infit_t,
            "outfit_t": outfit_t,
            "chi2": stat,
            "df": df,
            "p_value": p_value,
            "q_value": q_value,
            "poor_fit": np.nan_to_num(q_value, nan=1.0) <= alpha,
        }
    )


def _item_fit_block(
    scores: np.ndarray, observed: np.ndarray, fitted: np.ndarray, groups: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`item_fit`'s infit, outfit, their standardised forms and the grouped chi-square
    of some items (all models; ``groups``: the models' ability groups)."""
    y = np.where(observed, scores, 0.0).astype(np.float64)
    p = np.clip(fitted, 1e-9, 1 - 1e-9)
    w = p * (1 - p)
    obs = observed.astype(np.float64)
    n = obs.sum(axis=0)
    sq = (y - p) ** 2 * obs
    with np.errstate(invalid="ignore", divide="ignore"):
        outfit = (sq / w).sum(axis=0) / n
        infit = sq.sum(axis=0) / (w * obs).sum(axis=0)
        # variances of the mean squares (Wright & Masters 1982)
        kurt = w * (1 - 3 * w)  # E (y - p)^4 for a Bernoulli
        q_out = np.sqrt(((kurt / w**2 - 1) * obs).sum(axis=0)) / n
        q_in = np.sqrt(((kurt - w**2) * obs).sum(axis=0)) / (w * obs).sum(axis=0)
        outfit_t = (np.cbrt(outfit) - 1) * (3 / q_out) + q_out / 3
        infit_t = (np.cbrt(infit) - 1) * (3 / q_in) + q_in / 3
    stat = np.zeros(scores.shape[1])
    for g in groups:
        og = obs[g]
        ng = og.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            observed_mean = (y[g] * og).sum(axis=0) / ng
            fitted_mean = (p[g] * og).sum(axis=0) / ng
            term = ng * (observed_mean - fitted_mean) ** 2 / (fitted_mean * (1 - fitted_mean))
        stat += np.where(ng > 0, term, 0.0)
    return infit, outfit, infit_t, outfit_t, stat


def rank_changes(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None = None,
    *,
    level: float = 0.95,
    n_draws: int = 2000,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """Models whose ability rank differs from their accuracy rank, biggest moves first.

    With the matrix, ability ranks get intervals (from normal draws around the reported
    abilities and standard errors, the ones ``abilities.csv`` and the report show,
    :func:`~latentbench.irt.inference.rank_intervals`), and a move is called significant
    when the accuracy rank lies outside the ability-rank interval.

    Returns
    -------
    DataFrame
        One row per model, sorted by ``abs_shift`` descending: ``model``, ``theta``,
        ``accuracy``, ``rank_theta``, ``rank_accuracy``, ``rank_shift`` (rank_accuracy -
        rank_theta: positive = the ability ranks the model higher than accuracy does),
        ``abs_shift``; with the matrix also ``rank_lower``, ``rank_upper`` and
        ``significant``.
    """
    unc = None
    if matrix is not None:
        # the reported intervals (abilities.csv, the report's table): a joint-ML fit's scale
        # correction included, so the rank intervals here are the table's (they were drawn
        # from the uncorrected se: [7, 19] here, [6, 19] in the table)
        unc = standard_errors(result, matrix)
    # one ability per model: with the matrix, the reported theta (the intervals' estimate)
    ab = reported_abilities(result, unc) if unc is not None else result.abilities
    out = pd.DataFrame(
        {
            "model": ab["model"],
            "theta": ab["theta"],
            "accuracy": ab["accuracy"],
            "rank_theta": ab["rank_theta"],
            "rank_accuracy": ab["rank_accuracy"],
            "rank_shift": ab["rank_shift"],
        }
    )
    out["abs_shift"] = out["rank_shift"].abs()
    if unc is not None:
        theta = ab["theta"].to_numpy(float)
        draws = normal_draws(theta, ab["se"].to_numpy(float), n_draws, random_state)
        ranks = rank_intervals(
            draws, ab["model"].tolist(), estimate=theta, level=level, measured=measured_models(ab)
        )
        # whole numbers, NA for a model not ranked (a float array printed 7.000)
        out["rank_lower"] = ranks["rank_lower"].astype("Int64").array
        out["rank_upper"] = ranks["rank_upper"].astype("Int64").array
        out["significant"] = outside_rank_interval(out)
    return out.sort_values(["abs_shift", "rank_theta"], ascending=[False, True], ignore_index=True)


def outside_rank_interval(table: pd.DataFrame) -> np.ndarray:
    """Whether each model's accuracy rank lies outside its ability-rank interval
    (``rank_accuracy``, ``rank_lower``, ``rank_upper``); False where one is missing."""
    acc = pd.to_numeric(table["rank_accuracy"], errors="coerce").to_numpy(float, na_value=np.nan)
    lo = pd.to_numeric(table["rank_lower"], errors="coerce").to_numpy(float, na_value=np.nan)
    hi = pd.to_numeric(table["rank_upper"], errors="coerce").to_numpy(float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        return np.asarray((acc < lo) | (acc > hi), dtype=bool)


def rank_agreement(
    result: IRTResult,
    *,
    top: int | tuple[int, ...] = 10,
    abilities: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Rank correlation between accuracy and ability, overall and among the top models.

    Only the ranked models count: a model without an observed cell has neither an accuracy
    nor a measured ability (it made every correlation NaN).

    Parameters
    ----------
    top : int or tuple of int, default 10
        Sizes of the top groups (top by ability).
    abilities : DataFrame, optional
        The abilities to correlate (``model``, ``theta``, ``accuracy``): the reported table
        (:func:`~latentbench.irt.reported_abilities`, what ``abilities.csv`` and the report
        show); default the fit's own (``result.abilities``).

    Returns
    -------
    DataFrame
        One row per subset: ``subset`` ("all", "top 10", ...), ``n_models``, ``spearman``,
        ``kendall`` (tau-b), ``kendall_p_value``.
    """
    from scipy.stats import kendalltau, spearmanr  # here: scipy.stats is slow to import

    ab = result.abilities if abilities is None else abilities
    ranked = pd.to_numeric(ab["accuracy"], errors="coerce").notna().to_numpy(dtype=bool)
    measured = measured_models(ab)
    if measured is not None:
        ranked = ranked & measured
    ab = ab[ranked].sort_values("theta", ascending=False, kind="stable")
    # one size (np.int64 too: a DataFrame cell, numpy arithmetic) or several
    sizes = (int(top),) if isinstance(top, numbers.Integral) else tuple(top)  # type: ignore[arg-type]
    rows = []
    for name, part in [("all", ab)] + [(f"top {k}", ab.head(k)) for k in sizes if k < len(ab)]:
        if len(part) < 3:
            continue
        if part["theta"].nunique() < 2 or part["accuracy"].nunique() < 2:
            # a constant column (every model equal): no correlation, NaN (scipy warned)
            rows.append({"subset": name, "n_models": len(part), "spearman": float("nan"),
                         "kendall": float("nan"), "kendall_p_value": float("nan")})  # fmt: skip
            continue
        rho = spearmanr(part["theta"], part["accuracy"]).statistic
        tau = kendalltau(part["theta"], part["accuracy"])
        rows.append(
            {
                "subset": name,
                "n_models": len(part),
                "spearman": float(rho),
                "kendall": float(tau.statistic),
                "kendall_p_value": float(tau.pvalue),
            }
        )
    columns = ["subset", "n_models", "spearman", "kendall", "kendall_p_value"]
    return pd.DataFrame(rows, columns=columns)


@dataclass(eq=False)  # tables: == by identity, not a ValueError
class Diagnostics:
    """All diagnostics of a fit (see the functions of the same names for the columns).

    Attributes
    ----------
    items : DataFrame
        One row per item: ``item``, ``discrimination``, ``difficulty``, ``proportion_correct``,
        ``se``, ``z``, ``uninformative``, ``constant``, ``infit``, ``outfit``, ``chi2``,
        ``fit_p_value``, ``fit_q_value``, ``poor_fit``, ``duplicate_of`` (another item flagged
        as its duplicate, or empty), ``flagged`` (any flag).
    duplicates : DataFrame
        :func:`duplicate_items`.
    constant : DataFrame
        :func:`constant_items`.
    rank_changes : DataFrame
        :func:`rank_changes`.
    rank_agreement : DataFrame
        :func:`rank_agreement`.
    """

    items: pd.DataFrame
    duplicates: pd.DataFrame
    constant: pd.DataFrame
    rank_changes: pd.DataFrame
    rank_agreement: pd.DataFrame

    @property
    def flagged_items(self) -> pd.DataFrame:
        """Rows of ``items`` with any flag."""
        return self.items[self.items["flagged"]].reset_index(drop=True)

    def __repr__(self) -> str:
        """Short: items flagged, by flag, and models (the tables: the attributes)."""
        items = self.items
        counts = {
            "constant": int(items["constant"].sum()),
            "duplicate": int((items["duplicate_of"] != "").sum()),
            "uninformative": int(items["uninformative"].sum()),
            "poor fit": int(items["poor_fit"].sum()),
        }
        said = ", ".join(f"{n:,} {name}" for name, n in counts.items())
        return (
            f"Diagnostics({len(items):,} items, {int(items['flagged'].sum()):,} flagged "
            f"({said}); {len(self.rank_changes):,} models)"
        )


def diagnose(
    result: IRTResult, matrix: ResponseMatrix | None = None, *, top: int = 10
) -> Diagnostics:
    """Run every diagnostic; see :class:`Diagnostics`.

    ``matrix`` defaults to the matrix the result was fitted on (``result.matrix``).

    Parameters
    ----------
    result : IRTResult
        The fit.
    matrix : ResponseMatrix, optional
        The responses it was fitted on; a result loaded from disk keeps none, so one must be
        given (an :class:`~latentbench.InputError` otherwise).
    top : int, default 10
        Size of the top group of :func:`rank_agreement`.

    Returns
    -------
    Diagnostics
    """
    if matrix is None:  # the one the result keeps; one loaded from disk keeps none: said
        kept = fitted_matrix(result, None)
        matrix = kept if isinstance(kept, ResponseMatrix) else None
    if not isinstance(matrix, ResponseMatrix):
        raise InputError(f"expected a ResponseMatrix, got {type(matrix).__name__}")
    # the reported intervals first (rank_changes below asks for them): uninformative_items
    # then takes its items' table from their cache instead of computing it a second time
    standard_errors(result, matrix)
    info = uninformative_items(result, matrix)
    fit = item_fit(result, matrix)
    dups = duplicate_items(result, matrix)
    const = constant_items(matrix)
    items = result.items[
        ["item", "discrimination", "difficulty", "proportion_correct", "constant"]
    ].copy()
    items["se"] = info["se"].to_numpy()
    items["z"] = info["z"].to_numpy()
    items["uninformative"] = info["uninformative"].to_numpy() & ~items["constant"].to_numpy()
    for column in ("infit", "outfit", "chi2"):
        items[column] = fit[column].to_numpy()
    items["fit_p_value"] = fit["p_value"].to_numpy()
    items["fit_q_value"] = fit["q_value"].to_numpy()
    items["poor_fit"] = fit["poor_fit"].to_numpy()
    partner: dict[str, str] = {}
    if len(dups):
        for row in dups[dups["duplicate"]].itertuples():
            partner.setdefault(str(row.item_b), str(row.item_a))
            partner.setdefault(str(row.item_a), str(row.item_b))
    items["duplicate_of"] = [partner.get(i, "") for i in items["item"]]
    moves = rank_changes(result, matrix)
    items["flagged"] = (
        items["uninformative"]
        | items["constant"]
        | items["poor_fit"]
        | (items["duplicate_of"] != "")
    )
    return Diagnostics(
        items=items,
        duplicates=dups,
        constant=const,
        rank_changes=moves,
        # the reported abilities (rank_changes' theta), as abilities.csv and the report rank
        rank_agreement=rank_agreement(result, top=top, abilities=moves),
    )
