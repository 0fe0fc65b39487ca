"""A fake OpenAI-compatible server and a small live-selection setup.

The server answers ``POST /v1/chat/completions`` deterministically: model ``m`` answers item
``i`` correctly exactly when ``Y[m, i] == 1``, so a live run sees the matrix ``Y``. It logs
every request, counts answered cells, can inject faults per (model, item) and attempt, and
can hold requests (to kill or interrupt a client mid-batch).
"""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

API_KEY = "sk-test-SECRET-5f3a9c"
KEY_ENV = "LATENTBENCH_TEST_KEY"
WAIT = 30.0  # upper bound of every wait in these tests (seconds)


class FakeOpenAI:
    """State of the fake endpoint (shared with the handler threads)."""

    def __init__(self, model_names: list[str], items: list[dict], Y: np.ndarray) -> None:
        self.model_names = model_names
        self.by_prompt = {it["prompt"]: k for k, it in enumerate(items)}
        self.items = items
        self.Y = Y
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []  # (model, item id) per request
        self.answered: Counter = Counter()  # 200 answers with content, per cell
        self.faults: dict[tuple[str, str], list[str]] = {}
        self.hold_after: int | None = None  # hold request number > hold_after
        self.held = threading.Event()
        self.n_held = 0
        self.n_unauthorized = 0
        self.other_paths: list[tuple[str, str | None]] = []
        self.release = threading.Event()
        self.timeout_release = threading.Event()
        self.n_posts = 0  # every POST to the completions path (what a provider may bill)
        self.notify_at: int | None = None  # set `reached` at this request number
        self.reached = threading.Event()

    def cell(self, model: str, prompt: str) -> tuple[int, int] | None:
        if model not in self.model_names or prompt not in self.by_prompt:
            return None
        return self.model_names.index(model), self.by_prompt[prompt]


