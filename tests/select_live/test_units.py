"""Scorers, item files, configuration errors, the callable oracle, spend cap, lm-eval bridge."""

from __future__ import annotations

import json
import sys
import threading

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.io import load_items
from latentbench.io.store import Store
from latentbench.select import MatrixOracle, exact_match, multiple_choice
from latentbench.select._scorers import resolve_scorer
from latentbench.select.live import LiveConfig, LiveProgress, run_live
from latentbench.select.oracles import CallableOracle
from latentbench.select.oracles._openai import _retry_after


def test_scorers():
    assert exact_match(" The  Answer. ", "the answer") == 1.0
    assert exact_match("42", "43") == 0.0
    assert multiple_choice("Answer: B", "B") == 1.0
    assert multiple_choice("the answer is (b)", "B") == 1.0
    assert multiple_choice("the answer is a dog", "A") == 0.0
    assert multiple_choice("B", "B") == 1.0
    assert multiple_choice("(C) because", "C") == 1.0
    assert multiple_choice("I think it is (D).", "(D)") == 1.0
    assert multiple_choice("A. no", "B") == 0.0
    assert multiple_choice("no letter here", "B") == 0.0
    with pytest.raises(InputError, match="module:function"):
        resolve_scorer("fuzzy")
    with pytest.raises(InputError, match="cannot import"):
        resolve_scorer("no_such_module_xyz:f")


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("{not json", r"items.jsonl:2: not valid JSON"),
        # an absent field was "field 'id' is None", as if the line held null
        ('{"prompt": "p"}', r"items.jsonl:2: field 'id' is missing \(fields: 'prompt'\)"),
        ('{"id": null, "prompt": "p"}', r"items.jsonl:2: field 'id' is None"),
        ('{"id": "b", "text": "p"}', r"items.jsonl:2: field 'prompt' is missing .*prompt_field"),
        ('{"id": "a", "prompt": "again"}', r"items.jsonl:2: id 'a' repeats line 1"),
        ('{"id": "b", "prompt": ["x"]}', r"items.jsonl:2: field 'prompt' is \['x'\]"),
        ('{"id": "b", "prompt": "  "}', r"items.jsonl:2: field 'prompt' is empty"),
    ],
)
def test_items_errors(tmp_path, line, match):
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "a", "prompt": "p", "answer": "x"}\n' + line + "\n")
    with pytest.raises(InputError, match=match):
        load_items(path)


def _config(tmp_path, extra_run="", models=2, oracle='kind = "openai"', n=12):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": k, "prompt": f"p{k}", "answer": "a"}) + "\n"
                             for k in range(n)))  # fmt: skip
    text = f'[run]\nbudget = 8\nbatch_size = 2\ninit_batch = 2\npolicy = "ucbe"\n{extra_run}\n'
    text += f'[oracle]\n{oracle}\n[items]\npath = "items.jsonl"\n'
    for k in range(models):
        text += f'[[models]]\nname = "m{k}"\nmodel = "m{k}"\n'
        text += 'base_url = "http://127.0.0.1:9/v1"\n' if "openai" in oracle else ""  # its own
        text += f'lm_eval_model = "org/m{k}"\n' if "lm-eval" in oracle else ""
    path = tmp_path / "run.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("budget = 8", "budget = -1", "budget=-1; expected an integer >= 0"),
        ('policy = "ucbe"', 'policy = "best"', "policy='best'"),
        ("budget = 8", 'budget = 8\non_error = "ignore"', "on_error='ignore'"),
        ("budget = 8", "budget = 8\ncolour = 1", r"\[run\] has unknown key\(s\) \['colour'\]"),
        ('path = "items.jsonl"', "", r"\[items\] path=None; expected the path of a JSONL"),
        ('name = "m1"', 'name = "m0"', "name 'm0' repeats"),
    ],
)
def test_config_errors(tmp_path, old, new, match):
    path = _config(tmp_path)
    path.write_text(path.read_text().replace(old, new))
    with pytest.raises(InputError, match=match) as info:
        LiveConfig.from_toml(path)
    assert str(path) in str(info.value)


