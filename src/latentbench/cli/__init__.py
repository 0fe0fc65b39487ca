"""The ``latentbench`` command line (typer). Every command has a Python-API twin.

Start-up is kept light: the command modules import numpy, pandas, numba and the fitting code
inside the command functions, so ``latentbench --help`` and ``latentbench CMD --help`` do not pay
for them (see ``benchmarks/bench_cli.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup


def _plain_flags(params: list[Any]) -> list[Any]:
    # typer prints '<bool>' next to flags, which reads as "takes a value"; flags take none
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    return params


_GIVEN: dict[str, str] = {}
"""The arguments of the command being run, as typed, by their :class:`~pathlib.Path` spelling
(``res`` for ``./res``, ``fit`` for ``fit/``), for :func:`as_given`."""


def as_given(path: Any) -> str:
    """``path`` as the user spelled it: pathlib drops a leading ``./`` (and a trailing ``/``)
    of an argument, so a path that is an argument of the command (``--out ./res``) or lies
    under one (``res/fit.json``) is printed from the argument as typed (``./res/fit.json``).
    The one spelling of every ``wrote ...`` line."""
    import os

    text = str(path)
    for norm, raw in sorted(_GIVEN.items(), key=lambda pair: -len(pair[0])):
        if text == norm:
            return raw
        if norm not in (".", os.sep) and text.startswith(norm + os.sep):
            return raw.rstrip("/" + os.sep) + text[len(norm) :]
    return text


def _command_path(ctx: Any) -> str:
    """``latentbench select replay``: the command a context runs, by the names typed (the
    root's own ``info_name`` is the program name, which differs under a test runner)."""
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.insert(0, str(ctx.info_name))
        ctx = ctx.parent
    return " ".join(["latentbench", *names])


def _as_typed(value: Any) -> str:
    """A value as it would be typed on the command line (quoted only where it must be)."""
    import shlex

    if isinstance(value, list | tuple):
        return " ".join(_as_typed(item) for item in value)
    text = str(value)
    return repr(text) if not text.isprintable() else shlex.quote(text)


def _param_name(param: Any) -> str:
    """How the user names a parameter: an option by its flags (``--tol``), an argument by its
    placeholder in ``--help`` (``RESPONSES``)."""
    if param is None:
        return "a value"
    if getattr(param, "param_type_name", "") == "option" and param.opts:
        return " / ".join(sorted(param.opts, key=lambda opt: (not opt.startswith("--"), opt)))
    return str(param.metavar or param.name or "a value").upper()


def _either(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join([", ".join(items[:-1]), items[-1]] if len(items) > 2 else items)


def _metavar(param: Any) -> str:
    """The placeholder of an option's value (``STORE`` for ``--store``)."""
    return str(getattr(param, "metavar", None) or param.name or "VALUE").upper()


def _positionals(ctx: Any, missing: Any) -> str:
    """The command's arguments as its usage line shows them (``SOURCE PATHS...``), and what an
    earlier one took when one is missing: ``latentbench ingest FOLDER`` took the folder as its
    ``SOURCE`` (said: ``SOURCE was 'FOLDER'``), where "PATHS missing" alone misleads."""
    command = getattr(ctx, "command", None)
    params = [p for p in getattr(command, "params", []) if p.param_type_name == "argument"]
    if missing not in params:
        return _param_name(missing)
    usage = " ".join(
        _param_name(p) + ("..." if p.nargs == -1 or p.nargs > 1 else "") for p in params
    )
    given = getattr(ctx, "params", {}) or {}
    took = [
        f"{_param_name(p)} was {_as_typed(given[p.name])}"
        for p in params[: params.index(missing)]
        if given.get(p.name) is not None and not isinstance(given[p.name], list | tuple)
    ]
    return usage + (f" ({'; '.join(took)})" if took else "")


def _given_value(command: Any, ctx: Any, args: list[str], exc: Exception) -> None:
    """Note on a parameter's conversion error (``--tol abc``) the value as typed, which
    click's error (``Input should be a valid number``) does not carry: the arguments are
    parsed again (they did parse: it is their conversion that failed). An error raised
    without its context (typer's parser on ``--rank`` with no value) is given it, so that
    its ``--help`` pointer names the command."""
    if getattr(exc, "ctx", None) is None:
        exc.ctx = ctx  # type: ignore[attr-defined]
    param = getattr(exc, "param", None)
    if param is None or _is(exc, "MissingParameter"):
        return
    try:
        opts = command.make_parser(ctx).parse_args(args=list(args))[0]
    except _click_error():  # said without the value then
        return
    value = opts.get(param.name)
    if isinstance(value, str | list | tuple):
        exc.latentbench_given = value  # type: ignore[attr-defined]


def _is(exc: Exception, name: str) -> bool:
    """Whether ``exc`` is an instance of the click class ``name`` (by name: typer uses its
    own copy of click's exceptions from 0.25 on, click's before)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _click_error() -> type[Exception]:
    """The base of the exceptions the parser raises (``ClickException``), found from a public
    name whichever click typer uses."""
    return next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "ClickException")


def _parser_error_line(exc: Any) -> str:
    """The one ``error: ...`` line for an error the parser raised before any command ran:
    the option, the value as typed and what was expected, click's "did you mean" where it
    has one, and the ``--help`` that shows the command's options."""
    import re

    ctx = getattr(exc, "ctx", None)
    path = _command_path(ctx)
    message = " ".join(str(getattr(exc, "message", "") or exc).split())
    suggestions = list(getattr(exc, "possibilities", None) or [])
    hint = f"; did you mean {_either(sorted(suggestions))}?" if suggestions else ""
    if _is(exc, "NoSuchOption"):
        text = f"{exc.option_name}: no such option of {path}{hint}"
    elif _is(exc, "MissingParameter"):
        name = _param_name(exc.param)
        if getattr(exc.param, "param_type_name", "") == "option":
            text = f"{name}: missing; expected {name.split(' / ')[0]} {_metavar(exc.param)}"
        else:
            text = f"{name}: missing; expected {path} {_positionals(ctx, exc.param)}"
    elif _is(exc, "BadParameter"):
        reason = re.sub(r"^Input should be ", "expected ", message)
        given = getattr(exc, "latentbench_given", None)
        name = _param_name(exc.param) if exc.param is not None else "a value"
        if given is not None:
            typed = _as_typed(given)
            reason = re.sub(rf"^{re.escape(repr(given))} is not ", "expected ", reason)
            reason = re.sub(r"^expected (one of .*)\.$", r"expected \1", reason)
            text = f"{name} {typed}: {reason[:1].lower()}{reason[1:]}"
        else:
            text = f"{name}: {reason[:1].lower()}{reason[1:]}"
    elif match := re.match(r"No such command '(.*)'\.(?: Did you mean (.*)\?)?$", message):
        hint = f"; did you mean {match.group(2)}?" if match.group(2) else hint
        text = f"{match.group(1)}: no such command of {path}{hint}"
    elif match := re.match(r"Got unexpected extra arguments?(?:\(s\))? \((.*)\)$", message):
        plural = "s" if " " in match.group(1) else ""
        text = f"{match.group(1)}: unexpected extra argument{plural} to {path}"
    elif match := re.match(r"Option '(.*)' requires an? arguments?\.?$", message):
        text = f"{match.group(1)}: no value given; expected {match.group(1)} VALUE"
    else:
        text = (exc.format_message() if hasattr(exc, "format_message") else message).strip()
        text = " ".join(text.split())
        text = text[:1].lower() + text[1:]
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)  # one line
    return f"error: {text} ({path} --help)"


def _say_parser_error(exc: Any) -> NoReturn:
    """Print :func:`_parser_error_line` on stderr and exit with the error's status (2 for
    bad input), instead of typer's usage line and boxed ``Error``."""
    import sys

    print(_parser_error_line(exc), file=sys.stderr)
    raise typer.Exit(exc.exit_code)


class Command(TyperCommand):
    """A command whose on/off flags show no value placeholder in ``--help``, and which says
    so when Ctrl-C stops it (typer exited 130 without a word)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from pathlib import Path

        _GIVEN.clear()  # the arguments as typed, for as_given
        for arg in args:
            value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
            if value and not value.startswith("-") and str(Path(value)) != value:
                _GIVEN[str(Path(value))] = value
        with _noting_given_values(self, ctx, args):
            return list(super().parse_args(ctx, args))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            import sys

            names: list[str] = []
            parent = ctx  # 'select replay', not 'replay' (the root's name aside)
            while parent is not None and parent.parent is not None:
                names.insert(0, str(parent.info_name))
                parent = parent.parent
            print(
                f"interrupted ({_INTERRUPTED_BY[0]}): latentbench {' '.join(names)} stopped "
                "before it "
                "finished; only the files it said it wrote are complete. Re-run the same "
                "command to start again (a live run resumes from its store).",
                file=sys.stderr,
            )
            raise typer.Exit(130) from None


_INTERRUPTED_BY = ["Ctrl-C"]
"""What interrupted the command (``SIGTERM`` once :func:`_sigterm_interrupts` saw one)."""


def _sigterm_interrupts() -> None:
    """SIGTERM (``kill PID``, ``docker stop``, a cancelled CI job) interrupts the command as
    Ctrl-C does: it unwinds (temporary files removed, progress cleared), says so and exits
    130, where it ended the process at once without a word. A process forked from this one
    (a worker of a pool) keeps the default: it ends. The long calls that stop after what is
    in flight (``select live``, ``estimate``, ``experiment``) take it over for their time
    (``cli._common.stop_on_sigint``)."""
    import os
    import signal

    main_pid = os.getpid()

    def interrupt(signum: int, frame: Any) -> None:
        if os.getpid() != main_pid:  # a forked worker: end, as by default
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        _INTERRUPTED_BY[0] = "SIGTERM"
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, interrupt)
    except (ValueError, OSError):  # not the main thread (an embedding application)
        pass


CLOSED_PIPE = 141
"""The exit status when standard output is a pipe that its reader closed (``latentbench ... |
head -1``): 128 + SIGPIPE, what a shell reports for ``git log | head -1`` or ``ls | head -1``
(killed by the signal), with no traceback or message. Click and rich exited 1 there, the
status of a failure."""


def _closed_pipe(console: Any = None) -> NoReturn:
    """Exit with :data:`CLOSED_PIPE` after pointing standard output at the null device (so that
    Python's last flush of what it still holds raises nothing). Called on a ``BrokenPipeError``
    of a plain write (``typer.echo``), and as every rich console's ``on_broken_pipe`` under
    :func:`main` (rich's own exits 1)."""
    import os
    import sys

    if console is not None:
        console.quiet = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture)
        pass
    finally:
        os.close(devnull)
    raise SystemExit(CLOSED_PIPE)


def _stdout_closed() -> bool:
    """Whether standard output is a pipe or socket whose reader is gone, so that a
    ``BrokenPipeError`` is the shell's ``| head`` and not another pipe of the command's (a
    worker process that died, a socket): the poll of its descriptor says an error or a
    hang-up. True where that cannot be asked (no descriptor, no ``poll``: Windows)."""
    import select
    import sys

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):
        return True
    poller.register(fd, select.POLLOUT)
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))


