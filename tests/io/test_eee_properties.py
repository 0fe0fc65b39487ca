"""Property-based tests (hypothesis) for Every Eval Ever (issue 30).

1. Any canonical table our export writes reads back with the same values, every column.
2. Any instance-level record the every_eval_ever 0.3.0 JSON schema accepts (vendored under
   tests/data/eee-schema-0.3.0) imports with its model, benchmark, item and score. (The
   package's own pydantic models need Python >= 3.12; the schema files are what it validates
   with, so they stand in here.)
3. Arbitrary bytes, encodings, nesting and sizes given to ``latentbench ingest eee`` exit 0 or
   2 with exactly one ``error:`` line, never a traceback, and never a silent 0 rows.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io.formats import CANONICAL_COLUMNS, read_results, write_eee
from latentbench.io.formats._common import KEY_COLUMNS

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "eee-schema-0.3.0"
INSTANCE_SCHEMA = jsonschema.Draft7Validator(
    json.loads((SCHEMAS / "instance_level_eval.schema.json").read_text())
)
SETTINGS = settings(
    max_examples=int(os.environ.get("LB_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_register()
runner = CliRunner()

# any text but surrogates (not encodable as UTF-8): control, bidi, separators, path pieces
TEXT = st.text(
    st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12
) | st.sampled_from(
    ["..", ".", "../x", "a/b", "\\", "\r", "x\x00y", "\u202e", "\u2028", "=1+1", "NaT", " "]
)
SCORE = st.floats(0.0, 1.0, allow_nan=False) | st.sampled_from([0.0, 1.0])
STAMP = st.none() | st.datetimes(
    min_value=pd.Timestamp("1700-01-01").to_pydatetime(),
    max_value=pd.Timestamp("2250-01-01").to_pydatetime(),
)


@st.composite
def canonical_frames(draw) -> pd.DataFrame:
    n = draw(st.integers(1, 12))
    pools = {c: draw(st.lists(TEXT, min_size=1, max_size=3, unique=True)) for c in
             ("model", "benchmark", "item", "metric", "filter", "split", "source")}  # fmt: skip
    rows = []
    for _ in range(n):
        row = {c: draw(st.sampled_from(pool)) for c, pool in pools.items()}
        row.update(
            score=draw(SCORE),
            trial=draw(st.integers(0, 2**63 - 1) | st.integers(0, 3)),
            source_file=draw(TEXT),
            run_timestamp=draw(STAMP),
            item_hash=draw(st.none() | TEXT),
            source_model=draw(TEXT),
            flag=draw(st.none() | TEXT),
        )
        rows.append(row)
    frame = pd.DataFrame(rows).drop_duplicates(list(KEY_COLUMNS)).reset_index(drop=True)
    frame["run_timestamp"] = pd.to_datetime(frame["run_timestamp"]).astype("datetime64[us]")
    for column in CANONICAL_COLUMNS:
        if column not in ("score", "trial", "run_timestamp"):
            frame[column] = pd.array(frame[column], dtype="str")
    return frame[list(CANONICAL_COLUMNS)]


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(KEY_COLUMNS)).reset_index(drop=True)[list(CANONICAL_COLUMNS)]


@SETTINGS
@given(frame=canonical_frames())
def test_whatever_we_export_reads_back_identically(frame):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        write_eee(frame, out)
        assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))
        back, report = read_results("eee", out)
    assert report.rows == len(frame)
    pd.testing.assert_frame_equal(_sorted(back), _sorted(frame), check_dtype=False)


OTHER_KEYS = TEXT.filter(lambda t: not t.startswith("latentbench."))


@st.composite
def schema_records(draw) -> list[dict]:
    records = []
    for k in range(draw(st.integers(1, 6))):
        score = draw(SCORE)
        record = {
            "schema_version": draw(st.sampled_from(["0.3.0", "0.2.1"])),
            "evaluation_id": draw(TEXT),
            "model_id": draw(TEXT),
            "evaluation_name": draw(TEXT),
            "sample_id": f"{draw(TEXT)}#{k}",
            "interaction_type": "single_turn",
            "input": {
                "raw": draw(st.text(max_size=50)),
                "reference": draw(st.lists(TEXT, max_size=2)),
            },
            "output": {"raw": draw(st.lists(st.text(max_size=20), max_size=2))},
            "answer_attribution": [],
            "evaluation": {"score": score, "is_correct": draw(st.booleans())},
        }
        for key, value in (
            ("evaluation_result_id", st.none() | TEXT),
            ("sample_hash", st.none() | TEXT),
            ("metadata", st.dictionaries(OTHER_KEYS, TEXT, max_size=3)),
        ):  # fmt: skip
            if draw(st.booleans()):
                record[key] = draw(value)
        records.append(record)
    return records


@SETTINGS
@given(records=schema_records())
def test_records_the_schema_accepts_import_with_their_values(records):
    for record in records:
        assume(not list(INSTANCE_SCHEMA.iter_errors(record)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x_samples.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        frame, report = read_results("eee", Path(tmp), duplicates="latest")
    columns = [frame[c] for c in ("model", "benchmark", "item", "score")]
    got = {(m, b, i): s for m, b, i, s in zip(*columns, strict=True)}
    assert report.records_read == len(records)
    assert got == {
        (r["model_id"], r["evaluation_name"], r["sample_id"]): r["evaluation"]["score"]
        for r in records
    }


# ------------------------------------------------------------------ hostile bytes
def _demo_lines(n: int) -> list[str]:
    base = {
        "schema_version": "0.3.0", "evaluation_id": "e", "model_id": "org/m",
        "evaluation_name": "b", "interaction_type": "single_turn",
        "input": {"raw": "q", "reference": ["a"]}, "output": {"raw": ["a"]},
        "answer_attribution": [], "evaluation": {"score": 1.0, "is_correct": True},
    }  # fmt: skip
    return [json.dumps({**base, "sample_id": f"s{k}"}, sort_keys=True) for k in range(n)]


MUTATIONS = st.sampled_from(
    ["none", "bytes", "encoding", "nest", "blank", "null", "truncate", "huge", "latentbench"]
)


@st.composite
def hostile_files(draw) -> tuple[bytes, int]:
    lines = _demo_lines(draw(st.integers(1, 5)))
    kind = draw(MUTATIONS)
    encoding = "utf-8"
    if kind == "encoding":
        encoding = draw(st.sampled_from(["utf-16", "utf-8-sig", "latin-1", "cp1252", "utf-32"]))
        lines[0] = lines[0].replace('"q"', '"caf\u00e9"')
    elif kind == "nest":
        depth = draw(st.sampled_from([10, 1000, 50_000]))
        lines.insert(draw(st.integers(0, len(lines))), "[" * depth + "]" * depth)
    elif kind == "blank":
        lines = [""] * draw(st.integers(1, 5)) + lines
    elif kind == "null":
        lines.insert(draw(st.integers(0, len(lines))), "null")
    elif kind == "huge":
        lines[0] = lines[0].replace(
            '"q"', json.dumps("x" * draw(st.sampled_from([70_000, 300_000])))
        )
    elif kind == "latentbench":
        value = draw(st.sampled_from(["abc", "1.5", "1" * 23, "-1", "not a date", "1e300", ""]))
        key = draw(st.sampled_from(["trial", "run_timestamp", "benchmark", "metric"]))
        record = json.loads(lines[0])
        record["metadata"] = {f"latentbench.{key}": value}
        lines[0] = json.dumps(record)
    data = ("\n".join(lines) + "\n").encode(encoding, "replace")
    if kind == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=20)) + data[at:]
    elif kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    return data, len(lines)


@SETTINGS
@given(case=hostile_files(), named=st.booleans())
def test_hostile_bytes_exit_0_or_2_with_one_error_line(case, named):
    data, _ = case
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        folder.mkdir()
        path = folder / "x_samples.jsonl"
        path.write_bytes(data)
        target = path if named else folder
        outcome = runner.invoke(
            app, ["ingest", "eee", str(target), "--store", str(Path(tmp) / "s.duckdb")]
        )
    text = outcome.output
    assert outcome.exit_code in (0, 2), (outcome.exit_code, text, outcome.exception)
    assert "Traceback" not in text
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), repr(
        outcome.exception
    )
    if outcome.exit_code == 2:
        assert text.count("error:") == 1, text
        return
    # exit 0: every record present was read, never a silent 0 rows
    counts = re.search(r"([\d,]+) records?, ([\d,]+) rows?", text)
    assert counts is not None, text
    present = sum(1 for line in data.split(b"\n") if line.strip())
    read, rows = (int(group.replace(",", "")) for group in counts.groups())
    assert read == rows == present, text
