"""Tables on a terminal narrower than they are: no value is cut.

rich fitted a table to the terminal by cutting cells with ``…``: at 80 columns the
selection table named its models ``gpt-4-1…`` (three different models) and ``meetkai…``,
and numbers became ``0.8…``. Ids now fold onto more lines, whole; the last columns are left
out, an interval's two ends together, with a line that names them.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from latentbench.cli import _common

IDS = [
    "meetkai_functionary-medium-v3.1-FC",
    "gpt-4-1106-preview",
    "gpt-4-1106-preview-FC",
    "ibm-granite_granite-20b-functioncalling",
]
COLUMNS = ["model", "estimate", "n_observed", "lower", "upper", "certificate_lower",
           "certificate_upper", "estimate_unclipped"]  # fmt: skip


def _table() -> Table:
    table = Table(title="pulse: best model")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "model" else "right")
    for k, name in enumerate(IDS):
        table.add_row(name, f"0.88{k}", "1,700", f"0.87{k}", f"0.89{k}", "0.861", "0.899", "0.8")
    return table


def _printed(monkeypatch, width: int, terminal: bool = True) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=terminal, width=width, color_system=None)
    monkeypatch.setattr(_common, "console", console)
    _common.print_table(_table())
    return buffer.getvalue()


def _cells(text: str) -> list[list[str]]:
    """The body's rows, a folded id joined back from its lines."""
    rows: list[list[str]] = []
    body = text.split("┡")[1].split("└")[0].splitlines()[1:]
    for line in body:
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[1]:  # a new row
            rows.append(cells)
        else:  # the fold of the row above
            rows[-1][0] += cells[0]
    return rows


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_no_value_is_cut_on_a_narrow_terminal(monkeypatch, width):
    text = _printed(monkeypatch, width)
    assert "…" not in text
    rows = _cells(text)
    assert [row[0] for row in rows] == IDS  # every id whole, each apart from the others
    assert all(row[1].startswith("0.88") and len(row[1]) == 5 for row in rows)
    assert max(len(line) for line in text.splitlines()) <= width


def test_left_out_columns_are_named_and_an_interval_keeps_both_ends(monkeypatch):
    text = _printed(monkeypatch, 60)
    header = text.split("┡")[0]
    assert "lower" not in header and "upper" not in header  # not a lower end alone
    assert "estimate" in header and "n_observed" in header
    said = " ".join(text.split("┘")[1].split())
    assert said == (
        "(5 more columns at a wider terminal or through a pipe: lower, upper, "
        "certificate_lower, certificate_upper, estimate_unclipped)"
    )
    text = _printed(monkeypatch, 100)
    assert "certificate_lower" not in text.split("┡")[0]
    assert "lower" in text.split("┡")[0] and "upper" in text.split("┡")[0]
    assert "certificate_lower, certificate_upper, estimate_unclipped)" in " ".join(text.split())


def test_a_wide_terminal_and_a_pipe_show_every_column(monkeypatch):
    for text in (_printed(monkeypatch, 200), _printed(monkeypatch, 60, terminal=False)):
        assert all(col in text for col in COLUMNS) and "more column" not in text
        assert "…" not in text


