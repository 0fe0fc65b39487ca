"""Checks of arguments shared by the subpackages (a bad value is an InputError that names
the argument, the value and what was expected)."""

from __future__ import annotations

import math
import numbers
import os
import sys
import types
from pathlib import Path

import numpy as np

from latentbench.exceptions import InputError

__all__ = [
    "as_path",
    "bounded_score",
    "bounded_scores",
    "check_count",
    "check_flag",
    "check_seed",
    "is_integer",
    "is_number",
    "json_problem",
    "user_stacklevel",
]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn` that points at the first frame outside
    latentbench (the caller's line), however deep in the library the warning is raised (a
    fixed level points inside the library when the call goes through a wrapper or another
    public function). Call it in the function that warns."""
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame is not None and _in_package(frame):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _in_package(frame: types.FrameType) -> bool:
    """Whether ``frame`` runs latentbench's code: by its module's name, or by its file under
    this package's folder (a module imported a second time from another copy of the source,
    e.g. a source tree's doctests beside an installed package, keeps its name, not its path)."""
    filename = frame.f_code.co_filename
    if filename.startswith("<doctest "):
        return False  # an example run with a copy of a module's globals: the caller's line
    name = str(frame.f_globals.get("__name__", ""))
    if name == "latentbench" or name.startswith("latentbench."):
        return True  # (a dataclass's generated __init__, "<string>", is the library's too)
    if filename.startswith("<"):
        return False  # "<string>", "<stdin>", a notebook cell: not a path, whatever the cwd
    return os.path.abspath(filename).startswith(_PACKAGE)


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer (Python's or numpy's), never a bool: the test of an
    integer option before it is compared (``"100"`` or ``2.5`` is refused naming the option,
    not a ``TypeError`` from ``<`` or a silent fractional count)."""
    return not isinstance(value, bool) and isinstance(value, numbers.Integral)


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number other than NaN (Python's or numpy's), never a bool
    or a string: the test of a numeric option before it is compared."""
    return (
        not isinstance(value, bool)
        and isinstance(value, numbers.Real)
        and not math.isnan(float(value))
    )


def as_path(value: object, name: str) -> Path:
    """``value`` as a :class:`~pathlib.Path`, or an :class:`InputError` naming ``name`` when it
    is no path (``save(3)``, ``load(None)``: pathlib's ``TypeError`` named no argument)."""
    if not isinstance(value, str | os.PathLike):
        raise InputError(f"{name}={value!r}; expected a path (a str or a pathlib.Path)")
    return Path(value)


def check_event(value: object, name: str = "stop_event") -> None:
    """Refuse ``value`` unless it is None or an event (``threading.Event``: something with an
    ``is_set()``), naming ``name``; ``stop_event=True`` failed later, mid-run, with an
    ``AttributeError``."""
    if value is not None and not callable(getattr(value, "is_set", None)):
        raise InputError(
            f"{name}={value!r}; expected None or a threading.Event (set it to stop the call)"
        )


def check_flag(value: object, name: str) -> bool:
    """``value`` as an on/off option (Python's bool or numpy's ``np.bool_``), or an
    :class:`~latentbench.exceptions.InputError` naming ``name``: ``force="no"`` or
    ``no_history=1`` was taken as true, unsaid (``"no"`` is a truthy string)."""
    if not isinstance(value, bool | np.bool_):
        raise InputError(f"{name}={value!r}; expected True or False")
    return bool(value)


def check_count(value: object, name: str, *, minimum: int = 1, what: str = "") -> int:
    """``value`` as a count (an integer, Python's or numpy's, never a bool, at least
    ``minimum``), or an :class:`~latentbench.exceptions.InputError` naming ``name`` and the
    value: the one rule of every integer option (a float, even ``100.0``, is refused as
    ``k=100.0`` and ``seed=1.0`` were, rather than read as 100 by some options only).

    Parameters
    ----------
    value : object
        What the caller gave.
    name : str
        The option's name, as the message spells it.
    minimum : int
        The smallest count allowed.
    what : str
        Said after the expectation, e.g. ``" (items to evaluate)"``.

    Returns
    -------
    int
    """
    if not is_integer(value) or int(value) < minimum:  # type: ignore[call-overload]
        raise InputError(f"{name}={value!r}; expected an integer >= {minimum}{what}")
    return int(value)  # type: ignore[call-overload]


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as a seed (an integer >= 0; numpy's generators refuse negative ones), or an
    :class:`~latentbench.exceptions.InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise InputError(f"{name}={value!r}; expected an integer >= 0")
    return int(value)


