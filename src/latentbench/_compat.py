"""Differences between the supported pandas versions (2.3 and 3.1+), in one place."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray

__all__ = ["TEXT", "read_csv", "text_array"]

PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3

TEXT = pd.StringDtype("pyarrow", na_value=np.nan)
"""The dtype of every text column the package builds: pandas 3's default ``"str"`` dtype.

On pandas 3 this is the dtype ``"str"`` names; on pandas 2.3, ``"str"`` and ``str`` name
NumPy's text, which turns a missing cell into the text ``'None'`` or ``'nan'``, so the dtype
is spelled out: Arrow-backed text whose missing cells stay missing (NaN), the same on both.
"""


def text_array(values: Sequence[Any] | np.ndarray | ExtensionArray | pd.Series) -> ExtensionArray:
    """``values`` as a text array of dtype :data:`TEXT`; ``None`` and NaN stay missing.

    Parameters
    ----------
    values : sequence
        Strings, or ``None``/NaN for a missing cell.

    Returns
    -------
    ExtensionArray
        The same text on pandas 2.3 and 3.1+.

    Examples
    --------
    >>> text_array(["a", None]).isna().tolist()
    [False, True]
    """
    data: Any = values  # pandas-stubs type pd.array(..., dtype=StringDtype) narrowly
    return cast(ExtensionArray, pd.array(data, dtype=TEXT))


def _has_nul(path: str | os.PathLike[str] | io.BytesIO) -> bool:
    """Whether the file (or the bytes in memory) holds a NUL byte (read in 1 MiB blocks)."""
    if isinstance(path, io.BytesIO):
        return b"\x00" in path.getbuffer()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            if b"\x00" in block:
                return True
    return False


def read_csv(path: str | Path | io.BytesIO, **options: Any) -> pd.DataFrame:
    """:func:`pandas.read_csv` that reads the same cells on every supported pandas.

    Floats are parsed exactly: on pandas 2 with ``float_precision="round_trip"`` (its default
    C parser reads some written floats back 1 ulp off, so a fit directory did not round-trip);
    pandas 3.1 parses them exactly by default and deprecates the option.

    A NUL character inside a field is kept: pandas 2's C parser ends a text cell at a NUL
    (``'a\\x00b'`` is read as ``'a'``, so two ids become one); pandas 3 keeps it. On pandas 2
    a file holding a NUL byte is parsed with each NUL stood in for by a private-use character
    the file does not hold, put back in the text cells and column names afterwards.

    Parameters
    ----------
    path : str, Path or io.BytesIO
        The CSV file, or its bytes (a compressed file's, decompressed).
    **options
        Passed to :func:`pandas.read_csv`.

    Returns
    -------
    pandas.DataFrame
        The table.
    """
    if PANDAS_3:  # exact already (and float_precision is deprecated there)
        return pd.read_csv(path, **options)
    options.setdefault("float_precision", "round_trip")
    if not _has_nul(path):
        return pd.read_csv(path, **options)
    encoding = options.pop("encoding", None) or "utf-8-sig"
    data = path.getvalue() if isinstance(path, io.BytesIO) else Path(path).read_bytes()
    text = data.decode(encoding)
    mark = next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text)
    frame = pd.read_csv(io.StringIO(text.replace("\x00", mark)), **options)

    def back(value: Any) -> Any:
        return value.replace(mark, "\x00") if isinstance(value, str) else value

    frame.columns = pd.Index([back(name) for name in frame.columns])
    for k in range(frame.shape[1]):
        column = frame.iloc[:, k]
        if column.dtype == object:
            frame.isetitem(k, column.map(back))
        elif isinstance(column.dtype, pd.StringDtype):
            frame.isetitem(k, column.str.replace(mark, "\x00", regex=False))
    return frame
