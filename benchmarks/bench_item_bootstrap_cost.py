"""Wall time the item bootstrap adds to ``standard_errors`` and ``score_models``, and the
calibration's model jackknife to ``score_models`` (issue 28).

On the calibration half of replica 0 of a shared matrix (``bench_heldout.py --score-only``'s
protocol), times the default fit's ``standard_errors()`` (random-item fit, plus the item
bootstrap where it applies) and ``score_models`` of the other half, with the bootstrap off
(``ITEM_BOOTSTRAP = 0``) and on (the library's default), each without the model jackknife
(``MODEL_JACKKNIFE = False``), then both on (the library's default).

Usage::

    python benchmarks/bench_item_bootstrap_cost.py --only alpacaeval2_weighted
    python benchmarks/bench_item_bootstrap_cost.py --stress 22x1000:stress
    python benchmarks/bench_item_bootstrap_cost.py --only mmlu_pro \
        --item-bootstrap-max-cells 400000 --model-jackknife-max-cells 400000 --full

``--item-bootstrap-max-cells`` / ``--model-jackknife-max-cells`` /
``--bootstrap-scores-max-cells`` override the library's
limits (diagnostic); ``--full`` also times ``standard_errors`` of the default fit of the whole
matrix, bootstrap off and on.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def set_cell_limits(args: argparse.Namespace) -> None:
    """The uncertainty methods' cell limits from ``--item-bootstrap-max-cells``,
    ``--model-jackknife-max-cells`` and ``--bootstrap-scores-max-cells`` (None: the library's)."""
    for flag, name in (
        ("item_bootstrap_max_cells", "ITEM_BOOTSTRAP_MAX_CELLS"),
        ("model_jackknife_max_cells", "MODEL_JACKKNIFE_MAX_CELLS"),
        ("bootstrap_scores_max_cells", "BOOTSTRAP_SCORES_MAX_CELLS"),
    ):
        if getattr(args, flag) is not None:
            setattr(_fitted, name, getattr(args, flag))


def halves(
    matrix: ResponseMatrix, Y: np.ndarray, rng: np.random.Generator
) -> tuple[ResponseMatrix, ResponseMatrix]:
    """Simulated responses ``Y`` (the matrix's missing cells kept missing) split into a
    random half of the models (the calibration) and the other half (the models to score)."""
    Y[~matrix.observed] = np.nan
    perm = rng.permutation(matrix.n_models)
    half = matrix.n_models // 2
    cal, new = np.sort(perm[:half]), np.sort(perm[half:])
    ids = np.array(matrix.model_ids)
    calibration = ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids)
    return calibration, ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="alpacaeval2_weighted")
    parser.add_argument(
        "--stress",
        default=None,
        help="instead of a shared matrix: a simulated stress matrix of this shape and kind, "
        "e.g. 22x1000:stress (bench_coverage's, replica 0's draw and split)",
    )
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--item-bootstrap-max-cells", type=int, default=None)
    parser.add_argument("--model-jackknife-max-cells", type=int, default=None)
    parser.add_argument("--bootstrap-scores-max-cells", type=int, default=None)
    parser.add_argument(
        "--full", action="store_true", help="also time standard_errors on the whole matrix"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    set_cell_limits(args)
    if args.stress:
        from bench_coverage import stress_matrix

        shape, kind = args.stress.split(":")
        n_models, n_items = (int(x) for x in shape.split("x"))
        matrix = stress_matrix(kind, n_models, n_items, 0)
        args.only = f"{kind} {shape}"
        rng = np.random.default_rng(1000)
        Y = rng.binomial(1, TwoPL().fit(matrix).predict_proba()).astype(np.float32)
    else:
        matrix = ResponseMatrix.read(args.data / f"{args.only}.parquet")
        p = TwoPL().fit(matrix).predict_proba()
        rng = np.random.default_rng(2000)
        Y = (rng.random(p.shape) < p).astype(np.float32)
    calibration, scored = halves(matrix, Y, rng)
    default = _fitted.ITEM_BOOTSTRAP
    if args.full:
        for replicates in (0, default):
            _fitted.ITEM_BOOTSTRAP = replicates
            start = time.perf_counter()
            fit = TwoPL().fit(matrix)
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            unc = fit.standard_errors()
            print(
                f"{args.only} whole {matrix.n_models} x {matrix.n_items}, item bootstrap "
                f"{replicates}: fit {fit_s:.1f} s, standard_errors "
                f"{time.perf_counter() - start:.1f} s ({unc.method})",
                flush=True,
            )
    first = None
    for replicates, jackknife in ((0, False), (default, False), (default, True)):
        _fitted.ITEM_BOOTSTRAP = replicates
        _fitted.MODEL_JACKKNIFE = jackknife
        start = time.perf_counter()
        fit = TwoPL().fit(calibration)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        unc = fit.standard_errors()
        se_s = time.perf_counter() - start
        start = time.perf_counter()
        frame = fit.score_models(scored)
        score_s = time.perf_counter() - start
        if first is None:
            first = frame
        diff = float((frame["se"] - first["se"]).abs().max())
        print(
            f"{args.only} half {calibration.n_models} x {calibration.n_items}, item bootstrap "
            f"{replicates}, model jackknife {jackknife}: fit {fit_s:.1f} s, standard_errors "
            f"{se_s:.1f} s "
            f"({unc.method}), score_models of "
            f"{scored.n_models} models {score_s:.1f} s (largest se difference from the "
            f"first line's {diff:.2g})",
            flush=True,
        )


if __name__ == "__main__":
    main()
