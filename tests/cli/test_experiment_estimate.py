"""``latentbench experiment --task estimate``: a shell over ``estimate_experiment``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.select import (
    EstimateExperiment,
    estimate_experiment,
    summarize_estimate_experiment,
)
from latentbench.select._estimate_experiment import uniform_error

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def responses(tmp_path_factory):
    """A 6 x 150 binary 2PL matrix, long format, with two missing cells."""
    rng = np.random.default_rng(8)
    ability, difficulty = np.linspace(-1.0, 1.0, 6), rng.normal(0.0, 1.0, 150)
    Y = (rng.random((6, 150)) < 1 / (1 + np.exp(difficulty - ability[:, None]))).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(6)])
    frame.columns = [f"q{j:03d}" for j in range(150)]
    long = frame.rename_axis("model").reset_index().melt(id_vars="model", var_name="item")
    long = long.rename(columns={"value": "score"}).iloc[2:]  # m0, m1 miss q000 (not a zero)
    path = tmp_path_factory.mktemp("exp") / "responses.parquet"
    long.to_parquet(path)
    return path


ARGS = ["--budgets", "10,40", "--seeds", "2", "--models", "m0,m3,m5", "--precision", "0.15"]


@pytest.fixture(scope="module")
def estimate_run(responses, tmp_path_factory):
    """``latentbench experiment RESPONSES --task estimate ARGS --out OUT``, once for the tests
    that only read its folder and output (was run twice, the same command): ``(out, output)``.
    """
    out = tmp_path_factory.mktemp("estimate-run") / "exp"
    outcome = runner.invoke(
        app, ["experiment", str(responses), "--task", "estimate", *ARGS, "--out", str(out)]
    )
    assert outcome.exit_code == 0, outcome.output
    return out, outcome.output


def test_estimate_task_writes_what_the_function_returns(responses, estimate_run):
    out, output = estimate_run
    assert "mean |error|" in output and "coverage" in output
    assert "items to ±0.15" in output
    result = estimate_experiment(
        ResponseMatrix.read(responses),
        budgets=(10, 40),
        seeds=2,
        models=["m0", "m3", "m5"],
        precision=0.15,
    )
    table = result.runs
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 3 * 2 * 2 and set(runs["budget"]) == {10, 40}
    np.testing.assert_allclose(runs["score"], table["score"])
    assert runs.loc[runs.model == "m0", "n_items"].eq(149).all()  # missing is not zero
    data = json.loads((out / "summary.json").read_text())
    expected = summarize_estimate_experiment(table)
    assert data["by_budget"] == expected["by_budget"]  # JSON keeps floats exactly
    assert data["precision"] == expected["precision"]
    assert data["params"]["task"] == "estimate" and data["params"]["delta"] == 0.05
    summary = pd.read_csv(out / "summary.csv")
    assert summary["budget"].tolist() == [10, 40]
    # the error shrinks with items, as it must if the estimates use the answers
    assert summary["mae"].iloc[1] < summary["mae"].iloc[0]
    # the result object: written as the CLI writes it, read back whole
    again = EstimateExperiment.read(out)
    pd.testing.assert_frame_equal(again.runs, table, check_dtype=False)
    assert again.params == {**result.params, "input": str(responses)}
    assert "random items |error|" in output and "ratio" in output
    assert f"latentbench report {out}" in " ".join(output.split())


def test_uniform_error_is_the_sample_means_expected_error():
    """Exact for 0/1 scores (every subset enumerated); for fractions the normal
    approximation, checked against simulation within its Monte Carlo error."""
    from itertools import combinations

    y = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1], dtype=float)
    for n in (1, 3, 5, 8):
        exact = np.mean([abs(y[list(c)].mean() - y.mean()) for c in combinations(range(9), n)])
        assert uniform_error(y, n) == pytest.approx(exact, rel=1e-12)
    assert uniform_error(y, 9) == 0.0 and uniform_error(y, 20) == 0.0
    rng = np.random.default_rng(3)
    frac = rng.beta(2.0, 3.0, size=2000)
    draws = np.array([abs(rng.choice(frac, 100, replace=False).mean() - frac.mean())
                      for _ in range(4000)])  # fmt: skip
    assert abs(uniform_error(frac, 100) - draws.mean()) < 4 * draws.std() / np.sqrt(4000)


def test_summary_sets_the_error_beside_random_items(responses):
    result = estimate_experiment(
        ResponseMatrix.read(responses), budgets=(10, 40), seeds=2, models=["m0", "m2", "m4"]
    )
    for row in result.summary["by_budget"]:
        part = result.runs[result.runs["budget"] == row["budget"]]
        per_model = part.groupby("model")[["uniform_error"]].first()["uniform_error"]
        assert row["uniform_mae"] == pytest.approx(per_model.mean())
        assert row["mae_ratio"] == pytest.approx(row["mae"] / row["uniform_mae"])
        assert row["mae_ratio_se"] > 0
        y = ResponseMatrix.read(responses).subset(models=["m2"]).scores[0]
        expected = uniform_error(y[np.isfinite(y)], row["budget"])
        assert part.loc[part.model == "m2", "uniform_error"].eq(expected).all()
    old = result.runs.drop(columns="uniform_error")  # a table written before the column
    assert "uniform_mae" not in summarize_estimate_experiment(old)["by_budget"][0]


def test_report_of_an_estimate_experiment(responses, estimate_run, tmp_path):
    """`latentbench report DIR` draws an estimate experiment: findings per budget against
    random items, two figures, the tables; a run that missed is listed and counted."""
    import re

    from latentbench.report import ESTIMATE_EXPERIMENT_SECTIONS, build_estimate_experiment_report

    out, _ = estimate_run
    page = tmp_path / "page.html"
    outcome = runner.invoke(app, ["report", str(out), "--out", str(page), "-q"])
    assert outcome.exit_code == 0, outcome.output
    html = page.read_text()
    assert re.findall(r'<section id="([^"]+)"', html) == list(ESTIMATE_EXPERIMENT_SECTIONS)
    assert len(re.findall(r"data:image/png;base64,", html)) == 2
    assert "After 10 items: mean |error|" in html and "as many random items" in html
    assert "missed the truth" not in html
    for extra, said in ((["--bootstrap", "50"], "--bootstrap 50: not an option"),
                        (["--responses", str(responses)], "--responses "),
                        (["--run-id", "x"], "--run-id x: not an option")):  # fmt: skip
        outcome = runner.invoke(app, ["report", str(out), *extra, "--out", str(tmp_path / "x")])
        assert outcome.exit_code == 2 and said in " ".join(outcome.output.split())
        assert "an experiment's report" in " ".join(outcome.output.split())
    result = EstimateExperiment.read(out)
    runs = result.runs.copy()
    runs.loc[0, ["lower", "upper", "covered"]] = [0.0, 0.01, False]
    missed = EstimateExperiment(runs, result.params, ("without 'm3': did not converge",))
    html = build_estimate_experiment_report(missed)
    assert "1 of 12 (run, budget) intervals missed the truth" in html
    assert "Calibration fit without &#39;m3&#39;: did not converge" in html
    assert 'data-name="estimate-missed"' in html or "estimate-missed" in html
    # what the intervals are: each budget's as `estimate --budget B`; a directory written
    # before (no params.sized_for, a precision) says its intervals were sized for that
    text = " ".join(html.split())
    assert "each budget&#39;s as &#39;estimate --budget B&#39; reports it" in text
    old = {k: v for k, v in result.params.items() if k != "sized_for"}
    text = " ".join(build_estimate_experiment_report(EstimateExperiment(runs, old, ())).split())
    assert "sized for the precision (written before 2026-12-06)" in text


def test_summary_statistics_are_the_per_model_means(responses):
    table = estimate_experiment(
        ResponseMatrix.read(responses), budgets=(10,), seeds=2, models=["m1", "m4"]
    ).runs
    row = summarize_estimate_experiment(table)["by_budget"][0]
    per_model = table.assign(a=table["error"].abs()).groupby("model")["a"].mean()
    assert row["mae"] == pytest.approx(per_model.mean())
    assert row["mae_se"] == pytest.approx(per_model.std(ddof=1) / np.sqrt(2))
    assert row["coverage"] == pytest.approx(table["covered"].mean())
    assert (row["models"], row["runs"]) == (2, 4)


def test_coverage_of_every_run_gets_an_interval_not_a_zero_se():
    # 53 held-out models, every interval covered: the SE over models is 0, the Wilson 95%
    # interval [53 / (53 + z^2), 1] says how little 53 runs can tell
    table = pd.DataFrame(
        {
            "model": [f"m{i}" for i in range(53)],
            "seed": 0,
            "budget": 100,
            "error": 0.01,
            "covered": True,
            "lower": 0.4,
            "upper": 0.6,
        }
    )
    row = summarize_estimate_experiment(table)["by_budget"][0]
    assert row["coverage"] == 1.0 and row["coverage_se"] == 0.0
    assert row["coverage_lower"] == pytest.approx(53 / (53 + 1.959963984540054**2))
    assert row["coverage_upper"] == pytest.approx(1.0)
    # a share in the middle: the interval brackets it and is narrower than +-0.5
    table.loc[table.index[:20], "covered"] = False
    row = summarize_estimate_experiment(table)["by_budget"][0]
    assert row["coverage_lower"] < row["coverage"] < row["coverage_upper"]
    assert row["coverage_upper"] - row["coverage_lower"] < 0.3


def test_options_of_the_other_task_are_refused(responses, tmp_path):
    estimate = ["experiment", str(responses), "--task", "estimate", "--budget", "500"]
    outcome = runner.invoke(app, [*estimate, "--out", str(tmp_path / "a")])
    assert outcome.exit_code == 2 and "--budget: not an option of --task estimate" in outcome.output
    select = ["experiment", str(responses), "--budgets", "10", "--out", str(tmp_path / "b")]
    outcome = runner.invoke(app, select)
    assert outcome.exit_code == 2 and "--budgets: not an option of --task select" in outcome.output
    outcome = runner.invoke(app, ["experiment", str(responses), "--task", "rank"])
    assert outcome.exit_code == 2 and "expected 'select' or 'estimate'" in outcome.output
    blocked = tmp_path / "file"
    blocked.write_text("x")
    outcome = runner.invoke(
        app, ["experiment", str(responses), "--task", "estimate", *ARGS, "--out", str(blocked)]
    )
    assert outcome.exit_code == 2 and "error" in outcome.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_calibration_warnings_are_said_once_and_recorded(responses, tmp_path, monkeypatch):
    """A held-out fit that warns (e.g. not converged) is not silenced: one line for all the
    fits, and the list in summary.json."""
    import warnings

    from latentbench.exceptions import ConvergenceWarning
    from latentbench.select import _estimate_experiment as module

    real = module.from_matrix

    def warning_fit(matrix, **kw):
        warnings.warn("stopped at max_iter=5", ConvergenceWarning, stacklevel=2)
        return real(matrix, **kw)

    monkeypatch.setattr(module, "from_matrix", warning_fit)
    out = tmp_path / "warned"
    args = ["experiment", str(responses), "--task", "estimate", "--budgets", "10"]
    outcome = runner.invoke(app, [*args, "--seeds", "1", "--models", "m1,m2", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    lines = [line for line in outcome.output.splitlines() if "calibration fits warned" in line]
    assert len(lines) == 1 and "2 of 2 calibration fits warned" in lines[0]
    assert "--max-iter 5" in lines[0] or "max_iter=5" in lines[0]
    data = json.loads((out / "summary.json").read_text())
    assert len(data["params"]["warnings"]) == 2


def test_budgets_beyond_the_items_are_said_and_precision_is_checked(responses, tmp_path):
    args = ["experiment", str(responses), "--task", "estimate", "--seeds", "1", "--models"]
    outcome = runner.invoke(app, [*args, "m0,m2", "--budgets", "10,500", "-o", str(tmp_path / "a")])
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert "budget 500: more than the items (answered) of 2 of 2 held-out models" in text
    outcome = runner.invoke(
        app, [*args, "m0", "--budgets", "10", "--precision", "0.6", "-o", str(tmp_path / "b")]
    )
    assert outcome.exit_code == 2 and "--precision 0.6; expected a half-width" in outcome.output
    with pytest.raises(InputError, match=r"precision=0.5; expected a half-width in \(0, 0.5\)"):
        estimate_experiment(ResponseMatrix.read(responses), precision=0.5, models=["m0"])


def test_an_unknown_held_out_model_names_the_file_the_models_and_a_near_name(responses):
    """``--models`` naming no model of the file: the error names the file, the model ids it
    holds and, for one differing only by case, that one (before: "models ['M1'] are not in
    the matrix", none of these)."""
    args = ["experiment", str(responses), "--task", "estimate", "--seeds", "1", "--models"]
    outcome = runner.invoke(app, [*args, "M1", "--budgets", "10"])
    assert outcome.exit_code == 2, outcome.output
    text = " ".join(outcome.output.split())
    assert "responses.parquet" in text and "'M1'" in text and "'m0', 'm1'" in text, text
    assert "did you mean 'm1'?" in text and "expected" in text, text


def test_progress_is_the_callback_every_long_call_takes(responses):
    calls = []
    estimate_experiment(
        ResponseMatrix.read(responses),
        budgets=(10,),
        seeds=1,
        models=["m0", "m1"],
        progress=lambda phase, done, total: calls.append((phase, done, total)),
    )
    assert calls == [("held-out runs", 1, 2), ("held-out runs", 2, 2)]


def test_a_stopped_experiment_keeps_the_finished_models(responses, tmp_path):
    """stop_event (Ctrl-C in the command) stops after the held-out model in flight: its
    runs equal a complete experiment's, the rest are named in params and summary.json, and
    the command writes them and exits 130 (everything was lost before)."""
    import os
    import subprocess
    import sys
    import threading

    full = estimate_experiment(responses, budgets=(10, 30), seeds=2, precision=None)
    stop = threading.Event()

    def progress(phase, done, total):
        if done == 3:  # the second model's first seed: its second seed still runs
            stop.set()

    with pytest.warns(Warning, match="stopped after 2 of 6 held-out models; not run: m2, m3"):
        part = estimate_experiment(responses, budgets=(10, 30), seeds=2, precision=None,
                                   progress=progress, stop_event=stop)  # fmt: skip
    assert part.not_run == ("m2", "m3", "m4", "m5") and full.not_run == ()
    assert sorted(set(part.runs["model"])) == ["m0", "m1"]
    pd.testing.assert_frame_equal(part.runs, full.runs[full.runs["model"].isin(["m0", "m1"])])
    part.save(tmp_path / "saved")
    assert EstimateExperiment.read(tmp_path / "saved").not_run == part.not_run
    from latentbench.report import build_estimate_experiment_report

    html = " ".join(build_estimate_experiment_report(tmp_path / "saved").split())
    assert "Interrupted: 4 held-out models were not run (m2, m3, m4, m5)" in html
    assert "covers the 2 models finished before" in html

    script = (
        "import functools, os, signal\n"
        "import latentbench.select._estimate_experiment as e\n"
        "from latentbench.cli import main\n"
        "inner, calls = e.from_matrix, []\n"
        "@functools.wraps(inner)\n"
        "def fit(*a, **k):\n"  # the real handler: SIGINT during the second model's fit
        "    calls.append(1)\n"
        "    if len(calls) == 2: os.kill(os.getpid(), signal.SIGINT)\n"
        "    return inner(*a, **k)\n"
        "e.from_matrix = fit\n"
        "main()\n"
    )
    out = tmp_path / "exp"
    args = [sys.executable, "-c", script, "experiment", str(responses), "--task", "estimate",
            "--budgets", "10,30", "--seeds", "2", "--precision", "0",
            "--out", str(out)]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=os.environ)
    assert done.returncode == 130, done.stderr
    text = " ".join(done.stderr.split())
    assert "stopping after the held-out model in flight" in text
    assert "stopped after 2 of 6 held-out models" in text and "interrupted (Ctrl-C)" in text
    saved = EstimateExperiment.read(out)
    assert sorted(set(saved.runs["model"])) == ["m0", "m1"]
    assert saved.not_run == ("m2", "m3", "m4", "m5")


