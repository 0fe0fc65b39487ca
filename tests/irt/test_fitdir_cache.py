"""The random-item fit behind the ability intervals is kept with the fit directory: a report of
the directory reuses it (no second EM), and a changed or stale file is never read."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.irt import IRTResult, TwoPL
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    warnings.simplefilter("ignore")
    data = simulate_2pl(24, 300, random_state=3)
    result = TwoPL().fit(data.matrix)
    out = tmp_path_factory.mktemp("fit")
    result.save(out, data.matrix)
    return data.matrix, result, out


def _no_em(*args, **kwargs):
    raise AssertionError("the random-item EM ran again")


def test_saved_random_item_fit_is_reused_with_identical_intervals(saved, monkeypatch):
    matrix, result, out = saved
    entry = json.loads((out / "fit.json").read_text())["ability_intervals"]["random_items"]
    assert (out / entry["file"]).exists()
    loaded = IRTResult.load(out)
    monkeypatch.setattr("latentbench.irt._fitted.fit_random_items", _no_em)
    again = loaded.standard_errors(matrix)
    pd.testing.assert_frame_equal(again.abilities, result.standard_errors(matrix).abilities)


def test_changed_or_other_data_recomputes(saved, tmp_path):
    matrix, _, out = saved
    copy = tmp_path / "fit"
    copy.mkdir()
    for path in out.iterdir():
        copy.joinpath(path.name).write_bytes(path.read_bytes())
    npz = copy / "random_items.npz"
    blob = bytearray(npz.read_bytes())
    blob[-10] ^= 0xFF  # tampered: its SHA-256 no longer matches fit.json's
    npz.write_bytes(bytes(blob))
    assert IRTResult.load(copy).random_items is None
    # another matrix of the same shape and ids: the cache's data key differs, so it refits
    loaded = IRTResult.load(out)
    scores = matrix.scores.copy()
    scores[0, :5] = 1.0 - np.nan_to_num(scores[0, :5])
    other = type(matrix)(scores, matrix.model_ids, matrix.item_ids)
    calls = []
    import latentbench.irt._fitted as fitted

    original = fitted.fit_random_items

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    try:
        fitted.fit_random_items = counting
        loaded.standard_errors(other)
    finally:
        fitted.fit_random_items = original
    assert calls == [1]
