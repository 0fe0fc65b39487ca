"""Writing output tables safely: spreadsheet-safe text cells, all-or-nothing directories.

``abilities.csv`` and ``items.csv`` are meant to be opened in spreadsheets, so a text cell that
a spreadsheet would run as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return, and is not a number) is written with a leading apostrophe, and so is a cell
that already starts with one (so the escape can be undone). :func:`unescape_spreadsheet`
undoes it when the fit directory is read back, so ids round-trip unchanged. Data-exchange
outputs (``latentbench export``) are written verbatim.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from latentbench._compat import TEXT
from latentbench.exceptions import InputError
from latentbench.io._arrival import tilde_hint

__all__ = [
    "check_destination",
    "csv_text",
    "escape_spreadsheet",
    "process_exists",
    "replace_whole",
    "staging_path",
    "unescape_spreadsheet",
    "write_directory",
]

_FORMULA = r"^[=+\-@\t\r]"


def escape_spreadsheet(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """A copy of ``frame`` whose text ``columns`` are safe to open in a spreadsheet.

    A cell starting with ``= + - @``, a tab or a carriage return that is not a number, or a
    cell starting with an apostrophe, gets a leading apostrophe.
    """
    out = frame.copy()
    for column in columns:
        if column not in out.columns:
            continue
        text = out[column].astype(TEXT)
        risky = text.str.match(_FORMULA) & pd.to_numeric(text, errors="coerce").isna()
        risky |= text.str.startswith("'")
        out[column] = text.where(~risky, "'" + text)
    return out


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` (without its index) as CSV text that any CSV reader reads back cell for cell.

    pandas quotes only the fields that hold the delimiter, a quote or ``\\n``: an id with a
    lone carriage return was written bare, and a reader then split its row in two (``tiny``'s
    design read back with a row too many). When a column name or text cell holds a carriage
    return, every text field is quoted (``csv.QUOTE_NONNUMERIC``, as the fit directory's
    tables always are); otherwise the text is pandas' own, byte for byte.

    Parameters
    ----------
    frame : DataFrame
        The table to write.

    Returns
    -------
    str
        The CSV text, lines ended as :meth:`pandas.DataFrame.to_csv` ends them; write it as
        UTF-8 bytes (``path.write_bytes(text.encode("utf-8"))``) to keep them.
    """
    import csv

    risky = any("\r" in str(column) for column in frame.columns)
    for column in frame.columns:
        values = frame[column]
        if risky:
            break
        if values.dtype.kind not in "biufcmM":  # text (or mixed) cells
            risky = bool(values.astype(TEXT).str.contains("\r", regex=False).any())
    if risky:
        return str(frame.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC))
    return str(frame.to_csv(index=False))


def unescape_spreadsheet(values: pd.Series) -> pd.Series:
    """Undo :func:`escape_spreadsheet` on one column read back as text."""
    text = values.astype(TEXT)
    return text.where(~text.str.startswith("'"), text.str.slice(1))


