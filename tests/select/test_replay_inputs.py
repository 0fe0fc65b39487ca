"""``select.replay`` inputs that would make its figures misleading are said, not swallowed."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import replay


def _matrix(models: list[str], seed: int) -> ResponseMatrix:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=len(models)), rng.normal(size=60)
    Y = (rng.random((len(models), 60)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    return ResponseMatrix.from_wide(
        pd.DataFrame(Y, index=models, columns=[f"q{j}" for j in range(60)])
    )


def test_candidates_inside_the_history_are_said_to_leak():
    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    with pytest.warns(DataWarning, match=r"holds 4 of the 4 candidates \(e\.g\. 'a'\)"):
        run = replay(candidates, history=candidates, budget=20)
    assert run.params["history"]["candidates in the history"] == 4
    assert "proxy has seen their answers" in run.params["history"]["note"]


def test_a_separate_history_says_nothing():
    import warnings

    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    history = _matrix([f"h{i}" for i in range(6)], seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        run = replay(candidates, history=history, budget=20)
    assert "candidates in the history" not in run.params["history"]


@pytest.mark.parametrize("n_history", [2, 3])
def test_a_history_of_two_or_three_models_learns_a_rank_one_proxy(n_history):
    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    history = _matrix([f"h{i}" for i in range(n_history)], seed=1)
    run = replay(candidates, history=history, budget=20)  # rank "auto": nothing to hold out
    assert run.params["history"]["proxy rank"] == 1


def test_too_few_models_for_a_random_half_history_names_the_options():
    said = r"3 models; without a history .* leaves 1 history .* no_history=True"
    with pytest.raises(InputError, match=said):
        replay(_matrix(["a", "b", "c"], seed=0))


def test_a_random_half_history_is_a_warning_in_python():
    """Without a history, half the models silently became history in Python (the best among
    them never a candidate); it is a DataWarning now, and the note says how to avoid it."""
    with pytest.warns(DataWarning, match=r"history split: .* random half .* no_history=True"):
        run = replay(_matrix([f"m{i}" for i in range(8)], seed=0), budget=20)
    assert run.params["history"]["history models"] == 4
    assert "pass history=, history_store= or no_history=True" in run.params["history"]["note"]


def test_a_random_half_history_of_a_policy_without_a_proxy_is_said_unused():
    """`select replay FILE --policy ucbe` said the random half "learns the proxy"; UCB-E
    learns none: the half is set aside, unused, and the note and the report say so."""
    from latentbench.report import build_report

    with pytest.warns(DataWarning, match=r"history split: .* is set aside as the history, "):
        run = replay(_matrix([f"m{i}" for i in range(8)], seed=0), policy="ucbe", budget=20)
    note = run.params["history"]["note"]
    assert "which this policy does not use (it learns no proxy)" in note
    assert "learns the proxy" not in note and "pass no_history=True" in note
    page = build_report(selection=json.loads(run.to_json()))
    assert "History (set aside, not candidates; ucbe uses no proxy)" in page
    assert "learns the proxy" not in page


def test_a_given_history_of_a_policy_without_a_proxy_is_said_unused():
    """`select replay FILE --history H --policy ucbe` said "history: N models of H learn the
    proxy" (and, for candidates inside H, "the proxy has seen their answers, so the cells
    used are optimistic"), while UCB-E learns none and the report said "ucbe uses no proxy".
    The note says the history is not used, and no leak is warned of; PULSE's note is as
    before."""
    cand = _matrix([f"m{i}" for i in range(4)], seed=0)
    hist = _matrix([f"m{i}" for i in range(2, 8)], seed=1)  # m2, m3 candidates as well
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # no leak warning: nothing learns from it
        run = replay(cand, history=hist, policy="ucbe", budget=20)
    note = run.params["history"]["note"]
    assert "which this policy does not use (it learns no proxy); 4 candidates" in note, note
    assert "learn the proxy" not in note and "optimistic" not in note, note
    with pytest.warns(DataWarning, match="the proxy has seen their answers"):
        run = replay(cand, history=hist, policy="pulse", budget=20)
    assert "learn the proxy; 4 candidates" in run.params["history"]["note"]


def test_a_rank_for_a_policy_without_a_proxy_is_said_unused(tmp_path):
    """`select replay FILE --no-history --policy ucbe --rank 3` (and `experiment --policies
    ucbe,uniform --rank 3`) ran without a word, the rank of a proxy none of them learns;
    the history-free note said "the proxy is learned from their own revealed cells". Now a
    warning names the rank and the policy, in the flags' words on the command line; the run
    is the same, and a policy with a proxy takes the rank silently."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select import experiment_from_matrix

    cand = _matrix([f"m{i}" for i in range(4)], seed=0)
    plain = replay(cand, no_history=True, policy="ucbe", budget=20)
    said = r"^rank=3 not used: policy 'ucbe' learns no proxy, and rank is the proxy's"
    with pytest.warns(DataWarning, match=said):
        ranked = replay(cand, no_history=True, policy="ucbe", budget=20, rank=3)
    assert ranked.estimates.tolist() == plain.estimates.tolist()
    note = ranked.params["history"]["note"]
    assert note.endswith("all 4 models are candidates; this policy learns no proxy"), note
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        replay(cand, no_history=True, policy="pulse", budget=20, rank=1)
        replay(cand, no_history=True, policy="uniform", budget=20, rank="auto")
    with pytest.warns(DataWarning, match="policies 'ucbe,uniform' learn no proxy"):
        experiment_from_matrix(_matrix([f"m{i}" for i in range(8)], seed=2), pools="full",
                               policies=["ucbe", "uniform"], seeds=1, budget=20, rank=2,
                               pool_size=4, n_jobs=1)  # fmt: skip
    _register()
    path = tmp_path / "cand.csv"
    cand.to_long().to_csv(path, index=False)
    args = ["select", "replay", str(path), "--no-history", "--policy", "uniform", "--rank", "2",
            "--budget", "20", "-q", "--out", str(tmp_path / "run")]  # fmt: skip
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert (
        "warning: --rank 2 not used: --policy 'uniform' learns no proxy, and --rank is the "
        "proxy's; drop --rank" in text
    ), text


