"""The estimate / compare engine's cheaper rounds give the bits of the plain formulas.

:class:`WeightedBettingCS` keeps its first and last alive candidates instead of scanning the
grid, computes the bets' truncation once per stake and evaluates ``logaddexp`` only where the
larger term does not decide the rejection; :class:`SequentialEstimate` at rank 1 does its
Newton steps on numbers instead of 1-element arrays. Each is checked here against the plain
formulas (the code they replaced, written out), bit for bit, round after round.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from latentbench.select._estimate_calibration import from_matrix
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import SequentialEstimate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_estimate_audit import matrix, simulate


def test_at_least_decides_as_numpy_logaddexp():
    """``_at_least(a, b, t)`` is ``np.logaddexp(a, b) >= t`` everywhere: at the threshold,
    just around it and ``log 2`` below it, for equal terms, infinities and NaN."""
    from latentbench.select._estimate_cs import _at_least

    t = math.log(1 / 0.2)
    rng = np.random.default_rng(0)
    near = t + np.concatenate([rng.normal(0, 1, 4000), rng.normal(-math.log(2), 1e-12, 500)])
    a = np.concatenate([near, near, [t, t, t - math.log(2)] * 2])
    b = np.concatenate([near - rng.exponential(1, near.size), near, [t, -np.inf, t - math.log(2)]])
    b = np.concatenate([b, [np.inf, np.nan, -np.inf]])
    a[:20] = np.nextafter(t, -np.inf) - np.arange(20) * 1e-16  # a ulp or a few below
    pairs = [(a, b), (b, a)]
    for x, y in pairs:
        with np.errstate(invalid="ignore"):
            expected = np.logaddexp(x, y) >= t
        assert np.array_equal(_at_least(x, y, t), expected)


def _reference_round(cs: dict, z: float, lo: float, hi: float, v: float, center: float) -> None:
    """One round of the sequence as it was computed before (every process, every candidate
    alive between the first and last found by a scan, ``logaddexp`` everywhere)."""
    v = max(float(v), 1e-12)
    if cs["count"] == 0:
        cs["v_ref"] = v
    cs["effective"] += cs["v_ref"] / v
    rho = min(max(cs["rho_sum"] / cs["rho_count"], 0.05), 50.0)
    k = cs["horizons"].size
    base = np.sqrt(2.0 * cs["bet_log"][:k] / (rho * np.maximum(cs["effective"], cs["horizons"])))
    scale = math.sqrt(cs["v_ref"]) / v
    bets = np.empty(cs["log"].shape[0])
    np.multiply(base, scale, out=bets[:k])
    if cs["target"] is not None:
        now = math.sqrt(2.0 * cs["bet_log"][k] / (rho * cs["effective"])) * scale
        bets[k] = min(cs["target"] / (rho * v), now)
    alive = (~cs["rejected"]).nonzero()[0]
    if alive.size:
        sl = slice(int(alive[0]), int(alive[-1]) + 1)
        m = cs["grid"][sl]
        gap = np.stack([m - lo, hi - m])
        x = np.stack([z - m, -(z - m)])
        with np.errstate(divide="ignore"):
            cap = np.where(gap > 0, cs["c"][:, :, None] / np.maximum(gap, 1e-300), np.inf)
        log = cs["log"][:, :, sl]
        log += np.log1p(np.maximum(np.minimum(bets[:, None, None], cap) * x, -0.999))
        a = log + cs["log_weight"][:, None, None]
        top = np.maximum.reduce(a, axis=0)
        mix = top + np.log(np.add.reduce(np.exp(a - top), axis=0))
        log_capital = np.logaddexp(math.log(0.5) + mix[0], math.log1p(-0.5) + mix[1])
        impossible = (m < lo - 1e-9) | (m > hi + 1e-9)
        cs["rejected"][sl] |= impossible | (log_capital >= cs["threshold"])
    cs["rho_sum"] += (float(z) - float(center)) ** 2 / v
    cs["rho_count"] += 1.0
    cs["count"] += 1


@pytest.mark.parametrize("target", [None, 0.02])
def test_sequence_rounds_are_the_full_scan_bits(target, monkeypatch):
    """Every round's capital, rejections and interval equal the plain computation's bit for
    bit (a run that narrows, then rounds that contradict it until every candidate is
    rejected); the first and last alive candidates are kept, not scanned for; ``logaddexp``
    is evaluated on a minority of the candidates updated."""
    cs = WeightedBettingCS(0.2, target=target)
    ref = {
        "log": np.zeros_like(cs._log),
        "rejected": np.zeros_like(cs._rejected),
        "grid": cs._grid.copy(),
        "c": cs._c.copy(),
        "log_weight": cs._log_weight.copy(),
        "bet_log": cs._bet_log.copy(),
        "horizons": cs._horizons.copy(),
        "threshold": cs._threshold,
        "target": target,
        "v_ref": 0.0,
        "effective": 0.0,
        "rho_sum": 1.0,
        "rho_count": 1.0,
        "count": 0,
    }
    evaluated, updated, counting = [0], [0], [False]
    logaddexp = np.logaddexp

    def counted(x, y):
        evaluated[0] += np.size(x) if counting[0] else 0
        return logaddexp(x, y)

    # one round first: the sequence's numba kernels compiled (or loaded) before numpy is
    # patched (numba reads numpy's ufuncs when it first compiles in a process)
    WeightedBettingCS(0.2, target=target).update(0.5, 0.0, 1.0, 0.01, 0.5)
    monkeypatch.setattr(np, "logaddexp", counted)
    rng = np.random.default_rng(3)
    for t in range(400):
        mu = 0.62 if t < 300 else 0.05  # then far from everything still alive
        v = rng.uniform(0.002, 0.02)
        # ranges that end inside the span of live candidates now and then (impossible
        # candidates, bets truncated at zero gaps), beyond the grid otherwise
        lo, hi = (-0.5, 1.5)
        if t % 20 == 0:
            lo, hi = mu - rng.uniform(0.02, 0.2), mu + rng.uniform(0.02, 0.2)
        z = float(np.clip(mu + rng.normal(0, math.sqrt(v)), lo, hi))
        center = mu + rng.normal(0, 0.01)
        alive = np.flatnonzero(~ref["rejected"])
        updated[0] += int(alive[-1] - alive[0] + 1) if alive.size else 0
        _reference_round(ref, z, lo, hi, v, center)
        counting[0] = True
        cs.update(z, lo, hi, v, center, (0.0, 1.0))
        counting[0] = False
        assert np.array_equal(cs._log, ref["log"]) and np.array_equal(cs._rejected, ref["rejected"])
        alive = np.flatnonzero(~ref["rejected"])
        assert cs._alive == ((int(alive[0]), int(alive[-1])) if alive.size else cs._alive)
        if alive.size:
            below = ref["grid"][alive[0] - 1] if alive[0] >= 1 else 0.0
            above = ref["grid"][alive[-1] + 1] if alive[-1] + 1 < ref["grid"].size else 1.0
            assert (cs.lower, cs.upper) == (max(below, 0.0), max(min(above, 1.0), max(below, 0.0)))
            assert cs.excludes_at_or_below(0.5) == (alive[0] >= 1 and 0.5 <= below)
            assert cs.excludes_at_or_above(0.5) == (
                alive[-1] + 1 < ref["grid"].size and 0.5 >= above
            )
        else:
            assert not cs.excludes_at_or_below(0.5) and not cs.excludes_at_or_above(0.5)
    assert cs.contradicted_at is not None  # the contradicting rounds emptied the grid
    assert 0 < evaluated[0] < updated[0] / 3, (evaluated, updated)


def _reference_fit(X, c, y, z, steps):
    """The rank-1 Newton steps on 1-element arrays, as :meth:`SequentialEstimate._fit` did."""
    XT, eye = X.T, np.eye(1)
    for _ in range(steps):
        p = 0.5 * (1.0 + np.tanh(0.5 * (X @ z + c)))
        grad = XT @ (p - y) + z
        H = (XT * (p * (1.0 - p))) @ X + eye
        step = grad / H[0]
        norm = math.sqrt(float(step @ step))
        if norm > 1.0:
            step = step / norm
        z = z - step
    p = 0.5 * (1.0 + np.tanh(0.5 * (X @ z + c)))
    H = (XT * (p * (1.0 - p))) @ X + eye
    return z, 1.0 / H


def test_rank1_posterior_is_the_matrix_formulas_bits():
    """At rank 1 the posterior mode, its curvature and the predictions after every answer are
    the matrix formulas' bit for bit (answers that saturate included: the trust region)."""
    Y = simulate(31, 300, 2, seed=4)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.2)
    assert seq._v is not None  # the rank-1 path
    Vw, bw, sigma = seq.Vw, seq.bw, seq.sigma
    rng = np.random.default_rng(5)
    z, Hinv = np.zeros(1), np.eye(1)
    for t, j in enumerate(rng.permutation(cal.n_items)[:120]):
        y = 1.0 if t < 40 else float(Y[30, j])  # 40 right answers first: big steps
        seq.unrevealed[j] = False
        seq.order.append(int(j))
        seq.answers.append(y)
        steps = seq.newton_steps if len(seq.order) > 1 else 5
        seq._fit(steps)
        seq._predict()
        idx = np.asarray(seq.order)
        X, c = Vw[idx] / sigma, bw[idx] / sigma
        z, Hinv = _reference_fit(X, c, np.asarray(seq.answers), z, steps)
        mu = (Vw @ z + bw) / sigma
        s2 = ((Vw @ Hinv) * Vw).sum(axis=1) / sigma**2
        x = mu / np.sqrt(1.0 + np.pi * np.maximum(s2, 0.0) / 8.0)
        f = 0.5 * (1.0 + np.tanh(0.5 * x))
        assert seq.z.tobytes() == z.tobytes() and seq.Hinv.tobytes() == Hinv.tobytes(), t
        assert seq.f.tobytes() == f.tobytes(), t


