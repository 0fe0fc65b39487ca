"""Library messages spell Python keywords; the command line rewrites them into its flags.

Before: some messages of the Python twins named CLI flags only (``read_results`` said "choose
one with --metric NAME", ``Store.matrix`` "another --benchmark or --metric", ...), options a
Python user cannot pass. Each case below raises (or returns) the library's message from
Python, checks that it names no ``--flag``, and that the command line's rewriting
(:func:`latentbench.cli._common.cli_spelling`, which ``fail`` and the warnings go through)
gives the CLI message exactly as it was.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from latentbench.cli._common import cli_spelling
from latentbench.exceptions import DataWarning, InputError

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
_FLAG = re.compile(r"(?<![\w`-])--[a-z]")
# a Python keyword left in a CLI text: ``delta=)``, ``(task=, --task)``, ``weights=)``,
# ``group='mmlu'``, ``model_a=`` (not a quoted ``'mmlu=NAME'``, a flag's value)
_KEYWORD = re.compile(r"(?<![\w'\"-])[a-z_]+=(?:$|[\s),;'\"]|NAME\b|DESIGN\b|MATRIX\b|FILE\b)")


def _raised(call: Callable[[], object]) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return str(caught.value)


def _several_metrics(tmp_path: Path) -> str:
    from latentbench.io import read_results

    return _raised(lambda: read_results("lighteval", FORMATS / "lighteval" / "details"))


def _several_scorers(tmp_path: Path) -> str:
    from latentbench.io import read_results

    # Inspect's scorer is chosen with filter= (--filter)
    return _raised(lambda: read_results("inspect", FORMATS / "inspect" / "logs"))


def _several_metrics_quoted(tmp_path: Path) -> str:
    from latentbench.io.formats._common import resolve

    # a benchmark name with a quote: repr'd in Python, given as is on the command line
    return _raised(lambda: resolve("metric", None, "it's", ["a", "b"], "r.json"))


def _lm_eval_without_task(tmp_path: Path) -> str:
    from latentbench.io import read_results

    path = tmp_path / "pretrained__x_task.jsonl"
    path.write_text('[{"doc_id": 0, "acc": 1}]')
    return _raised(lambda: read_results("lm-eval", path))


def _trials_of_two_files(tmp_path: Path) -> str:
    from latentbench.io import read_results
    from latentbench.io.store import Store

    rows = {"judge": "1,0\n", "other": "0,1\n"}
    with Store(tmp_path / "s.duckdb") as db:
        for name, row in rows.items():
            path = tmp_path / f"{name}.csv"
            score, trial = row.strip().split(",")
            path.write_text(f"model,item,score,trial\nm1,q1,{score},{trial}\nm2,q1,1,{trial}\n")
            db.ingest(*read_results("table", path, benchmark="b"))
        return _raised(lambda: db.matrix("b"))


def _design_without_task(tmp_path: Path) -> str:
    from latentbench.select import lm_eval_samples

    design = pd.DataFrame({"item": ["12"], "order": [1], "probability": [1.0]})
    return _raised(lambda: lm_eval_samples(design))


def _design_at_another_delta(tmp_path: Path) -> str:
    from latentbench.select._estimate import _design_delta_note

    design = pd.DataFrame({"item": ["q1"], "delta": [0.05], "precision": [0.08]})
    (note,) = _design_delta_note(design, "items", 0.1, "estimate")
    return note


def _item_metadata_missing(tmp_path: Path) -> str:
    from latentbench.report import read_item_metadata

    return _raised(lambda: read_item_metadata(tmp_path / "meta.csv"))


def _tiny_delta_without_precision(tmp_path: Path) -> str:
    from latentbench.select import tiny

    return _raised(lambda: tiny(tmp_path / "cal", 5, delta=0.1))


def _group_advice(tmp_path: Path) -> str:
    from latentbench.select._estimate import _tool_advice

    return _tool_advice("mmlu", {"tool": "lm-eval"}, grouped=True)


def _group_hint(tmp_path: Path, group: str | None, ids: list[str]) -> str:
    from types import SimpleNamespace

    from latentbench.select._estimate import _group_hint

    cal = SimpleNamespace(item_ids=["mmlu/1", "2"], labels={"benchmark": "mmlu"})
    attrs = {"read": {"tool": "lm-eval", "group": group}, "labels": {"benchmark": "mmlu"}}
    return _group_hint(ids, cal, attrs)  # type: ignore[arg-type]


def _design_given_as_responses(tmp_path: Path) -> str:
    from latentbench.select import read_responses

    path = tmp_path / "items.csv"
    path.write_text("item,order,probability\nq1,1,0.5\n")
    return _raised(lambda: read_responses(path))


def _design_drawn_with_weights(tmp_path: Path) -> str:
    from latentbench.select._estimate import _check_design_weights

    design = pd.DataFrame({"item": ["q1"], "weights_hash": ["ab12"], "target": ["w"]})
    return _raised(lambda: _check_design_weights(design, "items.csv", None, "estimate"))


def _design_without_its_hash(tmp_path: Path) -> str:
    from latentbench.select._estimate import _check_design_weights

    design = pd.DataFrame({"item": ["q1"], "target": ["w"]})
    return _raised(lambda: _check_design_weights(design, "items.csv", None, "estimate"))


def _a_store_without_benchmark(tmp_path: Path) -> str:
    from latentbench.select import load_calibration

    (tmp_path / "s.duckdb").write_bytes(b"")
    return _raised(lambda: load_calibration(tmp_path / "s.duckdb"))


def _live_models_unnamed(tmp_path: Path) -> str:
    from types import SimpleNamespace

    from latentbench.select._compare_live import _two_models

    cfg = SimpleNamespace(model_ids=["a", "b", "c"], source="run.toml")
    return _raised(lambda: _two_models(cfg, None, None))  # type: ignore[arg-type]


def _live_models_the_same(tmp_path: Path) -> str:
    from types import SimpleNamespace

    from latentbench.select._compare_live import _two_models

    cfg = SimpleNamespace(model_ids=["a", "b", "c"], source="run.toml")
    with pytest.MonkeyPatch.context() as patch:  # the configured-model check: not this test's
        patch.setattr("latentbench.select._compare_live._chosen_model", lambda *a: None)
        return _raised(lambda: _two_models(cfg, "a", "a"))  # type: ignore[arg-type]


def _lm_eval_model_unnamed(tmp_path: Path) -> str:
    from latentbench.io.formats._lm_eval import _unnamed

    return str(_unnamed(tmp_path / "results.json", {"model": "hf", "model_args": ""}, "x"))


def _candidates_in_the_history(tmp_path: Path) -> str:
    import numpy as np

    from latentbench.io import ResponseMatrix
    from latentbench.select._replay import _given_history

    def matrix(models: list[str]) -> ResponseMatrix:
        return ResponseMatrix(np.eye(len(models), 3), model_ids=models, item_ids=["a", "b", "c"])

    with pytest.warns(DataWarning, match="holds 1 of the 2 candidates"):
        split = _given_history(matrix(["x", "y"]), matrix(["x", "z", "q"]), None, None, {})
    return split.note  # the warning's text, after the history's own line


def _output_folder_is_a_file(tmp_path: Path) -> str:
    from latentbench.io._outputs import write_directory

    (tmp_path / "est").write_text("")
    return _raised(lambda: write_directory(tmp_path / "est", {}, last="estimate.json"))


_TWO_METRICS = FORMATS / "real" / "lm-eval" / "v0.4.13.dev0" / "Qwen__Qwen3-8B"
"""Two lm-eval tasks, acc on one and exact_match on the other."""


def _group(**options: object) -> Callable[[Path], str]:
    """``read_results`` of the two tasks read as the group ``options["group"]``, refused."""

    def make(tmp_path: Path) -> str:
        from latentbench.io import read_results

        return _raised(lambda: read_results("lm-eval", _TWO_METRICS, **options))  # type: ignore[arg-type]

    return make


CASES = {
    "read_results: a blank group name": (
        _group(group=" "),
        "group=' '; expected a benchmark name",
        "--group ' '; expected a benchmark name",
    ),
    "read_results: a group and a benchmark": (
        _group(group="n", benchmark="x"),
        "benchmark='x' and group='n': benchmark renames one task, group reads several as one "
        "benchmark",
        "--benchmark x and --group n: --benchmark renames one task, --group reads several as "
        "one benchmark",
    ),
    "read_results: a group's tasks read with different metrics": (
        _group(group="n"),
        "group='n': its 2 tasks were read with different metrics",
        "--group n: its 2 tasks were read with different metrics",
    ),
    "read_results: a group's metric that a task lacks": (
        _group(group="my group", metric="acc"),
        "group='my group': metric='acc' was given, but 1 of its 2 tasks have no metric 'acc'",
        "--group 'my group': --metric acc was given, but 1 of its 2 tasks have no metric 'acc'",
    ),
    "read_results: several metrics": (
        _several_metrics,
        "'arc:challenge|25' has several metrics (acc, acc_norm); choose one with metric=NAME "
        "or metric={'arc:challenge|25': NAME}",
        "'arc:challenge|25' has several metrics (acc, acc_norm); choose one with --metric "
        "NAME or --metric 'arc:challenge|25=NAME'",
    ),
    "read_results: several Inspect scorers": (
        _several_scorers,
        "'theory_of_mind' has several scorers (match, model_graded_fact); choose one with "
        "filter=NAME or filter={'theory_of_mind': NAME}",
        "'theory_of_mind' has several scorers (match, model_graded_fact); choose one with "
        "--filter NAME or --filter 'theory_of_mind=NAME'",
    ),
    "read_results: several metrics, a name with a quote": (
        _several_metrics_quoted,
        'r.json: "it\'s" has several metrics (a, b); choose one with metric=NAME or '
        'metric={"it\'s": NAME}',
        'r.json: "it\'s" has several metrics (a, b); choose one with --metric NAME or '
        "--metric 'it's=NAME'",
    ),
    "read_results: lm-eval file without a task": (
        _lm_eval_without_task,
        "pass benchmark=NAME",
        "pass --benchmark NAME",
    ),
    "Store.matrix: trials of two files": (
        _trials_of_two_files,
        "ingest the other file under another benchmark= or metric=",
        "ingest the other file under another --benchmark or --metric",
    ),
    "lm_eval_samples: ids without a task": (
        _design_without_task,
        "items: item '12' names no task; expected TASK/ID ids (a benchmark ingested with "
        "group=), or give the lm-eval task of the benchmark (task=)",
        "items: item '12' names no task; expected TASK/ID ids (a benchmark ingested with "
        "--group), or give the lm-eval task of the benchmark (--task)",
    ),
    "estimate: a design sized at another delta": (
        _design_at_another_delta,
        "the interval is narrower than predicted; score it with delta=0.05, or size a design "
        "at this delta (tiny(..., precision=H, delta=0.1))",
        "the interval is narrower than predicted; score it with --delta 0.05, or size a "
        "design at this delta (tiny --precision H --delta 0.1)",
    ),
    "read_item_metadata: no such file": (
        _item_metadata_missing,
        "items=",
        "--items ",
    ),
    # the command line refuses --delta without --precision itself, in its own words
    "tiny: delta without precision": (
        _tiny_delta_without_precision,
        "give precision=, or drop delta (estimate's delta= sets the interval's own)",
        "",
    ),
    "estimate: results read without the calibration's group": (
        _group_advice,
        "read them with that group name (group='mmlu')",
        "read them with that group name (--group mmlu)",
    ),
    "estimate: results read without a group, the calibration's ids TASK/ID": (
        lambda tmp_path: _group_hint(tmp_path, None, ["1"]),
        "read these results the same way (group='mmlu')",
        "read these results the same way (--group mmlu)",
    ),
    "estimate: results read as a group, the calibration's ids a task's own": (
        lambda tmp_path: _group_hint(tmp_path, "g", ["g/2"]),
        "but the calibration's are one task's own ('mmlu/1'): read them without group=",
        "but the calibration's are one task's own ('mmlu/1'): read them without --group",
    ),
    "read_responses: a design given as the responses": (
        _design_given_as_responses,
        "give it as the design (items=FILE) and the model's results",
        "give it as the design (--items FILE) and the model's results",
    ),
    "estimate: a weighted design scored without weights": (
        _design_drawn_with_weights,
        "pass the same weights (weights=): without them",
        "pass the same weights (--weights W.csv): without them",
    ),
    "estimate: a weighted design without its weights_hash": (
        _design_without_its_hash,
        "use the file tiny wrote, with the same weights (weights=)",
        "use the file tiny wrote, with the same weights (--weights W.csv)",
    ),
    "load_calibration: a store without a benchmark": (
        _a_store_without_benchmark,
        "give the benchmark to calibrate on (load_calibration(STORE, benchmark=NAME))",
        "give the benchmark to calibrate on (--store STORE --benchmark NAME)",
    ),
    "compare_live: three models, none named": (
        _live_models_unnamed,
        "name the two to compare with model_a= and model_b= (models: a, b, c)",
        "name the two to compare with --a and --b (models: a, b, c)",
    ),
    "compare_live: one model twice": (
        _live_models_the_same,
        "model_a and model_b are both 'a'; expected two models of run.toml",
        "--a and --b are both 'a'; expected two models of run.toml",
    ),
    "read_results: an lm-eval model without a name": (
        _lm_eval_model_unnamed,
        "pass model=NAME to name the model of these files",
        "pass --model NAME to name the model of these files",
    ),
    "replay: candidates inside the history file": (
        _candidates_in_the_history,
        "2 candidates; history (the history matrix) holds 1 of the 2 candidates",
        "2 candidates; --history (the history matrix) holds 1 of the 2 candidates",
    ),
    "EstimateResult.save: the folder is a file": (
        _output_folder_is_a_file,
        "is a file; expected a directory (new or to reuse)",
        "--out ",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_python_message_spells_keywords_and_the_cli_its_flags(case, tmp_path):
    make, python_text, cli_text = CASES[case]
    said = make(tmp_path)
    assert python_text in said, said
    # the command a design came from is its provenance, also in estimate.json: not advice
    provenance = re.sub(r"\b(sized by|drawn by|as) tiny --(precision|weights)\b", "", said)
    assert not _FLAG.search(provenance), said
    assert cli_text in cli_spelling(said), cli_spelling(said)
    # the command line's text names flags only (no keyword beside its flag)
    if cli_text:  # (a message the command line says in its own words: not rewritten)
        assert not _KEYWORD.search(cli_spelling(said)), cli_spelling(said)


def test_the_cli_rewrites_the_remaining_python_spellings_as_it_said_them():
    """Messages too costly to raise here (a calibration whose models answered none of a
    design's items): their Python spelling is rewritten into the CLI's, as it was."""
    said = "the half-width cannot be predicted; give ..., or choose k by hand (k=)"
    assert cli_spelling(said) == (
        "the half-width cannot be predicted; give ..., or choose k by hand (--k)"
    )
    said = "(no interval: with 12 runs, ...; seeds=20 or more give one)"  # DemoResult.summary
    assert cli_spelling(said) == "(no interval: with 12 runs, ...; --seeds 20 or more give one)"
    said = "cannot write d: ...; expected it free: wait until that run ends, or give this one "
    for keyword in ("out=", "directory="):
        assert cli_spelling(said + "another " + keyword) == said + "another --out"


def test_the_cli_rewrites_advice_that_named_both_spellings_into_flags_only():
    """Before: these library texts named the flag beside the keyword ("(--k, k=)",
    "(items=DESIGN; --items DESIGN.csv)", "(tiny(..., weights=))" beside `latentbench tiny
    --weights`), which the command line printed as they were. The library's text (too costly
    to raise here) now names the keyword only, and the command line its flag only."""
    from latentbench.select import _estimate, _estimate_compare

    cases = {
        # tiny(precision=) on a calibration that keeps no answers
        "the fit was made from (responses=MATRIX), calibrate on the matrix file or a store's "
        "benchmark (load_calibration(STORE, benchmark=NAME)) instead, or choose k by hand "
        "(k=)": "the fit was made from (--responses MATRIX_FILE), calibrate on the matrix "
        "file or --store --benchmark instead, or choose k by hand (--k)",
        # a plain design scored with weights
        "; make the design with tiny(..., weights=) for a weighted score, or drop weights=": (
            "; make the design with `latentbench tiny --weights` for a weighted score, or "
            "drop --weights"
        ),
        # a pair that shares answers on some items only
        "pass the design (items=DESIGN) to compare the full-benchmark scores": (
            "pass the design (--items DESIGN.csv) to compare the full-benchmark scores"
        ),
        # a group's tasks read with different metrics (io.formats)
        "expected one metric for the group: choose it with metric=": (
            "expected one metric for the group: choose it with --metric"
        ),
    }
    sources = Path(_estimate.__file__).read_text() + Path(_estimate_compare.__file__).read_text()
    joined = re.sub(r'"\s+f?"', "", sources)  # the library's strings, their pieces joined
    for library, cli in cases.items():
        if "metric=" not in library:
            assert library in joined, library
        assert cli_spelling(library) == cli
        assert not _KEYWORD.search(cli), cli
    assert "(--k, k=)" not in joined and "; --items DESIGN.csv)" not in joined


def test_a_report_page_names_both_spellings():
    """A report page is the same file from Python and from the command line (nothing
    rewrites it): its advice names the keyword and the flag."""
    from latentbench.report._findings import (
        _certified_finding,
        _live_finding,
        _no_intervals_finding,
    )

    text = _live_finding({"run_id": "r2", "store": "s.duckdb", "runs_in_store": 2})["text"]
    assert "choose with run_id= in Python, --run-id on the command line" in text
    for finding in (_no_intervals_finding("uniform"), _certified_finding(2, 0.0, "95%")):
        assert (
            "stop='confidence' in Python, --stop confidence on the command line"
            in (finding["text"])
        )


def test_a_repeat_inside_one_file_and_one_from_another_file_are_told_apart(tmp_path):
    """Before: a key a file repeats with the same score was counted as the same observation
    'in another file or tool version'."""
    from latentbench.io import read_results

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("model,item,score\nm1,q1,1\nm1,q1,1\nm1,q2,0\n")
    b.write_text("model,item,score\nm1,q2,0\n")
    frame, report = read_results("table", [a, b], benchmark="lb")
    assert len(frame) == 2
    assert report.dropped == {
        "same observation repeated in one file (kept once)": 1,
        "same observation in another file or tool version (kept once)": 1,
    }


@pytest.mark.parametrize("benchmark", ["model", "tol", "n_boot"])
def test_a_benchmark_named_as_a_keyword_keeps_its_name_in_the_choice(benchmark):
    """The choice's rewrite ('--metric 'model=NAME'') went on through the later rewrites of
    Python keywords: a benchmark named ``model`` (or ``tol``) was advised as
    "--metric '--model NAME'", a flag that does not exist in that place."""
    from latentbench.io.formats._common import resolve

    message = _raised(lambda: resolve("metric", None, benchmark, ["a", "b"], "r.json"))
    assert cli_spelling(message) == (
        f"r.json: {benchmark!r} has several metrics (a, b); choose one with --metric NAME or "
        f"--metric '{benchmark}=NAME'"
    )


@pytest.mark.parametrize(
    "name", ["sweep-tol=1e-4", "run max_iter=50", "n_boot=9", "x(group=a)", "seed=3;"]
)
def test_a_user_name_with_a_keyword_inside_is_never_rewritten(name):
    """The rewrites read ``tol=`` or ``max_iter=`` inside a user's quoted name as the library's
    keyword: a model called ``sweep-tol=1e-4`` was printed as ``'sweep---tol 1e-4'``, a name
    the user never had. The ``=`` of a quoted name is the user's."""
    from latentbench.io.formats._common import resolve

    message = _raised(lambda: resolve("metric", None, name, ["a", "b"], "r.json"))
    assert f"r.json: {name!r} has several metrics" in cli_spelling(message)
    said = f"has no rows for model {name!r} (label={name!r}); budget=-1; expected 1 or more"
    assert cli_spelling(said) == (
        f"has no rows for model {name!r} (--label {shlex.quote(name)}); --budget -1; expected "
        "1 or more"
    )


