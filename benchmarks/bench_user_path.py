"""The user's path, timed side by side in two source trees (a regression check, A/B).

Runs the README's commands (and the Python twins of reading and estimating) against two
``src`` folders, ``--old`` and ``--new``, each in fresh processes with ``PYTHONPATH`` set to
that folder, alternating old and new in the same window (``_timing.interleaved_seconds``), and
prints per case the median wall seconds of each, the ratio new / old of the medians, the range
of the per-round ratios (the spread the machine's load leaves), and the same medians and ratio
of CPU seconds (user + system; closer to an idle machine's wall time when the cores are
shared). Every case runs once per tree before the rounds (numba caches and the calibration
cache filled, files in the page cache); the calibration cache is one folder per tree
(``LATENTBENCH_CACHE_DIR``).

Cases (on /work/shared/data or ``--data``; MMLU-Pro 29 x 12,032 is the largest shared matrix):

- ``import``: ``python -c "import latentbench"``; ``help``: ``latentbench --help``;
- ``read-*``: ``ResponseMatrix.read`` of a wide CSV / Parquet (models as rows, one column per
  item) and of the long Parquet, timed inside the process (median of 3 reads after one);
- ``fit-bfcl``, ``fit-mmlu``: ``latentbench fit FILE --out DIR`` end to end;
- ``estimate``: ``latentbench estimate calib28.parquet mixtral.parquet --budget 100 --seed 0``
  (the README's, calibration cached); ``estimate-py``: ``lb.estimate`` of the same, median of
  5 calls after the first, timed inside the process;
- ``compare``: ``latentbench compare bfcl_calib69.parquet bfcl_pair.parquet --a
  command-r-plus-FC --b gorilla-openfunctions-v2`` (BFCL less those two models calibrates;
  their paired answers); ``compare-py``: ``latentbench.select.compare`` of the same, median
  of 5 calls after the first, timed inside the process;
- ``select``: ``latentbench select replay bfcl_v2.parquet``;
- ``ingest``, ``export``: the README's ``ingest helm`` into a new store, then
  ``export ... --format eee``;
- ``report``: ``latentbench report FIT --out report.html`` of the tree's own BFCL fit;
- ``demo``: ``latentbench demo --out DIR``.

Usage: ``python benchmarks/bench_user_path.py --old /tmp/old/src --new src --repeats 5
[--cases fit-bfcl demo ...] [--work DIR]``. Absolute seconds depend on the machine's load;
read the ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import interleaved_seconds

Seconds = tuple[float, float]  # wall, CPU (user + system)
ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data")

READ = """
import statistics, sys, time
from latentbench import ResponseMatrix
ResponseMatrix.read(sys.argv[1])
walls, cpus = [], []
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    ResponseMatrix.read(sys.argv[1])
    walls.append(time.perf_counter() - t)
    cpus.append(time.process_time() - c)
print(statistics.median(walls), statistics.median(cpus))
"""

ESTIMATE = """
import statistics, sys, time, warnings
import latentbench as lb
warnings.simplefilter("ignore")
lb.estimate(sys.argv[1], sys.argv[2], budget=100, seed=0)
walls, cpus = [], []
for _ in range(5):
    t, c = time.perf_counter(), time.process_time()
    lb.estimate(sys.argv[1], sys.argv[2], budget=100, seed=0)
    walls.append(time.perf_counter() - t)
    cpus.append(time.process_time() - c)
print(statistics.median(walls), statistics.median(cpus))
"""

COMPARE = """
import statistics, sys, time, warnings
from latentbench.select import compare
warnings.simplefilter("ignore")
args = dict(model_a=sys.argv[3], model_b=sys.argv[4])
compare(sys.argv[1], sys.argv[2], **args)
walls, cpus = [], []
for _ in range(5):
    t, c = time.perf_counter(), time.process_time()
    compare(sys.argv[1], sys.argv[2], **args)
    walls.append(time.perf_counter() - t)
    cpus.append(time.process_time() - c)
