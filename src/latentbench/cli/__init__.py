"""The ``latentbench`` command line (typer). Every command has a Python-API twin."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="latentbench",
    help="Trustworthy, cheap LLM evaluation: IRT analysis and best-model selection.",
    no_args_is_help=True,
    add_completion=False,
)


def _register() -> None:
    # Each command group lives in its own private module and registers itself on ``app``.
    from latentbench.cli import _fit  # noqa: F401


def main() -> None:
    """Entry point of the ``latentbench`` console script."""
    _register()
    app()


__all__ = ["app", "main"]