@pytest.mark.parametrize("folder", ["sweep/max_iter=50", "max_iter=50/tol=1e-4", "/r/seed=3;x"])
def test_a_path_with_a_keyword_inside_is_never_rewritten(folder, tmp_path):
    """A folder named like a keyword (``runs/max_iter=50/``, a sweep's or a partition's
    spelling) was rewritten inside the path: ``runs/--max-iter 50/meta.csv``. Only the leading
    keyword of a path option (``items=PATH``) is the library's."""
    from latentbench.report import read_item_metadata

    path = f"{folder}/meta.csv"
    message = _raised(lambda: read_item_metadata(path))
    assert cli_spelling(message) == message.replace("items=", "--items ", 1)
    assert path in cli_spelling(message)
    assert cli_spelling(f"{path}: budget=0.5; expected") == f"{path}: --budget 0.5; expected"


@pytest.mark.parametrize("name", ["no_history", "lab/history_store", "x history_split"])
def test_a_name_or_path_holding_a_keyword_word_is_never_rewritten(name):
    """The keywords rewritten without an ``=`` (``no_history``, ``history_store``) were
    rewritten inside a user's model name and folder: ``latentbench ingest`` (which prints its
    load report through the rewrites) said a model ``'lab/history_store'`` in
    ``runs/no_history/`` as ``'lab/--history-store'`` in ``runs/--no-history/``."""
    note = f"runs/{name.replace(' ', '_')}/results.json: the model is {name!r} (model= sets it)"
    assert cli_spelling(note) == note.replace("model= sets it", "--model sets it")
    said = f"has no rows for model {name!r} (label={name!r}); no_history: expected"
    assert cli_spelling(said) == (
        f"has no rows for model {name!r} (--label {shlex.quote(name)}); --no-history: expected"
    )


