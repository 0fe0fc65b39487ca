"""First run of the command line in a fresh virtual environment.

Builds one fresh venv (``python -m venv``, then ``pip install <this tree>``: a regular,
non-editable install, as a user, a CI job or a container gets it; pip reuses its download
cache) and measures three things in it, each in a fresh process:

- ``latentbench --help``: median of ``--help-repeats`` runs (after one warm-up);
- the first ``latentbench fit`` of a 30 x 500 synthetic binary matrix (CSV read, default
  priors, 95% intervals, tables written), target <= 5 s on an idle 2-core machine;
- the first ``latentbench demo`` (its whole run), target <= 30 s.

"First" means an empty numba cache: before every repeat of the last two the numba cache files
(``*.nbi``, ``*.nbc``) under the installed package are deleted, so each repeat compiles every
kernel it uses, as the first run in a new environment does (the Python bytecode stays
compiled, as ``pip install`` leaves it). Each case ends with one run on the filled cache
("warm"), so compilation and computation can be told apart; the kernels compiled are counted
from the cache files a run leaves.

Prints medians (and the range) of wall-clock and CPU seconds (user + system of the process
and its children); on a loaded machine the CPU time is the closer estimate of an idle
machine's wall-clock time for the single-threaded parts. The load average is printed before
and after.

Usage: ``python benchmarks/bench_cli.py [--repeats 3] [--demo-repeats 3] [--help-repeats 7]``
(run it with any Python >= 3.10; 1.5-4 minutes for the install, plus the runs). ``--keep``
keeps the venv; ``--venv DIR`` on a kept one reinstalls the tree into it (not fresh: for
iterating, and the output says so).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIT_TARGET = 5.0
DEMO_TARGET = 30.0
HELP_TARGET = 0.5


def _clean_env() -> dict[str, str]:
    """The environment without anything that would bypass the fresh install or its caches."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATENTBENCH_", "NUMBA_"))}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system, children included) seconds of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def make_venv(where: Path, env: dict[str, str]) -> tuple[Path, float]:
    """A fresh venv with this tree installed; its ``bin`` folder and the install seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, env=env)
    python = where / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        check=True,
        env=env,
        cwd=where,
    )
    return where / "bin", time.perf_counter() - start


def package_dir(bin_dir: Path, env: dict[str, str]) -> Path:
    """Where the venv's ``latentbench`` is installed (its site-packages copy)."""
    code = "import latentbench, os; print(os.path.dirname(latentbench.__file__))"
    out = subprocess.run(
        [str(bin_dir / "python"), "-c", code], check=True, env=env, capture_output=True, text=True
    )
    path = Path(out.stdout.strip())
    if ROOT in path.parents:
        sys.exit(f"the venv imports latentbench from the tree ({path}), not from its install")
    return path


def numba_cache_files(package: Path) -> list[Path]:
    return [p for pattern in ("*.nbi", "*.nbc") for p in package.rglob(pattern)]


def clear_numba_cache(package: Path) -> None:
    for path in numba_cache_files(package):
        path.unlink()


MATRIX = """
import sys
import numpy as np
rng = np.random.default_rng(0)
theta, a, b = rng.normal(size=30), rng.uniform(0.5, 1.5, 500), rng.normal(size=500)
y = rng.random((30, 500)) < 1 / (1 + np.exp(-(np.outer(theta, a) + b)))
lines = ["model,item,score"] + [f"m{i},q{j},{int(y[i, j])}" for i in range(30) for j in range(500)]
open(sys.argv[1], "w").write("\\n".join(lines) + "\\n")
"""
"""A synthetic 2PL binary matrix, 30 models x 500 items, as a long CSV (model, item, score);
written by the venv's own Python (numpy is installed there)."""


