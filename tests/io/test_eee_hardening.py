"""Every Eval Ever, hostile inputs (issue 30): detection, null ids, hostile values, exports.

Items 1-4, 7 and 14 (the conflict location) of issue 30. Every refusal is one ``error:`` line
with exit 2, never a traceback, and a file holding records never reads as 0 rows silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

REAL = Path(__file__).resolve().parents[1] / "data" / "formats" / "real"
DEMO = REAL / "eee" / "data" / "demo-source" / "demo-org" / "demo-model"

_register()
runner = CliRunner()


def demo_record(**changes: object) -> dict:
    record = json.loads(next(DEMO.glob("*_samples.jsonl")).read_text().splitlines()[0])
    record.update(changes)
    return record


def records(n: int = 20, **changes: object) -> list[dict]:
    return [demo_record(sample_id=f"s{k:02d}", **changes) for k in range(n)]


def write_lines(path: Path, lines: list[str], encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + "\n" for line in lines).encode(encoding))
    return path


def clean_error(outcome) -> str:
    """A refused command: exit 2, one ``error:`` line, no traceback."""
    text = outcome.output
    assert outcome.exit_code == 2, (outcome.exit_code, text, outcome.exception)
    assert text.count("error:") == 1 and "Traceback" not in text, text
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)
    return text


def ingest(paths: list[Path], store: Path):
    return runner.invoke(app, ["ingest", "eee", *map(str, paths), "--store", str(store)])


# ------------------------------------------------------------------ item 1: detection
@pytest.mark.parametrize("first", ["", "   ", "null"])
def test_a_folder_finds_a_file_whose_first_line_is_blank_or_null(tmp_path, first):
    lines = [first, *(json.dumps(r, sort_keys=True) for r in records())]
    write_lines(tmp_path / "run" / "x_samples.jsonl", lines)
    if first == "null":
        # a null line is not a record: refused by line, never skipped as "not an EEE file"
        text = clean_error(ingest([tmp_path / "run"], tmp_path / "s.duckdb"))
        assert "x_samples.jsonl:1" in text and "JSON object" in text
        return
    frame, report = read_results("eee", tmp_path / "run")
    assert report.records_read == len(frame) == 20


def test_a_folder_finds_a_file_whose_first_record_is_longer_than_64_kib(tmp_path):
    # keys sorted as our export writes them: a long prompt comes before "interaction_type"
    long = records(input={"raw": "x" * 200_000, "reference": ["4"]})
    lines = [json.dumps(r, sort_keys=True) for r in long]
    assert lines[0].index('"interaction_type"') > 65536
    write_lines(tmp_path / "run" / "x_samples.jsonl", lines)
    frame, report = read_results("eee", tmp_path / "run")
    assert report.records_read == len(frame) == 20


def test_a_latin1_file_is_found_and_refused_by_line_not_skipped(tmp_path):
    rows = records()
    rows[3]["input"] = {"raw": "caf\u00e9", "reference": ["4"]}
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    write_lines(tmp_path / "run" / "x_samples.jsonl", lines, "latin-1")
    for target in (tmp_path / "run", tmp_path / "run" / "x_samples.jsonl"):
        text = clean_error(ingest([target], tmp_path / "s.duckdb"))
        assert "x_samples.jsonl:4" in text and "UTF-8" in text


@pytest.mark.parametrize("bad", [0, 1])
def test_a_samples_file_beside_its_aggregate_missing_a_field_is_refused_by_line(tmp_path, bad):
    # finding f2: the defect in the FIRST record made the file "not EEE" (0 rows, exit 0)
    run = tmp_path / "run"
    for aggregate in DEMO.glob("*.json"):
        (run / aggregate.name).parent.mkdir(parents=True, exist_ok=True)
        (run / aggregate.name).write_bytes(aggregate.read_bytes())
    samples = next(DEMO.glob("*_samples.jsonl")).name
    rows = records(3)
    del rows[bad]["sample_id"]
    write_lines(run / samples, [json.dumps(r) for r in rows])
    text = clean_error(ingest([run], tmp_path / "s.duckdb"))
    assert f"{samples}:{bad + 1}: field 'sample_id' is missing" in text
    with pytest.raises(InputError, match=rf"{samples}:{bad + 1}: field 'sample_id' is missing"):
        read_results("eee", run)


def test_a_folder_without_eee_records_still_says_so(tmp_path):
    write_lines(tmp_path / "run" / "other.jsonl", ['{"a": 1}', "", "null"])
    with pytest.raises(InputError, match="no Every Eval Ever files found"):
        read_results("eee", tmp_path / "run")


# ------------------------------------------------------------------ item 2: null result id
def test_a_null_evaluation_result_id_is_accepted(tmp_path):
    path = write_lines(
        tmp_path / "x_samples.jsonl",
        [json.dumps(r) for r in records(evaluation_result_id=None)],
    )
    frame, _ = read_results("eee", path)
    assert len(frame) == 20 and set(frame["score"]) == {demo_record()["evaluation"]["score"]}
    bad = tmp_path / "y_samples.jsonl"
    write_lines(bad, [json.dumps(demo_record(evaluation_result_id=7))])
    with pytest.raises(InputError, match=r"field 'evaluation_result_id': value 7"):
        read_results("eee", bad)


# ------------------------------------------------------------------ item 4: hostile values
HOSTILE_META = [
    ("latentbench.trial", "abc"),
    ("latentbench.trial", "1.5"),
    ("latentbench.trial", "12345678901234567890123"),
    ("latentbench.trial", "-1"),
    ("latentbench.run_timestamp", "not a date"),
    ("latentbench.run_timestamp", "99999-01-01"),
]


@pytest.mark.parametrize(("key", "value"), HOSTILE_META)
def test_hostile_metadata_values_are_clean_errors(tmp_path, key, value):
    meta = {"latentbench.benchmark": "b", key: value}
    path = write_lines(tmp_path / "x_samples.jsonl", [json.dumps(demo_record(metadata=meta))])
    text = clean_error(ingest([path], tmp_path / "s.duckdb"))
    assert key in text and repr(value) in text


@pytest.mark.parametrize("stamp", ["1e300", "-1e12", "not a date", "inf"])
def test_hostile_evaluation_timestamps_are_clean_errors(tmp_path, stamp):
    folder = tmp_path / "pair"
    folder.mkdir()
    for p in DEMO.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    aggregate = next(folder.glob("*-*[0-9a-f].json"))
    doc = json.loads(aggregate.read_text())
    doc["evaluation_timestamp"] = stamp
    aggregate.write_text(json.dumps(doc))
    text = clean_error(ingest([folder], tmp_path / "s.duckdb"))
    assert "evaluation_timestamp" in text and repr(stamp) in text


def test_a_record_nested_200000_levels_is_a_clean_error(tmp_path):
    deep = '{"a": ' * 200_000 + "1" + "}" * 200_000
    record = json.dumps(demo_record())[:-1] + ', "evaluation_extra": ' + deep + "}"
    path = write_lines(tmp_path / "x_samples.jsonl", [record])
    text = clean_error(ingest([path], tmp_path / "s.duckdb"))
    assert "x_samples.jsonl:1" in text and "nested" in text
    aggregate = tmp_path / "agg" / "deep.json"
    aggregate.parent.mkdir()
    aggregate.write_text('{"evaluation_results": ' + "[" * 200_000 + "]" * 200_000 + "}")
    text = clean_error(ingest([aggregate], tmp_path / "s.duckdb"))
    assert "deep.json" in text and "nested" in text


# ------------------------------------------------------------------ item 14: conflict location
def test_a_conflict_names_the_files_being_read_not_the_metadata(tmp_path):
    meta = {"latentbench.benchmark": "b", "latentbench.source_file": "/elsewhere/orig.csv"}
    a = write_lines(tmp_path / "a_samples.jsonl", [json.dumps(demo_record(metadata=meta))])
    other = demo_record(metadata=meta)
    other["evaluation"] = {**other["evaluation"], "score": 0.25}
    b = write_lines(tmp_path / "b_samples.jsonl", [json.dumps(other)])
    with pytest.raises(InputError) as info:
        read_results("eee", [a, b])
    message = str(info.value)
    assert "a_samples.jsonl:1" in message and "b_samples.jsonl:1" in message
    assert "orig.csv" not in message
    # the provenance itself still round-trips
    frame, _ = read_results("eee", a)
    assert list(frame["source_file"]) == ["/elsewhere/orig.csv"]


# ------------------------------------------------------------------ item 3: path traversal
def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _store_with(path: Path, models: list[str], benchmark: str) -> pd.DataFrame:
    rows = [
        {"model": m, "item": f"q{k}", "score": float((j + k) % 2)}
        for j, m in enumerate(models)
        for k in range(5)
    ]
    table = path.parent / "in.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    with Store(path) as store:
        store.ingest(*read_results("table", table, benchmark=benchmark))
        return store.long()


@pytest.mark.parametrize(
    ("models", "benchmark"),
    [
        (["../evil", "ok/model", "..", "."], ".."),
        (["../../../etc/x", "a/./b", "dev/..", "/abs"], "."),
        (["x" * 400, "y/" + "z" * 400, "\u202e\x1b[31m/..\\.."], "b" * 300),
    ],
)
def test_export_eee_writes_nothing_outside_out_and_loses_nothing(tmp_path, models, benchmark):
    work = tmp_path / "work"
    work.mkdir()
    original = _store_with(work / "a.duckdb", models, benchmark)
    before = {p for p in tmp_path.rglob("*")}
    out = work / "out"
    outcome = runner.invoke(
        app, ["export", str(out), "--store", str(work / "a.duckdb"), "--format", "eee"]
    )
    assert outcome.exit_code == 0, outcome.output
    created = {p for p in tmp_path.rglob("*")} - before
    assert created and all(p.is_relative_to(out) for p in created), sorted(created)
    assert all(len(part.encode()) <= 255 for p in created for part in p.parts)
    assert out.stat().st_mode & 0o777 == 0o777 & ~_umask()  # not a private staging folder
    frame, report = read_results("eee", out)
    assert report.rows == len(original)
    with Store(work / "b.duckdb") as copy:
        copy.ingest(frame, report)
        pd.testing.assert_frame_equal(copy.long(), original)


_WINDOWS_DEVICES = {"con", "prn", "aux", "nul"} | {
    f"{d}{k}" for d in ("com", "lpt") for k in range(1, 10)
}


def test_export_eee_folder_names_are_portable_to_windows(tmp_path):
    """An EEE export is shared (a dataset repository others clone): a folder named after a
    model or benchmark called ``CON``, ``nul.x`` or ``lpt1``, or ending in a dot, cannot be
    created on Windows, and a clone of a repository holding one fails there."""
    work = tmp_path / "work"
    work.mkdir()
    models = ["CON", "org/nul.json", "com1", "dev/LPT9.x", "m.", "Aux..", "ok"]
    original = _store_with(work / "a.duckdb", models, "prn")
    out = work / "out"
    outcome = runner.invoke(
        app, ["export", str(out), "--store", str(work / "a.duckdb"), "--format", "eee"]
    )
    assert outcome.exit_code == 0, outcome.output
    for path in out.rglob("*"):
        name = path.name
        assert name.split(".")[0].lower() not in _WINDOWS_DEVICES, path.relative_to(out)
        assert not name.endswith((".", " ")), path.relative_to(out)
    frame, report = read_results("eee", out)
    assert report.rows == len(original)
    assert set(frame["model"]) == set(models)


# ------------------------------------------------------------------ item 7: no partial output
def test_a_failed_eee_export_leaves_nothing(tmp_path, monkeypatch):
    original = _store_with(tmp_path / "a.duckdb", [f"org/m{k}" for k in range(8)], "b")
    out = tmp_path / "out"
    calls = {"n": 0}
    real = Path.write_text

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:  # the disk fills half way through
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing)
    outcome = runner.invoke(
        app, ["export", str(out), "--store", str(tmp_path / "a.duckdb"), "--format", "eee"]
    )
    monkeypatch.undo()
    text = clean_error(outcome)
    assert "No space left" in text
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.duckdb", "in.csv"]
    # an earlier export in OUT is kept whole when a later one fails
    assert (
        runner.invoke(
            app, ["export", str(out), "--store", str(tmp_path / "a.duckdb"), "--format", "eee"]
        ).exit_code
        == 0
    )
    snapshot = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    calls["n"] = 0
    monkeypatch.setattr(Path, "write_text", failing)
    outcome = runner.invoke(
        app, ["export", str(out), "--store", str(tmp_path / "a.duckdb"), "--format", "eee"]
    )
    monkeypatch.undo()
    clean_error(outcome)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot
    assert len(read_results("eee", out)[0]) == len(original)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_failed_table_export_leaves_no_partial_file(tmp_path, monkeypatch):
    _store_with(tmp_path / "a.duckdb", ["m1", "m2"], "b")
    target = tmp_path / "x.csv"
    target.write_text("the previous export\n")
    import duckdb

    real_execute = duckdb.DuckDBPyConnection.execute

    class Conn:
        def __init__(self, conn):
            self._conn = conn

        def execute(self, query, *args):
            if query.startswith("COPY"):
                # the disk fills while COPY writes: a truncated file is on disk
                path = query.split(" TO '")[1].split("'")[0]
                Path(path).write_text("model,benchm")
                raise duckdb.IOException("No space left on device")
            return real_execute(self._conn, query, *args)

        def __getattr__(self, name):
            return getattr(self._conn, name)

    with Store(tmp_path / "a.duckdb", read_only=True) as store:
        monkeypatch.setattr(store, "connection", Conn(store.connection))
        with pytest.raises(InputError, match="No space left"):
            store.export(target, force=True)
    assert target.read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.duckdb", "in.csv", "x.csv"]
