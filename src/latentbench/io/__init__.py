"""Data in and out: the response matrix, ingest and the embedded store."""

from typing import Any

from latentbench.io._files import cells_sha256, file_sha256
from latentbench.io._items import load_items
from latentbench.io._live_snapshot import (
    SnapshotWriter,
    read_snapshot,
    snapshot_path,
    snapshot_summary,
)
from latentbench.io._matrix import MatrixSummary, ResponseMatrix
from latentbench.io._outputs import check_destination, csv_text
from latentbench.io.formats import SOURCES, CanonicalRow, LoadReport, read_results

__all__ = [
    "SOURCES",
    "CanonicalRow",
    "LoadReport",
    "MatrixSummary",
    "ResponseMatrix",
    "SnapshotWriter",
    "Store",
    "cells_sha256",
    "check_destination",
    "csv_text",
    "file_sha256",
    "load_items",
    "read_results",
    "read_snapshot",
    "snapshot_path",
    "snapshot_summary",
]


def __getattr__(name: str) -> Any:
    # The store imports duckdb (~0.15 s); load it on first use only.
    if name == "Store":
        from latentbench.io.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
