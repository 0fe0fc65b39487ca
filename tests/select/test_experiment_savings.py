"""The paired-bootstrap savings of experiments and the pools' gap labels."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.select._experiment import _label_by_gap, paired_saving, paired_saving_at_stop


def _curves(rng, n_seeds, grid, when):
    """Per-seed correctness: seed s is right from budget ``when[s]`` on."""
    return grid[None, :] >= when[:, None]


def test_paired_saving_is_zero_against_itself_and_finds_a_known_saving():
    rng = np.random.default_rng(0)
    grid = np.arange(0, 2001, 10)
    when = rng.integers(200, 1500, 200)
    ref = _curves(rng, 200, grid, when)
    same = paired_saving(ref, ref, grid)
    assert same["saved_post_init_pct"] == 0 and same["saved_post_init_pct_se"] == 0
    half = _curves(rng, 200, grid, when // 2)  # every seed needs half the cells
    out = paired_saving(half, ref, grid, init=100, ref_init=100)
    assert out["saved_post_init_pct"] == pytest.approx(50, abs=2)
    assert out["saved_post_init_pct_lo"] <= out["saved_post_init_pct"]
    assert out["saved_post_init_pct"] <= out["saved_post_init_pct_hi"]
    assert 0 < out["saved_post_init_pct_se"] < 5
    assert out["saved_total_pct"] < out["saved_post_init_pct"]  # the start is paid by both


def test_paired_saving_at_stop_se_matches_the_monte_carlo_spread():
    """The paired bootstrap SE of the saving in mean cells is close to its spread over
    repeated experiments (tolerance: the bootstrap SE's own noise, ~15 % at 40 seeds)."""
    rng = np.random.default_rng(1)
    savings, ses = [], []
    for _ in range(200):
        base = rng.gamma(4.0, 250.0, 40)  # per-seed difficulty shared by both policies
        ref = base + rng.normal(0, 100, 40)
        pol = 0.7 * base + rng.normal(0, 100, 40)
        out = paired_saving_at_stop(pol, ref, n_boot=200, random_state=int(rng.integers(1 << 30)))
        savings.append(out["saved_post_init_pct"])
        ses.append(out["saved_post_init_pct_se"])
    spread = np.std(savings, ddof=1)
    assert np.mean(ses) == pytest.approx(spread, rel=0.25)
    assert np.mean(savings) == pytest.approx(30, abs=1.0)


def test_pools_are_named_by_their_measured_gap():
    means = np.array([0.80, 0.74, 0.73, 0.70, 0.60])
    pools = {"gap0.02": np.array([0, 1, 2]), "gap0.03": np.array([0, 1, 3]), "full": np.arange(5)}
    assert list(_label_by_gap(pools, means)) == ["gap0.060", "gap0.060-2", "full"]


def test_a_saving_that_is_not_there_has_no_interval():
    grid = np.arange(1, 11) * 10.0
    policy = np.ones((20, 10), dtype=bool)
    # the reference ends at 90 % (18 of 20 seeds right): no saving on the full sample, though
    # some resamples (19 or 20 of the right seeds drawn) reach 95 %
    reference = np.zeros((20, 10), dtype=bool)
    reference[:18, -1] = True
    out = paired_saving(policy, reference, grid, n_boot=200, random_state=0)
    assert np.isnan(out["saved_post_init_pct"])
    for key in ("_se", "_lo", "_hi"):
        assert np.isnan(out["saved_post_init_pct" + key]), key
