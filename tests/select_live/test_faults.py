"""Endpoint faults: bounded retries, per-cell errors, never a silent 0."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live


@pytest.fixture(scope="module")
def reference_run() -> list:
    """The fault-free run of the default configuration and its stored observations, made by
    the first test that asks (two tests ran it each: each test's server answers from the same
    table, the seed is the same)."""
    return []


def _reference(s, reference_run: list):
    """The fault-free run and its observations (made once per module; then the server's logs
    are reset)."""
    if not reference_run:
        ref = run_live(
            LiveConfig.from_toml(s.write_config(s.tmp / "ref.toml")), s.tmp / "ref.duckdb"
        )
        with Store(s.tmp / "ref.duckdb", read_only=True) as db:
            reference_run += [ref, db.selection_observations(ref.run_id)]
        s.state.requests.clear()
        s.state.answered.clear()
    return reference_run[0], reference_run[1].copy()


@pytest.mark.slow
def test_transient_faults_are_retried(live_setup, reference_run):
    s = live_setup
    ref, observed = _reference(s, reference_run)
    kinds = [["500"], ["429", "429"], ["garbage"], ["nochoices", "500"], ["500", "garbage", "429"]]
    for k, item in enumerate(s.items):
        s.state.faults[("model-1", item["id"])] = list(kinds[k % len(kinds)])
    # four of model 2's cells asked in one batch stall side by side (concurrency 4): the run
    # waits one client timeout for them, not one per batch holding a stall (items[::12] fell
    # in two batches: 6 s of the test idle)
    asked = observed.sort_values("seq")
    asked = asked[asked["model"] == "model-2"]
    slow = set(asked.loc[asked["round"] == asked["round"].min(), "item"].iloc[:4])
    assert len(slow) == 4
    for item in slow:
        s.state.faults[("model-2", item)] = ["timeout"]
    # 3 s: a normal answer on a loaded machine must not time out (only the injected stalls)
    cfg = LiveConfig.from_toml(s.write_config(oracle={"timeout": 3.0, "retries": 3}))
    result = run_live(cfg, s.tmp / "faults.duckdb")
    assert result.status == "done" and result.errors.empty
    assert result.selection.best == ref.selection.best
    np.testing.assert_allclose(result.selection.estimates, ref.selection.estimates)
    requests = {}
    for cell in s.state.requests:
        requests[cell] = requests.get(cell, 0) + 1
    chosen_m1 = [c for c in requests if c[0] == "model-1"]
    assert chosen_m1  # model 1 was evaluated
    for cell in chosen_m1:  # one request per fault, plus the good one
        k = int(cell[1][1:])
        assert requests[cell] == len(kinds[k % len(kinds)]) + 1
    timed_out = [c for c in requests if c[0] == "model-2" and c[1] in slow]
    assert timed_out
    for cell in timed_out:
        assert requests[cell] == 2
    assert max(s.state.answered.values()) == 1


@pytest.mark.slow
def test_persistent_faults_stop_then_resume(live_setup, reference_run):
    s = live_setup
    ref, _ = _reference(s, reference_run)
    broken = {("model-2", it["id"]) for it in s.items[::6]}
    for cell in broken:
        s.state.faults[cell] = ["500"] * 50
    config = s.write_config(oracle={"retries": 2})
    path = s.tmp / "stop.duckdb"
    first = run_live(LiveConfig.from_toml(config), path)
    assert first.status == "failed"
    failed = set(zip(first.errors["model"], first.errors["item"], strict=True))
    assert failed and failed <= broken
    for error in first.errors["error"]:
        assert error.startswith("HTTP 500") and "after 3 attempt(s)" in error
    for cell in failed:  # bounded: 1 + retries requests
        assert s.state.requests.count(cell) == 3
    with Store(path, read_only=True) as db:
        rows = db.selection_observations(first.run_id)
        status = db.connection.execute("SELECT status FROM selection_runs").fetchall()[0][0]
    assert status == "failed"
    bad = rows[rows["error"].notna()]
    assert set(zip(bad["model"], bad["item"], strict=True)) == failed
    assert bad["score"].isna().all()  # stored as missing, not 0

    # the endpoint is fixed: the same command retries exactly the failed cells
    s.state.faults.clear()
    n_before = len(s.state.requests)
    second = run_live(LiveConfig.from_toml(config), path)
    while second.status == "failed":  # later batches may hit other broken cells
        second = run_live(LiveConfig.from_toml(config), path)
    assert second.status == "done"
    again = s.state.requests[n_before:]
    assert failed <= set(again)
    assert second.selection.best == ref.selection.best
    np.testing.assert_allclose(second.selection.estimates, ref.selection.estimates)


def test_on_error_zero_reports_failures(live_setup):
    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["500"] * 50
    cfg = LiveConfig.from_toml(s.write_config(run={"on_error": "zero"}, oracle={"retries": 1}))
    path = s.tmp / "zero.duckdb"
    result = run_live(cfg, path)
    assert result.status == "done"
    n_failed = len(result.errors)
    assert n_failed >= 8 and set(result.errors["model"]) == {"model-0"}
    assert f"{n_failed} failed cell(s) were scored 0" in result.message
    n = len(s.state.requests)
    again = run_live(cfg, path)  # failures are replayed as failures: nothing requested
    assert len(s.state.requests) == n and again.selection.best == result.selection.best
    assert f"{n_failed} failed cell(s)" in again.message


def test_an_answer_without_text_is_paid_once_scored_0_and_empty_text_is_said(live_setup):
    # content null with finish_reason "length" (the token limit spent on reasoning): the same
    # request would be paid for the same answer, so it is not retried (it was, 1 + retries);
    # it is the model's answer, scored 0 with its reason (it failed the cell, and a resume
    # under on_error = "stop" paid for it again)
    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["empty"] * 10
        s.state.faults[("model-1", item["id"])] = ["null_length"] * 10
    cfg = LiveConfig.from_toml(s.write_config(oracle={"retries": 3}))
    with pytest.warns(Warning, match=r"\d+ answer\(s\) received this session had empty text"):
        result = run_live(cfg, s.tmp / "null.duckdb")
    assert result.status == "done" and result.errors.empty
    with Store(s.tmp / "null.duckdb", read_only=True) as db:
        obs = db.selection_observations(result.run_id)
    null = obs[obs["model"] == "model-1"]
    assert len(null) > 0 and (null["score"] == 0).all() and null["error"].isna().all()
    assert (
        null["note"]
        .str.contains(
            r"content null, finish_reason 'length'\); scored 0, not retried; raise max_tokens"
        )
        .all()
    )
    asked = [c for c in s.state.requests if c[0] == "model-1"]
    assert len(asked) == len(set(asked)) == len(null)  # one request per cell, no retry
    # blank text is an answer: scored by the scorer (exact_match: 0), stored as such
    blank = obs[obs["model"] == "model-0"]
    assert len(blank) > 0 and (blank["score"] == 0).all() and blank["error"].isna().all()


def test_a_refused_connection_is_not_a_paid_request():
    # nothing listens on the port: every attempt is refused before a request is sent, so the
    # spend cap's allowance and the cells' attempts stay at 0 (they counted 1 + retries each)
    import socket

    from latentbench.select.oracles import ChatEndpoint
    from latentbench.select.oracles._openai import ChatCompletionsOracle

    with socket.socket() as sock:  # a free port, closed again
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    items = [{"id": f"q{k}", "prompt": f"p{k}", "answer": "a"} for k in range(3)]
    endpoint = ChatEndpoint("m", f"http://127.0.0.1:{port}/v1", "m")
    oracle = ChatCompletionsOracle(
        [endpoint], items, retries=2, backoff=0.0, max_backoff=0.0, timeout=5.0, concurrency=1
    )  # one at a time: a request in flight holds its share of the allowance until it ends
    with oracle:
        oracle.limit_requests(1)
        cells = list(oracle.evaluate_cells(0, np.arange(3)))
    assert [c.attempts for c in cells] == [0, 0, 0]
    assert not any(c.capped for c in cells)  # an allowance of 1 was never used up
    assert all("after 3 attempt(s)" in c.error and "connection" in c.error for c in cells)
    assert oracle.n_requests == 0 and oracle._allowance == 1


def test_a_cell_is_not_capped_while_a_refundable_request_is_in_flight():
    # (review) with an allowance of 2 and 2 cells in flight, a cell retrying after a 500
    # found the allowance spent while the other's request was still to come back unsent
    # (refunded): it was capped "after 1 request" with a request left, and the run said
    # "raise spend_cap"
    import time

    from latentbench.select.oracles import ChatEndpoint
    from latentbench.select.oracles._openai import ChatCompletionsOracle, _Retry

    items = [{"id": "a", "prompt": "A", "answer": "x"}, {"id": "b", "prompt": "B", "answer": "x"}]
    oracle = ChatCompletionsOracle([ChatEndpoint("m", "http://127.0.0.1:9/v1", "m")], items,
                                   concurrency=2, retries=3, backoff=0.0, timeout=5)  # fmt: skip
    calls = {"A": 0}

    def send(opener, request, key):
        if '"A"' in request.data.decode():
            calls["A"] += 1
            if calls["A"] == 1:
                time.sleep(0.05)
                raise _Retry("HTTP 500")
            return "x"
        time.sleep(0.3)  # a slow refused connection: never sent
        raise _Retry("connection error: refused", unsent=True)

    oracle._send = send
    oracle.limit_requests(2)
    with oracle:
        cells = sorted(oracle.evaluate_cells(0, np.array([0, 1])), key=lambda c: c.position)
    assert cells[0].score == 1.0 and not cells[0].capped and cells[0].attempts == 2
    assert not cells[1].capped and cells[1].attempts == 0
    assert oracle.n_requests == 2


def test_an_unsent_request_past_its_deadline_stays_unpaid_and_keeps_its_reason():
    import time

    from latentbench.select.oracles import ChatEndpoint
    from latentbench.select.oracles._openai import ChatCompletionsOracle, _Retry

    items = [{"id": "a", "prompt": "A", "answer": "x"}]
    oracle = ChatCompletionsOracle([ChatEndpoint("m", "http://unknown.invalid/v1", "m")], items,
                                   retries=0, timeout=0.2)  # fmt: skip

    def send(opener, request, key):  # a DNS lookup slower than the timeout, then gaierror
        time.sleep(0.3)
        raise _Retry("connection error: Name or service not known", unsent=True)

    oracle._send = send
    oracle.limit_requests(5)
    with oracle:
        (cell,) = list(oracle.evaluate_cells(0, np.array([0])))
    assert cell.attempts == 0 and "Name or service not known" in cell.error
    assert oracle.n_requests == 0 and oracle._allowance == 5


def test_a_cell_aborted_before_its_request_says_none_was_sent():
    # it said "(after 1 attempt(s))" while its attempts were 0
    from latentbench.select.oracles import ChatEndpoint
    from latentbench.select.oracles._openai import ChatCompletionsOracle

    items = [{"id": "a", "prompt": "A", "answer": "x"}]
    oracle = ChatCompletionsOracle([ChatEndpoint("m", "http://127.0.0.1:9/v1", "m")], items)
    oracle.abort()  # a second Ctrl-C before the batch
    with oracle:
        (cell,) = list(oracle.evaluate_cells(0, np.array([0])))
    assert cell.attempts == 0 and cell.error == "aborted (Ctrl-C) (none sent)"


def test_a_numpy_temperature_is_sent_as_a_number_and_a_bad_one_refused():
    """temperature=np.float32(0.5) is not JSON: the request was counted against the allowance
    and left in flight, then a TypeError escaped (helper-77). It is a float from the start,
    and a temperature that is no number >= 0 is refused when the oracle is made."""
    import json as json_module

    from latentbench.exceptions import InputError
    from latentbench.select.oracles import ChatEndpoint
    from latentbench.select.oracles._openai import ChatCompletionsOracle

    items = [{"id": "a", "prompt": "A", "answer": "x"}]
    endpoint = ChatEndpoint("m", "http://127.0.0.1:9/v1", "m")
    oracle = ChatCompletionsOracle([endpoint], items, temperature=np.float32(0.5), retries=0)
    sent = []

    def send(opener, request, key):
        sent.append(json_module.loads(request.data.decode()))
        return "x"

    oracle._send = send
    with oracle:
        oracle.limit_requests(3)
        cells = list(oracle.evaluate_cells(0, np.arange(1)))
    assert cells[0].score == 1.0 and sent[0]["temperature"] == 0.5
    assert oracle.n_requests == 1 and oracle._allowance == 2
    for bad in (-0.1, "0.5", float("nan"), True):
        with pytest.raises(InputError, match=r"temperature=.*; expected a number >= 0"):
            ChatCompletionsOracle([endpoint], items, temperature=bad)


def test_a_nan_answer_names_the_model_the_item_the_value_and_the_range(live_setup, monkeypatch):
    """A scorer returning float('nan') for one item, a python oracle returning NaN, a plain
    oracle returning NaN: each stops the run with an error naming the model, the item, the
    value and what was expected ("oracle returned NaN" and "m/i:" said neither the
    expectation nor which part was the model); every answer stored before it is kept."""
    import re

    import pandas as pd

    from latentbench.exceptions import DataWarning
    from latentbench.io import ResponseMatrix
    from latentbench.select._estimate_live import estimate_live
    from latentbench.select.oracles import CallableOracle

    s = live_setup
    monkeypatch.syspath_prepend(str(s.tmp))
    module = f"nanscorer_{s.tmp.name.replace('-', '_')}"
    (s.tmp / f"{module}.py").write_text(
        "import math\n"
        "def score(response, reference):\n"
        "    return math.nan if reference == '14' else float(response.strip() == reference)\n"
    )  # item q007's reference is 14
    config = s.write_config(run={"init_batch": 48, "batch_size": 8})
    config.write_text(
        config.read_text().replace(
            'kind = "exact_match"', f'kind = "python"\nfunction = "{module}:score"'
        )
    )
    path = s.tmp / "nan.duckdb"
    result = run_live(LiveConfig.from_toml(config), path)
    assert result.status == "failed"
    said = "model 'model-0', item 'q007': scorer returned nan; expected a score in [0, 1]"
    assert said in result.message, result.message
    with Store(path, read_only=True) as db:
        rows = db.selection_observations(result.run_id)
    assert len(rows) == 48 and rows["score"].notna().sum() == 47  # the others kept
    (error,) = rows.loc[rows["item"] == "q007", "error"]
    assert error == "scorer returned nan; expected a score in [0, 1]"
    hist = pd.read_csv(s.tmp / "history.csv").set_index("model")
    (s.tmp / f"{module}_all.py").write_text(
        "def score(response, reference):\n    return float('nan')\n"
    )
    config.write_text(config.read_text().replace(f"{module}:score", f"{module}_all:score"))
    with pytest.warns(DataWarning, match=r"live run stopped early") as caught:
        estimate_live(ResponseMatrix.from_wide(hist), config, s.tmp / "e.duckdb",
                      model="model-1", budget=4)  # fmt: skip
    assert any(re.search(r"model 'model-1', item 'q\d+': scorer returned nan; expected a "
                         r"score in \[0, 1\]", str(w.message)) for w in caught)  # fmt: skip
    # a python oracle's NaN, and a plain oracle's
    (cell,) = CallableOracle(lambda m, i: [float("nan")], ["m"], ["a"]).evaluate_cells(
        0, np.array([0])
    )
    assert cell.error == "score() returned NaN; expected a score in [0, 1] (NaN: failed)"

    class Plain:
        n_models, n_items = len(s.names), len(s.items)

        def evaluate(self, model_index, item_indices):
            return np.where(np.asarray(item_indices) == 7, np.nan, 1.0)

    plain = run_live(LiveConfig.from_toml(config), s.tmp / "plain.duckdb", oracle=Plain())
    assert plain.status == "failed"
    assert (
        "model 'model-0', item 'q007': the oracle returned NaN (a failed evaluation, no "
        "score); expected a score in [0, 1]"
    ) in plain.message, plain.message


@pytest.mark.parametrize("bad", [2.0, -1.0, 75.0, float("inf")])
def test_a_score_outside_0_1_from_an_oracle_is_refused_and_stored_with_its_error(live_setup, bad):
    """A plain oracle answering 2.0, -1 or 75 (a percentage) for one item, and a streaming
    oracle doing the same, were stored and used as scores (every interval assumes [0, 1]):
    each stops the run with an error naming the model, the item, the value and the range,
    the bad answer stored as NaN with that error, every answer before it kept."""
    from latentbench.select.oracles import CellResult

    s = live_setup
    config = s.write_config(run={"init_batch": 48, "batch_size": 8})
    said = f"the oracle returned {bad!r}; expected a score in [0, 1]"

    class Plain:
        n_models, n_items = len(s.names), len(s.items)

        def evaluate(self, model_index, item_indices):
            return np.where(np.asarray(item_indices) == 7, bad, 1.0)

    class Streaming(Plain):
        def evaluate_cells(self, model_index, item_indices):
            for pos, k in enumerate(np.asarray(item_indices)):
                yield CellResult(pos, bad if k == 7 else 1.0)

    for name, oracle in (("plain", Plain()), ("streaming", Streaming())):
        path = s.tmp / f"{name}_{bad}.duckdb"
        result = run_live(LiveConfig.from_toml(config), path, oracle=oracle)
        assert result.status == "failed", (name, result.message)
        assert f"model 'model-0', item 'q007': {said}" in result.message, result.message
        with Store(path, read_only=True) as db:
            rows = db.selection_observations(result.run_id)
        assert len(rows) == 48 and rows["score"].notna().sum() == 47  # the others kept
        ((score, error),) = rows.loc[rows["item"] == "q007", ["score", "error"]].to_numpy()
        assert np.isnan(score) and error.startswith(said), (name, score, error)


ROUNDED = [
    (sum([0.05] * 20), 1.0),  # 20 checks of 0.05 each, all passed: 1.0000000000000002
    (1 - 0.9 - 0.1, 0.0),  # -2.8e-17
    (1 + 1e-10, 1.0),
    (1.0, 1.0),
    (0.0, 0.0),
]


# item k of ROUNDED is planted at q007 + k, all in one run per oracle kind (below)
_PLANTED = {7 + k: given for k, (given, _) in enumerate(ROUNDED)}


@pytest.fixture(scope="module")
def rounded_runs() -> dict:
    """The stored rows of model-0 per oracle kind, filled by the first test that asks: one run
    per kind with every value of :data:`ROUNDED` at an item of its own (was one run per kind
    and value: 15 runs, now 3, the same cells asked and stored)."""
    return {}


@pytest.mark.parametrize(("given", "stored"), ROUNDED)
def test_a_score_a_float_rounding_past_0_or_1_is_kept_as_the_bound(
    live_setup, rounded_runs, given, stored
):
    """A fractional score summed in floating point lands a rounding past the bound
    (``sum([0.05] * 20)`` is 1.0000000000000002): it is the bound, not a score outside
    [0, 1]; refused, it stopped the run as failed (a plain, streaming or python oracle)."""
    from latentbench.select.oracles import CallableOracle, CellResult

    if not rounded_runs:
        s = live_setup
        config = s.write_config(run={"init_batch": 48, "batch_size": 8})

        class Plain:
            n_models, n_items = len(s.names), len(s.items)

            def evaluate(self, model_index, item_indices):
                return np.array([_PLANTED.get(int(k), 1.0) for k in item_indices])

        class Streaming(Plain):
            def evaluate_cells(self, model_index, item_indices):
                for pos, k in enumerate(np.asarray(item_indices)):
                    yield CellResult(pos, _PLANTED.get(int(k), 1.0))

        def score(model, items):
            return [_PLANTED.get(int(item[1:]), 1.0) for item in items]

        python = CallableOracle(score, s.names, [it["id"] for it in s.items])
        for name, oracle in (("plain", Plain()), ("streaming", Streaming()), ("python", python)):
            path = s.tmp / f"{name}.duckdb"
            result = run_live(LiveConfig.from_toml(config), path, oracle=oracle)
            assert result.status != "failed", (name, result.message)
            with Store(path, read_only=True) as db:
                rows = db.selection_observations(result.run_id)
            rounded_runs[name] = rows[rows["model"] == "model-0"]
    item = f"q{7 + [g for g, _ in ROUNDED].index(given):03d}"
    assert set(rounded_runs) == {"plain", "streaming", "python"}
    for name, rows in rounded_runs.items():
        ((score_, error),) = rows.loc[rows["item"] == item, ["score", "error"]].to_numpy()
        assert score_ == stored and error is None, (name, item, score_, error)


def test_a_chat_scorer_rounding_past_1_is_kept_as_1(live_setup):
    # the chat oracle's scorer (a python scorer of the config): its sum of partial credits
    # 1.0000000000000002 was 'scorer returned ...; expected a score in [0, 1]', a failed cell
    from latentbench.select.oracles import ChatCompletionsOracle, ChatEndpoint

    s = live_setup
    endpoint = ChatEndpoint(
        "model-0", f"http://127.0.0.1:{s.port}/v1", "model-0", api_key_env=s.key_env
    )
    for given, stored in [*ROUNDED, (1.5, None)]:
        oracle = ChatCompletionsOracle(
            [endpoint], s.items, scorer=lambda text, answer, g=given: g, retries=0
        )
        with oracle:
            (cell,) = oracle.evaluate_cells(0, np.array([0]))
        if stored is None:
            assert np.isnan(cell.score) and cell.error.startswith("scorer returned 1.5"), cell
        else:
            assert cell.score == stored and cell.error is None, (given, cell)
