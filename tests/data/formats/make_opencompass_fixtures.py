"""Write the real OpenCompass fixtures under ``opencompass/<version>/`` (not run in CI).

OpenCompass itself runs here, offline: three API "models" served by a small deterministic
OpenAI-compatible chat server started by this script answer two tiny generative datasets
(written here as JSON lines), and a one-layer GPT-2 with seeded random weights (written here)
answers a perplexity (PPL) version of the multiple-choice one. OpenCompass's own inferencers,
evaluators and ``--dump-eval-details`` write ``predictions/`` and ``results/``; those two
folders are copied unchanged into the fixture folder. See ``README.md`` for the environments.

Usage (each OpenCompass version in its own virtual environment, with transformers < 5: the
Hugging Face model classes call ``batch_encode_plus``, which transformers 5 removed)::

    /tmp/ocvenv054t4/bin/python tests/data/formats/make_opencompass_fixtures.py \
        /tmp/ocvenv054t4/bin/opencompass
    /tmp/ocvenv039/bin/python tests/data/formats/make_opencompass_fixtures.py \
        /tmp/ocvenv039/bin/opencompass

The server answers as a function of (model, prompt) only (CRC32) and the GPT-2 weights are
seeded, so reruns give the same predictions; only the run folder's timestamp changes.
"""

from __future__ import annotations

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


def write_tiny_model(folder: Path) -> None:
    """A one-layer GPT-2 with seeded random weights and a word-level vocabulary, for the
    perplexity (PPL) dataset: OpenCompass scores each option by the model's perplexity."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = ["[UNK]", "[PAD]", "Which", "number", "is", "larger", "?", "A", "B", "C", ".",
             "Answer", ":"] + [str(i) for i in range(60)]  # fmt: skip
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    special = dict(unk_token="[UNK]", pad_token="[PAD]", eos_token="[PAD]", bos_token="[PAD]")
    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(words), n_positions=128, n_embd=16, n_layer=1, n_head=2,
                        bos_token_id=1, eos_token_id=1, pad_token_id=1)  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(folder)


def config_text(work: Path, version: tuple[int, ...], port: int) -> str:
    """The OpenCompass config (plain dicts with dotted type names, as mmengine requires)."""

    def dataset(
        abbr: str, inputs: list[str], template: object, evaluator: dict, **extra: object
    ) -> dict:
        ppl = isinstance(template, dict)  # one prompt per option label: a perplexity dataset
        return dict(
            abbr=abbr,
            type="opencompass.datasets.CustomDataset",
            path=str(work / f"{abbr.split('_')[0]}.jsonl"),  # mcq_ppl, mcq_acc: mcq.jsonl
            reader_cfg=dict(input_columns=inputs, output_column="answer"),
            infer_cfg=dict(
                prompt_template=dict(
                    type="opencompass.openicl.icl_prompt_template.PromptTemplate",
                    template=template if ppl else dict(round=[dict(role="HUMAN", prompt=template)]),
                ),
                retriever=dict(type="opencompass.openicl.icl_retriever.ZeroRetriever"),
                inferencer=dict(
                    type="opencompass.openicl.icl_inferencer."
                    + ("PPLInferencer" if ppl else "GenInferencer")
                ),
            ),
            eval_cfg=dict(evaluator=evaluator)
            if ppl
            else dict(evaluator=evaluator, pred_role="BOT"),
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
        # AccEvaluator gives no per-item details: OpenCompass writes predictions only, which
        # ingest reports as a skipped file (its rows are counted, with the reason)
        dataset(
            "mcq_acc",
            ["question", "A", "B", "C"],
            "{question}\nAnswer: ",
            dict(type="opencompass.openicl.icl_evaluator.AccEvaluator"),
        ),
    ]
    ppl = dataset(
        "mcq_ppl",
        ["question", "A", "B", "C"],
        {label: f"{{question}} Answer: {{{label}}}" for label in "ABC"},
        dict(type="opencompass.openicl.icl_evaluator.AccEvaluator"),  # ships its HF metric
    )
    tiny = dict(
        abbr="tiny-gpt2-hf",
        type="opencompass.models.HuggingFaceBaseModel",
        path=str(work / "tiny"),
        max_out_len=8,
        batch_size=4,
        run_cfg=dict(num_gpus=0),
    )
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
    # the API models answer the generative datasets, the local model the perplexity one
    combinations = [dict(models=models, datasets=datasets), dict(models=[tiny], datasets=[ppl])]
    return (
        f"datasets = {[*datasets, ppl]!r}\nmodels = {[*models, tiny]!r}\n"
        f"model_dataset_combinations = {combinations!r}\n"
    )


def main() -> None:
    from _tool_run import tool_from_args  # beside this script

    exe, version, _ = tool_from_args(__doc__.split("\n")[0], "opencompass")
    work = Path(tempfile.mkdtemp(prefix=f"oc-{version}-"))
    for name, rows in (("arith", ARITH), ("mcq", MCQ)):
        (work / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_tokenizer(work / "tok")
    write_tiny_model(work / "tiny")
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
