"""A report page written over an earlier one (``report ... --out live.html`` run again to
watch a run): the page was written in place, so a write that failed midway (a full disk) left
half a page, and a browser reloading it meanwhile saw one; now it is replaced whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from latentbench.report._blocks import render_page


def test_a_page_that_cannot_be_written_leaves_the_earlier_one(tmp_path, monkeypatch):
    page = tmp_path / "live.html"
    render_page([], "first", page)
    before = page.read_bytes()
    real = Path.write_text

    def half(self: Path, data: str, *args: object, **kwargs: object) -> int:
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half)
    with pytest.raises(OSError, match="No space left on device"):
        render_page([], "second", page)
    monkeypatch.undo()
    assert page.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.html"]
    render_page([], "second", page)
    assert "second" in page.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.html"]
