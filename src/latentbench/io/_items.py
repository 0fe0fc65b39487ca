"""JSONL item files: the prompts and references a live selection sends and scores."""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from latentbench._checks import check_flag, json_problem
from latentbench.exceptions import InputError
from latentbench.io._arrival import (
    encoding_hint,
    open_unpacked,
    packed_advice,
    packed_kind,
    tilde_hint,
    unpacking,
)

__all__ = ["load_items"]


def load_items(
    path: str | os.PathLike[str],
    *,
    id_field: str = "id",
    prompt_field: str = "prompt",
    answer_field: str = "answer",
    require_prompt: bool = True,
    require_answer: bool = False,
) -> list[dict[str, str]]:
    """Read a JSONL dataset of items: one JSON object per line with id, prompt and answer.

    Item text is data: it is only ever sent to an endpoint and compared by a scorer. A file
    compressed on its own (``items.jsonl.gz``, ``.bz2``, ``.xz``) is read decompressed.

    Parameters
    ----------
    path : path-like
        The JSONL file, plain or compressed on its own.
    id_field, prompt_field, answer_field : str
        Field names in each object.
    require_prompt : bool
        ``False`` for the lm-eval bridge (only ids are needed).
    require_answer : bool
        Every item must hold ``answer_field`` (a scorer compares the model's completion with
        it: an absent reference, e.g. a misspelt field name, would score every answer 0).
        Otherwise a missing answer is read as ``""``.

    Returns
    -------
    list of dict
        ``{"id": str, "prompt": str, "answer": str}`` in file order.

    Raises
    ------
    InputError
        Unreadable file, a line that is not a JSON object, a missing or empty field, a
        repeated id, or no items; the message names the file, line and field.
    """
    require_prompt = check_flag(require_prompt, "require_prompt")
    require_answer = check_flag(require_answer, "require_answer")  # "no" required them
    file = Path(path)
    _check_file(file, id_field)
    items: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    with open_unpacked(file) as handle:  # gzip, bzip2, xz: decompressed as read
        for lineno, raw in enumerate(_lines(handle, file), start=1):
            where = f"{file}:{lineno}"
            # a byte-order mark (Notepad, PowerShell) before line 1 is not part of its record
            line = _decode(raw.removeprefix(codecs.BOM_UTF8) if lineno == 1 else raw, where, file)
            if not line.strip():
                continue
            record = _parse_object(line, where)
            item_id = _item_id(record, id_field, where)
            if item_id in seen:
                raise InputError(
                    f"{where}: id {item_id!r} repeats line {seen[item_id]}; expected unique ids"
                )
            seen[item_id] = lineno
            prompt = _prompt(record, prompt_field, require_prompt, where)
            answer = _answer(record, answer_field, require_answer, where)
            items.append({"id": item_id, "prompt": prompt, "answer": answer})
    if not items:
        raise InputError(f"{file}: no items; expected one JSON object per line")
    return items


def _lines(handle: IO[bytes], file: Path) -> Iterable[bytes]:
    """The file's lines, ended at ``\\n`` (a CRLF line's ``\\r`` is JSON whitespace); a file
    with ``\\r`` but no ``\\n`` at all (CR-only line ends: old Mac, some editors) at ``\\r``.
    JSON never holds a raw ``\\r`` inside a string, so no record is cut."""
    if _cr_only(file):
        return handle.read().split(b"\r")
    return handle


def _cr_only(file: Path) -> bool:
    """Whether ``file`` holds ``\\r`` and no ``\\n`` (read in chunks: items files can be big)."""
    seen_cr = False
    with open_unpacked(file) as handle:
        while chunk := handle.read(1 << 20):
            if b"\n" in chunk:
                return False
            seen_cr = seen_cr or b"\r" in chunk
    return seen_cr


def _check_file(file: Path, id_field: str) -> None:
    """Refuse a path that is not a regular file (missing, a folder, a device or a pipe)."""
    if file.exists() and not file.is_file():
        raise InputError(
            f"{file}: the items file is not a regular file (a folder, device or pipe); "
            f"expected a JSONL file with {id_field!r}"
        )
    if not file.is_file():
        raise InputError(
            f"{file}: items file not found{tilde_hint(file)}; expected JSONL with {id_field!r}"
        )
    kind = packed_kind(file)
    if kind is not None and unpacking(file) is None:  # an archive, zstd without a library
        raise InputError(packed_advice(file, kind, f"a JSONL items file with {id_field!r}"))


def _decode(raw: bytes, where: str, file: Path) -> str:
    """One line of ``file`` as UTF-8 text; ``where`` is ``file:line``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = encoding_hint(file)
        raise InputError(
            f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
            f"{exc.start + 1}){hint}; expected UTF-8 JSON lines"
        ) from None


def _parse_object(line: str, where: str) -> dict[str, Any]:
    """One line's JSON object."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply, or a huge integer
        raise InputError(
            f"{where}: not valid JSON ({json_problem(exc)}); expected one flat object per line"
        ) from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: a {type(record).__name__}; expected an object")
    return record


def _item_id(record: dict[str, Any], id_field: str, where: str) -> str:
    """The item's id: a string or an integer (not a bool), as text."""
    raw_id = record.get(id_field)
    if id_field not in record:  # was "field 'idx' is None", as if the line held a null
        fields = ", ".join(map(repr, list(record)[:8]))
        raise InputError(
            f"{where}: field {id_field!r} is missing (fields: {fields}); expected a string or "
            "integer id (name the field with [items] id_field)"
        )
    if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise InputError(
            f"{where}: field {id_field!r} is {raw_id!r}; expected a string or integer id"
        )
    return str(raw_id)


def _prompt(record: dict[str, Any], key: str, required: bool, where: str) -> str:
    """The prompt, as non-blank text; ``""`` when absent and not ``required``."""
    value = record.get(key)
    if value is None and not required:
        return ""
    if key not in record:
        fields = ", ".join(map(repr, list(record)[:8]))
        raise InputError(
            f"{where}: field {key!r} is missing (fields: {fields}); expected the prompt text "
            "(name the field with [items] prompt_field)"
        )
    text = _text(value, key, where)
    if not text.strip():
        raise InputError(f"{where}: field {key!r} is empty; expected text")
    return text


def _answer(record: dict[str, Any], key: str, required: bool, where: str) -> str:
    """The reference answer, as text; ``""`` when absent and not ``required``."""
    value = record.get(key)
    if value is None and required:
        fields = ", ".join(map(repr, list(record)[:8]))
        raise InputError(
            f"{where}: field {key!r} is missing (fields: {fields}); expected the reference "
            "answer the scorer compares with (name the field with [items] answer_field)"
        )
    if value is None:
        return ""
    return _text(value, key, where)


def _text(value: Any, key: str, where: str) -> str:
    """A string or a number (not a bool), as text."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise InputError(f"{where}: field {key!r} is {value!r}; expected a string")
    return str(value)
