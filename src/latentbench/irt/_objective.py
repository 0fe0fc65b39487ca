"""The IRT objective in one place: penalty, logits / probabilities and the reporting scale.

Every fit in :mod:`latentbench.irt` (the cBMM engine, the reference baselines, the per-model
Newton solver), its standard errors and bootstrap, the selection proxy and the simulators take
these definitions from here, so changing the regulariser or adding a prior touches this module
and the places that choose its hyperparameters, nothing else.

Model (rank r; r = 1 is the 2PL)::

    X = U V^T + 1 b^T,      P(y_ij = 1) = sigmoid(X_ij / sigma),      V >= 0

Objective: the Bernoulli negative log-likelihood with soft labels over the observed cells (its
elementwise passes live in :mod:`latentbench.irt._kernels`) plus a :class:`GaussianPenalty`,

    1/2 [ lam_U |U - m_U|^2 + lam_V |V - m_V|^2 + lam_b |b - m_b|^2 ],

which is a ridge when every mean is 0 and every precision equals ``l2`` (:meth:`GaussianPenalty.
ridge`), and the negative log density (up to a constant) of independent Gaussian priors
``U ~ N(m_U, 1/lam_U)``, ``V ~ N(m_V, 1/lam_V)`` (truncated to V >= 0 by the constraint) and
``b ~ N(m_b, 1/lam_b)`` otherwise. The penalty is a quadratic with a diagonal Hessian, so the
majorizer's block updates stay in closed form: a block solve adds :meth:`~GaussianPenalty.
model_curvature` / :meth:`~GaussianPenalty.item_curvature` to the block's Gram matrix and
:meth:`~GaussianPenalty.model_target` / :meth:`~GaussianPenalty.item_target` to its right-hand
side (the same pattern as scikit-learn's ``LinearModelLoss.l2_penalty``).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from latentbench._checks import bounded_scores, first_outside
from latentbench.exceptions import InputError

__all__ = [
    "DETACHED",
    "DETACHED_MIN_MODELS",
    "SIGMA_RANGE",
    "GaussianPenalty",
    "Normalisation",
    "as_scores",
    "general_direction",
    "logit",
    "logits",
    "normalise",
    "probabilities",
    "reference_models",
    "sigmoid",
    "softplus",
]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class GaussianPenalty:
    """Independent Gaussian penalty on the three parameter blocks (raw, unnormalised scale).

    Parameters
    ----------
    precision_U, precision_V, precision_b : float
        Precisions (inverse prior variances) of the entries of U (N, r), V (J, r) and b (J,).
        0 switches the penalty of that block off.
    mean_U, mean_V, mean_b : float
        Prior means of every entry of the block (default 0).
    """

    precision_U: float
    precision_V: float
    precision_b: float
    mean_U: float = 0.0
    mean_V: float = 0.0
    mean_b: float = 0.0

    @classmethod
    def ridge(cls, l2: float) -> GaussianPenalty:
        """The plain ridge ``l2 / 2 (|U|^2 + |V|^2 + |b|^2)``.

        Parameters
        ----------
        l2 : float
            The precision of every part (means 0).

        Returns
        -------
        GaussianPenalty
        """
        return cls(float(l2), float(l2), float(l2))

    def scaled(self, factor: float) -> GaussianPenalty:
        """The penalty with every precision times ``factor`` (means kept).

        With K trials per cell the objective is ``K NLL + penalty``, minimised by the same
        parameters as ``NLL + penalty.scaled(1 / K)``.

        Parameters
        ----------
        factor : float
            Multiplies ``precision_U``, ``precision_V`` and ``precision_b``.

        Returns
        -------
        GaussianPenalty
            ``self`` when ``factor`` is 1, else a scaled copy.
        """
        if factor == 1.0:
            return self
        return dataclasses.replace(
            self,
            precision_U=self.precision_U * factor,
            precision_V=self.precision_V * factor,
            precision_b=self.precision_b * factor,
        )

    @property
    def is_zero(self) -> bool:
        """True when the penalty vanishes identically (plain joint maximum likelihood)."""
        return self.precision_U == 0 and self.precision_V == 0 and self.precision_b == 0

    @property
    def _is_ridge(self) -> bool:
        return (
            self.precision_U == self.precision_V == self.precision_b
            and self.mean_U == self.mean_V == self.mean_b == 0.0
        )

    def value(self, U: Array, V: Array, b: Array) -> float:
        """Penalty value at (U, V, b).

        Parameters
        ----------
        U : ndarray of shape (n_models, rank)
            Model factors.
        V : ndarray of shape (n_items, rank)
            Item loadings.
        b : ndarray of shape (n_items,)
            Item intercepts.

        Returns
        -------
        float
            ``1/2 (lam_U |U - m_U|^2 + lam_V |V - m_V|^2 + lam_b |b - m_b|^2)``; 0 for the zero
            penalty.
        """
        if self.is_zero:
            return 0.0
        if self._is_ridge:
            if type(U) is np.ndarray and type(V) is np.ndarray:
                # np.sum of an ndarray is np.add.reduce over every axis (the same call, the
                # same bits) behind a Python wrapper that was a third of this method's time:
                # every sweep of every fit evaluates the penalty (the sparse path three times)
                uu = float(np.add.reduce(U * U, axis=None))
                vv = float(np.add.reduce(V * V, axis=None))
            else:
                uu, vv = float(np.sum(U * U)), float(np.sum(V * V))
            return 0.5 * self.precision_U * (uu + vv + float(b @ b))
        return 0.5 * (
            self.precision_U * _sq(U, self.mean_U)
            + self.precision_V * _sq(V, self.mean_V)
            + self.precision_b * _sq(b, self.mean_b)
        )

    def gradient(self, U: Array, V: Array, b: Array) -> tuple[Array, Array, Array]:
        """Gradient of :meth:`value` with respect to (U, V, b), same shapes.

        Parameters
        ----------
        U : ndarray of shape (n_models, rank)
            Model factors.
        V : ndarray of shape (n_items, rank)
            Item loadings.
        b : ndarray of shape (n_items,)
            Item intercepts.

        Returns
        -------
        tuple of 3 ndarray
            The gradients with respect to U, V and b: shapes (n_models, rank),
            (n_items, rank) and (n_items,).
        """
        return (
            self.precision_U * (U - self.mean_U),
            self.precision_V * (V - self.mean_V),
            self.precision_b * (b - self.mean_b),
        )

    def model_rows(self, U: Array) -> Array:
        """Penalty of every row u_i of U, the per-model terms.

        Parameters
        ----------
        U : ndarray of shape (n_models, rank)
            Model factors.

        Returns
        -------
        ndarray of shape (n_models,)
            ``1/2 lam_U |u_i - m_U|^2`` per row.
        """
        D = U - self.mean_U if self.mean_U else U
        return np.asarray(0.5 * self.precision_U * (D * D).sum(1), dtype=float)

    def model_curvature(self, r: int) -> Array:
        """Hessian of the penalty of one row u_i, shape (r, r).

        Parameters
        ----------
        r : int
            The rank.

        Returns
        -------
        ndarray of shape (r, r)
            ``lam_U`` times the identity.
        """
        return np.asarray(self.precision_U * np.eye(r), dtype=float)

    def model_target(self, r: int) -> Array:
        """Linear term of the penalty of one row (``lam_U m_U``), shape (r,).

        The minimiser of ``1/2 u^T (G + C) u - (h + t)^T u`` is the penalised block update, with
        G, h the data part, C the curvature and t this target.

        Parameters
        ----------
        r : int
            The rank.

        Returns
        -------
        ndarray of shape (r,)
        """
        return np.full(r, self.precision_U * self.mean_U)

    def item_curvature(self, r: int) -> Array:
        """Hessian of the penalty of one item's ``(v_j, b_j)``, shape (r + 1, r + 1).

        Parameters
        ----------
        r : int
            The rank.

        Returns
        -------
        ndarray of shape (r + 1, r + 1)
            Diagonal: ``lam_V`` r times, then ``lam_b``.
        """
        return np.diag(np.r_[np.full(r, self.precision_V), self.precision_b]).astype(float)

    def item_target(self, r: int) -> Array:
        """Linear term of the penalty of one item's ``(v_j, b_j)``, shape (r + 1,).

        Parameters
        ----------
        r : int
            The rank.

        Returns
        -------
        ndarray of shape (r + 1,)
            ``lam_V m_V`` r times, then ``lam_b m_b``.
        """
        target = np.full(r + 1, self.precision_V * self.mean_V)
        target[r] = self.precision_b * self.mean_b
        return target

    def on_reported_scale(self, scale: Normalisation | None) -> GaussianPenalty:
        """This penalty's U part for factors on the reported scale ``U = (U_raw - shift) / scale``.

        With ``U_raw = scale U + shift`` the prior ``U_raw ~ N(m, 1 / lam)`` reads
        ``U ~ N((m - shift) / scale, 1 / (lam scale^2))``. Used to score new models against
        reported item parameters. The shift is taken as its mean over factors (exact for rank
        1; for rank > 1 the centring shift of a prior with mean 0 is small). The item parts are
        unchanged.

        Parameters
        ----------
        scale : Normalisation or None
            The normalisation from raw to reported factors; None returns ``self``.

        Returns
        -------
        GaussianPenalty
        """
        if scale is None:
            return self
        shift = float(np.mean(scale.shift)) if np.size(scale.shift) else 0.0
        return GaussianPenalty(
            self.precision_U * scale.scale**2,
            self.precision_V,
            self.precision_b,
            mean_U=(self.mean_U - shift) / scale.scale,
            mean_V=self.mean_V,
            mean_b=self.mean_b,
        )

    def to_dict(self) -> dict[str, float]:
        """JSON-serialisable record (see :meth:`from_dict`).

        Returns
        -------
        dict of str to float
            The precisions and means by field name.
        """
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, float]) -> GaussianPenalty:
        """Inverse of :meth:`to_dict`.

        Parameters
        ----------
        record : dict of str to float
            The fields of a penalty, as :meth:`to_dict` writes them.

        Returns
        -------
        GaussianPenalty
        """
        return cls(**{k: float(v) for k, v in record.items()})


def _sq(x: Array, mean: float) -> float:
    d = x - mean if mean else x
    return float(np.sum(d * d))


# ----------------------------------------------------------------------------- link
def sigmoid(x: npt.NDArray[np.floating]) -> npt.NDArray[np.floating]:
    """The logistic function ``1 / (1 + exp(-x))`` as ``(1 + tanh(x / 2)) / 2`` (no overflow)."""
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)))


def softplus(x: npt.NDArray[np.floating]) -> npt.NDArray[np.floating]:
    """``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))``: ``np.logaddexp(0, x)``'s
    formula (within one rounding) at a third of its cost (one vectorised exp and log1p)."""
    return np.asarray(np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x))))


def logits(
    U: npt.NDArray[np.floating],
    V: npt.NDArray[np.floating],
    b: npt.NDArray[np.floating],
    sigma: float = 1.0,
) -> Array:
    """``(U V^T + b) / sigma``, shape (N, J), float64."""
    t = np.asarray(U, float) @ np.asarray(V, float).T + np.asarray(b, float)
    return np.asarray(t / sigma, dtype=float)


def probabilities(
    U: npt.NDArray[np.floating],
    V: npt.NDArray[np.floating],
    b: npt.NDArray[np.floating],
    sigma: float = 1.0,
    dtype: type[np.floating] = np.float64,
) -> npt.NDArray[np.floating]:
    """``sigmoid((U V^T + b) / sigma)``, shape (N, J), computed and returned in ``dtype``.

    ``float32`` halves the memory and time of large prediction matrices (selection pools);
    the arithmetic is done in place.
    """
    t = np.asarray(U, dtype=dtype) @ np.asarray(V, dtype=dtype).T
    t += np.asarray(b, dtype=dtype)
    if sigma != 1.0:
        t /= dtype(sigma)
    out: npt.NDArray[np.floating] = np.tanh(dtype(0.5) * t, out=t)
    out *= dtype(0.5)
    out += dtype(0.5)
    return out


# ----------------------------------------------------------------------------- scale
@dataclass(frozen=True)
class Normalisation:
    """Map from raw to reported factors: ``U_raw = scale * U + shift``.

    Attributes
    ----------
    shift : ndarray of shape (r,)
        Mean of the raw factors (mu) over the reference models.
    scale : float
        sd of the raw abilities for rank 1 over the reference models (1 for rank > 1, which
        is only centred).
    reference : ndarray of bool, shape (N,), or None
        The models that set the scale (:func:`reference_models`); None: every model.
    """

    shift: Array
    scale: float
    reference: npt.NDArray[np.bool_] | None = None

    def mask(self, n_models: int) -> npt.NDArray[np.bool_]:
        """The reference models as a boolean array of shape (n_models,).

        Parameters
        ----------
        n_models : int
            The number of models (used when every model is a reference).

        Returns
        -------
        ndarray of bool of shape (n_models,)
        """
        if self.reference is None:
            return np.ones(n_models, dtype=bool)
        return np.asarray(self.reference, dtype=bool)


SIGMA_RANGE = (1e-3, 1e3)
"""Allowed temperatures ``sigma`` of the logistic link (outside it the fit under- or
overflows): checked by ``TwoPL`` and when a fit directory is read."""


DETACHED = 5.0
"""A model whose ability is more than this many sds (of the other models) from their mean is
detached: it does not set the reporting scale (:func:`reference_models`)."""

DETACHED_BAND = 0.05
"""Only a model whose mean score is within this of 0 or 1 may be detached: its position is
read off the tails of the item curves (at accuracy 0.05 a cell carries under a fifth of the
Bernoulli information of one at 0.5). A far model with mid-range scores is a leader or a
laggard of a skewed field (AlpacaEval 2's best models at accuracy 0.5-0.75, 4-7 sds above a
field at 0.02-0.15 in a 29-model half), well placed by its own cells, and sets the scale."""

DETACHED_MIN_MODELS = 10
"""Below this many models every model sets the scale (a spread from fewer is too noisy to
call one of them detached)."""

CONSTANT_MIN_OTHERS = 3
"""A model at the floor or the ceiling (every observed score 0, or every one 1) sets the
reporting scale only when fewer than this many other models (with a spread) would be left."""


def reference_models(
    theta: Array, limit: float = DETACHED, accuracy: Array | None = None
) -> npt.NDArray[np.bool_]:
    """The models that set the reporting scale: all but the constant and the detached ones.

    A model at the floor or the ceiling (``accuracy`` exactly 0 or 1: every observed score 0,
    or every one 1) has no position of its own: its likelihood rises without bound away from
    the field, and its estimate is where the prior stops it. It never sets the scale (at any
    number of models, while at least :data:`CONSTANT_MIN_OTHERS` others with a spread are
    left); with one broken model among 12-20, its prior-driven position had compressed the
    others' abilities to an sd of 0.65-0.8 (``benchmarks/bench_constant_models.py``). The rule
    below then runs on the other models.

    A model is detached when its ability lies more than ``limit`` sds from the mean of the
    others that set the scale and (when ``accuracy`` is given) its mean score is within
    :data:`DETACHED_BAND` of 0 or 1 (a broken model near 0 % or 100 % on every item, far from
    the field): started from the models within 3 interquartile spreads (``IQR / 1.349``, which one
    or two far models do not move) of the median, then each model against the mean and sd
    of the other models kept (itself left out), repeated until the set is stable. At most a
    quarter of the models may be detached (more is a spread-out field, not a few broken
    models); with fewer than :data:`DETACHED_MIN_MODELS` models, or no spread, every model
    sets the scale. On N(0, 1) abilities some model is detached in 2.9 % of draws at 10
    models, 0.27 % at 22, 0.15 % at 30, 0.07 % at 70 (it then only gets a wider interval).

    Parameters
    ----------
    theta : ndarray of shape (N,)
        Abilities (any affine scale).
    limit : float, default :data:`DETACHED`
    accuracy : ndarray of shape (N,), optional
        The models' mean observed scores (NaN: no cell); only models within
        :data:`DETACHED_BAND` of 0 or 1 may be detached. Default: no such condition.

    Returns
    -------
    ndarray of bool, shape (N,)
    """
    theta = np.asarray(theta, dtype=float)
    n = theta.size
    every = np.ones(n, dtype=bool)
    if not np.all(np.isfinite(theta)):
        return every
    if accuracy is not None:
        acc = np.asarray(accuracy, dtype=float)
        rest = ~((acc == 0.0) | (acc == 1.0))  # NaN (no cell): not constant
        if not rest.all() and int(rest.sum()) >= CONSTANT_MIN_OTHERS and np.ptp(theta[rest]) > 0:
            keep = np.zeros(n, dtype=bool)
            keep[rest] = reference_models(theta[rest], limit, acc[rest])
            return keep
    if n < DETACHED_MIN_MODELS:
        return every
    if accuracy is None:
        may = every
    else:
        acc = np.asarray(accuracy, dtype=float)
        may = (acc <= DETACHED_BAND) | (acc >= 1.0 - DETACHED_BAND)  # NaN: False
        if not may.any():
            return every
    q1, q3 = np.percentile(theta, [25.0, 75.0])
    centre, spread = float(np.median(theta)), float(q3 - q1) / 1.349
    if not spread > 1e-12 * max(1.0, abs(centre)):
        return every
    # a core that two far models cannot mask each other in (3 spreads of the median), then
    # every model within ``limit`` sds of the others kept
    keep = np.abs(theta - centre) <= 3.0 * spread
    for _ in range(20):
        if keep.sum() < 3:
            return every
        # each model against the others that set the scale (leave itself out: one far model
        # among 11 inflates the sd of a set that includes it enough to hide itself)
        k = keep.astype(float)
        count = k.sum() - k
        total = (theta * k).sum() - theta * k
        square = (theta * theta * k).sum() - theta * theta * k
        mean = total / count
        sd = np.sqrt(np.maximum(square / count - mean * mean, 0.0))
        if not np.all(sd > 0):
            return every
        new = (np.abs(theta - mean) <= limit * sd) | ~may
        if np.array_equal(new, keep):
            break
        keep = new
    if (~keep).sum() > n // 4 or keep.sum() < 2:
        return every
    return keep


def _models_with_positions(theta: Array, accuracy: Array | None) -> npt.NDArray[np.bool_]:
    """:func:`reference_models` among the models with an observed cell (``accuracy`` not
    NaN): a model without any has no position (its estimate is the prior's mean), so it never
    sets the scale, and listing an unevaluated model (a wide file's empty row, which a long
    file leaves out) moves no other model's ability."""
    if accuracy is None:
        return reference_models(theta)
    acc = np.asarray(accuracy, dtype=float)
    with_cells = ~np.isnan(acc)
    if with_cells.all() or int(with_cells.sum()) < 2:
        return reference_models(theta, accuracy=acc)
    keep = np.zeros(theta.size, dtype=bool)
    keep[with_cells] = reference_models(theta[with_cells], accuracy=acc[with_cells])
    return keep


def normalise(
    U: Array,
    V: Array,
    b: Array,
    reference: npt.NDArray[np.bool_] | None = None,
    accuracy: Array | None = None,
) -> tuple[Array, Array, Array, Normalisation]:
    """Identifiability normalisation for reporting, any rank.

    Rank 1: ``theta <- (theta - mu) / s``, ``a <- s a``, ``b <- b + mu a``, with ``mu`` and
    ``s`` the mean and sd over the reference models (:func:`reference_models`: every model but
    the detached ones), so the reference models have mean 0 and sd 1.
    Rank > 1: the factors are centred, ``U <- U - mu``, ``b <- b + V mu`` (whitening could break
    V >= 0, so it is not done). X = U V^T + 1 b^T is unchanged and V >= 0 is kept.

    Parameters
    ----------
    U : ndarray of shape (N, r)
    V : ndarray of shape (J, r)
    b : ndarray of shape (J,)
    reference : ndarray of bool, shape (N,), optional
        Rank 1: the models that set the scale (default: :func:`reference_models` of ``U``
        and ``accuracy`` among the models with an observed cell, ``accuracy`` not NaN).
    accuracy : ndarray of shape (N,), optional
        The models' mean observed scores, for the default ``reference``.

    Returns
    -------
    U, V, b : the normalised factors
    Normalisation
        ``U_raw = scale * U + shift``.
    """
    r = U.shape[1]
    if r == 1:
        theta, a = U[:, 0], V[:, 0]
        ref = (
            _models_with_positions(theta, accuracy)
            if reference is None
            else np.asarray(reference, bool)
        )
        stored = None if ref.all() else ref
        mu = float(theta[ref].mean())
        s = float(theta[ref].std())
        if s <= 1e-5 * max(1.0, abs(mu)):
            # no spread beyond the float32 kernels' rounding (e.g. every model scored the
            # same): all abilities equal, 0, never rounding noise blown up to sd 1 (which
            # ranked three identical models 1, 1, 3)
            return (
                np.zeros((theta.size, 1)),
                a.copy()[:, None],
                b + mu * a,
                Normalisation(np.array([mu]), 1.0, stored),
            )
        return (
            ((theta - mu) / s)[:, None],
            (a * s)[:, None],
            b + mu * a,
            Normalisation(np.array([mu]), s, stored),
        )
    mean = U.mean(axis=0)
    return U - mean, V.copy(), b + V @ mean, Normalisation(mean, 1.0)


def general_direction(V: Array) -> np.ndarray:
    """The unit direction of the items' mean loading, shape (r,): ``mean_j V_j / |...|``.

    A model's ability for any rank is its factor vector's position along it, ``theta = U w``
    (rank 1: ``w = [1]``, ``theta = U[:, 0]``): the direction in which every item's logit
    rises on average (``V >= 0``), so ``theta`` orders models by their mean predicted logit up
    to the intercepts, whatever the fit's rotation. A single factor of a rank-r fit is not an
    ability (it is identified only up to a rotation, and may even order models against their
    scores); an item's discrimination along it is ``V w``. All loadings zero: the first axis.
    """
    V = np.asarray(V, dtype=np.float64)
    r = V.shape[1] if V.ndim == 2 else 1
    mean = V.reshape(-1, r).mean(axis=0) if V.size else np.zeros(r)
    norm = float(np.linalg.norm(mean))
    if r == 1 or not np.isfinite(norm) or norm <= 0:
        out = np.zeros(r)
        out[0] = 1.0
        return out
    return np.asarray(mean / norm)


def as_scores(scores: np.ndarray) -> np.ndarray:
    """Scores as a float32 (n_models, n_items) array, checked: in [0, 1], NaN for missing.

    A float rounding past 0 or 1 (within :data:`~latentbench._checks.SCORE_ROUNDING`,
    checked before float32 rounds it) is that bound, as every reader of scores reads it.
    """
    given = np.asarray(scores)
    Y = np.ascontiguousarray(given, dtype=np.float32)
    if Y.ndim != 2:
        raise InputError(f"scores have shape {Y.shape}; expected a 2-D (n_models, n_items) array")
    precise = given if given.dtype == np.float64 else Y  # 1 + 1e-8 is no score, as float32's 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN input: handled below
        low, high = np.nanmin(precise), np.nanmax(precise)
    if np.isnan(low):
        raise InputError("every score is missing; expected observed scores")
    if low < 0 or high > 1 or not np.isfinite(high):
        bounded, outside = bounded_scores(precise)
        if outside.any():
            raise InputError(
                f"scores must lie in [0, 1]; found [{float(low)!r}, {float(high)!r}]: "
                f"{first_outside(precise, outside)}"
            )
        Y = np.ascontiguousarray(bounded, dtype=np.float32)
    return Y


def logit(p: np.ndarray) -> np.ndarray:
    """The inverse of :func:`sigmoid` (float64)."""
    return np.asarray(np.log(p) - np.log1p(-p), dtype=float)
