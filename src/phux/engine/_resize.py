"""Resizing and history: a height change moves rows between screen and scrollback,
a width change reflows (``_reflow``), and scrollback renders to text."""

from __future__ import annotations

from collections import deque
from itertools import islice

from phux.engine._cells import (
    Line,
    _fill,
    _LazyLine,
    _new_row,
    _render_line,
    _shift_up,
    _TextLine,
)
from phux.engine._grid import GridScreen
from phux.engine._pyte import Cursor as PyteCursor
from phux.engine._pyte import modes as mo


class ResizingScreen(GridScreen):
    """Resizes (with reflow) and renders history."""

    # -- size ---------------------------------------------------------------------------

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Resize without losing text: rows dropped from the top go to scrollback, and
        a width change reflows the main screen and its history (``_reflow``).

        Stock pyte deletes rows from the top (they are lost), cuts rows at a
        narrower width and never adds tab stops for new columns. Blank rows below
        the cursor are dropped first, as tmux does. The alternate screen is not
        reflowed (tmux does not reflow it either): its rows are cut.
        """
        lines = lines or self.lines
        columns = columns or self.columns
        if lines == self.lines and columns == self.columns:
            return
        self.frame = None  # (a frozen screen of the old size: the live one shows)
        if lines < self.lines:
            excess = self.lines - lines
            y = self.lines - 1
            while excess and y > self.cursor.y and not self.buffer.get(y):
                self.buffer.pop(y, None)
                if self.main_buffer is not None:
                    self.main_buffer.pop(y, None)
                excess -= 1
                y -= 1
            for _ in range(excess):
                if self.alternate and self.main_buffer is not None:
                    self._push_history(self.main_buffer[0])
                    _shift_up(self.main_buffer, self.lines)
                    _shift_up(self.buffer, self.lines)
                else:
                    self._push_history(self.buffer[0])
                    _shift_up(self.buffer, self.lines)
            self.cursor.y = max(0, self.cursor.y - excess)
            for sp in self.saved_cursors.values():
                sp.cursor.y = max(0, min(sp.cursor.y - excess, lines - 1))
            self.lines = lines
        elif lines > self.lines and self.scrollback:
            self._pull_history(lines - self.lines)
            self.lines = lines
        if columns != self.columns:
            self._reflow(lines, columns)
            if self.alternate:
                for line in self.buffer.values():
                    for x in [x for x in line if x >= columns]:
                        del line[x]
            if columns < self.columns:
                self.tabstops = {x for x in self.tabstops if x < columns}
            else:
                self.tabstops.update(x for x in range(8, columns, 8) if x >= self.columns)
        self.lines, self.columns = lines, columns
        self.margins = None
        self.cursor.x = min(self.cursor.x, columns if self._pending else columns - 1)
        self._pending = False
        self.cursor.y = min(self.cursor.y, lines - 1)

    _pending = False  # (resize: the reflowed cursor waits to wrap at the new width)

    def _pull_history(self, needed: int) -> None:
        """A taller main screen takes back the newest history rows at its top (as tmux
        does): the rows and the cursor move down, every row keeps its absolute number
        (``scrolled_off`` goes back by as many). A position DECSC saved on the main
        screen stays put; on the alternate screen the main screen's rows move (the
        alternate screen's do not)."""
        pulled = min(needed, len(self.scrollback))
        buffer = self.main_buffer if self.alternate else self.buffer
        assert buffer is not None
        rows = {y + pulled: line for y, line in buffer.items() if y < self.lines}
        buffer.clear()
        for y in range(pulled - 1, -1, -1):
            buffer[y] = self.scrollback.pop()
        buffer.update(rows)
        # The rendered texts of the rows taken back (the newest; those not rendered
        # yet are the newest of all).
        unrendered = min(self._unrendered, pulled)
        self._unrendered -= unrendered
        for _ in range(min(pulled - unrendered, len(self._scrollback_text))):
            self._scrollback_text.pop()
        self.scrolled_off -= pulled
        if not self.alternate:
            self.cursor.y += pulled
        elif (saved := self.saved_cursors.get(False)) is not None:
            # (the main screen's cursor, which it gets back: tmux pulls the rows when
            # the alternate screen is left, with the cursor it gets back)
            saved.cursor.y += pulled

    def _reflow(self, lines: int, columns: int) -> None:
        """The main screen and its history reflowed from ``self.columns`` to ``columns``
        (``lines`` rows): soft-wrapped rows joined, cut again; the cursor and the
        shell's marks keep their place in the text."""
        from phux.engine._reflow import reflow  # (only a width change needs it)

        cols = self.columns
        main = self.main_buffer if self.alternate else self.buffer
        assert main is not None
        history = list(self.scrollback)
        h = len(history)
        rows: list[Line | None] = [*history, *(main.get(y) for y in range(lines))]
        first = self.scrolled_off - h  # the absolute number of rows[0]
        # The cursor of the main screen: the live one, or (on the alternate screen)
        # the saved one the main screen gets back when it returns (tmux reflows it
        # then). A position saved by DECSC on the main screen is a place on the
        # screen and stays put, as in tmux.
        cursor: PyteCursor | None = self.cursor
        if self.alternate:
            saved = self.saved_cursors.get(False)
            cursor = saved.cursor if saved is not None else None
        points: list[tuple[int, int]] = []
        if cursor is not None:
            points.append((h + cursor.y, cursor.x))
        marks = self.shell.positions()
        held = [(r - first, c) for r, c in marks if 0 <= r - first < len(rows)]
        points.extend(held)
        keep = points[0] if cursor is not None else None
        new_rows, moved = reflow(rows, cols, columns, points, keep)
        if len(new_rows) < lines:
            new_rows.extend([None] * (lines - len(new_rows)))
        new_h = len(new_rows) - lines
        # No absolute row number names another row later: when fewer rows are held,
        # the first ones count as gone (``shell.first_row`` moves down by as many).
        gone = max(0, h - new_h)
        new_first = first + gone
        self.scrolled_off = new_first + new_h
        self.scrollback.clear()
        self.scrollback.extend(
            line if line is not None else _new_row(Line) for line in new_rows[:new_h]
        )
        self._scrollback_text.clear()
        self._unrendered = len(self.scrollback)
        main.clear()
        for y, line in enumerate(new_rows[new_h:]):
            if line is not None:
                if line.__class__ is _LazyLine:
                    _fill(line)  # (rows on the screen are drawn on: ordinary rows)
                main[y] = line
        it = iter(moved)
        if cursor is not None:
            r, x = next(it)
            if r >= new_h:
                cursor.y, cursor.x = r - new_h, x
                self._pending = x >= columns and mo.DECAWM in self.mode and not self.alternate
            else:  # (its row went into the history: tmux homes it)
                cursor.y = cursor.x = 0
            if self.alternate:
                cursor.x = min(cursor.x, columns - 1)  # (DECRC puts it inside the screen)
        table = {old: (new_first + r, x) for old, (r, x) in zip(held, it, strict=True)}

        def place(row: int, col: int) -> tuple[int, int]:
            i = row - first
            if i < 0:
                return row + gone, col
            if i >= len(rows):
                return new_first + len(new_rows) + i - len(rows), col
            return table[(i, col)]

        self.shell.remap(place)

    # -- history text ----------------------------------------------------------------

    def _render_history(self) -> deque[tuple[str, str]]:
        """Render the rows pushed since the last call; ``maxlen`` drops the oldest
        texts exactly as it dropped the oldest rows."""
        texts = self._scrollback_text
        scrollback = self.scrollback
        pending = min(self._unrendered, len(scrollback))
        cols = self.columns
        rows = list(islice(reversed(scrollback), pending))
        rows.reverse()
        append = texts.append
        for line in rows:
            kind = line.__class__
            if kind is _LazyLine or kind is _TextLine:  # most rows of a flood: no cells read
                text = line.text
                n = len(text)
                append((text + " " * (cols - n) if n < cols else text, text.rstrip(" ")))
            else:
                text = _render_line(line, cols)
                append((text, text.rstrip(" ")))
        self._unrendered = 0
        if len(texts) != len(scrollback):
            # ``scrollback`` was changed behind our back: render it all again.
            texts.clear()
            for line in scrollback:
                text = _render_line(line, cols)
                texts.append((text, text.rstrip(" ")))
        return texts

    def history_rows(self, trimmed: bool = False) -> list[str]:
        """Scrollback rows, oldest first (untrimmed unless ``trimmed``); rendered once."""
        index = 1 if trimmed else 0
        return [t[index] for t in self._render_history()]

    def history_wrapped(self) -> list[bool]:
        return [line.wrapped for line in self.scrollback]