def _censored_experiment() -> EstimateExperiment:
    """Three held-out models, two seeds, a 50-item cap: 'a' reaches the precision in both
    runs, 'b' in one, 'c' in none."""
    rows = []
    reached = {"a": (20.0, 30.0), "b": (np.nan, 25.0), "c": (np.nan, np.nan)}
    for model, items in reached.items():
        for seed, k in enumerate(items):
            rows.append({"model": model, "seed": seed, "budget": 10, "truth": 0.5,
                         "score": 0.5, "lower": 0.4, "upper": 0.6, "error": 0.0,
                         "covered": True, "items_to_precision": k, "n_items": 100,
                         "uniform_error": 0.05, "covered_throughout": True,
                         "contradicted": False})  # fmt: skip
    params = {"task": "estimate", "input": "x.parquet", "budgets": [10], "seeds": 2,
              "precision": 0.02, "max_items": 50, "delta": 0.05, "rank": 1}  # fmt: skip
    return EstimateExperiment(pd.DataFrame(rows), params, ())


def test_models_that_never_reach_the_precision_count(capsys):
    """The items to the precision were a median over the runs that reached it: a model that
    never did vanished from the summary, the printed line and the report. They count: how
    many models and runs did not, which, and a median over every run marked >=."""
    from latentbench.cli._select import print_estimate_experiment
    from latentbench.report import build_estimate_experiment_report
    from latentbench.report._estimate_experiment import per_model_table

    record = _censored_experiment()
    reach = record.summary["precision"]
    assert reach["runs"] == 6 and reach["reached"] == 3 and reach["median_items"] == 25
    assert reach["models"] == 3 and reach["not_reached_models"] == ["c"]
    # every run: 20, 25, 30 and three runs beyond their 50 items: the median is at least 40
    assert reach["limit"] == 50 and reach["median_all"] == 40
    assert reach["median_all_exact"] is False
    line = record.precision_text(0.02, reach)
    assert "reached in 3 of 6 runs within 50 items" in line
    assert "not reached by 1 of 3 models: c" in line and "median over all 6 runs >= 40" in line
    print_estimate_experiment(record.summary, delta=0.05, precision=0.02)
    printed = " ".join(capsys.readouterr().out.split())
    assert "not reached by 1 of 3 models: c" in printed and ">= 40" in printed
    html = " ".join(build_estimate_experiment_report(record).split())
    assert "not reached by 1 of 3 models: c" in html and "&gt;= 40" in html
    table = per_model_table(record.runs, 10, max_items=50).set_index("model")
    cells = table["items to precision (median)"]
    assert cells["a"] == "25" and cells["b"] == ">= 37.5" and cells["c"] == "not reached"
    # all runs reached: the line is the one it was
    full = record.runs.assign(items_to_precision=20.0)
    done = EstimateExperiment(full, record.params, ()).summary["precision"]
    assert done["median_all"] == 20 and done["median_all_exact"] is True
    assert record.precision_text(0.02, done).endswith("in the 6 of 6 runs that reached it")


