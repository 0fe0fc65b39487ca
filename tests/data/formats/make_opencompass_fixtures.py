"""Write the real OpenCompass fixtures under ``opencompass/<version>/`` (not run in CI).

OpenCompass itself runs here, offline, against a small deterministic OpenAI-compatible chat
server started by this script: three API "models" answer two tiny custom datasets (written
here as JSON lines), and OpenCompass's own inferencer, evaluators and ``--dump-eval-details``
write ``predictions/`` and ``results/``. Those two folders are copied unchanged into the
fixture folder; nothing is edited. See ``README.md`` for the versions and environments.

Usage (each OpenCompass version lives in its own virtual environment)::

    python tests/data/formats/make_opencompass_fixtures.py /tmp/ocvenv/bin/opencompass
    python tests/data/formats/make_opencompass_fixtures.py /tmp/ocvenv039/bin/opencompass

The server answers as a function of (model, prompt) only (CRC32), so reruns give the same
predictions; only the run folder's timestamp changes.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent

SKILL = {"alpha-api": 90, "beta-api": 60, "gamma-api": 30}
"""Percent chance (over CRC32 of model and prompt) that a model answers correctly."""

ARITH = [
    {"question": f"What is {a} + {b}?", "answer": [str(a + b)]}
    for a, b in [(2, 3), (7, 5), (11, 4), (9, 9), (13, 8), (6, 17), (20, 22), (15, 30)]
]
MCQ = [
    {
        "question": f"Which number is larger? A. {x} B. {y} C. {z}",
        "A": str(x),
        "B": str(y),
        "C": str(z),
        "answer": "ABC"[[x, y, z].index(max(x, y, z))],
    }
    for x, y, z in [(3, 9, 1), (8, 2, 4), (5, 6, 7), (12, 3, 10), (1, 0, 2), (40, 41, 39)]
]


def answer(model: str, prompt: str) -> str:
    """The deterministic reply of ``model`` to ``prompt``."""
    right = zlib.crc32(f"{model}|{prompt}".encode()) % 100 < SKILL.get(model, 0)
    if m := re.search(r"What is (\d+) \+ (\d+)\?", prompt):
        total = int(m[1]) + int(m[2])
        return str(total if right else total + 1)
    if m := re.search(r"A\. (\d+) B\. (\d+) C\. (\d+)", prompt):
        values = [int(v) for v in m.groups()]
        best = values.index(max(values))
        return "ABC"[best if right else (best + 1) % 3]
    return "I do not know."


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        reply = {
            "id": "chatcmpl-fixture",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": answer(body["model"], prompt)},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        out = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


def write_tokenizer(folder: Path) -> None:
    """A word-level tokenizer, so that OpenCompass counts prompt tokens without a download."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(folder)


def config_text(work: Path, version: tuple[int, ...], port: int) -> str:
    """The OpenCompass config (plain dicts with dotted type names, as mmengine requires)."""

    def dataset(abbr: str, inputs: list[str], template: str, evaluator: dict, **extra: object):
        return dict(
            abbr=abbr,
            type="opencompass.datasets.CustomDataset",
            path=str(work / f"{abbr}.jsonl"),
            reader_cfg=dict(input_columns=inputs, output_column="answer"),
            infer_cfg=dict(
                prompt_template=dict(
                    type="opencompass.openicl.icl_prompt_template.PromptTemplate",
                    template=dict(round=[dict(role="HUMAN", prompt=template)]),
                ),
                retriever=dict(type="opencompass.openicl.icl_retriever.ZeroRetriever"),
                inferencer=dict(type="opencompass.openicl.icl_inferencer.GenInferencer"),
            ),
            eval_cfg=dict(evaluator=evaluator, pred_role="BOT"),
            **extra,
        )

    # repeated sampling (dataset key ``n``) exists from OpenCompass 0.4
    replicas = {"n": 2} if version >= (0, 4) else {}
    datasets = [
        dataset(
            "arith",
            ["question"],
            "{question} Reply with the number only.",
            dict(type="opencompass.openicl.icl_evaluator.EMEvaluator"),
            **replicas,
        ),
        dataset(
            "mcq",
            ["question", "A", "B", "C"],
            "{question}\nAnswer: ",
            dict(type="opencompass.datasets.custom.OptionSimAccEvaluator", options=["A", "B", "C"]),
        ),
    ]
    models = [
        dict(
            abbr=name,
            type="opencompass.models.OpenAISDK",
            path=name,
            key="sk-fixture",
            openai_api_base=f"http://127.0.0.1:{port}/v1",
            tokenizer_path=str(work / "tok"),
            query_per_second=20,
            max_out_len=16,
            max_seq_len=2048,
            batch_size=4,
            retry=1,
        )
        for name in SKILL
    ]
    return f"datasets = {datasets!r}\nmodels = {models!r}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("opencompass", help="the opencompass executable of one venv")
    args = parser.parse_args()
    exe = Path(args.opencompass)
    python = exe.parent / "python"
    version = (
        subprocess.run(
            [
                python,
                "-c",
                "import warnings; warnings.simplefilter('ignore'); "
                "import opencompass; print(opencompass.__version__)",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    work = Path(tempfile.mkdtemp(prefix=f"oc-{version}-"))
    for name, rows in (("arith", ARITH), ("mcq", MCQ)):
        (work / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_tokenizer(work / "tok")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    major_minor = tuple(int(p) for p in version.split(".")[:2])
    config = work / "fixture_config.py"
    config.write_text(config_text(work, major_minor, server.server_address[1]))
    env = {
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(work / "hf"),
        "PATH": f"{exe.parent}:/usr/bin:/bin",
    }
    subprocess.run(
        [exe, str(config), "-w", str(work / "outputs"), "--dump-eval-details"],
        cwd=work,
        env=env,
        check=True,
    )
    server.shutdown()
    (run,) = (work / "outputs").iterdir()
    target = HERE / "opencompass" / version / run.name
    shutil.rmtree(HERE / "opencompass" / version, ignore_errors=True)
    for part in ("predictions", "results"):
        shutil.copytree(run / part, target / part)
    # the config as run (a .txt: the repository's linters need not read generated code)
    shutil.copy(config, HERE / "opencompass" / version / "config.txt")
    print(f"wrote {target} (work folder {work})", file=sys.stderr)


if __name__ == "__main__":
    main()
