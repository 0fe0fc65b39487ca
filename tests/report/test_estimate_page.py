"""The page of new models' estimates (``latentbench estimate --out DIR``, then ``latentbench
report DIR``): it was refused ("holds an estimate, which has no report"), so the job users do
most had no page to share."""

from __future__ import annotations

import dataclasses
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench import select
from latentbench.cli import _register, app
from latentbench.report import ESTIMATE_SECTIONS, build_estimate_report, report_from

runner = CliRunner()
_register()
HOSTILE = '<script>alert("m")</script>'


def _wide(n_models: int, n_items: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(theta[:, None] + b)))
    return pd.DataFrame(
        (rng.random((n_models, n_items)) < p).astype(float),
        index=[f"m{i}" for i in range(n_models)],
        columns=[f"q{j}" for j in range(n_items)],
    )


@pytest.fixture(scope="module")
def estimated(tmp_path_factory):
    """A calibration file, three new models' estimates saved as the command saves them."""
    folder = tmp_path_factory.mktemp("estimate")
    wide = _wide(24, 120, seed=0)
    calibration = folder / "calibration.parquet"
    wide.iloc[:21].rename_axis("model").reset_index().to_parquet(calibration)
    new = wide.iloc[21:].copy()
    new.index = ["new-a", HOSTILE, "new-c"]
    new.iloc[2, :30] = np.nan  # answered only some items: a warning the page must keep
    answers = folder / "new.parquet"
    new.rename_axis("model").reset_index().to_parquet(answers)
    with pytest.warns(Warning):
        estimates = select.estimate_many(str(calibration), str(answers), budget=40, seed=0)
    estimates.save(folder / "out")
    return folder, estimates


def _sections(html: str) -> list[str]:
    return re.findall(r'<section[^>]* id="([^"]+)"', html)


def _text(html: str) -> str:
    import html as markup

    return markup.unescape(" ".join(re.sub(r"<[^>]+>", " ", html).split()))


def test_the_page_of_saved_estimates(estimated):
    folder, estimates = estimated
    report = report_from(folder / "out", folder / "page.html")
    html = (folder / "page.html").read_text()
    assert report.html == html and _sections(html) == list(ESTIMATE_SECTIONS)
    text = _text(html)
    best = max(estimates.results, key=lambda r: r.score)
    assert "3 models estimated against 21 calibration models; highest:" in text
    for r in estimates.results:  # each model's line as the command printed it
        assert r.summary() in text
    assert "95% anytime-valid interval" in text and "whether or not the IRT model fits" in text
    assert "answered 90 of 120 calibrated items" in text  # new-c's warning, kept
    assert f"SHA-256 {best.calibration_hash[:12]}" in text
    assert "calibration models (21)" not in text  # (in the figure, a PNG)
    assert "ticks on the bottom row: the calibration models' scores" in text
    assert "not drawn" not in text
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html  # escaped
    assert HOSTILE in text
    # the items each model answered, in order, with their draw probabilities
    assert "download all 120 rows" in text


def test_a_calibration_not_here_or_changed_is_said_and_the_page_still_built(estimated, tmp_path):
    folder, estimates = estimated
    moved = tmp_path / "out"
    shutil.copytree(folder / "out", moved)
    cal = folder / "calibration.parquet"
    kept = tmp_path / "calibration.parquet"
    shutil.copy(cal, kept)
    try:
        cal.unlink()
        text = _text(build_estimate_report(moved))
        assert "the calibration models are not drawn: their calibration" in text.lower()
        assert "is not on this machine" in text
        other = _wide(21, 120, seed=5).rename_axis("model").reset_index()
        other.to_parquet(cal)  # another calibration under the same name
        text = _text(build_estimate_report(moved))
        assert "is not the calibration the estimate used" in text
    finally:
        shutil.copy(kept, cal)
    assert "not drawn" not in _text(build_estimate_report(estimates))


def test_one_result_and_the_command(estimated, tmp_path):
    folder, estimates = estimated
    one = estimates.results[0]
    text = _text(build_estimate_report(one))
    assert text.count(one.summary()) >= 1 and "models estimated against" not in text
    out = tmp_path / "page.html"
    outcome = runner.invoke(
        app, ["report", str(folder / "out" / "estimate.json"), "--out", str(out), "-q"]
    )
    assert outcome.exit_code == 0, outcome.output
    assert _sections(out.read_text()) == list(ESTIMATE_SECTIONS)
    assert "<title>latentbench estimate: out</title>" in out.read_text()
    outcome = runner.invoke(
        app, ["report", str(folder / "out"), "--responses", str(folder / "new.parquet")]
    )
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "not an option of an estimate's report" in text