def _reference_observe(seq: SequentialEstimate, j: int, y: float, pi: np.ndarray) -> tuple:
    """The round ``(z, lo, hi, variance, center)`` of :meth:`SequentialEstimate.observe` by
    its formulas over every item, the revealed ones masked (the code it replaced)."""
    n, U, W = seq.n, seq.unrevealed, seq.W
    f = seq.f
    Wf = W * f if seq.weighted else f
    center = (seq.revealed_sum + float(Wf[U].sum())) / n
    z = center + W[j] * (y - f[j]) / (n * pi[j])
    safe = np.where(U, n * pi, 1.0)
    lo = center + float(np.where(U, -Wf / safe, np.inf).min())
    hi = center + float(np.where(U, (W - Wf) / safe, -np.inf).max())
    var = np.maximum(f * (1.0 - f), 0.01)
    spread = seq.W2[U] * var[U] if seq.weighted else var[U]
    variance = max(float((spread / pi[U]).sum()) / n**2, 1e-12)
    return z, lo, hi, variance, center


@pytest.mark.parametrize("weighted", [False, True])
def test_a_round_over_the_unrevealed_items_is_the_masked_formulas_bits(weighted):
    """:meth:`SequentialEstimate.observe` computes a round's sums, range and predicted variance
    on the unrevealed items only: the same bits as over every item with the revealed ones
    masked, round after round (plain and weighted), and the design zeroes the revealed items
    as ``np.where`` did."""
    Y = simulate(31, 300, 2, seed=4)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    w = np.random.default_rng(1).uniform(0.5, 2.0, cal.n_items) if weighted else None
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.2, weights=w)
    rng = np.random.default_rng(5)
    for t in range(80):
        j, pi = seq.choose(rng)
        if not weighted:  # the design: where(unrevealed, q, 0) normalised, with the floor
            q = np.where(seq.unrevealed, np.sqrt((seq.f * (1.0 - seq.f)).clip(0.0, 0.25)), 0.0)
            count = int(seq.unrevealed.sum())
            expected = (1.0 - seq.floor) * q / q.sum() + seq.floor * (seq.unrevealed / count)
            assert pi.tobytes() == expected.tobytes(), t
        y = float(Y[30, j])
        want = _reference_observe(seq, j, y, pi)
        seq.observe(j, y, pi)
        assert seq.last_round is not None
        assert tuple(float(v) for v in seq.last_round[:5]) == tuple(float(v) for v in want), t


