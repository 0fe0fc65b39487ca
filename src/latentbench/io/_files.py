"""Reading tabular files the same way everywhere: ids stay text, empty cells are missing.

Both :meth:`ResponseMatrix.read` and the ``table`` ingest reader read CSV through
:func:`read_csv_text`, so ``007`` and ``7`` stay two ids, a model called ``NA`` keeps its name,
and a header that names a column twice is an error instead of a silent ``q1.1``.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._compat import PANDAS_3, TEXT, _has_nul, read_csv
from latentbench.exceptions import InputError
from latentbench.io._arrival import (
    encoding_hint,
    open_unpacked,
    packed_advice,
    packed_kind,
    read_unpacked,
    tilde_hint,
    unpacked_path,
    unpacking,
)

if TYPE_CHECKING:
    from latentbench.io._matrix import ResponseMatrix

__all__ = [
    "MISSING_TOKENS",
    "cells_sha256",
    "csv_line",
    "csv_record_lines",
    "file_sha256",
    "index_as_ids",
    "not_utf8",
    "read_csv_ids",
    "read_csv_text",
    "read_table_file",
    "read_table_rows",
    "spreadsheet_hint",
    "store_input_record",
]

MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none"})
"""Score cells (after stripping, case-insensitive) read as missing. Ids are never matched."""


def _check_header(path: Path, sep: str) -> None:
    hint = encoding_hint(path)
    if hint:  # UTF-16 without a byte-order mark decodes as UTF-8: NUL between the letters
        raise InputError(
            f"{path}: line 1: not UTF-8 text{hint}; expected a UTF-8 CSV file (Excel: save as "
            "'CSV UTF-8 (Comma delimited)')"
        )
    try:
        # as pandas: no BOM; a compressed file's decompressed text
        with io.TextIOWrapper(open_unpacked(path), encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle, delimiter=sep), [])
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    if len(header) == 1:  # one column: another program's separator (European Excel: ';')
        separator = next((c for c in (";", "\t", "|") if c in header[0]), None)
        if separator is not None:
            tsv = " (or name the file .tsv)" if separator == "\t" else ""
            raise InputError(
                f"{path}: line 1: one column named {_shorten(header[0])!r}: the file seems "
                f"separated by {separator!r}; expected a comma-separated CSV with '.' as the "
                f"decimal point{tsv} (Excel: save as 'CSV UTF-8 (Comma delimited)')"
            )
    repeated = [name for name, count in Counter(header).items() if count > 1]
    if repeated:
        raise InputError(
            f"{path}: line 1: column {repeated[0]!r} appears {header.count(repeated[0])} times; "
            "expected each column name once"
        )


def _shorten(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


_NUMBER_NA = ("", "nan", "NaN", "NA", "<NA>", "N/A", "n/a", "null", "NULL", "None", "-nan")
"""What pandas writes (and reads) as a missing number: read as NaN in every column but ids."""


def read_csv_ids(path: str | Path, ids: tuple[str, ...], **options: Any) -> pd.DataFrame:
    """Read a CSV that this package wrote, with the columns ``ids`` as text: a model, pool
    or item called ``NA``, ``null`` or ``None`` keeps its name (an empty id stays NaN), while
    the other columns are parsed as pandas does (a blank number is NaN). ``options`` go to
    :func:`pandas.read_csv`."""
    header = read_csv(path, nrows=0, **options).columns
    numbers = {str(c): list(_NUMBER_NA) for c in header if c not in ids}
    return read_csv(
        path,
        dtype={c: TEXT for c in ids if c in header},
        keep_default_na=False,
        na_values={**numbers, **{c: [""] for c in ids if c in header}},
        **options,
    )


def _separator(path: str | Path) -> str:
    """``"\t"`` for a ``.tsv`` file (``.tsv.gz`` too), else ``","``."""
    return "\t" if unpacked_path(path).suffix.lower() == ".tsv" else ","


def read_csv_text(path: str | Path) -> pd.DataFrame:
    """Read a CSV (``.tsv``: tab-separated) with every cell as text and empty cells as NaN;
    a file compressed on its own (``.csv.gz``, ...) is read decompressed.

    Raises
    ------
    InputError
        A repeated column name, a file that is not UTF-8 CSV, or a compressed file that is
        corrupt or decompresses past :data:`~latentbench.io._arrival.MAX_UNPACKED_BYTES`.
    """
    file = Path(path)
    sep = _separator(file)
    _check_header(file, sep)
    data = read_unpacked(file) if unpacking(file) else None
    source: Path | io.BytesIO = file if data is None else io.BytesIO(data)
    try:
        # compression=None: a path here holds plain bytes (decompressed ones are in a
        # BytesIO); pandas would go by the name (a plain r.csv.gz: BadGzipFile)
        frame = read_csv(source, sep=sep, dtype=TEXT, keep_default_na=False, na_values=[""],
                         compression=None)  # fmt: skip
    except pd.errors.EmptyDataError:
        raise InputError(f"{file}: the file is empty; expected a header line") from None
    except UnicodeDecodeError:
        raise not_utf8(file) from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise InputError(f"{file}: could not be read as CSV ({exc})") from None
    _check_cut(file, sep, len(frame.columns), data)
    return frame


def _check_cut(file: Path, sep: str, n_columns: int, data: bytes | None = None) -> None:
    """Refuse a CSV cut short: no line break at its end and a last line with fewer fields
    than the header (a copy or a download that stopped mid-row; pandas would read the row,
    the cells it lacks as missing). A last line holding a quote is left alone (it may end a
    cell that spans lines). ``data``: a compressed file's decompressed bytes."""
    if data is not None:
        tail = data[-(1 << 16) :]
    else:
        size = file.stat().st_size
        with open(file, "rb") as handle:
            handle.seek(max(0, size - (1 << 16)))
            tail = handle.read()
    if not tail or tail.endswith((b"\n", b"\r")):
        return
    breaks = re.compile(rb"\r\n|\r|\n")  # Excel for Mac's "CSV (Macintosh)" ends lines with CR
    last = breaks.split(tail)[-1].decode("utf-8", "replace")
    if '"' in last or not last.strip():
        return
    try:
        fields = next(csv.reader([last], delimiter=sep), [])
    except csv.Error:
        return
    if len(fields) < n_columns:
        line = len(breaks.findall(file.read_bytes() if data is None else data)) + 1
        raise InputError(
            f"{file}: line {line}: {len(fields)} of the header's {n_columns} fields "
            f"({_shorten(last)!r}) and no line break at the end: the file seems cut short (a "
            "copy or download that stopped); expected every line complete: copy it again"
        )


