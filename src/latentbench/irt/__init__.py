"""Item response theory: the cBMM fit of the 2PL and rank-r logistic models."""

__all__: list[str] = []
