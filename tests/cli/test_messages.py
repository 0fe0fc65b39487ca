"""Messages that used to mislead (issue 30, item 14): each names the real problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def responses(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("responses") / "wide.csv"
    rows = ["model," + ",".join(f"q{j}" for j in range(8))]
    rows += [f"m{k}," + ",".join(str((k + j) % 3 % 2) for j in range(8)) for k in range(6)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _refused(outcome) -> str:
    assert outcome.exit_code == 2, (outcome.output, outcome.exception)
    assert outcome.output.count("error:") == 1 and "Traceback" not in outcome.output
    return outcome.output


def test_fit_holdout_hiding_every_cell_says_so_not_every_cell_missing(tmp_path, responses):
    text = _refused(
        runner.invoke(
            app, ["fit", str(responses), "--holdout", "0.999", "--out", str(tmp_path / "f"), "-q"]
        )
    )
    assert "every cell is missing" not in text
    assert "0.999" in text and "hides all 48 observed cells" in text


def test_report_items_matching_none_of_the_fit_is_an_error(tmp_path, responses):
    fit = tmp_path / "fit"
    assert runner.invoke(app, ["fit", str(responses), "--out", str(fit), "-q"]).exit_code == 0
    meta = tmp_path / "meta.csv"
    meta.write_text("item,topic\nQ1,a\nQ2,b\n")  # upper case: not the fit's ids
    text = _refused(
        runner.invoke(
            app, ["report", str(fit), "--items", str(meta), "--out", str(tmp_path / "r.html")]
        )
    )
    assert "none of its 2 item ids" in text and "'Q1'" in text and "'q0'" in text
    meta.write_text("item,topic\nq1,a\nq2,b\n")
    outcome = runner.invoke(
        app, ["report", str(fit), "--items", str(meta), "--out", str(tmp_path / "r.html")]
    )
    assert outcome.exit_code == 0, outcome.output
    assert "6 of the fit's 8 items have no metadata" in outcome.output


def test_live_progress_never_prints_a_leader_estimate_outside_the_score_range():
    # a doubly robust mean is unbiased and can be negative after few cells; the line printed
    # "-0.031 [0.000, 0.304]", the estimate outside its own (clipped) interval
    import numpy as np

    from latentbench.cli._select_live import _progress_line
    from latentbench.select.live import LiveProgress
    from latentbench.select.live._durable import _leader

    class Policy:
        def estimates(self):
            return np.array([-0.031, -0.2])

        def intervals(self):
            return np.array([0.0, 0.0]), np.array([0.304, 0.1])

    leader = _leader(Policy(), ["m", "n"], started=True)
    p = LiveProgress(call=9, phase="loop", model="m", n_new=8, n_replayed=0, n_errors=0,
                     paid_total=80, replayed_total=0, revealed=80, planned=400,
                     **leader)  # fmt: skip
    assert "leader m 0.000 [0.000, 0.304]" in _progress_line(p)


def test_selection_lines_say_what_they_leave_out():
    # "20,399 of 20,400 (100.0% ...)" with a cell unrevealed; a table of 10 of 36 models
    # without a word; a certified best of the candidates read as the file's best
    from latentbench.cli._select import certificate_line
    from latentbench.select import SelectionRecord
    from latentbench.select._record import share_text

    assert share_text(20_399, 20_400) == ">99.9%" and share_text(1, 1) == "100.0%"
    assert share_text(1, 5000) == "<0.1%" and share_text(216, 1000) == "21.6%"
    arms = [{"model": f"m{i}", "estimate": 0.5 + i / 100, "lower": 0.4, "upper": 0.9,
             "n_observed": 10} for i in range(3)]  # fmt: skip
    data = {"arms": arms, "best_model": "m2", "certified": True, "params": {"delta": 0.05,
            "history": {"source": "random half of f.csv (seed 0)"}}}  # fmt: skip
    line = certificate_line(SelectionRecord.from_dict(data))
    assert line.startswith("best m2: certified at delta = 0.05 among the 3 candidates")
    data["params"]["history"] = {"source": "hist.csv"}
    assert "candidates" not in certificate_line(SelectionRecord.from_dict(data))


def test_the_selection_table_says_it_shows_the_top_rows(capsys):
    from latentbench.cli._select import print_selection_table
    from latentbench.select import SelectionRecord

    arms = [{"model": f"m{i:02d}", "estimate": i / 40, "n_observed": 5} for i in range(12)]
    print_selection_table(SelectionRecord.from_dict({"arms": arms, "policy": "pulse"}))
    assert "top 10 of 12 models by estimate" in " ".join(capsys.readouterr().out.split())


def test_selection_option_errors_use_the_flags():
    from latentbench.cli._common import cli_spelling

    assert cli_spelling("batch_size=0; expected a positive integer") == (
        "--batch-size 0; expected a positive integer"
    )
    assert cli_spelling("max_iter=-5; expected an integer >= 1").startswith("--max-iter -5")
    text = cli_spelling(
        "stop='confidence' (the default without a budget: stop when the best is certified) "
        "needs ...: give a budget, or stop='budget' to evaluate every cell"
    )
    assert text.startswith("--stop confidence (the default") and "--stop budget" in text
    # it printed "epsilon=0.01 applies ... with --stop 'budget'; expected stop='confidence'
    # (...) or epsilon=0": half flags, half keywords
    text = cli_spelling(
        "epsilon=0.01 applies to a certificate, and 'ucbe' has none with stop='budget'; "
        "expected stop='confidence' (a betting certificate on its revealed cells) or epsilon=0"
    )
    assert text == (
        "--epsilon 0.01 applies to a certificate, and 'ucbe' has none with --stop budget; "
        "expected --stop confidence (a betting certificate on its revealed cells) or --epsilon 0"
    )


def test_a_resumed_live_progress_line_gives_the_run_s_figures_side_by_side():
    """A resumed session replaying its stored cells printed 'spent 56' (the run's) beside
    'initial batch 8/32, then budget 96' (the session's)."""
    from latentbench.cli._select_live import _progress_line
    from latentbench.select.live import LiveProgress

    p = LiveProgress(call=0, phase="init", model="m", n_new=0, n_replayed=8, n_errors=0,
                     paid_total=56, replayed_total=8, revealed=8, planned=128,
                     stored_before=56)  # fmt: skip
    line = _progress_line(p, init_total=32)
    assert "run: spent 56, budget left 72 of 96" in line, line
    assert p.budget_left == 72
    fresh = LiveProgress(call=1, phase="init", model="m", n_new=8, n_replayed=0, n_errors=0,
                         paid_total=16, replayed_total=0, revealed=16, planned=128)  # fmt: skip
    assert "run: spent 16, initial batch 16/32, then budget 96" in _progress_line(fresh, 32)
