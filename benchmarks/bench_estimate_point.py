"""Point-estimate probe: the rounds re-centred on the final predictions (not the default).

Leave-one-model-out on a shared matrix (every ``--models A:B:S`` model, 2 seeds, rank-1
calibration from the others). After 30 and 100 items of the estimate's own design, compares
with the default ``dr`` (rounds ``Z_t`` with the predictions of their time, precision-weighted)
the same weighted mean of the rounds recomputed with the *final* predictions
(``drfinal``: ``Z'_t = (S_t + sum_{U_t} f + (y_t - f_t) / pi_t) / n`` with today's ``f``; not
design-unbiased, since ``f`` now depends on ``y_t``), its unweighted mean (``drfinal-eq``) and
the model-based ``model`` (p-IRT); paired differences with ``dr`` (mean ± SE over runs).

    python benchmarks/bench_estimate_point.py alpacaeval1_gpt4 --models 0:100:2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _estimate_common import held_out

from latentbench import ResponseMatrix
from latentbench.select._estimate_design import SequentialEstimate

DATA = Path("/work/shared/data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--models", default="0:1000:1", help="A:B:S")
    args = parser.parse_args()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    a, b, s_ = (int(x) for x in args.models.split(":"))
    rec: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        rec.setdefault(key, []).append(value)

    for i, cal, pop, y in held_out(M, list(range(M.n_models))[a:b:s_]):
        n, truth = pop.size, float(y.mean())
        for seed in range(2):
            seq = SequentialEstimate(cal, pop, delta=0.05)
            rng = np.random.default_rng([seed, i, 7])
            drawn, probs, variances = [], [], []
            for t in range(1, 101):
                j, pi = seq.choose(rng)
                seq.observe(j, float(y[j]), pi)
                assert seq.last_round is not None
                drawn.append(j)
                probs.append(float(pi[j]))
                variances.append(seq.last_round[3])
                if t not in (30, 100):
                    continue
                f = seq.f
                J = np.asarray(drawn)
                yt, ft, pt = y[J], f[J], np.asarray(probs)
                w = 1.0 / np.asarray(variances)
                revealed = np.r_[0.0, np.cumsum(yt)[:-1]]
                predicted = np.r_[0.0, np.cumsum(ft)[:-1]]
                z = (revealed + f.sum() - predicted + (yt - ft) / pt) / n
                add(f"dr@{t}", abs(seq.point("dr") - truth))
                add(f"drfinal@{t}", abs(float((w * z).sum() / w.sum()) - truth))
                add(f"drfinal-eq@{t}", abs(float(z.mean()) - truth))
                add(f"model@{t}", abs(seq.point("model") - truth))
    for t in (30, 100):
        base = np.asarray(rec[f"dr@{t}"])
        for kind in ("dr", "drfinal", "drfinal-eq", "model"):
            v = np.asarray(rec[f"{kind}@{t}"])
            d = v - base
            print(
                f"{args.matrix} {kind}@{t}: MAE {v.mean():.4f}  diff vs dr {d.mean():+.5f} ± "
                f"{d.std(ddof=1) / np.sqrt(d.size):.5f} ({v.size} runs)"
            )


if __name__ == "__main__":
    main()
