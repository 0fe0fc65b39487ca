"""Intervals of detached models: abilities that depend on the prior beyond their sampling error.

A model far from all the others (a broken model near 0 % or 100 % on every item, issue 28's
stress matrices) does not set the reporting scale (:func:`latentbench.irt._objective.
reference_models`), and its own position is weakly identified: it is read off the tails of the
item response curves, i.e. off the discriminations, which with tens of models every item's
prior shrinks. On the 22 x 1000 stress matrix the floor model sits at -9.3 sds of the others
in truth, and the MAP fit puts it at -7.4 (a_sd 0.25, the held-out choice), -8.1 (0.5),
-9.6 (1.0), -11.0 (2.0), each with a sampling se of about 0.3: no sampling interval around
one of them covers. Its interval is therefore a sensitivity interval: the range of its
estimates under every candidate prior of the held-out grid (refits warm-started from the
fit, on the fit's reporting scale), widened by ``z`` times its sampling se on each side.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING

import numpy as np

from latentbench.exceptions import ConvergenceWarning
from latentbench.irt._cbmm import fit_cbmm
from latentbench.irt._fitted import reference_of, trials_of
from latentbench.irt._objective import normalise
from latentbench.irt._priors import Prior

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["prior_sensitivity"]


def prior_sensitivity(result: IRTResult, scores: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The fit's abilities under every other candidate ``a_sd`` of the prior's grid.

    Parameters
    ----------
    result : IRTResult
        A rank-1 MAP fit.
    scores : ndarray of shape (N, J)
        The matrix it was fitted on (NaN = missing).

    Returns
    -------
    thetas : ndarray of shape (n_candidates, N)
        Abilities on the fit's reporting scale (mean 0, sd 1 over the same reference models),
        one row per candidate other than the fit's own ``a_sd``.
    candidates : list of float
        The ``a_sd`` values, in the rows' order.
    """
    selection = result.prior_selection
    grid = list(selection.grid) if selection is not None and selection.grid else []
    grid = grid or list(Prior().a_sd_grid)
    own = selection.a_sd if selection is not None else float("nan")
    candidates = [float(g) for g in grid if not np.isclose(g, own)]
    sigma = float(result.sigma)
    raw = result.raw
    start = (raw.U, raw.V, raw.b) if raw is not None else (result.U, result.V, result.b)
    reference = reference_of(result)
    options = result.options
    out = np.empty((len(candidates), result.shape[0]))
    for row, a_sd in enumerate(candidates):
        penalty = dataclasses.replace(result.penalty, precision_V=1.0 / (a_sd * sigma) ** 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit = fit_cbmm(
                np.asarray(scores, dtype=np.float32),
                rank=1,
                sigma=sigma,
                penalty=penalty.scaled(1.0 / trials_of(result)),
                tol=float(options.get("tol", 1e-6)),
                max_iter=int(options.get("max_iter", 5000)),
                init=start,
                accelerate=bool(options.get("accelerate", True)),
            )
        out[row] = normalise(fit.U, fit.V, fit.b, reference)[0][:, 0]
    return out, candidates
