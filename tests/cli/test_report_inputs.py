"""``latentbench report FIT_DIR`` and the responses file recorded in fit.json."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import DataWarning
from latentbench.io import ResponseMatrix, file_sha256
from latentbench.irt import TwoPL

_register()
runner = CliRunner()


def test_a_recorded_responses_file_changed_since_the_fit_is_not_used_silently(tmp_path):
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=8), rng.normal(size=24)
    Y = (rng.random((8, 24)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(8)], columns=[f"q{j}" for j in range(24)])
    data = tmp_path / "responses.csv"
    frame.rename_axis("model").reset_index().to_csv(data, index=False)
    fit = tmp_path / "fit"  # as `latentbench fit` records its input
    fitted = TwoPL().fit(ResponseMatrix.from_wide(frame))
    with pytest.warns(DataWarning, match="saved without the fitted matrix"):  # no intervals
        dataclasses.replace(fitted, matrix=None).save(
            fit, info={"input": {"path": str(data), "sha256": file_sha256(data)}}
        )
    # the same ids, other scores: the report would mix the fit with data it was not fitted on
    (1 - frame).rename_axis("model").reset_index().to_csv(data, index=False)
    outcome = runner.invoke(app, ["report", str(fit), "--out", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert f"{data} (recorded in fit.json) has changed since the fit" in text
    assert "standard errors and item flags were not computed" in text


def test_a_store_fit_records_its_benchmark_and_the_report_reads_it_while_unchanged(tmp_path):
    rng = np.random.default_rng(1)
    theta, b = rng.normal(size=8), rng.normal(size=24)
    Y = (rng.random((8, 24)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    cells = [(f"m{i}", f"q{j}", Y[i, j]) for i in range(8) for j in range(24)]
    table = tmp_path / "long.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_csv(table, index=False)
    store, fit = tmp_path / "s.duckdb", tmp_path / "fit"
    ingest = ["ingest", "table", str(table), "--store", str(store), "--benchmark", "b"]
    assert runner.invoke(app, ingest).exit_code == 0
    args = ["fit", "--store", str(store), "--benchmark", "b", "--out", str(fit), "-q"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    recorded = json.loads((fit / "fit.json").read_text())["input"]
    assert recorded["store"] == str(store.resolve()) and recorded["benchmark"] == "b"
    outcome = runner.invoke(app, ["report", str(fit), "--out", str(tmp_path / "r.html")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0 and "of store" in text and "(recorded in fit.json)" in text
    assert "not computed" not in text
    # a model added to the benchmark since the fit: not used, and said
    pd.DataFrame([("new", "q0", 1.0)], columns=["model", "item", "score"]).to_csv(
        table, index=False
    )
    assert runner.invoke(app, ingest).exit_code == 0
    outcome = runner.invoke(app, ["report", str(fit), "--out", str(tmp_path / "r2.html")])
    text = " ".join(outcome.output.split())
    assert "has changed since the fit; not used" in text and "not computed" in text


def test_a_fit_saved_from_python_on_a_store_matrix_reports_as_the_cli_fit(tmp_path):
    """The Python twin of `fit --store` (Store.matrix, TwoPL().fit, result.save) records its
    input, so its report has the standard errors and item flags (finding f4)."""
    import re

    from latentbench.io.store import Store
    from latentbench.report import report_from

    rng = np.random.default_rng(1)
    theta, b = rng.normal(size=10), rng.normal(size=30)
    Y = (rng.random((10, 30)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    cells = [(f"m{i}", f"q{j}", Y[i, j]) for i in range(10) for j in range(30)]
    table = tmp_path / "long.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_csv(table, index=False)
    store = tmp_path / "s.duckdb"
    ingest = ["ingest", "table", str(table), "--store", str(store), "--benchmark", "b"]
    assert runner.invoke(app, ingest).exit_code == 0
    cli_fit, py_fit = tmp_path / "cli_fit", tmp_path / "py_fit"
    args = ["fit", "--store", str(store), "--benchmark", "b", "--out", str(cli_fit), "-q"]
    assert runner.invoke(app, args).exit_code == 0
    with Store(store, read_only=True) as db:
        matrix = db.matrix("b")
    TwoPL().fit(matrix).save(py_fit, matrix)
    recorded = {d: json.loads((d / "fit.json").read_text())["input"] for d in (cli_fit, py_fit)}
    for entry in recorded.values():
        entry.pop("layout")  # the store as given (CLI) or resolved (Python)
    assert recorded[py_fit] == recorded[cli_fit]
    assert (
        recorded[py_fit]["store"] == str(store.resolve()) and recorded[py_fit]["benchmark"] == "b"
    )
    reports = {d: report_from(d, tmp_path / f"{d.name}.html") for d in (cli_fit, py_fit)}
    assert reports[py_fit].notes == reports[cli_fit].notes
    assert any("(recorded in fit.json)" in note for note in reports[py_fit].notes)

    def headings(html: str) -> list[str]:
        return re.findall(r"<h[23][^>]*>(.*?)</h[23]>", html)

    assert headings(reports[py_fit].html) == headings(reports[cli_fit].html)
    assert len(headings(reports[py_fit].html)) > 3


def test_a_report_without_the_responses_shows_the_abilities_fit_saved(tmp_path):
    # the report showed the fit's own estimate (theta_fit) labelled theta, in another order
    # than abilities.csv, whose theta and interval it left unused
    import re

    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=10), rng.normal(size=40)
    Y = (rng.random((10, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(10)], columns=[f"q{j}" for j in range(40)]
    )
    data, fit = tmp_path / "wide.csv", tmp_path / "fit"
    frame.rename_axis("model").reset_index().to_csv(data, index=False)
    assert runner.invoke(app, ["fit", str(data), "--out", str(fit), "-q"]).exit_code == 0
    data.rename(tmp_path / "moved.csv")
    outcome = runner.invoke(app, ["report", str(fit), "--out", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    assert "the abilities and intervals are those fit saved" in " ".join(outcome.output.split())
    saved = pd.read_csv(fit / "abilities.csv")
    assert not np.allclose(saved["theta"], saved["theta_fit"])  # the two estimates differ
    html = (tmp_path / "r.html").read_text()
    order = re.search(r"tied\): ([^<]+)</p>", html).group(1).replace("&gt;", ">")
    shown = [m.strip() for m in re.split(r"[>~]", order)]
    assert shown == saved.sort_values("theta", ascending=False)["model"].tolist()[: len(shown)]
    for row in saved.itertuples():
        assert f"{row.lower:.3f}" in html and f"{row.upper:.3f}" in html


def _small_wide(tmp_path):
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=8), rng.normal(size=24)
    Y = (rng.random((8, 24)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    path = tmp_path / "wide.csv"
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(8)])
    frame.columns = [f"q{j}" for j in range(24)]
    frame.rename_axis("model").to_csv(path)
    return path


def test_l2_without_joint_ml_is_refused_and_an_unused_l2_is_not_recorded(tmp_path):
    """`fit --l2 0.5` (no --joint-ml) and `report FILE --l2 5` fitted the default prior fit,
    ignoring the ridge, but fit.json and the report's "Fit details" showed it as applied."""
    path = _small_wide(tmp_path)
    outcome = runner.invoke(app, ["fit", str(path), "--out", str(tmp_path / "a"), "--l2", "0.5"])
    assert outcome.exit_code == 2, outcome.output
    text = " ".join(outcome.output.split())
    assert "--l2 0.5 without --joint-ml" in text and not (tmp_path / "a").exists()
    outcome = runner.invoke(
        app, ["report", str(path), "--l2", "5", "--out", str(tmp_path / "r.html")]
    )
    assert outcome.exit_code == 2 and "--l2 5" in outcome.output
    assert not (tmp_path / "r.html").exists()
    # the default fit: no l2 recorded, and the page names the priors, not "ridge l2 0.01"
    outcome = runner.invoke(app, ["fit", str(path), "--out", str(tmp_path / "p"), "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert json.loads((tmp_path / "p" / "fit.json").read_text())["options"]["l2"] is None
    outcome = runner.invoke(app, ["report", str(tmp_path / "p"), "--out", str(tmp_path / "p.html")])
    assert outcome.exit_code == 0, outcome.output
    html = (tmp_path / "p.html").read_text()
    assert "priors (MAP" in html and "ridge l2" not in html
    # --joint-ml --l2: applied and recorded
    args = ["fit", str(path), "--out", str(tmp_path / "j"), "-q", "--joint-ml", "--l2", "0.5"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert json.loads((tmp_path / "j" / "fit.json").read_text())["options"]["l2"] == 0.5
    outcome = runner.invoke(app, ["report", str(tmp_path / "j"), "--out", str(tmp_path / "j.html")])
    assert outcome.exit_code == 0, outcome.output
    assert "ridge l2 = 0.5 (joint ML)" in (tmp_path / "j.html").read_text()


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_an_l2_out_of_range_is_refused_as_the_flag_given(tmp_path, value):
    """`fit --joint-ml --l2 -1` was refused as 'l2=-1.0', the Python keyword, where every
    other fit option is named as its flag (`--sigma nan`, `--tol nan`)."""
    path = _small_wide(tmp_path)
    args = ["fit", str(path), "--out", str(tmp_path / "a"), "--joint-ml", "--l2", value]
    outcome = runner.invoke(app, args)
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, text
    assert f"--l2 {float(value)}; expected a number in [0, 1e+06]" in text, text
    assert "l2=" not in text and not (tmp_path / "a").exists()


def test_report_from_refuses_an_l2_it_would_not_use(tmp_path):
    import pytest

    from latentbench.exceptions import InputError
    from latentbench.report import report_from

    with pytest.raises(InputError, match=r"l2=5: a report fits a responses file"):
        report_from(_small_wide(tmp_path), l2=5)


def test_a_tiny_design_given_to_report_or_fit_says_what_it_is_and_what_reads_it(tmp_path):
    """`latentbench report items.csv` (the design `latentbench tiny` writes) was read as a
    wide response table and failed on its layout ('no model-id column'): the error now says
    it is a fixed design, with its size, seed and calibration, and names the command that
    reads it. `fit` gets the same."""
    rng = np.random.default_rng(0)
    Y = (rng.random((8, 40)) < 0.6).astype(float)
    cells = [(f"m{i}", str(j), Y[i, j]) for i in range(8) for j in range(40)]
    calibration = tmp_path / "calib.parquet"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    for name in ("items.csv", "items.parquet"):
        design = tmp_path / name
        made = runner.invoke(app, ["tiny", str(calibration), "--k", "5", "--out", str(design)])
        assert made.exit_code == 0, made.output
        digest = str(pd.read_csv(tmp_path / "items.csv")["calibration_hash"].iloc[0])[:12]
        for command in (["report", str(design), "--out", str(tmp_path / "r.html")],
                        ["fit", str(design), "--out", str(tmp_path / "fit")]):  # fmt: skip
            outcome = runner.invoke(app, command)
            text = " ".join(outcome.output.split())
            assert outcome.exit_code == 2, text
            assert f"{design}: this is a fixed design written by `latentbench tiny`" in text
            assert f"(5 items, seed 0, calibration {digest}...)" in text
            assert f"latentbench estimate CALIBRATION RESULTS --items {design}" in text
        assert not (tmp_path / "r.html").exists()


def test_report_from_refuses_an_existing_file_without_force(tmp_path):
    # F8: report_from replaced an existing page silently; `report --out` refuses it
    from latentbench.exceptions import InputError
    from latentbench.report import report_from

    out = tmp_path / "r.html"
    out.write_text("an earlier page")
    with pytest.raises(InputError, match=r"path=.*r\.html exists; pass force=True"):
        report_from(_small_wide(tmp_path), out)
    assert out.read_text() == "an earlier page"
    report_from(_small_wide(tmp_path), out, force=True)
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_a_report_to_a_pdf_name_is_refused_before_any_work(tmp_path):
    """`report FIT --out x.pdf` wrote an HTML page into x.pdf without a word."""
    from latentbench.exceptions import InputError
    from latentbench.report import report_from

    with pytest.raises(InputError, match=r"path=.*x\.pdf: the report is an HTML page"):
        report_from(tmp_path, tmp_path / "x.pdf")
    _register()
    out = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "x.pdf")])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "--out " in text and "x.pdf: the report is an HTML page" in text
    assert "expected a file ending in .html or .htm" in text
    assert not (tmp_path / "x.pdf").exists()