@dataclass
class Runs:
    """Repeats from an empty numba cache, then one run on the filled cache."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    compiled: list[int] = field(default_factory=list)
    warm: tuple[float, float] = (float("nan"), float("nan"))


def first_runs(
    argv: Callable[[int], list[str]],
    repeats: int,
    package: Path,
    cwd: Path,
    env: dict[str, str],
) -> Runs:
    """``repeats`` runs each from an empty numba cache, then one on the filled cache."""
    runs = Runs()
    for r in range(repeats):
        clear_numba_cache(package)
        wall, cpu = _run(argv(r), cwd, env)
        runs.walls.append(wall)
        runs.cpus.append(cpu)
        runs.compiled.append(len([p for p in numba_cache_files(package) if p.suffix == ".nbi"]))
    runs.warm = _run(argv(repeats), cwd, env)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="first fits (empty cache)")
    parser.add_argument("--demo-repeats", type=int, default=3, help="first demos (empty cache)")
    parser.add_argument("--help-repeats", type=int, default=7)
    parser.add_argument(
        "--venv",
        type=Path,
        help="build the fresh venv here (default: a temp dir); an existing one (from --keep) "
        "is reused with the tree reinstalled, for iterating only: it says so",
    )
    parser.add_argument("--keep", action="store_true", help="keep the venv and the outputs")
    args = parser.parse_args()
    env = _clean_env()
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        load_start = os.getloadavg()
        venv = args.venv or work / "venv"
        if venv.exists():  # iterating: the tree reinstalled into a venv kept by --keep
            start = time.perf_counter()
            reinstall = ["install", "--quiet", "--no-deps", "--force-reinstall", str(ROOT)]
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *reinstall], check=True)
            bin_dir, install = venv / "bin", time.perf_counter() - start
            print(f"REUSED venv {venv} (not fresh): {ROOT} reinstalled in {install:.0f} s")
        else:
            bin_dir, install = make_venv(venv, env)
            print(f"fresh venv {venv}: python -m venv + pip install {ROOT} in {install:.0f} s")
        package = package_dir(bin_dir, env)
        latentbench = str(bin_dir / "latentbench")
        print(f"installed package: {package}")

        _run([latentbench, "--help"], work, env)  # warm-up: the file cache
        helps = [_run([latentbench, "--help"], work, env) for _ in range(args.help_repeats)]

        subprocess.run(
            [str(bin_dir / "python"), "-c", MATRIX, "responses.csv"], check=True, env=env, cwd=work
        )
        fit = first_runs(
            lambda r: [latentbench, "fit", "responses.csv", "--out", f"fit-{r}", "-q"],
            args.repeats,
            package,
            work,
            env,
        )
        demo = first_runs(
            lambda r: [latentbench, "demo", "--out", f"demo-{r}"],
            args.demo_repeats,
            package,
            work,
            env,
        )
        load_end = os.getloadavg()
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    def median(values: list[float]) -> float:
        return statistics.median(values)

    print(
        f"\n{'case':<28} {'runs':>4} {'wall':>7} {'(range)':>15} {'cpu':>7} "
        f"{'warm wall':>9} {'warm cpu':>8} {'kernels':>7} {'target':>7}"
    )
    help_walls, help_cpus = [w for w, _ in helps], [c for _, c in helps]
    print(
        f"{'latentbench --help':<28} {len(helps):>4} {median(help_walls):>7.2f} "
        f"{f'({min(help_walls):.2f}-{max(help_walls):.2f})':>15} {median(help_cpus):>7.2f} "
        f"{'':>9} {'':>8} {'':>7} {HELP_TARGET:>6.1f}s"
    )
    for name, runs, target in (
        ("first fit 30 x 500", fit, FIT_TARGET),
        ("first demo", demo, DEMO_TARGET),
    ):
        walls = runs.walls
        print(
            f"{name:<28} {len(walls):>4} {median(walls):>7.2f} "
            f"{f'({min(walls):.2f}-{max(walls):.2f})':>15} {median(runs.cpus):>7.2f} "
            f"{runs.warm[0]:>9.2f} {runs.warm[1]:>8.2f} {max(runs.compiled):>7d} {target:>6.0f}s"
        )
    print(
        "(seconds; medians over fresh processes, each fit/demo run from an empty numba cache; "
        "warm: one more run on the filled cache; kernels: numba kernels compiled in a run)\n"
        f"load average {load_start[0]:.1f} before, {load_end[0]:.1f} after, on "
        f"{os.cpu_count()} cores; targets are for an idle 2-core machine, where the CPU "
        "column is the closer estimate when the machine is loaded"
    )


if __name__ == "__main__":
    main()
