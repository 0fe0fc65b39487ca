"""Write the real lighteval 0.10.0 fixtures under ``real/lighteval-0.10.0/`` (not run in CI).

lighteval itself runs here, offline: ``lighteval custom`` with a custom model class (answers as
a fixed function of model name and prompt, CRC32 against a per-model skill) on two custom tasks
whose datasets are JSON-lines folders written here (``arith``: generative, ``em``; ``mcq``:
log-likelihood multiple choice, ``acc``), with ``--save-details``. lighteval's pipeline,
metrics and details logger write ``details/`` and ``results/``, which are copied unchanged.

Usage, with lighteval 0.10.0 installed in its own virtual environment (``README.md``)::

    python tests/data/formats/make_lighteval_fixtures.py /tmp/levenv010/bin/lighteval

Building lighteval's task registry instantiates its tinyBenchmarks metric, which downloads
``tinyBenchmarks.pkl`` unless a file of that name is in the package folder; the script
creates an empty one there (it is only read by the tinyBenchmarks tasks, not run here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("alpha", "beta", "gamma")

ARITH = [
    {"question": f"What is {a} + {b}?", "answer": str(a + b)}
    for a, b in [(2, 3), (7, 5), (11, 4), (9, 9), (13, 8), (6, 17)]
]
MCQ = [
    {
        "question": f"Which number is larger? A. {x} B. {y} C. {z}",
        "choices": [str(x), str(y), str(z)],
        "gold": [x, y, z].index(max(x, y, z)),
    }
    for x, y, z in [(3, 9, 1), (8, 2, 4), (5, 6, 7), (12, 3, 10), (1, 0, 2)]
]

TASKS = """\
from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

DATA = {data!r}


def arith_prompt(line, task_name=None):
    return Doc(task_name=task_name, query=f"{{line['question']}} Answer:",
               choices=[line["answer"]], gold_index=0)


def mcq_prompt(line, task_name=None):
    return Doc(task_name=task_name, query=f"{{line['question']}}\\nAnswer:",
               choices=[f" {{c}}" for c in line["choices"]], gold_index=line["gold"])


def _task(name, prompt, metric, **generation):
    return LightevalTaskConfig(
        name=name, suite=["community"], prompt_function=prompt, hf_repo=f"{{DATA}}/{{name}}",
        hf_subset="default", hf_avail_splits=["test"], evaluation_splits=["test"],
        few_shots_split=None, few_shots_select=None, metric=[metric], **generation)


TASKS_TABLE = [
    _task("arith", arith_prompt, Metrics.exact_match, generation_size=8, stop_sequence=["\\n"]),
    _task("mcq", mcq_prompt, Metrics.loglikelihood_acc, generation_size=-1, stop_sequence=None),
]
"""

MODEL = '''\
"""A deterministic custom lighteval model: answers as a fixed function of (model, prompt)."""
import re
import zlib

from lighteval.models.abstract_model import LightevalModel, ModelInfo
from lighteval.models.model_output import GenerativeResponse, LoglikelihoodResponse

SKILL = {"alpha": 90, "beta": 60, "gamma": 30}


def _right(name, prompt):
    return zlib.crc32(f"{name}|{prompt}".encode()) % 100 < SKILL.get(name, 0)


class TableModel(LightevalModel):
    def __init__(self, config, env_config=None):
        self.config = config
        self.name = config.model_name
        self.model_info = ModelInfo(model_name=f"fixture/{self.name}", model_sha="0")
        self._tokenizer = None

    @property
    def tokenizer(self):  # word level, so that nothing is downloaded
        if self._tokenizer is None:
            from tokenizers import Tokenizer, models, pre_tokenizers
            from transformers import PreTrainedTokenizerFast

            tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
            tok.pre_tokenizer = pre_tokenizers.Whitespace()
            self._tokenizer = PreTrainedTokenizerFast(
                tokenizer_object=tok, unk_token="[UNK]", eos_token="[UNK]", pad_token="[UNK]")
        return self._tokenizer

    @property
    def add_special_tokens(self):
        return False

    @property
    def max_length(self):
        return 2048

    def greedy_until(self, requests, override_bs=None):
        out = []
        for req in requests:
            m = re.search(r"What is (\\d+) \\+ (\\d+)\\?", req.context)
            total = int(m[1]) + int(m[2])
            right = _right(self.name, req.context)
            out.append(GenerativeResponse(result=str(total if right else total + 1)))
        return out

    def loglikelihood(self, requests, override_bs=None):
        out = []
        for req in requests:
            values = [int(v) for v in re.search(r"A\\. (\\d+) B\\. (\\d+) C\\. (\\d+)",
                                                req.context).groups()]
            best = values.index(max(values))
            pick = best if _right(self.name, req.context) else (best + 1) % 3
            mine = int(req.choice.strip()) == values[pick]
            out.append(LoglikelihoodResponse((-0.1 if mine else -2.0, mine)))
        return out

    def loglikelihood_rolling(self, requests, override_bs=None):
        raise NotImplementedError

    def loglikelihood_single_token(self, requests, override_bs=None):
        raise NotImplementedError
'''


def main() -> None:
    from _tool_run import tool_from_args  # beside this script

    exe, version, package = tool_from_args(__doc__.split("\n")[0], "lighteval")
    seed = package / "tasks" / "extended" / "tiny_benchmarks" / "tinyBenchmarks.pkl"
    if seed.parent.is_dir() and not seed.exists():
        seed.touch()
    work = Path(tempfile.mkdtemp(prefix=f"lighteval-{version}-"))
    for name, rows in (("arith", ARITH), ("mcq", MCQ)):
        (work / "data" / name).mkdir(parents=True)
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (work / "data" / name / "test.jsonl").write_text(text)
    (work / "tasks.py").write_text(TASKS.format(data=str(work / "data")))
    (work / "model.py").write_text(MODEL)
    env = dict(
        os.environ,
        HF_DATASETS_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(work / "hf"),
    )
    for model in MODELS:
        subprocess.run(
            [
                exe,
                "custom",
                model,
                "model.py",
                "community|arith|0|0,community|mcq|0|0",
                "--custom-tasks",
                "tasks.py",
                "--output-dir",
                "out",
                "--save-details",
            ],
            cwd=work,
            env=env,
            check=True,
        )
    target = HERE / "real" / f"lighteval-{version}"
    shutil.rmtree(target, ignore_errors=True)
    for part in ("details", "results"):
        shutil.copytree(work / "out" / part, target / part)
    for name in ("tasks.py", "model.py"):  # as run; .txt so that linters skip them
        shutil.copy(work / name, target / f"{name}.txt")
    print(f"wrote {target} (work folder {work})")


if __name__ == "__main__":
    main()