@pytest.mark.parametrize("name", ["inspect_evals/gpqa", "meta-llama/Llama-3-8B"])
def test_a_quoted_name_with_a_slash_is_a_name_not_a_path(name):
    """A word with a slash was taken for a path even where the slash was inside a quoted
    name (an Inspect task, ``inspect_evals/gpqa``; a Hugging Face model, ``org/model``): the
    keyword before it was masked with the path, and the advice kept its Python spelling
    (``(label='org/m')``, ``choose one with metric=NAME or metric={...}``)."""
    from latentbench.io.formats._common import resolve

    message = _raised(lambda: resolve("metric", None, name, ["a", "b"], "r.json"))
    assert cli_spelling(message).endswith(
        f"choose one with --metric NAME or --metric '{name}=NAME'"
    )
    said = f"has no rows for model {name!r} (label={name!r}); budget=-1; expected 1 or more"
    assert cli_spelling(said) == (
        f"has no rows for model {name!r} (--label {name}); --budget -1; expected 1 or more"
    )
    assert cli_spelling(f"has no rows with metric={name!r}") == f"has no rows with --metric {name}"
    typo = f"metric {name}=acc: no benchmark {name!r} was read; expected one of 'x'"
    assert cli_spelling(typo) == "--" + typo


def test_a_windows_path_with_a_keyword_inside_is_never_rewritten():
    """A Windows path (backslashes) was not taken for a path: ``C:\\runs\\max_iter=50\\``
    was printed as ``C:\\runs\\--max-iter 50\\``."""
    from latentbench.report import read_item_metadata

    path = r"C:\runs\max_iter=50\meta.csv"
    message = _raised(lambda: read_item_metadata(path))
    assert cli_spelling(message) == message.replace("items=", "--items ", 1)
    assert path in cli_spelling(message)
    assert cli_spelling(f"{path}: budget=0.5; expected") == f"{path}: --budget 0.5; expected"
    folder = r"out=D:\sweep\tol=1e-4"
    said = f"{folder} is a file; expected a directory (new or to reuse)"
    assert cli_spelling(said) == said.replace("out=", "--out ", 1)


