"""Leave-one-model-out benchmark of ``latentbench.estimate`` against published baselines.

Each model of a shared matrix in turn is the new model; the others calibrate (a rank-1 fit,
computed once per held-out model and shared by every method). At 30, 100 and 300 items:

* ``uniform``: uniform random items, sample mean, anytime-valid WoR betting interval
  (:class:`latentbench.select._betting.BettingConfSeq`, no predictions);
  ``uniform-targeted``: the same items and mean with the interval of
  :class:`latentbench.select._estimate_cs.WeightedBettingCS` sized for the +-0.02 target (the
  rounds ``Z_t = (S_t + N_t y_t) / n``, ``S_t`` the revealed sum and ``N_t`` the pool size
  before item ``t``: unbiased for the mean under uniform draws), so that ours, whose interval
  is sized for the target, is also compared with a uniform interval sized for it;
* ``stratified``: 10 strata on the calibration's typical-model prediction, proportional
  allocation, weighted stratum means (no interval);
* ``anchors``: tinyBenchmarks-style (Polo et al. 2024): k-means on the items' IRT embeddings
  (discrimination, intercept), the item nearest each centroid as anchor, weight = cluster
  share; ``anchor`` = weighted anchor mean, ``pirt`` = anchors' answers plus IRT predictions
  at the MAP ability from the anchors, ``gpirt`` = lam anchor + (1 - lam) pirt with lam =
  mse_pirt / (mse_pirt + mse_anchor) estimated on the calibration models (no interval);
* ``cat``: Fluid-style computerized adaptive testing (Hofmann et al. 2025): next item = argmax
  Fisher information a^2 p (1 - p) at the MAP ability; score = mean predicted probability
  over all items at that ability (no interval);
* ``ours``: :class:`latentbench.select._estimate_design.SequentialEstimate` (the engine of
  ``latentbench.estimate``), once per proxy (``ours-ridge-*``: IRT predictions corrected by the
  ridge regression on the calibration responses, ``ours-irt-*``: IRT predictions alone; same
  random stream): ``-dr`` (the default point estimate) with the anytime-valid interval's
  coverage and items to +-0.02 (the interval sized for that precision, as ``estimate(...,
  precision=0.02)``; ``-dr-untargeted``: the interval without the target, fed the same
  rounds); ``-composite`` and ``-model`` are the other point estimates
  (same runs, same interval). Dumps written before the proxies existed have ``ours-dr`` etc.
  (the IRT proxy). ``--proxies`` also takes the trial variants of issue 27
  (``_estimate_common.make_estimate``): ``resridge`` (the ridge proxy on principal directions
  of the calibration models' IRT residuals), and any proxy suffixed ``-d`` (items drawn with
  the IRT predictions' design: the same draws as ``irt``), ``-v`` (precision weights and bets
  from the IRT predictions' variance) or ``-vd``; each prints its paired difference to
  ``ours-irt-dr``.

Prints per matrix: MAE with its standard error over (model, seed), coverage of the 95%
intervals, and the median number of items to a +-0.02 half-width (capped at --cap; a capped
run counts as the cap, so the reported median is a lower bound when marked ">=").

    python benchmarks/bench_estimate.py --seeds 2 --models 10
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from _estimate_common import held_out, make_estimate

from latentbench import ResponseMatrix
from latentbench.irt._objective import sigmoid
from latentbench.select._betting import BettingConfSeq
from latentbench.select._estimate_calibration import Calibration, from_matrix
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import PROXIES, SequentialEstimate

DATA = Path("/work/shared/data")
MATRICES = ("mmlu_pro", "bfcl_v2", "alpacaeval2_weighted", "alpacaeval1_gpt4")
BUDGETS = (30, 100, 300)
PRECISION = 0.02


def map_theta(a: np.ndarray, b: np.ndarray, y: np.ndarray, prior_sd: float = 1.0) -> float:
    """Rank-1 MAP ability given answers y on items (a, b), N(0, prior_sd^2) prior.

    The log-posterior is concave, so its derivative is decreasing: bisection on it (an
    undamped Newton step overshoots with discriminations of 5-10).
    """
    lo, hi = -15.0, 15.0
    for _ in range(50):
        t = 0.5 * (lo + hi)
        g = a @ (y - sigmoid(a * t + b)) - t / prior_sd**2
        if g > 0:
            lo = t
        else:
            hi = t
    return 0.5 * (lo + hi)


def kmeans(x: np.ndarray, k: int, rng: np.random.Generator, iters: int = 30) -> np.ndarray:
    """Lloyd's k-means with k-means++ initialisation; returns labels, shape (n,)."""
    n = x.shape[0]
    centers = [x[rng.integers(n)]]
    d2 = ((x - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1 / n)
        c = x[rng.choice(n, p=p)]
        centers.append(c)
        d2 = np.minimum(d2, ((x - c) ** 2).sum(1))
    C = np.array(centers)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        dist = ((x[:, None, :] - C[None, :, :]) ** 2).sum(-1)
        labels = dist.argmin(1)
        for j in range(k):
            members = x[labels == j]
            if len(members):
                C[j] = members.mean(0)
    return labels


def anchors(cal: Calibration, pop: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """tinyBenchmarks anchors on the population: positions (into pop) and weights."""
    a = cal.V[pop, 0]
    b = cal.b[pop]
    emb = np.column_stack([a, b])
    emb = (emb - emb.mean(0)) / np.maximum(emb.std(0), 1e-9)
    labels = kmeans(emb, k, np.random.default_rng(seed), iters=15)
    picks, weights = [], []
    for j in range(k):
        members = np.flatnonzero(labels == j)
        if members.size == 0:
            continue
        center = emb[members].mean(0)
        picks.append(members[((emb[members] - center) ** 2).sum(1).argmin()])
        weights.append(members.size / pop.size)
    return np.asarray(picks), np.asarray(weights)


def pirt(cal: Calibration, pop: np.ndarray, seen: np.ndarray, y_seen: np.ndarray) -> float:
    a, b = cal.V[pop, 0] / cal.sigma, cal.b[pop] / cal.sigma
    t = map_theta(a[seen], b[seen], y_seen)
    f = sigmoid(a * t + b)
    mask = np.ones(pop.size, dtype=bool)
    mask[seen] = False
    return float((y_seen.sum() + f[mask].sum()) / pop.size)


def uniform_targeted(y: np.ndarray, perm: np.ndarray, cap: int) -> tuple[dict[int, bool], int]:
    """Uniform draws in the order ``perm`` with the targeted WeightedBettingCS.

    Returns coverage at the budgets and the items to a +-PRECISION half-width (``cap`` when
    not reached).
    """
    n = y.size
    truth = float(y.mean())
    cs = WeightedBettingCS(0.05, target=PRECISION)
    total, guess = 0.0, 0.5  # revealed sum; a predictable guess of the mean (sizes bets)
    cov: dict[int, bool] = {}
    reached = None
    for t in range(1, min(cap, n) + 1):
        pool = n - t + 1
        yj = float(y[perm[t - 1]])
        z, center = (total + pool * yj) / n, (total + pool * guess) / n
        lo, hi = total / n, (total + pool) / n
        total += yj
        guess = (0.5 + total) / (t + 1)
        cs.update(z, lo, hi, (pool / n) ** 2 * 0.25, center, (total / n, (total + n - t) / n))
        if t in BUDGETS and t < n:
            cov[t] = cs.lower <= truth <= cs.upper
        if reached is None and (cs.upper - cs.lower) / 2 <= PRECISION:
            reached = t
        if reached is not None and t >= max(BUDGETS):
            break
    return cov, reached if reached is not None else min(cap, n)


def run_matrix(
    name: str,
    models: str | None,
    seeds: int,
    cap: int,
    only_uniform: bool = False,
    proxies: tuple[str, ...] = PROXIES,
) -> dict[str, dict]:
    M = ResponseMatrix.read(DATA / f"{name}.parquet")
    Y = np.asarray(M.scores, dtype=np.float64)
    ids = list(range(M.n_models))
    if models is not None:  # "K" (the first K), "A:B" (models A..B-1) or "A:B:S" (every S-th)
        parts = models.split(":")
        if len(parts) == 1:
            ids = ids[: int(parts[0])]
        else:
            step = int(parts[2]) if len(parts) > 2 else 1
            ids = ids[int(parts[0] or 0) : int(parts[1]) : step]
    rec: dict[str, dict] = {}

    def add(method: str, key: str, value: float) -> None:
        rec.setdefault(method, {}).setdefault(key, []).append(value)

    for i, cal, pop, y in held_out(M, ids):
        truth = float(y.mean())
        n = pop.size
        f0 = cal.population_prediction()[pop]
        # calibration models' answers on the population (for gp-IRT's lambda)
        Yc = np.delete(Y, i, axis=0)[:, pop]
        for b in BUDGETS if not only_uniform else ():
            if b >= n:
                continue
            # anchors and gp-IRT (deterministic given the clustering seed)
            for s in range(seeds):
                pk, w = anchors(cal, pop, b, seed=s)
                anc = float(w @ y[pk])
                p_irt = pirt(cal, pop, pk, y[pk])
                errs_a, errs_p = [], []
                for row in Yc[:: max(1, len(Yc) // 10)]:
                    ok = np.isfinite(row)
                    if not ok[pk].all():
                        continue
                    t_c = float(np.nanmean(row))
                    errs_a.append((float(w @ row[pk]) - t_c) ** 2)
                    errs_p.append((pirt(cal, pop, pk, row[pk]) - t_c) ** 2)
                ma, mp = np.mean(errs_a), np.mean(errs_p)
                lam = mp / (mp + ma) if ma + mp > 0 else 0.5
                add("anchor", f"mae{b}", abs(anc - truth))
                add("pirt", f"mae{b}", abs(p_irt - truth))
                add("gpirt", f"mae{b}", abs(lam * anc + (1 - lam) * p_irt - truth))
        for s in range(seeds):
            rng = np.random.default_rng([s, i])
            # uniform + WoR betting interval (also items to +-0.02)
            perm = rng.permutation(n)
            cs = BettingConfSeq(1, n, alpha=0.05, union=False)
            done, reached = 0, None
            marks = sorted({*[b for b in BUDGETS if b < n], *range(25, min(cap, n) + 1, 25)})
            for t in marks:
                cs.update(0, y[perm[done:t]], np.zeros(t - done), 0.0, 0.0, 0.0, 0.0)
                done = t
                lo, up = cs.interval()
                if t in BUDGETS:
                    add("uniform", f"mae{t}", abs(float(y[perm[:t]].mean()) - truth))
                    add("uniform", f"cov{t}", float(lo[0] <= truth <= up[0]))
                if reached is None and (up[0] - lo[0]) / 2 <= 0.02:
                    reached = t
            add("uniform", "items002", float(reached if reached is not None else min(cap, n)))
            if only_uniform:
                continue
            cov_t, reached_t = uniform_targeted(y, perm, cap)
            for t, ok in cov_t.items():
                add("uniform-targeted", f"cov{t}", float(ok))
            add("uniform-targeted", "items002", float(reached_t))
            # stratified: 10 strata on f0, proportional allocation
            edges = np.quantile(f0, np.linspace(0, 1, 11)[1:-1])
            strata = np.searchsorted(edges, f0)
            for b in BUDGETS:
                if b >= n:
                    continue
                est = 0.0
                for h in range(10):
                    members = np.flatnonzero(strata == h)
                    if members.size == 0:
                        continue
                    k = max(1, round(b * members.size / n))
                    pick = rng.choice(members, size=min(k, members.size), replace=False)
                    est += members.size / n * float(y[pick].mean())
                add("stratified", f"mae{b}", abs(est - truth))
            # Fluid-style CAT
            a, bb = cal.V[pop, 0] / cal.sigma, cal.b[pop] / cal.sigma
            seen: list[int] = []
            free = np.ones(n, dtype=bool)
            t_hat = 0.0
            for t in range(1, max(BUDGETS) + 1):
                if t > n:
                    break
                p = sigmoid(a * t_hat + bb)
                info = np.where(free, a * a * p * (1 - p), -np.inf)
                j = int(info.argmax())
                free[j] = False
                seen.append(j)
                t_hat = map_theta(a[seen], bb[seen], y[seen])
                if t in BUDGETS and t < n:
                    add("cat", f"mae{t}", abs(float(sigmoid(a * t_hat + bb).mean()) - truth))
            # ours: each proxy, the same random stream each
            for proxy in proxies:
                tag = f"ours-{proxy}"
                seq = make_estimate(cal, np.delete(Y, i, axis=0), pop, proxy, PRECISION)
                plain = WeightedBettingCS(0.05)  # the same rounds, no target
                srng = np.random.default_rng([s, i, 7])
                reached = reached_plain = None
                tic = time.perf_counter()
                for t in range(1, min(cap, n) + 1):
                    j, pi = seq.choose(srng)
                    seq.observe(j, float(y[j]), pi)
                    assert seq.last_round is not None
                    plain.update(*seq.last_round)
                    lo, up = seq.interval
                    lo_p, up_p = (plain.lower, plain.upper) if not seq.exhausted else (lo, up)
                    if t in BUDGETS and t < n:
                        for kind in ("dr", "composite", "model"):
                            add(f"{tag}-{kind}", f"mae{t}", abs(seq.point(kind) - truth))
                        add(f"{tag}-dr", f"cov{t}", float(lo <= truth <= up))
                        add(f"{tag}-dr-untargeted", f"cov{t}", float(lo_p <= truth <= up_p))
                    if reached is None and (up - lo) / 2 <= PRECISION:
                        reached = t
                    if reached_plain is None and (up_p - lo_p) / 2 <= PRECISION:
                        reached_plain = t
                    if reached is not None and reached_plain is not None and t >= max(BUDGETS):
                        break
                add(f"{tag}-dr", "items002", float(reached if reached is not None else min(cap, n)))
                add(
                    f"{tag}-dr-untargeted",
                    "items002",
                    float(reached_plain if reached_plain is not None else min(cap, n)),
                )
                add(f"{tag}-dr", "ms_per_step", 1000 * (time.perf_counter() - tic) / t)
    return rec


def summarise(name: str, rec: dict[str, dict], cap: int) -> list[str]:
    lines = [f"\n### {name}\n"]
    head = "| method | " + " | ".join(f"MAE@{b} (SE)" for b in BUDGETS)
    head += " | " + " | ".join(f"cov@{b}" for b in BUDGETS) + " | items to ±0.02 (median) |"
    lines.append(head)
    lines.append("|" + "---|" * (2 + 2 * len(BUDGETS)))
    for method, vals in rec.items():
        cells = []
        for b in BUDGETS:
            v = np.asarray(vals.get(f"mae{b}", []))
            cells.append(
                f"{v.mean():.4f} ({v.std(ddof=1) / np.sqrt(v.size):.4f})" if v.size > 1 else "-"
            )
        for b in BUDGETS:
            v = np.asarray(vals.get(f"cov{b}", []))
            cells.append(f"{v.mean():.3f} (n={v.size})" if v.size else "-")
        v = np.asarray(vals.get("items002", []))
        if v.size:
            med = float(np.median(v))
            mark = ">=" if med >= cap else ""
            cells.append(f"{mark}{med:.0f} (capped {int((v >= cap).sum())}/{v.size})")
        else:
            cells.append("-")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    base = rec.get("uniform", {})
    for method, vals in rec.items():
        if not method.endswith("-dr") or not base:
            continue
        cells = []
        for b in BUDGETS:
            ours, uni = vals.get(f"mae{b}", []), base.get(f"mae{b}", [])
            cells.append(f"{np.mean(ours) / np.mean(uni):.2f}" if ours and uni else "-")
        ours, uni = vals.get("items002", []), base.get("items002", [])
        items = f"{np.median(ours) / np.median(uni):.2f}" if ours and uni else "-"
        lines.append(
            f"\n{method} / uniform: MAE@{'/'.join(map(str, BUDGETS))} {' / '.join(cells)}; "
            f"items to ±0.02 (medians) {items}"
        )
    targeted = rec.get("uniform-targeted", {}).get("items002", [])
    for method, vals in rec.items():
        if not method.endswith(("-dr", "-dr-untargeted")) or "items002" not in vals:
            continue
        ours = vals["items002"]
        if targeted and method.endswith("-dr"):
            lines.append(
                f"\n{method} / uniform-targeted: items to ±0.02 (medians) "
                f"{np.median(ours) / np.median(targeted):.2f}"
            )
        plain = rec.get(f"{method}-untargeted", {}).get("items002", [])
        if plain and len(plain) == len(ours):
            d = np.asarray(ours) - np.asarray(plain)
            lines.append(
                f"\n{method} − {method}-untargeted: items to ±0.02 {d.mean():+.1f} ± "
                f"{d.std(ddof=1) / np.sqrt(d.size):.1f} (paired mean ± SE, n={d.size}); "
                f"median {np.median(ours):.0f} vs {np.median(plain):.0f}"
            )
    ref = rec.get("ours-irt-dr", {})
    for method, vals in rec.items():  # paired against the IRT proxy (same random stream)
        if not method.startswith("ours-") or method.startswith("ours-irt-") or not ref:
            continue
        if not method.endswith("-dr"):
            continue
        cells = []
        for key in (*(f"mae{b}" for b in BUDGETS), "items002"):
            a, b0 = np.asarray(vals.get(key, [])), np.asarray(ref.get(key, []))
            if a.size < 2 or a.size != b0.size:
                continue
            d = a - b0
            fmt = ".1f" if key == "items002" else ".4f"
            se = d.std(ddof=1) / np.sqrt(d.size)
            cells.append(f"{key} {d.mean():+{fmt}} ± {se:{fmt}}")
        if cells:
            lines.append(f"\n{method} − ours-irt-dr (paired, n={d.size}): " + "; ".join(cells))
    for method, vals in rec.items():
        ms = vals.get("ms_per_step")
        if ms:
            lines.append(
                f"\n{method}: {np.mean(ms):.2f} ms per step (choose + update), mean over runs"
            )
    return lines


def speed() -> None:
    """Time one step (choose + update) at 12,032 items and whole 100-item replays."""
    from latentbench.select import estimate

    M = ResponseMatrix.read(DATA / "mmlu_pro.parquet")
    keep = M.model_ids[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tic = time.perf_counter()
        cal = from_matrix(M.subset(models=keep), rank=1)
        fit = time.perf_counter() - tic
        y = np.nan_to_num(np.asarray(M.scores[0], dtype=np.float64))  # a complete vector
        print(f"calibration fit (rank 1, 28 x 12,032, once): {fit:.2f} s")
        for proxy in PROXIES:
            seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05, proxy=proxy)
            rng = np.random.default_rng(0)
            steps = []
            for _ in range(1000):
                tic = time.perf_counter()
                j, pi = seq.choose(rng)
                seq.observe(j, float(y[j]), pi)
                steps.append(time.perf_counter() - tic)
            replays, cpu = [], []
            for s in range(6):
                tic, tic_cpu = time.perf_counter(), time.process_time()
                estimate(cal, y, model="new", budget=100, seed=s, proxy=proxy)
                replays.append(time.perf_counter() - tic)
                cpu.append(time.process_time() - tic_cpu)
            ms = 1000 * np.asarray(steps)
            print(
                f"[{proxy}] one step at 12,032 items: median {np.median(ms):.2f} ms, p90 "
                f"{np.quantile(ms, 0.9):.2f} ms, max {ms.max():.2f} ms (1,000 steps); steps "
                f"901-1000: median {np.median(ms[900:]):.2f} ms"
            )
            print(
                f"[{proxy}] 100-item replay: first {replays[0]:.3f} s, then median "
                f"{np.median(replays[1:]):.3f} s wall, {np.median(cpu[1:]):.3f} s CPU (the "
                "machine is shared: wall >= CPU)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matrices", nargs="*", default=list(MATRICES))
    parser.add_argument("--models", default=None, help="K (first K models), A:B or A:B:S")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--cap", type=int, default=1000, help="most items for +-0.02")
    parser.add_argument(
        "--dump", default=None, help="also write the raw records (JSON) into this folder"
    )
    parser.add_argument("--merge", nargs="*", default=None, help="print a table from dumps")
    parser.add_argument("--speed", action="store_true", help="time steps and replays only")
    parser.add_argument(
        "--only-uniform",
        action="store_true",
        help="the uniform baseline only (e.g. a larger --cap)",
    )
    parser.add_argument(
        "--proxies", nargs="*", default=list(PROXIES), help="proxies of ours to run"
    )
    args = parser.parse_args()
    if args.speed:
        speed()
        return
    if args.merge:
        merged: dict[str, dict[str, dict]] = {}
        for path in args.merge:
            data = json.loads(Path(path).read_text())
            rec_in = data["rec"]
            # dumps written before the default became "dr" kept the interval's records
            # (coverage, items, timing: independent of the point estimate) under composite
            old = rec_in.get("ours-composite", {})
            for key in [k for k in old if not k.startswith("mae")]:
                rec_in.setdefault("ours-dr", {})[key] = old.pop(key)
            order = [
                f"ours{tag}-{kind}"
                for tag in ("", "-irt", "-ridge", "-resridge")
                for kind in ("dr", "composite", "model")
            ]
            rec_in = {
                k: rec_in[k]
                for k in [*[m for m in rec_in if m not in order], *order]
                if k in rec_in
            }
            for method, vals in rec_in.items():
                for key, v in vals.items():
                    target = merged.setdefault(data["name"], {}).setdefault(method, {})
                    target.setdefault(key, []).extend(v)
        for name, rec in merged.items():
            print("\n".join(summarise(name, rec, args.cap)))
        return
    for name in args.matrices:
        tic = time.perf_counter()
        rec = run_matrix(
            name, args.models, args.seeds, args.cap, args.only_uniform, tuple(args.proxies)
        )
        if args.dump:
            folder = Path(args.dump)
            folder.mkdir(parents=True, exist_ok=True)
            tag = (args.models or "all").replace(":", "-")
            (folder / f"{name}_{tag}.json").write_text(json.dumps({"name": name, "rec": rec}))
        print("\n".join(summarise(name, rec, args.cap)))
        print(f"({time.perf_counter() - tic:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
