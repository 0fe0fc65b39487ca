"""A pre-registered design run through the real lm-eval: ``tiny --lm-eval-samples`` writes the
``--samples`` file, the harness evaluates exactly those docs (one process), and ``estimate
--source lm-eval --items`` scores its logs as it scores the same answers from a table.

What could go wrong and is checked: a doc evaluated that the design did not ask for, a design
doc missing, or a logged answer labelled with another doc's id (lm-eval 0.4.9-0.4.13 label the
k-th listed doc with the k-th id, so the file's ids must be sorted). The harness is lm-eval's
command line with only the test's ``--include_path`` indexed and torch unimported
(``LM_EVAL_LOCAL_TASKS``: ~2 s of CPU instead of ~10 s); its ``--samples`` handling, evaluator
and logs are lm-eval's own.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

from ..select_live.conftest import make_data
from .conftest import LM_EVAL_LOCAL_TASKS, TableServer, harness_env, run
from .test_lm_eval_bridge import bridge_files

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("lm_eval") is None,
        reason="lm-eval is not installed (pip install '.[harness]')",
    ),
]

_register()
runner = CliRunner()
K = 8


def test_a_tiny_design_run_by_lm_eval_scores_as_its_table(tmp_path: Path, monkeypatch):
    Y, H, items = make_data(m=2, n=24, n_history=30, seed=8)
    tasks, ids, hist = bridge_files(tmp_path, items, H, monkeypatch)
    calibration = tmp_path / "calibration.csv"
    long = hist.rename_axis("model").reset_index().melt("model", var_name="item")
    long.rename(columns={"value": "score"}).assign(benchmark="lb_bridge").to_csv(
        calibration, index=False
    )
    design, samples = tmp_path / "items.csv", tmp_path / "samples.json"
    tiny = ["tiny", str(calibration), "--k", str(K), "--seed", "4", "--out", str(design)]
    outcome = runner.invoke(app, [*tiny, "--lm-eval-samples", str(samples)])
    assert outcome.exit_code == 0, outcome.output
    drawn = pd.read_csv(design, dtype={"item": str})["item"].tolist()
    assert json.loads(samples.read_text()) == {"lb_bridge": sorted(int(i) for i in drawn)}
    assert drawn != sorted(drawn, key=int)  # drawn out of order: the file must sort them

    server = TableServer(Y, items, ["model-0", "model-1"])
    out = tmp_path / "lm_eval_out"
    try:
        argv = [
            *LM_EVAL_LOCAL_TASKS,
            "--model", "local-chat-completions",
            "--model_args", f"model=model-1,base_url={server.base_url}/chat/completions",
            "--tasks", "lb_bridge", "--include_path", str(tasks),
            "--samples", str(samples),
            "--output_path", str(out), "--log_samples", "--apply_chat_template",
        ]  # fmt: skip
        run(argv, harness_env(tmp_path), tmp_path)
        counts = server.counts()
    finally:
        server.close()
    # the harness asked the server for exactly the design's docs, once each
    assert counts == {("model-1", items[int(i)]["id"]): 1 for i in drawn}

    args = ["estimate", str(calibration), str(out), "--source", "lm-eval", "--items",
            str(design), "--json"]  # fmt: skip
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    by_harness = json.loads(outcome.stdout)
    table = tmp_path / "answers.csv"
    pd.DataFrame({"model": "model-1", "item": ids, "score": Y[1]}).to_csv(table, index=False)
    outcome = runner.invoke(app, ["estimate", str(calibration), str(table), "--items",
                                  str(design), "--json"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    by_table = json.loads(outcome.stdout)
    assert by_harness["n_evaluated"] == K and by_harness["stopped"] == "items"
    assert by_harness["items"] == drawn
    # every logged answer is the answer to its own doc
    assert np.array_equal(np.asarray(by_harness["answers"]), Y[1, [int(i) for i in drawn]])
    for key in ("score", "lower", "upper", "theta", "rank"):
        assert by_harness[key] == by_table[key], key
