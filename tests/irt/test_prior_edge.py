"""The held-out choice of ``a_sd`` at an edge of its grid: extended past it when the edge
predicts the held-out cells better than its neighbour beyond their noise, said in one line and
kept in fit.json; an edge that is as good as its neighbour stands, recorded but not warned."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench import ResponseMatrix, TwoPL
from latentbench.cli import _register, app
from latentbench.exceptions import DataWarning, InputError
from latentbench.irt import IRTResult


def _steep(
    seed: int = 2, n: int = 60, n_items: int = 400, low: float = 6, high: float = 14
) -> ResponseMatrix:
    """A 2PL whose discriminations spread ``U(low, high)``: at the defaults, more than the
    default grid's largest a_sd allows."""
    rng = np.random.default_rng(seed)
    theta, a, b = rng.normal(size=n), rng.uniform(low, high, n_items), rng.normal(0, 2, n_items)
    Y = (rng.random((n, n_items)) < 1 / (1 + np.exp(-(np.outer(theta, a) + b)))).astype(float)
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(n)], columns=[f"q{j}" for j in range(n_items)]
    )
    return ResponseMatrix.from_wide(frame)


def test_a_significant_edge_extends_the_grid_says_so_and_keeps_it(tmp_path):
    matrix = _steep()
    said = (
        r"prior: the held-out log-loss still fell at the highest a_sd of the grid, so a_sd 4 "
        r"was tried too and 4 was chosen"
    )
    with pytest.warns(DataWarning, match=said):
        result = TwoPL().fit(matrix)
    sel = result.prior_selection
    assert sel.grid == [0.25, 0.5, 1.0, 2.0, 4.0] and sel.extended == [4.0]
    assert sel.a_sd == 4.0 and len(sel.heldout_log_loss) == 5
    # the edge it ended at is within the noise of its neighbour: recorded, not extended again
    assert sel.edge == "upper" and sel.edge_z < 2
    result.save(tmp_path / "fit", matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())["prior_selection"]
    assert info["extended"] == [4.0] and info["edge"] == "upper" and "edge_note" in info
    loaded = IRTResult.load(tmp_path / "fit").prior_selection
    assert loaded.extended == [4.0] and loaded.edge == "upper"
    assert loaded.edge_z == pytest.approx(sel.edge_z)


def test_an_interior_choice_records_no_edge_and_warns_nothing(tmp_path):
    matrix = _steep(seed=0, low=4, high=10)  # chooses 0.5, inside the grid
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="prior:", category=DataWarning)
        result = TwoPL().fit(matrix)
    sel = result.prior_selection
    assert (sel.a_sd, sel.edge, sel.extended) == (0.5, None, [])
    result.save(tmp_path / "fit", matrix)
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())["prior_selection"]
    assert "edge" not in info and "extended" not in info and "note" not in info


def test_an_edited_edge_in_fit_json_is_refused(tmp_path):
    matrix = _steep()
    with pytest.warns(DataWarning):
        TwoPL().fit(matrix).save(tmp_path / "fit", matrix)
    path = tmp_path / "fit" / "fit.json"
    info = json.loads(path.read_text())
    info["prior_selection"]["edge"] = "middle"
    path.write_text(json.dumps(info))
    with pytest.raises(InputError, match=r"fit\.json: prior_selection is"):
        IRTResult.load(tmp_path / "fit")


def test_fit_says_when_the_held_out_choice_is_skipped_above_its_model_limit(tmp_path):
    """Above 500 models a_sd is the grid's middle and no held-out check line was printed: the
    output said nothing of how the prior was set."""
    rng = np.random.default_rng(1)
    n, n_items = 501, 12
    Y = (rng.random((n, n_items)) < 1 / (1 + np.exp(-rng.normal(size=(n, 1))))).astype(float)
    frame = pd.DataFrame(Y, columns=[f"q{j}" for j in range(n_items)])
    frame.insert(0, "model", [f"m{i}" for i in range(n)])
    path = tmp_path / "many.csv"
    frame.to_csv(path, index=False)
    _register()
    out = CliRunner().invoke(app, ["fit", str(path), "--out", str(tmp_path / "fit")])
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "prior: a_sd 1, the grid's middle (above 500 models the held-out choice" in said
    info = json.loads((tmp_path / "fit" / "fit.json").read_text())["prior_selection"]
    assert info["grid"] == [] and "more models than Prior.heldout_max_models" in info["note"]


