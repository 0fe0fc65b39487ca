"""One-line representations of configuration objects (policies, proxies, simulators).

A configuration object shows the constructor arguments it was given that differ from their
defaults, as scikit-learn shows an estimator: ``Pulse(bonus='ci', delta=0.05)``. The arguments
are recorded as given (before any check resolves them), so ``Pulse()`` reads as the defaults it
is, not as the values the defaults resolve to.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["GivenArgumentsRepr", "short_ids", "short_value"]

_SHOWN_IDS = 4
"""Ids shown before ``...`` in :func:`short_ids`."""


class GivenArgumentsRepr:
    """Mixin: ``repr`` shows the constructor arguments given that differ from their defaults.

    Every subclass's ``__init__`` records its bound arguments on entry; the outermost call
    wins (a subclass that calls ``super().__init__(...)`` keeps what the user gave it).
    """

    _given_arguments: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self: Any, *args: Any, **kw: Any) -> None:
            if "_given_arguments" not in self.__dict__:
                try:
                    bound = signature.bind(self, *args, **kw)
                except TypeError:  # the original __init__ says what is wrong
                    bound = None
                if bound is not None:
                    self.__dict__["_given_arguments"] = _arguments(bound, signature)
            init(self, *args, **kw)

        cls.__init__ = recording_init  # type: ignore[method-assign]

    def __repr__(self) -> str:
        given = self.__dict__.get("_given_arguments", {})
        signature = inspect.signature(type(self).__init__)
        shown = []
        for name, value in given.items():
            parameter = signature.parameters.get(name)
            if parameter is not None and _same(value, parameter.default):
                continue
            shown.append(f"{name}={short_value(value)}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _arguments(bound: inspect.BoundArguments, signature: inspect.Signature) -> dict[str, Any]:
    """The explicitly given arguments by name, ``**kwargs`` spread out, ``self`` left out."""
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if name == "self":
            continue
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            out[name] = tuple(value)
        else:
            out[name] = value
    return out


def _same(value: Any, default: Any) -> bool:
    """Whether a given value is its parameter's default (arrays and odd types: never)."""
    if default is inspect.Parameter.empty or isinstance(value, np.ndarray):
        return False
    try:
        return bool(type(value) is type(default) and value == default)
    except Exception:  # an object whose == is not a truth value
        return False


def short_value(value: Any, width: int = 60) -> str:
    """A short text for ``value``: arrays by shape, callables by name, long text cut.

    Parameters
    ----------
    value : object
    width : int, default 60
        Longest text kept from ``repr(value)`` before it is cut with ``...``.

    Returns
    -------
    str
    """
    if isinstance(value, np.ndarray):
        return f"<array of shape {value.shape}>"
    if callable(value) and not isinstance(value, type):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        if name is not None:
            return str(name)
    if isinstance(value, Mapping | Sequence) and not isinstance(value, str | bytes):
        if len(value) > 8:
            return f"<{type(value).__name__} of {len(value):,}>"
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def short_ids(ids: Sequence[str]) -> str:
    """``[a, b, c, d, ...] (71)``: the first few ids and, when cut, how many there are.

    Parameters
    ----------
    ids : sequence of str

    Returns
    -------
    str
    """
    shown = ", ".join(str(i) for i in list(ids)[:_SHOWN_IDS])
    if len(ids) <= _SHOWN_IDS:
        return f"[{shown}]"
    return f"[{shown}, ...] ({len(ids):,})"
