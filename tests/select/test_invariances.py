"""Metamorphic checks of ``select replay`` and ``estimate``: the same cells, given in another
layout or order, give the same run."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import SelectionResult, replay


def _frame(m: int = 30, n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Binary scores of a 2PL world, models ``m00``... as rows, items ``q000``... as columns."""
    rng = np.random.default_rng(seed)
    U, V, b = rng.normal(size=m), np.abs(rng.normal(size=n)), rng.normal(size=n)
    P = 1.0 / (1.0 + np.exp(-(U[:, None] * V + b)))
    Y = (rng.random((m, n)) < P).astype(float)
    return pd.DataFrame(
        Y, index=[f"m{i:02d}" for i in range(m)], columns=[f"q{j:03d}" for j in range(n)]
    )


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The same cells with the rows and the columns in another order (a wide file's)."""
    rng = np.random.default_rng(seed)
    return frame.iloc[rng.permutation(frame.shape[0]), rng.permutation(frame.shape[1])]


def _run(result: SelectionResult) -> dict[str, object]:
    """What a run did, by model id (independent of the order the models are listed in)."""
    ids = list(result.model_ids or [])
    by = lambda values: dict(zip(ids, np.asarray(values).tolist(), strict=True))  # noqa: E731
    return {
        "best": result.best_id,
        "stopped": result.stopped,
        "post_init": result.evaluations_post_init,
        "certified_after": result.certified_after,
        "n_observed": by(result.n_observed),
        "estimates": by(result.estimates),
        "certificate_lower": by(result.certificate_lower),
        "certificate_upper": by(result.certificate_upper),
        "trace_best": [ids[k] for k in result.trace_best],
    }


@pytest.mark.parametrize("history", ["file", "none", "half"])
def test_replay_of_the_same_cells_in_another_row_and_column_order_is_the_same_run(history):
    """A wide file keeps its rows and columns in the order written, a long file is read with
    the ids sorted: before, the run's draws, the history split and the proxy's fit followed
    that order, so the same cells gave another run (on BFCL v2, 13,240 cells against 10,708
    with the items in their numeric order, 3 of 6 seeds different with the history's rows
    permuted)."""
    frame = _frame()
    cand, hist = frame.iloc[18:], frame.iloc[:18]

    def run(c: pd.DataFrame, h: pd.DataFrame) -> dict[str, object]:
        kw: dict[str, object] = {"random_state": 1}
        if history == "file":
            kw["history"] = ResponseMatrix.from_wide(h)
        elif history == "none":
            kw["no_history"] = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # the random half, said
            return _run(replay(ResponseMatrix.from_wide(c), **kw))  # type: ignore[arg-type]

    if history == "half":
        cand = frame
    assert run(_shuffled(cand, 1), _shuffled(hist, 2)) == run(cand, hist)


def test_replay_of_renamed_candidates_in_the_same_order_is_the_same_run():
    """The draws depend on the seed and the cells' order, never on the names."""
    frame = _frame(24, 300, seed=3)
    cand, hist = frame.iloc[12:], frame.iloc[:12]
    history = ResponseMatrix.from_wide(hist)
    first = replay(ResponseMatrix.from_wide(cand), history=history, random_state=2)
    renamed = cand.rename(index=lambda name: f"z-{name}")
    second = replay(ResponseMatrix.from_wide(renamed), history=history, random_state=2)
    second.model_ids = [name.removeprefix("z-") for name in second.model_ids or []]
    assert _run(second) == _run(first)


# ------------------------------------------------------------------------------ estimate


@pytest.fixture(scope="module")
def world() -> tuple[pd.DataFrame, pd.Series]:
    """A 30-model calibration and a new model's answers to its 300 items."""
    frame = _frame(31, 300, seed=5)
    return frame.iloc[:30], frame.iloc[30].rename("new")


def _estimate(result) -> tuple[object, ...]:  # type: ignore[no-untyped-def]
    return (result.model, result.items, result.probabilities, result.score, result.lower,
            result.upper, result.rank, result.rank_lower, result.rank_upper)  # fmt: skip


def test_an_estimate_does_not_depend_on_how_the_same_answers_are_laid_out(world):
    """A long table in any row order, a wide one, an answer given twice and answers to
    items the calibration does not hold give the estimate of the plain answers."""
    from latentbench.select import estimate

    cal, new = world
    matrix = ResponseMatrix.from_wide(cal)
    kw = {"budget": 40, "seed": 4, "cache": False}
    base = _estimate(estimate(matrix, new, **kw))
    long = new.rename_axis("item").reset_index(name="score").assign(model="new")
    extra = pd.DataFrame({"model": "new", "item": ["zz0", "aa1", "q000"],
                          "score": [1.0, np.nan, new["q000"]]})  # fmt: skip
    wide = new.to_frame().T.rename_axis("model").reset_index()
    for answers in (
        long.sample(frac=1.0, random_state=1),
        pd.concat([long, extra], ignore_index=True),
        wide[["model", *reversed(new.index.tolist())]],
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # the extra items, said
            assert _estimate(estimate(matrix, answers, **kw)) == base
    # the calibration's models in another order: the same fit, up to the last bits
    rows = np.random.default_rng(2).permutation(len(cal))
    other = estimate(ResponseMatrix.from_wide(cal.iloc[rows]), new, **kw)
    assert other.items == base[1] and (other.lower, other.upper) == base[4:6]
    assert other.score == pytest.approx(base[3], rel=1e-12)


def test_a_shorter_budget_is_the_start_of_a_longer_run(world):
    """The draws depend on the seed, the name and the answers so far, never on the budget:
    a run stopped at 30 items draws the first 30 items of a run of 80. The budget sizes the
    interval for its end (docs/estimate.md, Method 4), so the interval after 30 items is the
    80-item run's only where both are unsized (a budget that reveals every item)."""
    from latentbench.select import estimate

    cal, new = world
    matrix = ResponseMatrix.from_wide(cal)
    short = estimate(matrix, new, budget=30, seed=1, cache=False)
    long = estimate(matrix, new, budget=80, seed=1, cache=False)
    assert long.items[:30] == short.items and long.probabilities[:30] == short.probabilities
    assert short.options["target"] > long.options["target"]  # sized for 30, for 80
    whole = estimate(matrix, new, budget=300, seed=1, cache=False)
    again = estimate(matrix, new, budget=300, seed=1, cache=False, precision=None)
    assert whole.options["target"] is None and whole.items[:80] == long.items
    assert np.array_equal(np.asarray(whole.trajectory), np.asarray(again.trajectory))


def test_a_fixed_design_is_read_alike_in_any_row_order_and_either_format(world, tmp_path):
    """``tiny``'s first k' items are its k'-item design's (but for the registered ``k``); the
    design file's rows in another order, as Parquet or CSV, give the same estimate, and a
    design cut after k' rows the estimate the whole design had after k' items (both sized for
    the registered k: a cut is a point on the registered run, however it was chosen)."""
    from latentbench.select import estimate, tiny

    cal, new = world
    matrix = ResponseMatrix.from_wide(cal)
    design = tiny(matrix, k=30, seed=6, cache=False)
    twelve = tiny(matrix, k=12, seed=6, cache=False)
    pd.testing.assert_frame_equal(design.iloc[:12].drop(columns="k"), twelve.drop(columns="k"))
    assert set(design["k"]) == {30} and set(twelve["k"]) == {12}
    design.sample(frac=1.0, random_state=3).to_csv(tmp_path / "items.csv", index=False)
    design.to_parquet(tmp_path / "items.parquet")
    runs = [estimate(matrix, new, items=d, cache=False)
            for d in (design, tmp_path / "items.csv", tmp_path / "items.parquet")]  # fmt: skip
    assert _estimate(runs[1]) == _estimate(runs[0]) == _estimate(runs[2])
    cut = estimate(matrix, new, items=design.iloc[:12], cache=False)
    assert tuple(np.asarray(runs[0].trajectory)[11]) == (cut.score, cut.lower, cut.upper)
    assert cut.options["target"] == runs[0].options["target"]  # both sized for k = 30
    # the k'-item design (registered k' = 12) is sized for its own end: narrower there
    own = estimate(matrix, new, items=twelve, cache=False)
    assert own.items == cut.items and own.options["target"] > cut.options["target"]
    with pytest.raises(InputError, match=r"column 'k' holds 12 for a design of 30 rows"):
        estimate(matrix, new, items=design.assign(k=12), cache=False)


@pytest.mark.parametrize("split", ["random", "date"])
def test_an_experiment_on_the_same_cells_in_another_order_is_the_same(split):
    """experiment_from_matrix took the rows and columns in the order given (a wide file's):
    the pools, history split and draws followed it, so the same cells gave another table. The
    release dates of a date split follow their rows."""
    from latentbench.select import experiment_from_matrix

    frame = _frame(30, 300, seed=5)
    shuffled = _shuffled(frame, 4)
    days = np.datetime64("2024-01-01") + 7 * np.arange(30)  # m00 oldest
    by_id = dict(zip(frame.index, days, strict=True))
    kw = {"split": split, "seeds": 2, "budget": 120, "policies": ["pulse", "ucbe"],
          "pool_size": 8, "pools": "full", "random_state": 3}  # fmt: skip

    def run(f: pd.DataFrame) -> tuple[object, ...]:
        dates = np.asarray([by_id[m] for m in f.index]) if split == "date" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            out = experiment_from_matrix(ResponseMatrix.from_wide(f), dates=dates, **kw)
        curves = {key: np.asarray(value).tolist() for key, value in out.curves.items()}
        summary = [{k: None if isinstance(v, float) and np.isnan(v) else v
                    for k, v in row.items() if not k.startswith("seconds")}
                   for row in out.summary]  # fmt: skip
        return out.pools, summary, curves

    assert run(shuffled) == run(frame)