def test_a_path_with_spaces_keeps_a_keyword_of_its_middle_folder():
    """A folder with a space and a keyword in its name (``/data/my tol=1e-3 run/``) was cut
    into words, the middle one rewritten: ``--items /data/my --tol 1e-3 run/meta.csv``. The
    plain words between a path's word and a later one are the path's."""
    from latentbench.report import read_item_metadata

    for path in ["/data/my tol=1e-3 run/meta.csv", r"C:\my runs\max_iter=50 x\meta.csv"]:
        message = _raised(lambda path=path: read_item_metadata(path))
        assert cli_spelling(message) == message.replace("items=", "--items ", 1)
    # words between two paths of a sentence, or after a path's last word, are not a path's
    assert cli_spelling("runs/a: budget=3; or b/c") == "runs/a: --budget 3; or b/c"
    assert cli_spelling("'a/b' tol=1e-3 'c/d'") == "'a/b' --tol 1e-3 'c/d'"


def test_prose_with_a_slash_is_not_a_path_with_spaces():
    """``0/1`` or ``and/or`` in a sentence is no path: the keywords after it are the
    library's and are rewritten (the spaced-path rule read ``0/1 matrix and max_iter=50 see
    docs/x.md`` as one path and left ``max_iter=50`` in Python spelling)."""
    assert cli_spelling("a 0/1 matrix and max_iter=50 see docs/x.md") == (
        "a 0/1 matrix and --max-iter 50 see docs/x.md"
    )
    assert cli_spelling("and/or tol=1e-3 ok/no") == "and/or --tol 1e-3 ok/no"
    assert cli_spelling("./my runs/tol=1 x/y.csv: no such file") == (
        "./my runs/tol=1 x/y.csv: no such file"
    )


