"""Checks of arguments shared by the subpackages (a bad value is an InputError that names
the argument, the value and what was expected)."""

from __future__ import annotations

import numbers

from latentbench.exceptions import InputError

__all__ = ["check_seed"]


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as a seed (an integer >= 0; numpy's generators refuse negative ones), or an
    :class:`~latentbench.exceptions.InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise InputError(f"{name}={value!r}; expected an integer >= 0")
    return int(value)
