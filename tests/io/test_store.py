"""The DuckDB store: transactional, idempotent ingest, conflicts, matrix, coverage, export."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from latentbench import __version__
from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import SCHEMA_VERSION, Store

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"

# the readers warn (DataWarning) about uneven item counts and fractional scores; the fixtures
# have both on purpose, and test_formats checks the warning itself
pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")


def lm_eval(filter_: str = "strict-match"):
    return read_results(
        "lm-eval",
        FORMATS / "lm-eval" / "v0.4.9",
        metric={"arc_easy": "acc"},
        filter=filter_ if filter_ != "none" else None,
    )


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "store.duckdb") as db:
        yield db


def n_rows(store: Store) -> int:
    return store.connection.execute("SELECT count(*) FROM responses").fetchall()[0][0]


def test_new_store_has_schema_and_versions(store):
    assert store.meta == {"schema_version": str(SCHEMA_VERSION), "package_version": __version__}
    tables = {r[0] for r in store.connection.execute("SHOW TABLES").fetchall()}
    assert {
        "meta",
        "responses",
        "ingests",
        "fits",
        "selection_runs",
        "selection_observations",
        "selection_decisions",
        "selection_requests",
    } <= tables
    assert store.benchmarks() == [] and store.models() == []


def test_reingest_is_idempotent(store):
    frame, report = lm_eval()
    first = store.ingest(frame, report)
    second = store.ingest(frame, report)
    assert (first["n_new"], second["n_new"], second["n_present"]) == (17, 0, 17)
    assert n_rows(store) == 17
    assert store.connection.execute("SELECT count(*) FROM ingests").fetchall()[0][0] == 1
    stored = json.loads(store.connection.execute("SELECT report FROM ingests").fetchall()[0][0])
    assert stored["choices"]["gsm8k"]["filter"] == "strict-match"


def test_items_disjoint_from_the_stored_ones_are_said(store, tmp_path):
    """A second model whose item ids follow another convention ('doc_0' against '0') shares no
    item with the stored models: one DataWarning and a note in the ingest's report (was silent;
    the fit then compared the two groups only through its priors)."""
    from latentbench.exceptions import DataWarning

    first = pd.DataFrame(
        {"model": ["m1"] * 3 + ["m2"] * 3, "item": ["0", "1", "2"] * 2, "score": [1, 0, 1, 0, 0, 1]}
    )
    second = pd.DataFrame(
        {"model": ["m3"] * 3, "item": ["doc_0", "doc_1", "doc_2"], "score": [1, 0, 1]}
    )
    paths = []
    for name, frame in (("a", first), ("b", second)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        paths.append(tmp_path / f"{name}.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # a first ingest has nothing to overlap
        store.ingest_files("table", [paths[0]], benchmark="x")
    with pytest.warns(DataWarning, match=r"none of the 3 incoming item ids is among the 3 stored"):
        _, report = store.ingest_files("table", [paths[1]], benchmark="x")
    assert any("'doc_0', stored '0'" in note for note in report.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # overlapping items: nothing to say
        store.ingest_files("table", [paths[0]], benchmark="x")
    valid = second.assign(split="valid")  # another split has its own items: nothing to say
    valid.to_csv(tmp_path / "valid.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        store.ingest_files("table", [tmp_path / "valid.csv"], benchmark="y")
        store.ingest_files("table", [paths[0]], benchmark="y")


def test_second_filter_is_added_not_conflicting(store, cells):
    store.ingest(*lm_eval("strict-match"))
    result = store.ingest(*lm_eval("flexible-extract"))
    assert result["n_new"] == 6  # only the gsm8k rows of the other filter are new
    choices = store.choices("gsm8k")
    assert choices[["metric", "filter"]].values.tolist() == [
        ["exact_match", "flexible-extract"],
        ["exact_match", "strict-match"],
    ]
    with pytest.raises(
        InputError, match=r"several \(metric, filter, split\) choices .*flexible-extract"
    ):
        store.matrix("gsm8k")
    flexible = store.matrix("gsm8k", metric="exact_match", filter="flexible-extract")
    assert cells(flexible)[("EleutherAI/pythia-160m", "1")] == 1.0


def test_conflicting_score_names_both_files_and_writes_nothing(store, tmp_path):
    frame, report = lm_eval()
    store.ingest(frame, report)
    changed = frame.copy()
    row = changed.index[(changed["benchmark"] == "gsm8k")][0]
    changed.loc[row, "score"] = 1.0 - changed.loc[row, "score"]
    changed["source_file"] = str(tmp_path / "rerun.jsonl")
    extra = changed.iloc[[0]].assign(item="999", score=1.0)  # a new row in the same batch
    with pytest.raises(
        InputError,
        match=r"rerun\.jsonl \(lm-eval.*\) gives score .* but .*samples_gsm8k_.*\.jsonl "
        r"\(lm-eval.*\) is stored with",
    ):
        store.ingest(pd.concat([extra, changed]), report)
    assert n_rows(store) == 17  # the new row of the failed batch was not written
    assert store.long().equals(store.long())  # store still readable
    assert "999" not in set(store.long()["item"])


def test_duplicate_key_within_a_batch(store):
    frame, report = lm_eval()
    changed = frame.iloc[[3]].assign(score=1.0 - frame["score"].iloc[3], source_file="other.jsonl")
    with pytest.raises(
        InputError, match=r"give different scores .*other\.jsonl|other\.jsonl.*give"
    ):
        store.ingest(pd.concat([frame, changed]), report)
    assert n_rows(store) == 0
    # the same value twice in one batch is one observation
    result = store.ingest(
        pd.concat([frame, frame.iloc[[3]].assign(source="lm-eval 0.4.8")]), report
    )
    assert result["n_new"] == len(frame)


def test_source_version_is_provenance_not_identity(store, tmp_path):
    frame, report = lm_eval()
    store.ingest(frame, report)
    arc = frame[frame["benchmark"] == "arc_easy"]
    # the same values from another tool version: stored once
    same = arc.assign(source="lm-eval 0.4.10", source_file=str(tmp_path / "new.jsonl"))
    assert store.ingest(same)["n_new"] == 0
    assert n_rows(store) == len(frame)
    # a different value from another version: a conflict naming both files, never averaged
    other = same.assign(score=1.0 - same["score"])
    with pytest.raises(InputError, match=r"new\.jsonl \(lm-eval 0\.4\.10\) gives score"):
        store.ingest(other)
    before = store.matrix("arc_easy").scores.copy()
    assert np.array_equal(store.matrix("arc_easy").scores, before, equal_nan=True)
    # asked for: the latest (no timestamps: the incoming row) or the flagged mean
    result = store.ingest(other.iloc[[0]], duplicates="latest")
    assert result["n_replaced"] == 1
    result = store.ingest(same.iloc[[0]], duplicates="mean")
    assert result["n_replaced"] == 1
    row = store.long("arc_easy")
    row = row[(row["model"] == same["model"].iloc[0]) & (row["item"] == same["item"].iloc[0])]
    assert row["score"].tolist() == [0.5]
    assert row["flag"].tolist() == ["mean of stored and incoming conflicting values"]


def _one_cell(path: Path, score: float, run_timestamp: str | None = None) -> Path:
    frame = pd.DataFrame({"model": ["m"], "item": ["x"], "score": [score]})
    if run_timestamp is not None:
        frame["run_timestamp"] = [run_timestamp]
    frame.to_csv(path, index=False)
    return path


def _stored(store: Store) -> tuple[float, str | None]:
    ((score, flag),) = store.connection.execute("SELECT score, flag FROM responses").fetchall()
    return score, flag


def test_mean_reingest_is_idempotent(store, tmp_path):
    """Re-ingesting a file already averaged in by --duplicates mean adds nothing (it averaged
    it in again: 0 and 1 stored 0.5, then 0.75, 0.875 on each re-run of the second file); a new
    conflicting value enters the mean of every value once."""
    a = _one_cell(tmp_path / "a.csv", 0.0)
    b = _one_cell(tmp_path / "b.csv", 1.0)
    c = _one_cell(tmp_path / "c.csv", 1.0)
    store.ingest_files("table", [a], benchmark="t")
    result, _ = store.ingest_files("table", [b], benchmark="t", duplicates="mean")
    assert result["n_replaced"] == 1 and _stored(store)[0] == 0.5
    for path in (b, a, b):
        result, _ = store.ingest_files("table", [path], benchmark="t", duplicates="mean")
        assert (result["n_new"], result["n_present"], result["n_replaced"]) == (0, 1, 0)
        assert _stored(store) == (0.5, "mean of stored and incoming conflicting values")
    result, _ = store.ingest_files("table", [c], benchmark="t", duplicates="mean")
    assert result["n_replaced"] == 1
    assert _stored(store)[0] == pytest.approx(2 / 3)  # the mean of 0, 1 and 1
    # a value that replaced the mean (--duplicates latest) starts a new mean
    d = _one_cell(tmp_path / "d.csv", 0.0)
    store.ingest_files("table", [d], benchmark="t", duplicates="latest")
    assert _stored(store) == (0.0, None)
    store.ingest_files("table", [b], benchmark="t", duplicates="mean")
    assert _stored(store)[0] == 0.5


def test_a_mean_made_while_reading_keeps_its_values(store, tmp_path):
    """Files averaged in one read (--duplicates mean on two files at once) stored their mean
    as one value of the stored file's: re-ingesting one of them moved 0.5 (of 0 and 1) to
    0.75, and a third file gave 0.75, where the three read at once give 2/3. The values of
    the mean are kept, so the order of the ingests changes nothing."""
    a = _one_cell(tmp_path / "a.csv", 0.0)
    b = _one_cell(tmp_path / "b.csv", 1.0)
    c = _one_cell(tmp_path / "c.csv", 1.0)
    result, _ = store.ingest_files("table", [a, b], benchmark="t", duplicates="mean")
    assert result["n_new"] == 1 and _stored(store) == (0.5, "mean of 2 conflicting values")
    result, _ = store.ingest_files("table", [a], benchmark="t", duplicates="mean")
    assert (result["n_new"], result["n_present"], result["n_replaced"]) == (0, 1, 0)
    assert _stored(store)[0] == 0.5  # it was 0.25: the mean of the stored 0.5 and a's 0
    store.ingest_files("table", [c], benchmark="t", duplicates="mean")
    assert _stored(store)[0] == pytest.approx(2 / 3)  # the mean of 0, 1 and 1
    with Store(":memory:") as other:  # c first, then a and b read together
        other.ingest_files("table", [c], benchmark="t")
        other.ingest_files("table", [a, b], benchmark="t", duplicates="mean")
        assert _stored(other)[0] == pytest.approx(2 / 3)
    with Store(":memory:") as other:  # a frame of repeats given to ingest
        frame, _ = read_results("table", [a], benchmark="t")
        again, _ = read_results("table", [b], benchmark="t")
        other.ingest(pd.concat([frame, again], ignore_index=True), duplicates="mean")
        other.ingest_files("table", [b], benchmark="t", duplicates="mean")
        assert _stored(other)[0] == 0.5


def _means_of(orders: list[list[list[Path]]]) -> list[float]:
    """The stored score of one cell after each order of ``--duplicates mean`` ingests (each
    inner list read together), each order into a new store; each read made once. The first
    read of each order is ingested again at its end: a value already in changes nothing."""
    reads: dict[tuple[Path, ...], tuple[pd.DataFrame, Any]] = {}

    def ingest(db: Store, files: list[Path]) -> Any:
        if tuple(files) not in reads:
            reads[tuple(files)] = read_results("table", files, benchmark="t", duplicates="mean")
        frame, report = reads[tuple(files)]
        return db.ingest(frame, report, duplicates="mean")

    out = []
    for order in orders:
        with Store(":memory:") as db:
            for files in order:
                ingest(db, files)
            out.append(_stored(db)[0])
            again = ingest(db, order[0])
            assert (_stored(db)[0], again["n_new"], again["n_replaced"]) == (out[-1], 0, 0)
    return out


def test_a_row_repeated_in_its_file_is_one_value_of_a_mean_in_any_order(tmp_path):
    """A file repeating a row (same key, same score) is one observation ("kept once"), as the
    store counts a file's value once; but a read-time mean counted every repeat: 0 (a) with
    d's 1 and 1 read together gave 2/3 (and kept d's 1 twice as the mean's values), where
    a then d gave 1/2. Reading a, c (1 and 0.5 in one file) and d together or one after
    the other now gives the mean of a's 0, c's 1 and 0.5, and d's 1."""
    a = _one_cell(tmp_path / "a.csv", 0.0)
    c = tmp_path / "c.csv"
    d = tmp_path / "d.csv"
    for path, scores in ((c, [1.0, 0.5]), (d, [1.0, 1.0])):
        pd.DataFrame({"model": "m", "item": "x", "score": scores}).to_csv(path, index=False)
    frame, report = read_results("table", [a, d], benchmark="t", duplicates="mean")
    assert frame["score"].tolist() == [0.5]
    assert frame["flag"].tolist() == ["mean of 2 conflicting values"]
    assert report.dropped["same observation repeated in one file (kept once)"] == 1
    orders = [[[a, d]], [[a], [d]], [[c, d], [a]], [[a, c, d]]]
    assert _means_of(orders) == pytest.approx([0.5, 0.5, 0.625, 0.625])  # 2.5 / 4