def test_pairwise_sum_is_numpy_s_bits():
    """The kernels' sum over the unrevealed items is ``np.add.reduce``'s pairwise sum bit for
    bit: every length up to 600 (the block of 128, its multiples of 8 and the rest) and
    lengths up to 50,000, of numbers of one sign, of mixed signs over ten decades, and of
    ratios (a round's spread over its probabilities)."""
    from latentbench.select._estimate_design import _pairwise_sum

    rng = np.random.default_rng(0)
    sizes = list(range(600)) + [int(k) for k in rng.integers(600, 50_000, 300)]
    for i, n in enumerate(sizes):
        kind = i % 3
        if kind == 0:
            a = rng.random(n)
        elif kind == 1:
            a = rng.normal(size=n) * 10.0 ** rng.integers(-5, 5, n)
        else:
            a = rng.random(n) / rng.random(n)
        assert np.float64(_pairwise_sum(a)).tobytes() == np.add.reduce(a).tobytes(), n


def _reference_draw(pi, unrevealed, rng, order):
    """:func:`draw_item` as it was written in numpy (the code the kernel replaced)."""
    ranked = pi[order]
    cum = np.cumsum(ranked)
    k = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), pi.size - 1)
    while not unrevealed[order[k]] or ranked[k] <= 0:
        k -= 1
    return int(order[k])


