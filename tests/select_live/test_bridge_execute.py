"""The lm-eval bridge running its plans itself (``execute=True``), with a stand-in harness.

The real harness runs in ``tests/harness/test_lm_eval_bridge.py`` (when installed); here a small
script takes the same command line and writes lm-eval's files, so the plumbing is always tested.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import HarnessFailed, PlanPending
from latentbench.select.oracles import LmEvalBridgeOracle

FAKE = """\
import json, sys
from pathlib import Path
args = sys.argv[1:]
get = lambda flag: args[args.index(flag) + 1]
if "--fail" in args:
    sys.exit("boom: harness crashed")
name = dict(kv.split("=", 1) for kv in get("--model_args").split(","))["model"]
task, docs = next(iter(json.loads(get("--samples")).items()))
Path(sys.argv[0]).with_name("calls.jsonl").open("a").write(json.dumps([name, docs]) + "\\n")
out = Path(get("--output_path")) / name
out.mkdir(parents=True, exist_ok=True)
date = "2026-01-01T00-00-0%d.000000" % len(list(out.glob("results_*")))
meta = {"config": {"model": "x", "model_args": get("--model_args")}, "lm_eval_version": "fake"}
(out / f"results_{date}.json").write_text(json.dumps(meta))
if "--skip-last" in args:
    docs = docs[:-1]
