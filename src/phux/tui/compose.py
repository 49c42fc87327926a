"""The multiplexer's screen: a grid of cells composed from panes, and damage drawing.

A ``Canvas`` is what the person's terminal should show: one (text, style) pair
per cell, the text "" for the right half of a wide character; a style is the
SGR of the cell and, for a cell under a hyperlink, the OSC 8 that opens it
(``phux.tui.paint.linked``: ``Damage.frame`` ends the link where it ends). Each frame the
multiplexer draws into it (panes from their engines, borders, the status
line, an overlay) and ``Damage.frame`` turns the difference from what the
terminal shows now into VT bytes: only the cells that changed, each run of
them from one cursor move, in one synchronized update (``?2026``). A pane
whose engine did not change since the last frame is not even recomposed
(``Composer``), so an idle window costs nothing per frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from phux.engine._widths import char_width
from phux.tui.paint import LINK_END, linked

if TYPE_CHECKING:
    from phux.engine import Terminal
    from phux.tui.copy_mode import CopyMode
    from phux.tui.layout import Rect
    from phux.tui.paint import Painter

RESET = "\x1b[0m"
Cell = tuple[str, str]
BLANK: Cell = (" ", RESET)
GAP = 4
"""Unchanged cells between two changed ones that are redrawn rather than skipped
(a cursor move costs about as many bytes)."""


class Canvas:
    def __init__(self, cols: int, rows: int) -> None:
        self.cols = cols
        self.rows = rows
        self.cells: list[list[Cell]] = [[BLANK] * cols for _ in range(rows)]

    def fill(self, rect: Rect, cell: Cell = BLANK) -> None:
        for y in range(max(rect.y, 0), min(rect.y + rect.h, self.rows)):
            row = self.cells[y]
            for x in range(max(rect.x, 0), min(rect.x + rect.w, self.cols)):
                row[x] = cell

    def text(self, x: int, y: int, text: str, style: str, width: int | None = None) -> int:
        """Write ``text`` from (x, y), at most ``width`` columns (default: to the
        row's end); wide characters take two cells, zero-width and unprintable
        ones are dropped. Returns the column after the text."""
        if not 0 <= y < self.rows:
            return x
        end = self.cols if width is None else min(self.cols, x + width)
        row = self.cells[y]
        for ch in text:
            w = char_width(ch)
            if w <= 0:
                continue
            if x + w > end:
                break
            row[x] = (ch, style)
            if w == 2:
                row[x + 1] = ("", style)
            x += w
        return x


def pane_rows(
    term: Terminal, painter: Painter, rect: Rect, canvas: Canvas, *, top: int | None = None
) -> None:
    """Copy the engine's active screen into ``rect`` (clipped or padded to it).

    ``top``: the first engine row shown; default: when the engine has more rows
    than the rect, the rows that hold the cursor (as the single-pane view paint).
    """
    screen: Any = term.shown  # (a synchronized-output frame: the screen before it)
    rows, cols = term.rows, term.cols
    if top is None:
        top = max(0, min(screen.cursor.y - rect.h + 1, rows - rect.h))
    default = screen.default_char
    blank = (" ", painter.style(default))
    buffer = screen.buffer
    style = painter.style
    for dy in range(rect.h):
        y = rect.y + dy
        if not 0 <= y < canvas.rows:
            continue
        out = canvas.cells[y]
        src = top + dy
        line = buffer.get(src) if src < rows else None
        x_end = min(rect.w, canvas.cols - rect.x)
        if not line:
            for dx in range(x_end):
                out[rect.x + dx] = blank
            continue
        for dx in range(x_end):
            if dx >= cols:
                out[rect.x + dx] = blank
                continue
            cell = line.get(dx, default)
            data = cell.data
            if data == "" and dx == 0:
                data = " "  # the right half of a glyph cut at the pane's left edge
            elif data and dx == x_end - 1 and char_width(data[0]) == 2:
                data = " "  # a wide glyph cut at the pane's right edge
            out[rect.x + dx] = (data, style(cell))


class Damage:
    """What the person's terminal shows, and the bytes that bring it to a new canvas."""

    def __init__(self, cols: int, rows: int) -> None:
        self.shown: list[list[Cell]] | None = None
        self.cols = cols
        self.rows = rows

    def invalidate(self) -> None:
        """The terminal's content is unknown (a resize, SIGCONT): redraw all next frame."""
        self.shown = None

    def frame(self, canvas: Canvas, tail: str = "", *, tail_changed: bool = True) -> str:
        """VT bytes from what is shown to ``canvas`` ("" when nothing changed and
        ``tail`` did not); ``tail`` (cursor placement and shape, modes) ends the
        update. Written whenever cells are: the update hides the cursor while it
        draws and moves it, so an unchanged tail must put it back all the same."""
        parts: list[str] = []
        full = self.shown is None or (self.cols, self.rows) != (canvas.cols, canvas.rows)
        if full:
            self.cols, self.rows = canvas.cols, canvas.rows
            parts.append("\x1b[r\x1b[?6l\x1b[?7h\x1b[4l\x1b(B\x0f" + RESET + "\x1b[H\x1b[2J")
            self.shown = [[BLANK] * canvas.cols for _ in range(canvas.rows)]
        shown = self.shown
        assert shown is not None
        current = None if not full else RESET
        for y in range(canvas.rows):
            new = canvas.cells[y]
            old = shown[y]
            if new == old:
                continue
            x = 0
            n = canvas.cols
            while x < n:
                if new[x] == old[x]:
                    x += 1
                    continue
                start = x
                if new[start][0] == "" and start > 0:
                    start -= 1  # redraw a wide glyph from its left half
                end = x + 1
                quiet = 0
                while end < n and quiet <= GAP:
                    if new[end] == old[end]:
                        quiet += 1
                    else:
                        quiet = 0
                    end += 1
                end -= quiet  # the run ends at its last changed cell
                parts.append(f"\x1b[{y + 1};{start + 1}H")
                for cx in range(start, end):
                    text, style = new[cx]
                    if text == "":
                        continue
                    if style != current:
                        if current is not None and linked(current) and not linked(style):
                            parts.append(LINK_END)
                        parts.append(style)
                        current = style
                    parts.append(text)
                if end < n and new[end][0] == "" and new[end - 1][0] != "":
                    end += 1  # drawn with its left half
                x = end
            shown[y] = list(new)
        if not parts and not (tail and tail_changed):
            return ""
        if current is not None and linked(current):
            parts.append(LINK_END)
        if current not in (None, RESET):
            parts.append(RESET)
        return "\x1b[?2026h\x1b[?25l" + "".join(parts) + tail + "\x1b[?2026l"


MODE_STYLE = "\x1b[0;30;43m"
"""tmux's mode-style: the selection, copy mode's indicator (black on yellow)."""
MATCH_STYLE = "\x1b[0;30;45m"
"""tmux's copy-mode-current-match-style (black on magenta)."""


def copy_rows(copy: CopyMode, painter: Painter, rect: Rect, canvas: Canvas) -> None:
    """Copy mode's view of a pane (``phux.tui.copy_mode``) drawn into ``rect``: its
    rows, the selection and the current match, and its indicator at the top right."""
    view = copy.view()
    screen: Any = copy.term.screen
    default = screen.default_char
    blank = (" ", painter.style(default))
    for dy, line in enumerate(view.rows[: rect.h]):
        y = rect.y + dy
        if not 0 <= y < canvas.rows:
            continue
        out = canvas.cells[y]
        sel, hit = view.selected[dy], view.match[dy]
        x_end = min(rect.w, canvas.cols - rect.x)
        for dx in range(x_end):
            cell = line.get(dx, default) if line is not None else None
            if cell is None:
                out[rect.x + dx] = blank
                continue
            data = cell.data or ("" if dx else " ")
            if data and dx == x_end - 1 and char_width(data[0]) == 2:
                data = " "
            if hit is not None and hit[0] <= dx < hit[1]:
                style = MATCH_STYLE
            elif sel is not None and sel[0] <= dx < sel[1]:
                style = MODE_STYLE
            else:
                style = painter.style(cell)
            out[rect.x + dx] = (data, style)
    label = view.indicator
    canvas.text(rect.x + max(0, rect.w - len(label)), rect.y, label, MODE_STYLE, rect.w)
