"""The IRT twins of ``latentbench fit`` (the hostile walk of 2026-12-05)."""

from __future__ import annotations

import pytest

from latentbench.exceptions import InputError
from latentbench.irt import TwoPL
from latentbench.synthetic import simulate_2pl


def test_an_l2_with_the_default_prior_is_refused_as_the_command_refuses_it():
    # F3: TwoPL(l2=1.0).fit(m) gave the default fit and recorded l2=None, silently
    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with pytest.raises(InputError, match=r"l2=1\.0 with prior='auto'.*expected prior=None"):
        TwoPL(l2=1.0).fit(matrix)
    with pytest.raises(InputError, match=r"l2=1\.0"):
        TwoPL(l2=1.0).validate()
    assert TwoPL(prior=None, l2=1.0).fit(matrix).options["l2"] == 1.0
    assert TwoPL().fit(matrix).options["l2"] is None  # the default still fits


def test_save_without_a_matrix_uses_the_one_the_result_keeps(tmp_path):
    # F4: result.save(dir) wrote no intervals, no random_items.npz and no input, silently,
    # though result.matrix was kept for exactly this
    import warnings

    from latentbench.exceptions import DataWarning
    from latentbench.irt import IRTResult

    path = tmp_path / "m.csv"
    simulate_2pl(20, 120, random_state=0).matrix.to_wide().rename_axis("model").to_csv(path)
    from latentbench.io import ResponseMatrix

    matrix = ResponseMatrix.read(path)
    result = TwoPL().fit(matrix)
    full = result.save(tmp_path / "full", matrix)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*saved without")  # nothing left out
        short = result.save(tmp_path / "short")
    assert sorted(p.name for p in full.values()) == sorted(p.name for p in short.values())
    assert short["abilities"].read_text() == full["abilities"].read_text()
    assert {"lower", "upper", "se"} <= set(short["abilities"].read_text().splitlines()[0]
                                           .replace('"', "").split(","))  # fmt: skip
    loaded = IRTResult.load(tmp_path / "full")  # keeps no matrix: what is left out is said
    with pytest.warns(DataWarning, match="saved without the fitted matrix") as caught:
        loaded.save(tmp_path / "again")
    assert caught[0].filename == __file__


def test_reprs_are_short_and_say_the_key_numbers():
    # F9: repr(IRTResult) was 42 KB (U, V, b and the tables); TwoPL's was <... object at 0x>
    import numpy as np

    from latentbench.select import MatrixOracle, run_selection
    from latentbench.select._policies import make_policy

    assert repr(TwoPL()) == "TwoPL()"
    assert repr(TwoPL(rank=2, prior=None)) == "TwoPL(rank=2, prior=None)"
    matrix = simulate_2pl(20, 120, random_state=0).matrix
    result = TwoPL().fit(matrix)
    text = repr(result)
    assert len(text) < 300 and str(result) == text, text
    assert text.startswith("IRTResult(20 models x 120 items") and "rank 1, MAP" in text
    run = run_selection(
        MatrixOracle(np.nan_to_num(matrix.scores)), make_policy("ucbe", {}, where="policy"),
        budget=200, random_state=0, model_ids=list(matrix.model_ids),
    )  # fmt: skip
    text = repr(run)
    assert len(text) < 300 and text.startswith("SelectionResult(policy 'ucbe', 20 arms: best ")
    assert f"{run.evaluations_total:,} evaluations" in text and repr(run.best_id) in text


def test_the_uncertainty_bootstrap_and_diagnostics_reprs_are_short():
    # the dataclass reprs printed every draw (BootstrapResult: 20 KB at 20 models x 300
    # items and 5 replicates, growing with both) or the tables (4-5 KB)
    import warnings

    matrix = simulate_2pl(20, 120, random_state=0).matrix
    result = TwoPL().fit(matrix)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unc, diag = result.standard_errors(), result.diagnostics()
        boot = result.bootstrap(n_boot=3, random_state=0)
    text = repr(boot)
    assert text.startswith("BootstrapResult(method 'parametric', 3 replicates of 20 models x 120")
    assert len(text) < 200 and "converged" in text
    text = repr(unc)
    assert text.startswith(f"Uncertainty(20 models x 120 items, 95% intervals by {unc.method}")
    assert len(text) < 200
    text = repr(diag)
    flagged = int(diag.items["flagged"].sum())
    assert text.startswith(f"Diagnostics(120 items, {flagged} flagged (") and len(text) < 200
    assert "20 models" in text


