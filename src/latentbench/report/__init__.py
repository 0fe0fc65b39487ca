"""Figures and HTML reports."""

__all__: list[str] = []
