"""The user documentation names only options, scripts and Python names that exist.

``README.md``'s commands are run by ``tests/test_readme.py``; the pages under ``docs/`` are run
by nobody, so they drifted: a renamed option or a moved function stayed on the page. This
checks, without running anything heavy, that

* every ``latentbench CMD ...`` (or a code span opening with a command's name, such as
  ``estimate --items items.csv``) names only options that command has;
* every ``--option`` anywhere on the pages is an option of some command, of a
  ``benchmarks/`` script, or of one of the external tools the pages show (lm-eval, ...);
* every ``python benchmarks/X.py --opt ...`` names a script that exists and an option it defines;
* every dotted ``latentbench.x.y`` name resolves, and is in its module's ``__all__`` when it is
  reached through public modules;
* every ``Name.attr`` of a public class names an attribute (or dataclass field) it has, and
  every ``name(keyword=...)`` of a public callable names a parameter it takes;
* every file of the repository a page names (``tests/x.py``, ``benchmarks/y.md``, ``src/...``)
  exists, and so does every ``tests/x.py::test_name``;
* every section a page cites by name (``benchmarks/RESULTS_x.md``, "Title"; ``§N``) is a
  heading (or a bold paragraph lead) of that file.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import typer

from latentbench.cli import _register, app
from latentbench.cli._select import DEFAULT_SEEDS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

PUBLIC_MODULES = (
    "latentbench", "latentbench.io", "latentbench.io.formats", "latentbench.io.store",
    "latentbench.irt", "latentbench.irt.diagnostics", "latentbench.irt.inference",
    "latentbench.irt.baselines", "latentbench.report", "latentbench.report.plots",
    "latentbench.select", "latentbench.select.oracles", "latentbench.select.live",
    "latentbench.synthetic", "latentbench.exceptions",
)  # fmt: skip

# options of other programs that the pages show beside ours
EXTERNAL_OPTIONS = {
    "--log_samples", "--samples", "--output_path", "--tasks", "--model_args",  # lm-eval
    "--include_path", "--apply_chat_template", "--limit", "--api_key",  # lm-eval
    "--save-details",  # lighteval
    "--local-path",  # HELM
    "--dump-eval-details", "--custom-dataset-data-type",  # OpenCompass
    "--check",  # ruff format --check
    "--detach",  # git worktree add --detach (how a baseline tree was made)
}  # fmt: skip
# a benchmark script's options as they were named when a figure was measured (the page says so)
RENAMED_BENCHMARK_OPTIONS = {"--item-bootstrap-max-items", "--model-jackknife-max-items"}
# keys of Every Eval Ever records' metadata, not Python names
NOT_PYTHON = {"latentbench.trial", "latentbench.run_timestamp"}

_OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def _commands() -> dict[str, Any]:
    _register()
    root = typer.main.get_command(app)
    commands: dict[str, Any] = {}
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        if hasattr(command, "commands"):
            for sub, leaf in command.commands.items():
                commands[f"{name} {sub}"] = leaf
        else:
            commands[name] = command
    return commands


COMMANDS = _commands()


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(param.opts)
        names.update(getattr(param, "secondary_opts", ()))
    return names


ALL_OPTIONS = set().union(*(_options(c) for c in COMMANDS.values()))


def _units(text: str) -> list[str]:
    """The page's code: every line of a fenced block, and every inline span (one line)."""
    units: list[str] = []
    for index, part in enumerate(text.split("```")):
        if index % 2:
            units.extend(part.splitlines())
        else:
            units.extend(" ".join(span.split()) for span in re.findall(r"`([^`]+)`", part))
    return units


def _attributed(unit: str) -> list[tuple[str, str]]:
    """(command, the text after it) for each command the unit runs."""
    found: list[tuple[str, str]] = []
    names = "|".join(re.escape(n) for n in sorted(COMMANDS, key=len, reverse=True))
    # 'latentbench CMD ...' anywhere; a bare 'CMD ...' only when the span opens with it
    pattern = rf"(?:latentbench (?P<a>{names})|^(?P<b>{names}))(?=\s|$)(?P<rest>[^#|;]*)"
    for match in re.finditer(pattern, unit):
        command = match.group("a") or match.group("b")
        rest = match.group("rest")
        if match.group("b") and not _OPTION.search(rest):
            continue  # a word that is also a command ('fit', 'tiny'), no option after it
        # another program's command line on the same line ends ours
        rest = re.split(r"\s(?:lm-eval|lm_eval|python|pip)\s", rest)[0]
        found.append((command, rest))
    return found


