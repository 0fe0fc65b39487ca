"""A score a float rounding past 0 or 1 (``sum([0.05] * 20)`` is 1.0000000000000002, ``1 -
0.9 - 0.1`` is -2.8e-17: harness metrics computed in floating point) is that bound in every
reader of scores, as live oracles' answers are (:func:`latentbench._checks.bounded_score`);
a value further out is still refused naming the file, the field and the value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench._checks import SCORE_ROUNDING, bounded_score, bounded_scores
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.io.formats import read_results
from latentbench.io.formats._common import coerce_score
from latentbench.io.store import Store

ABOVE = sum([0.05] * 20)  # 1.0000000000000002
BELOW = 1 - 0.9 - 0.1  # -2.7755575615628914e-17
DATE = "2024-05-01T12-30-45.123456"


def test_the_rounding_is_real():
    assert ABOVE > 1 and BELOW < 0  # what the readers refused


@pytest.mark.parametrize(
    "value",
    [ABOVE, BELOW, 1 + 1e-10, -1e-10, 1.0, 0.0, -0.0, 0.5, 1 + 2e-9, -2e-9, 1.5, -0.1,
     np.inf, -np.inf, np.nan],
)  # fmt: skip
def test_the_array_rule_is_the_scalar_rule(value):
    scores, outside = bounded_scores(np.array([value, 0.25]))
    one = bounded_score(value)
    assert outside[0] == (one is None) and not outside[1]
    if one is not None:
        assert scores[0] == one or (np.isnan(one) and np.isnan(scores[0]))
        assert np.signbit(scores[0]) == np.signbit(one)  # -0.0 is left as it is
    assert scores[1] == 0.25


def test_scores_in_bounds_are_returned_as_they_are():
    values = np.array([[0.0, 1.0], [np.nan, 0.5]])
    scores, outside = bounded_scores(values)
    assert scores is values and not outside.any()
    assert SCORE_ROUNDING == 1e-9


def test_coerce_score_keeps_a_rounding_as_the_bound_and_refuses_further():
    assert coerce_score(ABOVE, "f.json", "acc") == 1.0
    assert coerce_score(BELOW, "f.json", "acc") == 0.0
    assert coerce_score(str(ABOVE), "f.json", "acc") == 1.0  # lm-eval stringifies
    with pytest.raises(InputError, match=r"f\.json: field 'acc': value 1\.000001 is outside"):
        coerce_score(1.000001, "f.json", "acc")


def _lm_eval(folder: Path, model: str, scores: list[float]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(dict(doc_id=i, doc={}, target=0, filter="none", metrics=["acc"], acc=s))
        for i, s in enumerate(scores)
    ]
    (folder / f"samples_t_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
    results = {"results": {"t": {}}, "model_name": model, "lm_eval_version": "0.4.9"}
    (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    return folder


def test_lm_eval_samples_rounded_past_a_bound_read_as_the_bound(tmp_path):
    folder = _lm_eval(tmp_path / "m", "m", [ABOVE, BELOW, 0.5])
    frame, _ = read_results("lm-eval", folder)
    assert sorted(frame["score"].tolist()) == [0.0, 0.5, 1.0]
    _lm_eval(tmp_path / "bad", "m", [1.0001, 0.5])
    with pytest.raises(InputError, match=r"samples_t_.*field 'acc': value 1\.0001 is outside"):
        read_results("lm-eval", tmp_path / "bad")


def test_the_lm_eval_bridge_reads_a_rounding_as_the_bound(tmp_path):
    from latentbench.select.oracles import LmEvalBridgeOracle

    _lm_eval(tmp_path / "out" / "m", "m", [ABOVE, BELOW, 0.5])
    bridge = LmEvalBridgeOracle(
        ["a"], ["m"], ["0", "1", "2"], "t", tmp_path / "out", tmp_path / "plans"
    )
    got = {c.position: c.score for c in bridge.evaluate_cells(0, np.arange(3))}
    assert got == {0: 1.0, 1: 0.0, 2: 0.5}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_table_rounded_past_a_bound_reads_and_ingests_as_the_bound(tmp_path, suffix):
    frame = pd.DataFrame(
        {"model": ["a", "a", "b"], "item": ["q1", "q2", "q1"], "score": [ABOVE, BELOW, 0.5]}
    )
    path = tmp_path / f"scores{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    canonical, _ = read_results("table", path, benchmark="bench")
    assert canonical.sort_values(["model", "item"])["score"].tolist() == [1.0, 0.0, 0.5]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(canonical)
        stored = store.connection.execute("SELECT min(score), max(score) FROM responses").fetchone()
    assert stored == (0.0, 1.0)
    frame.loc[0, "score"] = 1.01
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    with pytest.raises(InputError, match=r"scores\.\w+.*field 'score': value '?1\.01'? is outside"):
        read_results("table", path, benchmark="bench")


def test_store_ingest_of_a_frame_keeps_a_rounding_as_the_bound(tmp_path):
    canonical, _ = read_results(
        "table",
        _write(tmp_path / "t.csv", [0.25, 0.5, 0.75]),
        benchmark="bench",
    )
    canonical["score"] = [ABOVE, BELOW, 0.5]
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(canonical)
        got = store.connection.execute("SELECT score FROM responses ORDER BY item").fetchall()
        assert [g[0] for g in got] == [1.0, 0.0, 0.5]
        canonical["score"] = [1.5, 0.0, 0.5]
        with pytest.raises(InputError, match=r"t\.csv: row 0: score 1\.5 is outside"):
            store.ingest(canonical)


def _write(path: Path, scores: list[float]) -> Path:
    pd.DataFrame(
        {"model": "a", "item": [f"q{k}" for k in range(len(scores))], "score": scores}
    ).to_csv(path, index=False)
    return path


def test_a_response_matrix_keeps_a_rounding_as_the_bound(tmp_path):
    matrix = ResponseMatrix(np.array([[ABOVE, BELOW], [0.5, np.nan]]), ["a", "b"], ["x", "y"])
    assert matrix.scores[0].tolist() == [1.0, 0.0]
    assert np.isnan(matrix.scores[1, 1])
    with pytest.raises(InputError, match=r"model 'a', item 'x': score 1\.0001 is outside"):
        ResponseMatrix(np.array([[1.0001, 0.0], [0.5, 0.2]]), ["a", "b"], ["x", "y"])
    long = pd.DataFrame(
        {"model": ["a", "a", "b", "b"], "item": ["x", "y", "x", "y"],
         "score": [ABOVE, BELOW, 0.5, 1.0]}
    )  # fmt: skip
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    for read in (ResponseMatrix.from_long(long), ResponseMatrix.read(path)):
        assert read.scores.tolist() == [[1.0, 0.0], [0.5, 1.0]]
    cells = ResponseMatrix.from_cells(
        np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([ABOVE, -1e-17, 0.5]),
        ["a", "b"], ["x", "y"],
    )  # fmt: skip
    assert cells.to_long()["score"].tolist() == [1.0, 0.0, 0.5]
    with pytest.raises(InputError, match=r"scores must lie in \[0, 1\]"):
        ResponseMatrix.from_cells(
            np.array([0, 1]), np.array([0, 0]), np.array([1.5, 0.5]), ["a", "b"], ["x", "y"]
        )


def test_estimate_answers_rounded_past_a_bound_read_as_the_bound(tmp_path):
    from latentbench.select import read_responses

    path = _write(tmp_path / "answers.csv", [ABOVE, BELOW, 0.5])
    (answers,) = read_responses(path).values()
    assert answers.tolist() == [1.0, 0.0, 0.5]
    _write(path, [1.1, 0.0, 0.5])
    with pytest.raises(InputError, match=r"answers\.csv.*score 1\.1 is outside"):
        read_responses(path)


HELM = Path(__file__).resolve().parents[1] / "data" / "formats" / "helm" / "benchmark_output"


def test_a_helm_stat_rounded_past_a_bound_is_offered_and_read_as_the_bound(tmp_path):
    # a stat other than a correctness one was offered only when every mean lay in [0, 1]:
    # one mean of 1.0000000000000002 hid it ('choose one of ...')
    import shutil

    copy = tmp_path / "benchmark_output"
    shutil.copytree(HELM, copy)
    stats = copy / "runs" / "v1" / "boolq:model=meta_llama-7b" / "per_instance_stats.json"
    entries = json.loads(stats.read_text())
    rounded = [ABOVE, BELOW, 0.5]
    for k, entry in enumerate(entries):
        value = rounded[k % 3]
        entry["stats"].append(
            {"name": {"name": "judge_agreement", "split": "test"}, "count": 1, "mean": value}
        )
        if k == 0:
            entry["stats"][0]["mean"] = ABOVE  # exact_match
    stats.write_text(json.dumps(entries))
    frame, _ = read_results("helm", stats.parent, metric="judge_agreement")
    assert len(frame) == len(entries) and set(frame["score"]) == {0.0, 0.5, 1.0}
    frame, _ = read_results("helm", stats.parent, metric="exact_match")
    assert frame.loc[frame["item"] == entries[0]["instance_id"], "score"].max() == 1.0


def test_estimate_of_answers_in_memory_keeps_a_rounding_as_the_bound():
    from latentbench.select import estimate
    from latentbench.select._estimate_calibration import from_matrix
    from latentbench.synthetic import simulate_2pl

    matrix = simulate_2pl(8, 30, random_state=3).matrix
    cal = from_matrix(matrix, rank=1)
    answers = pd.Series(np.tile([ABOVE, BELOW, 1.0], 10), index=matrix.item_ids)
    exact = pd.Series(np.tile([1.0, 0.0, 1.0], 10), index=matrix.item_ids)
    got, expected = (estimate(cal, a, budget=30, seed=1) for a in (answers, exact))
    assert got.score == expected.score and got.lower == expected.lower
    with pytest.raises(InputError, match=r"item '.*': score 1\.001 is outside"):
        estimate(cal, answers.replace(ABOVE, 1.001), budget=30, seed=1)


def test_score_models_and_the_replay_oracle_keep_a_rounding_as_the_bound():
    """Two readers of scores in memory still refused a rounding: ``IRTResult.score_models``
    of a wide DataFrame (1.0000000000000002 and -2.8e-17) and ``MatrixOracle`` (-2.8e-17,
    which float32 keeps); 1.01 is still refused by both."""
    import warnings

    from latentbench import TwoPL
    from latentbench.select.oracles import MatrixOracle

    rng = np.random.default_rng(0)
    Y = (rng.random((12, 40)) < 0.6).astype(float)
    items = [f"q{j}" for j in range(40)]
    matrix = ResponseMatrix.from_wide(pd.DataFrame(Y, index=[f"m{i}" for i in range(12)],
                                                   columns=items))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = TwoPL().fit(matrix)
        row = pd.DataFrame(Y[:1], index=["new"], columns=items)
        for value, bound in ((ABOVE, 1.0), (BELOW, 0.0)):
            given = row.copy()
            given.iloc[0, 0] = value
            exact = row.copy()
            exact.iloc[0, 0] = bound
            assert fit.score_models(given).equals(fit.score_models(exact))
            Z = Y.copy()
            Z[0, 0] = value
            assert MatrixOracle(Z).evaluate(0, np.array([0]))[0] == bound
        given = row.copy()
        given.iloc[0, 0] = 1.01
        with pytest.raises(InputError, match=r"1\.01"):
            fit.score_models(given)
        Z = Y.copy()
        Z[0, 0] = 1.01
        with pytest.raises(InputError, match=r"1\.01"):
            MatrixOracle(Z)


def _rounded(scores: np.ndarray) -> np.ndarray:
    """``scores`` (0/1) with every 1 as 1.0000000000000002 and every 0 as -2.8e-17."""
    return np.where(scores == 1, ABOVE, np.where(scores == 0, BELOW, scores))


def test_score_models_keeps_a_rounding_as_the_bound():
    # score_models refused 1.0000000000000002 ("expected a number in [0, 1]") that every
    # reader of files reads as 1
    import warnings

    from latentbench.irt import TwoPL
    from latentbench.synthetic import simulate_2pl

    matrix = simulate_2pl(12, 40, random_state=0).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix.subset(models=matrix.model_ids[2:]))
        wide = matrix.subset(models=matrix.model_ids[:2]).to_wide()
        expected = result.score_models(wide)
        rounded = pd.DataFrame(_rounded(wide.to_numpy(float)), wide.index, wide.columns)
        assert (rounded.to_numpy() > 1).any() and (rounded.to_numpy() < 0).any()
        got = result.score_models(rounded)
    pd.testing.assert_frame_equal(got, expected)
    rounded.iloc[1, 3] = 1.001
    with pytest.raises(InputError, match=r"model '.*', item '.*': score 1\.001; expected"):
        result.score_models(rounded)


def test_a_matrix_oracle_keeps_a_rounding_as_the_bound():
    # MatrixOracle refused -2.8e-17 ("scores range [-2.77556e-17, 1]; expected values in
    # [0, 1]")
    from latentbench.select.oracles import MatrixOracle

    exact = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]])
    oracle = MatrixOracle(_rounded(exact))
    assert np.array_equal(oracle.scores, exact.astype(np.float32))
    assert not np.signbit(oracle.scores).any()
    assert np.array_equal(MatrixOracle(_rounded(exact).astype(np.float32)).scores, exact)
    with pytest.raises(InputError, match=r"scores range \[0\.0, 1\.001\]: row 0, column 2 "
                       r"holds 1\.001; expected a score in \[0, 1\]"):  # fmt: skip
        MatrixOracle(np.where(exact == 0.5, 1.001, exact))
    with pytest.raises(InputError, match=r"scores range \[-2e-09, 1\.0\]: row 0, column 2 "
                       r"holds -2e-09; expected"):  # fmt: skip
        MatrixOracle(np.where(exact == 0.5, -2e-9, exact))


def test_a_score_just_past_the_rounding_is_refused_naming_its_cell_and_value():
    """1 + 2e-9 (float64) is past the rounding a bound keeps: refused, as the readers of
    files refuse it, by a message that shows it as it is (MatrixOracle said "scores range
    [0, 1]; expected values in [0, 1]", :g rounding it to the bound) and names its cell and
    the rounding kept; with missing='drop-items' the column is the one given."""
    from latentbench.irt import fit_cbmm
    from latentbench.select.oracles import MatrixOracle

    exact = np.array([[1.0, 0.0, 0.5, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, np.nan, 0.0, 1.0]])
    bad = exact.copy()
    bad[1, 3] = 1 + 2e-9
    said = r"row 1, column 3 holds 1\.000000002; expected a score in \[0, 1\] .*1e-09"
    with pytest.raises(InputError, match=r"scores range \[0\.0, 1\.000000002\]: " + said):
        MatrixOracle(bad, missing="drop-items")
    with pytest.raises(InputError, match=r"found \[0\.0, 1\.000000002\]: " + said):
        fit_cbmm(bad, max_iter=5)


def test_fit_cbmm_of_an_array_keeps_a_rounding_as_the_bound():
    # fit_cbmm (and every fit given an array) refused -2.8e-17: "scores must lie in [0, 1]"
    from latentbench.irt import fit_cbmm
    from latentbench.synthetic import simulate_2pl

    scores = simulate_2pl(10, 30, random_state=1).matrix.scores.astype(np.float64)
    scores[0, 0] = np.nan
    expected = fit_cbmm(scores, max_iter=50)
    got = fit_cbmm(_rounded(scores), max_iter=50)
    assert np.array_equal(got.U, expected.U) and np.array_equal(got.b, expected.b)
    for beyond in (1.001, -2e-9, 1 + 2e-9):  # 1 + 2e-9 is no score, even where float32 is 1
        bad = scores.copy()
        bad[1, 2] = beyond
        with pytest.raises(InputError, match=r"scores must lie in \[0, 1\]"):
            fit_cbmm(bad, max_iter=50)
