"""``benchmark=`` replacing the files' benchmark names is reported by every reader.

Only the lm-eval reader filled ``LoadReport.renamed``: the others merged the items of several
tasks under one name without a word (Inspect: arc_challenge and theory_of_mind into one
benchmark of 18 rows; HELM: boolq and MMLU; EEE: two evaluations; lighteval's and
OpenCompass's tasks met as duplicate items, an error that did not say why).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
INSPECT = FORMATS / "inspect" / "logs"
HELM = FORMATS / "helm" / "benchmark_output" / "runs" / "v1"

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")


@pytest.mark.parametrize(
    ("source", "paths", "options", "names"),
    [
        ("inspect", [INSPECT], {"filter": "match"}, ("arc_challenge", "theory_of_mind")),
        ("helm", [FORMATS / "helm" / "benchmark_output"], {"metric": "exact_match"}, ("boolq",)),
        ("eee", [FORMATS / "real" / "eee"], {}, ("demo-source.demo_bench", "mmlu")),
        ("lighteval", [FORMATS / "lighteval" / "details"], {"metric": "acc"},
         ("arc:challenge|25", "gsm8k|0")),
    ],
)  # fmt: skip
def test_one_benchmark_name_over_several_tasks_is_refused_naming_them(
    source, paths, options, names
):
    with pytest.raises(InputError, match=r"benchmark='X': the files hold \d+ tasks") as caught:
        read_results(source, paths, benchmark="X", **options)
    for name in names:
        assert repr(name) in str(caught.value)
    read_results(source, paths, **options)  # without benchmark=: each keeps its name


@pytest.mark.parametrize(
    ("source", "path", "options", "original"),
    [
        ("inspect", INSPECT / "2025-02-02T09-00-00_theory-of-mind_openai.json",
         {"filter": "match"}, "theory_of_mind"),
        ("table", FORMATS / "table" / "long.csv", {}, "quiz"),
        ("opencompass", FORMATS / "opencompass" / "outputs" / "default" / "20240601_101010"
         / "results" / "internlm2-7b-hf" / "gsm8k.json", {}, "gsm8k"),
    ],
)  # fmt: skip
def test_one_renamed_task_is_in_the_report(source, path, options, original):
    frame, report = read_results(source, path, benchmark="X", **options)
    assert set(frame["benchmark"]) == {"X"}
    assert report.renamed == {"X": [original]}
    _, plain = read_results(source, path, **options)
    assert plain.renamed == {}


def test_table_files_of_one_benchmark_still_go_in_under_one_name(tmp_path):
    # a table without a benchmark column names none: its file stem is no task name
    for part in ("part1", "part2"):
        (tmp_path / f"{part}.csv").write_text(f"model,item,score\nm,{part}-q,1\n")
    frame, report = read_results("table", sorted(tmp_path.glob("*.csv")), benchmark="b")
    assert set(frame["benchmark"]) == {"b"} and len(frame) == 2 and report.renamed == {}
    both = tmp_path / "both.csv"
    both.write_text("model,benchmark,item,score\nm,t1,q,1\nm,t2,q,0\n")
    with pytest.raises(InputError, match=r"benchmark='b': the files hold 2 tasks \('t1', 't2'\)"):
        read_results("table", both, benchmark="b")
