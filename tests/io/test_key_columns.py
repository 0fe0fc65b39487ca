"""A long table's key columns (benchmark, metric, filter, split, trial) are read as the store
reads them: ``ResponseMatrix.read``/``from_long`` and estimate's ``read_responses`` give the
store's own export back as ``Store.matrix`` gives it, and never merge rows of different
benchmarks or metrics into one cell."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench import DataWarning, InputError, ResponseMatrix
from latentbench.cli import _register, app
from latentbench.io.formats import read_results
from latentbench.io.store import Store
from latentbench.select import read_responses

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"

MIXED = (  # finding f1: two benchmarks that share the item ids 0, 1, 2
    "model,benchmark,item,score\nm1,arc,0,1\nm1,arc,1,0\nm1,arc,2,1\nm2,arc,0,0\nm2,arc,1,0\n"
    "m2,arc,2,1\nm3,gsm8k,0,1\nm3,gsm8k,1,1\nm3,gsm8k,2,0\n"
)


@pytest.fixture
def epochs_store(tmp_path):
    """A store holding Inspect's arc_challenge, run for two epochs (trials 0 and 1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the fixture's uneven item counts
        frame, _ = read_results(
            "inspect", FORMATS / "inspect" / "logs", filter={"theory_of_mind": "match"}
        )
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.ingest(frame)
    return path


def cells(matrix: ResponseMatrix) -> dict[tuple[str, str], float]:
    scores = matrix.scores
    rows, cols = np.nonzero(~np.isnan(scores))
    return {
        (matrix.model_ids[r], matrix.item_ids[c]): float(scores[r, c])
        for r, c in zip(rows, cols, strict=True)
    }


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_store_export_with_trials_reads_back_as_store_matrix(epochs_store, tmp_path, suffix):
    out = tmp_path / f"arc{suffix}"
    with Store(epochs_store, read_only=True) as store:
        store.export(out, benchmark="arc_challenge")
        expected = store.matrix("arc_challenge")
    exported = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert sorted(exported["trial"].unique()) == [0, 1]  # the epochs, as the store holds them
    with pytest.warns(DataWarning, match=r"6 \(model, item\) cell\(s\) have several trials"):
        matrix = ResponseMatrix.read(out)
    assert cells(matrix) == cells(expected)
    assert 0.5 in cells(matrix).values()  # a cell whose two epochs disagree: their mean
    assert "mean of its trials" in str(matrix.layout)


def test_store_export_with_trials_read_as_new_model_answers(epochs_store, tmp_path):
    out = tmp_path / "arc.parquet"
    with Store(epochs_store, read_only=True) as store:
        store.export(out, benchmark="arc_challenge")
        expected = cells(store.matrix("arc_challenge"))
    with pytest.warns(DataWarning, match="several trials"):
        answers = read_responses(out)
    got = {(m, str(i)): float(v) for m, s in answers.items() for i, v in s.items()}
    assert got == expected


def test_rows_of_two_benchmarks_sharing_item_ids_are_refused(tmp_path):
    path = tmp_path / "mixed_bench.csv"
    path.write_text(MIXED)
    pattern = (
        r"mixed_bench.csv: column 'benchmark' holds 2 benchmarks \('arc', 'gsm8k'\) and item "
        r"'0' is in 'arc', 'gsm8k'.*Store\(STORE\).matrix\(NAME\)"
    )
    with pytest.raises(InputError, match=pattern):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=pattern):
        read_responses(path)


def test_benchmarks_with_disjoint_item_ids_are_one_matrix_said(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text(MIXED.replace("gsm8k,0", "gsm8k,g0").replace("gsm8k,1", "gsm8k,g1"))
    path.write_text(path.read_text().replace("gsm8k,2", "gsm8k,g2"))
    with pytest.warns(DataWarning, match=r"2 benchmarks \('arc', 'gsm8k'\), with disjoint"):
        matrix = ResponseMatrix.read(path)
    assert matrix.shape == (3, 6)
    assert "2 benchmarks" in str(matrix.layout)
    with pytest.warns(DataWarning, match="disjoint item ids"):
        assert len(read_responses(path)) == 3


@pytest.mark.parametrize(
    ("column", "keyword"), [("metric", "metric=M"), ("filter", "filter=F"), ("split", "split=S")]
)
def test_several_metrics_filters_or_splits_are_refused(tmp_path, column, keyword):
    frame = pd.DataFrame(
        {
            "model": ["m1", "m1", "m2", "m2"] * 2,
            "item": ["a", "b", "a", "b"] * 2,
            "score": [1, 0, 0, 1, 1, 1, 0, 0],
            column: ["x"] * 4 + ["y"] * 4,
        }
    )
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    # the export that keeps one: `--split S` (an export of one benchmark holds every split)
    pattern = (
        rf"t.parquet: column '{column}' holds 2 values \('x', 'y'\).*keep one {column}.*"
        rf"latentbench export FILE --store STORE --benchmark NAME --{column} "
        rf"{keyword[-1]}`.*Store\(STORE\).matrix\(NAME, {keyword}\)"
    )
    with pytest.raises(InputError, match=pattern):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=pattern):
        ResponseMatrix.from_long(frame, source="t.parquet")
    with pytest.raises(InputError, match=pattern):
        read_responses(path)


