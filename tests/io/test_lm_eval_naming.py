"""lm-eval model naming: from ``model_args`` as lm-eval derives it; never its made-up id."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io.formats import read_results

DATE = "2026-11-30T20-45-15.568185"


def _run(root: Path, folder: str, config: dict, model_name: str) -> Path:
    """One lm-eval >= 0.4.3 run folder with two docs, as lm-eval 0.4.13 lays it out."""
    run = root / folder
    run.mkdir(parents=True)
    meta = {
        "results": {"tiny": {"acc,none": 0.5}},
        "config": config,
        "model_name": model_name,
        "model_name_sanitized": model_name.replace("/", "__"),
        "lm_eval_version": "0.4.13",
    }
    (run / f"results_{DATE}.json").write_text(json.dumps(meta))
    line = '{"doc_id": %d, "filter": "none", "metrics": ["acc"], "acc": %d}\n'
    (run / f"samples_tiny_{DATE}.jsonl").write_text(line % (0, 1) + line % (1, 0))
    return run


def test_dummy_run_needs_a_name_and_never_gets_the_random_folder(tmp_path):
    _run(tmp_path, "qdpv68r5", {"model": "dummy", "model_args": {}}, "qdpv68r5")
    with pytest.raises(InputError) as err:
        read_results("lm-eval", tmp_path)
    message = str(err.value)
    assert f"results_{DATE}.json" in message and "config.model_args" in message
    # the keyword in Python (the command line rewrites it into its --model NAME)
    assert "'qdpv68r5'" in message and "pass model=NAME to name" in message
    assert "--model" not in message
    frame, _ = read_results("lm-eval", tmp_path, model="dummy-a")
    assert set(frame["model"]) == {"dummy-a"}
    assert frame["score"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize(
    ("model_args", "expected"),
    [
        ("model=model-1,base_url=http://127.0.0.1:8000/v1/chat/completions", "model-1"),
        ({"model": "model-2", "base_url": "http://127.0.0.1:8000/v1"}, "model-2"),
        ("pretrained=org/base,peft=org/adapter", "org/adapter"),
        ("pretrained=EleutherAI/pythia-160m,dtype=float16", "EleutherAI/pythia-160m"),
        ("model_id=org/served,base_url=http://127.0.0.1:8000/v1", "org/served"),
    ],
)
def test_name_comes_from_model_args(tmp_path, model_args, expected):
    _run(tmp_path, "whatever", {"model": "local-chat-completions", "model_args": model_args}, "x")
    frame, _ = read_results("lm-eval", tmp_path)
    assert set(frame["model"]) == {expected}
    frame, _ = read_results("lm-eval", tmp_path, model="override")
    assert set(frame["model"]) == {"override"}


def test_recorded_model_name_is_kept_without_model_args(tmp_path):
    _run(tmp_path, "org__model", {"model": "hf"}, "org/model")
    frame, _ = read_results("lm-eval", tmp_path)
    assert set(frame["model"]) == {"org/model"}


def test_old_layout_without_a_name_needs_one(tmp_path):
    (tmp_path / "results.json").write_text(
        json.dumps({"results": {"tiny": {}}, "config": {"model": "dummy", "model_args": ""}})
    )
    rows = [{"doc_id": 0, "acc": 1}, {"doc_id": 1, "acc": 0}]
    (tmp_path / "_tiny.jsonl").write_text(json.dumps(rows))
    with pytest.raises(InputError, match=r"results\.json: field 'config\.model_args' = ''"):
        read_results("lm-eval", tmp_path)
    frame, _ = read_results("lm-eval", tmp_path, model="dummy-b")
    assert set(frame["model"]) == {"dummy-b"} and set(frame["benchmark"]) == {"tiny"}


REAL = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.mark.parametrize(
    "results",
    sorted(p for p in REAL.rglob("results_*.json") if "lm-eval" in p.parts),
    ids=lambda p: p.parent.name,
)
def test_real_model_name_is_the_one_model_args_give(results):
    """Why the model comes from ``model_args``: lm-eval writes ``model_name`` from them, so in
    its real output they agree (and the arguments are there when the name is made up)."""
    from latentbench.io.formats._lm_eval import _named_in_args

    meta = json.loads(results.read_text())
    assert _named_in_args(meta["config"]["model_args"]) == meta["model_name"]


def test_an_edited_model_name_is_said_and_model_args_win(tmp_path):
    _run(tmp_path, "org__m", {"model": "hf", "model_args": "pretrained=base/m"}, "mine/ft")
    with pytest.warns(DataWarning, match="differs from the model of 'config.model_args'"):
        frame, report = read_results("lm-eval", tmp_path)
    assert set(frame["model"]) == {"base/m"}
    (note,) = report.notes
    assert "'model_name' 'mine/ft'" in note and "'base/m'" in note


def test_a_results_file_naming_no_model_gives_the_folder_name_said(tmp_path):
    run = _run(tmp_path, "org__m", {"model": "hf"}, "x")
    meta = json.loads((run / f"results_{DATE}.json").read_text())
    del meta["model_name"], meta["model_name_sanitized"]
    (run / f"results_{DATE}.json").write_text(json.dumps(meta))
    with pytest.warns(DataWarning, match="named after the folder"):
        frame, report = read_results("lm-eval", tmp_path)
    assert set(frame["model"]) == {"org/m"}
    (note,) = report.notes
    assert f"results_{DATE}.json: names no model" in note and "'org/m'" in note


def test_the_naming_note_spells_the_keyword_in_python_and_the_flag_on_the_command_line(
    tmp_path,
):
    """The notes said "(--model sets it)", a flag a Python user cannot pass: the library says
    ``model=`` and ``latentbench ingest`` prints ``--model``."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _run(tmp_path, "org__m", {"model": "hf", "model_args": "pretrained=base/m"}, "mine/ft")
    with pytest.warns(DataWarning):
        _, report = read_results("lm-eval", tmp_path)
    (note,) = report.notes
    assert note.endswith("the model is 'base/m' (model= sets it)") and "--model" not in note
    _register()
    said = CliRunner().invoke(
        app, ["ingest", "lm-eval", str(tmp_path), "--store", str(tmp_path / "s.duckdb")]
    )
    assert said.exit_code == 0, said.output
    text = " ".join(said.output.split())
    assert "the model is 'base/m' (--model sets it)" in text and "model= sets it" not in text


