"""A live policy that learns no proxy (``ucbe``, ``uniform``) does not fit ``[proxy] history``'s
proxy (it fitted it and left it unused), yet refuses the same bad histories as before."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.select._proxy import LowRankProxy
from latentbench.select.live import LiveConfig, run_live
from latentbench.select.oracles import MatrixOracle


def _config(s, policy: str, name: str, **replace: str):
    path = s.write_config(s.tmp / f"{name}-{policy}.toml", run={"policy": policy})
    text = path.read_text()
    if policy != "pulse":
        text = text.replace("refit_every = 3\n", "")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    return LiveConfig.from_toml(path)


def test_a_proxy_free_policy_fits_no_history(live_setup, monkeypatch):
    s = live_setup

    def refused(self, *args, **kwargs):
        raise AssertionError("the history's proxy was fitted")

    monkeypatch.setattr(LowRankProxy, "fit", refused)
    for policy in ("ucbe", "uniform"):
        cfg = _config(s, policy, "fit")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            live = run_live(cfg, s.tmp / f"{policy}.duckdb", oracle=MatrixOracle(s.Y))
        assert live.status == "done" and live.selection is not None


def _bad_histories(s) -> dict[str, dict[str, str]]:
    hist = pd.read_csv(s.tmp / "history.csv")
    hist.drop(columns=hist.columns[5]).to_csv(s.tmp / "lacking.csv", index=False)
    hist.iloc[:1].to_csv(s.tmp / "one.csv", index=False)
    (s.tmp / "folder.csv").mkdir()
    (s.tmp / "broken.csv").write_text("model,a\nx,0.5,0.1\n\x00\x00")
    named = {n: {'"history.csv"': f'"{n}.csv"'} for n in ("missing", "folder", "lacking", "one")}
    named["broken"] = {'"history.csv"': '"broken.csv"'}
    named["rank"] = {"rank = 2": "rank = 99"}
    named["option"] = {"rank = 2": "rank = 2\nsigma = -1.0"}
    return named


def test_a_proxy_free_policy_refuses_the_histories_a_proxy_policy_refuses(live_setup):
    s = live_setup
    for name, replace in _bad_histories(s).items():
        said = []
        for policy in ("pulse", "ucbe"):  # uniform is built as ucbe is (no proxy)
            cfg = _config(s, policy, name, **replace)
            with warnings.catch_warnings(), pytest.raises(InputError) as err:
                warnings.simplefilter("ignore")
                run_live(cfg, s.tmp / f"{name}.duckdb", oracle=MatrixOracle(s.Y))
            said.append(str(err.value).replace(f"{name}-{policy}.toml", "run.toml"))
        assert said[0] == said[1], name
    assert not s.state.requests