def test_a_folder_of_checkpoint_folders_is_drawn_as_a_series(estimated, tmp_path):
    """``estimate --out est/stepN`` once per checkpoint (docs/estimate.md, A series of
    checkpoints): ``report est/`` gathers them in the natural order of their folders (step900
    before step1000), names each by folder when they share a model name, and says what
    overlapping intervals do not show."""
    folder, _ = estimated
    wide = _wide(24, 120, seed=0).iloc[21:]
    series = tmp_path / "est"
    for step, row in zip(("step10000", "step900", "step1000"), range(3), strict=True):
        answers = wide.iloc[[row]].copy()
        answers.index = ["org/ckpt"]  # lm-eval names every revision alike
        one = select.estimate(str(folder / "calibration.parquet"), answers, budget=30)
        one.save(series / step)
    (series / "notes").mkdir()  # another folder, without an estimate: not a checkpoint
    out = tmp_path / "series.html"
    outcome = runner.invoke(app, ["report", str(series), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    html = out.read_text()
    text = _text(html)
    assert _sections(html) == list(ESTIMATE_SECTIONS)
    assert "3 estimates from 3 folders against 21 calibration models" in text
    positions = [text.index(f"step{n}/org/ckpt: score") for n in (900, 1000, 10000)]
    assert positions == sorted(positions)  # the series' order, not the scores'
    assert "Two intervals that overlap do not show the models equal" in text
    assert "in the folders' order" in text and "the first 3 folders, in order" in text
    table = html.split('id="estimate-tables"')[1]
    assert "<th" in table and ">folder<" in table.replace(" ", "")


def test_a_series_against_two_calibrations_says_their_ranks_are_not_comparable(estimated, tmp_path):
    folder, _ = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    other = tmp_path / "other.parquet"
    _wide(21, 120, seed=9).rename_axis("model").reset_index().to_parquet(other)
    for name, cal in (("a", folder / "calibration.parquet"), ("b", other)):
        select.estimate(str(cal), answers, budget=30).save(tmp_path / "est" / name)
    text = _text(build_estimate_report(tmp_path / "est"))
    assert "against 2 calibrations" in text and "ranks and abilities are not comparable" in text
    assert "not drawn: there are several" in text


def test_a_series_of_calls_with_other_levels_and_options_says_each(estimated, tmp_path):
    """A series whose folders were estimated with other ``--delta`` / ``--budget``: the page
    said every interval was the first folder's level ("a 95% interval" beside an 80% one)
    and named the first folder's options as the series'."""
    folder, _ = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    cal = str(folder / "calibration.parquet")
    select.estimate(cal, answers, budget=30).save(tmp_path / "est" / "step1")
    select.estimate(cal, answers, budget=40, delta=0.2).save(tmp_path / "est" / "step2")
    text = _text(build_estimate_report(tmp_path / "est"))
    assert "Each interval is a 95%" not in text
    assert "anytime-valid interval at its own level (95%, 80%" in text
    assert "delta differs between the estimates: step1/m22 0.05, step2/m22 0.2" in text
    assert "budget differs between the estimates: step1/m22 30, step2/m22 40" in text
    assert "delta 0.05" not in text.replace("m22 0.05", "")  # not the first's, as the series'


def test_a_series_option_a_call_did_not_set_or_record_is_said_in_words(estimated, tmp_path):
    """A series with a fixed-design folder (``estimate --items``: no budget) beside adaptive
    ones said "budget differs between the estimates: step1/m22 30, step2/m22 None", and an
    option a record does not hold (an ``estimate.json`` of an earlier release, written before
    the option existed: fixture trimmed from a record of release 2114837) showed as None too."""
    import json

    folder, _ = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    cal = str(folder / "calibration.parquet")
    select.estimate(cal, answers, budget=30).save(tmp_path / "est" / "step1")
    select.estimate(cal, answers, budget=40, precision=0.3).save(tmp_path / "est" / "step2")
    record = json.loads((tmp_path / "est" / "step2" / "estimate.json").read_text())
    del record["options"]["proposal"]  # as an earlier release's record, without the option
    (tmp_path / "est" / "step3").mkdir()
    (tmp_path / "est" / "step3" / "estimate.json").write_text(json.dumps(record))
    text = _text(build_estimate_report(tmp_path / "est"))
    assert " None" not in text.split("Estimated against", 1)[1].split(".", 1)[0]
    said = "precision differs between the estimates: step1/m22 none, step2/m22 0.3, step3/m22 0.3"
    assert said in text
    said = "proposal differs between the estimates: step1/m22 residual, step2/m22 residual, "
    assert said + "step3/m22 not recorded" in text


def test_a_series_one_level_down_and_other_folders_beside_one_are_said(estimated, tmp_path):
    """``report est/`` with the series in ``est/runA/step*``: it was refused as 'a tool's
    result files' (the estimates' CSVs). A comparison beside the checkpoints was left out
    without a word, the page reading as the whole folder."""
    folder, _ = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    cal = str(folder / "calibration.parquet")
    for step in ("step1", "step2"):
        select.estimate(cal, answers, budget=30).save(tmp_path / "est" / "runA" / step)
    outcome = runner.invoke(app, ["report", str(tmp_path / "est"), "-q"])
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, outcome.output
    assert "tool's result files" not in said
    assert "folders of estimate folders (runA)" in said and "report " in said
    select.compare(cal, answers.iloc[0].rename("a"), _wide(24, 120, seed=0).iloc[21].rename("b"),
                   budget=10).save(tmp_path / "est" / "runA" / "cmp")  # fmt: skip
    text = _text(build_estimate_report(tmp_path / "est" / "runA"))
    assert "Not drawn: 1 folder(s) here without an estimate.json (cmp)" in text


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("theta_upper", None, "expected a finite number"),
        ("score", "0.5", "expected a finite number"),
        ("lower", float("nan"), "expected a finite number"),
        ("rank", 2.5, "expected a whole number"),
    ],
)
def test_an_edited_estimate_json_is_refused_naming_the_field(
    estimated, tmp_path, field, value, expected
):
    """An estimate.json whose numbers are not numbers was read as it was, and the page of it
    failed with a TypeError traceback (``report DIR``)."""
    import json

    _, estimates = estimated
    record = estimates.results[0].to_dict()
    record[field] = value
    (tmp_path / "est").mkdir()
    (tmp_path / "est" / "estimate.json").write_text(json.dumps(record))
    outcome = runner.invoke(app, ["report", str(tmp_path / "est"), "--out", str(tmp_path / "p")])
    said = " ".join(outcome.output.split())
    assert outcome.exit_code == 2, outcome.output
    assert "estimate.json" in said and f"field '{field}' holds" in said and expected in said


