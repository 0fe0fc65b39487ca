"""Every warning a Python user sees points at the user's own line.

A fixed ``stacklevel`` points inside latentbench whenever the warning is raised through a
wrapper or another public function (e.g. ``IRTResult.standard_errors`` ->
``irt.inference.standard_errors``); :func:`latentbench._checks.user_stacklevel` walks out of
the package instead. Each test calls one public entry point that warns, from this file, and
checks that every latentbench warning it records names this file (and no library module).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import LatentbenchWarning
from latentbench.io import ResponseMatrix
from latentbench.synthetic import simulate_2pl


def _recorded(call: Callable[[], Any]) -> list[warnings.WarningMessage]:
    """The warnings ``call()`` raises, all of them (none filtered or deduplicated)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def _assert_here(caught: list[warnings.WarningMessage], said: str, *, ours: bool = True) -> None:
    """At least one warning containing ``said``, and every latentbench warning (or, with
    ``ours=False``, every warning from latentbench's own messages: a FutureWarning) recorded
    points at this file."""
    assert any(said in str(w.message) for w in caught), [str(w.message) for w in caught]
    checked = [
        w
        for w in caught
        if (issubclass(w.category, LatentbenchWarning) if ours else said in str(w.message))
    ]
    assert checked
    where = {(w.filename, w.lineno, str(w.message)[:60]) for w in checked if w.filename != __file__}
    assert not where, where


def _matrix(n_models: int = 12, n_items: int = 40, seed: int = 0) -> ResponseMatrix:
    return simulate_2pl(n_models, n_items, random_state=seed).matrix


def _with_constant_model(n_models: int = 12, n_items: int = 40) -> ResponseMatrix:
    matrix = _matrix(n_models, n_items)
    frame = matrix.to_wide()
    frame.iloc[0] = 1.0  # a model at the ceiling: every observed score 1
    return ResponseMatrix.from_wide(frame)


# -- irt ----------------------------------------------------------------------------------------


def test_two_pl_fit_of_a_matrix_with_a_trials_grid():
    # _model._detected_trials: raised two calls below TwoPL.fit
    from latentbench.irt import TwoPL

    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=(10, 30)) / 4.0
    frame = pd.DataFrame(scores, index=[f"m{i}" for i in range(10)])
    frame.columns = [f"q{j}" for j in range(30)]
    matrix = ResponseMatrix.from_wide(frame)
    _assert_here(_recorded(lambda: TwoPL(max_iter=50).fit(matrix)), "read as 4 trials")


def test_two_pl_fit_of_disconnected_models():
    # _model._warn_disconnected
    from latentbench.irt import TwoPL

    frame = _matrix(10, 40).to_wide()
    frame.iloc[:5, 20:] = np.nan
    frame.iloc[5:, :20] = np.nan
    matrix = ResponseMatrix.from_wide(frame)
    _assert_here(_recorded(lambda: TwoPL(max_iter=50).fit(matrix)), "share no item")


def test_standard_errors_with_a_constant_model():
    # irt.inference.standard_errors through IRTResult.standard_errors
    from latentbench.irt import TwoPL

    matrix = _with_constant_model(8, 60)
    fit = TwoPL().fit(matrix)
    _assert_here(_recorded(lambda: fit.standard_errors(matrix)), "ability intervals")


def test_score_models_of_a_small_calibration():
    # irt._scoring through IRTResult.score_models
    from latentbench.irt import TwoPL

    matrix = _matrix(8, 40)
    fit = TwoPL().fit(matrix.subset(models=list(matrix.model_ids[:6])))
    new = matrix.subset(models=list(matrix.model_ids[6:]))
    _assert_here(_recorded(lambda: fit.score_models(new)), "score_models:")


