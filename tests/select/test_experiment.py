"""Pools, policy specs, bootstrap budget-to-target, the experiment runner and the simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.select import (
    UCBE,
    LowRankProxy,
    MatrixOracle,
    budget_to_accuracy,
    default_schedule,
    exact_gap_pool,
    make_policy,
    parse_policy,
    run_experiment,
    run_selection,
    split_models,
)
from latentbench.select._experiment import parse_pools
from latentbench.synthetic import LeaderboardSimulator

from .conftest import lowrank_data


def test_exact_gap_pool():
    means = np.array([0.5, 0.9, 0.89, 0.875, 0.86, 0.7, 0.6, 0.1])
    pool = exact_gap_pool(means, 0.03, size=4)
    assert pool.tolist() == [1, 3, 4, 5]  # gap 0.025 is closest to 0.03; 0.89 is dropped
    gaps = means[1] - means
    assert abs(gaps[pool[1]] - 0.03) == min(abs(gaps[[2, 3, 4]] - 0.03))
    assert exact_gap_pool(means, None, size=3).tolist() == [1, 2, 3]
    with pytest.raises(InputError, match="gap"):
        exact_gap_pool(means, -0.1)


def test_split_models():
    h, t = split_models(10, how="random", random_state=1)
    assert sorted(np.concatenate([h, t]).tolist()) == list(range(10))
    dates = np.arange(10)[::-1]
    h, t = split_models(10, how="date", dates=dates)
    assert set(h.tolist()) == {5, 6, 7, 8, 9}
    with pytest.raises(InputError, match="dates"):
        split_models(10, how="date")


def test_policy_specs_and_pools():
    _label, name, kw, run_kw = parse_policy("pulse:init_batch=16;weights=precision;a=0.5")
    assert name == "pulse" and kw == {"weights": "precision", "a": 0.5}
    assert run_kw == {"init_batch": 16}
    assert make_policy("naive_frozen").refit_every is None
    assert make_policy("naive").refit_every == "auto"
    with pytest.raises(InputError, match="no option"):
        make_policy("ucbe:delta=0.1")  # UCB-E has no intervals: delta is refused, not ignored
    with pytest.raises(InputError, match="unknown"):
        parse_policy("thompson")
    with pytest.raises(InputError, match="pulse"):
        make_policy("pulse:colour=red")
    assert parse_pools("gap:0.01,0.02,full") == [
        ("gap0.01", 0.01),
        ("gap0.02", 0.02),
        ("full", None),
    ]


@pytest.mark.parametrize("spec", ["pulse:a=inf", "ucbe:a=inf", "pulse:a=-inf"])
def test_an_infinite_exploration_weight_is_refused(spec):
    """'pulse:a=inf' ran: every index infinite, the run revealed its 128 initial cells of
    13,600 and stopped, printing 'stopped: exhausted (every cell revealed)' with its
    --budget 100 unspent (BFCL v2, 8 candidates)."""
    with pytest.raises(InputError, match=r"a=-?inf; expected a nonnegative number, finite"):
        make_policy(spec)


@pytest.mark.parametrize("token", ["nan", "inf", "-1", "gap:-0.5"])
def test_a_gap_that_is_no_gap_is_refused_naming_the_entry(token):
    """'gap:nan' and 'gap:inf' ran unsaid as the pool of the nearest gap to nothing (BFCL:
    'gap0.001'); a negative gap was refused as 'gap=-1.0', not naming --pools' entry."""
    with pytest.raises(InputError, match=r"pools entry '[^']+'; expected a gap like 0.02"):
        parse_pools(f"0.02,{token}")


def test_budget_to_accuracy():
    grid = np.arange(0, 100, 10)
    correct = np.zeros((200, 10), dtype=bool)
    correct[:, 4:] = True  # every seed right from budget 40
    out = budget_to_accuracy(correct, grid)
    assert out["point"] == 40 and out["first_sd"] == 0 and out["reached"] == 1
    correct[:20, 6] = False  # a dip to 90 % at 60: first crossing 40, sustained 70
    out = budget_to_accuracy(correct, grid, n_boot=50)
    assert out["point"] == 40 and out["sustained_point"] == 70  # all the seeds' curve
    assert out["first"] == 40 and out["sustained"] == pytest.approx(70, abs=5)  # resamples
    correct[:11, -1] = False  # 94.5 % at the end: reached, but not sustained
    out = budget_to_accuracy(correct, grid, n_boot=50)
    assert out["point"] == 40 and np.isnan(out["sustained_point"])
    correct[:11] = False  # never 95 %: no budget, whatever some resamples do
    out = budget_to_accuracy(correct, grid, n_boot=50)
    assert np.isnan(out["point"]) and 0 < out["reached"] < 1