def test_draw_item_is_the_cumsum_searchsorted_draw():
    """:func:`draw_item` draws the item the numpy cumulative sum and ``searchsorted`` drew,
    from the same uniform number, over designs with revealed items, zero probabilities and
    a last item drawn past the rounding of the cumulative sum."""
    from latentbench.select._estimate_design import draw_item

    rng = np.random.default_rng(3)
    for t in range(3000):
        n = int(rng.integers(1, 400))
        unrevealed = rng.random(n) < rng.uniform(0.05, 1.0)
        unrevealed[rng.integers(n)] = True
        pi = np.where(unrevealed, rng.random(n) * (rng.random(n) < 0.9), 0.0)
        if not pi.any():
            pi[unrevealed.nonzero()[0][0]] = 1.0
        pi /= pi.sum()
        order = rng.permutation(n)
        seed = int(rng.integers(2**32))
        got = draw_item(pi, unrevealed, np.random.default_rng(seed), order)
        assert got == _reference_draw(pi, unrevealed, np.random.default_rng(seed), order), t


@pytest.mark.parametrize("proposal", ["residual", "information", "uniform"])
def test_an_unweighted_design_is_the_numpy_design_bits(proposal):
    """``design_probabilities`` without weights (one fused kernel) gives the numpy formulas'
    bits for every proposal, saturated predictions (all ``q`` zero: the uniform design)
    included."""
    from latentbench.select._estimate_design import design_probabilities

    rng = np.random.default_rng(8)
    for t in range(400):
        n = int(rng.integers(1, 300))
        f = rng.random(n)
        if t % 10 == 0:
            f = (f < 0.5).astype(float)  # saturated: every q is 0
        unrevealed = rng.random(n) < 0.7
        norm2 = rng.random(n) * 3.0
        floor = float(rng.uniform(0.05, 1.0))
        count = int(unrevealed.sum())
        var = (f * (1.0 - f)).clip(0.0, 0.25)
        q = {"residual": np.sqrt(var), "information": norm2 * var}.get(proposal, np.ones(n))
        q[~unrevealed] = 0.0
        uniform = unrevealed / max(count, 1)
        total = float(q.sum())
        ok = count and np.isfinite(total) and total > 0
        want = (1.0 - floor) * q / total + floor * uniform if ok else uniform * (count > 0)
        got = design_probabilities(f, unrevealed, floor, proposal, norm2)
        assert got.tobytes() == np.asarray(want, dtype=np.float64).tobytes(), t