@pytest.mark.parametrize(("low", "high", "n"), [(0.985, 0.998, 6), (0.0, 0.02, 10)])
def test_a_saturated_or_very_hard_benchmark_runs_without_a_history(low, high, n):
    # the first batch's scores all equal: the online proxy's rank-2 start ran ARPACK on an
    # all-zero residual and the run died with "ArpackError: Starting vector is zero"
    rng = np.random.default_rng(0)
    Y = (rng.random((n, 1000)) < np.linspace(low, high, n)[:, None]).astype(float)
    matrix = ResponseMatrix(Y, [f"m{i}" for i in range(n)], [f"i{j}" for j in range(1000)])
    for seed in range(6):
        result = replay(matrix, no_history=True, random_state=seed)
        assert result.evaluations_total <= Y.size


def test_a_rank_two_start_on_equal_scores_keeps_the_extra_factor_at_zero():
    from latentbench.irt._cbmm import initial_parameters

    U, _, b = initial_parameters(np.ones((4, 30), dtype=np.float32), 2, 1.0)
    assert np.all(U[:, 1] == 0) and np.isfinite(b).all()


def test_reported_estimates_are_scores_inside_their_intervals():
    # with a small budget PULSE's doubly robust means left [0, 1]: on AlpacaEval 2, 10 of 29
    # candidates were negative, e.g. -0.012 beside its interval [0.0006, 0.916]
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "shared" / "data" / "alpacaeval2_weighted.parquet"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = replay(path, budget=64, missing="drop-items")
    est = result.estimates
    assert np.all((est >= 0) & (est <= 1))
    assert np.all((result.lower <= est) & (est <= result.upper))