def csv_record_lines(path: str | Path, n_records: int | None = None) -> np.ndarray:
    """The file line (1-based) on which each data record of a CSV starts, numbered as
    :func:`read_csv_text` (pandas) reads them: blank lines (spaces and tabs other than the
    separator only) are skipped, and a quoted cell may span lines. With ``n_records`` (the rows
    read), a file of one line per record takes the fast path ``2, 3, ...``. Empty when the file
    cannot be read."""
    file = Path(path)
    try:
        stat = file.stat()
        if n_records is not None:
            data = read_unpacked(file)
            lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
            if lines == n_records + 1:  # no blank line, no cell across lines
                return np.arange(2, n_records + 2, dtype=np.int64)
        return _record_lines(str(file), stat.st_mtime_ns, stat.st_size)
    except (OSError, UnicodeDecodeError, csv.Error, InputError):
        return np.empty(0, dtype=np.int64)


@functools.lru_cache(maxsize=4)
def _record_lines(path: str, mtime_ns: int, size: int) -> np.ndarray:
    """:func:`csv_record_lines` of one version of a file (``mtime_ns`` and ``size`` key it)."""
    sep = _separator(path)
    blank = set(" \t") - {sep}
    raw: list[str] = []

    def lines() -> Any:
        with io.TextIOWrapper(open_unpacked(path), encoding="utf-8-sig", newline="") as handle:
            for line in handle:
                raw.append(line)
                yield line

    starts: list[int] = []
    reader = csv.reader(lines(), delimiter=sep)
    previous = 0
    for _ in reader:
        start, previous = previous + 1, reader.line_num
        if start == previous and set(raw[start - 1].rstrip("\r\n")) <= blank:
            continue  # a blank line: pandas skips it
        starts.append(start)
    return np.asarray(starts[1:], dtype=np.int64)  # the first record is the header


def csv_line(path: str | Path, position: int) -> int:
    """The file line of data record ``position`` (0-based) of a CSV (the header is line 1 when
    no blank line precedes it); ``position + 2`` when the file cannot be read again."""
    lines = csv_record_lines(path)
    return int(lines[position]) if 0 <= position < len(lines) else position + 2