def test_a_paired_round_is_the_numpy_round_bits():
    """``compare``'s unweighted design and round (:func:`_paired_design`,
    :func:`_paired_round`) give the bits of the numpy expressions they replaced, over random
    predictions, revealed sets and floors (saturated predictions: the uniform design)."""
    from latentbench.select._estimate_design import _paired_design, _paired_round

    rng = np.random.default_rng(11)
    for t in range(400):
        n = int(rng.integers(1, 300))
        fa, fb = rng.random(n), rng.random(n)
        if t % 10 == 0:
            fa, fb = (fa < 0.5).astype(float), (fb < 0.5).astype(float)
        unrevealed = rng.random(n) < 0.7
        unrevealed[rng.integers(n)] = True
        floor, revealed = float(rng.uniform(0.05, 1.0)), float(rng.normal())
        count = int(unrevealed.sum())
        U = unrevealed.nonzero()[0]
        fa_u, fb_u = fa[U], fb[U]
        g_u = fa_u - fb_u
        var_u = (fa_u * (1 - fa_u)).clip(0, 0.25) + (fb_u * (1 - fb_u)).clip(0, 0.25)
        q = np.zeros(n)
        q[U] = np.sqrt(var_u)
        total = q.sum()
        pi = (1 - floor) * q / total + floor * unrevealed / count if total > 0 else (
            unrevealed / count)  # fmt: skip
        got = _paired_design(fa, fb, unrevealed, floor, count)
        assert got.tobytes() == pi.tobytes(), t
        j = int(rng.choice(U))
        d = float(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0]))
        npi_u = n * pi[U]
        center = (revealed + g_u.sum()) / n
        z = center + (d - (fa[j] - fb[j])) / (n * pi[j])
        lo = center + float(((-1.0 - g_u) / npi_u).min())
        hi = center + float(((1.0 - g_u) / npi_u).max())
        v = float((np.maximum(var_u, 2 * 0.01) / pi[U]).sum()) / n**2
        want = tuple(float(x) for x in (center, z, lo, hi, v))
        assert _paired_round(fa, fb, pi, unrevealed, j, d, revealed, 2 * 0.01) == want, t


def test_draw_item_refuses_a_design_with_no_item_to_draw():
    """A design with no unrevealed item of positive probability (every item revealed, or
    every probability zero) has nothing to draw: an InputError naming ``pi``. The numpy
    draw raised an IndexError; the kernel, without bounds checks, walked off the start of
    ``order`` and returned an index outside the population or crashed the process."""
    from latentbench.exceptions import InputError
    from latentbench.select._estimate_design import draw_item

    n = 5
    order = np.arange(n)
    cases = [
        (np.zeros(n), np.ones(n, dtype=bool)),  # every probability zero
        (np.full(n, 0.2), np.zeros(n, dtype=bool)),  # every item revealed
        (np.array([0.0, 0.5, 0.0, 0.5, 0.0]), np.array([True, False, True, False, True])),
    ]
    for pi, unrevealed in cases:
        with pytest.raises(InputError, match=r"pi: no unrevealed item"):
            draw_item(pi, unrevealed, np.random.default_rng(0), order)


def test_draw_item_with_nan_or_float32_probabilities_is_the_numpy_draw():
    """Probabilities the package's designs never give (a NaN, a float32 array, a
    non-contiguous one) still draw the item the numpy cumulative sum and ``searchsorted``
    drew: ``searchsorted`` puts a NaN after every number (a NaN total: the last item), and
    a float32 cumulative sum is summed in float32."""
    from latentbench.select._estimate_design import draw_item

    rng = np.random.default_rng(5)
    for t in range(600):
        n = int(rng.integers(1, 60))
        unrevealed = rng.random(n) < 0.8
        unrevealed[rng.integers(n)] = True
        pi = np.where(unrevealed, rng.random(n), 0.0)
        kind = t % 3
        if kind == 0:  # a NaN somewhere (an unrevealed item stays drawable after it)
            pi[rng.integers(n)] = np.nan
            pi[unrevealed.nonzero()[0][-1]] = 0.5
        elif kind == 1:
            pi = (pi / pi.sum()).astype(np.float32)
        else:
            pi = np.repeat(pi, 2)[::2]
        order = rng.permutation(n)
        seed = int(rng.integers(2**32))
        got = draw_item(pi, unrevealed, np.random.default_rng(seed), order)
        assert got == _reference_draw(pi, unrevealed, np.random.default_rng(seed), order), t
    # a float32 design whose float32 and float64 cumulative sums straddle the uniform (found
    # by search: the 448th of these designs with seed 447; the kernel drew the next item)
    rng = np.random.default_rng(7)
    for _ in range(448):
        pi = rng.random(3000).astype(np.float32)
    unrevealed, order = np.ones(3000, dtype=bool), np.arange(3000)
    want = _reference_draw(pi, unrevealed, np.random.default_rng(447), order)
    assert want == 1921
    assert draw_item(pi, unrevealed, np.random.default_rng(447), order) == want


