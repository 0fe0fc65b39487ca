"""Recent Inspect writes ``.eval`` members zstd-compressed (zip method 93)."""

from __future__ import annotations

import importlib.util
import io
import json
import struct
import zipfile

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results


def _as_zstd(data: bytes) -> bytes:
    """A stored zip relabelled as zstd (method 93) in every local and central header."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        start = 0
        while (start := out.find(signature, start)) != -1:
            struct.pack_into("<H", out, start + offset, 93)
            start += 4
    return bytes(out)


@pytest.mark.skipif(
    importlib.util.find_spec("zipfile_zstd") is not None,
    reason="zipfile-zstd is installed (the real Inspect test covers zstd logs)",
)
def test_zstd_log_without_zstd_support_is_a_clear_error(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
    path = tmp_path / "2026-01-01T00-00-00+00-00_t_abc.eval"
    path.write_bytes(_as_zstd(buffer.getvalue()))
    with pytest.raises(InputError, match=r"member header\.json is zstd-compressed.*inspect_ai"):
        read_results("inspect", path)
