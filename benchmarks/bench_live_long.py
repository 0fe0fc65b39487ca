"""Does a long live run's per-batch overhead grow with its length?

Usage::

    python benchmarks/bench_live_long.py [--models 30] [--items 3000] [--batch 32]
                                         [--budget 20000] [--policy pulse] [--task select]

A synthetic pool (logistic item-response scores, fixed seed) is asked through a
``kind = "python"`` oracle that reads the scores from a ``.npy`` file (instant, so what is
timed is latentbench's own work: the policy step, the store writes, the progress
snapshot). ``--task select`` runs ``run_live`` to ``--budget`` cells; ``--task estimate``
runs ``estimate --live``'s Python twin on one new model. Prints the machine, the median
milliseconds per batch (per item for an estimate) in windows of the run, the store's size,
the peak RSS, and the seconds of a resume of the finished run, of ``ls`` and of ``report``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ORACLE = """import numpy as np
_S = np.load({path!r})
_M = {{m: k for k, m in enumerate({models!r})}}
def score(model, items):
    row = _S[_M[model]]
    return [float(row[int(i[1:])]) for i in items]
"""


def _serve(names: list[str], records: list[dict[str, str]], truth: np.ndarray) -> int:
    """Start the tests' fake OpenAI-compatible server (answers at once); its port."""
    import importlib.util
    import threading

    path = Path(__file__).resolve().parent.parent / "tests/select_live/conftest.py"
    spec = importlib.util.spec_from_file_location("_live_conftest", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    state = mod.FakeOpenAI(names, records, truth)
    server = mod._Server(("127.0.0.1", 0), mod._handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ["BENCH_KEY"] = mod.API_KEY
    return int(server.server_address[1])


def _rss_mb() -> float:
    """The process's resident memory now (MB; Linux only, else NaN)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return float("nan")


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _windows(times: list[float], n: int = 6) -> str:
    """Median ms per batch in ``n`` equal windows of the run."""
    if not times:
        return "-"
    edges = np.linspace(0, len(times), n + 1).astype(int)
    parts = []
    for a, b in itertools.pairwise(edges):
        if b > a:
            parts.append(f"[{a}-{b}) {1000 * statistics.median(times[a:b]):.1f}")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--history", type=int, default=40)
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--budget", type=int, default=20000)
    parser.add_argument("--policy", default="pulse")
    parser.add_argument("--task", choices=["select", "estimate"], default="select")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--oracle",
        choices=["python", "http"],
        default="python",
        help="python: a kind = 'python' function; http: the tests' local OpenAI-compatible "
        "server (tests/select_live/conftest.py), kind = 'openai', concurrency 4",
    )
    parser.add_argument("--keep", default=None, help="folder to keep the store in")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from latentbench.io.store import Store
    from latentbench.select.live import DurableOracle, LiveConfig, run_live

    rng = np.random.default_rng(args.seed)
    n_all = args.models + args.history
    theta = rng.normal(0, 1, n_all)
    beta = rng.normal(0, 1, args.items)
    scores = (rng.random((n_all, args.items)) < 1 / (1 + np.exp(-(theta[:, None] - beta)))).astype(
        float
    )
    names = [f"m{k:03d}" for k in range(n_all)]
    items = [f"i{k}" for k in range(args.items)]
    cands, hist = names[: args.models], names[args.models :]
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench_live_long_"))
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "scores.npy", scores[: args.models])
    (folder / "bench_oracle.py").write_text(
        ORACLE.format(path=str(folder / "scores.npy"), models=cands)
    )
    h = scores[args.models :]
    pd.DataFrame(
        {"model": np.repeat(hist, args.items), "item": np.tile(items, len(hist)),
         "score": h.ravel()}
    ).to_parquet(folder / "history.parquet")  # fmt: skip
    records = [{"id": item, "prompt": f"q{k}", "answer": str(k)} for k, item in enumerate(items)]
    with (folder / "items.jsonl").open("w") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    oracle = '[oracle]\nkind = "python"\nfunction = "bench_oracle:score"\n'
    models = "".join(f'\n[[models]]\nname = "{m}"\n' for m in cands)
    if args.oracle == "http":
        port = _serve(cands, records, scores[: args.models])
        oracle = '[oracle]\nkind = "openai"\nconcurrency = 4\n'
        models = "".join(
            f'\n[[models]]\nname = "{m}"\nmodel = "{m}"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'api_key_env = "BENCH_KEY"\n'
            for m in cands
        )
    config = folder / "run.toml"
    config.write_text(
        f"[run]\nseed = {args.seed}\nbudget = {args.budget}\nbatch_size = {args.batch}\n"
        f'policy = "{args.policy}"\n\n[proxy]\nhistory = "history.parquet"\n\n'
        '[items]\npath = "items.jsonl"\n\n[scorer]\nkind = "exact_match"\n\n' + oracle + models
    )
    store_path = folder / "run.duckdb"
    for p in folder.glob("run.duckdb*"):
        p.unlink()
    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} CPUs, "
          f"{platform.python_version()}; {args.models} models x {args.items:,} items, "
          f"batch {args.batch}, budget {args.budget:,}, policy {args.policy}")  # fmt: skip
    cfg = LiveConfig.from_toml(config)
    stamps: list[float] = []  # entry of each batch (select) or item (estimate)
    evaluate = DurableOracle.evaluate

    rss: list[float] = []  # resident MB at each batch (item)

    def timed(self: DurableOracle, model: int, items: np.ndarray) -> np.ndarray:
        stamps.append(time.perf_counter())
        rss.append(_rss_mb())
        return evaluate(self, model, items)

    DurableOracle.evaluate = timed  # type: ignore[method-assign]
    start = time.perf_counter()
    if args.task == "select":
        result = run_live(cfg, store_path)
        run_id, cells = result.run_id, result.paid_total
        best = result.selection.best_id if result.selection else None
        print(
            f"run: {result.status}, {cells:,} cells, {time.perf_counter() - start:.1f} s, "
            f"best {best}"
        )
    else:
        from latentbench.select import estimate_live

        est = estimate_live(folder / "history.parquet", cfg, store_path, model=cands[0],
                            budget=args.budget, seed=args.seed)  # fmt: skip
        run_id = str(est.options["live"]["run_id"])
        cells = int(est.n_evaluated)
        print(
            f"estimate: {est.stopped}, {cells:,} items, {time.perf_counter() - start:.1f} s, "
            f"score {est.score:.4f} [{est.lower:.4f}, {est.upper:.4f}]"
        )
    unit = "batch" if args.task == "select" else "item"
    print(
        f"ms per {unit} (each DurableOracle.evaluate to the next) by window of the run: "
        f"{_windows(list(np.diff(stamps)))}"
    )
    edges = np.linspace(0, len(rss) - 1, 7).astype(int)
    print("resident MB at batch: " + "; ".join(f"{k} {rss[k]:.0f}" for k in edges))
    print(f"store {store_path.stat().st_size / 1e6:.1f} MB; peak RSS {_peak_rss_mb():.0f} MB "
          "(the run's, store setup included)")  # fmt: skip
    with Store(store_path) as db:
        obs = db.selection_observations(run_id)
    digest = pd.util.hash_pandas_object(obs[["seq", "model", "item", "score"]]).sum()
    print(f"observations digest {digest}")
    start = time.perf_counter()
    if args.task == "select":
        again = run_live(cfg, store_path)
        replayed, paid = again.n_replayed, again.n_paid
    else:
        est = estimate_live(folder / "history.parquet", cfg, store_path, model=cands[0],
                            budget=args.budget, seed=args.seed)  # fmt: skip
        replayed, paid = est.options["live"]["n_replayed"], est.options["live"]["n_paid"]
    print(
        f"resume of the finished run: {time.perf_counter() - start:.1f} s "
        f"({replayed:,} cells from the store, {paid} paid); peak RSS {_peak_rss_mb():.0f} MB"
    )
    commands = [["ls", "--store", str(store_path)]]
    if args.task == "select":  # a live estimate has no report (its result is what it printed)
        report = str(folder / "report.html")
        commands.append(["report", str(store_path), "--run-id", run_id, "--out", report, "--force"])
    for cmd in commands:
        start = time.perf_counter()
        out = subprocess.run(
            [shutil.which("latentbench") or "latentbench", *cmd],
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - start
        print(f"latentbench {cmd[0]}: {took:.1f} s (exit {out.returncode})")


if __name__ == "__main__":
    main()
