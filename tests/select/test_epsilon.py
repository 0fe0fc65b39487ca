"""Certifying a model within ``epsilon`` of the best (``run_selection(epsilon=...)``,
``select replay --epsilon``, ``[run] epsilon``).

Two models with the same mean can only be told apart by all their cells: the exact
certificate (``epsilon = 0``) then reveals both rows fully. With a tolerance the run stops
once the recommendation's lower bound is above every other upper bound minus ``epsilon``,
and the recommendation is within ``epsilon`` of the best with probability >= 1 - delta.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.select import (
    UCBE,
    LiveConfig,
    LowRankProxy,
    MatrixOracle,
    Pulse,
    SelectionRecord,
    replay,
    run_selection,
)
from latentbench.select._certify import certifies, certifies_differences

from .conftest import lowrank_data

_register()

N_ITEMS = 300


def tied_pool(seed: int = 0, n_items: int = N_ITEMS) -> tuple[np.ndarray, np.ndarray]:
    """History (30 x n_items) and six candidates whose two leaders have exactly equal means.

    Candidate 1 is candidate 0's row with its items permuted (the same mean to the last bit,
    different cells); the others are at least 0.1 below them.
    """
    Y, *_ = lowrank_data(36, n_items, r=2, seed=seed)
    Y = Y.astype(np.float64)
    history, cand = Y[:30], Y[30:].copy()
    rng = np.random.default_rng(seed)
    order = np.argsort(-cand.mean(axis=1))
    cand = cand[order]
    cand[0] = np.where(rng.random(n_items) < 0.82, 1.0, 0.0)
    cand[1] = rng.permutation(cand[0])
    for i in range(2, 6):  # well below the tied pair
        cand[i] = np.where(rng.random(n_items) < 0.55 - 0.05 * i, 1.0, 0.0)
    assert cand[0].mean() == cand[1].mean()
    assert cand[2:].mean(axis=1).max() < cand[0].mean() - 0.1
    return history, cand


@pytest.fixture(scope="module")
def pool():
    history, cand = tied_pool()
    return cand, LowRankProxy(rank=2, random_state=0).fit(history)


def _run(cand, proxy, policy, epsilon, seed=0, **kw):
    return run_selection(
        MatrixOracle(cand),
        policy,
        proxy=proxy,
        stop="confidence",
        epsilon=epsilon,
        random_state=seed,
        true_means=cand.mean(axis=1),
        **kw,
    )


@pytest.mark.parametrize("make", [lambda: Pulse(delta=0.05, bonus="ci"), lambda: UCBE()])
def test_an_exact_tie_stops_once_both_are_full_and_the_rest_separated(pool, make):
    cand, proxy = pool
    n = cand.shape[1]
    out = _run(cand, proxy, make(), 0.0, delta=0.05)
    # two equal means: both rows are revealed fully, then the run stops certified (a best
    # model) as soon as every other model's upper bound is below their exact mean, instead
    # of revealing every other cell (what the rule without exact rivals did: 1,800 of 1,800)
    assert out.n_observed[:2].tolist() == [n, n]
    assert out.best in (0, 1) and out.stopped == "confidence" and out.certified
    assert out.evaluations_total < 0.5 * cand.size
    lo, hi = out.certificate_lower, out.certificate_upper
    if lo is None:  # UCB-E: the betting monitor's bounds are the result's
        lo, hi = out.lower, out.upper
    assert hi[2:].max() < cand[0].mean()


def test_epsilon_stops_before_the_tied_rows_are_full():
    history, cand = tied_pool(n_items=1000)
    proxy = LowRankProxy(rank=2, random_state=0).fit(history)
    exact = _run(cand, proxy, Pulse(delta=0.05, bonus="ci"), 0.0)
    loose = _run(cand, proxy, Pulse(delta=0.05, bonus="ci"), 0.05)
    assert exact.n_observed[:2].tolist() == [1000, 1000]
    assert loose.stopped == "confidence" and loose.certified and loose.best in (0, 1)
    assert loose.params["epsilon"] == 0.05 and loose.certified_arm == loose.best
    # a fraction of the tied rows is enough
    assert loose.n_observed[:2].sum() < 0.8 * exact.n_observed[:2].sum()
    assert loose.evaluations_total < exact.evaluations_total
    # the pulls do not depend on epsilon: the tolerant run is a prefix of the exact one
    k = loose.trace_arm.size
    assert loose.trace_arm.tolist() == exact.trace_arm[:k].tolist()


def near_miss_pool(rng: np.random.Generator, n: int = N_ITEMS) -> np.ndarray:
    """Six candidates: the best at 0.70, four at 0.67 (0.03 below: not within 0.02 of it),
    one at 0.40; each row a random arrangement of its exact count of ones."""
    means = [0.70, 0.67, 0.67, 0.67, 0.67, 0.40]
    cand = np.zeros((len(means), n))
    for i, p in enumerate(means):
        cand[i, : round(p * n)] = 1.0
        cand[i] = rng.permutation(cand[i])
    return cand


def _wrong_certificates(eps: float, runs: int, delta: float = 0.2) -> tuple[int, int]:
    """(certified, certified more than 0.02 below the best) over seeded near-miss pools."""
    history, _ = tied_pool(seed=5)
    proxy = LowRankProxy(rank=2, random_state=0).fit(history)
    rng = np.random.default_rng(11)
    wrong = certified = 0
    for seed in range(runs):
        cand = near_miss_pool(rng)
        mu = cand.mean(axis=1)
        out = _run(cand, proxy, Pulse(delta=delta, bonus="ci"), eps, seed=seed)
        certified += bool(out.certified)
        wrong += bool(out.certified and mu[out.best] < mu.max() - 0.02)
    return certified, wrong


def test_the_certified_model_is_within_epsilon_of_the_best():
    """Seeded runs where four rivals sit 0.03 below the best, just outside epsilon = 0.02: a
    certified model is more than epsilon below the best in at most delta of the runs (the
    guarantee, with 3 Monte Carlo SEs of slack). The guarantee is conservative, so this
    cannot catch every misapplied tolerance; the rule itself is pinned by
    ``test_the_rule_exactly``. The pool does tell tolerances apart: certifying with 0.06
    (three times too loose) is wrong more often, measured against the same 0.02."""
    delta, runs = 0.2, 30
    certified, wrong = _wrong_certificates(0.02, runs, delta)
    assert certified == runs
    assert wrong <= delta * runs + 3 * np.sqrt(delta * (1 - delta) * runs)
    _, loose = _wrong_certificates(0.06, runs, delta)
    assert loose > wrong


def test_the_rule_exactly():
    lo = np.array([0.50, 0.25, 0.125])
    hi = np.array([0.75, 0.5625, 0.375])
    assert not certifies(lo, hi, 0)  # 0.5 < 0.5625
    assert certifies(lo, hi, 0, epsilon=0.125)  # 0.5 > 0.4375
    assert not certifies(lo, hi, 0, epsilon=0.0625)  # 0.5 = 0.5 is not above
    assert not certifies(lo, hi, 0, epsilon=0.125, tie=0.0625)
    # fully revealed rivals at or below a fully revealed leader need no bound ...
    means = np.array([0.6, 0.6, 0.2])
    assert certifies(lo, hi, 0, exact=np.array([True, True, False]), means=means)
    # ... not when the leader is not fully revealed, nor when the rival's mean is higher
    assert not certifies(lo, hi, 0, exact=np.array([False, True, False]), means=means)
    higher = np.array([0.6, 0.7, 0.2])
    assert not certifies(lo, hi, 0, exact=np.array([True, True, False]), means=higher)
    assert not certifies(lo, hi, 0, exact=np.array([True, True, False]))  # no means given
    lead = np.array([np.inf, -0.25, 0.125])
    assert not certifies_differences(lead, 0)
    assert certifies_differences(lead, 0, epsilon=0.5)
    assert certifies_differences(lead, 0, exact=np.array([True, True, False]), means=means)
    assert not certifies_differences(lead, 0, exact=np.array([True, True, False]), means=higher)


class _FlatteringUCBE(UCBE):
    """A custom policy whose estimates favour arm 0 by 0.5 (outside the contract that a fully
    revealed row's estimate is its mean)."""

    def estimates(self):
        est = super().estimates().copy()
        est[0] += 0.5
        return est


def test_exact_rivals_are_compared_by_their_cells_not_by_a_policys_estimates():
    rng = np.random.default_rng(1)
    cand = np.zeros((3, 64))
    cand[0, :32] = 1.0  # mean 0.5, but the policy's estimate says 1.0
    cand[1, :38] = 1.0  # mean 0.59375: the best
    cand[2, :8] = 1.0
    cand = rng.permuted(cand, axis=1)
    out = run_selection(MatrixOracle(cand), _FlatteringUCBE(), stop="confidence", random_state=0)
    # every cell revealed: arm 1's exact mean is above arm 0's, so arm 0 is never certified
    assert out.best == 0 and not out.certified and out.certified_after is None
    assert out.stopped == "exhausted"


def test_the_paired_certificate_takes_epsilon_and_decides_exact_ties():
    history, cand = tied_pool(n_items=1000)
    proxy = LowRankProxy(rank=2, random_state=0).fit(history)

    def paired():
        return Pulse(delta=0.05, bonus="ci", certificate="paired")

    exact = _run(cand, proxy, paired(), 0.0)
    loose = _run(cand, proxy, paired(), 0.05)
    assert exact.difference_lower is not None
    assert exact.stopped == "confidence" and exact.certified and exact.best in (0, 1)
    assert exact.n_observed[:2].tolist() == [1000, 1000]
    assert exact.evaluations_total < 0.5 * cand.size
    assert loose.stopped == "confidence" and loose.certified and loose.best in (0, 1)
    assert loose.n_observed[:2].sum() < exact.n_observed[:2].sum()


def test_a_tolerance_without_a_certificate_is_refused(pool):
    cand, proxy = pool
    with pytest.raises(InputError, match=r"epsilon=0.02 applies to a certificate.*'ucbe'"):
        run_selection(MatrixOracle(cand), UCBE(), budget=200, stop="budget", epsilon=0.02)
    # with the betting monitor (stop="confidence") UCB-E takes it
    out = _run(cand, proxy, UCBE(), 0.02, delta=0.05)
    assert out.params["epsilon"] == 0.02 and out.certified


def test_epsilon_is_checked_recorded_and_read_back(pool, tmp_path):
    cand, proxy = pool
    for bad in (-0.01, 0.51, float("nan"), "x", "0.01", True, None):
        with pytest.raises(InputError, match=r"epsilon=.*expected a tolerance in \[0, 0.5\]"):
            _run(cand, proxy, UCBE(), bad)
    out = _run(cand, proxy, Pulse(delta=0.05, bonus="ci"), 0.02)
    path = tmp_path / "selection.json"
    out.to_json(path)
    record = SelectionRecord.read_json(path)
    assert record.epsilon == 0.02 and record.certified
    assert record.certificate_text == "within 0.02 of the best"
    # a record written before the option reads as the exact certificate
    data = json.loads(path.read_text())
    del data["params"]["epsilon"]
    assert SelectionRecord.from_dict(data).epsilon == 0.0
    assert out.epsilon == 0.02


def _report_text(runner: CliRunner, selection, out) -> str:
    """The findings section of ``latentbench report SELECTION --out OUT``, as plain text."""
    outcome = runner.invoke(app, ["report", str(selection), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    html = out.read_text().split('id="selection-summary"')[1].split("</section>")[0]
    return " ".join(re.sub(r"<[^>]+>", " ", html).replace("&#39;", "'").split())


def test_replay_and_cli_take_epsilon(tmp_path):
    history, cand = tied_pool()
    items = [f"q{j}" for j in range(N_ITEMS)]
    frame = lambda Y, prefix: pd.DataFrame(  # noqa: E731
        Y, index=[f"{prefix}{i}" for i in range(len(Y))], columns=items
    )
    frame(cand, "cand").to_csv(tmp_path / "cand.csv")
    frame(history, "hist").to_csv(tmp_path / "hist.csv")
    with pytest.raises(InputError, match="epsilon=-1"):
        replay(tmp_path / "cand.csv", history=tmp_path / "hist.csv", epsilon=-1)
    runner = CliRunner()
    common = [
        "select",
        "replay",
        str(tmp_path / "cand.csv"),
        "--history",
        str(tmp_path / "hist.csv"),
    ]
    res = runner.invoke(app, [*common, "--epsilon", "0.02", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert "certified within 0.02 of the best at delta = 0.05" in res.output
    saved = json.loads((tmp_path / "a" / "selection.json").read_text())
    assert saved["params"]["epsilon"] == 0.02 and saved["stopped"] == "confidence"
    texts = _report_text(runner, tmp_path / "a" / "selection.json", tmp_path / "a.html")
    assert "Certified within 0.02 of the best" in texts
    res = runner.invoke(app, [*common, "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "certified at delta = 0.05 (tied with cand" in text
    assert "every cell of each revealed: a best model, not the only one" in text
    assert "--epsilon 0.01 certifies a model within 0.01 of the best" in text
    texts = _report_text(runner, tmp_path / "b" / "selection.json", tmp_path / "b.html")
    assert "Certified: the best model's lower bound exceeds" in texts
    assert "is a best model, not the only one" in texts


def test_live_config_takes_epsilon_and_keeps_old_run_ids(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "prompt": "1+1", "answer": "2"}\n')
    lines = [
        "[run]",
        "{run}",
        "[items]",
        'path = "items.jsonl"',
        "[[models]]",
        'name = "m1"',
        'base_url = "http://127.0.0.1:9/v1"',
        'model = "x"',
        "[[models]]",
        'name = "m2"',
        'base_url = "http://127.0.0.1:9/v1"',
        'model = "x"',
    ]
    ids = {}
    for key, run in (("none", "seed = 0"), ("zero", "epsilon = 0.0"), ("set", "epsilon = 0.01")):
        path = tmp_path / f"{key}.toml"
        path.write_text("\n".join(lines).replace("{run}", run) + "\n")
        cfg = LiveConfig.from_toml(path)
        ids[key] = cfg.default_run_id()
        assert cfg.run.epsilon == {"none": 0.0, "zero": 0.0, "set": 0.01}[key]
    # a configuration without epsilon keeps the run id it had before the option existed
    assert ids["none"] == ids["zero"] != ids["set"]
    bad = tmp_path / "bad.toml"
    bad.write_text("\n".join(lines).replace("{run}", "epsilon = 2") + "\n")
    with pytest.raises(InputError, match=r"epsilon"):
        LiveConfig.from_toml(bad)