def test_rows_repeated_within_one_trial_keep_the_duplicate_rules():
    frame = pd.DataFrame(
        {
            "model": ["m1", "m1", "m1", "m2", "m2"],
            "item": ["a", "a", "b", "a", "b"],
            "trial": [0, 1, 0, 0, 0],
            "score": [1.0, 0.0, 1.0, 1.0, 0.0],
        }
    )
    same = pd.concat([frame, frame.iloc[[2]]], ignore_index=True)
    with pytest.warns(DataWarning) as caught:
        matrix = ResponseMatrix.from_long(same)
    said = [str(w.message) for w in caught]
    assert any("1 repeated (model, item, trial) rows with identical scores" in s for s in said)
    assert any("1 (model, item) cell(s) have several trials" in s for s in said)
    assert cells(matrix)[("m1", "a")] == 0.5
    other = same.copy()
    other.loc[5, "score"] = 0.0
    clash = r"row 3 and row 6 both give model 'm1', item 'b', trial 0, with different scores"
    with pytest.raises(InputError, match=clash):
        ResponseMatrix.from_long(other)


def test_cli_fit_names_the_store_options(tmp_path):
    _register()
    path = tmp_path / "mixed_bench.csv"
    path.write_text(MIXED.replace("m3,gsm8k", "m3,arc").replace("benchmark", "metric"))
    path.write_text(path.read_text().replace(",arc,", ",acc,", 3))
    result = CliRunner().invoke(app, ["fit", str(path), "--out", str(tmp_path / "fit")])
    assert result.exit_code != 0
    assert "column 'metric' holds 2 values ('acc', 'arc')" in result.output
    assert "--store STORE --benchmark NAME --metric M" in result.output


def test_two_models_under_a_misnamed_column_are_never_averaged_as_trials(tmp_path):
    """Columns model_name, item, trial, score (review of 2026-12-05): the rows of models a
    and b were read as two trials of one model and averaged to 0.5 (the reader refused the
    file before the trial column was read); a column of unobserved trials says nothing."""
    frame = pd.DataFrame(
        {"model_name": ["a", "a", "b", "b"], "item": ["q1", "q2", "q1", "q2"],
         "trial": ["r1", "r1", "r2", "r2"], "score": [1.0, 1.0, 0.0, 0.0]}
    )  # fmt: skip
    frame.to_csv(tmp_path / "two.csv", index=False)
    with pytest.raises(InputError, match=r"column 'model_name' holds 2 names; .*rename"):
        read_responses(tmp_path / "two.csv")
    observed = pd.DataFrame(
        {"model": ["a", "a", "b", "b", "a"], "item": ["q1", "q2", "q1", "q2", "q1"],
         "trial": [0, 0, 0, 0, 1], "score": [1.0, 0.0, 1.0, 1.0, None]}
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        matrix = ResponseMatrix.from_long(observed)
    assert not any("several trials" in str(w.message) for w in caught)
    assert "trials" not in (matrix.layout or "")
    with warnings.catch_warnings(record=True) as caught:  # the new model's reader too
        warnings.simplefilter("always")
        answers = read_responses(observed[observed["model"] == "a"])
    assert answers["a"].to_dict() == {"q1": 1.0, "q2": 0.0}
    assert not any("several trials" in str(w.message) for w in caught)


def test_store_matrix_says_that_it_averaged_trials(epochs_store, tmp_path):
    """Store.matrix averaged a cell's trials unsaid, where reading its export says it with the
    count: it says the same in a warning and in its layout, which a saved fit records as its
    input (fit.json), from Python and from `fit --store`."""
    from latentbench.irt import TwoPL

    said = r"6 \(model, item\) cell\(s\) have several trials \(column 'trial', up to 2"
    with Store(epochs_store, read_only=True) as store:
        with pytest.warns(DataWarning, match=said):
            matrix = store.matrix("arc_challenge")
    assert "each is the mean of its trials" in str(matrix.layout)
    assert str(matrix.layout).startswith(f"store {epochs_store}, benchmark arc_challenge; 6 ")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny matrix: the intervals' caveats
        TwoPL().fit(matrix).save(tmp_path / "fit", matrix)
    recorded = json.loads((tmp_path / "fit" / "fit.json").read_text())["input"]
    assert recorded["layout"] == matrix.layout
    _register()
    out = tmp_path / "cli-fit"
    outcome = CliRunner().invoke(
        app, ["fit", "--store", str(epochs_store), "--benchmark", "arc_challenge", "-q",
              "--out", str(out)]
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert "6 (model, item) cell(s) have several trials" in outcome.output
    recorded = json.loads((out / "fit.json").read_text())["input"]
    assert "6 (model, item) cell(s) have several trials" in recorded["layout"]
    with Store(epochs_store, read_only=True) as store:  # one trial per cell: nothing to say
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataWarning)
            single = store.matrix("theory_of_mind")
    assert single.layout == f"store {epochs_store}, benchmark theory_of_mind"
