"""The import graph points one way: io -> irt -> select -> report -> cli.

``latentbench.io`` imports nothing from ``irt`` or the packages above it, ``latentbench.irt``
nothing from the packages above it, ``select`` neither ``report`` nor ``cli``, and ``report``
no ``cli`` (a static scan of every source file, lazy imports inside functions included);
``import latentbench.io`` loads neither the IRT fit, the selection code, the HTTP client nor numba.
The command line is a shell over the library: its modules hold no SQL and import the library
only through public names (no ``_private`` module of ``io``, ``irt``, ``select`` or
``report``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "latentbench"
UPPER = ("select", "report", "cli")
ABOVE = {"io": ("irt", *UPPER), "irt": UPPER, "select": ("report", "cli"), "report": ("cli",)}
"""The subpackages each lower one must not import."""


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Absolute names of every module ``path`` imports, with the line (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    parts = path.relative_to(SRC).with_suffix("").parts
    package = parts[:-1]  # the package holding the module (an __init__ is its own package)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def upward_edges(lower: str) -> list[str]:
    above = ABOVE[lower]
    edges = []
    for path in sorted((PACKAGE / lower).rglob("*.py")):
        for line, module in imported_modules(path):
            top = module.split(".")
            if top[0] == "latentbench" and len(top) > 1 and top[1] in above:
                edges.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    return edges


def test_the_scan_sees_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "latentbench" / "io"
    fake.mkdir(parents=True)
    (fake / "mod.py").write_text(
        "import numpy\n\ndef f():\n    from latentbench.select import run_selection\n"
    )
    (fake / "rel.py").write_text("from ..report import build_report\n")
    (fake / "fit.py").write_text("from latentbench.irt._sparse import fit_sparse\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "latentbench")
    assert upward_edges("io") == [
        "latentbench/io/fit.py:1 imports latentbench.irt._sparse",
        "latentbench/io/fit.py:1 imports latentbench.irt._sparse.fit_sparse",
        "latentbench/io/mod.py:4 imports latentbench.select",
        "latentbench/io/mod.py:4 imports latentbench.select.run_selection",
        "latentbench/io/rel.py:1 imports latentbench.report",
        "latentbench/io/rel.py:1 imports latentbench.report.build_report",
    ]


@pytest.mark.parametrize("lower", ["io", "irt", "select", "report"])
def test_no_upward_import(lower):
    assert upward_edges(lower) == []


def test_importing_io_loads_no_selection_or_http_code():
    code = "import json, sys\nimport latentbench.io\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.startswith(("latentbench.select", "latentbench.irt"))] == []
    assert [m for m in loaded if m in ("urllib.request", "http.client")] == []
    # nor numba (~0.3 s of CPU): io's one kernel (the margins of a huge matrix) is imported
    # when it runs; `ls`, `ingest` and `export` imported numba at start for nothing
    assert [m for m in loaded if m.split(".")[0] in ("numba", "llvmlite")] == []


SLOW_IMPORTS = ("scipy.optimize",)
"""Modules that take a tenth of a second to import and that few paths use: imported inside the
function that needs them, so that a command's start-up does not pay them."""
MODULE_LEVEL_OK = {"latentbench/irt/baselines.py"}  # textbook baselines: no command imports it


def module_level_imports(path: Path) -> list[tuple[int, str]]:
    """The modules ``path`` imports when it is imported (not inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module))  # and `from scipy import optimize`:
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


def test_slow_optional_imports_wait_for_the_function_that_needs_them():
    # latentbench.synthetic imported scipy.optimize (for brentq, one missing-data mechanism)
    # when it was imported, and latentbench.select imports synthetic: every estimate, select,
    # compare and experiment command paid ~0.1 s of CPU for it at start-up
    found = [
        f"{path.relative_to(SRC).as_posix()}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(SRC).as_posix() not in MODULE_LEVEL_OK
        and any(name in path.read_text(encoding="utf-8") for name in SLOW_IMPORTS)
        for line, module in module_level_imports(path)
        if module.startswith(SLOW_IMPORTS)
    ]
    assert found == []


LIBRARY = ("io", "irt", "select", "report", "synthetic", "exceptions")
KNOWN_PRIVATE: dict[str, set[str]] = {}


def private_library_imports(path: Path) -> set[str]:
    """Library modules with a ``_private`` part that a CLI module imports."""
    found = set()
    for _line, module in imported_modules(path):
        parts = module.split(".")
        if parts[0] != "latentbench" or len(parts) < 3 or parts[1] not in LIBRARY:
            continue
        private = next((k for k, p in enumerate(parts[2:], 2) if p.startswith("_")), None)
        if private is not None:
            found.add(".".join(parts[: private + 1]))
    return found


def test_cli_imports_only_public_library_names():
    seen = {}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        name = str(path.relative_to(SRC))
        seen[name] = private_library_imports(path)
    assert {k: v for k, v in seen.items() if v and v != KNOWN_PRIVATE.get(k)} == {}
    assert {k: seen.get(k) for k in KNOWN_PRIVATE} == KNOWN_PRIVATE


SQL = re.compile(
    r"\b(SELECT\b.+\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b",
    re.IGNORECASE | re.DOTALL,
)


def sql_in(path: Path) -> list[str]:
    """Lines of ``path`` with SQL text in a string or a ``.execute(...)`` call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hits = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and SQL.search(node.value)
        ):
            hits.append(f"{path.name}:{node.lineno} SQL text")
        elif isinstance(node, ast.Attribute) and node.attr in ("execute", "sql", "connection"):
            hits.append(f"{path.name}:{node.lineno} .{node.attr}")
    return hits


def test_cli_holds_no_sql(tmp_path):
    hits = [h for path in sorted((PACKAGE / "cli").glob("*.py")) for h in sql_in(path)]
    assert hits == []
    fake = tmp_path / "bad.py"
    fake.write_text('def f(db):\n    return db.connection.execute("SELECT run_id FROM t")\n')
    assert len(sql_in(fake)) == 3  # the scan sees SQL text and the connection it runs on


def test_a_subpackage_name_asked_of_the_top_level_says_where_it_lives():
    # lb.tiny said where it lives; lb.report_from, lb.standard_errors or lb.Report did not
    import latentbench

    for name, where in (
        ("tiny", "latentbench.select"),
        ("report_from", "latentbench.report"),
        ("standard_errors", "latentbench.irt"),
        ("load_items", "latentbench.io"),
    ):
        with pytest.raises(AttributeError, match=rf"; it is {where}\.{name} \(from {where} import"):
            getattr(latentbench, name)
    with pytest.raises(AttributeError, match=r"has no attribute 'nope'$"):
        latentbench.nope  # noqa: B018