def test_the_convergence_warning_points_at_the_callers_line():
    # F14: it pointed at latentbench/irt/_blas.py (the single-threaded BLAS wrapper)
    from latentbench.exceptions import ConvergenceWarning

    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with pytest.warns(ConvergenceWarning, match="max_iter=2") as caught:
        TwoPL(max_iter=2).fit(matrix)
    assert {w.filename for w in caught if w.category is ConvergenceWarning} == {__file__}


def test_fit_results_compare_with_eq_instead_of_raising():
    # fit == fit2 raised "The truth value of a DataFrame is ambiguous" (IRTResult,
    # Uncertainty, Diagnostics, CrossValidation) or of an array (BootstrapResult); they are
    # compared by identity, as estimators' results are in scikit-learn and statsmodels
    import warnings

    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [TwoPL().fit(matrix) for _ in range(2)]
        made = [
            lambda f: f,
            lambda f: f.standard_errors(),
            lambda f: f.diagnostics(),
            lambda f: f.bootstrap(n_boot=2, random_state=0),
            lambda f: TwoPL().cross_validate(matrix, n_splits=1),
        ]
        for make in made:
            a, b = make(fits[0]), make(fits[1])
            assert a == a and (a == b) is False and a in [b, a]


def test_predict_proba_refuses_one_bare_id():
    # predict_proba(models="m") raised numpy's "iteration over a 0-d array"
    matrix = simulate_2pl(12, 40, random_state=0).matrix
    result = TwoPL().fit(matrix)
    first = matrix.model_ids[0]
    with pytest.raises(InputError, match=rf"models='{first}': one id; expected a list of ids"):
        result.predict_proba(models=first)
    assert result.predict_proba(models=[first]).shape == (1, 40)


def test_diagnostics_of_a_loaded_fit_without_a_matrix_says_what_to_pass(tmp_path):
    # it said "expected a ResponseMatrix, got NoneType" where standard_errors and bootstrap
    # say that a result loaded from disk holds no matrix
    import warnings

    from latentbench.irt import IRTResult

    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TwoPL().fit(matrix).save(tmp_path / "fit", matrix)
    loaded = IRTResult.load(tmp_path / "fit")
    with pytest.raises(InputError, match=r"holds no matrix \(it was loaded from disk\); pass"):
        loaded.diagnostics()
    assert len(loaded.diagnostics(matrix).items) == 40


def test_save_onto_a_file_names_the_python_argument(tmp_path):
    # the error named the command's flag ("--out x is a file") to a Python caller
    import warnings

    matrix = simulate_2pl(12, 40, random_state=0).matrix
    taken = tmp_path / "taken.txt"
    taken.write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
    with pytest.raises(InputError, match=r"^directory=.*taken\.txt is a file; expected a dir"):
        result.save(taken)


def test_score_models_reads_a_model_column_and_names_a_long_table():
    # a long table said "a score is not numeric (Unable to parse string 'm00' ...)", and a
    # wide table with its ids in a 'model' column (as a CSV reads back) the same
    import warnings

    matrix = simulate_2pl(20, 60, random_state=0).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix.subset(models=matrix.model_ids[2:]))
        new = matrix.subset(models=matrix.model_ids[:2])
        want = result.score_models(new.to_wide())
        got = result.score_models(new.to_wide().rename_axis("model").reset_index())
    assert got.equals(want)
    with pytest.raises(InputError, match=r"a long table \(columns model, item, score\); .*pivot"):
        result.score_models(new.to_long())


def test_select_rank_and_cross_validate_check_their_inputs_as_fit_does():
    # select_rank(DataFrame) raised AttributeError: 'DataFrame' object has no attribute
    # 'scores'; cross_validate(random_state="x") int()'s ValueError
    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with pytest.raises(InputError, match=r"expected a ResponseMatrix, got DataFrame"):
        TwoPL().select_rank(matrix.to_wide())
    with pytest.raises(InputError, match=r"random_state='x'; expected an integer >= 0"):
        TwoPL().cross_validate(matrix, random_state="x")


def test_a_bootstrap_seed_that_is_not_one_is_named():
    # random_state="x" raised numpy's SeedSequence TypeError, -1 its bare ValueError
    matrix = simulate_2pl(12, 40, random_state=0).matrix
    result = TwoPL().fit(matrix)
    for bad in ("x", -1):
        with pytest.raises(InputError, match=rf"random_state={bad!r}; expected an integer >= 0"):
            result.bootstrap(n_boot=2, random_state=bad)
