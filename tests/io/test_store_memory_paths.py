"""The memory-saving paths of ingest, export and ``ls`` (leaderboard-scale tables) write what
they wrote before: a small table's store rows, export files and summary pinned here; the
DuckDB memory limit is lowered only for those statements and put back after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from latentbench._compat import TEXT
from latentbench.io._store_schema import to_arrow
from latentbench.io.formats import read_results
from latentbench.io.store import WORK_MEMORY, Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

HEADER = (
    "model,benchmark,item,score,metric,filter,trial,split,source,source_file,run_timestamp,"
    "item_hash,source_model,flag"
)


def _table(folder: Path) -> Path:
    """Two models, three items (ids as real ones), one empty score, one repeated row."""
    path = folder / "board.csv"
    path.write_text(
        "model,item,score\n"
        "org-b/other-13b,task/12345,1\n"
        "org-a/model-name-7b,task/12345,0\n"
        "org-a/model-name-7b,task/00002,1\n"
        "org-b/other-13b,task/00002,\n"
        "org-a/model-name-7b,task/9,0.5\n"
        "org-b/other-13b,task/9,0\n"
        "org-b/other-13b,task/9,0\n"
    )
    return path


def _limit(connection: duckdb.DuckDBPyConnection) -> str:
    return str(connection.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def test_ingest_export_and_summary_of_a_small_table_are_pinned(tmp_path):
    path = _table(tmp_path)
    frame, report = read_results("table", path, benchmark="lb")
    assert report.dropped == {
        "empty score (missing)": 1,
        "same observation repeated in one file (kept once)": 1,  # a repeat inside board.csv
    }
    with Store(tmp_path / "s.duckdb") as db:
        result = db.ingest(frame, report)
        assert (result["n_new"], result["n_present"]) == (5, 0)
        assert db.ingest(frame, report)["n_present"] == 5  # re-ingesting adds nothing
        assert db.export(tmp_path / "out.csv") == 5
        assert db.export(tmp_path / "out.parquet") == 5
        summary = db.summary()
    rows = [
        ("org-a/model-name-7b", "task/00002", "1.0"),
        ("org-a/model-name-7b", "task/12345", "0.0"),
        ("org-a/model-name-7b", "task/9", "0.5"),
        ("org-b/other-13b", "task/12345", "1.0"),
        ("org-b/other-13b", "task/9", "0.0"),
    ]
    expected = [HEADER] + [
        f"{m},lb,{i},{s},score,none,0,unknown,table,{path},,,{m}," for m, i, s in rows
    ]
    assert (tmp_path / "out.csv").read_text().splitlines() == expected
    back = pq.read_table(tmp_path / "out.parquet").to_pandas()
    assert list(back.columns) == HEADER.split(",")
    assert list(zip(back["model"], back["item"], back["score"].map(str), strict=True)) == rows
    assert back["source_file"].eq(str(path)).all() and back["run_timestamp"].isna().all()
    assert summary.drop(columns=["observed_fraction"]).to_dict("records") == [
        {
            "benchmark": "lb",
            "n_models": 2,
            "n_items": 3,
            "splits": "unknown",  # one split: its name (n_items counts its items)
            "n_rows": 5,
            "is_binary": False,
            "choices": "score/none",
            "sources": "table",
        }
    ]
    assert summary["observed_fraction"].tolist() == [5 / 6]


def test_repeated_keys_are_found_with_constant_columns_left_out(tmp_path):
    # benchmark, metric, filter and split are one value in every row; trial varies: rows
    # differing only in trial are two observations, a repeated (model, item, trial) is one
    path = tmp_path / "trials.csv"
    path.write_text(
        "model,item,score,trial\n"
        "org/m-7b,task/1,1,0\n"
        "org/m-7b,task/1,0,1\n"
        "org/m-7b,task/1,1,0\n"
        "org/m-7b,task/2,0,0\n"
    )
    frame, report = read_results("table", path, benchmark="lb")
    assert sorted(zip(frame["item"], frame["trial"], frame["score"], strict=True)) == [
        ("task/1", 0, 1.0),
        ("task/1", 1, 0.0),
        ("task/2", 0, 0.0),
    ]
    assert report.dropped == {"same observation repeated in one file (kept once)": 1}
    path.write_text("model,item,score,trial\norg/m-7b,task/1,1,0\norg/m-7b,task/1,0,0\n")
    with pytest.raises(Exception, match="different scores"):
        read_results("table", path, benchmark="lb")


class _Spy:
    """A store connection that records the memory limit each whole-table statement ran under."""

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self.connection = connection
        self.limits: list[str] = []

    def execute(self, query: str, *args: object) -> duckdb.DuckDBPyConnection:
        whole = (
            "COPY",
            "INSERT INTO responses",
            "\n            WITH reduced",
            "\n            WITH base",
        )
        if query.startswith(whole):
            self.limits.append(_limit(self.connection))
        return self.connection.execute(query, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.connection, name)


def test_whole_table_statements_run_under_the_work_memory_and_the_limit_is_put_back(tmp_path):
    frame, report = read_results("table", _table(tmp_path), benchmark="lb")
    with Store(tmp_path / "s.duckdb") as db:
        before = _limit(db.connection)
        spill = "SELECT current_setting('temp_directory')"
        folder = db.connection.execute(spill).fetchall()
        spy = _Spy(db.connection)
        db.connection = spy  # type: ignore[assignment]
        db.ingest(frame, report)
        db.export(tmp_path / "out.parquet")
        db.summary()
        db.coverage("lb")
        assert spy.limits == ["2.0 GiB"] * 4 and WORK_MEMORY == 2 * 1024**3
        assert _limit(spy.connection) == before  # DuckDB's default again
        assert spy.connection.execute(spill).fetchall() == folder  # nothing spilled: reset
        for limit, spelled in (("8GB", "7.4 GiB"), ("1GB", "953.6 MiB")):
            # a limit set on the connection is the caller's: kept, neither lowered nor raised
            spy.connection.execute(f"SET memory_limit = '{limit}'")
            db.export(tmp_path / "out.parquet", force=True)
            assert spy.limits[-1] == spelled and _limit(spy.connection) == spelled
        db.connection = spy.connection


def test_text_columns_go_to_the_store_without_a_copy(tmp_path):
    # the readers' text columns are Arrow large_string: taken as they are, offsets and data
    # (a cast to 32-bit offsets rebuilt the offsets of every text column: 0.9 GB at 24M rows)
    frame, _ = read_results("table", _table(tmp_path), benchmark="lb")
    assert frame["model"].dtype == TEXT
    table = to_arrow(frame)

    def addresses(values: object) -> list[int]:
        chunk = values.chunks[0]  # type: ignore[attr-defined]
        return [int(chunk.buffers()[k].address) for k in (1, 2)]

    assert addresses(table.column("model")) == addresses(frame["model"].array._pa_array)
    assert table.column("model").to_pylist() == frame["model"].tolist()
    plain = to_arrow(frame.astype({"model": object}))  # Python strings: 32-bit offsets
    assert plain.column("model").to_pylist() == frame["model"].tolist()


def test_an_in_memory_store_keeps_duckdbs_limit(tmp_path):
    # DuckDB would spill into the working folder: an in-memory store holds its rows as before
    frame, report = read_results("table", _table(tmp_path), benchmark="lb")
    with Store(":memory:") as db:
        before = _limit(db.connection)
        spy = _Spy(db.connection)
        db.connection = spy  # type: ignore[assignment]
        db.ingest(frame, report)
        db.export(tmp_path / "out.csv")
        assert spy.limits == [before, before]
        db.connection = spy.connection
    assert (tmp_path / "out.csv").read_text().count("\n") == 6


_HOLDER = """
import sys
import latentbench.io.store as S
S.WORK_MEMORY = int(sys.argv[3])
with S.Store(sys.argv[1], read_only=True) as db:
    db.connection.execute("SET threads = 1")
    db.connection.execute("SET enable_progress_bar = false")
    db.export(sys.argv[2])
    print("exported", flush=True)
    sys.stdin.readline()  # holds its spilled blocks until told
