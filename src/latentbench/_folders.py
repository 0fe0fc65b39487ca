"""Private writable folders for caches, where the usual ones cannot be written.

Used where the package runs installed read-only by a user with no writable ``HOME`` (a
container): numba's kernel cache (:mod:`latentbench._numba_cache`) and matplotlib's config
and font cache (``MPLCONFIGDIR``, set by the command line).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["can_make", "private_temp_folder"]


def private_temp_folder(name: str) -> Path | None:
    """``<tmp>/NAME-<uid>``, made with mode 0700 if absent.

    Parameters
    ----------
    name : str
        The folder's name before ``-<uid>``, e.g. ``'latentbench-numba'``.

    Returns
    -------
    pathlib.Path or None
        The folder; ``None`` when it cannot be made or is not this user's own folder that
        only they can write to (a cache there may be pickles that are loaded: another
        user's folder is never used).
    """
    uid = getattr(os, "getuid", lambda: None)()
    path = Path(tempfile.gettempdir()) / f"{name}-{'' if uid is None else uid}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if uid is not None and info.st_uid != uid:
        return None
    return path


def can_make(path: Path) -> bool:
    """Whether ``path`` is a writable folder, or could be made as one (its nearest existing
    ancestor is a writable folder); nothing is created.

    Parameters
    ----------
    path : pathlib.Path
        The folder asked about.

    Returns
    -------
    bool
        ``False`` when a file stands in the way or a folder on the way is not writable.
    """
    here = path
    while not here.exists():
        if here.parent == here:
            return False
        here = here.parent
    return here.is_dir() and os.access(here, os.W_OK | os.X_OK)
