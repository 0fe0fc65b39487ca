"""OpenCompass output written by OpenCompass itself, 0.3.9 and 0.5.4 (tests/data/formats/README.md).

``tests/data/formats/make_opencompass_fixtures.py`` ran both versions offline on the same
small custom datasets: three API models at the same deterministic local chat server answer
``arith`` and ``mcq`` (generative), and a one-layer GPT-2 with seeded random weights answers
``mcq_ppl`` (perplexity, ``AccEvaluator``). The layouts differ:

- 0.3.9: ``details`` is a dict keyed ``"0"``, ``"1"``, ... with a bool ``correct``; ``arith``
  and ``mcq_ppl`` went through ``format_details`` (the ``"type": "GEN" | "PPL"`` marker moved
  to the top level), ``mcq`` kept the evaluator's own dict (``pred``, ``parsed``, ``refr``;
  the log says "Skip dumping details due to: 0").
- 0.5.4: ``details`` is a list of ``{"example_abbr": "<dataset>_<index>", ..., "correct":
  [...]}`` with one value per replica (``arith`` ran with ``n=2``), except ``mcq_ppl``:
  ``{"type": "PPL", "0": {..., "correct": bool}, ...}`` (``format_details``; the layout of
  issue 14's point 5).

The expected values are read from the raw files with ``json`` here, not with the reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results
from latentbench.io.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

ROOT = Path(__file__).resolve().parents[1] / "data" / "formats" / "opencompass"
VERSIONS = ("0.3.9", "0.5.4")
API_MODELS = ("alpha-api", "beta-api", "gamma-api")
PAIRS = [(m, d) for m in API_MODELS for d in ("arith", "mcq")] + [("tiny-gpt2-hf", "mcq_ppl")]
"""(model, dataset) of the results files with per-item correctness."""
UNSCORED = [(m, "mcq_acc") for m in API_MODELS]
"""``AccEvaluator`` gives no per-item details: OpenCompass wrote predictions only."""


def run_dir(version: str) -> Path:
    (run,) = (p for p in (ROOT / version).iterdir() if p.is_dir())
    return run


def raw_details(version: str, model: str, dataset: str) -> list[dict]:
    """The per-item entries of one results file (without a ``"type"`` marker)."""
    details = json.loads((run_dir(version) / "results" / model / f"{dataset}.json").read_text())[
        "details"
    ]
    if isinstance(details, dict):
        return [entry for key, entry in details.items() if key != "type"]
    return list(details)


def raw_cells(version: str) -> dict[tuple[str, str, str, int], float]:
    """(model, dataset, item, trial) -> correctness, straight from the results files."""
    cells: dict[tuple[str, str, str, int], float] = {}
    for model, dataset in PAIRS:
        details = json.loads(
            (run_dir(version) / "results" / model / f"{dataset}.json").read_text()
        )["details"]
        if isinstance(details, dict):  # 0.3.x: {"0": {..., "correct": bool}, ...}
            for key, entry in details.items():
                if key == "type":  # 0.5.4's PPL marker
                    assert (version, entry) == ("0.5.4", "PPL")
                    continue
                assert isinstance(entry["correct"], bool)
                cells[model, dataset, key, 0] = float(entry["correct"])
        else:  # 0.4+: [{"example_abbr": "<dataset>_<i>", "correct": [per replica]}, ...]
            for entry in details:
                prefix, index = entry["example_abbr"].rsplit("_", 1)
                assert prefix == dataset
                for trial, value in enumerate(entry["correct"]):
                    cells[model, dataset, index, trial] = float(value)
    return cells


@pytest.mark.parametrize("version", VERSIONS)
def test_every_cell_matches_the_raw_results_files(version):
    frame, report = read_results("opencompass", ROOT / version)
    mine = {
        (r.model, r.benchmark, r.item, r.trial): r.score
        for r in frame[["model", "benchmark", "item", "trial", "score"]].itertuples(index=False)
    }
    raw = raw_cells(version)
    assert mine == raw
    assert len(frame) == len(raw) == report.rows
    # rows in = rows stored + rows skipped with a reason: the unscored files are skipped
    # whole, each entry counted once
    assert report.records_read == report.rows + sum(report.dropped.values())
    skipped = sorted(
        (Path(s["file"]).parent.name, Path(s["file"]).stem) for s in report.skipped_files
    )
    assert skipped == sorted(UNSCORED)
    reasons = {s["reason"] for s in report.skipped_files}
    assert len(reasons) == 1 and "GEN details without a correctness field" in reasons.pop()
    unscored = [raw_details(version, model, dataset) for model, dataset in UNSCORED]
    assert all("correct" not in entry for entries in unscored for entry in entries)
    assert sum(report.dropped.values()) == sum(len(entries) for entries in unscored) > 0
    assert set(frame["metric"]) == {"correct"} and set(frame["filter"]) == {"none"}
    assert len(report.files) == len(PAIRS) + len(UNSCORED)
    stamp = run_dir(version).name  # YYYYMMDD_HHMMSS
    assert {t.strftime("%Y%m%d_%H%M%S") for t in frame["run_timestamp"]} == {stamp}


def test_the_ppl_files_carry_the_type_marker_where_each_version_puts_it():
    old = json.loads((run_dir("0.3.9") / "results" / "tiny-gpt2-hf" / "mcq_ppl.json").read_text())
    new = json.loads((run_dir("0.5.4") / "results" / "tiny-gpt2-hf" / "mcq_ppl.json").read_text())
    assert old["type"] == "PPL" and "type" not in old["details"]
    assert new["details"]["type"] == "PPL" and "type" not in new
    frame, _ = read_results("opencompass", ROOT / "0.5.4")
    assert sorted(frame.loc[frame["benchmark"] == "mcq_ppl", "item"]) == [str(i) for i in range(6)]


@pytest.mark.parametrize("version", VERSIONS)
def test_aggregate_scores_are_the_mean_of_the_items_in_percent(version):
    """The tool's own aggregate (percent, first numeric field) against the rows read."""
    frame, _ = read_results("opencompass", ROOT / version)
    for model, dataset in PAIRS:
        data = json.loads((run_dir(version) / "results" / model / f"{dataset}.json").read_text())
        aggregate = next(v for k, v in data.items() if k.startswith(("accuracy", "score")))
        rows = frame[(frame["model"] == model) & (frame["benchmark"] == dataset)]
        assert rows["score"].mean() * 100 == pytest.approx(aggregate)


