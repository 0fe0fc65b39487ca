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


_NEXT = "::next-command::"
_COMMANDS = f"""
import json, sys
from latentbench.cli import main
codes, given = [], sys.argv[1:]  # decoded by this process, as the console script's are
commands = [[]]
for arg in given:
    commands.append([]) if arg == {_NEXT!r} else commands[-1].append(arg)
for args in commands:
    for stream in (sys.stdout, sys.stderr):
        print("=== " + args[0], file=stream, flush=True)
    sys.argv = ["latentbench", *args]
    try:
        main()
        codes.append(0)
    except SystemExit as exc:
        codes.append(exc.code if isinstance(exc.code, int) else 1)
print("=== codes " + json.dumps(codes), flush=True)
"""


def _ascii_runs(commands: list[list[str]], cwd: Path) -> list[tuple[int, str, str]]:
    """``latentbench ARGS`` for each ARGS, one after the other through the console script's
    ``main()`` in one process under ``LC_ALL=C`` with UTF-8 mode off and no PYTHONIOENCODING
    (one process's start-up for the three commands, was one each); returns each command's
    exit code, standard output and standard error."""
    import json

    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "NO_COLOR": "1"}
    env.pop("PYTHONIOENCODING", None)
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-c", _COMMANDS, *[a for c in commands for a in (_NEXT, *c)][1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out, _, codes = done.stdout.rpartition("=== codes ")
    outs = out.split("=== ")[1:]
    errs = done.stderr.split("=== ")[1:]
    assert len(outs) == len(errs) == len(commands), (done.stdout, done.stderr)
    return list(zip(json.loads(codes), outs, errs, strict=True))


def test_a_store_and_a_file_under_a_non_ascii_folder_in_the_c_locale(tmp_path):
    folder = tmp_path / "é"
    folder.mkdir()
    rows = ["model,q1,q2,q3", "m0,1,0,1", "m1,0,0,1", "m2,1,1,1"]
    (folder / "cal.csv").write_text("\n".join(rows) + "\n")
    store = folder / "store.duckdb"
    ingest, listed, exported = _ascii_runs(
        [
            ["ingest", "table", str(folder / "cal.csv"), "--benchmark", "b", "--store", str(store)],
            ["ls", "--store", str(store)],
            ["export", str(folder / "out.csv"), "--store", str(store)],
        ],
        tmp_path,
    )
    assert ingest[0] == 0, ingest[2]
    assert "Traceback" not in ingest[2]
    assert listed[0] == 0 and "Traceback" not in listed[2], listed[2]
    assert exported[0] == 0, exported[2]
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
