"""Files as they arrive from other machines: byte-order marks, CRLF line ends, UTF-16,
compressed files and archives, text holding Unicode line separators, paths with ``~``.

Each reads as the plain file does, or is refused naming the file and saying what to do.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.io.formats import read_results

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
LM_EVAL = FORMATS / "lm-eval" / "v0.4.9"
LM_OPTIONS = {
    "metric": {"arc_easy": "acc", "gsm8k": "exact_match"},
    "filter": {"gsm8k": "strict-match"},
}

# (source, fixture folder, read_results options): every JSON-reading source
JSON_SOURCES = [
    ("lm-eval", LM_EVAL, LM_OPTIONS),
    ("helm", FORMATS / "helm" / "benchmark_output", {"metric": "exact_match"}),
    ("inspect", FORMATS / "inspect" / "logs", {"filter": {"theory_of_mind": "model_graded_fact"}}),
    ("opencompass", FORMATS / "opencompass" / "outputs", {}),
    ("eee", FORMATS / "real" / "eee" / "data", {}),
]
_KEY = ["model", "benchmark", "item", "metric", "filter", "trial", "split", "score"]


def _cells(frame: pd.DataFrame) -> list[tuple[object, ...]]:
    return sorted(map(tuple, frame[_KEY].astype(str).itertuples(index=False)))


def _rewrite(folder: Path, change) -> None:
    """Apply ``change(bytes) -> bytes`` to every .json / .jsonl file under ``folder``."""
    for path in folder.rglob("*"):
        if path.suffix in (".json", ".jsonl") and path.is_file():
            path.write_bytes(change(path.read_bytes()))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda b: codecs.BOM_UTF8 + b, id="bom"),
        pytest.param(lambda b: b.replace(b"\n", b"\r\n"), id="crlf"),
        pytest.param(lambda b: b + b"\n\n", id="trailing-blank-lines"),
        pytest.param(lambda b: codecs.BOM_UTF8 + b.replace(b"\n", b"\r\n") + b"\r\n", id="all"),
    ],
)
@pytest.mark.parametrize(
    ("source", "folder", "options"), JSON_SOURCES, ids=[s[0] for s in JSON_SOURCES]
)
def test_json_files_from_windows_read_as_the_plain_ones(tmp_path, source, folder, options, change):
    """A byte-order mark (Notepad, PowerShell's Out-File -Encoding utf8), CRLF line ends and
    trailing blank lines change no cell, in every JSON-reading source; the mark never
    becomes part of a record."""
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    _rewrite(copy, change)
    plain, _ = read_results(source, folder, **options)
    arrived, _ = read_results(source, copy, **options)
    assert len(plain) and _cells(arrived) == _cells(plain)
    assert not arrived[["model", "item", "benchmark"]].map(lambda s: "\ufeff" in s).any().any()


def test_lm_eval_text_with_unicode_line_separators_is_one_record(tmp_path):
    """lm-eval writes samples with ensure_ascii=False, so a document may hold U+2028, NEL or a
    form feed raw: they end no line (str.splitlines would cut the record there)."""
    copy = tmp_path / "out"
    shutil.copytree(LM_EVAL, copy)
    samples = next(copy.glob("*160m/samples_arc_easy_*.jsonl"))
    lines = samples.read_text(encoding="utf-8").split("\n")
    record = json.loads(lines[1])
    record["doc"]["question"] = "one\u2028two\x85three\x0cfour\u2029five"
    lines[1] = json.dumps(record, ensure_ascii=False)
    samples.write_text("\n".join(lines), encoding="utf-8")
    plain, _ = read_results("lm-eval", LM_EVAL, **LM_OPTIONS)
    arrived, _ = read_results("lm-eval", copy, **LM_OPTIONS)
    assert _cells(arrived) == _cells(plain)
    lines[2] = lines[2][:-5]  # a cut line after it is still named by its own line number
    samples.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=rf"{samples.name}:3: invalid JSON line"):
        read_results("lm-eval", copy, **LM_OPTIONS)


def test_lm_eval_samples_with_cr_only_line_ends_read_as_lines(tmp_path):
    """Samples saved with CR-only line ends (old Mac, some editors) read as lines (the text
    is read with universal newlines; reading it with newline="" or as bytes split at \\n would
    make the file one invalid line); a CR written escaped inside a string (JSON never holds
    it raw) and a raw U+2028 stay in their record; an error names the line by number."""
    copy = tmp_path / "out"
    shutil.copytree(LM_EVAL, copy)
    samples = next(copy.glob("*160m/samples_arc_easy_*.jsonl"))
    lines = samples.read_text(encoding="utf-8").split("\n")
    record = json.loads(lines[1])
    record["doc"]["question"] = "one\rtwo\r\nthree\u2028four"
    lines[1] = json.dumps(record, ensure_ascii=False)
    assert "\r" not in lines[1]  # escaped as \\r
    samples.write_text("\n".join(lines), encoding="utf-8")
    plain, _ = read_results("lm-eval", copy, **LM_OPTIONS)
    _rewrite(copy, lambda b: b.replace(b"\n", b"\r"))
    arrived, _ = read_results("lm-eval", copy, **LM_OPTIONS)
    assert len(plain) and _cells(arrived) == _cells(plain)
    lines[2] = lines[2][:-5]
    samples.write_text("\r".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=rf"{samples.name}:3: invalid JSON line"):
        read_results("lm-eval", copy, **LM_OPTIONS)


# ------------------------------------------------------------------------------ UTF-16


def test_utf16_files_are_named_as_utf16(tmp_path):
    """A UTF-16 file (PowerShell's '>', Excel's 'Unicode Text'), with or without its
    byte-order mark, is refused saying it is UTF-16 and how to convert it, not as a table
    whose cells hold NUL bytes."""
    text = "model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n"
    for name, encoding in (("bom.csv", "utf-16"), ("le.csv", "utf-16-le"), ("be.csv", "utf-16-be")):
        path = tmp_path / name
        path.write_bytes(text.encode(encoding))
        with pytest.raises(InputError, match=rf"{name}: line 1: .*UTF-16.*iconv"):
            ResponseMatrix.read(path)
    copy = tmp_path / "out"
    shutil.copytree(LM_EVAL, copy)
    samples = next(copy.glob("*160m/samples_arc_easy_*.jsonl"))
    samples.write_bytes(samples.read_text(encoding="utf-8").encode("utf-16"))
    with pytest.raises(InputError, match=rf"{samples.name}: not UTF-8 text .*UTF-16"):
        read_results("lm-eval", copy, **LM_OPTIONS)
    results = next(copy.glob("*160m/results_*.json"))
    with pytest.raises(InputError, match=r"UTF-16"):
        results.write_bytes(results.read_text(encoding="utf-8").encode("utf-16"))
        samples.unlink()
        read_results("lm-eval", copy, **LM_OPTIONS)


# ------------------------------------------------------------------------- compressed


def _responses(tmp_path: Path) -> Path:
    path = tmp_path / "responses.csv"
    path.write_text("model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\nm3,q1,1\nm3,q2,1\n")
    return path


def test_a_compressed_table_reads_and_an_archive_says_to_unpack_it(tmp_path):
    """``fit responses.csv.gz`` (and every route through the table reader) reads the file as
    the plain one (it said to decompress it first: tests/io/test_compressed_inputs.py has
    the rest); an archive of a results folder says to unpack it."""
    plain = _responses(tmp_path)
    packed = tmp_path / "responses.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert ResponseMatrix.read(packed).model_ids == ResponseMatrix.read(plain).model_ids
    assert len(read_results("table", packed)[0]) == 6
    frame = pd.read_csv(plain)
    frame.to_parquet(tmp_path / "r.parquet")
    (tmp_path / "r.parquet.gz").write_bytes(gzip.compress((tmp_path / "r.parquet").read_bytes()))
    assert ResponseMatrix.read(tmp_path / "r.parquet.gz").n_models == 3
    with zipfile.ZipFile(tmp_path / "results.zip", "w") as archive:
        archive.write(plain, "responses.csv")
    with pytest.raises(InputError, match=r"results.zip: a zip archive; .*unzip results.zip"):
        ResponseMatrix.read(tmp_path / "results.zip")


@pytest.mark.parametrize("source", ["lm-eval", "helm", "opencompass", "eee", "lighteval", "table"])
def test_an_archive_of_a_results_folder_says_to_unpack_it(tmp_path, source):
    """A ``.tar.gz`` or ``.zip`` of a results folder named to ``ingest`` is refused as an
    archive, with the command that unpacks it (before: 'unknown metric', 'not an lm-eval
    samples file' or 'not UTF-8')."""
    with tarfile.open(tmp_path / "run.tar.gz", "w:gz") as archive:
        archive.add(LM_EVAL, "run")
    with pytest.raises(InputError, match=r"run.tar.gz: a gzip-compressed tar archive; .*tar xf"):
        read_results(source, tmp_path / "run.tar.gz")
    shutil.make_archive(str(tmp_path / "run"), "zip", LM_EVAL)
    with pytest.raises(InputError, match=r"run.zip: a zip archive; .*unzip run.zip"):
        read_results(source, tmp_path / "run.zip")
    folder = tmp_path / "downloads"  # the folder the archives were downloaded into
    folder.mkdir()
    shutil.move(tmp_path / "run.zip", folder / "run.zip")
    with pytest.raises(InputError, match=r"no .*found.*1 compressed file.*unzip run.zip"):
        read_results(source, folder)


def test_gzipped_samples_in_a_folder_are_read_and_zipped_ones_said(tmp_path):
    """``gzip`` on a big samples file leaves ``samples_<task>_<date>.jsonl.gz``: reading the
    folder reads it as the plain file (it was listed among the skipped files); a samples file
    zipped on its own is listed among the skipped files with the reason, never dropped
    without a word; a folder of zipped files only is an error saying to unzip."""
    copy = tmp_path / "out"
    shutil.copytree(LM_EVAL, copy)
    plain, _ = read_results("lm-eval", copy, **LM_OPTIONS)
    samples = next(copy.glob("*160m/samples_arc_easy_*.jsonl"))
    samples.with_name(samples.name + ".gz").write_bytes(gzip.compress(samples.read_bytes()))
    samples.unlink()
    frame, report = read_results("lm-eval", copy, **LM_OPTIONS)
    assert not report.skipped_files and _cells(frame) == _cells(plain)
    zipped = samples.with_name(samples.name + ".zip")
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr(samples.name, gzip.decompress(zipped.with_suffix(".gz").read_bytes()))
    zipped.with_suffix(".gz").unlink()
    frame, report = read_results("lm-eval", copy, **LM_OPTIONS)
    skipped = {Path(s["file"]).name: s["reason"] for s in report.skipped_files}
    assert "zip archive" in skipped[zipped.name]
    assert set(frame["benchmark"]) == {"arc_easy", "gsm8k"}  # the other model's arc_easy
    only = tmp_path / "only"
    (only / "m").mkdir(parents=True)
    shutil.move(zipped, only / "m" / zipped.name)
    with pytest.raises(InputError, match=r"no result files found .*1 compressed file.*unzip"):
        read_results("lm-eval", only)


def test_an_inspect_eval_log_is_still_a_zip_it_reads(tmp_path):
    """The compressed-file check leaves Inspect's ``.eval`` logs (zip archives) to Inspect."""
    frame, _ = read_results(
        "inspect", FORMATS / "inspect" / "logs", filter={"theory_of_mind": "model_graded_fact"}
    )
    assert "arc_challenge" in set(frame["benchmark"])


@pytest.mark.parametrize("source", ["lm-eval", "helm", "lighteval", "table"])
def test_an_inspect_log_given_to_another_source_is_said_as_one_not_to_unzip(tmp_path, source):
    """An Inspect ``.eval`` log given to another source was 'a zip archive ...: unpack it
    first (unzip X.eval) and give the folder or the files it holds', which gives
    header.json and samples/*.json, no file any source reads: it is named as an Inspect log
    and the source that reads it, named directly, in a folder and to ``fit``."""
    log = next((FORMATS / "inspect" / "logs").glob("*.eval"))
    said = "an Inspect AI log (a zip archive holding header.json); expected "
    with pytest.raises(InputError) as caught:
        read_results(source, log)
    assert str(caught.value).startswith(f"{log}: {said}")
    assert str(caught.value).endswith(
        ": the inspect source reads it (latentbench ingest inspect; estimate and compare read "
        "it with source inspect)"
    )
    assert "unzip" not in str(caught.value)
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(log, folder / log.name)
    with pytest.raises(InputError, match=rf"1 compressed file.*: {re.escape(said)}"):
        read_results(source, folder)
    with pytest.raises(InputError, match=re.escape(said)):
        ResponseMatrix.read(folder / log.name)


def test_a_live_items_file_from_windows(tmp_path):
    """The items JSONL of ``select live`` / ``estimate --live``: a byte-order mark, CRLF and
    CR-only line ends read; UTF-16 and a gzipped file are refused saying what they are."""
    from latentbench.io import load_items

    lines = [json.dumps({"id": f"q{i}", "prompt": "p", "answer": "a"}) for i in range(3)]
    path = tmp_path / "items.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + ("\r\n".join(lines) + "\r\n\r\n").encode())
    assert [item["id"] for item in load_items(path)] == ["q0", "q1", "q2"]
    # CR-only line ends (old Mac, some editors): before, one line, "not valid JSON (Extra
    # data)"; a line is still named by its number
    path.write_bytes(("\r".join(lines) + "\r").encode())
    assert [item["id"] for item in load_items(path)] == ["q0", "q1", "q2"]
    path.write_bytes(("\r".join([*lines[:2], lines[2][:-3]])).encode())
    with pytest.raises(InputError, match=r"items.jsonl:3: not valid JSON"):
        load_items(path)
    path.write_bytes("\n".join(lines).encode("utf-16"))
    with pytest.raises(InputError, match=r"items.jsonl:1: not UTF-8 text .*UTF-16"):
        load_items(path)
    packed = tmp_path / "items.jsonl.gz"
    packed.write_bytes(gzip.compress("\n".join(lines).encode()))
    assert [item["id"] for item in load_items(packed)] == ["q0", "q1", "q2"]  # read as is


# ------------------------------------------------------------------------------ paths


def test_a_quoted_tilde_makes_no_folder_named_tilde(tmp_path, monkeypatch):
    """``--out "~/fit"`` (quoted: no shell expanded it) is refused before any work instead of
    making a folder named ``~`` in the current folder (which a later ``rm -r ~`` would turn
    into a disaster); an input ``"~/r.csv"`` that is not found says why."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.io import check_destination
    from latentbench.io.store import Store

    _register()
    monkeypatch.chdir(tmp_path)
    responses = _responses(tmp_path)
    for args in (
        ["fit", str(responses), "--out", "~/fit"],
        ["select", "replay", str(responses), "--out", "~/sel"],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "not the home folder here" in result.output
    with pytest.raises(InputError, match=r"--out ~/x: no folder '~' here .*\$HOME"):
        check_destination(Path("~/x"))
    with pytest.raises(InputError, match=r"~/r.csv: file not found .*not the home folder"):
        ResponseMatrix.read("~/r.csv")
    with pytest.raises(InputError, match=r"~/runs: no such file .*not the home folder"):
        read_results("lm-eval", "~/runs")
    with pytest.raises(InputError, match=r"the folder ~ does not exist .*not the home folder"):
        Store("~/s.duckdb")
    assert not (tmp_path / "~").exists()
    (tmp_path / "~").mkdir()  # a folder that is really named '~' is used as given
    check_destination(Path("~/x"))


# ------------------------------------------------------------------ cut and empty files


def test_a_csv_cut_mid_row_is_refused_naming_the_line(tmp_path):
    """A copy that stopped mid-row (no line break at the end, a last line with fewer fields
    than the header) is refused in every route, naming the line (before, a wide file read
    its last model with the cells it lacks as missing; a long one blamed the item id)."""
    wide = tmp_path / "wide.csv"
    wide.write_text("model,q1,q2,q3\nm1,1,0,1\nm2,0,1,1\nm3,1,1")
    for read in (ResponseMatrix.read, lambda p: read_results("table", p)):
        with pytest.raises(InputError, match=r"wide.csv: line 4: 3 of the header's 4 fields .*cut"):
            read(wide)
    long = tmp_path / "long.csv"
    long.write_text("model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\nm3,q1,1\nm3,q")
    with pytest.raises(InputError, match=r"long.csv: line 7: 2 of the header's 3 fields .*cut"):
        ResponseMatrix.read(long)
    # complete files read, with or without the last line break; a quoted cell across lines
    long.write_text("model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\nm3,q1,1\nm3,q2,0")
    assert ResponseMatrix.read(long).shape == (3, 2)
    wide.write_text('model,q1,q2\nm1,1,0\nm2,0,1\n"m\n3",1,1')
    assert ResponseMatrix.read(wide).model_ids == ["m1", "m2", "m\n3"]
    # Excel for Mac's "CSV (Macintosh)": lines end with CR alone
    wide.write_bytes(b"model,q1,q2\rm1,1,0\rm2,0,1\rm3,1,1")
    assert ResponseMatrix.read(wide).model_ids == ["m1", "m2", "m3"]
    wide.write_bytes(b"model,q1,q2\rm1,1,0\rm2,0,1\rm3,1")
    with pytest.raises(InputError, match=r"wide.csv: line 4: 2 of the header's 3 fields"):
        ResponseMatrix.read(wide)


def test_empty_files_are_said_to_be_empty(tmp_path):
    """A 0-byte file (a download that never started) is refused as empty by every reader;
    an Every Eval Ever samples file of 0 bytes beside its aggregate no longer ingests as
    0 rows with exit 0."""
    for name in ("e.csv", "e.tsv"):
        (tmp_path / name).write_bytes(b"")
        with pytest.raises(InputError, match=rf"{name}: the file is empty"):
            ResponseMatrix.read(tmp_path / name)
    (tmp_path / "e.json").write_bytes(b"")
    for source in ("helm", "inspect", "opencompass"):
        with pytest.raises(InputError, match=r"e.json: the file is empty \(0 bytes\)"):
            read_results(source, tmp_path / "e.json")
    copy = tmp_path / "eee"
    shutil.copytree(FORMATS / "real" / "eee" / "data", copy)
    samples = next(copy.rglob("*_samples.jsonl"))
    samples.write_bytes(b"")
    with pytest.raises(InputError, match=rf"{samples.name}: the file is empty \(0 bytes\)"):
        read_results("eee", copy)
    samples.write_bytes(b"\n \r\n\n")
    with pytest.raises(InputError, match=r"the file is blank lines only"):
        read_results("eee", samples)


def test_a_cp1252_csv_names_the_column_and_the_value(tmp_path):
    """Excel's plain 'CSV' on Windows writes cp1252: the refusal names the line, the column
    and the value as Excel meant it, so the user sees which id to look at."""
    path = tmp_path / "results.csv"
    path.write_bytes("model,item,score\nm1,q1,1\nRavén-7b,q1,0\n".encode("cp1252"))
    for read in (ResponseMatrix.read, lambda p: read_results("table", p)):
        with pytest.raises(
            InputError,
            match=r"results.csv: line 3: byte 0xe9 .* in column 'model', value 'Ravén-7b' "
            r"\(read as Windows-1252\); expected a UTF-8 CSV",
        ):
            read(path)


# ------------------------------------------------------------------------------- ids


def test_ids_that_look_alike_stay_apart_and_are_said(tmp_path):
    """Ids are kept verbatim: NFC and NFD 'é', a case difference, a trailing space and a
    10,000-character id are five models, never merged; reading the file names each group of
    look-alikes, escaped so that the two 'é' read apart."""
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "modél"), unicodedata.normalize("NFD", "modél")
    long_id = "L" * 10_000
    models = [nfc, nfd, "Model-X", "model-x", "padded", "padded ", long_id]
    rows = [(m, q, float((k + j) % 2)) for k, m in enumerate(models) for j, q in enumerate("ab")]
    path = tmp_path / "ids.csv"
    pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(path, index=False)
    with pytest.warns(DataWarning) as said:
        matrix = ResponseMatrix.read(path)
    assert sorted(matrix.model_ids) == sorted(models)
    text = " ".join(str(w.message) for w in said if "differ only" in str(w.message))
    assert "'mod\\xe9l' and 'mode\\u0301l'" in text or "'mode\\u0301l' and 'mod\\xe9l'" in text
    assert "'Model-X' and 'model-x'" in text and "'padded' and 'padded '" in text
    assert "kept verbatim" in text and long_id not in text
    plain = tmp_path / "plain.csv"
    plain.write_text("model,item,score\nm1,a,1\nm2,a,0\nm1,b,0\nm2,b,1\n")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        ResponseMatrix.read(plain)  # no look-alikes: nothing said


def test_estimate_experiment_says_nfc_and_nfd_twins():
    """The held-out run's look-alike note covers NFC and NFD 'é' too, escaped (it compared
    case and spaces only, so the two read as one name in its note, or were not said)."""
    import unicodedata

    from latentbench.select._estimate_experiment import _twin_notes

    nfc, nfd = unicodedata.normalize("NFC", "modél"), unicodedata.normalize("NFD", "modél")
    (note,) = _twin_notes(["a", nfc, "b", nfd])
    assert "'mod\\xe9l', 'mode\\u0301l' differ only by spaces or case" in note


def test_a_byte_order_mark_is_never_part_of_the_first_column(tmp_path):
    """Excel's 'CSV UTF-8' starts with a byte-order mark: the first column is still 'model'
    (its repeat is refused as every repeated column is, not read as 'model.1'), and a
    ';'-separated file's refusal shows the header without it."""
    bom = codecs.BOM_UTF8
    path = tmp_path / "r.csv"
    path.write_bytes(bom + b"model,q1,model\r\nm1,1,m1\r\nm2,0,m2\r\n")
    with pytest.raises(InputError, match=r"r.csv: line 1: column 'model' appears 2 times"):
        ResponseMatrix.read(path)
    path.write_bytes(bom + b"model;item;score\r\nm1;q1;1\r\n")
    with pytest.raises(InputError, match=r"one column named 'model;item;score': .*';'") as info:
        ResponseMatrix.read(path)
    assert "\\ufeff" not in str(info.value) and "\ufeff" not in str(info.value)
    path.write_bytes(bom + b'"model","q1","q2"\r\n"m1",1,0\r\n"m2",0,1\r\n"m3",1,1\r\n')
    matrix = ResponseMatrix.read(path)
    assert matrix.model_ids == ["m1", "m2", "m3"] and matrix.item_ids == ["q1", "q2"]


def test_a_folder_given_as_the_store_is_said_to_be_a_folder(tmp_path):
    """``--store results/`` (the results folder, not a store file) is named as a folder
    (before: DuckDB's 'IO Error: Could not read from file ...: Is a directory')."""
    from latentbench.io.store import Store

    for read_only in (False, True):
        with pytest.raises(InputError, match=r"is a folder; expected the store's DuckDB file"):
            Store(tmp_path, read_only=read_only)


def test_results_from_the_hugging_face_hub_cache_read_through_their_links(tmp_path):
    """``huggingface-cli download`` (the Open LLM Leaderboard's details) leaves
    ``snapshots/<rev>/<model>/samples_<task>_<date>.jsonl`` as links to ``blobs/<hash>``:
    read by the link's name and folder, as the plain files are (before: 'cannot tell the
    task from the file name' of the blob)."""
    hub = tmp_path / "hub"
    (hub / "blobs").mkdir(parents=True)
    for run in LM_EVAL.iterdir():
        folder = hub / "snapshots" / "rev1" / run.name
        folder.mkdir(parents=True)
        for k, file in enumerate(sorted(run.iterdir())):
            blob = hub / "blobs" / f"{run.name[-4:]}{k:02d}0123456789abcdef"
            blob.write_bytes(file.read_bytes())
            (folder / file.name).symlink_to(blob)
    plain, _ = read_results("lm-eval", LM_EVAL, **LM_OPTIONS)
    linked, _ = read_results("lm-eval", hub / "snapshots" / "rev1", **LM_OPTIONS)
    assert _cells(linked) == _cells(plain)
    assert all("/snapshots/rev1/" in f for f in linked["source_file"])
    one = next((hub / "snapshots" / "rev1").glob("*160m/samples_arc_easy_*.jsonl"))
    named, _ = read_results("lm-eval", one, metric="acc")
    assert set(named["benchmark"]) == {"arc_easy"} and len(named)


def test_ingest_names_look_alike_models_and_items(tmp_path):
    """Two runs naming one model 'Org/Model' and 'org/model', or items NFC and NFD: stored
    verbatim as distinct (every fit then sees two), and the load report says which."""
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "qé"), unicodedata.normalize("NFD", "qé")
    path = tmp_path / "runs.csv"
    rows = [("Org/Model", nfc, 1), ("org/model", nfd, 0), ("other", "q2", 1), ("other", nfc, 0)]
    pd.DataFrame(rows, columns=["model", "item", "score"]).to_csv(path, index=False)
    with pytest.warns(DataWarning, match=r"differ only by case"):
        frame, report = read_results("table", path, benchmark="b")
    assert sorted(frame["model"].unique()) == ["Org/Model", "org/model", "other"]
    assert len(frame) == 4
    notes = " ".join(report.notes)
    assert "model ids that differ only by case" in notes and "'Org/Model' and 'org/model'" in notes
    assert "benchmark 'b': item ids" in notes and "'q\\xe9' and 'qe\\u0301'" in notes


