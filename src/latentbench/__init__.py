"""latentbench: trustworthy, cheap LLM evaluation on response matrices.

The public API:

- :class:`ResponseMatrix` (models x items, NaN = missing): ``from_long``, ``from_wide``, ``read``;
- :class:`TwoPL`, the cBMM fit of the 2PL / rank-r logistic model, returning an :class:`IRTResult`;
- :func:`read_results` (lm-eval, lighteval, HELM, Inspect, OpenCompass, tables) and
  :class:`Store`, the embedded DuckDB store;
- :func:`run_selection` with the policies in :mod:`latentbench.select` (PULSE, UCB-E, ...),
  returning a :class:`SelectionResult`;
- :func:`estimate`: a new model's full-benchmark score from a few items, with an anytime-valid
  interval, returning an :class:`EstimateResult` (its twins, in :mod:`latentbench.select`:
  ``estimate_many``, ``tiny`` for a fixed design to pre-register, ``compare`` for two models);
- :func:`build_report` in :mod:`latentbench.report`;
- :func:`demo`: the main job on a built-in synthetic leaderboard (``latentbench demo``),
  returning a :class:`DemoResult`;
- warnings under :class:`LatentbenchWarning`.

Subpackages: :mod:`latentbench.io`, :mod:`latentbench.irt`, :mod:`latentbench.select`,
:mod:`latentbench.report`, :mod:`latentbench.cli`.
"""

from typing import TYPE_CHECKING, Any

from latentbench._version import __version__
from latentbench.exceptions import (
    ConvergenceWarning,
    DataWarning,
    IdentifiabilityWarning,
    InputError,
    LatentbenchWarning,
    NotFittedError,
)

if TYPE_CHECKING:
    from latentbench._demo import DemoResult, demo
    from latentbench.io import ResponseMatrix, read_results
    from latentbench.io.store import Store
    from latentbench.irt import IRTResult, TwoPL
    from latentbench.select import EstimateResult, SelectionResult, estimate, run_selection

__all__ = [
    "ConvergenceWarning",
    "DataWarning",
    "DemoResult",
    "EstimateResult",
    "IRTResult",
    "IdentifiabilityWarning",
    "InputError",
    "LatentbenchWarning",
    "NotFittedError",
    "ResponseMatrix",
    "SelectionResult",
    "Store",
    "TwoPL",
    "__version__",
    "demo",
    "estimate",
    "read_results",
    "run_selection",
]

# numpy, pandas, scipy, numba and duckdb load on first use of a name below, so that
# ``import latentbench`` (and the command line's ``--help``) stays fast
_LAZY = {
    "ResponseMatrix": "latentbench.io",
    "read_results": "latentbench.io",
    "Store": "latentbench.io.store",
    "IRTResult": "latentbench.irt",
    "TwoPL": "latentbench.irt",
    "SelectionResult": "latentbench.select",
    "run_selection": "latentbench.select",
    "EstimateResult": "latentbench.select",
    "estimate": "latentbench.select",
    "demo": "latentbench._demo",
    "DemoResult": "latentbench._demo",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in ("io", "irt", "select", "report", "cli"):
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        hint = ""
        if not name.startswith("_"):  # a public name of a subpackage (tiny, report_from,
            # standard_errors): say where it lives
            for sub in ("select", "irt", "report", "io"):
                package = importlib.import_module(f"{__name__}.{sub}")
                if name in getattr(package, "__all__", ()):
                    where = f"{__name__}.{sub}"
                    hint = f"; it is {where}.{name} (from {where} import {name})"
                    break
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}{hint}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
