"""JSONL item files: the prompts and references a live selection sends and scores."""

from __future__ import annotations

import json
import os
from pathlib import Path

from latentbench.exceptions import InputError

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

    Item text is data: it is only ever sent to an endpoint and compared by a scorer.

    Parameters
    ----------
    path : path-like
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
    file = Path(path)
    if file.exists() and not file.is_file():
        raise InputError(
            f"{file}: the items file is not a regular file (a folder, device or pipe); "
            f"expected a JSONL file with {id_field!r}"
        )
    if not file.is_file():
        raise InputError(f"{file}: items file not found; expected JSONL with {id_field!r}")
    items: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    with file.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{file}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start + 1}); expected UTF-8 JSON lines"
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{file}:{lineno}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise InputError(
                    f"{file}:{lineno}: not valid JSON (nested too deeply); expected one flat "
                    "object per line"
                ) from None
            if not isinstance(record, dict):
                raise InputError(f"{file}:{lineno}: a {type(record).__name__}; expected an object")
            raw_id = record.get(id_field)
            if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
                raise InputError(
                    f"{file}:{lineno}: field {id_field!r} is {raw_id!r}; expected a string or "
                    "integer id"
                )
            item_id = str(raw_id)
            if item_id in seen:
                raise InputError(
                    f"{file}:{lineno}: id {item_id!r} repeats line {seen[item_id]}; expected "
                    "unique ids"
                )
            seen[item_id] = lineno
            entry = {"id": item_id}
            for name, key in (("prompt", prompt_field), ("answer", answer_field)):
                value = record.get(key)
                if value is None and name == "answer" and require_answer:
                    fields = ", ".join(map(repr, list(record)[:8]))
                    raise InputError(
                        f"{file}:{lineno}: field {key!r} is missing (fields: {fields}); "
                        "expected the reference answer the scorer compares with (name the "
                        "field with [items] answer_field)"
                    )
                if value is None and (name == "answer" or not require_prompt):
                    entry[name] = ""
                    continue
                if not isinstance(value, str | int | float) or isinstance(value, bool):
                    raise InputError(
                        f"{file}:{lineno}: field {key!r} is {value!r}; expected a string"
                    )
                if name == "prompt" and not str(value).strip():
                    raise InputError(f"{file}:{lineno}: field {key!r} is empty; expected text")
                entry[name] = str(value)
            items.append(entry)
    if not items:
        raise InputError(f"{file}: no items; expected one JSON object per line")
    return items