def test_run_experiment_local_processes_match_in_process():
    Y, U, V, b = lowrank_data(30, 200, r=2, seed=8)
    proxy = LowRankProxy.from_factors(V, b, U_history=U)
    means = Y.mean(axis=1)
    pools = {"gap0.02": exact_gap_pool(means, 0.02, 12)}
    kw = dict(seeds=4, budget=800, batch_size=16, init_batch=8, proxy=proxy)
    one = run_experiment(Y, pools, ["ucbe", "pulse:init_batch=4"], n_jobs=1, **kw)
    two = run_experiment(Y, pools, ["ucbe", "pulse:init_batch=4"], n_jobs=2, **kw)
    for key in one.curves:
        np.testing.assert_array_equal(one.curves[key], two.curves[key])
    rows = {r["policy"]: r for r in one.summary}
    assert rows["pulse:init_batch=4"]["init_evaluations"] == 12 * 4
    assert rows["ucbe"]["init_evaluations"] == 12 * 8
    cov = rows["pulse:init_batch=4"]
    assert cov["coverage"] is not None
    # its Wilson 95% interval over the 4 runs: wide, never collapsed at a share of 1
    assert cov["coverage_lower"] <= cov["coverage"] <= cov["coverage_upper"]
    assert cov["coverage_upper"] - cov["coverage_lower"] > 0.3
    assert "saved_total_pct" in rows["pulse:init_batch=4"]
    # without init_batch every policy starts with the schedule's start: the same for all
    kw.pop("init_batch")
    kw.pop("batch_size")
    own = run_experiment(Y, pools, ["ucbe", "pulse"], n_jobs=1, **{**kw, "seeds": 1})
    rows = {r["policy"]: r for r in own.summary}
    batch, start = default_schedule(12, 200, 800)
    assert rows["pulse"]["init_evaluations"] == rows["ucbe"]["init_evaluations"] == 12 * start
    assert own.params["batch_size"] == batch and own.params["init_batch"] == start


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_stopped_experiment_keeps_the_seeds_every_policy_completed(n_jobs):
    """stop_event (Ctrl-C in the command): the runs in flight finish, the rest are not
    started, and the summary covers whole seeds, each as in a complete experiment (all was
    lost before); a stop before any complete seed is an interrupt."""
    import threading

    Y, U, V, b = lowrank_data(30, 200, r=2, seed=8)
    proxy = LowRankProxy.from_factors(V, b, U_history=U)
    pools = {"gap0.02": exact_gap_pool(Y.mean(axis=1), 0.02, 12)}
    kw = dict(seeds=12, budget=800, batch_size=16, init_batch=8, proxy=proxy, n_jobs=n_jobs)
    full = run_experiment(Y, pools, ["ucbe", "pulse"], **kw)
    stop = threading.Event()

    def progress(phase, done, total):  # as every long operation calls it
        assert phase == "runs" and total == 24
        if done >= 5:  # during the third seed (two policies per seed); with two workers,
            stop.set()  # the runs in flight (and those done meanwhile) are kept

    with pytest.warns(Warning, match=r"stopped after \d of 12 seeds; the summary covers"):
        part = run_experiment(Y, pools, ["ucbe", "pulse"], progress=progress,
                              stop_event=stop, **kw)  # fmt: skip
    n = part.params["n_seeds"]
    assert part.params["seeds_asked"] == 12 and (n == 2 if n_jobs == 1 else 2 <= n < 10)
    for key, curve in part.curves.items():
        np.testing.assert_array_equal(curve, full.curves[key][:n])
    assert "seeds_asked" not in full.params
    stop.set()  # already set: nothing completes
    with pytest.raises(KeyboardInterrupt):
        run_experiment(Y, pools, ["ucbe", "pulse"], stop_event=stop, **kw)


