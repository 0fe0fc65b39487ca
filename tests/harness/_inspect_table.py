"""An Inspect model provider that asks the local table server, and a task on local items.

Run by ``test_inspect_real.py`` in a subprocess::

    python _inspect_table.py ITEMS LOG_DIR EPOCHS MODEL [MODEL ...]

with ``TABLE_BASE_URL`` and ``OPENAI_API_KEY`` set. Inspect resolves ``tablechat/<name>``
through the provider registered below (``@modelapi``) before it runs the task, so the run
needs no network: no tokenizer download, no hosted model.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any

from inspect_ai import Task, eval, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import ModelAPI, ModelOutput, modelapi
from inspect_ai.scorer import exact, includes
from inspect_ai.solver import generate


@modelapi(name="tablechat")
class TableChat(ModelAPI):
    """``tablechat/<model>``: one chat-completions request to ``TABLE_BASE_URL`` per call."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: Any = None, **model_args: Any) -> None:  # fmt: skip
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input, tools, tool_choice, config) -> ModelOutput:  # type: ignore[override]
        body = {"model": self.model_name, "messages": [{"role": "user", "content": input[-1].text}]}
        request = urllib.request.Request(
            os.environ["TABLE_BASE_URL"] + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
        content = reply["choices"][0]["message"]["content"]
        return ModelOutput.from_content(model=self.model_name, content=content)


@task
def table_items(items: str) -> Task:
    """The local items; two scorers: exact answer, and answer contained."""
    dataset = json_dataset(items, FieldSpec(input="prompt", target="answer", id="id"))
    return Task(dataset=dataset, solver=generate(), scorer=[exact(), includes()])


if __name__ == "__main__":
    items, log_dir, epochs, *models = sys.argv[1:]
    logs = eval(
        table_items(items),
        model=[f"tablechat/{m}" for m in models],
        epochs=int(epochs),
        log_dir=log_dir,
        display="none",
    )
    bad = [(log.eval.model, log.status) for log in logs if log.status != "success"]
    if bad:
        raise SystemExit(f"runs not successful: {bad}")
