"""lighteval task names across versions line up.

The names are those of real lighteval detail files (huggingface/lighteval
``tests/reference_details/SmolLM2-1.7B-Instruct-transformers/`` at 3fd1526 and its history:
``details_lighteval|agieval:aqua-rat|0_2025-09-19T09-39-12.454826.parquet``,
``details_agieval__aqua-rat__0_2025-11-05T14-43-47.148527.parquet``,
``details_agieval:aqua-rat|0_2026-09-28T18-43-45.261389.parquet``). Their contents are Git LFS
objects that are not available here, so the parquet files are written in the two row layouts
(struct >= 0.11, flat <= 0.10) by this test. Real files of lighteval 0.10.0 and 0.13.0 are
tested in ``test_real_lighteval.py``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from latentbench.io.formats import read_results
from latentbench.io.formats._lighteval import canonical_task

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

REAL_NAMES = {
    "lighteval|agieval:aqua-rat|0": "agieval:aqua-rat|0",
    "agieval__aqua-rat__0": "agieval:aqua-rat|0",
    "agieval:aqua-rat|0": "agieval:aqua-rat|0",
    "leaderboard|arc:challenge|25": "arc:challenge|25",
    "arc__challenge__25": "arc:challenge|25",
    "bigbench_hard__causal_judgment__3": "bigbench_hard:causal_judgment|3",
    "bigbench_hard:causal_judgment|3": "bigbench_hard:causal_judgment|3",
    "gsm8k_test__0": "gsm8k_test|0",
    "gsm8k_test|0": "gsm8k_test|0",
    "mmmu_pro__standard-4__0": "mmmu_pro:standard-4|0",
    "lighteval|mmmu_pro:standard-4|0": "mmmu_pro:standard-4|0",
    "lighteval|anli:r1|0|0": "anli:r1|0",  # <= 0.10 with the truncate-few-shots flag
    "anli:r1|0": "anli:r1|0",
}


@pytest.mark.parametrize(("raw", "canonical"), sorted(REAL_NAMES.items()))
def test_canonical_task_names(raw, canonical):
    assert canonical_task(raw) == canonical


SCORES = [1.0, 0.0, 1.0]


def _struct(path: Path) -> None:
    table = pa.table(
        {
            "doc": [{"id": str(i), "query": f"q{i}"} for i in range(3)],
            "metric": [{"acc": s} for s in SCORES],
        }
    )
    pq.write_table(table, path)


def _flat(path: Path) -> None:
    pq.write_table(
        pa.table({"example": ["q0", "q1", "q2"], "metrics": [{"acc": s} for s in SCORES]}), path
    )


def test_runs_of_three_versions_line_up(tmp_path):
    model = tmp_path / "details" / "HuggingFaceTB" / "SmolLM2-1.7B-Instruct"
    runs = {
        "2025-09-19T09-39-12.454826": ("lighteval|agieval:aqua-rat|0", _flat),
        "2025-11-05T14-43-47.148527": ("agieval__aqua-rat__0", _struct),
        "2026-09-28T18-43-45.261389": ("agieval:aqua-rat|0", _struct),
    }
    for stamp, (task, write) in runs.items():
        folder = model / stamp
        folder.mkdir(parents=True)
        write(folder / f"details_{task}_{stamp}.parquet")
    frame, report = read_results("lighteval", tmp_path)
    # three runs of one task: one benchmark; the two struct runs name items by doc.id and
    # their same values are kept once; the flat (<= 0.10) run names them by query (its rows
    # are in processing order, not dataset order: see test_real_lighteval.py), so its rows
    # do not line up with the doc ids
    assert set(frame["benchmark"]) == {"agieval:aqua-rat|0"}
    by_id = dict(zip(frame["item"], frame["score"], strict=True))
    query_ids = [hashlib.sha256(q.encode()).hexdigest()[:16] for q in ("q0", "q1", "q2")]
    assert by_id == dict(zip(["0", "1", "2", *query_ids], SCORES + SCORES, strict=True))
    assert report.records_read == 9
    assert report.records_read == report.rows + sum(report.dropped.values())
