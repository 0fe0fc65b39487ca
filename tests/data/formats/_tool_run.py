"""What the fixture scripts share: the tool's executable from the command line, and its
version and package folder asked of the interpreter of its virtual environment."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path


def tool_from_args(description: str, tool: str) -> tuple[Path, str, Path]:
    """Parse ``<tool executable>``; return it, the tool's version and its package folder."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(tool, help=f"the {tool} executable of its virtual environment")
    exe = Path(getattr(parser.parse_args(), tool))
    probe = (
        "import importlib.metadata as m, importlib.util as u, pathlib, warnings;"
        "warnings.simplefilter('ignore');"
        f"print(m.version({tool!r}));"
        f"print(pathlib.Path(u.find_spec({tool!r}).origin).parent)"
    )
    out = subprocess.run(
        [exe.parent / "python", "-c", probe], capture_output=True, text=True, check=True
    )
    version, package = out.stdout.split()[-2:]
    return exe, version, Path(package)
