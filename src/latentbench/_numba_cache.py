"""Where the compiled numba kernels are cached, when the installed package cannot hold them.

Every ``@numba.njit`` of the package passes ``cache=CACHE``. Numba looks for a writable
cache folder when the decorator runs (at import): ``NUMBA_CACHE_DIR``, the package's own
``__pycache__`` folders, then the user's cache folder (``~/.cache/numba``), and raises
``RuntimeError: cannot cache function ...: no locator available`` at import when there is
none. That is a container's usual setup: the package in a read-only ``site-packages``, run
by a user whose ``HOME`` is unset or unwritable. There every command failed with that
traceback. :data:`CACHE` is decided once, here, before the first kernel module is imported:

1. a folder numba finds itself: ``True``, numba's own choice is kept;
2. else a private folder under the temporary directory (``latentbench-numba-<uid>``, made
   with mode 0700 and used only when it is this user's and nobody else can write to it,
   since numba's cache files are pickles that it loads): ``numba.config.CACHE_DIR`` is set
   to it and ``True``;
3. else ``False``: the kernels are compiled in every new process (slower start, same
   results), and nothing is said.

It also chooses numba's threading layer for every parallel kernel of the package, here
because every kernel module imports this one first: numba's own work queue (see below). It
was chosen by ``irt._kernels`` alone, so io's margins kernel, run first by a large matrix's
margins before anything of ``latentbench.irt`` was imported, started GNU OpenMP, and a later
fork (``bootstrap(n_jobs=2)``) killed its workers.
"""

from __future__ import annotations

import functools
import os
import types
from pathlib import Path
from typing import Any

import numba

from latentbench._folders import private_temp_folder

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's own work queue: fork-safe (experiments and bootstraps fan out over forked
    # processes; GNU OpenMP aborts on fork) and it does not leave spinning threads that starve
    # the BLAS call between two kernel passes (measured 4x faster on 2211 x 541). Set the
    # environment variable NUMBA_THREADING_LAYER to choose another layer.
    setattr(numba.config, "THREADING_LAYER", "workqueue")  # noqa: B010 (untyped module attribute)

__all__ = ["CACHE", "cache_usable"]

_PACKAGE = Path(__file__).resolve().parent
_KERNEL_FOLDERS = ("io", "irt", "select")
"""The subpackages whose modules hold ``cache=True`` kernels: numba caches a function beside
its file (``FOLDER/__pycache__``), so each folder is asked on its own."""


def _probe() -> None:  # decorated with cache=True (never compiled) to ask numba for a locator
    return None


def _locatable() -> bool:
    """Whether numba finds a cache folder for a function of each kernel folder: decorating
    a function with ``cache=True`` makes numba look for one (and make sure it can write
    there) without compiling anything."""
    for folder in _KERNEL_FOLDERS:
        code = _probe.__code__.replace(co_filename=str(_PACKAGE / folder / "__init__.py"))
        probe = types.FunctionType(code, _probe.__globals__, _probe.__name__)
        try:
            numba.njit(cache=True)(probe)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return False
    return True


@functools.cache
def cache_usable() -> bool:
    """Whether the package's kernels can be cached on disk, after pointing numba at a
    private temporary folder where neither the package's folders nor the user's cache
    folder can be written (see the module docstring). Decided once per process.

    Returns
    -------
    bool
        ``True``: pass ``cache=True`` to ``numba.njit``; ``False``: compile in memory.
    """
    if _locatable():
        return True
    config: Any = numba.config  # untyped
    before = config.CACHE_DIR
    folder = private_temp_folder("latentbench-numba")
    if folder is not None:
        config.CACHE_DIR = str(folder)
        if _locatable():
            return True
    config.CACHE_DIR = before
    return False


CACHE: bool = cache_usable()
"""The ``cache=`` argument of every ``numba.njit`` of the package."""