print(statistics.median(walls), statistics.median(cpus))
"""
PAIR = ("command-r-plus-FC", "gorilla-openfunctions-v2")
"""The compare cases' two BFCL models (held out of the calibration)."""


def prepare(data: Path, work: Path) -> None:
    """The input files: the shared matrices, their wide forms and the README's split."""
    import pandas as pd

    work.mkdir(parents=True, exist_ok=True)
    for name in ("bfcl_v2", "mmlu_pro"):
        shutil.copy(data / f"{name}.parquet", work / f"{name}.parquet")
        long = pd.read_parquet(data / f"{name}.parquet")
        wide = long.pivot(index="model", columns="item", values="score")
        wide.index.name = "model"
        wide.columns.name = None
        wide.to_csv(work / f"{name}_wide.csv")
        wide.reset_index().to_parquet(work / f"{name}_wide.parquet", index=False)
    mmlu = pd.read_parquet(data / "mmlu_pro.parquet")
    new = mmlu["model"] == "Mixtral-8x7B-v0.1"
    mmlu[~new].to_parquet(work / "calib28.parquet", index=False)
    mmlu[new].to_parquet(work / "mixtral.parquet", index=False)
    bfcl = pd.read_parquet(data / "bfcl_v2.parquet")
    pair = bfcl["model"].isin(PAIR)
    bfcl[~pair].to_parquet(work / "bfcl_calib69.parquet", index=False)
    bfcl[pair].to_parquet(work / "bfcl_pair.parquet", index=False)


class Tree:
    """One source tree: runs commands with its ``src`` first on the path."""

    def __init__(self, tag: str, src: Path, work: Path) -> None:
        self.tag, self.src, self.work = tag, src.resolve(), work
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LATENTBENCH_")}
        self.env["PYTHONPATH"] = str(self.src)
        self.env["LATENTBENCH_CACHE_DIR"] = str(work / f"cache-{tag}")
        self.exe = str(Path(sys.executable).with_name("latentbench"))

    def run(self, argv: list[str], cwd: Path | None = None) -> tuple[Seconds, str]:
        """Wall and CPU seconds (user + system) and stdout of one command (``latentbench`` is
        this venv's script)."""
        argv = [self.exe, *argv[1:]] if argv[0] == "latentbench" else argv
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            argv, cwd=cwd or self.work, env=self.env, capture_output=True, text=True
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"[{self.tag}] {' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return (wall, cpu), done.stdout

    def fresh(self, name: str) -> Path:
        """A new empty folder for one run's outputs (also in a ``--work`` used before)."""
        runs = self.work / f"runs-{self.tag}"
        runs.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=runs))


