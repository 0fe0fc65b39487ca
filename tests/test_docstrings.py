"""The numpydoc Parameters sections of the public API name exactly the signature's parameters.

Users read ``help(...)`` / ``?`` in a notebook; a keyword added to a signature and not to its
docstring (``fit_model_factors(penalty=...)``, ``experiment_from_matrix(sim_rank=...)``, the
plots' ``ax``) or documented out of order stayed invisible there. For every public function,
every public class's constructor and every public method with a Parameters section:

* the names listed (``a, b : type`` counts both; ``**kwargs`` as ``kwargs``) are the
  signature's, in the signature's order, none missing and none stale;
* a default the docstring states (``default 0.05``) is the signature's default;
* a public function, a public method, or a public class that is not a dataclass (those
  document their fields under Attributes), with parameters has a Parameters section;
* every public method of a class in any ``__all__`` under src/latentbench has Parameters
  (in signature order), Returns (or Yields) when it returns something, and a shape for an
  array (``test_every_public_method_has_numpydoc_sections``).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, is_typeddict

import pytest

PUBLIC = (
    "latentbench",
    "latentbench.io",
    "latentbench.irt",
    "latentbench.select",
    "latentbench.report",
)
_HEADING = re.compile(r"^([A-Z][A-Za-z ]+)\n-{3,}[ \t]*$", re.M)
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:, \*{0,2}[A-Za-z_]\w*)*)[ \t]*(?::[ \t]*(.*))?$")
_DEFAULT = re.compile(r"\bdefault[ \t]+(.+?)[ \t]*$")


def _sections(doc: str) -> dict[str, str]:
    parts = _HEADING.split(doc)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _entries(section: str) -> list[tuple[str, str]]:
    """(name, type text) of each unindented ``name : type`` line of a section."""
    found = []
    for line in section.splitlines():
        if not line or line[0].isspace():
            continue
        match = _ENTRY.match(line)
        if match:
            for name in match.group(1).split(","):
                found.append((name.strip().lstrip("*"), match.group(2) or ""))
    return found


def _callables() -> Iterator[tuple[str, Callable[..., Any], str]]:
    seen: set[int] = set()
    for module_name in PUBLIC:
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            name = f"{module_name}.{attr}"
            if inspect.isclass(obj):
                if (
                    issubclass(obj, BaseException)
                    or getattr(obj, "_is_protocol", False)
                    or is_typeddict(obj)  # a record's keys, documented as Attributes
                ):
                    continue
                yield name, obj, "class"
                for method_name, value in vars(obj).items():
                    if method_name.startswith("_"):
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if inspect.isfunction(value):
                        yield f"{name}.{method_name}", value, "method"
            elif inspect.isfunction(obj):
                yield name, obj, "function"


CALLABLES = sorted(_callables(), key=lambda entry: entry[0])


def _same_default(stated: str, default: Any) -> bool:
    text = stated.strip().rstrip(".").strip("`").strip()
    try:
        return bool(ast.literal_eval(text) == default)
    except (ValueError, SyntaxError):
        shown = getattr(default, "__qualname__", None) or str(default)
        return text.strip("\"'") in (str(default), shown, f"numpy.{shown}")


def test_the_public_callables_are_found():
    names = {name for name, _, _ in CALLABLES}
    assert {"latentbench.TwoPL", "latentbench.irt.fit_cbmm", "latentbench.TwoPL.fit"} <= names


@pytest.mark.parametrize(("name", "obj", "kind"), CALLABLES, ids=[c[0] for c in CALLABLES])
def test_parameters_section_names_the_signature(name, obj, kind):
    signature = inspect.signature(obj)
    params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
    sections = _sections(inspect.getdoc(obj) or "")
    if "Parameters" not in sections:
        # a result dataclass documents its fields under Attributes
        # (tests/test_documented_attributes.py); every method has one (see below)
        exempt = kind != "method" and dataclasses.is_dataclass(obj)
        assert exempt or not params, f"{name}: no Parameters section for {[p.name for p in params]}"
        return
    documented = _entries(sections["Parameters"]) + _entries(sections.get("Other Parameters", ""))
    names = [n for n, _ in documented]
    wanted = [p.name for p in params]
    missing = [n for n in wanted if n not in names]
    stale = [n for n in names if n not in wanted]
    assert not missing and not stale, f"{name}: undocumented {missing}, not parameters {stale}"
    assert names == wanted, f"{name}: documented in the order {names}, signature {wanted}"
    wrong = []
    for entry, type_text in documented:
        match = _DEFAULT.search(type_text)
        if match is None:
            continue
        default = signature.parameters[entry].default
        if default is inspect.Parameter.empty:
            wrong.append(f"{entry}: documented default {match.group(1)}, but it is required")
        elif not _same_default(match.group(1), default):
            wrong.append(f"{entry}: documented default {match.group(1)}, signature {default!r}")
    assert not wrong, f"{name}: " + "; ".join(wrong)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("x : int\n    text\ny, **kw : float, default 1\n",
         [("x", "int"), ("y", "float, default 1"), ("kw", "float, default 1")]),
        ("budget, batch_size\n    See above.\n", [("budget", ""), ("batch_size", "")]),
        ("    indented : int\n", []),
    ],
)  # fmt: skip
def test_the_entry_parser(doc, expected):
    assert _entries(doc) == expected


SRC = Path(__file__).resolve().parents[1] / "src" / "latentbench"
_ROLE = re.compile(
    r":(?:func|class|meth|attr|mod|data|exc|obj):`(?:[^`<]*<)?~?(latentbench[\w.\s]*?)>?`"
)


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for stop in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:stop]))
        except ImportError:
            continue
        for index, part in enumerate(parts[stop:]):
            if not hasattr(obj, part):
                # a dataclass field or an instance attribute set in __init__ of the last class
                last = index == len(parts[stop:]) - 1
                fields = getattr(obj, "__dataclass_fields__", {})
                init = getattr(obj, "__init__", None)
                source = inspect.getsource(init) if inspect.isfunction(init) else ""
                return last and (part in fields or f"self.{part} " in source)
            obj = getattr(obj, part)
        return True
    return False


def test_every_qualified_cross_reference_in_a_docstring_resolves():
    """``:func:`latentbench.x.y``` (or ``~latentbench...``) anywhere under ``src`` names a
    module, function, class or attribute that exists (a renamed or removed function stayed in
    the docstrings that pointed at it)."""
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        for match in _ROLE.finditer(path.read_text(encoding="utf-8")):
            dotted = "".join(match.group(1).split()).rstrip(".")
            if not _resolves(dotted):
                wrong.append(f"{path.relative_to(SRC.parent)}: {match.group(0)}")
    assert not wrong, "\n".join(wrong)


# ``docs/X.md``, "Title" / § N / Title) -- a title in quotes, or bare up to the closing bracket
_CITED = re.compile(r"``(docs/\w+\.md)``,?\s+(§\s*\d+|\"[^\"]+\"|[A-Z][\w' -]+?(?=\)))")


def test_every_docs_section_a_docstring_cites_exists():
    """``docs/X.md``, "Title" (or § N) in a docstring is a heading of that page, or the bold
    lead of one of its paragraphs (as tests/test_docs.py reads the pages' own citations)."""
    root = SRC.parents[1]
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        for match in _CITED.finditer(path.read_text(encoding="utf-8")):
            page, section = root / match.group(1), " ".join(match.group(2).strip('"').split())
            if not page.exists():
                wrong.append(f"{path.name}: {match.group(1)} does not exist")
                continue
            lines = page.read_text(encoding="utf-8").splitlines()
            heads = [" ".join(ln.lstrip("#").split()).lower() for ln in lines if ln[:1] == "#"]
            leads = [" ".join(ln.split()).lower() for ln in lines if ln[:2] == "**"]
            if section.startswith("§"):
                found = any(re.match(rf"{section[1:].strip()}\.", h) for h in heads)
            else:
                wanted = section.lower()
                found = any(wanted in h for h in heads) or any(
                    h.startswith(f"**{wanted}") for h in leads
                )
            if not found:
                wrong.append(f"{path.name}: {match.group(1)} has no section {section!r}")
    assert not wrong, "\n".join(wrong)


# ----------------------------------------------------------------------------- methods
# The methods of every class in an ``__all__`` under src/latentbench (result objects, the
# matrix and the store, policies, oracles, estimators, and the internal classes the package
# exports between its modules) carry numpydoc sections of their own: ``help(x.method)`` and a
# notebook's ``?`` showed one line, or nothing (an override without a docstring), with no word
# on a parameter, the returned value or its shape.

_ARRAY_TYPE = re.compile(r"^(?:\w+ : )?(?:ndarray|array)\b")


def _modules() -> list[Any]:
    package = importlib.import_module("latentbench")
    names = ["latentbench"] + [
        info.name for info in pkgutil.walk_packages(package.__path__, "latentbench.")
    ]
    return [importlib.import_module(name) for name in names if not name.endswith("__main__")]


def _ours(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).startswith("latentbench")


def _methods() -> Iterator[tuple[str, Callable[..., Any], str]]:
    """(qualified name, function, docstring) of each public method, once per function.

    Dunder methods other than ``__init__`` are left out, and so are properties, methods of
    stdlib/third-party bases, overrides of such a base's method (click's ``Command.invoke``:
    that library documents them), a dataclass's generated ``__init__`` (its fields are
    documented under Attributes) and the ``__init__`` ``typing.Protocol`` adds. An
    ``__init__`` without a docstring is documented by its class's.
    """
    seen: set[int] = set()
    for module in _modules():
        for attr in getattr(module, "__all__", ()):
            cls = getattr(module, attr, None)
            if (
                not inspect.isclass(cls)
                or attr.startswith("_")
                or not _ours(cls)
                or issubclass(cls, BaseException)
                or is_typeddict(cls)
            ):
                continue
            foreign = [b for b in cls.__mro__ if not _ours(b) and b is not object]
            for base in cls.__mro__:
                if not _ours(base):
                    continue
                for name, value in vars(base).items():
                    if name.startswith("_") and name != "__init__":
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if not inspect.isfunction(value) or not _ours(value) or id(value) in seen:
                        continue
                    if any(name in vars(b) for b in foreign):
                        continue
                    if name == "__init__" and dataclasses.is_dataclass(base):
                        continue
                    seen.add(id(value))
                    doc = value.__doc__
                    if name == "__init__" and not doc:
                        doc = base.__doc__
                    yield (
                        f"{value.__module__}.{value.__qualname__}",
                        value,
                        inspect.cleandoc(doc or ""),
                    )


METHODS = sorted(_methods(), key=lambda entry: entry[0])


def test_the_public_methods_are_found():
    names = {name for name, _, _ in METHODS}
    assert {
        "latentbench.io._matrix.ResponseMatrix.subset",
        "latentbench.io._store_runs.SelectionRuns.start_selection",  # Store's, from its base
        "latentbench.irt._objective.GaussianPenalty.value",
        "latentbench.select._base.UCBEBookkeeping.choose",  # every policy's, inherited
        "latentbench.select._pulse.Pulse.update",
        "latentbench.select.oracles._matrix.MatrixOracle.evaluate",
        "latentbench.synthetic.LeaderboardSimulator.fidelity",
    } <= names
    assert not any(name.startswith("latentbench.cli.") for name in names)  # click overrides


@pytest.mark.parametrize(("name", "obj", "doc"), METHODS, ids=[m[0] for m in METHODS])
def test_every_public_method_has_numpydoc_sections(name, obj, doc):
    """Parameters naming the signature's parameters in order (besides ``self``/``cls``), a
    Returns (or Yields) section when something is returned, a shape for an array, and a
    Raises section when the method itself raises :class:`InputError` for bad input."""
    signature = inspect.signature(obj)
    params = [p.name for p in signature.parameters.values() if p.name not in ("self", "cls")]
    sections = _sections(doc)
    wrong = []
    if params:
        if "Parameters" not in sections:
            wrong.append(f"no Parameters section for {params}")
        documented = _entries(sections.get("Parameters", "")) + _entries(
            sections.get("Other Parameters", "")
        )
        names = [n for n, _ in documented]
        if "Parameters" in sections and names != params:
            wrong.append(f"Parameters document {names}; the signature has {params}")
        for entry, type_text in documented:
            match = _DEFAULT.search(type_text)
            if match is None or entry not in signature.parameters:
                continue
            default = signature.parameters[entry].default
            # ``default :data:`HARNESS_TIMEOUT``` names a constant of the method's module
            named = re.fullmatch(r":data:`~?(?:[\w.]+\.)?(\w+)`", match.group(1).rstrip("."))
            if named and named.group(1) in obj.__globals__:
                if obj.__globals__[named.group(1)] == default:
                    continue
            if default is inspect.Parameter.empty or not _same_default(match.group(1), default):
                wrong.append(f"{entry}: documented default {match.group(1)}, signature {default!r}")
        for entry, type_text in documented:
            if _ARRAY_TYPE.match(f"{entry} : {type_text}") and "shape" not in type_text:
                wrong.append(f"{entry}: an array without its shape ({type_text!r})")
    returned = signature.return_annotation
    if obj.__name__ != "__init__" and returned not in ("None", None, inspect.Signature.empty):
        if "Returns" not in sections and "Yields" not in sections:
            wrong.append(f"returns {returned} but has no Returns (or Yields) section")
    body = inspect.getsource(obj).split('"""', 2)[-1] if obj.__doc__ else inspect.getsource(obj)
    if "raise InputError" in body and "Raises" not in sections:
        wrong.append("raises InputError but has no Raises section")
    for heading in ("Returns", "Yields"):
        for line in sections.get(heading, "").splitlines():
            if line[:1].strip() and _ARRAY_TYPE.match(line) and "shape" not in line:
                wrong.append(f"{heading}: an array without its shape ({line!r})")
    assert not wrong, f"{name}: " + "; ".join(wrong)
