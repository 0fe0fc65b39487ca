"""Every public object prints as one readable line, never ``<... object at 0x...>``."""

from __future__ import annotations

import enum
import importlib
import inspect
import pickle
import pkgutil
from typing import Protocol

import numpy as np
import pytest

import latentbench
from latentbench import select
from latentbench.select.live import DurableOracle
from latentbench.synthetic import LeaderboardSimulator


def _public_classes() -> list[tuple[str, type]]:
    found: dict[type, str] = {}
    for info in pkgutil.walk_packages(latentbench.__path__, "latentbench."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if (
                inspect.isclass(obj)
                and not issubclass(obj, BaseException | enum.Enum)
                and Protocol not in obj.__mro__
                and obj not in found
            ):
                found[obj] = f"{info.name}.{name}"
    return sorted(((where, cls) for cls, where in found.items()), key=lambda pair: pair[0])


def test_every_public_class_has_its_own_repr() -> None:
    """A public class without a ``__repr__`` of its own (or a dataclass's) prints its memory
    address in a notebook; this lists every one."""
    default = [
        where
        for where, cls in _public_classes()
        if all("__repr__" not in vars(k) for k in cls.__mro__[:-1])
        and not hasattr(cls, "__dataclass_fields__")
        and not issubclass(cls, tuple)
    ]
    assert default == []


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: select.Pulse(), "Pulse()"),
        (lambda: select.Pulse(bonus="ci", delta=0.05), "Pulse(delta=0.05, bonus='ci')"),
        (lambda: select.Pulse(a=1.0, weights="precision"), "Pulse()"),  # the defaults
        (lambda: select.UCBE(a=2.0), "UCBE(a=2.0)"),
        (lambda: select.Uniform(), "Uniform()"),
        (lambda: select.FullEvaluation(), "FullEvaluation()"),
        (lambda: select.NaivePooling(refit_every=None), "NaivePooling(refit_every=None)"),
        (lambda: select.UCBELRF(n_ensemble=8), "UCBELRF(n_ensemble=8)"),
        (lambda: select.LowRankProxy(2), "LowRankProxy(rank=2)"),
        (lambda: select.OnlineProxy(3, l2=0.1), "OnlineProxy(rank=3, l2=0.1)"),
        (lambda: LeaderboardSimulator(rank=2), "LeaderboardSimulator(rank=2)"),
        (
            lambda: select.MatrixOracle(np.zeros((3, 1200))),
            "MatrixOracle(3 models x 1,200 items, 0 cells revealed)",
        ),
        (
            lambda: select.CallableOracle(_scorer, list("abcde"), ["x", "y"]),
            "CallableOracle(score=_scorer, models=[a, b, c, d, ...] (5), n_items=2, n_calls=0)",
        ),
        (
            lambda: select.SelectionState(3, 10, np.random.default_rng(0)),
            "SelectionState(3 arms x 10 items, 0 cells revealed, 0 rounds)",
        ),
    ],
)
def test_configuration_reprs(make, expected: str) -> None:
    """Configuration objects show the arguments given that differ from the defaults (as
    scikit-learn shows an estimator); oracles and the state show their size."""
    assert repr(make()) == expected


def _scorer(model: str, items: list[str]) -> list[float]:
    return [1.0] * len(items)


def test_given_arguments_survive_pickling_and_keep_the_signature() -> None:
    """Experiments send policies to worker processes, and the help reads the signatures."""
    policy = pickle.loads(pickle.dumps(select.Pulse(bonus="ci")))
    assert repr(policy) == "Pulse(bonus='ci')"
    assert "bonus" in inspect.signature(select.Pulse).parameters
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        select.Pulse(colour=1)  # type: ignore[call-arg]


def test_arrays_and_long_values_are_summarised() -> None:
    """An array given to a configuration is shown by its shape, a long list by its length."""
    proxy = select.LowRankProxy(cv_grid=tuple(range(1, 20)))
    assert repr(proxy) == "LowRankProxy(cv_grid=<tuple of 19>)"


def test_durable_oracle_repr(tmp_path) -> None:
    """A live run's oracle names the run, the inner oracle and the paid cells."""
    from latentbench.io import Store

    with Store(tmp_path / "s.duckdb") as store:
        inner = select.MatrixOracle(np.zeros((2, 3)))
        run_id = store.start_selection({}, run_id="r1")
        oracle = DurableOracle(store, run_id, inner, ["a", "b"], ["x", "y", "z"])
        assert repr(oracle) == (
            "DurableOracle(run_id='r1', inner=MatrixOracle(2 models x 3 items, 0 cells "
            "revealed), paid=0, replayed=0)"
        )


def test_notebook_tables_head_each_row_with_the_cell_that_names_it(tmp_path) -> None:
    """A notebook table's first column (the model) was a plain ``<td>``: a screen reader read
    each row's numbers without its model. As in the report's tables, the cell that names the
    row is ``<th scope="row">`` (escaped), the other cells ``<td>``; a table whose first
    column does not name the row (the experiment's pool, one of several rows) keeps ``<td>``."""
    import re

    import pandas as pd

    from latentbench._repr import html_block

    rng = np.random.default_rng(0)
    wide = pd.DataFrame((rng.random((6, 30)) < 0.6).astype(float),
                        index=["<b>m0</b>", *[f"m{k}" for k in range(1, 6)]],
                        columns=[f"i{k}" for k in range(30)])  # fmt: skip
    matrix = latentbench.io.ResponseMatrix.from_wide(wide)
    fit = latentbench.TwoPL().fit(matrix)
    run = select.replay(matrix, no_history=True, policy="uniform", budget=60, random_state=0)
    many = select.estimate_many(matrix, wide.iloc[:2], budget=10)
    (tmp_path / "selection.json").write_text(run.to_json())
    record = select.SelectionRecord.read_json(tmp_path / "selection.json")
    for name, obj in {"fit": fit, "run": run, "estimates": many, "record": record}.items():
        body = obj._repr_html_().split("<tbody>")[1].split("</tbody>")[0]
        rows = re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)
        assert rows, name
        for row in rows:
            cells = re.findall(r"<(t[hd])( scope=\"row\")?>", row)
            assert cells[0] == ("th", ' scope="row"'), (name, row)
            assert all(tag == "td" for tag, _ in cells[1:]), (name, row)
        assert '<th scope="row">&lt;b&gt;m0&lt;/b&gt;</th>' in body or name == "estimates", name
    pools = pd.DataFrame({"pool": ["a", "a"], "policy": ["ucbe", "uniform"], "n": [1, 2]})
    page = html_block("experiment", lambda: pools)
    assert 'scope="row"' not in page and "<td>a</td>" in page
