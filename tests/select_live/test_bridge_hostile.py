"""The lm-eval bridge against a hostile stand-in harness (issue 30, item 9).

A small script takes the bridge's command line and hangs, crashes, writes garbage logs, prints
a flood, prints bytes that are not UTF-8, or prints the API key it finds in its environment.
Each ends in :class:`HarnessFailed` with a bounded, decoded, redacted tail; none hangs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from latentbench.exceptions import HarnessFailed
from latentbench.select.oracles import LmEvalBridgeOracle
from latentbench.select.oracles._lm_eval import HARNESS_TIMEOUT, TAIL_BYTES

KEY = "sk-live-0123456789abcdefSECRET"

HOSTILE = """\
import os, subprocess, sys, time
from pathlib import Path
args = sys.argv[1:]
get = lambda flag: args[args.index(flag) + 1]
mode = args[-1]
out = Path(get("--output_path")) / "m"
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(sys.argv[0]).with_name("child.pid").write_text(str(child.pid))
    time.sleep(600)
if mode == "crash":
    raise RuntimeError("harness crashed")
if mode == "garbage":
    out.mkdir(parents=True, exist_ok=True)
    (out / "results_2026-01-01T00-00-00.000000.json").write_text("{not json")
    (out / "samples_t_2026-01-01T00-00-00.000000.jsonl").write_bytes(b"\\x00\\xff garbage\\n")
    sys.exit(0)
if mode == "huge":
    for _ in range(200_000):
        sys.stdout.write("x" * 249 + "\\n")
    sys.stdout.write("the real reason at the end\\n")
    sys.exit(3)
if mode == "bytes":
    sys.stdout.buffer.write(b"caf\\xe9 \\xff\\xfe \\x1b[31mred\\x1b[0m \\xe2\\x80\\xae done\\n")
    sys.exit(4)
if mode == "settings":
    print("max_tokens", os.environ["MAX_TOKENS"], "retries", os.environ["HF_TOKEN_RETRIES"],
          "stream", os.environ["SECRET_STREAMING"], "key", os.environ["HOSTILE_API_KEY"])
    sys.exit(6)
if mode == "key":
    print("using key", os.environ["HOSTILE_API_KEY"], "and", os.environ["OTHER_TOKEN"])
    print("half of it:", os.environ["HOSTILE_API_KEY"][:14])
    sys.exit(5)
