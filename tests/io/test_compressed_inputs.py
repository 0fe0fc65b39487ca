"""Result files kept compressed on their own (``samples_x.jsonl.gz``, ``scores.csv.gz``, ...)
read as the plain files do, through every reader that reads files (the size cap applying to
the decompressed bytes); a corrupt one, a decompression bomb and an archive are refused
naming the file."""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.io.formats import read_results

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
REAL = FORMATS / "real"


def _zstd(data: bytes) -> bytes:
    """``data`` zstd-compressed (pyarrow's codec: the test needs no zstd package)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return bytes(sink.getvalue().to_pybytes())


PACK = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zst": _zstd}

# (source, fixture folder, read_results options, the files to compress)
SOURCES = [
    ("lm-eval", FORMATS / "lm-eval" / "v0.4.9",
     {"metric": {"arc_easy": "acc", "gsm8k": "exact_match"}, "filter": {"gsm8k": "strict-match"}},
     "*.json*"),
    ("helm", FORMATS / "helm" / "benchmark_output", {"metric": "exact_match"}, "*.json"),
    ("inspect", FORMATS / "inspect" / "logs",
     {"filter": {"theory_of_mind": "model_graded_fact"}}, "*.json"),
    ("opencompass", FORMATS / "opencompass" / "outputs", {}, "*.json"),
]  # fmt: skip
_KEY = ["model", "benchmark", "item", "metric", "filter", "trial", "split", "score"]


def _packed_copy(folder: Path, into: Path, pattern: str, suffix: str = ".gz") -> Path:
    """A copy of ``folder`` whose files matching ``pattern`` are compressed (``x.json`` ->
    ``x.json.gz``, the plain file gone)."""
    shutil.copytree(folder, into)
    for path in sorted(into.rglob(pattern)):
        if path.is_file():
            path.with_name(path.name + suffix).write_bytes(PACK[suffix](path.read_bytes()))
            path.unlink()
    return into


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[_KEY].sort_values(_KEY[:-1]).reset_index(drop=True)


@pytest.mark.parametrize(("source", "folder", "options", "pattern"), SOURCES)
def test_a_folder_of_compressed_result_files_reads_as_the_plain_one(
    tmp_path, source, folder, options, pattern
):
    plain, _ = read_results(source, folder, **options)
    copy = _packed_copy(folder, tmp_path / "out", pattern)
    assert any(copy.rglob("*.gz"))
    frame, report = read_results(source, copy, **options)
    assert not report.skipped_files
    pd.testing.assert_frame_equal(_rows(frame), _rows(plain))
    read = [str(f) for f in frame["source_file"].unique()]  # Inspect's .eval logs: as they are
    assert any(f.endswith(".gz") for f in read) and not any(f.endswith(".json") for f in read)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_a_compressed_table_reads_as_the_plain_one(tmp_path, suffix):
    plain = tmp_path / "responses.csv"
    plain.write_text("model,item,score\nm1,007,1\nm1,q2,0\nm2,007,0\nm2,q2,\nm3,007,1\nm3,q2,1\n")
    packed = tmp_path / f"responses.csv{suffix}"
    packed.write_bytes(PACK[suffix](plain.read_bytes()))
    a, b = ResponseMatrix.read(plain), ResponseMatrix.read(packed)
    assert a.item_ids == b.item_ids and a.model_ids == b.model_ids
    np.testing.assert_array_equal(np.asarray(a.scores), np.asarray(b.scores))
    frame, _ = read_results("table", packed)
    assert sorted(frame["item"].unique()) == ["007", "q2"]
    wide = tmp_path / "wide.tsv"
    wide.write_text("model\tq1\tq2\nm1\t1\t0\nm2\t0\t1\n")
    (tmp_path / "wide.tsv.gz").write_bytes(gzip.compress(wide.read_bytes()))
    assert ResponseMatrix.read(tmp_path / "wide.tsv.gz").item_ids == ["q1", "q2"]
    pd.read_csv(plain).to_parquet(tmp_path / "r.parquet")
    (tmp_path / "r.parquet.gz").write_bytes(gzip.compress((tmp_path / "r.parquet").read_bytes()))
    assert ResponseMatrix.read(tmp_path / "r.parquet.gz").n_models == 3


def test_a_compressed_table_in_a_folder_is_ingested(tmp_path):
    (tmp_path / "a.csv.gz").write_bytes(gzip.compress(b"model,item,score\nm1,q1,1\nm1,q2,0\n"))
    frame, report = read_results("table", tmp_path)
    assert len(frame) == 2 and not report.skipped_files
    assert set(frame["benchmark"]) == {"a"}  # named after the file, not 'a.csv'


def test_a_corrupt_or_cut_compressed_file_is_named(tmp_path):
    data = gzip.compress(b"model,item,score\n" + b"m1,q1,1\n" * 5000)
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut.csv.gz: a corrupt or cut gzip-compressed file"):
        ResponseMatrix.read(cut)
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(data[:20] + b"\x00" * 40 + data[60:])
    with pytest.raises(InputError, match=r"bad.csv.gz: a corrupt or cut gzip-compressed file"):
        read_results("table", bad)
    folder = _packed_copy(FORMATS / "lm-eval" / "v0.4.9", tmp_path / "lm", "samples_*.jsonl")
    victim = next(folder.rglob("samples_*.jsonl.gz"))
    victim.write_bytes(victim.read_bytes()[:-30])
    with pytest.raises(InputError, match=rf"{victim.name}: a corrupt or cut gzip-compressed"):
        read_results("lm-eval", folder, **SOURCES[0][2])


def test_the_size_cap_applies_to_the_decompressed_bytes(tmp_path, monkeypatch):
    """A small file that decompresses to more than the cap (a decompression bomb) stops at
    the cap, naming the file, on every route."""
    from latentbench.io import _arrival

    monkeypatch.setattr(_arrival, "MAX_UNPACKED_BYTES", 100_000)
    bomb = tmp_path / "bomb.csv.gz"
    bomb.write_bytes(gzip.compress(b"model,item,score\n" + b"m1,q1,1\n" * 50_000))
    assert bomb.stat().st_size < 100_000
    with pytest.raises(InputError, match=r"bomb.csv.gz: .*decompresses to more than 100,000"):
        ResponseMatrix.read(bomb)
    folder = _packed_copy(FORMATS / "lm-eval" / "v0.4.9", tmp_path / "lm", "samples_*.jsonl")
    victim = next(folder.rglob("samples_*.jsonl.gz"))
    line = gzip.decompress(victim.read_bytes()).split(b"\n")[0] + b"\n"
    victim.write_bytes(gzip.compress(line * (200_000 // len(line) + 1)))
    with pytest.raises(InputError, match=rf"{victim.name}: .*decompresses to more than 100,000"):
        read_results("lm-eval", folder, **SOURCES[0][2])


def test_utf16_inside_a_compressed_file_is_said(tmp_path):
    packed = tmp_path / "r.csv.gz"
    packed.write_bytes(gzip.compress("model,item,score\nm1,q1,1\n".encode("utf-16-le")))
    with pytest.raises(InputError, match=r"r.csv.gz: line 1: not UTF-8 text .*UTF-16"):
        ResponseMatrix.read(packed)


def test_an_archive_is_still_refused(tmp_path):
    import tarfile

    plain = tmp_path / "r.csv"
    plain.write_text("model,item,score\nm1,q1,1\n")
    with tarfile.open(tmp_path / "r.tar.gz", "w:gz") as archive:
        archive.add(plain, "r.csv")
    with pytest.raises(InputError, match=r"r.tar.gz: a gzip-compressed tar archive; .*tar xf"):
        ResponseMatrix.read(tmp_path / "r.tar.gz")
    with pytest.raises(InputError, match=r"r.tar.gz: a gzip-compressed tar archive; .*tar xf"):
        read_results("table", tmp_path / "r.tar.gz")


def test_fit_estimate_and_ingest_read_a_compressed_file(tmp_path):
    """``latentbench fit FILE.csv.gz``, ``estimate CAL RESP.csv.gz`` (the model named after
    the file, 'RESP', not 'RESP.csv'), ``ingest table FILE.csv.gz`` and ``ingest lm-eval``
    of a folder of gzipped samples read as the plain files."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.synthetic import simulate_2pl

    _register()
    runner = CliRunner()
    matrix = simulate_2pl(30, 60, random_state=3).matrix
    long = matrix.to_long()
    calibration = tmp_path / "cal.csv.gz"
    calibration.write_bytes(gzip.compress(long.to_csv(index=False).encode()))
    outcome = runner.invoke(app, ["fit", str(calibration), "--out", str(tmp_path / "fit")])
    assert outcome.exit_code == 0, outcome.output
    one = long[long["model"] == long["model"].iloc[0]][["item", "score"]]
    responses = tmp_path / "RESP.csv.gz"
    responses.write_bytes(gzip.compress(one.to_csv(index=False).encode()))
    out = tmp_path / "est.json"
    args = ["estimate", str(calibration), str(responses), "--budget", "20", "--out", str(out)]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert pd.read_csv(out / "estimates.csv")["model"].tolist() == ["RESP"]
    store = tmp_path / "s.duckdb"
    outcome = runner.invoke(app, ["ingest", "table", str(calibration), "--store", str(store),
                                  "--benchmark", "b"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    folder = _packed_copy(FORMATS / "lm-eval" / "v0.4.9", tmp_path / "lm", "*.json*")
    outcome = runner.invoke(app, ["ingest", "lm-eval", str(folder), "--store", str(store),
                                  "--filter", "gsm8k=strict-match", "--metric", "arc_easy=acc",
                                  "--metric", "gsm8k=exact_match"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    packed = tmp_path / "samples_x_2024-05-01T12-30-45.jsonl.gz"
    packed.write_bytes(gzip.compress(b"{}\n"))
    outcome = runner.invoke(app, ["estimate", str(calibration), str(packed)])
    assert outcome.exit_code == 2 and "a .jsonl file (compressed)" in outcome.output


def test_a_defect_in_a_compressed_csv_is_named_by_its_line(tmp_path):
    """An error in a ``.csv.gz`` names the line as in the plain file (it said 'row N')."""
    plain = tmp_path / "r.csv"
    plain.write_text("model,item,score\nm1,q1,1\n\nm1,q2,7\n")
    packed = tmp_path / "r.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(InputError, match=r"line 4") as caught:
        ResponseMatrix.read(plain)
    with pytest.raises(InputError) as again:
        ResponseMatrix.read(packed)
    assert str(again.value) == str(caught.value).replace("r.csv", "r.csv.gz")


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_live_items_and_report_item_metadata_read_a_compressed_file(tmp_path, suffix):
    """The live-run items JSONL (``load_items``) and ``report --items`` (item metadata) refused
    ``items.jsonl.gz`` and ``meta.csv.gz`` ("decompress it first") while every result reader
    read them; now they read them as the plain file, with the same errors (a line named by
    its number, UTF-16 said, a corrupt stream named, an archive refused)."""
    import io
    import json
    import zipfile

    from latentbench.io import load_items
    from latentbench.report import read_item_metadata

    lines = [json.dumps({"id": f"q{i}", "prompt": "p", "answer": "a"}) for i in range(3)]
    items = tmp_path / f"items.jsonl{suffix}"
    items.write_bytes(PACK[suffix](("\n".join(lines) + "\n").encode()))
    assert load_items(items) == load_items_plain(tmp_path, lines)
    items.write_bytes(PACK[suffix](("\n".join([*lines[:2], lines[2][:-3]])).encode()))
    with pytest.raises(InputError, match=rf"items.jsonl{suffix}:3: not valid JSON"):
        load_items(items)
    items.write_bytes(PACK[suffix]("\n".join(lines).encode("utf-16")))
    with pytest.raises(InputError, match=rf"items.jsonl{suffix}:1: not UTF-8 text .*UTF-16"):
        load_items(items)
    items.write_bytes(PACK[suffix]("\r".join(lines).encode()))  # CR-only line ends
    assert [item["id"] for item in load_items(items)] == ["q0", "q1", "q2"]

    table = b"item,cat\nq1,a\nq2,b\nNA,a\n"
    meta = tmp_path / f"meta.csv{suffix}"
    meta.write_bytes(PACK[suffix](table))
    plain = tmp_path / "meta.csv"
    plain.write_bytes(table)
    pd.testing.assert_frame_equal(read_item_metadata(meta), read_item_metadata(plain))
    assert list(read_item_metadata(meta)["item"]) == ["q1", "q2", "NA"]
    frame = pd.DataFrame({"item": ["q1", "q2"], "cat": ["a", "b"]})
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    parquet = tmp_path / f"meta.parquet{suffix}"
    parquet.write_bytes(PACK[suffix](buffer.getvalue()))
    pd.testing.assert_frame_equal(read_item_metadata(parquet), frame)
    meta.write_bytes(PACK[suffix](table.decode().encode("utf-16")))
    with pytest.raises(InputError, match=rf"items=.*meta.csv{suffix}: line 1: .*UTF-16"):
        read_item_metadata(meta)
    meta.write_bytes(PACK[suffix](table)[:-12])  # a cut download
    with pytest.raises(InputError, match=rf"meta.csv{suffix}: a corrupt or cut"):
        read_item_metadata(meta)
    items.write_bytes(PACK[suffix]("\n".join(lines).encode())[:-12])
    with pytest.raises(InputError, match=rf"items.jsonl{suffix}: a corrupt or cut"):
        load_items(items)
    with zipfile.ZipFile(tmp_path / "items.zip", "w") as archive:
        archive.writestr("items.jsonl", "\n".join(lines))
    with pytest.raises(InputError, match=r"items.zip: a zip archive; .*unzip"):
        load_items(tmp_path / "items.zip")
    with pytest.raises(InputError, match=r"items=.*items.zip: a zip archive"):
        read_item_metadata(tmp_path / "items.zip")


def load_items_plain(tmp_path: Path, lines: list[str]) -> list[dict[str, str]]:
    from latentbench.io import load_items

    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(lines) + "\n")
    return load_items(plain)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_plain_csv_named_as_compressed_is_read_as_the_plain_file(tmp_path, suffix):
    """A file is judged compressed by its first bytes: a plain CSV named ``x.csv.gz`` (saved
    by a tool that names files ahead, or decompressed by a browser and kept its name) is read
    as plain text. pandas went by the name and raised ``BadGzipFile`` (a traceback) from
    ResponseMatrix.read, read_responses and the by-rows read of ``--model``."""
    from latentbench.select import read_responses

    frame = pd.DataFrame({"model": ["m1", "m1", "m2"], "item": ["a", "b", "a"],
                          "score": [1.0, 0.0, 1.0]})  # fmt: skip
    plain = tmp_path / "r.csv"
    frame.to_csv(plain, index=False)
    named = tmp_path / f"r.csv{suffix}"
    shutil.copy(plain, named)
    assert list(ResponseMatrix.read(named).model_ids) == list(ResponseMatrix.read(plain).model_ids)
    for models in (None, ["m2"]):
        got, want = read_responses(named, models=models), read_responses(plain, models=models)
        assert list(got) == list(want)
        for name in want:
            pd.testing.assert_series_equal(got[name], want[name])
    # report --items (item metadata) as well: it was refused ('could not be read (Not a
    # gzipped file)')
    from latentbench.report import read_item_metadata

    meta = tmp_path / "meta.csv"
    meta.write_text("item,category\na,x\nb,y\n")
    shutil.copy(meta, tmp_path / f"meta.csv{suffix}")
    pd.testing.assert_frame_equal(
        read_item_metadata(tmp_path / f"meta.csv{suffix}"), read_item_metadata(meta)
    )


def test_zstd_files_are_read_without_a_zstd_package(tmp_path):
    """``.zst`` was read only where ``zstandard`` (or Python 3.14's ``compression.zstd``) is
    installed, else refused; pyarrow, a dependency, has the codec: a zstd table and a folder of
    zstd lm-eval files read as the plain ones, a cut one is refused naming it."""
    source, folder, options, pattern = SOURCES[0]
    plain, _ = read_results(source, folder, **options)
    copy = _packed_copy(folder, tmp_path / "lm", pattern, ".zst")
    frame, report = read_results(source, copy, **options)
    assert not report.skipped_files
    pd.testing.assert_frame_equal(_rows(frame), _rows(plain))
    victim = next(copy.rglob("samples_*.jsonl.zst"))
    victim.write_bytes(victim.read_bytes()[:-30])
    with pytest.raises(InputError, match=rf"{victim.name}: a corrupt or cut zstd-compressed"):
        read_results(source, copy, **options)


def test_zstd_without_a_codec_is_refused_naming_the_file(tmp_path, monkeypatch):
    from latentbench.io import _arrival

    monkeypatch.setattr(_arrival, "_zstd_available", lambda: False)
    packed = tmp_path / "r.csv.zst"
    packed.write_bytes(_zstd(b"model,item,score\nm1,q1,1\n"))
    with pytest.raises(InputError, match=r"r\.csv\.zst: a zstd-compressed file; .*unzstd"):
        read_results("table", packed)


EEE_DEMO = REAL / "eee" / "data" / "demo-source" / "demo-org" / "demo-model"
LIGHTEVAL = FORMATS / "lighteval" / "details"


@pytest.mark.parametrize(
    ("source", "folder", "pattern", "options"),
    [
        ("eee", EEE_DEMO, "*.json*", {}),  # the aggregate and its samples
        ("eee", EEE_DEMO, "*.jsonl", {}),  # the samples only
        ("eee", EEE_DEMO, "*.json", {}),  # the aggregate only
        ("lighteval", LIGHTEVAL, "*.parquet", {"metric": {"arc:challenge|25": "acc"}}),
        ("lighteval", REAL / "lighteval-0.13.0", "*.parquet", {}),
    ],
)
@pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")
def test_eee_and_lighteval_files_compressed_read_as_the_plain_ones(
    tmp_path, source, folder, pattern, options
):
    """They were refused ('decompress it first'), in a folder listed as skipped: an EEE
    samples file read without its gzipped aggregate lost its metric names, unsaid but for a
    note."""
    plain, plain_report = read_results(source, folder, **options)
    copy = _packed_copy(folder, tmp_path / "out" / folder.name, pattern)  # its name: a model's
    frame, report = read_results(source, copy, **options)
    assert report.skipped_files == [
        {**f, "file": f["file"].replace(str(folder), str(copy))} for f in plain_report.skipped_files
    ]
    assert report.notes == [n.replace(str(folder), str(copy)) for n in plain_report.notes]
    columns = [*_KEY, "source", "run_timestamp"]
    pd.testing.assert_frame_equal(
        frame[columns].sort_values(_KEY[:-1]).reset_index(drop=True),
        plain[columns].sort_values(_KEY[:-1]).reset_index(drop=True),
    )
    named = sorted(copy.rglob("*.gz"))  # the compressed files named directly
    if pattern != "*.json":  # (an EEE aggregate alone gives no rows)
        direct, _ = read_results(source, named, **options)
        assert len(direct) == len(plain) and direct["source_file"].str.endswith(".gz").all()


def test_a_corrupt_compressed_eee_file_is_named(tmp_path):
    copy = _packed_copy(EEE_DEMO, tmp_path / "eee", "*.jsonl")
    victim = next(copy.rglob("*_samples.jsonl.gz"))
    victim.write_bytes(victim.read_bytes()[:-20])
    for path in (copy, victim):
        with pytest.raises(InputError, match=rf"{victim.name}: a corrupt or cut gzip-compressed"):
            read_results("eee", path)


# ``lz4 -c`` of "model,item,score\nm1,q1,1\n": an lz4 frame (magic 04 22 4d 18), which no
# reader decompresses (no lz4 codec is a dependency)
LZ4_CSV = b'\x04"M\x18d@\xa7\x19\x00\x00\x80model,item,score\nm1,q1,1\n\x00\x00\x00\x00\x94<\xfce'
_UNREAD = r"an lz4-compressed file; .*compressions read are gzip, bzip2, xz and zstd.*lz4 -d"


@pytest.mark.parametrize("name", ["r.csv", "r.csv.lz4", "r.parquet"])
def test_an_lz4_file_is_said_to_be_lz4_compressed(tmp_path, name):
    """An lz4 file was read as text ("line 1: byte 0xa7 is not UTF-8"), or refused by its
    name ("unknown file type '.lz4'"): it is said to be lz4-compressed, with the compressions
    that are read and the command that decompresses it."""
    from latentbench.select import read_responses

    packed = tmp_path / name
    packed.write_bytes(LZ4_CSV)
    message = rf"{name}: {_UNREAD} {name}"
    with pytest.raises(InputError, match=message):
        ResponseMatrix.read(packed)
    with pytest.raises(InputError, match=message):
        read_results("table", packed)
    for models in (None, ["m1"]):  # the by-rows read of --model too
        with pytest.raises(InputError, match=message):
            read_responses(packed, models=models)


def test_an_lz4_result_file_is_said_named_or_in_a_folder(tmp_path):
    """A tool's result file lz4-compressed: refused named directly (it was "not UTF-8"), and
    listed among the skipped files, saying what it is, when it lies in a folder with files
    that are read (it was passed over unsaid)."""
    source, folder, options, _ = SOURCES[0]
    copy = tmp_path / "lm"
    shutil.copytree(folder, copy)
    victim = next(copy.rglob("samples_*.jsonl"))
    victim.write_bytes(LZ4_CSV)
    with pytest.raises(InputError, match=rf"{victim.name}: {_UNREAD}"):
        read_results(source, victim, **options)
    packed = victim.with_name(victim.name + ".lz4")
    victim.rename(packed)
    _, report = read_results(source, copy, **options)
    skipped = {Path(s["file"]).name: s["reason"] for s in report.skipped_files}
    assert "lz4-compressed" in skipped.get(packed.name, ""), report.skipped_files
    # found by its name in a folder (a samples file, lz4 inside): "not UTF-8" says what it is
    packed.rename(victim)
    with pytest.raises(InputError, match=rf"{victim.name}: not UTF-8 text .*\(an lz4-compressed"):
        read_results(source, copy, **options)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_a_compressed_csv_with_a_plain_name_is_read_decompressed(tmp_path, suffix):
    """The compressions read are told by the first bytes, not the name: gzip, bzip2, xz or
    zstd named ``r.csv`` (a download that kept the wrong name) reads as the plain file."""
    plain = tmp_path / "plain.csv"
    plain.write_text("model,item,score\nm1,q1,1\nm1,q2,0\nm2,q1,0\nm2,q2,1\n")
    named = tmp_path / "r.csv"
    named.write_bytes(PACK[suffix](plain.read_bytes()))
    got, want = ResponseMatrix.read(named), ResponseMatrix.read(plain)
    assert np.array_equal(got.scores, want.scores) and got.model_ids == want.model_ids