def _inner_pipe(exc: BrokenPipeError) -> RuntimeError:
    """A broken pipe that is not standard output's, as an error click does not swallow (it
    exits 1 without a word on any ``EPIPE``)."""
    return RuntimeError(f"a pipe of the command broke, not its output ({exc})")


class Group(TyperGroup):
    """A command group whose on/off flags show no value placeholder in ``--help``, and which
    exits quietly with :data:`CLOSED_PIPE` when its output pipe is closed (its ``--help`` and
    ``--version`` in ``make_context``, every command below it in ``invoke``); a broken pipe
    that is not standard output's is an error like any other. An error of the parser (an
    unknown option or command, a value that does not convert, a missing argument) is one
    ``error: ...`` line on stderr and exit 2, as bad input that reaches a command is, not
    typer's usage line and boxed ``Error`` (:func:`_parser_error_line`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        with _noting_given_values(self, ctx, args):
            return list(super().parse_args(ctx, args))

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _pipe_and_parser_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _pipe_and_parser_errors():
            return super().invoke(ctx)


@contextmanager
def _noting_given_values(command: Any, ctx: Any, args: list[str]) -> Iterator[None]:
    """Around a parse of ``args``: a conversion error gets the value as typed
    (:func:`_given_value`) before it goes on."""
    typed = list(args)
    try:
        yield
    except _click_error() as exc:
        _given_value(command, ctx, typed, exc)
        raise


@contextmanager
def _pipe_and_parser_errors() -> Iterator[None]:
    """Around the group's parse and run: a closed standard output exits quietly with
    :data:`CLOSED_PIPE` (another broken pipe is an error), and a parser error is one
    ``error:`` line (:func:`_say_parser_error`); the group alone (``latentbench``,
    ``latentbench select``) still shows its --help."""
    try:
        yield
    except BrokenPipeError as exc:
        if not _stdout_closed():
            raise _inner_pipe(exc) from exc
        _closed_pipe()
    except _click_error() as exc:
        if _is(exc, "NoArgsIsHelpError"):
            raise
        _say_parser_error(exc)


EXAMPLES = """Examples:

  latentbench demo

  latentbench fit responses.parquet --out fit/

  latentbench report fit/ --out report.html

  latentbench select replay responses.parquet --out run/      # stops when the best is certified

