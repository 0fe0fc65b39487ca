"""A real OpenCompass run folder (main of 2024-03, between 0.2.3 and 0.2.4) run without
``--dump-eval-details``: ``results/<model>/<dataset>.json`` holds only the aggregate, and the
``predictions/`` file beside it holds no correctness field. Source and trimming:
``tests/data/formats/README.md``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from latentbench.exceptions import InputError
from latentbench.io.formats import read_results

RUN = (
    Path(__file__).parent.parent
    / "data"
    / "formats"
    / "real"
    / "opencompass"
    / "main-2024-03"
    / "20240325_005751"
)
MODEL = (
    "opencompass.models.huggingface.HuggingFace_lesliehd_Mistral-7B-Instruct-v0.2-16-bit-quantized"
)
RESULTS = RUN / "results" / MODEL / "lukaemon_mmlu_abstract_algebra.json"
PREDICTIONS = RUN / "predictions" / MODEL / "lukaemon_mmlu_abstract_algebra.json"


def test_the_fixture_is_what_opencompass_wrote():
    """The results file is the aggregate only; the predictions entries have no correctness."""
    assert json.loads(RESULTS.read_text()) == {"accuracy": 30.0}
    entries = json.loads(PREDICTIONS.read_text(encoding="utf-8"))
    assert list(entries) == ["0", "1"]
    for entry in entries.values():
        assert {"prediction", "gold"} <= set(entry)
        assert not {"correct", "is_correct", "cascade_correct"} & set(entry)


def test_run_without_eval_details_is_refused_naming_the_results_file():
    """The run folder is read through results/ only (predictions/ is not taken for results),
    and the aggregate-only file is refused with the option that would have written details."""
    with pytest.raises(InputError) as caught:
        read_results("opencompass", RUN)
    message = str(caught.value)
    assert re.search(
        re.escape(str(RESULTS)) + r": field 'details' is missing.*--dump-eval-details", message
    )


def test_predictions_file_is_refused():
    with pytest.raises(InputError, match=r"predictions file holds no correctness"):
        read_results("opencompass", PREDICTIONS)