"""


def _bridge(tmp_path: Path, mode: str, **kwargs) -> LmEvalBridgeOracle:
    script = tmp_path / "hostile_lm_eval.py"
    script.write_text(HOSTILE)
    return LmEvalBridgeOracle(
        ["a"],
        ["m"],
        [str(k) for k in range(4)],
        "t",
        tmp_path / "out",
        tmp_path / "plans",
        command=[sys.executable, str(script)],
        extra_args=[mode],
        execute=True,
        **kwargs,
    )


def _fail(bridge: LmEvalBridgeOracle) -> str:
    with pytest.raises(HarnessFailed) as info:
        list(bridge.evaluate_cells(0, np.array([1, 2])))
    return str(info.value)


def test_a_hanging_harness_is_killed_with_its_children(tmp_path):
    assert HARNESS_TIMEOUT > 0  # a default exists
    started = time.monotonic()
    text = _fail(_bridge(tmp_path, "hang", timeout=1.5))
    assert time.monotonic() - started < 60
    assert "did not finish within 1.5 s" in text and "harness_timeout" in text
    child = int((tmp_path / "child.pid").read_text())
    for _ in range(50):  # the grandchild went with it
        if _gone(child):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the harness's child survived the timeout")


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: no such process, or a zombie (killed, waiting to be
    reaped by init, which some containers' init does only every second or two: 1.7 s here)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # reaped between the two looks; with no /proc, the kill said it lives
        return Path("/proc/self/stat").exists()
    return stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]


def test_a_crashing_harness_quotes_its_traceback(tmp_path):
    text = _fail(_bridge(tmp_path, "crash"))
    assert "exited 1" in text and "RuntimeError: harness crashed" in text


def test_garbage_logs_are_a_harness_failure(tmp_path):
    text = _fail(_bridge(tmp_path, "garbage"))
    assert "hostile_lm_eval.py" in text or "next_plan.json" in text
    assert "unreadable" in text


def test_a_flood_of_output_is_cut_to_its_tail(tmp_path):
    text = _fail(_bridge(tmp_path, "huge"))
    assert "exited 3" in text and "the real reason at the end" in text
    assert len(text) < TAIL_BYTES + 500


def test_output_that_is_not_utf8_is_decoded_with_replacement(tmp_path):
    text = _fail(_bridge(tmp_path, "bytes"))
    assert "exited 4" in text and "caf\ufffd" in text and "done" in text
    assert "\x1b" not in text and "\u202e" not in text


def test_a_harness_printing_the_key_is_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTILE_API_KEY", KEY)
    monkeypatch.setenv("OTHER_TOKEN", "tok-9876543210zyxw")
    text = _fail(_bridge(tmp_path, "key", redact=["HOSTILE_API_KEY"]))
    assert "exited 5" in text and "using key" in text
    assert KEY not in text and KEY[:14] not in text and "tok-9876543210zyxw" not in text
    assert "***" in text


def test_a_harness_quoting_short_settings_named_like_keys_keeps_them(tmp_path, monkeypatch):
    """Every value of a variable named like ``*TOKEN*`` or ``*SECRET*`` was redacted, so
    ``MAX_TOKENS=512`` turned every 512 of the harness's output into ``***``; a value shorter
    than ``MIN_SECRET_LENGTH`` is a setting, unless its variable is named in ``redact``."""
    from latentbench.select.oracles._openai import MIN_SECRET_LENGTH

    assert MIN_SECRET_LENGTH == 8
    monkeypatch.setenv("MAX_TOKENS", "512")
    monkeypatch.setenv("HF_TOKEN_RETRIES", "1")
    monkeypatch.setenv("SECRET_STREAMING", "true")
    monkeypatch.setenv("HOSTILE_API_KEY", "sk-1")  # short, but the model's key: redacted
    text = _fail(_bridge(tmp_path, "settings", redact=["HOSTILE_API_KEY"]))
    assert "exited 6" in text
    assert "max_tokens 512 retries 1 stream true key ***" in text, text


def test_select_live_with_a_hanging_harness_ends_failed_not_running(tmp_path):
    """``[oracle] harness_timeout`` reaches the bridge; the run's status is ``failed``."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.io.store import Store

    script = tmp_path / "hostile_lm_eval.py"
    script.write_text(HOSTILE)
    (tmp_path / "items.jsonl").write_text("".join(f'{{"id": "{k}"}}\n' for k in range(4)))
    config = tmp_path / "run.toml"
    lines = [
        "[run]", "budget = 4", "batch_size = 2", "init_batch = 1", 'policy = "uniform"',
        "[items]", 'path = "items.jsonl"',
        "[oracle]", 'kind = "lm-eval"', 'task = "t"', "execute = true",
        f"command = {json.dumps(f'{sys.executable} {script}')}",
        'extra_args = "hang"', "harness_timeout = 1.0",  # the least allowed: it never ends
        "[[models]]", 'name = "a"', 'lm_eval_model = "m"',
        "[[models]]", 'name = "b"', 'lm_eval_model = "m2"',
    ]  # fmt: skip
    config.write_text("\n".join(lines) + "\n")
    _register()
    store = tmp_path / "s.duckdb"
    outcome = CliRunner().invoke(
        app, ["select", "live", "--config", str(config), "--store", str(store), "--quiet"]
    )
    assert outcome.exit_code == 1, (outcome.output, outcome.exception)
    assert "did not finish within 1 s" in outcome.output and "resume with:" in outcome.output
    with Store(store, read_only=True) as db:
        status = db.connection.execute("SELECT status FROM selection_runs").fetchall()
    assert status == [("failed",)]
