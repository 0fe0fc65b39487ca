"""Item metadata for reports: category columns that break results down."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd

from latentbench._compat import TEXT, read_csv
from latentbench.exceptions import InputError
from latentbench.io._arrival import (
    encoding_hint,
    packed_advice,
    packed_kind,
    read_unpacked,
    unpacked_path,
    unpacking,
)
from latentbench.io._files import not_utf8

__all__ = ["category_columns", "read_item_metadata"]

MAX_CATEGORIES = 100
"""A column with more distinct values than this is treated as text, not as a category."""


def read_item_metadata(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read item metadata: a CSV or Parquet table with an ``item`` column (ids as strings).

    Parameters
    ----------
    path : path-like
        A ``.csv`` or ``.parquet`` file, plain or compressed on its own (``meta.csv.gz``,
        ``.bz2``, ``.xz``).

    Returns
    -------
    DataFrame
        One row per item (``item`` unique), other columns as read; see :func:`category_columns`.
    """
    file = Path(path)
    if not file.is_file():
        raise InputError(f"items={file}: file not found")
    suffix = unpacked_path(file).suffix.lower()  # meta.csv.gz: a .csv
    kind = packed_kind(file)
    if kind is not None and unpacking(file) is None:  # an archive, zstd without a library
        raise InputError(f"items={packed_advice(file, kind, 'a .csv or .parquet table')}")
    data = read_unpacked(file) if unpacking(file) else None  # gzip, bzip2, xz

    def source() -> Path | io.BytesIO:
        return file if data is None else io.BytesIO(data)

    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(source())
        elif suffix in (".csv", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            if encoding_hint(file):  # UTF-16 without a byte-order mark decodes as UTF-8
                raise InputError(f"items={not_utf8(file)}")
            # compression=None: a path here holds plain bytes (a plain meta.csv.gz too:
            # pandas would go by the name)
            frame = read_csv(source(), sep=sep, dtype=TEXT, compression=None)
            if "item" in frame.columns:  # an item called NA, None or null keeps its name
                ids = read_csv(
                    source(), sep=sep, dtype=TEXT, keep_default_na=False, na_values=[""],
                    usecols=["item"], compression=None,
                )  # fmt: skip
                frame["item"] = ids["item"]
        else:
            raise InputError(
                f"items={file}: unknown file type {suffix!r}; expected .csv or .parquet"
            )
    except InputError:
        raise
    except UnicodeDecodeError:  # Excel's plain 'CSV' (cp1252), UTF-16: the line and value
        raise InputError(f"items={not_utf8(file)}") from None
    except Exception as exc:
        raise InputError(f"items={file}: could not be read ({exc})") from None
    if "item" not in frame.columns:
        raise InputError(
            f"items={file}: no 'item' column (columns: {list(map(str, frame.columns))}); "
            "expected item ids in a column named 'item' and category columns beside it"
        )
    frame = frame.copy()
    frame["item"] = frame["item"].astype(TEXT)
    if frame["item"].duplicated().any():
        dup = frame.loc[frame["item"].duplicated(), "item"].iloc[0]
        raise InputError(f"items={file}: item {dup!r} appears twice; expected one row per item")
    if not category_columns(frame):
        raise InputError(
            f"items={file}: no category column (a column other than 'item' with 2 to "
            f"{MAX_CATEGORIES} distinct values)"
        )
    return frame


def category_columns(frame: pd.DataFrame) -> list[str]:
    """Columns other than ``item`` with 2 to :data:`MAX_CATEGORIES` distinct values.

    Parameters
    ----------
    frame : DataFrame
        Item metadata, as :func:`read_item_metadata` returns it.

    Returns
    -------
    list of str
    """
    out = []
    for column in frame.columns:
        if column == "item":
            continue
        n = frame[column].nunique(dropna=True)
        if 2 <= n <= MAX_CATEGORIES:
            out.append(str(column))
    return out
