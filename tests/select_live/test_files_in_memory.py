"""Where these tests' files go: in memory where the system has a memory-backed folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

RAM = Path("/dev/shm")


def test_the_stores_of_these_tests_are_written_to_memory(tmp_path, basetemp_chosen):
    """A live run commits every paid cell, and each commit syncs the store's file: on the
    disk of the suite's machines the tests of this folder waited for it longer than they
    computed (test_estimate_live.py: 24-32 s of wall time, 15 s with the files in memory).
    ``tmp_path`` here is a folder in memory, its own, removed after the test."""
    usable = (
        RAM.is_dir()
        and os.access(RAM, os.W_OK | os.X_OK)
        and shutil.disk_usage(RAM).free >= 1 << 30
    )
    if not usable or basetemp_chosen:  # (xdist's per-worker --basetemp is not the user's)
        pytest.skip("no usable memory-backed folder, or --basetemp given")
    assert tmp_path.is_relative_to(RAM), tmp_path
    assert tmp_path.is_dir() and not any(tmp_path.iterdir())