def test_run_experiment_on_ray_local_cluster():
    ray = pytest.importorskip("ray")
    Y, U, V, b = lowrank_data(20, 120, r=1, seed=9)
    proxy = LowRankProxy.from_factors(V, b, U_history=U)
    pools = {"full": exact_gap_pool(Y.mean(axis=1), None, 10)}
    # Ray >= 2.40 dropped local_mode; a one-CPU local cluster is the closest equivalent
    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        res = run_experiment(
            Y,
            pools,
            ["ucbe"],
            seeds=2,
            budget=200,
            batch_size=16,
            init_batch=8,
            proxy=proxy,
            engine="ray",
        )
    finally:
        ray.shutdown()
    local = run_experiment(
        Y, pools, ["ucbe"], seeds=2, budget=200, batch_size=16, init_batch=8, proxy=proxy, n_jobs=1
    )
    np.testing.assert_array_equal(res.curves[("full", "ucbe")], local.curves[("full", "ucbe")])


def test_simulator_reproduces_item_structure():
    Y, _, _, _ = lowrank_data(40, 300, r=2, seed=10, spread=1.5)
    sim = LeaderboardSimulator(rank=2, max_iter=200).fit(Y)
    sample, U = sim.sample(500, random_state=0)
    assert sample.shape == (500, 300) and U.shape == (500, 2)
    assert set(np.unique(sample).tolist()) <= {0.0, 1.0}
    fid = sim.fidelity(sample)
    assert fid["item_pvalue_corr"] > 0.9
    assert 0.5 < fid["synthetic_acc_sd"] / fid["source_acc_sd"] < 2.0
    again, _ = sim.sample(500, random_state=0)
    np.testing.assert_array_equal(sample, again)
    with pytest.raises(InputError, match="n_models"):
        sim.sample(0)


def test_experiment_drops_items_with_missing_candidate_cells_when_asked():
    from latentbench.select import experiment_from_matrix

    Y, _, _, _ = lowrank_data(20, 120, r=2, seed=5)
    Y = Y.astype(np.float64)
    hist, test = split_models(20, random_state=0)
    Y[test[0], [7, 40]] = np.nan  # two candidate cells unobserved
    Y[hist[0], 90] = np.nan  # a history hole is the proxy's business, not the target's
    kw = dict(pools="full", policies=["pulse", "ucbe"], seeds=2, budget=200, batch_size=16)
    kw.update(init_batch=8, pool_size=10, rank=1, n_jobs=1)  # pulse: a proxy is fitted
    with pytest.raises(InputError, match="missing"):
        experiment_from_matrix(Y, **kw)
    res = experiment_from_matrix(Y, missing="drop-items", **kw)
    assert res.params["dropped_items"] == 2  # the history's hole does not count
    assert res.params["proxy_rank"] == 1  # fitted on the history, its hole left missing
    assert res.pools["full"]["n_models"] == 10


def test_an_exact_tie_at_the_top_counts_either_tied_model_as_right():
    """Two candidates with the same mean (one row a permutation of the other), the others far
    below: whichever of the two leads is a best model, at every budget and every seed (the
    argmax of the true means names only the first; half of the leads went to the other)."""
    Y, U, V, b = lowrank_data(30, 200, r=2, seed=8)
    rng = np.random.default_rng(0)
    Y = Y.astype(np.float64)
    Y[0] = (rng.random(200) < 0.85).astype(float)
    Y[1] = rng.permutation(Y[0])
    Y[2:6] = (rng.random((4, 200)) < 0.35).astype(float)
    proxy = LowRankProxy.from_factors(V, b, U_history=U)
    pools = {"tie": np.arange(6)}
    res = run_experiment(Y, pools, ["ucbe", "pulse"], seeds=6, budget=600, proxy=proxy, n_jobs=1)
    for key, curve in res.curves.items():
        assert curve.all(), key
    # stopped on confidence: certified in every run, and right (a best model) in every run
    conf = run_experiment(
        Y, pools, ["ucbe", "pulse"], seeds=4, proxy=proxy, stop="confidence", n_jobs=1
    )
    for row in conf.summary:
        assert row["certified_fraction"] == 1.0 and row["certified_correct"] == 1.0, row
    leads = set()
    for seed in range(3):
        out = run_selection(MatrixOracle(Y[:6]), UCBE(), budget=600, random_state=seed)
        leads |= set(out.trace_best.tolist())
    assert leads == {0, 1}  # both tied models lead at some point (what the old rule missed)


