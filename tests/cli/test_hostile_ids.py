"""Ids holding every class of hostile character, through every command (issue 30).

``ingest``, ``export`` (table .csv/.parquet and Every Eval Ever) and re-``ingest``: every cell
comes back under its own (model, item) id and nothing is written outside the destinations.
``fit`` and ``report`` on the same ids are checked separately (their CSV quoting belongs to
``irt/_result.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io.store import Store

_register()
runner = CliRunner()

HOSTILE = [
    "cr\rx", "lf\nx", "crlf\r\nx", "tab\tx", "nul\x00x", "esc\x1b[31mx", "rlo\u202ex",
    "ls\u2028x", "..", "../up", ".", "a/b", "/abs", "back\\slash", "=cmd|' /C calc'!A0",
    "+SUM(A1)", "-2+3", "@import", "'quoted", '"dq"', " lead", "[/]", "[bold]b", "plain",
]  # fmt: skip
BENCHMARK = "../bench\r\x1b[/b]"
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2028\u2029]")


def _cells(store: Path) -> dict[tuple[str, str], float]:
    with Store(store, read_only=True) as db:
        frame = db.long()
    assert set(frame["benchmark"]) == {BENCHMARK}
    return dict(zip(zip(frame["model"], frame["item"], strict=True), frame["score"], strict=True))


def _ok(args: list[str]) -> str:
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, (args, outcome.output, outcome.exception)
    return outcome.output


@pytest.fixture
def data(tmp_path) -> tuple[Path, dict[tuple[str, str], float]]:
    rng = np.random.default_rng(0)
    models = [f"m{h}" if k % 2 else h for k, h in enumerate(HOSTILE)]
    items = [h if k % 2 else f"q{h}" for k, h in enumerate(HOSTILE)] + [f"x{k}" for k in range(8)]
    ability, difficulty = rng.normal(size=len(models)), rng.normal(size=len(items))
    p = 1 / (1 + np.exp(difficulty[None, :] - ability[:, None]))
    scores = (rng.random(p.shape) < p).astype(float)
    expected = {(m, i): scores[a, b] for a, m in enumerate(models) for b, i in enumerate(items)}
    frame = pd.DataFrame(
        [(m, i, s) for (m, i), s in expected.items()], columns=["model", "item", "score"]
    )
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    frame.to_parquet(inputs / "in.parquet")
    return inputs / "in.parquet", expected


def _tree(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_hostile_ids_survive_ingest_export_and_reingest(tmp_path, data):
    source, expected = data
    work = tmp_path / "work"
    work.mkdir()
    before = _tree(tmp_path)
    store = work / "s.duckdb"
    shown = _ok(["ingest", "table", str(source), "--store", str(store), "--benchmark", BENCHMARK])
    assert _cells(store) == expected
    # what reaches the terminal: no raw control character, markup-like ids shown as text
    for args in (["ls"], ["ls", "--benchmark", BENCHMARK]):
        listed = _ok([*args, "--store", str(store)])
        assert not RAW_CONTROL.search(listed), repr(listed)
        shown += listed
    assert "[/]" in listed and "[bold]b" in listed and not RAW_CONTROL.search(shown)

    outs = {
        "csv": work / "out.csv",
        "parquet": work / "out.parquet",
        "eee": work / "eee",
    }
    _ok(["export", str(outs["csv"]), "--store", str(store)])
    _ok(["export", str(outs["parquet"]), "--store", str(store)])
    _ok(["export", str(outs["eee"]), "--store", str(store), "--format", "eee"])
    for name, path in outs.items():
        copy = work / f"{name}.duckdb"
        _ok(["ingest", "eee" if name == "eee" else "table", str(path), "--store", str(copy)])
        assert _cells(copy) == expected, name  # every cell under its own id

    # nothing outside the destinations: the stores (and their WAL), the exports
    allowed = [work / n for n in ("s.duckdb", "csv.duckdb", "parquet.duckdb", "eee.duckdb")]
    created = _tree(tmp_path) - before - {work}
    stray = [
        p for p in created
        if not any(p == a or p.name.startswith(a.name + ".") for a in allowed)
        and not any(p == o or p.is_relative_to(o) for o in outs.values())
    ]  # fmt: skip
    assert stray == []
    eee_files = [p for p in _tree(outs["eee"]) if p.is_file()]
    assert eee_files and all(p.resolve().is_relative_to(outs["eee"].resolve()) for p in eee_files)
    assert all(
        not part.startswith(".") for p in eee_files for part in p.relative_to(outs["eee"]).parts
    )


def test_hostile_ids_survive_fit_and_report(tmp_path, data):
    from latentbench.irt import IRTResult

    source, expected = data
    store = tmp_path / "s.duckdb"
    _ok(["ingest", "table", str(source), "--store", str(store), "--benchmark", BENCHMARK])
    fit = tmp_path / "fit"
    _ok(["fit", "--store", str(store), "--benchmark", BENCHMARK, "--out", str(fit), "-q"])
    result = IRTResult.load(fit)
    assert sorted(result.model_ids) == sorted({m for m, _ in expected})
    assert sorted(result.item_ids) == sorted({i for _, i in expected})
    _ok(["report", str(fit), "--out", str(tmp_path / "r.html"), "-q"])


def test_select_replay_prints_hostile_ids_escaped(tmp_path, data):
    """The replay's table, title and 'best' line show ids as text: no raw control character
    reaches the terminal, markup-like ids are printed literally (no MarkupError)."""
    source, expected = data
    out = tmp_path / "run"
    shown = _ok(
        [
            "select", "replay", str(source), "--no-history", "--policy", "uniform",
            "--budget", "200", "--batch-size", "16", "--init-batch", "4", "--out", str(out),
        ]
    )  # fmt: skip
    assert not RAW_CONTROL.search(shown), repr(shown)
    models = {m for m, _ in expected}
    # the printed table lists models by their escaped id: at least one hostile one is there
    escaped = {m.encode("unicode_escape").decode() for m in models if RAW_CONTROL.search(m)}
    assert any(e in shown for e in escaped), shown
    assert (out / "selection.json").is_file()
