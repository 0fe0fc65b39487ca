"""One spelling for the certificate's error probability: ``delta`` (``alpha`` warns for a release).

``Pulse(alpha=...)``, a spec ``pulse:alpha=...`` and ``[policy] alpha`` in a live TOML still
work, with a ``FutureWarning`` naming ``delta``, and decide exactly as ``delta``; both
spellings at once are refused; records written with ``params["alpha"]`` still load.
"""

from __future__ import annotations

import hashlib
import json
import warnings

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select import (
    LiveConfig,
    LowRankProxy,
    MatrixOracle,
    Pulse,
    SelectionRecord,
    make_policy,
    run_selection,
)
from latentbench.select.live._config import canonical_identity

from .conftest import lowrank_data


@pytest.fixture(scope="module")
def problem():
    Y, U, V, b = lowrank_data(8, 200, r=2, seed=21)
    return Y, LowRankProxy.from_factors(V, b, U_history=U)


def _run(Y, proxy, policy):
    return run_selection(
        MatrixOracle(Y), policy, proxy=proxy, budget=600, stop="confidence", random_state=4
    )


def test_pulse_alpha_warns_and_decides_as_delta(problem):
    Y, proxy = problem
    with pytest.warns(FutureWarning, match="alpha is deprecated; use delta"):
        old = Pulse(alpha=0.3, bonus="ci")
    new = Pulse(delta=0.3, bonus="ci")
    assert old.delta == new.delta == 0.3
    a, b = _run(Y, proxy, old), _run(Y, proxy, new)
    assert a.best == b.best and a.certified == b.certified
    assert a.trace_arm.tolist() == b.trace_arm.tolist()
    np.testing.assert_array_equal(a.estimates, b.estimates)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)
    assert a.params["delta"] == b.params["delta"] == 0.3 and "alpha" not in a.params
    # delta reaches the intervals: with UCB-E pulls (not interval-driven) and a fixed budget,
    # the same cells give wider intervals at a smaller delta
    kw = dict(proxy=proxy, budget=300, stop="budget", random_state=4)
    loose = run_selection(MatrixOracle(Y), Pulse(delta=0.3), **kw)
    with pytest.warns(FutureWarning):
        tight = run_selection(MatrixOracle(Y), Pulse(alpha=0.01), **kw)
    assert loose.trace_arm.tolist() == tight.trace_arm.tolist()
    assert np.all(tight.upper - tight.lower >= loose.upper - loose.lower)
    assert float(np.mean(tight.upper - tight.lower)) > float(np.mean(loose.upper - loose.lower))
    with pytest.warns(FutureWarning, match="use delta"):
        assert old.alpha == 0.3  # the attribute's old name too, for one release


def test_both_spellings_are_refused():
    with pytest.raises(InputError, match=r"alpha=0\.1 and delta=0\.2.*give delta only"):
        Pulse(alpha=0.1, delta=0.2)
    with pytest.raises(InputError, match=r"policy 'pulse': alpha=0\.1 and delta=0\.2"):
        make_policy("pulse:alpha=0.1;delta=0.2")
    with pytest.raises(InputError, match="no option"):
        make_policy("ucbe:alpha=0.1")  # a policy without intervals takes neither


def test_spec_alias_warns_and_a_run_delta_still_wins():
    with pytest.warns(FutureWarning, match="policy 'pulse': alpha is deprecated; use delta"):
        assert make_policy("pulse:alpha=0.2").delta == 0.2
    # a replay passes its delta as an option, which overrides the spec's (as before the rename)
    with pytest.warns(FutureWarning):
        assert make_policy("pulse:alpha=0.2", {"delta": 0.05}).delta == 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make_policy("pulse:delta=0.2").delta == 0.2
        assert Pulse().delta == 0.05


def _toml(tmp_path, policy_line: str):
    (tmp_path / "items.jsonl").write_text('{"id": "q1", "prompt": "1+1?", "answer": "2"}\n')
    text = "\n".join(
        [
            "[run]",
            'policy = "pulse"',
            "seed = 3",
            "",
            "[policy]",
            policy_line,
            "refit_every = 2",
            "",
            "[items]",
            'path = "items.jsonl"',
            "",
            "[oracle]",
            'kind = "openai"',
            "",
            "[[models]]",
            'name = "m1"',
            'base_url = "http://127.0.0.1:9/v1"',
            'model = "m1"',
            "",
            "[[models]]",
            'name = "m2"',
            'base_url = "http://127.0.0.1:9/v1"',
            'model = "m2"',
        ]
    )
    path = tmp_path / f"run-{abs(hash(policy_line))}.toml"
    path.write_text(text + "\n")
    return path


def test_toml_policy_alpha_warns_works_and_keeps_the_run_id(tmp_path):
    with pytest.warns(FutureWarning, match=r"\[policy\]: alpha is deprecated; use delta"):
        old = LiveConfig.from_toml(_toml(tmp_path, "alpha = 0.2"))
    new = LiveConfig.from_toml(_toml(tmp_path, "delta = 0.2"))
    assert old.policy_options == new.policy_options == {"delta": 0.2, "refit_every": 2}
    assert old.build_policy().delta == new.build_policy().delta == 0.2
    assert old.identity() == new.identity()
    # the default run id is the one the code before the rename computed for `alpha = 0.2`
    before = old.identity()
    before["policy_params"] = {"alpha": 0.2, "refit_every": 2}
    text = json.dumps(before, sort_keys=True, default=str)
    expected = "live-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    assert old.default_run_id() == new.default_run_id() == expected
    # a run stored with `alpha` in its identity matches today's configuration
    assert canonical_identity(before) == new.identity()
    with pytest.raises(InputError, match=r"\[policy\]: alpha=0.1 and delta=0.2"):
        LiveConfig.from_toml(_toml(tmp_path, "alpha = 0.1\ndelta = 0.2"))


def test_records_written_with_alpha_still_load(problem):
    Y, proxy = problem
    data = _run(Y, proxy, Pulse(delta=0.3, bonus="ci")).to_dict(trace=True)
    assert data["params"]["delta"] == 0.3
    data["params"]["alpha"] = data["params"].pop("delta")  # a selection.json before the rename
    record = SelectionRecord.from_dict(data, source="old selection.json")
    assert record.delta == 0.3 and record.params["delta"] == 0.3 and "alpha" not in record.params
    assert record.certified == data["certified"]


def test_a_policy_written_on_the_base_classes_keeps_working():
    """``docs``: new policies subclass the bookkeeping classes; one passing ``alpha`` warns."""
    from latentbench.select._base import ProxyBookkeeping, UCBEBookkeeping

    class Mine(UCBEBookkeeping):
        def __init__(self) -> None:
            super().__init__(alpha=0.2, ci="betting")

    with pytest.warns(FutureWarning, match="use delta"):
        assert Mine().delta == 0.2
    with pytest.warns(FutureWarning, match="use delta"):
        assert ProxyBookkeeping(alpha=0.3).delta == 0.3
    with pytest.raises(InputError, match="give delta only"):
        ProxyBookkeeping(alpha=0.3, delta=0.3)
    policy = UCBEBookkeeping()
    with pytest.warns(FutureWarning, match="use delta"):
        policy.alpha = 0.05
    assert policy.delta == 0.05