rows = [{"doc_id": d, "filter": "none", "metrics": ["acc"], "acc": d % 2} for d in docs]
(out / f"samples_{task}_{date}.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
"""


def _bridge(tmp_path: Path, execute: bool, *extra: str) -> LmEvalBridgeOracle:
    script = tmp_path / "fake_lm_eval.py"
    script.write_text(FAKE)
    return LmEvalBridgeOracle(
        ["a", "b"],
        ["m-a", "m-b"],
        [str(k) for k in range(10)],
        "t",
        tmp_path / "out",
        tmp_path / "plans",
        model_args=["model=m-a", "model=m-b"],
        backend="local-chat-completions",
        command=[sys.executable, str(script)],
        include_path=tmp_path / "tasks",
        extra_args=["--apply_chat_template", *extra],
        execute=execute,
    )


def test_plan_sorts_docs_and_carries_the_command(tmp_path):
    bridge = _bridge(tmp_path, execute=False)
    with pytest.raises(PlanPending):
        list(bridge.evaluate_cells(1, np.array([7, 2, 5, 2])))
    plan = json.loads((tmp_path / "plans" / "next_plan.json").read_text())
    assert plan["doc_ids"] == [2, 5, 7]  # sorted: lm-eval labels --samples docs by list order
    argv = plan["argv"]
    assert argv[:2] == [sys.executable, str(tmp_path / "fake_lm_eval.py")]
    assert argv[argv.index("--include_path") + 1] == str(tmp_path / "tasks")
    assert argv[-1] == "--apply_chat_template"


def test_execute_runs_once_per_batch_for_the_missing_docs_only(tmp_path):
    bridge = _bridge(tmp_path, execute=True)
    got = dict((c.position, c.score) for c in bridge.evaluate_cells(0, np.array([3, 4, 1])))
    assert got == {0: 1.0, 1: 0.0, 2: 1.0}
    got = dict((c.position, c.score) for c in bridge.evaluate_cells(0, np.array([4, 6])))
    assert got == {0: 0.0, 1: 0.0}
    calls = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert calls == [["m-a", [1, 3, 4]], ["m-a", [6]]]  # doc 4 was logged already
    assert bridge.n_runs == 2 and bridge.n_calls == 5


def test_execute_failures_name_the_plan(tmp_path):
    with pytest.raises(HarnessFailed, match=r"next_plan\.json: .* exited 1:\n.*boom"):
        list(_bridge(tmp_path, True, "--fail").evaluate_cells(0, np.array([1])))
    with pytest.raises(HarnessFailed, match=r"no 't' sample for model 'm-b'.*doc_id\(s\) 8"):
        list(_bridge(tmp_path, True, "--skip-last").evaluate_cells(1, np.array([8, 2])))


FAKE_GROUP = """\
import json, sys
from pathlib import Path
args = sys.argv[1:]
get = lambda flag: args[args.index(flag) + 1]
name = dict(kv.split("=", 1) for kv in get("--model_args").split(","))["model"]
samples = json.loads(get("--samples"))
assert get("--tasks").split(",") == list(samples), "--tasks must list the --samples tasks"
Path(sys.argv[0]).with_name("calls.jsonl").open("a").write(json.dumps([name, samples]) + "\\n")
out = Path(get("--output_path")) / name
out.mkdir(parents=True, exist_ok=True)
date = "2026-01-01T00-00-0%d.000000" % len(list(out.glob("results_*")))
meta = {"config": {"model": "x", "model_args": get("--model_args")}, "lm_eval_version": "fake"}
(out / f"results_{date}.json").write_text(json.dumps(meta))
for task, docs in samples.items():
    rows = [{"doc_id": d, "filter": "none", "metrics": ["acc"], "acc": (d + len(task)) % 2}
            for d in docs]
    (out / f"samples_{task}_{date}.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
"""


def test_a_group_asks_each_task_for_its_docs_in_one_run(tmp_path):
    """[oracle] group: items TASK/DOC_ID of two tasks; one harness run per batch lists both
    tasks and each task's sorted docs, and the logs read back under the items' ids."""
    script = tmp_path / "fake_lm_eval.py"
    script.write_text(FAKE_GROUP)
    items = [f"mmlu_bb/{k}" for k in range(5)] + [f"mmlu_a/{k}" for k in range(5)]
    bridge = LmEvalBridgeOracle(
        ["a"], ["m-a"], items, None, tmp_path / "out", tmp_path / "plans",
        model_args=["model=m-a"], command=[sys.executable, str(script)], execute=True,
        group="mmlu",
    )  # fmt: skip
    asked = np.array([3, 8, 1, 6, 0])  # mmlu_bb/3, mmlu_a/3, mmlu_bb/1, mmlu_a/1, mmlu_bb/0
    got = dict((c.position, c.score) for c in bridge.evaluate_cells(0, asked))
    # the fake scores doc d of task t as (d + len(t)) % 2: a doc of the other task differs
    assert got == {0: 0.0, 1: 1.0, 2: 0.0, 3: 1.0, 4: 1.0}
    plan = json.loads((tmp_path / "plans" / "next_plan.json").read_text())
    assert plan["samples"] == {"mmlu_a": [1, 3], "mmlu_bb": [0, 1, 3]} and plan["group"] == "mmlu"
    assert plan["doc_ids"] == ["mmlu_a/1", "mmlu_a/3", "mmlu_bb/0", "mmlu_bb/1", "mmlu_bb/3"]
    assert plan["argv"][plan["argv"].index("--tasks") + 1] == "mmlu_a,mmlu_bb"
    # a later batch asks only for what is not logged yet
    got = dict((c.position, c.score) for c in bridge.evaluate_cells(0, np.array([3, 9, 4])))
    assert got == {0: 0.0, 1: 0.0, 2: 1.0}
    calls = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert calls == [["m-a", {"mmlu_a": [1, 3], "mmlu_bb": [0, 1, 3]}],
                     ["m-a", {"mmlu_a": [4], "mmlu_bb": [4]}]]  # fmt: skip
    assert bridge.n_runs == 2


def test_a_group_needs_task_slash_doc_ids_and_excludes_task(tmp_path):
    from latentbench.exceptions import InputError

    common = (tmp_path / "out", tmp_path / "plans")
    with pytest.raises(InputError, match=r"item id '12'.*group 'mmlu' needs item ids TASK/DOC_ID"):
        LmEvalBridgeOracle(["a"], ["m"], ["12"], None, *common, group="mmlu")
    with pytest.raises(InputError, match=r"'mmlu_a/12'.*\[oracle\] group = 'NAME' instead"):
        LmEvalBridgeOracle(["a"], ["m"], ["mmlu_a/12"], "mmlu_a", *common)
    with pytest.raises(InputError, match="not both"):
        LmEvalBridgeOracle(["a"], ["m"], ["a/1"], "t", *common, group="g")
    with pytest.raises(InputError, match="not neither"):
        LmEvalBridgeOracle(["a"], ["m"], ["1"], None, *common)


def test_estimate_live_waiting_for_a_plan_exits_4_as_select_live(tmp_path):
    """estimate --live through the bridge without execute: each round writes a plan and the
    command exits 4 (waiting), as select live does, so that a script running the plans until
    the exit status is 0 does not stop at the first plan; run, re-run, then 0."""
    import shlex
    import subprocess

    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    (tmp_path / "fake_lm_eval.py").write_text(FAKE_GROUP)
    ids = [f"mmlu_{t}/{k}" for t in ("a", "bb") for k in range(5)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    rng = np.random.default_rng(0)
    cal = pd.DataFrame((rng.random((6, 10)) < 0.5).astype(int), columns=ids)
    cal.insert(0, "model", [f"h{k}" for k in range(6)])
    cal.to_csv(tmp_path / "cal.csv", index=False)
    command = shlex.join([sys.executable, str(tmp_path / "fake_lm_eval.py")])
    (tmp_path / "run.toml").write_text(
        f'[items]\npath = "items.jsonl"\n[scorer]\nkind = "exact_match"\n[oracle]\n'
        f'kind = "lm-eval"\ngroup = "mmlu"\ncommand = {json.dumps(command)}\n'
        'samples_dir = "out"\nplan_dir = "plans"\n'
        '[[models]]\nname = "a"\nlm_eval_model = "m-a"\nmodel_args = "model=m-a"\n'
    )
    args = ["estimate", str(tmp_path / "cal.csv"), "--live", str(tmp_path / "run.toml"),
            "--store", str(tmp_path / "run.duckdb"), "--budget", "2"]  # fmt: skip
    codes = []
    for _ in range(4):
        res = CliRunner().invoke(app, args)
        codes.append(res.exit_code)
        if res.exit_code != 4:
            break
        assert "live run waiting" in " ".join(res.output.split()), res.output
        plan = json.loads((tmp_path / "plans" / "next_plan.json").read_text())
        subprocess.run(plan["argv"], check=True)
    assert codes == [4, 4, 0], res.output
    assert "after 2 of 10 items" in res.output


@pytest.mark.parametrize("group", [None, "mmlu"])
@pytest.mark.parametrize("doc", ["007", "٣", "²"])
def test_a_doc_id_not_written_as_lm_eval_logs_it_is_refused_before_any_run(tmp_path, doc, group):
    """'007' was asked of the harness as doc 7 (paid), logged as '7' and never found under
    '007': the run failed after the harness ran ('²' raised a bare ValueError)."""
    from latentbench.exceptions import InputError

    item = doc if group is None else f"mmlu_a/{doc}"
    with pytest.raises(InputError, match=rf"item id '{item}': doc id '{doc}' is not written"):
        LmEvalBridgeOracle(
            ["a"], ["m"], ["1", item] if group is None else ["mmlu_a/1", item],
            None if group else "t", tmp_path / "out", tmp_path / "plans", group=group,
        )  # fmt: skip


def test_estimate_live_with_doc_ids_against_a_group_calibration_names_both(tmp_path):
    """[oracle] task with doc ids against a calibration ingested with --group (TASK/DOC_ID):
    the error said only 'none of the 10 items is in the calibration'."""
    from latentbench.exceptions import InputError
    from latentbench.io import ResponseMatrix
    from latentbench.select import estimate_live

    ids = [f"mmlu_a/{k}" for k in range(10)]
    rng = np.random.default_rng(0)
    cal = ResponseMatrix.from_wide(
        pd.DataFrame((rng.random((6, 10)) < 0.5).astype(int), columns=ids,
                     index=[f"h{k}" for k in range(6)])
    )  # fmt: skip
    (tmp_path / "items.jsonl").write_text("".join(f'{{"id": "{k}"}}\n' for k in range(10)))
    (tmp_path / "run.toml").write_text(
        '[items]\npath = "items.jsonl"\n[scorer]\nkind = "exact_match"\n[oracle]\n'
        'kind = "lm-eval"\ntask = "mmlu_a"\n[[models]]\nname = "a"\nlm_eval_model = "m-a"\n'
    )
    with pytest.raises(InputError, match=r"\(e\.g\. '0'\).*expected its item ids \(e\.g\. "
                       r"'mmlu_a/0'\).*group = 'NAME'"):  # fmt: skip
        estimate_live(cal, tmp_path / "run.toml", tmp_path / "run.duckdb", budget=2)


def test_a_session_after_a_crash_waits_for_the_harness_still_running(tmp_path, monkeypatch):
    """select live killed (SIGKILL) while its harness ran: the harness, in a session of its
    own, went on, and the resumed run started a second harness for the same docs beside it
    (a batch paid twice). The resumed run now waits for it and reads its logs."""
    import os
    import signal
    import subprocess
    import time

    import latentbench.select.oracles._lm_eval as lm_eval

    script = tmp_path / "fake_lm_eval.py"
    go = tmp_path / "go"  # the first harness writes its logs once the resumed session saw it
    slow = (  # after the call is logged, before the logs (it slept 3 s, the test idle)
        f"import time\nend = time.monotonic() + 60\n"
        f"first = len(Path({str(tmp_path / 'calls.jsonl')!r}).read_text().splitlines()) == 1\n"
        f"while first and not Path({str(go)!r}).exists() and time.monotonic() < end:\n"
        "    time.sleep(0.02)\nout = Path("
    )
    script.write_text(FAKE_GROUP.replace("out = Path(", slow, 1))
    alive = lm_eval._alive
    seen_running = []

    def spy(pid: int, argv: list[str]) -> bool:  # the resumed session's look at the harness
        running = alive(pid, argv)
        if running:
            seen_running.append(pid)
            go.touch()
        return running

    monkeypatch.setattr(lm_eval, "_alive", spy)
    items = [f"mmlu_bb/{k}" for k in range(3)] + [f"mmlu_a/{k}" for k in range(3)]
    setup = (
        "import sys, numpy as np\n"
        "from latentbench.select.oracles import LmEvalBridgeOracle\n"
        f"b = LmEvalBridgeOracle(['a'], ['m-a'], {items!r}, None, {str(tmp_path / 'out')!r}, "
        f"{str(tmp_path / 'plans')!r}, model_args=['model=m-a'], "
        f"command=[sys.executable, {str(script)!r}], execute=True, group='mmlu')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    first = subprocess.Popen(
        [sys.executable, "-c", setup + "list(b.evaluate_cells(0, np.arange(6)))"], env=env
    )
    calls = tmp_path / "calls.jsonl"
    deadline = time.monotonic() + 60
    while not calls.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert calls.exists() and first.poll() is None
    first.send_signal(signal.SIGKILL)  # the harness goes on, writing its logs in ~3 s
    first.wait()
    namespace: dict = {}
    exec(setup, namespace)
    bridge = namespace["b"]
    got = {c.position: c.score for c in bridge.evaluate_cells(0, np.arange(6))}
    assert seen_running, "the resumed session never saw the earlier harness running"
    assert got == {k: float((k % 3 + len("mmlu_bb" if k < 3 else "mmlu_a")) % 2) for k in range(6)}
    assert bridge.n_runs == 0 and len(calls.read_text().splitlines()) == 1  # paid once
    assert not (tmp_path / "plans" / "harness_running.json").exists()
    # a record whose process is gone (or is another program) is not waited for
    (tmp_path / "plans" / "harness_running.json").write_text(
        json.dumps({"pid": os.getpid(), "argv": ["lm_eval", "--tasks", "other"]})
    )
    got = {c.position: c.score for c in bridge.evaluate_cells(0, np.arange(6))}
    assert len(got) == 6 and bridge.n_runs == 0


def test_the_logs_are_read_once_and_read_back_as_a_full_read(tmp_path, monkeypatch):
    """Every batch read every samples file again (quadratic in the batches: 0.6 s a batch
    after 76 MMLU batches, minutes on a full run). A file is now read once while it and its
    folder's results files are unchanged; the cells equal a full read's, a rewritten file
    is read again, and the later run's score wins as before."""
    import latentbench.io.formats as formats

    script = tmp_path / "fake_lm_eval.py"
    script.write_text(FAKE_GROUP)
    items = [f"mmlu_bb/{k}" for k in range(6)] + [f"mmlu_a/{k}" for k in range(6)]

    def bridge():
        return LmEvalBridgeOracle(
            ["a", "b"], ["m-a", "m-b"], items, None, tmp_path / "out", tmp_path / "plans",
            model_args=["model=m-a", "model=m-b"], command=[sys.executable, str(script)],
            execute=True, group="mmlu",
        )  # fmt: skip

    read: list[int] = []
    real = formats.read_results

    def counting(source, paths, **kw):
        read.append(len(paths) if isinstance(paths, list) else -1)
        return real(source, paths, **kw)

    monkeypatch.setattr(formats, "read_results", counting)
    b = bridge()
    for model, batch in ((0, [0, 7]), (1, [1, 8]), (0, [2, 9, 0]), (1, [3, 10])):
        list(b.evaluate_cells(model, np.array(batch)))
    assert sum(read) == 8  # each of the 8 samples files once (2 tasks x 4 runs)
    full = bridge()._logged()
    assert b._logged() == full and len(full) == 8
    # a file rewritten (another score) is read again; the later run still wins
    out = tmp_path / "out" / "m-a"
    first = sorted(out.glob("samples_mmlu_bb_*"))[0]
    row = json.loads(first.read_text().splitlines()[0])
    row["acc"] = 1 - row["acc"]
    first.write_text(json.dumps(row) + "\n")
    assert b._logged() == bridge()._logged()
    assert b._logged()[("m-a", "mmlu_bb/0")] == row["acc"]
    later = sorted(out.glob("samples_mmlu_bb_*"))[-1]
    later.write_text(later.read_text() + json.dumps({**row, "acc": 1 - row["acc"]}) + "\n")
    assert b._logged() == bridge()._logged()
    assert b._logged()[("m-a", "mmlu_bb/0")] == 1 - row["acc"]


def test_a_logged_score_outside_0_1_is_refused_saying_to_choose_a_0_1_metric(tmp_path):
    """A task logging bleu = 75.0 (a 0-100 metric): the bridge never uses it, and its error
    names the file and line, the metric, the value and the range, and says to choose a 0-1
    metric with the config's metric option (it said "rescale ... before ingesting", advice
    for ingest, not for a live run)."""
    from latentbench.exceptions import InputError

    out = tmp_path / "out" / "m-a"
    out.mkdir(parents=True)
    meta = {"config": {"model": "x", "model_args": "pretrained=m-a"}, "lm_eval_version": "f"}
    (out / "results_2026-01-01T00-00-00.000000.json").write_text(json.dumps(meta))
    rows = [{"doc_id": k, "filter": "none", "metrics": ["bleu"], "bleu": 75.0 if k else 0.5}
            for k in range(3)]  # fmt: skip
    log = out / "samples_t_2026-01-01T00-00-00.000000.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bridge = LmEvalBridgeOracle(["a"], ["m-a"], ["0", "1", "2"], "t", tmp_path / "out",
                                tmp_path / "plans")  # fmt: skip
    with pytest.raises(InputError) as caught:
        list(bridge.evaluate_cells(0, np.array([0, 1, 2])))
    said = str(caught.value)
    assert f"{log}:2: field 'bleu': value 75.0 is outside [0, 1]" in said, said
    assert "choose a 0-1 metric (acc, exact_match, ...) with [oracle] metric = 'NAME'" in said
    assert "ingesting" not in said


def test_run_selection_takes_the_bridge_as_a_plain_oracle(tmp_path):
    """``run_selection(LmEvalBridgeOracle(...), ...)`` was refused ("expected an oracle
    (n_models, n_items, evaluate)"): the bridge had only ``evaluate_cells``. It has the shared
    ``BatchFromCells.evaluate`` now: with ``execute`` the harness runs per batch; without, the
    plan is written and :class:`PlanPending` raised, and after the plan ran the same call
    replays the logged cells and goes on."""
    import subprocess

    from latentbench.select import UCBE, run_selection

    kw = {"budget": 4, "batch_size": 2, "init_batch": 2, "random_state": 0}
    bridge = _bridge(tmp_path, execute=True)
    assert bridge.evaluate(1, np.array([3, 4])).tolist() == [1.0, 0.0]
    run = run_selection(bridge, UCBE(), **kw)
    assert run.evaluations_total == 2 * 2 + 4 and run.best in (0, 1)
    (tmp_path / "planned").mkdir()
    planned = _bridge(tmp_path / "planned", execute=False)
    plan = tmp_path / "planned" / "plans" / "next_plan.json"
    for _ in range(10):  # run each plan as a user would, then the same call again
        try:
            again = run_selection(planned, UCBE(), **kw)
            break
        except PlanPending:
            subprocess.run(json.loads(plan.read_text())["argv"], check=True)
    assert again.evaluations_total == run.evaluations_total and again.best == run.best
    assert again.estimates.tolist() == run.estimates.tolist()
