"""Self-checks of the ability intervals: is the random-item likelihood valid on this matrix?

The random-item marginal likelihood (:mod:`latentbench.irt._random_items`) gives the default
ability intervals of a rank-1 MAP fit with few models. It has validity conditions, and a
matrix can leave them without any error being raised (issue 28: on a 22 x 2854 matrix with a
model at 1.5 % accuracy the item law put 56 % of its mass on the grid's largest
discrimination, and every model's interval excluded the fit's ability). These checks detect
it; :func:`latentbench.irt.inference.standard_errors` then falls back to the joint Laplace
intervals centred on the fit's ability, with one warning naming the reasons, and records the
values (``Uncertainty.checks``, ``fit.json``'s ``ability_intervals``). The ``disagreement``
check is handled apart (below):

- ``edge_mass``: the law's weight on the largest discrimination of its grid after every
  widening (limit :data:`~latentbench.irt._random_items.EDGE_INVALID`, 5 %): items behaving
  as steps, no interior maximum in ``a``;
- ``disagreement``: the largest ``|theta_marginal - theta_fit| / sqrt(se_marginal^2 +
  se_laplace^2)`` over the models (limit :data:`DISAGREEMENT`): the two estimates differ by
  more than their own uncertainty allows for a bias correction of the size the method
  exists for (at most 4.2 on the shared matrices; 9.6-12.5 on the stress matrices of
  :func:`latentbench.synthetic.simulate_stress` while their broken models set the scale
  and sat in the random-item fit, about 1 since they are detached). Over the reference
  models only: a detached model is left out of the random-item fit and gets its own
  interval (:mod:`latentbench.irt._detached`). Not a reason to leave the random-item
  likelihood (``AbilityChecks.disagrees``): where it fired (AlpacaEval 2 calibration halves,
  3 of 70 replicas, benchmarks/RESULTS_diag28.md) the random-item intervals with the item
  bootstrap covered 0.943 and the joint Laplace ones 0.690 (0.65 on every replica of that
  matrix). :func:`~latentbench.irt.inference.standard_errors` keeps the random-item intervals
  where the item bootstrap carries the item law's own error, and otherwise widens each to
  the union with the joint Laplace interval around the fit's ability; it warns either way;
- ``min_information``: the smallest eigenvalue of the marginal information on the
  non-gauge directions, relative to its largest (limit :data:`MIN_RELATIVE_EIGENVALUE`), and
  non-finite or zero standard errors: Hessian trouble;
- ``constant_models``: models of the law at the floor or the ceiling, every observed score 0
  or every one 1: their marginal likelihood has no finite maximum. The law is fitted without
  them (:func:`latentbench.irt._fitted.random_items_fit`; they get their exact posterior
  interval, :func:`latentbench.irt.inference.standard_errors` records them under the same
  key), so this fires only for a law given such models directly. (``extreme_models``, those
  within :data:`EXTREME` of 0 or 1, are recorded, not a reason: AlpacaEval 2 has three, and its
  random-item intervals cover, 0.934 in parametric replicas.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latentbench.irt._random_items import EDGE_INVALID, RandomItemsFit

__all__ = ["DISAGREEMENT", "EXTREME", "MIN_RELATIVE_EIGENVALUE", "AbilityChecks", "check"]

DISAGREEMENT = 6.0
"""Largest allowed ``|theta_marginal - theta_fit| / sqrt(se_marginal^2 + se_laplace^2)``."""

EXTREME = 0.02
"""A model whose observed mean score is below this, or above one minus this, is at the floor /
ceiling."""

MIN_RELATIVE_EIGENVALUE = 1e-10
"""Smallest allowed eigenvalue of the marginal information (non-gauge directions) relative to
its largest."""


@dataclass
class AbilityChecks:
    """The values of the checks and the reasons (empty: the random-item intervals are valid).

    Attributes
    ----------
    values : dict
        ``edge_mass``, ``grid_top``, ``disagreement``, ``min_information``,
        ``constant_models`` and ``extreme_models`` (their ids), ``converged``.
    reasons : list of str
        One phrase per failed check that invalidates the random-item likelihood, e.g.
        ``"the item law piles up at the grid's largest discrimination (45% of its mass at
        a = 11.3)"``.
    disagreement : str or None
        The phrase of the ``disagreement`` check when it fires (the marginal and the fit's
        abilities differ beyond their own uncertainty), else None; not among ``reasons``.
    """

    values: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    disagreement: str | None = None

    @property
    def disagrees(self) -> bool:
        """Whether the marginal and the fit's abilities disagree beyond their uncertainty."""
        return self.disagreement is not None

    @property
    def valid(self) -> bool:
        return not self.reasons


