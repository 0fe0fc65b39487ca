"""HELM (``crfm-helm``), run offline with three table-answering models, then ``latentbench ingest``.

``helm-run`` needs no network for HELM's ``simple_mcqa`` scenario (two-digit numbers, even or
odd, generated in code) when the models are deployments of HELM's own ``HTTPModelClient``
declared under ``--local-path`` (``model_deployments.yaml``, ``model_metadata.yaml``) with HELM's
``simple/tokenizer1``. Each deployment asks this test's server (``POST /<model>/process``),
which answers the number of the last question right exactly when ``Y[model, number] == 1``.
Ingest must give, per model, exactly HELM's own per-instance ``exact_match``, equal to ``Y``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io.store import Store

from .conftest import Helm, helm_versions, run

_register()
runner = CliRunner()

pytestmark = pytest.mark.slow

MODELS = ["model-0", "model-1", "model-2"]
N_EVAL = 12  # --max-eval-instances (HELM samples them from the 70 test questions)
QUESTION = re.compile(r"Is (\d+) even or odd\?")


class HelmTableServer:
    """HELM's ``HTTPModelClient`` protocol on a free port; ``Y`` (3, 100) decides every answer."""

    def __init__(self, Y: np.ndarray) -> None:
        self.Y = Y
        self.lock = threading.Lock()
        self.requests: list[tuple[str, int]] = []
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model, _, tail = self.path.strip("/").partition("/")
                if tail != "process" or model not in MODELS:
                    self.send_error(404, f"unknown path {self.path}")
                    return
                number = int(QUESTION.findall(body["prompt"])[-1])  # the question asked
                with state.lock:
                    state.requests.append((model, number))
                right, wrong = ("A", "B") if number % 2 == 0 else ("B", "A")
                text = right if state.Y[MODELS.index(model), number] else wrong
                reply = {
                    "text": text,
                    "tokens": [{"text": text, "logprob": 0.0}],
                    "logprob": 0.0,
                    "request_time": 0.0,
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _local_configs(folder: Path, base_url: str) -> Path:
    """HELM's ``--local-path``: the three deployments, their metadata, an empty cache."""
    folder.mkdir()
    metadata = ["models:"]
    deployments = ["model_deployments:"]
    for name in MODELS:
        metadata += [
            f"  - name: lbtable/{name}",
            f"    display_name: Table {name}",
            "    description: answers from the test's table",
            "    creator_organization_name: latentbench",
            "    access: open",
            "    release_date: 2024-01-01",
            "    tags: [TEXT_MODEL_TAG, FULL_FUNCTIONALITY_TEXT_MODEL_TAG]",
        ]
        deployments += [
            f"  - name: lbtable/{name}",
            f"    model_name: lbtable/{name}",
            "    tokenizer_name: simple/tokenizer1",
            "    max_sequence_length: 2048",
            "    client_spec:",
            "      class_name: helm.clients.http_model_client.HTTPModelClient",
            "      args:",
            f"        base_url: {base_url}/{name}",
        ]
    (folder / "model_metadata.yaml").write_text("\n".join(metadata) + "\n")
    (folder / "model_deployments.yaml").write_text("\n".join(deployments) + "\n")
    return folder


def _helm_rows(run_dir: Path) -> dict[str, tuple[int, float, str]]:
    """instance id -> (number asked, exact_match mean, split), from HELM's own files."""
    state = json.loads((run_dir / "scenario_state.json").read_text())
    numbers = {
        rs["instance"]["id"]: int(QUESTION.search(rs["instance"]["input"]["text"]).group(1))
        for rs in state["request_states"]
    }
    rows = {}
    for entry in json.loads((run_dir / "per_instance_stats.json").read_text()):
        (stat,) = [s for s in entry["stats"] if s["name"]["name"] == "exact_match"]
        iid = entry["instance_id"]
        rows[iid] = (numbers[iid], float(stat["mean"]), stat["name"]["split"])
    return rows


@pytest.mark.parametrize("helm", helm_versions())
def test_helm_run_three_models(helm: Helm, tmp_path: Path):
    Y = (np.random.default_rng(17).random((len(MODELS), 100)) < 0.6).astype(int)
    server = HelmTableServer(Y)
    try:
        configs = _local_configs(tmp_path / "prod_env", server.base_url)
        out = tmp_path / "benchmark_output"
        argv = [
            *helm.argv(),
            "--run-entries",
            *(f"simple_mcqa:model=lbtable/{name}" for name in MODELS),
            "--suite",
            "lb",
            "--max-eval-instances",
            str(N_EVAL),
            "--output-path",
            str(out),
            "--local-path",
            str(configs),
        ]
        run(argv, helm.env(tmp_path), tmp_path)
    finally:
        server.close()

    # the harness really ran: its version, one run folder per model with the files helm-run
    # writes, and every eval question asked once per model at the server, nothing else
    assert helm.installed_version() == helm.version
    suite = out / "runs" / "lb"
    run_dirs = {name: suite / f"simple_mcqa:model=lbtable_{name}" for name in MODELS}
    assert sorted(p.name for p in suite.iterdir() if p.name != "eval_cache") == sorted(
        p.name for p in run_dirs.values()
    )
    helm_rows = {}
    for name, run_dir in run_dirs.items():
        for file in ("run_spec.json", "scenario_state.json", "stats.json"):
            assert (run_dir / file).is_file(), file
        spec = json.loads((run_dir / "run_spec.json").read_text())
        assert spec["adapter_spec"]["model"] == f"lbtable/{name}"
        assert spec["adapter_spec"]["max_eval_instances"] == N_EVAL
        helm_rows[name] = _helm_rows(run_dir)
    asked = {iid: number for iid, (number, _, _) in helm_rows["model-0"].items()}
    assert len(asked) == N_EVAL
    for name in MODELS:
        assert {iid: number for iid, (number, _, _) in helm_rows[name].items()} == asked
        assert {split for _, _, split in helm_rows[name].values()} == {"test"}
        # HELM's own scores are the table's answers
        for number, score, _ in helm_rows[name].values():
            assert score == Y[MODELS.index(name), number], (name, number)
    assert Counter(server.requests) == {(n, k): 1 for n in MODELS for k in asked.values()}
    # the three models are told apart: the table gives them different scores on these items
    assert len({tuple(s for _, s, _ in sorted(helm_rows[n].values())) for n in MODELS}) == 3

    store = tmp_path / "s.duckdb"
    result = runner.invoke(
        app, ["ingest", "helm", str(out), "--store", str(store), "--metric", "exact_match"]
    )
    assert result.exit_code == 0, result.output
    with Store(store) as db:
        long = db.long()
    assert set(long["benchmark"]) == {"simple_mcqa"}
    assert set(long["metric"]) == {"exact_match"} and set(long["split"]) == {"test"}
    assert set(long["trial"]) == {0}
    got = {(m, i): s for m, i, s in zip(long["model"], long["item"], long["score"], strict=True)}
    assert len(got) == len(long) == len(MODELS) * N_EVAL
    assert got == {
        (f"lbtable/{name}", iid): score
        for name in MODELS
        for iid, (_, score, _) in helm_rows[name].items()
    }
