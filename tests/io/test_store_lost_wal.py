"""A store copied after its writer was killed (SIGKILL) without its ``.wal`` file: DuckDB had
not yet moved the writes (here: every table) from ``S.duckdb.wal`` into ``S.duckdb``, so the
copy is an empty DuckDB database. It was reported as "a DuckDB file without latentbench's
'meta' table", which says nothing of the missing ``.wal`` or what to do."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.store import Store

SRC = Path(__file__).resolve().parents[2] / "src"
KILLED = (
    "import os, signal, sys\n"
    "from latentbench.io.store import Store\n"
    "store = Store(sys.argv[1])\n"  # open: the schema in the .wal, not yet in the file
    "os.kill(os.getpid(), signal.SIGKILL)\n"
)


@pytest.fixture(scope="module")
def killed_store(tmp_path_factory) -> Path:
    """A store whose writer was killed right after opening it: its tables only in its .wal.
    Made once for the module (a process each, ~0.6 s, before): the tests only copy it."""
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs SIGKILL (POSIX)")
    original = tmp_path_factory.mktemp("killed") / "s.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(original)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    return original


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_copy_without_its_wal_says_to_copy_the_wal(tmp_path, killed_store):
    original = killed_store
    wal = Path(f"{original}.wal")
    assert wal.exists()
    copy = tmp_path / "copy.duckdb"
    shutil.copy(original, copy)  # the file alone
    said = r"copy\.duckdb: an empty DuckDB database without latentbench's 'meta' table, and no"
    with pytest.raises(InputError, match=said) as caught:
        Store(copy, read_only=True)
    text = str(caught.value)
    assert "copy.duckdb.wal" in text and "open the original store" in text
    assert "killed or crashed" in text
    shutil.copy(wal, f"{copy}.wal")  # what the message says to do
    with Store(copy, read_only=True) as db:
        assert "schema_version" in db.meta


def test_an_empty_database_with_its_wal_is_not_told_to_copy_it(tmp_path):
    import duckdb

    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    Path(f"{path}.wal").write_bytes(b"")  # a .wal that adds nothing
    with pytest.raises(InputError, match=r"its empty\.duckdb\.wal adds none") as caught:
        Store(path, read_only=True)
    assert "copy" not in str(caught.value)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_writable_open_of_a_copy_without_its_wal_is_refused_and_writes_nothing(
    tmp_path, killed_store
):
    """Opened for writing (``ingest --store copy.duckdb``), the same copy silently became a
    new, empty store; the original's tables, in its ``.wal``, could then never be added back
    (DuckDB would replay that .wal on a file it no longer matches)."""
    original = killed_store
    copy = tmp_path / "copy.duckdb"
    shutil.copy(original, copy)
    before = copy.read_bytes()
    with pytest.raises(InputError, match=r"copy\.duckdb\.wal .*nothing was written"):
        Store(copy)
    assert copy.read_bytes() == before and not Path(f"{copy}.wal").exists()
    shutil.copy(Path(f"{original}.wal"), f"{copy}.wal")  # what the message says to do
    with Store(copy) as db:
        assert "schema_version" in db.meta


def test_a_new_file_still_becomes_a_store_and_opens_again(tmp_path):
    path = tmp_path / "new.duckdb"
    for _ in range(2):
        with Store(path) as db:
            assert "schema_version" in db.meta