def check_jobs(value: object, name: str = "n_jobs", *, none_ok: bool = False) -> int | None:
    """``value`` as a number of worker processes: -1 (all cores) or an integer >= 1 (None too
    where ``none_ok``: the caller's default); 0, -5 or 1.5 are refused naming ``name`` (they
    ran as one worker, or as all cores, unsaid)."""
    if value is None and none_ok:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or (int(value) != -1 and int(value) < 1)
    ):
        raise InputError(f"{name}={value!r}; expected -1 (all cores) or an integer >= 1")
    return int(value)


def json_problem(exc: BaseException) -> str:
    """What is wrong with a JSON (or TOML) text whose parser raised ``exc``: the syntax error
    or the undecodable byte as Python says it, or, for a file built to exhaust the parser (a
    value nested thousands of levels deep: ``RecursionError``; an integer past Python's
    digit limit: a bare ``ValueError`` whose text tells to raise the limit), what it holds.

    Parameters
    ----------
    exc : BaseException
        What ``json.loads`` / ``tomllib.loads`` raised.

    Returns
    -------
    str
    """
    if isinstance(exc, RecursionError):
        return "nested too deeply for Python's parser"
    if isinstance(exc, ValueError) and "max_str_digits" in str(exc):
        return f"an integer of more than {sys.get_int_max_str_digits() or 4300:,} digits"
    return str(exc)


SCORE_ROUNDING = 1e-9
"""How far past 0 or 1 an oracle's score may land by floating-point rounding and still be
that bound (``sum([0.05] * 20)`` is 1.0000000000000002); the same width as
:data:`~latentbench.io.formats._common.SCORE_TOLERANCE`."""


def bounded_score(value: float) -> float | None:
    """An oracle's score ``value`` as stored: a rounding past 0 or 1 (within
    :data:`SCORE_ROUNDING`) is the bound; NaN stays NaN.

    Parameters
    ----------
    value : float
        The score an oracle returned.

    Returns
    -------
    float or None
        The score in [0, 1] (or NaN); None for a score outside [0, 1] (infinite, a
        percentage, a negative value).
    """
    if math.isnan(value):
        return value
    if not -SCORE_ROUNDING <= value <= 1 + SCORE_ROUNDING:
        return None
    return min(max(value, 0.0), 1.0)


def first_outside(values: np.ndarray, outside: np.ndarray) -> str:
    """Where a matrix's first score outside [0, 1] is (:func:`bounded_scores`'s ``outside``)
    and what was expected, for the message that refuses it.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_items), float
        The scores as given (before any float32 rounding).
    outside : ndarray of bool, the shape of ``values``
        :func:`bounded_scores`'s ``outside``; some cell True.

    Returns
    -------
    str
        ``row I, column J holds V; expected a score in [0, 1] (...)``, V as Python writes it
        (``1.000000002``: never rounded to look like a bound).
    """
    i, j = (int(x) for x in np.argwhere(outside)[0])
    return (
        f"row {i}, column {j} holds {float(values[i, j])!r}; expected a score in [0, 1] (NaN "
        f"for missing; a float rounding past 0 or 1 by at most {SCORE_ROUNDING:g} is that "
        "bound, a value further out is no score)"
    )


def bounded_scores(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bounded_score` over an array, the rule of every reader of scores (a file's
    cells, a frame's ``score`` column, a response matrix): a rounding past 0 or 1 (within
    :data:`SCORE_ROUNDING`) is the bound; a value further out, or infinite, is no score.

    Parameters
    ----------
    values : ndarray of any shape, float
        Scores as read; NaN is left to the caller (missing in a matrix, refused in a long
        table).

    Returns
    -------
    scores : ndarray, the shape and dtype of ``values``
        ``values`` with each rounding past a bound set to that bound (``values`` itself, not
        a copy, when there is none; a value in [0, 1], -0.0 too, is never changed).
    outside : ndarray of bool, the shape of ``values``
        True where a value is no score: beyond the rounding, or infinite (never at NaN).
    """
    with np.errstate(invalid="ignore"):
        low, high = values < 0, values > 1
        if not (low.any() or high.any()):
            return values, np.zeros(np.shape(values), dtype=bool)
        outside = (values < -SCORE_ROUNDING) | (values > 1 + SCORE_ROUNDING)
    scores = np.array(values, copy=True)
    scores[low & ~outside] = 0.0
    scores[high & ~outside] = 1.0
    return scores, outside
