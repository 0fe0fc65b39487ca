"""Every field of a public result dataclass is named in its docstring's Attributes section.

A notebook user reads ``help(IRTResult)``; fields that were left out (``IRTResult.shape``,
``n_observed``, ``raw``, ``neg_log_likelihood``, ``SelectionResult.trace_arm``,
``ExperimentResult.params``, ...) were attributes with no word on what they hold.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re

import pytest

PUBLIC = ("latentbench", "latentbench.io", "latentbench.irt", "latentbench.select")

# internal caches of a calibration (derived in __post_init__, not inputs a user reads)
INTERNAL = {("Calibration", "Vw"), ("Calibration", "bw")}


def _dataclasses() -> list[type]:
    seen: dict[str, type] = {}
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
                seen.setdefault(obj.__qualname__, obj)
    return sorted(seen.values(), key=lambda c: c.__qualname__)


def _documented(cls: type) -> set[str]:
    doc = inspect.getdoc(cls) or ""
    # results document their fields under Attributes, configurations under Parameters
    heading = next((h for h in ("Attributes", "Parameters") if f"{h}\n{'-' * len(h)}" in doc), None)
    if heading is None:
        return set()
    section = re.split(
        r"\n[A-Z][a-z]+\n-{3,}", doc.split(f"{heading}\n{'-' * len(heading)}", 1)[1]
    )[0]
    names: set[str] = set()
    for line in section.splitlines():
        match = re.match(r"^([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) :", line)
        if match:
            names.update(part.strip() for part in match.group(1).split(","))
    return names


@pytest.mark.parametrize("cls", _dataclasses(), ids=lambda c: c.__qualname__)
def test_every_field_of_a_result_is_documented(cls):
    documented = _documented(cls)
    if not documented:
        pytest.fail(f"{cls.__qualname__}: no Attributes (or Parameters) section")
    fields = {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
    missing = sorted(f for f in fields - documented if (cls.__name__, f) not in INTERNAL)
    assert not missing, f"{cls.__qualname__}: fields without a word in Attributes: {missing}"
