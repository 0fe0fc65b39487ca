"""``model=NAME`` (``ingest --model NAME``) names every row one model: given the files of
several models, their answers to one item were kept once where they agreed (unsaid) and, where
they differed, refused with the advice to choose ``duplicates="latest"`` or ``"mean"``, which
keeps one model's answer or mixes two models'. The refusal now names the files' models and
the cause, and the read of several models under one name is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io.formats import read_results

DATE = "2024-05-01T12-30-45.123456"


def _run(folder: Path, model: str, scores: list[float]) -> None:
    folder.mkdir(parents=True)
    lines = [
        json.dumps(dict(doc_id=i, doc={}, target=0, filter="none", metrics=["acc"], acc=s))
        for i, s in enumerate(scores)
    ]
    (folder / f"samples_t_{DATE}.jsonl").write_text("\n".join(lines) + "\n")
    results = {"results": {"t": {}}, "model_name": model, "lm_eval_version": "0.4.9"}
    (folder / f"results_{DATE}.json").write_text(json.dumps(results))


def test_one_name_for_two_models_that_disagree_is_refused_naming_them(tmp_path):
    _run(tmp_path / "a", "org/a", [1.0, 0.0, 1.0])
    _run(tmp_path / "b", "org/b", [1.0, 1.0, 1.0])
    with pytest.raises(InputError) as caught:
        read_results("lm-eval", tmp_path, model="X")
    said = str(caught.value)
    assert "give different scores (0.0 and 1.0) for model 'X'" in said
    assert "the files name the models 'org/a' and 'org/b'" in said
    assert "model=NAME gave every row one name" in said and "latest" not in said
    # one model's two runs, without model=: the advice to resolve the conflict stays
    _run(tmp_path / "again", "org/a", [0.0, 0.0, 1.0])
    with pytest.raises(InputError, match=r'choose duplicates="latest" or duplicates="mean"'):
        read_results("lm-eval", [tmp_path / "a", tmp_path / "again"])


def test_one_name_for_two_models_is_said(tmp_path):
    _run(tmp_path / "a", "org/a", [1.0, 0.0, 1.0])
    _run(tmp_path / "b", "org/b", [1.0, 0.0, 1.0])  # they agree: kept once, unsaid before
    with pytest.warns(DataWarning, match=r"model='X' names the rows of 2 models of the files "
                      r"\('org/a', 'org/b'\) as one model"):  # fmt: skip
        frame, report = read_results("lm-eval", tmp_path, model="X")
    assert len(frame) == 3 and set(frame["model"]) == {"X"}
    assert any("names the rows of 2 models" in note for note in report.notes)
    _run(tmp_path / "c", "org/c", [0.0, 0.0, 0.0])
    with pytest.warns(DataWarning, match=r"names the rows of 3 models"):
        read_results("lm-eval", tmp_path, model="X", duplicates="latest")


def test_one_model_renamed_is_not_said(tmp_path, recwarn):
    _run(tmp_path / "a", "org/a", [1.0, 0.0, 1.0])
    frame, report = read_results("lm-eval", tmp_path, model="X")
    assert set(frame["model"]) == {"X"} and set(frame["source_model"]) == {"org/a"}
    assert not any("names the rows" in note for note in report.notes)