def test_an_unweighted_design_refuses_arrays_of_other_shapes_as_numpy_did():
    """``design_probabilities`` with ``norm2`` or ``unrevealed`` of another length than
    ``f`` raises as the numpy expressions did (the kernel read past the shorter array)."""
    from latentbench.select._estimate_design import design_probabilities

    f = np.linspace(0.1, 0.9, 50)
    with pytest.raises(ValueError):
        design_probabilities(f, np.ones(50, dtype=bool), 0.5, "information", np.ones(10))
    with pytest.raises(IndexError):
        design_probabilities(f, np.ones(10, dtype=bool), 0.5, "residual", np.ones(50))


def test_a_design_refuses_a_proposal_it_does_not_know():
    """An unknown proposal fell back to a uniform design without a word (the public callers
    check the name first; the design itself now does too, weighted or not)."""
    from latentbench.exceptions import InputError
    from latentbench.select._estimate_design import design_probabilities

    f, unrevealed = np.linspace(0.1, 0.9, 50), np.ones(50, dtype=bool)
    for weights in (None, np.ones(50)):
        with pytest.raises(InputError, match="proposal='fisher'; expected one of residual"):
            design_probabilities(f, unrevealed, 0.5, "fisher", np.ones(50), weights=weights)


def test_a_round_of_a_float32_design_is_the_numpy_round_bits():
    """:meth:`SequentialEstimate.observe` given a float32 design computes its round as the
    numpy expressions did (``n * pi`` in float32), not the float64 kernel's other bits."""
    Y = simulate(31, 300, 2, seed=4)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.2)
    rng = np.random.default_rng(5)
    for t in range(20):
        j, pi = seq.choose(rng)
        pi32 = pi.astype(np.float32)
        y = float(Y[30, j])
        want = _reference_observe(seq, j, y, pi32)
        seq.observe(j, y, pi32)
        assert seq.last_round is not None
        assert tuple(float(v) for v in seq.last_round[:5]) == tuple(float(v) for v in want), t


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference's 0 / 0
def test_a_round_with_a_nan_ratio_has_numpy_s_nan_range():
    """A NaN among the unrevealed items' ratios (a NaN probability, or 0 / 0 where a
    probability is 0) makes the round's range NaN, as ``ndarray.min``/``max`` did: the
    kernels' running minimum and maximum kept the numbers and dropped the NaN."""
    from latentbench.select._estimate_design import _paired_round, _plain_round

    rng = np.random.default_rng(12)
    for t in range(200):
        n = int(rng.integers(2, 80))
        unrevealed = rng.random(n) < 0.7
        j = int(rng.integers(n))
        unrevealed[j] = True
        f, fb = rng.random(n), rng.random(n)
        pi = np.where(unrevealed, rng.random(n) + 0.01, 0.0)
        pi /= pi.sum()
        k = int(rng.integers(n))
        unrevealed[k] = True  # an unrevealed item k != j with a NaN ratio
        if t % 2:
            pi[k] = np.nan
        else:  # -0 / 0 (plain), 0 / 0 (paired)
            pi[k], f[k], fb[k] = 0.0, 0.0, 1.0
        if k == j:
            continue
        U = unrevealed.nonzero()[0]
        y, revealed = float(rng.random()), float(rng.random())
        center = (revealed + float(f[U].sum())) / n
        lo = center + float((-f[U] / (n * pi[U])).min())
        hi = center + float(((1.0 - f[U]) / (n * pi[U])).max())
        got = _plain_round(f, pi, unrevealed, j, y, revealed, 0.01)
        assert np.isnan(lo), t  # (-0 / 0, or a NaN probability)
        assert np.array_equal([lo, hi], got[2:4], equal_nan=True), t  # (any NaN's sign)
        g_u = f[U] - fb[U]
        center = (revealed + g_u.sum()) / n
        lo = center + float(((-1.0 - g_u) / (n * pi[U])).min())
        hi = center + float(((1.0 - g_u) / (n * pi[U])).max())
        got = _paired_round(f, fb, pi, unrevealed, j, 1.0, revealed, 0.02)
        assert np.isnan(lo), t  # (0 / 0, or a NaN probability)
        assert np.array_equal([lo, hi], got[2:4], equal_nan=True), t  # (any NaN's sign)
