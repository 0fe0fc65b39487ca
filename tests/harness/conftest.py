"""Real evaluation harnesses, run offline, against a local table server.

The harnesses are optional (``pip install '.[harness]'``; ``.ci/run`` installs them). Each test
that needs one skips with the reason when it is absent:

- lm-eval: the version installed in this environment, plus each older version unpacked (with
  ``pip install --no-deps --target``) under ``.ci-harness/lm-eval-<version>/`` and run with this
  interpreter on ``PYTHONPATH`` (``.ci/run`` puts 0.4.10 there);
- Inspect AI: the version installed here, with a model provider registered by the test;
- HELM (``crfm-helm``): the version installed here, or one in its own virtual environment under
  ``.ci-harness/helm-<version>/`` (``.ci/run`` puts 0.5.16 there: its pins, e.g. ``pandas~=2.0``,
  would change this environment).

Every harness runs in a subprocess with the Hugging Face hub switched offline and its caches in
the test's temporary directory. Models answer through the select-live fake OpenAI server
(``tests/select_live/conftest.py``): model ``m`` answers item ``i`` correctly exactly when
``Y[m, i] == 1``, and the server counts every request per (model, item).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from ..select_live.conftest import API_KEY, FakeOpenAI, _handler, make_data

REPO = Path(__file__).resolve().parents[2]
HARNESS_DIR = REPO / ".ci-harness"
HERE = Path(__file__).resolve().parent
TIMEOUT = 600  # seconds for one harness process (it indexes thousands of task files)
# lm-eval's command line (the lm-eval first on PYTHONPATH) with a task index of the
# --include_path folders only and torch left unimported (_lm_eval_local_tasks.py: 4.1 -> 1.8 s
# CPU per process with the index already cut, ~10 s -> 1.8 s from `python -m lm_eval`); every
# real lm-eval run of these tests runs only tasks of its own --include_path
LM_EVAL_LOCAL_TASKS = [sys.executable, str(HERE / "_lm_eval_local_tasks.py"), "run"]


@dataclass(frozen=True)
class LmEval:
    """One lm-eval version: this environment's, or one unpacked under ``.ci-harness``."""

    version: str
    path: Path | None = None  # prepended to PYTHONPATH

    def env(self, tmp: Path) -> dict[str, str]:
        return harness_env(tmp, self.path)

    def local_tasks_argv(self) -> list[str]:
        """This version's command line with only ``--include_path`` tasks indexed and torch
        left unimported (:data:`LM_EVAL_LOCAL_TASKS`)."""
        return list(LM_EVAL_LOCAL_TASKS)


