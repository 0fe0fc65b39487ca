"""A calibration file compressed on its own (``cal.csv.gz``) is the calibration of its
content: the same responses gzipped (at any level, on any day: gzip's header holds the time)
are the plain file's calibration, so a ``tiny`` design made from ``cal.csv`` is accepted with
``cal.csv.gz``. Its hash was that of the compressed bytes: each gzipped copy was another
calibration and the design was refused as made from another one."""

from __future__ import annotations

import gzip

import pytest

from latentbench.select import estimate, load_calibration, tiny
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gzcal")
    matrix = simulate_2pl(30, 40, random_state=3).matrix
    long = matrix.to_long()
    plain = folder / "cal.csv"
    long.to_csv(plain, index=False)
    data = plain.read_bytes()
    (folder / "a").mkdir()
    (folder / "b").mkdir()
    (folder / "a" / "cal.csv.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=1))
    (folder / "b" / "cal.csv.gz").write_bytes(gzip.compress(data, compresslevel=1, mtime=2))
    return folder, long


def test_a_gzipped_copy_is_the_plain_files_calibration(files):
    folder, _ = files
    plain = load_calibration(folder / "cal.csv", cache=False)
    for sub in ("a", "b"):
        packed = load_calibration(folder / sub / "cal.csv.gz", cache=False)
        assert packed.hash == plain.hash


def test_a_design_from_the_plain_file_is_accepted_with_its_gzipped_copy(files):
    folder, long = files
    design = tiny(folder / "cal.csv", k=10, seed=1, cache=False)
    model = long["model"].iloc[0]
    answers = long[long["model"] == model].set_index("item")["score"]
    answers = answers.loc[design["item"]]
    plain = estimate(folder / "cal.csv", answers, items=design, cache=False)
    packed = estimate(folder / "a" / "cal.csv.gz", answers, items=design, cache=False)
    assert (packed.score, packed.lower, packed.upper) == (plain.score, plain.lower, plain.upper)
    assert packed.calibration_hash == plain.calibration_hash


def test_two_gzipped_checkpoints_of_one_model_are_labelled_as_the_plain_files(tmp_path):
    """compare of two files of one model name labels each side by its file's stem, and the
    draw is seeded on the labels: ckpt1000.csv.gz was labelled '(ckpt1000.csv)', so the
    gzipped checkpoints drew other items than the plain files (the command too)."""
    import json

    import numpy as np
    import pandas as pd
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select import compare

    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration = tmp_path / "calib.parquet"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    for name, ones in (("ckpt1000", 15), ("ckpt2000", 25)):
        scores = np.r_[np.ones(ones), np.zeros(40 - ones)]
        frame = pd.DataFrame({"item": [str(j) for j in range(40)], "score": scores})
        plain = tmp_path / f"{name}.csv"
        frame.assign(model="org/my-model").to_csv(plain, index=False)
        (tmp_path / f"{name}.csv.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain = compare(calibration, tmp_path / "ckpt1000.csv", tmp_path / "ckpt2000.csv",
                    budget=12, seed=1)  # fmt: skip
    packed = compare(calibration, tmp_path / "ckpt1000.csv.gz", tmp_path / "ckpt2000.csv.gz",
                     budget=12, seed=1)  # fmt: skip
    assert (packed.model_a, packed.model_b) == (plain.model_a, plain.model_b)
    assert packed.items == plain.items
    _register()
    files = [str(tmp_path / "ckpt1000.csv.gz"), str(tmp_path / "ckpt2000.csv.gz")]
    args = ["compare", str(calibration), *files, "--budget", "12", "--seed", "1", "--json"]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    record = json.loads(outcome.output)
    assert (record["model_a"], record["items"]) == (plain.model_a, list(plain.items))