def test_repeated_seeds_are_refused():
    """A repeated seed counted one run twice (and a stopped experiment dropped it)."""
    Y = lowrank_data(30, 200, r=2, seed=8)[0]
    pools = {"gap0.02": exact_gap_pool(Y.mean(axis=1), 0.02, 12)}
    with pytest.raises(InputError, match="seeds: 1 repeats; expected distinct seeds"):
        run_experiment(Y, pools, ["ucbe"], seeds=[1, 2, 1], budget=100, n_jobs=1)
    # a budget that is not an integer is refused before the runs (60.0 passed this check and
    # every run refused it; NaN raised a bare ValueError from int())
    for bad in (60.0, float("nan"), 0, True):
        with pytest.raises(InputError, match=r"budget=.*; expected a positive number of cells"):
            run_experiment(Y, pools, ["ucbe"], seeds=1, budget=bad, n_jobs=1)


@pytest.mark.parametrize("key", ["delta", "alpha"])
def test_delta_in_a_policy_spec_is_refused_not_overridden(key):
    """`pulse:delta=0.3` ran at the run's delta (0.05), silently: the spec is refused, naming
    the argument that sets it (and the CLI flag on the command line)."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select import experiment_from_matrix
    from latentbench.select._policies import refuse_spec_delta

    Y = lowrank_data(30, 200, r=2, seed=8)[0]
    pools = {"gap0.02": exact_gap_pool(Y.mean(axis=1), 0.02, 12)}
    spec = f"pulse:{key}=0.3"
    said = rf"policies='pulse:{key}=0\.3': {key}( \(the old spelling of delta\))? is set by"
    with pytest.raises(InputError, match=said + r" the delta= argument \(delta=0\.3\), not in"):
        run_experiment(Y, pools, ["ucbe", spec], seeds=1, budget=100, n_jobs=1)
    with pytest.raises(InputError, match=said):
        experiment_from_matrix(Y, policies=["ucbe", spec], seeds=1, budget=100, n_jobs=1)
    with pytest.raises(InputError, match=r"^--policy 'pulse:delta=0\.1': delta is set by --delta"):
        refuse_spec_delta("pulse:delta=0.1", "--policy")
    refuse_spec_delta("pulse:weights=precision", "--policy")  # nothing to refuse
    refuse_spec_delta("ucbe", "policy")
    _register()
    out = CliRunner().invoke(app, ["experiment", "nosuch.csv", "--policies", f"ucbe,{spec}"])
    assert out.exit_code == 2
    text = " ".join(out.output.split())
    assert f"--policies '{spec}': {key}" in text and "is set by --delta (--delta 0.3)" in text


def test_experiment_help_gives_the_batch_size_default_of_the_schedule():
    """`--batch-size` said 'default 64'; the default comes from the pool's schedule (16 on
    every experiment the tester ran)."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    out = CliRunner().invoke(app, ["experiment", "--help"], env={"COLUMNS": "200"})
    text = " ".join(out.output.replace("│", " ").split())
    assert "default 64" not in text
    assert "Default: set by the largest pool's shape and --budget" in text
    batch, _ = default_schedule(36, 1700, 3000)  # BFCL's candidates: not 64
    assert batch == 16


