"""Betting confidence sequences: coverage under adaptive batches and sampling without
replacement, zero width at full enumeration, and simultaneous coverage over arms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select._betting import BettingConfSeq


def _population(n: int, p: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(np.float64)


@pytest.mark.parametrize(
    ("lam", "horizons"), [(0.0, (32,)), (0.8, (32,)), (0.0, None), (0.8, (8, 64))]
)
def test_coverage_adaptive_batches_without_replacement(lam, horizons):
    """One arm, alpha = 0.2, no union bound: the interval covers the finite-population mean
    at every batch in >= 1 - alpha of the runs, with batch sizes chosen from the past."""
    n, alpha, reps = 300, 0.2, 300
    y = _population(n, 0.7, 0)
    f = np.clip(y * 0.6 + 0.2 + np.random.default_rng(1).normal(0, 0.2, n), 0, 1)  # informative
    mu = y.mean()
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(reps):
        order = rng.permutation(n)
        kw = {} if horizons is None else {"horizons": horizons}
        cs = BettingConfSeq(1, n, alpha, union=False, **kw)
        t, ok = 0, True
        while t < n:
            lo, hi = cs.interval()
            size = 4 if hi[0] - lo[0] > 0.3 else 16  # adaptive: depends on the past only
            batch = order[t : t + size]
            rest = order[t:]
            cs.update(0, y[batch], f[batch], lam, f[rest].sum(), f[rest].min(), f[rest].max())
            t += batch.size
            lo, hi = cs.interval()
            ok &= bool(lo[0] - 1e-12 <= mu <= hi[0] + 1e-12)
        covered += ok
    rate = covered / reps
    assert rate >= 1 - alpha - 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_full_enumeration_is_exact_and_width_shrinks():
    n = 257
    y = np.random.default_rng(3).random(n)  # fractional scores
    f = np.full(n, 0.5)
    order = np.random.default_rng(4).permutation(n)
    cs = BettingConfSeq(2, n, 0.05)
    widths = []
    for t in range(0, n, 32):
        batch, rest = order[t : t + 32], order[t:]
        cs.update(1, y[batch], f[batch], 0.5, f[rest].sum(), 0.5, 0.5)
        lo, hi = cs.interval()
        widths.append(hi[1] - lo[1])
    assert lo[1] == hi[1] == pytest.approx(y.mean(), abs=1e-12)
    clo, chi = cs.certificate()
    assert clo[1] == chi[1] == pytest.approx(y.mean(), abs=1e-12)
    assert widths[-2] < widths[0] < 1.0
    assert cs.interval()[0][0] == 0.0 and cs.interval()[1][0] == 1.0  # untouched arm


@pytest.mark.slow
def test_simultaneous_coverage_with_union_bound():
    """Five arms pulled in a data-dependent order; alpha = 0.3 over all arms and times."""
    n, m, alpha, reps = 200, 5, 0.3, 200
    Y = np.stack([_population(n, p, 10 + k) for k, p in enumerate(np.linspace(0.4, 0.6, m))])
    mu = Y.mean(axis=1)
    rng = np.random.default_rng(5)
    zero = np.zeros(8)
    covered = 0
    for _ in range(reps):
        orders = [rng.permutation(n) for _ in range(m)]
        cs = BettingConfSeq(m, n, alpha)
        t = np.zeros(m, dtype=int)
        ok = True
        for _round in range(60):
            lo, hi = cs.interval()
            open_ = np.flatnonzero(t < n)
            arm = int(open_[np.argmax(hi[open_])])  # optimistic, adaptive choice
            batch = orders[arm][t[arm] : t[arm] + 8]
            cs.update(arm, Y[arm, batch], zero[: batch.size], 0.0, 0.0, 0.0, 0.0)
            t[arm] += batch.size
            lo, hi = cs.interval()
            ok &= bool(np.all((lo - 1e-12 <= mu) & (mu <= hi + 1e-12)))
        covered += ok
    rate = covered / reps
    assert rate >= 1 - alpha - 3 * math.sqrt(alpha * (1 - alpha) / reps)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("certificate_weights", "target_weight", "split"),
    [
        (None, 0.0, 0.5),
        ("uniform", 0.0, 0.5),
        (None, 0.5, 0.5),
        ((0.55, 0.15, 0.15, 0.15), 0.0, 0.9),
    ],
)
def test_certificate_covers_best_upper_and_others_lower(certificate_weights, target_weight, split):
    """The events the best-arm certificate rests on: the true best's upper bound and every
    other arm's lower bound hold at all times in >= 1 - alpha of the runs (alpha = 0.3),
    with arms chosen LUCB-style from the certificate bounds themselves; with the interval's
    horizon weights, with uniform ones, with the targeted process (its distances set from
    the bounds before each batch, as PULSE does), and with the certified configuration's
    split (0.9 alpha on the upper bounds) and weights."""
    n, m, alpha = 200, 5, 0.3
    reps = 100 if certificate_weights == "uniform" else 200  # an option off by default: 100
    Y = np.stack([_population(n, p, 20 + k) for k, p in enumerate(np.linspace(0.45, 0.55, m))])
    mu = Y.mean(axis=1)
    best = int(np.argmax(mu))
    others = np.arange(m) != best
    rng = np.random.default_rng(6)
    zero = np.zeros(8)
    held, tighter = 0, 0
    for _ in range(reps):
        orders = [rng.permutation(n) for _ in range(m)]
        cs = BettingConfSeq(
            m,
            n,
            alpha,
            certificate_weights=certificate_weights,
            target_weight=target_weight,
            certificate_split=split,
        )
        t = np.zeros(m, dtype=int)
        sums = np.zeros(m)  # each arm's revealed sum: binary scores, so exact at any order
        ok = True
        for _round in range(60):
            lo, hi = cs.certificate()
            # the revealed means (exactly Y[k, orders[k][:t[k]]].mean(): an integer sum over t)
            means = np.where(t > 0, sums / np.maximum(t, 1), 0.5)
            leader = int(np.argmax(means))
            upper = np.where(np.arange(m) == leader, -np.inf, hi)
            for arm in (leader, int(np.argmax(upper))):  # the empirical best and its challenger
                clo, chi = cs.certificate()
                if arm == leader:
                    cs.set_target(arm, means[arm] - np.delete(chi, arm).max(), lower=True)
                else:
                    cs.set_target(arm, clo[leader] - means[arm], lower=False)
                if t[arm] < n:
                    batch = orders[arm][t[arm] : t[arm] + 8]
                    cs.update(arm, Y[arm, batch], zero[: batch.size], 0.0, 0.0, 0.0, 0.0)
                    t[arm] += batch.size
                    sums[arm] += Y[arm, batch].sum()
            lo, hi = cs.certificate()
            ok &= bool(hi[best] + 1e-12 >= mu[best] and np.all(lo[others] <= mu[others] + 1e-12))
        held += ok
        _, ihi = cs.interval()
        tighter += bool(np.all(hi <= ihi + 1e-12))
    rate = held / reps
    assert rate >= 1 - alpha - 3 * math.sqrt(alpha * (1 - alpha) / reps)
    if certificate_weights is None and target_weight == 0 and split == 0.5:  # as the interval
        assert tighter == reps


def test_interval_width_after_200_cells():
    """A Bernoulli(0.7) arm, alpha = 0.1, no union bound: after 200 of 1000 cells the interval
    is within 1.6x the normal-approximation width (about 0.10), and the certificate bounds
    (one-sided, from the same bets) are no wider than the interval at this level."""
    n = 1000
    y = _population(n, 0.7, 7)
    cs = BettingConfSeq(1, n, 0.1, union=False)
    zero = np.zeros(8)
    for k in range(0, 200, 8):
        cs.update(0, y[k : k + 8], zero, 0.0, 0.0, 0.0, 0.0)
    lo, hi = cs.interval()
    sd = y[:200].std(ddof=1)
    normal = 2 * 1.6449 * sd / math.sqrt(200) * math.sqrt(1 - 199 / n)
    assert lo[0] <= y[:200].mean() <= hi[0]
    assert hi[0] - lo[0] <= 1.6 * normal
    clo, chi = cs.certificate()
    assert chi[0] - clo[0] <= hi[0] - lo[0] + 2e-3


def test_bad_arguments():
    with pytest.raises(InputError, match="alpha"):
        BettingConfSeq(1, 10, 1.5)
    with pytest.raises(InputError, match="certificate_weights"):
        BettingConfSeq(1, 10, 0.1, certificate_weights=(1.0, 2.0))
    with pytest.raises(InputError, match="target_weight"):
        BettingConfSeq(1, 10, 0.1, target_weight=1.0)
    cs = BettingConfSeq(1, 4, 0.1)
    with pytest.raises(InputError, match="more cells than items"):
        cs.update(0, np.ones(5), np.zeros(5), 0.0, 0.0, 0.0, 0.0)


def test_compiled_mixtures_match_their_numpy_specification():
    """The compiled mixtures and rejections (exact sums only near a threshold) equal the
    NumPy version: the same rejected candidates, with thresholds at the capitals' quantiles
    and just beside single candidates' exact mixtures, with and without a targeted process,
    and with candidates already rejected or impossible."""
    from latentbench.select._betting import _mix_and_reject, _mix_and_reject_reference

    rng = np.random.default_rng(1)
    changed, near = 0, 0
    for trial in range(60):
        H, S = int(rng.integers(1, 5)), int(rng.integers(1, 80))
        R = H + int(rng.integers(0, 2))
        up, down = rng.normal(0, 3, size=(R, S)), rng.normal(0, 3, size=(R, S))
        w, wc = np.log(rng.dirichlet(np.ones(H))), np.log(rng.dirichlet(np.ones(R)))
        lt, ltd = math.log(0.3), math.log1p(-0.3)
        thresholds = np.quantile(np.r_[up.ravel(), down.ravel()], [0.3, 0.5, 0.7])
        if trial % 3 == 0:  # thresholds one rounding step beside a candidate's exact value
            k = int(rng.integers(S))
            hedge = np.logaddexp(
                lt + np.logaddexp.reduce(up[:H, k] + w), ltd + np.logaddexp.reduce(down[:H, k] + w)
            )
            cert = np.logaddexp.reduce(up[:, k] + wc), np.logaddexp.reduce(down[:, k] + wc)
            step = rng.choice([-1.0, 0.0, 1.0])
            thresholds = np.array([hedge, *cert]) + step * np.spacing(np.array([hedge, *cert]))
            near += 1
        impossible = rng.random(S) < 0.1
        flags = [rng.random(S) < 0.2 for _ in range(3)]
        ref = [f.copy() for f in flags]
        got = [f.copy() for f in flags]
        _mix_and_reject_reference(up, down, w, wc, lt, ltd, thresholds, impossible, *ref)
        _mix_and_reject(up, down, w, wc, lt, ltd, thresholds, impossible, *got)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"trial {trial}")
        changed += sum(int((a != f).sum()) for a, f in zip(ref, flags, strict=True))
    assert changed > 0 and near > 0


def test_compiled_capital_pass_matches_its_numpy_specification():
    """The compiled bets (the hot path) equal the NumPy version cell for cell: capitals to
    rounding and the same impossible candidates, with capped and uncapped bets, candidates
    outside the residuals' range and a last cell that empties the pool."""
    from latentbench.select._betting import _capital_pass, _capital_pass_reference

    rng = np.random.default_rng(0)
    with_impossible = 0
    for trial in range(40):
        n, b, H = 50, int(rng.integers(1, 20)), int(rng.integers(1, 5))
        seen = int(rng.integers(0, n - b + 1))
        lam = float(rng.choice([0.0, 0.5, 1.0]))
        y, f = rng.random(b).round(1), rng.random(b)
        pool = n - seen - np.arange(b, dtype=float)
        offset = rng.random(b) * n * 0.6
        r = y - lam * f
        lo, hi = -lam * 0.9, 1.0 - lam * 0.05
        bet = rng.random((H, b)) * rng.choice([0.5, 5.0, 50.0])
        grid = np.sort(rng.random(int(rng.integers(1, 60))))
        start_up, start_down = rng.normal(size=(H, grid.size)), rng.normal(size=(H, grid.size))
        up_ref, down_ref = start_up.copy(), start_down.copy()
        up, down = start_up.copy(), start_down.copy()
        expected = _capital_pass_reference(grid, n, offset, pool, r, lo, hi, bet, 0.5, up_ref,
                                           down_ref)  # fmt: skip
        got = _capital_pass(grid, n, offset, pool, r, lo, hi, bet, 0.5, up, down)
        np.testing.assert_array_equal(got, expected, err_msg=f"trial {trial}")
        np.testing.assert_allclose(up, up_ref, rtol=1e-12, atol=1e-12, err_msg=f"trial {trial}")
        np.testing.assert_allclose(down, down_ref, rtol=1e-12, atol=1e-12)
        with_impossible += bool(expected.any())
    assert 0 < with_impossible < 40  # both branches were compared