def check(
    law: RandomItemsFit,
    theta_fit: np.ndarray,
    se_laplace: np.ndarray,
    scores: np.ndarray,
    model_ids: list[str],
    reference: np.ndarray | None = None,
) -> AbilityChecks:
    """Run the checks on a random-item fit against the fit's abilities and Laplace SEs.

    Parameters
    ----------
    law : RandomItemsFit
    theta_fit : ndarray of shape (N,)
        The fit's (MAP) abilities on the reporting scale.
    se_laplace : ndarray of shape (N,)
        Their joint Laplace standard errors.
    scores : ndarray of shape (N, J)
        The fitted matrix (NaN missing).
    model_ids : list of str
    reference : ndarray of bool, shape (N,), optional
        The models that set the reporting scale; the detached ones (outside it) are left out
        of the se and disagreement checks (they get their own intervals,
        :mod:`latentbench.irt._detached`). Default: every model.

    Returns
    -------
    AbilityChecks
    """
    out = AbilityChecks()
    v = out.values
    v["edge_mass"] = float(law.edge_mass)
    v["grid_top"] = float(law.grid_top)
    v["converged"] = bool(law.converged)
    if law.edge_mass > EDGE_INVALID:
        out.reasons.append(
            f"the item law piles up at its grid's largest discrimination ({law.edge_mass:.0%} "
            f"of its mass at a = {law.grid_top:.3g}, limit {EDGE_INVALID:.0%})"
        )
    observed = ~np.isnan(scores)
    with_cells = observed.any(axis=1)  # models without a cell: the prior's interval (flagged)
    data = with_cells if reference is None else with_cells & np.asarray(reference, bool)
    se = law.se[data]
    if not np.all(np.isfinite(se)) or np.any(se <= 0):
        v["min_information"] = 0.0
        out.reasons.append("the marginal information is singular (a zero or undefined se)")
    else:
        cov = law.covariance[np.ix_(data, data)]
        eig = np.linalg.eigvalsh(0.5 * (cov + cov.T))
        # the standardisation's two gauge directions have zero variance: drop them
        eig = np.sort(eig)[2:] if eig.size > 2 else eig
        ratio = float(eig.min() / eig.max()) if eig.size and eig.max() > 0 else 0.0
        v["min_information"] = ratio
        if ratio < MIN_RELATIVE_EIGENVALUE:
            out.reasons.append(
                f"the marginal information is near singular (eigenvalue ratio {ratio:.1e})"
            )
    gap = np.full(theta_fit.size, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):  # an undefined se: reported above
        gap[data] = np.abs(law.theta - theta_fit)[data] / np.sqrt(se**2 + se_laplace[data] ** 2)
    finite = np.isfinite(gap)
    if finite.any():
        v["disagreement"] = float(gap[finite].max())
    else:  # no model with data (0), or no finite se for any (undefined)
        v["disagreement"] = float("nan") if data.any() else 0.0
    if v["disagreement"] > DISAGREEMENT:
        worst = int(np.nanargmax(gap))
        out.disagreement = (
            f"the marginal and the fit's abilities disagree beyond their uncertainty "
            f"({v['disagreement']:.1f} combined se for {model_ids[worst]!r}, limit "
            f"{DISAGREEMENT:g})"
        )
    n = observed.sum(axis=1)
    mean = np.where(observed, scores, 0.0).sum(axis=1) / np.maximum(n, 1)
    near = with_cells & ((mean < EXTREME) | (mean > 1 - EXTREME))
    v["extreme_models"] = [model_ids[i] for i in np.flatnonzero(near)]
    low = np.where(observed, scores, np.inf).min(axis=1)
    high = np.where(observed, scores, -np.inf).max(axis=1)
    constant = data & (low == high) & ((low == 0) | (low == 1))
    v["constant_models"] = [model_ids[i] for i in np.flatnonzero(constant)]
    if constant.any():
        names = ", ".join(repr(model_ids[i]) for i in np.flatnonzero(constant)[:3])
        out.reasons.append(
            f"{int(constant.sum())} model(s) at the floor or ceiling ({names}: every observed "
            "score 0, or every one 1; no finite marginal estimate)"
        )
    return out
