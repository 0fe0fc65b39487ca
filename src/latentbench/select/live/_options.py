"""Typed sections of a live run's TOML file and the one loader that checks them.

Each ``[section]`` is a frozen dataclass; :func:`load_section` takes the allowed keys, their
types and defaults from the dataclass fields, so a new option is one field. Errors name the
file, the section, the key, the value and the expected type.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union

from latentbench.exceptions import InputError
from latentbench.select._certify import EPSILON_MAX

__all__ = [
    "ItemOptions",
    "ModelOptions",
    "OracleOptions",
    "RunOptions",
    "ScorerOptions",
    "load_section",
    "workflow",
]

T = TypeVar("T")


def at_least(low: int) -> dict[str, Any]:
    """Field metadata: an integer >= ``low``."""
    return {"min": low}


def between(low: float, high: float) -> dict[str, Any]:
    """Field metadata: a number in [``low``, ``high``]."""
    return {"min": low, "max": high}


def expect(text: str) -> dict[str, Any]:
    """Field metadata: what the messages say is expected."""
    return {"expect": text}


def workflow(metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """Field metadata: an oracle option that changes how answers are obtained (timeouts,
    retries, folders, running the harness yourself or not), not which answers come back. It
    stays out of the run's identity, so changing it resumes the run, and answers stored under
    another value of it are reused (:meth:`LiveConfig.answer_options`)."""
    return {**(metadata or {}), "workflow": True}


@dataclass(frozen=True)
class RunOptions:
    """``[run]``: the budget, the seed and how the run stops.

    Without a ``budget`` the run stops when the best is certified (``stop`` defaults to
    ``"confidence"``; with a budget to ``"budget"``); ``batch_size`` and ``init_batch``
    default to :func:`~latentbench.select.default_schedule` of the pool. ``epsilon`` (score
    units, default 0) certifies a model within ``epsilon`` of the best instead of the best
    itself (:func:`~latentbench.select.run_selection`).
    """

    budget: int | None = field(default=None, metadata=at_least(0))
    seed: int = field(default=0, metadata=at_least(0))
    batch_size: int | None = field(default=None, metadata=at_least(1))
    init_batch: int | None = field(default=None, metadata=at_least(1))
    policy: str = "pulse"
    stop: Literal["budget", "confidence"] | None = None
    epsilon: float = field(default=0.0, metadata=between(0.0, EPSILON_MAX))
    on_error: Literal["stop", "zero"] = "stop"
    spend_cap: int | None = field(default=None, metadata=at_least(1))
    run_id: str | None = None
    benchmark: str | None = None


@dataclass(frozen=True)
class OracleOptions:
    """``[oracle]``: which oracle (``kind``, a name registered in
    :data:`~latentbench.select.live.ORACLES`); each kind's options are the fields of its own
    subclass (e.g. :class:`~latentbench.select.live.ChatOracleOptions`)."""

    kind: str = "openai"


@dataclass(frozen=True)
class ItemOptions:
    """``[items]``: the JSONL items file and its field names."""

    path: str = field(metadata=expect("the path of a JSONL file"))
    id_field: str = "id"
    prompt_field: str = "prompt"
    answer_field: str = "answer"


@dataclass(frozen=True)
class ScorerOptions:
    """``[scorer]``: how a response is scored against the reference."""

    kind: Literal["exact_match", "multiple_choice", "python"] = "exact_match"
    function: str | None = field(default=None, metadata=expect("'module:function'"))

    @property
    def spec(self) -> str:
        """The scorer name, or ``module:function`` for ``kind = "python"``."""
        return self.function if self.kind == "python" and self.function else self.kind


@dataclass(frozen=True)
class ModelOptions:
    """One ``[[models]]`` entry: a candidate model and how to reach it.

    ``api_key_env`` names the environment variable that holds the key; the key itself never
    appears in a configuration.
    """

    name: str
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    lm_eval_model: str | None = None
    model_args: str | None = None

    @property
    def served(self) -> str:
        """The model id the endpoint or harness reports."""
        return self.model or self.lm_eval_model or self.name


# ---------------------------------------------------------------------------- the loader
def _describe(kind: Any, meta: Mapping[str, Any]) -> str:
    if "expect" in meta:
        return str(meta["expect"])
    origin = typing.get_origin(kind)
    if origin is Literal:
        return f"one of {typing.get_args(kind)}"
    if origin in (Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return " or ".join(_describe(a, meta) for a in inner)
    if kind is int:
        if "max" in meta:
            return f"an integer in [{meta['min']}, {meta['max']}]"
        return "an integer" + (f" >= {meta['min']}" if "min" in meta else "")
    if kind is float:
        if "max" in meta:
            return f"a number in [{meta['min']:g}, {meta['max']:g}]"
        return "a finite number"
    if kind is bool:
        return "true or false"
    if kind is str:
        return "a non-empty string"
    return getattr(kind, "__name__", str(kind))


def _fits(value: Any, kind: Any, meta: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether ``value`` has type ``kind`` (ints are accepted as floats); the converted value."""
    origin = typing.get_origin(kind)
    if origin is Literal:
        return value in typing.get_args(kind), value
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(kind):
            if arg is type(None):
                continue
            ok, converted = _fits(value, arg, meta)
            if ok:
                return True, converted
        return False, value
    if kind is bool:
        return isinstance(value, bool), value
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return ok and meta.get("min", value) <= value <= meta.get("max", value), value
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = (
            ok
            and math.isfinite(value)
            and meta.get("min", value) <= value <= meta.get("max", value)
        )
        return ok, float(value) if ok else value
    if kind is str:
        return isinstance(value, str) and bool(value), value
    return isinstance(value, kind), value


def load_section(
    cls: type[T],
    table: object,
    where: str,
    *,
    check: Callable[[str, Any], str | None] | None = None,
) -> T:
    """Build the dataclass ``cls`` from a TOML table, checking keys and types.

    Parameters
    ----------
    cls : dataclass type
        Its fields are the allowed keys; their annotations the types (``int``, ``float``,
        ``str``, ``bool``, ``Literal[...]`` and optional forms); a ``min`` in the field's
        metadata bounds an integer, an ``expect`` replaces the type's description.
    table : object
        The parsed TOML value (must be a table).
    where : str
        ``"<file>: [section]"`` for the messages.
    check : callable, optional
        ``check(key, value)`` returning what was expected when a value is refused (beyond its
        type), or None.

    Raises
    ------
    InputError
        Not a table, an unknown key, a missing required key or a value of the wrong type;
        the message names ``where``, the key, the value and what was expected.
    """
    if not isinstance(table, dict):
        raise InputError(f"{where} is {table!r}; expected a table")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise InputError(f"{where} has unknown key(s) {unknown}; expected some of {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        required = spec.default is dataclasses.MISSING
        if name not in table:
            if required:
                raise InputError(
                    f"{where} {name}=None; expected {_describe(hints[name], spec.metadata)}"
                )
            continue
        ok, value = _fits(table[name], hints[name], spec.metadata)
        problem = None if not ok or check is None else check(name, value)
        if not ok or problem:
            expected = problem or _describe(hints[name], spec.metadata)
            raise InputError(f"{where} {name}={table[name]!r}; expected {expected}")
        values[name] = value
    return cls(**values)


def options_of(factory: Callable[..., Any]) -> tuple[str, ...]:
    """Keyword options of a class or function (its keyword-only and ordinary parameters)."""
    import inspect

    params = inspect.signature(factory).parameters.values()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in kinds)
