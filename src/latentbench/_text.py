"""Small text formats shared by the commands and the reports (no imports: ``--help`` stays
fast)."""

from __future__ import annotations

__all__ = ["counted", "percent"]


def percent(level: float) -> str:
    """A confidence level as the commands print it: ``0.95`` as ``95%``, ``0.975`` as
    ``97.5%`` (``:.0%`` printed ``98%``: a stronger guarantee than the one computed); a
    level below 1 never shows as ``100%`` (``delta=1e-7``: ``99.99999%``).

    Parameters
    ----------
    level : float
        A level in (0, 1), e.g. ``1 - delta``.

    Returns
    -------
    str
    """
    value = 100 * float(level)
    text = f"{round(value, 6):g}"
    digits = 7
    while float(text) >= 100 > value and digits <= 17:  # more digits until it is below 100
        text = f"{value:.{digits}g}"
        digits += 1
    return f"{text}%"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """A count and its noun in the number it takes: ``1 cell``, ``2 cells``, ``0 cells``
    (``plural`` for a noun not made by adding ``s``).

    Parameters
    ----------
    n : int
        The count.
    word : str
        The noun in the singular.
    plural : str, optional
        The noun in the plural (default ``word + "s"``).

    Returns
    -------
    str
    """
    return f"{n:,} {word if n == 1 else plural or word + 's'}"
