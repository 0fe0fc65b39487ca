"""``latentbench.select.replay`` (the twin of ``select replay``) and ``SelectionRecord``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.io.store import Store
from latentbench.select import SelectionRecord, replay

from .conftest import lowrank_data

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    Y, _, _, _ = lowrank_data(24, 120, r=2, seed=5)
    tmp = tmp_path_factory.mktemp("twin")
    models = [f"m{i:02d}" for i in range(24)]
    frame = pd.DataFrame(Y, index=models, columns=[f"q{j:03d}" for j in range(120)])
    long = frame.rename_axis("model").reset_index().melt(id_vars="model", var_name="item")
    long = long.rename(columns={"value": "score"})
    long[long.model.isin(models[:12])].to_parquet(tmp / "history.parquet")
    long[long.model.isin(models[12:])].to_parquet(tmp / "candidates.parquet")
    return tmp


def test_replay_function_equals_the_command(files):
    """The command is a shell over replay(): same arguments, same decisions."""
    kw = dict(policy="ucbe", budget=300, batch_size=10, init_batch=5, random_state=2)
    result = replay(files / "candidates.parquet", history=files / "history.parquet", **kw)
    out = files / "cmd"
    args = ["select", "replay", str(files / "candidates.parquet"), "--history"]
    args += [str(files / "history.parquet"), "--policy", "ucbe", "--budget", "300"]
    args += ["--batch-size", "10", "--init-batch", "5", "--seed", "2", "--out", str(out), "-q"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    data = json.loads((out / "selection.json").read_text())
    assert data["trace"]["best_index"] == result.trace_best.tolist()
    assert [a["n_observed"] for a in data["arms"]] == result.n_observed.tolist()
    assert result.params["history"]["history models"] == 12
    assert "which this policy does not use (it learns no proxy)" in result.params["history"]["note"]


def test_replay_takes_matrices_and_reports_stages(files):
    cand = ResponseMatrix.read(files / "candidates.parquet")
    hist = ResponseMatrix.read(files / "history.parquet")
    stages: list[str] = []
    result = replay(
        cand,
        history=hist,
        policy="pulse",
        budget=100,
        batch_size=10,
        init_batch=5,
        rank=2,
        progress=lambda phase, done, total: stages.append(phase),  # as fit's callback
    )
    assert stages[0] == "reading the responses" and "learning item factors" in stages[1]
    assert result.evaluations_post_init == 100 and "input" not in result.params["history"]
    with pytest.raises(InputError, match="exclude each other"):
        replay(cand, history=hist, no_history=True)
    with pytest.raises(InputError, match="go together"):
        replay(cand, history_store=files / "x.duckdb")


def test_record_reads_a_result_a_file_and_refuses_bad_ones(files, tmp_path):
    result = replay(
        files / "candidates.parquet",
        history=files / "history.parquet",
        policy="ucbe",
        budget=50,
        batch_size=10,
        init_batch=5,
    )
    path = tmp_path / "selection.json"
    result.to_json(path)
    from_file, from_result = SelectionRecord.read_json(path), SelectionRecord.from_result(result)
    assert from_file.best_model == from_result.best_model == str(result.best_id)
    assert from_file.evaluations_total == result.evaluations_total
    assert from_file.full_evaluation == 12 * 120
    assert from_file.share == pytest.approx(result.evaluations_total / (12 * 120))
    assert from_file.trace["best_index"] == result.trace_best.tolist()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"arms": [{"model": "a", "estimate": "high"}]}))
    with pytest.raises(InputError, match=r"bad.json: arms\[0\].estimate is 'high'"):
        SelectionRecord.read_json(bad)
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        SelectionRecord.read_json(bad)


def test_record_from_a_store_finished_or_not(tmp_path):
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        with pytest.raises(InputError, match="no selection runs stored"):
            SelectionRecord.from_store(store)
        store.start_selection({"n_items": 4}, run_id="r1")
        obs = pd.DataFrame(
            {
                "seq": [0, 1, 2],
                "model": ["a", "a", "b"],
                "item": ["1", "2", "1"],
                "score": [1.0, 0.0, None],
                "error": [None, None, "timeout"],
            }
        )
        store.add_observations("r1", obs)
    record = SelectionRecord.from_store(db)
    assert record.policy == "live (unfinished)" and record.best_model == "a"
    assert record.live_run is not None and record.live_run["failed_cells"] == 1
    assert record.n_items == 4 and record.evaluations_total == 3
    with Store(db) as store:
        final = {
            "phase": "final",
            "policy": "ucbe",
            "best_model": "b",
            "evaluations_total": 8,
            "arms": [{"model": "a", "estimate": 0.2}, {"model": "b", "estimate": 0.9}],
        }
        store.add_decision("r1", 5, final)
    record = SelectionRecord.from_store(db, "r1")
    assert (record.policy, record.best_model, record.evaluations_total) == ("ucbe", "b", 8)
    with pytest.raises(InputError, match="no run 'r9'; stored runs: r1"):
        SelectionRecord.from_store(db, "r9")


def test_old_option_spellings_warn_and_still_work(files):
    out = files / "alias"
    args = ["select", "replay", str(files / "candidates.parquet"), "--history"]
    args += [str(files / "history.parquet"), "--policy", "ucbe", "--budget", "20"]
    # --stop confidence: a certificate reads the delta (at a budget stop UCB-E has none, and
    # a delta other than 0.05 is refused there, whichever its spelling)
    args += ["--stop", "confidence", "--alpha", "0.2", "--out", str(out), "-q"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    assert "--alpha is deprecated; use --delta" in outcome.output
    helptext = runner.invoke(app, ["select", "replay", "--help"]).output
    assert "--delta" in helptext and "--alpha" not in helptext
    both = runner.invoke(app, [*args[:-3], "--delta", "0.1", "--out", str(files / "both"), "-q"])
    assert both.exit_code == 2 and "--alpha and --delta both given" in both.output
    assert not (files / "both").exists()


def test_the_record_holds_the_seed_the_missing_rule_and_the_history_file(tmp_path):
    # --missing zero (which changes each model's target), the seed and the history file's
    # hash were not recorded: the record could not be audited or rerun on its own
    import json

    import numpy as np
    import pandas as pd

    from latentbench.select import replay

    rng = np.random.default_rng(0)
    Y = (rng.random((30, 60)) < np.linspace(0.2, 0.8, 30)[:, None]).astype(float)
    cols = [f"q{j}" for j in range(60)]
    pool = pd.DataFrame(Y[:6], index=[f"m{i}" for i in range(6)], columns=cols)
    pool.iloc[0, :20] = np.nan
    hist = pd.DataFrame(Y[6:], index=[f"h{i}" for i in range(24)], columns=cols)
    pool.rename_axis("model").to_csv(tmp_path / "pool.csv")
    hist.rename_axis("model").to_csv(tmp_path / "hist.csv")
    result = replay(tmp_path / "pool.csv", history=tmp_path / "hist.csv", missing="zero",
                    random_state=5)  # fmt: skip
    params = json.loads(json.dumps(result.to_dict()["params"], default=str))
    assert params["seed"] == 5 and params["missing"] == "zero"
    record = params["history"]
    assert record["missing cells scored 0"] == 20
    assert "--missing zero: 20 missing candidate cell(s) are scored 0" in record["note"]
    from latentbench.io._files import file_sha256

    assert record["history_sha256"] == file_sha256(tmp_path / "hist.csv")