def _cp1252_cell(path: Path, data: bytes, at: int) -> str:
    """`` in column 'model', value 'Ravén' (read as Windows-1252)``: the cell holding byte
    ``at`` as Excel's plain 'CSV' on Windows meant it, so the message shows the value; empty
    when the line is not CSV as Windows-1252 either."""
    sep = _separator(path)
    start = data.rfind(b"\n", 0, at) + 1
    end = data.find(b"\n", at)
    try:
        header = next(csv.reader([data[: data.find(b"\n")].decode("cp1252")], delimiter=sep))
        row = next(
            csv.reader([data[start : end if end >= 0 else None].decode("cp1252")], delimiter=sep)
        )
    except (UnicodeDecodeError, csv.Error, StopIteration):
        return ""
    for k, cell in enumerate(row):
        try:
            cell.encode("cp1252").decode("utf-8")
        except UnicodeDecodeError:
            column = f"column {header[k]!r}, " if 0 < start and k < len(header) else ""
            return f" in {column}value {_shorten(cell)!r} (read as Windows-1252)"
    return ""


def not_utf8(path: Path) -> InputError:
    """The error for a CSV file that is not UTF-8, naming the line and byte of the first
    character that is not (Excel's plain 'CSV' on Windows writes cp1252: é is byte 0xe9); a
    compressed file's decompressed bytes."""
    data = read_unpacked(path)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = encoding_hint(path) or _cp1252_cell(path, data, exc.start)
        return InputError(
            f"{path}: line {line}: byte {data[exc.start]:#04x} is not UTF-8 ({exc.reason}){hint}; "
            "expected a UTF-8 CSV file (Excel: save as 'CSV UTF-8 (Comma delimited)')"
        )
    return InputError(f"{path}: not UTF-8 text{encoding_hint(path)}; expected a UTF-8 CSV file")


def read_table_file(path: str | Path) -> pd.DataFrame:
    """Read ``.parquet``/``.pq`` or ``.csv``/``.tsv``/``.txt`` (CSV cells as text), each also
    compressed on its own (``.csv.gz``, ``.csv.bz2``, ``.csv.xz``; see
    :func:`~latentbench.io._arrival.open_unpacked`).

    Raises
    ------
    InputError
        A missing path, a directory, an unknown suffix, or a file that cannot be parsed.
    """
    file = Path(path)
    if not file.exists():
        raise InputError(f"{file}: file not found{tilde_hint(file)}")
    if not file.is_file():
        raise InputError(f"{file}: is a directory; expected a .parquet or .csv file{_tools_hint()}")
    kind = packed_kind(file)
    if kind is not None and unpacking(file) is None:  # an archive: unpack it first
        raise InputError(packed_advice(file, kind, "a .parquet, .csv or .tsv table"))
    suffix = unpacked_path(file).suffix.lower()
    if suffix in (".csv", ".tsv", ".txt"):
        return read_csv_text(file)
    if suffix in (".parquet", ".pq"):
        source = io.BytesIO(read_unpacked(file)) if kind is not None else file
        try:
            frame = pd.read_parquet(source)
        except Exception as exc:  # pyarrow raises many types for corrupt files
            raise InputError(f"{file}: could not be read as parquet ({exc})") from None
        repeated = [c for c, n in Counter(map(str, frame.columns)).items() if n > 1]
        if repeated:
            raise InputError(f"{file}: column {repeated[0]!r} appears more than once")
        return index_as_ids(frame)
    hint = _tools_hint() if suffix in (".json", ".jsonl", ".eval") else spreadsheet_hint(suffix)
    raise InputError(f"{file}: unknown file type {suffix!r}; expected .parquet, .csv or .tsv{hint}")


