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
