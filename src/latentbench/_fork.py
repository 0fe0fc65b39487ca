"""Process pools started by fork, without Python 3.12+'s warning where the fork is known safe.

Since Python 3.12, ``os.fork()`` in a process with more than one thread raises a
``DeprecationWarning`` ("This process (pid=...) is multi-threaded, use of fork() may lead to
deadlocks in the child."): a thread that held a lock at the fork leaves it held in the child.
The package's process pools (:func:`latentbench.irt.bootstrap`, :func:`latentbench.select.
run_experiment`) fork on purpose (no re-import of the caller's script), and after a fit the
only other threads are native pools that survive a fork: numba's ``workqueue`` layer (fork-safe;
:mod:`latentbench.irt._kernels` selects it) and the BLAS's (OpenBLAS re-initialises its threads
in the child). The warning is silenced only then; with another Python thread alive (a caller's,
which may hold a lock) or another numba threading layer it is raised as usual.

A thread of the package's own that would be alive at the fork (the command line's progress
display redraws from one) registers with :func:`paused_for_forks`: :func:`forking` stops it
(joined) before the workers start and starts it again after, so the fork really has no other
Python thread, rather than a warning hidden.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["fork_is_known_safe", "forking", "paused_for_forks"]

FORK_WARNING = (
    r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks in the "
    r"child\."
)
"""The message of Python 3.12+'s ``DeprecationWarning`` on a fork with threads (a regex)."""

_PAUSED: list[tuple[Callable[[], None], Callable[[], None]]] = []
"""The ``(pause, resume)`` pairs registered by :func:`paused_for_forks`, oldest first."""


@contextmanager
def paused_for_forks(pause: Callable[[], None], resume: Callable[[], None]) -> Iterator[None]:
    """Within the block, every :func:`forking` calls ``pause`` before its workers start and
    ``resume`` after.

    Parameters
    ----------
    pause : callable
        Ends a thread of this process and returns once it has ended (joined).
    resume : callable
        Starts it again.
    """
    entry = (pause, resume)
    _PAUSED.append(entry)
    try:
        yield
    finally:
        _PAUSED.remove(entry)


def fork_is_known_safe() -> bool:
    """Whether a fork now leaves the child only threads known to survive it.

    Returns
    -------
    bool
        ``True`` when this is the only Python thread and numba has started no thread pool or
        that of its fork-safe ``workqueue`` layer; ``False`` with another Python thread alive
        or another numba threading layer (``tbb``, ``omp``: GNU OpenMP aborts on fork).
    """
    if threading.active_count() > 1:
        return False
    numba = sys.modules.get("numba")
    if numba is None:
        return True
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run: numba started no thread
        return True
    return bool(layer == "workqueue")


@contextmanager
def forking() -> Iterator[None]:
    """The block where a fork-based pool starts its workers (its ``submit`` calls), without
    Python 3.12+'s fork-with-threads ``DeprecationWarning`` when :func:`fork_is_known_safe`;
    otherwise the warning is raised as usual. The threads registered with
    :func:`paused_for_forks` are stopped for the block (before the check)."""
    paused = list(_PAUSED)
    resumed = 0
    try:
        for pause, _ in paused:
            pause()
            resumed += 1
        if not fork_is_known_safe():
            yield
            return
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=FORK_WARNING, category=DeprecationWarning)
            yield
    finally:
        for _, resume in reversed(paused[:resumed]):
            resume()