def read_table_rows(
    path: str | Path,
    column: str,
    values: list[str],
    *,
    chunk_rows: int = 1 << 20,
    near: list[str] | None = None,
) -> pd.DataFrame | None:
    """The rows of a table file whose text column ``column`` holds one of ``values``, read
    without keeping the others: a Parquet file through pyarrow's row filter (only the row
    groups that may hold them are read), a CSV in chunks of ``chunk_rows`` rows (each chunk's
    other rows dropped as it is read). Cells are read as :func:`read_table_file` reads them.
    The rows whose ``column`` is empty or blank are kept too: they may be any value's (a
    model's answer with its name left out), so the caller refuses them as it refuses them in
    the whole file, never drops them unsaid.

    Parameters
    ----------
    path : str or Path
        The table (``.parquet``, ``.csv``, ``.tsv``, ``.txt``; a CSV compressed on its own).
    column : str
        The column to select on (``"model"``).
    values : list of str
        The values kept.
    chunk_rows : int
        Rows of a CSV read at once.
    near : list of str, optional
        Where given, the values of ``column`` that differ from one of ``values`` only by
        case, surrounding spaces or Unicode normalisation (near twins: ``'A '``, ``'a'`` for
        ``'A'``) are appended to it, once each in their order; their rows are not kept.

    Returns
    -------
    DataFrame or None
        None where the file cannot be read so (no such text column, an archive, a CSV that
        pandas' chunks would misread, a file that fails to parse): read it whole
        (:func:`read_table_file`), which says what is wrong.
    """
    file = Path(path)
    if not file.is_file() or (packed_kind(file) is not None and unpacking(file) is None):
        return None
    from latentbench.io._matrix_checks import same_id  # it imports this module

    wanted = list(dict.fromkeys(map(str, values)))
    keys = {same_id(w) for w in wanted}  # a near twin's key (the wanted ids are few)
    suffix = unpacked_path(file).suffix.lower()
    if suffix in (".parquet", ".pq") and unpacking(file) is None:
        return _parquet_rows(file, column, wanted, near)
    if suffix not in (".csv", ".tsv", ".txt"):
        return None
    sep = _separator(file)
    _check_header(file, sep)
    with io.TextIOWrapper(open_unpacked(file), encoding="utf-8-sig", newline="") as handle:
        header = next(csv.reader(handle, delimiter=sep), [])
    if column not in header:
        return None
    data = read_unpacked(file) if unpacking(file) else None
    source: Path | io.BytesIO = file if data is None else io.BytesIO(data)
    if not PANDAS_3 and _has_nul(source):  # pandas 2's chunks end a cell at a NUL
        return None
    kept = []
    try:
        with pd.read_csv(source, sep=sep, dtype=TEXT, keep_default_na=False, na_values=[""],
                         chunksize=chunk_rows, compression=None) as chunks:  # fmt: skip
            found: list[str] = []
            for chunk in chunks:
                ids = chunk[column]
                keep = ids.isin(wanted) | ids.isna() | (ids.str.strip() == "")
                kept.append(chunk.loc[keep.to_numpy(dtype=bool, na_value=True)])
                if near is not None:  # the chunk's distinct ids (a few), not its rows
                    found += _near_twins(ids.dropna().unique(), wanted, keys)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, UnicodeDecodeError):
        return None
    if not kept:
        return None
    _check_cut(file, sep, len(kept[0].columns), data)
    if near is not None:
        near += list(dict.fromkeys(found))
    return pd.concat(kept, ignore_index=True)


def _near_twins(ids: Any, wanted: list[str], keys: set[str]) -> list[str]:
    """The distinct ``ids`` other than ``wanted`` whose :func:`same_id` key is in ``keys``
    (vectorised: pandas' string methods, NFC, strip and casefold as :func:`same_id`)."""
    names = pd.Series(pd.unique(pd.Series(ids, dtype=object).astype(str)), dtype=object)
    if names.empty:
        return []
    key = names.str.normalize("NFC").str.strip().str.casefold()
    hit = key.isin(keys).to_numpy(bool) & ~names.isin(wanted).to_numpy(bool)
    return [str(n) for n in names[hit]]


def _parquet_rows(
    file: Path, column: str, wanted: list[str], near: list[str] | None = None
) -> pd.DataFrame | None:
    """:func:`read_table_rows` of a Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except Exception:  # pyarrow raises many types for corrupt files: read_table_file says
        return None
    names = list(schema.names)
    if names.count(column) != 1:
        return None
    kind = schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    import pyarrow.compute as pc

    ids = pc.field(column)  # its rows, and those with no id (any model's: refused, not dropped)
    keep = ids.isin(wanted) | ids.is_null() | (pc.utf8_trim_whitespace(ids) == "")
    try:
        frame = pd.read_parquet(file, filters=keep)
        if near is not None:
            from latentbench.io._matrix_checks import same_id  # it imports this module

            found = _near_twins(_parquet_ids(file, column), wanted, {same_id(w) for w in wanted})
    except Exception:  # pyarrow raises many types: read whole, read_table_file says
        return None
    if len(set(map(str, frame.columns))) < frame.shape[1]:
        return None  # a repeated column: read_table_file refuses it
    if near is not None:
        near += found
    return index_as_ids(frame)


def _parquet_ids(file: Path, column: str) -> list[str]:
    """The distinct values of a Parquet file's text ``column``, a row group at a time and
    from its dictionary where it has one (pandas writes one): 15 ms for 1M rows of 200 ids,
    against 0.12 s for the rows of one of them."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    seen: dict[str, None] = {}
    parquet = pq.ParquetFile(file, read_dictionary=[column])
    for group in range(parquet.num_row_groups):
        for chunk in parquet.read_row_group(group, columns=[column]).column(0).chunks:
            values = chunk.dictionary if pa.types.is_dictionary(chunk.type) else pc.unique(chunk)
            seen.update(dict.fromkeys(v for v in values.to_pylist() if v is not None))
    return list(seen)