def test_a_missing_items_file_is_named_by_the_configuration_key(tmp_path):
    """It said only "PATH: items file not found", where a missing history names the
    configuration and its key."""
    path = _config(tmp_path)
    path.write_text(path.read_text().replace('"items.jsonl"', '"itmes.jsonl"'))
    missing = repr(str(tmp_path / "itmes.jsonl"))
    with pytest.raises(InputError) as info:
        LiveConfig.from_toml(path).load_items()
    assert str(info.value).startswith(f"{path}: [items] path = {missing}: no such file;")


def test_a_python_scorer_that_cannot_be_loaded_is_named_by_its_key(tmp_path):
    """It said "[scorer]='mod:nothere'", where the oracle's says "[oracle] function=..."."""
    (tmp_path / "scorer_h211.py").write_text("def score(response, reference):\n    return 1.0\n")
    path = _config(tmp_path)
    path.write_text(
        path.read_text() + '[scorer]\nkind = "python"\nfunction = "scorer_h211:nothere"\n'
    )
    with pytest.raises(InputError) as info:
        run_live(path, tmp_path / "s.duckdb")
    assert str(info.value) == (
        f"{path}: [scorer] function='scorer_h211:nothere': 'scorer_h211' has no attribute 'nothere'"
    )


def test_changed_config_is_refused(tmp_path):
    path = _config(tmp_path, 'run_id = "fixed"', oracle='kind = "python"\nfunction = "x:y"')
    Y = np.ones((2, 12))
    with Store(tmp_path / "s.duckdb") as db:
        run_live(path, db, oracle=MatrixOracle(Y))
        path.write_text(path.read_text().replace("budget = 8", "budget = 10"))
        with pytest.raises(InputError, match=r"changed: budget: 8 -> 10\)"):
            run_live(path, db, oracle=MatrixOracle(Y))
        # a changed answer option is named to the field, with both values (it said only
        # "changed: answers")
        path.write_text(path.read_text().replace("budget = 10", "budget = 8").replace(
            '"x:y"', '"x:z"'))  # fmt: skip
        with pytest.raises(InputError, match=r'changed: answers\.oracle\.function: "x:y" -> '
                           r'"x:z"\)'):  # fmt: skip
            run_live(path, db, oracle=MatrixOracle(Y))


def test_python_oracle_from_config_and_spend_cap(tmp_path, monkeypatch):
    module = tmp_path / "my_scores.py"
    module.write_text(
        "calls = []\n"
        "def score(model, items):\n"
        "    calls.append((model, list(items)))\n"
        "    if model == 'm1' and '3' in items:\n"
        "        raise RuntimeError('boom')\n"
        "    return [0.5] * len(items)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _config(
        tmp_path,
        'on_error = "zero"\nspend_cap = 8',
        oracle='kind = "python"\nfunction = "my_scores:score"',
    )
    seen: list[LiveProgress] = []
    result = run_live(path, tmp_path / "s.duckdb", progress=seen.append)
    calls = sys.modules["my_scores"].calls
    assert result.status == "capped" and result.paid_total == 8
    assert sum(len(items) for _, items in calls) == result.paid_total
    assert seen and seen[-1].paid_total == result.paid_total and seen[-1].budget_left > 0
    assert seen[-1].leader in ("m0", "m1")
    errors = CallableOracle(lambda m, i: [2.0] * len(i), ["m"], ["a", "b"]).evaluate_cells(
        0, np.array([0, 1])
    )
    assert [c.error for c in errors] == ["score 2.0 outside [0, 1]"] * 2


def test_stop_event_interrupts_before_next_batch(tmp_path):
    path = _config(tmp_path, oracle='kind = "python"\nfunction = "x:y"')
    stop = threading.Event()
    seen = []

    def progress(p):
        seen.append(p)
        if p.call == 2:
            stop.set()

    result = run_live(path, tmp_path / "s.duckdb", oracle=MatrixOracle(np.ones((2, 12))),
                      progress=progress, stop_event=stop)  # fmt: skip
    assert result.status == "interrupted" and len(seen) == 3 and result.paid_total == 2 + 2 + 2
    with Store(tmp_path / "s.duckdb", read_only=True) as db:
        assert db.connection.execute("SELECT status FROM selection_runs").fetchall() == [
            ("interrupted",)
        ]


