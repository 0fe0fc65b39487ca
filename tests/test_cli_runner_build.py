"""The suite's CliRunner builds the app's click command once (``tests/conftest.py``:
``_cli_command_built_once``), and again when the app's commands change."""

from __future__ import annotations

import typer
import typer.testing
from typer.testing import CliRunner


def _two_commands() -> typer.Typer:
    """An app with commands ``one`` and ``two``, each printing that it ran."""
    app = typer.Typer()

    @app.command("one")
    def one() -> None:
        print("one ran")

    @app.command("two")
    def two() -> None:
        print("two ran")

    return app


def test_the_click_command_is_built_once_and_again_for_a_new_command():
    sub = typer.Typer()
    app = _two_commands()

    first = typer.testing._get_command(app)
    assert typer.testing._get_command(app) is first  # built once

    @sub.command("three")
    def three() -> None:
        print("three ran")

    app.add_typer(sub, name="sub")
    again = typer.testing._get_command(app)
    assert again is not first  # a group registered: built again, with it
    runner = CliRunner()
    assert runner.invoke(app, ["sub", "three"]).output == "three ran\n"
    for _ in range(2):  # the kept command runs each invocation anew
        assert runner.invoke(app, ["one"]).output == "one ran\n"
        assert runner.invoke(app, ["two"]).output == "two ran\n"


def test_a_callback_registered_after_a_build_is_built_in():
    """The command kept for an app was keyed by its commands and groups only: a callback
    registered after a first invocation (``@app.callback()``) never ran, the old build
    being reused."""
    app = _two_commands()

    runner = CliRunner()
    assert runner.invoke(app, ["one"]).output == "one ran\n"

    @app.callback()
    def main() -> None:
        print("callback ran")

    assert runner.invoke(app, ["one"]).output == "callback ran\none ran\n"
