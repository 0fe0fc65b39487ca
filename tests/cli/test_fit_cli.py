"""The ``latentbench fit`` and ``demo`` commands, on the shared real matrices."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from typer.testing import CliRunner

from latentbench.cli import _register, app

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
DATASETS = ["mmlu_pro", "bfcl_v2", "alpacaeval2_weighted", "alpacaeval1_gpt4"]

_register()
runner = CliRunner()


@pytest.mark.parametrize("name", DATASETS)
def test_fit_real_matrix(shared_fit, name):
    path = SHARED / f"{name}.parquet"
    out, _ = shared_fit(name)  # `latentbench fit PATH --out OUT`, shared with the render test
    abilities = pd.read_csv(out / "abilities.csv")
    items = pd.read_csv(out / "items.csv")
    info = json.loads((out / "fit.json").read_text())
    long = pd.read_parquet(path)
    assert len(abilities) == long["model"].nunique()
    assert len(items) == long["item"].nunique()
    assert set(abilities["model"]) == set(long["model"])
    assert not abilities.isna().any().any()
    assert not items.drop(columns="location").isna().any().any()
    # location -b/a is NaN exactly where a = 0
    assert (items["location"].isna() == (items["discrimination"] == 0)).all()
    assert np.isfinite(abilities.select_dtypes("number").to_numpy(float)).all()
    assert spearmanr(abilities["theta"], abilities["accuracy"])[0] > 0.9
    assert info["n_models"] == len(abilities) and info["iterations"] >= 1
    assert {"loss", "converged", "seconds", "options"} <= set(info)


def test_fit_prints_tables(shared_fit):
    _, output = shared_fit("bfcl_v2")  # what `latentbench fit` printed
    assert "Top 10 models by ability" in output
    assert "Most and least discriminating items" in output


def test_fit_bad_file_gives_clear_error(tmp_path):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"model": ["a", "b"], "item": ["x", "x"], "score": [1.0, 7.0]}).to_csv(
        bad, index=False
    )
    outcome = runner.invoke(app, ["fit", str(bad), "--out", str(tmp_path / "o")])
    assert outcome.exit_code == 2
    assert "bad.csv" in outcome.output and "outside [0, 1]" in outcome.output


@pytest.mark.slow
def test_demo_runs_and_finds_planted_items(shared_demo, monkeypatch):
    # `latentbench demo --out DEMO_OUT`, run once for the session (conftest.shared_demo), and
    # the DemoResult the command printed: the command is a shell over latentbench.demo, whose
    # result is checked against the lines below (was: a second demo, ~5 s of CPU)
    folder, given, output, twin = shared_demo
    monkeypatch.chdir(folder)  # DEMO_OUT, as given, is relative to it
    out = Path(given)  # a folder with a space: the printed command still pastes
    assert (out / "fit" / "abilities.csv").exists()
    assert "20 of the 20 planted random-answer items" in output
    assert "compiles a few numba kernels" in " ".join(output.split())
    saved = re.search(
        r"PULSE finds the best candidate in 95% of 20 runs after ([\d,]+) evaluations \(90% "
        r"interval ([\d,]+) to ([\d,]+)\): it saves ([\d.]+)% of a full evaluation \(([\d.]+)% "
        r"to ([\d.]+)%\)",
        " ".join(output.split()),
    )
    assert saved, output
    used, lo, hi = (int(saved[k].replace(",", "")) for k in (1, 2, 3))
    assert lo <= used <= hi <= 100_000
    assert float(saved[4]) == pytest.approx(100 * (1 - used / 100_000), abs=0.06)
    certified = re.search(
        r"PULSE certified (llm-\d+) as the best candidate \(the true best\) after ([\d,]+) "
        r"evaluations: ([\d.]+)% of a full evaluation",
        " ".join(output.split()),
    )
    assert certified, output
    cells = int(certified[2].replace(",", ""))
    assert float(certified[3]) == pytest.approx(100 * cells / 100_000, abs=0.06)
    assert cells < 50_000
    versus = re.search(
        r"UCB-E \(no proxy, same start\) needs [\d,]+: PULSE saves ([+-][\d.]+)% against it "
        r"\(90% interval ([+-][\d.]+)% to ([+-][\d.]+)%; ([^)]*)\)",
        " ".join(output.split()),
    )
    assert versus, output
    low, high = float(versus[2]), float(versus[3])
    expected = "fewer" if low > 0 else "more" if high < 0 else "no demonstrated difference"
    assert expected in versus[4]
    html = (out / "report.html").read_text()
    assert 'id="selection-summary"' in html and 'id="abilities"' in html
    assert "of a full evaluation (100 models x 1,000 items" in html
    # the Python twin computes what the command printed: the result it returned to the command
    assert twin.selection.evaluations_total == cells and twin.selection.best_id == certified[1]
    assert twin.seeds == 20 and twin.paths["report"] == out / "report.html"
    assert twin.paths["report"].is_file()
    assert set(twin.planted["zero_discrimination"]) <= set(twin.uninformative)
    # the headline the command printed is the twin's summary
    head = twin.summary().splitlines()
    assert len(head) == 5 and head[1] in " ".join(output.split())
    # and the estimate's line the command prints after it
    assert head[4] == twin.estimate.summary().splitlines()[0] and head[4] in output
    assert len(repr(twin)) < 400
    # a new model's estimate from 100 items, its truth, and the command that repeats it
    est = twin.estimate
    assert est.n_evaluated == 100 and est.n_items == 1_000 and est.model in twin.candidates
    assert est.n_ranked == twin.n_history + 1  # the history calibrates; the new model joins
    assert est.summary().splitlines()[0] in output
    inside = est.lower <= twin.estimate_truth <= est.upper
    said = "inside" if inside else "outside"
    assert f"Its true score (all 1,000 items): {twin.estimate_truth:.3f}, {said}" in (
        " ".join(output.split())
    )
    again = runner.invoke(
        app, ["estimate", str(twin.paths["calibration"]), str(twin.paths["new_model"])]
    )
    # the same line, then what its bracket is (the command's legend)
    line, legend = again.output.strip().splitlines()
    assert again.exit_code == 0 and line == est.summary().splitlines()[0]
    assert legend.startswith("[ ]: the 95% interval of the full-benchmark score")
    import shlex

    printed = next(x for x in output.splitlines() if x.startswith("The same with"))
    pasted = shlex.split(printed.split(": ", 1)[1])
    assert pasted[:2] == ["latentbench", "estimate"], printed  # the folder as given: ./...
    assert [Path(p) for p in pasted[2:4]] == [out / "calibration.parquet",
                                              out / "new_model.parquet"], printed  # fmt: skip
    again = runner.invoke(app, pasted[1:])
    assert again.exit_code == 0 and again.output.splitlines()[0] == line, again.output
    # the certified selection's command, on the candidates' file the demo wrote, is its run
    # (was: no file of the candidates, and the next block's `select replay RESPONSES.parquet`
    # on responses.parquet is refused: that leaderboard has missing cells)
    from latentbench.select import replay

    printed = next(x for x in output.splitlines() if x.startswith("The same run with"))
    pasted = shlex.split(printed.split(": ", 1)[1])
    assert pasted[:3] == ["latentbench", "select", "replay"], printed
    assert [Path(p) for p in (pasted[3], pasted[5])] == [out / "candidates.parquet",
                                                         out / "calibration.parquet"]  # fmt: skip
    assert pasted[4] == "--history" and pasted[6:] == ["--seed", "1"], printed
    rerun = replay(pasted[3], history=pasted[5], random_state=int(pasted[7]))
    assert rerun.best_id == certified[1] and rerun.evaluations_total == cells
    assert rerun.stopped == "confidence"
    # the README's demo block shows these lines: the same words, numbers aside
    printed_lines = _masked(output)
    for shown in _readme_block("$ latentbench demo"):
        # the README's demo folder is the default's; this demo's is DEMO_OUT, as given
        here = re.sub(r"latentbench-demo/(\S+)", lambda m: shlex.quote(f"{given}/{m[1]}"), shown)
        assert _masked(here) in printed_lines, f"README line not printed by the demo: {shown}"


def _masked(text: str) -> str:
    """Text with whitespace collapsed and every number (digits, commas, point, sign) as #."""
    return re.sub(r"[+-]?\d[\d,]*(?:\.\d+)?", "#", " ".join(text.split()))


