"""``latentbench report`` on a leaderboard-sized matrix, old tree against new (A/B).

The matrix is the one of docs/performance.md's "A leaderboard's user path" (scale110's
generator, seed 110): rank-1 2PL, ``--models`` x ``--items`` in 40 tasks of equal size,
``theta ~ N(0, 1)``, ``a ~ lognormal(0, 0.4)``, ``b ~ N(0, 1.2)``, as a wide Parquet file (one
column per item); ``--missing`` keeps each model's answers on 12 of the 40 tasks only (70%
missing in blocks). ``--plant K`` overwrites K items with a copy of another item (each
copy's answers re-drawn on 1% of the models): a matrix with known duplicates.

``gen`` writes the file and fits it once (``latentbench fit``, this tree: the fit directory is
the same for both trees, since ``fit`` is not what is compared). ``ab`` then runs
``latentbench report FIT --out X.html`` with ``PYTHONPATH`` set to ``--old`` and to ``--new``,
alternating them (``_timing.interleaved_seconds``), each in a fresh process under ``nice``,
and prints per tree the median wall seconds, CPU seconds (user + system) and peak resident
set (``ru_maxrss`` of that child, from ``os.wait4``); it checks that the two HTML pages are
the same bytes but their time stamp.

Usage::

    python benchmarks/bench_report_scale.py gen --models 1000 --items 5000 --work DIR
    python benchmarks/bench_report_scale.py ab --old /tmp/old/src --new src --work DIR --repeats 3
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _timing import interleaved_seconds

ROOT = Path(__file__).resolve().parents[1]
TASKS = 40


def generate(n_models: int, n_items: int, missing: bool, plant: int, path: Path) -> None:
    """The wide Parquet leaderboard (see the module's docstring)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(110)
    per = n_items // TASKS
    J = per * TASKS
    theta = rng.normal(0, 1, n_models).astype(np.float32)
    a = rng.lognormal(0, 0.4, J).astype(np.float32)
    b = rng.normal(0, 1.2, J).astype(np.float32)
    models = [f"org{i % 97:02d}/model-{i:04d}" for i in range(n_models)]
    items = [f"task{j // per:02d}/q{j % per:04d}" for j in range(J)]
    Y = np.empty((n_models, J), dtype=np.int8)
    for s in range(0, n_models, 500):
        lo = a[None, :] * (theta[s : s + 500, None] - b[None, :])
        p = 1 / (1 + np.exp(-lo))
        Y[s : s + 500] = (rng.random(lo.shape, dtype=np.float32) < p).astype(np.int8)
    seen = np.ones((n_models, TASKS), dtype=bool)
    if missing:
        seen[:] = False
        for i in range(n_models):
            seen[i, rng.choice(TASKS, 12, replace=False)] = True
    if plant:
        # copies of items within the same task (observed on the same models)
        targets = rng.choice(J, plant, replace=False)
        for t in targets:
            task = t // per
            source = task * per + (t % per + 1 + int(rng.integers(per - 1))) % per
            copy = Y[:, source].copy()
            flip = rng.random(n_models) < 0.01
            copy[flip] = (rng.random(int(flip.sum())) < 0.5).astype(np.int8)
            Y[:, t] = copy
    cols: dict[str, object] = {"model": pa.array(models)}
    for j in range(J):
        mask = None if not missing else ~seen[:, j // per]
        cols[items[j]] = pa.array(Y[:, j], mask=mask)
    pq.write_table(pa.table(cols), path)


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (GB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["nice", "-n", "5", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed ({status}): {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024**2


def env_for(src: Path, cache: Path) -> dict[str, str]:
    """The environment of one tree's child (its ``src`` first on the path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LATENTBENCH_")}
    env["PYTHONPATH"] = str(src.resolve())
    env["LATENTBENCH_CACHE_DIR"] = str(cache)
    return env


def strip_stamp(html: str) -> str:
    """The page without its generation time (the only line expected to differ)."""
    return re.sub(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?(\.\d+)?( ?UTC|\+00:00)?", "T", html)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["gen", "ab"])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--missing", action="store_true", help="70%% missing in blocks")
    parser.add_argument("--plant", type=int, default=0, help="planted duplicate items")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--old", type=Path, default=None, help="the baseline's src folder")
    parser.add_argument("--new", type=Path, default=ROOT / "src")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    exe = str(Path(sys.executable).with_name("latentbench"))
    if args.what == "gen":
        path = work / "wide.parquet"
        generate(args.models, args.items, args.missing, args.plant, path)
        env = env_for(args.new, work / "cache-gen")
        secs = run_child([exe, "fit", str(path), "--out", str(work / "fit"), "-q"], env)
        print(f"wrote {path}; fit in {secs[0]:.1f} s, {secs[2]:.2f} GB")
        return
    if args.old is None:
        parser.error("ab needs --old")
    trees = {"old": args.old, "new": args.new}
    pages: dict[str, str] = {}

    def report(tag: str) -> tuple[float, float, float]:
        out = work / f"report-{tag}.html"
        argv = [exe, "report", str(work / "fit"), "--out", str(out), "--force", "-q"]
        got = run_child(argv, env_for(trees[tag], work / f"cache-{tag}"))
        page = strip_stamp(out.read_text())
        if pages.setdefault(tag, page) != page:
            sys.exit(f"{tag}: the report changed between runs")
        return got

    load = os.getloadavg()[0]
    times = interleaved_seconds({tag: (lambda t=tag: report(t)) for tag in trees}, args.repeats)
    same = pages["old"] == pages["new"]
    print(
        f"report {work / 'fit'}: {args.repeats} rounds, load {load:.1f}->{os.getloadavg()[0]:.1f}"
    )
    for tag, got in times.items():
        wall = statistics.median(g[0] for g in got)
        cpu = statistics.median(g[1] for g in got)
        peak = statistics.median(g[2] for g in got)
        walls = ", ".join(f"{g[0]:.1f}" for g in got)
        print(f"  {tag}: wall {wall:.1f} s ({walls}), CPU {cpu:.1f} s, peak {peak:.2f} GB")
    print(f"  HTML old == new (time stamp aside): {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
