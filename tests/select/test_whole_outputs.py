"""A selection or an experiment saved where an earlier one is: written whole or not at all.
``selection.json`` was written in place (a failed write, a full disk, or another run writing
it at the same moment, left it cut or mixed) and an experiment's files one by one (a failure
between them left one run's summary.json beside another's tables)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.select import UCBE, MatrixOracle, run_experiment, run_selection

from .conftest import lowrank_data


def _full_disk_half_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Path.write_text writes half its text, then the disk is full."""
    real = Path.write_text

    def half(self: Path, data: str, *args: object, **kwargs: object) -> int:
        real(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half)


def test_a_selection_json_that_cannot_be_written_leaves_the_earlier_one(tmp_path, monkeypatch):
    Y, *_ = lowrank_data(6, 80, r=2, seed=3)
    path = tmp_path / "selection.json"
    first = run_selection(MatrixOracle(Y), UCBE(), budget=120, random_state=0)
    first.to_json(path)
    before = path.read_bytes()
    second = run_selection(MatrixOracle(Y), UCBE(), budget=160, random_state=1)
    _full_disk_half_way(monkeypatch)
    with pytest.raises(OSError, match="No space left on device"):
        second.to_json(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["selection.json"]


def test_an_experiment_that_cannot_be_saved_leaves_the_earlier_files(tmp_path, monkeypatch):
    Y, *_ = lowrank_data(6, 80, r=2, seed=3)
    pools = {"all": np.arange(6)}
    first = run_experiment(Y, pools, ["ucbe"], seeds=2, budget=120, n_jobs=1)
    first.save(tmp_path / "exp")
    before = {p.name: p.read_bytes() for p in (tmp_path / "exp").iterdir()}
    second = run_experiment(Y, pools, ["ucbe"], seeds=3, budget=160, n_jobs=1)

    def full_disk(self: pd.DataFrame, *args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    with pytest.raises((InputError, OSError), match="No space left on device"):
        second.save(tmp_path / "exp")
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in (tmp_path / "exp").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]
    second.save(tmp_path / "exp")
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == sorted(before)