def _readme_block(command: str) -> list[str]:
    """The output lines the README shows under ``command`` (``...`` elisions left out)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split(command, 1)[1].split("```", 1)[0]
    return [x for x in block.splitlines()[1:] if x.strip() and x.strip() != "..."]


def test_demo_twin_refuses_too_few_seeds(tmp_path):
    import latentbench

    with pytest.raises(latentbench.InputError, match=r"seeds=1; expected an integer >= 2"):
        latentbench.demo(tmp_path, seeds=1)
    assert not any(tmp_path.iterdir())  # refused before any work


def test_demo_refuses_an_out_that_is_a_file_before_the_work(tmp_path):
    # the fit ran first and the error then named the Python argument of IRTResult.save
    # ("directory=OUT/fit: OUT is a file"), in the command's output too
    import latentbench

    taken = tmp_path / "taken.txt"
    taken.write_text("")
    with pytest.raises(latentbench.InputError, match=r"^out=.*taken\.txt is a file; expected"):
        latentbench.demo(taken)
    _register()
    said = CliRunner().invoke(app, ["demo", "--out", str(taken)])
    assert said.exit_code != 0
    assert "--out " in said.output and "taken.txt is a file" in " ".join(said.output.split())
    assert "cBMM fit" not in said.output and taken.read_text() == ""


def test_demo_says_it_replaces_an_earlier_demos_files(tmp_path, monkeypatch):
    """``latentbench demo`` rewrote ./latentbench-demo on each run without a word, while
    docs/usability.md says outputs are never overwritten silently: a run into a folder that
    holds an earlier demo's files says it replaces them, before the work; a first run (or a
    folder without them) prints no such line. (The demo itself is stubbed: the line comes
    before it runs.)"""
    import latentbench
    from latentbench.exceptions import InputError

    def stub(*args, **kwargs):
        raise InputError("stub: the demo's work")

    monkeypatch.setattr(latentbench, "demo", stub)
    out = tmp_path / "demo"
    first = runner.invoke(app, ["demo", "--out", str(out)])
    assert "stub: the demo's work" in first.output and "Replacing" not in first.output
    out.mkdir()
    (out / "notes.txt").write_text("mine")  # not the demo's: nothing of it is replaced
    assert "Replacing" not in runner.invoke(app, ["demo", "--out", str(out)]).output
    (out / "fit").mkdir()
    (out / "report.html").write_text("")
    again = runner.invoke(app, ["demo", "--out", str(out)])
    assert f"Replacing the earlier demo's files in {out}: fit/, report.html." in " ".join(
        again.output.split()
    )


def test_demo_with_fewer_runs_than_95_percent_needs_says_all_of_them():
    """``latentbench demo --seeds 3`` printed "finds the best candidate in 95% of 3 runs": with
    fewer than 20 runs the budget is where all of them are right, and the line says so; the
    default's 20 runs keep their line."""
    from types import SimpleNamespace

    from latentbench._demo import DemoResult

    run = SimpleNamespace(best_id="llm-001", stopped="confidence", evaluations_total=5_048)
    stats = {"pulse": 2_464.0, "pulse_lo": 1_840.0, "pulse_hi": 2_832.0, "vs_full": 97.5,
             "vs_full_lo": 97.2, "vs_full_hi": 98.2, "vs_reference": -0.7,
             "vs_reference_lo": -29.2, "vs_reference_hi": 26.3}  # fmt: skip
    estimate = SimpleNamespace(summary=lambda: "score 0.627")
    fields = dict(matrix=None, planted={}, fit=None, uninformative=[], selection=run,
                  candidates=["llm-001"] * 100, truth=None, true_best="llm-001", n_history=100,
                  batch_size=16, init_batch=8, full=100_000, delta=0.05, experiment=None,
                  stats=stats, ucbe=2_448.0, estimate=estimate, estimate_truth=0.5, paths={},
                  seconds=1.0)  # fmt: skip
    few = DemoResult(**fields, seeds=3).summary().splitlines()[2]
    assert few.startswith("PULSE finds the best candidate in all 3 runs after 2,464 evaluations")
    assert "95%" not in few.split(":")[0]
    many = DemoResult(**fields, seeds=20).summary().splitlines()[2]
    assert many == (
        "PULSE finds the best candidate in 95% of 20 runs after 2,464 evaluations (90% interval "
        "1,840 to 2,832): it saves 97.5% of a full evaluation (97.2% to 98.2%)."
    )