def test_a_model_named_like_a_calibration_model_does_not_shrink_the_calibration(
    estimated, tmp_path
):
    """The headline counted the first model's rivals as the calibration: a first model named
    like a calibration model (ranked among the other 20) made it 'against 20 calibration
    models' of 21."""
    folder, _ = estimated
    wide = _wide(24, 120, seed=0)
    cal = str(folder / "calibration.parquet")
    named = wide.iloc[[22]].rename(index={"m22": "m3"})  # a calibration model's name
    with pytest.warns(Warning, match="left out of the rank"):
        select.estimate(cal, named, budget=30).save(tmp_path / "est" / "a")
    select.estimate(cal, wide.iloc[[23]], budget=30).save(tmp_path / "est" / "b")
    text = _text(build_estimate_report(tmp_path / "est"))
    assert "2 estimates from 2 folders against 21 calibration models" in text


def test_a_series_longer_than_top_says_where_the_other_lines_are(estimated, tmp_path):
    """300 checkpoints at report --top 30: the page listed the first 30 lines and stopped,
    with nothing to say that 270 more were not listed."""
    folder, _ = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    cal = select.load_calibration(str(folder / "calibration.parquet"))
    for step in range(1, 6):
        select.estimate(cal, answers, budget=20, seed=step).save(tmp_path / "est" / f"s{step}")
    text = _text(build_estimate_report(tmp_path / "est", top=3))
    assert "s3/m22: score" in text and "s4/m22: score" not in text.split("Each interval")[0]
    assert "The first 3 of 5 folders; the other 2 are in the estimates table's CSV" in text


def test_a_warning_every_checkpoint_had_is_said_once(estimated, tmp_path):
    """A series of checkpoints named like a calibration model: the page repeated the same
    warning once per folder (300 lines for 300 checkpoints)."""
    folder, _ = estimated
    named = _wide(24, 120, seed=0).iloc[[22]].rename(index={"m22": "m3"})
    cal = select.load_calibration(str(folder / "calibration.parquet"))
    for step in range(1, 6):
        with pytest.warns(Warning, match="left out of the rank"):
            one = select.estimate(cal, named, budget=20, seed=step)
        one.save(tmp_path / "est" / f"s{step}")
    text = _text(build_estimate_report(tmp_path / "est"))
    assert text.count("the calibration model of that name is left out of the rank") == 1
    assert "all 5 estimates: model 'm3' is in the calibration" in text


