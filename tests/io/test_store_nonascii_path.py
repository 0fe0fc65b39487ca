"""A store (or an ingested file) under a non-ASCII path in an ASCII-only locale: ``LC_ALL=C``
with Python's UTF-8 mode off spells the path's bytes ``é`` as surrogate escapes, which DuckDB
could not take (``RuntimeError: std::bad_cast``, a traceback) and Arrow refused as the rows'
``source_file`` (``UnicodeEncodeError``). DuckDB now gets the UTF-8 text of the path's bytes
(the same file), and a path whose bytes are not UTF-8 is an error naming it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from latentbench.exceptions import InputError
from latentbench.io.store import Store, duckdb_path

SRC = Path(__file__).resolve().parents[2] / "src"


def _ascii_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``latentbench ARGS`` under ``LC_ALL=C`` with UTF-8 mode off and no PYTHONIOENCODING."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "NO_COLOR": "1"}
    env.pop("PYTHONIOENCODING", None)
    env["PYTHONPATH"] = str(SRC)
    return subprocess.run(
        [sys.executable, "-c", "from latentbench.cli import main\nmain()\n", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def test_a_store_and_a_file_under_a_non_ascii_folder_in_the_c_locale(tmp_path):
    folder = tmp_path / "é"
    folder.mkdir()
    rows = ["model,q1,q2,q3", "m0,1,0,1", "m1,0,0,1", "m2,1,1,1"]
    (folder / "cal.csv").write_text("\n".join(rows) + "\n")
    store = folder / "store.duckdb"
    ingest = _ascii_run(
        ["ingest", "table", str(folder / "cal.csv"), "--benchmark", "b", "--store", str(store)],
        tmp_path,
    )
    assert ingest.returncode == 0, ingest.stderr
    assert "Traceback" not in ingest.stderr
    listed = _ascii_run(["ls", "--store", str(store)], tmp_path)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    exported = _ascii_run(["export", str(folder / "out.csv"), "--store", str(store)], tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert (folder / "out.csv").read_text().count("\n") == 1 + 9
    with duckdb.connect(str(store), read_only=True) as con:  # the file at the path given
        files = con.execute("SELECT DISTINCT source_file FROM responses").fetchall()
    assert files == [(str(folder / "cal.csv"),)]  # the name as the user sees it


def test_a_path_whose_bytes_are_not_utf8_is_refused_by_name(tmp_path):
    latin = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.duckdb")  # Latin-1 bytes
    with pytest.raises(InputError, match=r"caf\\xe9\.duckdb: the path is not UTF-8 text"):
        duckdb_path(latin)
    with pytest.raises(InputError, match=r"DuckDB opens UTF-8 paths only"):
        Store(latin)
    assert duckdb_path(str(tmp_path / "é.duckdb")) == str(tmp_path / "é.duckdb")
    assert duckdb_path(":memory:") == ":memory:"
