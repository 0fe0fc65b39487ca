"""Item response theory: the cBMM fit of the 2PL and rank-r logistic models."""

from latentbench.irt._cbmm import CBMMFit, fit_cbmm
from latentbench.irt._counts import detect_trials
from latentbench.irt._heldout import HeldOutScores, fit_additive, predictive_scores
from latentbench.irt._marginal import MarginalFit, fit_marginal
from latentbench.irt._model import TwoPL
from latentbench.irt._model_factors import fit_model_factors, normalise_rank1
from latentbench.irt._objective import GaussianPenalty
from latentbench.irt._priors import Prior, PriorSelection
from latentbench.irt._reported import reported_abilities
from latentbench.irt._result import CrossValidation, IRTResult, RankSelection
from latentbench.irt._sparse import update_items, update_models
from latentbench.irt.diagnostics import Diagnostics, diagnose
from latentbench.irt.inference import (
    BootstrapResult,
    Uncertainty,
    bootstrap,
    rank_intervals,
    standard_errors,
)

__all__ = [
    "BootstrapResult",
    "CBMMFit",
    "CrossValidation",
    "Diagnostics",
    "GaussianPenalty",
    "HeldOutScores",
    "IRTResult",
    "MarginalFit",
    "Prior",
    "PriorSelection",
    "RankSelection",
    "TwoPL",
    "Uncertainty",
    "bootstrap",
    "detect_trials",
    "diagnose",
    "fit_additive",
    "fit_cbmm",
    "fit_marginal",
    "fit_model_factors",
    "normalise_rank1",
    "predictive_scores",
    "rank_intervals",
    "reported_abilities",
    "standard_errors",
    "update_items",
    "update_models",
]
