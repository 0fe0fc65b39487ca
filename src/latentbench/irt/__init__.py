"""Item response theory: the cBMM fit of the 2PL and rank-r logistic models."""

from latentbench.irt._cbmm import CBMMFit, fit_cbmm, fit_model_factors, normalise_rank1
from latentbench.irt._model import IRTResult, RankSelection, TwoPL
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
    "Diagnostics",
    "IRTResult",
    "RankSelection",
    "TwoPL",
    "Uncertainty",
    "bootstrap",
    "diagnose",
    "fit_cbmm",
    "fit_model_factors",
    "normalise_rank1",
    "rank_intervals",
    "standard_errors",
]
