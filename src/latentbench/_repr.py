"""One-line representations of configuration objects (policies, proxies, simulators).

A configuration object shows the constructor arguments it was given that differ from their
defaults, as scikit-learn shows an estimator: ``Pulse(bonus='ci', delta=0.05)``. The arguments
are recorded as given (before any check resolves them), so ``Pulse()`` reads as the defaults it
is, not as the values the defaults resolve to.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["GivenArgumentsRepr", "html_block", "short_ids", "short_value"]

_SHOWN_IDS = 4
"""Ids shown before ``...`` in :func:`short_ids`."""

HTML_ROWS = 10
"""Table rows a notebook shows in a result's ``_repr_html_`` before it says how many more."""


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


def html_block(
    text: str,
    table: Callable[[], Any] | None = None,
    *,
    whole: str = "",
    rows: int = HTML_ROWS,
    row_header: bool = False,
) -> str:
    """A result as a notebook shows it (its ``_repr_html_``): its text, then a table's first rows.

    Every value is escaped (ids come from users' files). A table longer than ``rows`` says
    how many rows it has and where the whole one is. A table that cannot be made (a result
    loaded without it) leaves the text alone: a notebook's display never raises.

    Parameters
    ----------
    text : str
        The result's own words (its ``repr`` or ``summary()``), shown as preformatted lines.
    table : callable or None, optional
        Returns the result's main table (a pandas DataFrame, in the order to show); None for
        none.
    whole : str, optional
        Where the whole table is (``".abilities"``), said when rows are left out.
    rows : int, default :data:`HTML_ROWS`
        Rows shown.
    row_header : bool, default False
        The first column names the row (a model): its cells are ``<th scope="row">``, as in
        the report's tables, so that a screen reader says which row a number belongs to.

    Returns
    -------
    str
        One ``<div>``.
    """
    import html

    parts = [f'<div class="latentbench"><pre>{html.escape(text)}</pre>']
    try:
        frame = table() if table is not None else None
    except Exception:  # the text is still the result's; a display must not raise
        frame = None
    if frame is not None and len(frame.columns) and len(frame):  # no rows: no empty table
        shown = frame.head(rows).to_html(
            index=False, escape=True, na_rep="NA", border=0, max_cols=12
        )
        parts.append(_row_headers(shown) if row_header else shown)
        if len(frame) > rows:
            where = f" (all: <code>{html.escape(whole)}</code>)" if whole else ""
            parts.append(f"<p>first {rows} of {len(frame):,} rows{where}</p>")
    parts.append("</div>")
    return "".join(parts)


def _row_headers(table: str) -> str:
    """``table`` (pandas' HTML, values escaped) with each body row's first cell a
    ``<th scope="row">``."""
    import re

    parts = re.split(r"(<tbody>.*</tbody>)", table, maxsplit=1, flags=re.S)
    if len(parts) != 3:  # no body: nothing to head
        return table
    head, body, tail = parts
    body = re.sub(r"(<tr[^>]*>\s*)<td>(.*?)</td>", r'\1<th scope="row">\2</th>', body, flags=re.S)
    return head + body + tail
