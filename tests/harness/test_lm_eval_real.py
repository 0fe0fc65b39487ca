"""The real lm-evaluation-harness, run offline, then ``latentbench ingest`` on what it wrote.

Two routes need no network and no model weights:

- ``--model dummy`` on a local multiple-choice task (``dataset_path: json``): lm-eval scores
  random log-likelihoods, so the check is against the samples file it wrote and the aggregate
  in its results file;
- ``--model local-chat-completions`` pointed at the local table server: three distinguishable
  models whose every answer is known in advance (``Y``), on a generation task with two filters
  and two repeats per doc, one model run on a ``--samples`` subset.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

from .conftest import LmEval, lm_eval_versions, run, run_all, write_items

_register()
runner = CliRunner()

pytestmark = pytest.mark.slow

GEN_TASK = """\
task: lb_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {items}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{answer}}}}"
repeats: 2
generation_kwargs:
  until: []
  max_gen_toks: 16
metric_list:
  - metric: exact_match
filter_list:
  - name: first
    filter:
      - function: take_first
  - name: digits
    filter:
      - function: regex
        regex_pattern: "(-?[0-9]+)"
      - function: take_first
"""

MC_TASK = """\
task: lb_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {items}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: gold
metric_list:
  - metric: acc
"""

SUBSET = [0, 3, 5, 7]  # the docs model-1 is asked for with --samples


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3] if part.isdigit())


def _results(folder: Path) -> dict:
    (path,) = folder.glob("results_*.json")
    return json.loads(path.read_text())


def _samples(folder: Path, task: str) -> list[dict]:
    (path,) = folder.glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _ingest(*args: object) -> str:
    result = runner.invoke(app, ["ingest", *map(str, args)])
    if result.exit_code != 0:
        raise AssertionError(f"latentbench ingest {args} failed:\n{result.output}")
    return result.output


@pytest.mark.slow
@pytest.mark.parametrize("lm", lm_eval_versions())
def test_dummy_model_on_a_local_task(lm: LmEval, tmp_path: Path):
    """``--model dummy``: the run names no model, so ingest asks for one, never the random id.

    The harness is lm-eval's command line with only this test's ``--include_path`` indexed and
    torch unimported (``lm.local_tasks_argv()``: ~1.5 s of CPU instead of ~10-13 s for
    ``python -m lm_eval``, which parses its ~14,000 built-in task files first); the evaluator,
    the dummy model and the files it writes are lm-eval's own."""
    if _release(lm.version) < (0, 4, 13):
        pytest.skip(
            f"lm-eval {lm.version}: the dummy model loads a Hugging Face tokenizer when the "
            "results are written (DummyLM.tokenizer -> AutoTokenizer.from_pretrained), which "
            "needs transformers and the network; fixed in 0.4.13"
        )
    rng = np.random.default_rng(0)
    items = [
        {"question": f"Pick {k}.", "choices": [str(k), str(k + 1), str(k + 2)], "gold": g}
        for k, g in enumerate(rng.integers(0, 3, 20).tolist())
    ]
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "lb_mc.yaml").write_text(
        MC_TASK.format(items=write_items(tmp_path / "mc.jsonl", items))
    )
    out = tmp_path / "out"
    argv = [*lm.local_tasks_argv(), "--model", "dummy", "--tasks", "lb_mc"]
    argv += ["--include_path", str(tasks), "--output_path", str(out), "--log_samples"]
    run(argv, lm.env(tmp_path), tmp_path)

    # the harness really ran: its folder, its files, its version
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    meta = _results(folder)
    assert meta["lm_eval_version"] == lm.version
    assert meta["config"]["model"] == "dummy" and meta["model_name"] == folder.name
    logged = {str(s["doc_id"]): float(s["acc"]) for s in _samples(folder, "lb_mc")}
    assert sorted(logged, key=int) == [str(k) for k in range(20)]

    with pytest.raises(InputError, match=r"names no model.*pass model=NAME") as err:
        read_results("lm-eval", out)
    assert repr(folder.name) in str(err.value)  # the random id is named, not used

    store = tmp_path / "s.duckdb"
    _ingest("lm-eval", out, "--store", store, "--model", "dummy-a")
    with Store(store) as db:
        long = db.long("lb_mc")
    assert set(long["model"]) == {"dummy-a"} and folder.name not in set(long["model"])
    assert set(long["source"]) == {f"lm-eval {lm.version}"}
    assert set(long["metric"]) == {"acc"} and set(long["filter"]) == {"none"}
    got = dict(zip(long["item"], long["score"], strict=True))
    assert got == logged
    assert np.mean(list(got.values())) == pytest.approx(meta["results"]["lb_mc"]["acc,none"])


