"""Two facts a fit warned but did not keep: the additive baseline of the held-out check stopped
at its iteration limit (a ConvergenceWarning; ``fit_additive`` returned no flag), and a start
that collapsed to an intercept-only model was restarted from the accuracy-based start (an
IdentifiabilityWarning). Both now reach the result, fit.json (read back by ``IRTResult.load``)
and, for the restart, the report's fit details; a fit.json without them still loads."""

from __future__ import annotations

import functools
import json
import warnings

import numpy as np
import pytest

from latentbench import ConvergenceWarning, IdentifiabilityWarning, TwoPL
from latentbench.exceptions import InputError
from latentbench.irt import IRTResult, _heldout, _model, _priors
from latentbench.report import build_report
from latentbench.synthetic import simulate_2pl


def _stopped_additive(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    """The additive baseline of ``module`` stopped after 2 iterations (it converges otherwise)."""
    monkeypatch.setattr(
        module,
        "fit_additive_converged",
        functools.partial(_heldout.fit_additive_converged, max_iter=2),
    )


def test_an_unconverged_additive_check_is_kept_in_the_result_and_fit_json(tmp_path, monkeypatch):
    matrix = simulate_2pl(40, 60, random_state=1).matrix
    _stopped_additive(monkeypatch, _priors)
    with pytest.warns(ConvergenceWarning, match="the additive model stopped at max_iter=2"):
        result = TwoPL().fit(matrix)
    assert result.prior_selection.additive_converged is False
    result.save(tmp_path / "fit", matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert info["prior_selection"]["additive_converged"] is False
    assert "before converging" in info["heldout_check"]["additive_note"]
    assert IRTResult.load(tmp_path / "fit").prior_selection.additive_converged is False


def test_a_converged_additive_check_writes_nothing_and_an_old_fit_json_loads(tmp_path):
    matrix = simulate_2pl(40, 60, random_state=1).matrix
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = TwoPL().fit(matrix)
    assert result.prior_selection.additive_converged is True
    result.save(tmp_path / "fit", matrix)
    path = tmp_path / "fit" / "fit.json"
    info = json.loads(path.read_text())
    assert "additive_converged" not in info["prior_selection"]
    assert "additive_note" not in info["heldout_check"] and "restarted" not in info
    loaded = IRTResult.load(tmp_path / "fit")  # as a fit.json written before the fields
    assert loaded.prior_selection.additive_converged is True and loaded.restarted is False
    info["prior_selection"]["additive_converged"] = "no"  # edited: refused, by name
    path.write_text(json.dumps(info))
    with pytest.raises(InputError, match="prior_selection"):
        IRTResult.load(tmp_path / "fit")


def test_cross_validation_says_which_fits_converged(monkeypatch):
    matrix = simulate_2pl(40, 60, random_state=1).matrix
    table = TwoPL().cross_validate(matrix, n_splits=1).table
    assert table["converged"].tolist() == [True, True]
    _stopped_additive(monkeypatch, _model)
    with pytest.warns(ConvergenceWarning, match="additive model"):
        table = TwoPL().cross_validate(matrix, n_splits=1).table
    assert dict(zip(table["fit"], table["converged"], strict=True)) == {
        "model": True,
        "additive": False,
    }


def test_a_restart_after_a_collapse_is_kept_in_the_result_fit_json_and_report(
    tmp_path, monkeypatch
):
    """The start of tests/irt/test_cbmm.py::test_bad_start_does_not_collapse, given to the
    engine of a TwoPL fit."""
    data = simulate_2pl(300, 200, random_state=9)
    m = data.matrix.shape[1]
    start = (-data.theta[:, None], np.full((m, 1), 0.5), np.zeros(m))
    engine = _model.fit_cbmm
    monkeypatch.setattr(
        _model, "fit_cbmm", lambda scores, **kw: engine(scores, **{**kw, "init": start})
    )
    with pytest.warns(IdentifiabilityWarning, match="restarting from the accuracy-based start"):
        result = TwoPL(prior=None, max_iter=3000).fit(data.matrix)
    assert result.raw.restarted and result.restarted
    result.save(tmp_path / "fit", data.matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert "restarted from the accuracy-based start" in info["restarted"]
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.restarted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(loaded)
    assert "restarted from the accuracy-based start" in " ".join(page.split())
