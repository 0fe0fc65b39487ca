"""Inspect AI logs published in public repositories (tests/data/formats/README.md lists them).

Values are checked against the raw files, read here with ``json``/``zipfile`` only.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

REAL = Path(__file__).resolve().parents[1] / "data" / "formats" / "real" / "inspect"
GOOD, BAD = REAL / "good", REAL / "bad"
VALUE = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def raw_cells(path: Path) -> dict[tuple[str, str, int], float]:
    """(model, sample id, epoch - 1) -> score, straight from the log (one scorer per log)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read("header.json"))
            samples = [
                json.loads(archive.read(n)) for n in archive.namelist() if n.startswith("samples/")
            ]
    else:
        header = json.loads(path.read_text())
        samples = header["samples"]
    model = header["eval"]["model"]
    out = {}
    for sample in samples:
        (score,) = sample["scores"].values()
        out[(model, str(sample["id"]), sample["epoch"] - 1)] = VALUE[score["value"]]
    return out


def rows_by_file(frame):
    return {
        file: {(r.model, r.item, r.trial): r.score for r in group.itertuples(index=False)}
        for file, group in frame.groupby("source_file")
    }


@pytest.mark.parametrize("path", sorted(GOOD.iterdir()), ids=lambda p: p.name)
def test_every_good_log_matches_the_raw_file(path):
    frame, report = read_results("inspect", path)
    assert {(r.model, r.item, r.trial): r.score for r in frame.itertuples()} == raw_cells(path)
    assert report.records_read == report.rows + sum(report.dropped.values())
    header = json.loads(
        zipfile.ZipFile(path).read("header.json") if zipfile.is_zipfile(path) else path.read_text()
    )
    assert set(frame["source"]) == {f"inspect_ai {header['eval']['packages']['inspect_ai']}"}


def test_at_least_five_tool_versions_are_read():
    frame, _ = read_results("inspect", GOOD)
    versions = {s.split()[1].split(".dev")[0] for s in frame["source"]}
    assert versions >= {"0.3.41", "0.3.95", "0.3.108", "0.3.138", "0.3.154"}


def _copy_with_model(source: Path, target: Path, model: str) -> None:
    log = json.loads(source.read_text())
    log["eval"]["model"] = model
    target.write_text(json.dumps(log))