def test_item_ids_name_the_same_example_in_both_versions():
    """Item ``k`` is the dataset's example ``k`` in both layouts: its prompt in the
    ``predictions/`` files is the same, and 0.5.4's replicas are the ``k``-th entry of each
    replica block of the predictions file."""
    for model, dataset in PAIRS[:-1]:  # the generative datasets (PPL has no origin_prompt)
        old = json.loads((run_dir("0.3.9") / "predictions" / model / f"{dataset}.json").read_text())
        new = json.loads((run_dir("0.5.4") / "predictions" / model / f"{dataset}.json").read_text())
        n_items = len(old)
        assert len(new) % n_items == 0
        for key, entry in old.items():
            assert new[key]["origin_prompt"] == entry["origin_prompt"]
        details = json.loads(
            (run_dir("0.5.4") / "results" / model / f"{dataset}.json").read_text()
        )["details"]
        for entry in details:
            index = int(entry["example_abbr"].rsplit("_", 1)[1])
            assert entry["pred"] == [
                new[str(index + replica * n_items)]["prediction"]
                for replica in range(len(new) // n_items)
            ]


def test_two_versions_store_each_result_once(tmp_path):
    """The same answers from OpenCompass 0.3.9 and 0.5.4 are one observation each; 0.5.4's
    second replica of ``arith`` is the only new data."""
    old, new = raw_cells("0.3.9"), raw_cells("0.5.4")
    assert {k: v for k, v in new.items() if k[3] == 0} == old
    with Store(tmp_path / "s.duckdb") as store:
        first = store.ingest(*read_results("opencompass", ROOT / "0.3.9"))
        second = store.ingest(*read_results("opencompass", ROOT / "0.5.4"))
        again = store.ingest(*read_results("opencompass", ROOT / "0.5.4"))
        stored = store.long("arith")
    assert first["n_new"] == len(old)
    assert second["n_present"] == len(old)
    assert second["n_new"] == len(new) - len(old) == sum(1 for k in new if k[3] == 1)
    assert again["n_new"] == 0
    assert {
        (r.model, r.item, r.trial): r.score
        for r in stored[["model", "item", "trial", "score"]].itertuples(index=False)
    } == {(m, i, t): v for (m, d, i, t), v in new.items() if d == "arith"}


def test_a_predictions_file_is_refused_with_the_reason():
    path = run_dir("0.5.4") / "predictions" / "alpha-api" / "mcq.json"
    with pytest.raises(InputError, match=r"predictions file holds no correctness"):
        read_results("opencompass", path)