def _handler(state: FakeOpenAI):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, code: int, body: bytes, headers: dict | None = None) -> None:
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client went away (killed or timed out)
                pass

        def _drip(self) -> None:
            body = b" " * 200 + b"{}"
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.flush()
                for k in range(len(body)):
                    if state.timeout_release.wait(0.1):
                        return
                    self.wfile.write(body[k : k + 1])
                    self.wfile.flush()
            except OSError:  # the client gave up
                pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client went away mid-request (a run aborted)
                self.close_connection = True
                return
            body = json.loads(raw)
            if self.path.endswith("/v1/chat/completions"):
                with state.lock:
                    state.n_posts += 1
            if not self.path.endswith("/v1/chat/completions"):
                with state.lock:
                    state.other_paths.append((self.path, self.headers.get("Authorization")))
                return self._send(404, b'{"error": "not found"}')
            auth = self.headers.get("Authorization", "")
            if auth != f"Bearer {API_KEY}":  # echo the bad key, as some providers do
                with state.lock:
                    state.n_unauthorized += 1
                message = {"error": {"message": f"invalid api key {auth[7:]!r}"}}
                return self._send(401, json.dumps(message).encode())
            found = state.cell(body.get("model"), body["messages"][-1]["content"])
            if found is None:
                return self._send(400, b'{"error": "unknown model or prompt"}')
            m, i = found
            key = (state.model_names[m], state.items[i]["id"])
            with state.lock:
                state.requests.append(key)
                number = len(state.requests)
                faults = state.faults.get(key)
                fault = faults.pop(0) if faults else None
                hold = state.hold_after is not None and number > state.hold_after
                if hold:
                    state.n_held += 1
                if state.notify_at is not None and number >= state.notify_at:
                    state.reached.set()
            if hold:
                state.held.set()
                if not state.release.wait(WAIT):
                    return
            if fault == "timeout":
                state.timeout_release.wait(WAIT)  # longer than the client's timeout
                return self._send(504, b"{}")
            if fault == "redirect":
                target = f"http://127.0.0.1:{self.server.server_address[1]}/elsewhere"
                return self._send(302, b"{}", {"Location": target})
            if fault == "500":
                return self._send(500, b'{"error": "internal"}')
            if fault == "429":
                return self._send(429, b'{"error": "slow down"}', {"Retry-After": "0"})
            if fault is not None and fault.startswith("echo_"):
                return self._send(*_echo(fault, API_KEY))
            if fault == "drip":  # a valid header, then the body one byte at a time
                return self._drip()
            if fault == "garbage":
                return self._send(200, b"<html>oops</html>")
            if fault == "nochoices":
                return self._send(200, b'{"id": "x", "choices": []}')
            if fault in ("null_length", "empty"):  # complete answers without text
                content = None if fault == "null_length" else "  "
                finish = "length" if fault == "null_length" else "stop"
                message = {"role": "assistant", "content": content}
                reply = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
                return self._send(200, json.dumps(reply).encode())
            answer = state.items[i]["answer"]
            content = answer if state.Y[m, i] == 1 else f"not {answer}"
            reply = {
                "id": f"cmpl-{number}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            }
            with state.lock:
                state.answered[key] += 1
            self._send(200, json.dumps(reply).encode())

    return Handler


def _echo(fault: str, key: str) -> tuple[int, bytes]:
    """A server that echoes the caller's key back, in every fashion seen in the wild."""
    escaped = "".join(f"\\u{ord(c):04x}" for c in key)
    half = len(key) // 2
    bodies = {
        "echo_whole": (500, json.dumps({"error": {"message": f"quota for {key} exceeded"}})),
        "echo_long": (500, "x" * 290 + f" key={key} " + "y" * 500),  # the key at the cut
        "echo_truncated": (401, f"invalid key {key[:-1]}"),
        "echo_escaped": (400, '{"error": "bad key ' + escaped + '"}'),
        "echo_split": (400, json.dumps({"key_start": key[:half], "key_end": key[half:]})),
        "echo_ok_garbage": (200, f"<html>{key}</html>"),
    }
    code, text = bodies[fault]
    return code, text.encode()


def make_data(m: int = 4, n: int = 48, n_history: int = 24, seed: int = 3):
    """Binary truth Y (m, n) with distinct accuracies, a history (n_history, n), items."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.0, n)
    ability = np.linspace(-0.6, 0.9, m)
    Y = (rng.random((m, n)) < 1 / (1 + np.exp(difficulty - ability[:, None]))).astype(np.float32)
    h_ability = rng.normal(0.0, 1.0, n_history)
    H = (rng.random((n_history, n)) < 1 / (1 + np.exp(difficulty - h_ability[:, None]))).astype(
        np.float32
    )
    items = [
        {"id": f"q{k:03d}", "prompt": f"Question {k}: what is {k} + {k}?", "answer": str(2 * k)}
        for k in range(n)
    ]
    return Y, H, items


def run_cli(*args: str, env: dict[str, str] | None = None):
    """``latentbench ARGS`` in this process (``CliRunner``, stdout and stderr kept apart).

    For the commands of these tests that are not themselves the point of a separate process:
    a watcher of a store another process holds (that process's lock refuses this one as it
    refuses any other), the resume after a killed or interrupted run (a fresh process then
    reads only the store, as this one does). A ``python -c main()`` subprocess paid ~1.5 s of
    imports each. The live run killed, interrupted or holding the store stays a process.
    """
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def said(result) -> str:
    """A ``run_cli`` result's output and exception, for an assertion's message."""
    return f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"


class _Server(ThreadingHTTPServer):
    """The stand-in server, quiet when a client resets or drops its connection (a run aborted
    mid-request): socketserver printed the traceback to the ``sys.stderr`` of the moment, a
    ``CliRunner``'s while a command ran, so the command's output held it."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def live_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Start the fake server; write items, history and a config; yield a namespace."""
    Y, H, items = make_data()
    names = [f"model-{k}" for k in range(Y.shape[0])]
    state = FakeOpenAI(names, items, Y)
    server = _Server(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    # poll_interval: shutdown() waits up to one interval (0.5 s by default, paid by every test)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    port = server.server_address[1]
    monkeypatch.setenv(KEY_ENV, API_KEY)

    items_path = tmp_path / "items.jsonl"
    items_path.write_text("".join(json.dumps(it) + "\n" for it in items))
    hist = pd.DataFrame(H, columns=[it["id"] for it in items])
    hist.insert(0, "model", [f"h{k}" for k in range(H.shape[0])])
    hist.to_csv(tmp_path / "history.csv", index=False)

    def write_config(path: Path | None = None, **overrides) -> Path:
        run = {"seed": 7, "budget": 96, "batch_size": 8, "init_batch": 8, "policy": "pulse"}
        oracle = {"kind": "openai", "concurrency": 4, "timeout": 5.0, "retries": 3,
                  "backoff": 0.01, "max_backoff": 0.05}  # fmt: skip
        run.update(overrides.pop("run", {}))
        oracle.update(overrides.pop("oracle", {}))
        lines = ["[run]"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in run.items()]
        lines += ["", "[policy]", "refit_every = 3", "", "[proxy]",
                  'history = "history.csv"', "rank = 2", "", "[oracle]"]  # fmt: skip
        lines += [f"{k} = {json.dumps(v)}" for k, v in oracle.items()]
        lines += ["", "[items]", 'path = "items.jsonl"', "", "[scorer]", 'kind = "exact_match"']
        for name in names:
            lines += [
                "",
                "[[models]]",
                f'name = "{name}"',
                f'base_url = "http://127.0.0.1:{port}/v1"',
                f'model = "{name}"',
                f'api_key_env = "{KEY_ENV}"',
            ]
        out = path or tmp_path / "run.toml"
        out.write_text("\n".join(lines) + "\n")
        return out

    class Setup:
        pass

    setup = Setup()
    setup.Y, setup.H, setup.items, setup.names = Y, H, items, names
    setup.state, setup.port, setup.tmp = state, port, tmp_path
    setup.write_config = write_config
    setup.api_key, setup.key_env, setup.wait = API_KEY, KEY_ENV, WAIT
    yield setup
    state.release.set()
    state.timeout_release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def tmp_path(ram_tmp_path: Path) -> Path:
    """These tests' files in memory (``ram_tmp_path``): their stores commit every paid cell."""
    return ram_tmp_path
