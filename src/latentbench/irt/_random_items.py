"""Abilities by marginal likelihood over the items (random-item 2PL, nonparametric item law).

With few models and many items (tens of models, hundreds to tens of thousands of items: the
matrices users have), the joint estimate of abilities and item parameters is biased by
O(1/N): every item's ``(a_j, b_j)`` is estimated from the N cells of one column, and the
abilities are then fitted against these noisy, shrunk item estimates. The bias does not shrink
with J, while the abilities' standard errors do (O(1/sqrt(J))), so at 29 x 12032 the bias is as
large as the standard error and 95% intervals cover 0.6-0.8 in simulations shaped like the real
matrices (docs/model.md, Uncertainty). Integrating the priors out (MCMC) does not remove it: a
Gaussian prior on (a, b) is not the law the items come from.

Here the items are random effects, drawn from an unknown law ``G`` on ``(a, b)``, and the
abilities are the parameters (the roles of the usual marginal ML reversed, as J >> N)::

    l(theta, G) = sum_j log sum_g w_g prod_i p(y_ij | theta_i, a_g, b_g)

``G`` is discrete on a grid of ``(a_g, b_g)`` (``a >= 0``; 16 x 40 points over the starting
estimates' range, the ``a`` range widened while the law piles up on its largest value), its
weights ``w`` estimated by nonparametric maximum likelihood (Kiefer & Wolfowitz 1956; EM as
in Laird 1978), jointly with the abilities. With the items integrated out against a law
estimated from all J items, the abilities are consistent as J grows with N fixed, and their
standard errors come from the observed information of ``l(., G_hat)`` (the Louis identity,
exact derivatives), mapped through the standardisation of the reporting scale (mean 0, sd 1
over the models that set it, fit.json's off_scale_models left out).

EM, accelerated by SQUAREM (:mod:`latentbench.irt._squarem`): the E-step gives every item's
posterior over the grid, ``R_jg``; the M-step sets ``w = mean_j R_j`` and takes Newton steps on
each ability (given ``R`` the abilities separate), then standardises the abilities. The
responses enter the E-step only through two per-item sums and the observed-cell pattern: one
(J, 3 + N) x (3 + N, G) product per iteration, O(N J G) with missing cells and O(J G)
without; G = 640 grid points. With at most :data:`SPARSE_MISSING` of the cells missing, the
observed cells are counted as all cells minus a sparse correction on the missing ones,
O(J G + missing G). The EM's iterations run this as fused numba kernels
(:mod:`latentbench.irt._em_kernels`: one pass over the items that never stores the (J, G)
posterior, and the Newton steps), equal to the NumPy path (:meth:`_Problem.posterior`,
:meth:`_Problem.newton`, kept behind ``_FUSED``) up to rounding. The whole fit runs with BLAS
on one thread (:mod:`latentbench.irt._blas`): its products are small and many.

Item parameters are summarised by their posterior means and sds under ``G_hat``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import csr_array
from scipy.special import expit

from latentbench._checks import user_stacklevel
from latentbench.exceptions import ConvergenceWarning
from latentbench.irt import _em_kernels
from latentbench.irt._blas import single_threaded_blas
from latentbench.irt._squarem import extrapolate, next_step_max, squarem_step

__all__ = [
    "EDGE_INVALID",
    "EDGE_MASS",
    "ModelJackknife",
    "RandomItemsFit",
    "fit_random_items",
    "item_bootstrap",
    "jackknife_groups",
    "model_jackknife",
    "resamples",
    "text_order",
]

_GRID_A = 16
_GRID_B = 40
_NEWTON_STEPS = 3
EDGE_MASS = 0.01
"""Largest weight the estimated law may put on the grid's largest discrimination; above it
the grid is widened (x1.5, at most :data:`_WIDENINGS` times) and the EM continues."""
_WIDENINGS = 4
EDGE_INVALID = 0.05
"""Edge mass above which the estimate is declared invalid after every widening (a little
mass at the top, 2-3 % on simulated 2PL data at 12-25 models, is the NPMLE's small-sample
habit and the intervals still cover; the failing matrices reach 17-45 %)."""
_EDGE_ABORT = 0.1
"""On the last grid the EM stops early only above this edge mass (the estimate is invalid
from :data:`EDGE_MASS` on; the stress matrices reach 0.17-0.45)."""
_EDGE_WARMUP = 30
_TINY = float(np.finfo(np.float64).tiny)
_FUSED = True
"""Whether the EM's iterations take the fused numba kernels (:mod:`._em_kernels`); False: the
NumPy reference (:meth:`_Problem.posterior`, :meth:`_Problem.newton`), kept for comparison
(``benchmarks/bench_random_items_speed.py``) and tests. The results agree to rounding."""
SPARSE_MISSING = 0.05
"""Largest fraction of missing cells for which the E- and M-steps count the observed cells as
all cells minus a sparse correction on the missing ones (O(missing G) instead of O(N J G) per
iteration); above it the observed-cell indicators enter as a dense (J, N) factor."""


@dataclass
class RandomItemsFit:
    """Abilities by marginal likelihood over the items, with the estimated item law.

    Attributes
    ----------
    theta : ndarray of shape (N,)
        Abilities, standardised over the models (mean 0, sd 1).
    covariance : ndarray of shape (N, N)
        Their covariance on the standardised scale (inverse observed information of the
        marginal likelihood, projected by the standardisation's Jacobian).
    grid_a, grid_b : ndarray of shape (G,)
        Support points of the item law (discrimination, intercept; units of sigma times 1).
    weights : ndarray of shape (G,)
        Estimated probabilities of the support points.
    item_mean, item_sd : ndarray of shape (J, 2)
        Posterior mean and sd of each item's ``(a, b)`` under the estimated law (the same
        units as the fit's reported items).
    log_likelihood : float
        Marginal log-likelihood at the estimate.
    n_iter : int
        EM iterations (each SQUAREM cycle counts three).
    converged : bool
    edge_mass : float
        Weight of the law on the grid's largest discrimination at the end. Above
        :data:`EDGE_MASS` after every widening, the law piles up at the grid's edge (items
        behaving as steps: the marginal likelihood has no interior optimum in ``a``), the EM
        was stopped there, and above :data:`EDGE_INVALID` the estimate is not valid
        (``valid`` False).
    grid_top : float
        The grid's largest discrimination (after the widenings).
    data_key : str
        Fingerprint of the scores it was fitted on (set by the caller that caches it).
    boot_theta : ndarray of shape (B, N)
        Standardised abilities of the item-bootstrap replicates (:func:`item_bootstrap`;
        NaN for a model outside the bootstrapped fit); shape (0, N) when not run.
    boot_weights : ndarray of shape (B, G)
        The replicates' item-law weights on the same grid.
    boot_seed : int
        Seed of the replicates' item resamples (:func:`resamples` regenerates them).
    boot_order : ndarray of int, shape (J,)
        The items' positions in the order the resamples draw them (:func:`text_order` of
        their ids), so that the same cells in another column order get the same replicates;
        shape (0,): their positions.
    in_law : ndarray of bool, shape (N,)
        The models the law was fitted on (set by :func:`latentbench.irt._fitted.
        random_items_fit`: the reference models with a finite marginal estimate); the others
        sit at the fit's estimate with zero (co)variance. Shape (0,): not recorded (all).
    """

    theta: np.ndarray
    covariance: np.ndarray
    grid_a: np.ndarray
    grid_b: np.ndarray
    weights: np.ndarray
    item_mean: np.ndarray
    item_sd: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool
    edge_mass: float = 0.0
    grid_top: float = float("nan")
    data_key: str = ""
    boot_theta: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    boot_weights: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    boot_seed: int = 0
    boot_order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    in_law: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @property
    def valid(self) -> bool:
        """Whether the item law stayed inside its grid (edge mass at most
        :data:`EDGE_INVALID`)."""
        return self.edge_mass <= EDGE_INVALID

    @property
    def se(self) -> np.ndarray:
        """Standard errors of the standardised abilities given the estimated law, shape (N,)."""
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))

    @property
    def n_boot(self) -> int:
        """Number of item-bootstrap replicates (0: not run)."""
        return int(self.boot_theta.shape[0]) if self.boot_theta.ndim == 2 else 0

    @property
    def boot_sd(self) -> np.ndarray:
        """Item-bootstrap sd of each standardised ability, shape (N,) (NaN where not run)."""
        if self.n_boot < 2:
            return np.full(self.theta.size, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out: np.ndarray = np.nanstd(self.boot_theta, axis=0, ddof=1)
        return out


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = -np.logaddexp(0.0, -z)
    return out


class _Problem:
    """The data of one fit as float arrays, with the E-step and the M-step's Newton steps."""

    def __init__(
        self,
        scores: np.ndarray,
        grid_a: np.ndarray,
        grid_b: np.ndarray,
        trials: int = 1,
        weights: np.ndarray | None = None,
    ) -> None:
        observed = ~np.isnan(scores)
        # item multiplicities (an item bootstrap's resample): each item's log-likelihood term
        # counts this many times; None = once each
        self.weights = None if weights is None else np.asarray(weights, np.float64)
        # K trials per cell: the binomial log-likelihood is K times the soft-label one, so
        # responses and observed indicators enter K-fold (k successes, K trials per cell)
        self.trials = int(trials)
        self.Y1 = np.where(observed, scores, 0.0).astype(np.float64)
        self.O1 = observed.astype(np.float64)
        self.Y = self.Y1 * trials if trials != 1 else self.Y1
        self.O = self.O1 * trials if trials != 1 else self.O1
        self.complete = bool(observed.all())
        missing = ~observed
        # few missing cells: the observed indicators are all-ones minus a sparse correction
        self.sparse = not self.complete and bool(missing.mean() <= SPARSE_MISSING)
        # left factor of the per-item log-likelihood, (J, 3 + N), or (J, 4) when complete or
        # sparse: [sum_i y_ij theta_i, sum_i y_ij, 1, observed indicators (or their count)]
        J = scores.shape[1]
        if self.complete:
            observed_part = self.O.sum(axis=0)[:, None]
        elif self.sparse:
            observed_part = np.full((J, 1), float(trials))
            self.missing_items = np.flatnonzero(missing.any(axis=0))
            cells = missing.astype(np.float64) * trials
            self.missing_by_item = csr_array(np.ascontiguousarray(cells[:, self.missing_items].T))
            self.missing_by_model = csr_array(cells)
        else:
            observed_part = self.O.T
        self.left = np.hstack(
            [np.zeros((J, 1)), self.Y.sum(axis=0)[:, None], np.ones((J, 1)), observed_part]
        )
        self.a, self.b = grid_a, grid_b
        # the fused kernels' form of the same: the cells listed per item (CSR) with their
        # coefficients, whichever are fewer: the missing ones (-K; all cells in the column
        # sums, the missing taken out) or the observed ones (+K). The kernels' cost per
        # iteration grows with the listed cells (O(listed G)), so 10% missing costs a tenth of
        # listing the observed cells; the NumPy path keeps its own threshold (SPARSE_MISSING)
        self.item_sums = np.ascontiguousarray(self.left[:, 1])
        self.complement = self.complete or bool(missing.sum() <= observed.sum())
        listed = missing if self.complement else observed
        items, models = np.nonzero(listed.T)  # sorted by item
        self.cell_ptr = np.concatenate([[0], np.cumsum(np.bincount(items, minlength=J))])
        self.cell_model = models.astype(np.int64)
        self.cell_coef = np.full(models.size, -float(trials) if self.complement else float(trials))
        self.multiplicity = (
            np.ones(J) if self.weights is None else np.ascontiguousarray(self.weights)
        )
        self.total_weight = float(J) if self.weights is None else float(self.weights.sum())

    def fused_step(
        self, theta: np.ndarray, log_w: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """One EM iteration by the fused kernels: the new law (weights, shape (G,)), the
        abilities after the Newton steps (not standardised) and the marginal log-likelihood
        at ``(theta, log_w)``; equal to :meth:`posterior`, the weighting by the items'
        multiplicities and :meth:`newton` up to rounding."""
        lower = _em_kernels.log_sigmoid_lower(theta, self.a, self.b)  # (N, G)
        if self.complement:  # all cells in the column sums, the missing listed
            base = log_w + float(self.trials) * lower.sum(axis=0)
        else:  # the observed cells listed
            base = np.ascontiguousarray(log_w, dtype=np.float64)
        J, G = self.item_sums.size, self.a.size
        col, ra, corr = np.empty(G), np.empty(J), np.empty((theta.size, G))
        loglik = _em_kernels.e_step(
            self.Y.T @ theta,
            self.item_sums,
            self.a,
            self.b,
            base,
            self.cell_ptr,
            self.cell_model,
            self.cell_coef,
            lower,
            self.multiplicity,
            col,
            ra,
            corr,
        )
        if self.complement:
            corr += col * float(self.trials)
        theta = _em_kernels.newton(theta, self.Y @ ra, self.a, self.b, corr, _NEWTON_STEPS)
        return np.maximum(col / self.total_weight, 1e-300), theta, float(loglik)

    def posterior(self, theta: np.ndarray, log_w: np.ndarray) -> tuple[np.ndarray, float]:
        """Items' posterior over the grid, shape (J, G), and the marginal log-likelihood.

        ``y log s(z) + (1 - y) log s(-z) = y z + log s(-z)`` with ``z = a_g theta_i + b_g``,
        so the responses enter only through the per-item sums ``sum_i y_ij theta_i`` and
        ``sum_i y_ij`` (soft labels included): one (J, 3 + N) x (3 + N, G) product."""
        z = np.outer(theta, self.a) + self.b  # (N, G)
        lower = _log_sigmoid(-z)
        self.left[:, 0] = self.Y.T @ theta
        if self.complete:
            right = np.vstack([self.a, self.b, log_w, lower.mean(axis=0)])
        elif self.sparse:
            right = np.vstack([self.a, self.b, log_w, lower.sum(axis=0)])
        else:
            right = np.vstack([self.a, self.b, log_w, lower])
        log_lik = self.left @ right
        if self.sparse:  # the missing cells' terms, counted in the column sums, taken out
            log_lik[self.missing_items] -= self.missing_by_item @ lower
        top = log_lik.max(axis=1, keepdims=True)
        np.subtract(log_lik, top, out=log_lik)
        np.exp(log_lik, out=log_lik)
        # posteriors below the smallest normal double are flushed to 0: they change no sum
        # (each row's largest term is 1) and subnormal operands make every product and sum
        # that reads R 10-20 times slower (200 x 1000: O @ R 90 ms instead of 5 ms)
        np.putmask(log_lik, log_lik < _TINY, 0.0)
        total = log_lik.sum(axis=1, keepdims=True)
        log_lik /= total
        per_item = np.log(total[:, 0]) + top[:, 0]
        if self.weights is not None:
            return log_lik, float(self.weights @ per_item)
        return log_lik, float(np.sum(per_item))

    def newton(self, theta: np.ndarray, R: np.ndarray, steps: int) -> np.ndarray:
        """Newton steps on every ability of the M-step objective (separable given R)."""
        correct = self.Y @ (R @ self.a)  # (N,): sum_j y_ij E[a_j | data]
        # expected observed counts (trials included)
        if self.complete:
            M0 = R.sum(axis=0)[None, :] * self.trials
        elif self.sparse:
            M0 = R.sum(axis=0)[None, :] * self.trials - self.missing_by_model @ R
        else:
            M0 = self.O @ R
        for _ in range(steps):
            p = expit(np.outer(theta, self.a) + self.b)
            grad = correct - (p * M0) @ self.a
            curv = (p * (1.0 - p) * M0) @ (self.a * self.a)
            theta = theta + grad / np.maximum(curv, 1e-12)
        return theta

    def information(self, theta: np.ndarray, R: np.ndarray, chunk: int = 256) -> np.ndarray:
        """Observed information of the marginal log-likelihood in theta (Louis), (N, N).

        Complete-data information minus the conditional variance of the complete-data score,
        ``sum_j [sum_g R_jg s_jg s_jg^T - m_j m_j^T]`` with per-item scores
        ``s_jg = O_j a_g (y_j - p_g)`` (N-vectors) and ``m_j = sum_g R_jg s_jg``. On the items
        at most half of the models miss, the sum over ``g`` is expanded into (J, G) x (G, N)
        and (N, J) x (J, N) products, O(J G N + J N^2), plus a term over the pairs of missing
        cells of each item, O(G) per pair (:meth:`_score_variance_expanded`); the other items
        take the direct sum, O(N^2 G) each, in chunks.
        """
        keep = R.max(axis=0) > 1e-10  # grid points no item uses contribute nothing
        a, b, Rk = self.a[keep], self.b[keep], R[:, keep]
        p = expit(np.outer(theta, a) + b)  # (N, Gk)
        N = theta.size
        # complete-data information: sum_j sum_g R_jg O_ij a_g^2 p_ig (1 - p_ig), diagonal
        # with K trials per cell: K times the one-trial complete-data information, minus K^2
        # times the one-trial score variance (the score is K a (y - p))
        info = np.diag(((p * (1.0 - p)) * (self.O @ Rk)) @ (a * a))  # (N, N)
        square = float(self.trials * self.trials)
        missing = 1.0 - self.O1
        expanded = 2 * missing.sum(axis=0) <= N
        if expanded.any():
            variance = self._score_variance_expanded(
                p, a, Rk[expanded], self.Y1[:, expanded], missing[:, expanded]
            )
            info -= variance * square if self.trials != 1 else variance
        rest = np.flatnonzero(~expanded)
        for start in range(0, rest.size, chunk):
            sl = rest[start : start + chunk]
            # per-cell scores s_ijg = O_ij a_g (y_ij - p_ig), arranged (j, g, i)
            s = (self.Y1[:, sl].T[:, None, :] - p.T[None, :, :] * self.O1[:, sl].T[:, None, :]) * a[
                None, :, None
            ]
            r = Rk[sl]
            mean = np.einsum("jg,jgi->ji", r, s)
            weighted = s * np.sqrt(r)[:, :, None]
            flat = weighted.reshape(-1, N)
            # minus the conditional variance of the complete-data score given the data
            variance = flat.T @ flat - mean.T @ mean
            info -= variance * square if self.trials != 1 else variance
        symmetric: np.ndarray = 0.5 * (info + info.T)
        return symmetric

    @staticmethod
    def _score_variance_expanded(
        p: np.ndarray, a: np.ndarray, R: np.ndarray, Y: np.ndarray, M: np.ndarray
    ) -> np.ndarray:
        """``sum_j [sum_g R_jg s_jg s_jg^T - m_j m_j^T]`` by matrix products, (N, N).

        ``p`` (N, G), ``a`` (G,), ``R`` (J, G), ``Y`` (N, J) with 0 on the missing cells
        ``M`` (N, J). For a complete item, with ``s_jg = a_g (y_j - p_g)``,
        ``sum_g R_jg s_jg s_jg^T = c_j y_j y_j^T - y_j d_j^T - d_j y_j^T + P diag(Ra2_j) P^T``
        where ``Ra2 = R a^2``, ``c_j = sum_g Ra2_jg`` and ``d_j = P Ra2_j`` (summed over j the
        last term is ``P diag(sum_j Ra2_j) P^T``), and ``m_j = e_j y_j - P (R_j a)`` with
        ``e_j = sum_g R_jg a_g``. Missing cells add ``u_jg = a_g M_j p_g`` to that score
        (cancelling it there): cross terms, again matrix products, and
        ``sum_j sum_g R_jg u_jg u_jg^T``, which only pairs of missing cells of one item reach.
        """
        N = p.shape[0]
        Ra2 = R * (a * a)  # (J, G)
        D = Ra2 @ p.T  # (J, N): d_j
        E = (R * a) @ p.T  # (J, N)
        cross = Y @ D  # (N, N): sum_j y_j d_j^T
        out: np.ndarray = (
            (Y * Ra2.sum(axis=1)) @ Y.T - cross - cross.T + (p * Ra2.sum(axis=0)) @ p.T
        )
        mean = Y.T * (R @ a)[:, None] - E  # (J, N): m_j of the complete score
        out -= mean.T @ mean
        if not M.any():
            return out
        # sum_j sum_g R_jg s_jg u_jg^T, s the complete score, and the u part of m_j
        cross = Y @ (M.T * D) - p @ (p * (M @ Ra2)).T
        extra = M.T * E  # (J, N): sum_g R_jg u_jg
        out += cross + cross.T - mean.T @ extra - extra.T @ mean - extra.T @ extra
        # pairs (i, k) of missing cells of one item j: sum_g Ra2_jg p_ig p_kg, as batched
        # (c, G) x (G, c) products over the items with c missing cells (a loop over counts)
        items, models = np.nonzero(M.T)  # sorted by item
        counts = np.bincount(items, minlength=M.shape[1])
        pairs = np.zeros(N * N)
        start = np.cumsum(counts) - counts
        root = np.sqrt(Ra2)
        for c in np.unique(counts[counts > 0]):
            group = np.flatnonzero(counts == c)
            cells = models[start[group][:, None] + np.arange(c)]  # (items, c) model indices
            step = max(1, 2**21 // (c * p.shape[1]))  # items per chunk: about 16 MB
            for lo in range(0, group.size, step):
                g_items, g_cells = group[lo : lo + step], cells[lo : lo + step]
                Q = p[g_cells] * root[g_items][:, None, :]  # (items, c, G)
                block = Q @ Q.transpose(0, 2, 1)  # (items, c, c)
                index = g_cells[:, :, None] * N + g_cells[:, None, :]
                pairs += np.bincount(index.ravel(), weights=block.ravel(), minlength=N * N)
        out += pairs.reshape(N, N)
        return out


def _standardise(theta: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Abilities shifted and scaled so that the reference models have mean 0 and sd 1."""
    sd = float(theta[reference].std())
    out: np.ndarray = (theta - theta[reference].mean()) / (sd if sd > 0 else 1.0)
    return out


def _grid(a_top: float, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Support points: ``a`` from 0 to ``a_top``, ``b`` over the starting estimates plus 1."""
    ga = np.linspace(0.0, a_top, _GRID_A)
    gb = np.linspace(float(np.min(b)) - 1.0, float(np.max(b)) + 1.0, _GRID_B)
    A, B = np.meshgrid(ga, gb, indexing="ij")
    return A.ravel(), B.ravel()


def _first_top(a: np.ndarray) -> float:
    """The grid's first largest discrimination: 1.25 times the largest starting one (>= 1)."""
    return max(1.25 * float(np.max(a, initial=0.0)), 1.0)


_Point = tuple[np.ndarray, np.ndarray, np.ndarray]


def _run_em(
    problem: _Problem,
    theta: np.ndarray,
    ref: np.ndarray,
    tol: float,
    max_iter: int,
    edge: np.ndarray | None = None,
    edge_limit: float = 0.01,
    log_w0: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, int, bool, float]:
    """SQUAREM-accelerated EM from ``theta`` and a uniform law on the problem's grid.

    With ``edge`` (a mask of grid points), stops early once the law puts more than
    :data:`EDGE_MASS` on them (after :data:`_EDGE_WARMUP` iterations). Returns the
    abilities, the log weights, the iterations, whether ``tol`` was met and the last change.
    """
    G = problem.a.size
    empty = np.zeros((0, 1))

    def em(point: _Point) -> tuple[_Point, float]:
        th, lw = point[0][:, 0], point[1][:, 0]
        if _FUSED:
            w, th, loglik = problem.fused_step(np.ascontiguousarray(th), np.ascontiguousarray(lw))
            return (_standardise(th, ref)[:, None], np.log(w)[:, None], empty), loglik
        R, loglik = problem.posterior(th, lw)
        if problem.weights is not None:  # items counted by their multiplicities
            R *= problem.weights[:, None]
            w = np.maximum(R.sum(axis=0) / problem.weights.sum(), 1e-300)
        else:
            w = np.maximum(R.mean(axis=0), 1e-300)
        th = _standardise(problem.newton(th, R, _NEWTON_STEPS), ref)
        return (th[:, None], np.log(w)[:, None], empty), loglik

    start_w = np.full((G, 1), -np.log(G)) if log_w0 is None else np.asarray(log_w0)[:, None]
    x0 = (_standardise(np.asarray(theta, float), ref)[:, None], start_w, empty)
    step_max, n_iter, converged, change = 1.0, 0, False, float("inf")
    while n_iter < max_iter:
        x1, ll0 = em(x0)
        x2, _ = em(x1)
        alpha, r, v = squarem_step(x0, x1, x2, step_max)
        candidate = extrapolate(x0, r, v, alpha, nonneg=False)
        lw = candidate[1][:, 0]
        lw = lw - np.log(np.sum(np.exp(lw - lw.max()))) - lw.max()
        candidate = (_standardise(candidate[0][:, 0], ref)[:, None], lw[:, None], empty)
        x3, ll3 = em(candidate)
        accepted = ll3 >= ll0
        if not accepted:
            x3, _ = em(x2)
        step_max = next_step_max(step_max, alpha, accepted)
        n_iter += 3
        change = float(np.abs(x3[0] - x0[0]).max())
        x0 = x3
        if change < tol:
            converged = True
            break
        if (
            edge is not None
            and n_iter >= _EDGE_WARMUP
            and _edge_mass(x0[1][:, 0], edge) > edge_limit
        ):
            break
    return x0[0][:, 0], x0[1][:, 0], n_iter, converged, change


def _edge_mass(log_w: np.ndarray, edge: np.ndarray) -> float:
    return float(np.exp(log_w[edge]).sum())


@single_threaded_blas
def fit_random_items(
    scores: np.ndarray,
    theta: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    sigma: float = 1.0,
    *,
    tol: float = 1e-4,
    max_iter: int = 2000,
    reference: np.ndarray | None = None,
    trials: int = 1,
    law: RandomItemsFit | None = None,
) -> RandomItemsFit:
    """Abilities by marginal ML with the items as random effects from a nonparametric law.

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        Scores in [0, 1] (fractional = soft labels), NaN = missing.
    theta : ndarray of shape (N,)
        Starting abilities (e.g. the joint fit's, standardised).
    a, b : ndarray of shape (J,)
        Starting item parameters on the same scale (they only place the grid).
    sigma : float, default 1.0
        Temperature of the link; the model is ``sigmoid((a theta + b) / sigma)``.
    tol : float, default 1e-4
        Stop when no ability moves by more than ``tol`` (sd units) in an iteration cycle.
    max_iter : int, default 2000
        Largest number of EM iterations.
    reference : ndarray of bool, shape (N,), optional
        The models that define the reporting scale (mean 0, sd 1 over them; default all):
        the calibration models when new models are scored against a calibration.
    trials : int, default 1
        Bernoulli trials behind every cell (binomial likelihood, ``k = K y`` successes).
    law : RandomItemsFit, optional
        A fit whose grid and weights start the EM (no widening): e.g. the calibration's own
        law when one new model is scored with it, which saves most of the iterations.

    Returns
    -------
    RandomItemsFit
    """
    scores = np.asarray(scores, dtype=np.float64)
    ref = np.ones(scores.shape[0], bool) if reference is None else np.asarray(reference, bool)
    empty = np.isnan(scores).all(axis=1)
    if empty.any() and not empty.all():
        # a model without observed cells has no likelihood: fitted without it (it would
        # float with the reporting scale and stall the EM), then put back at its start
        # with zero (co)variance; callers flag it and give it the prior's interval
        part = fit_random_items(
            scores[~empty],
            np.asarray(theta, float)[~empty],
            a,
            b,
            sigma,
            tol=tol,
            max_iter=max_iter,
            reference=ref[~empty],
            trials=trials,
            law=law,
        )
        full_theta = np.asarray(theta, float).copy()
        full_theta[~empty] = part.theta
        covariance = np.zeros((empty.size, empty.size))
        covariance[np.ix_(~empty, ~empty)] = part.covariance
        part.theta, part.covariance = full_theta, covariance
        return part
    b_start = np.asarray(b, float) / sigma
    a_top = _first_top(np.asarray(a, float) / sigma)
    start = np.asarray(theta, float)
    n_iter = 0
    for widening in range(_WIDENINGS + 1):
        grid_a, grid_b = _grid(a_top, b_start)
        log_w0 = None
        if law is not None:  # start from a known law on its grid, no widening
            grid_a, grid_b = law.grid_a / sigma, law.grid_b / sigma
            log_w0 = np.log(np.maximum(law.weights, 1e-300))
        problem = _Problem(scores, grid_a, grid_b, trials)
        edge = grid_a == grid_a.max()
        last = widening == _WIDENINGS or law is not None
        # the last grid too stops once the law piles up far on its edge (more than
        # _EDGE_ABORT): the estimate is then invalid (``valid`` False) and the caller falls
        # back, so the EM need not go on
        theta_hat, log_w, used, converged, change = _run_em(
            problem,
            start,
            ref,
            tol,
            max_iter - n_iter,
            edge,
            _EDGE_ABORT if last else EDGE_MASS,
            log_w0,
        )
        n_iter += used
        if _edge_mass(log_w, edge) <= EDGE_MASS or last or n_iter >= max_iter:
            break
        # the law puts mass on the largest discrimination of the grid: widen it, go on
        a_top *= 1.5
        start = theta_hat
    edge_mass = _edge_mass(log_w, edge)
    if not converged and n_iter >= max_iter:
        warnings.warn(
            f"random-item abilities stopped at max_iter={max_iter} before meeting tol={tol} "
            f"(last change {change:.2e} sd); the intervals are from the last iterate",
            ConvergenceWarning,
            stacklevel=user_stacklevel(),
        )
    R, loglik = problem.posterior(theta_hat, log_w)
    info = problem.information(theta_hat, R)
    # Jacobian of the standardisation over the reference models (the gauge directions)
    N, n_ref = theta_hat.size, int(ref.sum())
    gauge = np.outer(np.ones(N), ref) + np.outer(theta_hat, theta_hat * ref)
    jacobian = np.eye(N) - gauge / n_ref
    covariance = jacobian @ np.linalg.pinv(info, hermitian=True) @ jacobian.T
    grid = np.column_stack([grid_a, grid_b]) * sigma
    item_mean = R @ grid
    item_sd = np.sqrt(np.maximum(R @ grid**2 - item_mean**2, 0.0))
    return RandomItemsFit(
        theta=theta_hat,
        covariance=covariance,
        grid_a=grid_a * sigma,
        grid_b=grid_b * sigma,
        weights=np.exp(log_w),
        item_mean=item_mean,
        item_sd=item_sd,
        log_likelihood=loglik,
        n_iter=n_iter,
        converged=converged,
        edge_mass=edge_mass,
        grid_top=float(grid_a.max() * sigma),
    )


SUPPORT = 1e-10
"""Grid points whose weight in a bootstrap replicate's law is at most this are left out when a
new model is scored against that replicate (they change no posterior)."""


def rescaled(
    fit: RandomItemsFit,
    shift: float,
    scale: float,
    scores: np.ndarray,
    sigma: float = 1.0,
    trials: int = 1,
) -> RandomItemsFit:
    """``fit`` on the ability scale ``theta' = shift + scale theta`` (``scale`` > 0).

    The same model: abilities, their covariance (times ``scale**2``) and the bootstrap
    replicates move; the law's grid follows (``a' = a / scale``, ``b' = b - a shift / scale``,
    so every cell's probability is unchanged), and the items' posterior means and sds are
    recomputed on it from the same posterior (``scores``, shape (N, J), the cells the law was
    fitted on). The likelihood, weights and edge mass are unchanged.
    """
    out = copy.copy(fit)
    out.theta = shift + scale * np.asarray(fit.theta, float)
    out.covariance = scale * scale * np.asarray(fit.covariance, float)
    out.grid_a = np.asarray(fit.grid_a, float) / scale
    out.grid_b = np.asarray(fit.grid_b, float) - np.asarray(fit.grid_a, float) * shift / scale
    out.grid_top = float(fit.grid_top) / scale
    if fit.boot_theta.size:
        out.boot_theta = shift + scale * np.asarray(fit.boot_theta, float)
    problem = _Problem(np.asarray(scores, float), out.grid_a / sigma, out.grid_b / sigma, trials)
    R = problem.posterior(out.theta, np.log(np.maximum(out.weights, 1e-300)))[0]
    grid = np.column_stack([out.grid_a, out.grid_b])
    out.item_mean = R @ grid
    out.item_sd = np.sqrt(np.maximum(R @ grid**2 - out.item_mean**2, 0.0))
    return out


def text_order(ids: Sequence[Any]) -> np.ndarray:
    """Positions of ``ids`` sorted as text (stable): the order seeded draws over models or
    items follow, so that the same data with the rows or columns in another order (a wide
    file's columns against a long file's sorted ids) draw alike."""
    text = [str(name) for name in ids]
    return np.asarray(sorted(range(len(text)), key=text.__getitem__), dtype=np.int64)


def resamples(
    seed: int, n_items: int, n_boot: int, order: np.ndarray | None = None
) -> list[np.ndarray]:
    """The item multiplicities of an item bootstrap: ``n_boot`` arrays of shape (n_items,),
    each the counts of ``n_items`` draws with replacement (seeded: the same on every call).
    ``order`` (:func:`text_order` of the item ids): the draws number the items in this order,
    not by position (default, or shape (0,): by position)."""
    rng = np.random.default_rng(seed)
    draws = [
        np.bincount(rng.integers(0, n_items, n_items), minlength=n_items) for _ in range(n_boot)
    ]
    if order is None or len(order) == 0:
        return draws
    position = np.asarray(order, dtype=np.intp)
    placed = [np.empty_like(counts) for counts in draws]
    for counts, out in zip(draws, placed, strict=True):
        out[position] = counts
    return placed


@single_threaded_blas
def item_bootstrap(
    scores: np.ndarray,
    fit: RandomItemsFit,
    sigma: float = 1.0,
    *,
    n_boot: int = 50,
    seed: int = 0,
    tol: float = 1e-4,
    max_iter: int = 500,
    reference: np.ndarray | None = None,
    trials: int = 1,
    support: float = 0.0,
    mix: float = 1.0,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Item bootstrap of a random-item fit: items resampled with replacement, the EM redone.

    Each replicate counts every item by its multiplicity in a resample (weights on the
    per-item log-likelihood terms; the items drawn 0 times are left out, nothing is copied
    twice) and runs the estimator's own EM on the fit's grid: from a uniform law, as the fit
    does, with the abilities started at the fit's. The spread of the replicates'
    standardised abilities includes the item law's own estimation error, which the
    law-fixed information of :func:`fit_random_items` leaves out.

    Starting the law at the fit's estimate, or keeping only the grid points it uses, ties
    every replicate to it: on an AlpacaEval 2 calibration half (29 x 805) the replicates'
    sd was then 1.00 (median over models) of the law-fixed se instead of the 1.22-1.25 of
    full refits (``benchmarks/bench_item_bootstrap.py``; docs/model.md).

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        The matrix ``fit`` was fitted on (NaN missing).
    fit : RandomItemsFit
    sigma : float, default 1.0
    n_boot : int, default 50
        Replicates.
    seed : int, default 0
        Seed of the resamples (:func:`resamples`).
    tol, max_iter
        The EM's stopping rule per replicate (as :func:`fit_random_items`).
    support : float, default 0.0
        Grid points with at most this weight in ``fit``'s law are left out of the replicates
        (a measurement knob: above 0 the spread is understated, see above).
    mix : float, default 1.0
        The replicates' starting law: ``(1 - mix)`` times ``fit``'s plus ``mix`` times the
        uniform one (1: the estimator's own start).
    reference : ndarray of bool, shape (N,), optional
        The models that set the reporting scale (default all).
    trials : int, default 1
    order : ndarray of int, shape (J,), optional
        The items' order for the resamples (:func:`resamples`; default their positions).

    Returns
    -------
    theta : ndarray of shape (n_boot, N)
        Standardised abilities per replicate (NaN for a model without cells in the fit, or in
        a replicate's resample).
    weights : ndarray of shape (n_boot, G)
        The replicates' law weights on the fit's grid.
    """
    scores = np.asarray(scores, dtype=np.float64)
    N, J = scores.shape
    ref = np.ones(N, bool) if reference is None else np.asarray(reference, bool)
    observed = ~np.isnan(scores)
    rows = observed.any(axis=1)
    keep = fit.weights > support
    grid_a, grid_b = fit.grid_a[keep] / sigma, fit.grid_b[keep] / sigma
    start = fit.weights[keep] / fit.weights[keep].sum()
    log_w0 = np.log((1.0 - mix) * start + mix / start.size)
    theta = np.full((n_boot, N), np.nan)
    weights = np.zeros((n_boot, fit.weights.size))
    sub = scores[rows]
    for r, counts in enumerate(resamples(seed, J, n_boot, order)):
        items = np.flatnonzero(counts)
        cells = observed[rows][:, items].any(axis=1)
        if not cells.all():  # a model without cells in this resample: left NaN here
            continue
        problem = _Problem(sub[:, items], grid_a, grid_b, trials, weights=counts[items])
        theta_r, log_w, _, _, _ = _run_em(
            problem, fit.theta[rows], ref[rows], tol, max_iter, log_w0=log_w0
        )
        theta[r, rows] = theta_r
        weights[r, keep] = np.exp(log_w)
    return theta, weights


@dataclass
class ModelJackknife:
    """Delete-a-group jackknife over the models of a random-item fit (:func:`model_jackknife`).

    Attributes
    ----------
    group : ndarray of int, shape (N,)
        Each model's group (0 .. G - 1); with at most ``groups`` models, model k is group k
        (delete-one).
    theta : ndarray of shape (G, N)
        Row g: the abilities refitted without group g (on that refit's reporting scale: mean
        0, sd 1 over the others; NaN for the group's models).
    weights : ndarray of shape (G, G_grid)
        Row g: that refit's item-law weights on the fit's grid.
    tol : float
        The refits' EM stopping tolerance.
    data_key : str
        Fingerprint of the scores (that of the random-item fit it was computed from).
    """

    group: np.ndarray
    theta: np.ndarray
    weights: np.ndarray
    tol: float
    data_key: str = ""

    @property
    def n_groups(self) -> int:
        return int(self.theta.shape[0])


def jackknife_groups(
    n_models: int, groups: int, seed: int = 0, order: np.ndarray | None = None
) -> np.ndarray:
    """Group labels (N,) of a delete-a-group jackknife: model k is group k when ``n_models
    <= groups`` (delete-one), else the models of a seeded permutation split into ``groups``
    groups of sizes differing by at most one. ``order`` (:func:`text_order` of the model ids):
    the permutation is of the models in this order, not of their positions."""
    if n_models <= groups:
        return np.arange(n_models)
    permutation = np.random.default_rng(seed).permutation(n_models)
    if order is not None and len(order):
        permutation = np.asarray(order, dtype=np.intp)[permutation]
    label = np.empty(n_models, dtype=np.int64)
    for g, part in enumerate(np.array_split(permutation, groups)):
        label[part] = g
    return label


@single_threaded_blas
def model_jackknife(
    scores: np.ndarray,
    fit: RandomItemsFit,
    sigma: float = 1.0,
    *,
    groups: int = 12,
    seed: int = 0,
    tol: float = 1e-4,
    max_iter: int = 2000,
    trials: int = 1,
    order: np.ndarray | None = None,
) -> ModelJackknife:
    """Delete-a-group jackknife over the models of a random-item fit: the EM redone without
    each group of models (delete-one up to ``groups`` models).

    Refit g drops the models of group g (:func:`jackknife_groups`) and runs the estimator's
    own EM on the fit's grid, from a uniform law as the fit does, with the other abilities
    started at the fit's; its reporting scale is that of the others. New models scored
    against each refit's item law (:func:`latentbench.irt._scoring.score_models`) show how
    much their place on the calibration's scale depends on which models calibrated the items.

    A bootstrap over the models (rows drawn with replacement) is not usable here: copies of a
    model are identical rows, which the item law reads as independent models agreeing on
    every item, and it bends toward that model's response pattern (one model drawn three
    times out of 9 took the others' abilities to a correlation of 0.62 with the fit's on a
    22 x 1000 stress calibration half; leaving models out keeps it at 0.999 or more).

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        The matrix ``fit`` was fitted on (NaN missing; the models that set its scale).
    fit : RandomItemsFit
        Its ``theta`` of shape (N,), ``grid_a``, ``grid_b``.
    sigma : float, default 1.0
    groups : int, default 12
        Largest number of refits (the cost: one EM each).
    seed : int, default 0
        Seed of the grouping (more than ``groups`` models).
    tol : float, default 1e-4
        The refits' EM stopping rule (as :func:`fit_random_items`): the jackknife multiplies
        each refit's deviation by about sqrt(G), convergence noise included (at 3e-3 some
        models' jackknife sd was up to 1.7 times that at 1e-4).
    max_iter : int, default 2000
    trials : int, default 1
    order : ndarray of int, shape (N,), optional
        The models' order for the grouping (:func:`jackknife_groups`; default their
        positions).

    Returns
    -------
    ModelJackknife
    """
    scores = np.asarray(scores, dtype=np.float64)
    N = scores.shape[0]
    label = jackknife_groups(N, groups, seed, order)
    G = int(label.max()) + 1
    grid_a, grid_b = fit.grid_a / sigma, fit.grid_b / sigma
    log_w0 = np.full(grid_a.size, -np.log(grid_a.size))
    theta = np.full((G, N), np.nan)
    weights = np.zeros((G, grid_a.size))
    start = np.asarray(fit.theta, float)
    for g in range(G):
        rows = np.flatnonzero(label != g)
        problem = _Problem(scores[rows], grid_a, grid_b, trials)
        theta_g, log_w, _, _, _ = _run_em(
            problem, start[rows], np.ones(rows.size, bool), tol, max_iter, log_w0=log_w0
        )
        theta[g, rows] = theta_g
        weights[g] = np.exp(log_w)
    return ModelJackknife(label, theta, weights, float(tol))
