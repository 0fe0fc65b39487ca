"""The registry of ingest readers: one ``@reader`` decorator per format module.

A format is one module in this package holding a ``read`` function decorated with
:func:`reader`; ``formats/__init__.py`` imports the module so that it registers. Everything
else (the names accepted by :func:`~latentbench.io.formats.read_results`, the file search, the
options a source takes, the ``latentbench ingest`` help) is derived from the registry, so adding
a format touches the new module, one import line and ``docs/formats.md``.

The read function takes the path, the :class:`LoadReport` to fill and keyword-only arguments:
any of the common ones (``benchmark``, ``metric``, ``filter``, ``model``) and the source's own
options, each with a default. A ``Literal[...]`` annotation lists an option's allowed values.
Options a source does not declare are refused when given a non-default value, never ignored.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pandas as pd

from latentbench.exceptions import InputError

__all__ = ["COMMON_ARGUMENTS", "READERS", "ReadFunction", "Reader", "get_reader", "reader"]

COMMON_ARGUMENTS: tuple[str, ...] = ("benchmark", "metric", "filter", "model")
"""Keyword arguments every source understands (a source without filters records ``"none"``)."""


ReadFunction = Callable[..., pd.DataFrame]
"""``read(path, report, *, <common arguments it uses>, <its options>) -> DataFrame``: one file
into canonical rows (plus ``_record``), filling the :class:`LoadReport`."""

_F = TypeVar("_F", bound=ReadFunction)


@dataclass(frozen=True)
class Option:
    """A source-specific option: its default and, from a ``Literal`` annotation, its values."""

    name: str
    default: object
    values: tuple[object, ...] | None


@dataclass(frozen=True)
class Reader:
    """One registered ingest format.

    Attributes
    ----------
    name : str
        The source name (``read_results(name, ...)``, ``latentbench ingest NAME``).
    summary : str
        One line for the CLI help: the tool and the files read.
    patterns : tuple of str
        Globs searched under a directory.
    read : ReadFunction
        Reads one file.
    keep : callable, optional
        ``keep(path) -> bool``: whether a file found under a directory is a result file of
        this tool (files named directly are always read).
    nothing_found : str, optional
        When ``keep`` leaves no file: the error message's tail (``"no ... found"``); ``None``
        reads nothing instead.
    names_choices : bool
        Whether ``metric``/``filter`` select among names the files offer (a name no benchmark
        offers is then a typo and an error) rather than label the rows (``table``).
    packed : bool
        Whether the reader reads a result file compressed on its own (``x.jsonl.gz``: found
        under a directory by its pattern's name plus ``.gz``, ``.bz2``, ``.xz`` or ``.zst``,
        read through :func:`~latentbench.io._arrival.open_unpacked`); the other readers'
        compressed files are refused or listed as skipped, saying how to decompress them.
    item_field : str
        The field of the tool's files that gives the item id (``doc_id``), as errors name it.
    """

    name: str
    summary: str
    patterns: tuple[str, ...]
    read: ReadFunction
    keep: Callable[[Path], bool] | None = None
    nothing_found: str | None = None
    names_choices: bool = True
    packed: bool = False
    item_field: str = "item"
    options: Mapping[str, Option] = field(default_factory=dict)
    arguments: frozenset[str] = frozenset()

    @property
    def search(self) -> tuple[str, ...]:
        """The globs searched under a directory: :attr:`patterns`, and where the reader reads
        compressed files (:attr:`packed`) each with a compression suffix too."""
        if not self.packed:
            return self.patterns
        from latentbench.io._arrival import PACKED_SUFFIXES

        return self.patterns + tuple(p + s for p in self.patterns for s in PACKED_SUFFIXES)

    def select(self, found: list[Path], paths: list[Path]) -> list[Path]:
        """The result files among ``found`` (files named in ``paths`` are always kept).

        Parameters
        ----------
        found : list of Path
            The files found under ``paths``.
        paths : list of Path
            The paths the user gave (files and folders).

        Returns
        -------
        list of Path
            The files of ``found`` this source reads: all of them when the source has no
            ``keep`` test, else those named in ``paths`` and those ``keep`` accepts.

        Raises
        ------
        InputError
            When none is kept and the source says what it expected (``nothing_found``).
        """
        if self.keep is None:
            return found
        explicit = {Path(p).resolve() for p in paths if Path(p).is_file()}
        kept = [f for f in found if f.resolve() in explicit or self.keep(f)]
        if not kept and self.nothing_found is not None:
            raise InputError(f"{', '.join(map(str, paths))}: {self.nothing_found}")
        return kept

    def arguments_for(
        self, common: Mapping[str, object], options: Mapping[str, object]
    ) -> dict[str, object]:
        """The keyword arguments of :attr:`read`: the common ones it declares and its options.

        Parameters
        ----------
        common : Mapping of str to object
            The arguments every reader may take; only those in :attr:`arguments` are kept.
        options : Mapping of str to object
            Source options by name; an option of another source left at its default is
            ignored.

        Returns
        -------
        dict of str to object
            The keyword arguments to call :attr:`read` with.

        Raises
        ------
        InputError
            For an option value outside its ``Literal`` values, or an option of another source
            given a non-default value.
        """
        kwargs = {k: v for k, v in common.items() if k in self.arguments}
        for name, value in options.items():
            option = self.options.get(name)
            if option is None:
                owners = [r for r in READERS.values() if name in r.options]
                if owners and value != owners[0].options[name].default:
                    raise InputError(
                        f"{name}={value!r}: an option of {', '.join(r.name for r in owners)}; "
                        f"source {self.name!r} does not take it"
                    )
                continue
            if option.values is not None and value not in option.values:
                *head, last = map(repr, option.values)
                expected = f"{', '.join(head)} or {last}" if head else last
                raise InputError(f"{name}={value!r}; expected {expected}")
            kwargs[name] = value
        return kwargs


READERS: dict[str, Reader] = {}
"""Registered readers by source name, in registration order."""


def reader(
    name: str,
    *,
    summary: str,
    patterns: tuple[str, ...],
    keep: Callable[[Path], bool] | None = None,
    nothing_found: str | None = None,
    names_choices: bool = True,
    packed: bool = False,
    item_field: str = "item",
) -> Callable[[_F], _F]:
    """Register a module's ``read`` function as the reader of source ``name``.

    The keyword-only parameters of the function other than :data:`COMMON_ARGUMENTS` are the
    source's options; each needs a default.
    """

    def register(read: _F) -> _F:
        if name in READERS:
            raise ValueError(f"ingest source {name!r} is registered twice")
        hints = typing.get_type_hints(read)
        arguments: set[str] = set()
        options: dict[str, Option] = {}
        for parameter in inspect.signature(read).parameters.values():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                raise TypeError(f"{name} reader: no **{parameter.name}; declare each option")
            if parameter.kind is not inspect.Parameter.KEYWORD_ONLY:
                continue
            if parameter.name in COMMON_ARGUMENTS:
                arguments.add(parameter.name)
                continue
            if parameter.default is inspect.Parameter.empty:
                raise TypeError(f"{name} reader: option {parameter.name!r} needs a default")
            hint = hints.get(parameter.name)
            values = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None
            options[parameter.name] = Option(parameter.name, parameter.default, values)
        READERS[name] = Reader(
            name=name,
            summary=summary,
            patterns=patterns,
            read=read,
            keep=keep,
            nothing_found=nothing_found,
            names_choices=names_choices,
            packed=packed,
            item_field=item_field,
            options=options,
            arguments=frozenset(arguments),
        )
        return read

    return register


def get_reader(source: str) -> Reader:
    """The reader registered as ``source``; an :class:`InputError` lists the sources."""
    try:
        return READERS[source]
    except (KeyError, TypeError):
        raise InputError(f"source={source!r}; expected one of {', '.join(READERS)}") from None
