"""Marginal maximum likelihood of the 2PL (Bock-Aitkin EM with Gauss-Hermite quadrature).

The psychometric standard estimator (as in R's ``mirt``): abilities are integrated out against
``theta ~ N(0, 1)`` on ``n_nodes`` Gauss-Hermite nodes; the EM alternates

- E-step: each model's posterior weights over the nodes, computed in log space (products of
  thousands of per-item likelihoods underflow otherwise), from two matrix products;
- M-step: per item, a weighted two-parameter logistic regression on the nodes' expected counts,
  solved by a few Fisher-scoring steps vectorised over items, in ``(log a, b)`` so that a > 0,
  with an optional lognormal prior on a and normal prior on b (MAP for the item parameters).

Abilities are reported as EAP (posterior mean) with posterior sd. Rank 1 only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp

from latentbench.exceptions import InputError
from latentbench.irt._objective import sigmoid
from latentbench.irt._priors import item_prior_moments

__all__ = ["MarginalFit", "fit_marginal"]

Array = npt.NDArray[np.float64]


@dataclass(eq=False)  # arrays: == by identity, not a ValueError
class MarginalFit:
    """Output of :func:`fit_marginal`.

    Attributes
    ----------
    theta : ndarray of shape (N,)
        EAP abilities.
    theta_sd : ndarray of shape (N,)
        Posterior sd of the abilities.
    a, b : ndarray of shape (J,)
        Discriminations (> 0) and intercepts.
    nodes, weights : ndarray of shape (Q,)
        Quadrature nodes and prior weights.
    posterior : ndarray of shape (N, Q)
        Each model's posterior weights over the nodes.
    log_likelihood : float
        Marginal log-likelihood (plus the item log-priors when used).
    n_iter : int
    converged : bool
    seconds : float
    history : list of float
    sigma : float
        The logistic scale: ``P = sigmoid((a theta + b) / sigma)``.
    """

    theta: Array
    theta_sd: Array
    a: Array
    b: Array
    nodes: Array
    weights: Array
    posterior: Array
    log_likelihood: float
    n_iter: int
    converged: bool
    seconds: float
    history: list[float] = field(default_factory=list)
    sigma: float = 1.0

    def predict_proba(self) -> Array:
        """Posterior predictive P(correct) for every cell, shape (N, J).

        Returns
        -------
        ndarray of shape (n_models, n_items)
        """
        p_nodes = sigmoid((np.outer(self.a, self.nodes) + self.b[:, None]) / self.sigma)
        return np.asarray(self.posterior @ p_nodes.T)


def fit_marginal(
    scores: npt.NDArray[np.floating],
    *,
    sigma: float = 1.0,
    n_nodes: int = 41,
    a_log_sd: float | None = 0.5,
    b_prior: tuple[float, float] | Literal["auto"] | None = "auto",
    tol: float = 1e-6,
    max_iter: int = 500,
    newton_steps: int = 3,
) -> MarginalFit:
    """Fit the 2PL by marginal maximum likelihood (Bock-Aitkin EM).

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        Scores in [0, 1] (soft labels allowed), NaN = missing.
    sigma : float, default 1.0
        Link temperature: ``P = sigmoid((a theta + b) / sigma)``.
    n_nodes : int, default 41
        Gauss-Hermite nodes for ``theta ~ N(0, 1)``.
    a_log_sd : float or None, default 0.5
        Prior ``log a ~ N(0, a_log_sd^2)`` (the usual lognormal prior of Bayesian IRT); None:
        plain marginal ML of a.
    b_prior : (mean, sd), "auto" or None, default "auto"
        Prior ``b ~ N(mean, sd^2)`` (units of sigma); ``"auto"``: the moments of the item
        logits used by the MAP fit (:func:`latentbench.irt._priors.item_prior_moments`); None:
        no prior on b (an item every model answers correctly then has no finite estimate).
    tol : float, default 1e-6
        Stop when the relative change of the objective is below ``tol`` and no item parameter
        moves by more than ``sqrt(tol)``.
    max_iter : int, default 500
    newton_steps : int, default 3
        Fisher-scoring steps per M-step.

    Returns
    -------
    MarginalFit
    """
    start = time.perf_counter()
    Y = np.asarray(scores, dtype=np.float64)
    if Y.ndim != 2:
        raise InputError(f"scores have shape {Y.shape}; expected (n_models, n_items)")
    observed = ~np.isnan(Y)
    y = np.where(observed, Y, 0.0)
    fail = observed - y  # expected "incorrect" weight of each observed cell
    nodes, weights = np.polynomial.hermite_e.hermegauss(int(n_nodes))
    weights = weights / weights.sum()
    log_w = np.log(weights)
    n_obs = observed.sum(axis=0)
    eps = 0.5 / (n_obs + 1)
    item_acc = np.clip(y.sum(axis=0) / np.maximum(n_obs, 1), eps, 1 - eps)
    if b_prior == "auto":
        b_mean, b_sd = item_prior_moments(Y)
    elif b_prior is None:
        b_mean, b_sd = 0.0, None
    else:
        b_mean, b_sd = float(b_prior[0]), float(b_prior[1])
    alpha = np.zeros(Y.shape[1])  # log a
    b = sigma * np.log(item_acc / (1 - item_acc)) * np.sqrt(1 + np.pi / 8)
    history: list[float] = []
    converged = False
    posterior = np.full((Y.shape[0], nodes.size), 1.0 / nodes.size)
    iteration = 0
    for iteration in range(1, int(max_iter) + 1):  # noqa: B007
        a = np.exp(alpha)
        t = (np.outer(a, nodes) + b[:, None]) / sigma  # (J, Q)
        log_p = -np.logaddexp(0.0, -t)
        log_q = -np.logaddexp(0.0, t)
        L = y @ log_p + fail @ log_q + log_w  # (N, Q)
        norm = logsumexp(L, axis=1)
        posterior = np.exp(L - norm[:, None])
        objective = float(norm.sum()) + _log_prior(alpha, b, a_log_sd, b_mean, b_sd, sigma)
        history.append(objective)
        r = y.T @ posterior  # expected correct at each node, (J, Q)
        n = observed.T.astype(float) @ posterior
        alpha_old, b_old = alpha.copy(), b.copy()
        for _ in range(int(newton_steps)):
            alpha, b = _item_step(alpha, b, r, n, nodes, sigma, a_log_sd, b_mean, b_sd)
        change = max(float(np.abs(alpha - alpha_old).max()), float(np.abs(b - b_old).max()))
        if len(history) > 1:
            rel = abs(history[-1] - history[-2]) / (abs(history[-1]) + 1e-12)
            if rel < tol and change < np.sqrt(tol):
                converged = True
                break
    theta = posterior @ nodes
    theta_sd = np.sqrt(np.maximum(posterior @ nodes**2 - theta**2, 0.0))
    return MarginalFit(
        theta=theta,
        theta_sd=theta_sd,
        a=np.exp(alpha),
        b=b,
        nodes=nodes,
        weights=weights,
        posterior=posterior,
        log_likelihood=history[-1],
        n_iter=iteration,
        converged=converged,
        seconds=time.perf_counter() - start,
        history=history,
        sigma=sigma,
    )


def _log_prior(
    alpha: Array,
    b: Array,
    a_log_sd: float | None,
    b_mean: float,
    b_sd: float | None,
    sigma: float,
) -> float:
    value = 0.0
    if a_log_sd is not None:
        value -= 0.5 * float(np.sum((alpha - np.log(sigma)) ** 2)) / a_log_sd**2
    if b_sd is not None:
        d = b - b_mean * sigma
        value -= 0.5 * float(d @ d) / (b_sd * sigma) ** 2
    return value


def _item_step(
    alpha: Array,
    b: Array,
    r: Array,
    n: Array,
    nodes: Array,
    sigma: float,
    a_log_sd: float | None,
    b_mean: float,
    b_sd: float | None,
) -> tuple[Array, Array]:
    """One Fisher-scoring step on every item's (log a, b), steps capped at 1 in each."""
    a = np.exp(alpha)
    p = sigmoid((np.outer(a, nodes) + b[:, None]) / sigma)
    resid = r - n * p  # d loglik / d t, per node
    info = n * p * (1 - p)
    x = nodes[None, :] * a[:, None]  # d t / d alpha * sigma
    g_alpha = (resid * x).sum(axis=1) / sigma
    g_b = resid.sum(axis=1) / sigma
    h_aa = (info * x * x).sum(axis=1) / sigma**2
    h_ab = (info * x).sum(axis=1) / sigma**2
    h_bb = info.sum(axis=1) / sigma**2
    if a_log_sd is not None:
        g_alpha -= (alpha - np.log(sigma)) / a_log_sd**2
        h_aa += 1.0 / a_log_sd**2
    if b_sd is not None:
        g_b -= (b - b_mean * sigma) / (b_sd * sigma) ** 2
        h_bb += 1.0 / (b_sd * sigma) ** 2
    h_aa += 1e-9
    h_bb += 1e-9
    det = h_aa * h_bb - h_ab * h_ab
    det = np.where(det > 1e-12, det, 1e-12)
    d_alpha = (h_bb * g_alpha - h_ab * g_b) / det
    d_b = (h_aa * g_b - h_ab * g_alpha) / det
    return alpha + np.clip(d_alpha, -1.0, 1.0), b + np.clip(d_b, -1.0, 1.0)
