"""``ingest`` says what to do next, and the command it prints works when pasted.

Found on a newcomer's walk: ``latentbench ingest lm-eval mmlu-logs/ --store results.duckdb``
stored lm-eval's 57 ``mmlu_*`` tasks as 57 benchmarks of 100 to 1,500 items and ended on the
row count, with no word of ``--group mmlu`` (one benchmark, items TASK/ID) nor of the next
command, while ``fit`` ends on ``next: latentbench report ...``.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()
DATE = "2024-05-01T12-30-45.123456"


def _logs(root: Path, tasks: list[str], n_models: int = 8, n_items: int = 12) -> Path:
    """lm-eval ``--log_samples`` folders: one per model, one samples file per task."""
    rng = np.random.default_rng(0)
    for m in range(n_models):
        folder = root / f"org__m{m}"
        folder.mkdir(parents=True)
        for task in tasks:
            lines = []
            for i in range(n_items):
                score = float(rng.random() < 0.3 + 0.05 * m)
                line = dict(doc_id=i, doc={}, target=0, filter="none", metrics=["acc"], acc=score)
                lines.append(json.dumps(line))
            (folder / f"samples_{task}_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
        results = {
            "results": {t: {} for t in tasks},
            "model_name": f"org/m{m}",
            "lm_eval_version": "0.4.9",
            "config": {"model_args": f"pretrained=org/m{m}"},
        }
        (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    return root


def _lines(outcome, start: str) -> list[str]:
    return [line for line in outcome.output.splitlines() if line.startswith(start)]


def test_one_benchmark_ingested_names_the_fit_that_reads_it(tmp_path):
    logs = _logs(tmp_path / "logs", ["arc_easy"])
    store = tmp_path / "my results.duckdb"  # a space: the printed command quotes it
    outcome = runner.invoke(app, ["ingest", "lm-eval", str(logs), "--store", str(store)])
    assert outcome.exit_code == 0, outcome.output
    (line,) = _lines(outcome, "next: ")
    args = shlex.split(line.removeprefix("next: "))
    assert args[:2] == ["latentbench", "fit"] and "--benchmark" in args, line
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        fitted = runner.invoke(app, [*args[1:], "-q"])
    finally:
        os.chdir(here)
    assert fitted.exit_code == 0, fitted.output


def test_many_tasks_of_one_family_name_the_group_option(tmp_path):
    tasks = ["mmlu_anatomy", "mmlu_astronomy", "mmlu_virology", "arc_easy"]
    logs = _logs(tmp_path / "logs", tasks)
    store = tmp_path / "s.duckdb"
    outcome = runner.invoke(app, ["ingest", "lm-eval", str(logs), "--store", str(store)])
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert "--group mmlu" in text and "3 tasks mmlu_*" in text, text
    assert "latentbench ls --store" in text, text
    grouped = runner.invoke(  # and with --group: no such note
        app, ["ingest", "lm-eval", str(logs), "--store", str(tmp_path / "g.duckdb"),
              "--group", "mmlu"],
    )  # fmt: skip
    assert grouped.exit_code == 0 and "--group" not in grouped.output, grouped.output
