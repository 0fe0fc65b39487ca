"""PULSE in its default configuration on the shared pools (issue 13); prints markdown tables.

Measurements, each with its command line printed beside the table:

* ``identify``: evaluations until the identification accuracy (over seeds) first reaches
  95 %, PULSE (default options) vs UCB-E on the same seeds and initial cells, post-init and
  total, with the saving's standard error from a paired bootstrap over seeds (200 resamples;
  the same resampled seeds for both policies).
* ``certify-floor``: :func:`certificate_floor`, the cells a per-arm certificate needs with
  oracle means and variances and a Ville-type radius plus a mixture cost (a reference).
* ``certify``: fixed-confidence runs at ``delta``: PULSE with ``bonus="ci"`` and
  ``stop="confidence"`` vs a proxy-free certified LUCB implemented here (per-cell sample
  means, the polynomial-stitched sub-Gaussian boundary of Howard, Ramdas, McAuliffe & Sekhon
  2021 with sigma = 1/2, ``delta / (2 m)`` per side and arm, finite-population factor
  ``sqrt(1 - (t - 1) / n)``; each round reveals B cells of the empirical best and B of the
  other arm with the highest upper bound; stop when the best's lower bound exceeds every
  other upper bound), started with 64 cells per model (B). Reported: cells used (initial
  batch included), the fraction of seeds that certified the true best, and the ratio
  PULSE / LUCB; PULSE starts with its default 32 cells per model, so the table also shows
  LUCB started with 32 cells and PULSE's ratio to it. A second table gives the oracle floor
  (``oracle_floor``): the cells a fixed-sample normal bound with the true means, the doubly
  robust variances of an oracle proxy and the best allocation would need, with per-model
  bounds (``oracle_floor``) and with bounds on paired differences under a shared order
  (``paired_oracle_floor``).
* ``history-free``: PULSE with the proxy learned online from the candidates' own cells
  (no history) vs UCB-E with the same start on the candidate halves of BFCL and MMLU-Pro;
  ``--paper-ucbe`` adds the paper's UCB-E (B = 64, a 64-cell start) as a reference for both,
  in total cells, with PULSE's total saving split into the start's part and the proxy's.
* ``identify-floor``: the fewest cells with which an oracle that knows every model's mean,
  uses an oracle proxy and fixes its allocation in advance identifies the best in 95 % of
  draws (``identification_floor``), next to the paper's UCB-E run on the same pool.
* ``width``: after 200 cells of one candidate model (alpha = 0.1, no union bound), the
  median width of the betting confidence sequence on plain cells and on doubly robust terms
  (the first 64 cells plain, the model's factors fit on them with the history's item
  factors, the other 136 with lambda = 1), vs the normal approximation of the plain mean,
  ``2 z_0.95 s / sqrt(200)`` times the finite-population factor, and that normal
  interval's own coverage over 2,000 simulated 200-cell draws per model.
* ``width-over-run``: the same ratio at 5-95 % of a model's items, default bets vs one
  horizon set to the effective cells at that point (oracle).
* ``paired-diagnosis``: the variances a paired and a per-arm certificate bet on (best vs
  its closest rivals, plain and doubly robust) and where each puts its cells at the stop.
* ``worst-seeds``: why the default PULSE's worst seeds (identification, 16 / 16) stay wrong:
  the shared item order's prefix, next to UCB-E with the same and with its own order.
* ``schedule``: evaluations to 95 % identification for batch sizes and initial batches
  (``--configs 8/8,16/16,...``), PULSE vs UCB-E with the same start and batch size, paired
  bootstrap SEs, the worst seed's last wrong budget, and the configuration
  ``default_schedule`` picks; ``--variants`` adds PULSE/UCB-E specs at that configuration;
  ``--save FILE.npz`` keeps the per-seed outcomes and ``--no-default`` runs only
  ``--configs``.
* ``schedule-combine FILE.npz ...``: the ``schedule`` table of configurations measured in
  separate runs on one pool (same seeds, hence the same paired bootstrap resamples).

Pools: the candidate half of a seeded random split (the other half is the history), on
BFCL v2 (exact gap 0.02, and all candidates), MMLU-Pro, AlpacaEval 1 and AlpacaEval 2 (all
candidates; items with a missing cell are dropped, never scored 0), and a leaderboard-like
simulator pool (1,000 models drawn from a rank-4 fit of MMLU-Pro, exact gap 0.02).

Usage::

    python benchmarks/bench_pulse.py identify --seeds 200
    python benchmarks/bench_pulse.py certify --seeds 50
    python benchmarks/bench_pulse.py width
    python benchmarks/bench_pulse.py width-over-run
    python benchmarks/bench_pulse.py history-free --seeds 8
    python benchmarks/bench_pulse.py identify-floor --seeds 200
    python benchmarks/bench_pulse.py schedule --seeds 40 --n-jobs 1
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import math
import time
from pathlib import Path

import numpy as np

from latentbench.io import ResponseMatrix
from latentbench.select import (
    LowRankProxy,
    MatrixOracle,
    Pulse,
    experiment_from_matrix,
    run_selection,
    split_models,
)
from latentbench.select._betting import BettingConfSeq

# the shared data beside the checkout; LATENTBENCH_DATA overrides it (e.g. from a git worktree)
_BESIDE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
DATA = Path(os.environ.get("LATENTBENCH_DATA", _BESIDE))
REAL = {
    "bfcl": "bfcl_v2.parquet",
    "mmlu_pro": "mmlu_pro.parquet",
    "alpacaeval1": "alpacaeval1_gpt4.parquet",
    "alpacaeval2": "alpacaeval2_weighted.parquet",
}


def complete(name: str) -> np.ndarray:
    """The matrix with every item that has a missing cell dropped (missing is never 0)."""
    scores = ResponseMatrix.read(DATA / REAL[name]).scores.astype(np.float32)
    return scores[:, ~np.isnan(scores).any(axis=0)]


def halves(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The history half and the candidate half of :func:`complete` (seeded random split)."""
    scores = complete(name)
    history, candidates = split_models(scores.shape[0], random_state=0)
    return scores[history], scores[candidates]


def paired_saving(ref: np.ndarray, new: np.ndarray, grid: np.ndarray, boot: int = 200) -> tuple:
    """Saving % (post-init) of ``new`` vs ``ref`` at 95 %, paired bootstrap mean and SE."""
    rng = np.random.default_rng(0)
    S = ref.shape[0]

    def first(curve: np.ndarray) -> float:
        ok = curve >= 0.95 - 1e-12
        return float(grid[int(np.argmax(ok))]) if ok.any() else float("nan")

    out = []
    for _ in range(boot):
        idx = rng.integers(0, S, S)
        a, b = first(ref[idx].mean(axis=0)), first(new[idx].mean(axis=0))
        out.append((a, b))
    arr = np.array(out)
    return arr