"""


def test_two_processes_spilling_from_one_store_leave_nothing_beside_it(tmp_path, monkeypatch):
    # two `ls`/`export` of one large store at once (read-only: DuckDB lets both open it) both
    # spill under the work-memory limit: each into its own folder, removed as it closes. Into
    # one shared S.duckdb.tmp, DuckDB 1.4 crashed (segmentation fault) and DuckDB 2.0 left
    # the folder behind when its maker closed first
    store = tmp_path / "s.duckdb"
    # 600k rows of hex text (was 1M): sorted under a 100 MiB limit they spill, as the two
    # spill folders checked below show (from 400k to 1M rows the export spills and succeeds
    # at this limit with DuckDB 2.0.1; at 300k it ran out of memory instead)
    rows = 600_000
    with Store(store) as db:
        db.connection.execute(
            "INSERT INTO responses SELECT md5(i::VARCHAR), 'lb', md5((7 * i)::VARCHAR), "
            "(i % 2)::DOUBLE, 'acc', 'none', 0, 'unknown', 'table', 'x.csv', NULL, NULL, "
            f"md5(i::VARCHAR), NULL, 'r', now() FROM range({rows}) r(i)"
        )
    limit = 100 * 1024**2
    monkeypatch.setattr("latentbench.io.store.WORK_MEMORY", limit)
    first = Store(store, read_only=True)
    first.connection.execute("SET threads = 1")
    assert first.export(tmp_path / "a.parquet") == rows
    other = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(store), str(tmp_path / "b.parquet"), str(limit)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None
        assert other.stdout.readline().strip() == "exported"
        # both spilled, each into a folder of its own beside the store, still held
        spilled = {p.name for p in tmp_path.iterdir()} - {"a.parquet", "b.parquet", "s.duckdb"}
        assert spilled == {f"s.duckdb.tmp-{os.getpid()}", f"s.duckdb.tmp-{other.pid}"}, spilled
        first.close()  # the first to spill closes while the other holds its blocks
        other.communicate("\n", timeout=120)
    finally:
        first.close()
        if other.poll() is None:
            other.kill()
    assert other.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet", "s.duckdb"]
    assert pq.read_table(tmp_path / "b.parquet").equals(pq.read_table(tmp_path / "a.parquet"))


def test_duckdbs_default_limit_is_asked_once_per_process(tmp_path, monkeypatch):
    # each bounded statement opened an in-memory database to read DuckDB's default limit
    # (~20 ms: every ingest, export, summary and coverage of a store paid it)
    frame, report = read_results("table", _table(tmp_path), benchmark="lb")
    with Store(tmp_path / "s.duckdb") as db:
        db.ingest(frame, report)  # the default asked here, if not before in this process
        opened: list[tuple] = []
        connect = duckdb.connect

        def counting(*args, **kwargs):
            opened.append(args)
            return connect(*args, **kwargs)

        monkeypatch.setattr(duckdb, "connect", counting)
        assert db.export(tmp_path / "out.parquet") == 5
        db.summary()
        db.coverage("lb")
        limit = _limit(db.connection)
    assert opened == [] and limit != "2.0 GiB"  # the store's default again after each