def test_lm_eval_bridge_round_trip(tmp_path):
    """Plan -> (simulated) lm_eval --samples -> ingest -> continue, until done."""
    rng = np.random.default_rng(0)
    Y = (rng.random((2, 12)) < np.array([[0.3], [0.8]])).astype(float)
    path = _config(tmp_path, oracle='kind = "lm-eval"\ntask = "arc_easy"\nsamples_dir = "out"')
    store = tmp_path / "s.duckdb"
    for step in range(20):
        result = run_live(path, store)
        if result.status != "waiting":
            break
        plan = json.loads((tmp_path / "lm_eval_plans" / "next_plan.json").read_text())
        assert plan["samples"] == {"arc_easy": plan["doc_ids"]} and "--samples" in plan["argv"]
        m = int(plan["model"][1:])
        folder = tmp_path / "out" / f"org__m{m}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [{"doc_id": d, "filter": "none", "metrics": ["acc"], "acc": Y[m, d]}
                 for d in plan["doc_ids"]]  # fmt: skip
        name = f"samples_arc_easy_2024-05-01T12-{step:02d}-00.000000.jsonl"
        (folder / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert result.status == "done"
    replay = run_live(path, tmp_path / "replay.duckdb", oracle=MatrixOracle(Y))
    assert result.selection.best == replay.selection.best
    np.testing.assert_allclose(result.selection.estimates, replay.selection.estimates)
    assert result.paid_total == replay.selection.evaluations_total


def test_retry_after_header():
    assert _retry_after("2") == 2.0
    assert _retry_after("-3") == 0.0
    assert _retry_after(None) is None and _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a past date: no wait
    assert 3000 < _retry_after("Fri, 01 Jan 2100 00:00:00 GMT")


def test_a_python_oracle_returning_text_or_exiting_fails_its_cells():
    """`["1", ...]` was read as scores of 1.0, and `sys.exit(3)` in the function ended the
    process with the status of a capped run: both are per-cell errors now."""

    def text(model, items):
        return ["1"] * len(items)

    def leave(model, items):
        raise SystemExit(3)

    for function, said in ((text, "returned text ('1')"), (leave, "raised SystemExit: 3")):
        cells = list(CallableOracle(function, ["m"], ["a", "b"]).evaluate_cells(0, np.arange(2)))
        assert all(np.isnan(c.score) and said in c.error for c in cells)
    booleans = CallableOracle(lambda m, items: [True, False], ["m"], ["a", "b"])
    assert booleans.evaluate(0, np.arange(2)).tolist() == [1.0, 0.0]  # correct / wrong


def test_lm_eval_group_names_the_benchmark_and_excludes_task(tmp_path):
    """[oracle] group: the stored benchmark is the group's name; task and group together, or
    neither, are refused naming both keys."""
    path = _config(tmp_path, oracle='kind = "lm-eval"\ngroup = "mmlu"')
    assert LiveConfig.from_toml(path).benchmark_name == "mmlu"
    path = _config(tmp_path, oracle='kind = "lm-eval"\ntask = "mmlu_a"')
    assert LiveConfig.from_toml(path).benchmark_name == "mmlu_a"
    for oracle, said in (('task = "a"\ngroup = "g"', "not both"), ("", "has neither")):
        path = _config(tmp_path, oracle=f'kind = "lm-eval"\n{oracle}')
        with pytest.raises(InputError, match=f"task = 'NAME'.*group = 'NAME'.*{said}"):
            run_live(path, tmp_path / "s.duckdb")


def test_a_compressed_items_file_is_read_and_names_the_benchmark_by_its_content(tmp_path):
    """``[items] path = "items.jsonl.gz"``: the items are read decompressed (they were refused,
    "decompress it first"), and the stored benchmark is ``items``, not ``items.jsonl``."""
    import gzip

    path = _config(tmp_path)
    items = tmp_path / "items.jsonl"
    (tmp_path / "items.jsonl.gz").write_bytes(gzip.compress(items.read_bytes()))
    path.write_text(path.read_text().replace('"items.jsonl"', '"items.jsonl.gz"'))
    config = LiveConfig.from_toml(path)
    assert config.load_items() == LiveConfig.from_toml(_config(tmp_path)).load_items()
    assert config.benchmark_name == "items"


def test_the_streaming_oracles_share_one_batch_evaluate():
    """The chat-completions and callable oracles each wrote out the same ``evaluate`` over
    their ``evaluate_cells``; it is one method now, which puts every cell at its position
    whatever order the cells complete in (a failed one NaN)."""
    from latentbench.select.oracles import ChatCompletionsOracle
    from latentbench.select.oracles._protocol import BatchFromCells, CellResult

    assert CallableOracle.evaluate is BatchFromCells.evaluate
    assert ChatCompletionsOracle.evaluate is BatchFromCells.evaluate

    class Reversed(BatchFromCells):
        n_models, n_items = 1, 3

        def evaluate_cells(self, model_index, item_indices):
            for k in reversed(range(len(item_indices))):
                yield CellResult(k, np.nan if k == 1 else 0.1 * int(item_indices[k]))

    scores = Reversed().evaluate(0, np.array([2, 0, 1]))
    assert (
        scores[0] == pytest.approx(0.2) and np.isnan(scores[1]) and scores[2] == pytest.approx(0.1)
    )


def test_settings_the_oracle_kind_does_not_read_are_said(tmp_path):
    """`[oracle] kind = "python"` with `[scorer] kind = "multiple_choice"`, `[items]` prompt and
    answer fields and `base_url` / `api_key_env` / `model_args` in `[[models]]` ran without a
    word (the function scores the item ids itself); `lm-eval` ignores `[scorer]`, those item
    fields and `base_url`; `openai` ignores `lm_eval_model` and `model_args`. One warning at
    load names them and the kind; a configuration without them, or with their defaults, says
    nothing; the run's identity and id are the same with or without them."""
    import warnings

    from latentbench.exceptions import DataWarning

    def config(kind: dict, extra: bool) -> dict:
        data = {"run": {"budget": 4}, "oracle": kind, "items": {"path": "items.jsonl"},
                "models": [{"name": "a", "model": "a"}, {"name": "b", "model": "b"}]}  # fmt: skip
        if extra:
            data["scorer"] = {"kind": "multiple_choice"}
            data["items"].update(prompt_field="question", answer_field="gold")
            data["models"][0].update(
                base_url="http://127.0.0.1:9/v1", api_key_env="KEY", lm_eval_model="org/a",
                model_args="pretrained=org/a",
            )  # fmt: skip
            data["models"][1].update(base_url="http://127.0.0.1:9/v1", lm_eval_model="org/b")
        return data

    def load(data: dict) -> tuple[LiveConfig, list[str]]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            cfg = LiveConfig.from_dict(data, base_dir=tmp_path, source="run.toml")
        return cfg, [str(w.message) for w in seen if issubclass(w.category, DataWarning)]

    (tmp_path / "items.jsonl").write_text('{"id": "q1", "question": "p", "gold": "x"}\n')
    python = {"kind": "python", "function": "x:y"}
    cfg, said = load(config(python, extra=True))
    assert said == [
        "run.toml: [oracle] kind='python' does not read [scorer] kind='multiple_choice'; "
        "[items] prompt_field='question', answer_field='gold'; [[models]] base_url (2 of 2 "
        "models), api_key_env, model_args (1 of 2 models: 'a') (its function scores each "
        "model's items itself, given their ids; [scorer] only names the metric its rows are "
        "stored under): drop them, or choose the oracle kind that reads them"
        "; they still key the run and its stored answers: dropped from a run that has "
        "started, it is another run that asks its cells again, or is refused with [run] "
        "run_id"
    ]
    plain, quiet = load(config(python, extra=False))
    assert quiet == []
    # said, not dropped: the identity holds them as before (a stored run resumes)
    assert cfg.identity()["scorer"] == "multiple_choice" != plain.identity()["scorer"]
    assert cfg.identity()["item_fields"] == {"prompt_field": "question", "answer_field": "gold"}
    _, said = load(config({"kind": "lm-eval", "task": "t"}, extra=True))
    assert said == [
        "run.toml: [oracle] kind='lm-eval' does not read [scorer] kind='multiple_choice'; "
        "[items] prompt_field='question', answer_field='gold'; [[models]] base_url (2 of 2 "
        "models) (the harness builds and scores the prompts of its task itself; a served "
        "model's URL goes in model_args): drop them, or choose the oracle kind that reads them"
        "; they still key the run and its stored answers: dropped from a run that has "
        "started, it is another run that asks its cells again, or is refused with [run] "
        "run_id"
    ]
    _, said = load(config({"kind": "openai"}, extra=True))
    assert said == [
        "run.toml: [oracle] kind='openai' does not read [[models]] lm_eval_model (2 of 2 "
        "models), model_args (1 of 2 models: 'a') (each endpoint is asked for its model; "
        "lm_eval_model and model_args are the lm-eval bridge's): drop them, or choose the "
        "oracle kind that reads them"
        "; they still key the run and its stored answers: dropped from a run that has "
        "started, it is another run that asks its cells again, or is refused with [run] "
        "run_id"
    ]
    defaults = config(python, extra=False)
    defaults["scorer"] = {"kind": "exact_match"}
    defaults["items"].update(prompt_field="prompt", answer_field="answer")
    assert load(defaults)[1] == []  # the shared test configuration's [scorer]: the default


def test_unread_oracle_settings_that_key_the_run_say_so(tmp_path, monkeypatch):
    """The unread-settings warning said "drop them" of settings that key the run: a python
    oracle's run with `[scorer] kind = "multiple_choice"`, dropped on its word and run again
    on the same store, was another run (another id) that called the function for every cell
    again (the scorer is part of each answer's key). The warning says so when one of them is
    keyed; a model's base_url / api_key_env alone (not keyed) keep the plain advice."""
    import warnings

    from latentbench.exceptions import DataWarning

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "keyed_oracle.py").write_text(
        "CALLS = []\n"
        "def score(model, items):\n"
        "    CALLS.extend(items)\n"
        "    return [float(len(model + i) % 2) for i in items]\n"
    )
    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps({"id": f"q{k}"}) + "\n" for k in range(12))
    )

    def load(scorer: bool, endpoint: bool = False) -> tuple[LiveConfig, list[str]]:
        data: dict = {"run": {"budget": 4, "policy": "ucbe", "init_batch": 2, "batch_size": 2},
                      "oracle": {"kind": "python", "function": "keyed_oracle:score"},
                      "items": {"path": "items.jsonl"},
                      "models": [{"name": "a"}, {"name": "bb"}]}  # fmt: skip
        if scorer:
            data["scorer"] = {"kind": "multiple_choice"}
        if endpoint:
            data["models"][0].update(base_url="http://127.0.0.1:9/v1", api_key_env="KEY")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            cfg = LiveConfig.from_dict(data, base_dir=tmp_path, source="run.toml")
        return cfg, [str(w.message) for w in seen if issubclass(w.category, DataWarning)]

    clause = "they still key the run and its stored answers"
    keyed, said = load(scorer=True)
    assert len(said) == 1 and said[0].endswith(
        f"drop them, or choose the oracle kind that reads them; {clause}: dropped from a run "
        "that has started, it is another run that asks its cells again, or is refused with "
        "[run] run_id"
    ), said
    _, said = load(scorer=False, endpoint=True)
    assert len(said) == 1 and clause not in said[0], said  # where a model is reached: not keyed
    # what the clause says: dropped, another run, every cell asked again
    import keyed_oracle

    path = tmp_path / "s.duckdb"
    first = run_live(keyed, path)
    asked = len(keyed_oracle.CALLS)
    dropped, _ = load(scorer=False)
    second = run_live(dropped, path)
    assert first.status == second.status == "done" and asked > 0
    assert second.run_id != first.run_id and len(keyed_oracle.CALLS) == 2 * asked
