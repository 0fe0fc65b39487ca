"""The calibration a new model is estimated against: item parameters, population, scores.

A :class:`Calibration` is built once from a fit directory (``latentbench fit --out``), an
:class:`~latentbench.irt.IRTResult`, a :class:`~latentbench.io.ResponseMatrix` or a
response-matrix file, and cached: in memory keyed on its content hash, and for a matrix (whose
fit costs seconds) also on disk beside nothing the user owns (``LATENTBENCH_CACHE_DIR``, else
``~/.cache/latentbench/calibrations``), keyed on the file's SHA-256 and the options.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

import numpy as np

from latentbench._checks import bounded_scores, is_integer, user_stacklevel
from latentbench.exceptions import (
    ConvergenceWarning,
    DataWarning,
    IdentifiabilityWarning,
    InputError,
    LatentbenchWarning,
)

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix, Store
    from latentbench.irt import IRTResult

__all__ = ["Calibration", "load_calibration"]

_T = TypeVar("_T")

_MEMORY: dict[str, Calibration] = {}
_FIT_WARNINGS = {
    c.__name__: c
    for c in (LatentbenchWarning, DataWarning, ConvergenceWarning, IdentifiabilityWarning)
}
"""The warning categories a calibration's ``fit_warnings`` are said again under."""
_CACHE_VERSION = "estimate-calibration-2"
"""Part of every disk-cache key: 2 added the item features from the calibration responses."""


@functools.cache
def _code_fingerprint() -> str:
    """SHA-256 (first 16 hex digits) of the installed package's version and source files.

    Part of a disk-cache entry's file name, never of ``Calibration.hash``: a fit stored by
    another version of the code is refitted, not reused (the version number alone does not
    change between development commits, and a fit reused from older code makes the same
    command draw other items than on a machine with an empty cache), while designs and live
    runs, which are keyed by the calibration's hash, still match across versions that fit it
    the same way.
    """
    from latentbench import __version__

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_MAX_FEATURES = 16
"""Most item features kept from the calibration responses (the leading principal directions
of the calibration models' standardized answer columns; all of them when there are fewer)."""