def _benchmark_options() -> set[str]:
    found: set[str] = set()
    for script in (ROOT / "benchmarks").glob("*.py"):
        found.update(re.findall(r"[\"'](--[a-z][\w-]*)[\"']", script.read_text()))
    return found


def _pages() -> list[tuple[str, str]]:
    return [(page.name, page.read_text()) for page in PAGES]


def test_pages_are_found():
    names = {name for name, _ in _pages()}
    assert {"README.md", "estimate.md", "ingest.md", "live.md", "selection.md"} <= names


def test_every_option_given_to_a_command_is_one_it_has():
    wrong: list[str] = []
    for name, text in _pages():
        for unit in _units(text):
            for command, rest in _attributed(unit):
                for option in _OPTION.findall(rest):
                    if option not in _options(COMMANDS[command]):
                        wrong.append(f"{name}: `{unit[:90]}`: {command} has no {option}")
    assert not wrong, "\n".join(wrong)


def test_every_help_example_gives_options_its_command_has():
    """The ``Example:`` lines of ``--help`` (and the commands' own text) are docs too."""
    root = typer.main.get_command(app)
    texts = [root.epilog or ""]
    texts += [f"{c.epilog or ''}\n{c.help or ''}" for c in COMMANDS.values()]
    params = [p for c in COMMANDS.values() for p in c.params]
    texts += [getattr(p, "help", None) or "" for p in params]
    wrong = [
        f"{command} has no {option}: {line.strip()}"
        for text in texts
        for line in text.splitlines()
        for command, rest in _attributed(line.strip())
        for option in _OPTION.findall(rest)
        if option not in _options(COMMANDS[command])
    ]
    assert not wrong, "\n".join(wrong)


def test_every_option_named_exists_somewhere():
    known = ALL_OPTIONS | _benchmark_options() | EXTERNAL_OPTIONS | RENAMED_BENCHMARK_OPTIONS
    wrong = [
        f"{name}: {option}"
        for name, text in _pages()
        for option in sorted(set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", text)))
        if option not in known
    ]
    assert not wrong, "options no command or script has:\n" + "\n".join(wrong)


def test_every_benchmark_command_names_a_script_and_its_options():
    wrong: list[str] = []
    for name, text in _pages():
        for unit in _units(text):
            for match in re.finditer(r"python (benchmarks/[\w/]+\.py)([^#|;]*)", unit):
                script = ROOT / match.group(1)
                if not script.exists():
                    wrong.append(f"{name}: {match.group(1)} does not exist")
                    continue
                source = script.read_text()
                for option in _OPTION.findall(match.group(2)):
                    if option in RENAMED_BENCHMARK_OPTIONS:
                        continue
                    if f'"{option}"' not in source and f"'{option}'" not in source:
                        wrong.append(f"{name}: {match.group(1)} has no {option}")
    assert not wrong, "\n".join(wrong)


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for stop in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:stop]))
        except ImportError:
            continue
        break
    module = obj
    for index, part in enumerate(parts[stop:]):
        if index == 0 and not any(p.startswith("_") for p in parts):
            public = getattr(module, "__all__", None)
            if public is not None and part not in public:
                raise AttributeError(f"{part!r} is not in {module.__name__}.__all__")
        obj = getattr(obj, part)
    return obj


def test_every_dotted_latentbench_name_resolves():
    wrong: list[str] = []
    for name, text in _pages():
        if "import latentbench as lb" in text:  # the README's alias
            text = re.sub(r"(?<![\w/.])lb\.(?=[A-Za-z_])", "latentbench.", text)
        for dotted in sorted(set(re.findall(r"(?<![\w/.])latentbench(?:\.[A-Za-z_]\w*)+", text))):
            if dotted in NOT_PYTHON:
                continue
            try:
                _resolve(dotted)
            except (AttributeError, ImportError) as error:
                wrong.append(f"{name}: {dotted}: {error}")
    assert not wrong, "\n".join(wrong)


def _public() -> dict[str, Any]:
    names: dict[str, Any] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attr in getattr(module, "__all__", ()):
            names.setdefault(attr, getattr(module, attr))
    return names