def test_a_runs_table_without_its_limits_never_overstates_the_median():
    """Review: summarising the runs table alone (the documented DataFrame input) took each
    model's items as its limit: runs capped at 50 of 100 items printed "within 100 items ...
    >= 62.5". The runs now record their limit; a table without it bounds the median by the
    budgets the runs recorded, and gives no limit."""
    from latentbench.select import summarize_estimate_experiment

    record = _censored_experiment()
    reach = summarize_estimate_experiment(record.runs)["precision"]  # no limit column
    assert reach["limit"] is None and reach["median_all_exact"] is False
    assert reach["median_all"] == 15  # 20, 25, 30 and three runs beyond 10 (old: 62.5)
    assert "within" not in record.precision_text(0.02, reach)
    with_limits = summarize_estimate_experiment(record.runs.assign(limit=50))["precision"]
    assert with_limits["limit"] == 50 and with_limits["median_all"] == 40


def _html_tables(html: str) -> list[dict[str, list[str]]]:
    """Each table of a page as column -> the texts of its cells."""
    import re

    tables = []
    for body in re.findall(r"<table.*?</table>", html, flags=re.S):
        head, cells = body.split("<tbody>")
        heads = re.findall(r"<th[^>]*>(.*?)</th>", head, flags=re.S)
        rows = [[c for _, c in re.findall(r"<(t[dh])\b[^>]*>(.*?)</\1>", r, flags=re.S)]
                for r in re.findall(r"<tr>(.*?)</tr>", cells, flags=re.S)]  # fmt: skip
        rows = [r for r in rows if len(r) == len(heads)]
        tables.append({h: [r[j] for r in rows] for j, h in enumerate(heads)})
    return tables