def _findings(html: str) -> str:
    import html as html_lib
    import re

    section = html.split('id="findings"')[1].split("</section>")[0]
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", section)).split())


def _reports_with_and_without_responses(fit, data, tmp_path):
    """``(True, page)`` of ``report FIT`` with its responses file in place, then ``(False,
    page)`` once the file has moved (the report works from the fit directory alone)."""
    for responses in (True, False):
        if not responses:
            data.rename(tmp_path / "moved.csv")
        out = tmp_path / f"r{int(responses)}.html"
        outcome = runner.invoke(app, ["report", str(fit), "--out", str(out), "-q"])
        assert outcome.exit_code == 0, outcome.output
        yield responses, out.read_text()


def test_the_report_says_the_fits_interval_statements_with_and_without_the_responses(tmp_path):
    """A fit with a model at the ceiling and one at the floor, and with too few models for the
    reporting scale: the report said neither the floor/ceiling models (with or without the
    responses) nor, without the responses, the caveat that fit.json records (the saved
    intervals were shown as if nothing had been said about them)."""
    rng = np.random.default_rng(5)
    theta, b = rng.normal(size=6), rng.normal(size=40)
    Y = (rng.random((6, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    Y[0], Y[1] = 1.0, 0.0  # 'top' at the ceiling, 'bottom' at the floor
    models = ["top", "bottom", *(f"m{i}" for i in range(4))]
    frame = pd.DataFrame(Y, index=models, columns=[f"q{j}" for j in range(40)])
    data, fit = tmp_path / "wide.csv", tmp_path / "fit"
    frame.rename_axis("model").reset_index().to_csv(data, index=False)
    outcome = runner.invoke(app, ["fit", str(data), "--out", str(fit), "-q"])
    assert outcome.exit_code == 0, outcome.output
    record = json.loads((fit / "fit.json").read_text())["ability_intervals"]
    assert record["checks"]["constant_models"] == ["top", "bottom"]
    assert record["caveat"] is not None
    floor = (
        "2 model(s) at the floor or ceiling ('top', 'bottom': every observed score 0, or every "
        "one 1)"
    )
    for responses, page in _reports_with_and_without_responses(fit, data, tmp_path):
        findings = _findings(page)
        assert floor in findings, (responses, findings)
        assert f"Ability intervals: {record['caveat']}." in findings, responses
    assert f"(abilities.csv; {record['method']})" in " ".join(page.split())


def test_the_report_says_the_detached_models(tmp_path):
    """Two broken models far from the field (a stress matrix) are detached: their intervals
    are open on the far side and they do not set the scale. The fit warned, but the report
    said it only as one of four reasons in its Fit details, while its headline named one of
    them the leader; now the Findings say it, with or without the responses."""
    from latentbench.synthetic import simulate_stress

    data, fit = tmp_path / "stress.csv", tmp_path / "fit"
    simulate_stress(20, 500, random_state=2).matrix.to_wide().to_csv(data)
    outcome = runner.invoke(app, ["fit", str(data), "--out", str(fit), "-q"])
    assert outcome.exit_code == 0, outcome.output
    detached = json.loads((fit / "fit.json").read_text())["ability_intervals"]["detached"]
    assert detached["models"] == ["model_00", "model_01"]
    said = "2 model(s) detached from the others ('model_00', 'model_01':"
    for responses, page in _reports_with_and_without_responses(fit, data, tmp_path):
        findings = _findings(page)
        assert said in findings and "open on the far side" in findings, (responses, findings)


def test_a_bootstrap_with_no_workers_is_refused(tmp_path):
    """`report --bootstrap 100 --jobs 0` (or -5) ran with one worker, unsaid: the value is
    refused, naming the option and what it takes, as --top and --bootstrap are."""
    from latentbench.exceptions import InputError
    from latentbench.irt.inference import bootstrap

    data = _small_wide(tmp_path)
    matrix = ResponseMatrix.read(data)
    result = TwoPL().fit(matrix)
    for jobs in (0, -5, 1.5):
        with pytest.raises(InputError, match=rf"n_jobs={jobs!r}; expected -1 \(all cores\)"):
            bootstrap(result, matrix, n_boot=4, n_jobs=jobs)  # type: ignore[arg-type]
    outcome = runner.invoke(
        app, ["report", str(data), "--bootstrap", "100", "--jobs", "0", "-q", "--out",
              str(tmp_path / "r.html")]
    )  # fmt: skip
    assert outcome.exit_code == 2, outcome.output
    assert "--jobs 0; expected -1 (all cores) or an integer >= 1" in outcome.output
    assert not (tmp_path / "r.html").exists()


def test_a_directory_with_an_experiment_and_a_selection_says_which_it_reports(tmp_path):
    """summary.json beside selection.json: the experiment was reported, unsaid."""
    rng = np.random.default_rng(0)
    Y = (rng.random((8, 40)) < np.linspace(0.3, 0.7, 8)[:, None]).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(8)], columns=[f"q{j}" for j in range(40)])
    data = tmp_path / "responses.csv"
    frame.rename_axis("model").reset_index().to_csv(data, index=False)
    both = tmp_path / "both"
    args = ["--seeds", "1", "--pools", "full", "--policies", "ucbe", "--budget", "40", "-q"]
    made = runner.invoke(app, ["experiment", str(data), *args, "--out", str(both)])
    assert made.exit_code == 0, made.output
    sel = runner.invoke(app, ["select", "replay", str(data), "--no-history", "--policy", "ucbe",
                              "--budget", "40", "-q", "--out", str(tmp_path / "sel")])  # fmt: skip
    assert sel.exit_code == 0, sel.output
    (both / "selection.json").write_text((tmp_path / "sel" / "selection.json").read_text())
    outcome = runner.invoke(app, ["report", str(both), "--out", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert (
        f"{both} holds summary.json and selection.json: reporting the experiment "
        f"(summary.json); pass {both / 'selection.json'} to report the selection run"
    ) in text


def test_a_fit_folder_moved_with_its_responses_finds_them(tmp_path, monkeypatch):
    """fit.json records the responses' absolute path; a project copied to another machine or
    renamed keeps the file beside the fit folder: the report finds it there by name and
    SHA-256 and says so (before: silently no responses, no item flags). A file of that name
    with other content is not used, and a missing one is said."""
    rng = np.random.default_rng(2)
    theta, b = rng.normal(size=8), rng.normal(size=24)
    Y = (rng.random((8, 24)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(8)], columns=[f"q{j}" for j in range(24)])
    machine_a = tmp_path / "a"
    machine_a.mkdir()
    frame.rename_axis("model").reset_index().to_csv(machine_a / "responses.csv", index=False)
    fitted = runner.invoke(
        app, ["fit", str(machine_a / "responses.csv"), "--out", str(machine_a / "fit"), "-q"]
    )
    assert fitted.exit_code == 0, fitted.output
    machine_b = tmp_path / "b"
    machine_a.rename(machine_b)
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(app, ["report", str(machine_b / "fit"), "--out", "r.html"])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, outcome.output
    assert f"responses: {machine_b / 'responses.csv'} (fit.json records" in text
    assert "not computed" not in text
    (1 - frame).rename_axis("model").reset_index().to_csv(machine_b / "responses.csv", index=False)
    outcome = runner.invoke(app, ["report", str(machine_b / "fit"), "--out", "r2.html"])
    text = " ".join(outcome.output.split())
    assert f"{machine_a / 'responses.csv'} (recorded in fit.json) not found; not used" in text
    assert "not computed" in text


def test_options_a_reports_page_does_not_read_are_refused_not_ignored(tmp_path):
    """A selection run's page has no fit to bootstrap and no responses to add, --run-id
    chooses a run of a live-run store only, a responses file is its own responses, and
    --method/--jobs/--seed are the bootstrap's: each was accepted and the page written as
    without it, not a word said."""
    from latentbench.exceptions import InputError
    from latentbench.report import report_from

    data = _small_wide(tmp_path)
    fit, sel = tmp_path / "fit", tmp_path / "sel"
    TwoPL().fit(ResponseMatrix.read(data)).save(fit)
    made = runner.invoke(app, ["select", "replay", str(data), "--no-history", "--policy", "ucbe",
                               "--budget", "20", "-q", "--out", str(sel)])  # fmt: skip
    assert made.exit_code == 0, made.output
    run = "not an option of a selection run's report"
    no_boot = "not an option of a report without --bootstrap"
    cases = [
        ([sel, "--bootstrap", "200"], f"--bootstrap 200: {run}"),
        ([sel / "selection.json", "--responses", data], f"--responses {data}: {run}"),
        ([sel, "--method", "parametric"], f"--method parametric: {run}"),
        ([sel, "--seed", "3"], f"--seed 3: {run}"),
        ([sel, "--run-id", "r1"], "--run-id r1: not an option of a report of a selection run"),
        ([fit, "--run-id", "r1"], "--run-id r1: not an option of a report of a fit directory"),
        ([data, "--responses", data], f"--responses {data}: not an option of a responses file's"),
        ([fit, "--method", "parametric"], f"--method parametric: {no_boot}"),
        ([fit, "--jobs", "2"], f"--jobs 2: {no_boot}"),
        ([data, "--seed", "5"], f"--seed 5: {no_boot}"),
    ]
    out = tmp_path / "r.html"
    for args, said in cases:
        outcome = runner.invoke(app, ["report", *map(str, args), "--out", str(out)])
        text = " ".join(outcome.output.split())
        assert outcome.exit_code == 2 and said in text, (args, text)
        assert not out.exists()
    # the Python twin refuses them alike, in its keywords
    with pytest.raises(InputError, match=r"^n_boot=200: not an option of a selection run's"):
        report_from(sel, n_boot=200)
    with pytest.raises(InputError, match=r"^run_id=r1: not an option of a report of a fit dir"):
        report_from(fit, run_id="r1")
    with pytest.raises(InputError, match=r"^seed=5: not an option of a report without n_boot"):
        report_from(fit, seed=5)
    # the options a selection run's page reads are taken as before
    outcome = runner.invoke(app, ["report", str(sel), "--top", "3", "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