Every command has its own --help with an example."""

app = typer.Typer(
    name="latentbench",
    help="Trustworthy, cheap LLM evaluation: IRT analysis and best-model selection.",
    epilog=EXAMPLES,
    no_args_is_help=True,
    add_completion=False,
    cls=Group,
    # a bug's traceback without each frame's variables: a live run's hold its API key
    # (typer 0.15.4, which pyproject allows, showed them by default)
    pretty_exceptions_show_locals=False,
)


def _print_version(value: bool) -> None:
    if value:
        from latentbench._version import __version__

        typer.echo(f"latentbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """latentbench: IRT analysis (cBMM) and best-model selection (PULSE) for LLM evaluation."""


def example(*lines: str) -> str:
    """The ``--help`` epilog of a command: one or more example command lines."""
    return "Example:\n\n" + "\n\n".join(f"  {line}" for line in lines)


def _register() -> None:
    """Import every private module of this package; each registers its commands on ``app``."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def _tolerant_streams() -> None:
    """Let standard output and error that cannot encode UTF-8 (``LC_ALL=C`` with Python's
    UTF-8 mode off, a Latin-1 locale) show what they cannot encode as ``\\uNNNN`` escapes
    instead of raising ``UnicodeEncodeError`` on the first dash or accented model id. JSON
    output is ASCII (``\\u`` escapes) whatever the encoding, so it still parses."""
    import codecs
    import sys

    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            utf = codecs.lookup(encoding).name.startswith("utf")
        except LookupError:
            utf = False
        if not utf and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _matplotlib_folder() -> None:
    """Give matplotlib a private folder under the temporary directory (``MPLCONFIGDIR``) where
    its own config and cache folders under ``HOME`` cannot be made (a container whose user
    has no writable ``HOME``): it otherwise logs two warnings ('mkdir -p failed ...',
    'Matplotlib created a temporary cache directory ...') on every report page and makes
    a throw-away folder, so its font cache is rebuilt on every run. An ``MPLCONFIGDIR``
    already set is kept; nothing is made unless needed. Linux and FreeBSD (matplotlib's
    XDG folders); elsewhere matplotlib's own choice stands."""
    import os
    import sys
    from pathlib import Path

    from latentbench._folders import can_make, private_temp_folder

    if os.environ.get("MPLCONFIGDIR") or not sys.platform.startswith(("linux", "freebsd")):
        return
    try:
        home: Path | None = Path.home()
    except (RuntimeError, KeyError, OSError):
        home = None
    bases = [
        os.environ.get("XDG_CONFIG_HOME") or (home and home / ".config"),
        os.environ.get("XDG_CACHE_HOME") or (home and home / ".cache"),
    ]
    if all(base and can_make(Path(base) / "matplotlib") for base in bases):
        return
    folder = private_temp_folder("latentbench-matplotlib")
    if folder is not None:
        os.environ["MPLCONFIGDIR"] = str(folder)


def _no_stray_reset() -> None:
    """Drop colorama's exit hook: numba imports colorama and calls its ``init()``, whose hook
    writes ``ESC[0m`` to a terminal's stdout after the last line, under ``NO_COLOR`` and on a
    dumb terminal too (shown there as ``^[[0m``, read out by a speech terminal). Every style
    the commands print is closed where it is printed, so there is nothing to reset."""
    import atexit
    import sys

    reset = getattr(sys.modules.get("colorama.initialise"), "reset_all", None)
    if reset is not None:
        atexit.unregister(reset)


def main() -> None:
    """Entry point of the ``latentbench`` console script."""
    from rich.console import Console

    _tolerant_streams()
    _sigterm_interrupts()
    _matplotlib_folder()
    Console.on_broken_pipe = _closed_pipe  # type: ignore[method-assign,assignment]
    _register()
    try:
        app()
    finally:
        _no_stray_reset()


__all__ = ["CLOSED_PIPE", "Command", "Group", "app", "as_given", "example", "main"]
