"""Item response theory: the cBMM fit of the 2PL and rank-r logistic models."""

from latentbench.irt._cbmm import CBMMFit, fit_cbmm, fit_model_factors, normalise_rank1
from latentbench.irt._model import IRTResult, RankSelection, TwoPL

__all__ = [
    "CBMMFit",
    "IRTResult",
    "RankSelection",
    "TwoPL",
    "fit_cbmm",
    "fit_model_factors",
    "normalise_rank1",
]