def _checkpoints(root: Path, second_scores: tuple[int, int]) -> tuple[Path, Path]:
    """Two runs of one repository at two revisions (lm-eval names both after pretrained=)."""
    runs = []
    for folder, revision in (("a", "step1000"), ("b", "step2000")):
        args = f"pretrained=EleutherAI/pythia-160m,revision={revision},dtype=float16"
        runs.append(
            _run(root, folder, {"model": "hf", "model_args": args}, "EleutherAI/pythia-160m")
        )
    line = '{"doc_id": %d, "filter": "none", "metrics": ["acc"], "acc": %d}\n'
    text = line % (0, second_scores[0]) + line % (1, second_scores[1])
    (runs[1] / f"samples_tiny_{DATE}.jsonl").write_text(text)
    return runs[0], runs[1]


def test_checkpoints_read_as_one_model_are_said(tmp_path):
    # the same docs' scores agree: read as one model's, 4 rows kept as 2, without a word
    a, b = _checkpoints(tmp_path, (1, 0))
    frame, report = read_results("lm-eval", tmp_path)
    assert len(frame) == 2 and set(frame["model"]) == {"EleutherAI/pythia-160m"}
    (note,) = [n for n in report.notes if "other weights" in n]
    assert note == (
        "model 'EleutherAI/pythia-160m': runs of other weights are read as this one model, the "
        "name lm-eval gives them both (their 'config.model_args': revision='step1000' in "
        f"{a / f'results_{DATE}.json'}, revision='step2000' in {b / f'results_{DATE}.json'}); "
        "if they are two models (checkpoints of one), read each run with model=NAME"
    )
    # one run of each, or a name for each: no note
    for run, name in ((a, "pythia-160m@step1000"), (b, "pythia-160m@step2000")):
        assert not read_results("lm-eval", run)[1].notes
        assert not read_results("lm-eval", run, model=name)[1].notes


def test_a_conflict_between_checkpoints_does_not_advise_duplicates(tmp_path):
    # a doc they score differently: the error advised duplicates="latest" or "mean", which
    # keep one checkpoint's answer (the other checkpoint lost) or average two models
    _checkpoints(tmp_path, (0, 0))
    with pytest.raises(InputError) as err:
        read_results("lm-eval", tmp_path)
    message = str(err.value)
    assert "give different scores (1.0 and 0.0)" in message
    assert (
        "(the runs name other weights in 'config.model_args' (revision='step1000' and "
        "revision='step2000'), which lm-eval names as one model: if they are two models "
        '(checkpoints of one), read each run with model=NAME; duplicates="latest" or '
        'duplicates="mean" would keep one checkpoint\'s answer or mix both)'
    ) in message
    # the same revision twice (a run repeated) keeps the usual advice
    for run in ("a", "b"):
        results = tmp_path / run / f"results_{DATE}.json"
        results.write_text(results.read_text().replace("step2000", "step1000"))
    with pytest.raises(InputError, match='choose duplicates="latest" or duplicates="mean"'):
        read_results("lm-eval", tmp_path)


