"""Hostile inputs to the file readers: ids stay text, repeated columns and directories are errors.

Each test here failed before the fix it names (issue 15).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench import InputError, ResponseMatrix
from latentbench.io.formats import read_results

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")


def test_numeric_looking_ids_are_not_merged_long_csv(tmp_path):
    # issue 15, item 5: 007 and 7 were one item, 0042 and 42 one model
    path = tmp_path / "long.csv"
    path.write_text("model,item,score\n0042,007,1\n42,7,0\n0042,7,1\n42,007,0\n")
    m = ResponseMatrix.read(path)
    assert sorted(m.model_ids) == ["0042", "42"]
    assert sorted(m.item_ids) == ["007", "7"]
    assert int(m.observed.sum()) == 4


def test_numeric_looking_ids_are_not_merged_wide_csv(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,007,7\n0042,1,0\n42,0,1\n")
    m = ResponseMatrix.read(path)
    assert m.model_ids == ["0042", "42"]
    assert m.item_ids == ["007", "7"]


def test_ids_that_look_like_missing_markers_keep_their_name(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("model,item,score\nNA,null,1\nNA,q2,0\nnone,null,1\n")
    m = ResponseMatrix.read(path)
    assert sorted(m.model_ids) == ["NA", "none"]
    assert sorted(m.item_ids) == ["null", "q2"]
    assert int(m.observed.sum()) == 3


def test_empty_and_na_scores_are_missing_never_zero(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2,q3\nm1,,NA,1\nm2,0,false,TRUE\n")
    m = ResponseMatrix.read(path)
    assert pd.isna(m.scores[0, 0]) and pd.isna(m.scores[0, 1])
    assert list(m.scores[1]) == [0, 0, 1] and m.scores[0, 2] == 1


def test_text_booleans_and_na_scores_still_read(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2\nm1,True,NA\nm2,false,1\n")
    m = ResponseMatrix.read(path)
    assert m.scores[0, 0] == 1 and m.scores[1, 0] == 0
    assert pd.isna(m.scores[0, 1])


@pytest.mark.parametrize("header", ["model,q1,q1", "model,q1,q2,q1"])
def test_repeated_column_is_an_error_in_fit_input(tmp_path, header):
    # issue 15, item 6: the second q1 was silently renamed q1.1
    path = tmp_path / "wide.csv"
    n = header.count(",")
    path.write_text(f"{header}\nm1,{','.join(['1'] * n)}\nm2,{','.join(['0'] * n)}\n")
    with pytest.raises(InputError, match=r"wide\.csv: line 1: column 'q1' appears 2 times"):
        ResponseMatrix.read(path)


def test_repeated_column_is_an_error_in_ingest(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q1\nm1,1,0\nm2,0,1\n")
    with pytest.raises(InputError, match=r"column 'q1' appears 2 times"):
        read_results("table", path)


def test_a_long_table_without_a_score_column_is_named_as_such_in_ingest(tmp_path):
    # it was read as a wide table: "field 'item': value 'q1' is a string that is not a score"
    path = tmp_path / "long.csv"
    path.write_text("model,item,value\nm1,q1,1\nm2,q1,0\n")  # ('correct' is read as fit reads it)
    with pytest.raises(
        InputError,
        match=r"long\.csv: columns 'model' and 'item' .* no score column; expected one of 'score', "
        "'correct', 'is_correct';",
    ):
        read_results("table", path)


def test_a_long_table_without_its_item_column_is_named_as_such(tmp_path):
    # it was read as a wide table: "model 'm1' is on line 2 and line 3" (estimate) or
    # "column 'question', line 2: value 'q1' is not numeric" (fit)
    from latentbench.select import read_responses

    path = tmp_path / "long.csv"
    path.write_text("model,question,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\n")
    expected = (
        r"long\.csv: columns 'model' \(its ids repeat: a long table\) and 'score' but no item"
    )
    with pytest.raises(InputError, match=expected + r".*item=\.\.\..*'question'"):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=expected):
        read_responses(path)
    assert ResponseMatrix.read(path, item="question").n_items == 2
    wide = tmp_path / "wide.csv"  # one row per model: a wide table with an item named score
    wide.write_text("model,score,q2\nm1,1,0\nm2,0,1\n")
    assert ResponseMatrix.read(wide).item_ids == ["score", "q2"]


def test_a_directory_named_like_a_table_is_an_error(tmp_path):
    # issue 15, tracebacks: a directory named x.parquet given as input
    folder = tmp_path / "x.parquet"
    folder.mkdir()
    with pytest.raises(InputError, match=r"x\.parquet: is a directory"):
        ResponseMatrix.read(folder)


def _foreign(path, table="orders"):
    import duckdb

    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE {table} (id INTEGER, note VARCHAR)")
    con.execute(f"INSERT INTO {table} VALUES (1, 'keep me')")
    con.close()


@pytest.mark.parametrize("table", ["orders", "responses", "meta"])
def test_a_foreign_duckdb_file_is_refused_and_left_untouched(tmp_path, table):
    # issue 15, item 2: ingest adopted another program's DuckDB file (7 new tables), and
    # crashed after stamping meta when the file had its own `responses`
    import duckdb

    from latentbench.io.store import Store

    path = tmp_path / "other.duckdb"
    _foreign(path, table)
    with pytest.raises(InputError, match=r"other\.duckdb: a DuckDB file of another program"):
        Store(path)
    with pytest.raises(InputError, match=r"another program"):
        Store(path, read_only=True)
    con = duckdb.connect(str(path), read_only=True)
    tables = [
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    ]
    assert tables == [table]
    assert con.execute(f"SELECT note FROM {table}").fetchall() == [("keep me",)]
    con.close()


def test_cli_ingest_and_ls_refuse_a_foreign_file(tmp_path):
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    path = tmp_path / "other.duckdb"
    _foreign(path, "responses")
    table = tmp_path / "t.csv"
    table.write_text("model,item,score\nm1,q1,1\nm2,q1,0\n")
    runner = CliRunner()
    for args in (
        ["ingest", "table", str(table), "--store", str(path)],
        ["ls", "--store", str(path)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "another program" in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("1.5", r"field 'trial': value '1\.5'"),
        ("1e30", r"field 'trial': value '1e30'"),
        ("-1", r"field 'trial': value '-1'"),
    ],
)
def test_ingest_table_trial_must_be_a_whole_number(tmp_path, value, pattern):
    # issue 15, item 8: 1.5 became 1 and 1e30 became INT64_MIN
    path = tmp_path / "t.csv"
    path.write_text(f"model,item,score,trial\nm1,q1,1,0\nm1,q2,0,{value}\n")
    with pytest.raises(InputError, match=r"t\.csv:3: " + pattern):
        read_results("table", path)


@pytest.mark.parametrize("stamp", ["yesterday", "2025-13-45T99:00:00"])
def test_ingest_table_unreadable_timestamp_is_an_error_not_null(tmp_path, stamp):
    path = tmp_path / "t.csv"
    path.write_text(f"model,item,score,run_timestamp\nm1,q1,1,{stamp}\n")
    with pytest.raises(InputError, match=r"field 'run_timestamp'"):
        read_results("table", path)


def test_ingest_table_timezone_aware_timestamp_is_kept_in_utc(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("model,item,score,run_timestamp\nm1,q1,1,2025-01-31T12:00:00+02:00\nm1,q2,0,\n")
    frame, _ = read_results("table", path)
    stamps = list(frame.sort_values("item")["run_timestamp"])
    assert stamps[0] == pd.Timestamp("2025-01-31T10:00:00") and pd.isna(stamps[1])


def test_ingest_table_header_only_is_an_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("model,item,score\n")
    with pytest.raises(InputError, match=r"t\.csv: no rows after the header"):
        read_results("table", path)


@pytest.mark.parametrize("ident", ["   ", "\t"])
def test_ingest_table_blank_ids_are_errors(tmp_path, ident):
    path = tmp_path / "t.csv"
    path.write_text(f"model,item,score\nm1,q1,1\n{ident},q2,0\n")
    with pytest.raises(InputError, match=r"field 'model'.* is blank"):
        read_results("table", path)


def test_ingest_table_float_ids_are_errors(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"model": ["m1", "m2"], "item": [1.5, 2.0], "score": [1.0, 0.0]}).to_parquet(path)
    with pytest.raises(InputError, match=r"column 'item' holds float64 values"):
        read_results("table", path)


def test_na_scores_are_missing_in_long_tables_and_ingest(tmp_path):
    """R's write.csv writes NA: `ingest table` refused 'NA'/'NaN'/'null' scores and `fit`
    refused a long row with a missing score; both now read them as unobserved cells."""
    from latentbench.exceptions import DataWarning

    path = tmp_path / "na.csv"
    path.write_text("model,item,score\nm1,q1,1\nm1,q2,NA\nm2,q1,NaN\nm2,q2,0\nm3,q1,null\n")
    # m3, with no observed score, is kept as a row with no data, as a wide file keeps it
    said = (
        r"3 row\(s\) with a missing score .* line 3, model 'm1'.* kept as rows with no data "
        r"\('m3'\)"
    )
    with pytest.warns(DataWarning, match=said):
        matrix = ResponseMatrix.read(path)
    assert matrix.model_ids == ["m1", "m2", "m3"] and int(matrix.observed.sum()) == 2
    assert np.isnan(matrix.scores[2]).all()
    assert np.isnan(matrix.scores[0, 1]) and matrix.scores[1, 1] == 0.0
    frame, report = read_results("table", path)
    assert len(frame) == 2 and "dropped 3: empty score (missing)" in str(report)
    wide = tmp_path / "wide.csv"
    wide.write_text("model,q1,q2\nm1,1,NA\nm2,N/A,0\n")
    frame, _ = read_results("table", wide)
    assert len(frame) == 2
    everything = tmp_path / "none.csv"
    everything.write_text("model,item,score\nm1,q1,NA\n")
    with pytest.raises(InputError, match="every score is missing"):
        ResponseMatrix.read(everything)


def test_a_table_without_a_model_column_says_how_it_was_read(tmp_path):
    """`name,question,acc` (a long table with other names) was read as wide without a word."""
    path = tmp_path / "other.csv"
    path.write_text("name,question,acc\nm,1,1\n")
    _, report = read_results("table", path)
    assert any("read as a wide table" in n and "'name'" in n for n in report.notes)


def test_a_per_task_choice_for_a_task_not_read_is_an_error():
    """`--metric typo=acc` was ignored without a word."""
    from pathlib import Path

    from latentbench.cli._common import cli_spelling
    from latentbench.cli._ingest import parse_choice

    folder = Path(__file__).resolve().parents[1] / "data/formats/lm-eval/v0.4.9"
    choice = {"arc_easy": "acc", "typo": "acc"}
    with pytest.raises(InputError, match=r"no benchmark 'typo' was read; expected one of") as err:
        read_results("lm-eval", folder, metric=choice, filter={"gsm8k": "strict-match"})
    assert cli_spelling(str(err.value)).startswith("--metric typo=acc: ")
    with pytest.raises(InputError, match="two choices for one task"):
        parse_choice(["gsm8k=strict-match", "gsm8k=flexible-extract"], "--filter")
    assert parse_choice(["gsm8k=strict-match", "gsm8k=strict-match"], "--filter") == {
        "gsm8k": "strict-match"
    }


def test_an_every_eval_ever_folder_given_to_lm_eval_points_to_ingest_eee(tmp_path):
    folder = tmp_path / "eee" / "data" / "b" / "unknown" / "m"
    folder.mkdir(parents=True)
    record = folder / "b199912e-8aa8-44ce-976f-a284df6e6ddd_samples.jsonl"
    record.write_text('{"sample_id": "1"}\n')
    with pytest.raises(InputError, match=r"Every Eval Ever record: `latentbench ingest eee"):
        read_results("lm-eval", tmp_path / "eee")


def test_a_per_task_choice_is_refused_where_every_row_has_one_metric(tmp_path):
    """`--metric TASK=NAME` was ignored by the table and Every Eval Ever readers."""
    from latentbench.cli._common import cli_spelling

    path = tmp_path / "t.csv"
    path.write_text("model,item,score\nm1,q1,1\nm2,q1,0\n")
    with pytest.raises(InputError, match="takes one metric name for all its rows") as err:
        read_results("table", path, metric={"t": "acc"})
    assert cli_spelling(str(err.value)).startswith("--metric t=acc: source 'table'")


_BIG = "1" + "0" * 5000  # past Python's 4,300-digit limit on reading an integer
_DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("value", [_BIG, _DEEP], ids=["5001-digit integer", "100000 levels"])
def test_a_json_or_toml_file_built_to_exhaust_the_parser_is_a_clean_error(tmp_path, value):
    """Files made by others (a samples log, a colleague's fit directory or selection.json,
    an items file): a 5,001-digit integer raised a bare ValueError ("use
    sys.set_int_max_str_digits()"), and a value nested 100,000 levels deep a RecursionError,
    as tracebacks. Each is now an InputError naming the file."""
    import json

    from latentbench.io import load_items
    from latentbench.irt import IRTResult, TwoPL
    from latentbench.select import SelectionRecord, replay
    from latentbench.select.live import LiveConfig
    from latentbench.synthetic import simulate_2pl

    samples = tmp_path / "lm" / "org__m" / "samples_arc_easy_2024-05-01T12-30-45.123456.jsonl"
    samples.parent.mkdir(parents=True)
    samples.write_text(f'{{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": {value}}}\n')
    items = tmp_path / "items.jsonl"
    items.write_text(f'{{"id": "a", "prompt": "p", "answer": {value}}}\n')
    config = tmp_path / "run.toml"
    config.write_text(f"[run]\nseed = {value}\n")

    matrix = simulate_2pl(12, 20, random_state=0).matrix
    fit = tmp_path / "fit"
    TwoPL().fit(matrix).save(fit, matrix)
    text = (fit / "fit.json").read_text().rstrip()
    (fit / "fit.json").write_text(text[:-1] + f', "extra": {value}}}')
    selection = tmp_path / "selection.json"
    replay(matrix, no_history=True, budget=40).to_json(selection)
    record = json.dumps(json.loads(selection.read_text()))
    selection.write_text(record[:-1] + f', "extra": {value}}}')

    readers = {
        "samples_arc_easy": lambda: read_results("lm-eval", samples.parent.parent),
        "items.jsonl": lambda: load_items(items),
        "run.toml": lambda: LiveConfig.from_toml(config),
        "fit.json": lambda: IRTResult.load(fit),
        "selection.json": lambda: SelectionRecord.read_json(selection),
    }
    # the records an estimate, a compare and an experiment write (a colleague's folder)
    from latentbench.select import CompareResult, EstimateExperiment, EstimateSet, ExperimentRecord

    for name, reader in (
        ("estimate.json", EstimateSet.read),
        ("compare.json", CompareResult.read),
        ("summary.json", ExperimentRecord.read),
    ):
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        (folder / name).write_text(f'{{"extra": {value}}}')
        for other in ("curves.csv", "runs.csv", "summary.csv"):
            (folder / other).write_text("x\n1\n")
        readers[name] = lambda reader=reader, folder=folder: reader(folder)
    readers["summary.json "] = lambda: EstimateExperiment.read(tmp_path / "summary")
    for name, read in readers.items():
        with pytest.raises(InputError) as info:
            read()
        said = str(info.value)
        assert name.strip() in said or "fit" in said, (name, said)
        assert "set_int_max_str_digits" not in said, said


def test_an_inspect_log_member_that_unpacks_past_the_limit_is_refused_before_unpacking(
    tmp_path, monkeypatch
):
    """An ``.eval`` log is a zip: a member of a few kilobytes can unpack to gigabytes (a zip
    bomb among a leaderboard's downloaded logs), which ``archive.read`` unpacked whole into
    memory. A member whose declared size passes the limit (1 GiB; lowered here) is refused,
    naming the log, the member and both sizes, before anything is unpacked."""
    import json
    import zipfile

    from latentbench.io.formats import _inspect

    path = tmp_path / "bomb.eval"
    sample = {"id": 1, "epoch": 1, "scores": {"s": {"value": "C"}}, "pad": "0" * 100_000}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        archive.writestr("samples/1_epoch_1.json", json.dumps(sample))
    assert path.stat().st_size < 5_000  # what the download looked like
    monkeypatch.setattr(_inspect, "MAX_MEMBER_BYTES", 50_000)
    unpacked = []
    original = zipfile.ZipFile.read
    monkeypatch.setattr(
        zipfile.ZipFile,
        "read",
        lambda self, name, *a: unpacked.append(name) or original(self, name, *a),
    )
    with pytest.raises(InputError, match=r"bomb\.eval: member samples/1_epoch_1\.json unpacks to "
                       r"100,\d{3} bytes, more than 50,000"):  # fmt: skip
        read_results("inspect", path)
    assert "samples/1_epoch_1.json" not in unpacked


@pytest.mark.parametrize(
    ("doc", "shown"),
    [("NaN", "nan"), ("Infinity", "inf"), ("1.5", "1.5"), ("2.0", "2.0"), ("true", "True"),
     ("null", "None"), ("[1]", r"\[1\]")],
)  # fmt: skip
def test_an_lm_eval_doc_id_that_is_not_an_integer_is_refused(tmp_path, doc, shown):
    """lm-eval writes each ``doc_id`` as an integer. ``NaN``, ``Infinity`` (literals Python's
    JSON parser accepts), ``2.0`` or ``true`` were stored as items ``nan``, ``inf``, ``2.0``,
    ``True``: ids no calibration holds (``2.0`` is not ``2``), silently."""
    folder = tmp_path / "lm" / "org__m"
    folder.mkdir(parents=True)
    line = '{{"doc_id": {}, "filter": "none", "metrics": ["acc"], "acc": 1.0}}\n'
    (folder / "samples_arc_easy_2024-05-01T12-30-45.123456.jsonl").write_text(
        line.format(0) + line.format(doc)
    )
    with pytest.raises(
        InputError, match=rf"samples_arc_easy_.*\.jsonl:2: field 'doc_id' is {shown}; expected an"
    ):
        read_results("lm-eval", tmp_path / "lm")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(float("nan"), "nan"), (float("inf"), "inf"), (1.5, "1.5"), (True, "True"), (None, "None")],
)
def test_an_inspect_sample_id_that_is_not_an_integer_or_text_is_refused(tmp_path, value, shown):
    """Inspect writes a sample ``id`` as an integer or a string; ``NaN`` (a literal Python's
    JSON parser reads), ``1.5``, ``true`` or ``null`` were stored as items ``nan``, ``1.5``,
    ``True``, ``None``."""
    import json
    from pathlib import Path

    source = Path(__file__).parents[1] / "data" / "formats" / "inspect" / "logs"
    log = json.loads((source / "2025-02-02T09-00-00_theory-of-mind_openai.json").read_text())
    log["samples"][0]["id"] = value
    path = tmp_path / "2025-02-02T09-00-00_theory-of-mind_openai.json"
    path.write_text(json.dumps(log))
    with pytest.raises(InputError, match=rf"field 'id' is {shown}; expected an integer or"):
        read_results("inspect", path, filter="match")


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("digits", [None, 2])
def test_a_summary_column_under_an_item_name_is_refused(tmp_path, where, digits):
    """A wide table with a spreadsheet's average column named ``score`` (or any name not in
    SUMMARY_LABELS) at either edge was fitted as an item (2026-12-06); now refused, naming the
    column, by ResponseMatrix.read and the ingest table reader alike, exact or rounded to two
    decimals. A 0/1 item and a fractional item at the same place are read."""
    rng = np.random.default_rng(0)
    Y = (rng.random((25, 40)) < 0.6).astype(float)
    frame = pd.DataFrame(Y, columns=[f"q{j}" for j in range(40)])
    mean = Y.mean(axis=1) if digits is None else Y.mean(axis=1).round(digits)
    frame.insert(0 if where == "first" else 40, "score", mean)
    frame.insert(0, "model", [f"m{i}" for i in range(25)])
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    said = r"column 'score' holds each row's average of the other columns .* not an item"
    with pytest.raises(InputError, match=r"wide\.csv: " + said):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=r"wide\.csv: " + said):
        read_results("table", path)
    frame["score"] = (rng.random(25) < 0.5).astype(float)  # a 0/1 item
    frame.to_csv(path, index=False)
    assert "score" in ResponseMatrix.read(path).item_ids
    frame["score"] = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], 25)  # partial credit
    frame.to_csv(path, index=False)
    assert "score" in ResponseMatrix.read(path).item_ids
    assert "score" in set(read_results("table", path)[0]["item"])


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_summary_column_beside_an_empty_edge_column_is_refused(tmp_path, where):
    """A spreadsheet's CSV export often ends every line with a comma (an empty last column,
    ``Unnamed: N``, left out as no item) or has an empty column before the items: the summary
    column is then next to the edge, not at it, and was fitted as an item (review140,
    2026-12-06). The edges are now the first and last columns holding a score."""
    rng = np.random.default_rng(0)
    Y = (rng.random((25, 40)) < 0.6).astype(float)
    frame = pd.DataFrame(Y, columns=[f"q{j}" for j in range(40)])
    frame.insert(0 if where == "first" else 40, "score", Y.mean(axis=1).round(2))
    frame.insert(0 if where == "first" else 41, "", np.nan)  # the empty column
    frame.insert(0, "model", [f"m{i}" for i in range(25)])
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    said = r"wide\.csv: column 'score' holds each row's average of the other columns"
    with pytest.raises(InputError, match=said):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=said):
        read_results("table", path)
