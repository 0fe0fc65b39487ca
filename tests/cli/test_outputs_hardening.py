"""Hostile output paths and malformed inputs to ``report``: clear errors, never tracebacks.

Issue 15: ``--out`` at a file or an unwritable place, ``export`` to a directory, /dev/full or an
unwritable path, a malformed fit directory or selection.json given to ``report``, and an
interrupted ``fit`` that left a new abilities.csv next to a stale fit.json. Also CSV injection
(item 3): formula-like ids are escaped in the fit tables and read back unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.irt import IRTResult

_register()
runner = CliRunner()


def _clean_error(outcome) -> str:
    """The output of a refused command: exit 2, one `error:` line, no traceback."""
    text = outcome.output
    assert outcome.exit_code == 2, (outcome.exit_code, text, outcome.exception)
    assert "error:" in text and "Traceback" not in text
    assert not isinstance(outcome.exception, Exception) or isinstance(outcome.exception, SystemExit)
    return text


@pytest.fixture(scope="module")
def responses(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("responses")
    path = folder / "wide.csv"
    path.write_text(
        "model,q1,q2,q3,q4\nm1,1,0,1,1\nm2,0,0,1,0\nm3,1,1,1,0\nm4,0,1,0,0\nm5,1,1,0,1\n"
    )
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, responses) -> Path:
    out = tmp_path_factory.mktemp("fit") / "fit"
    outcome = runner.invoke(app, ["fit", str(responses), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory, responses) -> Path:
    path = tmp_path_factory.mktemp("store") / "s.duckdb"
    outcome = runner.invoke(
        app, ["ingest", "table", str(responses), "--store", str(path), "--benchmark", "b"]
    )
    assert outcome.exit_code == 0, outcome.output
    return path


# ------------------------------------------------------------------ fit --out
def test_fit_out_is_an_existing_file(tmp_path, responses):
    target = tmp_path / "taken"
    target.write_text("keep me")
    text = _clean_error(runner.invoke(app, ["fit", str(responses), "--out", str(target), "-q"]))
    assert "taken" in text
    assert target.read_text() == "keep me"


def test_fit_out_below_a_file(tmp_path, responses):
    target = tmp_path / "taken"
    target.write_text("x")
    _clean_error(runner.invoke(app, ["fit", str(responses), "--out", str(target / "sub"), "-q"]))


UNWRITABLE = Path("/proc/latentbench-unwritable")  # not even root can create it


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
def test_fit_out_unwritable(responses):
    text = _clean_error(
        runner.invoke(app, ["fit", str(responses), "--out", str(UNWRITABLE / "fit"), "-q"])
    )
    assert "latentbench-unwritable" in text


def test_interrupted_fit_never_mixes_new_tables_with_a_stale_fit_json(
    tmp_path, responses, monkeypatch
):
    out = tmp_path / "fit"
    assert runner.invoke(app, ["fit", str(responses), "--out", str(out), "-q"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / "notes.txt").write_text("the user's own file")
    other = tmp_path / "other.csv"
    other.write_text("model,q1,q2,q3\nx1,1,0,1\nx2,0,0,1\nx3,1,1,0\n")

    real_dumps = json.dumps

    def dumps(obj, *args, **kwargs):
        if isinstance(obj, dict) and "latentbench_version" in obj:
            raise OSError(28, "No space left on device")  # the disk fills at fit.json
        return real_dumps(obj, *args, **kwargs)

    monkeypatch.setattr(json, "dumps", dumps)
    outcome = runner.invoke(app, ["fit", str(other), "--out", str(out), "-q"])
    monkeypatch.undo()
    _clean_error(outcome)
    # the previous fit is intact (all three files), the user's file is kept, no leftovers
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "notes.txt"} == before
    assert (out / "notes.txt").read_text() == "the user's own file"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # and a fit that completes replaces them together, keeping the user's file
    assert runner.invoke(app, ["fit", str(other), "--out", str(out), "-q"]).exit_code == 0
    # (rows ordered by rank)
    assert sorted(pd.read_csv(out / "abilities.csv")["model"]) == ["x1", "x2", "x3"]
    assert json.loads((out / "fit.json").read_text())["n_models"] == 3
    assert (out / "notes.txt").exists()


# ------------------------------------------------------------------ export
def test_export_to_a_directory(tmp_path, store):
    folder = tmp_path / "x.parquet"
    folder.mkdir()
    text = _clean_error(runner.invoke(app, ["export", str(folder), "--store", str(store)]))
    assert "x.parquet" in text


def test_export_to_a_full_device(tmp_path, store):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    link = tmp_path / "full.csv"
    link.symlink_to("/dev/full")
    _clean_error(runner.invoke(app, ["export", str(link), "--store", str(store)]))


def test_export_to_a_missing_folder(tmp_path, store):
    target = tmp_path / "no" / "such" / "x.csv"
    text = _clean_error(runner.invoke(app, ["export", str(target), "--store", str(store)]))
    assert "x.csv" in text


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
@pytest.mark.parametrize("fmt", ["table", "eee"])
def test_export_unwritable(store, fmt):
    name = "x.parquet" if fmt == "table" else "eee"
    args = ["export", str(UNWRITABLE / name), "--store", str(store), "--format", fmt]
    _clean_error(runner.invoke(app, args))


# ------------------------------------------------------------------ report
def _copy_fit(fitted: Path, target: Path) -> Path:
    target.mkdir()
    for p in fitted.iterdir():
        (target / p.name).write_bytes(p.read_bytes())
    return target


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("fit.json", "{bad json"),
        ("fit.json", "[1, 2]"),
        ("fit.json", '{"rank": "two"}'),
        ("abilities.csv", "model,foo\nx,1\n"),
        ("items.csv", "item\nq1\n"),
        ("abilities.csv", ""),
        ("abilities.csv", "model,theta\nm1,abc\n"),
    ],
)
def test_report_on_a_malformed_fit_directory(tmp_path, fitted, name, content):
    broken = _copy_fit(fitted, tmp_path / "broken")
    (broken / name).write_text(content)
    text = _clean_error(
        runner.invoke(app, ["report", str(broken), "--out", str(tmp_path / "r.html"), "-q"])
    )
    assert name in text


@pytest.mark.parametrize(
    "sigma",
    [
        *(0, -1.0, float("nan"), float("inf"), 1e-320, True, "1"),
        pytest.param(10**400, id="int 1e400"),
        pytest.param(-(10**400), id="int -1e400"),
    ],
)
def test_a_fit_directory_with_an_edited_sigma_is_refused_by_name(tmp_path, fitted, sigma):
    # 0 divided by zero in estimate's compiled prediction (a traceback), a negative one
    # flipped every item silently, NaN ended in "target=nan": refused when the fit is read.
    # An integer too large for a float (JSON has no limit) raised OverflowError in the check
    # itself (a traceback, review 2026-12-07)
    broken = _copy_fit(fitted, tmp_path / "broken")
    info = json.loads((broken / "fit.json").read_text())
    info["sigma"] = sigma
    (broken / "fit.json").write_text(json.dumps(info))
    text = _clean_error(
        runner.invoke(app, ["report", str(broken), "--out", str(tmp_path / "r.html"), "-q"])
    )
    assert "fit.json" in text and "sigma=" in text and "expected a number in [0.001, 1000]" in text
    with pytest.raises(InputError, match="sigma="):
        IRTResult.load(broken)


@pytest.mark.parametrize(
    "content",
    [
        '{"arms": 5}',
        '{"arms": [{"x": 1}]}',
        '{"arms": [{"model": "a", "estimate": "high"}]}',
        '{"arms": []}',
        "{not json",
        '"text"',
    ],
)
def test_report_on_a_malformed_selection_json(tmp_path, content):
    path = tmp_path / "selection.json"
    path.write_text(content)
    text = _clean_error(
        runner.invoke(app, ["report", str(path), "--out", str(tmp_path / "r.html"), "-q"])
    )
    assert "selection.json" in text


def test_report_out_below_a_file_or_at_a_directory(tmp_path, fitted):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker / "r.html", tmp_path):
        text = _clean_error(runner.invoke(app, ["report", str(fitted), "--out", str(out), "-q"]))
        assert str(out.name) in text


# ------------------------------------------------------------------ CSV injection
FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(A1)", "-2+3", "@import", "\tlead", "'quoted", "plain"]


def test_formula_like_ids_are_escaped_in_fit_tables_and_read_back(tmp_path):
    models = FORMULAS
    items = ['=HYPERLINK("x")', "q2", "-q3", "+q4"]
    wide = pd.DataFrame(
        [[(k + j) % 2 for j in range(len(items))] for k in range(len(models))], columns=items
    )
    wide.insert(0, "model", models)
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    out = tmp_path / "fit"
    outcome = runner.invoke(app, ["fit", str(path), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    for name, column in (("abilities.csv", "model"), ("items.csv", "item")):
        raw = pd.read_csv(out / name, dtype=str, keep_default_na=False)[column]
        # no cell a spreadsheet would run as a formula
        assert not raw.str.match(r"^[=+\-@\t\r]").any(), list(raw)
    # our readers give the original ids back
    result = IRTResult.load(out)
    assert sorted(result.model_ids) == sorted(models)
    assert sorted(result.item_ids) == sorted(items)
    assert (
        runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html"), "-q"]).exit_code
        == 0
    )


def test_a_refit_into_the_same_out_removes_the_earlier_fits_optional_files(tmp_path):
    """`fit --out DIR --holdout 0.1` then `fit --out DIR` (other options) left heldout.csv
    (and random_items.npz) of the first fit beside the second, unsaid; they are removed and
    named in the "wrote" line. A folder that is not a fit directory keeps its files."""
    import numpy as np

    rng = np.random.default_rng(4)
    theta, b = rng.normal(size=10), rng.normal(size=30)
    Y = (rng.random((10, 30)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    path = tmp_path / "wide.csv"
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(10)])
    frame.columns = [f"q{j}" for j in range(30)]
    frame.rename_axis("model").to_csv(path)
    out = tmp_path / "fit"
    first = runner.invoke(app, ["fit", str(path), "--out", str(out), "-q", "--holdout", "0.1"])
    assert first.exit_code == 0, first.output
    assert (out / "heldout.csv").exists()
    (out / "notes.txt").write_text("mine")
    second = runner.invoke(app, ["fit", str(path), "--out", str(out), "--rank", "2"])
    assert second.exit_code == 0, second.output
    assert not (out / "heldout.csv").exists() and not (out / "random_items.npz").exists()
    assert (out / "notes.txt").read_text() == "mine"  # not a file latentbench writes
    line = " ".join(second.output.split())
    assert re.search(r"; removed [^;]*heldout\.csv[^;]* \(from an earlier fit in ", line), line
    # a folder without fit.json: a heldout.csv there is not ours, kept
    other = tmp_path / "other"
    other.mkdir()
    (other / "heldout.csv").write_text("x")
    saved = IRTResult.load(out).save(other)
    assert (other / "heldout.csv").read_text() == "x" and saved.removed == []