def test_select_leaves_out_an_unclipped_estimate_equal_to_the_estimate(monkeypatch, tmp_path):
    """Every arm's ``estimate_unclipped`` repeated its ``estimate`` (nothing clipped): a
    column of copies; it stays in selection.json."""
    import json

    import numpy as np
    import pandas as pd

    from latentbench.cli._select import print_selection_table
    from latentbench.select import SelectionRecord

    rng = np.random.default_rng(0)
    est = np.sort(rng.uniform(0.3, 0.8, 5))
    arms = pd.DataFrame({"model": [f"m{i}" for i in range(5)], "estimate": est,
                         "lower": est - 0.1, "upper": est + 0.1, "n_observed": 40,
                         "estimate_unclipped": est})  # fmt: skip
    record = {"policy": "pulse", "best_model": "m4", "arms": arms.to_dict("records"),
              "params": {"delta": 0.05}}  # fmt: skip
    path = tmp_path / "selection.json"

    def shown(frame: pd.DataFrame) -> str:
        path.write_text(json.dumps({**record, "arms": frame.to_dict("records")}))
        buffer = io.StringIO()
        console = Console(file=buffer, force_terminal=False, width=200, color_system=None)
        monkeypatch.setattr(_common, "console", console)
        print_selection_table(SelectionRecord.read_json(path))
        return buffer.getvalue()

    assert "estimate_unclipped" not in shown(arms)
    # a narrow terminal leaves lower and upper out: the caption no longer describes them
    path.write_text(json.dumps(record))
    buffer = io.StringIO()
    narrow = Console(file=buffer, force_terminal=True, width=26, color_system=None)
    monkeypatch.setattr(_common, "console", narrow)
    print_selection_table(SelectionRecord.read_json(path))
    text = " ".join(buffer.getvalue().split())
    assert "more columns at a wider terminal" in text and "lower, upper: simultaneous" not in text
    assert "estimate" in text.split("┡")[0] and "upper" not in text.split("┡")[0]
    clipped = arms.assign(estimate_unclipped=np.r_[est[:-1], 1.02])
    assert "estimate_unclipped" in shown(clipped.assign(estimate=clipped["estimate"].clip(0, 1)))


def test_an_id_column_after_a_rank_keeps_its_width_and_headers_wrap(monkeypatch):
    """``fit``'s table (rank, model, theta, interval, accuracy, rank by accuracy) at 80
    columns: the multi-word header wraps at its space instead of pushing the column out,
    and the ids keep the width the others leave (rich had shrunk them to 15)."""
    table = Table(title="Top models by ability")
    for col in ("rank", "model", "theta", "95% interval", "accuracy", "rank by accuracy"):
        table.add_column(col, justify="left" if col == "model" else "right")
    names = ["Meta-Llama-3_1-70B-Instruct", "gemini-1.5-flash-002", "Meta-Llama-3_1-70B"]
    for k, name in enumerate(names):
        table.add_row(str(k + 1), name, "1.688", "[1.639, 1.737]", "0.628", str(3 - k))
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80, color_system=None)
    monkeypatch.setattr(_common, "console", console)
    _common.print_table(table)
    text = buffer.getvalue()
    assert "…" not in text and "more column" not in text
    body = text.split("┡")[1]
    assert "│ gemini-1.5-flash-002 " in body and "│ Meta-Llama-3_1-70B " in body  # unfolded
    assert "[1.639, 1.737]" in body


def _shown(monkeypatch, table: Table, width: int) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=width, color_system=None)
    monkeypatch.setattr(_common, "console", console)
    _common.print_table(table)
    return buffer.getvalue()


def test_a_value_wider_than_the_terminal_leaves_the_id_shown(monkeypatch):
    """A kept column whose value is wider than the terminal took every column: the id
    column got none and the model's name vanished (``┏┳━━━``)."""
    table = Table(title="t")
    table.add_column("model", justify="left")
    table.add_column("note", justify="right")
    table.add_column("x", justify="right")
    table.add_row("model-a", "y" * 60, "1")
    text = _shown(monkeypatch, table, 40)
    assert "model-a" in text.replace("│", "").replace(" ", "").replace("\n", "")
    body = text.split("┡")[1].split("└")[0]
    assert "".join(c for c in body if c == "y") == "y" * 60  # folded, whole
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 40


def test_the_fewest_columns_keep_an_interval_whole(monkeypatch):
    """At the fewest columns (the id and one more) the one more was an interval's lower end,
    its upper end left out."""
    table = Table(title="t")
    table.add_column("model", justify="left")
    for col in ("certificate_lower", "certificate_upper", "estimate_unclipped"):
        table.add_column(col, justify="right")
    table.add_row("a" * 50, "0.861", "0.899", "0.8")
    text = _shown(monkeypatch, table, 40)
    header = "".join(text.split("┡")[0].split())
    assert "_lower" in header and "_upper" in header
    assert "(1 more column at a wider terminal or through a pipe: estimate_unclipped)" in (
        " ".join(text.split())
    )
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 40


