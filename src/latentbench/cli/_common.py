"""Shared pieces of the commands: consoles, error exit, human number format, clean warnings.

Kept free of numpy / pandas imports at module level so ``--help`` stays fast.
"""

from __future__ import annotations

import ast
import bisect
import copy
import math
import re
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape as rich_escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = [
    "benchmark_flag",
    "claim_out",
    "clean_warnings",
    "cli_spelling",
    "console",
    "deprecated_option",
    "err_console",
    "escape",
    "fail",
    "fmt",
    "fresh_out",
    "live_detail",
    "on_a_terminal",
    "plain_progress",
    "print_table",
    "progress_bar",
    "progress_lines",
    "say_stopping",
    "shown",
    "stop_on_sigint",
    "store_needs_benchmark",
    "store_option_without_store",
]


def _styles() -> Literal["auto"] | None:
    """rich's colour system for the consoles: ``None`` (no escape code of style at all)
    under ``NO_COLOR`` (https://no-color.org, any value but empty), else rich's own choice.
    rich's ``no_color`` drops colours only and kept bold and dim (``ESC[1m`` on every
    progress line and heading); someone who turns colours off, to read the text as it is
    or through a speech or braille terminal, gets plain text. Cursor movement of a live
    progress line on a terminal that can redraw is kept (the line is erased at its end)."""
    import os

    return None if os.environ.get("NO_COLOR", "") != "" else "auto"


console = Console(highlight=False, color_system=_styles())
err_console = Console(stderr=True, highlight=False, color_system=_styles())

_UNPRINTABLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]"
)


def escape(text: object) -> str:
    """``text`` safe for a terminal: rich markup escaped, and control, bidi and line
    separator characters (ids, configuration, server errors) shown as ``\\xNN`` /
    ``\\uNNNN`` instead of acting on the terminal. Tab and newline are kept."""
    shown = _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], str(text))
    return rich_escape(shown)