def test_each_column_of_the_estimate_experiment_tables_has_one_number_format():
    """Each cell had its own format: an error of 0.0004 printed 0.0004 beside 0.034 and an
    interval of 0.000 (three decimals), a count stored as a float 25.000. A column now reads
    alike: the decimals its smallest value needs, whole counts as whole numbers."""
    import re

    from latentbench.report import build_estimate_experiment_report

    record = _censored_experiment()
    runs = record.runs.copy()
    runs["score"] = [0.005, 0.5004, 0.512, 0.5, 0.521, 0.4993]
    runs["error"] = runs["score"] - runs["truth"]
    runs.loc[[0, 1], ["lower", "upper", "covered"]] = [[0.0, 0.01, False], [0.5004, 0.9, False]]
    html = build_estimate_experiment_report(EstimateExperiment(runs, record.params, ()))
    missed = next(t for t in _html_tables(html) if "items_to_precision" in t)
    assert missed["error"] == ["-0.49500", "0.00040"]
    assert missed["upper"] == ["0.010", "0.900"]
    assert missed["items_to_precision"] == ["20", "30"]
    for table in _html_tables(html):
        for column, cells in table.items():
            decimals = {len(c.split(".")[1]) for c in cells if re.fullmatch(r"-?[\d,]+\.\d+", c)}
            assert len(decimals) <= 1, (column, cells)


def test_a_report_without_precision_says_nothing_of_items_to_it(responses, tmp_path):
    """With --precision 0 (not measured), the printed output says nothing of items to a
    precision, but the report's per-model table said "not reached" for every model."""
    from latentbench.report import build_estimate_experiment_report

    out = tmp_path / "exp"
    args = ["experiment", str(responses), "--task", "estimate", "--budgets", "10,40",
            "--seeds", "2", "--models", "m0,m3", "--precision", "0", "--out", str(out)]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert "items to" not in outcome.output
    html = build_estimate_experiment_report(out)
    (per_model,) = [t for t in _html_tables(html) if "true score" in t]
    assert "items to precision (median)" not in per_model
    assert "not reached" not in html
    # with a precision, the column is there
    record = EstimateExperiment.read(out)
    asked = EstimateExperiment(record.runs, {**record.params, "precision": 0.15}, ())
    (per_model,) = [t for t in _html_tables(build_estimate_experiment_report(asked))
                    if "true score" in t]  # fmt: skip
    assert "items to precision (median)" in per_model
