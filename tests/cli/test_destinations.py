"""Every command checks its output destination before it does the work (issue 30, item 13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io._outputs import check_destination

_register()
runner = CliRunner()


@pytest.fixture
def responses(tmp_path) -> Path:
    rows = ["model," + ",".join(f"q{j}" for j in range(12))]
    rows += [f"m{k}," + ",".join(str((k * j + j) % 2) for j in range(12)) for k in range(6)]
    path = tmp_path / "wide.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _targets(tmp_path: Path) -> list[Path]:
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me")
    targets = [blocker, blocker / "below"]
    if Path("/sys/kernel").is_dir():
        targets.append(Path("/sys/kernel/latentbench-out"))
    if Path("/proc/self").is_dir():
        targets.append(Path("/proc/latentbench-out"))
    return targets


def test_select_replay_checks_out_before_the_replay_runs(tmp_path, responses, monkeypatch):
    import latentbench.select as select_api

    ran = []
    real = select_api.replay  # the command's one library call
    monkeypatch.setattr(select_api, "replay", lambda *a, **k: ran.append(1) or real(*a, **k))
    for out in _targets(tmp_path):
        outcome = runner.invoke(
            app,
            ["select", "replay", str(responses), "--budget", "20", "--policy", "ucbe",
             "--no-history", "--out", str(out), "-q"],
        )  # fmt: skip
        assert outcome.exit_code == 2, (out, outcome.output)
        assert "error:" in outcome.output and "Traceback" not in outcome.output
        assert out.name in outcome.output
    assert ran == []  # refused before the replay, every time
    assert (tmp_path / "a-file").read_text() == "keep me"
    good = tmp_path / "new" / "run"
    outcome = runner.invoke(
        app,
        ["select", "replay", str(responses), "--budget", "20", "--policy", "ucbe",
         "--no-history", "--out", str(good), "-q"],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert (good / "selection.json").is_file() and ran == [1]


def test_check_destination_leaves_nothing_behind(tmp_path):
    check_destination(tmp_path / "new" / "deeper", "dir")
    check_destination(tmp_path / "x.csv", "file")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="does not exist"):
        check_destination(tmp_path / "no" / "x.csv", "file")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        check_destination(tmp_path / "d", "file")


def test_export_checks_out_before_reading_the_store(tmp_path):
    # the store does not exist: the destination is refused first, and named
    for out in _targets(tmp_path)[1:]:
        for fmt in ("table", "eee"):
            name = out / "x.csv" if fmt == "table" else out
            outcome = runner.invoke(
                app, ["export", str(name), "--store", str(tmp_path / "none.duckdb"),
                      "--format", fmt],
            )  # fmt: skip
            assert outcome.exit_code == 2, outcome.output
            assert "store not found" not in outcome.output, outcome.output


def test_select_experiment_and_report_check_out_first(tmp_path, responses, monkeypatch):
    import latentbench.select as select_lib

    ran = []
    monkeypatch.setattr(
        select_lib, "experiment_from_matrix", lambda *a, **k: ran.append(1) or 1 / 0
    )
    for out in _targets(tmp_path):
        outcome = runner.invoke(
            app,
            ["experiment", str(responses), "--budget", "20", "--out", str(out), "-q"],
        )
        assert outcome.exit_code == 2, (out, outcome.output, outcome.exception)
        assert "error:" in outcome.output and "Traceback" not in outcome.output
        report = runner.invoke(app, ["report", str(responses), "--out", str(out / "r.html"), "-q"])
        assert report.exit_code == 2, (out, report.output, report.exception)
        assert "fitting" not in report.output
    assert ran == []


def test_fit_checks_out_before_loading_and_fitting(tmp_path, responses, monkeypatch):
    import latentbench.cli._fit as fit_cli

    loaded = []
    real = fit_cli.load_matrix
    monkeypatch.setattr(fit_cli, "load_matrix", lambda *a, **k: loaded.append(1) or real(*a, **k))
    for out in _targets(tmp_path):
        outcome = runner.invoke(app, ["fit", str(responses), "--out", str(out), "-q"])
        assert outcome.exit_code == 2, (out, outcome.output, outcome.exception)
        assert "error:" in outcome.output and "Traceback" not in outcome.output
        assert out.name in outcome.output
    assert loaded == []  # refused before the input was read, every time
    assert (tmp_path / "a-file").read_text() == "keep me"


def test_fit_output_folder_has_the_umask_mode(tmp_path, responses):
    # the folder used to keep mkdtemp's private 0700 mode after the move into place
    reference = tmp_path / "reference"
    reference.mkdir()  # what the umask gives a new folder
    out = tmp_path / "fit"
    outcome = runner.invoke(app, ["fit", str(responses), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert (out / "fit.json").is_file()
    assert out.stat().st_mode & 0o777 == reference.stat().st_mode & 0o777
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []


def _folder_at(folder: Path, name: str) -> Path:
    """``folder/name`` made a folder (with a file of its own), where a command writes a file."""
    (folder / name).mkdir(parents=True)
    (folder / name / "keep").write_text("keep me")
    return folder / name


def _entries(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_write_directory_names_the_file_that_is_a_folder_and_writes_nothing(tmp_path):
    """A folder at the second file's name: abilities.csv was moved in, then the move of
    items.csv failed with 'cannot write OUT: Is a directory' (the output folder named, not
    the file, and a table of the new write left beside nothing). Now refused first, naming
    OUT/items.csv; nothing is moved in and no staging folder is left."""
    from latentbench.io._outputs import write_directory

    out = tmp_path / "fit"
    blocked = _folder_at(out, "items.csv")
    writers = {name: (lambda path: path.write_text("new")) for name in
               ("abilities.csv", "items.csv", "fit.json")}  # fmt: skip
    with pytest.raises(InputError) as info:
        write_directory(out, writers, last="fit.json")
    assert str(info.value).startswith(f"cannot write {blocked}: it is a folder; expected a file")
    assert str(info.value).endswith("; nothing was written")
    assert _entries(tmp_path) == ["fit", "fit/items.csv", "fit/items.csv/keep"]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("fit", "items.csv"),
        ("estimate", "estimate.json"),
        ("compare", "compare_items.csv"),
        ("compare", "compare.json"),
        ("select replay", "selection.json"),
        ("experiment", "summary.csv"),
    ],
)
def test_a_folder_at_an_output_file_is_named_before_the_work(tmp_path, responses, command, name):
    """``--out DIR`` where DIR/NAME (a file the command writes) is a folder: fit, estimate and
    compare said 'cannot write DIR: Is a directory' after the work (the folder, not the
    file; fit had moved abilities.csv in), select replay and experiment ended in a traceback
    (exit 1). Now
    each refuses before the work (exit 2), naming DIR/NAME and that a file path was
    expected; nothing is written."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.3 + 0.05 * i)) for i in range(10)
             for j in range(40)]  # fmt: skip
    calibration = tmp_path / "calib.parquet"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": [str(j) for j in range(40)], "score": np.tile([1.0, 0.0], 20)}).to_csv(
        new, index=False
    )
    two = tmp_path / "two.csv"
    pd.concat([pd.read_csv(new).assign(model=m) for m in ("x", "y")]).to_csv(two, index=False)
    out = tmp_path / "out"
    blocked = _folder_at(out, name)
    args = {
        "fit": ["fit", str(calibration)],
        "estimate": ["estimate", str(calibration), str(new), "--budget", "10"],
        "compare": ["compare", str(calibration), str(two), "--a", "x", "--b", "y",
                    "--budget", "6"],
        "select replay": ["select", "replay", str(calibration), "--budget", "20",
                          "--no-history"],
        "experiment": ["experiment", str(calibration), "--budget", "20", "--seeds", "1"],
    }[command]  # fmt: skip
    outcome = runner.invoke(app, [*args, "--out", str(out), "-q"])
    assert outcome.exit_code == 2, (outcome.output, outcome.exception)
    said = " ".join(outcome.output.split())
    assert f"cannot write {blocked}: it is a folder; expected a file path there" in said, said
    assert "Is a directory" not in said and "Traceback" not in said
    assert "warning" not in said  # refused before the work (fit's interval notes)
    assert _entries(out) == [name, f"{name}/keep"]
