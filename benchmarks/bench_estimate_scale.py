"""The estimate path at leaderboard scale: many new models against a large calibration.

``gen`` writes, under ``--work``, a synthetic leaderboard (``latentbench.synthetic.
leaderboard_like``: a general ability plus two secondary factors, calibrated to the shared
matrices) of ``--models`` reference models x ``--items`` items in 40 tasks, each reference
model evaluated on a random ``1 - --missing`` share of the tasks (missing in blocks, as real
leaderboards are), as a wide Parquet file ``cal.parquet``; and ``--new`` further models of
the same generator with every item answered, as ``new.parquet`` (wide).

``run`` times, each command in a fresh process under ``nice`` (wall seconds, CPU seconds and
peak resident set of the child, ``os.wait4``), ``--repeats`` times, and prints medians and
ratios:

- ``fit cal.parquet --out FIT`` (the calibration, first computation);
- ``estimate FIT new.parquet --out est/`` (every new model, cached calibration) and the same
  for one model (``--model``): the per-model cost is their difference over the models;
- ``estimate cal.parquet new.parquet --model M`` with an empty and then a filled calibration
  cache (the matrix file's calibration: computed once, then loaded);
- ``report est/`` (the page of a many-model estimate) and ``report SERIES/`` (a folder of
  ``--series`` one-model estimate folders);
- ``tiny FIT --k 100``, ``compare`` of two models' estimates,
  ``experiment cal.parquet --task estimate --models 3 held-out models``;
- in-process, ``select.estimate_many`` on the loaded calibration (milliseconds per model) and
  one estimation step (``bench_estimate.py --speed``'s measure: choose + update, items of the
  calibration).

Usage::

    python benchmarks/bench_estimate_scale.py gen --models 3000 --items 20000 --new 300 --work DIR
    python benchmarks/bench_estimate_scale.py run --work DIR --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = 40


def generate(n_models: int, n_items: int, n_new: int, missing: float, work: Path) -> None:
    """``cal.parquet`` and ``new.parquet`` (see the module's docstring)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from latentbench.synthetic import leaderboard_like

    rng = np.random.default_rng(133)
    per = n_items // TASKS
    J = per * TASKS
    Y = leaderboard_like(n_models + n_new, J, random_state=133).astype(np.int8)
    items = [f"task{j // per:02d}/q{j % per:04d}" for j in range(J)]
    models = [f"org{i % 97:02d}/model-{i:05d}" for i in range(n_models + n_new)]
    keep = max(1, round(TASKS * (1 - missing)))
    seen = np.zeros((n_models, TASKS), dtype=bool)
    for i in range(n_models):
        seen[i, rng.choice(TASKS, keep, replace=False)] = True
    cal: dict[str, object] = {"model": pa.array(models[:n_models])}
    new: dict[str, object] = {"model": pa.array(models[n_models:])}
    for j in range(J):
        cal[items[j]] = pa.array(Y[:n_models, j], mask=~seen[:, j // per])
        new[items[j]] = pa.array(Y[n_models:, j])
    work.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cal), work / "cal.parquet")
    pq.write_table(pa.table(new), work / "new.parquet")
    print(f"wrote {work / 'cal.parquet'} ({n_models} x {J}, {1 - keep / TASKS:.0%} missing)")
    print(f"wrote {work / 'new.parquet'} ({n_new} x {J}, complete)")


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident GB of one command in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(["nice", "-n", "5", *argv], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20


def in_process(work: Path, n_models: int) -> None:
    """``estimate_many`` per model, one estimation step and a replay, in this process."""
    import warnings

    import numpy as np

    from latentbench import select
    from latentbench.select._estimate_design import SequentialEstimate

    cal = select.load_calibration(work / "fit")
    answers = select.read_responses(work / "new.parquet")
    names = list(answers)[:n_models]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        select.estimate_many(cal, answers, models=names[:2])  # compiled kernels, imports
        tic = time.perf_counter()
        select.estimate_many(cal, answers, models=names)
        per = (time.perf_counter() - tic) / len(names)
        tic = time.perf_counter()
        select.estimate_many(cal, answers, models=names, items=work / "tiny.csv")
        fixed = (time.perf_counter() - tic) / len(names)
    y = answers[names[0]].reindex(list(cal.item_ids)).to_numpy(dtype=np.float64)
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
    rng = np.random.default_rng(0)
    steps = []
    for _ in range(300):
        tic = time.perf_counter()
        j, pi = seq.choose(rng)
        seq.observe(j, float(y[j]), pi)
        steps.append(1000 * (time.perf_counter() - tic))
    print(
        f"in process, {cal.n_items:,} items, {len(cal.model_ids):,} calibration models: "
        f"estimate_many {1000 * per:.0f} ms a model adaptive (budget 100), {1000 * fixed:.0f} "
        f"ms a model with tiny's 100-item design; one step (choose + update) median "
        f"{statistics.median(steps):.2f} ms, p90 {sorted(steps)[int(0.9 * len(steps))]:.2f} ms "
        "(target <= 20 ms)"
    )


def run(work: Path, repeats: int, n_series: int, src: Path) -> None:
    """Each command ``repeats`` times in fresh processes (``PYTHONPATH`` on ``src``);
    medians and ratios."""
    import json
    import shutil

    env = dict(os.environ, PYTHONPATH=str(src), LATENTBENCH_CACHE_DIR=str(work / "c"))
    cli = [str(Path(sys.executable).with_name("latentbench"))]
    names = list(json.loads((work / "names.json").read_text()))
    one = names[0]
    rows: dict[str, list[tuple[float, float, float]]] = {}

    def timed(label: str, argv: list[str], before: object = None) -> None:
        for _ in range(repeats):
            if callable(before):
                before()
            rows.setdefault(label, []).append(run_child(argv, env))

    def clear(*paths: Path) -> object:
        def remove() -> None:
            for p in paths:
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink(missing_ok=True)

        return remove

    cal, new, fit = work / "cal.parquet", work / "new.parquet", work / "fit"
    timed("fit cal.parquet (the calibration)", [*cli, "fit", str(cal), "--out", str(fit),
          "-q"], clear(fit))  # fmt: skip
    timed("estimate cal.parquet, 1 model, empty cache (fits)",
          [*cli, "estimate", str(cal), str(new), "--model", one, "-q"],
          clear(work / "c"))  # fmt: skip
    timed("estimate cal.parquet, 1 model, cached calibration",
          [*cli, "estimate", str(cal), str(new), "--model", one, "-q"])  # fmt: skip
    timed("estimate FIT, 1 model", [*cli, "estimate", str(fit), str(new), "--model", one, "-q"])
    timed(f"estimate FIT, all {len(names)} models --out est/",
          [*cli, "estimate", str(fit), str(new), "--out", str(work / "est"), "-q"],
          clear(work / "est"))  # fmt: skip
    timed("tiny FIT --k 100", [*cli, "tiny", str(fit), "--k", "100", "--out",
          str(work / "tiny.csv")], clear(work / "tiny.csv"))  # fmt: skip
    timed(f"estimate FIT, all {len(names)} models --items tiny.csv",
          [*cli, "estimate", str(fit), str(new), "--items", str(work / "tiny.csv"), "--out",
           str(work / "est_tiny"), "-q"], clear(work / "est_tiny"))  # fmt: skip
    timed("compare FIT A B", [*cli, "compare", str(fit), str(new), str(new), "--a", names[0],
          "--b", names[1], "-q"])  # fmt: skip
    timed(f"report est/ ({len(names)} models)", [*cli, "report", str(work / "est"), "--out",
          str(work / "est.html"), "-q"], clear(work / "est.html"))  # fmt: skip
    series = work / "series"
    if not series.is_dir():  # in a child: a child forked from a large parent reports its
        # parent's resident set as its own peak (ru_maxrss survives the exec)
        run_child([sys.executable, __file__, "series", "--work", str(work), "--series",
                   str(n_series)], env)  # fmt: skip
    timed(f"report SERIES/ ({n_series} folders)", [*cli, "report", str(series), "--out",
          str(work / "series.html"), "-q"], clear(work / "series.html"))  # fmt: skip
    per_model = statistics.median(
        w for w, _, _ in rows[f"estimate FIT, all {len(names)} models --out est/"]
    )
    single = statistics.median(w for w, _, _ in rows["estimate FIT, 1 model"])
    print(f"{'command':62} {'wall s':>8} {'CPU s':>8} {'peak GB':>8}  (median of {repeats})")
    for label, runs in rows.items():
        wall, cpu, peak = (statistics.median(r[k] for r in runs) for k in range(3))
        print(f"{label:62} {wall:8.2f} {cpu:8.2f} {peak:8.2f}")
    print(
        f"the {len(names)}-model call / the 1-model call: {per_model / single:.1f}; per model "
        f"beyond start-up {(per_model - single) / (len(names) - 1) * 1000:.0f} ms"
    )
    cold = statistics.median(
        w for w, _, _ in rows["estimate cal.parquet, 1 model, empty cache (fits)"]
    )
    warm = statistics.median(
        w for w, _, _ in rows["estimate cal.parquet, 1 model, cached calibration"]
    )
    print(f"first calibration / cached: {cold / warm:.1f}")
    in_process(work, min(len(names), 60))


def make_series(work: Path, names: list[str]) -> None:
    """``--series`` one-model estimate folders (``step100``, ``step200``, ...), as a series of
    checkpoints is saved (``estimate --out est/stepN`` once per checkpoint)."""
    import warnings

    from latentbench import select

    cal = select.load_calibration(work / "fit")
    answers = select.read_responses(work / "new.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = select.estimate_many(cal, answers, models=names)
    for k, r in enumerate(done.results, start=1):
        r.save(work / "series" / f"step{100 * k}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["gen", "run", "series"])
    parser.add_argument("--models", type=int, default=3000)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--new", type=int, default=300)
    parser.add_argument("--missing", type=float, default=0.5, help="share of tasks not run")
    parser.add_argument("--series", type=int, default=300)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the tree timed")
    args = parser.parse_args()
    if args.what == "gen":
        generate(args.models, args.items, args.new, args.missing, args.work)
        import json

        import pyarrow.parquet as pq

        names = pq.read_table(args.work / "new.parquet", columns=["model"]).column(0)
        (args.work / "names.json").write_text(json.dumps(names.to_pylist()))
    elif args.what == "series":
        import json

        make_series(args.work, json.loads((args.work / "names.json").read_text())[: args.series])
    else:
        run(args.work, args.repeats, args.series, args.src)


if __name__ == "__main__":
    main()