def test_demo_saving_is_paired_over_seeds():
    from latentbench._demo import saving

    grid = np.arange(0, 1000, 100)
    rng = np.random.default_rng(0)
    # each seed becomes correct at some budget and stays correct
    late = rng.integers(3, 9, size=40)
    curves = grid[None, :] >= grid[late][:, None]
    same = saving(curves, curves, grid, init=50, full=10_000)
    assert same["vs_reference"] == 0 and same["vs_reference_lo"] == same["vs_reference_hi"] == 0
    assert same["pulse_lo"] <= same["pulse"] <= same["pulse_hi"]
    assert same["vs_full"] == pytest.approx(100 * (1 - same["pulse"] / 10_000))
    earlier = grid[None, :] >= grid[np.maximum(late - 2, 0)][:, None]
    better = saving(earlier, curves, grid, init=50)
    assert better["vs_reference_lo"] > 0 and better["pulse"] < same["pulse"]
    assert np.isnan(better.get("vs_full", np.nan))


def test_demo_saving_resamples_the_seeds_as_the_copy_did_bit_for_bit():
    # the bootstrap's mean curves came from a (2001, S, G) copy of the curves (320 MB at the
    # demo's 20 seeds x 501 budgets, both policies); each resample's seed counts times the
    # 0/1 curves give the same means, bit for bit, and curves other than 0/1 keep the copy
    from latentbench._demo import _resampled_means

    rng = np.random.default_rng(3)
    for seeds, budgets in ((1, 1), (3, 7), (20, 501), (37, 60)):
        rows = np.vstack([np.arange(seeds), rng.integers(0, seeds, size=(300, seeds))])
        steps = np.arange(budgets)[None] >= rng.integers(0, budgets + 2, size=seeds)[:, None]
        for curves in (steps, rng.random((seeds, budgets)) < 0.7, rng.random((seeds, budgets))):
            copied = np.asarray(curves, float)[rows].mean(axis=1)
            means = _resampled_means(curves, rows)
            assert means.dtype == copied.dtype and np.array_equal(means, copied)


