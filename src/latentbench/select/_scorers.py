"""Scorers for live oracles: turn a model's answer text into a score in [0, 1].

A scorer is any callable ``scorer(response, reference) -> float``. Answers are data: a scorer
compares strings, it never evaluates them.
"""

from __future__ import annotations

import importlib
import os
import re
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from latentbench.exceptions import InputError

__all__ = ["Scorer", "exact_match", "multiple_choice", "resolve_scorer"]

Scorer = Callable[[str, str], float]
"""``scorer(response, reference) -> score in [0, 1]``."""

_PUNCT = string.punctuation + "“”‘’"
_SPACES = re.compile(r"\s+")


def _normalize(text: str) -> str:
    return _SPACES.sub(" ", str(text)).strip().strip(_PUNCT + " ").casefold()


def exact_match(response: str, reference: str) -> float:
    """1.0 when the answer equals the reference up to case, surrounding punctuation and spaces.

    Parameters
    ----------
    response : str
        The model's answer.
    reference : str
        The expected answer.

    Returns
    -------
    float
        1.0 or 0.0.

    Examples
    --------
    >>> exact_match("  Paris. ", "paris")
    1.0
    >>> exact_match("Lyon", "Paris")
    0.0
    """
    return float(_normalize(response) == _normalize(reference))


_LETTER = r"(?:\(([A-Za-z])\)|\[([A-Za-z])\]|([A-Z])(?![A-Za-z]))"
_LETTER_PATTERNS = (
    re.compile(r"(?i:answer|option|choice)\s*(?i:is|:)?\s*" + _LETTER),
    re.compile(r"^\s*(?:\(([A-Za-z])\)|\[([A-Za-z])\]|([A-Z])(?:[.:)]|\s*$))"),
    re.compile(r"\(([A-Z])\)|\[([A-Z])\]()"),
)


def multiple_choice(response: str, reference: str) -> float:
    """1.0 when the first answer letter in ``response`` equals the reference letter.

    The letter is found, in this order: after ``answer``/``option``/``choice`` (``"Answer: B"``,
    ``"the answer is (b)"``); at the start (``"B."``, ``"(B)"``, ``"B"`` alone, not ``"I think"``);
    in brackets anywhere (``"... (B)"``). A lowercase letter counts only in brackets.

    Parameters
    ----------
    response : str
        The model's answer.
    reference : str
        The expected letter.

    Returns
    -------
    float
        1.0 or 0.0.

    Examples
    --------
    >>> multiple_choice("The answer is (c).", "C")
    1.0
    >>> multiple_choice("B. because ...", "C")
    0.0
    """
    ref = str(reference).strip().strip("()[]. ").upper()
    for pattern in _LETTER_PATTERNS:
        match = pattern.search(str(response))
        if match:
            letter = next(g for g in match.groups() if g)
            return float(letter.upper() == ref)
    return 0.0


_BUILTIN: dict[str, Scorer] = {"exact_match": exact_match, "multiple_choice": multiple_choice}


def resolve_scorer(
    spec: str | Scorer, *, where: str = "scorer", base: str | os.PathLike[str] | None = None
) -> Scorer:
    """A scorer from a name (``exact_match``, ``multiple_choice``), ``"module:function"``, or
    a callable.

    Raises
    ------
    InputError
        Unknown name, unimportable module or a non-callable attribute.
    """
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise InputError(
            f"{where}={spec!r}; expected 'exact_match', 'multiple_choice' or 'module:function'"
        )
    if spec in _BUILTIN:
        return _BUILTIN[spec]
    expected = "'exact_match', 'multiple_choice' or 'module:function'"
    return load_callable(spec, where=where, base=base, expected=expected)


def load_callable(
    spec: str,
    *,
    where: str,
    base: str | os.PathLike[str] | None = None,
    expected: str = "'module:function' (a module's function, e.g. 'mycode:score')",
) -> Callable[..., Any]:
    """Import ``"package.module:function"`` (user code named in a config file).

    A module that is not importable from ``sys.path`` is looked for in ``base`` (the config
    file's folder), as a script's imports resolve next to the script.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"{where}={spec!r}; expected {expected}")
    try:
        module = _import_beside(module_name, base)
    except ImportError as exc:
        raise InputError(f"{where}={spec!r}: cannot import {module_name!r} ({exc})") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise InputError(f"{where}={spec!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(target):
        raise InputError(f"{where}={spec!r}: {attr!r} is not callable")
    function: Callable[..., Any] = target
    return function


def module_sha256(spec: str, base: str | os.PathLike[str] | None) -> str | None:
    """SHA-256 of the file that ``"module:function"`` would be imported from (beside the
    configuration first, a package before a module of the same name, as Python does), found
    without importing it where possible; None when no source file is found. What a live run's
    answers depend on for a ``python`` oracle or scorer (the function's own file; what it
    imports in turn is not covered)."""
    import hashlib
    import importlib.util

    module_name = spec.partition(":")[0].strip()
    parts = [p for p in module_name.split(".") if p]
    if not parts:
        return None
    folder = Path(base).resolve() if base is not None else None
    candidates = []
    if folder is not None:
        candidates += [
            folder.joinpath(*parts, "__init__.py"),
            folder.joinpath(*parts[:-1], parts[-1] + ".py"),
        ]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        try:  # may import a parent package; whatever it raises, the answer is "not found"
            origin = getattr(importlib.util.find_spec(module_name), "origin", None)
        except Exception:  # user code of any kind
            origin = None
        found = Path(origin) if origin and Path(origin).is_absolute() else None
        if found is not None and not found.is_file():
            found = None
    if found is None:
        return None
    return hashlib.sha256(found.read_bytes()).hexdigest()


def _import_beside(module_name: str, base: str | os.PathLike[str] | None) -> Any:
    """``import module_name``, looked for first in ``base`` (the config file's folder), as a
    script's imports resolve next to the script.

    When ``base`` holds the top-level module (``name.py`` or ``name/__init__.py``), the folder
    goes first on ``sys.path`` and stays there, so that what the function imports when it runs
    resolves there too. A module of that name already imported from elsewhere would shadow the
    file: that is an error naming both, not a silent use of the other module.
    """
    top = module_name.partition(".")[0]
    folder = Path(base).resolve() if base is not None else None
    if folder is not None and (
        (folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file()
    ):
        cached = sys.modules.get(top)
        origin = getattr(cached, "__file__", None) if cached is not None else None
        if cached is not None and (origin is None or Path(origin).resolve().parent not in (
            folder, folder / top
        )):  # fmt: skip
            raise ImportError(
                f"a module {top!r} is already imported from {origin or 'a built-in'}, which "
                f"shadows {folder / top}; rename the file beside the configuration"
            )
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    return importlib.import_module(module_name)
