"""``load_calibration``'s caches keep the provenance of the call (estimate.json's source)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import latentbench
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


def test_a_fit_cached_by_other_code_is_refitted_and_replaced(tmp_path, monkeypatch):
    from latentbench.select import _estimate_calibration as ec

    rng = np.random.default_rng(2)
    Y = (rng.random((10, 30)) < 0.6).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(10)], columns=[f"q{j}" for j in range(30)]
    )
    path = tmp_path / "m.parquet"
    ResponseMatrix.from_wide(frame).to_long().to_parquet(path)
    cache = tmp_path / "cache"
    # an older version of the code stored a different fit under the same content hash
    monkeypatch.setattr(ec, "_code_fingerprint", lambda: "0000000000000000")
    first = load_calibration(path, cache=cache)
    old_file = cache / f"{first.hash}-0000000000000000.npz"
    assert old_file.exists()
    stale = dataclasses.replace(first, b=first.b + 1.0)
    ec._save_npz(stale, old_file)
    _MEMORY.clear()
    assert np.allclose(load_calibration(path, cache=cache).b, first.b + 1.0)  # that code's fit
    # this code: refitted, not the stale entry, which is removed
    monkeypatch.setattr(ec, "_code_fingerprint", lambda: "1111111111111111")
    _MEMORY.clear()
    fresh = load_calibration(path, cache=cache)
    np.testing.assert_allclose(fresh.b, first.b)
    assert fresh.hash == first.hash  # the calibration's identity does not depend on the code
    assert sorted(p.name for p in cache.iterdir()) == [f"{first.hash}-1111111111111111.npz"]


def test_the_code_fingerprint_is_stable_within_a_process():
    from latentbench.select._estimate_calibration import _code_fingerprint

    assert _code_fingerprint() == _code_fingerprint() and len(_code_fingerprint()) == 16


def test_the_same_cells_in_another_item_order_give_the_same_estimate(tmp_path):
    """A store (items in numeric order), a file (ids sorted as strings), a wide file with its
    columns shuffled and a fit of any of them hold the same cells: the estimate draws the
    same items and prints the same interval (0.427 [0.280, 0.634] from the store against
    0.684 [0.466, 0.840] from its own export before: the draws followed the column order)."""
    from latentbench.io import Store
    from latentbench.select import estimate, tiny

    rng = np.random.default_rng(1)
    theta, easy = rng.normal(size=30), rng.normal(size=120)
    Y = (rng.random((30, 120)) < 1 / (1 + np.exp(-(theta[:, None] + easy)))).astype(float)
    models, items = [f"m{i}" for i in range(30)], [str(j) for j in range(120)]
    long = pd.DataFrame(
        [(m, j, Y[a, b]) for a, m in enumerate(models) for b, j in enumerate(items)],
        columns=["model", "item", "score"],
    )
    long.to_csv(tmp_path / "cal.csv", index=False)
    shuffled = rng.permutation(120)
    wide = pd.DataFrame(Y[:, shuffled], columns=[items[k] for k in shuffled])
    wide.insert(0, "model", models)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest_files("table", [tmp_path / "cal.csv"], benchmark="b")
        by_store = store.matrix("b")
    assert by_store.item_ids[:3] == ["0", "1", "2"]  # numeric order, unlike the file's
    new = pd.Series((rng.random(120) < 0.6).astype(float), index=items, name="new")
    kw = dict(budget=40, seed=0, cache=False)
    runs = [estimate(c, new, **kw) for c in (tmp_path / "cal.csv", tmp_path / "wide.csv",
                                              by_store)]  # fmt: skip
    assert runs[0].items == runs[1].items == runs[2].items
    assert (runs[0].lower, runs[0].upper) == (runs[1].lower, runs[1].upper)
    assert (runs[0].lower, runs[0].upper) == (runs[2].lower, runs[2].upper)
    # the same sums in another order: equal to the last bits of a double
    assert runs[0].score == pytest.approx(runs[1].score, rel=1e-12)
    assert runs[0].score == pytest.approx(runs[2].score, rel=1e-12)
    design = [tiny(c, k=20, seed=3)["item"].tolist() for c in (tmp_path / "cal.csv", by_store)]
    assert design[0] == design[1]


def test_a_broken_calibration_model_does_not_set_the_reporting_scale():
    """A calibration model with every answer wrong has no position of its own (the fit's
    penalty stops it): the others have mean 0 and sd 1, as in ``latentbench fit``; before,
    its position compressed them."""
    from latentbench.select._estimate_calibration import from_matrix
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(15, 120, random_state=3)
    scores = data.matrix.scores.astype(float)
    scores[4] = 0.0
    cal = from_matrix(ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids))
    theta = cal.abilities
    others = np.delete(theta, 4)
    np.testing.assert_allclose([others.mean(), others.std()], [0.0, 1.0], atol=1e-9)
    assert theta[4] < others.min()


def test_a_rank_2_calibration_is_centred_over_every_model_as_fit_centres_it():
    """Review: the constant-model rule centred a rank-2 calibration over the other models,
    while ``latentbench fit`` centres rank > 1 factors over every model."""
    from latentbench.select._estimate_calibration import from_matrix
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(15, 120, random_state=3)
    scores = data.matrix.scores.astype(float)
    scores[4] = 0.0
    cal = from_matrix(ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids), rank=2)
    np.testing.assert_allclose(cal.model_factors.mean(axis=0), 0.0, atol=1e-9)


def test_a_cached_calibration_says_what_its_fit_said_on_every_call(tmp_path, monkeypatch):
    """The fit's warnings (here: every item answered alike, an intercept-only fit; and a model
    without any score left out) were said only by the call that fitted: the same command
    again, served from the disk or memory cache, said nothing, and estimate.json never
    recorded them (hostile walk, 2026-12-06)."""
    import warnings

    from latentbench.exceptions import LatentbenchWarning
    from latentbench.select import compare, estimate

    cells = [(f"m{i}", f"q{j}", 1.0) for i in range(6) for j in range(30)]
    cells += [("empty", "q0", None)]
    path = tmp_path / "cal.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_csv(path, index=False)
    answers = pd.Series(np.tile([1.0, 0.0], 15), index=[f"q{j}" for j in range(30)])
    cache = tmp_path / "cache"
    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(cache))  # compare's cache

    def said(call):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = call()
        return result, {
            str(w.message) for w in caught if issubclass(w.category, LatentbenchWarning)
        }

    _, fitted = said(lambda: load_calibration(path, cache=cache))
    assert any("intercept-only" in m for m in fitted), fitted
    assert any("'empty'" in m for m in fitted), fitted
    _, from_memory = said(lambda: load_calibration(path, cache=cache))
    _MEMORY.clear()
    _, from_disk = said(lambda: load_calibration(path, cache=cache))
    assert from_memory >= fitted and from_disk >= fitted
    result, _ = said(lambda: estimate(path, answers.rename("new"), budget=5, cache=cache))
    assert fitted <= set(result.warnings)
    pair, _ = said(lambda: compare(path, answers.rename("a"), (1 - answers).rename("b")))
    assert fitted <= set(pair.warnings)


def test_a_fit_that_fails_still_says_what_it_said_before_failing(tmp_path):
    """The warnings said on the way to a refused calibration (a model without any score left
    out, then too few models) are shown, not swallowed with the error."""
    from latentbench.exceptions import DataWarning, InputError

    path = tmp_path / "cal.csv"
    path.write_text("model,item,score\na,q0,1\na,q1,0\nb,q0,\n")
    with pytest.warns(DataWarning, match=r"left out"), pytest.raises(InputError, match="2 models"):
        load_calibration(path, cache=tmp_path / "cache")


def test_a_fit_directory_says_what_loading_it_said_on_every_call_and_in_the_result(tmp_path):
    """A fit directory's items.csv edited since the fit: said when loaded, but not in
    estimate.json's warnings, and not again by a second call served from memory (hostile
    walk, 2026-12-06)."""
    import warnings

    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.select import estimate

    rng = np.random.default_rng(2)
    Y = (rng.random((10, 30)) < 0.6).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(10)], columns=[f"q{j}" for j in range(30)]
    )
    matrix = ResponseMatrix.from_wide(frame)
    fit = tmp_path / "fit"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the few models' scale: not what is tested
        TwoPL().fit(matrix).save(fit, matrix)
    items = pd.read_csv(fit / "items.csv")
    items.loc[0, "discrimination"] *= 1.5
    items.to_csv(fit / "items.csv", index=False)
    answers = pd.Series(np.tile([1.0, 0.0], 15), index=frame.columns, name="new")
    for _ in range(2):  # loaded, then from memory
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = estimate(fit, answers, budget=5)
        said = [str(w.message) for w in caught if "edited since the fit" in str(w.message)]
        assert said, [str(w.message) for w in caught]
        assert any("edited since the fit" in w for w in result.warnings), result.warnings


def test_a_store_benchmarks_default_split_is_recorded_with_the_estimate(tmp_path):
    """A benchmark of several splits is calibrated on 'test', said in a warning; estimate.json
    neither recorded the warning nor named the split anywhere (hostile walk, 2026-12-06)."""
    import warnings

    from latentbench.io.store import Store
    from latentbench.select import estimate

    rng = np.random.default_rng(0)
    Y = (rng.random((8, 40)) < 0.6).astype(float)
    cells = pd.DataFrame(
        [(f"m{i}", str(j), Y[i, j]) for i in range(8) for j in range(40)],
        columns=["model", "item", "score"],
    )

    def frame(split):
        c = cells.assign(benchmark="b", metric="acc")
        return c.assign(filter="none", trial=0, split=split, source="t", source_file="t",
                        run_timestamp=pd.NaT, item_hash=None, source_model=c["model"],
                        flag=None)  # fmt: skip

    with Store(tmp_path / "s.duckdb") as db:
        db.ingest(frame("test"))
        db.ingest(frame("validation"))
    answers = pd.Series(np.tile([1.0, 0.0], 20), index=[str(j) for j in range(40)], name="new")
    for _ in range(2):  # fitted, then from the cache
        cal = load_calibration(tmp_path / "s.duckdb", benchmark="b", cache=tmp_path / "c")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = estimate(cal, answers, budget=5, cache=tmp_path / "c")
        assert any("using 'test'" in w for w in result.warnings), result.warnings
        said = [str(w.message) for w in caught if "using 'test'" in str(w.message)]
        assert not said, said  # said by load_calibration, not twice


def test_estimating_from_files_does_not_import_the_store(tmp_path):
    """A calibration file and an answers file need no DuckDB (its import is ~0.15 s of every
    ``latentbench estimate``); only a store calibration loads it."""
    rng = np.random.default_rng(3)
    Y = (rng.random((10, 30)) < 0.6).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(10)], columns=[f"q{j}" for j in range(30)]
    )
    long = ResponseMatrix.from_wide(frame).to_long()
    long[long["model"] != "m0"].to_parquet(tmp_path / "calib.parquet")
    long[long["model"] == "m0"].to_parquet(tmp_path / "new.parquet")
    code = (
        "import sys, warnings; warnings.simplefilter('ignore'); import latentbench as lb; "
        f"lb.estimate({str(tmp_path / 'calib.parquet')!r}, {str(tmp_path / 'new.parquet')!r}, "
        f"budget=10, seed=0, cache={str(tmp_path / 'cache')!r}); "
        "print(sorted(m for m in ('duckdb', 'latentbench.io.store') if m in sys.modules))"
    )
    # the package this process imported (src/ in a checkout, the installed copy in CI) with
    # its numba cache: src/ where CI tests an installed copy compiled the estimate's kernels
    # a second time there, which this test does not check
    package_parent = Path(latentbench.__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(package_parent)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