@pytest.mark.parametrize("spec", ["pulse:delta=0.3", "pulse:alpha=0.3"])
def test_a_delta_in_the_policy_spec_is_refused_not_overridden(spec, tmp_path):
    # replay passed delta= over the spec's value: the run certified at 0.05, silently
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    rng = np.random.default_rng(0)
    Y = (rng.random((8, 40)) < np.linspace(0.3, 0.7, 8)[:, None]).astype(float)
    matrix = ResponseMatrix(Y, [f"m{i}" for i in range(8)], [f"q{j}" for j in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InputError, match=r"is set by the delta= argument"):
            replay(matrix, policy=spec, no_history=True)
    path = tmp_path / "m.csv"
    pd.DataFrame(Y, index=matrix.model_ids, columns=matrix.item_ids).rename_axis("model").to_csv(
        path
    )
    _register()
    out = CliRunner().invoke(app, ["select", "replay", str(path), "--no-history", "--policy", spec])
    assert out.exit_code == 2 and "is set by --delta" in " ".join(out.output.split())


def test_a_rank_above_what_the_history_can_hold_is_refused_naming_the_bound(tmp_path):
    # rank 1000 on a 51 x 400 history fitted a rank-1000 proxy (24 s instead of 0.1 s) and
    # recorded "proxy rank: 1000"; the live run's [proxy] rank was already bounded this way
    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    history = _matrix([f"h{i}" for i in range(6)], seed=1)
    with pytest.raises(InputError, match=r"rank=7; expected an integer in \[1, 6\] .*the history"):
        replay(candidates, history=history, rank=7, budget=20)
    assert (
        replay(candidates, history=history, rank=6, budget=20).params["history"]["proxy rank"] == 6
    )
    with pytest.raises(InputError, match=r"rank=5; expected an integer in \[1, 4\] .*history-free"):
        replay(candidates, no_history=True, rank=5, budget=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the history split
        with pytest.raises(InputError, match=r"rank=5; .*\[1, 4\] .*random half"):
            replay(_matrix([f"m{i}" for i in range(8)], seed=0), rank=5, budget=20)


def test_a_spec_without_intervals_is_the_documented_ci_none():
    # "pulse:ci=none" was parsed to None and refused as "ci=None; expected one of (...,
    # 'none')"; without a budget replay then added LUCB sampling, refused as "bonus='ci' needs
    # intervals", a bonus the user never set
    from latentbench.select import parse_policy

    assert parse_policy("pulse:ci=none")[2] == {"ci": "none"}
    assert parse_policy("naive:refit_every=none")[2] == {"refit_every": None}  # never refit
    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    history = _matrix([f"h{i}" for i in range(6)], seed=1)
    spent = replay(candidates, history=history, policy="pulse:ci=none", budget=20)
    assert spent.lower is None and spent.params["stop"] == "budget"
    certified = replay(candidates, history=history, policy="pulse:ci=none")
    assert certified.params["certificate"] == "betting on revealed cells"
    assert certified.certified_after is not None or certified.evaluations_total == 4 * 60


def test_a_missing_cell_names_the_file_and_a_history_on_other_items_the_way_out(tmp_path):
    # the replay's message named no file ("120 candidate cells are missing ..."), where the
    # experiment's named it; a history lacking the items gave no way to run at all
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    matrix = _matrix(["a", "b", "c", "d"], seed=0)
    frame = pd.DataFrame(matrix.scores.copy(), index=matrix.model_ids, columns=matrix.item_ids)
    frame.iloc[1, 7] = np.nan
    path = tmp_path / "holes.csv"
    frame.rename_axis("model").to_csv(path)
    other = _matrix([f"h{i}" for i in range(6)], seed=1)
    elsewhere = tmp_path / "other.csv"
    pd.DataFrame(other.scores, index=other.model_ids, columns=[f"z{j}" for j in range(60)]).to_csv(
        elsewhere
    )
    said = r"holes\.csv: 1 candidate cell is missing \(first: model 'b', item 'q7'\)"
    with pytest.raises(InputError, match=said):
        replay(path, history=other)
    with pytest.raises(InputError, match=r"lacks 60 items .*pass no_history=True to learn"):
        replay(matrix, history=elsewhere)
    _register()
    runner = CliRunner()
    out = runner.invoke(app, ["select", "replay", str(path), "--history", str(elsewhere)])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "lacks 60 items" in text and "pass --no-history to" in text
    out = runner.invoke(app, ["select", "replay", str(path), "--no-history"])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "holes.csv: 1 candidate cell is missing" in text


@pytest.mark.parametrize(
    ("rule", "said"),
    [("drop-items", "dropped 1 of 60 items"), ("zero", "1 missing candidate cell(s) are scored 0")],
)
def test_quiet_still_says_that_the_missing_rule_changed_the_target(rule, said, tmp_path):
    # the rule's note is printed with the table; --quiet (no table) dropped it, and the run
    # said "cells used: ... of 236" (drop-items) with nothing on why the target changed
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    matrix = _matrix(["a", "b", "c", "d"], seed=0)
    frame = pd.DataFrame(matrix.scores.copy(), index=matrix.model_ids, columns=matrix.item_ids)
    frame.iloc[1, 7] = np.nan
    path = tmp_path / "holes.csv"
    frame.rename_axis("model").to_csv(path)
    _register()
    for quiet in (["-q"], []):
        args = ["select", "replay", str(path), "--no-history", "--missing", rule, "--budget", "20"]
        out = CliRunner().invoke(app, [*args, *quiet, "--out", str(tmp_path / f"o{len(quiet)}")])
        text = " ".join(out.output.split())
        assert out.exit_code == 0 and text.count(said) == 1, text


def test_a_history_without_signal_is_named_in_its_warning(tmp_path):
    # a history whose models all score 0 warned "every item discrimination is ~0: the fit is
    # an intercept-only model", naming no file and speaking of an IRT fit, three times
    from latentbench.exceptions import IdentifiabilityWarning

    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    flat = pd.DataFrame(0.0, index=[f"h{i}" for i in range(6)], columns=candidates.item_ids)
    path = tmp_path / "flat.csv"
    flat.rename_axis("model").to_csv(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay(candidates, history=path, budget=20)
    said = [str(w.message) for w in caught if issubclass(w.category, IdentifiabilityWarning)]
    assert len(said) == 1 and said[0].startswith("the history (")
    assert "flat.csv): every item discrimination is ~0" in said[0]
    assert "estimates and intervals stay valid" in said[0]


def test_a_transposed_file_is_named_as_such(tmp_path):
    # a wide export with items as rows was "lacks 3 items of the responses, e.g. 'a'": a model
    # id called an item, with no word on why
    candidates = _matrix(["a", "b", "c", "d"], seed=0)
    history = _matrix([f"h{i}" for i in range(6)], seed=1)
    for name, matrix in (("cand", candidates), ("hist", history)):
        frame = pd.DataFrame(matrix.scores.copy(), index=matrix.model_ids, columns=matrix.item_ids)
        frame.T.rename_axis("model").to_csv(tmp_path / f"{name}_t.csv")
    with pytest.raises(InputError, match=r"the responses file's rows are item ids: is it trans"):
        replay(tmp_path / "cand_t.csv", history=history)
    with pytest.raises(InputError, match=r"the history file's rows are item ids: is it trans"):
        replay(candidates, history=tmp_path / "hist_t.csv")


def test_a_stores_missing_cell_is_not_told_to_edit_a_file(tmp_path):
    """A store benchmark with a missing candidate cell: the way out names no file (it said
    "drop incomplete models from the file" of a store)."""
    from latentbench.io import Store

    matrix = _matrix(["a", "b", "c", "d", "e", "f"], seed=0)
    rows = [
        {"model": m, "item": i, "score": float(matrix.scores[r, c])}
        for r, m in enumerate(matrix.model_ids)
        for c, i in enumerate(matrix.item_ids)
        if (r, c) != (1, 7)
    ]
    path = tmp_path / "long.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    from latentbench.io.formats import read_results

    frame, report = read_results("table", [path], benchmark="b")
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(frame, report)
        stored = store.matrix("b")
    with pytest.raises(InputError, match=r"cell is missing .*drop the incomplete models$"):
        replay(stored, no_history=True)


def test_the_live_summary_line_groups_thousands():
    """``select live``'s closing line said "1845 new evaluations" next to "1,845"."""
    from types import SimpleNamespace

    from latentbench.cli._select_live import live_summary

    run = SimpleNamespace(run_id="r1", status="done", n_paid=1845, n_replayed=0, paid_total=12040)
    assert live_summary(run) == (
        "run r1: done; 1,845 new evaluations, 0 from the store, 12,040 stored in all"
    )


def test_an_initial_batch_given_twice_is_refused(tmp_path):
    """`select replay F --init-batch 10 --policy 'ucbe:init_batch=4'` ran with 4 cells per
    model and said nothing (the spec won; --help did not say so); `experiment --init-batch 10
    --policies 'ucbe:init_batch=4'` alike. Two different values are refused, naming both; the
    same value twice, or either alone, runs. An experiment's spec that overrides the shared
    start for its own policy (another policy uses it) is the documented override and runs."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select import experiment_from_matrix, run_experiment

    cand = _matrix([f"m{i}" for i in range(4)], seed=0)
    said = (
        r"^init_batch=10 and policy='ucbe:init_batch=4' both set the initial batch \(10 and 4 "
        r"cells per model\), and the spec's won; expected one of them: drop init_batch= or the "
        r"spec's init_batch$"
    )
    with pytest.raises(InputError, match=said):
        replay(cand, no_history=True, policy="ucbe:init_batch=4", init_batch=10, budget=20)
    same = replay(cand, no_history=True, policy="ucbe:init_batch=4", init_batch=4, budget=20)
    spec = replay(cand, no_history=True, policy="ucbe:init_batch=4", budget=20)
    flag = replay(cand, no_history=True, policy="ucbe", init_batch=4, budget=20)
    assert same.params["init_batch"] == spec.params["init_batch"] == 4
    assert same.estimates.tolist() == spec.estimates.tolist() == flag.estimates.tolist()
    eight = _matrix([f"m{i}" for i in range(8)], seed=2)
    with pytest.raises(InputError, match=r"^init_batch=10 and policies='ucbe:init_batch=4' "):
        experiment_from_matrix(eight, pools="full", policies=["ucbe:init_batch=4"], seeds=1,
                               budget=20, init_batch=10, pool_size=4, n_jobs=1)  # fmt: skip
    said = (
        r"^init_batch=10 and policies='ucbe:init_batch=4,uniform:init_batch=8' both set the "
        r"initial batch \(10 and 4/8 cells per model\), and the specs' won; .* drop "
        r"init_batch= or the specs' init_batch$"
    )
    with pytest.raises(InputError, match=said):
        run_experiment(eight.scores, {"all": np.arange(8)},
                       ["ucbe:init_batch=4", "uniform:init_batch=8"], seeds=1, budget=20,
                       init_batch=10, n_jobs=1)  # fmt: skip
    # a spec's own start beside the shared one (uniform starts with 10), or beside the default
    # schedule's (no init_batch given), runs
    for shared in (10, None):
        experiment_from_matrix(eight, pools="full", policies=["ucbe:init_batch=4", "uniform"],
                               seeds=1, budget=20, init_batch=shared, pool_size=4,
                               n_jobs=1)  # fmt: skip
    _register()
    path = tmp_path / "cand.csv"
    cand.to_long().to_csv(path, index=False)
    for command in (["select", "replay", str(path), "--no-history", "--policy"],
                    ["experiment", str(path), "--seeds", "1", "--pool-size", "2",
                     "--policies"]):  # fmt: skip
        args = [*command, "ucbe:init_batch=4", "--init-batch", "10", "--budget", "20", "-q",
                "--out", str(tmp_path / "run")]  # fmt: skip
        outcome = CliRunner().invoke(app, args)
        text = " ".join(outcome.output.split())
        assert outcome.exit_code == 2, text
        flag = command[-1]
        assert (
            f"error: --init-batch 10 and {flag} 'ucbe:init_batch=4' both set the initial batch "
            "(10 and 4 cells per model), and the spec's won; expected one of them: drop "
            "--init-batch or the spec's init_batch" in text
        ), text
