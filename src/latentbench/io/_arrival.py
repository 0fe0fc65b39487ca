"""What a file that came from another machine is, when it is not the text or table expected.

Every reader (:func:`~latentbench.io.formats.read_results`, :meth:`ResponseMatrix.read
<latentbench.io.ResponseMatrix.read>`) asks these before it parses, so that a gzipped samples
file, a zipped results folder or a UTF-16 file (PowerShell's ``>``, Excel's "Unicode Text") is
refused saying what it is and what to do, rather than as "not UTF-8" or "unknown metric".
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["encoding_hint", "packed_advice", "packed_kind", "tilde_hint"]

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed"),
    (b"PK\x03\x04", "zip archive"),
    (b"PK\x05\x06", "zip archive"),
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
)

_WORKBOOKS = frozenset({".xlsx", ".xlsm", ".ods", ".numbers"})


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


def packed_advice(path: str | Path, kind: str, expected: str) -> str:
    """The refusal of a compressed file or an archive (``kind``, from :func:`packed_kind`)
    found where ``expected`` is read: names the file and what it is, and says how to unpack
    it."""
    name = Path(path).name
    if kind.endswith("archive"):
        tool = {"zip archive": "unzip", "7z archive": "7z x"}.get(kind, "tar xf")
        do = f"unpack it first ({tool} {name}) and give the folder or the files it holds"
    else:
        tool = {
            "gzip-compressed file": "gunzip -k",
            "bzip2-compressed file": "bunzip2 -k",
            "xz-compressed file": "unxz -k",
            "zstd-compressed file": "unzstd",
        }[kind]
        do = f"decompress it first ({tool} {name}) and give the file it writes"
    return f"{path}: a {kind}; expected {expected} (read uncompressed only): {do}"


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


def encoding_hint(path: str | Path) -> str:
    """`` (the file is UTF-16 ...)`` when the file's first bytes say UTF-16 (a byte-order
    mark, or the zero bytes of ASCII text in UTF-16), else empty: said after "not UTF-8"."""
    head = _head(Path(path))
    utf16 = head.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not utf16 and len(head) >= 8:  # ASCII in UTF-16: every other byte zero, no other
        zeros = [part.count(0) / len(part) for part in (head[0::2], head[1::2])]
        utf16 = max(zeros) > 0.9 and min(zeros) < 0.1
    if not utf16:
        return ""
    return (
        " (the file is UTF-16, as PowerShell's '>' and Excel's 'Unicode Text' write: convert "
        "it, e.g. iconv -f UTF-16 -t UTF-8 FILE > NEW)"
    )