def _has(obj: Any, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    if dataclasses.is_dataclass(obj) and attr in {f.name for f in dataclasses.fields(obj)}:
        return True
    return any(attr in getattr(k, "__annotations__", {}) for k in getattr(obj, "__mro__", ()))


def test_attributes_and_keywords_of_public_names_exist():
    public = _public()
    wrong: list[str] = []
    for name, text in _pages():
        spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", text.replace("```", "\0"))]
        for span in spans:
            for match in re.finditer(r"(?<![\w.])([A-Z]\w*[a-z]\w*)((?:\.[a-z_]\w*)+)", span):
                obj = public.get(match.group(1))
                if obj is None or not inspect.isclass(obj):
                    continue
                attr = match.group(2).split(".")[1]
                if not _has(obj, attr):
                    wrong.append(f"{name}: `{span[:80]}`: {match.group(1)} has no {attr}")
            for match in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\(([^()]*)\)", span):
                obj = public.get(match.group(1))
                if obj is None or not callable(obj):
                    continue
                try:
                    parameters = inspect.signature(obj).parameters
                except (TypeError, ValueError):
                    continue
                if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
                    continue
                for keyword in re.findall(r"(?:^|,)\s*([A-Za-z_]\w*)\s*=", match.group(2)):
                    if keyword not in parameters:
                        wrong.append(f"{name}: `{span[:80]}`: {match.group(1)} takes no {keyword}=")
    assert not wrong, "\n".join(wrong)


def test_every_file_and_test_named_exists():
    wrong: list[str] = []
    for name, text in _pages():
        joined = re.sub(r"::\s+", "::", " ".join(text.split()))
        for path in sorted(
            set(
                re.findall(r"(?<![\w/])((?:tests|benchmarks|src|docs)/[\w./-]+\.(?:py|md))", joined)
            )
        ):
            if not (ROOT / path).exists():
                wrong.append(f"{name}: {path} does not exist")
        for path, test in re.findall(r"((?:tests|benchmarks)/[\w/]+\.py)::(\w+)", joined):
            source = (ROOT / path).read_text() if (ROOT / path).exists() else ""
            if not re.search(rf"^\s*(?:def|class) {test}\b", source, re.M):
                wrong.append(f"{name}: {path} has no {test}")
    assert not wrong, "\n".join(wrong)


_CITED = re.compile(
    r"`?((?:benchmarks/)?RESULTS_\w+\.md|docs/\w+\.md)`?(?: (§\d+))?(?:,? \"([^\"]+)\")?"
)


def test_every_cited_section_exists():
    wrong: list[str] = []
    for name, text in _pages():
        for match in _CITED.finditer(" ".join(text.split())):
            path, number, title = match.groups()
            if number is None and title is None:
                continue
            target = ROOT / (path if "/" in path else f"benchmarks/{path}")
            if not target.exists():
                wrong.append(f"{name}: {path} does not exist")
                continue
            lines = target.read_text().splitlines()
            heads = [" ".join(h.split()).lower() for h in lines if h.startswith("#")]
            leads = [" ".join(h.split()).lower() for h in lines if h.startswith("**")]
            if number is not None and not any(re.match(rf"#+ {number[1:]}\.", h) for h in heads):
                wrong.append(f"{name}: {path} has no section {number}")
            if title is not None:
                wanted = " ".join(title.split()).lower()
                if not any(wanted in h for h in heads) and not any(
                    h.startswith(f"**{wanted}") for h in leads
                ):
                    wrong.append(f'{name}: {path} has no section "{title}"')
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("latentbench fit r.csv --out fit/ --l2 0.1", [("fit", " r.csv --out fit/ --l2 0.1")]),
        ("estimate --items items.csv", [("estimate", " --items items.csv")]),
        ("tiny", []),
        ("latentbench select replay F --epsilon 0.01", [("select replay", " F --epsilon 0.01")]),
        ("latentbench ingest | ls | export", [("ingest", " ")]),
    ],
)
def test_the_parser_attributes_options_to_their_command(unit, expected):
    assert _attributed(unit) == expected


def _block_commands(block: str) -> list[str]:
    """The commands of a fenced block, comments and surrounding blanks dropped."""
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and line not in {"bash", "sh"}]


def test_readme_first_commands_are_the_ones_ci_and_a_fresh_machine_run():
    """The README's first two commands install and run the demo, then install and test; the
    second is, character for character, the test command ``.ci/run`` runs in its fresh venv,
    and the Development block's checks are the ones it runs after it."""
    readme = (ROOT / "README.md").read_text()
    first = _block_commands(readme.split("```")[1])
    assert first == ["pip install . && latentbench demo", "pip install '.[test]' && pytest"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert first[1] in ci, f".ci/run does not run the README's test command {first[1]!r}"
    development = readme.split("## Development")[1].split("```")[1]
    checks = [c for c in _block_commands(development) if c.startswith("ruff")]
    assert len(checks) == 1, development
    for check in checks[0].split(" && "):
        assert any(line.startswith(check) for line in ci), f".ci/run does not run {check!r}"


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def test_signatures_shown_with_an_arrow_have_the_code_defaults():
    """A span written as a signature, ``name(a, b=1) -> R``, names the callable's parameters
    and, for ``b=1``, the default it has (not only a keyword it takes)."""
    public = _public()
    wrong: list[str] = []
    for name, text in _pages():
        spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", text.replace("```", "\0"))]
        for span in spans:
            match = re.search(r"(?<![\w.])([A-Za-z_][\w.]*)\(([^()]*)\)\s*->", span)
            if match is None:
                continue
            dotted, arguments = match.groups()
            obj = public.get(dotted.rsplit(".", 1)[-1])
            if dotted.startswith("latentbench."):
                obj = _resolve(dotted)
            if obj is None or not callable(obj):
                continue  # a protocol's method (an oracle's evaluate), not a public callable
            parameters = inspect.signature(obj).parameters
            for argument in (a.strip() for a in arguments.split(",") if a.strip()):
                key, _, shown = argument.partition("=")
                if key not in parameters:
                    wrong.append(f"{name}: `{span[:80]}`: {dotted} has no parameter {key}")
                elif shown and _literal(shown) != parameters[key].default:
                    actual = parameters[key].default
                    wrong.append(f"{name}: `{span[:80]}`: {key} defaults to {actual!r}")
    assert not wrong, "\n".join(wrong)


# defaults a command resolves at run time (None in its signature): the values it picks
RESOLVED_DEFAULTS: dict[str, list[Any]] = {"--seeds": list(DEFAULT_SEEDS.values())}
_PROSE_DEFAULT = re.compile(r"`(--[a-z][\w-]*)`[^`.;]{0,40}?\(?default:?\s+`?([\w.,-]*\w)")


def test_defaults_stated_for_an_option_are_a_command_default():
    """``--budget`` (default 500 ...) in prose is the default of a command with that option
    (or, for a default the command resolves at run time, such as experiment's ``--seeds``, one
    of the values it resolves to)."""
    wrong: list[str] = []
    for name, text in _pages():
        for match in _PROSE_DEFAULT.finditer(" ".join(text.split())):
            option, shown = match.groups()
            defaults = [
                p.default
                for command in COMMANDS.values()
                for p in command.params
                if option in p.opts and not p.is_flag and p.default is not None
            ]
            defaults += RESOLVED_DEFAULTS.get(option, [])
            if not defaults:
                continue
            values = {str(d) for d in defaults} | {str(_literal(str(d))) for d in defaults}
            if str(_literal(shown)) not in values and shown not in values:
                wrong.append(f"{name}: {match.group(0)!r}: the commands' defaults are {defaults}")
    assert not wrong, "\n".join(wrong)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_reaches_a_file_and_heading():
    """``[text](formats.md#table-csv-or-parquet)``: the file exists and has that heading."""
    wrong: list[str] = []
    for page in PAGES:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path) if path else page
            if not target.exists():
                wrong.append(f"{page.name}: ({link}): no file {path}")
                continue
            if anchor and target.suffix == ".md":
                heads = [_slug(h.lstrip("#")) for h in target.read_text().splitlines()
                         if h.startswith("#")]  # fmt: skip
                if anchor not in heads:
                    wrong.append(f"{page.name}: ({link}): {path or page.name} has no such heading")
    assert not wrong, "\n".join(wrong)


def test_every_package_module_path_named_exists():
    """``irt/_random_items.py``, ``select/_schedule.py``, ``latentbench/io/formats/``: paths
    inside the package, named without ``src/``, exist (a moved module leaves its name behind)."""
    package = ROOT / "src" / "latentbench"
    pattern = r"(?<![\w/.])(?:latentbench/)?((?:irt|select|io|cli|report)/[\w/]*(?:\.py|/))"
    wrong = [
        f"{name}: {path}"
        for name, text in _pages()
        for path in sorted(set(re.findall(pattern, " ".join(text.split()))))
        if not (package / path).exists()
    ]
    assert not wrong, "package paths that do not exist:\n" + "\n".join(wrong)
