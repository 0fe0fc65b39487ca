"""The ``latentbench`` command line (typer). Every command has a Python-API twin."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="latentbench",
    help="Trustworthy, cheap LLM evaluation: IRT analysis and best-model selection.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    """latentbench: IRT analysis (cBMM) and best-model selection (PULSE) for LLM evaluation."""
    if version:
        from latentbench import __version__

        typer.echo(__version__)
        raise typer.Exit()


def _register() -> None:
    """Import every private module of this package; each registers its commands on ``app``."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def main() -> None:
    """Entry point of the ``latentbench`` console script."""
    _register()
    app()


__all__ = ["app", "main"]