def test_fit_holdout_reports_against_the_additive_model(tmp_path):
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(40, 120, a_log_sd=0.6, random_state=0)
    path = tmp_path / "responses.csv"
    data.matrix.to_long().to_csv(path, index=False)
    out = tmp_path / "fit"
    outcome = runner.invoke(app, ["fit", str(path), "--out", str(out), "--holdout", "0.1"])
    assert outcome.exit_code == 0, outcome.output
    assert "Held-out cells (10% of the observed)" in outcome.output
    assert "additive (c_i + b_j)" in outcome.output
    table = pd.read_csv(out / "heldout.csv")
    assert set(table["fit"]) == {"model", "additive"}
    assert table["n_cells"].iloc[0] == round(0.1 * 40 * 120)
    joint = runner.invoke(app, ["fit", str(path), "--out", str(tmp_path / "j"), "--joint-ml", "-q"])
    assert joint.exit_code == 0, joint.output
    info = json.loads((tmp_path / "j" / "fit.json").read_text())
    assert info["options"]["prior"] is None and "prior_selection" not in info


def _small_long(tmp_path: Path) -> Path:
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(30, 120, missing=0.1, random_state=3)
    path = tmp_path / "small.parquet"
    data.matrix.to_long().to_parquet(path)
    return path


def test_fit_device_bad_value_is_one_clear_error(tmp_path):
    outcome = runner.invoke(app, ["fit", str(_small_long(tmp_path)), "--device", "nonsense", "-q"])
    assert outcome.exit_code == 2
    assert "--device nonsense; expected a PyTorch device: cpu, cuda, mps" in outcome.output
    assert "Traceback" not in outcome.output


def test_fit_refuses_a_malformed_device_before_reading_data_or_pytorch(tmp_path, monkeypatch):
    """`fit FILE --device nonsense` read the file, printed its summary, imported PyTorch and
    only then said PyTorch's refusal, spelled in Python (``device='nonsense'``). A device that
    cannot be one costs nothing now: refused before the (here missing) file is read, PyTorch
    blocked, in the command line's words; a well-formed one is still left to PyTorch."""
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of torch would raise
    missing, out = tmp_path / "no-such.parquet", tmp_path / "fit"
    for value in ("nonsense", "cuda:01", ""):
        outcome = runner.invoke(app, ["fit", str(missing), "--device", value, "--out", str(out)])
        said = " ".join(outcome.output.split())
        assert outcome.exit_code == 2, said
        expected = f"error: --device {value or repr('')}; expected a PyTorch device: cpu, cuda"
        assert said.startswith(expected), said
        assert "alone or with an index (cuda:1)" in said and "None" not in said, said
        assert "no-such" not in said and "device=" not in said, said
    outcome = runner.invoke(
        app, ["fit", str(_small_long(tmp_path)), "--device", "cuda", "--out", str(out), "-q"]
    )
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "error: --device cuda needs PyTorch" in said, said


