"""Sparse-native cBMM: observed-cells storage, monotone fit, same optimum as the dense path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.io._cells import ObservedCells
from latentbench.irt import fit_cbmm
from latentbench.irt._cbmm import initial_parameters
from latentbench.irt._sparse import fit_sparse, predict_cells
from latentbench.irt.baselines import objective


def _data(n: int, m: int, missing: float, seed: int = 0, rank: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n, rank))
    V = rng.uniform(0.5, 1.0, size=(m, rank))
    b = rng.normal(0, 0.5, m)
    p = 1 / (1 + np.exp(-(U @ V.T + b)))
    Y = (rng.random((n, m)) < p).astype(np.float32)
    Y[rng.random((n, m)) < missing] = np.nan
    return Y


def test_cells_round_trip_and_orders() -> None:
    Y = _data(40, 30, 0.7, seed=1)
    Y[3, 5] = 0.0  # an observed zero is kept, never dropped
    cells = ObservedCells.from_dense(Y)
    assert cells.n_observed == int((~np.isnan(Y)).sum())
    np.testing.assert_array_equal(np.isnan(cells.to_dense()), np.isnan(Y))
    np.testing.assert_array_equal(np.nan_to_num(cells.to_dense(), nan=-1), np.nan_to_num(Y, nan=-1))
    np.testing.assert_array_equal(cells.row_counts(), (~np.isnan(Y)).sum(1))
    np.testing.assert_array_equal(cells.col_counts(), (~np.isnan(Y)).sum(0))
    np.testing.assert_allclose(cells.col_sums(), np.nansum(Y, axis=0), rtol=1e-6)
    # columns increase within each row, rows within each column
    for i in range(Y.shape[0]):
        assert np.all(np.diff(cells.row_cols[cells.row_ptr[i] : cells.row_ptr[i + 1]]) > 0)
    for j in range(Y.shape[1]):
        assert np.all(np.diff(cells.col_rows[cells.col_ptr[j] : cells.col_ptr[j + 1]]) > 0)


def test_cells_reject_bad_input() -> None:
    with pytest.raises(InputError, match="appears twice"):
        ObservedCells.from_coo(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 0.0]), (2, 2))
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        ObservedCells.from_coo(np.array([0]), np.array([1]), np.array([np.nan]), (2, 2))
    with pytest.raises(InputError, match="column index"):
        ObservedCells.from_coo(np.array([0]), np.array([2]), np.array([1.0]), (2, 2))


@pytest.mark.parametrize("rank", [1, 2])
@pytest.mark.parametrize("tight", [True, False])
def test_objective_never_increases(rank: int, tight: bool) -> None:
    cells = ObservedCells.from_dense(_data(60, 80, 0.8, seed=2, rank=rank))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_sparse(cells, rank=rank, tight=tight, max_iter=300, check_monotone=True)
    assert np.all(np.diff(fit.loss_history) <= 1e-9 * abs(fit.loss_history[0]))
    assert np.all(fit.V >= 0)


def test_same_iterates_as_dense_on_complete_data() -> None:
    """With Böhning's bound and no rebalancing the sparse sweep is the dense sweep."""
    Y = _data(50, 70, 0.0, seed=3)
    for rank in (1, 2):
        start = initial_parameters(Y, rank, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dense = fit_cbmm(Y, rank=rank, init=start, max_iter=3, accelerate=False)
            sparse = fit_sparse(
                ObservedCells.from_dense(Y),
                rank=rank,
                init=start,
                max_iter=3,
                accelerate=False,
                rebalance=False,
                tight=False,
            )
        np.testing.assert_allclose(sparse.U, dense.U, atol=1e-5)
        np.testing.assert_allclose(sparse.V, dense.V, atol=1e-5)
        np.testing.assert_allclose(sparse.loss, dense.loss, rtol=1e-7)


@pytest.mark.parametrize("missing", [0.3, 0.6])
def test_same_optimum_as_dense(missing: float) -> None:
    Y = _data(80, 150, missing, seed=4)
    dense = fit_cbmm(Y, tol=1e-9, max_iter=20000)
    sparse = fit_sparse(ObservedCells.from_dense(Y), tol=1e-9, max_iter=20000)
    assert sparse.converged and dense.converged
    assert abs(sparse.loss - dense.loss) <= 1e-6 * abs(dense.loss)
    # the reported objective is the plain float64 objective of the returned parameters
    plain = objective(Y, sparse.U, sparse.V, sparse.b, 1.0, 1e-2)
    assert abs(plain - sparse.loss) <= 1e-6 * plain
    # logits of nearly separable items are barely determined: compare probabilities
    prob_sparse = 1 / (1 + np.exp(-(sparse.U @ sparse.V.T + sparse.b)))
    prob_dense = 1 / (1 + np.exp(-(dense.U @ dense.V.T + dense.b)))
    np.testing.assert_allclose(prob_sparse, prob_dense, atol=0.02)


def test_warm_start_and_fixed_items() -> None:
    Y = _data(100, 200, 0.9, seed=5)
    cells = ObservedCells.from_dense(Y)
    cold = fit_sparse(cells)
    warm = fit_sparse(cells, init=(cold.U, cold.V, cold.b))
    assert warm.n_iter < cold.n_iter
    assert warm.loss <= cold.loss + 1e-9 * abs(cold.loss)
    rows = fit_sparse(cells, fixed_items=(cold.V, cold.b), tol=1e-10)
    np.testing.assert_array_equal(rows.V, cold.V)
    # the best abilities for the cold fit's items are at least as good as the cold abilities
    assert rows.loss <= cold.loss + 1e-7 * abs(cold.loss)


def test_predict_cells_matches_dense_probabilities() -> None:
    rng = np.random.default_rng(6)
    U, V, b = rng.normal(size=(7, 2)), rng.random((9, 2)), rng.normal(size=9)
    rows, cols = rng.integers(0, 7, 20), rng.integers(0, 9, 20)
    full = 1 / (1 + np.exp(-(U @ V.T + b) / 1.5))
    np.testing.assert_allclose(predict_cells(U, V, b, rows, cols, 1.5), full[rows, cols])


def test_twopl_chooses_the_path_by_density_and_both_agree() -> None:
    from latentbench import ResponseMatrix
    from latentbench.irt import TwoPL

    # 22% observed: sparse path; enough cells per row and column for a single optimum (the
    # objective is not convex: on very sparse small data different paths can end at
    # different stationary points)
    Y = _data(200, 300, 0.78, seed=7)
    ids_m, ids_i = [f"m{i}" for i in range(200)], [f"q{j}" for j in range(300)]
    dense_matrix = ResponseMatrix(Y, ids_m, ids_i)
    rows, cols = np.nonzero(~np.isnan(Y))
    sparse_matrix = ResponseMatrix.from_cells(rows, cols, Y[rows, cols], ids_m, ids_i)
    model = TwoPL(tol=1e-9)
    assert model.uses_sparse_path(dense_matrix)
    assert not model.uses_sparse_path(ResponseMatrix(_data(20, 30, 0.1), range(20), range(30)))
    result = model.fit(sparse_matrix)
    forced_dense = fit_cbmm(Y, penalty=result.penalty, tol=1e-9, max_iter=20000)
    assert abs(result.loss - forced_dense.loss) <= 1e-6 * abs(forced_dense.loss)
    assert result.n_observed == rows.size
    picks = np.arange(0, rows.size, 97)
    np.testing.assert_allclose(
        result.predict_cells(rows[picks], cols[picks]),
        result.predict_proba()[rows[picks], cols[picks]],
        rtol=1e-8,
    )


_COLD_WARM = """
import sys
import numba
import numpy as np
from latentbench.io._cells import ObservedCells
from latentbench.irt import _sparse_kernels as kernels
from latentbench.irt._sparse import fit_sparse
from latentbench.synthetic import simulate_2pl

scores = simulate_2pl(60, 2000, missing=0.5, random_state=1).matrix.scores
cells = ObservedCells.from_dense(scores)
runs = []
for threads in sys.argv[1:]:  # the kernels' threads, each run in turn
    numba.set_num_threads(int(threads))
    out = []
    for rank in (1, 2):
        for sweeps in (1, 3):
            fit = fit_sparse(cells, rank=rank, tol=1e-14, max_iter=sweeps, accelerate=False)
            out.append(np.concatenate([fit.U.ravel(), fit.V.ravel(), fit.b.ravel()]))
    runs.append(np.concatenate(out).tobytes().hex())
hits = sum(k.stats.cache_hits[k.signatures[0]] for k in (kernels.column_pass, kernels.solve_models))
print(hits, *runs)
"""


def test_sparse_fit_is_the_same_compiled_and_loaded_from_the_numba_cache(tmp_path):
    """Same seed, same result whatever the state of numba's cache: the sparse cell pass
    compiled in the process (a fresh environment, an edited kernel) and loaded from the cache
    give the same bits, on any number of threads. Its flags had 'reassoc': numba links a
    parallel loop's body into the kernel and optimizes it again, and the process that compiled
    it ran the body optimized once, a process loading the cache the one optimized twice,
    reassociated differently (3e-16 apart after one sweep; a history-free replay of BFCL's
    candidates printed an upper bound 0.970 on a cold cache, 0.971 on a warm one). Two fresh
    processes sharing an empty cache folder: the first compiles, the second loads."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    runs = []
    # explicit thread counts: the suite's workers set NUMBA_NUM_THREADS=1 (tests/conftest.py),
    # which the processes inherited, so "any number of threads" compared 1 with 1. A pool of
    # 2 threads, each process running the fits on 2 and then on 1 of them (numba's
    # set_num_threads: a parallel loop is split among the threads in use); before, a third
    # process loaded the cache on NUMBA_NUM_THREADS=1 (~2.5 s of imports and loading)
    for _process in ("compiles", "loads"):
        env = {**os.environ, "PYTHONPATH": str(src), "NUMBA_CACHE_DIR": str(tmp_path / "nb")}
        env["NUMBA_NUM_THREADS"] = "2"
        done = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", _COLD_WARM, "2", "1"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        runs.append(done.stdout.split())
    assert [hits for hits, *_ in runs] == ["0", "2"]  # compiled, then loaded
    fits = [bits for _, *bits in runs]
    assert [len(bits) for bits in fits] == [2, 2]
    assert fits[0][0] == fits[0][1] == fits[1][0] == fits[1][1]


def _rebalance_as_written(U, V, b, penalty, nonneg):
    """The zero-mean rebalancing loop as first written (every term rebuilt at every pass):
    the reference :func:`latentbench.irt._sparse._rebalance` keeps the bits of."""
    r = U.shape[1]
    lam_u, lam_v, lam_b = penalty.precision_U, penalty.precision_V, penalty.precision_b
    before = penalty.value(U, V, b)
    n = U.shape[0]
    su, suu = U.sum(axis=0), (U * U).sum(axis=0)
    svv = (V * V).sum(axis=0)
    VtV, Vtb = V.T @ V, V.T @ b
    c, d = np.ones(r), np.zeros(r)
    for _ in range(20):
        A = lam_u * n * np.diag(c * c) + lam_b * VtV
        rhs = lam_b * Vtb - lam_u * c * c * su
        try:
            d = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            break
        spread = suu + 2 * d * su + n * d * d
        if np.any(spread <= 0) or np.any(svv <= 0):
            break
        c_new = (lam_v * svv / (lam_u * spread)) ** 0.25
        if np.max(np.abs(c_new / c - 1)) < 1e-12:
            c = c_new
            break
        c = c_new
    U_new, V_new, b_new = (U + d) * c, V / c, b - V @ d
    if nonneg:
        np.maximum(V_new, 0.0, out=V_new)
    if penalty.value(U_new, V_new, b_new) < before:
        return U_new, V_new, b_new
    return U, V, b


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_rebalancing_on_numbers_keeps_the_bits_of_the_loop_on_arrays(rank: int) -> None:
    """The rebalancing loop runs its per-factor arithmetic on Python floats (fewer array
    calls; measured 106 -> 68 us a call at rank 1 on the fits of a history-free selection):
    the same scale and shift bits as the loop on arrays, and the whole rebalancing the loop as
    first written's, including the inputs where a Python division would raise or a scale
    leaves (0, inf) (they hand over to the arrays: NumPy's inf and NaN). Fails before: there
    was no loop on numbers."""
    from latentbench.irt._objective import GaussianPenalty
    from latentbench.irt._sparse import _rebalance, _scales, _scales_on_arrays

    rng = np.random.default_rng(10 + rank)

    def inputs(lam, n, VtV, Vtb, su, suu, svv, flat=False):
        coupling = lam * VtV
        return (lam * n, coupling + 0.0, coupling.diagonal().copy(), lam * Vtb, su, suu,
                lam * svv, lam, n, flat)  # fmt: skip

    cases = []
    for _ in range(200):
        lam, n = rng.uniform(1e-3, 1.0), int(rng.integers(2, 40))
        V = rng.normal(0.5, 1.0, (int(rng.integers(5, 60)), rank))
        U = rng.normal(0.0, 2.0, (n, rank))
        cases.append(inputs(lam, n, V.T @ V, V.T @ rng.normal(0.0, 2.0, V.shape[0]),
                            U.sum(axis=0), (U * U).sum(axis=0), (V * V).sum(axis=0)))  # fmt: skip
    one, eye = np.ones(rank), np.eye(rank)
    cases += [
        inputs(0.01, 3, eye, one, one, 2 * one, 0 * one),  # pull 0: a scale of 0
        inputs(1e-200, 3, 0 * eye, 0 * one, 0 * one, 1e-200 * one, 1e200 * one),  # underflow
        inputs(0.01, 3, eye, one, one, np.inf * one, one),  # spread inf: a scale of 0
        inputs(0.01, 3, eye, one, one, np.nan * one, one),  # NaN: a NaN scale
        inputs(0.01, 3, eye, one, one, 2 * one, np.inf * one),  # an infinite scale
        inputs(0.01, 3, eye, one, one, -2 * one, one),  # spread <= 0: stop at once
        inputs(0.01, 3, eye, one, one, 2 * one, one, flat=True),  # a flat column
    ]
    with np.errstate(all="ignore"):
        for args in cases:
            got, want = _scales(*args), _scales_on_arrays(*args)
            assert [x.tobytes() for x in got] == [x.tobytes() for x in want], args
        singular = inputs(0.01, 3, eye, one, one, 2 * one, one)
        singular = (0.0, 0 * eye, 0 * one, *singular[3:7], 0.0, 3, False)  # A = 0
        got, want = _scales(*singular), _scales_on_arrays(*singular)
        assert [x.tobytes() for x in got] == [x.tobytes() for x in want]
    # the whole rebalancing, against the loop as first written, at extreme scales
    points = [(rng.normal(0.0, 2.0, (5, rank)) * s, rng.normal(0.5, 1.0, (80, rank)) / s,
               rng.normal(0.0, 2.0, 80)) for s in (1e-150, 1e-8, 1.0, 1e8, 1e150)]  # fmt: skip
    with np.errstate(all="ignore"):
        for penalty in (GaussianPenalty.ridge(1e-2), GaussianPenalty(0.5, 2.0, 0.0)):
            for U, V, b in points:
                for nonneg in (True, False):
                    got = _rebalance(U, V, b, penalty, nonneg)
                    want = _rebalance_as_written(U, V, b, penalty, nonneg)
                    assert [x.tobytes() for x in got] == [x.tobytes() for x in want]


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_rebalancing_keeps_the_bits_of_the_loop_as_written(rank: int) -> None:
    """The loop's invariant terms are computed once (lam_b V^T V, lam_b V^T b, lam_v |v|^2,
    lam_u n) and A is filled in place: the same operations on the same operands, so the same
    bits, at every rank, with an off-diagonal zero's sign, with or without V >= 0, and where
    the loop breaks at once (a column of V all zero)."""
    from latentbench.irt._objective import GaussianPenalty
    from latentbench.irt._sparse import _rebalance

    rng = np.random.default_rng(rank)
    cases = []
    for k in range(12):
        U = rng.normal(0.0, 2.0, (3 + 5 * k, rank)) + rng.normal(0.0, 1.0, rank)
        V = rng.normal(0.5, 1.0, (60 + 40 * k, rank)) * rng.uniform(0.1, 3.0, rank)
        b = rng.normal(0.0, 2.0, V.shape[0])
        cases.append((U, V, b))
    zero = cases[0][1].copy()
    zero[:, 0] = 0.0  # |v_1|^2 = 0: the loop stops after its first shift
    cases.append((cases[0][0], zero, cases[0][2]))
    for penalty in (GaussianPenalty.ridge(1e-2), GaussianPenalty(0.5, 2.0, 0.0)):
        for U, V, b in cases:
            for nonneg in (True, False):
                got = _rebalance(U, V, b, penalty, nonneg)
                want = _rebalance_as_written(U, V, b, penalty, nonneg)
                for x, y in zip(got, want, strict=True):
                    assert x.shape == y.shape and x.tobytes() == y.tobytes()


def test_rebalancing_on_numbers_keeps_the_warnings_of_the_loop_on_arrays() -> None:
    """A pass whose arithmetic leaves the finite numbers (a shift whose square overflows, a
    spread of inf - inf) warned on arrays (NumPy's RuntimeWarning) and was silent on Python
    floats when the loop then stopped (a flat factor, a spread <= 0): such a pass now hands
    over to the loop on arrays, the same bits and the same warnings."""
    from latentbench.irt._sparse import _scales, _scales_on_arrays

    one = np.ones(1)
    cases = [  # (target, su, flat): d = 5e299, whose square overflows; then stops
        (np.array([1e300]), np.zeros(1), True),
        (np.array([1e300]), np.full(1, -1e10), False),  # suu + 2 d su + n d d = -inf + inf
    ]
    for target, su, flat in cases:
        args = (1.0, one[:, None].copy(), one, target, su, one, one, 1.0, 1, flat)
        said = []
        for scales in (_scales, _scales_on_arrays):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                c, d = scales(*args)
            said.append((c.tobytes(), d.tobytes(), sorted(str(w.message) for w in caught)))
        assert said[0] == said[1] and said[1][2], said
