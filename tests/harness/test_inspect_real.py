"""Inspect AI, run offline with a provider registered for the test, then ``latentbench ingest``.

``inspect eval --model mockllm/model`` needs the network (its mock model fetches a tiktoken
encoding); a ``@modelapi`` provider asking the local table server does not. Three models, two
epochs, two scorers: ingest must give one row per (model, sample, epoch) for the chosen scorer,
equal to the answer table.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

from .conftest import HERE, harness_env, run, write_items

_register()
runner = CliRunner()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("inspect_ai") is None,
        reason="inspect_ai is not installed (pip install '.[harness]')",
    ),
]


def test_inspect_eval_logs_from_three_models(tmp_path: Path, table_server):
    version = importlib.metadata.version("inspect_ai")
    server = table_server(m=3, n=10, seed=11)
    items = write_items(tmp_path / "items.jsonl", server.items)
    logs = tmp_path / "logs"
    env = harness_env(tmp_path) | {"TABLE_BASE_URL": server.base_url}
    argv = [sys.executable, str(HERE / "_inspect_table.py"), str(items), str(logs), "2"]
    run([*argv, *server.names], env, tmp_path)

    # the harness really ran: one .eval zip per model (zstd members and all), two requests per
    # (model, sample) at the server (epochs), nothing else
    files = sorted(logs.glob("*.eval"))
    assert len(files) == 3 and all(zipfile.is_zipfile(f) for f in files)
    assert server.counts() == {(n, it["id"]): 2 for n in server.names for it in server.items}

    with pytest.raises(InputError, match=r"exact.*includes|includes.*exact"):
        read_results("inspect", logs)

    store = tmp_path / "s.duckdb"
    for scorer in ("exact", "includes"):
        result = runner.invoke(
            app, ["ingest", "inspect", str(logs), "--store", str(store), "--filter", scorer]
        )
        assert result.exit_code == 0, result.output
    with Store(store) as db:
        long = db.long()
    assert set(long["source"]) == {f"inspect_ai {version}"}
    assert set(long["model"]) == {f"tablechat/{n}" for n in server.names}
    exact_rows = long[long["filter"] == "exact"]
    keys = set(zip(exact_rows["model"], exact_rows["item"], exact_rows["trial"], strict=True))
    assert len(keys) == len(exact_rows) == 3 * 10 * 2
    assert keys == {
        (f"tablechat/{n}", it["id"], t) for n in server.names for it in server.items for t in (0, 1)
    }
    ids = [it["id"] for it in server.items]
    for m, i, s in zip(exact_rows["model"], exact_rows["item"], exact_rows["score"], strict=True):
        assert s == server.Y[server.names.index(m.split("/", 1)[1]), ids.index(i)], (m, i)
    assert set(long.loc[long["filter"] == "includes", "score"]) == {1.0}