def test_fifty_logs_five_bad_store_the_good_and_report_the_bad(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    good_json = sorted(GOOD.glob("*.json"))
    for k in range(45):
        source = good_json[k % len(good_json)]
        _copy_with_model(source, folder / f"{k:02d}_{source.name}", f"org/model-{k}")
    bad = sorted(BAD.iterdir())
    assert len(bad) == 5
    for path in bad:
        shutil.copy(path, folder / path.name)
    frame, report = read_results("inspect", folder)
    assert frame["source_file"].nunique() == 45
    assert frame["model"].nunique() == 45
    reasons = {Path(s["file"]).name: s["reason"] for s in report.skipped_files}
    assert set(reasons) == {p.name for p in bad}
    assert reasons["2025-05-12T20-28-13-04-00_no-samples.json"].startswith(
        "no samples (status cancelled"
    )
    assert reasons["data_with_llm_scoring.json"].startswith("no samples (status success")
    assert reasons["data_cvebench_empty_choices.json"].startswith("its one sample errored")
    assert reasons["log_tool_call_error.json"].startswith("no sample has a score")
    assert reasons["2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"].startswith(
        "no sample has a score"
    )
    assert report.records_read == report.rows + sum(report.dropped.values())
    # the cancelled log that did score its samples is read, with a note
    assert any("status cancelled; 3 rows" in note for note in report.notes)
    with Store(tmp_path / "s.duckdb") as store:
        result = store.ingest(frame, report)
        assert result["n_new"] == len(frame)

    # --errored zero: the errored sample becomes an explicit, flagged 0 row
    frame, report = read_results("inspect", folder, errored="zero")
    zero = frame[frame["flag"].notna()]
    assert len(zero) == 1
    assert zero.iloc[0][["item", "score", "filter", "flag"]].tolist() == [
        "CVE-2024-36858-one_day",
        0.0,
        "check_exploit",  # the scorer the log declares
        "errored sample scored 0",
    ]
    assert report.flagged == {"errored sample scored 0 (--errored zero)": 1}
    assert len(report.skipped_files) == 4


def test_only_bad_logs_is_an_error_listing_the_reasons():
    with pytest.raises(InputError, match=r"no usable results in 5 files: .*no samples"):
        read_results("inspect", BAD)


def test_a_folder_without_inspect_logs_is_an_error(tmp_path):
    (tmp_path / "notes.json").write_text('{"a": 1}')
    with pytest.raises(InputError, match=r"no Inspect logs found"):
        read_results("inspect", tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no result files found"):
        read_results("inspect", empty)


def test_eval_and_its_json_conversion_are_one_observation(tmp_path):
    pair = [GOOD / "log_read_sample.eval", GOOD / "log_read_sample.json"]
    frame, report = read_results("inspect", pair)
    assert len(frame) == 1
    assert report.dropped == {"same observation in another file or tool version (kept once)": 1}
    with Store(tmp_path / "s.duckdb") as store:
        assert store.ingest(*read_results("inspect", pair[0]))["n_new"] == 1
        assert store.ingest(*read_results("inspect", pair[1]))["n_new"] == 0
        assert store.long()[["item", "score", "source_file"]].values.tolist() == [
            ["1", 1.0, str(pair[0])]
        ]


def _eval_with_value(source: Path, target: Path, value: str) -> None:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename.startswith("samples/"):
                sample = json.loads(data)
                for score in sample["scores"].values():
                    score["value"] = value
                data = json.dumps(sample).encode()
            new.writestr(info, data)


def test_a_conflicting_eval_names_both_members(tmp_path):
    changed = tmp_path / "rescored.eval"
    _eval_with_value(GOOD / "log_read_sample.eval", changed, "I")
    with pytest.raises(
        InputError,
        match=r"log_read_sample\.eval: member samples/1_epoch_1\.json and .*rescored\.eval: "
        r"member samples/1_epoch_1\.json give different scores \(1\.0 and 0\.0\)",
    ):
        read_results("inspect", [GOOD / "log_read_sample.eval", changed])
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(*read_results("inspect", GOOD / "log_read_sample.json"))
        with pytest.raises(InputError, match=r"rescored\.eval .* gives score 0\.0 but .*json"):
            store.ingest(*read_results("inspect", changed))
        frame, report = read_results("inspect", changed)
        assert store.ingest(frame, report, duplicates="latest")["n_replaced"] == 1
        assert store.long()["score"].tolist() == [0.0]


def test_the_log_folder_manifest_of_an_eval_set_is_skipped_said(tmp_path):
    # inspect eval-set writes logs.json beside the logs: {log name: EvalLog header}; it was
    # read as a log ("field 'eval' is missing"), so no eval-set folder could be ingested
    log = GOOD / "log_formats.eval"
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(log, logs / log.name)
    with zipfile.ZipFile(log) as archive:
        header = json.loads(archive.read("header.json"))
    manifest = logs / "logs.json"
    manifest.write_text(json.dumps({log.name: header}))
    alone, _ = read_results("inspect", log)
    frame, report = read_results("inspect", logs)
    assert frame.drop(columns="source_file").equals(alone.drop(columns="source_file"))
    assert report.skipped_files == [
        {
            "file": str(manifest),
            "reason": "a log folder's manifest (the headers of 1 log, no samples: inspect "
            "eval-set writes it as logs.json); the logs it lists are the files to read",
        }
    ]
    with pytest.raises(InputError, match=r"logs\.json: a log folder's manifest"):
        read_results("inspect", manifest)  # named alone: no rows, and why
