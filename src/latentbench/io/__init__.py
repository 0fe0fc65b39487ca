"""Data in and out: the response matrix, synthetic generators, ingest and the embedded store."""

from latentbench.io._matrix import MatrixSummary, ResponseMatrix

__all__ = ["MatrixSummary", "ResponseMatrix"]