def on_a_terminal(stream: Console) -> bool:
    """Whether ``stream`` writes to a real terminal (a TTY), not merely one that rich was told
    to treat as such: ``FORCE_COLOR`` or ``TTY_COMPATIBLE``, which CI jobs set to keep colours
    in their logs, make rich's ``is_terminal`` true on a pipe, where a live progress display
    rewrote its line into the log at every refresh and tables were cut at 80 columns
    (``0.02…`` for a number)."""
    if not stream.is_terminal:
        return False
    if getattr(stream, "_force_terminal", None) is not None:  # set by the code (a test's console)
        return True
    isatty = getattr(stream.file, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (OSError, ValueError):  # a closed or detached file
        return False


def can_redraw(stream: Console) -> bool:
    """Whether a progress display (a bar, a spinner) may be drawn on ``stream``: a real
    terminal (:func:`on_a_terminal`) that can move its cursor. A dumb one (``TERM=dumb``: an
    editor's shell, a speech or braille terminal) got a blank line from a display it could
    not redraw, at the top of the results."""
    return on_a_terminal(stream) and not stream.is_dumb_terminal


_ID_WIDTH = 20
"""Width the first (id) column keeps on a narrow terminal before columns are left out; a
longer id folds onto more lines, never cut."""


_ID_FLOOR = 8
"""Columns the id column keeps at the least when the other columns' values are wider than
the terminal (they fold then, as the ids do)."""


def _measure(renderable: Any) -> Measurement:
    """A cell's or header's width as rich lays it out (markup read, wide characters counted
    twice): ``minimum`` its longest word, ``maximum`` its widest line."""
    return Measurement.get(console, console.options.update(max_width=10_000), renderable)


def _widest(cells: Iterable[Any]) -> tuple[int, Any]:
    """The widest of a column's ``cells`` as rich lays them out: ``(width, cell)``
    (``(0, None)`` for none). A printable ASCII string with no markup (``[``) and no emoji
    code (``:``) is as wide as it is long; only other cells (wide characters, markup, a
    second line, a renderable) go through rich's measurement, each distinct value once:
    measuring all of a 20,000-row table's cells took seconds before its first line."""
    best, at, widest = 0, -1, None
    measured: dict[str, int] = {}
    for k, cell in enumerate(cells):
        if isinstance(cell, str):
            if cell.isascii() and cell.isprintable() and "[" not in cell and ":" not in cell:
                size = len(cell)
            elif cell in measured:
                size = measured[cell]
            else:
                size = measured[cell] = _measure(cell).maximum
        else:
            size = _measure(cell).maximum
        if size > best or at < 0:
            best, at, widest = size, k, cell
    return best, widest


def _widest_only(table: Table, widest: list[tuple[int, Any]]) -> Table:
    """A copy of ``table`` whose columns hold one cell each, their widest (``widest[k]``:
    :func:`_widest` of column ``k``), for rich to measure the table's natural width without
    measuring every cell."""
    probe = copy.copy(table)
    probe.columns = []
    for column, (_, cell) in zip(table.columns, widest, strict=True):
        one = copy.copy(column)
        one._cells = [] if cell is None else [cell]
        probe.columns.append(one)
    probe.rows = table.rows[:1]
    return probe


def _fit_to_terminal(table: Table, width: int) -> list[str]:
    """Fit ``table`` to a terminal ``width`` columns wide without cutting a value: every cell
    folds instead of ending in ``…`` (an id folds onto more lines, whole), and while the other
    columns (their values whole, their headers wrapped at spaces) leave the id column (the
    first left-aligned one) fewer than :data:`_ID_WIDTH` columns, the last columns are left
    out. Returns the headers left out (in order)."""
    for column in table.columns:
        column.overflow = "fold"
    if len(table.columns) < 3:
        return []
    ids = next((k for k, c in enumerate(table.columns) if c.justify == "left"), 0)
    widths = [_widest(column.cells) for column in table.columns]
    whole = [
        max(_measure(column.header).minimum, size)
        for column, (size, _) in zip(table.columns, widths, strict=True)
    ]
    whole[ids] = min(whole[ids], _ID_WIDTH)
    edge = 1 if table.show_edge else 0
    kept = len(table.columns)

    def need(n: int) -> int:  # a column: its text, a space each side, a rule
        return edge + sum(w + 3 for w in whole[:n])

    while kept > max(ids + 2, 2) and need(kept) > width:
        kept -= 1
    headers = [_plain(column.header) for column in table.columns]
    while kept > max(ids + 2, 2) and _partner(headers[kept - 1]) in headers[kept:]:
        kept -= 1  # an interval's lower end is not shown without its upper one
    if kept < len(headers) and headers[kept] == _partner(headers[kept - 1]) != headers[kept - 1]:
        kept += 1  # the fewest columns end in an interval's lower end: its upper one too
    left_out = headers[kept:]
    del table.columns[kept:]
    # rich gives what the others leave to the ids
    if _measure(_widest_only(table, widths[:kept])).maximum > width:
        others = [k for k in range(kept) if k != ids]
        # the others' values whole while they leave the ids a few columns; past that the
        # widest of them folds too (a value wider than the terminal had left the ids none:
        # the model's name vanished)
        room = width - edge - 3 * kept - min(whole[ids], _ID_FLOOR)
        fixed = {k: whole[k] for k in others}
        while sum(fixed.values()) > room and max(fixed.values()) > 1:
            widest = max(fixed, key=lambda k: fixed[k])
            fixed[widest] -= 1
        for k in others:
            table.columns[k].width = fixed[k]
    return left_out


def _plain(header: Any) -> str:
    """A header as the table shows it: its markup read (``escape("a[b]")`` is ``a\\[b]``
    as written, ``a[b]`` as shown), so that the line naming a left-out column names it as
    its header reads."""
    if isinstance(header, Text):
        return header.plain
    try:
        return Text.from_markup(str(header)).plain
    except MarkupError:
        return str(header)


def _partner(header: str) -> str:
    """The other end of an interval's column (``lower`` -> ``upper``,
    ``certificate_lower`` -> ``certificate_upper``); the header itself for any other."""
    for end, other in (("lower", "upper"), ("upper", "lower")):
        if header == end or header.endswith("_" + end):
            return header[: -len(end)] + other
    return header


def print_table(table: Table, caption: Callable[[list[str]], str | None] | None = None) -> None:
    """Print a table on stdout; when stdout is not a terminal (a log, a pipe; colours forced
    or not), as wide as the table needs, so that no header or id is folded at rich's default
    80 columns and no number cut. On a terminal narrower than the table, no value is cut
    either (``gpt-4-1…`` named two models): ids fold, and the last columns are left out
    with a line that names them (a pipe prints them all). ``caption``, given the headers
    shown, says what they are (a caption of left-out columns described columns not there)."""
    if on_a_terminal(console):
        left_out = _fit_to_terminal(table, console.width)
        if caption is not None:
            table.caption = caption([str(column.header) for column in table.columns])
        console.print(table)
        if left_out:
            more = "1 more column" if len(left_out) == 1 else f"{len(left_out)} more columns"
            console.print(
                f"({more} at a wider terminal or through a pipe: "
                f"{rich_escape(', '.join(left_out))})",
                style="dim",
                soft_wrap=False,
            )
        return
    if caption is not None:
        table.caption = caption([str(column.header) for column in table.columns])
    need = _measure(table).maximum
    width = console.width
    console.width = max(width, need)
    try:
        console.print(table)
    finally:
        console.width = width


# Python keyword spellings in library messages -> the flags a CLI user types
_NO_ROWS_CHOICE = r"(history_)?(metric|filter|split)=('[^']*'|None)"


def _no_rows_flags(match: re.Match[str]) -> str:
    """``has no rows with metric='nope'`` (the store names the choices asked for; ``None``
    ones too in older wording) as ``has no rows with --metric nope`` (``--history-metric``
    for a history's store)."""
    given = [
        f"{'--history-' if history else '--'}{name} {value[1:-1]}"
        for history, name, value in re.findall(_NO_ROWS_CHOICE, match.group(1))
        if value != "None"
    ]
    return "has no rows with " + (", ".join(given) or "the default choice")


def _choose_one(match: re.Match[str]) -> str:
    """``choose one with metric=NAME or metric={'mmlu': NAME}`` (a tool's results with several
    metrics, filters or Inspect scorers) as ``--metric NAME or --metric 'mmlu=NAME'``."""
    flag = f"--{match.group(1)}"
    name = ast.literal_eval(_unmask(match.group(2)))
    return f"choose one with {flag} NAME or {flag} '{name}=NAME'"


_QUOTED_NAME = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
"""A name as Python's ``repr`` writes it, single- or double-quoted."""


_EQUALS = "\ue000"
"""Stands for an ``=`` of a user's name or path while the rewrites run (a private-use
character: no rewrite's pattern matches it, so ``'sweep-tol=1e-4'`` is not read as ``tol=``)."""

_UNDERSCORE = "\U00016fe0"
"""Stands for an ``_`` of a user's name or path while the rewrites run: a letter (``\\w``
matches it, as it does ``_``, so a pattern reads the name as a word still) that no rewrite's
keyword holds, so a model ``'lab/history_store'`` or a folder ``runs/no_history/`` is not
read as the keyword ``history_store`` or ``no_history``."""


def _mask(text: str) -> str:
    """``text`` (a user's name or path) with its ``=`` and ``_`` masked."""
    return text.replace("=", _EQUALS).replace("_", _UNDERSCORE)


# a quoted name (``repr``'s spelling), opened where a word does not go on
_QUOTED_SPAN = re.compile(rf"(?<![\w])(?:{_QUOTED_NAME})")
# a path: a word with a slash (or a Windows path's backslash) outside any quoted name; a
# leading keyword of a path option (``out=runs/a``) is the library's, the rest the user's
_PATH_TOKEN = re.compile(r"\S*[/\\]\S*")
_PATH_KEY = re.compile(
    r"\(?(?:out|directory|path|items|responses|selection|history|store|weights)="
)
# a path with spaces (``/data/my tol=1e-3 run/x.csv``): plain words between a path's word and
# a later one, on one line (no punctuation or quote between: not two paths in a sentence)
# (the first word starts as a path does, ``/``, ``./``, ``../``, ``~/`` or ``C:\``, after a
# path option's keyword or none: prose's ``0/1`` or ``and/or`` is no path)
_SPACED_PATH = re.compile(
    r"(?<!\S)((?:\(?[a-z_]+=)?(?:/|\.{1,2}[/\\]|~[/\\]|[A-Za-z]:\\)\S*[^\s:;,)])"
    r"((?: [^\s/\\:;,()'\"]+)+)(?= \S*[/\\])"
)


def _mask_users_equals(message: str) -> str:
    """``message`` with the ``=`` of quoted names and of paths as :data:`_EQUALS` (and their
    ``_`` as :data:`_UNDERSCORE`).

    A word is a path by a separator outside its quoted names only: ``(label='org/m')`` (a
    Hugging Face model's name) or ``metric={'inspect_evals/gpqa': NAME}`` is a keyword and a
    name, rewritten as such; ``runs/max_iter=50`` or ``C:\\runs\\tol=1e-4`` is a path."""
    quoted = [m.span() for m in _QUOTED_SPAN.finditer(message)]  # in order, disjoint
    starts = [a for a, _ in quoted]
    message = _QUOTED_SPAN.sub(lambda m: _mask(m.group(0)), message)

    def quoted_at(at: int) -> bool:
        k = bisect.bisect_right(starts, at) - 1
        return k >= 0 and at < quoted[k][1]

    def mask_path(match: re.Match[str]) -> str:
        token, start = match.group(0), match.start()
        separators = (start + k for k, ch in enumerate(token) if ch in "/\\")
        if all(quoted_at(at) for at in separators):
            return token  # every separator inside a quoted name: not a path
        key = _PATH_KEY.match(token)
        cut = key.end() if key else 0
        return token[:cut] + _mask(token[cut:])

    def a_path(start: int, word: str) -> bool:  # a separator outside a quoted name
        return any(ch in "/\\" and not quoted_at(start + k) for k, ch in enumerate(word))

    def mask_spaced(match: re.Match[str]) -> str:
        after = match.end() + 1  # the later word, past its space
        last = message[after:].split(" ", 1)[0]
        if not (a_path(match.start(), match.group(1)) and a_path(after, last)):
            return match.group(0)
        return match.group(1) + _mask(match.group(2))

    message = _SPACED_PATH.sub(mask_spaced, message)
    return _PATH_TOKEN.sub(mask_path, message)


def _unmask(text: str) -> str:
    return text.replace(_EQUALS, "=").replace(_UNDERSCORE, "_")


def _flag_value(flag: str, quoted: str) -> str:
    """``--flag NAME`` of a name as Python's ``repr`` wrote it (``'mmlu'``), the name quoted
    for a shell where it needs it (its ``=`` masked: the later rewrites skip it)."""
    name = shlex.quote(str(ast.literal_eval(_unmask(quoted))))
    return f"--{flag} {_mask(name)}"


def _name_flag(match: re.Match[str]) -> str:
    """``(group='mmlu')`` or ``(label='m5')`` (a name the advice names) as ``(--group mmlu)``
    or ``(--label m5)``, the name quoted for a shell where it needs it."""
    return f"({_flag_value(match.group(1), match.group(2))})"


def _device_flag(match: re.Match[str]) -> str:
    """``device='nonsense'; expected None (the NumPy kernels) or a PyTorch device: ...``
    (``TwoPL``'s and ``fit_cbmm``'s spelling) as ``--device nonsense; expected a PyTorch
    device: ...``, the value quoted for a shell where it needs it; a value that is no string
    (only Python passes one) as it was."""
    value = match.group(1)
    shown = _flag_value("device", value) if value[:1] in "'\"" else f"--device {value}"
    return shown + ("; expected a PyTorch device" if match.group(2) else "")


_KEYWORD = re.compile(r"\b(\w+)=")
"""A Python keyword spelling (``budget=``), its name the group."""

_SPELLINGS = (
    # fit: a device refused (malformed, before any data; or not there, when the fit starts)
    (
        re.compile(
            rf"^device=({_QUOTED_NAME}|\S+?)(?:(; expected None \(the NumPy kernels\) or a "
            r"PyTorch device)|(?= is not available to PyTorch| needs PyTorch))"
        ),
        _device_flag,
    ),
    # library messages that spell only the Python keyword, as the command line said them
    (re.compile(r"\bpass benchmark=NAME\b"), "pass --benchmark NAME"),
    (re.compile(r"\bseeds=(\d+) or more give one\b"), r"--seeds \1 or more give one"),  # demo
    (
        re.compile(r"ingest the other file under another benchmark= or metric="),
        "ingest the other file under another --benchmark or --metric",
    ),
    (
        re.compile(
            r"score it with delta=(\S+), or size a design at this delta "
            r"\(tiny\(\.\.\., precision=H, delta=(\S+)\)\)"
        ),
        r"score it with --delta \1, or size a design at this delta "
        r"(tiny --precision H --delta \2)",
    ),
    (
        re.compile(
            r"\(a benchmark ingested with group=\), or give the lm-eval task of the benchmark "
            r"\(task=\)"
        ),
        "(a benchmark ingested with --group), or give the lm-eval task of the benchmark (--task)",
    ),
    (re.compile(r"or choose k by hand \(k=\)"), "or choose k by hand (--k)"),
    # ingest --group (io.formats.read_results): the group, and the options it is read with
    (
        re.compile(
            rf"^benchmark=({_QUOTED_NAME}) and group=({_QUOTED_NAME}): benchmark renames one "
            "task, group reads several"
        ),
        lambda m: (
            f"{_flag_value('benchmark', m.group(1))} and {_flag_value('group', m.group(2))}: "
            "--benchmark renames one task, --group reads several"
        ),
    ),
    (re.compile(rf"^group=({_QUOTED_NAME})(?=[:;] )"), lambda m: _flag_value("group", m.group(1))),
    # the store's rows chosen by a value none of them holds (export, fit --store, ...)
    (
        re.compile(rf"(?<=: )(metric|filter|split)=({_QUOTED_NAME})(?=: no row of )"),
        lambda m: _flag_value(m.group(1), m.group(2)),
    ),
    (
        re.compile(rf"(?<=: )(metric|filter)=({_QUOTED_NAME}) was given, but "),
        lambda m: f"{_flag_value(m.group(1), m.group(2))} was given, but ",
    ),
    (re.compile(r"^precision with calibration "), "--precision with calibration "),  # tiny
    # estimate --live: a precision with nothing to bound what it asks
    (
        re.compile(r"^precision=(\S+) with no budget and no \[run\] spend_cap: "),
        r"--precision \1 with no --budget and no [run] spend_cap: ",
    ),
    (
        re.compile(r"; give budget= or set \[run\] spend_cap to bound what it asks$"),
        "; give --budget or set [run] spend_cap to bound what it asks",
    ),
    # estimate / compare --live: the select live settings they do not use, and their own
    (
        re.compile(r"(?<=not used by )((?:estimate|compare) --live) \(it uses ([^)]*)\)"),
        lambda m: m.group(1) + " (it uses " + _KEYWORD.sub(r"--\1", m.group(2)) + ")",
    ),
    # estimate / compare / tiny advice (select._estimate*, select._compare_live)
    (re.compile(rf"\((group|label)=({_QUOTED_NAME})\)"), _name_flag),
    (re.compile(r"\bwithout group=(?![\w'\"])"), "without --group"),
    (re.compile(r"give it as the design \(items=FILE\)"), "give it as the design (--items FILE)"),
    (re.compile(r"\(items=DESIGN\)"), "(--items DESIGN.csv)"),
    (
        re.compile(r"the fit was made from \(responses=MATRIX\)"),
        "the fit was made from (--responses MATRIX_FILE)",
    ),
    (
        re.compile(r"or a store's benchmark \(load_calibration\(STORE, benchmark=NAME\)\) instead"),
        "or --store --benchmark instead",
    ),
    (
        re.compile(
            r"give the benchmark to calibrate on \(load_calibration\(STORE, benchmark=NAME\)\)"
        ),
        "give the benchmark to calibrate on (--store STORE --benchmark NAME)",
    ),
    (re.compile(r"\(weights=\)"), "(--weights W.csv)"),
    (
        re.compile(
            r"make the design with tiny\(\.\.\., weights=\) for a weighted score, or drop "
            r"weights=(?![\w'\"])"
        ),
        "make the design with `latentbench tiny --weights` for a weighted score, or drop --weights",
    ),
    (
        re.compile(r"name the two to compare with model_a= and model_b="),
        "name the two to compare with --a and --b",
    ),
    (
        re.compile(r"^model_a and model_b are both (?=.*; expected two models of )"),
        "--a and --b are both ",
    ),
    # an output folder (write_directory: out= or directory=, the command's --out)
    (
        re.compile(
            r"^(?:out|directory)=(?=\S.* is a file; expected a directory \(new or to reuse)"
        ),
        "--out ",
    ),
    (re.compile(r"give this one another (?:out|directory)=$"), "give this one another --out"),
    (re.compile(r'\bduplicates="(latest|mean|error)"'), r"--duplicates \1"),
    (re.compile(r'with --duplicates latest or "mean"'), "with --duplicates latest or mean"),
    # a long table's key column with several values (ResponseMatrix.read, read_responses)
    (
        re.compile(r"Store\(STORE\)\.matrix\(NAME(?:, (metric|filter|split)=(\w))?\)"),
        lambda m: (
            "--store STORE --benchmark NAME"
            + (f" --{m.group(1)} {m.group(2)}" if m.group(1) else "")
        ),
    ),
    (re.compile(r"\bMatrixOracle\(missing='zero'\)"), "--missing zero"),
    (re.compile(r"\bmissing='zero'"), "--missing zero"),
    (re.compile(r"\bmissing='error'"), "--missing error"),
    (re.compile(r"\bmissing='drop-items'"), "--missing drop-items"),
    # the random-item EM behind the ability intervals has limits of its own, which fit's
    # --max-iter and --tol do not set: not spelled as those flags
    (
        re.compile(r"random-item abilities stopped at max_iter=(\d+) before meeting tol=(\S+) "),
        r"random-item abilities stopped at their own limit of \1 EM iterations before "
        r"meeting their tolerance \2 (not set by --max-iter or --tol) ",
    ),
    (re.compile(r"\bmax_iter=(-?\d+)"), r"--max-iter \1"),
    # a delta inside a policy spec (select._policies.refuse_spec_delta's Python spelling)
    (
        re.compile(r"^(policy|policies)=('[^']*'): (.*) is set by the delta= argument \(delta="),
        r"--\1 \2: \3 is set by --delta (--delta ",
    ),
    # an initial batch set twice (select._policies.refuse_spec_init_batch): the flags
    (
        re.compile(
            r"^init_batch=(\S+) and (policy|policies)=('[^']*') both set the initial batch "
            r"(.*); expected one of them: drop init_batch= or "
        ),
        r"--init-batch \1 and --\2 \3 both set the initial batch \4; expected one of them: "
        r"drop --init-batch or ",
    ),
    # a tolerance without a certificate (select._run): every spelling a flag
    (
        re.compile(
            r"^epsilon=(\S+) applies to a certificate, (.*) with stop='(\w+)'; expected "
            r"stop='confidence' (.*) or epsilon=0$"
        ),
        r"--epsilon \1 applies to a certificate, \2 with --stop \3; expected --stop confidence "
        r"\4 or --epsilon 0",
    ),
    # a delta that no certificate reads (select._run, select._experiment): as epsilon's
    (
        re.compile(
            r"^delta=(\S+) applies to a certificate, (and '[^']*' has none|and none of "
            r"policies '[^']*' has one) with stop='(\w+)'; expected stop='confidence' (.*) or "
            r"no delta=$"
        ),
        lambda m: (
            f"--delta {m.group(1)} applies to a certificate, "
            + m.group(2).replace("none of policies ", "none of --policies ")
            + f" with --stop {m.group(3)}; expected --stop confidence {m.group(4)} or no --delta"
        ),
    ),
    (re.compile(r"^policies: (?='[^']*' repeats)"), "--policies: "),
    (re.compile(r"^pools: (?='[^']*' selects the same)"), "--pools: "),
    (re.compile(r"^stop='confidence' \(the default"), "--stop confidence (the default"),
    (re.compile(r"give a budget, or stop='budget'"), "give --budget N, or --stop budget"),
    (re.compile(r"\btol=([\w.+-]+)"), r"--tol \1"),
    (re.compile(r"\bn_boot=(-?\d+)"), r"--bootstrap \1"),
    (re.compile(r"\bn_jobs=(-?\d+)"), r"--jobs \1"),
    (re.compile(r"^top=(?=-?\d+; expected an integer >= 1)"), "--top "),
    (re.compile(r"; see the fit's loss history"), "; raise --max-iter (or loosen --tol)"),
    # estimate / compare / tiny / select: an option's value refused (not a config file's
    # "[run] budget=-1", which names its TOML key)
    (
        re.compile(
            r"(?<!\] )(?<!\.json: )(?<![\w-])"
            r"(budget|precision|delta|floor|margin|epsilon|rank|sigma|seeds|pool_size|"
            r"missing|engine|layout|duplicates|errored|seed|batch_size|init_batch|stop|"
            r"simulate|sim_rank|l2)="
            r"(?=[-+\w.']+;)"
        ),
        lambda m: "--" + m.group(1).replace("_", "-") + " ",
    ),
    (re.compile(r"(--budget [-\w.]+; expected a nonnegative integer) or None"), r"\1"),
    (
        re.compile(
            r"(--budget [-\w.]+; expected a positive integer \(items to evaluate\))"
            r", or None with a precision"
        ),
        r"\1",
    ),
    (re.compile(r"\bmargin=M\b"), "--margin M"),
    # fit --trials K on scores off the 1/K grid (irt._model._warn_off_grid)
    (re.compile(r"^trials=(\d+)(?=: [\d,]+ of [\d,]+ observed scores)"), r"--trials \1"),
    # an experiment at a certified stop where no run certified (select._experiment_record)
    (
        re.compile(r"(?<=whole budget; )a larger budget is needed$"),
        "a larger --budget is needed",
    ),
    (re.compile(r"\bpass force=True\b"), "pass --force"),
    (re.compile(r"\bsplit='(date|random)'"), r"--split \1"),
    (re.compile(r"; pass dates= or use --split random"), "; use --split random"),
    (re.compile(r"^rank=(?=\S+: \S.* is already fitted)"), "--rank "),
    # a proxy's rank given with a policy that learns none (select._replay)
    (
        re.compile(
            r"^rank='?([\w.+-]+)'? not used: (policy|policies) ('[^']*') (learns?) no proxy, "
            r"and rank is the proxy's; drop rank\b"
        ),
        r"--rank \1 not used: --\2 \3 \4 no proxy, and --rank is the proxy's; drop --rank",
    ),
    # rank="auto" whose choice predicts worse than the additive model (TwoPL.select_rank)
    (re.compile(r"^rank='auto': the chosen rank"), "--rank auto: the chosen rank"),
    (re.compile(r"the joint-ML fit \(prior=None\) overfits"), "the --joint-ml fit overfits"),
    (re.compile(r"kept finite only by the ridge l2\)"), "kept finite only by the ridge --l2)"),
    (
        re.compile(r"the default prior \(prior='auto'\) keeps"),
        "the default fit's priors (without --joint-ml) keep",
    ),
    (
        re.compile(
            r"^floor=(\S+) not used: proposal='uniform' (.*); drop floor, or choose "
            r"proposal='residual' or 'information'$"
        ),
        r"--floor \1 not used: --proposal uniform \2; drop --floor, or choose --proposal "
        r"residual or information",
    ),
    (
        re.compile(r"^(proposal|floor)=(\S+) with a fixed design \(items=\)"),
        r"--\1 \2 with --items",
    ),
    (re.compile(r"^random_state=(?=[-+\w.']+; expected an integer >= 0)"), "--seed "),
    (re.compile(r"\bmodel=NAME\b"), "--model NAME"),
    # lm-eval's and HELM's naming notes ("(model= sets it)", "...: model= sets it)")
    (re.compile(r"(?:(?<=\()|(?<=: ))model= sets it\)"), "--model sets it)"),
    (re.compile(r"choose it with (metric|filter)=(?![\w'\"])"), r"choose it with --\1"),
    # estimate --source: a tool's results of several benchmarks (select._estimate)
    (
        re.compile(
            r"ingested with group=NAME \(item ids TASK/ID\), read them with the same group=NAME"
        ),
        "ingested with --group NAME (item ids TASK/ID), read them with the same --group NAME",
    ),
    # an EEE score where lower is better (io.formats._eee._record_score)
    (
        re.compile(rf"correctness with metric='is{_UNDERSCORE}correct'"),
        "correctness with --metric is_correct",
    ),
    (re.compile(r"^label=(?='[^']*'(?: names one model|; expected the model's name))"), "--label "),
    (re.compile(r"^benchmark=(?='[^']*': the files hold)"), "--benchmark "),
    (re.compile(r"^split=(?=[-+\w.']+;)"), "--split "),  # an option; in a data key it stays
    # (a task with a slash, Inspect's ``inspect_evals/gpqa``, reads as a path: its = masked)
    (re.compile(rf"^(metric|filter) (?=\S+[={_EQUALS}]\S+: )"), r"--\1 "),
    (re.compile(r"^source=(?=\S+; expected one of )"), "SOURCE "),
    (
        # a store's choice that matches no rows: the options given, as flags (not None ones)
        re.compile(rf"has no rows with ({_NO_ROWS_CHOICE}(?:, {_NO_ROWS_CHOICE})*)"),
        _no_rows_flags,
    ),
    # a file's column advice: the command in use has no --model-col (fit's own spelling is
    # column_flags, applied first): rename the columns instead
    (re.compile(r" \(or name it: (model|item|score)=\.\.\.\)"), ""),
    (
        re.compile(
            r"name it with model=\.\.\., or for a long table name the columns with "
            r"model=, item= and score="
        ),
        "or for a long table name the columns 'model', 'item' and 'score'",
    ),
    (re.compile(r"pass metric=, filter= and split="), "pass --metric, --filter and --split"),
    (
        re.compile(r"pass history_metric=, history_filter= and history_split="),
        "pass --history-metric, --history-filter and --history-split",
    ),
    (
        re.compile(r"choose another with (history_)?split=\.\.\."),
        lambda m: "choose another with --" + ("history-" if m.group(1) else "") + "split",
    ),
    (
        re.compile(r"pass history=, history_store= or no_history=True"),
        "pass --history, --history-store or --no-history",
    ),
    (re.compile(r"\bpass no_history=True\b"), "pass --no-history"),
    (re.compile(r"\bno_history\b(?!=)"), "--no-history"),
    (re.compile(r"^history and "), "--history and "),
    (re.compile(r"^history \((?=.*\) lacks )"), "--history ("),
    (re.compile(r"\bhistory \((?=[^)]*\) holds \d+ of the \d+ candidates)"), "--history ("),
    (
        re.compile(r"\bhistory_(metric|filter|split|store|benchmark)\b"),
        lambda m: "--history-" + m.group(1),
    ),
    (re.compile(r"^heldout fraction=(?=\S+;)"), "--holdout "),
    (
        re.compile(r"^([a-z_]+)=(?=\S+: an option of )"),
        lambda m: "--" + m.group(1).replace("_", "-") + " ",
    ),
    (re.compile(r"^k=(?=[-\w.]+;)"), "--k "),
    # report
    (re.compile(r"\bresponses=FILE\b"), "--responses FILE"),
    (re.compile(r"^path=(?=\S)"), "--out "),
    (re.compile(r"^items=(?=\S)"), "--items "),
    (re.compile(r"^selection=(?=\S+: \S+ is a selection run)"), "--selection "),
    (
        re.compile(
            r"^(responses|selection|run_id|n_boot|method|n_jobs|seed)="
            r"(?=\S+: not an option of (?:an exp|a selection run's|a report of|a responses f|"
            r"a report without))"
        ),
        lambda m: {"run_id": "--run-id ", "n_boot": "--bootstrap ", "n_jobs": "--jobs "}.get(
            m.group(1), f"--{m.group(1)} "
        ),
    ),
    (re.compile(r"^method=(?='\w*'; expected 'items' or 'parametric')"), "--method "),
    (re.compile(r"\bn_boot=N \(N >= (\d+)\)"), r"--bootstrap N (N >= \1)"),
    (re.compile(r"(?<=: not an option of a report )without n_boot\b"), "without --bootstrap"),
    (re.compile(r"\bexpected run_id only with\b"), "expected --run-id only with"),
    (re.compile(r"\bexpected responses only with\b"), "expected --responses only with"),
    # last: its output quotes the benchmark's name, which no rewrite above may touch (a
    # benchmark named 'model' was advised as --metric '--model NAME')
    (
        re.compile(
            r"choose one with (metric|filter)=NAME or \1=\{('(?:[^'\\]|\\.)*'|"
            r'"(?:[^"\\]|\\.)*"): NAME\}'
        ),
        _choose_one,
    ),
)


def column_flags(message: str) -> str:
    """A file's column advice as the flags of a command that has them (``latentbench fit``:
    ``--model-col``, ``--item-col``, ``--score-col``)."""
    message = re.sub(
        r" \(or name it: (model|item|score)=\.\.\.\)", r" (or name it: --\1-col NAME)", message
    )
    return message.replace(
        "name it with model=..., or for a long table name the columns with model=, item= and "
        "score=",
        "name it with --model-col, or for a long table name the columns with "
        "--model-col/--item-col/--score-col",
    )


def cli_spelling(message: str) -> str:
    """Rewrite Python keyword spellings in a library message into CLI flags.

    The ``=`` inside a quoted name (``model 'sweep-tol=1e-4'``) or a path
    (``runs/max_iter=50/out.json``) is the user's and is never rewritten.
    """
    message = _mask_users_equals(message)
    for pattern, flag in _SPELLINGS:
        message = pattern.sub(flag, message)
    return _unmask(message)


def fail(exc: BaseException | str, code: int = 2) -> NoReturn:
    """Print ``error: MESSAGE`` on stderr (no traceback) and exit with ``code``."""
    err_console.print(f"[red]error:[/red] {escape(cli_spelling(str(exc)))}", soft_wrap=True)
    raise typer.Exit(code)


_T = TypeVar("_T")


def deprecated_option(
    ctx: typer.Context, name: str, value: _T, old_flag: str, old_value: _T | None
) -> _T:
    """The value of option ``name`` (``--name``), or of its hidden deprecated spelling
    ``old_flag`` when that was given (one warning line on stderr naming the new spelling).

    Both spellings on one command line is an error (exit 2), as in the Python API.
    """
    if old_value is None:
        return value
    flag = "--" + name.replace("_", "-")
    source = ctx.get_parameter_source(name)  # typer's own copy of click's ParameterSource
    if getattr(source, "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP"):
        fail(
            f"{old_flag} and {flag} both given; {old_flag} is the deprecated spelling of {flag}: "
            f"give {flag} only"
        )
    err_console.print(
        f"[yellow]warning:[/yellow] {old_flag} is deprecated; use {flag}", soft_wrap=True
    )
    return old_value


def fmt(value: Any, digits: int = 3) -> str:
    """A number for people: ``12,032``, ``0.402``, ``130,042``, ``3.1e-05``; never ``1.2e+04``.

    Integers get thousands separators; floats of magnitude >= 1000 are rounded to an integer
    with separators; smaller floats keep ``digits`` significant decimals; NaN prints as ``-``.
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if isinstance(value, int) or (hasattr(value, "dtype") and value.dtype.kind in "iu"):
        return f"{int(value):,}"
    if math.isnan(number):
        return "-"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    magnitude = abs(number)
    if magnitude >= 1000:
        return f"{number:,.0f}"
    if number == 0 or magnitude >= 10 ** (-digits):
        return f"{number:.{digits}f}"
    return f"{number:.2g}"


_QUOTED = re.compile(r"(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)\"[^\"\n]*\"(?!\w)")
_NUMBER = re.compile(r"\d[\d.e+-]*")


def _shape(text: str) -> str:
    """``text`` with its numbers replaced by ``#``, except inside quoted ids: warnings about
    ``'llama-3-8b'`` and ``'llama-3-70b'`` are two warnings, not one."""
    parts, last = [], 0
    for quoted in _QUOTED.finditer(text):
        parts += [_NUMBER.sub("#", text[last : quoted.start()]), quoted.group()]
        last = quoted.end()
    parts.append(_NUMBER.sub("#", text[last:]))
    return "".join(parts)


@contextmanager
def clean_warnings(stream: Console | None = None) -> Iterator[list[str]]:
    """Show warnings raised inside the block as one clean line each (no file path, no
    source line), each distinct message once (messages that differ only in their numbers
    count as one). Yields the list of shown messages."""
    target = stream or err_console
    shown: list[str] = []
    seen: set[str] = set()

    def show(message: Any, category: type, *args: Any, **kwargs: Any) -> None:
        text = cli_spelling(str(message))
        # the same warning with other numbers (e.g. each rank tried by --rank auto): once
        shape = _shape(text)
        if shape in seen:
            return
        seen.add(shape)
        shown.append(text)
        from latentbench.exceptions import LatentbenchWarning

        label = "warning" if issubclass(category, LatentbenchWarning) else category.__name__
        target.print(f"[yellow]{label}:[/yellow] {escape(text)}", soft_wrap=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield shown


def refuse_memory_store(store: Path | None, what: str) -> None:
    """Fail (exit 2) on ``--store :memory:`` for a command that writes ``what`` into its
    store: DuckDB's in-memory database ends with the command, so it kept nothing (an ingest
    said 'N new rows in :memory:', a live run paid for answers that the next run paid again).
    ``Store(":memory:")`` stays for Python, where the store lives as long as the object."""
    if store is not None and str(store) == ":memory:":
        fail(
            f"--store :memory:: an in-memory store ends with the command, so {what} would be "
            "lost as it ends; expected a store file (e.g. --store results.duckdb: a new name "
            "makes a new store)"
        )


def store_option_without_store(flag: str) -> str:
    """The error of a store's option (``--benchmark``, ``--metric``, ...) given without
    ``--store``, in one wording for every command."""
    return f"{flag} applies to a store: it needs --store STORE.duckdb"


def store_needs_benchmark(store: Path, alternative: str = "") -> str:
    """The error of ``--store STORE`` given without ``--benchmark``: it names the store and
    the benchmarks it holds (the names expected); a store that does not exist is said so.
    ``alternative`` is another way out (e.g. estimate's ``--live``), after an "or"."""
    from latentbench.io.store import Store

    other = f" {alternative}" if alternative else ""
    if not Path(store).exists():
        return f"--store {store} needs --benchmark NAME{other}; and {store}: store not found"
    with Store(store, read_only=True) as db:
        names = db.benchmarks()
    if not names:
        return f"--store {store} holds no benchmark yet (`latentbench ingest` fills it){other}"
    shown = ", ".join(names[:8]) + (f", ... ({len(names) - 8} more)" if len(names) > 8 else "")
    return (
        f"--store {store} needs --benchmark NAME{other}; it holds {len(names)} "
        f"benchmark{'s' if len(names) != 1 else ''}: {shown} (`latentbench ls --store {store}` "
        "lists them with their coverage)"
    )


def benchmark_flag(exc: Exception, benchmark: str, flag: str = "--benchmark") -> Exception:
    """A store's ``STORE: unknown benchmark 'X'; stored: A, B`` as an error naming the option
    that gave the benchmark (``--benchmark X: unknown benchmark 'X' in STORE; expected one of
    the stored: A, B``); any other error as it is."""
    said = str(exc)
    found = re.fullmatch(
        rf"(.+): unknown benchmark {re.escape(repr(benchmark))}; stored: (.*)", said
    )
    if found is None:
        return exc
    from latentbench.exceptions import InputError

    return InputError(
        f"{flag} {benchmark}: unknown benchmark {benchmark!r} in {found.group(1)}; expected one "
        f"of the stored: {found.group(2)}"
    )


def fresh_out(out: Path | None, default: str) -> Path:
    """The output directory: ``out`` when given (reused on purpose), else ``./DEFAULT`` or, when
    that exists, the first free ``./DEFAULT-2``, ``./DEFAULT-3``, ... (never overwrites a
    previous run silently)."""
    if out is not None:
        return out
    candidate = Path(default)
    k = 2
    while candidate.exists():
        candidate = Path(f"{default}-{k}")
        k += 1
    return candidate


def claim_out(target: Path, out: Path | None, default: str) -> Path:
    """The folder to write a run's outputs into, claimed just before writing: ``out`` when
    given (reused on purpose), else ``target`` (:func:`fresh_out`'s choice when the command
    started) created now, or the next free ``./DEFAULT-k`` when another run created it since
    (two runs started together in one folder; each writes its own, never one over the
    other). Creating a folder is atomic, so two processes never claim the same one."""
    if out is not None:
        return target
    while True:
        try:
            target.mkdir(parents=True, exist_ok=False)
            return target
        except FileExistsError:
            target = fresh_out(None, default)


def interactive() -> bool:
    """True when stderr is a terminal (progress bars make sense)."""
    return sys.stderr.isatty()


class _Redraw:
    """Redraws a started ``bar`` ``bar.live.refresh_per_second`` times a second from a thread
    of its own, which :meth:`stop` ends and joins: rich's auto refresh thread is only told to
    stop, and a fork-based pool (``run_experiment``, ``bootstrap``) must start its workers
    with no other Python thread alive (one holding a lock leaves it held in the child)."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.thread: threading.Thread | None = None
        self.done = threading.Event()

    def start(self) -> None:
        """Start redrawing."""
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(self.done,), name="latentbench-progress", daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        """Stop redrawing; returns once the thread has ended."""
        self.done.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def _run(self, done: threading.Event) -> None:
        while not done.wait(1.0 / self.bar.live.refresh_per_second):
            self.bar.refresh()


@contextmanager
def shown(bar: Progress) -> Iterator[Progress]:
    """``bar`` drawn for the block; a disabled one (``-q``, stderr not a terminal) is never
    started, so it writes nothing: rich before 14.3 prints an empty line when a disabled
    ``Progress`` stops. Its tasks are kept either way (``add_task``, ``update``).

    ``bar`` is made with ``auto_refresh=False``: it is redrawn from a thread of this
    function's, stopped while a fork-based pool starts its workers
    (:func:`latentbench._fork.paused_for_forks`), so that they fork from a process with no
    other Python thread (Python 3.12+ warns of a fork with threads: it can deadlock).
    """
    from latentbench._fork import paused_for_forks

    if bar.disable:
        yield bar
        return
    if bar.live.auto_refresh:
        raise ValueError("shown() redraws the bar itself: make it with auto_refresh=False")
    with bar:
        redraw = _Redraw(bar)
        redraw.start()
        try:
            with paused_for_forks(redraw.stop, redraw.start):
                yield bar
        finally:
            redraw.stop()


@contextmanager
def progress_bar(
    quiet: bool = False,
    stream: Console | None = None,
    detail: Callable[[], str | None] | None = None,
) -> Iterator[Any]:
    """The one progress display of every command: a rich bar on stderr with the phase name,
    work done (``120/500`` when the total is known, else a count) and the elapsed time.

    Yields a :data:`latentbench._progress.ProgressCallback` (``progress(phase, done,
    total)``) to pass to the library. Nothing is drawn under ``-q``; the bar is removed when
    the block ends. Where no bar can be drawn the progress comes as plain lines
    (:func:`plain_progress`): on a dumb terminal (``TERM=dumb``) and, rarely, in a log (stderr a
    pipe or a file: a CI job, ``nohup``, a scheduler), with their heartbeat for the block
    (:class:`ProgressLines`: a line every interval while a phase reports nothing, none after
    the block). ``detail()``, when given, is added to those lines (a live run's spend and
    interval).
    """
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    target = stream or err_console
    lines = plain_progress(quiet, target, detail)
    if lines is not None:
        with lines:  # its heartbeat: a long step reporting nothing is seen alive in a log
            yield lines
        return
    columns = (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[count]}"),
        TimeElapsedColumn(),
    )
    disable = quiet or not can_redraw(target)
    bar = Progress(*columns, console=target, disable=disable, transient=True, auto_refresh=False)
    with shown(bar):
        task = bar.add_task("starting", total=None, count="")

        def update(phase: str, done: int | None = None, total: int | None = None) -> None:
            count = "" if done is None else (f"{done:,}/{total:,}" if total else f"{done:,}")
            bar.update(task, description=phase, completed=done or 0, total=total, count=count)

        yield update


PROGRESS_LINE_EVERY = 10.0
"""Seconds between two progress lines of one phase on a dumb terminal
(:func:`progress_lines`)."""

PROGRESS_LOG_EVERY = 60.0
"""Seconds before the first progress line in a log (stderr a pipe or a file: a CI job,
``nohup ... > log``, a scheduler), then between two (:func:`progress_lines` with ``log``): a
command that ends sooner prints no progress there, and one of an hour some sixty lines."""


def plain_progress(
    quiet: bool,
    stream: Console | None = None,
    detail: Callable[[], str | None] | None = None,
) -> ProgressLines | None:
    """The plain progress lines of a command where no progress display can be redrawn: one
    decision for every command.

    Parameters
    ----------
    quiet : bool
        ``-q``: no progress at all.
    stream : Console, optional
        Where the progress goes (stderr's console by default).
    detail : callable, optional
        ``detail()``: rich markup added to each count line (``None``: nothing added).

    Returns
    -------
    ProgressLines or None
        :func:`progress_lines` on a dumb terminal (a line as each phase starts, then every
        :data:`PROGRESS_LINE_EVERY` seconds) and in a log (no start line; a line once
        :data:`PROGRESS_LOG_EVERY` seconds have passed, then at most that often); None under
        ``-q`` and on a terminal that can redraw (a bar or spinner is drawn there). Used as
        a context manager (``with lines:``, as :func:`progress_bar` does), it also prints
        those lines while a phase reports nothing (its heartbeat).
    """
    target = stream or err_console
    if quiet or can_redraw(target):
        return None
    return progress_lines(target, log=not on_a_terminal(target), detail=detail)


def progress_lines(
    stream: Console,
    log: bool = False,
    detail: Callable[[], str | None] | None = None,
) -> ProgressLines:
    """A :data:`latentbench._progress.ProgressCallback` that prints plain lines on ``stream``,
    no cursor code, where a progress display cannot be redrawn (:class:`ProgressLines`).

    Parameters
    ----------
    stream : Console
        Where the lines go.
    log : bool, default False
        ``stream`` is a log (a pipe or a file), not a dumb terminal.
    detail : callable, optional
        ``detail()``: rich markup added to each count line (``None``: nothing added).

    Returns
    -------
    ProgressLines
        The callback; ``with`` it, a heartbeat thread also prints while a phase lasts.
    """
    return ProgressLines(stream, log=log, detail=detail)


class ProgressLines:
    """Plain progress lines on ``stream``, no cursor code, where a progress display cannot be
    redrawn; an instance is a :data:`latentbench._progress.ProgressCallback`
    (``lines(phase, done, total)``).

    On a terminal that cannot redraw (``TERM=dumb``: an editor's shell, a speech or braille
    terminal): ``PHASE ...`` as each phase starts, and while one lasts a line ``PHASE ...
    DONE/TOTAL (N s)`` at most every :data:`PROGRESS_LINE_EVERY` seconds, so that a long fit
    says it is alive without a line for each of its sweeps. In a log (``log``: stderr a pipe
    or a file), no start line: ``PHASE ... DONE/TOTAL (N s)`` (N: the phase's seconds) only
    once :data:`PROGRESS_LOG_EVERY` seconds have passed since the callback was made or its
    last line, so that a short command prints what it printed before and a run of an hour
    is seen alive in its log. ``detail()`` is added after a colon when it gives a text.

    Called alone, lines come only when the library reports progress. Within ``with lines:``
    (:func:`progress_bar`) a daemon thread also prints the same line (the phase's last
    known count, if any) when that much time has passed with no report, so that one long
    step (a fit's long phase, a huge file's ingest, a calibration) is seen alive in a log;
    the thread is stopped (joined) when the block ends, so no line follows the command's
    result, and while a fork-based pool starts its workers
    (:func:`latentbench._fork.paused_for_forks`). Reports and the thread's lines are taken
    under one lock (a library may report from its own threads).

    Parameters
    ----------
    stream : Console
        Where the lines go.
    log : bool, default False
        ``stream`` is a log (a pipe or a file), not a dumb terminal.
    detail : callable, optional
        ``detail()``: rich markup added to each count line (``None``: nothing added).
    """

    def __init__(
        self,
        stream: Console,
        log: bool = False,
        detail: Callable[[], str | None] | None = None,
    ) -> None:
        import time

        self.stream = stream
        self.log = log
        self.detail = detail
        now = time.monotonic()
        self._phase: str | None = None
        self._count = ""
        self._start = now  # the phase's start
        self._line = now  # the last line's time (the callback's making before the first)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._forks = ExitStack()  # the registration with paused_for_forks, within ``with``

    def _every(self) -> float:
        """Seconds between two lines (the module's constant, read when used)."""
        return PROGRESS_LOG_EVERY if self.log else PROGRESS_LINE_EVERY

    def __call__(self, phase: str, done: int | None = None, total: int | None = None) -> None:
        """Take in a report of progress (a line printed when one is due).

        Parameters
        ----------
        phase : str
            What is running (``fitting``, ``bootstrap refits``, ...).
        done : int, optional
            Steps done so far.
        total : int, optional
            Steps planned (``None`` or 0: not known).
        """
        import time

        with self._lock:
            now = time.monotonic()
            self._count = (
                "" if done is None else (f" {done:,}/{total:,}" if total else f" {done:,}")
            )
            if phase != self._phase:
                self._phase, self._start = phase, now
                if not self.log:
                    self._line = now
                    self.stream.print(f"{escape(phase)} ...", soft_wrap=True, highlight=False)
                    return
            if now - self._line >= self._every():
                self._say(now, self.detail)

    def _say(self, now: float, detail: Callable[[], str | None] | None) -> None:
        """Print the current phase's count line (the lock held)."""
        self._line = now
        more = detail() if detail is not None else None
        self.stream.print(
            f"{escape(self._phase)} ...{self._count} ({now - self._start:.0f} s)"
            + (f": {more}" if more else ""),
            soft_wrap=True,
            highlight=False,
        )

    def _beat_detail(self) -> str | None:
        """``detail()`` for the thread's lines: its failure said in the line, not raised
        in a thread where nobody would see it but the line would be lost."""
        if self.detail is None:
            return None
        try:
            return self.detail()
        except Exception as exc:
            return escape(f"(detail not read: {type(exc).__name__}: {exc})")

    def start(self) -> None:
        """Start the heartbeat thread (no-op when it runs, or when the interval is 0: every
        report prints its line then); its first line is due a full interval after the last
        line (or the callback's making)."""
        import time

        if self._thread is not None or self._every() <= 0:
            return
        with self._lock:
            every = self._every()
            wait = min(max(self._line + every - time.monotonic(), 0.0), every)
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._beat,
            args=(self._done, wait),
            name="latentbench-progress-lines",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the heartbeat thread; returns once it has ended (no line after)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _beat(self, done: threading.Event, wait: float) -> None:
        """The thread: a line whenever one is due and the phase has reported nothing."""
        import time

        while not done.wait(wait):
            with self._lock:
                if done.is_set():  # stopped while waiting for the lock: no line after
                    return
                every = max(self._every(), 1e-3)  # never a busy loop
                now = time.monotonic()
                due = self._line + every - now
                if due > 0:  # a report printed a line meanwhile
                    wait = due
                    continue
                wait = every
                if self._phase is not None:  # no phase yet: nothing to say
                    self._say(now, self._beat_detail)

    def __enter__(self) -> ProgressLines:
        from latentbench._fork import paused_for_forks

        self.start()
        self._forks.enter_context(paused_for_forks(self.stop, self.start))
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._forks.close()
        finally:
            self.stop()


@contextmanager
def progress_heartbeat(lines: ProgressLines | None) -> Iterator[ProgressLines | None]:
    """``lines``' heartbeat for the block (:class:`ProgressLines` used as a context manager,
    as :func:`progress_bar` does), for a command that makes its plain lines itself
    (:func:`plain_progress`) beside a bar or spinner of its own; nothing when ``lines`` is
    None (``-q``, a terminal that can redraw)."""
    if lines is None:
        yield None
        return
    with lines:
        yield lines


def live_detail(store: Path) -> Callable[[], str | None]:
    """The ``detail`` of a live run's progress lines (:func:`progress_bar`): what ``ls``
    shows of the run's snapshot beside ``store`` (cells spent and left, paid requests left
    of the cap, the current estimate or difference with its interval), read back from that
    file rather than computed again; None where this process wrote no snapshot (an
    in-memory store, a folder that cannot be written)."""
    import os

    def detail() -> str | None:
        from latentbench.io import read_snapshot, snapshot_summary

        snapshot = read_snapshot(store, holder=os.getpid())
        if snapshot is None or not snapshot["live"]:
            return None
        return escape(snapshot_summary(snapshot).rsplit("; snapshot ", 1)[0])

    return detail


def say_stopping(what: str) -> Callable[[], None]:
    """What a first Ctrl-C prints (for :func:`stop_on_sigint`) while a long call finishes
    the ``what`` in flight."""

    def say() -> None:
        err_console.print(
            f"[yellow]stopping after the {what} in flight (Ctrl-C again to abort)[/yellow]"
        )

    return say


def _abort(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextmanager
def live_store_written(store: Path) -> Iterator[None]:
    """Around a live estimate or comparison (``estimate --live``, ``compare --live``): a
    store that cannot be written once the run has begun (a disk full, a folder this user may
    not write: DuckDB writes ``STORE.wal`` there) is one ``error:`` line and exit 1, as
    ``select live`` says it, not DuckDB's traceback; the answers committed before stay."""
    import duckdb

    try:
        yield
    except duckdb.Error as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, duckdb.InterruptException):  # a second Ctrl-C inside a query
            raise KeyboardInterrupt from None
        if not store_write_error(exc):
            fail(store_refused(store, text, "answers"), code=1)
        fail(
            f"{store}: the store could not be written ({text}); the answers committed "
            "before are kept. Free the space or fix the store's folder (and its .wal file), "
            "then run the same command again: it resumes the run, paying for no stored "
            "answer again",
            code=1,
        )


def store_write_error(exc: BaseException) -> bool:
    """Whether DuckDB's error ``exc`` during a live run is a write the system refused (a disk
    full, a folder or ``.wal`` this user may not write, memory): what freeing space or fixing
    the folder cures. A disk full at an automatic checkpoint is DuckDB's FatalException ('the
    autocheckpoint failed. Reopen the database'; every later query: 'database has been
    invalidated'), which the next command's reopening recovers. Other DuckDB errors (an edited
    table, a catalog or binder error) are :func:`store_refused`; an interrupt is a Ctrl-C."""
    import duckdb

    return isinstance(
        exc,
        (
            duckdb.IOException,
            duckdb.TransactionException,
            duckdb.PermissionException,
            duckdb.OutOfMemoryException,
            duckdb.FatalException,
        ),
    )


def store_refused(store: Path, text: str, kept: str) -> str:
    """The error of a live run whose store DuckDB refused an operation for another reason
    than a write (``text``: DuckDB's words; ``kept``: what the run committed before)."""
    return (
        f"{store}: DuckDB refused an operation on the store ({text}); the {kept} committed "
        "before are kept. Expected the store as latentbench wrote it: if its tables were "
        "edited, or it was copied while a run wrote it, use a backup or the original, or give "
        "a new --store (the run starts again there)"
    )


@contextmanager
def stop_on_sigint(say: Callable[[], None]) -> Iterator[threading.Event]:
    """A first Ctrl-C, or a SIGTERM (``kill``, ``docker stop``, a CI job cancelled), sets the
    yielded event (the run stops after what is in flight and commits it; ``say()`` tells the
    user) and a second one aborts (KeyboardInterrupt); the previous handlers are restored
    after the block. Off the main thread, no handler is set."""
    event = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        event.set()
        for name in _STOP_SIGNALS:  # a second Ctrl-C or SIGTERM aborts
            signal.signal(getattr(signal, name), _abort)
        if signum != signal.SIGINT:
            err_console.print(f"[yellow]{signal.Signals(signum).name} received[/yellow]")
        say()

    in_main = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main:
        for name in _STOP_SIGNALS:
            previous[name] = signal.signal(getattr(signal, name), on_signal)
    try:
        yield event
    finally:
        for name, handler in previous.items():
            if handler is not None:
                signal.signal(getattr(signal, name), handler)


_STOP_SIGNALS = tuple(name for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))
"""The signals :func:`stop_on_sigint` stops a long call on."""