def test_values_equal_to_a_stored_mean_still_enter_it(tmp_path):
    """A file (or files read together) whose value equals a stored mean, or a mean equal to
    a stored value, was no conflict, so its values were not kept: 0.5 stored, then 0 and 1
    read together (0.5), a file of 1 and 0 (0.5), then 1 gave 3/4 where the six values read
    at once give 7/12; 1 and 0 in a file, then 0.5, then 1 gave 2/3, not 5/8."""
    scores = {"a": 0.0, "b": 1.0, "e": 0.5, "f": 1.0}
    a, b, e, f = (_one_cell(tmp_path / f"{n}.csv", score) for n, score in scores.items())
    c = tmp_path / "c.csv"
    pd.DataFrame({"model": "m", "item": "x", "score": [1.0, 0.0]}).to_csv(c, index=False)
    orders = [[[e], [a, b], [c], [f]], [[c], [e], [f]]]
    assert _means_of(orders) == pytest.approx([7 / 12, 5 / 8])  # 3.5 / 6, 2.5 / 4


def test_latest_counts_incoming_rows_older_than_the_stored_one(store, tmp_path):
    """An incoming conflicting row older than the stored one is not written under
    --duplicates latest: it is counted as such, not as 'already present'."""
    new = _one_cell(tmp_path / "new.csv", 0.0, "2026-01-02")
    old = _one_cell(tmp_path / "old.csv", 1.0, "2025-01-01")
    store.ingest_files("table", [new], benchmark="t")
    result, _ = store.ingest_files("table", [old], benchmark="t", duplicates="latest")
    assert (result["n_new"], result["n_present"], result["n_replaced"]) == (0, 0, 0)
    assert result["n_older"] == 1
    assert _stored(store)[0] == 0.0
    result, _ = store.ingest_files("table", [new], benchmark="t", duplicates="latest")
    assert (result["n_present"], result["n_older"]) == (1, 0)


