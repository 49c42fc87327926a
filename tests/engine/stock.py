"""Helpers comparing the engine with stock pyte 0.8.2 (``HistoryScreen`` + ``Stream``)."""

from __future__ import annotations

from typing import Any

import pyte

from phux.engine import Terminal


class _StockScreen(pyte.HistoryScreen):  # type: ignore[misc]
    """Stock pyte, less one bug the engine fixes: ICH keeps the cells it pushes
    past the right margin, and a later DCH pulls them back into view (xterm and
    tmux lose them). Dropping them here keeps every other comparison exact."""

    def insert_characters(self, count: int | None = None) -> None:
        super().insert_characters(count)
        line = self.buffer[self.cursor.y]
        for x in [x for x in line if x >= self.columns]:
            del line[x]


# Stock pyte takes U+0080-U+009F for C1 controls (U+009B as CSI, U+009D as
# OSC, ...); in UTF-8 they are not controls, and xterm and tmux ignore them,
# inside escape sequences too. Outside strings (which the stock-safe
# vocabulary has none of) ignoring them everywhere is the same as removing them.
_NO_C1 = dict.fromkeys(range(0x80, 0xA0))


def stock_screen(data: bytes, cols: int, rows: int, history: int) -> Any:
    screen = _StockScreen(cols, rows, history=history)
    stream = pyte.Stream(screen)
    stream.feed(data.decode("utf-8", "replace").translate(_NO_C1))
    return screen


def _grid(line: Any, cols: int) -> list[tuple[object, ...]]:
    return [tuple(line[x][:9]) for x in range(cols)]


def assert_same_as_stock(t: Terminal, stock: Any) -> None:
    """Same buffer (the nine pyte.Char fields), cursor, modes, margins, tabs, history."""
    mine = t.screen
    cols, rows = stock.columns, stock.lines
    assert (mine.columns, mine.lines) == (cols, rows)
    assert (mine.cursor.x, mine.cursor.y) == (stock.cursor.x, stock.cursor.y)
    assert mine.cursor.hidden == stock.cursor.hidden
    assert tuple(mine.cursor.attrs[:9]) == tuple(stock.cursor.attrs)
    assert mine.mode == stock.mode
    assert mine.margins == stock.margins
    assert mine.tabstops == stock.tabstops
    assert mine.title == stock.title
    for y in range(rows):
        assert _grid(mine.buffer[y], cols) == _grid(stock.buffer[y], cols), f"row {y}"
    assert len(mine.scrollback) == len(stock.history.top)
    for a, b in zip(mine.scrollback, stock.history.top, strict=True):
        assert _grid(a, cols) == _grid(b, cols)
    # The text projections read (kept from the flood path where it had it) too.
    stock_text = ["".join(line[x].data for x in range(cols)) for line in stock.history.top]
    assert mine.history_rows() == stock_text
    assert mine.display == stock.display
