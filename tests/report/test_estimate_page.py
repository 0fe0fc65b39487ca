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