def test_ingest_validates_the_frame(store):
    frame, _ = lm_eval()
    with pytest.raises(InputError, match=r"lacks the canonical columns \['score'\]"):
        store.ingest(frame.drop(columns="score"))
    with pytest.raises(InputError, match=r"score 1.5 is outside"):
        store.ingest(frame.assign(score=1.5))
    with pytest.raises(InputError, match=r"row 0: column .score. is empty"):
        store.ingest(frame.assign(score=np.nan))
    assert n_rows(store) == 0


def test_coverage_summary_and_models(store):
    store.ingest(*lm_eval())
    coverage = store.coverage("arc_easy").set_index("model")
    assert coverage["n_items"].to_dict() == {
        "EleutherAI/pythia-160m": 4,
        "EleutherAI/pythia-410m": 3,
        "meta-llama/Llama-3.2-1B": 4,
    }
    assert coverage.loc["EleutherAI/pythia-410m", "fraction"] == pytest.approx(0.75)
    summary = store.summary().set_index("benchmark")
    assert summary.loc["arc_easy", "observed_fraction"] == pytest.approx(11 / 12)
    assert bool(summary.loc["gsm8k", "is_binary"])
    assert store.models("gsm8k") == ["EleutherAI/pythia-160m", "EleutherAI/pythia-410m"]
    assert len(store.models()) == 3


