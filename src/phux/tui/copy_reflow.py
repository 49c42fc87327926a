"""Copy mode across a reflow: when a pane's width changes, the engine re-wraps its
lines and renumbers its rows, so copy mode's places (absolute row numbers, see
``phux.tui.copy_mode``) would land on other text. ``remember`` notes each place
as text (lines above the line of the engine's cursor, which a reflow keeps on its
character, and cells into its line) before the resize; ``reanchor`` puts the view,
the cursor and the selection back on that text after it.

    before = remember(cm)   # before the engine is resized
    term.resize(cols, rows)
    reanchor(cm, before)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phux.tui.copy_mode import CopyMode


@dataclass(frozen=True)
class Anchors:
    """Copy mode's places as text (``remember``): each is (lines above the
    line of the engine's cursor, cells into its line); None on the alternate screen,
    which does not reflow."""

    cols: int
    top: tuple[int, int] | None
    cursor: tuple[int, int] | None
    anchor: tuple[int, int] | None


def remember(cm: CopyMode) -> Anchors:
    """Where the view, the cursor and the selection are in the text, for
    ``reanchor`` after the engine is resized: a reflow renumbers rows (lines
    re-wrap), so row numbers alone would land on other text."""
    if cm._screen().alternate:
        return Anchors(cm.term.cols, None, None, None)
    return Anchors(
        cm.term.cols,
        _locate(cm, cm.top, 0),
        _locate(cm, cm.cy, cm.cx),
        None if cm.anchor is None else _locate(cm, *cm.anchor),
    )


def reanchor(cm: CopyMode, before: Anchors) -> None:
    """Put the view, the cursor and the selection back on the text ``before``
    (``remember``) named, at the engine's new width (the view's top row is the
    row its text starts on now)."""
    if before.top is None or before.cols == cm.term.cols:
        cm._clamp()
        return
    cm.found = None  # (a match's columns are of the old rows)
    cm.top = _place_of(cm, before.top)[0]
    if before.cursor is not None:
        cm.cy, cm.cx = _place_of(cm, before.cursor)
    if before.anchor is not None:
        cm.anchor = _place_of(cm, before.anchor)
    cm._clamp()


def _wrapped(cm: CopyMode, row: int) -> bool:
    """Whether ``row`` continues the row above it (a soft wrap)."""
    line = cm._line(row)
    return line is not None and bool(getattr(line, "wrapped", False))


def _line_start(cm: CopyMode, row: int) -> int:
    first = cm._first()
    while row > first and _wrapped(cm, row):
        row -= 1
    return row


def _cursor_line(cm: CopyMode) -> int:
    """The first row of the line the engine's cursor is on (a reflow keeps the
    cursor on its character, so lines are counted from it)."""
    cursor = cm._screen_top() + min(cm._screen().cursor.y, cm.term.rows - 1)
    return _line_start(cm, cursor)


def _locate(cm: CopyMode, row: int, col: int) -> tuple[int, int]:
    """(lines above the cursor's line, negative below it; cells into the line)."""
    start = _line_start(cm, row)
    offset = (row - start) * cm.term.cols + col
    here = _cursor_line(cm)
    step = 1 if start <= here else -1
    lines = 0
    k = start
    while k != here:
        k += step
        if not _wrapped(cm, k):
            lines += step
    return lines, offset


def _place_of(cm: CopyMode, where: tuple[int, int]) -> tuple[int, int]:
    """The (row, column) ``_locate``'s answer names at the current width."""
    lines, offset = where
    first, last = cm._first(), cm._last()
    row = _cursor_line(cm)
    for _ in range(abs(lines)):
        if lines > 0:
            if row <= first:
                break
            row = _line_start(cm, row - 1)
        else:
            nxt = row + 1
            while nxt <= last and _wrapped(cm, nxt):
                nxt += 1
            if nxt > last:
                break
            row = nxt
    cols = cm.term.cols
    down = 0  # rows into the line (its last row when it is shorter now)
    while down < offset // cols and row + down < last and _wrapped(cm, row + down + 1):
        down += 1
    return row + down, min(offset - down * cols, cols - 1)
