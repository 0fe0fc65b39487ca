"""A UTF-16 file without a byte-order mark whose text is mostly not ASCII (Chinese model or
item names) is refused naming the file and UTF-16, and saying UTF-8 is expected: it was
refused as 'read as Windows-1252' with garbled values, or (all its bytes below 0x80) read
into columns named 'm\\x00o\\x00d\\x00e\\x00l\\x00' and refused for a garbled score."""

from __future__ import annotations

import json
import random

import pytest

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.io.formats import read_results
from latentbench.io.formats._common import load_json

UTF16 = r"not UTF-8 text.*UTF-16.*-t UTF-8.*; expected "
# CJK characters whose two UTF-16 bytes are both below 0x80 and none a separator: such a
# file is valid UTF-8 (ASCII and NUL bytes) read as UTF-8
_SEPARATORS = {0x09, 0x0A, 0x0D, 0x22, 0x2C}
QUIET = [chr(c) for c in range(0x4E01, 0x7F7F)
         if 0 < (c & 0xFF) < 0x80 and not {c & 0xFF, c >> 8} & _SEPARATORS]  # fmt: skip


def _words(seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(QUIET) for _ in range(6)) for _ in range(80)]


def _cjk_rows() -> list[str]:
    return ["模型,题目,分数"] + [f"模型{i % 3},中文题目{i},{i % 2}" for i in range(40)]


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_a_utf16_table_of_chinese_names_is_refused_as_utf16(tmp_path, codec):
    path = tmp_path / "cjk.csv"
    path.write_bytes("\n".join(_cjk_rows()).encode(codec))
    with pytest.raises(InputError, match=rf"cjk.csv: line 1: {UTF16}") as caught:
        ResponseMatrix.read(path)
    assert "Windows-1252" not in str(caught.value)
    with pytest.raises(InputError, match=rf"cjk.csv: line 1: {UTF16}"):
        read_results("table", path)


def test_a_utf16_table_whose_bytes_are_all_ascii_is_not_read_garbled(tmp_path):
    words = _words(0)
    rows = ["model,item,score"] + [f"{words[i % 3]},{words[3 + i]},{i % 2}" for i in range(60)]
    path = tmp_path / "quiet.csv"
    data = "\n".join(rows).encode("utf-16-le")
    path.write_bytes(data)
    data.decode("utf-8")  # valid UTF-8: only the NUL bytes tell
    with pytest.raises(InputError, match=rf"quiet.csv: line 1: {UTF16}"):
        ResponseMatrix.read(path)
    with pytest.raises(InputError, match=rf"quiet.csv: line 1: {UTF16}"):
        read_results("table", path)


def test_utf16_json_of_chinese_text_is_refused_as_utf16(tmp_path):
    words = _words(1)
    doc = {"items": [{"q": w, "id": k} for k, w in enumerate(words)]}
    quiet = tmp_path / "quiet.json"
    quiet.write_bytes(json.dumps(doc, ensure_ascii=False).encode("utf-16-le"))
    with pytest.raises(InputError, match=rf"quiet.json: {UTF16}"):
        load_json(quiet)
    loud = tmp_path / "loud.json"
    loud.write_bytes(json.dumps({"题目": "中文内容" * 40}, ensure_ascii=False).encode("utf-16-le"))
    with pytest.raises(InputError, match=rf"loud.json: {UTF16}"):
        load_json(loud)
    lines = [json.dumps({"doc_id": k, "doc": {"q": w}, "acc": 1.0}, ensure_ascii=False)
             for k, w in enumerate(words[:20])]  # fmt: skip
    samples = tmp_path / "samples_t_2024-05-01T12-30-45.jsonl"
    samples.write_bytes("\n".join(lines).encode("utf-16-le"))
    with pytest.raises(InputError, match=rf"{samples.name}: {UTF16}"):
        read_results("lm-eval", samples, model="m")


def test_utf16_eee_records_are_refused_as_utf16(tmp_path):
    words = _words(2)
    lines = [json.dumps({"schema_version": "0.3.0", "sample_id": w, "interaction_type":
                         "single_turn"}, ensure_ascii=False) for w in words[:20]]  # fmt: skip
    path = tmp_path / "x_samples.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-16-le"))
    with pytest.raises(InputError, match=r"x_samples.jsonl:1: not UTF-8 text.*UTF-16"):
        read_results("eee", path)


def test_utf8_with_a_few_nul_bytes_still_reads(tmp_path):
    """Ids holding a NUL (a hostile file) are UTF-8 still: not taken for UTF-16."""
    path = tmp_path / "nul.csv"
    rows = ["model,item,score"] + [f"m\x00{i % 3},q\x00{i},{i % 2}" for i in range(40)]
    path.write_bytes("\n".join(rows).encode())
    assert len(ResponseMatrix.read(path).model_ids) == 3
    one = tmp_path / "one.csv"
    one.write_bytes(b"model,item,score\nab\x00cd,q1,1\nab\x00cd,q2,0\nx,q1,1\n")
    assert ResponseMatrix.read(one).model_ids == ["ab\x00cd", "x"]
