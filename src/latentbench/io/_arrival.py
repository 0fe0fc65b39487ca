"""What a file that came from another machine is, when it is not the text or table expected.

Every reader (:func:`~latentbench.io.formats.read_results`, :meth:`ResponseMatrix.read
<latentbench.io.ResponseMatrix.read>`) asks these before it parses, so that a zipped results
folder or a UTF-16 file (PowerShell's ``>``, Excel's "Unicode Text") is refused saying what it
is and what to do, rather than as "not UTF-8" or "unknown metric".

One file compressed on its own (``samples_x.jsonl.gz``, ``scores.csv.gz``; gzip, bzip2, xz
and zstd, the last through pyarrow's codec, a dependency already) is read through
:func:`open_unpacked`, its
decompressed bytes capped at :data:`MAX_UNPACKED_BYTES` (a decompression bomb stops there,
named), a corrupt or cut stream refused naming the file.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import zlib
from pathlib import Path
from typing import IO, Any

from latentbench.exceptions import InputError

__all__ = [
    "MAX_UNPACKED_BYTES",
    "PACKED_SUFFIXES",
    "READ_COMPRESSIONS",
    "encoding_hint",
    "open_unpacked",
    "packed_advice",
    "packed_kind",
    "packed_note",
    "read_unpacked",
    "tilde_hint",
    "unpacked_path",
    "unpacking",
]

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed"),
    (b"PK\x03\x04", "zip archive"),
    (b"PK\x05\x06", "zip archive"),
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"\x04\x22\x4d\x18", "lz4-compressed"),  # an lz4 frame: told, never read (no codec)
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
)

_WORKBOOKS = frozenset({".xlsx", ".xlsm", ".ods", ".numbers"})


MAX_UNPACKED_BYTES = 2 << 30
"""Most bytes one compressed file may decompress to (2 GiB, twice an Inspect ``.eval``
member's cap; an lm-eval samples file or a results table is far smaller): past it the read
stops with an error naming the file, so that a small crafted ``.gz`` cannot fill the memory."""

PACKED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
"""The name endings of a file compressed on its own, taken off to know what it holds
(``samples_x.jsonl.gz`` is a ``.jsonl`` file)."""


def _zstd_open(path: Path) -> IO[bytes] | None:
    """A zstd reader of ``path`` from Python's own ``compression.zstd`` (3.14), pyarrow's zstd
    codec (a dependency; built into its wheels) or the ``zstandard`` package; None when none
    is there (the file is then refused, saying how to decompress it). pyarrow comes before
    ``zstandard``: ``zstandard.open`` of a cut file returns what it could decompress (nothing,
    or the first part of the rows) without an error, where pyarrow and ``compression.zstd``
    refuse it."""
    try:
        from compression import zstd  # type: ignore[import-not-found]

        return zstd.open(path, "rb")  # type: ignore[no-any-return]
    except ImportError:
        pass
    if _pyarrow_zstd():
        import pyarrow as pa

        stream: Any = pa.CompressedInputStream(pa.OSFile(str(path), "rb"), "zstd")
        return stream  # type: ignore[no-any-return]
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        return None
    return zstandard.open(path, "rb")  # type: ignore[no-any-return]


def _pyarrow_zstd() -> bool:
    """Whether pyarrow (imported here, when a zstd file is met) has its zstd codec."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - a dependency
        return False
    return bool(pa.Codec.is_available("zstd"))


def _zstd_available() -> bool:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        try:
            import zstandard  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            return _pyarrow_zstd()
    return True


def unpacking(path: str | Path) -> str | None:
    """The compression of a file compressed on its own that :func:`open_unpacked` reads
    (``"gzip-compressed file"``, ...: :func:`packed_kind`'s words), by its first bytes; None
    for a plain file, an archive (a zip, a tar) and zstd without a zstd library."""
    kind = packed_kind(path)
    if kind in ("gzip-compressed file", "bzip2-compressed file", "xz-compressed file"):
        return kind
    if kind == "zstd-compressed file" and _zstd_available():
        return kind
    return None


def unpacked_path(path: str | os.PathLike[str]) -> Path:
    """``path`` less its compression suffix (``runs/x.jsonl.gz`` -> ``runs/x.jsonl``): the name
    that says what the file holds, for the readers that go by a file's name or suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in PACKED_SUFFIXES and path.stem:
        return path.with_name(path.stem)
    return path


class _Unpacked(io.RawIOBase):
    """The decompressed bytes of ``path``, at most :data:`MAX_UNPACKED_BYTES`; a corrupt or
    cut stream and a stream past the cap raise an :class:`InputError` naming the file."""

    def __init__(self, path: Path, kind: str, stream: IO[bytes], cap: int) -> None:
        super().__init__()
        self.path, self.kind, self.stream, self.cap = path, kind, stream, cap
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        try:
            data = self.stream.read(len(view))
        except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
            raise InputError(
                f"{self.path}: a corrupt or cut {self.kind} ({exc or type(exc).__name__}); "
                "expected a whole compressed file (a copy or download that stopped? copy it "
                "again)"
            ) from None
        self.total += len(data)
        if self.total > self.cap:
            raise InputError(
                f"{self.path}: a {self.kind} that decompresses to more than {self.cap:,} bytes; "
                f"expected at most {self.cap:,} bytes once decompressed (a decompression bomb, "
                "or a file to split before reading)"
            )
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            super().close()


def open_unpacked(path: str | Path, cap: int | None = None) -> IO[bytes]:
    """``path`` opened for reading bytes: a plain file as it is, a file compressed on its own
    (:func:`unpacking`) decompressed as it is read, at most ``cap`` bytes (default
    :data:`MAX_UNPACKED_BYTES`).

    Parameters
    ----------
    path : str or Path
        The file.
    cap : int, optional
        Most decompressed bytes read before an :class:`InputError` naming the file.

    Returns
    -------
    binary file object
        Close it (a ``with`` block).
    """
    path = Path(path)
    kind = unpacking(path)
    if kind is None:
        return open(path, "rb")
    stream: Any
    if kind == "gzip-compressed file":
        stream = gzip.open(path, "rb")
    elif kind == "bzip2-compressed file":
        stream = bz2.open(path, "rb")
    elif kind == "xz-compressed file":
        stream = lzma.open(path, "rb")
    else:
        stream = _zstd_open(path)
    assert stream is not None  # unpacking() said zstd is installed
    raw = _Unpacked(path, kind, stream, MAX_UNPACKED_BYTES if cap is None else cap)
    return io.BufferedReader(raw, 1 << 20)


def read_unpacked(path: str | Path, cap: int | None = None) -> bytes:
    """The bytes of ``path``, decompressed when it is compressed on its own (see
    :func:`open_unpacked`)."""
    with open_unpacked(path, cap) as handle:
        return handle.read()


def _head(path: Path, size: int = 512) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def packed_kind(path: str | Path) -> str | None:
    """``"gzip-compressed file"``, ``"zip archive"``, ``"gzip-compressed tar archive"``, ...
    when the file's first bytes say it is compressed or an archive (whatever its suffix; a tar
    archive compressed is told by its name, ``.tar.gz``, ``.tgz``); None otherwise, and for a
    spreadsheet workbook (``.xlsx``: a zip), which the table reader refuses by its suffix."""
    path = Path(path)
    head = _head(path)
    name = path.name.lower()
    if path.suffix.lower() in _WORKBOOKS:  # zip inside, refused as a spreadsheet by its suffix
        return None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            if kind.endswith("-compressed") and (".tar." in name or name.endswith(".tgz")):
                return f"{kind} tar archive"
            return kind if kind.endswith("archive") else f"{kind} file"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar archive"
    return None


READ_COMPRESSIONS = "gzip, bzip2, xz and zstd"
"""The compressions of a file compressed on its own that the readers decompress (told by
the file's first bytes, whatever its name); another one (lz4) is refused saying so."""


def inspect_log(path: str | Path) -> bool:
    """Whether a zip archive is an Inspect AI ``.eval`` log (``header.json``, or
    ``_journal/start.json`` of one still written): unzipping it is no way to read it."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False
    return bool(names & {"header.json", "_journal/start.json"})


_INSPECT_LOG = (
    "an Inspect AI log (a zip archive holding header.json): the inspect source reads it "
    "(latentbench ingest inspect; estimate and compare read it with source inspect)"
)


def packed_note(kind: str, path: str | Path | None = None) -> str:
    """Why a compressed file or an archive (``kind``, from :func:`packed_kind`) found in a
    folder is skipped, in a few words (the load report's reason); an Inspect log (``path``
    given) is said as one."""
    if kind == "zip archive" and path is not None and inspect_log(path):
        return _INSPECT_LOG
    if kind == "lz4-compressed file":
        return f"an {kind}; the compressions read are {READ_COMPRESSIONS}: decompress it to read it"
    return f"a {kind}: unpack it to read it"


def packed_advice(path: str | Path, kind: str, expected: str) -> str:
    """The refusal of a compressed file or an archive (``kind``, from :func:`packed_kind`)
    found where ``expected`` is read: names the file and what it is, and says how to unpack
    it (a compression that is not read: which ones are)."""
    name = Path(path).name
    if kind == "zip archive" and inspect_log(path):  # not to unzip: another source's file
        return f"{path}: {_INSPECT_LOG.replace(':', f'; expected {expected}:', 1)}"
    if kind.endswith("archive"):
        tool = {"zip archive": "unzip", "7z archive": "7z x"}.get(kind, "tar xf")
        do = f"unpack it first ({tool} {name}) and give the folder or the files it holds"
    else:
        tool = {
            "gzip-compressed file": "gunzip -k",
            "bzip2-compressed file": "bunzip2 -k",
            "xz-compressed file": "unxz -k",
            "zstd-compressed file": "unzstd",
            "lz4-compressed file": "lz4 -d",
        }[kind]
        do = f"decompress it first ({tool} {name}) and give the file it writes"
        if kind == "zstd-compressed file":  # read as it is with a zstd library only
            do = f"install the zstandard package to read it as it is, or {do}"
        if kind == "lz4-compressed file":
            return (
                f"{path}: an {kind}; expected {expected} (the compressions read are "
                f"{READ_COMPRESSIONS}): {do}"
            )
        return f"{path}: a {kind}; expected {expected}: {do}"
    return f"{path}: a {kind}; expected {expected} (an archive is read only unpacked): {do}"


def tilde_hint(path: str | os.PathLike[str]) -> str:
    """`` ('~' is not the home folder here: ...)`` when ``path`` starts with a ``~`` that no
    shell expanded (a quoted ``"~/x"``) and no folder ``~`` exists here, else empty: said after
    "not found", and why :func:`~latentbench.io.check_destination` refuses to make ``~``."""
    parts = Path(path).parts
    if not parts or not parts[0].startswith("~") or Path(parts[0]).exists():
        return ""
    return (
        f" ({parts[0]!r} is not the home folder here: the shell expands it only unquoted; "
        "write the path unquoted, or with $HOME)"
    )


def _utf16_of_other_text(head: bytes) -> bool:
    """Whether ``head`` is UTF-16 (no byte-order mark) of text mostly not ASCII (Chinese
    names, say): its separators, digits and line ends are ASCII, each with a zero byte on
    the same side (the second byte of each pair in UTF-16-LE, the first in -BE), no zero byte
    on the other side, and the bytes decode as that UTF-16 to text without control
    characters. UTF-8 text never holds a zero byte but as a NUL character, which a file
    holds rarely and not every other byte: a few NULs are not enough (at least 8 and 3% of
    the pairs)."""
    pairs = len(head) // 2
    if pairs < 32:
        return False
    first, second = head[0 : 2 * pairs : 2].count(0), head[1 : 2 * pairs : 2].count(0)
    zeros, other = max(first, second), min(first, second)
    if other or zeros < max(8, 0.03 * pairs):
        return False
    codec = "utf-16-le" if second > first else "utf-16-be"
    try:  # a pair cut at the end of the head is not an error
        text = codecs.getincrementaldecoder(codec)("strict").decode(head[: 2 * pairs])
    except UnicodeDecodeError:
        return False
    return not any(ord(c) < 32 and c not in "\t\n\r" for c in text)


def undecodable_at(path: str | Path) -> str:
    """Where a file that is not UTF-8 first fails to decode, said after "not UTF-8 text":
    `` (line L: byte 0xNN at column C)`` (a byte-order mark is no column); empty when the
    file cannot be read again or decodes after all. Lines end as the readers split them
    (universal newlines): LF, CRLF or a CR alone."""
    try:
        with open_unpacked(path) as handle:
            data = handle.read()
        data = data.removeprefix(b"\xef\xbb\xbf")
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
        column = exc.start - max(before.rfind(b"\n"), before.rfind(b"\r"))
        return f" (line {line:,}: byte 0x{data[exc.start]:02x} at column {column:,})"
    except (OSError, InputError):
        pass
    return ""


def encoding_hint(path: str | Path) -> str:
    """`` (the file is UTF-16 ...)`` when the file's first bytes say UTF-16 (a byte-order
    mark, or the zero bytes of ASCII text in UTF-16), `` (an lz4-compressed file; ...)`` when
    they say a compression that is not read or an archive (:func:`packed_note`), else empty:
    said after "not UTF-8"."""
    kind = packed_kind(path)
    if kind is not None and unpacking(path) is None:  # a reader that went by the name
        return f" ({packed_note(kind, path)})"
    try:
        with open_unpacked(path) as handle:
            head = handle.read(512)
    except (OSError, InputError):
        head = b""
    utf16 = head.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not utf16 and len(head) >= 8:  # ASCII in UTF-16: every other byte zero, no other
        zeros = [part.count(0) / len(part) for part in (head[0::2], head[1::2])]
        utf16 = max(zeros) > 0.9 and min(zeros) < 0.1
    if not utf16:
        utf16 = _utf16_of_other_text(head)
    if not utf16:
        return ""
    return (
        " (the file is UTF-16, as PowerShell's '>' and Excel's 'Unicode Text' write: convert "
        "it, e.g. iconv -f UTF-16 -t UTF-8 FILE > NEW)"
    )