def _capital_pass_per_candidate(grid, n, offset, pool, r, lo, hi, bet, c, log_up, log_down):
    """The compiled pass's arithmetic written as a plain loop over candidates, then cells,
    then horizons (Python floats are IEEE doubles: the same operations give the same bits)."""
    H, b = bet.shape
    impossible = np.zeros(grid.size, dtype=bool)
    for k in range(grid.size):
        prod_up, prod_down = [1.0] * H, [1.0] * H
        for t in range(b):
            mt = (n * float(grid[k]) - offset[t]) / pool[t]
            if mt < lo - 1e-7 or mt > hi + 1e-7:
                impossible[k] = True
            x = r[t] - mt
            cap_up = c / max(mt - lo, 1e-300) if mt > lo else math.inf
            cap_down = c / max(hi - mt, 1e-300) if mt < hi else math.inf
            for h in range(H):
                prod_up[h] *= 1.0 + max(min(bet[h, t], cap_up) * x, -0.999)
                prod_down[h] *= 1.0 + max(-min(bet[h, t], cap_down) * x, -0.999)
                if not 1e-100 < prod_up[h] < 1e100:
                    log_up[h, k] += math.log(prod_up[h])
                    prod_up[h] = 1.0
                if not 1e-100 < prod_down[h] < 1e100:
                    log_down[h, k] += math.log(prod_down[h])
                    prod_down[h] = 1.0
        for h in range(H):
            log_up[h, k] += math.log(prod_up[h])
            log_down[h, k] += math.log(prod_down[h])
    return impossible


