"""The Python twins say what their commands print (the hostile walk of 2026-12-05)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix


def _holey(n_models: int = 8, n_items: int = 40) -> ResponseMatrix:
    rng = np.random.default_rng(0)
    Y = (rng.random((n_models, n_items)) < np.linspace(0.2, 0.8, n_models)[:, None]).astype(float)
    Y[0, :3] = np.nan  # three holes in one candidate row
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(n_models)], columns=[f"q{j:02d}" for j in range(n_items)]
    )
    return ResponseMatrix.from_wide(frame)


@pytest.mark.parametrize(
    ("missing", "said"),
    [("zero", "3 missing candidate cell(s) are scored 0"), ("drop-items", "dropped 3 of 40 items")],
)
def test_replay_warns_of_its_missing_rule_without_a_history(missing, said):
    # F1: with no_history=True, missing="zero" was never said to a Python user
    from latentbench.select import replay

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay(_holey(), no_history=True, missing=missing, budget=40, random_state=0)
    ours = [w for w in caught if issubclass(w.category, DataWarning) and said in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert ours[0].filename == __file__  # it points at the caller's line


@pytest.mark.parametrize(
    ("missing", "said", "key"),
    [
        ("drop-items", "dropped 2 of 120 items", "dropped_items"),
        ("zero", "2 missing candidate cell(s) are scored 0", "missing_cells_scored_0"),
    ],
)
def test_experiment_from_matrix_says_what_its_missing_rule_did(missing, said, key):
    # F2: the dropped items were only in params["dropped_items"]; no warning, nothing printed
    from latentbench.select import experiment_from_matrix
    from latentbench.select._experiment import split_models

    rng = np.random.default_rng(5)
    Y = (rng.random((20, 120)) < np.linspace(0.2, 0.8, 20)[:, None]).astype(np.float64)
    _, test = split_models(20, random_state=0)
    Y[test[0], [7, 40]] = np.nan
    kw = dict(pools="full", policies=["ucbe"], seeds=1, budget=100, batch_size=16)
    kw.update(init_batch=8, pool_size=10, rank=1, n_jobs=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = experiment_from_matrix(Y, missing=missing, **kw)
    ours = [w for w in caught if issubclass(w.category, DataWarning) and said in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert ours[0].filename == __file__
    assert res.params[key] == 2


def test_experiment_command_prints_the_dropped_items(tmp_path):
    # F2: the help says "(printed)", but nothing was
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    rng = np.random.default_rng(5)
    Y = (rng.random((20, 60)) < np.linspace(0.2, 0.8, 20)[:, None]).astype(np.float64)
    Y[:-1, 7] = np.nan  # 19 models miss q07: a candidate cell whatever the split
    frame = pd.DataFrame(Y, index=[f"m{i:02d}" for i in range(20)],
                         columns=[f"q{j:02d}" for j in range(60)])  # fmt: skip
    frame.rename_axis("model").to_csv(tmp_path / "holes.csv")
    args = ["experiment", str(tmp_path / "holes.csv"), "--policies", "ucbe", "--seeds", "1"]
    args += ["--budget", "60", "--jobs", "1", "--pools", "full", "--pool-size", "10"]
    args += ["--rank", "1", "--missing", "drop-items", "--out", str(tmp_path / "x")]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert "--missing drop-items: dropped 1 of 60 items" in text
    # kept in summary.json, and said by the experiment's report too (it was not)
    page = tmp_path / "report.html"
    shown = CliRunner().invoke(app, ["report", str(tmp_path / "x"), "--out", str(page), "-q"])
    assert shown.exit_code == 0, shown.output
    assert "--missing drop-items: 1 item(s) with a missing candidate cell were dropped" in " ".join(
        page.read_text().split()
    )


@pytest.fixture(scope="module")
def cal():
    from latentbench.select._estimate_calibration import from_matrix

    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=12), rng.normal(size=40)
    Y = (rng.random((12, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(12)], columns=[f"q{j}" for j in range(40)]
    )
    return from_matrix(ResponseMatrix.from_wide(frame), rank=1)


def _answers(cal) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"item": list(cal.item_ids), "score": (rng.random(40) < 0.6) * 1.0})


def test_the_same_unnamed_answers_get_one_name_and_one_estimate_in_any_container(cal):
    # F5: a DataFrame was named 'new', a dict or an array 'model': different draws, scores
    from latentbench.select import estimate

    table = _answers(cal)
    forms = {
        "frame": table,
        "dict": dict(zip(table["item"], table["score"], strict=True)),
        "array": table["score"].to_numpy(),
        "series": pd.Series(table["score"].to_numpy(), index=table["item"]),
    }
    got = {k: estimate(cal, v, budget=15, seed=2, cache=False) for k, v in forms.items()}
    assert {r.model for r in got.values()} == {"model"}
    assert len({r.score for r in got.values()}) == 1, {k: r.score for k, r in got.items()}


def test_a_table_in_memory_is_not_said_to_be_named_after_a_file(cal):
    # F5: "named after the file 'new'" for a DataFrame, which has no file
    from latentbench.select import read_responses

    with pytest.warns(DataWarning, match="no 'model' column") as caught:
        read_responses(_answers(cal).assign(name="gpt"))
    text = str(caught[0].message)
    assert "file" not in text.split("(", 1)[1] and "named 'model'" in text


@pytest.mark.parametrize("budget", [0, -1])
def test_a_budget_of_no_items_is_refused(cal, budget):
    # F13: budget=0 reported a score and a rank from 0 items, without a word
    from latentbench.exceptions import InputError
    from latentbench.select import compare, estimate

    answers = _answers(cal)
    with pytest.raises(InputError, match=rf"budget={budget}; expected a positive integer"):
        estimate(cal, answers, budget=budget, cache=False)
    with pytest.raises(InputError, match=rf"budget={budget}; expected a positive integer"):
        compare(cal, answers, answers.assign(score=1 - answers["score"]), budget=budget)


def test_estimate_command_refuses_budget_0(tmp_path, cal):
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    wide = pd.DataFrame(cal_rows(), columns=[f"q{j}" for j in range(40)])
    wide.index = [f"m{i}" for i in range(12)]
    wide.rename_axis("model").to_csv(tmp_path / "calib.csv")
    _answers(cal).to_csv(tmp_path / "new.csv", index=False)
    args = ["estimate", str(tmp_path / "calib.csv"), str(tmp_path / "new.csv"), "--budget", "0"]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 2, outcome.output
    assert "--budget 0; expected a positive integer" in " ".join(outcome.output.split())


def cal_rows() -> np.ndarray:
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=12), rng.normal(size=40)
    return (rng.random((12, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)


def test_wrong_types_are_refused_by_name_not_by_a_type_error(cal):
    # F11: raw TypeErrors from os.fspath and from comparing a str with 0
    from latentbench.exceptions import InputError
    from latentbench.select import estimate, replay

    answers = _answers(cal)
    with pytest.raises(InputError, match=r"responses: a DataFrame; expected a ResponseMatrix.*"
                       r"ResponseMatrix\.from_long"):  # fmt: skip
        replay(answers.assign(model="a"), no_history=True)
    with pytest.raises(InputError, match=r"history: a list; expected a ResponseMatrix"):
        replay(_holey(), history=["h.csv"])
    for delta in ("0.05", True, None):
        with pytest.raises(InputError, match=r"delta=.*; expected a value in \(0, 1\)"):
            estimate(cal, answers, budget=10, delta=delta, cache=False)
    with pytest.raises(InputError, match=r"delta='0.05'"):
        estimate(cal, answers, items=answers, delta="0.05", cache=False)
    with pytest.raises(InputError, match=r"items=\['q0', 'q1'\]: a list; expected a fixed design"):
        estimate(cal, answers, items=["q0", "q1"], cache=False)


def test_a_wide_pivot_with_the_models_as_index_is_read_as_from_wide_reads_it(cal):
    # F12: estimate refused the pivot that the data README recipe produces
    from latentbench.select import estimate, read_responses

    long = _answers(cal).assign(model="newbie")
    wide = long.pivot(index="model", columns="item", values="score")
    got = read_responses(wide)
    assert list(got) == ["newbie"]
    assert got["newbie"].sort_index().equals(long.set_index("item")["score"].sort_index())
    from_wide = estimate(cal, wide, budget=15, seed=2, cache=False)
    from_long = estimate(cal, long, budget=15, seed=2, cache=False)
    assert from_wide.model == "newbie" and from_wide.score == from_long.score
    # a plain long table (default index) is still read as long
    assert list(read_responses(long)) == ["newbie"]
    # review: an item-indexed table of scores is a long table without its item column (the
    # error says so), and a row taken by position is not a model named after its position
    with pytest.raises(InputError, match="reset_index"):
        read_responses(long.set_index("item")[["score"]])
    rows = pd.concat([wide.reset_index(drop=True)] * 6, ignore_index=True)
    with pytest.raises(InputError, match="rename_axis"):
        read_responses(rows.iloc[[5]])  # (before this fix: a model named '5')
    # integer model ids in a named index, or an index named as a model column may be
    for name in ("model", "model_id", "name"):
        named = rows.iloc[[5]].rename_axis(name)
        assert list(read_responses(named)) == ["5"]


def test_demo_result_says_its_headline_and_has_a_short_repr():
    # F9: the headline lines were built in the CLI only; repr(DemoResult) was 73 KB
    from types import SimpleNamespace

    from latentbench._demo import DemoResult

    run = SimpleNamespace(best_id="llm-7", stopped="confidence", evaluations_total=12_345)
    stats = dict(pulse=20_000.0, pulse_lo=15_000.0, pulse_hi=25_000.0, vs_full=80.0)
    stats.update(vs_full_lo=75.0, vs_full_hi=85.0, vs_reference=30.0)
    stats.update(vs_reference_lo=10.0, vs_reference_hi=50.0)
    result = DemoResult(
        matrix=SimpleNamespace(n_models=200, n_items=1000), planted={}, fit=SimpleNamespace(rank=1),
        uninformative=["a"] * 20, selection=run, candidates=[f"c{i}" for i in range(50)],
        truth=np.zeros(50), true_best="llm-7", n_history=50, batch_size=40, init_batch=10,
        full=100_000, delta=0.05, experiment=None, stats=stats, ucbe=28_000.0, seeds=20,
        estimate=SimpleNamespace(summary=lambda: "score 0.612 [0.597, 0.627] after 100 of "
                                 "1,000 items; would rank 7th (5th–9th) of 51\nmore"),
        estimate_truth=0.5, paths={}, seconds=21.0,
    )  # type: ignore[arg-type]  # fmt: skip
    lines = result.summary().splitlines()
    assert len(lines) == 5  # the selection's four, then the estimate's first line
    assert lines[4] == "score 0.612 [0.597, 0.627] after 100 of 1,000 items; would rank 7th " \
        "(5th–9th) of 51"  # fmt: skip
    assert lines[0].startswith("A second leaderboard") and "costs 100,000 cells" in lines[0]
    assert lines[1].startswith("PULSE certified llm-7 as the best candidate (the true best) "
                               "after 12,345 evaluations: 12.3% of a full evaluation")  # fmt: skip
    assert lines[2].startswith("PULSE finds the best candidate in 95% of 20 runs after 20,000")
    assert lines[3].endswith("PULSE needs fewer evaluations than UCB-E on this leaderboard).")
    text = repr(result)
    assert len(text) < 300 and "PULSE certified 'llm-7' (the true best)" in text
    # 12 runs (the demo's count until 2026-12-07): 95% of them first right where all are, the
    # slowest run's budget, whose bootstrap interval undercovers; it printed one, and a verdict
    few = dataclasses.replace(result, seeds=12).summary().splitlines()
    assert "90% interval" not in few[2] + few[3] and "fewer" not in few[3]
    # below 20 runs the line says what it measured: every run right (h213)
    assert few[2].startswith("PULSE finds the best candidate in all 12 runs after 20,000 ")
    assert "no interval: with 12 runs" in few[2] and "seeds=20 or more give one" in few[2]
    assert few[3].endswith("give one; no demonstrated difference).")


def _estimate_compare_and_set(seed: int, n_items: int, budget: int):
    """An EstimateResult of 'x', a CompareResult of 'a' vs 'b' and an EstimateSet of both,
    against 10 random calibration models on ``n_items`` items."""
    from latentbench.select import compare, estimate, estimate_many

    rng = np.random.default_rng(seed)
    Y = (rng.random((12, n_items)) < 0.6).astype(float)
    items = [f"q{j}" for j in range(n_items)]
    m = ResponseMatrix(Y[:10], [f"m{i}" for i in range(10)], items)
    a, b = (pd.Series(Y[k], index=m.item_ids) for k in (10, 11))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = estimate(m, a.rename("x"), budget=budget)
        pair = compare(m, {"a": a, "b": b}, budget=budget)
        many = estimate_many(m, {"a": a, "b": b}, budget=budget)
    return one, pair, many


def test_estimate_and_compare_results_have_short_reprs():
    """Their dataclass reprs listed every item drawn, answer and probability (1.3 KB after 20
    items, tens of KB after a few hundred): one line now, whatever the budget."""
    one, pair, many = _estimate_compare_and_set(seed=0, n_items=600, budget=300)
    for result, head in ((one, "EstimateResult('x': score "), (pair, "CompareResult('a' vs 'b'"),
                         (many, "EstimateSet(2 model(s) estimated")):  # fmt: skip
        text = repr(result)
        assert text.startswith(head) and len(text) < 300 and "\n" not in text, text
    assert one.summary() in repr(one)


def test_estimate_and_compare_results_hash_consistently_with_equality():
    """hash() raised TypeError: unhashable type: 'dict' (frozen dataclasses, compared by
    value, with an ``options`` dict): equal results now hash alike and key a dict."""
    import dataclasses

    one, pair, many = _estimate_compare_and_set(seed=1, n_items=200, budget=40)
    for result in (one, pair, many):
        twin = dataclasses.replace(result)  # a copy: equal, not the same object
        assert twin == result and twin is not result
        assert hash(twin) == hash(result)
        assert {result: 1}[twin] == 1 and len({result, twin}) == 1
    other = dataclasses.replace(one, score=one.score + 0.01)
    assert other != one and len({one, other}) == 2


@pytest.mark.parametrize("name", ["tiny", "compare", "estimate_many", "CompareResult"])
def test_a_command_twin_asked_of_the_top_package_names_where_it_lives(name):
    """``latentbench.tiny`` / ``latentbench.compare`` (the commands' twins, in
    latentbench.select beside ``estimate``, which the top package exports) raised a bare
    AttributeError (hostile walk, 2026-12-06)."""
    import latentbench

    with pytest.raises(AttributeError, match=rf"it is latentbench\.select\.{name}\b"):
        getattr(latentbench, name)
    with pytest.raises(AttributeError, match=r"no attribute 'no_such_name'$"):
        latentbench.no_such_name  # noqa: B018


@pytest.mark.parametrize("twin", ["experiment_from_matrix", "estimate_experiment"])
def test_experiment_twins_refuse_a_dataframe_naming_how_to_make_a_matrix(twin):
    # a DataFrame (what a notebook holds) raised AttributeError: 'DataFrame' object has no
    # attribute 'model_ids' / 'n_models' from deep inside; replay already said what to do
    from latentbench import select

    frame = _holey().to_wide()
    with pytest.raises(InputError) as info:
        getattr(select, twin)(frame, seeds=1)
    message = str(info.value)
    assert message.startswith("matrix: a DataFrame; expected a ResponseMatrix")
    assert "ResponseMatrix.from_wide(frame)" in message


def test_calibration_experiment_and_record_reprs_are_short(tmp_path):
    # their dataclass reprs printed every item id (Calibration: 20 KB at 300 items, 400 KB
    # on MMLU-Pro), every curve (ExperimentResult) or every arm (SelectionRecord: 7 KB)
    from latentbench.select import (
        SelectionRecord,
        experiment_from_matrix,
        load_calibration,
        replay,
    )

    matrix = _holey(12, 300).subset(models=[f"m{i}" for i in range(1, 12)])
    cal = load_calibration(matrix, cache=False)
    assert repr(cal).startswith("Calibration(300 items, rank 1, 11 models; fit 'matrix' of ")
    assert len(repr(cal)) < 200
    run = experiment_from_matrix(matrix, seeds=2, budget=200, policies=["pulse", "naive"])
    text = repr(run)
    assert text.startswith("ExperimentResult(1 pool(s) x 2 policies (pulse, naive), 2 seed(s)")
    assert len(text) < 200
    result = replay(matrix, no_history=True, budget=200)
    result.to_json(tmp_path / "selection.json")
    record = SelectionRecord.read_json(tmp_path / "selection.json")
    text = repr(record)
    assert text.startswith(f"SelectionRecord(policy 'pulse', 11 arms: best {result.best_id!r}")
    assert f"{result.evaluations_total:,} evaluations" in text and len(text) < 300


def test_results_compare_with_eq_instead_of_raising():
    # r1 == r2 (and so `r in results`, results.index(r)) raised numpy's "The truth value of
    # an array ... is ambiguous" for EstimateResult, EstimateSet and SelectionResult
    from latentbench.select import EstimateResult, estimate, estimate_many, replay

    matrix = _holey(12, 80)
    cal, new = matrix.subset(models=matrix.model_ids[2:]), matrix.subset(models=["m0", "m1"])
    one, again = (estimate(cal, new, model="m1", budget=20) for _ in range(2))
    assert one == again and one in [again]  # the same answers, draws and interval
    assert EstimateResult.from_dict(one.to_dict()) == one  # the record round-trips
    assert one != estimate(cal, new, model="m1", budget=20, seed=1)
    sets = [estimate_many(cal, new, budget=20) for _ in range(2)]
    assert sets[0] == sets[1]
    runs = [replay(matrix.subset(models=matrix.model_ids[1:]), no_history=True, budget=60)]
    assert runs[0] == runs[0] and runs.index(runs[0]) == 0
    assert (runs[0] == replay(_holey(), no_history=True, budget=60, missing="zero")) is False


def test_experiment_from_matrix_reports_progress_as_every_other_twin():
    # its callback was called progress(done, total), every other long operation's
    # progress(phase, done, total) (docs/usability.md): one callback for all raised TypeError
    from latentbench.select import experiment_from_matrix

    calls = []
    experiment_from_matrix(
        _holey(12, 60), seeds=2, budget=60, policies=["pulse", "naive"], missing="zero",
        progress=lambda phase, done=None, total=None: calls.append((phase, done, total)),
    )  # fmt: skip
    assert calls and calls[-1] == ("runs", 4, 4)
    assert {phase for phase, _, _ in calls} == {"runs"}


def test_run_selection_names_a_policy_name_or_a_bare_array_it_was_given():
    # run_selection(oracle, "ucbe") raised AttributeError: 'str' object has no attribute
    # 'needs_proxy'; run_selection(scores, policy): 'numpy.ndarray' ... 'n_models'
    from latentbench.select import UCBE, MatrixOracle, run_selection

    scores = np.nan_to_num(_holey().scores)
    with pytest.raises(InputError, match=r"policy='ucbe': a name; expected a policy object.*"
                                         r"make_policy\('ucbe'\)"):  # fmt: skip
        run_selection(MatrixOracle(scores), "ucbe", budget=50)
    with pytest.raises(InputError, match=r"oracle: a ndarray; expected an oracle.*"
                                         r"MatrixOracle\(scores\)"):  # fmt: skip
        run_selection(scores, UCBE(), budget=50)
    with pytest.raises(InputError, match=r"policy: a dict; expected a policy object"):
        run_selection(MatrixOracle(scores), {"name": "ucbe"}, budget=50)


def test_saving_to_a_place_that_cannot_hold_it_is_an_input_error(tmp_path):
    # EstimateResult / EstimateSet / CompareResult.save and ExperimentResult.write onto a
    # file raised FileExistsError; SelectionResult.to_json onto a folder IsADirectoryError,
    # into a missing folder FileNotFoundError
    from latentbench.select import compare, estimate, estimate_many, experiment_from_matrix

    taken = tmp_path / "taken.txt"
    taken.write_text("")
    matrix = _holey(12, 60)
    cal, two = matrix.subset(models=matrix.model_ids[2:]), matrix.subset(models=["m0", "m1"])
    writers = {
        "estimate": estimate(cal, two, model="m1", budget=10).save,
        "estimate_many": estimate_many(cal, two, budget=10).save,
        "compare": compare(cal, two, budget=10).save,
        "experiment": experiment_from_matrix(
            matrix, seeds=1, budget=30, policies=["naive"], missing="zero"
        ).write,
    }
    for name, write in writers.items():
        with pytest.raises(InputError, match=r"^out=.*taken\.txt is a file; expected a dir"):
            write(taken)
        assert taken.read_text() == "", name
    from latentbench.select import replay

    run = replay(matrix.subset(models=matrix.model_ids[1:]), no_history=True, budget=20)
    with pytest.raises(InputError, match=r"^path=.* is a directory; expected the file"):
        run.to_json(tmp_path)
    with pytest.raises(InputError, match=r"^path=.*x\.json: the folder .*nowhere does not exist"):
        run.to_json(tmp_path / "nowhere" / "x.json")


def test_seeds_that_are_not_seeds_are_named():
    # run_selection(random_state="x") and experiment_from_matrix(seeds=[0, "a"]) raised
    # numpy's "SeedSequence expects int or sequence of ints" (the latter from a worker)
    from latentbench.select import UCBE, MatrixOracle, experiment_from_matrix, run_selection

    matrix = _holey(12, 60)
    oracle = MatrixOracle(np.nan_to_num(matrix.scores))
    with pytest.raises(InputError, match=r"random_state='x'; expected an integer >= 0"):
        run_selection(oracle, UCBE(), budget=20, random_state="x")
    with pytest.raises(InputError, match=r"seeds='a'; expected an integer >= 0"):
        experiment_from_matrix(matrix, seeds=[0, "a"], budget=20, missing="zero")
    gen = run_selection(oracle, UCBE(), budget=20, random_state=np.random.default_rng(3))
    assert gen.evaluations_post_init == 20  # a numpy Generator still seeds the run


def test_the_proxy_and_the_matrix_oracle_take_a_response_matrix():
    # LowRankProxy().fit(matrix) and MatrixOracle(matrix) raised numpy's "setting an array
    # element with a sequence" (LeaderboardSimulator.fit takes a ResponseMatrix already)
    from latentbench.select import LowRankProxy, MatrixOracle

    matrix = _holey(12, 60).subset(models=[f"m{i}" for i in range(1, 12)])
    oracle = MatrixOracle(matrix)
    assert (oracle.n_models, oracle.n_items) == (11, 60)
    assert np.array_equal(oracle.evaluate(0, np.arange(5)), matrix.scores[0, :5])
    by_matrix = LowRankProxy(rank=2, random_state=0).fit(matrix)
    by_array = LowRankProxy(rank=2, random_state=0).fit(np.asarray(matrix.scores))
    assert np.array_equal(by_matrix.V_, by_array.V_)


def test_two_models_of_one_call_with_the_same_answers_are_said(cal):
    """The same results ingested under two names got two different estimates and nothing
    said (each model is estimated alone, from its own draws). The later one now carries a
    note naming the first, warned too; a model whose answers differ in one cell does not."""
    from latentbench.select import estimate_many

    rng = np.random.default_rng(3)
    a = pd.Series((rng.random(40) < 0.6) * 1.0, index=list(cal.item_ids))
    b = a.copy()
    b.iloc[7] = 1.0 - b.iloc[7]
    answers = {"run-a": a, "run-b": b, "run-a-again": a.iloc[::-1].copy()}  # order aside
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = estimate_many(cal, answers, budget=15, seed=2, cache=False)
    said = [r for r in got if any("gave the same answers as model" in w for w in r.warnings)]
    assert [r.model for r in said] == ["run-a-again"]
    assert "as model 'run-a' of this call on every item (40 answered" in said[0].warnings[-1]
    assert sum("gave the same answers as model 'run-a'" in str(w.message) for w in caught) == 1


def test_a_model_with_unusable_answers_fails_alone_beside_the_copy_check(cal):
    """The check for two models with the same answers ran over every model before any was
    estimated, and stopped the whole call with a bare ValueError on one model's non-numeric
    answers (not collected as that model's InputError) and with a TypeError on item ids of
    mixed types (its sort). Each such model is now left to estimate, which says what it
    says for it alone."""
    from latentbench.select import estimate_many

    ids = list(cal.item_ids)
    good = pd.Series((np.random.default_rng(3).random(40) < 0.6) * 1.0, index=ids)
    words = pd.Series(["yes"] * 40, index=ids, dtype=object)
    got = estimate_many(cal, {"good": good, "words": words}, budget=5, cache=False,
                        errors="collect")  # fmt: skip
    assert [r.model for r in got] == ["good"]
    assert "value 'yes' is not numeric" in got.failures["words"]
    with pytest.raises(InputError, match="is not numeric"):
        estimate_many(cal, {"good": good, "words": words}, budget=5, cache=False)
    mixed = good.copy()
    mixed.index = pd.Index([*ids[:39], 7], dtype=object)  # an int id among the strings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = estimate_many(cal, {"good": good, "mixed": mixed, "again": mixed.copy()},
                            budget=5, cache=False)  # fmt: skip
    assert [r.model for r in got] == ["good", "mixed", "again"]
    assert any("same answers as model 'mixed'" in w for w in got[2].warnings)