def harness_env(tmp: Path, pythonpath: Path | None = None) -> dict[str, str]:
    """The environment of a harness subprocess: offline, caches under ``tmp``."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(tmp / "hf"),
        HF_DATASETS_CACHE=str(tmp / "hf" / "datasets"),
        INSPECT_LOG_DIR=str(tmp / "inspect-logs"),
        OPENAI_API_KEY=API_KEY,
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=os.pathsep.join(
            p for p in (str(pythonpath) if pythonpath else "", env.get("PYTHONPATH", "")) if p
        ),
    )
    return env


def _installed(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def lm_eval_versions() -> list:
    """pytest params, one per lm-eval available; a skipping param when a slot is empty."""
    params = []
    here = _installed("lm_eval") if importlib.util.find_spec("lm_eval") else None
    if here:
        params.append(pytest.param(LmEval(here), id=f"lm-eval-{here}"))
    else:
        reason = "lm-eval is not installed (pip install '.[harness]')"
        params.append(pytest.param(None, id="lm-eval", marks=pytest.mark.skip(reason=reason)))
    older = []
    for folder in sorted(HARNESS_DIR.glob("lm-eval-*")) if here else []:
        infos = sorted(folder.glob("lm_eval-*.dist-info"))
        if (folder / "lm_eval").is_dir() and infos:
            version = infos[0].name[len("lm_eval-") : -len(".dist-info")]
            older.append(pytest.param(LmEval(version, folder), id=f"lm-eval-{version}"))
    if not older:
        reason = (
            f"no older lm-eval under {HARNESS_DIR}/lm-eval-<version> (see .ci/run), or no "
            "lm-eval installed here to lend it its dependencies"
        )
        older.append(pytest.param(None, id="lm-eval-older", marks=pytest.mark.skip(reason=reason)))
    return params + older


@dataclass(frozen=True)
class Helm:
    """One HELM version and the Python that runs it (this one, or its own environment's)."""

    version: str
    python: Path

    def env(self, tmp: Path) -> dict[str, str]:
        """Offline, plus an NLTK data folder where HELM finds ``punkt_tab`` and asks no network.

        HELM's metrics call ``nltk.download("punkt_tab")`` unless ``nltk.data.find`` finds it;
        the exact-match metrics of these tests never tokenise with it.
        """
        nltk = tmp / "nltk_data"
        (nltk / "tokenizers" / "punkt_tab").mkdir(parents=True, exist_ok=True)
        return harness_env(tmp) | {"NLTK_DATA": str(nltk)}

    def argv(self) -> list[str]:
        return [str(self.python), "-m", "helm.benchmark.run"]

    def installed_version(self) -> str:
        """``crfm-helm``'s version as the interpreter that runs it reports it."""
        code = "import importlib.metadata as m; print(m.version('crfm-helm'))"
        done = subprocess.run(
            [str(self.python), "-c", code], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()


def helm_versions() -> list:
    """pytest params, one per HELM available; a skipping param when there is none."""
    params = []
    here = _installed("crfm-helm") if importlib.util.find_spec("helm") else None
    if here:
        params.append(pytest.param(Helm(here, Path(sys.executable)), id=f"helm-{here}"))
    for folder in sorted(HARNESS_DIR.glob("helm-*")):
        infos = sorted(folder.glob("lib/python*/site-packages/crfm_helm-*.dist-info"))
        python = folder / "bin" / "python"
        if python.exists() and infos:
            version = infos[0].name[len("crfm_helm-") : -len(".dist-info")]
            params.append(pytest.param(Helm(version, python), id=f"helm-{version}"))
    if not params:
        reason = (
            "crfm-helm is not importable here and there is no environment "
            f"{HARNESS_DIR}/helm-<version> (see .ci/run)"
        )
        params.append(pytest.param(None, id="helm", marks=pytest.mark.skip(reason=reason)))
    return params


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a harness; on failure, fail with the tail of its output."""
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-4000:]
        pytest.fail(f"{' '.join(argv[:6])} ... exited {done.returncode}:\n{tail}")
    return done


def run_all(jobs: list[tuple[list[str], dict[str, str], Path]]) -> None:
    """Several harness processes at once (each spends most of its time starting up)."""
    procs = [
        subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for argv, env, cwd in jobs
    ]
    failed = []
    for (argv, _, _), proc in zip(jobs, procs, strict=True):
        out, _ = proc.communicate(timeout=TIMEOUT)
        if proc.returncode != 0:
            failed.append(f"{' '.join(argv[:8])} ... exited {proc.returncode}:\n{out[-3000:]}")
    if failed:
        pytest.fail("\n\n".join(failed))


class TableServer:
    """The fake OpenAI server on a free port; ``Y`` (m, n) decides every answer."""

    def __init__(self, Y: np.ndarray, items: list[dict], names: list[str]) -> None:
        self.Y, self.items, self.names = Y, items, names
        self.state = FakeOpenAI(names, items, Y)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self.server.daemon_threads = True
        # poll_interval: shutdown() waits up to one interval (0.5 s by default)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def counts(self) -> dict[tuple[str, str], int]:
        """Requests per (model, item id) so far."""
        with self.state.lock:
            out: dict[tuple[str, str], int] = {}
            for key in self.state.requests:
                out[key] = out.get(key, 0) + 1
            return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def table_server():
    """Factory: ``table_server(m, n, seed)`` -> a started :class:`TableServer`."""
    servers: list[TableServer] = []

    def start(m: int = 3, n: int = 12, seed: int = 5) -> TableServer:
        Y, _, items = make_data(m=m, n=n, seed=seed)
        server = TableServer(Y, items, [f"model-{k}" for k in range(m)])
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def write_items(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(it) + "\n" for it in items))
    return path