def test_compiled_capital_pass_is_the_per_candidate_loop_to_the_bit():
    """The compiled pass runs the candidates in its innermost loop (vector registers); each
    candidate's capitals are still the same operations in the same order as a loop over
    candidates outside the cells, so the same bits: capped and uncapped bets, impossible
    candidates, and products that leave [1e-100, 1e100] (logged and restarted mid-batch)."""
    from latentbench.select._betting import _capital_pass

    rng = np.random.default_rng(7)
    restarted = impossible_seen = 0
    for trial in range(60):
        n = int(rng.choice([50, 300, 2000]))
        b, H = int(rng.integers(1, min(65, n))), int(rng.integers(1, 6))
        seen = int(rng.integers(0, n - b + 1))
        lam = float(rng.choice([0.0, 0.5, 1.0]))
        y, f = rng.random(b).round(int(rng.integers(0, 2))), rng.random(b)
        pool = n - seen - np.arange(b, dtype=float)
        offset = rng.random(b) * n * 0.6
        r = y - lam * f
        lo, hi = -lam * 0.9, 1.0 - lam * 0.05
        bet = rng.random((H, b)) * rng.choice([0.5, 5.0, 50.0, 5000.0])
        grid = np.sort(rng.random(int(rng.integers(1, 120))))
        start_up, start_down = rng.normal(size=(H, grid.size)), rng.normal(size=(H, grid.size))
        up_ref, down_ref = start_up.copy(), start_down.copy()
        up, down = start_up.copy(), start_down.copy()
        expected = _capital_pass_per_candidate(grid, n, offset, pool, r, lo, hi, bet, 0.5,
                                               up_ref, down_ref)  # fmt: skip
        got = _capital_pass(grid, n, offset, pool, r, lo, hi, bet, 0.5, up, down)
        np.testing.assert_array_equal(got, expected, err_msg=f"trial {trial}")
        assert up.tobytes() == up_ref.tobytes() and down.tobytes() == down_ref.tobytes(), trial
        # a product that left the range: the capital moved by more than log(1e100) in a batch
        moved = np.abs(np.r_[up - start_up, down - start_down].ravel())
        restarted += bool((moved > math.log(1e100)).any())
        impossible_seen += bool(expected.any())
    assert restarted > 0 and impossible_seen > 0  # both rare branches were compared


