"""PULSE live through the real lm-eval on several tasks as one benchmark (``[oracle] group``).

Two local generation tasks (``lb_ga``, ``lb_gb``, twelve docs each) are one benchmark ``lb_g``
whose items are ``TASK/DOC_ID``, as ``latentbench ingest lm-eval --group`` names them. One
harness process per batch lists both tasks (``--tasks lb_ga,lb_gb --samples '{...}'``). What
could go wrong and is checked: the harness refusing several tasks in ``--samples``, a doc of one
task read back as the other's, a doc asked twice; the run must equal a replay of the same
answers, and the server must see each selected cell once.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.io.store import Store
from latentbench.select import MatrixOracle
from latentbench.select.live import LiveConfig, run_live

from ..select_live.conftest import make_data
from .conftest import LM_EVAL_LOCAL_TASKS, TableServer, harness_env, write_items
from .test_lm_eval_bridge import TASK

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("lm_eval") is None,
        reason="lm-eval is not installed (pip install '.[harness]')",
    ),
]

TASKS = ("lb_ga", "lb_gb")
PER_TASK = 12


def _files(tmp: Path, items: list[dict], H: np.ndarray, server: TableServer) -> Path:
    """Both tasks' YAMLs and data, the items (``TASK/DOC_ID``), the history and run.toml."""
    tasks = tmp / "tasks"
    tasks.mkdir()
    ids = []
    for t, name in enumerate(TASKS):
        chunk = items[t * PER_TASK : (t + 1) * PER_TASK]
        data = write_items(tmp / f"{name}.jsonl", chunk)
        (tasks / f"{name}.yaml").write_text(TASK.format(items=data).replace("lb_bridge", name))
        ids += [f"{name}/{k}" for k in range(PER_TASK)]
    write_items(tmp / "docs.jsonl", [{"id": i} for i in ids])
    hist = pd.DataFrame(H, columns=ids)
    hist.insert(0, "model", [f"h{k}" for k in range(H.shape[0])])
    hist.to_csv(tmp / "history.csv", index=False)
    command = shlex.join(LM_EVAL_LOCAL_TASKS)
    lines = [
        "[run]", "seed = 3", "budget = 16", "batch_size = 8", "init_batch = 8",
        'policy = "pulse"', "", "[policy]", "refit_every = 1", "",
        "[proxy]", 'history = "history.csv"', "rank = 2", "",
        "[oracle]", 'kind = "lm-eval"', 'group = "lb_g"', "execute = true",
        f"command = {json.dumps(command)}", 'backend = "local-chat-completions"',
        f"include_path = {json.dumps(str(tasks))}", 'extra_args = "--apply_chat_template"',
        f"samples_dir = {json.dumps(str(tmp / 'lm_eval_out'))}",
        f"plan_dir = {json.dumps(str(tmp / 'plans'))}", "",
        "[items]", 'path = "docs.jsonl"',
    ]  # fmt: skip
    for name in server.names:
        url = f"{server.base_url}/chat/completions"
        lines += ["", "[[models]]", f'name = "{name}"', f'lm_eval_model = "{name}"',
                  f'model_args = "model={name},base_url={url}"']  # fmt: skip
    path = tmp / "run.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_group_of_tasks_through_real_lm_eval_equals_replay(tmp_path: Path, monkeypatch):
    Y, H, items = make_data(m=2, n=len(TASKS) * PER_TASK, n_history=30, seed=8)
    for key, value in harness_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    server = TableServer(Y, items, [f"model-{k}" for k in range(2)])
    try:
        cfg = LiveConfig.from_toml(_files(tmp_path, items, H, server))
        assert cfg.benchmark_name == "lb_g"
        with Store(tmp_path / "live.duckdb") as db:
            live = run_live(cfg, db)
            observed = db.selection_observations(live.run_id)
        counts = server.counts()
    finally:
        server.close()
    with Store(tmp_path / "replay.duckdb") as db:
        replay = run_live(cfg, db, oracle=MatrixOracle(Y))
        replayed = db.selection_observations(replay.run_id)

    assert live.status == "done", live
    sel = live.selection
    assert sel.best == replay.selection.best
    assert sel.evaluations_total == replay.selection.evaluations_total == 2 * 8 + 16
    np.testing.assert_allclose(sel.estimates, replay.selection.estimates)

    def cells(frame: pd.DataFrame) -> list[tuple[str, str, float]]:
        rows = zip(frame["model"], frame["item"], frame["score"], strict=True)
        return sorted((m, i, float(s)) for m, i, s in rows)

    assert cells(observed) == cells(replayed)
    position = {f"{TASKS[k // PER_TASK]}/{k % PER_TASK}": k for k in range(len(items))}
    for m, i, score in cells(observed):  # each task's doc read back as that task's
        assert score == Y[int(m.split("-")[1]), position[i]]
    assert {i.split("/")[0] for _, i, _ in cells(observed)} == set(TASKS)
    selected = {(m, items[position[i]]["id"]) for m, i, _ in cells(observed)}
    assert counts == dict.fromkeys(selected, 1)
    # some harness process was asked for both tasks at once, and evaluated both
    plans = sorted((tmp_path / "lm_eval_out").rglob("samples_lb_g*_*.jsonl"))
    stamps = {p.name.split("_", 3)[3] for p in plans if p.name.startswith("samples_lb_ga_")}
    assert any(p.name.startswith("samples_lb_gb_") and p.name.split("_", 3)[3] in stamps
               for p in plans)  # fmt: skip
