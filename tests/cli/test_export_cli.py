"""``latentbench export`` never replaces an existing file silently (it may be the source)."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


def _ingested(tmp_path):
    """A three-row table file and the store it was ingested into."""
    source = tmp_path / "results.parquet"
    frame = pd.DataFrame({"model": ["a", "a", "b"], "item": ["x", "y", "x"], "score": [1.0, 0, 1]})
    frame.to_parquet(source, index=False)
    store = tmp_path / "s.duckdb"
    args = ["ingest", "table", str(source), "--store", str(store), "--benchmark", "b"]
    assert runner.invoke(app, args).exit_code == 0
    return source, store


def test_export_refuses_an_existing_file_unless_force(tmp_path):
    source, store = _ingested(tmp_path)
    before = source.read_bytes()
    outcome = runner.invoke(app, ["export", str(source), "--store", str(store)])
    assert outcome.exit_code == 2
    assert f"{source} exists" in " ".join(outcome.output.split()) and "--force" in outcome.output
    assert source.read_bytes() == before
    outcome = runner.invoke(app, ["export", str(source), "--store", str(store), "--force"])
    assert outcome.exit_code == 0, outcome.output
    assert len(pd.read_parquet(source)) == 3


def test_eee_export_never_mixes_with_a_folder_of_earlier_records(tmp_path):
    """An eee export into a folder of an earlier export merged with it (and `ingest eee` read
    both back); a file name made a folder named x.parquet."""
    _, store = _ingested(tmp_path)
    out = tmp_path / "eee"
    export = ["export", str(out), "--format", "eee", "--store", str(store)]
    assert runner.invoke(app, export).exit_code == 0
    files = sorted(p.name for p in out.rglob("*"))
    outcome = runner.invoke(app, export)
    assert outcome.exit_code == 2 and "not empty" in " ".join(outcome.output.split())
    assert runner.invoke(app, [*export, "--force"]).exit_code == 0
    assert sorted(p.name for p in out.rglob("*")) == files
    named = ["export", str(tmp_path / "x.parquet"), "--format", "eee", "--store", str(store)]
    outcome = runner.invoke(app, named)
    assert outcome.exit_code == 2 and not (tmp_path / "x.parquet").exists()


def test_export_keeps_one_split_as_the_read_error_says(tmp_path):
    """A benchmark stored with two splits exported whole is refused by `fit FILE` (a matrix
    holds one split); the error pointed to `export --benchmark`, whose file holds both:
    `export --split` (Python: `Store.export(split=)`) writes the rows of one, which read back
    as the store's matrix of that split. A split no row holds is refused, naming those stored."""
    import numpy as np

    from latentbench import InputError, ResponseMatrix
    from latentbench.io.store import Store

    store = tmp_path / "s.duckdb"
    source = tmp_path / "results.csv"
    pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "c", "c"] * 2,
            "item": ["x", "y"] * 6,
            "score": [1.0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0],
            "split": ["test"] * 6 + ["valid"] * 6,
        }
    ).to_csv(source, index=False)
    args = ["ingest", "table", str(source), "--store", str(store), "--benchmark", "arc"]
    assert runner.invoke(app, args).exit_code == 0
    whole = tmp_path / "arc.csv"
    assert runner.invoke(app, ["export", str(whole), "--store", str(store), "--benchmark",
                               "arc"]).exit_code == 0  # fmt: skip
    refused = runner.invoke(app, ["fit", str(whole), "-q", "--out", str(tmp_path / "f")])
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert "column 'split' holds 2 values" in said, said
    assert "--benchmark NAME --split S" in said, said
    one = tmp_path / "arc_test.csv"
    outcome = runner.invoke(app, ["export", str(one), "--store", str(store), "--benchmark",
                                  "arc", "--split", "test"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert "wrote 6 rows" in outcome.output
    with Store(store, read_only=True) as db:
        expected = db.matrix("arc", split="test")
        twin = tmp_path / "arc_test.parquet"
        assert db.export(twin, benchmark="arc", split="test") == 6
        try:
            db.export(tmp_path / "no.csv", benchmark="arc", split="train")
            raise AssertionError("an unknown split was exported")
        except InputError as exc:
            assert "split='train': no row of benchmark 'arc' has it" in str(exc)
            assert "stored splits: 'test', 'valid'" in str(exc)
    for path in (one, twin):
        matrix = ResponseMatrix.read(path)
        assert matrix.model_ids == expected.model_ids and matrix.item_ids == expected.item_ids
        assert np.array_equal(matrix.scores, expected.scores, equal_nan=True)
    fitted = runner.invoke(app, ["fit", str(one), "-q", "--out", str(tmp_path / "f1")])
    assert fitted.exit_code == 0, fitted.output
    eee = runner.invoke(app, ["export", str(tmp_path / "eee"), "--format", "eee", "--store",
                              str(store), "--split", "valid"])  # fmt: skip
    assert eee.exit_code == 0 and "wrote 6 rows" in eee.output, eee.output
    bad = runner.invoke(app, ["export", str(tmp_path / "x.csv"), "--store", str(store),
                              "--split", "train"])  # fmt: skip
    assert bad.exit_code == 2 and "stored splits: 'test', 'valid'" in bad.output, bad.output
    assert not (tmp_path / "x.csv").exists()


def test_export_takes_out_as_every_other_command_does(tmp_path):
    # fit, estimate, compare, tiny, report, select and experiment write under --out; export
    # answered `--out FILE` with "No such option: --out (Possible options: --format)"
    _, store = _ingested(tmp_path)
    for flag in ("--out", "-o"):
        out = tmp_path / f"export{flag}.csv"
        outcome = runner.invoke(app, ["export", "--store", str(store), flag, str(out)])
        assert outcome.exit_code == 0, outcome.output
        assert len(pd.read_csv(out)) == 3
    both = runner.invoke(
        app,
        [
            "export",
            str(tmp_path / "a.csv"),
            "--out",
            str(tmp_path / "b.csv"),
            "--store",
            str(store),
        ],
    )
    assert both.exit_code == 2 and "not both" in both.output, both.output
    assert not (tmp_path / "a.csv").exists() and not (tmp_path / "b.csv").exists()
    neither = runner.invoke(app, ["export", "--store", str(store)])
    assert neither.exit_code == 2 and "OUT" in neither.output, neither.output
    assert "Traceback" not in neither.output
