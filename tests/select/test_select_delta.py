"""A selection's ``delta``: refused above 0.5 (its certificate's bounds crossed on the leader
at 0.8 and 0.999), and a certificate whose bounds cross at any ``delta`` is said."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import replay, run_experiment


def _matrix(n_models: int = 6, n_items: int = 60, seed: int = 0) -> ResponseMatrix:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    Y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    return ResponseMatrix.from_wide(
        pd.DataFrame(
            Y, index=[f"m{i}" for i in range(n_models)], columns=[f"q{j}" for j in range(n_items)]
        )
    )


@pytest.mark.parametrize("delta", [0.8, 0.999, 0.50001])
def test_a_selection_delta_above_one_half_is_refused(delta):
    with pytest.raises(InputError, match=rf"delta={delta}; expected a value in \(0, 0\.5\]"):
        replay(_matrix(), no_history=True, budget=20, delta=delta)
    Y = _matrix().scores
    with pytest.raises(InputError, match=r"expected a value in \(0, 0\.5\]: the certificate"):
        run_experiment(Y, {"full": np.arange(6)}, ["ucbe"], seeds=1, budget=50, delta=delta)


def test_the_cli_names_delta_above_one_half(tmp_path):
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    path = tmp_path / "m.csv"
    m = _matrix()
    frame = pd.DataFrame(m.scores, columns=m.item_ids).assign(model=m.model_ids)
    frame[["model", *m.item_ids]].to_csv(path, index=False)
    _register()
    for args in (["select", "replay", str(path), "--no-history", "--budget", "20"],
                 ["experiment", str(path), "--seeds", "1", "--budget", "20"]):  # fmt: skip
        out = CliRunner().invoke(app, [*args, "--delta", "0.8", "--out", str(tmp_path / "o")])
        text = " ".join(out.output.split())
        assert out.exit_code == 2, text
        assert "--delta 0.8; expected a value in (0, 0.5]" in text


def test_crossing_certificate_bounds_are_said_and_recorded(monkeypatch):
    from latentbench.select._run import SelectionResult

    run = replay(_matrix(), no_history=True, budget=40, delta=0.3)
    assert "certificate_crossed" not in run.params  # not crossed: nothing added
    lo, hi = run.certificate_lower.copy(), run.certificate_upper.copy()
    lo[2], hi[2] = 0.61, 0.60
    crossed = SelectionResult.certificate_crossed(
        type(
            "R",
            (),
            {"certificate_lower": lo, "certificate_upper": hi, "_id": lambda self, i: run._id(i)},
        )()
    )
    assert crossed == {"m2": [0.61, 0.60]}
    monkeypatch.setattr(SelectionResult, "certificate_crossed", lambda self: crossed)
    with pytest.warns(DataWarning, match=r"bounds cross on m2 \(lower 0\.6100 > upper 0\.6000\)"):
        run = replay(_matrix(), no_history=True, budget=40, delta=0.3)
    assert json.loads(json.dumps(run.to_dict()))["params"]["certificate_crossed"] == crossed


def test_the_python_default_certifies_at_the_commands_delta():
    """``run_selection(oracle, Pulse())`` certifies at 0.05, as ``select replay`` and every
    command's ``--delta`` do (it certified at 0.1, the release's, while the docs said 0.05)."""
    from latentbench.select import UCBE, MatrixOracle, Pulse, run_selection

    matrix = _matrix()
    assert Pulse().delta == UCBE().delta == 0.05
    result = run_selection(MatrixOracle(matrix.scores), UCBE(), random_state=0)
    assert result.params["delta"] == 0.05


def test_a_run_delta_a_policy_would_ignore_is_refused():
    """A policy with intervals certifies at its own delta: a different ``delta=`` given to the
    run was silently ignored (``run_selection(..., Pulse(), delta=0.01)`` certified at 0.1)."""
    from latentbench.select import UCBE, LowRankProxy, MatrixOracle, Pulse, run_selection

    matrix = _matrix(n_models=8)
    proxy = LowRankProxy(rank=1, random_state=0).fit(matrix.scores[:4])
    oracle = MatrixOracle(matrix.scores[4:])
    with pytest.raises(InputError, match=r"delta=0\.01, but Pulse certifies at its own "
                       r"delta=0\.05.*Pulse\(delta=0\.01\)"):  # fmt: skip
        run_selection(oracle, Pulse(), proxy=proxy, delta=0.01, random_state=0)
    same = run_selection(oracle, Pulse(delta=0.01), proxy=proxy, delta=0.01, random_state=0)
    assert same.params["delta"] == 0.01
    # a policy without intervals is certified on its cells at the run's delta
    assert run_selection(oracle, UCBE(), delta=0.01, random_state=0).params["delta"] == 0.01


def test_crossing_certificate_bounds_reach_the_saved_run_and_its_report(monkeypatch, tmp_path):
    """Crossed bounds were said and kept in selection.json's params, but the run's HTML report
    (latentbench report selection.json) said nothing of them."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select._run import SelectionResult

    crossed = {"m2": [0.61, 0.60]}
    monkeypatch.setattr(SelectionResult, "certificate_crossed", lambda self: crossed)
    with pytest.warns(DataWarning, match=r"bounds cross on m2"):
        run = replay(_matrix(), no_history=True, budget=40, delta=0.3)
    saved = tmp_path / "selection.json"
    run.to_json(saved)
    assert json.loads(saved.read_text())["params"]["certificate_crossed"] == crossed
    _register()
    page = tmp_path / "report.html"
    out = CliRunner().invoke(app, ["report", str(saved), "--out", str(page), "-q"])
    assert out.exit_code == 0, out.output
    findings = page.read_text().split('id="selection-summary"')[1].split("</section>")[0]
    text = " ".join(findings.split())
    assert "bounds cross on m2 (lower 0.61" in text and "delta = 0.3" in text