def test_report_item_metadata_from_windows_names_what_it_is(tmp_path):
    """``report --items FILE`` (a user's category table): a cp1252 file names the line,
    column and value (before: 'could not be read ('utf-8' codec can't decode ...)'), UTF-16
    says so, and a gzipped one says to decompress it; a byte-order mark reads."""
    from latentbench.report._metadata import read_item_metadata

    path = tmp_path / "meta.csv"
    path.write_bytes(codecs.BOM_UTF8 + b"item,cat\r\nq1,a\r\nq2,b\r\n")
    assert read_item_metadata(path)["item"].tolist() == ["q1", "q2"]
    path.write_bytes("item,cat\nq1,café\nq2,b\n".encode("cp1252"))
    with pytest.raises(InputError, match=r"items=.*meta.csv: line 2: .*column 'cat', value 'café'"):
        read_item_metadata(path)
    path.write_bytes("item,cat\nq1,a\nq2,b\n".encode("utf-16"))
    with pytest.raises(InputError, match=r"items=.*meta.csv: line 1: .*UTF-16"):
        read_item_metadata(path)
    # without a byte-order mark (UTF-16-LE/BE): before, "no 'item' column" (the NULs read
    # as part of the names); now it says the file is UTF-16, as with a mark
    for codec in ("utf-16-le", "utf-16-be"):
        path.write_bytes("item,cat\nq1,a\nq2,b\n".encode(codec))
        with pytest.raises(InputError, match=r"items=.*meta.csv: not UTF-8 .*UTF-16"):
            read_item_metadata(path)
    packed = tmp_path / "meta.csv.gz"
    packed.write_bytes(gzip.compress(b"item,cat\nq1,a\nq2,b\n"))
    assert list(read_item_metadata(packed)["item"]) == ["q1", "q2"]  # read as it is