def test_a_missing_candidate_cell_is_named_by_its_ids_and_file(tmp_path):
    """`experiment` named 'model row 10, item column 409' (a position inside the candidate
    half), no file, and no --missing drop-items."""
    from typer.testing import CliRunner

    from latentbench.cli import _register, app
    from latentbench.select import experiment_from_matrix

    Y = lowrank_data(20, 120, r=2, seed=5)[0].astype(np.float64)
    _hist, test = split_models(20, random_state=0)
    Y[test[3], 40] = np.nan
    models = [f"model-{k}" for k in range(20)]
    items = [f"q{k:03d}" for k in range(120)]
    path = tmp_path / "holes.csv"
    pd.DataFrame(Y, columns=items).assign(model=models)[["model", *items]].to_csv(path, index=False)
    kw = dict(pools="full", policies=["ucbe"], seeds=1, budget=100, pool_size=10)
    said = (
        rf"holes\.csv: 1 candidate cell is missing \(first: model 'model-{test[3]}', item "
        r"'q040'\).*missing='drop-items'"
    )
    with pytest.raises(InputError, match=said):
        experiment_from_matrix(path, n_jobs=1, **kw)
    _register()
    out = CliRunner().invoke(app, ["experiment", str(path), "--seeds", "1", "--pools", "full",
                                   "--policies", "ucbe", "--out", str(tmp_path / "x")])  # fmt: skip
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and f"(first: model 'model-{test[3]}', item 'q040')" in text
    assert "pass --missing drop-items to drop the items" in text


def test_no_workers_or_a_fraction_of_one_is_refused():
    """`experiment --jobs 0` (or -5) ran on every core, unsaid, and n_jobs=1.5 failed inside
    the process pool: refused, naming the argument and what it takes (as the bootstrap's)."""
    from latentbench.select import experiment_from_matrix

    Y = lowrank_data(30, 200, r=2, seed=8)[0]
    pools = {"gap0.02": exact_gap_pool(Y.mean(axis=1), 0.02, 12)}
    for jobs in (0, -5, 1.5, True):
        said = rf"n_jobs={jobs!r}; expected -1 \(all cores\) or an integer >= 1"
        with pytest.raises(InputError, match=said):
            run_experiment(Y, pools, ["ucbe"], seeds=1, budget=100, n_jobs=jobs)
        with pytest.raises(InputError, match=said):
            experiment_from_matrix(Y, policies=["ucbe"], seeds=1, budget=100, n_jobs=jobs)


def test_a_rank_above_what_the_history_can_hold_is_refused():
    # --rank 300 on a 35-model history fitted a rank-300 proxy and recorded proxy_rank 300
    from latentbench.select import experiment_from_matrix

    Y = lowrank_data(20, 120, r=2, seed=5)[0]
    kw = dict(pools="full", policies=["pulse"], seeds=1, budget=50, pool_size=10, n_jobs=1)
    with pytest.raises(InputError, match=r"rank=11; expected an integer in \[1, 10\]"):
        experiment_from_matrix(Y, rank=11, **kw)
    assert experiment_from_matrix(Y, rank=10, **kw).params["proxy_rank"] == 10


def test_a_rank_no_policy_reads_is_said_once_and_no_proxy_is_fitted(monkeypatch):
    """`experiment --policies ucbe,uniform --rank 500` warned that --rank was not used, then
    refused it as too large for the history (a proxy nobody reads was fitted and its rank
    checked): now the warning is all, and no proxy is fitted."""
    from latentbench.select import _proxy, experiment_from_matrix

    def no_fit(*args, **kwargs):
        raise AssertionError("a proxy was fitted for policies that read none")

    monkeypatch.setattr(_proxy, "fit_history", no_fit)
    Y = lowrank_data(20, 120, r=2, seed=5)[0]
    kw = dict(pools="full", seeds=1, budget=50, pool_size=10, n_jobs=1)
    with pytest.warns(DataWarning, match=r"^rank=500 not used: policies 'ucbe,uniform'"):
        out = experiment_from_matrix(Y, rank=500, policies=["ucbe", "uniform"], **kw)
    assert out.params["proxy_rank"] is None and out.params["proxy_fit_seconds"] is None
    assert {row["policy"] for row in out.summary} == {"ucbe", "uniform"}


