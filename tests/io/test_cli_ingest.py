"""``latentbench ingest``, ``ls`` and ``export`` through typer's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io.store import Store

_register()
runner = CliRunner()

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"

# the readers warn (DataWarning) about uneven item counts and fractional scores; the fixtures
# have both on purpose, and test_formats checks the warning itself
pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_ingest_ls_export(tmp_path):
    store = tmp_path / "s.duckdb"
    result = run(
        "ingest",
        "lm-eval",
        FORMATS / "lm-eval" / "v0.4.9",
        "--store",
        store,
        "--metric",
        "arc_easy=acc",
        "--filter",
        "gsm8k=strict-match",
    )
    assert result.exit_code == 0, result.output
    assert "17 new rows" in result.output
    again = run(
        "ingest",
        "lm-eval",
        FORMATS / "lm-eval" / "v0.4.9",
        "--store",
        store,
        "--metric",
        "arc_easy=acc",
        "--filter",
        "gsm8k=strict-match",
        "--json",
    )
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["ingest"]["n_new"] == 0
    helm = run(
        "ingest",
        "helm",
        FORMATS / "helm" / "benchmark_output",
        "--store",
        store,
        "--metric",
        "mmlu:subject=anatomy,method=multiple_choice_joint=exact_match",
        "--metric",
        "exact_match",
    )
    assert helm.exit_code == 0, helm.output

    listing = run("ls", "--store", store, "--json")
    assert listing.exit_code == 0, listing.output
    rows = {r["benchmark"]: r for r in json.loads(listing.output)}
    assert set(rows) == {
        "arc_easy",
        "gsm8k",
        "boolq",
        "mmlu:subject=anatomy,method=multiple_choice_joint",
    }
    assert rows["arc_easy"]["n_models"] == 3 and rows["arc_easy"]["n_items"] == 4
    table = run("ls", "--store", store, "--benchmark", "arc_easy")
    assert table.exit_code == 0 and "pythia-410m" in table.output
    # output that is not a terminal (logs, pipes) keeps every header and name on one line,
    # where rich's default 80 columns folded them ("d_fract" / "ion")
    summary = run("ls", "--store", store)
    assert summary.exit_code == 0, summary.output
    for text in ("observed_fraction", "mmlu:subject=anatomy,method=multiple_choice_joint"):
        assert text in summary.output, summary.output

    out = tmp_path / "gsm8k.csv"
    exported = run("export", out, "--store", store, "--benchmark", "gsm8k")
    assert exported.exit_code == 0, exported.output
    assert "wrote 6 rows" in exported.output
    assert out.read_text().splitlines()[0].startswith("model,benchmark,item,score,metric")


def test_failed_ingest_writes_nothing(tmp_path):
    store = tmp_path / "s.duckdb"
    good = FORMATS / "lm-eval" / "v0.4.9" / "EleutherAI__pythia-160m"
    bad = FORMATS / "lm-eval" / "bad" / "truncated"
    result = run(
        "ingest",
        "lm-eval",
        good,
        bad,
        "--store",
        store,
        "--metric",
        "acc",
        "--filter",
        "strict-match",
    )
    assert result.exit_code == 2
    assert "samples_arc_easy_" in result.output and ".jsonl:3: invalid JSON line" in result.output
    with Store(store) as db:
        assert db.benchmarks() == []


def test_ambiguous_metric_lists_choices(tmp_path):
    result = run(
        "ingest", "helm", FORMATS / "helm" / "benchmark_output", "--store", tmp_path / "s.duckdb"
    )
    assert result.exit_code == 2
    assert "several metrics (exact_match, quasi_exact_match)" in result.output


@pytest.mark.parametrize("command", ["ls", "export"])
def test_missing_store(tmp_path, command):
    args = ["ls"] if command == "ls" else ["export", tmp_path / "x.csv"]
    result = run(*args, "--store", tmp_path / "nope.duckdb")
    assert result.exit_code == 2 and "store not found" in result.output


def test_ingest_into_a_missing_folder_says_so(tmp_path):
    store = tmp_path / "no" / "such" / "s.duckdb"
    result = run("ingest", "table", FORMATS / "table" / "long.csv", "--store", store,
                 "--benchmark", "b")  # fmt: skip
    assert result.exit_code == 2
    assert f"the folder {store.parent} does not exist" in result.output
    assert "IO Error" not in result.output


def test_ingest_says_rows_older_than_the_stored_ones(tmp_path):
    """--duplicates latest with an older file: its conflicting row is said as not written
    (the line counted it as 'already present')."""
    store = tmp_path / "s.duckdb"
    for name, score, stamp in (("new", 0.0, "2026-01-02"), ("old", 1.0, "2025-01-01")):
        (tmp_path / f"{name}.csv").write_text(
            f"model,item,score,run_timestamp\nm,x,{score},{stamp}\nm,y,1.0,{stamp}\n"
        )
    common = ("--store", store, "--benchmark", "t")
    assert run("ingest", "table", tmp_path / "new.csv", *common).exit_code == 0
    result = run("ingest", "table", tmp_path / "old.csv", *common, "--duplicates", "latest")
    assert result.exit_code == 0, result.output
    assert (
        "0 new rows in " in result.output
        and "(1 already present, 0 replaced, 1 older than the stored row: not written)"
        in " ".join(result.output.split())
    )


def test_ctrl_c_while_duckdb_runs_a_query_is_said_as_an_interruption(tmp_path, monkeypatch):
    """Ctrl-C landing in a DuckDB query (an ingest of a large table) raised DuckDB's
    ``RuntimeError('Query interrupted')`` (what its Python client raises for the signal's
    KeyboardInterrupt, seen on ``ingest table`` of 600,000 rows) as a traceback, exit 1;
    every command says an interruption in one line, exit 130. Nothing is written."""
    store = tmp_path / "s.duckdb"
    lm_eval = FORMATS / "lm-eval" / "v0.4.9"
    options = ["--metric", "arc_easy=acc", "--filter", "gsm8k=strict-match"]
    assert run("ingest", "lm-eval", lm_eval, "--store", store, *options).exit_code == 0
    with Store(store, read_only=True) as db:
        before = db.long()

    def interrupted(self, *args, **kwargs):
        raise RuntimeError("Query interrupted")  # DuckDB's words for a signal mid-query

    monkeypatch.setattr(Store, "_ingest_rows", interrupted)
    monkeypatch.setattr(Store, "_summary", interrupted)
    table = tmp_path / "t.csv"
    table.write_text("model,item,score\nm,x,1\n")
    for args in (["ingest", "table", table, "--store", store], ["ls", "--store", store]):
        result = run(*args)
        assert result.exit_code == 130, (result.output, result.exception)
        assert f"interrupted (Ctrl-C): latentbench {args[0]} stopped" in result.output
    monkeypatch.undo()
    with Store(store, read_only=True) as db:
        pd.testing.assert_frame_equal(db.long(), before)


def test_a_query_interrupted_by_another_signal_handler_is_still_a_runtime_error(
    tmp_path, monkeypatch
):
    """DuckDB says ``RuntimeError('Query interrupted')`` for any signal handler that raised
    mid-query (seen with a ``signal.alarm`` handler raising TimeoutError), not only Ctrl-C's:
    turned into a bare KeyboardInterrupt, a caller's ``except RuntimeError`` no longer caught
    its own timeout. The store raises :class:`QueryInterrupted`, both a KeyboardInterrupt
    (the command line's exit 130) and a RuntimeError, naming the store. (DuckDB's error is
    raised here by a stand-in: a real query cut by an alarm takes as long as DuckDB takes to
    look at its signals, 1-11 s on these machines.)"""
    from latentbench.exceptions import QueryInterrupted

    store = tmp_path / "s.duckdb"

    def interrupted(self: Store, *args: object, **kwargs: object) -> object:
        raise RuntimeError("Query interrupted")  # DuckDB's words, whichever handler raised

    with Store(store) as db:
        monkeypatch.setattr(Store, "_summary", interrupted)
        with pytest.raises(BaseException) as caught:  # (a bare KeyboardInterrupt before)
            db.summary()
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, QueryInterrupted)
    assert isinstance(caught.value, KeyboardInterrupt) and str(store) in str(caught.value)
