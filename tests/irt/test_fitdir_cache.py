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


def test_a_fit_saved_by_a_version_with_another_bootstrap_limit_recomputes(tmp_path, monkeypatch):
    """A fit of 31-100 models saved before 2026-12-08 (item bootstrap limit 30 models) holds a
    random-item fit without replicates: reused, its report's intervals were the law-fixed ones
    where a refit of the same matrix gives the bootstrapped ones. It is not reused now."""
    import latentbench.irt._fitted as fitted

    data = simulate_2pl(32, 40, random_state=4)
    monkeypatch.setattr(fitted, "ITEM_BOOTSTRAP_MAX_MODELS", 30)  # the version before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(data.matrix)
        result.save(tmp_path, data.matrix)
    assert result.random_items is not None and result.random_items.n_boot == 0
    monkeypatch.setattr(fitted, "ITEM_BOOTSTRAP_MAX_MODELS", 100)
    loaded = IRTResult.load(tmp_path)
    assert loaded.random_items is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = loaded.standard_errors(data.matrix)
    assert again.method == "random-item marginal likelihood + item bootstrap"  # as a refit's
    # saved by this version: reused (the replicates where the rule runs them)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded.save(tmp_path / "now", data.matrix)
    assert IRTResult.load(tmp_path / "now").random_items.n_boot == fitted.ITEM_BOOTSTRAP