@dataclass(frozen=True)
class Calibration:
    """Calibrated items and models (the reference a new model is scored against).

    The model is ``P(y_j = 1) = sigmoid((V_j . u + b_j) / sigma)``; ``u[0]`` is the ability
    ``theta`` on the calibration's reporting scale (calibration models: mean 0, sd 1 for rank 1,
    centred factors for rank > 1; a model with every score 0 or every one 1 left out of both).

    Attributes
    ----------
    item_ids : tuple of str, length n
    V : ndarray of shape (n, r)
    b : ndarray of shape (n,)
    sigma : float
    model_ids : tuple of str, length K
    model_scores : ndarray of shape (K,)
        Calibration models' mean scores over the calibrated items (their observed cells).
    model_factors : ndarray of shape (K, r)
    source : str
    hash : str
        SHA-256 of the calibration's content (hex).
    prior_mean : ndarray of shape (r,)
        Population prior of a new model's factors (the calibration models' mean).
    prior_chol : ndarray of shape (r, r)
        Cholesky factor of the population covariance (plus a small ridge).
    item_features : ndarray of shape (n, p) or None
        Item features derived from the calibration models' responses
        (:func:`response_features`), used by the ``ridge`` proxy of the estimate; None when the
        source carries no responses (a fit directory, an IRTResult without its matrix): the
        estimate then uses the IRT predictions alone and says so.
    labels : dict
        What the calibration's responses were labelled (``benchmark``, ``metric``,
        ``filter``, ``split``, where its file or store says: :attr:`ResponseMatrix.labels
        <latentbench.io.ResponseMatrix.labels>`, or a fit directory's ``fit.json``); a new
        model's answers labelled otherwise are flagged. Empty when unknown.
    fit : {"matrix", "fit"}
        Which fit the parameters come from: ``"matrix"``, the low-rank logistic fit made
        here from a response matrix (a file, a store benchmark, a ``ResponseMatrix``), whose
        ``theta`` is on that fit's own scale; ``"fit"``, a ``latentbench fit`` (a fit
        directory, an ``IRTResult``), whose ``theta`` is on its ``abilities.csv`` scale. The
        two fits of the same cells differ, so they draw other items and give other (equally
        valid) intervals (docs/estimate.md, "Inputs").
    fit_warnings : tuple of (str, str)
        The warnings (category name, message) said while reading and fitting the responses
        (e.g. an intercept-only fit, a model left out) or loading a fit directory (e.g. a
        table edited since the fit): said again whenever the calibration is served from a
        cache, and recorded in each estimate's and comparison's ``warnings``.
    responses : ndarray of shape (K, n), or None
        The calibration models' scores, kept to rank a new model by a weighted score
        (:func:`~latentbench.select.estimate`'s ``weights``) and stored compactly
        (:func:`compact_responses`): int8 (-1 where not observed) when every observed score
        is 0 or 1, else float32 (NaN where not observed). None when the source carries no
        responses (a fit directory): the weighted scores are then the fitted ones, and the
        estimate says so. A score outside [0, 1], +-inf included (never read as not
        observed), is an :class:`~latentbench.exceptions.InputError` naming its cell (a
        float rounding past 0 or 1 by at most 1e-9 is that bound, checked before float32
        storage rounds it, as every reader of scores reads it: docs/formats.md); an
        array of objects is read as numbers (None, ``pd.NA`` and NaN not observed, a text
        refused).
    """

    item_ids: tuple[str, ...]
    V: np.ndarray
    b: np.ndarray
    sigma: float
    model_ids: tuple[str, ...]
    model_scores: np.ndarray
    model_factors: np.ndarray
    source: str
    hash: str
    item_features: np.ndarray | None = field(default=None, repr=False, compare=False)
    labels: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    fit: str = field(default="matrix", compare=False)
    fit_warnings: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    responses: np.ndarray | None = field(default=None, repr=False, compare=False)
    prior_mean: np.ndarray = field(init=False, repr=False)
    prior_chol: np.ndarray = field(init=False, repr=False)
    Vw: np.ndarray = field(init=False, repr=False)
    bw: np.ndarray = field(init=False, repr=False)
    _positions: dict[str, int] = field(init=False, repr=False, compare=False)
    _knots: dict[bytes, tuple[np.ndarray, np.ndarray]] = field(
        init=False, repr=False, compare=False
    )
    """:func:`score_ability_knots` per population, models, weights and model scores: they
    depend on the calibration and those only, and cost a pass of the test characteristic
    curve over every item (401 abilities x n items) per call."""

    def __repr__(self) -> str:
        """Short: items, rank, models, which fit and the source (the arrays: the
        attributes)."""
        return (
            f"Calibration({len(self.item_ids):,} items, rank {self.rank}, "
            f"{len(self.model_ids):,} models; fit {self.fit!r} of {self.source})"
        )

    def __post_init__(self) -> None:
        V = np.atleast_2d(np.asarray(self.V, dtype=np.float64).T).T.copy()
        b = np.asarray(self.b, dtype=np.float64).copy()
        U = np.asarray(self.model_factors, dtype=np.float64).reshape(-1, V.shape[1]).copy()
        scores = np.asarray(self.model_scores, dtype=np.float64).copy()
        n, r = V.shape
        if b.shape != (n,) or len(self.item_ids) != n:
            raise InputError(
                f"calibration: {n} item factor rows, {b.size} intercepts and "
                f"{len(self.item_ids)} item ids; expected the same number"
            )
        if U.shape[0] != len(self.model_ids) or scores.shape != (U.shape[0],):
            raise InputError("calibration: model ids, factors and scores differ in length")
        if U.shape[0] >= 2:
            mean = U.mean(axis=0)
            cov = np.atleast_2d(np.cov(U, rowvar=False))
            cov = cov + 1e-3 * max(float(np.trace(cov)) / r, 1e-6) * np.eye(r)
        else:  # no population: a unit prior on the factors
            mean, cov = np.zeros(r), np.eye(r)
        chol = np.linalg.cholesky(cov)
        if self.item_features is not None:
            feats = np.asarray(self.item_features, dtype=np.float64).reshape(n, -1).copy()
            if not np.isfinite(feats).all():
                raise InputError("calibration: item features must be finite")
            feats.setflags(write=False)
            object.__setattr__(self, "item_features", feats)
        if self.responses is not None:
            Y = np.asarray(self.responses)
            if Y.shape != (U.shape[0], n):  # first: a cell is named by its model and item
                raise InputError(
                    f"calibration: responses of shape {Y.shape}; expected "
                    f"({U.shape[0]}, {n}) (models x items)"
                )
            given, shown = Y.dtype, Y  # a bad cell is said as given, not as kept
            if Y.dtype not in (np.int8, np.float32):
                if Y.dtype.kind not in "biuf":  # objects (None, pd.NA, numbers), text
                    Y = shown = _as_scores(Y, self.model_ids, self.item_ids)
                if Y.dtype.kind == "f":  # an infinite score is no missing cell (-1 once kept)
                    _refuse_infinite(Y, self.model_ids, self.item_ids)
                    Y = _bounded(Y, shown, given, self.model_ids, self.item_ids)
                Y = compact_responses(Y)
            elif Y.dtype == np.float32:
                Y = _bounded(Y, shown, given, self.model_ids, self.item_ids)
            _check_responses(Y, self.model_ids, self.item_ids, shown, given)
            Y.setflags(write=False)
            object.__setattr__(self, "responses", Y)
        for name, value in (
            ("V", V),
            ("b", b),
            ("model_factors", U),
            ("model_scores", scores),
            ("prior_mean", mean),
            ("prior_chol", chol),
            ("Vw", V @ chol),
            ("bw", b + V @ mean),
        ):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "item_ids", tuple(str(i) for i in self.item_ids))
        object.__setattr__(self, "model_ids", tuple(str(m) for m in self.model_ids))
        object.__setattr__(self, "_positions", {j: k for k, j in enumerate(self.item_ids)})
        object.__setattr__(self, "_knots", {})

    def __getstate__(self) -> dict[str, Any]:
        # the knots cache stays behind (a worker recomputes what it needs)
        return {k: v for k, v in self.__dict__.items() if k != "_knots"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickle (a worker process) and deepcopy rebuild the arrays writeable: they stay
        # read-only, as __post_init__ made them (the in-memory cache shares one calibration)
        self.__dict__.update(state)
        self.__dict__["_knots"] = {}  # a cache, not content (and absent from older pickles)
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    @property
    def n_items(self) -> int:
        """Number of calibrated items."""
        return len(self.item_ids)

    @property
    def rank(self) -> int:
        """Number of latent factors r of the calibration (columns of ``V``)."""
        return int(self.V.shape[1])

    @property
    def direction(self) -> np.ndarray:
        """The ability direction ``w`` in factor space, shape (r,): ``[1]`` for rank 1, the
        items' mean loading for rank > 1 (as :attr:`IRTResult.direction
        <latentbench.irt.IRTResult.direction>`): an ability is ``u w``, never one factor."""
        from latentbench.irt._objective import general_direction

        return general_direction(self.V)

    @property
    def abilities(self) -> np.ndarray:
        """The calibration models' abilities ``U w``, shape (K,)."""
        return np.asarray(self.model_factors @ self.direction)

    def positions(self, items: list[str]) -> np.ndarray:
        """Positions of item ids in the calibration (-1 where unknown), shape (len(items),).

        Parameters
        ----------
        items : list of str
            Item ids (compared as text).

        Returns
        -------
        ndarray of int64 of shape (len(items),)
        """
        get = self._positions.get
        return np.fromiter((get(str(i), -1) for i in items), dtype=np.int64, count=len(items))

    def population_prediction(self) -> np.ndarray:
        """Prior predictive probability of each item for a typical model, shape (n,).

        Returns
        -------
        ndarray of float64 of shape (n_items,)
            One probability per calibrated item (probit approximation of the logistic-normal
            mean).
        """
        from latentbench.irt._objective import sigmoid

        mu = self.bw / self.sigma
        s2 = (self.Vw**2).sum(axis=1) / self.sigma**2
        return np.asarray(sigmoid(mu / np.sqrt(1.0 + np.pi * s2 / 8.0)), dtype=np.float64)


def _check_responses(
    Y: np.ndarray, model_ids: Any, item_ids: Any, shown: np.ndarray, given: np.dtype[Any]
) -> None:
    """Refuse kept responses ``Y`` outside their dtype's values: int8 -1 (not observed), 0
    or 1; float32 NaN (not observed) or in [0, 1]. A bad cell is said as the user gave it:
    its value in ``shown`` (the responses before they were kept compactly: 1.1, not float32's
    1.100000023841858) and the dtype ``given`` (float64, not the float32 it is kept as).
    Reductions only (no temporary of the matrix's size unless a value is wrong)."""
    if Y.size == 0:
        return
    if Y.dtype == np.int8:
        if int(Y.min()) >= -1 and int(Y.max()) <= 1:
            return
        bad = (Y < -1) | (Y > 1)
        expected = f"-1 (not observed), 0 or 1 in the {given} array given"
    else:
        low, high = float(np.fmin.reduce(Y, axis=None)), float(np.fmax.reduce(Y, axis=None))
        if math.isnan(low) or (low >= 0.0 and high <= 1.0):  # all NaN, or all within [0, 1]
            return
        bad = ~np.isnan(Y) & ~((Y >= 0) & (Y <= 1))
        expected = f"NaN (not observed) or a number in [0, 1] in the {given} array given"
    _refuse_cell(shown, bad, expected, model_ids, item_ids)


def _bounded(
    Y: np.ndarray, shown: np.ndarray, given: np.dtype[Any], model_ids: Any, item_ids: Any
) -> np.ndarray:
    """Given float responses read by the rule of every score reader
    (:func:`~latentbench._checks.bounded_scores`), before float32 storage rounds them: a
    rounding past 0 or 1 within ``SCORE_ROUNDING`` (1e-9) is that bound, a value further out
    is refused naming its cell (float32 kept ``1 + 5e-8`` as 1 while ``-1e-12`` was refused).
    ``Y`` itself when every value is within [0, 1] (reductions only)."""
    if Y.size == 0:
        return Y
    low, high = float(np.fmin.reduce(Y, axis=None)), float(np.fmax.reduce(Y, axis=None))
    if math.isnan(low) or (low >= 0.0 and high <= 1.0):  # all NaN, or all within [0, 1]
        return Y
    bounded, outside = bounded_scores(Y)
    if outside.any():
        expected = f"NaN (not observed) or a number in [0, 1] in the {given} array given"
        _refuse_cell(shown, outside, expected, model_ids, item_ids)
    return np.asarray(bounded)


def _as_scores(Y: np.ndarray, model_ids: Any, item_ids: Any) -> np.ndarray:
    """Given responses of objects or text (``np.asarray`` of a list holding None, a frame of
    object columns) as float64, None / ``pd.NA`` / NaN not observed (numpy's ``isfinite``
    refused such an array with a TypeError); a cell that is no number is refused, named."""
    import pandas as pd

    flat = pd.Series(Y.ravel(), dtype=object)
    values = pd.to_numeric(flat, errors="coerce")
    bad = (values.isna() & flat.notna()).to_numpy(dtype=bool).reshape(Y.shape)
    if bad.any():
        _refuse_cell(Y, bad, "a score in [0, 1], or NaN or None (not observed)", model_ids,
                     item_ids)  # fmt: skip
    return np.asarray(values, dtype=np.float64).reshape(Y.shape)


def _refuse_infinite(Y: np.ndarray, model_ids: Any, item_ids: Any) -> None:
    """Refuse given float responses (before they are kept compactly, where a non-finite
    cell reads as not observed) that hold +-inf: bad input, not a missing cell. Reductions
    only unless a value is infinite."""
    if Y.size == 0:
        return
    low, high = float(np.fmin.reduce(Y, axis=None)), float(np.fmax.reduce(Y, axis=None))
    if not (math.isinf(low) or math.isinf(high)):
        return
    expected = "a score in [0, 1] or NaN (not observed); an infinite score is no missing cell"
    _refuse_cell(Y, np.isinf(Y), expected, model_ids, item_ids)


def _refuse_cell(
    Y: np.ndarray, bad: np.ndarray, expected: str, model_ids: Any, item_ids: Any
) -> None:
    """The :class:`InputError` naming the first ``bad`` cell of ``Y`` (its value, model and
    item), how many are bad, and what was ``expected``."""
    k, j = (int(i) for i in np.unravel_index(int(np.argmax(bad)), Y.shape))
    model = model_ids[k] if k < len(model_ids) else k
    item = item_ids[j] if j < len(item_ids) else j
    value = Y[k, j]
    value = value.item() if isinstance(value, np.generic) else value  # an object's as given
    raise InputError(
        f"calibration: field 'responses' holds {value!r} (model {model!r}, item {item!r}; "
        f"{int(bad.sum()):,} such cell(s)); expected {expected}"
    )


def compact_responses(Y: Any) -> np.ndarray:
    """Scores kept compactly, shape (K, n): int8 with -1 where not observed when every
    observed score is 0 or 1 (1 byte a cell), else float32 with NaN (no float64 temporary
    of the matrix's size either way).

    Parameters
    ----------
    Y : array-like of shape (K, n)
        Scores in [0, 1], NaN where not observed.

    Returns
    -------
    ndarray of int8 or float32, shape (K, n)
    """
    Y = np.asarray(Y)
    seen = np.isfinite(Y)
    if bool(np.all((Y == 0) | (Y == 1) | ~seen)):
        out = np.full(Y.shape, -1, dtype=np.int8)
        np.copyto(out, Y, where=seen, casting="unsafe")
        return out
    return np.asarray(Y, dtype=np.float32)


def observed_weighted_scores(responses: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each row's ``sum w y / sum w`` over its observed cells, shape (K,); NaN for a row that
    observed no item of positive weight. By blocks of rows (no float64 copy of the matrix).

    Parameters
    ----------
    responses : ndarray of shape (K, n)
        As :func:`compact_responses` keeps them.
    w : ndarray of shape (n,)
        Non-negative weights.

    Returns
    -------
    ndarray of float64 of shape (K,)
    """
    K, n = responses.shape
    num, den = np.empty(K), np.empty(K)
    step = max(1, (1 << 23) // max(n, 1))  # 64 MB of float64 a block
    for a in range(0, K, step):  # a loop over blocks of rows, not over models
        block = responses[a : a + step]
        seen = block >= 0 if block.dtype == np.int8 else np.isfinite(block)
        num[a : a + step] = np.where(seen, block, 0).astype(np.float64) @ w
        den[a : a + step] = seen.astype(np.float64) @ w
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan))


def characteristic_knots(
    cal: Calibration,
    population: np.ndarray | None = None,
    *,
    grid: int = 401,
    span: float = 6.0,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Knots of the inverse test characteristic curve, strictly increasing in both.

    The test characteristic curve ``T(theta)`` is the expected mean score over the
    ``population`` items (default: all) of a model whose first factor is ``theta`` (the
    ability on the calibration's scale) and whose other factors are their mean given it under
    the population prior (rank 1: the 2PL's curve). It is evaluated on ``grid`` abilities
    spanning the prior mean +- ``span`` prior standard deviations, made non-decreasing (a
    running maximum; a curve with negative discriminations need not be monotone) and extended
    by one prior standard deviation beyond each end to the scores 0 and 1, so that
    ``np.interp(score, scores, abilities)`` is finite and strictly increasing on [0, 1].
    With ``weights`` (one per ``population`` item, non-negative, not all 0) the curve is the
    weighted mean instead.

    Returns
    -------
    scores, abilities : ndarray of shape (k,)
        Strictly increasing knots, from ``(0, low)`` to ``(1, high)``.
    """
    from latentbench.irt._objective import sigmoid

    pop = np.arange(cal.n_items) if population is None else np.asarray(population, np.int64)
    cov = cal.prior_chol @ cal.prior_chol.T
    # along the ability direction w (rank 1: the factor): the factors' regression on u w
    w = cal.direction
    var0 = float(w @ cov @ w)
    m0, sd0 = float(cal.prior_mean @ w), float(np.sqrt(var0))
    slope = (cal.V[pop] @ (cov @ w / var0)) / cal.sigma  # d logit / d theta
    base = cal.bw[pop] / cal.sigma  # logits at theta = m0
    offsets = sd0 * np.linspace(-span, span, grid)
    curve = np.empty(grid)
    step = max(1, 2**20 // max(pop.size, 1))  # about 8 MB of logits at a time
    for a in range(0, grid, step):  # a loop over chunks of the ability grid, not over items
        logits = offsets[a : a + step, None] * slope[None, :] + base[None, :]
        probs = np.asarray(sigmoid(logits))
        if weights is None:
            curve[a : a + step] = probs.mean(axis=1)
        else:
            curve[a : a + step] = probs @ (np.asarray(weights, float) / float(np.sum(weights)))
    curve = np.clip(np.maximum.accumulate(curve), 0.0, 1.0)
    scores = np.concatenate(([0.0], curve, [1.0]))
    abilities = np.concatenate(([m0 - (span + 1) * sd0], m0 + offsets, [m0 + (span + 1) * sd0]))
    keep = np.concatenate(([True], np.diff(scores) > 0))  # the first of equal scores
    return scores[keep], abilities[keep]


def score_ability_knots(
    cal: Calibration,
    population: np.ndarray | None = None,
    models: np.ndarray | None = None,
    *,
    weights: np.ndarray | None = None,
    model_scores: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Knots of the estimate's score -> ability map: increasing, and rank-preserving against
    the calibration models.

    Within the calibration models' range of scores the map is equipercentile: the ``i``-th
    lowest calibration score goes to the ``i``-th lowest calibration ability (their fitted
    ``theta``, :attr:`Calibration.abilities`), linear in between; at a group of tied scores
    it jumps from just below the lowest to the highest of the group's abilities. So for every
    score ``x``,
    ``#(calibration abilities > map(x)) == #(calibration scores > x)``: a score interval and
    its image imply the same ranks against the calibration. Below the lowest and above the
    highest calibration score the map follows the shape of the inverse test characteristic
    curve (:func:`characteristic_knots`), shifted to join, to the scores 0 and 1. The map is
    non-decreasing everywhere and strictly increasing wherever the calibration abilities are
    distinct.

    Parameters
    ----------
    cal : Calibration
    population : ndarray of int, optional
        The items the score is a mean over (default: all).
    models : ndarray of bool, shape (K,), optional
        The calibration models to rank against (default: all with a finite score).
    weights : ndarray of shape (len(population),), optional
        Item weights of a weighted score (the test characteristic curve is then weighted).
    model_scores : ndarray of shape (K,), optional
        The calibration models' scores the map ranks against (default:
        :attr:`Calibration.model_scores`; a weighted score's: the models' weighted scores).

    Returns
    -------
    scores, abilities : ndarray of shape (k,)
        Knots for ``np.interp`` (:func:`score_ability`), scores strictly increasing over [0, 1].
        Read-only: kept on ``cal`` and returned again for the same ``population``,
        ``models``, ``weights`` and ``model_scores`` (they depend on nothing else).
    """
    key = _knots_key(cal, population, models, weights, model_scores)
    cached = cal._knots.get(key)
    if cached is None:
        xs, ys = _score_ability_knots(cal, population, models, weights, model_scores)
        xs.setflags(write=False)
        ys.setflags(write=False)
        if len(cal._knots) >= _KNOTS_KEPT:  # the oldest goes: a bounded cache
            cal._knots.pop(next(iter(cal._knots)))
        cached = cal._knots[key] = (xs, ys)
    return cached


_KNOTS_KEPT = 16
"""Most score -> ability maps a calibration keeps (:func:`score_ability_knots`): one per
population, ranked models and weights in use (a few hundred floats each)."""


def _knots_key(
    cal: Calibration,
    population: np.ndarray | None,
    models: np.ndarray | None,
    weights: np.ndarray | None,
    model_scores: np.ndarray | None,
) -> bytes:
    """A digest of what :func:`score_ability_knots` depends on besides the calibration (the
    default population and models are their explicit values, so both spellings share one
    entry)."""
    pop = np.arange(cal.n_items) if population is None else population
    digest = hashlib.sha256()
    for name, value, dtype in (
        ("population", pop, np.int64),
        ("models", np.ones(len(cal.model_ids), bool) if models is None else models, bool),
        ("weights", weights, np.float64),
        ("model_scores", model_scores, np.float64),
    ):
        digest.update(name.encode())
        if value is not None:
            a = np.ascontiguousarray(np.asarray(value, dtype=dtype))
            digest.update(repr(a.shape).encode())
            digest.update(a.tobytes())
    return digest.digest()


def _score_ability_knots(
    cal: Calibration,
    population: np.ndarray | None,
    models: np.ndarray | None,
    weights: np.ndarray | None,
    model_scores: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`score_ability_knots`, computed (not cached)."""
    tx, ty = characteristic_knots(cal, population, weights=weights)
    scores = cal.model_scores if model_scores is None else np.asarray(model_scores, float)
    keep = np.isfinite(scores)
    if models is not None:
        keep &= np.asarray(models, dtype=bool)
    if not keep.any():
        return tx, ty
    s = np.sort(scores[keep])
    th = np.sort(cal.abilities[keep])
    uniq, first, counts = np.unique(s, return_index=True, return_counts=True)
    tied = counts > 1
    mid_x = np.concatenate((np.nextafter(uniq[tied], -np.inf), uniq))
    # just below a tied score the map stays below the group's lowest ability; at the score it
    # reaches the group's highest
    mid_y = np.concatenate((np.nextafter(th[first[tied]], -np.inf), th[first + counts - 1]))
    order = np.argsort(mid_x, kind="stable")
    mid_x, mid_y = mid_x[order], mid_y[order]
    low, high = tx < mid_x[0], tx > mid_x[-1]
    at_low, at_high = np.interp([mid_x[0], mid_x[-1]], tx, ty)
    xs = np.concatenate((tx[low], mid_x, tx[high]))
    ys = np.concatenate((th[0] - (at_low - ty[low]), mid_y, th[-1] + (ty[high] - at_high)))
    ys = np.maximum.accumulate(ys)
    keep_x = np.concatenate(([True], np.diff(xs) > 0))
    return xs[keep_x], ys[keep_x]


def score_ability(knots: tuple[np.ndarray, np.ndarray], scores: Any) -> np.ndarray:
    """Abilities of ``scores`` under the map of :func:`score_ability_knots`."""
    xs, ys = knots
    return np.asarray(np.interp(np.clip(np.asarray(scores, float), 0.0, 1.0), xs, ys))


def response_features(
    Y: np.ndarray,
    fitted: np.ndarray,
    max_features: int = _MAX_FEATURES,
    *,
    overwrite_fitted: bool = False,
) -> np.ndarray:
    """Item features from the calibration models' responses, shape (n, p).

    Each calibration model's answer column (its scores over the items) is standardized (mean 0,
    sd 1 over the items); a missing cell is filled with that model's fitted probability under
    the calibration's IRT fit (never with 0); a model whose filled answers are constant is
    left out. The features are the item scores on the principal directions of the ``K x n``
    standardized matrix, scaled by their singular values, ``p <= min(K, max_features)``: with
    all directions kept they are an orthogonal rotation of the ``K`` standardized columns
    themselves (a ridge regression on them is then exactly the one on the columns), and the
    directions dropped beyond ``max_features`` are those a ridge shrinks most.

    Parameters
    ----------
    Y : ndarray of shape (K, n)
        Calibration models' scores in [0, 1], NaN where not observed.
    fitted : ndarray of shape (K, n)
        The calibration fit's probabilities (fill-in for the missing cells).
    max_features : int
    overwrite_fitted : bool, default False
        Fill ``fitted`` (a float64 array the caller no longer needs) in place with the
        answers instead of allocating another ``K x n`` array (a leaderboard's is GBs).
    """
    if overwrite_fitted and fitted.dtype == np.float64 and fitted.flags.writeable:
        C = fitted  # the same values as np.where below, in fitted's memory
        np.copyto(C, Y, where=np.isfinite(Y))
    else:
        C = np.where(np.isfinite(Y), Y, fitted)
    C -= C.mean(axis=1, keepdims=True)  # in place: a leaderboard's C is 640 MB
    # by blocks of rows: each row's sd is computed alone (the same bits), without std's
    # K x n temporary
    step = max(1, (1 << 23) // max(C.shape[1], 1))
    sd = np.concatenate([C[k : k + step].std(axis=1) for k in range(0, C.shape[0], step)])
    keep = sd > 1e-12
    n = C.shape[1]
    if not keep.any():
        return np.zeros((n, 0))
    Z = C if keep.all() else C[keep]
    Z /= sd[keep, None]
    if min(Z.shape) > max(_PARTIAL_SVD_MIN_SIDE, 2 * max_features):
        S, Vt = _leading_directions(Z, max_features)
    else:
        _, S, Vt = np.linalg.svd(Z, full_matrices=False)
    k = int(min(max_features, int((S > 1e-8 * S[0]).sum())))
    # each direction's sign set by the items (its largest entry positive), not by the order
    # the SVD met them in: the same items listed in another order give the same features
    top = Vt[np.arange(k), np.abs(Vt[:k]).argmax(axis=1)]
    return np.ascontiguousarray(Vt[:k].T * (S[:k] * np.where(top < 0, -1.0, 1.0)))


_PARTIAL_SVD_MIN_SIDE = 400
"""Above this many calibration models and items, :func:`response_features` computes only its
leading singular directions (:func:`_leading_directions`) instead of the full SVD: at 4,000
models x 20,000 items the full one took 67 s of a 92 s estimate, for 16 of 4,000 directions."""


def _leading_directions(Z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest singular values of ``Z`` (descending) and their right singular
    vectors (rows of ``Vt``), by ARPACK to machine precision (``tol=0``) from a fixed start
    vector, so the same matrix gives the same directions. Requires ``k < min(Z.shape)``."""
    from scipy.sparse.linalg import svds

    v0 = np.random.default_rng(0).standard_normal(min(Z.shape))
    _, S, Vt = svds(Z, k=k, tol=0, v0=v0, solver="arpack")
    order = np.argsort(S)[::-1]
    return S[order], Vt[order]


def _fitted(U: np.ndarray, V: np.ndarray, b: np.ndarray, sigma: float) -> np.ndarray:
    """The fit's probabilities, shape (K, n): :func:`~latentbench.irt._objective.sigmoid` of
    ``(U V^T + b) / sigma`` with the same operations in place (its two K x n temporaries
    were 2 GB more at 5,000 models x 50,000 items)."""
    from latentbench.irt._objective import sigmoid

    t: np.ndarray = np.asarray(U @ V.T)
    if t.dtype != np.float64 or np.asarray(b).dtype != np.float64:  # (not the fits' own)
        return np.asarray(sigmoid((t + b) / sigma), dtype=np.float64)
    t += b
    t /= sigma
    t *= 0.5  # sigmoid(x) = 0.5 * (1 + tanh(0.5 x))
    np.tanh(t, out=t)
    t += 1.0
    t *= 0.5
    return t


def _normalise(
    U: np.ndarray, V: np.ndarray, b: np.ndarray, Y: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """Centre the factors (and scale a rank-1 ability to sd 1), the fitted logits unchanged.

    Over the models with a position of their own: a model whose observed scores in ``Y``
    (N, J; NaN missing) are all 0 or all 1 sits where the fit's penalty stops it, and does
    not set a rank-1 scale (as in ``latentbench fit``, :func:`latentbench.irt._objective.
    reference_models`), while at least three others are left; rank > 1 factors are centred
    over every model, as ``latentbench fit`` centres them."""
    ref = np.ones(U.shape[0], dtype=bool)
    if Y is not None and U.shape[1] == 1:  # (rank > 1: centred over every model, as fit)
        from latentbench.irt._fitted import constant_models
        from latentbench.irt._objective import CONSTANT_MIN_OTHERS

        rest = ~constant_models(Y)
        if int(rest.sum()) >= CONSTANT_MIN_OTHERS:
            ref = rest
    mu = U[ref].mean(axis=0)
    b = b + V @ mu
    U = U - mu
    if U.shape[1] == 1:
        s = float(U[ref, 0].std())
        if s > 0:
            U, V = U / s, V * s
    return U, V, b


def _content_hash(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(str(part).encode())
        h.update(b"\x00")
    return h.hexdigest()


def _file_hash(path: Path) -> str:
    """SHA-256 of a file's content: a file compressed on its own (``cal.csv.gz``) by its
    decompressed bytes, so that every compressed copy of a file (gzip's header holds a time)
    is the plain file's calibration."""
    from latentbench.io._arrival import open_unpacked

    h = hashlib.sha256()
    with open_unpacked(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def from_result(
    result: IRTResult, source: str = "IRTResult", digest: str | None = None
) -> Calibration:
    """Calibration from an IRT fit (its normalised item and model parameters)."""
    if result.matrix is not None:
        scores = np.asarray(result.matrix.model_accuracy(), dtype=np.float64)
    else:
        scores = result.abilities["accuracy"].to_numpy(dtype=np.float64)
    V, b, U = np.asarray(result.V), np.asarray(result.b), np.asarray(result.U)
    feats = None
    if result.matrix is not None:
        Y = np.asarray(result.matrix.scores, dtype=np.float64)
        feats = response_features(Y, _fitted(U, V, b, float(result.sigma)), overwrite_fitted=True)
    kept = None if result.matrix is None else compact_responses(result.matrix.scores)
    extra = () if feats is None else ("features", feats)
    digest = digest or _content_hash(V, b, U, result.sigma, *result.item_ids, *extra)
    return Calibration(
        tuple(result.item_ids),
        V,
        b,
        float(result.sigma),
        tuple(result.model_ids),
        scores,
        U,
        source,
        digest,
        feats,
        fit="fit",
        responses=kept,
    )


def from_matrix(
    matrix: ResponseMatrix,
    *,
    rank: int = 1,
    source: str = "ResponseMatrix",
    digest: str | None = None,
    random_state: int = 0,
) -> Calibration:
    """Calibration fitted on a response matrix (low-rank logistic / 2PL, cBMM engine)."""
    from latentbench.select._proxy import LowRankProxy

    Y = np.asarray(matrix.scores, dtype=np.float64)
    empty = ~np.isfinite(Y).any(axis=1)
    if empty.any():  # nothing to fit, and no score to rank against: left out, said
        names = [str(matrix.model_ids[k]) for k in np.flatnonzero(empty)]
        warnings.warn(
            f"{source}: {len(names)} model(s) without any observed score left out of the "
            f"calibration ({', '.join(repr(m) for m in names[:5])}"
            f"{', ...' if len(names) > 5 else ''})",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
        kept = np.flatnonzero(~empty)
        matrix = matrix.subset(models=[matrix.model_ids[k] for k in kept])
        Y = np.asarray(matrix.scores, dtype=np.float64)
    if Y.shape[0] < 2:
        raise InputError(f"{source}: {Y.shape[0]} model(s); a calibration needs at least 2 models")
    if isinstance(rank, int) and rank > min(Y.shape):  # as `fit` refuses it
        raise InputError(
            f"{source}: rank={rank} for a matrix of {Y.shape[0]} models x {Y.shape[1]} items; "
            f"expected at most {min(Y.shape)} (the smaller side)"
        )
    # fitted with rows and columns in the canonical order (ids sorted as strings), then put
    # back: the same cells from a store, a file or a permutation give the same calibration
    rows, cols = (
        np.argsort(np.asarray(matrix.model_ids, dtype=str), kind="stable"),
        np.argsort(np.asarray(matrix.item_ids, dtype=str), kind="stable"),
    )
    with np.errstate(invalid="ignore"):
        scores = np.nanmean(Y, axis=1)
    digest = digest or _content_hash(
        np.nan_to_num(Y, nan=-1.0), *matrix.model_ids, *matrix.item_ids, rank
    )
    Yc = Y[np.ix_(rows, cols)]
    del Y  # what it gave is taken: one N x J float64 array less during the fit
    proxy = LowRankProxy(rank=rank, random_state=random_state).fit(Yc)
    U, V, b = _normalise(proxy.U_history_, proxy.V_, proxy.b_, Yc)
    fitted = _fitted(U, V, b, float(proxy.sigma))
    feats = response_features(Yc, fitted, overwrite_fitted=True)  # fitted is not used again
    del fitted  # the filled copy, before the compact one (not to raise the peak)
    back_rows, back_cols = np.argsort(rows), np.argsort(cols)
    # kept for a weighted score's ranking (estimate's weights): 1 byte a cell when binary
    kept = compact_responses(Yc)[back_rows][:, back_cols]
    del Yc  # the permuted copy of the matrix
    U, V, b, feats = U[back_rows], V[back_cols], b[back_cols], feats[back_cols]
    return Calibration(
        tuple(matrix.item_ids),
        V,
        b,
        float(proxy.sigma),
        tuple(matrix.model_ids),
        scores,
        U,
        source,
        digest,
        feats,
        dict(getattr(matrix, "labels", None) or {}),
        responses=kept,
    )


def _cache_dir(cache: bool | str | os.PathLike[str]) -> Path | None:
    if cache is False:
        return None
    if cache is not True:
        return Path(cache)
    env = os.environ.get("LATENTBENCH_CACHE_DIR")
    if env:
        return Path(env)
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):
        # no HOME and no passwd entry (a container run under an arbitrary uid): no disk
        # cache, which costs only the refit next time (as a read-only one does)
        return None
    return home / ".cache" / "latentbench" / "calibrations"


def _save_npz(cal: Calibration, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
    arrays: dict[str, Any] = {
        "V": cal.V,
        "b": cal.b,
        "sigma": cal.sigma,
        "U": cal.model_factors,
        "scores": cal.model_scores,
        "items": np.array(cal.item_ids, dtype=str),
        "models": np.array(cal.model_ids, dtype=str),
        "source": cal.source,
        "hash": cal.hash,
    }
    if cal.item_features is not None:
        arrays["features"] = cal.item_features
    if cal.responses is not None:
        arrays["responses"] = cal.responses
    if cal.labels:
        arrays["labels"] = json.dumps(dict(cal.labels), sort_keys=True)
    if cal.fit_warnings:
        arrays["fit_warnings"] = json.dumps([list(w) for w in cal.fit_warnings])
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _load_npz(path: Path) -> Calibration:
    with np.load(path, allow_pickle=False) as z:
        return Calibration(
            tuple(z["items"].tolist()),
            z["V"],
            z["b"],
            float(z["sigma"]),
            tuple(z["models"].tolist()),
            z["scores"],
            z["U"],
            str(z["source"]),
            str(z["hash"]),
            z["features"] if "features" in z.files else None,
            json.loads(str(z["labels"])) if "labels" in z.files else {},
            fit_warnings=tuple((str(c), str(m)) for c, m in json.loads(str(z["fit_warnings"])))
            if "fit_warnings" in z.files
            else (),
            responses=z["responses"] if "responses" in z.files else None,
        )


def load_calibration(
    calibration: Calibration | IRTResult | ResponseMatrix | Store | str | os.PathLike[str],
    *,
    rank: int = 1,
    cache: bool | str | os.PathLike[str] = True,
    benchmark: str | None = None,
    metric: str | None = None,
    filter: str | None = None,
    split: str | None = None,
) -> Calibration:
    """Build (or fetch from the cache) the calibration of :func:`~latentbench.select.estimate`.

    Parameters
    ----------
    calibration : Calibration, IRTResult, ResponseMatrix, Store or path
        A fit directory (``fit.json``, ``abilities.csv``, ``items.csv``), a response-matrix file
        (Parquet / CSV, fitted here at ``rank``), a fit or a matrix in memory; with
        ``benchmark``, a :class:`~latentbench.io.Store` (open, or the path of its ``.duckdb``
        file) whose benchmark is fitted here at ``rank``.
    rank : int, default 1
        Rank of the fit when ``calibration`` is a matrix (1: the 2PL).
    cache : bool or path, default True
        Keep a matrix's fit on disk (``True``: ``LATENTBENCH_CACHE_DIR`` or
        ``~/.cache/latentbench/calibrations``; a path: there; ``False``: memory only).
    benchmark : str, optional
        The store benchmark to calibrate on (required, and only allowed, with a store).
    metric, filter, split : str, optional
        The benchmark's metric, filter and split when the store holds several
        (:meth:`latentbench.io.Store.matrix`; split: ``test`` by default, with a warning).

    Returns
    -------
    Calibration
        For a store benchmark, ``source`` is ``"<store path>:<benchmark>"`` and ``hash`` covers
        the matrix's content (cells, model and item ids) and ``rank``: the cache is reused
        while the benchmark's cells are unchanged, whatever else the store gains.

    Raises
    ------
    InputError
        No such file or directory, a type that is not a calibration, ``metric`` / ``filter`` /
        ``split`` without a store, or ``rank`` not an integer >= 1.
    """
    from latentbench.io import ResponseMatrix

    if not is_integer(rank) or rank < 1:  # np.int64 too
        raise InputError(f"rank={rank!r}; expected an integer >= 1")
    rank = int(rank)
    if isinstance(cache, np.bool_):  # np.True_: the flag, not a folder named "True"
        cache = bool(cache)
    if not isinstance(cache, bool | str | os.PathLike):  # None or 3: named, not a TypeError
        raise InputError(
            f"cache={cache!r}; expected True (the default folder), False (memory only) or a "
            "folder (str or Path)"
        )
    if benchmark is not None:
        return _from_store(
            calibration,
            benchmark,
            choice={"metric": metric, "filter": filter, "split": split},
            rank=rank,
            cache=cache,
        )
    if metric is not None or filter is not None or split is not None:
        raise InputError("calibration: metric / filter / split apply only to a store benchmark")
    in_memory = _from_object(calibration, rank)
    if in_memory is not None:
        return in_memory
    if _is_open_store(calibration):
        raise _store_without_benchmark(calibration.path)
    if not isinstance(calibration, str | os.PathLike):
        raise InputError(
            f"calibration of type {type(calibration).__name__}; expected a fit directory, a "
            "response-matrix file, an IRTResult or a ResponseMatrix"
        )
    path = Path(calibration)
    if path.is_dir():
        return _from_fit_dir(path, rank)
    if not path.exists():
        raise InputError(
            f"calibration {path}: no such file or directory; expected a fit "
            "directory or a response-matrix file"
        )
    if path.suffix == ".duckdb":
        raise _store_without_benchmark(path)
    key = _content_hash(_CACHE_VERSION, _file_hash(path), rank)
    return _fit_cached(key, cache, lambda: ResponseMatrix.read(path), rank, str(path))


def _is_open_store(value: object) -> TypeGuard[Store]:
    """Whether ``value`` is a :class:`~latentbench.io.Store`, without importing the store
    module (DuckDB, ~0.15 s of every file-based ``estimate``) when no store was loaded in this
    process: then nothing can be one."""
    module = sys.modules.get("latentbench.io.store")
    return module is not None and isinstance(value, module.Store)


def _store_without_benchmark(path: object) -> InputError:
    """The error for a store (open, or its file) given as a calibration without a benchmark."""
    return InputError(
        f"calibration {path}: a store; give the benchmark to calibrate on "
        "(load_calibration(STORE, benchmark=NAME))"
    )


def _from_object(calibration: Any, rank: int) -> Calibration | None:
    """The calibration of a :class:`Calibration`, an ``IRTResult`` or a ``ResponseMatrix``
    (fitted at ``rank``, kept in memory); None for anything else."""
    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult

    if isinstance(calibration, Calibration):
        return _fitted_rank(calibration, rank, "the calibration")
    if isinstance(calibration, IRTResult):
        cal = from_result(calibration)
        return _fitted_rank(_MEMORY.setdefault(cal.hash, cal), rank, "the IRTResult")
    if isinstance(calibration, ResponseMatrix):
        Y = np.nan_to_num(np.asarray(calibration.scores, dtype=np.float64), nan=-1.0)
        key = _content_hash(_CACHE_VERSION, Y, *calibration.model_ids, *calibration.item_ids, rank)
        if key not in _MEMORY:
            _MEMORY[key] = _recorded(lambda: from_matrix(calibration, rank=rank, digest=key))
        else:
            _say_again(_MEMORY[key])
        return _labelled(_MEMORY[key], getattr(calibration, "labels", None))
    return None


def _from_fit_dir(path: Path, rank: int) -> Calibration:
    """The calibration of a fit directory (``fit.json``, ``abilities.csv``, ``items.csv``),
    kept in memory under its files' content."""
    from latentbench.irt import IRTResult

    files = [path / name for name in ("fit.json", "abilities.csv", "items.csv")]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        raise InputError(
            f"{path}: lacks {', '.join(missing)}; expected a fit directory "
            "(`latentbench fit --out DIR`) or a response-matrix file"
        )
    key = _content_hash(*(_file_hash(f) for f in files))
    if key not in _MEMORY:
        cal = _recorded(lambda: from_result(IRTResult.load(path), source=str(path), digest=key))
        _MEMORY[key] = dataclasses.replace(cal, labels=_fit_labels(files[0]))
    else:
        _say_again(_MEMORY[key])
    return _fitted_rank(_named(_MEMORY[key], str(path)), rank, f"fit directory {path}")


def _fit_labels(fit_json: Path) -> dict[str, str]:
    """What a fit directory's responses were labelled, from its ``fit.json`` ``input``: the
    labels of a file read by ``ResponseMatrix.read``, or the benchmark, metric, filter and
    split of a store benchmark; empty when it does not say."""
    try:
        entry = json.loads(fit_json.read_text(encoding="utf-8")).get("input") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(entry, dict):
        return {}
    labels = entry.get("labels")
    if isinstance(labels, dict):
        return {str(k): str(v) for k, v in labels.items() if v is not None}
    keys = ("benchmark", "metric", "filter", "split")
    return {k: str(entry[k]) for k in keys if entry.get(k) is not None}


def _fitted_rank(cal: Calibration, rank: int, what: str) -> Calibration:
    """``cal`` (already fitted), unless ``rank`` asks for another rank than its own: ``rank``
    applies to a matrix fitted here (1, the default, is taken as not given)."""
    own = int(np.asarray(cal.V).reshape(len(cal.item_ids), -1).shape[1])
    if rank != 1 and rank != own:
        raise InputError(
            f"rank={rank!r}: {what} is already fitted, at rank {own}; rank applies to a "
            "response matrix fitted here (refit at that rank with `latentbench fit --rank`)"
        )
    return cal


def _labelled(cal: Calibration, labels: Mapping[str, str] | None) -> Calibration:
    """``cal`` with the labels of the matrix it was asked for: a cache entry is keyed on the
    cells and ids, which two benchmarks (or metrics) can share; their labels differ."""
    labels = dict(labels or {})
    return cal if dict(cal.labels) == labels else dataclasses.replace(cal, labels=labels)


def _named(cal: Calibration, source: str) -> Calibration:
    """``cal`` with ``source`` (a cached fit keeps the path it was first read from)."""
    return cal if cal.source == source else dataclasses.replace(cal, source=source)


def _fit_cached(
    key: str,
    cache: bool | str | os.PathLike[str],
    read: Callable[[], ResponseMatrix],
    rank: int,
    source: str,
) -> Calibration:
    """The fit of ``read()`` under ``key``: from memory, the disk cache, or fitted and stored;
    its ``source`` is this call's (the same content under another path is the same fit)."""
    if key in _MEMORY:
        return _named(_say_again(_MEMORY[key]), source)
    folder = _cache_dir(cache)
    stored = folder / f"{key}-{_code_fingerprint()}.npz" if folder is not None else None
    if stored is not None and stored.exists():
        cached: Calibration | None
        try:
            cached = _load_npz(stored)
        except (OSError, ValueError, KeyError):
            cached = None  # a damaged cache entry: refit below
        if cached is not None and cached.hash == key:
            return _named(_say_again(_MEMORY.setdefault(key, cached)), source)
    cal = _recorded(lambda: from_matrix(read(), rank=rank, source=source, digest=key))
    if stored is not None:
        try:
            _save_npz(cal, stored)
            for old in stored.parent.glob(f"{key}*.npz"):  # fits by other code, never read
                if old != stored:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only cache location costs only the refit next time
    return _MEMORY.setdefault(key, cal)


def _recorded(fit: Callable[[], Calibration]) -> Calibration:
    """``fit()``'s calibration carrying the latentbench warnings said while it ran (said
    as they came, and kept in ``fit_warnings`` so that a cached fit says them again)."""
    cal, kept = _said_while(fit)
    return dataclasses.replace(cal, fit_warnings=kept) if kept else cal


def _said_while(call: Callable[[], _T]) -> tuple[_T, tuple[tuple[str, str], ...]]:
    """``call()``'s value and the latentbench warnings (category name, message) said while
    it ran, each once; they are said as they came, even when ``call`` then fails."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = call()
    finally:
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
    kept: list[tuple[str, str]] = []
    for w in caught:
        if w.category in _FIT_WARNINGS.values():  # latentbench's own (all of them)
            if (w.category.__name__, str(w.message)) not in kept:
                kept.append((w.category.__name__, str(w.message)))
    return value, tuple(kept)


def _say_again(cal: Calibration) -> Calibration:
    """Say a cached calibration's ``fit_warnings`` again (the same call says the same, from
    a cache or not); returns ``cal``."""
    for category, message in cal.fit_warnings:
        warnings.warn(
            message, _FIT_WARNINGS.get(category, DataWarning), stacklevel=user_stacklevel()
        )
    return cal


def _from_store(
    store: object,  # checked here: a Store or a path
    benchmark: str,
    *,
    choice: dict[str, str | None],
    rank: int,
    cache: bool | str | os.PathLike[str],
) -> Calibration:
    """Calibration fitted on one benchmark of a store (read through the public Store API);
    ``choice`` is its metric, filter and split (:meth:`~latentbench.io.Store.matrix`)."""
    from latentbench.io import Store

    if isinstance(store, Store):
        matrix, said = _said_while(lambda: store.matrix(benchmark, **choice))
        where = store.path
    elif isinstance(store, str | os.PathLike):
        where = str(store)
        if not Path(where).is_file():
            raise InputError(
                f"store {where}: no such file; expected a latentbench store (.duckdb) "
                f"holding benchmark {benchmark!r}"
            )
        with Store(where, read_only=True) as db:
            matrix, said = _said_while(lambda: db.matrix(benchmark, **choice))
    else:
        raise InputError(
            f"calibration of type {type(store).__name__} with benchmark={benchmark!r}; "
            "expected a Store or the path of a store file"
        )
    Y = np.nan_to_num(np.asarray(matrix.scores, dtype=np.float64), nan=-1.0)
    key = _content_hash(_CACHE_VERSION, "store", Y, *matrix.model_ids, *matrix.item_ids, rank)
    chosen = ", ".join(f"{name}={value}" for name, value in choice.items() if value is not None)
    source = f"{where}:{benchmark}" + (f" ({chosen})" if chosen else "")
    cal = _labelled(_fit_cached(key, cache, lambda: matrix, rank, source), matrix.labels)
    # what reading the benchmark said (e.g. the split chosen by default) is said on every
    # call by the read itself: recorded with the result, not kept in the cached fit
    if not said:
        return cal
    fit_said = tuple(w for w in said if w not in cal.fit_warnings)
    return dataclasses.replace(cal, fit_warnings=fit_said + cal.fit_warnings)