@pytest.mark.slow
@pytest.mark.parametrize("lm", lm_eval_versions())
def test_endpoint_models_filters_repeats_and_samples(lm: LmEval, tmp_path: Path, table_server):
    """Two models through ``local-chat-completions`` (one on every doc, one on a ``--samples``
    subset): ingest equals the answer table. The harness is lm-eval's command line with only
    this test's ``--include_path`` indexed and torch unimported (``lm.local_tasks_argv()``:
    ~2 s of CPU per process instead of ~10 s); what it evaluates and writes is lm-eval's own."""
    server = table_server(m=2, n=12, seed=5)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    items_path = write_items(tmp_path / "gen.jsonl", server.items)
    (tasks / "lb_gen.yaml").write_text(GEN_TASK.format(items=items_path))
    out = tmp_path / "out"
    jobs = []
    for name in server.names:
        argv = [
            *lm.local_tasks_argv(),
            "--model",
            "local-chat-completions",
            "--model_args",
            f"model={name},base_url={server.base_url}/chat/completions",
            "--apply_chat_template",
            "--tasks",
            "lb_gen",
            "--include_path",
            str(tasks),
            "--output_path",
            str(out),
            "--log_samples",
        ]
        if name == "model-1":
            argv += ["--samples", json.dumps({"lb_gen": SUBSET})]
        jobs.append((argv, lm.env(tmp_path), tmp_path))
    run_all(jobs)

    # the harness really ran: one folder per model named from model_args, its version, and
    # every evaluated doc asked twice (repeats: 2) at the server, nothing else
    assert sorted(p.name for p in out.iterdir()) == server.names
    for name in server.names:
        meta = _results(out / name)
        assert meta["lm_eval_version"] == lm.version and meta["model_name"] == name
    docs = {
        name: SUBSET if name == "model-1" else list(range(len(server.items)))
        for name in server.names
    }
    expected = {(name, server.items[d]["id"]): 2 for name in server.names for d in docs[name]}
    assert server.counts() == expected

    # two filters: ingest refuses to guess and names both
    with pytest.raises(InputError, match=r"digits.*first|first.*digits"):
        read_results("lm-eval", out)

    store = tmp_path / "s.duckdb"
    printed = _ingest("lm-eval", out, "--store", store, "--filter", "first")
    _ingest("lm-eval", out, "--store", store, "--filter", "digits")
    printed = " ".join(printed.split())
    counted = _results(out / "model-1")["n-samples"]["lb_gen"]
    if counted["effective"] < counted["original"]:  # the harness says it ran a subset
        assert f"evaluated {len(SUBSET)} of {len(server.items)} docs" in printed
    else:  # lm-eval < 0.4.13 counts --limit only; the uneven item count is what shows
        assert counted == {"original": len(server.items), "effective": len(server.items)}
        assert f"{len(SUBSET)} to {len(server.items)} items" in printed
    with Store(store) as db:
        first = db.long("lb_gen", metric="exact_match", filter="first")
        digits = db.long("lb_gen", metric="exact_match", filter="digits")
    # the --samples subset shows as missing cells, never as zeros
    for frame in (first, digits):
        cells = {(m, i) for m, i in zip(frame["model"], frame["item"], strict=True)}
        assert cells == {(n, str(d)) for n in server.names for d in docs[n]}
        assert set(frame["trial"]) == {0}  # repeats are one filtered answer, not trials
        assert set(frame["source"]) == {f"lm-eval {lm.version}"}
    # cell by cell: the 'first' answer is right exactly where Y says so; the digit extracted
    # from 'not <answer>' is always right
    for m, i, s in zip(first["model"], first["item"], first["score"], strict=True):
        assert s == server.Y[server.names.index(m), int(i)], (m, i)
    assert set(digits["score"]) == {1.0}
    for name in server.names[:1]:  # the harness's own aggregate agrees
        acc = _results(out / name)["results"]["lb_gen"]["exact_match,first"]
        assert acc == pytest.approx(server.Y[server.names.index(name)].mean())
    hashes = set(first["item_hash"])  # lm-eval's doc_hash, one per doc
    assert None not in hashes and len(hashes) == len(server.items)
