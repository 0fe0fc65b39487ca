"""PULSE live through the real lm-eval: ``lm-eval run --samples`` for exactly the cells picked.

Two models behind the local table server, twenty-four docs of a local generation task. The
bridge (``[oracle] kind = "lm-eval"``, ``execute = true``) runs the harness once per batch,
asking only for the docs the selection needs, and reads its sample logs. The run must reach the
decision a replay of the same answer table reaches, and the server must see each selected cell
once. Each harness process costs seconds, so the run is as small as keeps two adaptive rounds:
2 initial batches + 2 rounds = 4 processes (was 3 + 4+), and the command is lm-eval's own with
its index of built-in task files left out and torch unimported (``LM_EVAL_LOCAL_TASKS``: ~1.8 s
of CPU per process instead of ~10 s).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.io.store import Store
from latentbench.select import MatrixOracle
from latentbench.select.live import LiveConfig, run_live

from ..select_live.conftest import make_data
from .conftest import LM_EVAL_LOCAL_TASKS, TableServer, harness_env, write_items

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("lm_eval") is None,
        reason="lm-eval is not installed (pip install '.[harness]')",
    ),
]

TASK = """\
task: lb_bridge
dataset_path: json
dataset_kwargs:
  data_files:
    test: {items}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 8
metric_list:
  - metric: exact_match
"""


def _config(tmp: Path, server: TableServer, tasks: Path) -> Path:
    command = shlex.join(LM_EVAL_LOCAL_TASKS)
    lines = [
        "[run]",
        "seed = 3",
        "budget = 16",
        "batch_size = 8",
        "init_batch = 8",
        'policy = "pulse"',
        "",
        "[policy]",
        "refit_every = 1",
        "",
        "[proxy]",
        'history = "history.csv"',
        "rank = 2",
        "",
        "[oracle]",
        'kind = "lm-eval"',
        'task = "lb_bridge"',
        "execute = true",
        f"command = {json.dumps(command)}",
        'backend = "local-chat-completions"',
        f"include_path = {json.dumps(str(tasks))}",
        'extra_args = "--apply_chat_template"',
        f"samples_dir = {json.dumps(str(tmp / 'lm_eval_out'))}",
        f"plan_dir = {json.dumps(str(tmp / 'plans'))}",
        "",
        "[items]",
        'path = "docs.jsonl"',
    ]
    for name in server.names:
        lines += [
            "",
            "[[models]]",
            f'name = "{name}"',
            f'lm_eval_model = "{name}"',
            f'model_args = "model={name},base_url={server.base_url}/chat/completions"',
        ]
    path = tmp / "run.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def bridge_files(
    tmp: Path, items: list[dict], H: np.ndarray, monkeypatch
) -> tuple[Path, list[str], pd.DataFrame]:
    """The files of a bridge run in ``tmp``: the lm-eval task (``tasks/lb_bridge.yaml``), the
    items as lm-eval docs (``docs.jsonl``, ids ``"0"``, ``"1"``, ...) and the history
    (``history.csv``, models ``h0``, ``h1``, ... over the same ids); the harness's environment
    set. Returns the task folder, the doc ids and the history (model index)."""
    tasks = tmp / "tasks"
    tasks.mkdir()
    (tasks / "lb_bridge.yaml").write_text(TASK.format(items=write_items(tmp / "gen.jsonl", items)))
    # the run's items are lm-eval doc ids; the history uses the same columns
    docs = [{"id": str(k), "prompt": it["prompt"], "answer": it["answer"]}
            for k, it in enumerate(items)]  # fmt: skip
    write_items(tmp / "docs.jsonl", docs)
    ids = [d["id"] for d in docs]
    hist = pd.DataFrame(H, columns=ids)
    hist.insert(0, "model", [f"h{k}" for k in range(H.shape[0])])
    hist.to_csv(tmp / "history.csv", index=False)
    for key, value in harness_env(tmp).items():
        monkeypatch.setenv(key, value)
    return tasks, ids, hist.set_index("model")


@pytest.mark.slow
def test_pulse_through_real_lm_eval_equals_replay(tmp_path: Path, monkeypatch):
    Y, H, items = make_data(m=2, n=24, n_history=30, seed=8)
    server = TableServer(Y, items, [f"model-{k}" for k in range(2)])
    try:
        tasks, _, _ = bridge_files(tmp_path, items, H, monkeypatch)
        cfg = LiveConfig.from_toml(_config(tmp_path, server, tasks))

        with Store(tmp_path / "live.duckdb") as db:
            live = run_live(cfg, db)
            observed = db.selection_observations(live.run_id)
        counts = server.counts()
    finally:
        server.close()
    with Store(tmp_path / "replay.duckdb") as db:
        replay = run_live(cfg, db, oracle=MatrixOracle(Y))
        replayed = db.selection_observations(replay.run_id)

    sel = live.selection
    assert live.status == "done", live
    assert sel.best == replay.selection.best
    assert sel.evaluations_total == replay.selection.evaluations_total == 2 * 8 + 16
    np.testing.assert_array_equal(sel.trace_best, replay.selection.trace_best)
    np.testing.assert_allclose(sel.estimates, replay.selection.estimates)

    def cells(frame: pd.DataFrame) -> list[tuple[int, str, str, float]]:
        rows = zip(frame["round"], frame["model"], frame["item"], frame["score"], strict=True)
        return sorted((int(r), m, i, float(s)) for r, m, i, s in rows)

    assert cells(observed) == cells(replayed)
    for _, m, i, score in cells(observed):
        assert score == Y[int(m.split("-")[1]), int(i)]
    # each selected cell went through the harness to the server exactly once, nothing else did
    selected = {(m, items[int(i)]["id"]) for _, m, i, _ in cells(observed)}
    assert len(selected) == sel.evaluations_total
    assert counts == dict.fromkeys(selected, 1)
    # one harness process per batch (the initial batch of each model, then one per round of
    # min(B, 8) = 8 cells: two rounds); each wrote its own results file with its version
    results = sorted((tmp_path / "lm_eval_out").glob("*/results_*.json"))
    assert sel.rounds == 16 // 8 == 2
    assert len(results) == 2 + sel.rounds
    version = importlib.metadata.version("lm_eval")
    written = [json.loads(p.read_text()) for p in results]
    assert {meta["lm_eval_version"] for meta in written} == {version}
    # LM_EVAL_LOCAL_TASKS left torch unimported (no seeding, no collect_env: ~2.3 s CPU each)
    assert {meta["pretty_env_info"] for meta in written} == {"N/A (torch not installed)"}


def test_the_local_tasks_command_is_lm_eval_indexing_only_the_include_path(
    tmp_path: Path, monkeypatch
):
    """The bridge tests' command (``LM_EVAL_LOCAL_TASKS``) is lm-eval's own command line with
    the built-in task files left out of its index: the local task is listed, no built-in one
    (``python -m lm_eval ls subtasks`` lists about 14,000, ``hellaswag`` among them)."""
    _, _, items = make_data(m=2, n=4, seed=8)
    tasks, _, _ = bridge_files(tmp_path, items, np.zeros((2, 4)), monkeypatch)
    argv = [*LM_EVAL_LOCAL_TASKS[:-1], "ls", "subtasks", "--include_path", str(tasks)]
    done = subprocess.run(argv, env=harness_env(tmp_path), capture_output=True, text=True,
                          timeout=300, check=True)  # fmt: skip
    assert "lb_bridge" in done.stdout
    assert "hellaswag" not in done.stdout and len(done.stdout.splitlines()) < 50, done.stdout