def write_directory(
    out: Path,
    writers: Mapping[str, Callable[[Path], object]],
    last: str,
    remove: Sequence[str] = (),
    *,
    flag: str = "out=",
) -> None:
    """Write the files of ``writers`` (name -> function writing that path) into ``out``
    all together: into a temporary folder beside ``out`` first, then moved in, ``last``
    (the file that says the directory is complete) after the others.

    An existing ``out`` is reused (other files in it are kept, except those named in
    ``remove``, files of an earlier write that this one does not replace): its ``last`` file
    is removed before the others are removed or replaced, so an interruption leaves no new
    table next to a stale ``last`` file. Any failure is an :class:`InputError` naming
    ``out`` as ``flag`` spells it (the caller's Python keyword, ``out=`` or ``directory=``;
    the command line says ``--out``); nothing partial is left behind.

    Two processes writing the same ``out`` at once (two runs given one ``--out``) move their
    files in one after the other (a lock beside ``out``, :func:`_moving_in`): ``out`` ends
    with all the files of one of them, never some of each, and neither fails because the
    other created ``out`` first.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{flag}{out} is a file; expected a directory (new or to reuse)")
    blocked = _folder_in_the_way(out, [*writers, *remove])
    if blocked is not None:  # before any file is moved in: nothing written half-way
        raise InputError(f"cannot write {blocked}: {_FOLDER_IN_THE_WAY}")
    try:
        parent = out.parent
        parent.mkdir(parents=True, exist_ok=True)
        # mkdir (not mkdtemp, which makes it private): the output keeps the umask's mode
        staging = staging_path(out)
        staging.mkdir()
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        for name, write in writers.items():
            write(staging / name)
        with _moving_in(out, flag):
            if not out.exists():
                os.replace(staging, out)
                return
            (out / last).unlink(missing_ok=True)
            for name in remove:
                (out / name).unlink(missing_ok=True)
            for name in writers:
                if name != last:
                    os.replace(staging / name, out / name)
            os.replace(staging / last, out / last)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


_FOLDER_IN_THE_WAY = (
    "it is a folder; expected a file path there (the file of that name is written): move "
    "or remove that folder, or give another output folder; nothing was written"
)


def _folder_in_the_way(out: Path, names: Sequence[str]) -> Path | None:
    """The first ``out/NAME`` of ``names`` that is a folder (not a link to one: a link is
    replaced), where a file of that name is to be written; None when there is none."""
    if not out.is_dir():
        return None
    for name in names:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            return path
    return None


def replace_whole(path: Path, text: str, encoding: str | None = None) -> None:
    """Write ``text`` at ``path`` whole or not at all: a temporary file beside it, renamed
    over it, so a write that fails midway (a full disk), a reader at that moment (a browser
    reloading a report) or another process writing it at once never sees a cut or interleaved
    file. A symlink to a file is followed (its target is replaced whole, the link kept; where
    its folder takes no new file, a folder read-only to this user, the target is written in
    place as before); a device (``/dev/stdout``) or a link to one is written in place. A file
    replaced keeps its permissions (a private ``0600`` file stays private)."""
    path = Path(path)
    followed = False
    if path.is_symlink():
        try:
            target = path.resolve()
        except (OSError, RuntimeError):  # a loop of links: written in place, as before
            target = path
        if target.is_file() or (not target.exists() and target.parent.is_dir()):
            path, followed = target, True
    if path.is_symlink() or (path.exists() and not path.is_file()):
        path.write_text(text, encoding=encoding)
        return
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except OSError:  # a new file: the umask's permissions
        mode = None
    staging = staging_path(path, "tmp")
    try:
        try:
            staging.write_text(text, encoding=encoding)
        except OSError:
            if not followed or staging.exists():  # a write that failed midway: raised
                raise
            # no file can be made beside the link's target (a folder read-only to this
            # user, the target writable): in place, as before
            path.write_text(text, encoding=encoding)
            return
        if mode is not None:
            os.chmod(staging, mode)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)


def _host() -> str:
    """This machine's name as a staging name holds it: letters and digits only."""
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:32] or "host"


def process_exists(pid: int) -> bool | None:
    """Whether process ``pid`` of this machine exists; None where that cannot be asked
    (Windows, where ``os.kill(pid, 0)`` would end that process)."""
    if os.name == "nt":
        return None
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: it exists
        return True
    return True