def test_a_store_value_no_row_holds_is_said_with_its_flag(tmp_path):
    """``export --metric nope`` said ``metric='nope': no row of the store has it`` on the
    command line; the library keeps the keyword, the CLI says the flag (and ``experiment``
    its own ``--benchmark-split``)."""
    from latentbench.io.formats import read_results
    from latentbench.io.store import Store

    table = tmp_path / "t.csv"
    pd.DataFrame({"model": ["m", "n"], "item": ["q", "q"], "score": [1.0, 0.0]}).to_csv(table)
    path = tmp_path / "s.duckdb"
    with Store(path) as db:
        db.ingest(read_results("table", [table], benchmark="b")[0])
        with pytest.raises(InputError) as said:
            db.export(tmp_path / "x.csv", metric="nope")
    assert "metric='nope': no row of the store has it" in str(said.value)
    assert f"{path}: --metric nope: no row of the store has it" in cli_spelling(str(said.value))
    for column, flag in (("filter", "--filter 'a b'"), ("split", "--split x")):
        value = "a b" if column == "filter" else "x"
        message = f"{path}: {column}={value!r}: no row of benchmark 'b' has it; stored ..."
        assert (
            cli_spelling(message) == f"{path}: {flag}: no row of benchmark 'b' has it; stored ..."
        )