def test_matrix_errors_list_the_choices(store):
    store.ingest(*lm_eval())
    for read in (store.matrix, store.coverage, store.long):  # not an empty table
        with pytest.raises(InputError, match=r"unknown benchmark 'mmlu'; stored: arc_easy, gsm8k"):
            read("mmlu")
    with pytest.raises(InputError, match=r"no rows with metric='acc_norm'.*metric='acc'"):
        store.matrix("arc_easy", metric="acc_norm")
    # only the choices asked for are named (it said "metric=None, filter=None, split='x'",
    # and `fit --split x` printed Python's None for the options not given)
    with pytest.raises(InputError) as caught:
        store.matrix("arc_easy", split="valid")
    assert "has no rows with split='valid'; available: " in str(caught.value)
    assert "None" not in str(caught.value)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_export_reads_back_with_provenance(store, tmp_path, suffix):
    store.ingest(*lm_eval())
    out = tmp_path / f"export{suffix}"
    assert store.export(out) == 17
    frame, report = read_results("table", out)
    with Store(tmp_path / f"copy{suffix}.duckdb") as copy:
        copy.ingest(frame, report)
        pd.testing.assert_frame_equal(copy.long(), store.long(), check_dtype=False)
    # and back into the original store: nothing new, nothing conflicting
    assert store.ingest(frame, report)["n_new"] == 0
    assert store.export(tmp_path / f"gsm{suffix}", benchmark="gsm8k") == 6
    with pytest.raises(InputError, match=r"unknown export type"):
        store.export(tmp_path / "x.json")


def test_record_fit(store):
    class Result:
        def __init__(self):
            self.options = {"rank": 1}

        def fit_info(self):
            return {"loss": 1.5, "converged": True}

    fit_id = store.record_fit("arc_easy", Result())
    fits = store.fits("arc_easy")
    assert fits["id"].tolist() == [fit_id]
    assert json.loads(fits["summary"].iloc[0]) == {"converged": True, "loss": 1.5}
    assert json.loads(fits["options"].iloc[0]) == {"rank": 1}
    assert fits["package_version"].iloc[0] == __version__


def test_record_fit_on_a_read_only_store_says_so(tmp_path):
    """A fit recorded in a store opened read-only was refused as if its fits table had been
    edited ('expected the fits table latentbench makes (id, ...)'): the table is fine, the
    store is read-only, and the refusal now says that."""
    path = tmp_path / "runs.duckdb"
    Store(path).close()
    with Store(path, read_only=True) as store, pytest.raises(InputError) as info:
        store.record_fit("arc_easy", options={"rank": 1})
    said = str(info.value)
    assert said.startswith(f"{path}: cannot write the fit to its fits table ("), said
    assert said.endswith("; expected a store opened for writing (Store(path), not "
                         "read_only=True)"), said  # fmt: skip
    assert "fits table latentbench makes" not in said


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(InputError, match=r"schema version 99 is newer"):
        Store(path)


def test_persistence_and_read_only(tmp_path):
    path = tmp_path / "s.duckdb"
    with Store(path) as db:
        db.ingest(*lm_eval())
    with Store(path, read_only=True) as db:
        assert db.benchmarks() == ["arc_easy", "gsm8k"]
        assert db.matrix("arc_easy").shape == (3, 4)
    with pytest.raises(InputError, match=r"store not found"):
        Store(tmp_path / "missing.duckdb", read_only=True)
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    with pytest.raises(InputError, match=r"without latentbench's 'meta' table"):
        Store(other, read_only=True)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(InputError, match=r"notes\.txt: not a DuckDB database"):
        Store(text)


def test_a_store_in_a_missing_folder_says_the_folder_does_not_exist(tmp_path):
    missing = tmp_path / "no" / "such" / "s.duckdb"
    with pytest.raises(InputError, match=r"s\.duckdb: the folder .*such does not exist"):
        Store(missing)
    assert not missing.parent.exists()  # nothing made on the way
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"the folder .*file is not a folder"):
        Store(tmp_path / "file" / "s.duckdb")


def test_selection_tables_roundtrip(store):
    run_id = store.start_selection({"policy": "pulse", "budget": 10})
    observations = pd.DataFrame(
        {
            "seq": [0, 1, 2],
            "round": [0, 0, 1],
            "model": ["m1", "m2", "m1"],
            "item": [3, 5, 7],
            "score": [1.0, None, 0.0],
            "error": [None, "timeout", None],
        }
    )
    assert store.add_observations(run_id, observations) == 3
    store.add_decision(run_id, 0, {"chosen": "m1"})
    store.set_selection_status(run_id, "done")
    got = store.selection_observations(run_id)
    assert got["item"].tolist() == ["3", "5", "7"]
    assert got["score"].isna().tolist() == [False, True, False]
    assert got["error"].iloc[1] == "timeout"
    assert store.selection_decisions(run_id) == [{"round": 0, "chosen": "m1"}]
    status = store.connection.execute("SELECT status FROM selection_runs").fetchall()
    assert status == [("done",)]
    with pytest.raises(InputError, match="seq is repeated"):
        store.add_observations(run_id, observations.iloc[[0]])
    assert len(store.selection_observations(run_id)) == 3


