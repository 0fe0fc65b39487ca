"""The ingest reader registry: sources, options and the CLI help all come from it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.formats import READERS, SOURCES, LoadReport, read_results, reader

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")


def test_sources_are_the_registry():
    assert (
        SOURCES
        == tuple(READERS)
        == (
            "lm-eval",
            "lighteval",
            "helm",
            "inspect",
            "opencompass",
            "table",
            "eee",
        )
    )


@pytest.mark.parametrize("name", list(READERS))
def test_no_reader_swallows_unknown_options(name):
    kinds = {p.kind for p in inspect.signature(READERS[name].read).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds


def test_option_of_another_source_is_refused_not_ignored():
    with pytest.raises(InputError, match=r"include_perturbed=True: an option of helm; source "):
        read_results("table", FORMATS / "table", include_perturbed=True)
    with pytest.raises(InputError, match=r"errored='zero': an option of inspect"):
        read_results("lm-eval", FORMATS / "lm-eval" / "v0.4.9", errored="zero")


def test_option_values_come_from_the_literal_annotation():
    assert READERS["inspect"].options["errored"].values == ("missing", "zero")
    with pytest.raises(InputError, match=r"errored='never'; expected 'missing' or 'zero'"):
        read_results("inspect", FORMATS / "inspect", errored="never")
    with pytest.raises(InputError, match=r"layout='tall'; expected 'auto', 'long' or 'wide'"):
        read_results("table", FORMATS / "table", layout="tall")


def test_registering_rejects_var_keyword_and_duplicates():
    def swallow(path: Path, report: LoadReport, **_: object) -> pd.DataFrame:
        raise AssertionError

    with pytest.raises(TypeError, match=r"no \*\*_"):
        reader("swallow", summary="x", patterns=("*.x",))(swallow)
    with pytest.raises(ValueError, match="registered twice"):
        reader("table", summary="x", patterns=("*.x",))(swallow)
    assert "swallow" not in READERS


def test_a_new_format_is_one_registered_function(tmp_path, monkeypatch):
    monkeypatch.setattr("latentbench.io.formats._registry.READERS", dict(READERS))
    from latentbench.io.formats import _registry

    @reader("pairs", summary="model item score triples", patterns=("*.pairs",))
    def read(path: Path, report: LoadReport, *, model: str | None = None) -> pd.DataFrame:
        rows = [line.split() for line in path.read_text().splitlines()]
        table = pd.DataFrame(rows, columns=["model", "item", "score"])
        table["score"] = table["score"].astype(float)
        table.to_csv(path.with_suffix(".csv"), index=False)
        return _registry.READERS["table"].read(
            path.with_suffix(".csv"),
            report,
            benchmark="pairs",
            metric=None,
            filter=None,
            model=model,
        )

    (tmp_path / "a.pairs").write_text("m1 q1 1\nm1 q2 0\n")
    assert "pairs" in _registry.READERS
    frame, report = read_results("pairs", tmp_path)
    assert list(frame["item"]) == ["q1", "q2"]
    assert report.source == "pairs"


def test_cli_help_lists_every_source_and_option_owner():
    _register()
    result = CliRunner().invoke(app, ["ingest", "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    for source in READERS.values():
        assert source.name in result.output
        assert source.summary in result.output
    assert "helm: keep perturbed" in result.output
    assert "inspect: errored samples" in result.output
