"""The README's printed outputs are what the commands print (words; numbers aside).

Each ``$ latentbench ...`` line of a README output block is run as written, in a folder that
holds the README's input files under the README's names (the shared matrices, the calibration
and new model built from MMLU-Pro as the README says, the repository's test data), and every
line the README shows under it (``...`` elisions and table rows left out) must be printed,
with whitespace collapsed and every number masked: the last digits move with the libraries'
versions, the wording must not drift from the page newcomers read first. The demo's block is
checked where the demo runs (``tests/cli/test_fit_cli.py``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.irt import BootstrapResult, IRTResult

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
README = ROOT / "README.md"

_register()
runner = CliRunner()

_BOX = set("┏┃┡│└┗┣┠╇━─╭╰")


def masked(text: str) -> str:
    """``text`` with whitespace collapsed and every number (digits, commas, point, sign) as #."""
    return re.sub(r"[+-]?\d[\d,]*(?:\.\d+)?", "#", " ".join(text.split()))


def readme_sessions() -> list[tuple[str, list[str]]]:
    """Every ``$ latentbench`` command of the README's code blocks, with the lines shown under it.

    The demo is left out (its own test); so are ``...`` elisions and table rows, whose layout
    follows the terminal's width.
    """
    sessions: list[tuple[str, list[str]]] = []
    blocks = README.read_text().split("```")[1::2]
    for block in blocks:
        current: list[str] | None = None
        for line in block.splitlines():
            if line.startswith("$ latentbench "):
                current = []
                sessions.append((line[2:], current))
            elif line.startswith("$ "):
                current = None
            elif current is not None:
                shown = line.strip()
                if shown and not shown.startswith("...") and shown[0] not in _BOX:
                    current.append(line)
    return [(cmd, shown) for cmd, shown in sessions if not cmd.startswith("latentbench demo")]


def test_readme_sessions_are_found():
    """The parser sees the README's four sections (a renamed block would skip its check)."""
    commands = [cmd.split("#")[0].split()[:2] for cmd, _ in readme_sessions()]
    for expected in (["latentbench", "fit"], ["latentbench", "estimate"],
                     ["latentbench", "select"], ["latentbench", "ingest"],
                     ["latentbench", "export"]):  # fmt: skip
        assert expected in commands, commands
    assert all(shown for _, shown in readme_sessions())


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "mmlu_pro.parquet").exists(), reason="needs ../shared/data")
def test_readme_outputs_are_printed(tmp_path, monkeypatch):
    for name in ("bfcl_v2.parquet",):
        (tmp_path / name).symlink_to(SHARED / name)
    mmlu = pd.read_parquet(SHARED / "mmlu_pro.parquet")
    new = mmlu["model"] == "Mixtral-8x7B-v0.1"  # the README's held-out model
    assert new.any() and mmlu.loc[~new, "model"].nunique() == 28
    mmlu[~new].to_parquet(tmp_path / "calib28.parquet", index=False)
    mmlu[new].to_parquet(tmp_path / "mixtral.parquet", index=False)
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    for command, shown in readme_sessions():
        args = shlex.split(command, comments=True)
        assert args[0] == "latentbench", command
        outcome = runner.invoke(app, args[1:])
        assert outcome.exit_code == 0, f"{command}\n{outcome.output}"
        printed = masked(outcome.output)
        for line in shown:
            assert masked(line) in printed, (
                f"README shows under `{command}`:\n{line}\nthe command printed:\n{outcome.output}"
            )


def _python_blocks(text: str) -> list[str]:
    return [
        block.removeprefix("python\n")
        for block in text.split("```")[1::2]
        if block.startswith("python\n")
    ]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "bfcl_v2.parquet").exists(), reason="needs ../shared/data")
def test_readme_and_docs_python_blocks_run(tmp_path, monkeypatch):
    """The ``python`` blocks of the README ("In Python") and of docs/report.md run as written,
    one after the other in one namespace (the report page's block uses the README's
    ``result`` and ``matrix``), on files under the README's names cut from BFCL; the command
    sessions above check only the ``$ latentbench`` lines."""
    long = pd.read_parquet(SHARED / "bfcl_v2.parquet")
    models = sorted(long["model"].unique())
    long[long["model"] != models[0]].to_parquet(tmp_path / "results.parquet", index=False)
    long[long["model"] == models[0]].to_parquet(tmp_path / "new_model.parquet", index=False)
    long[long["model"].isin(models[:8])].to_parquet(tmp_path / "candidates.parquet", index=False)
    long[~long["model"].isin(models[:8])].to_parquet(tmp_path / "history.parquet", index=False)
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(README.read_text()) + _python_blocks(
        (ROOT / "docs" / "report.md").read_text()
    )
    assert len(blocks) == 2, "a python block was added or renamed: run it here too"
    # the report page's bootstrap runs as written (its call is checked below) but with 4 of its
    # 200 refits: the same path (parametric redraws, two forked workers, the same result
    # type), at 2 % of what was ~2/3 of this test's CPU; the replicates' statistics at 200
    # and more are tests/irt's (test_bootstrap*), this test checks that the page's code runs
    written = IRTResult.bootstrap
    calls: list[tuple[int, dict[str, Any]]] = []

    def bootstrap(self, matrix=None, *, n_boot=200, **options):
        calls.append((n_boot, options))
        return written(self, matrix, n_boot=min(n_boot, 4), **options)

    monkeypatch.setattr(IRTResult, "bootstrap", bootstrap)
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, "<docs python block>", "exec"), namespace)
    assert calls == [(200, {"method": "parametric", "n_jobs": 2})]
    assert isinstance(namespace["boot"], BootstrapResult) and namespace["boot"].n_boot == 4
    assert namespace["run"].certified
    assert (tmp_path / "report.html").exists() and (tmp_path / "fit.html").exists()
