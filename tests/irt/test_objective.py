"""The objective owner: penalty value / gradient / curvature, link, normalisation, layering."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.irt import IRTResult, TwoPL
from latentbench.irt._objective import GaussianPenalty, logits, normalise, probabilities, sigmoid
from latentbench.synthetic import simulate_2pl, simulate_low_rank

PENALTIES = [
    GaussianPenalty.ridge(0.3),
    GaussianPenalty(1.0, 0.7, 0.2, mean_U=0.1, mean_V=1.3, mean_b=-0.4),
    GaussianPenalty(0.0, 0.0, 0.0),
]


def _params(r: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(7, r)), rng.uniform(0, 2, size=(5, r)), rng.normal(size=5)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_penalty_gradient_and_curvature_match_finite_differences(penalty):
    U, V, b = _params()
    gU, gV, gb = penalty.gradient(U, V, b)
    h = 1e-6
    for arr, grad in ((U, gU), (V, gV), (b, gb)):
        flat = arr.reshape(-1)
        for k in (0, flat.size - 1):
            old = flat[k]
            flat[k] = old + h
            up = penalty.value(U, V, b)
            flat[k] = old - h
            down = penalty.value(U, V, b)
            flat[k] = old
            assert (up - down) / (2 * h) == pytest.approx(grad.reshape(-1)[k], abs=1e-6)
    # the block curvatures are the Hessians of the per-row / per-item penalty
    r = U.shape[1]
    np.testing.assert_allclose(np.diag(penalty.model_curvature(r)), penalty.precision_U)
    diag = np.diag(penalty.item_curvature(r))
    np.testing.assert_allclose(diag, [penalty.precision_V] * r + [penalty.precision_b])
    # the per-row terms sum to the U part of the value
    only_U = GaussianPenalty(penalty.precision_U, 0.0, 0.0, mean_U=penalty.mean_U)
    assert penalty.model_rows(U).sum() == pytest.approx(only_U.value(U, V, b))
    assert GaussianPenalty.from_dict(penalty.to_dict()) == penalty


def test_ridge_value_is_the_written_out_formula():
    U, V, b = _params()
    l2 = 0.05
    expected = 0.5 * l2 * ((U * U).sum() + (V * V).sum() + b @ b)
    assert GaussianPenalty.ridge(l2).value(U, V, b) == pytest.approx(expected, rel=1e-15)


def test_link_and_float32_path_agree():
    U, V, b = _params(r=3)
    t = logits(U, V, b, sigma=0.7)
    np.testing.assert_allclose(t, (U @ V.T + b) / 0.7)
    p64 = probabilities(U, V, b, sigma=0.7)
    np.testing.assert_allclose(p64, 1 / (1 + np.exp(-t)), rtol=1e-12)
    p32 = probabilities(U, V, b, sigma=0.7, dtype=np.float32)
    assert p32.dtype == np.float32
    np.testing.assert_allclose(p32, p64, atol=1e-6)
    assert sigmoid(np.array([-800.0, 800.0])).tolist() == [0.0, 1.0]


@pytest.mark.parametrize("rank", [1, 3])
def test_normalise_keeps_the_fitted_logits_and_v_nonnegative(rank):
    U, V, b = _params(r=rank)
    U = U * 2.0 + 0.5
    Un, Vn, bn, scale = normalise(U, V, b)
    np.testing.assert_allclose(Un @ Vn.T + bn, U @ V.T + b, atol=1e-12)
    np.testing.assert_allclose(Un.mean(axis=0), 0.0, atol=1e-12)
    assert (Vn >= 0).all()
    np.testing.assert_allclose(scale.scale * Un + scale.shift, U, atol=1e-12)
    if rank == 1:
        assert Un[:, 0].std() == pytest.approx(1.0)


def test_fit_with_a_gaussian_penalty_minimises_the_penalised_objective():
    from latentbench.irt import fit_cbmm
    from latentbench.irt.baselines import fit_lbfgsb, objective

    data = simulate_low_rank(40, 30, 2, random_state=3)
    penalty = GaussianPenalty(1.0, 2.0, 0.25, mean_V=0.8, mean_b=0.3)
    ours = fit_cbmm(data.matrix.scores, rank=2, penalty=penalty, tol=1e-10, max_iter=20000)
    ref = fit_lbfgsb(data.matrix.scores, rank=2, penalty=penalty, tol=1e-14)
    f_ours = objective(data.matrix.scores, ours.U, ours.V, ours.b, 1.0, 0.0, penalty)
    f_ref = objective(data.matrix.scores, ref.U, ref.V, ref.b, 1.0, 0.0, penalty)
    assert f_ours == pytest.approx(ours.loss, rel=1e-5)
    assert f_ours <= f_ref + 1e-4 * abs(f_ref)


# ----------------------------------------------------------------------------- estimator
def test_params_come_from_the_signature_and_are_validated_declaratively():
    model = TwoPL()
    import inspect

    names = [n for n in inspect.signature(TwoPL.__init__).parameters if n != "self"]
    assert list(model.get_params()) == names
    assert set(TwoPL._constraints) == set(names)
    assert model.set_params(sigma=2.0, rank=2) is model and model.get_params()["sigma"] == 2.0
    with pytest.raises(InputError, match="no parameter 'alpha'"):
        model.set_params(alpha=1)
    data = simulate_2pl(20, 15, random_state=0)
    for name, bad in [("sigma", -1.0), ("rank", 0), ("init", "svd"), ("accelerate", "yes")]:
        with pytest.raises(InputError, match=f"{name}={bad!r}; expected"):
            TwoPL(**{name: bad}).fit(data.matrix)


def test_result_keeps_its_matrix_and_round_trips_through_save(tmp_path):
    data = simulate_2pl(30, 25, random_state=1)
    result = TwoPL(prior=None, l2=0.05).fit(data.matrix)
    assert result.matrix is data.matrix
    plain = result.standard_errors()
    explicit = result.standard_errors(data.matrix)
    np.testing.assert_allclose(plain.abilities["se"], explicit.abilities["se"])
    assert result.diagnostics().items.shape[0] == 25
    result.save(tmp_path / "fit")
    loaded = IRTResult.load(tmp_path / "fit")
    assert loaded.penalty == result.penalty == GaussianPenalty.ridge(0.05)
    assert loaded.matrix is None
    with pytest.raises(InputError, match="holds no matrix"):
        loaded.standard_errors()
    again = loaded.standard_errors(data.matrix)
    np.testing.assert_allclose(again.abilities["se"], plain.abilities["se"], rtol=1e-9)


def test_proxy_from_fit_uses_the_fitted_items():
    from latentbench.select._proxy import LowRankProxy

    data = simulate_2pl(30, 25, random_state=2)
    result = TwoPL().fit(data.matrix)
    proxy = LowRankProxy.from_fit(result)
    np.testing.assert_allclose(
        proxy.predict(result.U, np.float64), result.predict_proba(), atol=1e-6
    )


# ----------------------------------------------------------------------------- layering
def test_io_and_irt_import_nothing_above_them():
    import ast
    from pathlib import Path

    import latentbench

    root = Path(latentbench.__file__).parent
    above = ("latentbench.select", "latentbench.report", "latentbench.cli", "latentbench.synthetic")
    for package in ("io", "irt"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                for name in names:
                    assert not name.startswith(above), f"{path.name} imports {name}"
    code = (
        "import sys, latentbench.io, latentbench.irt\n"
        f"print(sorted(m for m in sys.modules if m.startswith({above!r})),"
        " sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'requests', 'urllib3')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[] []", out


def test_softplus_equals_logaddexp_within_rounding():
    from latentbench.irt._objective import softplus

    x = np.concatenate(
        [
            np.random.default_rng(0).normal(scale=20, size=10_000),
            [0.0, -0.0, 1e-300, -1e-300, 36.0, -36.0, 709.0, -745.0, 800.0, -800.0],
        ]
    )
    np.testing.assert_allclose(softplus(x), np.logaddexp(0.0, x), rtol=1e-15, atol=0)
    assert softplus(np.array([np.inf]))[0] == np.inf
    assert softplus(np.array([-np.inf]))[0] == 0.0
    assert np.isnan(softplus(np.array([np.nan]))[0])


def test_ridge_value_keeps_the_bits_of_np_sum() -> None:
    """The ridge penalty's value reduces NumPy arrays with ``np.add.reduce`` (what ``np.sum``
    calls for an ndarray, without its Python wrapper: measured 11.6 -> 4.8 us a call on a
    history-free refit's 3 x 600 point, evaluated up to three times a sweep): the value
    ``np.sum`` gives, bit for bit, on C, Fortran and strided arrays; other array types
    (a subclass here) keep ``np.sum``."""
    rng = np.random.default_rng(0)
    penalty = GaussianPenalty.ridge(0.037)
    big = rng.normal(size=(40, 900))
    points = [
        (rng.normal(size=(3, 1)), rng.normal(size=(600, 1)), rng.normal(size=600)),
        (rng.normal(size=(25, 3)), np.asfortranarray(rng.normal(size=(777, 3))),
         rng.normal(size=777)),
        (big[::3, ::40], big[1::2, 5:900:7].T, big[7, ::2]),
    ]  # fmt: skip
    for U, V, b in points:
        want = 0.5 * 0.037 * (float(np.sum(U * U)) + float(np.sum(V * V)) + float(b @ b))
        assert penalty.value(U, V, b) == want
        sub = np.ma.masked_array(U)  # an ndarray subclass: np.sum's path, as before
        assert penalty.value(sub, V, b) == want
