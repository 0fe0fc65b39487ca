"""Item response theory: the cBMM fit of the 2PL and rank-r logistic models."""

from latentbench.irt._cbmm import CBMMFit, fit_cbmm, fit_model_factors, normalise_rank1

__all__ = ["CBMMFit", "fit_cbmm", "fit_model_factors", "normalise_rank1"]