def test_bootstrap_whose_refits_do_not_converge():
    # irt._bootstrap._warn_refits through IRTResult.bootstrap
    from latentbench.irt import TwoPL

    matrix = _matrix(10, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit's own ConvergenceWarning
        fit = TwoPL(prior=None, max_iter=3).fit(matrix)
    caught = _recorded(lambda: fit.bootstrap(matrix, n_boot=2, tol=1e-12, random_state=0))
    _assert_here(caught, "bootstrap refits")


def test_save_of_a_loaded_fit(tmp_path):
    # irt._fitdir.save_fit through IRTResult.save
    from latentbench.irt import IRTResult, TwoPL

    matrix = _matrix(12, 40)
    TwoPL().fit(matrix).save(tmp_path / "fit", matrix)
    loaded = IRTResult.load(tmp_path / "fit")
    _assert_here(_recorded(lambda: loaded.save(tmp_path / "again")), "saved without")


# -- io -----------------------------------------------------------------------------------------


def _long_csv(path, rows):
    pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(path, index=False)
    return path


def test_response_matrix_read_with_repeated_and_missing_rows(tmp_path):
    # io._matrix.ResponseMatrix.from_long through ResponseMatrix.read
    rows = [
        ("a", "q1", 1.0),
        ("a", "q1", 1.0),  # repeated with the same score: collapsed
        ("a", "q2", 0.0),
        ("b", "q1", 0.0),
        ("b", "q2", None),  # missing: unobserved
        ("b", "q3", 1.0),
    ]
    path = _long_csv(tmp_path / "long.csv", rows)
    caught = _recorded(lambda: ResponseMatrix.read(path))
    _assert_here(caught, "repeated (model, item) rows")
    _assert_here(caught, "with a missing score")


def test_response_matrix_read_wide_with_an_empty_column(tmp_path):
    # io._matrix.ResponseMatrix.from_wide through ResponseMatrix.read
    path = tmp_path / "wide.csv"
    columns = {"q1": [1.0, 0.0], "q2": [None, None], "q3": [0.0, 1.0]}
    frame = pd.DataFrame({"model": ["a", "b"], **columns})
    frame.to_csv(path, index=False)
    _assert_here(_recorded(lambda: ResponseMatrix.read(path)), "no observed score left out")


def test_store_ingest_files(tmp_path):
    # io.formats.read_results and Store.ingest, both below Store.ingest_files
    from latentbench.io import Store

    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    pd.DataFrame({"name": ["m1", "m2"], "q0": [1, 0], "q1": [0, 1]}).to_csv(first, index=False)
    pd.DataFrame({"name": ["m3", "m4"], "r0": [1, 0], "r1": [0, 1]}).to_csv(second, index=False)
    with Store(tmp_path / "s.duckdb") as store:
        caught = _recorded(lambda: store.ingest_files("table", [first], benchmark="x"))
        _assert_here(caught, "read as a wide table")
        caught = _recorded(lambda: store.ingest_files("table", [second], benchmark="x"))
        _assert_here(caught, "none of the 2 incoming item ids")


# -- select -------------------------------------------------------------------------------------


def _trials_csv(path, items):
    rows = len(items)
    pd.DataFrame(
        {
            "model": ["new"] * 2 * rows,
            "item": [*items, *items],
            "trial": [0] * rows + [1] * rows,
            "score": np.r_[np.ones(rows), np.zeros(rows)],
        }
    ).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("entry", ["read_responses", "estimate", "estimate_many"])
def test_answers_with_averaged_trials(tmp_path, entry):
    # select._estimate._reduce_key_columns: below read_responses, and deeper below estimate
    # and estimate_many (which read the file themselves)
    from latentbench.select import estimate, estimate_many, read_responses

    matrix = _matrix(12, 40)
    path = _trials_csv(tmp_path / "answers.csv", list(matrix.item_ids[:10]))
    cal = matrix.subset(models=list(matrix.model_ids[1:]))
    calls = {
        "read_responses": lambda: read_responses(path),
        "estimate": lambda: estimate(cal, path, budget=5, cache=False),
        "estimate_many": lambda: estimate_many(cal, path, budget=5, cache=False),
    }
    _assert_here(_recorded(calls[entry]), "several trials")


@pytest.mark.parametrize("entry", ["estimate", "estimate_many"])
def test_answers_to_unknown_items(tmp_path, entry):
    # select._estimate._finish, below estimate and (deeper) below estimate_many
    from latentbench.select import estimate, estimate_many

    matrix = _matrix(12, 40)
    path = tmp_path / "answers.csv"
    items = [*matrix.item_ids[:10], "nowhere-1", "nowhere-2"]
    pd.DataFrame({"model": ["new"] * 12, "item": items, "score": np.ones(12)}).to_csv(
        path, index=False
    )
    cal = matrix.subset(models=list(matrix.model_ids[1:]))
    call = estimate if entry == "estimate" else estimate_many
    caught = _recorded(lambda: call(cal, path, budget=5, cache=False))
    _assert_here(caught, "not in the calibration")


def test_estimate_on_a_calibration_with_an_empty_model():
    # select._estimate_calibration.from_matrix, fitted below estimate
    from latentbench.select import estimate

    matrix = _matrix(12, 40)
    scores = matrix.scores.copy()
    scores[3] = np.nan
    cal = ResponseMatrix(scores, list(matrix.model_ids), list(matrix.item_ids))
    answers = pd.Series(matrix.scores[0], index=matrix.item_ids)
    caught = _recorded(lambda: estimate(cal, answers, model="new", budget=20, cache=False))
    _assert_here(caught, "without any observed score left out of the calibration")


def test_replay_with_missing_zero():
    from latentbench.select import replay

    frame = _matrix(8, 40).to_wide()
    frame.iloc[0, :3] = np.nan
    matrix = ResponseMatrix.from_wide(frame)
    caught = _recorded(
        lambda: replay(matrix, no_history=True, missing="zero", budget=40, random_state=0)
    )
    _assert_here(caught, "missing='zero'")


def test_experiment_from_matrix_with_missing_zero():
    from latentbench.select import experiment_from_matrix
    from latentbench.select._experiment import split_models

    rng = np.random.default_rng(5)
    Y = (rng.random((20, 60)) < np.linspace(0.2, 0.8, 20)[:, None]).astype(np.float64)
    _, test = split_models(20, random_state=0)
    Y[test[0], [7, 40]] = np.nan
    kw: dict[str, Any] = dict(pools="full", policies=["ucbe"], seeds=1, budget=60, batch_size=16)
    kw.update(init_batch=8, pool_size=10, rank=1, n_jobs=1)
    _assert_here(_recorded(lambda: experiment_from_matrix(Y, missing="zero", **kw)), "scored 0")


def test_a_deprecated_policy_option_through_make_policy():
    # select._base.rename_deprecated, below make_policy (a FutureWarning)
    from latentbench.select import make_policy

    caught = _recorded(lambda: make_policy("pulse", {"alpha": 0.1}, where="policy"))
    _assert_here(caught, "deprecated", ours=False)


def test_a_deprecated_option_in_a_live_configuration(tmp_path):
    # select._base.rename_deprecated, below LiveConfig.from_toml
    from latentbench.select import LiveConfig

    (tmp_path / "items.jsonl").write_text('{"id": "q1", "prompt": "1+1?", "answer": "2"}\n')
    models = [
        f'[[models]]\nname = "{m}"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "{m}"\n'
        for m in ("m1", "m2")
    ]
    path = tmp_path / "live.toml"
    path.write_text(
        '[run]\npolicy = "pulse"\nseed = 3\n\n[policy]\nalpha = 0.2\n\n'
        '[items]\npath = "items.jsonl"\n\n[oracle]\nkind = "openai"\n\n' + "\n".join(models)
    )
    _assert_here(_recorded(lambda: LiveConfig.from_toml(path)), "deprecated", ours=False)


@pytest.mark.parametrize("how", ["argument", "attribute"])
def test_the_deprecated_alpha_spelling(how):
    # select._base.resolve_delta below Pulse.__init__, and the alpha property
    from latentbench.select import Pulse

    if how == "argument":
        caught = _recorded(lambda: Pulse(alpha=0.1))
    else:
        policy = Pulse(delta=0.1)
        caught = _recorded(lambda: policy.alpha)
    _assert_here(caught, "deprecated", ours=False)


def test_a_doctest_example_of_a_library_module_is_the_callers_line():
    """A docstring example runs with a copy of its module's globals (its ``__name__`` is
    latentbench's): the example's line, not doctest.py (review of 2026-12-05)."""
    import doctest

    import latentbench.select._base as module

    test = doctest.DocTestParser().get_doctest(
        ">>> resolve_delta(None, 0.1)\n0.1\n",
        dict(vars(module)),
        "latentbench.select._base.example",
        "example.py",
        0,
    )
    caught = _recorded(lambda: doctest.DocTestRunner().run(test))
    said = [w for w in caught if "alpha is deprecated" in str(w.message)]
    assert said and all(w.filename.startswith("<doctest latentbench.") for w in said), [
        w.filename for w in said
    ]


def test_python_c_from_inside_the_package_folder_is_the_callers_line():
    """``<string>`` is not a path: run from inside latentbench's own folder it was resolved
    against the working directory, taken for library code, and the warning said ``sys:1``."""
    import subprocess
    import sys

    import latentbench.irt

    folder = Path(latentbench.irt.__file__).parent
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c",
         "from latentbench.select._base import resolve_delta; resolve_delta(None, 0.1)"],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "<string>:1: FutureWarning: alpha is deprecated" in out.stderr, out.stderr


def test_the_bootstraps_refit_warnings_keep_their_category():
    """Refits' warnings travel from the workers by name; re-emitted, each keeps its category
    (a LatentbenchWarning filter missed them as plain UserWarnings)."""
    from latentbench.exceptions import DataWarning
    from latentbench.irt._bootstrap import _warn_refits

    raised = {"DataWarning: a": 2, "RuntimeWarning: overflow": 1, "NoSuchName: b": 1}
    caught = _recorded(lambda: _warn_refits(np.ones(3, dtype=bool), raised, 1e-6))
    category = {str(w.message).rsplit(": ", 1)[-1]: w.category for w in caught}
    assert category == {"a": DataWarning, "overflow": RuntimeWarning, "b": UserWarning}
    assert all(w.filename == __file__ for w in caught)