def test_fit_device_cpu_tensors_give_the_default_fit(tmp_path):
    pytest.importorskip("torch", reason="PyTorch (extra 'torch') is not installed")
    path = _small_long(tmp_path)
    tables = {}
    for name, extra in (("default", []), ("torch", ["--device", "cpu"])):
        outcome = runner.invoke(app, ["fit", str(path), "--out", str(tmp_path / name), *extra])
        assert outcome.exit_code == 0, outcome.output
        tables[name] = pd.read_csv(tmp_path / name / "abilities.csv").set_index("model")
    info = json.loads((tmp_path / "torch" / "fit.json").read_text())
    assert info["options"]["device"] == "cpu"
    default, torch_fit = tables["default"], tables["torch"].loc[tables["default"].index]
    # both stop at tol 1e-6: the parameters agree to the stopping rule's bound
    # 10 sqrt(tol) (1 + max |theta|), not to machine precision
    bound = 10 * np.sqrt(1e-6) * (1 + default["theta"].abs().max())
    difference = (torch_fit["theta"] - default["theta"]).abs().max()
    assert 0 <= difference <= bound
    np.testing.assert_allclose(torch_fit["lower"], default["lower"], atol=bound)


def test_fit_refuses_options_it_would_ignore(tmp_path):
    """A responses file with --store, store options without one, and a responses file's
    column names with a store were ignored without a word."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    table = tmp_path / "r.csv"
    table.write_text("model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n")
    store = tmp_path / "s.duckdb"
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "table", str(table), "--store", str(store)]).exit_code == 0
    cases = [
        ([str(table), "--store", str(store), "--benchmark", "r"], "not both"),
        ([str(table), "--benchmark", "r"], "--benchmark applies to a store"),
        ([str(table), "--split", "valid"], "--split applies to a store"),
        (["--store", str(store), "--benchmark", "r", "--item-col", "q"], "--item-col names a"),
    ]
    for args, said in cases:
        outcome = runner.invoke(app, ["fit", *args, "--out", str(tmp_path / "fit")])
        assert outcome.exit_code == 2 and said in " ".join(outcome.output.split()), outcome.output
    assert not (tmp_path / "fit").exists()


def _store_of_benchmark_b(tmp_path):
    """A store holding benchmark ``b``: 12 models x 30 items of random 0/1 scores."""
    from latentbench.io.store import Store

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        [(f"m{i}", f"q{j}", float(rng.random() < 0.5)) for i in range(12) for j in range(30)],
        columns=["model", "item", "score"],
    )
    table, store = tmp_path / "t.csv", tmp_path / "s.duckdb"
    frame.to_csv(table, index=False)
    with Store(store) as db:
        db.ingest_files("table", [table], benchmark="b")
    return store


def test_fit_from_a_store_another_process_reads(tmp_path, store_held, monkeypatch):
    """`fit --store` reads the store, fits, writes the fit directory, then records the fit in
    the store: another process reading the store at that moment (an `ls`, a report) made
    that last step end in a traceback, after the files were written. Now one warning says the
    fit was not recorded, the tables print and the command succeeds."""
    from latentbench.io.store import Store

    store = _store_of_benchmark_b(tmp_path)
    # the record step gives up after this wait, not the default 5 s (the test idled 5 s)
    monkeypatch.setenv("LATENTBENCH_STORE_WAIT", "0.2")
    with store_held(store, read_only=True):
        out = tmp_path / "fit"
        result = runner.invoke(
            app, ["fit", "--store", str(store), "--benchmark", "b", "--out", str(out)]
        )
    assert result.exit_code == 0, result.output
    assert result.exception is None
    text = " ".join(result.output.split())
    assert f"the fit was not recorded in {store}" in text and "in use by another process" in text
    # where the files are, and that the store is as it was (the warning said 'its files are
    # written', not where)
    assert f"the fit's files are written in {out}, but" in text, text
    assert "the store was not updated (" in text, text
    assert (out / "abilities.csv").exists() and "Top 10 models by ability" in text
    with Store(store, read_only=True) as db:
        assert len(db.fits()) == 0


def test_fit_store_whose_fits_table_cannot_take_the_fit(tmp_path):
    """A store whose ``fits`` table was edited (a column dropped) took the fit's files, then
    ended in a traceback (DuckDB's BinderException from ``record_fit``) after they were
    written. Now ``record_fit`` refuses naming the store, the table and DuckDB's reason, and
    ``fit --store`` says it in one warning: the files written (where), the store not
    updated, why; exit 0."""
    from latentbench.exceptions import InputError
    from latentbench.io.store import Store

    store = _store_of_benchmark_b(tmp_path)
    with Store(store) as db:
        db.connection.execute("ALTER TABLE fits DROP COLUMN package_version")
        with pytest.raises(InputError, match=r"s\.duckdb: cannot write the fit to its fits "
                           r"table \(BinderException: .*expected the fits table"):  # fmt: skip
            db.record_fit("b", summary={"n": 1})
    out = tmp_path / "fit"
    result = runner.invoke(
        app, ["fit", "--store", str(store), "--benchmark", "b", "--out", str(out), "-q"]
    )
    assert result.exit_code == 0, result.output
    assert result.exception is None
    text = " ".join(result.output.split())
    said = f"the fit's files are written in {out}, but the fit was not recorded in {store}: "
    assert said + "the store was not updated" in text, text
    assert "cannot write the fit to its fits table (BinderException" in text, text
    assert (out / "abilities.csv").exists() and (out / "fit.json").exists()


def test_fit_records_the_items_the_reader_left_out_and_keeps_an_empty_model(tmp_path):
    """The reader's empty item column (wide) or all-missing item (long) was said on stderr
    only: fit.json's layout counted the columns after it (39 for a 40-column file) and the
    report never said it; a long file's model with no score was left out where a wide file's
    was kept. Both layouts now give the same fit: the model listed with no data, the item
    recorded in fit.json (``input.dropped_items``, the file's count in ``layout``) and said
    in the report."""
    rng = np.random.default_rng(5)
    models = [f"m{i:02d}" for i in range(12)]
    items = [f"q{j:02d}" for j in range(40)]
    scores = (rng.random((12, 40)) < 0.55).astype(float)
    scores[5] = np.nan
    scores[:, 7] = np.nan
    wide = pd.DataFrame(scores, columns=items).assign(model=models)[["model", *items]]
    wide.to_csv(tmp_path / "wide.csv", index=False)
    wide.melt(id_vars="model", var_name="item", value_name="score").to_csv(
        tmp_path / "long.csv", index=False
    )
    for layout in ("wide", "long"):
        out = tmp_path / f"fit_{layout}"
        outcome = runner.invoke(app, ["fit", str(tmp_path / f"{layout}.csv"), "-q", "--out",
                                      str(out)])  # fmt: skip
        assert outcome.exit_code == 0, outcome.output
        recorded = json.loads((out / "fit.json").read_text())["input"]
        assert recorded["dropped_items"] == ["q07"], recorded
        assert "with no observed score left out ('q07')" in recorded["layout"]
        if layout == "wide":
            assert "40 item columns" in recorded["layout"], recorded["layout"]
        abilities = pd.read_csv(out / "abilities.csv").set_index("model")
        assert sorted(abilities.index) == models
        assert abilities.loc["m05", "no_data"] and pd.isna(abilities.loc["m05", "rank_theta"])
        assert "q07" not in set(pd.read_csv(out / "items.csv")["item"])
        page = tmp_path / f"{layout}.html"
        report = runner.invoke(app, ["report", str(out), "--out", str(page)])
        assert report.exit_code == 0, report.output
        said = "1 item(s) with no observed score left out when the responses were read"
        assert said in " ".join(report.output.split()), report.output
        assert said in page.read_text()
    page = tmp_path / "file.html"  # a responses file reported (fitted) directly: the same
    report = runner.invoke(app, ["report", str(tmp_path / "long.csv"), "--out", str(page)])
    assert report.exit_code == 0, report.output
    assert said in " ".join(report.output.split()) and said in page.read_text()
