"""Coverage of the fit's 95% ability intervals with and without the item bootstrap, paired,
at 31-100 reference models: the comparison that chose ``ITEM_BOOTSTRAP_MAX_MODELS`` (100
since 2026-12-08; 30 before, docs/model.md).

Each replica is fitted twice with the default ``TwoPL()``: the item bootstrap off
(``ITEM_BOOTSTRAP_MAX_MODELS = 0``) and on (no model limit; the cell limit
``ITEM_BOOTSTRAP_MAX_CELLS`` as shipped), same data. Printed: coverage of each (mean over
replicas of the share of models whose interval holds the truth, with its Monte Carlo se over
replicas), the paired difference, seconds per ``fit`` + ``standard_errors``.

* ``synthetic N J MISSING R``: ``simulate_2pl(N, J, missing=MISSING)``, seeds 100..; truth:
  the generating abilities standardised over the models (the reporting scale).
* ``real NAME SPLIT R``: parametric replicas of a shared matrix (``../shared/data/NAME``;
  ``SPLIT`` ``full`` or a seed: the random half of the models ``split_models`` gives as
  history): the default fit is the truth, each replica redraws the observed cells from its
  probabilities and refits (``bench_heldout.coverage``'s design, seeds 1000..).

Usage::

    python benchmarks/bench_bootstrap_models.py synthetic 45 300 0.5 30
    python benchmarks/bench_bootstrap_models.py real bfcl_v2 0 20
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_heldout import SHARED, on_reference_scale

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted
from latentbench.select import split_models
from latentbench.synthetic import simulate_2pl


def _covered(matrix: ResponseMatrix, truth_of, boot: bool) -> tuple[float, float]:
    """Coverage of one fit of ``matrix`` (bootstrap ``boot``) and its seconds."""
    _fitted.ITEM_BOOTSTRAP_MAX_MODELS = 10**9 if boot else 0
    start = time.perf_counter()
    result = TwoPL().fit(matrix)
    abilities = result.standard_errors(matrix).abilities
    seconds = time.perf_counter() - start
    truth = truth_of(result)
    inside = (abilities["lower"].to_numpy() <= truth) & (truth <= abilities["upper"].to_numpy())
    return float(inside.mean()), seconds


def _replicas(argv: list[str]):
    """(label, R, iterator of (matrix, truth_of(result)))."""
    if argv[0] == "synthetic":
        n, j, missing, r = int(argv[1]), int(argv[2]), float(argv[3]), int(argv[4])

        def synthetic():
            for s in range(r):
                data = simulate_2pl(n, j, missing=missing, random_state=100 + s)
                theta = data.theta.ravel()
                z = (theta - theta.mean()) / theta.std()
                yield data.matrix, lambda result, z=z: z

        return f"synthetic {n}x{j} missing {missing}", r, synthetic()
    name, split, r = argv[1], argv[2], int(argv[3])
    m = ResponseMatrix.read(SHARED / f"{name}.parquet")
    if split != "full":
        rows = np.sort(split_models(m.n_models, how="random", random_state=int(split))[0])
        m = ResponseMatrix(m.scores[rows], [m.model_ids[i] for i in rows], m.item_ids)
    fit = TwoPL().fit(m)
    p = fit.predict_proba()

    def real():
        for k in range(r):
            rng = np.random.default_rng(1000 + k)
            y = (rng.random(p.shape) < p).astype(np.float32)
            y[~m.observed] = np.nan
            yield (
                ResponseMatrix(y, m.model_ids, m.item_ids),
                lambda result: on_reference_scale(fit.U[:, 0], result),
            )

    return f"{name} {split} {m.n_models}x{m.n_items}", r, real()


def main() -> None:
    warnings.simplefilter("ignore")
    label, r, replicas = _replicas(sys.argv[1:])
    cov: dict[bool, list[float]] = {False: [], True: []}
    secs = {False: 0.0, True: 0.0}
    for matrix, truth_of in replicas:
        for boot in (False, True):
            c, s = _covered(matrix, truth_of, boot)
            cov[boot].append(c)
            secs[boot] += s
    off, on = np.array(cov[False]), np.array(cov[True])

    def se(x: np.ndarray) -> float:
        return float(x.std(ddof=1) / np.sqrt(x.size))

    print(
        f"{label} R={r}: without {off.mean():.3f} ± {se(off):.3f} | with {on.mean():.3f} ± "
        f"{se(on):.3f} | paired {np.mean(on - off):+.3f} ± {se(on - off):.3f} | s per fit "
        f"without {secs[False] / r:.1f}, with {secs[True] / r:.1f}"
    )


if __name__ == "__main__":
    main()
