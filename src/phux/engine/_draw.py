"""Drawing text: the fast paths for runs of narrow and wide characters, autowrap,
combining marks, and whole rows drawn or scrolled at once (the flood paths)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache

from phux.engine._cells import (
    _FROM_0,
    BLANK,
    MAX_COMBINING,
    SEM_INPUT,
    SEM_OUTPUT,
    Cell,
    Line,
    Runs,
    _appends_text,
    _attrs,
    _dict_update,
    _fill,
    _LazyLine,
    _new_row,
    _new_tuple,
    _TextLine,
)
from phux.engine._grid import GridScreen
from phux.engine._pyte import charsets as cs
from phux.engine._pyte import modes as mo
from phux.engine._widths import char_width, narrow_run, wide_run

_IRM = mo.IRM
# Text with no more non-ASCII characters than this is drawn without the
# regexes of width-1 and width-2 runs, which compile in ~2 and ~4 ms: its
# printable ASCII runs at once, the rest one character at a time. A one-shot
# reader replaying a prompt's ❯ or 🚀 so compiles neither.
_FEW_NON_ASCII = 8


@cache
def _printable_ascii_run() -> re.Pattern[str]:
    return re.compile("[\x20-\x7e]+")  # compiled on first use: ASCII text never needs it


class DrawingScreen(GridScreen):
    """Draws text into the grid."""

    # -- drawing ----------------------------------------------------------------

    def draw(self, data: str) -> None:
        charset = self.g1_charset if self.charset else self.g0_charset
        if charset is not cs.LAT1_MAP:
            data = data.translate(charset)
        elif data.isascii() and data.isprintable() and data:
            # The common case: a run that ends before the last column, no
            # insert mode (``_draw_narrow``'s fast path, inline).
            cursor = self.cursor
            x = cursor.x
            end = x + len(data)
            attrs: Cell = cursor.attrs  # type: ignore[assignment]
            glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
            if end < self.columns and _IRM not in self.mode:
                line = self.buffer[cursor.y]
                left = line.get(x)
                right = line.get(end)
                if (left is not None and left[0] == "") or (right is not None and right[0] == ""):
                    self._split_wide(line, x, end)
                appending = _appends_text(line, x)
                fill = _dict_update if appending else line.__class__.update
                if glyphs:
                    fill(line, enumerate(map(glyphs.__getitem__, data), x))
                else:  # attributes seen for the first time: build cells without the cache
                    tail = glyphs.tail
                    # (c,) + tail: one tuple, where (c, *tail) builds a list first.
                    cells = [_new_tuple(Cell, (c,) + tail) for c in data]  # noqa: RUF005
                    fill(line, enumerate(cells, x))
                    if attrs is not self._one_off:  # (a throwaway cache: not filled)
                        glyphs.update(zip(data, cells, strict=True))
                if appending:
                    line.text += data
                cursor.x = end
            else:
                self._draw_narrow(data)
            self.last_char = data[-1]
            return
        self._draw(data)

    def _draw(self, data: str) -> None:
        if not data:
            return
        if data.isascii() and data.isprintable():
            self._draw_narrow(data)
        else:
            few = len(data) - len(data.encode("ascii", "ignore")) <= _FEW_NON_ASCII
            match = (_printable_ascii_run() if few else narrow_run()).match
            pos = 0
            n = len(data)
            while pos < n:
                m = match(data, pos)
                if m is not None:
                    end = m.end()
                    self._draw_narrow(data[pos:end])
                    pos = end
                    continue
                char = data[pos]
                width = char_width(char)
                # Asked only at a wide character: wide_run() compiles in ~4 ms.
                m = wide_run().match(data, pos) if width == 2 and not few else None
                if m is None:
                    self._draw_char(char, width)
                    pos += 1
                else:
                    end = m.end()
                    self._draw_wide(data[pos:end])
                    pos = end
        self.last_char = data[-1]

    def _draw_wide(self, run: str) -> None:
        """Draw a run of width-2 characters, as many per row segment as fit."""
        cursor = self.cursor
        if mo.IRM in self.mode:
            for char in run:
                self._draw_char(char, 2)
            return
        attrs: Cell = cursor.attrs  # type: ignore[assignment]
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        glyph = glyphs.__getitem__
        stub = glyph("")
        cols = self.columns
        buffer = self.buffer
        pos = 0
        n = len(run)
        while pos < n:
            x = cursor.x
            room = (cols - x) // 2 if x < cols else 0
            if room == 0:
                self._draw_char(run[pos], 2)  # wraps (or not) like any wide character
                pos += 1
                continue
            k = min(room, n - pos)
            line = buffer[cursor.y]
            end = x + 2 * k
            left = line.get(x)
            right = line.get(end)
            if (left is not None and left[0] == "") or (right is not None and right[0] == ""):
                self._split_wide(line, x, end)
            cells = [cell for c in run[pos : pos + k] for cell in (glyph(c), stub)]
            line.update(zip(range(x, end), cells, strict=True))
            cursor.x = end
            pos += k
        self._no_pending_wrap()

    def _wrap(self) -> None:
        """Auto-wrap: CR, index, and mark the new row as a continuation."""
        self.cursor.x = 0
        self.index()
        self.buffer[self.cursor.y].wrapped = True

    def _draw_narrow(self, run: str) -> None:
        """Draw a run of width-1 characters, one line segment at a time."""
        cursor = self.cursor
        mode = self.mode
        if mo.IRM in mode:
            for char in run:
                self._draw_char(char, 1)
            return
        attrs: Cell = cursor.attrs  # type: ignore[assignment]
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        cols = self.columns
        buffer = self.buffer
        n = len(run)
        x = cursor.x
        if x + n <= cols:  # fast path: the run fits on the current row
            line = buffer[cursor.y]
            left = line.get(x)
            right = line.get(x + n)
            if (left is not None and left[0] == "") or (right is not None and right[0] == ""):
                self._split_wide(line, x, x + n)
            appending = _appends_text(line, x)
            fill = _dict_update if appending else line.__class__.update
            if glyphs:
                fill(line, zip(range(x, x + n), map(glyphs.__getitem__, run), strict=False))
            else:  # attributes seen for the first time: build cells without the cache
                tail = glyphs.tail
                cells = [_new_tuple(Cell, (c,) + tail) for c in run]  # noqa: RUF005
                fill(line, zip(range(x, x + n), cells, strict=True))
                glyphs.update(zip(run, cells, strict=True))
            if appending:
                line.text += run
            cursor.x = x + n
            if x + n == cols:
                self._no_pending_wrap()
            return
        glyph = glyphs.__getitem__
        pos = 0
        while pos < n:
            x = cursor.x
            if x >= cols:
                if mo.DECAWM in mode:
                    if n - pos > cols and cursor.y == self.lines - 1 and self._scrolls_whole():
                        self._wrap_rows(run[pos:], glyph)  # a line of many rows
                        return
                    self._wrap()
                    x = 0
                else:
                    # Without autowrap every further character overwrites the last column.
                    line = buffer[cursor.y]
                    self._split_wide(line, cols - 1, cols)
                    line[cols - 1] = glyph(run[-1])
                    cursor.x = cols - 1
                    return
            k = cols - x
            if k > n - pos:
                k = n - pos
            line = buffer[cursor.y]
            left = line.get(x)
            right = line.get(x + k)
            if (left is not None and left.data == "") or (right is not None and right.data == ""):
                self._split_wide(line, x, x + k)
            seg = run[pos : pos + k] if k != n else run
            if glyphs:
                line.update(zip(range(x, x + k), map(glyph, seg), strict=False))
            else:  # attributes seen for the first time: build cells without the cache
                tail = glyphs.tail
                cells = [_new_tuple(Cell, (c,) + tail) for c in seg]  # noqa: RUF005
                line.update(zip(range(x, x + k), cells, strict=True))
                glyphs.update(zip(seg, cells, strict=True))
            cursor.x = x + k
            pos += k
        self._no_pending_wrap()

    def _scrolls_whole(self) -> bool:
        """Whether an index at the bottom row scrolls the whole main screen."""
        margins = self.margins
        return not self.alternate and (
            margins is None or (margins.top == 0 and margins.bottom == self.lines - 1)
        )

    def _wrap_rows(self, text: str, glyph: Callable[[str], Cell]) -> None:
        """``text`` (width-1 characters, no insert mode) drawn by autowrap from a full
        bottom row of the whole main screen: one scroll and one new soft-wrapped row
        per screen width, built as rows directly (as ``_scroll_lines`` builds a
        flood's) rather than wrapped and shifted one at a time. Rows that would
        scroll out of the screen and the history within this call are not built."""
        cols = self.columns
        lines = self.lines
        buffer = self.buffer
        default = self.default_char
        m = (len(text) + cols - 1) // cols  # the scrolls
        history = self.history_size
        skip = max(0, m - history - lines)
        rows = [buffer[y] for y in range(lines)]
        append = rows.append
        new = _new_row
        pushed = m - skip  # (the rows built, as many as scroll the screen)
        lazy = pushed - lines  # the first ``lazy`` of them go into the history
        for i, start in enumerate(range(skip * cols, len(text), cols)):
            piece = text[start : start + cols]
            line = new(_LazyLine)
            if default is not BLANK:
                line.default = default
            line.text = piece
            line.runs = (len(piece), _FROM_0, (glyph(piece[0]),))  # (one pen)
            line.wrapped = True
            if i >= lazy:  # (on the screen)
                _fill(line)
            append(line)
        self.scrolled_off += m
        if history:
            self.scrollback.extend(rows[:pushed])
            self._unrendered += m
        buffer.update(zip(range(lines), rows[pushed:], strict=True))
        self.cursor.x = len(text) - (m - 1) * cols

    def _no_pending_wrap(self) -> None:
        """Without autowrap the cursor stays on the last column after writing it
        (xterm, tmux); stock pyte parks it past the edge, where EL, DCH and ICH
        then miss the last column."""
        cursor = self.cursor
        if cursor.x >= self.columns and mo.DECAWM not in self.mode:
            cursor.x = self.columns - 1

    def _draw_char(self, char: str, width: int | None = None) -> None:
        """Draw one character of any width (the slow path)."""
        if width is None:
            width = char_width(char)
        cursor = self.cursor
        cols = self.columns
        mode = self.mode
        if width <= 0:
            if width == 0:
                self._combine(char)
            return  # Unprintable: skipped, the rest of the text is still drawn.
        x = cursor.x
        if x >= cols or (width == 2 and x == cols - 1):
            if mo.DECAWM in mode:
                # A wide character that does not fit in the last column wraps whole.
                if x == cols - 1:
                    # The skipped last cell becomes an empty pad (like a wide
                    # character's right half), so joined logical lines get no space.
                    line = self.buffer[cursor.y]
                    old = line.get(x)
                    if old is None or old.data == " ":
                        line[x] = (old or self.default_char)._replace(data="")
                self._wrap()
            else:
                cursor.x = max(0, cols - width)
        if mo.IRM in mode:
            self.insert_characters(width)
        attrs = _attrs(cursor)
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        x = cursor.x
        line = self.buffer[cursor.y]
        self._split_wide(line, x, x + width)
        line[x] = glyphs[char]
        if width == 2 and x + 1 < cols:
            line[x + 1] = glyphs[""]
        cursor.x = min(x + width, cols)
        if cursor.x == cols:
            self._no_pending_wrap()

    def _combine(self, char: str) -> None:
        """Attach a zero-width character to the cell before the cursor (never wraps,
        never drops text). At column 0 there is none and it is dropped, as tmux does:
        the row above may not have wrapped into this one, and its last cell may be a
        wide character's right half or the pad that a wide character skipped."""
        cursor = self.cursor
        if not cursor.x:
            return
        line = self.buffer[cursor.y]
        x = min(cursor.x, self.columns) - 1
        cell = line[x]
        if cell.data == "" and x > 0:
            x -= 1
            cell = line[x]
        data = cell.data
        # Full: the base and MAX_COMBINING more, decomposed (never shorter than data).
        if len(data) > MAX_COMBINING or len(unicodedata.normalize("NFD", data)) > MAX_COMBINING:
            return
        if unicodedata.combining(char):
            data = unicodedata.normalize("NFC", data + char)
        else:
            data += char
        line[x] = cell._replace(data=data)

    def repeat_last(self, count: int = 1) -> None:
        """REP (CSI b): repeat the last graphic character."""
        if self.last_char:
            self._draw(self.last_char * min(max(count, 1), self.columns * self.lines))

    def draw_lines(self, texts: list[str]) -> None:
        """Each of ``texts`` (width-1 characters only, possibly empty) drawn and followed by
        CR LF: the state ``draw(text); carriage_return(); index()`` leaves for each.

        The common flood (``seq``, logs, compiler output) scrolls the whole screen
        once per line; here, whenever the cursor sits at the start of an empty
        bottom row, the lines are built as rows directly (lines wider than the
        screen as the rows autowrap cuts them into) and the screen is shifted
        once for all of them.
        """
        cursor = self.cursor
        bottom = self.lines - 1
        margins = self.margins
        n = len(texts)
        i = 0
        if (
            (margins is None or (margins.top == 0 and margins.bottom == bottom))
            and mo.IRM not in self.mode
            and (self.g1_charset if self.charset else self.g0_charset) is cs.LAT1_MAP
        ):
            buffer = self.buffer
            cols = self.columns
            # Without autowrap a long line overwrites the last column: drawn.
            all_fit = mo.DECAWM in self.mode or (n > 0 and max(map(len, texts)) <= cols)
            while i < n:
                if cursor.x == 0 and cursor.y == bottom and not buffer.get(bottom):
                    j = n
                    if not all_fit:
                        j = i
                        while j < n and len(texts[j]) <= cols:
                            j += 1
                    if j > i:
                        self._scroll_lines(texts, i, j)
                        i = j
                        continue
                self._draw(texts[i])  # fills the bottom row, or wraps
                cursor.x = 0
                self.index()
                i += 1
        for text in texts[i:]:
            self.draw(text)
            cursor.x = 0
            self.index()
        self.last_char = ""

    def skip_scrolls(self, scrolls: int, x: int) -> None:
        """Account for ``scrolls`` full-screen scrolls of the main screen whose rows are
        never drawn, ending with the cursor at column ``x`` of a fresh bottom row.

        Only for the bulk path (``_bulk``), which calls it when at least a screen
        and a history's worth of further scrolls follow: those push every row
        above the bottom one out of the history whatever it holds, so the rows
        are left as they are instead of being moved. Counters move as if drawn.
        """
        if self.semantic == SEM_INPUT:  # (as linefeed() does at the first of them)
            self.set_semantic(SEM_OUTPUT)
            self.shell.input_ended()
        self.scrolled_off += scrolls
        if self.history_size:
            self._unrendered += scrolls
        bottom = self.lines - 1
        self.buffer[bottom] = self._new_line()
        self.cursor.x = x
        self.cursor.y = bottom
        self.last_char = ""

    def scroll_styled_rows(self, rows: list[tuple[str, Runs | None, bool]]) -> None:
        """``rows`` shifted in once from column 0 of an empty bottom row of the whole
        main screen, each the text from column 0 of a row no wider than the screen,
        its runs (``Runs``: all of the text, None for an empty row) and whether it
        continues the row before (autowrap): the rows ``draw``, ``sgr`` and CR LF
        leave (a row drawn left to right from column 0 keeps its text, an empty one
        is a plain row). Only for the bulk path (``_bulk._styled_rows``), which
        checks those conditions and computes the pens. Rows that go into the
        history are built without their cells (``_LazyLine``)."""
        if not rows:
            return
        buffer = self.buffer
        lines = self.lines
        kept = [buffer[y] for y in range(lines)]
        append = kept.append
        new_line = self._new_line
        k = len(rows)
        lazy = k - lines + 1  # rows[i] for i < lazy go into the history
        first = True
        for i, (text, runs, wrapped) in enumerate(rows):
            line = kept[lines - 1] if first else new_line()
            if first:
                kept.pop()
                first = False
            if wrapped:
                line.wrapped = True
            if text:
                line.__class__ = _LazyLine
                line.text = text
                line.runs = runs
                if i >= lazy:  # (on the screen)
                    _fill(line)
            append(line)
        append(new_line())
        self.scrolled_off += k
        if self.history_size:
            self.scrollback.extend(kept[:k])
            self._unrendered += k
        buffer.update(zip(range(lines), kept[k:], strict=True))
        self.cursor.x = 0
        self.last_char = ""

    def _scroll_lines(self, texts: list[str], start: int, stop: int) -> None:
        """``texts[start:stop]`` each drawn, then CR LF, from (0, bottom) on an empty
        row: one full-screen scroll per row (a line wider than the screen, with
        autowrap on, is the rows it wraps into, all but the first soft-wrapped)."""
        attrs: Cell = self.cursor.attrs  # type: ignore[assignment]
        glyphs = self._glyphs if attrs is self._glyph_attrs else self._select_glyphs(attrs)
        glyph = glyphs.__getitem__
        default = self.default_char
        buffer = self.buffer
        lines = self.lines
        cols = self.columns
        wrapped: list[bool] | None = None
        if max(map(len, texts[start:stop])) > cols:
            pieces: list[str] = []
            wrapped = []
            for text in texts[start:stop]:
                pieces.append(text[:cols])
                wrapped.append(False)
                for x in range(cols, len(text), cols):
                    pieces.append(text[x : x + cols])
                    wrapped.append(True)
            texts, start, stop = pieces, 0, len(pieces)
        k = stop - start
        history = 0 if self.alternate else self.history_size
        # Rows that would scroll out of the screen and the history within this
        # very call are never seen: they are not built.
        skip = max(0, k - history - lines)
        rows = [buffer[y] for y in range(lines - 1)]
        first = buffer[lines - 1]  # drawn into in place, as draw() would
        first.update(enumerate(map(glyph, texts[start])))
        rows.append(first)
        append = rows.append
        new = _new_row
        fill = _dict_update  # a _TextLine's own update() would drop the text
        pushed = k - skip
        # texts[i] for i < lazy go into the history (rows[:pushed]): built without cells.
        lazy = start + 1 + skip + pushed - lines
        for i in range(start + 1 + skip, stop):
            text = texts[i]
            lazy_row = i < lazy and text != ""
            line = new(_LazyLine if lazy_row else _TextLine)  # (no Python-level __init__)
            if default is not BLANK:
                line.default = default
            if not lazy_row:
                fill(line, enumerate(map(glyph, text)))
            line.text = text
            if text:
                line.runs = (len(text), _FROM_0, (glyph(text[0]),))  # (one pen)
            if wrapped is not None and wrapped[i]:
                line.wrapped = True
            append(line)
        append(Line(default))
        if not self.alternate:
            self.scrolled_off += k
        if history:
            self.scrollback.extend(rows[:pushed])
            self._unrendered += k
        buffer.update(zip(range(lines), rows[pushed:], strict=True))
