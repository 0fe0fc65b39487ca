"""Best-model identification: PULSE and baselines."""

__all__: list[str] = []