def staging_path(final: Path, tag: str = "partial", suffix: str = "") -> Path:
    """A hidden name beside ``final`` to write it under before it is moved in:
    ``.NAME.TAG-HOST-PID-RANDOM`` (``NAME`` cut to 40 characters).

    What a process of this machine that is gone left under such a name beside ``final`` (it
    was killed while writing: SIGKILL, the out-of-memory killer, a power cut) is removed
    first, so interrupted writes leave no hidden folders or files behind for good. Another
    machine's (a shared network folder) or a running process's are left alone.
    """
    prefix = f".{final.name[:40]}.{tag}-"
    host = _host()
    try:
        leftovers = [p for p in final.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:  # the folder is made or refused by the caller
        leftovers = []
    for leftover in leftovers:
        parts = leftover.name[len(prefix) :].split("-")
        if len(parts) < 3 or parts[0] != host or not parts[1].isdigit():
            continue
        if process_exists(int(parts[1])) is False:
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                try:
                    leftover.unlink()
                except OSError:
                    pass
    name = f"{prefix}{host}-{os.getpid()}-{uuid.uuid4().hex[:12]}{suffix}"
    return final.parent / name


MOVE_WAIT = 60.0
"""Seconds :func:`write_directory` waits for another process moving files into the same
folder (a few renames: milliseconds, unless that process hangs)."""


@contextmanager
def _moving_in(out: Path, flag: str = "out=") -> Iterator[None]:
    """Hold the lock of moving files into ``out``: ``.NAME.lock`` beside it (``flock``,
    let go by the system when its process dies), removed when the block ends. Where the
    system has no ``flock`` (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = out.parent / f".{out.name[:40]}.lock"
    deadline = time.monotonic() + MOVE_WAIT
    while True:
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise InputError(
                            f"cannot write {out}: another process has been writing it for "
                            f"{MOVE_WAIT:g} s (it holds {lock}); expected it free: wait until "
                            f"that run ends, or give this one another {flag}"
                        ) from None
                    time.sleep(0.02)
            try:  # the lock file may have been removed by its former holder meanwhile
                current = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            break
        os.close(fd)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)  # before letting go: a waiter finds it gone and retries
        os.close(fd)


def check_destination(
    out: Path, kind: str = "dir", flag: str = "--out", files: Sequence[str] = ()
) -> None:
    """Check, before any work, that ``out`` can be written: a folder (``kind="dir"``, new or
    to reuse) or a file (``kind="file"``, new or to replace).

    The nearest existing folder is probed by creating and removing a temporary entry in it, so
    a read-only place, ``/sys`` or ``/proc`` are found out now rather than after the work.
    Nothing is left behind.

    Parameters
    ----------
    out : Path
        The folder or file to be written.
    kind : {"dir", "file"}, default "dir"
        What ``out`` is to be.
    flag : str, default "--out"
        How the caller names ``out`` in the error (a command's option, or ``name=`` for a
        Python keyword).
    files : sequence of str, default ()
        With ``kind="dir"``: the names of the files to be written in ``out``; one that is a
        folder there is refused now, naming it (not ``Is a directory`` after the work).

    Raises
    ------
    InputError
        Naming ``flag``, ``out`` and what is wrong.
    """
    out = Path(out)
    sep = "" if flag.endswith("=") else " "  # "--out PATH" or "path=PATH"
    tilde = tilde_hint(out)
    if tilde:  # a folder named '~' made here would be mistaken for home (and rm -r'ed)
        raise InputError(f"{flag}{sep}{out}: no folder {out.parts[0]!r} here{tilde}")
    if kind == "dir" and out.exists() and not out.is_dir():
        raise InputError(f"{flag}{sep}{out} is a file; expected a directory (new or to reuse)")
    blocked = _folder_in_the_way(out, files) if kind == "dir" else None
    if blocked is not None:
        raise InputError(f"{flag}{sep}{out}: cannot write {blocked}: {_FOLDER_IN_THE_WAY}")
    if kind == "file" and out.is_dir():
        raise InputError(f"{flag}{sep}{out} is a directory; expected the file to write")
    probe = out if kind == "dir" and out.is_dir() else out.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"{flag}{sep}{out}: {probe} is a file; expected a folder there")
    if kind == "file" and probe != out.parent:
        raise InputError(f"{flag}{sep}{out}: the folder {out.parent} does not exist")
    try:
        shutil.rmtree(tempfile.mkdtemp(prefix=".latentbench-probe-", dir=probe))
    except OSError as exc:
        raise InputError(
            f"{flag}{sep}{out}: cannot write in {probe} ({exc.strerror or exc})"
        ) from None
