"""A new user's first hour (issue 16): one test per friction point of the command line.

Each test pins a behaviour the old command line got wrong: ``--version`` failed, flags showed
``<bool>``, no examples, eager imports, silent overwrite, raw warnings with file paths, a long
table with a ``correct`` column read as wide, errors naming positions and Python spellings.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench import __version__
from latentbench.cli import _register, app
from latentbench.cli._common import fmt
from latentbench.synthetic import simulate_2pl

_register()
runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src"
COMMANDS = [
    ["fit"],
    ["demo"],
    ["ingest"],
    ["ls"],
    ["export"],
    ["report"],
    ["experiment"],
    ["select"],
    ["select", "replay"],
    ["select", "live"],
]


def _invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def long_frame() -> pd.DataFrame:
    data = simulate_2pl(30, 40, random_state=5)
    return data.matrix.to_long()


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, long_frame) -> tuple[Path, Path]:
    """``latentbench fit scores.parquet --out fit -q`` of :func:`long_frame`, once for the
    tests that only read its folder: the responses file and the fit folder."""
    folder = tmp_path_factory.mktemp("fitted")
    path = folder / "scores.parquet"
    long_frame.to_parquet(path)
    assert _invoke("fit", path, "--out", folder / "fit", "-q").exit_code == 0
    return path, folder / "fit"


def test_version_flag_prints_the_version():
    outcome = _invoke("--version")
    assert outcome.exit_code == 0, outcome.output
    assert outcome.output.strip() == f"latentbench {__version__}"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_has_an_example_and_no_bool_placeholder(command):
    outcome = _invoke(*command, "--help")
    assert outcome.exit_code == 0, outcome.output
    assert "Example" in outcome.output
    assert "<bool>" not in outcome.output


def test_json_flags_have_a_negative_form(tmp_path):
    outcome = _invoke("ls", "--help")
    assert "--no-json" in outcome.output
    outcome = _invoke("ls", "--store", tmp_path / "absent.duckdb", "--no-json")
    assert outcome.exit_code == 2 and "store not found" in outcome.output


def test_help_imports_no_numerics():
    code = (
        "import sys; from latentbench.cli import _register; _register(); "
        "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'numba', 'duckdb', 'matplotlib') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_fit_prints_layout_shape_and_data_summary(tmp_path, long_frame):
    path = tmp_path / "scores.csv"
    long_frame.rename(columns={"score": "correct"}).to_csv(path, index=False)
    outcome = _invoke("fit", path, "--out", tmp_path / "fit")
    assert outcome.exit_code == 0, outcome.output
    assert "long: columns model, item, correct" in outcome.output
    assert "30 models x 40 items" in outcome.output
    assert "constant items:" in outcome.output and "missing" in outcome.output


def test_fit_custom_column_names(tmp_path, long_frame):
    path = tmp_path / "scores.csv"
    long_frame.rename(columns={"model": "name", "item": "question", "score": "ok"}).to_csv(
        path, index=False
    )
    outcome = _invoke(
        "fit", path, "--model-col", "name", "--item-col", "question", "--score-col", "ok",
        "--out", tmp_path / "fit", "-q",
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert len(pd.read_csv(tmp_path / "fit" / "abilities.csv")) == 30


def test_wide_table_without_id_column_says_so(tmp_path, long_frame):
    wide = long_frame.pivot(index="model", columns="item", values="score")
    path = tmp_path / "wide.csv"
    wide.reset_index(drop=True).to_csv(path, index=False)
    outcome = _invoke("fit", path, "--out", tmp_path / "fit")
    assert outcome.exit_code == 2
    assert "no model-id column" in outcome.output and "Traceback" not in outcome.output


def test_transposed_wide_table_warns(tmp_path):
    data = simulate_2pl(12, 40, random_state=1)
    frame = data.matrix.to_long().pivot(index="item", columns="model", values="score")
    path = tmp_path / "transposed.csv"
    frame.to_csv(path)
    outcome = _invoke("fit", path, "--out", tmp_path / "fit", "--max-iter", "50")
    assert outcome.exit_code == 0, outcome.output
    assert "40 models x 12 items" in outcome.output
    assert "transpose" in outcome.output


def test_fit_never_overwrites_the_default_output(tmp_path, monkeypatch, long_frame):
    path = tmp_path / "scores.parquet"
    long_frame.to_parquet(path)
    monkeypatch.chdir(tmp_path)
    first = _invoke("fit", path, "--max-iter", "50")
    assert first.exit_code == 0, first.output
    marker = (tmp_path / "latentbench-fit" / "fit.json").read_text()
    second = _invoke("fit", path, "--max-iter", "60")
    assert second.exit_code == 0, second.output
    assert (tmp_path / "latentbench-fit" / "fit.json").read_text() == marker
    assert (tmp_path / "latentbench-fit-2" / "fit.json").exists()
    assert "latentbench-fit-2" in second.output


def test_library_warnings_are_one_clean_line(tmp_path, long_frame):
    path = tmp_path / "scores.parquet"
    long_frame.to_parquet(path)
    outcome = _invoke("fit", path, "--max-iter", "2", "--out", tmp_path / "fit")
    assert outcome.exit_code == 0, outcome.output
    lines = [line for line in outcome.output.splitlines() if "max-iter" in line]
    assert lines and lines[0].startswith("warning: cBMM stopped at --max-iter 2")
    assert ".py:" not in outcome.output and "site-packages" not in outcome.output
    assert "ConvergenceWarning" not in outcome.output


def test_rank_auto_says_which_rank(tmp_path, long_frame):
    path = tmp_path / "scores.parquet"
    long_frame.to_parquet(path)
    outcome = _invoke("fit", path, "--rank", "auto", "--out", tmp_path / "fit", "--max-iter", "200")
    assert outcome.exit_code == 0, outcome.output
    chosen = re.search(r"rank auto: chose rank (\d+)", outcome.output)
    assert chosen, outcome.output
    assert json.loads((tmp_path / "fit" / "fit.json").read_text())["rank"] == int(chosen[1])


def test_rank_auto_says_and_records_a_choice_worse_than_the_additive_model(tmp_path):
    """fit --joint-ml --rank auto at 30 x 60 printed "chose rank 1" at -0.7686 per held-out
    cell without a word that the additive model scores -0.5733 and a constant 0.5 -0.6931
    (joint ML overfits every rank there): said in CLI terms, the reference on the rank auto
    line and in fit.json."""
    path = tmp_path / "scores.parquet"
    simulate_2pl(30, 60, random_state=0).matrix.to_long().to_parquet(path)
    outcome = _invoke("fit", path, "--rank", "auto", "--joint-ml", "--out", tmp_path / "fit")
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.output.split())
    assert "warning: --rank auto: the chosen rank 1 predicts the held-out cells worse" in text
    assert "the --joint-ml fit overfits every rank" in text
    assert "prior=None" not in text and "prior='auto'" not in text
    assert "1: -0.7686" in text and "additive model c_i + b_j: -0.5733)" in text
    selection = json.loads((tmp_path / "fit" / "fit.json").read_text())["rank_selection"]
    assert selection["chosen"] == 1
    assert selection["additive_log_likelihood"] == pytest.approx(-0.5733, abs=5e-5)


def test_fit_outputs_record_input_and_ability_intervals(fitted):
    path, fit = fitted
    info = json.loads((fit / "fit.json").read_text())
    assert info["latentbench_version"] == __version__
    assert info["input"]["path"] == str(path.resolve())
    assert len(info["input"]["sha256"]) == 64
    abilities = pd.read_csv(fit / "abilities.csv")
    # one ability per model, rows by rank, columns leading with rank, model, ability, interval
    assert list(abilities.columns[:7]) == [
        "rank_theta",
        "model",
        "theta",
        "lower",
        "upper",
        "se",
        "theta_fit",
    ]
    assert "center" not in abilities.columns
    assert (abilities["lower"] < abilities["theta"]).all()
    assert (abilities["theta"] < abilities["upper"]).all()
    assert abilities["rank_theta"].is_monotonic_increasing
    assert abilities["theta"].is_monotonic_decreasing
    # 30 models: the law-fixed intervals widened by the item bootstrap, recorded in fit.json
    assert info["ability_intervals"]["method"] == (
        "random-item marginal likelihood + item bootstrap"
    )
    assert info["ability_intervals"]["checks"]["item_bootstrap"]["replicates"] == 40
    assert info["ability_intervals"]["fallback"] is None
    assert info["ability_intervals"]["checks"]["edge_mass"] <= 0.05


def test_fit_on_an_output_table_is_a_clear_error(tmp_path, fitted):
    _, fit = fitted
    for args in (
        ("fit", fit / "abilities.csv"),
        ("report", fit / "abilities.csv", "--out", tmp_path / "r.html"),
    ):
        outcome = _invoke(*args)
        assert outcome.exit_code == 2
        assert "abilities.csv (a fit's abilities table), not a response table" in outcome.output
        assert "outside [0, 1]" not in outcome.output


def test_replay_missing_cell_error_names_ids_and_flag(tmp_path, long_frame):
    frame = long_frame[~(long_frame["model"] == long_frame["model"].iloc[0])].copy()
    holes = long_frame[long_frame["model"] == long_frame["model"].iloc[0]].iloc[1:]
    frame = pd.concat([frame, holes])  # the first model lacks its first item
    path = tmp_path / "holes.parquet"
    frame.to_parquet(path)
    outcome = _invoke("select", "replay", path, "--history", path, "--budget", "100")
    assert outcome.exit_code == 2
    assert f"model {long_frame['model'].iloc[0]!r}" in outcome.output
    assert f"item {long_frame['item'].iloc[0]!r}" in outcome.output
    assert "--missing zero" in outcome.output and "missing='zero'" not in outcome.output


def test_replay_numbers_are_human(tmp_path):
    data = simulate_2pl(20, 1200, random_state=3)
    path = tmp_path / "big.parquet"
    data.matrix.to_long().to_parquet(path)
    outcome = _invoke(
        "select", "replay", path, "--budget", "3000", "--policy", "uniform", "--out", tmp_path / "r"
    )
    assert outcome.exit_code == 0, outcome.output
    assert not re.search(r"\de[+-]\d", outcome.output), outcome.output
    assert "history split" in outcome.output and "of a full evaluation" in outcome.output


@pytest.mark.parametrize(
    ("value", "text"),
    [(12032, "12,032"), (12032.4, "12,032"), (130041.62552200202, "130,042"), (0.40237, "0.402"),
     (1.5, "1.500"), (float("nan"), "-"), (np.int64(3), "3")],
)  # fmt: skip
def test_fmt(value, text):
    assert fmt(value) == text


def test_bootstrap_reports_progress(long_frame):
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.irt.inference import bootstrap

    matrix = ResponseMatrix.from_long(long_frame)
    result = TwoPL().fit(matrix)
    calls: list[tuple[int, int]] = []
    plain = bootstrap(result, matrix, n_boot=6, method="items", random_state=1)
    hooked = bootstrap(
        result, matrix, n_boot=6, method="items", random_state=1,
        progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    assert calls[-1] == (6, 6) and len(calls) > 1
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    np.testing.assert_array_equal(plain.theta, hooked.theta)  # chunking changes nothing


def test_live_function_next_to_the_config_imports(tmp_path, monkeypatch):
    """`function = "myoracle:score"` resolves next to the config without PYTHONPATH=.; the
    progress says budget left within the configured budget, apart from the initial batch."""
    monkeypatch.chdir(tmp_path.parent)  # not the config's folder
    module = f"myoracle_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(
        "def score(model, items):\n    return [1.0 if model == 'm0' else 0.0] * len(items)\n"
    )
    items = "".join(f'{{"id": {k}, "prompt": "p{k}", "answer": "a"}}\n' for k in range(12))
    (tmp_path / "items.jsonl").write_text(items)
    config = tmp_path / "run.toml"
    config.write_text(
        '[run]\nbudget = 6\nbatch_size = 2\ninit_batch = 2\npolicy = "ucbe"\n'
        f'[oracle]\nkind = "python"\nfunction = "{module}:score"\n'
        '[items]\npath = "items.jsonl"\n'
        + "".join(f'[[models]]\nname = "m{k}"\nmodel = "m{k}"\n' for k in range(3))
    )
    outcome = _invoke("select", "live", "--config", config, "--store", tmp_path / "run.duckdb")
    assert "cannot import" not in outcome.output, outcome.output
    assert outcome.exit_code == 0, outcome.output
    assert "best model m0" in outcome.output
    left = [
        int(n.replace(",", "")) for n in re.findall(r"budget left ([\d,]+) of 6", outcome.output)
    ]
    assert all(n <= 6 for n in left)


def test_experiment_default_out_and_long_curves(tmp_path, monkeypatch):
    data = simulate_2pl(40, 200, random_state=4)
    path = tmp_path / "all.parquet"
    data.matrix.to_long().to_parquet(path)
    monkeypatch.chdir(tmp_path)
    args = ["experiment", path, "--pools", "full", "--policies", "pulse,ucbe", "--seeds", "2",
            "--budget", "200", "--batch-size", "20", "--init-batch", "10", "--pool-size", "10",
            "--rank", "2", "--n-jobs", "1"]  # fmt: skip
    for _ in range(2):
        outcome = _invoke(*args)
        assert outcome.exit_code == 0, outcome.output
        # issue 32: after the first runs it says how long the rest will take
        assert re.search(r"1 of 4 runs done in \d+ s: about [\d.]+ more minutes", outcome.output)
    for name in ("latentbench-experiment", "latentbench-experiment-2"):
        curves = pd.read_csv(tmp_path / name / "curves.csv")
        assert list(curves.columns) == ["pool", "policy", "evaluations", "accuracy", "se"]
        assert set(curves["policy"]) == {"pulse", "ucbe"}


def test_repeated_warnings_with_other_numbers_show_once():
    import warnings

    from latentbench.cli._common import clean_warnings
    from latentbench.exceptions import ConvergenceWarning

    with clean_warnings() as shown:
        for gap in (1e-3, 2e-3, 5e-4, 7e-4):  # e.g. the four ranks tried by --rank auto
            warnings.warn(
                f"cBMM stopped at max_iter=5000 before meeting tol=1e-06 (last relative gap "
                f"estimate {gap:.2e}); see the fit's loss history",
                ConvergenceWarning,
                stacklevel=1,
            )
    assert len(shown) == 1 and "--max-iter 5000" in shown[0]


# ---------------------------------------------------------------------------------------------
# issue 32: the first hour, round 2 (progress, first run, report overwrite and layout, the
# user's path in memory proportional to the observed cells)


def _terminal(force: bool):
    import io

    from rich.console import Console

    buffer = io.StringIO()
    return buffer, Console(file=buffer, force_terminal=force, width=100)


def test_experiment_defaults_are_light_for_a_first_try():
    import inspect

    from latentbench.cli._select import DEFAULT_SEEDS, experiment

    params = inspect.signature(experiment).parameters.items()
    defaults = {name: p.default.default for name, p in params if name != "ctx"}
    assert defaults["seeds"] is None  # resolved per --task from DEFAULT_SEEDS
    assert DEFAULT_SEEDS["select"] <= 20  # was 200: ~10x the time for a first look
    assert DEFAULT_SEEDS["estimate"] <= 3  # each seed is one run per held-out model


def test_progress_bar_names_the_phase_on_a_terminal_only():
    from latentbench.cli._common import progress_bar

    for force, quiet, shown in ((True, False, True), (True, True, False), (False, False, False)):
        buffer, stream = _terminal(force)
        with progress_bar(quiet, stream=stream) as progress:
            progress("choosing the prior (held-out fits)", 1, 4)
            progress("fitting", 120, None)
            stream.file.flush()
            import time

            time.sleep(0.25)  # one refresh of the live display
        text = buffer.getvalue()
        assert ("fitting" in text) is shown, (force, quiet, text)


def test_fit_tells_its_phases_to_a_callback_and_prints_nothing(capsys):
    from latentbench.irt import TwoPL

    data = simulate_2pl(25, 60, random_state=1)
    phases: list[tuple[str, int | None, int | None]] = []
    TwoPL().fit(data.matrix, progress=lambda *event: phases.append(event))
    names = [p[0] for p in phases]
    assert names[0] == "choosing the prior (held-out fits)" and phases[0][2] == 4
    assert "fitting" in names and max(p[1] or 0 for p in phases if p[0] == "fitting") > 1
    assert capsys.readouterr() == ("", "")


def test_report_and_ingest_tell_their_phases(tmp_path):
    from latentbench.io.formats import read_results
    from latentbench.irt import TwoPL
    from latentbench.report import build_report

    data = simulate_2pl(20, 30, random_state=3)
    result = TwoPL().fit(data.matrix)
    phases: list[str] = []
    build_report(result, data.matrix, progress=lambda phase, *_: phases.append(phase))
    assert phases[0] == "report: ability intervals" and phases[-1] == "report: writing the page"
    assert "report: item diagnostics" in phases
    frame = data.matrix.to_long()
    for k in range(3):
        frame.iloc[k::3].to_csv(tmp_path / f"part{k}.csv", index=False)
    seen: list[tuple[str, int | None, int | None]] = []
    read_results("table", tmp_path, progress=lambda *event: seen.append(event))
    assert [e for e in seen if e[0] == "reading files"] == [
        ("reading files", k, 3) for k in range(3)
    ]


def test_first_fit_of_a_small_matrix_compiles_no_kernel(tmp_path):
    code = (
        "from latentbench.synthetic import simulate_2pl\n"
        "from latentbench.irt import TwoPL, _kernels as k\n"
        "r = TwoPL().fit(simulate_2pl(30, 500, random_state=0).matrix)\n"
        "print(len(k._residual_pass_rank1.signatures), "
        "len(k._model_gradient_curvature_rank1.signatures))\n"
    )
    env = {"PYTHONPATH": str(SRC), "NUMBA_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "0"], done.stdout + done.stderr
    assert not any(tmp_path.rglob("*.nbi"))  # nothing compiled, nothing cached


def test_numpy_passes_match_the_numba_kernels(monkeypatch):
    """The NumPy passes match the numba kernels; and writable and read-only scores reach the
    kernels as one compiled signature with the same numbers. numba compiles a kernel once
    per signature, an array's read-only flag part of it: the held-out fits' writable scores
    and a ResponseMatrix's read-only ones compiled every dense pass twice on a cold cache
    (5-8 s of CPU each). One test, so that the kernels compile once in a suite run."""
    from latentbench.irt import _kernels as k

    rng = np.random.default_rng(0)
    Y = (rng.random((40, 70)) < 0.6).astype(np.float32)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    frozen = Y.copy()
    frozen.flags.writeable = False
    for r in (1, 2):
        U, V, b = rng.normal(size=(40, r)), rng.uniform(0, 1, (70, r)), rng.normal(size=70)
        outputs = []
        # NumPy, then the numba kernels on writable and on read-only scores
        for cells, scores in (("1000000", Y), ("0", Y), ("0", frozen)):
            monkeypatch.setenv("LATENTBENCH_NUMPY_MAX_CELLS", cells)
            R = np.empty_like(Y)
            loss, atr = k.residual_pass(scores, U, V, b, 1.3, R)
            grad, curv = k.model_gradient_curvature(scores, U, V, b, 1.3)
            outputs.append((loss, atr, R.copy(), grad, curv))
        for a, c, d in zip(*outputs, strict=True):
            np.testing.assert_allclose(a, c, rtol=2e-5, atol=2e-5)
            np.testing.assert_array_equal(c, d)
    assert Y.flags.writeable  # the caller's array is left as it was
    kernels = (
        k._residual_pass_rank1,
        k._residual_from_logits,
        k._model_gradient_curvature_rank1,
        k._model_gradient_curvature,
    )
    for kernel in kernels:
        assert kernel.signatures and all(not sig[0].mutable for sig in kernel.signatures), (
            kernel.__name__,
            kernel.signatures,
        )


def test_report_never_overwrites_silently(tmp_path, monkeypatch, fitted):
    _, fit = fitted
    page = tmp_path / "page.html"
    page.write_text("keep me")
    outcome = _invoke("report", fit, "--out", page, "-q")
    assert outcome.exit_code == 2 and "--force" in outcome.output, outcome.output
    assert page.read_text() == "keep me"
    assert _invoke("report", fit, "--out", page, "--force", "-q").exit_code == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.html").write_text("keep me too")
    outcome = _invoke("report", fit)
    assert outcome.exit_code == 0, outcome.output
    assert (tmp_path / "report.html").read_text() == "keep me too"
    assert "report-2.html" in outcome.output and (tmp_path / "report-2.html").exists()


def test_selection_report_shortens_digests_and_has_no_static_figure():
    from latentbench.report import build_report

    selection = {
        "policy": "pulse",
        "best_model": "a",
        "arms": [
            {"model": m, "estimate": e, "lower": e - 0.1, "upper": e + 0.1, "n_observed": n}
            for m, e, n in (("a", 0.8, 90), ("b", 0.6, 40), ("c", 0.4, 20))
        ],
        "params": {"n_items": 100, "history": {"file": "h.parquet", "sha256": "ab" * 32}},
        "trace": {
            "evaluations_post_init": [0, 10, 20],
            "best_index": [0, 0, 0],
            "lower": [[0.5, 0.3, 0.1], [0.6, 0.4, 0.2], [0.7, 0.5, 0.3]],
            "upper": [[1.0, 0.9, 0.8], [0.95, 0.8, 0.6], [0.9, 0.7, 0.5]],
        },
    }
    html = build_report(selection=selection)
    assert "ab" * 32 not in html and "ab" * 6 + "\u2026" in html
    assert "data:image/png" not in html  # both selection figures are interactive plots
    assert html.count('class="iplot"') == 3


def test_the_users_sparse_path_never_builds_the_dense_grid():
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL, standard_errors

    rng = np.random.default_rng(4)
    data = simulate_2pl(60, 400, random_state=4)  # <= 500 models: the prior's held-out search
    frame = data.matrix.to_long()
    frame = frame[rng.random(len(frame)) < 0.08].reset_index(drop=True)
    sparse = ResponseMatrix.from_long(frame)
    assert sparse.is_sparse
    result = TwoPL().fit(sparse)
    assert sparse._dense is None  # from_long -> fit with the prior's held-out search: cells only
    assert result.prior_selection is not None and len(result.prior_selection.grid) == 4
    # the same numbers as the same cells stored densely
    dense = ResponseMatrix(sparse.observed_cells().to_dense(), sparse.model_ids, sparse.item_ids)
    again = TwoPL().fit(dense)
    assert again.prior_selection == result.prior_selection
    np.testing.assert_allclose(again.U, result.U, atol=1e-10)
    # above 1,000 models (block-diagonal information) the intervals use the cells only too
    many = simulate_2pl(1100, 300, missing=0.95, random_state=5).matrix
    sparse = ResponseMatrix.from_long(many.to_long())
    assert sparse.is_sparse
    result = TwoPL().fit(sparse)
    unc = standard_errors(result, sparse)
    assert sparse._dense is None
    dense = ResponseMatrix(sparse.observed_cells().to_dense(), sparse.model_ids, sparse.item_ids)
    again = standard_errors(TwoPL().fit(dense), dense)
    assert unc.method == again.method == "observed information"
    for table, column in (("abilities", "se"), ("items", "easiness_se")):
        np.testing.assert_allclose(
            getattr(again, table)[column], getattr(unc, table)[column], rtol=1e-8
        )


def test_from_long_keeps_ids_and_first_of_repeated_pairs():
    from latentbench.io import ResponseMatrix

    frame = pd.DataFrame(
        {
            "model": [1, "1", "b", "a", 2] + [f"m{k}" for k in range(20)],
            "item": ["x", "x", "y", "y", "x"] + [f"i{k}" for k in range(20)],
            "score": [1.0, 1.0, 0.0, 1.0, 0.5] + [0.25] * 20,
        }
    )
    with pytest.warns(Warning, match="1 repeated"):
        matrix = ResponseMatrix.from_long(frame)
    assert matrix.is_sparse
    assert matrix.model_ids[:4] == ["1", "2", "a", "b"] and matrix.item_ids[-2:] == ["x", "y"]
    cells = matrix.to_long().set_index(["model", "item"])["score"]
    assert cells[("1", "x")] == 1.0 and cells[("2", "x")] == 0.5 and cells[("b", "y")] == 0.0
    assert len(cells) == 24


def test_help_keeps_the_bracketed_text_of_every_option():
    """rich reads "[doc ids]" in a help text as markup and drops it: tiny's --lm-eval-samples
    said "JSON ({task: }, sorted)". Every option's bracketed words must reach the screen."""
    import typer.main

    def walk(command, path: list[str]):  # typer's click, duck-typed
        if hasattr(command, "list_commands"):
            ctx = command.context_class(command)
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), [*path, name])
        else:
            yield path, command

    checked = 0
    for path, command in walk(typer.main.get_command(app), []):
        said = None
        for param in command.params:
            for word in re.findall(r"\\?\[([^\[\]]+)\]", getattr(param, "help", None) or ""):
                if said is None:
                    outcome = _invoke(*path, "--help")
                    said = " ".join(outcome.output.replace("│", " ").split())
                assert f"[{' '.join(word.split())}]" in said, (path, param.name, word)
                checked += 1
    assert checked  # tiny's --lm-eval-samples at least
