"""Cursor motion, scrolling and erasing: IND/LF/RI/NEL, SU/SD, ICH/DL, EL/ED/ECH, tabs."""

from __future__ import annotations

from typing import Any

from phux.engine._cells import (
    SEM_INPUT,
    SEM_OUTPUT,
)
from phux.engine._grid import GridScreen
from phux.engine._pyte import modes as mo
from phux.engine._widths import char_width

_FILL_CACHE_LIMIT = 64  # at most ~64 rows of cells


class EditingScreen(GridScreen):
    """Moves the cursor, scrolls regions, erases and inserts."""

    def index(self) -> None:
        """IND. Scrollback only from full-screen scrolls of the main screen.

        Stock HistoryScreen also saves lines scrolled out of a partial scroll
        region; and stock pyte moves a cursor that is below the region up into it.
        """
        margins = self.margins
        y = self.cursor.y
        if margins is None:
            if y == self.lines - 1:
                self._scroll_up(0, y)
            else:
                self.cursor.y = y + 1
        elif y == margins.bottom:
            self._scroll_up(margins.top, margins.bottom)
        elif y < self.lines - 1:
            self.cursor.y = y + 1

    def linefeed(self) -> None:
        """LF, VT, FF. The input an OSC 133 B mark started ends at the line feed
        after it (not at an autowrap): a shell with no C mark (dash) prints its
        command's output next, and in the others the tty's echo of Enter comes
        before the C mark."""
        if self.semantic == SEM_INPUT:
            self.set_semantic(SEM_OUTPUT)
            self.shell.input_ended()  # (dash's command starts here)
        self.index()
        if mo.LNM in self.mode:
            self.carriage_return()

    def reverse_index(self) -> None:
        top, bottom = self._region()
        y = self.cursor.y
        if y == top:
            self._scroll_down(top, bottom)
        elif y > 0:
            self.cursor.y = y - 1

    def next_line(self) -> None:
        """NEL: CR then index (stock pyte maps NEL to a bare linefeed)."""
        self.carriage_return()
        self.index()

    def scroll_up(self, count: int | None = None) -> None:
        """SU (CSI S): scroll the region up; full-screen scrolls feed scrollback."""
        top, bottom = self._region()
        for _ in range(min(count or 1, bottom - top + 1)):
            self._scroll_up(top, bottom)

    def scroll_down(self, count: int | None = None) -> None:
        """SD (CSI T)."""
        top, bottom = self._region()
        for _ in range(min(count or 1, bottom - top + 1)):
            self._scroll_down(top, bottom)

    def cursor_up(self, count: int | None = None) -> None:
        """CUU: stops at the top margin only from inside the region (stock: always).

        Like xterm and tmux, a pending wrap is cancelled: the cursor stays in the
        last column instead of wrapping on the next character.
        """
        top, _bottom = self._region()
        cursor = self.cursor
        y = cursor.y
        cursor.y = max(y - (count or 1), top if y >= top else 0)
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1

    def cursor_down(self, count: int | None = None) -> None:
        """CUD: the mirror image of :meth:`cursor_up`."""
        _top, bottom = self._region()
        cursor = self.cursor
        y = cursor.y
        cursor.y = min(y + (count or 1), bottom if y <= bottom else self.lines - 1)
        if cursor.x >= self.columns:
            cursor.x = self.columns - 1

    def insert_characters(self, count: int | None = None) -> None:
        """ICH. Stock pyte also stores the cell pushed past the right margin."""
        cols = self.columns
        x0 = self.cursor.x
        if x0 >= cols:
            return
        count = min(count or 1, cols - x0)
        line = self.buffer[self.cursor.y]
        self._split_wide(line, x0, x0)
        moved = {x + count: line[x] for x in range(x0, cols - count) if x in line}
        for x in [x for x in line if x >= x0]:
            del line[x]
        line.update(moved)
        last = line.get(cols - 1)
        if last is not None and last.data and char_width(last.data[0]) == 2:
            line[cols - 1] = last._replace(data=" ")  # its right half fell off the edge

    def delete_lines(self, count: int | None = None) -> None:
        """DL. Stock pyte leaves a stale line when the source row was never touched."""
        count = count or 1
        top, bottom = self._region()
        if top <= self.cursor.y <= bottom:
            buffer = self.buffer
            for y in range(self.cursor.y, bottom + 1):
                src = y + count
                if src <= bottom and src in buffer:
                    buffer[y] = buffer.pop(src)
                else:
                    buffer.pop(y, None)
            self.carriage_return()

    # -- erasing ------------------------------------------------------------------

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        cursor = self.cursor
        cols = self.columns
        if how == 0:
            start, end = cursor.x, cols
        elif how == 1:
            start, end = 0, min(cursor.x + 1, cols)
        elif how == 2:
            start, end = 0, cols
        else:
            return
        line = self.buffer[cursor.y]
        if how == 2:
            line.wrapped = False
        self._split_wide(line, start, end)
        key = (start, end, self._erase_cell())
        fill = self._fills.get(key)
        if fill is None:  # coloured output repeats the same EL (grep, gcc): built once
            if len(self._fills) >= _FILL_CACHE_LIMIT:
                self._fills.clear()
            fill = self._fills[key] = dict.fromkeys(range(start, end), key[2])
        line.update(fill)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        y = self.cursor.y
        if how == 3:
            # xterm's "erase saved lines": the scrollback only, never the screen
            # (stock pyte treats it as ED 2).
            self.clear_history()
            return
        if how == 0:
            rows = range(y + 1, self.lines)
        elif how == 1:
            rows = range(y)
        elif how == 2:
            rows = range(self.lines)
        else:
            return
        if how != 1 and not self.alternate and self.shell.commands:
            # Output erased from the main screen is no longer any command's.
            if how == 0:
                self.shell.erase(self.scrolled_off + y, self.cursor.x)
            else:
                self.shell.erase(self.scrolled_off, 0)
        blank = self._erase_cell()
        buffer = self.buffer
        if blank is self.default_char:
            for row in rows:
                buffer.pop(row, None)
        else:
            fill = dict.fromkeys(range(self.columns), blank)
            for row in rows:
                line = buffer[row]
                line.clear()
                line.update(fill)
                line.wrapped = False
        if how in (0, 1):
            self.erase_in_line(how)

    def erase_characters(self, count: int | None = None) -> None:
        cursor = self.cursor
        start = cursor.x
        end = min(start + (count or 1), self.columns)
        line = self.buffer[cursor.y]
        self._split_wide(line, start, end)
        line.update(dict.fromkeys(range(start, end), self._erase_cell()))

    def cursor_to_line(self, line: int | None = None) -> None:
        """VPA. In origin mode the row counts from the top margin (the screen's top
        when no region is set); stock pyte asserts a region exists and, when none
        does, leaves the cursor below the screen."""
        y = (line or 1) - 1
        if mo.DECOM in self.mode and self.margins is not None:
            y += self.margins.top
        self.cursor.y = y
        self.ensure_vbounds()

    # -- tabs ---------------------------------------------------------------------------

    def tab(self) -> None:
        """HT: to the next tab stop, or the last column (stops past it are ignored)."""
        x = self.cursor.x
        stops = [stop for stop in self.tabstops if stop > x]
        self.cursor.x = min(min(stops), self.columns - 1) if stops else self.columns - 1

    def tab_forward(self, count: int | None = None) -> None:
        """CHT (CSI I)."""
        for _ in range(min(count or 1, self.columns)):
            self.tab()

    def tab_backward(self, count: int | None = None) -> None:
        """CBT (CSI Z)."""
        x = min(self.cursor.x, self.columns - 1)
        for _ in range(min(count or 1, self.columns)):
            stops = [s for s in self.tabstops if s < x]
            x = max(stops) if stops else 0
        self.cursor.x = x
