"""Our CSV outputs read by a user's own reader: the recipe docs/formats.md gives ("Reading the
CSV outputs in your own code") reads every id back exactly, where ``pandas.read_csv`` with its
defaults turns ``NA`` or ``None`` into missing and ``001`` into 1."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.select import tiny

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
HEADING = "## Reading the CSV outputs in your own code"
ODD = ["001", "1e3", "nan", "NA", "None", "null", "N/A", "a,b", 'q"uote', "new\nline",
       " lead", "trail ", "ünï", "=1+2", "'quoted", "-1.5"]  # fmt: skip


def _recipe() -> str:
    text = DOC.read_text(encoding="utf-8")
    assert HEADING in text, f"{DOC.name} lacks the section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "the section gives no python block"
    return block.group(1)


def _read(path: Path) -> pd.DataFrame:
    scope: dict[str, object] = {"path": path}
    exec(_recipe(), scope)  # the documented lines, as a user copies them
    frame = scope["frame"]
    assert isinstance(frame, pd.DataFrame)
    return frame


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("outputs")
    rng = np.random.default_rng(3)
    items = ODD + [f"it{j:03d}" for j in range(40 - len(ODD))]
    models = ["007", "NA", "None", "m,1", " m4", *(f"m{i}" for i in range(5, 15))]
    scores = (rng.random((len(models), len(items))) < 0.6).astype(float)
    matrix = ResponseMatrix(scores, models, items)
    result = TwoPL().fit(matrix)
    result.save(folder / "fit", matrix)
    design = tiny(matrix, k=len(items), cache=False)  # every item, as `tiny --out x.csv`
    design.to_csv(folder / "items.csv", index=False)
    return folder, models, items


def test_the_documented_recipe_reads_every_id_back(outputs):
    folder, models, items = outputs
    abilities = _read(folder / "fit" / "abilities.csv")
    fitted = _read(folder / "fit" / "items.csv")
    design = _read(folder / "items.csv")
    unescape = {"regex": True, "pat": "^'", "repl": ""}  # the fit directory's apostrophe
    assert sorted(abilities["model"].str.replace(**unescape)) == sorted(models)
    assert sorted(fitted["item"].str.replace(**unescape)) == sorted(items)
    assert sorted(design["item"]) == sorted(items)
    for frame in (abilities, fitted, design):  # the numbers stay numbers
        assert not frame.select_dtypes("number").empty
    assert abilities["theta"].dtype == np.float64 and design["weight"].dtype == np.float64


def test_pandas_defaults_do_not_which_is_why_the_section_exists(outputs):
    folder, _, items = outputs
    design = pd.read_csv(folder / "items.csv")
    assert design["item"].isna().sum() >= 5  # NA, None, nan, null, N/A
    assert set(design["item"].dropna()) < set(items)