@pytest.mark.parametrize("policy", ["ucbe", "uniform", "full", "naive", "pulse:ci=none"])
def test_a_delta_that_no_certificate_reads_is_refused(policy):
    """`select replay F --policy ucbe --budget 40 --delta 0.3` wrote the same selection as with
    0.05, without a word: a policy without intervals, stopped by its budget, builds no
    certificate for delta to set (`--epsilon` there was refused already). A delta other than
    the default is now refused as that epsilon is; the default, given or not, runs."""
    cand = _matrix()
    name = policy.partition(":")[0]
    said = (
        rf"^delta=0.3 applies to a certificate, and '{name}' has none with stop='budget'; "
        r"expected stop='confidence' \(a betting certificate on its revealed cells\) or no "
        r"delta=$"
    )
    with pytest.raises(InputError, match=said):
        replay(cand, no_history=True, policy=policy, budget=40, delta=0.3)
    plain = replay(cand, no_history=True, policy=policy, budget=40)
    given = replay(cand, no_history=True, policy=policy, budget=40, delta=0.05)
    assert plain.estimates.tolist() == given.estimates.tolist()


def test_a_delta_is_read_where_a_certificate_is_built():
    """The same delta runs where it sets something: intervals (pulse at a budget stop), or the
    betting certificate of a policy without intervals at a confidence stop."""
    from latentbench.select import UCBE, MatrixOracle, run_selection

    cand = _matrix()
    assert replay(cand, no_history=True, policy="pulse", budget=40, delta=0.3).params[
        "delta"
    ] == 0.3  # fmt: skip
    run = replay(cand, no_history=True, policy="ucbe", stop="confidence", delta=0.3)
    assert run.params["delta"] == 0.3 and run.params["certificate"] is not None
    with pytest.raises(InputError, match=r"^delta=0.2 applies to a certificate, and 'ucbe'"):
        run_selection(MatrixOracle(cand.scores), UCBE(), budget=40, stop="budget", delta=0.2)


def test_an_experiment_delta_that_no_policy_reads_is_refused(tmp_path):
    """`experiment --policies ucbe,uniform --delta 0.2` (a budget stop) ran as with 0.05: no
    policy of the list builds a certificate. Refused, naming the list; a list with one policy
    that reads it (pulse) runs, the others' runs taking no delta."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select import experiment_from_matrix

    matrix = _matrix(n_models=8)
    said = (
        r"^delta=0.2 applies to a certificate, and none of policies 'ucbe,uniform' has one with "
        r"stop='budget'; expected stop='confidence' \(a betting certificate on its revealed "
        r"cells\), a policy with intervals \(e.g. pulse\) or no delta=$"
    )
    kw = dict(pools="full", seeds=1, budget=20, pool_size=4, n_jobs=1)
    with pytest.raises(InputError, match=said):
        experiment_from_matrix(matrix, policies=["ucbe", "uniform"], delta=0.2, **kw)
    with pytest.raises(InputError, match=said):
        run_experiment(matrix.scores, {"all": np.arange(8)}, ["ucbe", "uniform"], seeds=1,
                       budget=20, delta=0.2, n_jobs=1)  # fmt: skip
    mixed = experiment_from_matrix(matrix, policies=["pulse", "ucbe"], delta=0.2, **kw)
    assert mixed.params["delta"] == 0.2
    experiment_from_matrix(matrix, policies=["ucbe", "uniform"], **kw)  # the default: runs
    path = tmp_path / "m.csv"
    frame = pd.DataFrame(matrix.scores, columns=matrix.item_ids).assign(model=matrix.model_ids)
    frame[["model", *matrix.item_ids]].to_csv(path, index=False)
    _register()
    for args, words in (
        (["select", "replay", str(path), "--no-history", "--policy", "ucbe"],
         "and 'ucbe' has none with --stop budget; expected --stop confidence (a betting "
         "certificate on its revealed cells) or no --delta"),
        (["experiment", str(path), "--seeds", "1", "--policies", "ucbe,uniform"],
         "and none of --policies 'ucbe,uniform' has one with --stop budget; expected --stop "
         "confidence (a betting certificate on its revealed cells), a policy with intervals "
         "(e.g. pulse) or no --delta"),
    ):  # fmt: skip
        out = CliRunner().invoke(
            app, [*args, "--budget", "20", "--delta", "0.3", "-q", "--out", str(tmp_path / "o")]
        )
        text = " ".join(out.output.split())
        assert out.exit_code == 2, text
        assert f"error: --delta 0.3 applies to a certificate, {words}" in text, text