def index_as_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """A Parquet file's pandas index made its first column where it holds ids: a named index
    or one of text (``wide.to_parquet()`` of a frame indexed by model) when the table has no
    ``model`` column; an unnamed integer index (row numbers) is left out, as before."""
    index = frame.index
    if "model" in frame.columns or isinstance(index, (pd.RangeIndex, pd.MultiIndex)):
        return frame
    text = pd.api.types.is_string_dtype(index.dtype) or index.dtype == object
    if index.name is None and not text:
        return frame
    return frame.reset_index(names="model" if index.name is None else str(index.name))


def spreadsheet_hint(suffix: str) -> str:
    """What to do with a spreadsheet's own file (``.xlsx``) given where a table is read."""
    if suffix.lower() not in (".xlsx", ".xlsm", ".xls", ".ods", ".numbers"):
        return ""
    return " (a spreadsheet: save it as 'CSV UTF-8 (Comma delimited)' and give the .csv)"


def _tools_hint() -> str:
    """What to do with a tool's result files given where a table is read."""
    from latentbench.io.formats import SOURCES

    tools = ", ".join(name for name in SOURCES if name != "table")
    return (
        f" (a tool's results? read them into a store with `latentbench ingest TOOL PATH --store "
        f"S.duckdb`, TOOL one of {tools})"
    )


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks (the checksum fit and selection
    records keep of their inputs).

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cells_sha256(matrix: ResponseMatrix) -> str:
    """Hex SHA-256 of a matrix's observed cells (model, item, score), in its own order: a
    store benchmark's content, which has no file to hash (``fit.json`` keeps it).

    Parameters
    ----------
    matrix : ResponseMatrix
        The matrix (dense or sparse) whose observed cells are hashed.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    digest = hashlib.sha256()
    digest.update(pd.util.hash_pandas_object(matrix.to_long(), index=False).to_numpy().tobytes())
    return digest.hexdigest()


def input_record(source: Path | str, matrix: Any = None) -> dict[str, Any]:
    """The ``input`` entry of ``fit.json``: the responses' path, SHA-256 and layout (and the
    items with no observed score that the reader left out, ``dropped_items``), so that
    ``latentbench report DIR`` finds them again (written by ``fit`` and by
    :meth:`IRTResult.save <latentbench.irt.IRTResult.save>` for a matrix read from a file)."""
    entry: dict[str, Any] = {"path": str(Path(source).resolve())}
    if Path(source).is_file():
        entry["sha256"] = file_sha256(source)
    if matrix is not None and getattr(matrix, "layout", None):
        entry["layout"] = matrix.layout
    if matrix is not None and getattr(matrix, "labels", None):
        entry["labels"] = dict(matrix.labels)
    if matrix is not None and getattr(matrix, "dropped_items", None):
        # the file's items with no observed score, left out by the reader: not in the fit
        entry["dropped_items"] = list(matrix.dropped_items)
    return entry


def store_input_record(matrix: Any) -> dict[str, Any] | None:
    """The ``input`` entry of ``fit.json`` for a matrix read from a store
    (:meth:`Store.matrix <latentbench.io.store.Store.matrix>`, which sets its
    ``store_query``): the store, the benchmark and the (metric, filter, split) read, and a
    hash of the cells, so that ``latentbench report DIR`` reads them back while they are
    unchanged (written by ``fit --store`` and by :meth:`IRTResult.save
    <latentbench.irt.IRTResult.save>`). None for a matrix that did not come from a store."""
    query = getattr(matrix, "store_query", None)
    if not query:
        return None
    layout = getattr(matrix, "layout", None)
    return {
        **query,
        "cells_sha256": cells_sha256(matrix),
        "layout": layout or f"store {query['store']}, benchmark {query['benchmark']}",
    }
