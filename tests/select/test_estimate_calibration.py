"""``load_calibration``'s caches keep the provenance of the call (estimate.json's source)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd

from latentbench.io import ResponseMatrix
from latentbench.select._estimate_calibration import _MEMORY, load_calibration


def test_the_same_content_under_another_path_is_reported_under_that_path(tmp_path):
    rng = np.random.default_rng(1)
    Y = (rng.random((10, 30)) < 0.6).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(10)], columns=[f"q{j}" for j in range(30)]
    )
    first, second = tmp_path / "a.parquet", tmp_path / "copy.parquet"
    ResponseMatrix.from_wide(frame).to_long().to_parquet(first)
    shutil.copy(first, second)
    cache = tmp_path / "cache"
    one = load_calibration(first, cache=cache)
    from_memory = load_calibration(second, cache=cache)
    _MEMORY.clear()
    from_disk = load_calibration(second, cache=cache)
    assert one.source == str(first)
    assert from_memory.source == from_disk.source == str(second)
    assert from_memory.hash == from_disk.hash == one.hash
    np.testing.assert_array_equal(from_disk.V, one.V)
