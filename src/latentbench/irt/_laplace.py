"""Joint Laplace approximation of a rank-1 fit: ability uncertainty with the items integrated out.

The block-diagonal information (one block per model, items held fixed) ignores that the item
parameters are estimated too. With few models (tens) and many items (thousands) each item's
``(a_j, b_j)`` rests on a few dozen cells, so the item parameters are the noisy part and two
things go wrong for the abilities:

- **variance**: the abilities inherit the item parameters' estimation error. The Schur
  complement of the joint Hessian over the item blocks,
  ``S = H_tt - sum_j C_j H_j^{-1} C_j^T`` (``H_j`` the item's 2 x 2 block, ``C_j`` its
  cross-derivatives with the abilities), is the curvature of the objective profiled over the
  items; ``S^{-1}`` is the abilities' joint covariance with the item uncertainty included.
  Since the item blocks are 2 x 2 the sum is three ``N x J x N`` products.
- **bias**: the joint mode is biased by O(1 / N) per ability when every item has O(N) cells
  (the Neyman-Scott incidental-parameter problem: it does not shrink with more items). The
  Laplace approximation of the items' integral adds ``1/2 sum_j log det H_j(theta)`` to the
  profiled objective (the Cox-Reid adjustment); one Newton step on it from the mode,
  ``theta - S^{-1} g`` with ``g`` the adjustment's gradient (total derivative through the
  items' mode), removes the leading term of the bias.

Everything is in the reported coordinates (abilities mean 0, sd 1); the prior's curvature is
mapped there as in :func:`latentbench.irt.inference.standard_errors`. The reported abilities
are standardised, so their covariance is ``P S^{-1} P`` with the Jacobian of the
standardisation ``P = I - (1 1^T + theta theta^T) / N``. An item at the bound (``a_j = 0``)
has only ``b_j`` free. Cost: O(N^2 J) time, O(N J) memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from latentbench.irt._objective import sigmoid

__all__ = ["JointLaplace", "joint_laplace", "normalised_variance", "scoring_variance"]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class JointLaplace:
    """The joint Hessian of a rank-1 fit, reduced over the item blocks.

    Attributes
    ----------
    theta : ndarray of shape (N,)
        Reported abilities (mean 0, sd 1).
    schur : ndarray of shape (N, N)
        Curvature of the objective profiled over the items (Schur complement).
    item_inverse : ndarray of shape (J, 2, 2)
        Inverses of the item blocks ``H_j`` over ``(a_j, b_j)`` (zero row / column for a
        at the bound).
    cross_a, cross_b : ndarray of shape (N, J)
        Cross-derivatives ``d^2 F / d theta_i d a_j`` and ``d^2 F / d theta_i d b_j``.
    adjustment_gradient : ndarray of shape (N,)
        Gradient of ``1/2 sum_j log det H_j`` along the items' mode.
    reference : ndarray of bool, shape (N,), or None
        The models that set the reporting scale (None: every model).
    """

    theta: Array
    schur: Array
    item_inverse: Array
    cross_a: Array
    cross_b: Array
    adjustment_gradient: Array
    reference: npt.NDArray[np.bool_] | None = None

    def covariance(self, standardised: bool = True) -> Array:
        """Covariance of the abilities, shape (N, N): ``P S^{-1} P`` (or ``S^{-1}``).

        Parameters
        ----------
        standardised : bool, default True
            Project onto the standardised abilities (``P S^{-1} P``); False gives the
            inverse Schur complement ``S^{-1}`` itself.

        Returns
        -------
        ndarray of shape (n_models, n_models)
        """
        cov = np.linalg.inv(self.schur)
        cov = 0.5 * (cov + cov.T)
        if not standardised:
            return np.asarray(cov)
        return _project(cov, self.theta, self.reference)

    def adjusted_theta(self) -> Array:
        """Abilities after one Newton step on the adjusted profile, re-standardised, (N,).

        Returns
        -------
        ndarray of shape (n_models,)
            Mean 0 and sd 1 over the reference models.
        """
        step = np.linalg.solve(self.schur, self.adjustment_gradient)
        theta = self.theta - step
        ref = np.ones(theta.size, bool) if self.reference is None else self.reference
        sd = float(theta[ref].std())
        return np.asarray((theta - theta[ref].mean()) / (sd if sd > 0 else 1.0))

    def quadratic_forms(self, g_theta: Array, g_items: Array) -> Array:
        """``g_m^T H^{-1} g_m`` for linear functionals of all parameters, one per row m.

        Parameters
        ----------
        g_theta : ndarray of shape (M, N)
            Coefficients on the abilities.
        g_items : ndarray of shape (M, J, 2)
            Coefficients on every item's ``(a_j, b_j)``.

        Returns
        -------
        ndarray of shape (M,)
            Variances of the functionals under the joint Laplace covariance ``H^{-1}``.
        """
        K = self.item_inverse
        u = np.einsum("jkl,mjl->mjk", K, g_items)  # H_j^{-1} g_j
        reduced = g_theta - u[:, :, 0] @ self.cross_a.T - u[:, :, 1] @ self.cross_b.T
        z_theta = np.linalg.solve(self.schur, reduced.T).T  # (M, N)
        items_part = np.einsum("mjk,mjk->m", g_items, u)
        return np.asarray(np.einsum("mn,mn->m", reduced, z_theta) + items_part)


def _project(cov: Array, theta: Array, reference: npt.NDArray[np.bool_] | None = None) -> Array:
    """``P C P^T``, the Jacobian of the standardisation over the reference models R,
    ``P = I - (1 r^T + theta (theta r)^T) / n_R`` (``r`` R's indicator, theta standardised
    over R; every model when ``reference`` is None), in O(N^2)."""
    n = theta.size
    r = np.ones(n) if reference is None else np.asarray(reference, float)
    basis = np.stack([np.ones(n), theta], axis=1)  # (N, 2)
    weights = np.stack([r, theta * r], axis=1) / r.sum()  # (N, 2): P = I - basis weights^T
    wc = weights.T @ cov  # (2, N)
    out = cov - basis @ wc - wc.T @ basis.T + basis @ (wc @ weights) @ basis.T
    return np.asarray(0.5 * (out + out.T))


def joint_laplace(
    scores: npt.NDArray[np.floating],
    theta: Array,
    a: Array,
    b: Array,
    sigma: float,
    theta_curvature: float,
    item_curvature: Array,
    reference: npt.NDArray[np.bool_] | None = None,
) -> JointLaplace:
    """Reduce the joint Hessian of a rank-1 fit over its item blocks.

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        The scores the fit was made on (NaN = missing; soft labels allowed).
    theta, a, b : ndarray of shape (N,), (J,), (J,)
        The fit's reported parameters.
    sigma : float
    theta_curvature : float
        Penalty curvature of one ability (reported coordinates).
    item_curvature : ndarray of shape (2, 2)
        Penalty curvature of one item's ``(a_j, b_j)`` (reported coordinates).
    reference : ndarray of bool, shape (N,), optional
        The models that set the reporting scale (default: every model).

    Returns
    -------
    JointLaplace
    """
    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0).astype(np.float64)
    p = sigmoid((np.outer(theta, a) + b) / sigma)
    mask = observed.astype(np.float64)
    w = p * (1.0 - p) * mask / sigma**2  # d^2 loss / d(a theta + b)^2
    w3 = p * (1.0 - p) * (1.0 - 2.0 * p) * mask / sigma**3  # third derivative
    resid = (p - y) * mask / sigma
    free = a > 0
    # item blocks over (a_j, b_j), reported coordinates
    h_aa = w.T @ (theta * theta) + item_curvature[0, 0]
    h_ab = w.T @ theta + item_curvature[0, 1]
    h_bb = w.sum(axis=0) + item_curvature[1, 1]
    det = h_aa * h_bb - h_ab * h_ab
    K = np.zeros((a.size, 2, 2))
    K[:, 0, 0] = np.where(free, h_bb / np.where(free, det, 1.0), 0.0)
    K[:, 0, 1] = K[:, 1, 0] = np.where(free, -h_ab / np.where(free, det, 1.0), 0.0)
    K[:, 1, 1] = np.where(free, h_aa / np.where(free, det, 1.0), 1.0 / h_bb)
    # cross-derivatives: d^2 F / d theta_i d a_j = w a_j theta_i + (p - y) / sigma
    cross_a = (w * a * theta[:, None] + resid) * free
    cross_b = w * a
    # Schur complement over the items
    diag = w @ (a * a) + theta_curvature
    schur = -(
        (cross_a * K[:, 0, 0]) @ cross_a.T
        + (cross_a * K[:, 0, 1]) @ cross_b.T
        + (cross_b * K[:, 1, 0]) @ cross_a.T
        + (cross_b * K[:, 1, 1]) @ cross_b.T
    )
    schur[np.diag_indices_from(schur)] += diag
    schur = 0.5 * (schur + schur.T)
    # gradient of 1/2 sum_j log det H_j(theta, eta_j(theta))
    k11, k12, k22 = K[:, 0, 0], K[:, 0, 1], K[:, 1, 1]
    th = theta[:, None]
    q = k11 * th * th + 2.0 * k12 * th + k22  # x_i^T H_j^{-1} x_i, (N, J)
    partial = (w3 * a * q + 2.0 * w * (k11 * th + k12)).sum(axis=1)
    g_a = (w3 * q * th).sum(axis=0) * free
    g_b = (w3 * q).sum(axis=0)
    kg_a = k11 * g_a + k12 * g_b
    kg_b = k12 * g_a + k22 * g_b
    through_items = cross_a @ kg_a + cross_b @ kg_b
    gradient = 0.5 * (partial - through_items)
    return JointLaplace(
        theta=np.asarray(theta, dtype=float),
        schur=schur,
        item_inverse=K,
        cross_a=cross_a,
        cross_b=cross_b,
        adjustment_gradient=gradient,
        reference=None if reference is None else np.asarray(reference, bool),
    )


def scoring_variance(
    laplace: JointLaplace,
    a: Array,
    scores_new: npt.NDArray[np.floating],
    cols: npt.NDArray[np.intp],
    theta_new: Array,
    b: Array,
    sigma: float,
    curvature_new: Array,
) -> Array:
    """Variance that the calibration adds to abilities scored with its items held fixed.

    A new model's score ``theta_m`` solves its own penalised likelihood equation with the
    calibrated items; by the implicit function theorem ``d theta_m / d eta_j = -c_mj / H_m``
    (``c_mj`` the cross-derivative with item j's ``(a_j, b_j)``, ``H_m`` the score's curvature).
    The calibrated items are themselves reported after standardising the calibration models'
    abilities, so a perturbation of the calibration moves item j by
    ``(delta a_j + a_j delta s, delta b_j + a_j delta mu)`` with ``delta mu``, ``delta s`` the
    shift and scale the standardisation removes. The added variance is that linear functional's
    variance under the joint Laplace covariance of the calibration (abilities and items,
    including their correlation through the shared abilities).

    Parameters
    ----------
    laplace : JointLaplace
        Of the calibration fit.
    a, b : ndarray of shape (J,)
        Calibrated (reported) discriminations and intercepts.
    scores_new : ndarray of shape (M, K)
        The new models' scores on the calibrated items ``cols`` (NaN = missing).
    cols : ndarray of int, shape (K,)
        Positions of those items in the calibration.
    theta_new : ndarray of shape (M,)
        The scores.
    sigma : float
    curvature_new : ndarray of shape (M,)
        ``H_m``: curvature of each new model's objective at its score (penalty included).

    Returns
    -------
    ndarray of shape (M,)
    """
    observed = ~np.isnan(scores_new)
    y = np.where(observed, scores_new, 0.0).astype(np.float64)
    a_c, b_c = a[cols], b[cols]
    p = sigmoid((np.outer(theta_new, a_c) + b_c) / sigma)
    w = p * (1.0 - p) * observed / sigma**2
    resid = (p - y) * observed / sigma
    d_a = -((w * a_c * theta_new[:, None] + resid) * (a_c > 0)) / curvature_new[:, None]
    d_b = -(w * a_c) / curvature_new[:, None]
    M, J, N = theta_new.size, a.size, laplace.theta.size
    g_items = np.zeros((M, J, 2))
    g_items[:, cols, 0] = d_a  # cols are distinct items
    g_items[:, cols, 1] = d_b
    # the re-standardisation of the calibration abilities: delta s and delta mu
    along_a = g_items[:, :, 0] @ a  # coefficient of delta s
    along_b = g_items[:, :, 1] @ a  # coefficient of delta mu
    # delta mu = mean over the reference models of delta theta, delta s = mean of theta delta
    # theta there (theta standardised over them)
    ref = np.ones(N) if laplace.reference is None else laplace.reference.astype(float)
    g_theta = (np.outer(along_a, laplace.theta * ref) + np.outer(along_b, ref)) / ref.sum()
    return np.maximum(laplace.quadratic_forms(g_theta, g_items), 0.0)


def normalised_variance(
    theta: np.ndarray, var: np.ndarray, reference: npt.NDArray[np.bool_] | None = None
) -> np.ndarray:
    """diag(P D P^T) with P = I - (1 r^T + theta (theta r)^T) / n_R (r the indicator of the
    reference models, every model by default), D = diag(var), in O(N)."""
    r = np.ones(theta.size) if reference is None else np.asarray(reference, float)
    n = r.sum()
    vr = var * r
    s0, s1, s2 = vr.sum(), (vr * theta).sum(), (vr * theta * theta).sum()
    cross = (s0 + 2 * theta * s1 + theta * theta * s2) / n**2
    return np.asarray(np.maximum(var - 2 * vr * (1 + theta * theta) / n + cross, 0.0))
