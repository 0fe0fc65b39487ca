"""One spelling per option across commands: the same name means the same thing everywhere."""

from __future__ import annotations

import typer

from latentbench.cli import _register, app

_register()


def _options() -> dict[str, list[tuple[str, object]]]:
    """Option name -> (command path, click option) for every command."""
    found: dict[str, list[tuple[str, object]]] = {}

    def walk(command: object, path: str) -> None:
        children = getattr(command, "commands", None)
        if children:
            for name, sub in children.items():
                walk(sub, f"{path} {name}".strip())
            return
        for param in command.params:  # type: ignore[attr-defined]
            if param.param_type_name == "option":
                found.setdefault(param.name, []).append((path, param))

    walk(typer.main.get_command(app), "")
    return found


def test_shared_options_have_one_spelling_everywhere():
    options = _options()
    for name in ("out", "quiet"):
        short = {"out": "-o", "quiet": "-q"}[name]
        for path, opt in options[name]:
            assert short in opt.opts + opt.secondary_opts, (path, name)
    for path, opt in options["delta"]:  # the error probability, never a coverage level
        assert opt.opts == ["--delta"] and opt.help.startswith("Error probability"), path
    for name in ("seed", "jobs", "seeds"):
        for path, opt in options[name]:
            assert opt.opts == ["--" + name], (path, opt.opts)
    visible = {
        flag for rows in options.values() for _, o in rows if not o.hidden for flag in o.opts
    }
    for old in ("--alpha", "--n-jobs", "--random-state"):
        assert old not in visible  # deprecated spellings stay hidden
    hidden = {o.opts[0] for rows in options.values() for _, o in rows if o.hidden}
    # report --l2 stays only to refuse it with a clear error (it was ignored by the prior fit)
    assert hidden == {"--alpha", "--n-jobs", "--random-state", "--l2"}
