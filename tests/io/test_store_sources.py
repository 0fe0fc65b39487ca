"""Issue 15, item 7: two sources that disagree are not averaged into 0.5 behind `ls`'s back."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.store import Store

_register()
runner = CliRunner()


def _ingest(store, path, benchmark="b"):
    outcome = runner.invoke(
        app, ["ingest", "table", str(path), "--store", str(store), "--benchmark", benchmark]
    )
    assert outcome.exit_code == 0, outcome.output


def test_a_second_source_at_the_same_key_is_refused(tmp_path):
    # the first wave's duplicate-key check: same key, other value, is an error at ingest
    store = tmp_path / "s.duckdb"
    (tmp_path / "a.csv").write_text("model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n")
    (tmp_path / "b.csv").write_text("model,item,score\nm1,q1,0\nm1,q2,1\nm2,q1,1\nm2,q2,0\n")
    _ingest(store, tmp_path / "a.csv")
    outcome = runner.invoke(
        app,
        [
            "ingest",
            "table",
            str(tmp_path / "b.csv"),
            "--store",
            str(store),
            "--benchmark",
            "b",
        ],
    )
    assert outcome.exit_code == 2 and "nothing was ingested" in outcome.output


def test_two_sources_as_trials_that_disagree_are_an_error_not_a_mean(tmp_path):
    # a judge scoring 0/1 and another scoring 1 - score, stored as two trials of each cell
    store = tmp_path / "s.duckdb"
    judge = (
        "model,item,score,trial\nm1,q1,1,0\nm1,q2,0,0\nm2,q1,0,0\nm2,q2,1,0\nm3,q1,1,0\nm3,q2,1,0\n"
    )
    other = (
        "model,item,score,trial\nm1,q1,0,1\nm1,q2,1,1\nm2,q1,1,1\nm2,q2,0,1\nm3,q1,0,1\nm3,q2,0,1\n"
    )
    (tmp_path / "judge.csv").write_text(judge)
    (tmp_path / "other.csv").write_text(other)
    _ingest(store, tmp_path / "judge.csv")
    _ingest(store, tmp_path / "other.csv")
    with Store(store, read_only=True) as db:
        summary = db.summary().set_index("benchmark")
        # `ls` describes the cells the fit would see: the two trials disagree, so not binary
        assert not bool(summary.loc["b", "is_binary"])
        with pytest.raises(InputError, match=r"judge\.csv.*other\.csv|other\.csv.*judge\.csv"):
            db.matrix("b")
    outcome = runner.invoke(
        app, ["fit", "--store", str(store), "--benchmark", "b", "--out", str(tmp_path / "f")]
    )
    assert outcome.exit_code == 2, outcome.output
    assert "judge.csv" in outcome.output and not (tmp_path / "f").exists()


def test_trials_of_one_source_are_still_averaged(tmp_path):
    store = tmp_path / "s.duckdb"
    (tmp_path / "epochs.csv").write_text(
        "model,item,score,trial\nm1,q1,1,0\nm1,q1,0,1\nm1,q2,1,0\nm1,q2,1,1\n"
        "m2,q1,0,0\nm2,q1,0,1\nm2,q2,1,0\nm2,q2,0,1\n"
    )
    _ingest(store, tmp_path / "epochs.csv")
    with Store(store, read_only=True) as db:
        matrix = db.matrix("b")
        assert not bool(db.summary().set_index("benchmark").loc["b", "is_binary"])
        # `ls --benchmark b` said both models binary (each row is 0 or 1) where `ls` said
        # the benchmark is not (its cells, trials averaged, are 0.5): the cells for both
        assert db.coverage("b")["is_binary"].tolist() == [False, False]
    assert matrix.scores[0].tolist() == [0.5, 1.0] and matrix.scores[1].tolist() == [0.0, 0.5]