def test_few_and_many_observations_are_stored_alike(store):
    """A live run commits each paid cell alone (a parameterised insert); a batch of many goes
    in as a table: both paths store the same values (NaN score -> NULL, times, attempts)."""
    from datetime import datetime

    n = 20
    t = datetime(2026, 12, 4, 12, 0, 0)
    columns = {
        "seq": list(range(n)),
        "round": [k // 4 for k in range(n)],
        "model": ["m1"] * n,
        "item": [f"q{k}" for k in range(n)],
        "score": [float("nan") if k % 7 == 3 else k / n for k in range(n)],
        "error": ["timeout" if k % 7 == 3 else None for k in range(n)],
        "requested_at": [t] * n,
        "observed_at": [t] * n,
        "attempts": [1 + k % 3 for k in range(n)],
    }
    many = store.start_selection({"x": 1})
    assert store.add_observations(many, pd.DataFrame(columns, index=range(100, 100 + n))) == n
    few = store.start_selection({"x": 2})
    for k in range(n):  # one row at a time, as a dict of columns
        assert store.add_observations(few, {c: v[k : k + 1] for c, v in columns.items()}) == 1
    a = store.selection_observations(many).drop(columns="run_id")
    b = store.selection_observations(few).drop(columns="run_id")
    pd.testing.assert_frame_equal(a, b)
    assert a["score"].isna().sum() == 3 and a["attempts"].tolist() == columns["attempts"]
    small = store.start_selection({"x": 3})  # a frame of a few rows, float32 NaN and pd.NA
    frame = pd.DataFrame(columns, index=range(50, 50 + n)).head(8)
    frame["score"] = frame["score"].astype("float32")
    frame.loc[frame.index[0], "error"] = pd.NA
    store.add_observations(small, frame)
    nulls = "SELECT run_id, count(*) FROM selection_observations WHERE score IS NULL GROUP BY 1"
    counts = dict(store.connection.execute(nulls).fetchall())
    assert counts == {many: 3, few: 3, small: 1}  # NULL, never a stored NaN
    nan = "SELECT count(*) FROM selection_observations WHERE isnan(score)"
    assert store.connection.execute(nan).fetchone() == (0,)
    # a repeated seq in a small batch stores none of it (one statement, one transaction)
    batch = {c: v[:3] for c, v in columns.items()} | {"seq": [100, 101, 101]}
    with pytest.raises(InputError, match="seq is repeated"):
        store.add_observations(small, batch)
    assert len(store.selection_observations(small)) == 8


def test_ingest_files_is_the_python_twin(store):
    result, report = store.ingest_files(
        "opencompass", FORMATS / "opencompass" / "outputs", metric="correct"
    )
    assert result["n_new"] == report.rows == 16
    assert store.benchmarks() == ["ceval-computer_network", "gsm8k"]
    with pytest.raises(InputError, match="no such file"):
        store.ingest_files("helm", FORMATS / "nope")


def _schema_1_store(path: Path) -> duckdb.DuckDBPyConnection:
    """A store as schema 1 wrote it (no ``split``, no ``flag``), its connection open."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1'), ('package_version', '0.0')")
    con.execute(
        "CREATE TABLE responses (model VARCHAR NOT NULL, benchmark VARCHAR NOT NULL, item VARCHAR "
        "NOT NULL, score DOUBLE NOT NULL, metric VARCHAR NOT NULL, filter VARCHAR NOT NULL, trial "
        "BIGINT NOT NULL, source VARCHAR NOT NULL, source_file VARCHAR NOT NULL, run_timestamp "
        "TIMESTAMP, item_hash VARCHAR, source_model VARCHAR NOT NULL, run_id VARCHAR NOT NULL, "
        "ingested_at TIMESTAMP NOT NULL)"
    )
    return con


def test_schema_1_store_is_upgraded_and_never_averages_old_duplicates(tmp_path):
    path = tmp_path / "v1.duckdb"
    con = _schema_1_store(path)
    rows = [  # schema 1 kept one row per tool version: the same cell twice, different scores
        ("m1", "b", "q1", 1.0, "acc", "none", 0, "tool 1", "a.jsonl"),
        ("m1", "b", "q1", 0.0, "acc", "none", 0, "tool 2", "b.jsonl"),
        ("m2", "b", "q1", 1.0, "acc", "none", 0, "tool 1", "a.jsonl"),
    ]
    for row in rows:
        con.execute(
            "INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, 'r', now())",
            [*row, row[0]],
        )
    con.close()
    with Store(path) as store:
        assert store.meta["schema_version"] == "2"
        assert set(store.long()["split"]) == {"unknown"}
        with pytest.raises(
            InputError, match=r"model 'm1', item 'q1', trial 0 of 'b' is stored more"
        ):
            store.matrix("b")


def test_a_schema_1_store_read_from_the_command_line_says_a_command_that_upgrades_it(
    tmp_path, monkeypatch
):
    """``ls`` (``export``, ``fit --store``: read-only opens) of a schema-1 store said "open it
    once without read_only to upgrade it", which no command-line option does; the message now
    gives a command that does, and after it the same ``ls`` lists the store."""
    import re

    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    monkeypatch.chdir(tmp_path)
    con = _schema_1_store(tmp_path / "v1.duckdb")
    con.execute(
        "INSERT INTO responses VALUES ('m1', 'b', 'q1', 1.0, 'acc', 'none', 0, 'tool', 'a', "
        "NULL, NULL, 'm1', 'r', now())"
    )
    con.close()
    _register()
    refused = CliRunner().invoke(app, ["ls", "--store", "v1.duckdb"])
    assert refused.exit_code == 2, refused.output
    said = " ".join(refused.output.split())
    assert "read_only" not in said and "nothing was written" in said
    command = re.search(r'python -c "([^"]+)"', said)
    assert command is not None, said
    exec(command.group(1), {})  # the advice, as the shell would run it
    listed = CliRunner().invoke(app, ["ls", "--store", "v1.duckdb", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output)[0]["benchmark"] == "b"


def test_sparse_benchmark_gives_a_matrix_of_observed_cells(store):
    frame, report = lm_eval()
    rows = frame.drop_duplicates(["metric", "filter"]).head(1)
    # 8 models with one (distinct) item each: 1/8 of the cells observed
    spread = pd.concat([rows] * 8, ignore_index=True).assign(
        model=[f"model-{k}" for k in range(8)],
        item=[f"q{k}" for k in range(8)],
        score=[k % 2 for k in range(8)],
    )
    store.ingest(spread, report)
    matrix = store.matrix(spread["benchmark"].iloc[0])
    assert matrix.is_sparse and matrix.shape == (8, 8)
    assert matrix.n_observed_per_model().tolist() == [1] * 8
    dense = matrix.scores
    for _, row in spread.iterrows():
        i = matrix.model_ids.index(row["model"])
        j = matrix.item_ids.index(row["item"])
        assert dense[i, j] == row["score"]
    assert np.isnan(dense).sum() == 64 - 8


def test_the_default_split_is_said_and_another_can_be_asked(store, tmp_path):
    """A benchmark with test and valid rows gave its test rows without a word, and `fit` had
    no --split."""
    import warnings

    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.exceptions import DataWarning
    from latentbench.io.formats import read_results

    table = tmp_path / "sp.csv"
    rows = [(m, f"q{j}", float((i + j) % 2), split) for i, m in enumerate(["a", "b", "c"])
            for j, split in enumerate(["test", "test", "test", "valid", "valid"])]  # fmt: skip
    pd.DataFrame(rows, columns=["model", "item", "score", "split"]).to_csv(table, index=False)
    store.ingest(read_results("table", table)[0])
    with pytest.warns(DataWarning, match=r"splits 'test', 'valid'; using 'test'"):
        assert store.matrix("sp").n_items == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        assert store.matrix("sp", split="valid").item_ids == ["q3", "q4"]
    store.close()
    _register()
    out = tmp_path / "fit"
    args = ["fit", "--store", str(store.path), "--benchmark", "sp", "--split", "valid",
            "--out", str(out)]  # fmt: skip
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert json.loads((out / "fit.json").read_text())["input"]["split"] == "valid"


def test_a_table_file_is_never_opened_as_a_store(tmp_path):
    """`--store lp.parquet` said "a DuckDB file of another program", or DuckDB's own
    "Cannot launch in-memory database in read-only mode"."""
    table = tmp_path / "lp.parquet"
    pd.DataFrame({"model": ["a"], "item": ["x"], "score": [1.0]}).to_parquet(table)
    before = table.read_bytes()
    for read_only in (True, False):
        with pytest.raises(InputError, match=r"a store is a DuckDB file .* not a \.parquet"):
            Store(table, read_only=read_only)
    with pytest.raises(InputError, match=r"not a \.csv"):
        Store(tmp_path / "new.csv")
    assert table.read_bytes() == before and not (tmp_path / "new.csv").exists()


def test_export_refuses_an_existing_file_without_force(store, tmp_path):
    # F8: the twin replaced a file silently where `latentbench export` refuses without --force
    store.ingest(*lm_eval())
    out = tmp_path / "export.csv"
    out.write_text("the ingested file\n")
    with pytest.raises(InputError, match=r"export\.csv exists .*pass force=True"):
        store.export(out)
    assert out.read_text() == "the ingested file\n"
    assert store.export(out, force=True) == 17


def test_ingest_files_warns_at_the_callers_line(store, tmp_path):
    # F14: the read's DataWarning pointed at latentbench/io/store.py
    from latentbench.exceptions import DataWarning

    path = tmp_path / "wide.csv"
    pd.DataFrame({"name": ["m1", "m2"], "q0": [1, 0], "q1": [0, 1]}).to_csv(path, index=False)
    with pytest.warns(DataWarning, match="read as a wide table") as caught:
        store.ingest_files("table", [path], benchmark="x")
    assert caught[0].filename == __file__


@pytest.mark.parametrize("holder_reads", [False, True])
def test_a_store_held_by_another_process_is_said_as_such(tmp_path, holder_reads, store_held):
    """Another process writing the store (an ingest) holds DuckDB's lock: opening it said
    'cannot open as a DuckDB store', as if the file were not a store; now it says the store is
    in use, by which process, and what to do. A process reading it bars a writer alike."""
    path = tmp_path / "held.duckdb"
    Store(path).close()
    with store_held(path, read_only=holder_reads) as pid:
        for read_only in (False,) if holder_reads else (False, True):
            # a short wait: the refusal is the point here, not the length of the default 5 s
            # wait (10 s of this test idle); the holder never lets go, so it is still refused
            with pytest.raises(InputError) as caught:
                Store(path, read_only=read_only, wait=0.2)
            message = str(caught.value)
            assert f"{path}: the store is in use by another process" in message, message
            assert "cannot open as a DuckDB store" not in message
            assert f"(PID {pid})): DuckDB lets one process write" in message, message
            assert "(waited 0.2 s)" in message, message
        if holder_reads:  # readers share it
            Store(path, read_only=True).close()
    Store(path, read_only=True).close()  # free again


def test_the_wait_for_a_held_store_is_set_by_the_environment(tmp_path, store_held, monkeypatch):
    """Every command waited a fixed 5 s for a store another process holds (``Store(path,
    wait=...)`` only from Python): ``LATENTBENCH_STORE_WAIT`` sets the default wait (a longer
    one for ingests of large files side by side, 0 to fail at once), a Store's own ``wait``
    still wins, and a value that is no number of seconds >= 0 is refused naming it."""
    import time

    from latentbench.exceptions import StoreInUse

    path = tmp_path / "held.duckdb"
    Store(path).close()
    monkeypatch.setenv("LATENTBENCH_STORE_WAIT", "0.3")
    with store_held(path, read_only=False):
        started = time.monotonic()
        with pytest.raises(StoreInUse, match=r"\(waited 0\.3 s\)"):
            Store(path)
        assert time.monotonic() - started < 4.5  # not the 5 s of the unset variable
        with pytest.raises(StoreInUse) as caught:
            Store(path, wait=0)
        assert "waited" not in str(caught.value)
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("LATENTBENCH_STORE_WAIT", bad)
        with pytest.raises(InputError, match=rf"LATENTBENCH_STORE_WAIT='{bad}' .*expected"):
            Store(path)
        Store(path, wait=0).close()  # a Store's own wait never reads it
    monkeypatch.setenv("LATENTBENCH_STORE_WAIT", " ")
    Store(path).close()


def test_the_in_use_refusal_says_how_to_wait_longer(tmp_path, store_held, monkeypatch):
    """The refusal of a store another process holds said to wait until that process ends or
    to work on a copy, never that a longer wait can be asked for: now it names
    ``LATENTBENCH_STORE_WAIT`` (a command's wait), or ``wait=`` where the Store was given
    its own (the environment is then not read). A live run holds its store until it stops:
    its refusal says to wait for it or stop it, not to wait longer."""
    from latentbench.exceptions import StoreInUse
    from latentbench.io.store import _in_use

    path = tmp_path / "held.duckdb"
    Store(path).close()
    monkeypatch.setenv("LATENTBENCH_STORE_WAIT", "0.1")
    with store_held(path, read_only=False):
        with pytest.raises(StoreInUse) as caught:
            Store(path)  # a command's open: the environment's wait
        message = str(caught.value)
        assert "(waited 0.1 s)" in message, message
        hint = "or set LATENTBENCH_STORE_WAIT=SECONDS to wait longer for it"
        assert message.endswith(hint), message
        with pytest.raises(StoreInUse) as caught:
            Store(path, wait=0)
        message = str(caught.value)
        assert message.endswith("or pass wait=SECONDS to wait for it"), message
        assert "LATENTBENCH_STORE_WAIT" not in message
    live = _in_use(str(path), "x", 7, "latentbench select live --config c.toml", 5.0, True)
    assert "stop it with Ctrl-C" in live and "LATENTBENCH_STORE_WAIT" not in live, live
    assert "wait=" not in live, live


def test_a_store_s_own_wait_is_checked_as_the_environment_s_is(tmp_path, monkeypatch):
    """Before: ``Store(path, wait=...)`` took any value unchecked while the environment's was
    refused: -1 waited 0 s, nan refused at once saying no wait, inf waited forever, "5" was a
    TypeError from inside the wait loop, True waited 1 s. Now a wait that is no finite number
    of seconds >= 0 is refused naming ``wait`` and its value (before any file is touched), as
    ``LATENTBENCH_STORE_WAIT`` is; a huge finite value is taken (1e308 waits as long as the
    holder holds the store); an empty variable is unset."""
    path = tmp_path / "s.duckdb"
    for bad in (-1, -0.5, float("nan"), float("inf"), "5", True, [5]):
        with pytest.raises(InputError, match=r"wait=.*expected the seconds to wait"):
            Store(path, wait=bad)  # type: ignore[arg-type]
    assert not path.exists()
    for good in (0, 0.25, 1e308, np.float64(2.0)):
        Store(path, wait=good).close()
    for value in ("", "1e308", " 7 "):
        monkeypatch.setenv("LATENTBENCH_STORE_WAIT", value)
        Store(path).close()
    monkeypatch.setenv("LATENTBENCH_STORE_WAIT", "1e400")  # inf as a float
    with pytest.raises(InputError, match=r"'1e400' .*expected .*a finite number >= 0"):
        Store(path)


def test_a_store_open_in_this_process_says_to_pass_the_open_store(tmp_path):
    # load_calibration(path, benchmark=...) while Store(path) was open said DuckDB's
    # "Can't open a connection to same database file with a different configuration"
    from latentbench.select import load_calibration

    path = tmp_path / "s.duckdb"
    with Store(path):
        with pytest.raises(InputError) as caught:
            load_calibration(str(path), benchmark="b")
    message = str(caught.value)
    assert f"{path}: this process already holds the store open" in message, message
    assert "expected the open Store object passed instead of its path" in message
    assert "different configuration" not in message
    with Store(path, read_only=True), pytest.raises(InputError, match="already holds"):
        Store(path)


def test_a_closed_store_says_it_is_closed(tmp_path):
    # after its with block, store.summary() (or any method) raised AttributeError:
    # 'NoneType' object has no attribute 'execute'
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        assert store.benchmarks() == []
    for call in (store.summary, store.benchmarks, lambda: store.matrix("b")):
        with pytest.raises(InputError, match=r"s\.duckdb: the store is closed .*open it again"):
            call()
    store.close()  # still idempotent


def _read_only_writes(table_file: Path):
    """Each public write method of Store, called as a user would, keyed by name."""
    frame, report = read_results("table", table_file, benchmark="other", metric="acc")
    return {
        "ingest": lambda s, run: s.ingest(frame, report),
        "ingest_files": lambda s, run: s.ingest_files(
            "table", table_file, benchmark="other", metric="acc"
        ),
        "record_fit": lambda s, run: s.record_fit("arc_easy", options={"rank": 1}),
        "start_selection": lambda s, run: s.start_selection({"policy": "random"}),
        "set_selection_status": lambda s, run: s.set_selection_status(run, "done"),
        "set_selection_config": lambda s, run: s.set_selection_config(run, {"policy": "x"}),
        "add_observations": lambda s, run: s.add_observations(
            run, {"seq": [7], "model": ["m1"], "item": ["q2"], "score": [0.0]}
        ),
        "add_decision": lambda s, run: s.add_decision(run, 1, {"pick": "q2"}),
        "record_requests": lambda s, run: s.record_requests(run, 1),
        "request_ledger": lambda s, run: s.request_ledger(run)(1),
        "redact_selection_config": lambda s, run: s.redact_selection_config(run),
        "publish_selection": lambda s, run: s.publish_selection(
            run, benchmark="live", metric="acc"
        ),
    }


_WRITES = {
    "ingest": "the rows to its responses table",
    "ingest_files": "the rows to its responses table",
    "record_fit": "the fit to its fits table",
    "start_selection": "a selection run to its selection_runs table",
    "set_selection_status": "the run's status to its selection_runs table",
    "set_selection_config": "the run's config to its selection_runs table",
    "add_observations": "the observations to its selection_observations table",
    "add_decision": "the decision to its selection_decisions table",
    "record_requests": "the request to its selection_requests table",
    "request_ledger": "the request to its selection_requests table",
    # a stored key to mask: written through set_selection_config
    "redact_selection_config": "the run's config to its selection_runs table",
    "publish_selection": "the run's scored cells to its responses table",
}


@pytest.mark.parametrize("method", list(_WRITES))
def test_every_write_on_a_read_only_store_names_the_file(tmp_path, method):
    """Every write method but record_fit, on a store opened read-only, raised DuckDB's own
    ``InvalidInputException: Cannot execute statement of type "INSERT" on database "s" which
    is attached in read-only mode!``: it named neither the file nor what to do. Each is now
    refused before any work, with an InputError naming the store's file, what it would have
    written, and the writable store expected; the store is left as it was."""
    table = tmp_path / "scores.csv"
    pd.DataFrame({"model": ["m1", "m1", "m2"], "item": ["q1", "q2", "q1"],
                  "score": [1, 0, 1]}).to_csv(table, index=False)  # fmt: skip
    path = tmp_path / "s.duckdb"
    with Store(path) as db:
        run = db.start_selection(
            {"models": [{"name": "m1", "model_args": "model=m1,api_key=sk-OLD-123"}]}
        )
        db.add_observations(run, {"seq": [0], "model": ["m1"], "item": ["q1"], "score": [1.0]})
    before = duckdb.connect(str(path), read_only=True)
    tables = ("responses", "ingests", "fits", "selection_runs", "selection_observations",
              "selection_decisions", "selection_requests")  # fmt: skip
    state = {t: before.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
    before.close()
    call = _read_only_writes(table)[method]
    with Store(path, read_only=True) as db, pytest.raises(InputError) as info:
        call(db, run)
    assert str(info.value) == (
        f"{path}: cannot write {_WRITES[method]} (the store is opened read-only; nothing was "
        "written); expected a store opened for writing (Store(path), not read_only=True)"
    )
    after = duckdb.connect(str(path), read_only=True)
    assert {t: after.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables} == (
        state
    )
    after.close()
    # and the same call on the store opened for writing works
    with Store(path) as db:
        call(db, run)


def test_redact_on_a_read_only_store_with_nothing_to_mask_writes_nothing(tmp_path):
    """Nothing to mask, nothing to write: a read-only store answers an empty list."""
    path = tmp_path / "s.duckdb"
    with Store(path) as db:
        run = db.start_selection({"models": [{"name": "m1"}]})
    with Store(path, read_only=True) as db:
        assert db.redact_selection_config(run) == []


def test_the_request_ledger_sums_per_run_and_takes_writes_from_threads(tmp_path):
    """The request ledger (``selection_requests``) is written by a live run's worker threads
    beside the main thread's writes: each call commits one row, through a cursor of its own;
    its sum per run is what :meth:`Store.selection_requests` reads."""
    import threading

    path = tmp_path / "ledger.duckdb"
    with Store(path) as db:
        run = db.start_selection({"policy": "random"})
        assert db.selection_requests(run) == 0 and db.selection_requests("other") == 0
        ledger = db.request_ledger(run)  # as a live run hands it to its oracle's workers
        threads = [
            threading.Thread(target=lambda: [ledger(1) for _ in range(25)]) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for k in range(10):  # the main thread's own writes meanwhile
            db.add_observations(run, {"seq": [k], "model": ["m"], "item": [f"q{k}"]})
        for thread in threads:
            thread.join()
        db.record_requests(run, -1)
        assert db.selection_requests(run) == 99
    with Store(path, read_only=True) as db:  # committed: read back after the store closed
        assert db.selection_requests(run) == 99
        assert len(db.selection_observations(run)) == 10


def test_close_holds_the_ledger_lock_until_the_connection_is_closed(tmp_path):
    """A worker recording a request while the store closes must not open a new cursor between
    the ledger cursor's close and the connection's (it would keep the file open): ``close``
    holds the ledger's lock across both, so such a worker then finds the store closed."""
    db = Store(tmp_path / "close.duckdb")
    run = db.start_selection({"policy": "random"})
    ledger = db.request_ledger(run)
    held: list[bool] = []
    real = db.connection

    class Watched:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def close(self) -> None:
            held.append(db._ledger_lock.locked())
            real.close()

    db.connection = Watched()  # type: ignore[assignment]
    db.close()
    assert held == [True]
    with pytest.raises(InputError, match="the store is closed"):
        ledger(1)
