"""What the durable store costs a live selection, against the same selection replayed.

Usage::

    python benchmarks/bench_live.py [--data ../shared/data/bfcl_v2.parquet] [--candidates 10]
                                    [--repeats 3]

A random half of the matrix's other models is the history; ``--candidates`` models are asked
through a ``kind = "python"`` oracle that reads their recorded answers (instant, so what is
timed is latentbench's own work). The same configuration runs twice, side by side:

* ``replay``: ``latentbench.select.replay`` on the candidates' matrix (no store);
* ``live``: ``run_live`` into a fresh DuckDB store, every paid cell committed as it arrives,
  and every decision recorded.

Prints the cells, the median seconds of each (``--repeats``), the live run's milliseconds per
cell and its ratio to the replay. Both stop certified at delta = 0.05 and pick the same model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from latentbench.select import replay
from latentbench.select.live import LiveConfig, run_live

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_seconds

ORACLE = """import pandas as pd
_T = pd.read_parquet({path!r}).pivot(index="model", columns="item", values="score")
_ROWS = {{m: _T.loc[m] for m in _T.index}}
def score(model, items):
    row = _ROWS[model]
    return [float(row[i]) for i in items]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent
    parser.add_argument("--data", default=str(here.parent.parent / "shared/data/bfcl_v2.parquet"))
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    long = pd.read_parquet(args.data)
    models = sorted(long["model"].unique())
    rng = np.random.default_rng(args.seed)
    order = [models[k] for k in rng.permutation(len(models))]
    candidates, history = order[: args.candidates], order[args.candidates :][::2]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        long[long["model"].isin(history)].to_parquet(folder / "history.parquet")
        cands = long[long["model"].isin(candidates)]
        cands.to_parquet(folder / "candidates.parquet")
        cands.to_parquet(folder / "truth.parquet")
        (folder / "bench_oracle.py").write_text(ORACLE.format(path=str(folder / "truth.parquet")))
        items = sorted(cands["item"].unique())
        with (folder / "items.jsonl").open("w") as f:
            for item in items:
                f.write(json.dumps({"id": item, "prompt": "-", "answer": "-"}) + "\n")
        config = folder / "run.toml"
        config.write_text(
            f'[run]\nseed = {args.seed}\n\n[proxy]\nhistory = "history.parquet"\n\n'
            '[items]\npath = "items.jsonl"\n\n[scorer]\nkind = "exact_match"\n\n'
            '[oracle]\nkind = "python"\nfunction = "bench_oracle:score"\n'
            + "".join(f'\n[[models]]\nname = "{m}"\n' for m in candidates)
        )
        cfg = LiveConfig.from_toml(config)
        runs: dict[str, object] = {}
        count = [0]

        def live() -> None:
            count[0] += 1
            result = run_live(cfg, folder / f"live{count[0]}.duckdb")
            runs["live"] = result.selection

        def replayed() -> None:
            runs["replay"] = replay(
                folder / "candidates.parquet",
                history=folder / "history.parquet",
                random_state=args.seed,
            )

        start = time.perf_counter()
        t_replay = median_seconds(replayed, args.repeats)
        t_live = median_seconds(live, args.repeats)
        sel_live, sel_replay = runs["live"], runs["replay"]
        cells = int(sel_live.evaluations_total)  # type: ignore[attr-defined]
        print(f"{len(candidates)} candidates x {len(items):,} items, history {len(history)}")
        print(
            f"replay: {sel_replay.evaluations_total:,} cells, best "  # type: ignore[attr-defined]
            f"{sel_replay.best_id}, median {t_replay:.2f} s"
        )  # type: ignore[attr-defined]
        print(
            f"live:   {cells:,} cells, best {sel_live.best_id}, "  # type: ignore[attr-defined]
            f"median {t_live:.2f} s ({1000 * t_live / max(cells, 1):.2f} ms per cell)"
        )
        print(f"live / replay: {t_live / t_replay:.1f}x ({args.repeats} repeats each, "
              f"{time.perf_counter() - start:.0f} s in all)")  # fmt: skip


if __name__ == "__main__":
    main()
