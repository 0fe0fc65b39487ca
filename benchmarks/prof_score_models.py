"""cProfile of ``score_models`` on an MMLU-Pro calibration half with the item bootstrap's
replicate scores and the model jackknife (issue 28: where the time goes at 12,032 items).

The calibration half and the new models are replica 0's draw and split of
``bench_item_bootstrap_cost.py`` (seed 2000); the first ``--new`` of the 15 other models are
scored. ``--save DIR``: fit the half, run ``standard_errors`` (the item bootstrap), pickle the
fit and the new models to DIR, then profile ``score_models`` and pickle its frame;
``--load DIR``: profile ``score_models`` on the pickled fit (the bootstrap not rerun; the
jackknife refits are, they are not cached before ``score_models``) and print the largest
difference from the saved frame. The score limits are raised to 20,000 items (the library's
limits before the batched scoring; harmless after it).

Usage::

    python benchmarks/prof_score_models.py --save /tmp/s28 --new 3
    python benchmarks/prof_score_models.py --load /tmp/s28
"""

from __future__ import annotations

import argparse
import cProfile
import pickle
import pstats
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from bench_item_bootstrap_cost import halves

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--load", type=Path, default=None)
    parser.add_argument("--new", type=int, default=3, help="new models scored (of 15)")
    parser.add_argument("--top", type=int, default=30, help="profile lines printed")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    # the limits of the code before the batched scoring (2,000 items) raised
    for name in ("BOOTSTRAP_SCORES_MAX_ITEMS", "MODEL_JACKKNIFE_MAX_ITEMS"):
        if hasattr(_fitted, name):
            setattr(_fitted, name, 20_000)
    if args.load is not None:
        with open(args.load / "cal.pkl", "rb") as handle:
            fit, scored = pickle.load(handle)
    else:
        assert args.save is not None, "--save DIR or --load DIR"
        matrix = ResponseMatrix.read(SHARED / "mmlu_pro.parquet")
        p = TwoPL().fit(matrix).predict_proba()
        rng = np.random.default_rng(2000)
        Y = (rng.random(p.shape) < p).astype(np.float32)
        calibration, scored = halves(matrix, Y, rng)
        scored = scored.subset(models=np.arange(args.new))
        start = time.perf_counter()
        fit = TwoPL().fit(calibration)
        print(f"fit {time.perf_counter() - start:.1f} s", flush=True)
        start = time.perf_counter()
        fit.standard_errors()
        print(f"standard_errors {time.perf_counter() - start:.1f} s", flush=True)
        args.save.mkdir(parents=True, exist_ok=True)
        with open(args.save / "cal.pkl", "wb") as handle:
            pickle.dump((fit, scored), handle)
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    frame = fit.score_models(scored)
    profile.disable()
    print(f"score_models of {scored.n_models} models {time.perf_counter() - start:.1f} s")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    if args.load is not None:
        saved = pd.read_pickle(args.load / "frame.pkl")
        for column in ("theta", "se", "lower", "upper"):
            diff = np.abs(frame[column].to_numpy() - saved[column].to_numpy()).max()
            print(f"largest |{column} - saved {column}| {diff:.3g}")
    else:
        frame.to_pickle(args.save / "frame.pkl")


if __name__ == "__main__":
    main()