def test_a_left_out_column_is_named_as_its_header_reads(monkeypatch):
    """``ls`` escapes column names from the store (``escape("a[b]")``): the line naming the
    left-out columns printed the escapes, ``a\\[b]``."""
    from rich.markup import escape

    table = Table(title="t")
    table.add_column("model", justify="left")
    for col in ("score", "[bold]x[/bold]", "a[b]", "c"):
        table.add_column(escape(col), justify="right")
    table.add_row("m" * 30, "1", "2", "3", "4")
    said = " ".join(_shown(monkeypatch, table, 36).split("┘")[1].split())
    assert said.endswith("[bold]x[/bold], a[b], c)") and "\\" not in said


def test_the_commands_never_print_a_level_below_1_as_100_percent(monkeypatch, tmp_path):
    """`estimate --delta 1e-7` and `select`'s table caption printed '100%' (rounded to six
    decimals) for a 99.99999% level; the reports did not. One formatter for both."""
    import json

    from latentbench._text import percent
    from latentbench.cli._estimate import _level
    from latentbench.cli._select import _bounds_caption
    from latentbench.select import SelectionRecord

    assert percent(1 - 1e-7) == _level(1 - 1e-7) == "99.99999%"
    assert _level(0.975) == "97.5%" and _level(0.95) == "95%"
    record = {"policy": "pulse", "best_model": "a", "params": {"delta": 1e-7},
              "arms": [{"model": "a", "estimate": 0.6, "lower": 0.5, "upper": 0.7,
                        "n_observed": 10}]}  # fmt: skip
    path = tmp_path / "selection.json"
    path.write_text(json.dumps(record))
    caption = _bounds_caption(SelectionRecord.read_json(path), ["lower", "upper"])
    assert "simultaneous 99.99999% intervals" in caption and "100%" not in caption


def _long_table(n: int, ids: list[str] | None = None) -> Table:
    table = Table(title="items")
    for col in ("item", "discrimination", "difficulty", "n_observed", "lower", "upper"):
        table.add_column(col, justify="left" if col == "item" else "right")
    for k in range(n):
        item = ids[k % len(ids)] if ids else f"mmlu_pro/question-{k:05d}"
        table.add_row(item, f"{k % 97 / 100:.3f}", f"{k % 13 - 6:.3f}", f"{k:,}", "0.5", "0.7")
    return table


def test_fitting_a_long_table_measures_what_it_must_not_every_cell(monkeypatch):
    # every cell of a 20,000-row items table went through rich's measurement (markup read,
    # emoji codes replaced) twice: 11.6 s before the first row; a plain ASCII cell's width
    # is its length, and rich measures only the cells it cannot tell so
    calls = [0]
    measure = _common._measure

    def counted(renderable):
        calls[0] += 1
        return measure(renderable)

    monkeypatch.setattr(_common, "_measure", counted)
    table = _long_table(5_000)
    _common._fit_to_terminal(table, 60)
    assert calls[0] < 50, calls[0]


@pytest.mark.parametrize("width", [40, 60, 90])
def test_a_long_table_with_ids_rich_must_measure_is_fitted_as_rich_measures_them(
    monkeypatch, width
):
    # wide (CJK) characters, an emoji code, escaped markup and a second line: widths that
    # differ from their lengths; the widest of them sets the columns as rich measures it
    from rich.markup import escape

    ids = ["模型-评测-问题-一二三四五", "q:smile:x", escape("item[bold]x[/bold]"), "two\nlines",
           "plain-item-id"]  # fmt: skip
    text = _shown(monkeypatch, _long_table(40, ids), width)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    shown = ["模型-评测-问题-一二三四五", "q😄x", "item[bold]x[/bold]", "twolines", "plain-item-id"]
    rows = _cells(text)
    assert [row[0] for row in rows] == [shown[k % 5] for k in range(40)]
    assert [row[1] for row in rows] == [f"{k % 97 / 100:.3f}" for k in range(40)]
