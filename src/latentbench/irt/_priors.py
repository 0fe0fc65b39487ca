"""Priors of the default (MAP) fit and the choice of their hyperparameters from the data.

The default model is the 2PL / rank-r logistic model with Gaussian priors, fitted at its
posterior mode by the same cBMM engine as joint maximum likelihood (the priors enter as a
:class:`~latentbench.irt._objective.GaussianPenalty`, so every block update stays closed form)::

    theta_i ~ N(0, theta_sd^2)               (fixes the scale of abilities; default 1)
    a_j     ~ N(a_mean, a_sd^2), a_j >= 0    (truncated normal; a_mean fixes the scale of a)
    b_j     ~ N(b_mean, b_sd^2)

all in units of the link temperature sigma. ``"auto"`` hyperparameters come from the data:

- ``b_mean``, ``b_sd``: the mean and sd of the item logits ``sigma logit(p_j)`` (p_j the item's
  mean score), scaled up by ``sqrt(1 + pi / 8)``: averaging the logistic curve over abilities
  ``N(0, 1)`` with a = 1 flattens item logits by about that factor (the probit approximation),
  so the intercepts spread wider than the item logits.
- ``a_sd``: held-out choice. A fraction of the observed cells (10%) is hidden, the model is
  fitted on the rest for every value in ``a_sd_grid`` and the value with the lowest held-out
  log-loss is kept. With many models the data outweigh any of these priors and the held-out
  choice costs several fits, so above ``heldout_max_models`` models the middle of the grid is
  used without a search.

Changing the priors touches this module (the family and the hyperparameters) and, for a new
kind of penalty, :mod:`latentbench.irt._objective`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from latentbench._checks import user_stacklevel
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._cells import ObservedCells
from latentbench.io._margins import dense_margins
from latentbench.irt._heldout import (
    cell_log_loss,
    fit_additive_converged,
    heldout_cells,
    heldout_mask,
    predictive_scores,
)
from latentbench.irt._objective import GaussianPenalty, sigmoid

__all__ = ["Prior", "PriorSelection", "resolve_prior"]

Auto = Literal["auto"]


@dataclass(frozen=True)
class Prior:
    """Gaussian priors of the MAP fit (units of sigma); see the module notes.

    Parameters
    ----------
    theta_sd : float, default 1.0
        Prior sd of the abilities (of every factor for rank > 1).
    a_mean : float, default 1.0
        Prior mean of the discriminations (every loading for rank > 1).
    a_sd : float or "auto", default "auto"
        Prior sd of the discriminations; ``"auto"``: held-out choice among ``a_sd_grid``.
    b_mean, b_sd : float or "auto", default "auto"
        Prior mean and sd of the intercepts; ``"auto"``: from the item means.
    a_sd_grid : tuple of float, default (0.25, 0.5, 1.0, 2.0)
        Candidates of the held-out choice.
    heldout_fraction : float, default 0.1
    heldout_max_models : int, default 500
        Above this many models the held-out search is skipped (``a_sd`` = the grid's middle).
    """

    theta_sd: float = 1.0
    a_mean: float = 1.0
    a_sd: float | Auto = "auto"
    b_mean: float | Auto = "auto"
    b_sd: float | Auto = "auto"
    a_sd_grid: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)
    heldout_fraction: float = 0.1
    heldout_max_models: int = 500

    def __post_init__(self) -> None:
        for name in ("theta_sd", "a_sd", "b_sd"):
            value = getattr(self, name)
            if value != "auto" and not (isinstance(value, (int, float)) and value > 0):
                raise InputError(f"Prior {name}={value!r}; expected a positive number or 'auto'")
        if not isinstance(self.a_mean, (int, float)) or self.a_mean < 0:
            raise InputError(f"Prior a_mean={self.a_mean!r}; expected a nonnegative number")
        if not self.a_sd_grid or any(not v > 0 for v in self.a_sd_grid):
            raise InputError(f"Prior a_sd_grid={self.a_sd_grid!r}; expected positive numbers")

    def penalty(self, sigma: float, a_sd: float, b_mean: float, b_sd: float) -> GaussianPenalty:
        """The penalty (negative log prior) for resolved hyperparameters.

        Parameters
        ----------
        sigma : float
            The logistic scale; the item priors are in units of it.
        a_sd : float
            Prior sd of the discriminations (resolved: not ``"auto"``).
        b_mean : float
            Prior mean of the easiness.
        b_sd : float
            Prior sd of the easiness.

        Returns
        -------
        GaussianPenalty
            Precisions ``1 / theta_sd^2``, ``1 / (a_sd sigma)^2`` and ``1 / (b_sd sigma)^2``;
            means 0, ``a_mean sigma`` and ``b_mean sigma``.
        """
        return GaussianPenalty(
            precision_U=1.0 / self.theta_sd**2,
            precision_V=1.0 / (a_sd * sigma) ** 2,
            precision_b=1.0 / (b_sd * sigma) ** 2,
            mean_V=self.a_mean * sigma,
            mean_b=b_mean * sigma,
        )


@dataclass(frozen=True)
class PriorSelection:
    """How the prior's hyperparameters were chosen.

    Attributes
    ----------
    a_sd, b_mean, b_sd : float
        The values used (units of sigma).
    grid : list of float
        Candidates of ``a_sd`` tried on held-out cells (empty when not searched).
    heldout_log_loss : list of float
        Mean held-out log-loss of each candidate.
    additive_log_loss : float
        The additive model's (``logit p = c_i + b_j``) mean log-loss on the same held-out
        cells (NaN when not searched): the fit's own check of the 2PL against the simplest
        model that explains the data by model and item means alone.
    edge : {"lower", "upper"} or None
        Which end of the (final) grid the chosen ``a_sd`` is at; None inside it or when not
        searched.
    edge_z : float
        At an edge: how much better the edge predicts the held-out cells than its neighbour,
        in paired standard errors of the per-cell log-loss difference (NaN inside the grid).
    extended : list of float
        Values added beyond the grid because its edge predicted better than its neighbour by
        more than :data:`EDGE_Z` standard errors (at most :data:`EDGE_STEPS`, each a
        doubling or halving); also in ``grid``.
    additive_converged : bool
        False when the additive model behind ``additive_log_loss`` stopped at its iteration
        limit before converging (warned by the fit; its log-loss is from the last iterate);
        True otherwise, also when it was not fitted.
    """

    a_sd: float
    b_mean: float
    b_sd: float
    grid: list[float] = field(default_factory=list)
    heldout_log_loss: list[float] = field(default_factory=list)
    additive_log_loss: float = field(default=float("nan"), compare=False)  # a diagnostic
    edge: Literal["lower", "upper"] | None = field(default=None, compare=False)
    edge_z: float = field(default=float("nan"), compare=False)
    extended: list[float] = field(default_factory=list, compare=False)
    additive_converged: bool = field(default=True, compare=False)


def item_prior_moments(scores: npt.NDArray[np.floating] | ObservedCells) -> tuple[float, float]:
    """(b_mean, b_sd) in units of sigma from the item means (see the module notes).

    ``scores``: dense (N, J) with NaN for missing, or the observed cells (no dense array)."""
    if isinstance(scores, ObservedCells):
        n, total = scores.col_counts(), scores.col_sums()
    else:
        margins = dense_margins(scores)
        n, total = margins.col_count, margins.col_sum
    keep = n > 0
    eps = 0.5 / (n[keep] + 1)
    p = np.clip(total[keep] / n[keep], eps, 1 - eps)
    item_logit = np.log(p) - np.log1p(-p)
    inflate = float(np.sqrt(1.0 + np.pi / 8.0))
    sd = float(item_logit.std()) if item_logit.size > 1 else 1.0
    return float(item_logit.mean()) * inflate, max(sd, 0.1) * inflate


FitFunction = Callable[
    [npt.NDArray[np.float32] | ObservedCells, GaussianPenalty],
    tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]],
]


def resolve_prior(
    prior: Prior,
    scores: npt.NDArray[np.floating] | ObservedCells,
    sigma: float,
    fit: FitFunction,
    random_state: int | np.random.Generator | None = None,
    ids: tuple[Sequence[str], Sequence[str]] | None = None,
) -> tuple[GaussianPenalty, PriorSelection]:
    """Resolve ``"auto"`` hyperparameters on ``scores`` and return the penalty.

    Parameters
    ----------
    prior : Prior
    scores : ndarray of shape (N, J) or ObservedCells
        Dense scores (NaN missing) or the observed cells; with cells nothing dense is built
        (the held-out search hides the same cells either way).
    sigma : float
    fit : callable(train_scores, penalty) -> (U, V, b)
        Fits the model on a matrix with cells hidden (used by the held-out choice of a_sd); it
        receives the same kind (dense or cells) as ``scores``.
    random_state : int, Generator or None
        Seed of the held-out mask (default 0: the choice is deterministic).
    ids : (model_ids, item_ids), optional
        The matrix's ids: the held-out cells are drawn in their order (:func:`heldout_mask`),
        so the same cells under another order of the rows or columns give the same prior.
    """
    b_mean_auto, b_sd_auto = item_prior_moments(scores)
    b_mean = b_mean_auto if prior.b_mean == "auto" else float(prior.b_mean)
    b_sd = b_sd_auto if prior.b_sd == "auto" else float(prior.b_sd)
    if prior.a_sd != "auto":
        a_sd = float(prior.a_sd)
        return prior.penalty(sigma, a_sd, b_mean, b_sd), PriorSelection(a_sd, b_mean, b_sd)
    grid = sorted(float(v) for v in prior.a_sd_grid)
    if scores.shape[0] > prior.heldout_max_models or len(grid) == 1:
        a_sd = grid[len(grid) // 2]
        return prior.penalty(sigma, a_sd, b_mean, b_sd), PriorSelection(a_sd, b_mean, b_sd)
    seed = 0 if random_state is None else random_state
    train: npt.NDArray[np.float32] | ObservedCells
    if isinstance(scores, ObservedCells):
        train, rows, cols, truth = heldout_cells(scores, prior.heldout_fraction, seed, ids)
    else:
        train, rows, cols = heldout_mask(scores, prior.heldout_fraction, seed, ids)
        truth = np.asarray(scores[rows, cols], dtype=float)

    def held_out(a_sd: float) -> tuple[float, npt.NDArray[np.float64]]:
        U, V, b = fit(train, prior.penalty(sigma, a_sd, b_mean, b_sd))
        p = sigmoid((np.einsum("nk,nk->n", U[rows], V[cols]) + b[cols]) / sigma)
        cells = cell_log_loss(p, truth)
        return float(np.mean(cells)), cells

    losses, cells = (list(pair) for pair in zip(*(held_out(a) for a in grid), strict=True))
    edge, edge_z, extended = _extend_at_edge(grid, losses, cells, held_out)
    a_sd = grid[int(np.argmin(losses))]
    additive, converged = float("nan"), True
    # the additive model is fitted on a dense array: a sparse matrix's training cells are
    # made one up to ADDITIVE_DENSE_CELLS cells (it was skipped on every sparse matrix, and
    # `fit` printed 'additive model -' without a reason: 30 x 400 with 85% missing)
    dense_train = train
    if isinstance(train, ObservedCells) and train.shape[0] * train.shape[1] <= (
        ADDITIVE_DENSE_CELLS
    ):
        dense_train = train.to_dense()
    if not isinstance(dense_train, ObservedCells):
        c, b_add, converged = fit_additive_converged(dense_train)
        additive = predictive_scores(sigmoid(c[rows] + b_add[cols]), truth).log_loss
    selection = PriorSelection(
        a_sd,
        b_mean,
        b_sd,
        grid,
        losses,
        additive,
        edge=edge,
        edge_z=edge_z,
        extended=extended,
        additive_converged=converged,
    )
    return prior.penalty(sigma, a_sd, b_mean, b_sd), selection


ADDITIVE_DENSE_CELLS = 20_000_000
"""Largest dense array (cells, float32: 80 MB) the held-out check's additive model builds from
a sparse matrix's training cells; above it the check has no additive model (``fit.json``'s
``heldout_check`` says why)."""

EDGE_Z = 2.0
"""Paired standard errors by which a grid edge must predict the held-out cells better than its
neighbour for the grid to be extended past it: below it the edge is as good as its neighbour
within the noise of the held-out cells (AlpacaEval 2 chooses 2.0 over 1.0 by 1.1 standard
errors), and the choice stands (recorded as ``edge``)."""

EDGE_STEPS = 3
"""Most values added past an edge (each doubling or halving ``a_sd``): 16 above the default
grid, 1/32 below it."""


def _extend_at_edge(
    grid: list[float],
    losses: list[float],
    cells: list[npt.NDArray[np.float64]],
    held_out: Callable[[float], tuple[float, npt.NDArray[np.float64]]],
) -> tuple[Literal["lower", "upper"] | None, float, list[float]]:
    """Extend ``grid`` (with ``losses`` and ``cells``, in place) past an edge that predicts the
    held-out cells better than its neighbour by more than :data:`EDGE_Z` paired standard
    errors, at most :data:`EDGE_STEPS` times; said in one warning when it does. Returns the
    final choice's edge (None inside), its ``z`` against its neighbour and the added values."""
    extended: list[float] = []
    edge: Literal["lower", "upper"] | None
    while True:
        k = int(np.argmin(losses))
        if 0 < k < len(grid) - 1 or len(grid) < 2:
            edge, z = None, float("nan")
            break
        edge = "lower" if k == 0 else "upper"
        diff = cells[1 if k == 0 else k - 1] - cells[k]
        # one held-out cell has no standard error, and a tie (every cell's difference 0)
        # no advantage: neither extends the grid (both read as z infinite: three steps, and
        # the warning's "inf standard errors"); a constant advantage on several cells does
        se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else float("nan")
        if se > 0:
            z = float(diff.mean() / se)
        elif se == 0:
            z = float("inf") if diff.mean() > 0 else 0.0
        else:
            z = float("nan")
        if not z > EDGE_Z or len(extended) == EDGE_STEPS:
            break
        value = grid[0] / 2 if k == 0 else grid[-1] * 2
        loss, cell = held_out(value)
        at = 0 if k == 0 else len(grid)
        grid.insert(at, value)
        losses.insert(at, loss)
        cells.insert(at, cell)
        extended.append(value)
    if extended:
        # the values were added past one edge: the last one is now the grid's end there
        first = "lowest" if extended[-1] == grid[0] else "highest"
        shown = ", ".join(f"{v:g}" for v in extended)
        still = (
            f"; the {edge} end still predicts better than its neighbour ({z:.1f} standard "
            "errors): the data ask for a prior outside this range (give Prior(a_sd=...))"
            if edge is not None and z > EDGE_Z
            else ""
        )
        warnings.warn(
            f"prior: the held-out log-loss still fell at the {first} a_sd of the grid, so "
            f"a_sd {shown} {'was' if len(extended) == 1 else 'were'} tried too and "
            f"{grid[int(np.argmin(losses))]:g} was chosen{still} (fit.json: prior_selection)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    return edge, z, extended
