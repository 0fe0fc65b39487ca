"""PULSE vs UCB-E on BFCL and on leaderboard-like pools (issue 4); prints markdown tables.

Both experiments go through :func:`latentbench.select.experiment_from_matrix`, the
twin of ``latentbench experiment``; the equivalent CLI commands are printed with the tables.

* BFCL (``bfcl_v2.parquet``, 71 models x 1,700 items): a random half of the models (35) is the
  history, the exact-gap pool (gap 0.02) is built among the other 36 (no release dates in the
  data, so the split is random, seeded).
* Leaderboard-like: 4,000 models drawn from a rank-4 logistic fit of ``mmlu_pro.parquet``
  (12,032 items); 2,000 history, exact-gap pool of 1,000 models (gap 0.02) among the other 2,000.

Usage::

    python benchmarks/run_experiments.py --seeds 200 --out benchmarks/results_select
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from latentbench.io import ResponseMatrix
from latentbench.select import experiment_from_matrix

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"

BFCL_POLICIES = [
    "ucbe",
    "pulse",
    "pulse:weights=precision",
    "naive",
    "naive_frozen",
    "ucbe:init_batch=16;doubling=true",
    "pulse:init_batch=16;weights=precision;doubling=true",
    "pulse:init_batch=8;weights=precision;doubling=true",
]
LB_POLICIES = BFCL_POLICIES


def table(result, title: str) -> str:
    rows = [
        f"### {title}",
        "",
        f"pool: {json.dumps(result.pools)}; {result.params['n_seeds']} seeds; "
        f"budget {result.params['budget']:,}; B = {result.params['batch_size']}; "
        f"proxy rank {result.params.get('proxy_rank')}; wall time "
        f"{result.params['seconds']:.0f} s",
        "",
        "| policy | init cells | to 95 % post-init (all seeds ± bootstrap SD) | sustained "
        "| to 95 % total "
        "| saved post-init vs UCB-E | saved total vs UCB-E | coverage | s/run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def pct(value) -> str:
        return "-" if value is None else f"{value:.1f} %"

    for r in result.summary:
        cov = "-" if r["coverage"] is None else f"{r['coverage']:.3f}"
        if r["reached_fraction"] < 1:
            note = f" (reached in {100 * r['reached_fraction']:.0f} % of resamples)"
        else:
            note = ""
        if r["budget_post_init"] is None:  # the curve of all the seeds never reaches 95 %
            rows.append(
                f"| `{r['policy']}` | {r['init_evaluations']:,} | not reached "
                f"(final accuracy {100 * r['final_accuracy']:.1f} %) | | | | | {cov} | "
                f"{r['seconds_per_run']:.2f} |"
            )
            continue
        sd = r["budget_post_init_sd"]
        sustained = r["budget_post_init_sustained"]
        rows.append(
            f"| `{r['policy']}` | {r['init_evaluations']:,} | "
            f"{r['budget_post_init']:,.0f}{'' if sd is None else f' ± {sd:,.0f}'}{note} | "
            f"{'-' if sustained is None else f'{sustained:,.0f}'} | {r['budget_total']:,.0f} | "
            f"{pct(r.get('saved_post_init_pct'))} | {pct(r.get('saved_total_pct'))} | {cov} | "
            f"{r['seconds_per_run']:.2f} |"
        )
    return "\n".join(rows)


def plot_curves(result, path: Path, title: str) -> None:
    """Identification accuracy vs post-init evaluations (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for (_pool, policy), correct in result.curves.items():
        ax.plot(result.grid, 100 * correct.mean(axis=0), label=policy, lw=1.2)
    ax.axhline(95, color="grey", ls=":", lw=1)
    ax.set_xlabel("evaluations after the initial batch")
    ax.set_ylabel("identification accuracy (%)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--out", default="benchmarks/results_select")
    parser.add_argument("--only", choices=["bfcl", "leaderboard"], default=None)
    parser.add_argument("--bfcl-budget", type=int, default=40_000)
    parser.add_argument("--lb-budget", type=int, default=80_000)
    parser.add_argument("--n-jobs", type=int, default=None)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    if args.only in (None, "bfcl"):
        start = time.perf_counter()
        res = experiment_from_matrix(
            ResponseMatrix.read(DATA / "bfcl_v2.parquet"),
            split="random",
            pools="gap:0.02",
            pool_size=1000,
            policies=BFCL_POLICIES,
            seeds=args.seeds,
            budget=args.bfcl_budget,
            rank="auto",
            n_jobs=args.n_jobs,
        )
        res.save(out / "bfcl")
        plot_curves(res, out / "bfcl" / "accuracy.png", "BFCL v2, exact gap 0.02")
        sections.append(
            table(res, f"BFCL v2, exact gap 0.02 ({time.perf_counter() - start:.0f} s)")
        )
        print(sections[-1], flush=True)
        print(
            "\ncommand: latentbench experiment ../shared/data/bfcl_v2.parquet --split random "
            f"--pools gap:0.02 --policies '{','.join(BFCL_POLICIES)}' --seeds {args.seeds} "
            f"--budget {args.bfcl_budget} --out {out / 'bfcl'}\n",
            flush=True,
        )
    if args.only in (None, "leaderboard"):
        start = time.perf_counter()
        res = experiment_from_matrix(
            ResponseMatrix.read(DATA / "mmlu_pro.parquet"),
            simulate=4000,
            sim_rank=4,
            pools="gap:0.02",
            pool_size=1000,
            policies=LB_POLICIES,
            seeds=args.seeds,
            budget=args.lb_budget,
            rank=8,
            n_jobs=args.n_jobs,
        )
        res.save(out / "leaderboard")
        plot_curves(res, out / "leaderboard" / "accuracy.png", "leaderboard-like, 1,000 models")
        fid = res.params.get("fidelity", {})
        sections.append(
            table(
                res,
                f"Leaderboard-like (MMLU-Pro items), 1,000-model pool, exact gap 0.02 "
                f"({time.perf_counter() - start:.0f} s)",
            )
            + "\n\nsimulator fidelity: "
            + json.dumps({k: round(v, 3) for k, v in fid.items()})
        )
        print(sections[-1], flush=True)
        print(
            "\ncommand: latentbench experiment ../shared/data/mmlu_pro.parquet --simulate 4000 "
            f"--sim-rank 4 --rank 8 --pools gap:0.02 --policies '{','.join(LB_POLICIES)}' "
            f"--seeds {args.seeds} --budget {args.lb_budget} --out {out / 'leaderboard'}\n",
            flush=True,
        )
    (out / "tables.md").write_text("\n\n".join(sections) + "\n")


if __name__ == "__main__":
    main()