def test_a_level_and_a_subset_as_the_command_says_them(estimated, tmp_path):
    """``--delta 0.025`` (a series' Bonferroni) printed '98%' on the page, a stronger claim
    than the command's 97.5%; and a model that answered some items only had its interval
    called one of the mean 'over the benchmark's items' (the command: 'on the items
    answered')."""
    folder, estimates = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    one = select.estimate(str(folder / "calibration.parquet"), answers, budget=30, delta=0.025)
    text = _text(build_estimate_report(one))
    assert "a 97.5% anytime-valid interval" in text and "98%" not in text
    text = _text(build_estimate_report(estimates))  # new-c answered 90 of the 120 items
    assert "over the items it answered (not the full benchmark for new-c)" in text


def test_a_calibration_recorded_relative_is_found_from_another_folder(
    estimated, tmp_path, monkeypatch
):
    """``estimate fit/ ... --out est/step1`` records the calibration as ``fit``, relative to
    the folder it ran in: ``report`` run from elsewhere said it 'is not on this machine' and
    drew no calibration models, though it sat beside the estimates."""
    folder, _ = estimated
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(folder / "calibration.parquet", project / "cal.parquet")
    monkeypatch.chdir(project)
    answers = _wide(24, 120, seed=0).iloc[[22]]
    select.estimate("cal.parquet", answers, budget=30).save(project / "est" / "step1")
    monkeypatch.chdir(tmp_path)  # elsewhere
    for given in (project / "est", project / "est" / "step1"):
        text = _text(build_estimate_report(given))
        assert "not drawn" not in text, text
        assert "ticks on the bottom row: the calibration models' scores" in text
    (project / "cal.parquet").unlink()
    text = _text(build_estimate_report(project / "est"))
    assert "(cal.parquet) is found neither from the current folder nor beside" in text


def test_a_warning_every_model_carries_is_listed_once(estimated, tmp_path):
    """What reading the answers file said is kept with every model's result; the page listed
    it once per model (300 models: 300 identical lines above the estimates). It is one line
    now, saying how many carry it; a warning of a few models names them."""
    folder, _ = estimated
    wide = _wide(30, 120, seed=4)
    long = wide.iloc[21:].rename_axis("model").reset_index()
    long = long.melt(id_vars="model", var_name="item", value_name="score")
    long = pd.concat([long, long.iloc[:1]])  # one row twice: a note on reading the file
    answers = tmp_path / "repeated.parquet"
    long.to_parquet(answers)
    with pytest.warns(Warning, match="repeated"):
        estimates = select.estimate_many(
            str(folder / "calibration.parquet"), str(answers), budget=20, seed=0
        )
    note = "1 repeated (model, item) rows with identical scores were collapsed"
    assert all(any(note in w for w in r.warnings) for r in estimates.results)
    text = _text(build_estimate_report(estimates))
    assert text.count(note) == 1
    assert f"all 9 models: in {answers}" in text or f"all 9 models: in {answers.name}" in text
    # a warning some models carry names them, at most five, and counts the rest
    some = [
        dataclasses.replace(r, warnings=(*r.warnings, "only some")) if k < 7 else r
        for k, r in enumerate(estimates.results)
    ]
    text = _text(build_estimate_report(select.EstimateSet(tuple(some))))
    assert text.count("only some") == 1
    named = ", ".join(r.model for r in estimates.results[:5])
    assert f"{named} and 2 more: only some" in text


def test_a_series_longer_than_the_figure_draws_its_latest_checkpoints(
    estimated, tmp_path, monkeypatch
):
    """45 checkpoints: the figure drew the first 40 (step1-step40), leaving out the newest
    five, the ones a training team looks at (2026-12-06); it now draws the last 40, in order,
    and says so. The table keeps all 45."""
    from latentbench.report import plots

    folder, _ = estimated
    answers = _wide(24, 120, seed=0).iloc[[22]]
    cal = select.load_calibration(str(folder / "calibration.parquet"))
    for step in range(1, 46):
        select.estimate(cal, answers, budget=5, seed=step).save(tmp_path / "est" / f"step{step}")
    seen = []
    original = plots.plot_estimate_placement

    def spy(frame, *args, **kwargs):
        seen.append(frame)
        return original(frame, *args, **kwargs)

    monkeypatch.setattr(plots, "plot_estimate_placement", spy)
    text = _text(build_estimate_report(tmp_path / "est", top=50))
    assert "the last 40 of 45 folders, in order" in text
    assert list(seen[0]["folder"]) == [f"step{k}" for k in range(6, 46)]
    assert "step1/m22: score" in text and "step45/m22: score" in text
