"""Warnings and errors raised by latentbench.

All warnings derive from :class:`LatentbenchWarning`, so users can filter everything the
library emits in one line (``warnings.filterwarnings("ignore", category=LatentbenchWarning)``).
The library never touches global warning filters.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CellsFailed",
    "ConvergenceWarning",
    "DataWarning",
    "EndpointUnreachable",
    "HarnessFailed",
    "IdentifiabilityWarning",
    "InputError",
    "LatentbenchWarning",
    "LiveStop",
    "NotFittedError",
    "PlanPending",
    "QueryInterrupted",
    "RunInterrupted",
    "SpendCapReached",
    "StoreInUse",
]


class LatentbenchWarning(UserWarning):
    """Base class of every warning latentbench emits."""


class ConvergenceWarning(LatentbenchWarning):
    """An iterative fit stopped at ``max_iter`` before meeting its tolerance."""


class IdentifiabilityWarning(LatentbenchWarning):
    """A parameter has no finite or unique estimate (e.g. an all-correct row or column)."""


class DataWarning(LatentbenchWarning):
    """The input is valid but unusual (non-binary scores, duplicate columns, degenerate rows)."""


class InputError(ValueError):
    """Invalid user input; the message names the source, field, value and what was expected."""


class StoreInUse(InputError):
    """A store another process holds (DuckDB lets one process write a file, or several read
    it): ``path``, the holder's ``pid`` (None where DuckDB does not tell) and ``live`` (it
    runs a live run, which holds its store until it stops)."""

    def __init__(self, message: str, path: str, pid: int | None, live: bool) -> None:
        super().__init__(message)
        self.path, self.pid, self.live = path, pid, live


class QueryInterrupted(KeyboardInterrupt, RuntimeError):
    """A store query cut short by a signal whose handler raised while DuckDB ran it: DuckDB
    says only ``RuntimeError('Query interrupted')``, whichever signal it was. Ctrl-C's (the
    command line says it as an interruption, exit 130) is caught by ``except
    KeyboardInterrupt``; another handler's (a ``signal.alarm`` timeout) by ``except
    RuntimeError``, as DuckDB's error was."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit``."""


class LiveStop(Exception):
    """Base of the exceptions that end a live run early (the store stays consistent)."""

    status = "stopped"


class RunInterrupted(LiveStop):
    """A stop was requested (Ctrl-C); raised before the next batch, after a commit."""

    status = "interrupted"


class SpendCapReached(LiveStop):
    """The next batch would exceed ``spend_cap`` evaluations."""

    status = "capped"


class CellsFailed(LiveStop):
    """Some cells failed after their retries (``on_error = "stop"``); they are stored.

    Attributes
    ----------
    failures : list of (model, item, error)
    """

    status = "failed"

    def __init__(self, failures: list[tuple[str, str, str]]) -> None:
        self.failures = failures
        first = "; ".join(f"model {m!r}, item {i!r}: {e}" for m, i, e in failures[:3])
        more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
        super().__init__(
            f"{len(failures)} cell(s) failed after retries: {first}{more}; stored with their "
            "errors, as every answer before them"
        )


class EndpointUnreachable(LiveStop):
    """Some cells got no request through (connection refused, unknown host), after retries.

    Nothing reached a server, so nothing was paid and ``spend_cap`` does not count them; the
    cells are not stored (they are no answers, never scored 0 even with ``on_error =
    "zero"``) and a resumed run asks for them again. The run ends after the batch in flight.

    Attributes
    ----------
    unreached : list of (model, item, error)
    """

    status = "failed"

    def __init__(self, unreached: list[tuple[str, str, str]]) -> None:
        self.unreached = unreached
        models = sorted({m for m, _, _ in unreached})
        super().__init__(
            f"{len(unreached)} cell(s) of {', '.join(repr(m) for m in models)} got no request "
            f"through: nothing reached a server, nothing paid, not stored "
            f"(first: {unreached[0][2]}); check that the endpoint at base_url is up, then resume"
        )


class HarnessFailed(LiveStop):
    """A harness the lm-eval bridge ran failed: a non-zero exit, or logs without the docs asked.

    The message names the plan file, the command and the end of the harness's output; the
    cells stored before stay, and a re-run retries the plan.
    """

    status = "failed"


class PlanPending(LiveStop):
    """The lm-eval bridge wrote a plan; run it, then re-run the selection.

    Attributes
    ----------
    plan_path : Path
    command : str
    """

    status = "waiting"

    def __init__(self, plan_path: Path, command: str) -> None:
        self.plan_path, self.command = plan_path, command
        super().__init__(f"wrote {plan_path}; run: {command}")