def test_batch_bets_are_the_numpy_expressions_to_the_bit():
    """The update's pools, offsets, residuals, deviations and bets, computed in one compiled
    pass, equal the NumPy expressions they replaced bit for bit, with and without the
    targeted process."""
    from latentbench.select._betting import _batch_bets, _shifted_cumsum

    rng = np.random.default_rng(3)
    for trial in range(80):
        n, b = int(rng.choice([40, 300, 2000])), int(rng.integers(1, 40))
        t0 = int(rng.integers(0, n - b + 1))
        lam = float(rng.choice([0.0, 0.37, 1.0]))
        y, f = rng.random(b).round(int(rng.integers(0, 3))), rng.random(b)
        sum_y, pool_sum = float(rng.random() * t0), float(rng.random() * (n - t0))
        sums = rng.random(2) * t0
        cs = BettingConfSeq(3, n, 0.1, target_weight=float(rng.choice([0.0, 0.2])))
        d, L = float(rng.choice([0.0, 0.05])), 3.7
        got = _batch_bets(y, f, lam, n, t0, sum_y, pool_sum, float(sums[0]), float(sums[1]),
                          cs._effective[t0 : t0 + b], cs._bet_log, cs.horizons, d, L,
                          cs.target_weight > 0)  # fmt: skip
        # the NumPy expressions of the update before the compiled pass
        N = n - t0 - np.arange(b, dtype=np.float64)
        S = sum_y + _shifted_cumsum(y)
        F = pool_sum - _shifted_cumsum(f)
        r = y - lam * f
        k = t0 + np.arange(1, b + 1, dtype=np.float64)
        weight = n / N
        effective = cs._effective[t0 : t0 + b]
        mean_prev = (0.5 + sums[0] + _shifted_cumsum(r)) / k
        dev = (r - mean_prev) ** 2
        var_prev = (0.25 + sums[1] + _shifted_cumsum(dev)) / k
        bet = weight[None, :] * np.sqrt(
            2.0
            * cs._bet_log[:, None]
            / (var_prev[None, :] * np.maximum(effective[None, :], cs.horizons[:, None]))
        )
        if cs.target_weight > 0:
            base = np.minimum(d / var_prev, np.sqrt(2.0 * L / (var_prev * effective)))
            bet = np.vstack([bet, weight * np.maximum(base, 0.0)])
        for a, e in zip(got, (N, S + lam * F, r, dev, bet), strict=True):
            assert a.shape == e.shape and a.tobytes() == e.tobytes(), trial