def test_a_repeated_policy_is_refused(tmp_path):
    # '--policies ucbe,ucbe' ran every run twice and printed two identical 'reference' rows
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    Y = lowrank_data(30, 200, r=2, seed=8)[0]
    pools = {"gap0.02": exact_gap_pool(Y.mean(axis=1), 0.02, 12)}
    with pytest.raises(InputError, match=r"policies: 'ucbe' repeats; expected distinct"):
        run_experiment(Y, pools, ["ucbe", " ucbe"], seeds=1, budget=100, n_jobs=1)
    path = tmp_path / "y.csv"
    pd.DataFrame(Y, index=[f"m{i}" for i in range(30)]).rename_axis("model").to_csv(path)
    _register()
    args = ["experiment", str(path), "--policies", "ucbe,ucbe", "--seeds", "1", "--jobs", "1"]
    out = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "x")])
    assert out.exit_code == 2 and "--policies: 'ucbe' repeats" in " ".join(out.output.split())


def test_two_gap_targets_that_select_the_same_models_are_one_pool():
    # 'gap:0.01,0.011,0.012' on a small leaderboard built three identical pools, run three
    # times under gap0.010, gap0.010-2, gap0.010-3 as if they were replicates
    from latentbench.select import experiment_from_matrix

    Y = lowrank_data(20, 120, r=2, seed=5)[0]
    kw = dict(policies=["ucbe"], seeds=1, budget=50, pool_size=10, n_jobs=1)
    with pytest.warns(DataWarning, match=r"'gap0\.0101' selects the same 10 models as 'gap0\.01'"):
        res = experiment_from_matrix(Y, pools="gap:0.01,0.0101,full", **kw)
    assert len(res.pools) == 2 and "full" in res.pools
    assert not any(name.endswith("-2") for name in res.pools)
    from latentbench.cli._common import cli_spelling

    said = "pools: 'gap0.0101' selects the same 10 models as 'gap0.01' (measured top-two gap"
    assert cli_spelling(said).startswith("--pools: 'gap0.0101' selects the same")


@pytest.mark.parametrize("key", ["batch_size", "grid_step"])
@pytest.mark.parametrize("bad", [0, -4, 2.5])
def test_a_batch_size_or_grid_step_below_one_is_refused_not_a_traceback(key, bad):
    # '--batch-size 0' raised ZeroDivisionError and '--batch-size -4' an IndexError
    Y = lowrank_data(30, 200, r=2, seed=8)[0]
    pools = {"gap0.02": exact_gap_pool(Y.mean(axis=1), 0.02, 12)}
    with pytest.raises(InputError, match=rf"{key}={bad}; expected a positive integer"):
        run_experiment(Y, pools, ["ucbe"], seeds=1, budget=100, n_jobs=1, **{key: bad})


def _held_task(task):
    """A worker's task that holds its process 20 s (the pool's in-flight run; far above the
    bound asserted, so that a loaded machine cannot reach it; the signal ends the test)."""
    import time

    time.sleep(20.0)
    return {"task": task}


def test_a_signal_given_to_a_pool_thread_is_handled_while_a_stopped_pool_drains(monkeypatch):
    """After a stop the parent waited for the runs in flight with no timeout: a signal the OS
    gave one of the parent's threads (the pool's manager thread; a second Ctrl-C) was handled
    only once every run in flight ended. Now it is handled within the poll (0.2 s)."""
    import signal
    import threading
    import time

    from latentbench.select import _experiment

    class Handled(Exception):
        pass

    def handler(signum, frame):
        raise Handled

    monkeypatch.setattr(_experiment, "_run_task", _held_task)
    monkeypatch.setattr(_experiment, "_init_worker", lambda settings: None)
    stop = threading.Event()
    sent: list[float] = []

    def kick() -> None:
        time.sleep(0.2)  # the workers have their tasks
        stop.set()
        time.sleep(0.2)  # the parent waits for the runs in flight
        others = [t for t in threading.enumerate() if t is not threading.current_thread()]
        others = [t for t in others if t is not threading.main_thread() and t.ident]
        sent.append(time.monotonic())
        signal.pthread_kill(others[0].ident, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, handler)
    kicker = threading.Thread(target=kick)
    try:
        kicker.start()
        with pytest.raises(Handled):
            _experiment._run_local_pool(None, [("p", "s", 0), ("p", "s", 1)], 2, None, stop)
        waited = time.monotonic() - sent[0]
        assert waited < 5.0, waited  # ~19.6 s before (the runs in flight's 20 s)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        kicker.join(10)
