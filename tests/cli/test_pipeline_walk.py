"""latentbench run from scripts and CI (issue auto109): unwritable outputs are a clear
error (exit 2) found before the work, and a non-UTF-8 standard output (``LC_ALL=C`` with
UTF-8 mode off) never costs a traceback, nor a JSON document that does not parse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()
UNWRITABLE = Path("/proc/latentbench-unwritable")  # not even root can create it
needs_proc = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("walk")
    cal = folder / "cal.csv"
    rows = ["model,q1,q2,q3,q4,q5,q6"]
    for k, bits in enumerate(("110101", "100100", "111100", "010010", "110011", "101110")):
        rows.append(f"m{k}," + ",".join(bits))
    cal.write_text("\n".join(rows) + "\n")
    new = folder / "new.csv"
    cells = [f"{m},q{j},{(j + len(m)) % 2}\n" for m in ("néw-a", "new-b") for j in range(1, 7)]
    new.write_text("model,item,score\n" + "".join(cells))
    fit = folder / "fit"
    outcome = runner.invoke(app, ["fit", str(cal), "--out", str(fit), "-q"])
    assert outcome.exit_code == 0, outcome.output
    return {"cal": cal, "new": new, "fit": fit, "folder": folder}


def _refused(outcome, where: str) -> str:
    text = outcome.output
    assert outcome.exit_code == 2, (outcome.exit_code, text, outcome.exception)
    assert "error:" in text and "Traceback" not in text
    assert not isinstance(outcome.exception, Exception) or isinstance(outcome.exception, SystemExit)
    assert where in " ".join(text.split()), text
    return text


@needs_proc
@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_estimate_to_an_unwritable_out(data, as_json):
    # it was a traceback (exit 1) after the work: os.access says yes to root in /proc
    outcome = runner.invoke(
        app, ["estimate", str(data["fit"]), str(data["new"]), "--budget", "3",
              "--out", str(UNWRITABLE), *as_json])  # fmt: skip
    _refused(outcome, f"--out {UNWRITABLE}: cannot write in /proc")
    assert not UNWRITABLE.exists()


@needs_proc
def test_compare_to_an_unwritable_out(data):
    outcome = runner.invoke(
        app, ["compare", str(data["fit"]), str(data["new"]), "--a", "néw-a", "--b", "new-b",
              "--budget", "3", "--out", str(UNWRITABLE), "--json"])  # fmt: skip
    _refused(outcome, f"--out {UNWRITABLE}: cannot write in /proc")


@needs_proc
@pytest.mark.parametrize("name", ["items.csv", "items.parquet"])
def test_tiny_to_an_unwritable_file(data, name):
    # it was pandas' FileNotFoundError traceback (exit 1) after the calibration was read
    out = UNWRITABLE.parent / name
    outcome = runner.invoke(app, ["tiny", str(data["fit"]), "--k", "2", "--out", str(out)])
    _refused(outcome, f"--out {out}: cannot write in /proc")


def test_tiny_to_a_full_device(tmp_path, data):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    link = tmp_path / "items.csv"
    link.symlink_to("/dev/full")
    outcome = runner.invoke(
        app, ["tiny", str(data["fit"]), "--k", "2", "--out", str(link), "--force"]
    )
    _refused(outcome, f"--out {link}: cannot write it")


def _ascii_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``latentbench ARGS`` as a CI job with ``LC_ALL=C`` and UTF-8 mode off runs it: its
    standard streams encode ASCII only."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
           "PYTHONIOENCODING": "", "NO_COLOR": "1"}  # fmt: skip
    script = "from latentbench.cli import main\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True,
        stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip


def test_ascii_stdout_prints_results_without_a_traceback(data):
    # the en dash of "would rank 3rd (1st–5th)" and a model id 'néw-a' were a
    # UnicodeEncodeError traceback (exit 1)
    done = _ascii_run(["estimate", str(data["fit"]), str(data["new"]), "--budget", "3"],
                      data["folder"])  # fmt: skip
    err = done.stderr.decode("ascii")
    assert done.returncode == 0, err
    out = done.stdout.decode("ascii")  # nothing but ASCII came out
    assert "Traceback" not in out + err
    assert "new-b: score" in out and "would rank" in out


@pytest.mark.parametrize("command", ["estimate", "ingest", "ls"])
def test_ascii_stdout_json_parses_to_the_same_ids(tmp_path, data, command):
    # ingest's and ls's JSON went through rich unescaped: 'néw-a' was a UnicodeEncodeError
    # traceback, and with the streams made tolerant a '\\xe9' that no JSON parser reads
    store = tmp_path / "s.duckdb"
    ingest = ["ingest", "table", str(data["new"]), "--benchmark", "b", "--store", str(store)]
    args = {
        "estimate": ["estimate", str(data["fit"]), str(data["new"]), "--budget", "3"],
        "ingest": ingest,
        "ls": ["ls", "--store", str(store), "--benchmark", "b"],
    }[command]
    if command == "ls":  # the store made in this process: ingest's own run is [ingest]
        outcome = runner.invoke(app, ingest)
        assert outcome.exit_code == 0, outcome.output
    done = _ascii_run([*args, "--json"], tmp_path)
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")
    text = done.stdout.decode("ascii")  # strict ASCII: the ids are \\u escapes

    def refuse(token: str) -> None:
        raise ValueError(token)

    assert "néw-a" in json.dumps(json.loads(text, parse_constant=refuse), ensure_ascii=False)


def test_two_runs_started_together_never_share_the_default_out(tmp_path, monkeypatch, data):
    # both chose ./latentbench-select when they started; the second to finish wrote over
    # the first's selection.json and both said "wrote latentbench-select/selection.json"
    import latentbench.select as select

    inner = select.replay

    def replay(*args, **kwargs):
        result = inner(*args, **kwargs)
        other = Path("latentbench-select")  # the other run finishes first
        other.mkdir()
        (other / "selection.json").write_text('{"the": "other run"}')
        return result

    monkeypatch.setattr(select, "replay", replay)
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(app, ["select", "replay", str(data["cal"]), "--no-history", "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert json.loads((tmp_path / "latentbench-select" / "selection.json").read_text()) == {
        "the": "other run"
    }
    assert "wrote latentbench-select-2/selection.json" in outcome.output
    assert "best_model" in json.loads(
        (tmp_path / "latentbench-select-2" / "selection.json").read_text()
    )


def test_claim_out(tmp_path, monkeypatch):
    from latentbench.cli._common import claim_out

    monkeypatch.chdir(tmp_path)
    given = tmp_path / "mine"
    assert claim_out(given, given, "x") == given and not given.exists()  # --out: as given
    assert claim_out(Path("x"), None, "x") == Path("x") and Path("x").is_dir()
    assert claim_out(Path("x"), None, "x") == Path("x-2")  # taken since it was chosen
    assert claim_out(Path("x"), None, "x") == Path("x-3")


LONG = "a_folder_name_as_long_as_the_ones_ci_workspaces_have/and_one_more_level_of_nesting"


@pytest.mark.parametrize("command", ["report", "select", "tiny", "export", "experiment"])
def test_wrote_lines_keep_a_long_path_on_one_line(tmp_path, data, command):
    # outside a terminal rich folded these lines at 80 columns, cutting the path in two
    # (".../and_a" / "nother_level/report.html"): a script reading "wrote PATH" got half
    folder = tmp_path / LONG
    folder.mkdir(parents=True)
    store = tmp_path / "s.duckdb"
    if command == "export":
        assert runner.invoke(app, ["ingest", "table", str(data["cal"]), "--benchmark", "b",
                                   "--store", str(store)]).exit_code == 0  # fmt: skip
    args, written = {
        "report": (["report", str(data["fit"]), "--out", str(folder / "r.html")], "r.html"),
        "select": (
            [
                "select",
                "replay",
                str(data["cal"]),
                "--no-history",
                "-q",
                "--out",
                str(folder / "sel"),
            ],
            "sel/selection.json",
        ),
        "tiny": (["tiny", str(data["fit"]), "--k", "2", "--out", str(folder / "i.csv")], "i.csv"),
        "export": (["export", str(folder / "e.csv"), "--store", str(store)], "e.csv"),
        "experiment": (
            [
                "experiment",
                str(data["cal"]),
                "--seeds",
                "2",
                "-q",
                "--init-batch",
                "2",
                "--out",
                str(folder / "exp"),
            ],
            "exp/summary.json",
        ),
    }[command]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert (folder / written).exists()
    line = next(x for x in outcome.output.splitlines() if x.startswith("wrote "))
    assert str(folder / written) in line, outcome.output


def test_experiment_on_a_matrix_the_initial_batch_exhausts(tmp_path, data):
    # it said "error: --budget 0; expected a positive number of cells per run", a budget
    # nobody gave (the default schedule's initial batch took every item)
    outcome = runner.invoke(
        app, ["experiment", str(data["cal"]), "--seeds", "2", "--out", str(tmp_path / "e")]
    )
    text = _refused(outcome, "--init-batch 6; the initial batch takes all 6 item(s)")
    assert "--budget 0" not in text
    assert not (tmp_path / "e").exists()


def test_two_tiny_runs_started_together_keep_both_designs(tmp_path, monkeypatch, data):
    # both chose ./items.csv when they started; the second wrote over the first's design
    import latentbench.select as select

    inner = select.tiny

    def tiny(*args, **kwargs):
        frame = inner(*args, **kwargs)
        Path("items.csv").write_text("the other run's design\n")  # it finished first
        return frame

    monkeypatch.setattr(select, "tiny", tiny)
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(app, ["tiny", str(data["fit"]), "--k", "2"])
    assert outcome.exit_code == 0, outcome.output
    assert (tmp_path / "items.csv").read_text() == "the other run's design\n"
    assert "wrote 2 items to items-2.csv" in outcome.output
    assert (tmp_path / "items-2.csv").read_text().startswith("item,order,probability")


def test_estimate_without_a_home_directory(tmp_path, data):
    # no HOME and no passwd entry for the uid (a container run under an arbitrary uid):
    # Path.home() raised RuntimeError through the calibration cache, a traceback (exit 1)
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "LATENTBENCH_CACHE_DIR")}
    script = (
        "import pwd\n"
        "def unknown(uid):\n"
        "    raise KeyError(f'getpwuid(): uid not found: {uid}')\n"
        "pwd.getpwuid = unknown\n"
        "from latentbench.cli import main\n"
        "main()\n"
    )
    args = ["estimate", str(data["cal"]), str(data["new"]), "--budget", "3", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert [r["model"] for r in json.loads(done.stdout)] == ["néw-a", "new-b"]


@pytest.mark.parametrize("command", ["select", "experiment"])
def test_an_explicit_out_reused_says_what_it_replaces(tmp_path, data, command):
    # estimate, compare and experiment --task estimate said it; select replay and
    # experiment replaced their files silently
    out = tmp_path / "run"
    args, replaced = {
        "select": (
            ["select", "replay", str(data["cal"]), "--no-history", "-q"],
            "(replacing the earlier selection.json)",
        ),
        "experiment": (
            ["experiment", str(data["cal"]), "--seeds", "2", "-q", "--init-batch", "2"],
            "(replacing the earlier summary.json, summary.csv, curves.csv)",
        ),
    }[command]
    first = runner.invoke(app, [*args, "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "replacing" not in first.output
    again = runner.invoke(app, [*args, "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert replaced in " ".join(again.output.split())


def test_two_reports_started_together_keep_both_pages(tmp_path, monkeypatch, data):
    # both chose ./report.html when they started, and the one to finish last wrote over
    # the other's page (both said "wrote report.html")
    import latentbench.report as report

    inner = report.report_from

    def report_from(*args, **kwargs):
        # the other run starts now: it writes to the first default name that is free
        other = next(
            p for p in (Path(f"report{s}.html") for s in ("", "-2", "-3")) if not p.exists()
        )
        other.write_text("the other run's page")
        return inner(*args, **kwargs)

    monkeypatch.setattr(report, "report_from", report_from)
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(app, ["report", str(data["fit"]), "-q"])
    assert outcome.exit_code == 0, outcome.output
    pages = {p.name: p.read_text() for p in tmp_path.glob("report*.html")}
    assert sorted(pages) == ["report-2.html", "report.html"]
    assert pages["report-2.html"] == "the other run's page"
    assert pages["report.html"].lstrip().lower().startswith("<!doctype html")
    assert "wrote report.html" in outcome.output


def test_a_failed_report_leaves_no_default_page(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.csv").write_text("")
    outcome = runner.invoke(app, ["report", str(tmp_path / "bad.csv")])
    _refused(outcome, "the file is empty")
    assert list(tmp_path.glob("report*.html")) == []


@pytest.mark.parametrize("benchmark", [None, "b"])
def test_ls_json_numbers_are_the_stores_to_the_last_digit(tmp_path, data, benchmark):
    # to_json rounded them to 10 decimals (0.9997858214 for 0.99978582141...)
    from latentbench.io import Store

    store = tmp_path / "s.duckdb"
    wide = tmp_path / "w.csv"
    wide.write_text("model,q1,q2,q3\nm1,1,0,\nm2,,1,1\nm3,1,1,0\n")  # 7 of 9 observed
    ingest = ["ingest", "table", str(wide), "--benchmark", "b", "--store", str(store)]
    assert runner.invoke(app, ingest).exit_code == 0
    args = ["ls", "--store", str(store), "--json"] + ([] if benchmark is None else
                                                      ["--benchmark", benchmark])  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output

    def refuse(token: str) -> None:
        raise ValueError(token)

    shown = json.loads(outcome.output, parse_constant=refuse)
    with Store(store, read_only=True) as db:
        frame = db.summary() if benchmark is None else db.coverage(benchmark)
    expected = json.loads(frame.to_json(orient="records", double_precision=15))
    assert len(shown) == len(expected) and shown[0].keys() == expected[0].keys()
    numbers = [(k, v) for k, v in frame.iloc[0].items() if isinstance(v, float)]
    assert numbers  # a fraction of observed cells, at least
    for key, value in numbers:
        assert shown[0][key] == value, key
