"""A live run without a budget stops when the best is certified (issue 29 defaults)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from latentbench.io.store import Store
from latentbench.select import MatrixOracle, SelectionRecord, default_schedule
from latentbench.select.live import LiveConfig, run_live


def test_live_without_a_budget_stops_certified(live_setup):
    s = live_setup
    path = s.write_config()
    text = path.read_text().replace("budget = 96\n", "")
    text = text.replace("batch_size = 8\n", "").replace("init_batch = 8\n", "")
    path.write_text(text)
    cfg = LiveConfig.from_toml(path)
    assert cfg.run.budget is None and cfg.run.stop is None
    with Store(s.tmp / "defaults.duckdb") as db:
        live = run_live(cfg, db, oracle=MatrixOracle(s.Y))
        record = SelectionRecord.from_store(db, live.run_id)
    sel = live.selection
    assert live.status == "done" and sel is not None
    m, n = s.Y.shape
    batch, start = default_schedule(m, n)
    assert sel.params["stop"] == "confidence" and sel.params["batch_size"] == batch
    assert sel.evaluations_init == m * start
    assert sel.stopped in ("confidence", "exhausted")
    assert sel.stopped == "exhausted" or (sel.certified and sel.evaluations_total < m * n)
    assert record.best_model == str(sel.best_id) and record.n_items == n
    # no [policy] delta: certified at 0.05 as select replay (not the policy class's 0.1)
    assert sel.params["delta"] == 0.05 and record.delta == 0.05


def test_live_epsilon_is_read_from_run_and_stored(live_setup):
    """``[run] epsilon``: an exact tie at the top (the best row permuted into another model)
    is certified within epsilon through the store, and the stored record says so."""
    s = live_setup
    Y = s.Y.copy()
    best = int(Y.mean(axis=1).argmax())
    other = (best + 1) % Y.shape[0]
    Y[other] = np.random.default_rng(0).permutation(Y[best])
    runs = {}
    for eps in (0.0, 0.2):
        path = s.write_config(s.tmp / f"eps{eps}.toml", run={"epsilon": eps})
        path.write_text(path.read_text().replace("budget = 96\n", ""))
        cfg = LiveConfig.from_toml(path)
        assert cfg.run.epsilon == eps and cfg.run.budget is None
        with Store(s.tmp / f"epsilon{eps}.duckdb") as db:
            live = run_live(cfg, db, oracle=MatrixOracle(Y))
            record = SelectionRecord.from_store(db, live.run_id)
        assert live.status == "done" and live.selection is not None
        runs[eps] = (live.selection, record)
    sel, record = runs[0.2]
    assert sel.params["epsilon"] == 0.2 and sel.stopped == "confidence" and sel.certified
    assert sel.best in (best, other)
    assert record.epsilon == 0.2 and record.certified
    assert record.certificate_text == "within 0.2 of the best"
    # the tolerance stopped earlier than the exact certificate, which reveals both tied rows
    exact, _ = runs[0.0]
    assert exact.certified and exact.n_observed[[best, other]].tolist() == [Y.shape[1]] * 2
    assert sel.evaluations_total < exact.evaluations_total


def test_a_history_holding_candidates_is_said_and_recorded(live_setup):
    """``select replay`` warns when its history holds candidates (the proxy has seen their
    answers: the cells used are optimistic); a live run with such a ``[proxy] history`` said
    nothing, and its record did not say it either."""
    import pandas as pd
    import pytest

    from latentbench.exceptions import DataWarning

    s = live_setup
    hist = pd.read_csv(s.tmp / "history.csv")
    leak = pd.DataFrame(s.Y[1:2], columns=[it["id"] for it in s.items])
    leak.insert(0, "model", [s.names[1]])
    pd.concat([hist, leak]).to_csv(s.tmp / "history.csv", index=False)
    cfg = LiveConfig.from_toml(s.write_config())
    with Store(s.tmp / "leak.duckdb") as db:
        with pytest.warns(DataWarning, match=r"holds 1 of the 4 candidates \(e\.g\. 'model-1'\)"):
            live = run_live(cfg, db, oracle=MatrixOracle(s.Y))
        record = SelectionRecord.from_store(db, live.run_id)
    assert live.selection is not None
    assert live.selection.params["candidates in the history"] == 1
    assert record.params["candidates in the history"] == 1


def test_a_policy_without_intervals_is_certified_on_its_revealed_cells(live_setup):
    """``[policy] ci = "none"`` without a budget was given LUCB sampling (``bonus="ci"``) and
    refused: "bonus='ci' needs intervals", a bonus the configuration never set."""
    s = live_setup
    path = s.write_config()
    path.write_text(
        path.read_text()
        .replace("budget = 96\n", "")
        .replace("[policy]\n", '[policy]\nci = "none"\n')
    )
    with Store(s.tmp / "cinone.duckdb") as db:
        live = run_live(LiveConfig.from_toml(path), db, oracle=MatrixOracle(s.Y))
    assert live.status == "done" and live.selection is not None
    assert live.selection.params["certificate"] == "betting on revealed cells"


def test_a_history_a_policy_does_not_use_is_said_unused(live_setup):
    """``policy = "ucbe"`` with a ``[proxy] history``: UCB-E learns no proxy, and the run
    ignored the history without a word (``select replay --history`` says it). The run says
    it in one line (a warning) and in its outputs (the message, the final decision's record),
    in select replay's words; no leak is warned of for candidates inside the history."""
    import warnings

    import pandas as pd

    from latentbench.exceptions import DataWarning

    s = live_setup
    hist = pd.read_csv(s.tmp / "history.csv")
    leak = pd.DataFrame(s.Y[1:2], columns=[it["id"] for it in s.items])
    leak.insert(0, "model", [s.names[1]])
    pd.concat([hist, leak]).to_csv(s.tmp / "history.csv", index=False)
    path = s.write_config(run={"policy": "ucbe"})
    path.write_text(path.read_text().replace("refit_every = 3\n", ""))
    words = "given, which this policy does not use (it learns no proxy)"
    with Store(s.tmp / "unused.duckdb") as db:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            live = run_live(LiveConfig.from_toml(path), db, oracle=MatrixOracle(s.Y))
        record = SelectionRecord.from_store(db, live.run_id)
    said = [str(w.message) for w in seen if issubclass(w.category, DataWarning)]
    assert [m for m in said if words in m] == [  # its rank = 2 as unused as the history
        f"{path}: [proxy] history ({s.tmp / 'history.csv'}), rank {words}"
    ]
    assert not [m for m in said if "candidates" in m]  # no leak: nothing learns their answers
    assert live.selection is not None and words in live.message
    assert words in record.params["history"]["note"]
    assert "candidates in the history" not in record.params


def test_proxy_options_a_policy_does_not_use_are_said_unused(live_setup):
    """``policy = "ucbe"`` with ``[proxy] rank = 2`` and no history ran without a word (the
    rank of a proxy UCB-E does not learn); now said as the unused history is, in the warning,
    the message and the record. PULSE, which learns the proxy, says nothing of it."""
    import warnings

    from latentbench.exceptions import DataWarning

    s = live_setup
    path = s.write_config(run={"policy": "ucbe"})
    path.write_text(
        path.read_text().replace("refit_every = 3\n", "").replace('history = "history.csv"\n', "")
    )
    words = "[proxy] rank given, which this policy does not use (it learns no proxy)"
    with Store(s.tmp / "rank.duckdb") as db:
        with pytest.warns(DataWarning, match=re.escape(f"{path}: {words}")):
            live = run_live(LiveConfig.from_toml(path), db, oracle=MatrixOracle(s.Y))
        record = SelectionRecord.from_store(db, live.run_id)
    assert live.selection is not None and words in live.message
    assert record.params["history"] == {"source": "none", "note": words}
    path = s.write_config(s.tmp / "pulse.toml")  # history and rank = 2, both used
    with Store(s.tmp / "pulse.duckdb") as db, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run_live(LiveConfig.from_toml(path), db, oracle=MatrixOracle(s.Y))
    assert not [w for w in seen if "does not use" in str(w.message)]


def test_an_epsilon_no_certificate_reads_is_refused_before_anything_is_asked(live_setup):
    """``[run] epsilon = 0.01`` with a policy that has no certificate at a budget stop was
    refused by the selection after the paid initial batch (32 requests), in Python's words
    ('epsilon=0.01 ...', no file): now before the run row, naming the file and the key.
    At a confidence stop the same epsilon is read (a certificate on the revealed cells)."""
    from latentbench.exceptions import InputError

    s = live_setup
    path = s.write_config(run={"policy": "ucbe", "epsilon": 0.01, "budget": 20})
    path.write_text(path.read_text().replace("refit_every = 3", "").replace(
        'history = "history.csv"\nrank = 2', ""))  # fmt: skip
    store = s.tmp / "eps.duckdb"
    with pytest.raises(InputError, match=r"run.toml: \[run\] epsilon = 0.01 applies to a cert"):
        run_live(path, store)
    assert not s.state.requests and not store.exists()  # no run row, no store left behind
    path.write_text(path.read_text().replace("budget = 20", 'stop = "confidence"'))
    with Store(s.tmp / "eps2.duckdb") as db:
        live = run_live(LiveConfig.from_toml(path), db, oracle=MatrixOracle(s.Y))
    assert live.status == "done" and live.selection.params["epsilon"] == 0.01


def test_a_policy_delta_no_certificate_reads_is_refused_before_anything_is_asked(live_setup):
    """``[policy] ci = "none"`` with ``delta = 0.3`` at a budget stop ran without a word, its
    record saying delta 0.3 (no certificate reads it: the same run as 0.05), where select
    replay refuses ``--policy pulse:ci=none --delta 0.3 --budget N``: now refused before the
    run row, naming the file and the key. The default 0.05, or a confidence stop, runs; at
    a confidence stop the certificate on the revealed cells is built at the given delta (it
    was built at 0.05, the record saying 0.05: the setting ignored there too)."""
    from latentbench.exceptions import InputError

    s = live_setup
    path = s.write_config(run={"budget": 20})
    text = path.read_text().replace("refit_every = 3", 'ci = "none"\ndelta = 0.3')
    path.write_text(text)
    store = s.tmp / "delta.duckdb"
    with pytest.raises(InputError, match=r"run.toml: \[policy\] delta = 0.3 applies to a cert"):
        run_live(path, store)
    assert not s.state.requests and not store.exists()  # no run row, no store left behind
    for changed in (text.replace("delta = 0.3", "delta = 0.05"),
                    text.replace("budget = 20", 'stop = "confidence"')):  # fmt: skip
        path.write_text(changed)
        with Store(s.tmp / f"d{len(changed)}.duckdb") as db:
            live = run_live(LiveConfig.from_toml(path), db, oracle=MatrixOracle(s.Y))
        assert live.status == "done"
        assert live.selection.params["delta"] == (0.3 if "confidence" in changed else 0.05)


@pytest.mark.parametrize("policy", ["ucbe_lrf", "full"])
def test_a_confidence_stop_no_certificate_reads_is_refused_before_anything_is_asked(
    live_setup, policy
):
    """No budget (a confidence stop) with a policy that has no intervals and chooses its items
    (ucbe_lrf, full) was refused by the selection after the paid initial batch (32 requests),
    in Python's words ('stop='confidence' ...', no file), leaving a 'failed' run in the store:
    now before the run row, naming the file, the key and the way out."""
    from latentbench.exceptions import InputError
    from latentbench.select import make_policy
    from latentbench.select._run import certifies_at_confidence

    s = live_setup
    path = s.write_config(run={"policy": policy})
    path.write_text(path.read_text().replace("budget = 96\n", "").replace("refit_every = 3", "")
                    .replace('history = "history.csv"\nrank = 2', ""))  # fmt: skip
    store = s.tmp / "conf.duckdb"
    with pytest.raises(InputError, match=r"run.toml: \[run\] stop = 'confidence' \(the def"):
        run_live(path, store)
    assert not s.state.requests and not store.exists()  # no run row, no store left behind
    # the policies a certificate reads are not refused (their intervals, or uniform cells)
    assert all(certifies_at_confidence(make_policy(p)) for p in ("ucbe", "uniform", "pulse"))


def test_a_certificate_grid_the_memory_cannot_hold_is_refused_before_anything_is_asked(
    live_setup,
):
    """``[policy] certificate_grid = 100000000`` (pulse) was accepted, and the run asked its
    initial batch (32 cells) before PULSE's betting sequences asked for 11.9 GiB (a
    MemoryError, or a run that hangs): now bounded by the models before the run row, naming
    the file, the option and its range."""
    from latentbench.exceptions import InputError
    from latentbench.select import make_policy

    with pytest.raises(InputError, match=r"certificate_grid=100000000; expected an integer in "
                       r"\[2, 8,388,607\] for 4 models"):  # fmt: skip
        make_policy("pulse:certificate_grid=100000000", shape=(4, 48))
    make_policy("pulse:certificate_grid=8388607", shape=(4, 48))  # the bound itself is taken
    s = live_setup
    path = s.write_config()
    grid = "[policy]\ncertificate_grid = 100000000\n"
    path.write_text(path.read_text().replace("[policy]\n", grid))
    store = s.tmp / "grid.duckdb"
    with pytest.raises(InputError, match=r"run.toml: \[policy\]: policy 'pulse' option certif"):
        run_live(path, store)
    assert not s.state.requests and not store.exists()