def test_a_significant_lower_edge_is_extended_downwards():
    matrix = _steep(seed=0, n=40, n_items=300, low=1.0, high=1.5)
    with pytest.warns(DataWarning, match=r"still fell at the lowest a_sd of the grid, so a_sd "
                      r"0\.125"):  # fmt: skip
        sel = TwoPL().fit(matrix).prior_selection
    assert sel.grid[0] == 0.125 and sel.extended[0] == 0.125 and sel.a_sd <= 0.25
    assert len(sel.grid) == len(sel.heldout_log_loss) == 4 + len(sel.extended)


def test_the_warning_names_the_edge_it_extended_past_after_several_steps():
    """Extended past the upper edge three times (4, 8, 16), the warning said "still fell at
    the lowest a_sd": it compared the first added value with the grid's new top, 16. A fake
    held-out loss that keeps falling with a_sd, in both directions, on a constant per-cell
    advantage (z infinite): the grid is extended three steps and the warning names that edge."""
    from latentbench.irt._priors import _extend_at_edge

    for sign, edge, said, added in ((-1, "upper", "highest", [4, 8, 16]),
                                     (1, "lower", "lowest", [0.125, 0.0625, 0.03125])):  # fmt: skip
        grid = [0.25, 0.5, 1.0, 2.0]
        cells = [np.full(20, sign * v) for v in grid]
        losses = [float(c.mean()) for c in cells]

        def held_out(v: float, sign: int = sign) -> tuple[float, np.ndarray]:
            return sign * v, np.full(20, sign * v)

        with pytest.warns(DataWarning, match=rf"still fell at the {said} a_sd of the grid"):
            got_edge, z, extended = _extend_at_edge(grid, losses, cells, held_out)
        assert (got_edge, extended) == (edge, added) and z == float("inf")


def test_one_held_out_cell_or_a_tie_does_not_extend_the_grid():
    """Audit h229: one held-out cell (a 4 x 3 file: 9 observed cells, 10% held out) has no
    standard error, and a tie at the edge no advantage; both read as z infinite: the grid was
    extended three times and the warning said the edge 'still predicts better than its
    neighbour (inf standard errors)'. Neither measures anything: the grid stays."""
    from latentbench.irt._priors import _extend_at_edge

    for size, step in ((1, 0.1), (20, 0.0)):
        grid = [0.25, 0.5, 1.0, 2.0]
        cells = [np.full(size, step * v) for v in grid]
        losses = [float(c.mean()) for c in cells]

        def held_out(v: float, size: int = size, step: float = step) -> tuple[float, np.ndarray]:
            return step * v, np.full(size, step * v)

        with warnings.catch_warnings():
            warnings.simplefilter("error", DataWarning)
            got_edge, z, extended = _extend_at_edge(grid, losses, cells, held_out)
        assert got_edge == "lower" and extended == [] and not z > 2, (size, z)
        assert grid == [0.25, 0.5, 1.0, 2.0]


def _sparse_matrix() -> ResponseMatrix:
    from latentbench.synthetic import simulate_2pl

    return simulate_2pl(30, 200, missing=0.85, random_state=4).matrix


def test_a_sparse_matrix_gets_the_additive_check(tmp_path):
    """Audit h229: a matrix with under 25% of its cells observed (the sparse path) skipped the
    held-out check's additive model: `fit` printed 'additive model -' and fit.json's
    additive_log_loss and difference were null, with no reason, so a 2PL worse than the
    additive model went unsaid there. It is fitted on the training cells' dense array: the
    same value rank='auto' reports on the same held-out cells."""
    matrix = _sparse_matrix()
    model = TwoPL()
    assert model.uses_sparse_path(matrix)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        check = model.fit(matrix).fit_info()["heldout_check"]
        additive = -TwoPL().select_rank(matrix).additive_log_likelihood
    assert check["additive_log_loss"] == pytest.approx(additive, rel=1e-9)
    assert check["difference"] == pytest.approx(check["log_loss"] - additive)
    assert "additive_missing" not in check


def test_a_sparse_matrix_too_large_for_the_additive_check_says_so(tmp_path, monkeypatch):
    import latentbench.irt._priors as priors

    monkeypatch.setattr(priors, "ADDITIVE_DENSE_CELLS", 100)
    import latentbench.irt._result as result_module

    monkeypatch.setattr(result_module, "ADDITIVE_DENSE_CELLS", 100)
    path = tmp_path / "sparse.csv"
    _sparse_matrix().to_long().to_csv(path, index=False)
    _register()
    out = CliRunner().invoke(app, ["fit", str(path), "--out", str(tmp_path / "fit")])
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "additive model not fitted (a sparse matrix of more than 100 cells" in said, said
    check = json.loads((tmp_path / "fit" / "fit.json").read_text())["heldout_check"]
    assert check["additive_log_loss"] is None and "more than 100 cells" in check["additive_missing"]
