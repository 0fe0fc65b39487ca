"""``estimate --model A`` on a file whose rows name ``'A '`` and ``'a'`` (a spreadsheet's
trailing space, another casing) but not ``'A'``: names are matched exactly, so the error says
which names differ from it only by case or spaces, with their answers, all of them (it named
the first one only, without saying that matching is exact)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.select import estimate, estimate_many
from latentbench.select._estimate_calibration import from_matrix
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    matrix = simulate_2pl(10, 30, random_state=2).matrix
    cal = from_matrix(matrix, rank=1)
    wide = pd.DataFrame(matrix.scores[:4], index=["A ", "a", "B", "z"], columns=matrix.item_ids)
    wide.iloc[1, :10] = np.nan  # 'a' answered 20 items
    long = (
        wide.rename_axis("model")
        .reset_index()
        .melt(id_vars="model", var_name="item", value_name="score")
        .dropna()
    )
    path = tmp_path_factory.mktemp("near") / "answers.csv"
    long.to_csv(path, index=False)
    return cal, path, wide


def test_a_model_without_rows_names_every_near_name_with_its_answers(setup):
    cal, path, wide = setup
    near = (
        "; did you mean 'A ' or 'a'? They differ from 'A' only by case or surrounding spaces "
        "('A ': 30 answer(s), 'a': 20 answer(s)); model names are matched exactly: give the "
        "one meant as it is written"
    )
    for responses in (path, wide):
        with pytest.raises(InputError) as err:
            estimate(cal, responses, model="A", budget=10)
        assert str(err.value).endswith(near) and "'B', " in str(err.value), err.value
        with pytest.raises(InputError) as err:
            estimate_many(cal, responses, models=["A"], budget=10)
        assert str(err.value).endswith(near) and "'B', " in str(err.value), err.value


def test_matching_stays_exact_and_a_name_without_near_names_says_nothing_more(setup):
    cal, path, _ = setup
    result = estimate(cal, path, model="a", budget=10)  # 'a' itself: its 20 answers only
    assert result.model == "a"
    with pytest.raises(InputError) as err:
        estimate(cal, path, model="C", budget=10)
    assert str(err.value).endswith(")") and "did you mean" not in str(err.value), err.value


def test_a_model_with_rows_says_which_near_twins_it_left_out(setup, tmp_path):
    """``--model a`` where 'a' has rows and 'A ' differs from it only by case and a space:
    'A ''s answers were left out silently (a file read by rows never saw them; a matrix's
    were passed over). Now one warning names them, kept in the result's warnings, whichever
    way the answers come (a CSV or Parquet file read by rows, a wide table, estimate_many,
    the command); the estimate is the one of 'a''s answers alone, as before. A twin named
    too, or the other side of a comparison, is not said."""
    import warnings

    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.exceptions import DataWarning
    from latentbench.select import compare

    cal, path, wide = setup
    alone = estimate(cal, wide.loc[["a"]], model="a", budget=10)  # no twin: the reference
    assert not any("were not used" in w for w in alone.warnings)
    parquet = tmp_path / "answers.parquet"
    pd.read_csv(path, dtype={"model": str}, keep_default_na=False).to_parquet(parquet)
    for responses, whose in (
        (path, f"rows of 'A ' in {path}"),
        (parquet, f"rows of 'A ' in {parquet}"),
        (wide, "answers of 'A '"),
    ):
        note = f"model 'a': the {whose} (ids that differ from it only by case, surrounding "
        for call in (estimate, estimate_many):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if call is estimate:
                    got = estimate(cal, responses, model="a", budget=10)
                else:
                    (got,) = estimate_many(cal, responses, models=["a"], budget=10)
            told = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
            assert sum(note in t for t in told) == 1, (told, note)
            assert sum(note in t for t in got.warnings) == 1, got.warnings
            assert (got.score, got.lower, got.upper, got.n_evaluated) == (
                alone.score, alone.lower, alone.upper, alone.n_evaluated
            )  # fmt: skip
    # named too: both estimated, neither said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        both = estimate_many(cal, path, models=["a", "A "], budget=10)
    assert len(both) == 2 and not any("were not used" in str(w.message) for w in caught)
    # one file, the twin the other side of a comparison: not said; a third model: said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare(cal, path, model_a="a", model_b="A ", budget=10)
    assert not any("were not used" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare(cal, path, model_a="a", model_b="B", budget=10)
    assert sum("model 'a': the answers of 'A ' (" in str(w.message) for w in caught) == 1
    _register()
    out = CliRunner().invoke(
        app, ["estimate", str(path), str(path), "--model", "a", "--budget", "10", "-q"]
    )
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert f"model 'a': the rows of 'A ' in {path} (ids that differ" in text, text


def test_two_files_whose_twin_is_the_other_side_say_no_twin_left_out(setup, tmp_path):
    """``compare A.csv B.csv --a a --b 'A '`` (each file holding both): each side warned that
    the other side's answers 'were not used' (model 'a': the rows of 'A ' ...), though they
    are the comparison's other side, named. The other side is skipped for two files as for
    one; a third model's twin is still said."""
    import warnings

    from latentbench.select import compare

    cal, path, wide = setup
    copy = tmp_path / "copy.csv"
    copy.write_bytes(path.read_bytes())
    for a, b in ((path, copy), (wide, wide.copy())):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = compare(cal, a, b, model_a="a", model_b="A ", budget=10)
        said = [str(w.message) for w in caught if "were not used" in str(w.message)]
        assert said == [] and not any("were not used" in w for w in r.warnings), said
        assert (r.model_a, r.model_b) == ("a", "A ")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = compare(cal, a, b, model_a="a", model_b="B", budget=10)
        said = [str(w.message) for w in caught if "were not used" in str(w.message)]
        assert len(said) == 1 and said[0].startswith("model 'a': the "), said