def test_revision_main_and_no_revision_are_the_same_weights(tmp_path):
    # lm-eval loads revision 'main' when model_args give none: a run with revision=main and
    # one without were said as 'runs of other weights', and their conflict (a repeated run)
    # advised model=NAME for each, as if two checkpoints, instead of duplicates=
    a, b = _checkpoints(tmp_path, (1, 0))
    for run, args in ((a, "revision=main,dtype=float16"), (b, "dtype=float16")):
        results = run / f"results_{DATE}.json"
        meta = json.loads(results.read_text())
        meta["config"]["model_args"] = f"pretrained=EleutherAI/pythia-160m,{args}"
        results.write_text(json.dumps(meta))
    _, report = read_results("lm-eval", tmp_path)
    assert not [n for n in report.notes if "other weights" in n], report.notes
    (b / f"samples_tiny_{DATE}.jsonl").write_text(
        '{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 0}\n'
    )
    with pytest.raises(InputError, match='choose duplicates="latest" or duplicates="mean"'):
        read_results("lm-eval", tmp_path)
    # main against another revision is still said, naming what each file says
    meta = json.loads((b / f"results_{DATE}.json").read_text())
    meta["config"]["model_args"] = "pretrained=EleutherAI/pythia-160m,revision=step2000"
    (b / f"results_{DATE}.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"\(revision='main' and revision='step2000'\)"):
        read_results("lm-eval", tmp_path)


def test_checkpoints_ingested_one_after_the_other_are_told_apart_by_the_store(tmp_path):
    """Run a ingested, then run b of another revision= that scores a doc otherwise: the
    store's conflict advised duplicates="latest" or "mean" (one checkpoint's answer kept, or
    two models averaged), where one ingest of both advises model=NAME (0dc2780a). The
    revision of each run is in the ingest's report (LoadReport.revisions), kept with the
    ingest: the store's conflict advises model=NAME too."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.io.store import Store

    a, b = _checkpoints(tmp_path / "runs", (0, 0))
    _, report = read_results("lm-eval", a)
    assert report.revisions == {str(a / f"samples_tiny_{DATE}.jsonl"): "step1000"}
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.ingest(*read_results("lm-eval", a))
        with pytest.raises(InputError) as err:
            store.ingest(*read_results("lm-eval", b))
        message = str(err.value)
        assert (
            "expected one value per key (the incoming run names other weights in "
            "'config.model_args' than the stored one (revision='step2000', stored "
            "revision='step1000'), which lm-eval names as one model: if they are two models "
            "(checkpoints of one), ingest this run with model=NAME, a name of its own; "
            'duplicates="latest" or duplicates="mean" would keep one checkpoint\'s answer or '
            "mix both); nothing was ingested"
        ) in message
        # the way out: the run under a name of its own
        named = store.ingest(*read_results("lm-eval", b, model="pythia-160m@step2000"))
        assert named["n_new"] == 2
    # the command line: the flag
    _register()
    other = tmp_path / "t.duckdb"
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "lm-eval", str(a), "--store", str(other)]).exit_code == 0
    said = runner.invoke(app, ["ingest", "lm-eval", str(b), "--store", str(other)])
    assert said.exit_code == 2, said.output
    text = " ".join(said.output.split())
    assert "ingest this run with --model NAME, a name of its own; --duplicates latest" in text
    # the same revision again (a run repeated) keeps the usual advice
    results = b / f"results_{DATE}.json"
    results.write_text(results.read_text().replace("step2000", "step1000"))
    with Store(tmp_path / "u.duckdb") as store:
        store.ingest(*read_results("lm-eval", a))
        with pytest.raises(
            InputError, match=r'\(choose duplicates="latest" or duplicates="mean"\)'
        ):
            store.ingest(*read_results("lm-eval", b))


def test_checkpoints_ingested_one_after_the_other_that_agree_are_said(tmp_path):
    """Run b (revision=step2000) ingested after run a (step1000), every doc scored alike:
    its rows were 'already present' as the stored model's, without a word, where one read
    of both says so in a note (0dc2780a). The ingest says it (report note and DataWarning);
    the same run again, or a run named with model=, says nothing."""
    from latentbench.exceptions import DataWarning
    from latentbench.io.store import Store

    a, b = _checkpoints(tmp_path / "runs", (1, 0))
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(*read_results("lm-eval", a))
        frame, report = read_results("lm-eval", b)
        with pytest.warns(DataWarning, match="names other weights") as caught:
            result = store.ingest(frame, report)
        assert (result["n_new"], result["n_present"]) == (0, 2)
        (note,) = [n for n in report.notes if "other weights" in n]
        assert note == (
            "model 'EleutherAI/pythia-160m': the incoming run names other weights in "
            f"'config.model_args' than its stored runs (revision='step2000' in "
            f"{b / f'samples_tiny_{DATE}.jsonl'}, stored revision='step1000' in "
            f"{a / f'samples_tiny_{DATE}.jsonl'}), which lm-eval names as one model: its rows "
            "are stored as that one model's (a doc scored alike kept once); if they are two "
            "models (checkpoints of one), ingest each run with model=NAME, a name of its own"
        )
        assert str(caught[0].message) == note
        for again in (read_results("lm-eval", a), read_results("lm-eval", b, model="x@2000")):
            again[1].notes.clear()
            store.ingest(*again)
            assert not again[1].notes


def test_revision_main_and_no_revision_ingested_one_after_the_other_are_one_model(tmp_path):
    """The store's cross-ingest checks compare weights as one read does: a stored run with
    revision=main and an incoming run without a revision (the same weights: lm-eval loads
    'main') get no 'other weights' note when they agree, and the usual duplicates= advice
    when they conflict (both merged from h230 and h231, which each saw one side)."""
    from latentbench.exceptions import DataWarning
    from latentbench.io.store import Store

    a, b = _checkpoints(tmp_path / "runs", (1, 0))
    for run, args in ((a, "revision=main"), (b, "dtype=float16")):
        results = run / f"results_{DATE}.json"
        meta = json.loads(results.read_text())
        meta["config"]["model_args"] = f"pretrained=EleutherAI/pythia-160m,{args}"
        results.write_text(json.dumps(meta))
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(*read_results("lm-eval", a))
        frame, report = read_results("lm-eval", b)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataWarning)
            store.ingest(frame, report)
        assert not [n for n in report.notes if "other weights" in n], report.notes
    (b / f"samples_tiny_{DATE}.jsonl").write_text(
        '{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 0}\n'
    )
    with Store(tmp_path / "t.duckdb") as store:
        store.ingest(*read_results("lm-eval", a))
        with pytest.raises(InputError, match=r'\(choose duplicates="latest" or duplicates='):
            store.ingest(*read_results("lm-eval", b))


def test_checkpoints_told_apart_after_a_latest_replacement(tmp_path):
    """Run b (step2000) ingested with duplicates="latest" over run a (step1000), every doc
    scored otherwise: every stored row of a was replaced by b's without the note that one
    agreeing doc gave (the store's revisions were looked up after the replacement). A row
    replaced so keeps the run_id of the ingest that added it (a's) with b's file, so the
    store lost its revision: a later step1000 run scoring it otherwise was advised
    duplicates=, and one agreeing with it was not said. Both are told now."""
    from latentbench.io.store import Store

    a, b = _checkpoints(tmp_path / "runs", (0, 1))
    b_file = b / f"samples_tiny_{DATE}.jsonl"
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(*read_results("lm-eval", a))
        frame, report = read_results("lm-eval", b)
        with pytest.warns(DataWarning, match="names other weights") as caught:
            result = store.ingest(frame, report, duplicates="latest")
        assert result["n_replaced"] == 2
        (note,) = [n for n in report.notes if "other weights" in n]
        assert str(caught[0].message) == note
        assert "(revision='step2000' in " in note and ", stored revision='step1000' in " in note
        # a's run again (step1000), every doc scored otherwise than b's stored rows
        with pytest.raises(InputError) as err:
            store.ingest(*read_results("lm-eval", a))
        message = str(err.value)
        assert f"{b_file} (lm-eval 0.4.13) is stored with " in message
        assert "than the stored one (revision='step1000', stored revision='step2000')" in message
        # a step1000 run that agrees with b's stored rows
        c = _run(
            tmp_path / "runs",
            "c",
            {"model": "hf", "model_args": "pretrained=EleutherAI/pythia-160m,revision=step1000"},
            "EleutherAI/pythia-160m",
        )
        (c / f"samples_tiny_{DATE}.jsonl").write_text(b_file.read_text())
        frame, report = read_results("lm-eval", c)
        with pytest.warns(DataWarning, match="names other weights"):
            assert store.ingest(frame, report)["n_present"] == 2
        (note,) = [n for n in report.notes if "other weights" in n]
        assert f"stored revision='step2000' in {b_file})" in note