def test_alive_ends_are_the_first_and_last_unrejected_candidates():
    """The compiled ends of the three rejection rows equal ``flatnonzero``'s, with -1 for a
    row where every candidate is rejected."""
    from latentbench.select._betting import _alive_ends

    rng = np.random.default_rng(4)
    for trial in range(100):
        S = int(rng.integers(1, 30))
        rows = [rng.random(S) < rng.choice([0.0, 0.5, 0.95, 1.0]) for _ in range(3)]
        expected = []
        for row in rows:
            alive = np.flatnonzero(~row)
            expected += [int(alive[0]), int(alive[-1])] if alive.size else [-1, -1]
        assert list(_alive_ends(*rows)) == expected, trial


def test_certificate_split_moves_level_from_the_lower_to_the_upper_bounds():
    """``certificate_split=0.9`` puts 0.9 alpha on each upper bound and 0.1 alpha / (m - 1) on
    each lower bound: on the same cells, every upper bound is at most the default split's
    (0.5) and every lower bound at least as far down, strictly so for an arm in the
    middle of the range; the interval, which does not use the split, is unchanged."""
    n, m, alpha = 600, 3, 0.1
    Y = np.stack([_population(n, p, 40 + k) for k, p in enumerate((0.4, 0.5, 0.6))])
    half = BettingConfSeq(m, n, alpha)
    upper = BettingConfSeq(m, n, alpha, certificate_split=0.9)
    zero = np.zeros(16)
    for arm in range(m):
        for k in range(0, 320, 16):
            for cs in (half, upper):
                cs.update(arm, Y[arm, k : k + 16], zero, 0.0, 0.0, 0.0, 0.0)
    lo5, hi5 = half.certificate()
    lo9, hi9 = upper.certificate()
    assert np.all(hi9 <= hi5 + 1e-12) and np.all(lo9 <= lo5 + 1e-12)
    assert hi9[1] < hi5[1] - 2e-3 and lo9[1] < lo5[1] - 2e-3
    assert np.array_equal(np.stack(half.interval()), np.stack(upper.interval()))
    with pytest.raises(InputError, match="certificate_split"):
        BettingConfSeq(m, n, alpha, certificate_split=1.0)


