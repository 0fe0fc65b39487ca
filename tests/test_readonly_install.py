"""The package installed where nothing beside it can be written (a container's read-only
site-packages, run by a user with no writable HOME) imports its numba kernels and computes.

Numba raised ``RuntimeError: cannot cache function ...: no locator available`` when a
``cache=True`` kernel module was imported there, so every command (fit, estimate, report)
failed with that traceback. The copy of the package below makes every place numba would
cache in impossible to create, for root too (each ``__pycache__`` is a plain file, ``HOME``
and ``XDG_CACHE_HOME`` lie under a plain file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import latentbench
from latentbench.cli import _register, app

_register()
SOURCE = Path(latentbench.__file__).resolve().parent

SCRIPT = """
import json, math, numba
import latentbench.io._margins_kernel, latentbench.io._cells, latentbench.irt._kernels
import latentbench.irt._em_kernels, latentbench.irt._sparse_kernels, latentbench.irt._stats
from latentbench.select._betting import _logaddexp
from latentbench import _numba_cache
value = _logaddexp(0.0, 0.0)
print(json.dumps({"cache": _numba_cache.CACHE, "dir": numba.config.CACHE_DIR,
                  "ok": abs(value - math.log(2.0)) < 1e-12, "file": latentbench.__file__}))
"""


def _sealed_copy(tmp_path: Path) -> Path:
    """The package copied under ``tmp_path/site`` with every ``__pycache__`` a plain file."""
    site = tmp_path / "site"
    target = site / "latentbench"
    shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for folder in [target, *(p for p in target.rglob("*") if p.is_dir())]:
        (folder / "__pycache__").write_text("not a folder\n")
    return site


def _run(site: Path, tmp_path: Path, tmpdir: Path) -> dict[str, object]:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.pop("XDG_CACHE_HOME", None)
    env.update(
        PYTHONPATH=str(site),
        PYTHONDONTWRITEBYTECODE="1",
        HOME=str(blocker / "home"),  # under a plain file: cannot be made
        XDG_CACHE_HOME=str(blocker / "cache"),
        TMPDIR=str(tmpdir),
    )
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "cache" not in proc.stderr.lower(), proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(str(result["file"])).resolve().parent == (site / "latentbench").resolve()
    assert result["ok"] is True
    return result


@pytest.mark.slow
def test_readonly_install_caches_in_a_private_temporary_folder(tmp_path: Path) -> None:
    site = _sealed_copy(tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    result = _run(site, tmp_path, tmpdir)
    folder = tmpdir / f"latentbench-numba-{os.getuid()}"
    assert result["cache"] is True
    assert result["dir"] == str(folder)
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert list(folder.rglob("*.nbi")), "the compiled kernel was not cached there"


@pytest.mark.slow
def test_readonly_install_without_a_private_folder_compiles_in_memory(tmp_path: Path) -> None:
    site = _sealed_copy(tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    (tmpdir / f"latentbench-numba-{os.getuid()}").write_text("")  # cannot be made a folder
    result = _run(site, tmp_path, tmpdir)
    assert result["cache"] is False


@pytest.mark.slow
def test_a_private_folder_someone_else_can_write_to_is_not_used(tmp_path: Path) -> None:
    site = _sealed_copy(tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    planted = tmpdir / f"latentbench-numba-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)  # another user could have put pickles there: never loaded
    result = _run(site, tmp_path, tmpdir)
    assert result["cache"] is False
    assert not list(planted.rglob("*.nbi"))


@pytest.mark.slow
def test_report_with_no_writable_home_says_nothing_about_matplotlib(tmp_path: Path) -> None:
    """Matplotlib logged 'mkdir -p failed for path ...' and 'Matplotlib created a temporary
    cache directory ... it is highly recommended to set the MPLCONFIGDIR ...' on every
    report, demo and selection page where HOME cannot be written; the command line now
    gives it a private folder under the temporary directory, kept between runs."""
    rng = np.random.default_rng(0)
    rows = [
        (f"m{i}", f"q{j}", float(rng.random() < 0.2 + 0.03 * i))
        for i in range(20)
        for j in range(120)
    ]
    pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(tmp_path / "r.csv", index=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME")}
    env.pop("XDG_CACHE_HOME", None)
    env.update(HOME=str(blocker / "home"), TMPDIR=str(tmpdir))
    # the fit imports no matplotlib: made in this process; the report runs without a HOME
    fit = CliRunner().invoke(
        app, ["fit", str(tmp_path / "r.csv"), "--out", str(tmp_path / "fit"), "-q"]
    )
    assert fit.exit_code == 0, fit.output
    main = "from latentbench.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", main, "report", "fit", "--out", "r.html", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == "", proc.stderr
    folder = tmpdir / f"latentbench-matplotlib-{os.getuid()}"
    assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
