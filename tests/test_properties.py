"""Property tests (Hypothesis) of the readers, the store, the fit outputs and the report.

Issue 15: arbitrary ids (numeric-looking, unicode, whitespace, formula-like) round-trip
unchanged through CSV, Parquet, the store, the fit directory and the report; no input gives a
traceback, only a latentbench error with exit code 2. Example counts are kept small so the
suite stays fast; the seeds are derandomised (the same examples on every run).
"""

from __future__ import annotations

import html
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io import ResponseMatrix
from latentbench.io.store import Store
from latentbench.irt import IRTResult

_register()
runner = CliRunner()

# column names that decide the layout of a table cannot also be item ids of a wide table
RESERVED = {"model", "item", "score", "correct", "benchmark", "metric", "filter", "trial",
            "split", "source", "source_file", "run_timestamp", "item_hash", "source_model",
            "flag"}  # fmt: skip

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
    min_size=1,
    max_size=10,
)
ID = st.one_of(
    st.from_regex(r"[0-9]{1,4}", fullmatch=True, alphabet="0123456789"),  # 007 and 7
    st.sampled_from(
        [
            "1e3",
            "-0",
            "+1",
            "1.50",
            "0x1F",
            "NaN",
            "NA",
            "null",
            "None",
            "TRUE",
            "inf",
            "-inf",
            " 7",
            "7 ",
            "a b",
            "\u00e9t\u00e9",
            "\u6a21\u578b",
            "=1+1",
            "=cmd|' /C calc'!A0",
            "+SUM(A1)",
            "-2+3",
            "@x",
            "'quoted",
        ]
    ),
    _text,
    _text.map(lambda s: "=" + s),
).filter(lambda s: s.strip() != "" and s.strip().lower() not in RESERVED)

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@st.composite
def tables(draw, max_models: int = 4, max_items: int = 5):
    models = draw(st.lists(ID, min_size=2, max_size=max_models, unique=True))
    items = draw(st.lists(ID, min_size=2, max_size=max_items, unique=True))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    scores = (rng.random((len(models), len(items))) < 0.5).astype(float)
    scores[0, 0], scores[1, 0] = 1.0, 0.0  # not every cell equal
    return models, items, scores


def _long(models, items, scores) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": np.repeat(models, len(items)),
            "item": np.tile(items, len(models)),
            "score": scores.ravel(),
        }
    )


def _same(matrix: ResponseMatrix, models, items, scores) -> None:
    assert sorted(matrix.model_ids) == sorted(models)
    assert sorted(matrix.item_ids) == sorted(items)
    rows = [matrix.model_ids.index(m) for m in models]
    cols = [matrix.item_ids.index(i) for i in items]
    np.testing.assert_array_equal(matrix.scores[np.ix_(rows, cols)], scores)


@pytest.mark.slow
@SETTINGS
@given(tables())
def test_ids_round_trip_through_files_and_the_store(table):
    models, items, scores = table
    long = _long(models, items, scores)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        long.to_csv(tmp / "long.csv", index=False)
        long.to_parquet(tmp / "long.parquet")
        wide = pd.DataFrame(scores, columns=items)
        wide.insert(0, "model", models)
        wide.to_csv(tmp / "wide.csv", index=False)
        for name in ("long.csv", "long.parquet", "wide.csv"):
            _same(ResponseMatrix.read(tmp / name), models, items, scores)
        store = tmp / "s.duckdb"
        outcome = runner.invoke(
            app,
            [
                "ingest",
                "table",
                str(tmp / "long.csv"),
                "--store",
                str(store),
                "--benchmark",
                "b",
            ],
        )
        assert outcome.exit_code == 0, outcome.output
        with Store(store, read_only=True) as db:
            _same(db.matrix("b"), models, items, scores)
        # export, then read the export back
        exported = tmp / "export.parquet"
        assert runner.invoke(app, ["export", str(exported), "--store", str(store)]).exit_code == 0
        again = pd.read_parquet(exported)
        assert sorted(set(again["model"])) == sorted(models)
        assert sorted(set(again["item"])) == sorted(items)


@settings(SETTINGS, max_examples=6)
@given(tables(max_models=4, max_items=4))
def test_ids_round_trip_through_fit_outputs_and_the_report(table):
    models, items, scores = table
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        _long(models, items, scores).to_csv(tmp / "long.csv", index=False)
        out = tmp / "fit"
        fit = runner.invoke(app, ["fit", str(tmp / "long.csv"), "--out", str(out), "-q"])
        assert fit.exit_code == 0, fit.output
        result = IRTResult.load(out)
        assert sorted(result.model_ids) == sorted(models)
        assert sorted(result.item_ids) == sorted(items)
        page = tmp / "r.html"
        report = runner.invoke(app, ["report", str(out), "--out", str(page), "-q"])
        assert report.exit_code == 0, (report.output, report.exception)
        text = page.read_text(encoding="utf-8")
        for model in models:  # each name appears, escaped for HTML or for JSON
            assert html.escape(model) in text or json.dumps(model)[1:-1] in text, model


_CELLS = st.sampled_from(["0", "1", "", "NA", "0.5", "2", "-1", "abc", "1e309", "nan", "=1",
                          " ", '"', "q1", "model", "007", "\u00e9", "1,0"])  # fmt: skip


@st.composite
def hostile_csv(draw) -> str:
    n_cols = draw(st.integers(1, 5))
    n_rows = draw(st.integers(0, 5))
    header = draw(st.sampled_from(["model", "item", "score", "name", ""]))
    rest = [draw(_CELLS) for _ in range(n_cols - 1)]
    lines = [",".join([header, *rest])]
    for _ in range(n_rows):
        lines.append(",".join(draw(_CELLS) for _ in range(draw(st.integers(1, n_cols + 1)))))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@settings(SETTINGS, max_examples=40)
@given(hostile_csv())
def test_no_input_gives_a_traceback(content):
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        path = tmp / "in.csv"
        path.write_text(content, encoding="utf-8")
        outcome = runner.invoke(app, ["fit", str(path), "--out", str(tmp / "fit"), "-q"])
        assert outcome.exit_code in (0, 2), (content, outcome.output, outcome.exception)
        assert outcome.exception is None or isinstance(outcome.exception, SystemExit), (
            content,
            outcome.exception,
        )
        if outcome.exit_code == 2:
            assert "error:" in outcome.output and "Traceback" not in outcome.output
        ingest = runner.invoke(
            app,
            [
                "ingest",
                "table",
                str(path),
                "--store",
                str(tmp / "s.duckdb"),
                "--benchmark",
                "b",
            ],
        )
        assert ingest.exit_code in (0, 2), (content, ingest.output, ingest.exception)
        assert ingest.exception is None or isinstance(ingest.exception, SystemExit)
