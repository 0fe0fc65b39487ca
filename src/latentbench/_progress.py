"""Progress callbacks: the library says which phase it is in, the caller draws it.

Long operations (a fit with its prior search, intervals, a report, an ingest of many files)
take an optional ``progress`` argument, a :data:`ProgressCallback`. The library only calls it;
it never prints. The command line passes one that draws a rich progress bar on stderr
(:func:`latentbench.cli._common.progress_bar`).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ProgressCallback", "notify"]

ProgressCallback = Callable[[str, "int | None", "int | None"], None]
"""``progress(phase, done, total)``: the phase's name (e.g. ``"fitting"``), units of work done
in it and their total (``None`` when not known, e.g. sweeps until convergence)."""


def notify(
    progress: ProgressCallback | None, phase: str, done: int | None = None, total: int | None = None
) -> None:
    """Call ``progress(phase, done, total)`` when a callback was given (one that is not a
    function, e.g. ``progress=True``, is an :class:`InputError` naming it, not a
    ``TypeError``)."""
    if progress is not None:
        if not callable(progress):
            from latentbench.exceptions import InputError

            raise InputError(
                f"progress={progress!r}; expected a function progress(phase, done, total) or None"
            )
        progress(phase, done, total)