def cases(w: Path) -> dict[str, Callable[[Tree], Seconds]]:
    """Each case: one measurement in ``tree``, its wall and CPU seconds."""

    def wall(argv: list[str]) -> Callable[[Tree], Seconds]:
        return lambda t: t.run(argv)[0]

    def reported(code: str, *args: str) -> Callable[[Tree], Seconds]:
        def measure(t: Tree) -> Seconds:
            walls, cpus = t.run([sys.executable, "-c", code, *args])[1].split()[-2:]
            return float(walls), float(cpus)

        return measure

    def fit(name: str) -> Callable[[Tree], Seconds]:
        return lambda t: t.run(["latentbench", "fit", str(w / name), "--out", str(t.fresh("f"))])[0]

    def select(t: Tree) -> Seconds:
        argv = ["latentbench", "select", "replay", str(w / "bfcl_v2.parquet")]
        return t.run(argv, t.fresh("sel"))[0]

    def ingest(t: Tree) -> Seconds:
        helm = t.src.parent / "tests" / "data" / "formats" / "real" / "helm"
        argv = ["latentbench", "ingest", "helm", str(helm), "--store", "results.duckdb"]
        return t.run([*argv, "--metric", "exact_match"], t.fresh("ingest"))[0]

    def export(t: Tree) -> Seconds:
        cwd = t.fresh("export")
        helm = t.src.parent / "tests" / "data" / "formats" / "real" / "helm"
        argv = ["latentbench", "ingest", "helm", str(helm), "--store", "results.duckdb"]
        t.run([*argv, "--metric", "exact_match"], cwd)
        argv = ["latentbench", "export", "eee-out", "--store", "results.duckdb"]
        return t.run([*argv, "--format", "eee"], cwd)[0]

    def report(t: Tree) -> Seconds:
        fitdir = w / f"fit-{t.tag}"
        if not (fitdir / "fit.json").exists():
            t.run(["latentbench", "fit", str(w / "bfcl_v2.parquet"), "--out", str(fitdir)])
        out = t.fresh("report") / "report.html"
        return t.run(["latentbench", "report", str(fitdir), "--out", str(out)])[0]

    estimate = ["latentbench", "estimate", "calib28.parquet", "mixtral.parquet"]
    compare = ["latentbench", "compare", "bfcl_calib69.parquet", "bfcl_pair.parquet"]
    return {
        "import": wall([sys.executable, "-c", "import latentbench"]),
        "help": wall(["latentbench", "--help"]),
        "read-wide-csv-mmlu": reported(READ, str(w / "mmlu_pro_wide.csv")),
        "read-wide-parquet-mmlu": reported(READ, str(w / "mmlu_pro_wide.parquet")),
        "read-wide-csv-bfcl": reported(READ, str(w / "bfcl_v2_wide.csv")),
        "read-long-parquet-mmlu": reported(READ, str(w / "mmlu_pro.parquet")),
        "fit-bfcl": fit("bfcl_v2.parquet"),
        "fit-mmlu": fit("mmlu_pro.parquet"),
        "estimate": wall([*estimate, "--budget", "100", "--seed", "0"]),
        "estimate-py": reported(ESTIMATE, "calib28.parquet", "mixtral.parquet"),
        "compare": wall([*compare, "--a", PAIR[0], "--b", PAIR[1]]),
        "compare-py": reported(COMPARE, "bfcl_calib69.parquet", "bfcl_pair.parquet", *PAIR),
        "select": select,
        "ingest": ingest,
        "export": export,
        "report": report,
        "demo": lambda t: t.run(["latentbench", "demo", "--out", str(t.fresh("demo"))])[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the baseline's src folder")
    parser.add_argument("--new", type=Path, default=ROOT / "src", help="this tree's src")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="*", default=None, help="default: all")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--work", type=Path, default=None, help="default: a temp dir, removed")
    parser.add_argument("--json", type=Path, default=None, help="also append the times here")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-user-path-"))
    prepare(args.data, work)
    trees = [Tree("old", args.old, work), Tree("new", args.new, work)]
    table = cases(work)
    chosen = args.cases or list(table)
    print(
        f"{'case':<24} {'old s':>8} {'new s':>8} {'new/old':>8} {'(per round)':>12} "
        f"{'old cpu':>8} {'new cpu':>8} {'new/old':>8}  load"
    )
    try:
        for name in chosen:
            case = table[name]
            for tree in trees:  # warm-up: caches and the page cache
                case(tree)
            load = os.getloadavg()[0]
            runs = {t.tag: functools.partial(case, t) for t in trees}
            times = interleaved_seconds(runs, args.repeats)
            wall = {tag: statistics.median(w for w, _ in got) for tag, got in times.items()}
            cpu = {tag: statistics.median(c for _, c in got) for tag, got in times.items()}
            ratios = [n[0] / o[0] for o, n in zip(times["old"], times["new"], strict=True)]
            spread = f"({min(ratios):.2f}-{max(ratios):.2f})"
            print(
                f"{name:<24} {wall['old']:>8.3f} {wall['new']:>8.3f} "
                f"{wall['new'] / wall['old']:>8.2f} {spread:>12} {cpu['old']:>8.3f} "
                f"{cpu['new']:>8.3f} {cpu['new'] / cpu['old']:>8.2f}  "
                f"{load:.1f}->{os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if args.json:
                with args.json.open("a") as f:
                    f.write(json.dumps({"case": name, **times}) + "\n")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