_ONE_SIGNATURE = """
import numpy as np
from latentbench.select import _betting as B
from latentbench.select._betting import BettingConfSeq

rng = np.random.default_rng(0)
for arms, lam, f_max in ((1, 0, 1), (3, 0, 1), (1, 0.5, 0.9), (3, 0.5, 0.9), (2, 1, 1)):
    cs = BettingConfSeq(arms, 200, 0.1, certificate_levels=(0.01, 0.01) if arms == 2 else None)
    for arm in range(arms):
        y, f = rng.random(8).round(), rng.random(8)
        cs.update(arm, y, f, lam, 100 * f_max, 0, f_max)
kernels = (B._capital_pass, B._mix_and_reject, B._wager, B._batch_bets, B._alive_ends,
           B._ends, B._mixture, B._logaddexp)
for kernel in kernels:
    print(kernel.__name__, len(kernel.signatures))
"""


def test_the_betting_kernels_compile_one_signature():
    """A confidence sequence of one arm or several, with an int or a float proxy weight and
    pool extremes (ints: a caller's ``0`` and ``1``), reaches every compiled kernel of the
    betting update as one signature: one compile per fresh environment. One arm's log
    capitals were a C-contiguous array (several arms': a strided one) and ``lam = 0`` with
    ints made the range's lower end an int64, each a second compile of ``_wager`` (and of
    ``_capital_pass``, ~1 s each on a cold cache). In a fresh process (with the cache of
    this checkout, cold or warm): the kernel tests above call the kernels directly, with
    other array layouts."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _ONE_SIGNATURE], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    counts = {name: int(n) for name, n in (line.split() for line in done.stdout.splitlines())}
    # the kernels called from Python compile (or load) one signature; those called from
    # compiled code are compiled with their caller, so none where it came from the cache
    assert [counts.pop(name) for name in ("_wager", "_batch_bets", "_alive_ends")] == [1] * 3
    assert len(counts) == 5 and max(counts.values()) <= 1, counts
