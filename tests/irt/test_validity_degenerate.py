"""The validity checks on a degenerate fit (two models): numpy says nothing, the library says
why in its own warning."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from latentbench.exceptions import LatentbenchWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt.inference import standard_errors


def test_two_models_raise_no_numpy_warning_only_the_fallback():
    rng = np.random.default_rng(3)
    Y = (rng.random((2, 400)) < np.array([[0.74], [0.68]])).astype(float)
    frame = pd.DataFrame(Y, index=["a", "b"], columns=[f"q{j}" for j in range(400)])
    matrix = ResponseMatrix.from_wide(frame)
    result = TwoPL().fit(matrix)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        uncertainty = standard_errors(result, matrix)
    foreign = [f"{w.category.__name__}: {w.message}" for w in caught
               if not issubclass(w.category, LatentbenchWarning)]  # fmt: skip
    assert foreign == []
    assert any("outside its validity" in str(w.message) for w in caught)
    assert np.all(np.isfinite(uncertainty.abilities["se"].to_numpy(float)))