def identify(args: argparse.Namespace) -> None:
    pools = [
        ("bfcl", "gap:0.02"),
        ("bfcl", "full"),
        ("mmlu_pro", "full"),
        ("alpacaeval1", "full"),
        ("alpacaeval2", "full"),
    ]
    if not args.skip_sim:
        pools.append(("simulator", "gap:0.02"))
    if args.pools:
        keep = set(args.pools.split(","))
        pools = [(name, pool) for name, pool in pools if f"{name}:{pool}" in keep]
    variants = ["pulse"] + [v for v in args.variants.split("|") if v]
    print(
        "| pool | models | items | policy | UCB-E to 95 % post-init | PULSE | saved post-init "
        "| UCB-E total | PULSE total | saved total | PULSE coverage |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, pool in pools:
        start = time.perf_counter()
        kwargs: dict = {}
        seeds = args.seeds if pool == "gap:0.02" else max(2, args.seeds // args.other_divisor)
        if name == "simulator":
            source = complete("mmlu_pro")
            kwargs = {
                "simulate": 4000,
                "sim_rank": 4,
                "budget": min(args.budget, 80_000),
            }
            seeds = max(2, args.seeds // 8)
        else:
            source = complete(name)
            kwargs = {"budget": args.budget}
        res = experiment_from_matrix(
            source,
            split="random",
            pools=pool,
            policies=["ucbe", *variants],
            seeds=seeds,
            n_jobs=args.n_jobs,
            **kwargs,
        )
        (pool_name,) = res.pools
        ref = res.curves[(pool_name, "ucbe")]
        init = {r["policy"]: r["init_evaluations"] for r in res.summary}
        m, n = res.pools[pool_name]["n_models"], source.shape[1]
        for spec in variants:  # the default first
            pairs = paired_saving(ref, res.curves[(pool_name, spec)], res.grid)
            ok = np.isfinite(pairs).all(axis=1)
            a, b = pairs[ok, 0], pairs[ok, 1]
            post = 100 * (a - b) / np.maximum(a, 1)
            # a variant may use another initial batch: totals include each one's own
            total = 100 * (a + init["ucbe"] - b - init[spec]) / (a + init["ucbe"])
            cov = next(r["coverage"] for r in res.summary if r["policy"] == spec)
            cov_text = "n/a" if cov is None else f"{cov:.3f}"  # None: no intervals (UCB-E)
            print(
                f"| {name} {pool} | {m} | {n} | `{spec}` | {a.mean():,.0f} ± {a.std():,.0f} "
                f"| {b.mean():,.0f} ± {b.std():,.0f} | {post.mean():.1f} % ± {post.std():.1f} "
                f"| {a.mean() + init['ucbe']:,.0f} | {b.mean() + init[spec]:,.0f} "
                f"| {total.mean():.1f} % ± {total.std():.1f} | {cov_text} |",
                flush=True,
            )
        for spec in [v for v in variants if v.startswith("ucbe:")]:
            # the default PULSE against UCB-E in that configuration (e.g. the same start)
            pairs = paired_saving(
                res.curves[(pool_name, spec)], res.curves[(pool_name, "pulse")], res.grid
            )
            ok = np.isfinite(pairs).all(axis=1)
            a, b = pairs[ok, 0], pairs[ok, 1]
            post = 100 * (a - b) / np.maximum(a, 1)
            total = 100 * (a + init[spec] - b - init["pulse"]) / (a + init[spec])
            print(
                f"| {name} {pool} | {m} | {n} | `pulse` vs `{spec}` | {a.mean():,.0f} ± "
                f"{a.std():,.0f} | {b.mean():,.0f} ± {b.std():,.0f} | {post.mean():.1f} % ± "
                f"{post.std():.1f} | {a.mean() + init[spec]:,.0f} "
                f"| {b.mean() + init['pulse']:,.0f} | {total.mean():.1f} % ± {total.std():.1f} | |",
                flush=True,
            )
        print(
            f"<!-- {name} {pool}: {seeds} seeds, proxy rank {res.params.get('proxy_rank')}, "
            f"reached {ok.mean():.2f} of resamples, {time.perf_counter() - start:.0f} s -->",
            flush=True,
        )


# ------------------------------------------------------------------------ certified LUCB
def stitched_radius(t: np.ndarray, n: int, level: float) -> np.ndarray:
    """Polynomial-stitched sub-Gaussian boundary (Howard, Ramdas, McAuliffe & Sekhon 2021,
    Theorem 1 with eq. (6)), sigma = 1/2, eta = 2, s = 1.4, m = 1, as a radius on the mean of
    ``t`` cells, times the finite-population factor ``sqrt(1 - (t - 1) / n)``.

    ``k1 sqrt(v ell(v)) + c k2 ell(v)`` with ``v = sigma^2 t``, ``ell(v) = s log log(eta v / m)
    + log(zeta(s) / (level log(eta)^s))`` and ``c = 0`` for sub-Gaussian increments.
    Until this round the code used ``zeta = 1.1973`` (not zeta(1.4) = 3.1055) and added
    ``0.5 ell`` (``c k2 ell`` with ``c k2 = 1/2``, which a sub-Gaussian bound does not have);
    ``legacy=True`` reproduces that radius (wider below about 2,000 cells, within 1 % above).
    """
    from scipy.special import zeta as riemann_zeta

    eta, s, sigma2, m0 = 2.0, 1.4, 0.25, 1.0
    v = np.maximum(sigma2 * t, m0)
    k1 = (eta**0.25 + eta**-0.25) / math.sqrt(2)
    zeta = float(riemann_zeta(s))  # 3.1055
    ell = s * np.log(np.log(eta * v / m0)) + math.log(zeta / (level * math.log(eta) ** s))
    radius = k1 * np.sqrt(v * np.maximum(ell, 0)) / t
    fpc = np.sqrt(np.clip(1 - (t - 1) / n, 0, 1))
    return radius * fpc


def legacy_stitched_radius(t: np.ndarray, n: int, level: float) -> np.ndarray:
    """The radius used until this round (zeta = 1.1973 labelled zeta(1.4), plus 0.5 ell)."""
    eta, s, sigma2, m0 = 2.0, 1.4, 0.25, 1.0
    v = np.maximum(sigma2 * t, m0)
    k1 = (eta**0.25 + eta**-0.25) / math.sqrt(2)
    ell = s * np.log(np.log(eta * v / m0)) + math.log(1.1973 / (level * math.log(eta) ** s))
    radius = (k1 * np.sqrt(v * np.maximum(ell, 0)) + 0.5 * ell) / t
    return radius * np.sqrt(np.clip(1 - (t - 1) / n, 0, 1))


def _certified_run(Y, policy, batch, init, proxy, seed):
    """One run of ``policy`` on the pool ``Y`` until its best is certified."""
    return run_selection(
        MatrixOracle(Y),
        policy,
        budget=Y.size,
        batch_size=batch,
        init_batch=init,
        proxy=proxy,
        random_state=seed,
        stop="confidence",
    )


def certified_lucb(
    Y: np.ndarray, delta: float, batch: int, init: int, seed: int, legacy: bool = False
) -> tuple:
    """Proxy-free certified LUCB; returns (cells used, recommended arm).

    ``legacy=True`` uses :func:`legacy_stitched_radius` (the radius before this round)."""
    radius_of = legacy_stitched_radius if legacy else stitched_radius
    m, n = Y.shape
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((m, n)), axis=1)
    t = np.full(m, init)
    sums = np.array([Y[i, order[i, :init]].sum() for i in range(m)], dtype=np.float64)
    level = delta / (2 * m)
    while True:
        mean = sums / t
        rad = np.where(t >= n, 0.0, radius_of(t.astype(float), n, level))
        lo, hi = mean - rad, mean + rad
        best = int(np.argmax(mean))
        others = np.delete(np.arange(m), best)
        challenger = int(others[np.argmax(hi[others])])
        if lo[best] > hi[challenger]:
            return int(t.sum()), best
        for arm in (best, challenger):
            if t[arm] < n:
                k = min(batch, n - t[arm])
                sums[arm] += Y[arm, order[arm, t[arm] : t[arm] + k]].sum()
                t[arm] += k


def oracle_residuals(Y: np.ndarray, history: np.ndarray) -> np.ndarray:
    """Doubly robust residuals ``Y - lam f`` under an oracle proxy, shape (m, n).

    The proxy's item factors come from the history, each model's factors are fitted on its
    whole row, and ``lam`` is the model's least-squares slope clipped to [0, 1].
    """
    Y = Y.astype(np.float64)
    mu = Y.mean(axis=1)
    proxy = LowRankProxy(random_state=0).fit(history)
    f = proxy.predict(proxy.fit_models(Y), dtype=np.float64)
    fc = f - f.mean(axis=1, keepdims=True)
    lam = np.clip(((Y - mu[:, None]) * fc).sum(1) / np.maximum((fc**2).sum(1), 1e-12), 0, 1)
    resid: np.ndarray = Y - lam[:, None] * f
    return resid


def paired_oracle_floor(Y: np.ndarray, history: np.ndarray, delta: float, inflation: float) -> int:
    """:func:`oracle_floor` for a certificate on paired differences under one shared order.

    The best is certified when every difference ``mu_best - mu_k`` has a lower bound above 0,
    each at level ``delta / (m - 1)``. Under a shared order the two models' first cells are
    the same items, so the difference of their doubly robust means (oracle proxy) has the
    variance ``v_b (1/t_b - 1/n) + v_k (1/t_k - 1/n) - 2 c_bk (1/max(t_b, t_k) - 1/n)``; its
    bound is ``inflation * z * sd``. The best's cells on a grid, every other model the fewest
    cells (from 32, in steps of 8) that certify its difference. A reference point as
    :func:`oracle_floor`; what it does not model: pooling the best's own bound over the
    comparisons (the per-model certificate's ``delta / 2``).
    """
    from scipy.stats import norm

    m, n = Y.shape
    mu = Y.mean(axis=1, dtype=np.float64)
    resid = oracle_residuals(Y, history)
    cov = np.cov(resid)
    best = int(np.argmax(mu))
    rest = np.delete(np.arange(m), best)
    z = norm.isf(delta / (m - 1))
    grid = np.unique(np.r_[np.arange(32, n, 8), n]).astype(np.float64)
    floor = m * n
    for t_best in grid:
        var = (
            cov[best, best] * (1 / t_best - 1 / n)
            + cov[rest, rest][:, None] * (1 / grid[None, :] - 1 / n)
            - 2 * cov[best, rest][:, None] * (1 / np.maximum(t_best, grid[None, :]) - 1 / n)
        )
        ok = (mu[best] - mu[rest])[:, None] > inflation * z * np.sqrt(np.maximum(var, 0.0))
        if ok.any(axis=1).all():
            floor = min(floor, int(t_best + grid[np.argmax(ok, axis=1)].sum()))
    return floor


def oracle_floor(Y: np.ndarray, history: np.ndarray, delta: float, inflation: float) -> int:
    """Fewest cells that certify the best with a fixed-sample normal bound and oracle knowledge.

    Every model's mean and the variance of its doubly robust term are known (the proxy's
    item factors from the history, the model's own factors fitted on its whole row: an
    oracle proxy); a model's bound after ``t`` cells is ``inflation * z * sqrt(v / t (1 - t /
    n))`` (normal, finite-population, at the certificate's levels: lower at
    ``delta / (2 (m - 1))``, upper at ``delta / 2``). The allocation is the best one given
    the true means: the best's cells on a grid, and every other model the fewest cells (from
    32, in steps of 16) that put its upper bound below the best's lower bound. A reference
    point, not a proof: a method with per-model bounds and this proxy needs at least this
    many cells when its bounds are the normal ones (inflation 1), and anytime-valid bounds
    are wider (inflation > 1); paired comparisons of models are not modelled.
    """
    from scipy.stats import norm

    m, n = Y.shape
    mu = Y.mean(axis=1, dtype=np.float64)
    v = oracle_residuals(Y, history).var(axis=1)
    best = int(np.argmax(mu))
    z_low, z_up = norm.isf(delta / (2 * (m - 1))), norm.isf(delta / 2)
    grid = np.unique(np.r_[np.arange(32, n, 16), n])

    def half(var: float, t: np.ndarray, z: float) -> np.ndarray:
        return inflation * z * np.sqrt(var / t * np.clip(1 - t / n, 0, None))

    floor = m * n
    for t_best in grid:
        lower = mu[best] - half(v[best], np.array([t_best]), z_low)[0]
        total = int(t_best)
        for k in np.delete(np.arange(m), best):
            ok = mu[k] + half(v[k], grid, z_up) < lower
            if not ok.any():
                break
            total += int(grid[np.argmax(ok)])
        else:
            floor = min(floor, total)
    return floor


def identification_floor(
    Y: np.ndarray, resid: np.ndarray, *, shared: bool, start: int, reps: int, seed: int
) -> tuple[np.ndarray, float]:
    """Fewest cells with which a known-means oracle identifies the best in >= 95 % of draws.

    Every model ``i`` gets ``n_i >= start`` cells drawn uniformly without replacement (one
    order per model, or one order shared by all when ``shared``), fixed in advance, and is
    estimated by the doubly robust mean of :func:`oracle_residuals` (exact proxy part plus the
    sampled residuals' mean); the recommendation is the largest estimate. The probability of
    a correct recommendation is approximated by ``prod_i Phi(gap_i / sd_i)`` over the other
    models, which separates over them once the best's ``n_b`` is fixed: for every ``n_b`` on a
    grid and every multiplier ``nu``, each other model takes the ``n_i`` on a grid that
    minimises ``n_i - nu log Phi(gap_i / sd_i)`` (exact per model, however non-concave the
    gain near full evaluation). Among these allocations, the cheapest one whose accuracy over
    ``reps`` simulated draws reaches 95 % is found by bisection on the approximate
    probability. Returns the allocation, shape (m,), and its simulated accuracy.
    """
    from scipy.stats import norm

    m, n = Y.shape
    mu = Y.mean(axis=1, dtype=np.float64)
    best = int(np.argmax(mu))
    rest = np.delete(np.arange(m), best)
    gap = mu[best] - mu[rest]
    centred = resid - resid.mean(axis=1, keepdims=True)
    cov = centred @ centred.T / (n - 1)  # population covariance of the residuals
    var = np.diag(cov)
    pair_cov = cov[best, rest] if shared else np.zeros(rest.size)
    step = max(8, n // 200)
    grid = np.unique(np.r_[np.arange(min(start, n), n, step), n]).astype(np.float64)
    nus = np.geomspace(1.0, 1e7, 120)

    # candidates: (total cells, approximate log probability, allocation)
    candidates: list[tuple[float, float, np.ndarray]] = []
    for n_b in grid[::2] if grid.size > 2 else grid:
        nested = 1.0 / np.maximum(n_b, grid)[None, :] - 1.0 / n  # (1, G)
        v = (
            var[best] * (1.0 / n_b - 1.0 / n)
            + var[rest, None] * (1.0 / grid[None, :] - 1.0 / n)
            - 2 * pair_cov[:, None] * nested
        )  # (k, G)
        logp = norm.logcdf(gap[:, None] / np.sqrt(np.maximum(v, 1e-18)))  # (k, G)
        cost = grid[None, None, :] - nus[:, None, None] * logp[None]  # (nu, k, G)
        pick = np.argmin(cost, axis=2)  # (nu, k)
        totals = n_b + grid[pick].sum(axis=1)
        probs = np.take_along_axis(logp[None], pick[:, :, None], axis=2)[..., 0].sum(axis=1)
        for j in range(nus.size):
            alloc = np.empty(m)
            alloc[best] = n_b
            alloc[rest] = grid[pick[j]]
            candidates.append((float(totals[j]), float(probs[j]), alloc))
    candidates.sort(key=lambda c: c[0])

    def cheapest(target: float) -> np.ndarray:
        for _total, logp, alloc in candidates:
            if logp >= math.log(target):
                return alloc
        return np.full(m, float(n))

    rng = np.random.default_rng(seed)
    exact = (Y - resid).mean(axis=1, dtype=np.float64)  # proxy part: lam * mean of f

    def accuracy(alloc: np.ndarray) -> float:
        counts = alloc.astype(int)
        hits = 0
        for _ in range(reps):
            order = np.argsort(rng.random(n if shared else (m, n)), axis=-1)
            order = np.broadcast_to(order, (m, n))
            sums = np.cumsum(np.take_along_axis(resid, order, axis=1), axis=1)
            est = exact + sums[np.arange(m), counts - 1] / counts
            hits += int(np.argmax(est) == best)
        return hits / reps

    lo, hi = 0.5, 0.9999
    alloc = cheapest(hi)
    acc = accuracy(alloc)
    for _ in range(10):
        mid = 0.5 * (lo + hi)
        trial = cheapest(mid)
        trial_acc = accuracy(trial)
        if trial_acc >= 0.95:
            hi, alloc, acc = mid, trial, trial_acc
        else:
            lo = mid
    return alloc, acc


def identify_floor(args: argparse.Namespace) -> None:
    """A fixed-allocation reference for evaluations to 95 % identification, next to UCB-E
    run on the same pool with the same start.

    Both start with ``--floor-start`` cells per model (post-init counts are after that same
    start for both). The fixed allocation knows every mean and uses an oracle proxy, but it
    is **not a lower bound** for adaptive policies: an adaptive rule stops pulling a model
    whose estimate happens to fall low, which a fixed allocation cannot do.
    """
    from latentbench.select import run_experiment

    S = args.floor_start
    print(
        f"| pool | models x items | UCB-E from {S} cells to 95 % post-init (total) "
        "| fixed-allocation reference, order per model: total (accuracy) | reference "
        f"post-init (after {S} per model) | reference vs UCB-E post-init | reference, shared "
        "order: total (accuracy) | vs UCB-E post-init |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.pools.split(",") if args.pools else ("bfcl", "mmlu_pro"):
        start = time.perf_counter()
        history, Y = halves(name)
        Y = Y.astype(np.float64)
        m = Y.shape[0]
        res = run_experiment(
            Y,
            {"all": np.arange(m)},
            ["ucbe"],
            seeds=args.seeds,
            budget=Y.size,
            init_batch=S,
            n_jobs=args.n_jobs,
        )
        curve = res.curves[("all", "ucbe")].mean(axis=0)
        ucbe_post = float(res.grid[int(np.argmax(curve >= 0.95 - 1e-12))])
        ucbe_init = res.summary[0]["init_evaluations"]
        assert ucbe_init == S * m  # like for like: the same start for both
        resid = oracle_residuals(Y, history)
        cells = []
        for shared in (False, True):
            alloc, acc = identification_floor(Y, resid, shared=shared, start=S, reps=1000, seed=0)
            post = alloc.sum() - S * m
            cells.append((alloc.sum(), acc, post, 100 * (ucbe_post - post) / ucbe_post))
        (t0, a0, p0, s0), (t1, a1, _p1, s1) = cells
        print(
            f"| {name} | {m} x {Y.shape[1]} | {ucbe_post:,.0f} ({ucbe_post + ucbe_init:,.0f}) "
            f"| {t0:,.0f} ({a0:.3f}) | {p0:,.0f} | {s0:.1f} % | {t1:,.0f} ({a1:.3f}) "
            f"| {s1:.1f} % |",
            flush=True,
        )
        print(f"<!-- {name}: {args.seeds} seeds, {time.perf_counter() - start:.0f} s -->")


def certificate_floor(
    Y: np.ndarray, v: np.ndarray, delta: float, cost: float, share_up: float = 0.5
) -> tuple[int, np.ndarray]:
    """Cells a per-arm certificate needs with oracle knowledge and a Ville-type radius.

    Assumptions (a reference, not a lower bound for every valid method): the true means and
    the oracle proxy's doubly robust variances ``v`` (per model, the variance of
    :func:`oracle_residuals`' row) are known; the
    certificate is per arm and one-sided, the best's lower bound at ``a_low = (1 - share_up)
    delta / (m - 1)`` and every other upper bound at ``a_up = share_up delta`` (PULSE's split
    at 0.5); a bound at level ``a`` after ``t`` cells has radius
    ``sqrt(2 (log(1 / a) + cost) v (1 / t - 1 / n))``: the radius of a betting capital whose
    bet is tuned for exactly that ``t`` (``cost = 0``; Ville's inequality) plus ``cost`` nats
    for not knowing ``t`` (a mixture over ``k`` horizons with equal weights pays ``log k``); the
    estimates equal the true means when the bounds are compared (no luck); the allocation is
    the cheapest one, every model from the same 16-cell start. Returns the total cells and
    the allocation.
    """
    m, n = Y.shape
    mu = Y.mean(axis=1, dtype=np.float64)
    best = int(np.argmax(mu))
    a_up, a_low = share_up * delta, (1 - share_up) * delta / (m - 1)
    c_low = math.sqrt(2 * (math.log(1 / a_low) + cost))
    c_up = math.sqrt(2 * (math.log(1 / a_up) + cost))
    grid = np.unique(np.r_[np.arange(16, n, 8), n]).astype(np.float64)
    found = (m * n, np.full(m, float(n)))
    for t_best in grid:
        lower = mu[best] - c_low * math.sqrt(v[best] * max(1 / t_best - 1 / n, 0.0))
        alloc = np.full(m, t_best)
        for k in np.delete(np.arange(m), best):
            ok = mu[k] + c_up * np.sqrt(v[k] * np.clip(1 / grid - 1 / n, 0, None)) < lower
            if not ok.any():
                break
            alloc[k] = grid[np.argmax(ok)]
        else:
            if alloc.sum() < found[0]:
                found = (int(alloc.sum()), alloc)
    return found


def certify_floor(args: argparse.Namespace) -> None:
    """:func:`certificate_floor` for mixture costs 0, log 2, log 4 and log 20 nats, with the
    certificate's split of delta and with 0.9 of it on the upper bounds, and the largest cost
    with which the reference is at most 0.7 times ``--lucb`` cells (MMLU-Pro's LUCB)."""
    print(
        "| pool | split (a_up / delta) | cost 0 | cost log 2 | cost log 4 | cost log 20 "
        "| top three models' cells at cost log 2 |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.pools.split(",") if args.pools else REAL:
        history, Y = halves(name)
        Y = Y.astype(np.float64)
        top = np.argsort(-Y.mean(axis=1))[:3]
        v = oracle_residuals(Y, history).var(axis=1)
        for share in (0.5, 0.9):
            cells = [
                certificate_floor(Y, v, args.delta, c, share)
                for c in (0.0, math.log(2), math.log(4), math.log(20))
            ]
            print(
                f"| {name} | {share} | "
                + " | ".join(f"{c:,}" for c, _ in cells)
                + f" | {', '.join(f'{cells[1][1][i]:,.0f}' for i in top)} |",
                flush=True,
            )
            if name == "mmlu_pro" and args.lucb:
                lo, hi = 0.0, 5.0
                for _ in range(25):
                    mid = (lo + hi) / 2
                    ok = certificate_floor(Y, v, args.delta, mid, share)[0] <= 0.7 * args.lucb
                    lo, hi = (mid, hi) if ok else (lo, mid)
                print(
                    f"<!-- {name}, a_up = {share} delta: cost <= {lo:.2f} nats for 0.7 x LUCB -->"
                )


def certificate_inflation(Y: np.ndarray, delta: float, seed: int = 0) -> float:
    """Width of the betting certificate over the fixed-sample normal one, at its own levels.

    For every model with a non-constant row, its cells in a random order (plain, 64 per
    update) feed one arm of a :class:`BettingConfSeq` for ``m`` models at ``alpha = delta``;
    at a quarter, half and three quarters of the items the certificate's width (lower bound
    at ``delta / (2 (m - 1))``, upper at ``delta / 2``) is divided by the normal one at the
    same levels, ``(z_low + z_up) s sqrt(1 / t - 1 / n)``. Returns the median ratio: the
    inflation the oracle floors use (the earlier 1.3 came from widths at alpha = 0.1 with no
    union bound, where the ratio is larger).
    """
    from scipy.stats import norm

    m, n = Y.shape
    rng = np.random.default_rng(seed)
    z = norm.isf(delta / (2 * (m - 1))) + norm.isf(delta / 2)
    checks = [n // 4, n // 2, (3 * n) // 4]
    ratios = []
    for i in range(m):
        y = Y[i, rng.permutation(n)].astype(np.float64)
        if y.std() == 0:
            continue
        cs = BettingConfSeq(m, n, delta)
        done = 0
        for t in checks:
            while done < t:
                b = min(64, t - done)
                cs.update(0, y[done : done + b], np.zeros(b), 0.0, 0.0, 0.0, 0.0)
                done += b
            lo, hi = cs.certificate()
            normal = z * y[:t].std(ddof=1) * math.sqrt(1 / t - 1 / n)
            if 0 < lo[0] and hi[0] < 1 and normal > 0:  # not clipped to [0, 1]
                ratios.append((hi[0] - lo[0]) / normal)
    return float(np.median(ratios))


def certify(args: argparse.Namespace) -> None:
    """Certified stop at ``delta``: PULSE (default schedule, ``bonus="ci"``) vs LUCB."""
    from latentbench.select._schedule import default_schedule

    print(
        "| pool | models x items | PULSE schedule (B / start) | LUCB 64 / 64 cells (% of all) "
        "| LUCB, PULSE's schedule | PULSE cells (% of all) | PULSE certified true best "
        "| LUCB certified true best | **PULSE / best LUCB** | PULSE / LUCB 64 / 64 "
        "| LUCB 64 / 64, radius before this round | bias at the stop: best, runner-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    floors = []
    from latentbench.select._policies import make_policy, parse_policy

    variants = [v for v in args.variants.split("|") if v]
    variant_rows = []
    for name in args.pools.split(",") if args.pools else REAL:
        start = time.perf_counter()
        history, Y = halves(name)
        mu = Y.mean(axis=1, dtype=np.float64)
        best = int(np.argmax(mu))
        second = int(np.argsort(mu)[-2])
        proxy = LowRankProxy(random_state=0).fit(history)
        bias = []
        batch, init = default_schedule(Y.shape[0], Y.shape[1], None)
        if args.pulse_init is not None:
            init = args.pulse_init
        if args.pulse_batch is not None:
            batch = args.pulse_batch
        rows = []
        for k in range(args.seeds):
            seed = 10000 * k
            l64, arm64 = certified_lucb(Y, args.delta, 64, 64, seed)
            lsame, armsame = certified_lucb(Y, args.delta, batch, init, seed)
            legacy = certified_lucb(Y, args.delta, 64, 64, seed, legacy=True)[0]

            res = _certified_run(Y, Pulse(bonus="ci", delta=args.delta), batch, init, proxy, seed)
            ok = res.best == best and res.stopped == "confidence"
            for spec in variants:  # PULSE variants on the same seed, e.g. 'pulse:pair=both'
                # 'batch=N' (bench-only) and 'init_batch=N' set the variant's own schedule
                vspec, vbatch = _spec_batch(spec, batch)
                vinit = parse_policy(vspec)[3].get("init_batch", init)
                policy = make_policy(vspec, {"bonus": "ci", "delta": args.delta})
                other = _certified_run(Y, policy, vbatch, vinit, proxy, seed)
                vok = other.best == best and other.stopped == "confidence"
                variant_rows.append((name, spec, k, other.evaluations_total, vok))
            bias.append(res.estimates[[best, second]] - mu[[best, second]])
            rows.append(
                (l64, lsame, res.evaluations_total, ok, arm64 == best and armsame == best, legacy)
            )
        R = np.array(rows, dtype=float)
        bias_ = np.array(bias)
        size = Y.size
        # the better LUCB on average (not per seed: a per-seed minimum would favour LUCB)
        ref = 0 if R[:, 0].mean() <= R[:, 1].mean() else 1
        ratio = R[:, 2] / R[:, ref]
        ratio64 = R[:, 2] / R[:, 0]

        def se(x: np.ndarray) -> float:
            return float(x.std(ddof=1) / math.sqrt(len(x)))

        print(
            f"| {name} | {Y.shape[0]} x {Y.shape[1]} | {batch} / {init} "
            f"| {R[:, 0].mean():,.0f} ± {se(R[:, 0]):,.0f} ({100 * R[:, 0].mean() / size:.0f} %) "
            f"| {R[:, 1].mean():,.0f} ± {se(R[:, 1]):,.0f} ({100 * R[:, 1].mean() / size:.0f} %) "
            f"| {R[:, 2].mean():,.0f} ± {se(R[:, 2]):,.0f} ({100 * R[:, 2].mean() / size:.0f} %) "
            f"| {R[:, 3].mean():.2f} | {R[:, 4].mean():.2f} "
            f"| **{ratio.mean():.2f} ± {se(ratio):.2f}** "
            f"| {ratio64.mean():.2f} ± {se(ratio64):.2f} | {R[:, 5].mean():,.0f} "
            f"| {bias_[:, 0].mean():+.4f} ± {se(bias_[:, 0]):.4f}, "
            f"{bias_[:, 1].mean():+.4f} ± {se(bias_[:, 1]):.4f} |",
            flush=True,
        )
        print(
            f"<!-- {name}: {args.seeds} seeds, {time.perf_counter() - start:.0f} s; PULSE / better "
            f"LUCB {ratio.mean():.3f} ± {se(ratio):.3f} -->"
        )
        floors.append((name, R[:, ref].mean(), R[:, 2].mean(), history, Y))
        for spec in variants:
            V = np.array([(c, o) for p, v, _, c, o in variant_rows if p == name and v == spec])
            vr = V[:, 0] / R[:, ref]
            paired = (R[:, 2] - V[:, 0]) / R[:, ref]
            print(
                f"<!-- variant {name} {spec}: {V[:, 0].mean():,.0f} ± {se(V[:, 0]):,.0f} cells, "
                f"/ better LUCB {vr.mean():.3f} ± {se(vr):.3f}, default minus variant "
                f"{paired.mean():+.3f} ± {se(paired):.3f} of LUCB (paired), certified true "
                f"best {V[:, 1].mean():.2f} -->",
                flush=True,
            )
    if args.no_floors:
        return
    print()
    print(
        "Oracle reference (`oracle_floor`: true means and doubly robust variances known, "
        "oracle proxy, best fixed allocation, fixed-sample normal bounds times an inflation; "
        "cells and ratio to the better LUCB). Inflation 1.0 is the normal width; the measured "
        "one is the betting certificate's width over the normal one at the certificate's own "
        "levels (`certificate_inflation`). Not a lower bound: a sequential stop can cross a "
        "boundary before the fixed-sample count."
    )
    print()
    print(
        "| pool | measured inflation | reference, 1.0 | / LUCB | reference, measured | / LUCB "
        "| PULSE / reference 1.0 | paired reference, 1.0 | / LUCB | paired, measured | / LUCB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, lucb_cells, pulse_cells, history, Y in floors:
        infl = certificate_inflation(Y, args.delta)
        f1 = oracle_floor(Y, history, args.delta, 1.0)
        fi = oracle_floor(Y, history, args.delta, infl)
        p1 = paired_oracle_floor(Y, history, args.delta, 1.0)
        pi_ = paired_oracle_floor(Y, history, args.delta, infl)
        print(
            f"| {name} | {infl:.2f} | {f1:,} | {f1 / lucb_cells:.2f} | {fi:,} "
            f"| {fi / lucb_cells:.2f} | {pulse_cells / f1:.2f} | {p1:,} | {p1 / lucb_cells:.2f} "
            f"| {pi_:,} | {pi_ / lucb_cells:.2f} |",
            flush=True,
        )


def paired_diagnosis(args: argparse.Namespace) -> None:
    """Why the paired certificate does (not) pay: per-item variances and where the cells go.

    For each pool, the true best against its three closest rivals: the top-two gap, the
    variance of each row's scores, of their per-item differences (what the paired
    certificate bets on), the rows' correlation, and the variances of the doubly robust
    residuals under an oracle proxy (``oracle_residuals``: what the per-arm certificate bets
    on) for each row and for their difference. Then, for ``--seeds`` seeds (``10000 k``), the
    certified stop of the default PULSE (per-arm certificate) and of ``--variants`` (first
    spec; default ``pulse:certificate=paired;certificate_weights=uniform``): cells of the
    best, the runner-up, the third and all others at the stop.
    """
    from latentbench.select._policies import make_policy
    from latentbench.select._schedule import default_schedule

    spec = (args.variants.split("|")[0] if args.variants else "") or (
        "pulse:certificate=paired;certificate_weights=uniform"
    )
    print(
        "| pool | rival | gap | var best | var rival | var difference | correlation "
        "| DR var best | DR var rival | DR var difference |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    pools = args.pools.split(",") if args.pools else list(REAL)
    for name in pools:
        history, Y = halves(name)
        Y64 = Y.astype(np.float64)
        mu = Y64.mean(axis=1)
        rank = np.argsort(-mu)
        b = int(rank[0])
        resid = oracle_residuals(Y, history)
        for k, j in enumerate(rank[1:4], start=2):
            d = Y64[b] - Y64[j]
            sd = Y64[b].std() * Y64[j].std()
            corr = float(np.mean((Y64[b] - mu[b]) * (Y64[j] - mu[j])) / sd) if sd > 0 else 0.0
            print(
                f"| {name} | {k} | {mu[b] - mu[j]:.4f} | {Y64[b].var():.3f} | {Y64[j].var():.3f} "
                f"| {d.var():.3f} | {corr:.2f} | {resid[b].var():.3f} | {resid[j].var():.3f} "
                f"| {(resid[b] - resid[j]).var():.3f} |",
                flush=True,
            )
    if args.seeds <= 0:
        return
    print()
    print(f"Cells at the certified stop: default PULSE / `{spec}`")
    print()
    print("| pool | seed | best | runner-up | third | others | total |")
    print("|---|---|---|---|---|---|---|")
    for name in pools:
        history, Y = halves(name)
        mu = Y.mean(axis=1, dtype=np.float64)
        top = np.argsort(-mu)[:3]
        proxy = LowRankProxy(random_state=0).fit(history)
        batch, init = default_schedule(Y.shape[0], Y.shape[1], None)
        for k in range(args.seeds):
            policies = [
                Pulse(bonus="ci", delta=args.delta),
                make_policy(spec, {"bonus": "ci", "delta": args.delta}),
            ]
            runs = [_certified_run(Y, p, batch, init, proxy, 10000 * k) for p in policies]
            cells = [
                (*r.n_observed[top].tolist(), int(r.evaluations_total - r.n_observed[top].sum()))
                for r in runs
            ]
            row = " | ".join(f"{a:,} / {c:,}" for a, c in zip(*cells, strict=True))
            total = " / ".join(f"{r.evaluations_total:,}" for r in runs)
            print(f"| {name} | {10000 * k} | {row} | {total} |", flush=True)


def width(args: argparse.Namespace) -> None:
    print(
        "| matrix | models | normal approx. (plain mean) | betting, plain | ratio "
        "| betting, DR with the history proxy | ratio | betting, plain, one horizon 200 "
        "| ratio | normal approx. coverage (upper bound below the mean) "
        "| calibrated fixed-sample interval | **betting, DR / calibrated** |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    rng_coverage = np.random.default_rng(1)
    for name in REAL:
        scores = complete(name).astype(np.float64)
        hist, test = split_models(scores.shape[0], random_state=0)
        proxy = LowRankProxy(random_state=0).fit(scores[hist])
        n = scores.shape[1]
        normal, plain, dr, single, coverage, short = [], [], [], [], [], []
        calibrated: list[float] = []
        for i in test:
            # the normal interval's own coverage after 200 cells: 2,000 simulated draws
            draws = scores[i, np.argsort(rng_coverage.random((2000, n)), axis=1)[:, :200]]
            centre = draws.mean(axis=1)
            half = 1.6449 * draws.std(axis=1, ddof=1) / math.sqrt(200) * math.sqrt(1 - 199 / n)
            mean_i = scores[i].mean()
            scale = None
            if np.median(half) > 0:
                coverage.append(np.mean(np.abs(centre - mean_i) <= half))
                short.append(np.mean(centre + half < mean_i))
                # the fixed-sample interval with exactly nominal coverage for this model:
                # mean +- c s / sqrt(200) (finite-population factor), c the 90 % quantile of
                # the studentised error over the 2,000 draws (an oracle calibration)
                with np.errstate(divide="ignore", invalid="ignore"):
                    t_err = np.abs(centre - mean_i) / (half / 1.6449)
                t_err = np.where(np.isnan(t_err), 0.0, t_err)
                scale = float(np.quantile(t_err, 0.9))
            order = rng.permutation(n)
            y = scores[i, order[:200]]
            sd = y.std(ddof=1)
            if sd == 0:
                continue
            normal.append(2 * 1.6449 * sd / math.sqrt(200) * math.sqrt(1 - 199 / n))
            calibrated.append(math.nan if scale is None else normal[-1] * scale / 1.6449)
            zero = np.zeros(8)
            cs = BettingConfSeq(1, n, 0.1, union=False)
            for k in range(0, 200, 8):
                cs.update(0, y[k : k + 8], zero, 0.0, 0.0, 0.0, 0.0)
            lo, hi = cs.interval()
            plain.append(hi[0] - lo[0])
            cs = BettingConfSeq(1, n, 0.1, union=False, horizons=(200,))
            for k in range(0, 200, 8):
                cs.update(0, y[k : k + 8], zero, 0.0, 0.0, 0.0, 0.0)
            lo, hi = cs.interval()
            single.append(hi[0] - lo[0])
            # DR: the first 64 cells as plain means; the model's factors fit on them; the
            # other 136 cells with lambda = 1 and the predictions fixed before they are drawn
            cs = BettingConfSeq(1, n, 0.1, union=False)
            for k in range(0, 64, 8):
                cs.update(0, y[k : k + 8], zero, 0.0, 0.0, 0.0, 0.0)
            seen = np.full((1, n), np.nan)
            seen[0, order[:64]] = y[:64]
            f = proxy.predict(proxy.fit_models(seen), dtype=np.float64)[0]
            for k in range(64, 200, 8):
                pool = f[order[k:]]
                batch = order[k : k + 8]
                cs.update(
                    0,
                    scores[i, batch],
                    f[batch],
                    1.0,
                    pool.sum(),
                    pool.min(),
                    pool.max(),
                )
            lo, hi = cs.interval()
            dr.append(hi[0] - lo[0])
        a, b, c = np.median(normal), np.median(plain), np.median(dr)
        ratio_b = np.median(np.array(plain) / np.array(normal))
        ratio_c = np.median(np.array(dr) / np.array(normal))
        ratio_d = np.median(np.array(single) / np.array(normal))
        ratio_e = np.nanmedian(np.array(dr) / np.array(calibrated))
        print(
            f"| {name} | {len(normal)} | {a:.3f} | {b:.3f} | {ratio_b:.2f} | {c:.3f} "
            f"| {ratio_c:.2f} | {np.median(single):.3f} | {ratio_d:.2f} "
            f"| {np.median(coverage):.3f} ({np.median(short):.3f}) "
            f"| {np.nanmedian(calibrated):.3f} | **{ratio_e:.2f}** |",
            flush=True,
        )


def width_over_run(args: argparse.Namespace) -> None:
    """The interval's width relative to the normal approximation as a model's run goes on.

    Plain cells of every candidate model revealed in a random order, 64 per update (alpha =
    0.1, no union bound); the median over models of betting width / (2 z_0.95 s sqrt(1 / t -
    1 / n)) at a few fractions of the items, for the default mixture of horizons and for one
    horizon set to the effective cells at that point (an oracle choice, not a method).
    """
    fractions = (0.05, 0.2, 0.5, 0.8, 0.95)
    head = " | ".join(f"{round(100 * q)} %" for q in fractions)
    print(f"| matrix | models | bets | {head} |")
    print("|---|---|---|" + "---|" * len(fractions))
    rng = np.random.default_rng(0)
    for name in REAL:
        scores = complete(name).astype(np.float64)
        _, test = split_models(scores.shape[0], random_state=0)
        n = scores.shape[1]
        stops = [max(int(q * n), 64) for q in fractions]
        effective = np.cumsum((n / (n - np.arange(n, dtype=np.float64))) ** 2)
        rows: dict[str, list[list[float]]] = {"default": [], "oracle": []}
        for i in test:
            y = scores[i, rng.permutation(n)]
            if y.std() == 0:
                continue
            for label in rows:
                ratios = []
                for t in stops:
                    kw = {} if label == "default" else {"horizons": (int(effective[t - 1]),)}
                    cs = BettingConfSeq(1, n, 0.1, union=False, **kw)
                    for k in range(0, t, 64):
                        b = min(64, t - k)
                        cs.update(0, y[k : k + b], np.zeros(b), 0.0, 0.0, 0.0, 0.0)
                    lo, hi = cs.interval()
                    normal = 2 * 1.6449 * y[:t].std(ddof=1) * math.sqrt(1 / t - 1 / n)
                    ratios.append((hi[0] - lo[0]) / normal if normal > 0 else math.nan)
                rows[label].append(ratios)
        for label, values in rows.items():
            med = np.nanmedian(np.array(values), axis=0)
            cells = " | ".join(f"{v:.2f}" for v in med)
            what = "default mixture" if label == "default" else "one horizon at A_t (oracle)"
            print(f"| {name} | {len(values)} | {what} | {cells} |", flush=True)


def history_free(args: argparse.Namespace) -> None:
    """History-free PULSE (``OnlineProxy``) vs UCB-E, both with ``default_schedule``'s batch
    size and start (the same for both), on the candidate halves."""
    from latentbench.select import run_experiment
    from latentbench.select._online import OnlineProxy
    from latentbench.select._policies import parse_policy
    from latentbench.select._schedule import default_schedule

    print(
        "| pool | models | reference | reference to 95 % post-init | policy | policy to 95 % "
        "post-init | saved post-init | reference total | policy total | saved total |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.pools.split(",") if args.pools else ("bfcl", "mmlu_pro"):
        start = time.perf_counter()
        _, Y = halves(name)
        specs = ["ucbe", "pulse"] + [v for v in args.variants.split("|") if v]
        if args.paper_ucbe:
            specs.append(PAPER_UCBE)
        batch, init_cells = default_schedule(Y.shape[0], Y.shape[1], None)
        print(f"<!-- {name}: batch {batch}, start {init_cells} unless a spec says otherwise -->")
        proxy = OnlineProxy(rank=args.online_rank, random_state=0)
        if args.cap is None:
            if any(_spec_batch(spec, batch)[1] != batch for spec in specs):
                raise SystemExit("history-free: a policy's own batch= needs --cap")
            res = run_experiment(
                Y,
                {"all": np.arange(Y.shape[0])},
                specs,
                seeds=args.seeds,
                budget=Y.size,
                batch_size=batch,
                init_batch=init_cells,
                proxy=proxy,
                n_jobs=args.n_jobs,
            )
            init = {r["policy"]: r["init_evaluations"] for r in res.summary}
            curves = {spec: res.curves[("all", spec)] for spec in specs}
            grid = res.grid
        else:  # runs stop at the cap, with a full-budget run's refit schedule (as `schedule`)
            curves, grid, last = _capped_curves(
                Y, specs, args.seeds, batch, init_cells, proxy, int(args.cap * Y.size)
            )
            m = Y.shape[0]
            init = {s: m * parse_policy(s)[3].get("init_batch", init_cells) for s in specs}
            worst = ", ".join(f"`{spec}` {last[spec]}" for spec in specs)
            print(f"<!-- {name}: worst last-wrong post-init budget: {worst} -->")
        # every policy against UCB-E; a UCB-E variant (e.g. in PULSE's design, or the paper's
        # B = 64 and 64-cell start) is the reference of UCB-E and of the default PULSE instead;
        # paired bootstrap over seeds as in `identify` (the same resamples in every row)
        others = [spec for spec in specs[2:] if spec.startswith("ucbe:")]
        pairs = [("ucbe", spec) for spec in specs[1:] if spec not in others]
        pairs += [(spec, pol) for spec in others for pol in ("ucbe", "pulse")]
        for ref_spec, spec in pairs:
            boot = paired_saving(curves[ref_spec], curves[spec], grid)
            ok = np.isfinite(boot).all(axis=1)
            a, b = boot[ok, 0], boot[ok, 1]
            post = 100 * (a - b) / np.maximum(a, 1)
            total = 100 * (a + init[ref_spec] - b - init[spec]) / (a + init[ref_spec])
            post_text = (  # post-init counts after different starts do not compare
                f"{post.mean():.1f} % ± {post.std():.1f}"
                if init[ref_spec] == init[spec]
                else "n/a (other start)"
            )
            print(
                f"| {name} | {Y.shape[0]} | `{ref_spec}` | {a.mean():,.0f} ± {a.std():,.0f} "
                f"| `{spec}` | {b.mean():,.0f} ± {b.std():,.0f} | {post_text} "
                f"| {a.mean() + init[ref_spec]:,.0f} "
                f"| {b.mean() + init[spec]:,.0f} | {total.mean():.1f} % ± {total.std():.1f} |",
                flush=True,
            )
        for ref_spec in others:  # PULSE's total saving against it, split in two parts
            start_part, proxy_part = _start_and_proxy(curves, init, grid, ref_spec)
            print(
                f"<!-- {name}: `pulse` vs `{ref_spec}`, total: from the start (`ucbe` vs it) "
                f"{start_part.mean():.1f} % ± {start_part.std():.1f}, from the proxy (`pulse` "
                f"vs `ucbe`) {proxy_part.mean():.1f} % ± "
                f"{proxy_part.std():.1f} of its total -->",
                flush=True,
            )
        print(
            f"<!-- {name}: {args.seeds} seeds, reached {ok.mean():.2f} of resamples, "
            f"{time.perf_counter() - start:.0f} s -->",
            flush=True,
        )


PAPER_UCBE = "ucbe:init_batch=64;batch=64"
"""The paper's UCB-E (``docs``: B = 64, a 64-cell start, a = 1), whatever the schedule."""


def _start_and_proxy(curves: dict, init: dict, grid: np.ndarray, ref_spec: str) -> tuple:
    """The default PULSE's total saving against ``ref_spec`` as the sum of two parts, each in
    % of ``ref_spec``'s total on the same bootstrap resamples (:func:`paired_saving`): UCB-E's
    (its own start) saving against it, and PULSE's against UCB-E."""
    via_ucbe = paired_saving(curves[ref_spec], curves["ucbe"], grid)
    via_pulse = paired_saving(curves[ref_spec], curves["pulse"], grid)  # same resamples
    ok = np.isfinite(via_ucbe).all(axis=1) & np.isfinite(via_pulse).all(axis=1)
    ref = via_ucbe[ok, 0] + init[ref_spec]
    ucbe, pulse = via_ucbe[ok, 1] + init["ucbe"], via_pulse[ok, 1] + init["pulse"]
    return 100 * (ref - ucbe) / ref, 100 * (ucbe - pulse) / ref


def _capped_curves(
    Y: np.ndarray,
    specs: list[str],
    seeds: int,
    batch: int,
    init: int,
    proxy: object,
    cap: int,
) -> tuple[dict, np.ndarray, dict]:
    """Identification curves of ``specs`` on seeds ``10000 k`` (as ``run_experiment``), each
    run stopped at ``cap`` post-init cells with a full-budget run's refit schedule
    (:class:`_Capped`); one process. Returns the curves ``spec -> (seeds, G)`` on the grid
    (step ``batch``), the grid, and per spec the worst last-wrong post-init budget (``> cap``
    where a run was still wrong at the cap)."""
    from latentbench.select._policies import make_policy, parse_policy

    best = int(np.argmax(Y.mean(axis=1, dtype=np.float64)))
    grid = np.arange(0, cap + 1, batch)
    curves: dict = {}
    last: dict = {}
    for spec in specs:
        rows, lasts = [], []
        policy_spec, spec_batch = _spec_batch(spec, batch)
        for k in range(seeds):
            inner = make_policy(policy_spec)
            res = run_selection(
                MatrixOracle(Y),
                _Capped(inner, cap),  # type: ignore[arg-type]
                budget=Y.size,
                batch_size=spec_batch,
                init_batch=parse_policy(spec)[3].get("init_batch", init),
                item_order=parse_policy(spec)[3].get("item_order"),
                proxy=proxy if inner.needs_proxy else None,  # type: ignore[arg-type]
                random_state=10000 * k,
            )
            rows.append(res.best_at(grid) == best)
            lasts.append(last_wrong(res, best))
        curves[spec] = np.array(rows)
        arr = np.array(lasts)
        last[spec] = f"> {cap:,} ({(arr < 0).sum()})" if (arr < 0).any() else f"{arr.max():,}"
    return curves, grid, last


def _spec_batch(spec: str, batch: int) -> tuple[str, int]:
    """Split the bench-only option ``batch=N`` (this policy's own batch size, e.g. the paper's
    UCB-E at 64 next to a 16-cell default) off a policy spec: (spec without it, batch size)."""
    name, _, rest = spec.partition(":")
    parts = [p.strip() for p in rest.replace(";", ",").split(",") if p.strip()]
    own = [p for p in parts if p.partition("=")[0].strip() == "batch"]
    keep = [p for p in parts if p not in own]
    size = int(own[-1].partition("=")[2]) if own else batch
    return (f"{name}:{';'.join(keep)}" if keep else name), size


# ------------------------------------------------------------------------ batch schedule
SCHEDULE_POOLS = {
    "bfcl:gap:0.02": ("bfcl", 0.02),
    "mmlu_pro:full": ("mmlu_pro", None),
    "alpacaeval1:full": ("alpacaeval1", None),
    "alpacaeval2:full": ("alpacaeval2", None),
}


class _Capped:
    """A policy that stops choosing once ``cap`` post-init cells are spent.

    Everything else is the wrapped policy's, and the run's budget (hence its refit schedule)
    is the full one, so the trajectory up to ``cap`` is the one a full-budget run takes.
    """

    def __init__(self, policy: object, cap: int) -> None:
        self._policy, self._cap = policy, cap

    def __getattr__(self, name: str) -> object:
        return getattr(self._policy, name)

    def choose(self, state: object) -> int | None:
        if state.spent >= self._cap:  # type: ignore[attr-defined]
            return None
        return self._policy.choose(state)  # type: ignore[attr-defined, no-any-return]


def schedule_pool(name: str, gap: float | None) -> tuple[np.ndarray, LowRankProxy]:
    """The candidate pool of ``identify`` (random half as history, exact-gap or full) and the
    proxy fitted on the history, as :func:`experiment_from_matrix` builds them."""
    from latentbench.select._experiment import exact_gap_pool

    history, candidates = halves(name)
    means = candidates.mean(axis=1, dtype=np.float64)
    rows = exact_gap_pool(means, gap, 1000)
    proxy = LowRankProxy(random_state=0).fit(history)
    return candidates[rows].astype(np.float32), proxy


_SCHED: dict = {}


def _schedule_task(task: tuple) -> tuple:
    """One run: (pool, policy, batch, init, seed) -> correctness on the grid, last wrong."""
    from latentbench.select._policies import UCBE, make_policy, parse_policy

    pool, policy, batch, init, seed = task
    Y, proxy, cap, grid = _SCHED[pool]
    best = int(np.argmax(Y.mean(axis=1, dtype=np.float64)))
    run_kw = parse_policy(policy)[3]
    if policy == "ucbe":
        inner = UCBE(doubling=True)
    else:
        inner = make_policy(policy)
    res = run_selection(
        MatrixOracle(Y),
        _Capped(inner, cap),  # type: ignore[arg-type]
        budget=Y.size,
        batch_size=batch,
        init_batch=init,
        item_order=run_kw.get("item_order"),
        proxy=proxy if inner.needs_proxy else None,
        random_state=seed,
    )
    return pool, policy, batch, init, seed, res.best_at(grid) == best, last_wrong(res, best)


def last_wrong(res: object, best: int) -> int:
    """The post-init budget after which the run's recommendation is ``best`` for good: 0 if
    it always was, -1 if it is still wrong at the run's end (e.g. the cap)."""
    wrong = np.flatnonzero(res.trace_best != best)  # type: ignore[attr-defined]
    if wrong.size == 0:
        return 0
    if wrong[-1] + 1 < res.trace_best.size:  # type: ignore[attr-defined]
        return int(res.trace_evaluations[wrong[-1] + 1])  # type: ignore[attr-defined]
    return -1


class _Trace(_Capped):
    """:class:`_Capped` around a proxy policy that records, before each choice, the spent
    cells, every arm's cells, the policy's estimates, the plain means and the proxy's mean
    prediction over all items, and keeps the state (its reveal order)."""

    def __init__(self, policy: object, cap: int) -> None:
        super().__init__(policy, cap)
        self.log: list = []
        self.state: object = None

    def choose(self, state: object) -> int | None:
        self.state = state
        plain = state.y_sum / np.maximum(state.n_obs, 1)  # type: ignore[attr-defined]
        est = self._policy.est.copy()  # type: ignore[attr-defined]
        f_mean = self._policy.px.f.mean(axis=1, dtype=np.float64)  # type: ignore[attr-defined]
        n_obs = state.n_obs.copy()  # type: ignore[attr-defined]
        self.log.append((state.spent, n_obs, est, plain, f_mean))  # type: ignore[attr-defined]
        return super().choose(state)


def worst_seeds(args: argparse.Namespace) -> None:
    """Why the default PULSE's worst seeds stay wrong (identification, with a history):
    per seed, the last prefix length of PULSE's shared item order on which the true runner-up
    scores at least the best (the paired difference of the two on the first T items is <= 0),
    next to the last-wrong budgets of PULSE and of UCB-E with the shared and with its own
    (independent) order (cap + 1: still wrong at the cap); then a trace of PULSE's worst
    seed."""
    from latentbench.select._policies import UCBE, make_policy
    from latentbench.select._schedule import default_schedule

    for key in args.pools.split(",") if args.pools else ("bfcl:gap:0.02", "alpacaeval1:full"):
        start = time.perf_counter()
        Y, proxy = schedule_pool(*SCHEDULE_POOLS[key])
        mu = Y.mean(axis=1, dtype=np.float64)
        top = np.argsort(-mu)[:2]
        batch, init = default_schedule(*Y.shape, None)
        cap = int((0.25 if args.cap is None else args.cap) * Y.size)
        run_kw = {"budget": Y.size, "batch_size": batch, "init_batch": init}
        rows, traces = [], {}
        for k in range(args.seeds):
            trace = _Trace(make_policy("pulse"), cap)
            res = run_selection(
                MatrixOracle(Y), trace, proxy=proxy, random_state=10000 * k, **run_kw
            )
            last = {"pulse": last_wrong(res, int(top[0]))}
            for order in ("shared", "independent"):
                ucbe = _Capped(UCBE(doubling=True), cap)
                res = run_selection(
                    MatrixOracle(Y), ucbe, item_order=order, random_state=10000 * k, **run_kw
                )
                last[order] = last_wrong(res, int(top[0]))
            shared = trace.state.order[top[0]]  # type: ignore[attr-defined]
            T = np.arange(1, Y.shape[1] + 1)
            diff = np.cumsum(Y[top[0], shared] - Y[top[1], shared]) / T
            behind = np.flatnonzero(diff[init - 1 :] <= 0)
            rows.append((k, int(T[init - 1 + behind[-1]]) if behind.size else 0, last))
            traces[k] = trace
        for row in rows:  # still wrong at the cap (-1): after it
            row[2].update({p: cap + 1 for p, v in row[2].items() if v < 0})
        rows.sort(key=lambda r: -r[2]["pulse"])
        a, b = top
        print(
            f"\n**{key}**: {Y.shape[0]} x {Y.shape[1]}, best {mu[a]:.4f}, runner-up {mu[b]:.4f}\n"
        )
        print(
            "| seed | shared prefix favours the runner-up up to T = | PULSE last wrong "
            "| UCB-E, shared order | UCB-E, its own order |"
        )
        print("|---|---|---|---|---|")
        for k, behind_t, last in rows[:6]:
            cells = " | ".join(f"{last[p]:,}" for p in ("pulse", "shared", "independent"))
            print(f"| {10000 * k} | {behind_t:,} | {cells} |")

        def rank(x: np.ndarray) -> np.ndarray:
            return np.argsort(np.argsort(x))

        arr = np.array([(t, r["pulse"], r["shared"], r["independent"]) for _, t, r in rows])
        corr = [np.corrcoef(rank(arr[:, 1]), rank(arr[:, j]))[0, 1] for j in (0, 2, 3)]
        print(
            f"<!-- {key}: rank correlation of PULSE's last wrong with that T {corr[0]:.2f}, "
            f"with UCB-E's, shared order {corr[1]:.2f}, its own order {corr[2]:.2f}; "
            f"{args.seeds} seeds, {time.perf_counter() - start:.0f} s -->"
        )
        k, _, last = rows[0]
        log = [row for row in traces[k].log if row[0] <= last["pulse"] + batch * Y.shape[0]]
        print(f"\nPULSE's worst seed, {10000 * k} (best / runner-up):\n")
        print(
            "| spent | cells | PULSE's estimates | plain means | proxy's predicted means "
            "| recommended |"
        )
        print("|---|---|---|---|---|---|")
        for spent, n_obs, est, plain, f_mean in log[:: max(1, len(log) // 12)] + log[-1:]:
            print(
                f"| {spent:,} | {n_obs[a]} / {n_obs[b]} | {est[a]:.4f} / {est[b]:.4f} "
                f"| {plain[a]:.4f} / {plain[b]:.4f} | {f_mean[a]:.4f} / {f_mean[b]:.4f} "
                f"| {int(np.argmax(est))} |",
                flush=True,
            )
        print(f"(true means {mu[a]:.4f} / {mu[b]:.4f})")


def first_crossing(curve: np.ndarray, grid: np.ndarray, target: float = 0.95) -> float:
    ok = curve >= target - 1e-12
    return float(grid[int(np.argmax(ok))]) if ok.any() else float("nan")


def _schedule_table(
    todo: list,
    correct: dict,
    last: dict,
    grid: np.ndarray,
    n_seeds: int,
    m: int,
    cap: int,
    auto: tuple,
) -> tuple[list, tuple | None]:
    """Print the ``schedule`` table for the configurations ``todo`` (paired bootstrap over
    the seeds, 200 resamples from ``default_rng(0)``: the same resamples in every run with
    the same seed count). Returns the resamples and the configuration with the largest
    mean saving."""
    rng = np.random.default_rng(0)
    boots = [rng.integers(0, n_seeds, n_seeds) for _ in range(200)]
    saving: dict = {}
    totals: dict = {}
    rows = []
    for b, i in todo:
        U = np.array(correct[("ucbe", b, i)], dtype=float)
        P = np.array(correct[("pulse", b, i)], dtype=float)
        pairs = np.array(
            [
                (first_crossing(U[idx].mean(0), grid), first_crossing(P[idx].mean(0), grid))
                for idx in boots
            ]
        )
        a, c = pairs[:, 0], pairs[:, 1]
        sv = 100 * (a - c) / np.maximum(a, 1)  # NaN where a resample never crossed
        saving[(b, i)] = sv
        totals[(b, i)] = c + m * i
        rows.append((b, i, a, c, sv))
    finite = {k: v for k, v in saving.items() if np.isfinite(v).all()}
    best_cfg = max(finite, key=lambda k: np.mean(finite[k])) if finite else None
    low = {k: v for k, v in totals.items() if np.isfinite(v).all()}
    low_cfg = min(low, key=lambda k: np.mean(low[k])) if low else None
    print(
        "| batch B | initial batch | UCB-E to 95 % post-init | PULSE to 95 % post-init "
        "| saved post-init | UCB-E total | PULSE total | worst last-wrong UCB-E / PULSE "
        "| saving - best saving (paired SE) | PULSE total - lowest (paired SE) "
        "| saving, total - the default's (paired SE) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for b, i, a, c, sv in rows:
        tag = " **(default)**" if (b, i) == auto else ""
        diff = tdiff = ""
        if best_cfg is not None and np.isfinite(sv).all():
            d = sv - saving[best_cfg]
            diff = "best" if (b, i) == best_cfg else f"{d.mean():+.1f} ± {d.std():.1f}"
        if low_cfg is not None and np.isfinite(totals[(b, i)]).all():
            d = totals[(b, i)] - low[low_cfg]
            tdiff = "lowest" if (b, i) == low_cfg else f"{d.mean():+,.0f} ± {d.std():,.0f}"
        vs_auto = ""
        if auto in saving and (b, i) != auto and np.isfinite(sv).all():
            d, t = sv - saving[auto], totals[(b, i)] - totals[auto]
            if np.isfinite(d).all() and np.isfinite(t).all():
                vs_auto = f"{d.mean():+.1f} ± {d.std():.1f}, {t.mean():+,.0f} ± {t.std():,.0f}"
        lu = np.array(last[("ucbe", b, i)])
        lp = np.array(last[("pulse", b, i)])

        def worst(x: np.ndarray, cap: int = cap) -> str:
            return f"> {cap:,} ({(x < 0).sum()})" if (x < 0).any() else f"{x.max():,}"

        print(
            f"| {b}{tag} | {i} | {np.nanmean(a):,.0f} ± {np.nanstd(a):,.0f} "
            f"| {np.nanmean(c):,.0f} ± {np.nanstd(c):,.0f} "
            f"| {np.nanmean(sv):.1f} % ± {np.nanstd(sv):.1f} "
            f"| {np.nanmean(a) + m * i:,.0f} | {np.nanmean(c) + m * i:,.0f} "
            f"| {worst(lu)} / {worst(lp)} | {diff} | {tdiff} | {vs_auto} |",
            flush=True,
        )
    return boots, best_cfg


def schedule_combine(args: argparse.Namespace) -> None:
    """The ``schedule`` table from the per-seed outcomes that ``schedule --save`` wrote in
    several runs on one pool (same seeds, cap and grid: checked), so that configurations
    measured in separate runs are compared on the same seeds and bootstrap resamples."""
    from latentbench.select._schedule import default_schedule

    correct: dict = {}
    last: dict = {}
    todo: list = []
    ref = None
    for path in args.files:
        with np.load(path) as z:
            meta = (z["seeds"].tolist(), z["grid"].size, z["shape"].tolist())
            if ref is None:
                ref = meta
                grid = z["grid"]
            elif meta != ref:
                raise SystemExit(f"{path}: seeds, grid or pool differ from {args.files[0]}")
            for k in z.files:
                if "|" not in k:
                    continue
                pol, b, i, kind = k.split("|")
                cfg = (int(b), int(i))
                (correct if kind == "correct" else last)[(pol, *cfg)] = z[k]
                if cfg not in todo:
                    todo.append(cfg)
    assert ref is not None
    m, n, cap = ref[2]
    auto = default_schedule(m, n, None)
    print(f"\n{m} models x {n} items, {len(ref[0])} seeds, cap {cap:,}; files {args.files}\n")
    _schedule_table(sorted(todo), correct, last, grid, len(ref[0]), m, cap, auto)


def schedule(args: argparse.Namespace) -> None:
    """Evaluations to 95 % identification for batch sizes and initial batches, PULSE vs
    UCB-E with the same start and batch size, paired bootstrap over seeds; the configuration
    ``default_schedule`` picks is marked."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from latentbench.select._schedule import default_schedule

    configs = [tuple(int(x) for x in c.split("/")) for c in args.configs.split(",")]
    names = args.pools.split(",") if args.pools else list(SCHEDULE_POOLS)
    seeds = [10000 * k for k in range(args.seeds)]
    for key in names:
        name, gap = SCHEDULE_POOLS[key]
        start = time.perf_counter()
        Y, proxy = schedule_pool(name, gap)
        m, n = Y.shape
        cap = int((0.25 if args.cap is None else args.cap) * Y.size)
        grid = np.arange(0, cap + 1, 8)
        _SCHED.clear()
        _SCHED[key] = (Y, proxy, cap, grid)
        auto = default_schedule(m, n, None)
        todo = list(configs) + ([auto] if auto not in configs and not args.no_default else [])
        variants = [v for v in args.variants.split("|") if v]
        if variants and auto not in todo:
            raise SystemExit(
                "--variants run at default_schedule's configuration: drop --no-default"
            )
        tasks = [(key, p, b, i, s) for b, i in todo for p in ("ucbe", "pulse") for s in seeds]
        tasks += [(key, v, *auto, s) for v in variants for s in seeds]
        ctx = mp.get_context("fork")
        with ProcessPoolExecutor(args.n_jobs, mp_context=ctx) as ex:
            out = list(ex.map(_schedule_task, tasks, chunksize=4))
        correct: dict = {}
        last: dict = {}
        for _pool, pol, b, i, _s, ok, lw in out:
            correct.setdefault((pol, b, i), []).append(ok)
            last.setdefault((pol, b, i), []).append(lw)
        if args.save is not None:  # per-seed outcomes, for schedule-combine across runs
            arrays = {
                f"{pol}|{b}|{i}|{kind}": np.asarray(src[(pol, b, i)])
                for pol in ("ucbe", "pulse")
                for b, i in todo
                for kind, src in (("correct", correct), ("last", last))
            }
            np.savez_compressed(
                args.save,
                seeds=np.asarray(seeds),
                grid=grid,
                shape=np.asarray([m, n, cap]),
                **arrays,
            )
        print(
            f"\n**{key}**: {m} models x {n} items; default_schedule -> batch {auto[0]}, "
            f"initial batch {auto[1]}\n"
        )
        boots, best_cfg = _schedule_table(todo, correct, last, grid, len(seeds), m, cap, auto)
        for v in variants:  # at the default schedule: against UCB-E and the default PULSE
            V = np.array(correct[(v, *auto)], dtype=float)
            for ref in ("ucbe", "pulse"):
                R0 = np.array(correct[(ref, *auto)], dtype=float)
                pairs = np.array(
                    [
                        (
                            first_crossing(R0[idx].mean(0), grid),
                            first_crossing(V[idx].mean(0), grid),
                        )
                        for idx in boots
                    ]
                )
                a, c = pairs[:, 0], pairs[:, 1]
                sv = 100 * (a - c) / np.maximum(a, 1)
                lv = np.array(last[(v, *auto)])
                # the paired difference in cells has no ratio to blow up where the reference
                # crosses at 0 cells in a resample (max(a, 1) above)
                d = c - a
                print(
                    f"| `{v}` vs `{ref}` at {auto[0]} / {auto[1]} | | {np.nanmean(a):,.0f} "
                    f"± {np.nanstd(a):,.0f} | {np.nanmean(c):,.0f} ± {np.nanstd(c):,.0f} "
                    f"| {np.nanmean(sv):.1f} % ± {np.nanstd(sv):.1f} | | | {lv.max():,} "
                    f"| paired: {np.nanmean(d):+,.0f} ± {np.nanstd(d):,.0f} cells | | |",
                    flush=True,
                )
        print(
            f"<!-- {key}: {len(seeds)} seeds, cap {cap:,} post-init cells, best saving at "
            f"{best_cfg}, {time.perf_counter() - start:.0f} s -->",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "what",
        choices=[
            "identify",
            "identify-floor",
            "certify",
            "certify-floor",
            "width",
            "width-over-run",
            "history-free",
            "schedule",
            "schedule-combine",
            "worst-seeds",
            "paired-diagnosis",
        ],
    )
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--budget", type=int, default=400_000)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument(
        "--pulse-init",
        type=int,
        default=None,
        help="certify: PULSE's initial batch per model (default: default_schedule's)",
    )
    parser.add_argument(
        "--pulse-batch",
        type=int,
        default=None,
        help="certify: PULSE's batch size B (default: default_schedule's)",
    )
    parser.add_argument("--no-floors", action="store_true", help="certify: skip the floors")
    parser.add_argument(
        "--lucb", type=float, default=0.0, help="certify-floor: LUCB's cells on MMLU-Pro"
    )
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--skip-sim", action="store_true")
    parser.add_argument(
        "--variants", default="", help="PULSE variants shown after the default, '|'-separated"
    )
    parser.add_argument(
        "--pools",
        default="",
        help="only these: identify 'bfcl:gap:0.02,mmlu_pro:full', history-free 'bfcl'",
    )
    parser.add_argument(
        "--paper-ucbe",
        action="store_true",
        help=f"history-free: also the paper's UCB-E ({PAPER_UCBE!r}; needs --cap) as the "
        "reference of UCB-E and PULSE, totals split into start and proxy",
    )
    parser.add_argument(
        "--online-rank", type=int, default=2, help="history-free: rank of the online proxy"
    )
    parser.add_argument(
        "--other-divisor",
        type=int,
        default=1,
        help="seeds // this on pools other than BFCL gap",
    )
    parser.add_argument(
        "--floor-start",
        type=int,
        default=64,
        help="identify-floor: cells per model both UCB-E and the reference start with",
    )
    parser.add_argument(
        "--configs",
        default="8/8,16/16,32/32,64/64,64/32",
        help="schedule: batch/initial-batch pairs, comma-separated",
    )
    parser.add_argument(
        "--cap",
        type=float,
        default=None,
        help="schedule (default 0.25), history-free (default: no cap): stop each run after "
        "this fraction of the pool's cells (post-init)",
    )
    parser.add_argument(
        "--save", default=None, help="schedule: write the per-seed outcomes to this .npz"
    )
    parser.add_argument(
        "--no-default",
        action="store_true",
        help="schedule: only --configs (not also default_schedule's configuration)",
    )
    parser.add_argument("files", nargs="*", help="schedule-combine: .npz files from --save")
    args = parser.parse_args()
    run = {
        "identify": identify,
        "identify-floor": identify_floor,
        "certify": certify,
        "certify-floor": certify_floor,
        "width": width,
        "width-over-run": width_over_run,
        "history-free": history_free,
        "schedule": schedule,
        "schedule-combine": schedule_combine,
        "worst-seeds": worst_seeds,
        "paired-diagnosis": paired_diagnosis,
    }
    run[args.what](args)


if __name__ == "__main__":
    main()
