"""Copy mode: scroll, search and select a pane's history, as tmux's vi copy mode.

A pure state machine over one pane's ``phux.engine.Terminal`` mirror: it
reads the engine (its history and screen) and never writes anywhere. The
caller keeps feeding the engine live output; the view stays on the rows the
person scrolled to, because positions are absolute row numbers
(``Terminal.scrolled_off`` plus a row's index), which do not move when
output scrolls.

API (stable names)::

    cm = CopyMode(term, width, height, clipboard=allow, exit_at_bottom=False)
    result = cm.feed(key_bytes)     # keys (and the person's mouse reports)
    result.done                     # q / Enter (copied) / C-c: leave copy mode
    result.copied                   # the selected text Enter copied, or None
    result.clipboard                # OSC 52 bytes for the person's terminal
                                    # (b"" unless ``clipboard``)
    cm.wheel(up=True)               # a wheel notch (WHEEL_LINES rows)
    cm.resize(width, height)        # the viewport's size changed
    (``phux.tui.copy_reflow``: the view kept on its text when the engine reflows)
    cm.view()                       # View: what to draw (rows, selection, match,
                                    # cursor, indicator "[12/340]", message)
    cm.paint(left=0, top=0)         # that View as VT text at (left, top), 0-based,
                                    # width x height cells, no erase beyond them;
                                    # message=False: the prompt/notice not drawn on
                                    # the bottom row (a status line shows View.message)
    cm.position                     # (offset, history): the indicator's numbers

``exit_at_bottom`` (entered with the wheel, as tmux's ``copy-mode -e``):
scrolling back down to the live screen leaves copy mode.

Keys (tmux's vi copy mode): arrows or h j k l move the cursor (scrolling at
the edges); C-y / C-e scroll a row; PageUp / PageDown, C-b / C-f a page;
C-u / C-d half a page; g the oldest row, G the newest; 0 ^ $ the row's start,
first character, end; w b e the next word, the word's start, its end; H M L
the view's top, middle, bottom; / and ? search
down and up (as you type: Enter runs it, Escape cancels, wrapping around;
lowercase text matches any case), n and N repeat it the same and the other
way; Space starts a selection, Escape clears it, Enter (or y) copies it and
leaves; q or C-c leave. A bracketed paste is not keys (it may fill a search
being typed); mouse reports other than the wheel are ignored.

Copying reaches the person's clipboard only with ``clipboard`` (attach's
``--allow-clipboard``, the same switch that lets the program's own OSC 52
writes through); without it the indicator says the clipboard is off and
Enter keeps copy mode open with a message saying how to turn it on.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from phux.tui.paint import sgr

if TYPE_CHECKING:
    from phux.engine import Terminal

__all__ = ["WHEEL_LINES", "CopyMode", "Result", "View", "osc52"]

WHEEL_LINES = 5
"""Rows one wheel notch scrolls (tmux's default binding scrolls 5)."""

MAX_CLIPBOARD = 74_994
"""Bytes of text one OSC 52 write carries at most (base64 ~100 KB, as tmux caps
``set-clipboard`` writes; terminals drop longer ones)."""

CLIPBOARD_OFF = "clipboard off: attach with --allow-clipboard to copy"


def osc52(text: str) -> bytes:
    """The OSC 52 write that puts ``text`` on the person's clipboard (cut to
    MAX_CLIPBOARD bytes of UTF-8, at a character's start)."""
    data = text.encode("utf-8")
    if len(data) > MAX_CLIPBOARD:
        data = data[:MAX_CLIPBOARD].decode("utf-8", "ignore").encode("utf-8")
    return b"\x1b]52;c;" + base64.b64encode(data) + b"\x07"


@dataclass(frozen=True)
class Result:
    """What one ``feed`` did: leave copy mode? copied text, and the OSC 52 bytes."""

    done: bool = False
    copied: str | None = None
    clipboard: bytes = b""


@dataclass(frozen=True)
class View:
    """What the viewport shows.

    ``rows``: the engine rows (``phux.engine`` Lines, None where there is no
    row), top to bottom, ``height`` of them; ``top``: the absolute row number of
    the first; ``selected`` and ``match``: per row, the selected / current
    search match columns ``(start, end)`` (end exclusive) or None; ``cursor``:
    (x, y) in the viewport; ``indicator``: ``[offset/history]`` and, when
    copying cannot reach the clipboard, a word saying so; ``message``: a
    search prompt or a notice ("" for none), drawn on the bottom row.
    """

    top: int
    rows: tuple[Any, ...]
    selected: tuple[tuple[int, int] | None, ...]
    match: tuple[tuple[int, int] | None, ...]
    cursor: tuple[int, int]
    indicator: str
    message: str


# Styles, as tmux's defaults: mode-style (selection, indicator, prompt) black on
# yellow, copy-mode-current-match-style black on magenta.
def _style(fg: int, bg: int) -> dict[str, Any]:
    return {"fg": "x", "bg": "x", "fg_index": fg, "bg_index": bg, "reverse": False}


_SELECTED = _MODE = _style(0, 3)
_MATCH = _style(0, 5)

_PAGE_UP = ("\x1b[5~", "\x02")
_PAGE_DOWN = ("\x1b[6~", "\x06")
_UP = ("\x1b[A", "\x1bOA", "k")
_DOWN = ("\x1b[B", "\x1bOB", "j")
_LEFT = ("\x1b[D", "\x1bOD", "h")
_RIGHT = ("\x1b[C", "\x1bOC", "l")
_HOME = ("\x1b[H", "\x1bOH", "\x1b[1~", "0")
_END = ("\x1b[F", "\x1bOF", "\x1b[4~", "$")


def _tokens(text: str) -> list[str]:
    """Split typed text into keys: escape sequences (CSI, SS3, X10 mouse) whole,
    a lone ESC (at the end, or before another ESC) as Escape, other characters
    one by one."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\x1b" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "O" and i + 2 < n:
            out.append(text[i : i + 3])
            i += 3
        elif nxt == "[":
            if text.startswith("\x1b[M", i) and i + 6 <= n:  # X10 mouse: 3 raw bytes
                out.append(text[i : i + 6])
                i += 6
                continue
            j = i + 2
            while j < n and not ("\x40" <= text[j] <= "\x7e"):
                j += 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append("\x1b")
            i += 1
    return out


def _wheel(key: str) -> int:
    """-1 wheel up, 1 wheel down, 0 not a wheel report (SGR or X10 encoding)."""
    if key.startswith("\x1b[<") and key[-1:] in ("M", "m"):
        button = key[3:].split(";", 1)[0]
        if button.isdigit():
            b = int(button) & ~(4 | 8 | 16)  # without shift/meta/ctrl
            return {64: -1, 65: 1}.get(b, 0) if key[-1] == "M" else 0
        return 0
    if key.startswith("\x1b[M") and len(key) == 6:
        b = (ord(key[3]) - 32) & ~(4 | 8 | 16)
        return {64: -1, 65: 1}.get(b, 0)
    return 0


def _columns(line: Any, cols: int, default: Any) -> tuple[str, list[int]]:
    """A row's text (wide characters' stubs contribute nothing, combining marks
    stay with their base) and the column of each of its characters."""
    text: list[str] = []
    where: list[int] = []
    get = line.get if line is not None else None
    for x in range(cols):
        data = get(x, default).data if get is not None else " "
        for ch in data:
            text.append(ch)
            where.append(x)
    return "".join(text), where


@dataclass
class _Search:
    text: str = ""
    down: bool = True


@dataclass
class CopyMode:
    """See the module docstring. ``term``: the pane's engine (fed by the caller);
    ``width`` x ``height``: the viewport (the pane's region on the person's screen)."""

    term: Terminal
    width: int
    height: int
    clipboard: bool = False
    exit_at_bottom: bool = False
    top: int = field(init=False)
    cy: int = field(init=False)
    cx: int = field(init=False)
    anchor: tuple[int, int] | None = field(init=False, default=None)
    prompt: _Search | None = field(init=False, default=None)
    search: _Search | None = field(init=False, default=None)
    found: tuple[int, int, int] | None = field(init=False, default=None)
    message: str = field(init=False, default="")
    pasting: bool = field(init=False, default=False)  # inside a bracketed paste
    _sgr: dict[tuple[Any, ...], str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.width, self.height = max(1, self.width), max(1, self.height)
        self.top = self._bottom_top()
        cursor = self.term.screen.cursor
        self.cy = self._screen_top() + min(cursor.y, self.term.rows - 1)
        self.cx = min(cursor.x, self.term.cols - 1)
        self._clamp()

    # ------------------------------------------------------------ rows

    def _screen(self) -> Any:
        return self.term.screen

    def _history(self) -> Any:
        screen = self._screen()
        return () if screen.alternate else screen.scrollback

    def _screen_top(self) -> int:
        """The absolute number of the screen's first row."""
        return int(self._screen().scrolled_off)

    def _first(self) -> int:
        """The absolute number of the oldest row still held."""
        return self._screen_top() - len(self._history())

    def _last(self) -> int:
        return self._screen_top() + self.term.rows - 1

    def _bottom_top(self) -> int:
        return max(self._first(), self._last() - self.height + 1)

    def _line(self, row: int) -> Any:
        """The engine row at absolute ``row`` (None: gone, or not there)."""
        screen = self._screen()
        top = self._screen_top()
        if row >= top:
            return screen.buffer.get(row - top) if row - top < self.term.rows else None
        history = self._history()
        index = row - (top - len(history))
        return history[index] if 0 <= index < len(history) else None

    def _text(self, row: int, history: list[str] | None = None) -> tuple[str, Sequence[int]]:
        """Row ``row``'s text and each character's column. ``history``: the engine's
        rendered history rows (``history_rows()``, cached there), for a search
        not to read every row cell by cell: ASCII text is its columns."""
        cols = self.term.cols
        if history is not None:
            index = row - self._first()
            if 0 <= index < len(history) and history[index].isascii():
                text = history[index][:cols]
                return text, range(len(text))
        return _columns(self._line(row), cols, self._screen().default_char)

    def _clamp(self) -> None:
        first, last = self._first(), self._last()
        self.top = max(first, min(self.top, self._bottom_top()))
        self.cy = max(first, min(self.cy, last))
        self.cx = max(0, min(self.cx, self.term.cols - 1))
        if self.cy < self.top:
            self.top = self.cy
        elif self.cy >= self.top + self.height:
            self.top = self.cy - self.height + 1
        if self.anchor is not None and self.anchor[0] < first:
            self.anchor = (first, 0)

    @property
    def position(self) -> tuple[int, int]:
        """(rows the view's top is above the bottom view, rows of history), as tmux's
        ``[offset/size]``."""
        self._clamp()
        return self._bottom_top() - self.top, len(self._history())

    @property
    def at_bottom(self) -> bool:
        return self.position[0] == 0

    # ------------------------------------------------------------ moving

    def _scroll(self, rows: int) -> None:
        """Move the view by ``rows`` (negative: up, into history); the cursor stays on
        its viewport row."""
        self._clamp()
        old = self.top
        self.top = max(self._first(), min(self.top + rows, self._bottom_top()))
        self.cy += self.top - old
        self._clamp()

    def _move(self, rows: int) -> None:
        self.cy += rows
        self._clamp()

    def wheel(self, up: bool, lines: int = WHEEL_LINES) -> Result:
        """A wheel notch: scroll the view (and leave at the bottom if ``exit_at_bottom``)."""
        self._scroll(-lines if up else lines)
        if not up and self.exit_at_bottom and self.at_bottom:
            return Result(done=True)
        return Result()

    def resize(self, width: int, height: int) -> None:
        self.width, self.height = max(1, width), max(1, height)
        self._clamp()

    # ------------------------------------------------------------ keys

    def feed(self, data: bytes) -> Result:
        """Act on the person's keys (any chunking of whole keys; mouse reports too)."""
        copied: str | None = None
        clip = b""
        for key in _tokens(data.decode("utf-8", "replace")):
            if key in ("\x1b[200~", "\x1b[201~"):
                self.pasting = key == "\x1b[200~"
                continue
            if self.pasting:
                # Pasted text is not keys ('q' would leave): it may only fill a
                # search being typed.
                if self.prompt is not None and len(key) == 1 and key.isprintable():
                    self.prompt.text += key
                continue
            if self.prompt is not None:
                self._prompt_key(key)
                continue
            wheel = _wheel(key)
            if wheel:
                if self.wheel(up=wheel < 0).done:
                    return Result(done=True)
                continue
            if key.startswith("\x1b[<") or key.startswith("\x1b[M"):
                continue  # clicks and drags: not copy mode's
            step = self._key(key)
            if step is None:
                continue
            if step.copied is not None:
                copied, clip = step.copied, step.clipboard
            if step.done:
                return Result(done=True, copied=copied, clipboard=clip)
        return Result(copied=copied, clipboard=clip)

    def _key(self, key: str) -> Result | None:
        self.message = ""
        half = max(1, self.height // 2)
        if key in ("q", "\x03"):
            return Result(done=True)
        if key in _UP:
            self._move(-1)
        elif key in _DOWN:
            self._move(1)
        elif key in _LEFT:
            self.cx = max(0, self.cx - 1)
        elif key in _RIGHT:
            self.cx = min(self.term.cols - 1, self.cx + 1)
        elif key in _PAGE_UP:
            self._scroll(-self.height)
        elif key in _PAGE_DOWN:
            self._scroll(self.height)
            if self.exit_at_bottom and self.at_bottom:
                return Result(done=True)
        elif key == "\x15":  # C-u
            self._scroll(-half)
        elif key == "\x04":  # C-d
            self._scroll(half)
        elif key == "\x19":  # C-y
            self._scroll(-1)
        elif key == "\x05":  # C-e
            self._scroll(1)
        elif key == "g":
            self.top = self.cy = self._first()
            self.cx = 0
        elif key == "G":
            self.top = self._bottom_top()
            self.cy, self.cx = self._last(), 0
        elif key in _HOME:
            self.cx = 0
        elif key in _END:
            text, where = self._text(self.cy)
            stripped = len(text.rstrip(" "))
            self.cx = where[stripped - 1] if stripped else 0
        elif key == "^":
            text, where = self._text(self.cy)
            lead = len(text) - len(text.lstrip(" "))
            self.cx = where[lead] if lead < len(where) else 0
        elif key in ("w", "b", "e"):
            self._word(key)
        elif key in ("H", "M", "L"):
            shown = min(self.height, self._last() - self.top + 1)
            self.cy = self.top + {"H": 0, "M": (shown - 1) // 2, "L": shown - 1}[key]
        elif key in ("/", "?"):
            self.prompt = _Search(down=key == "/")
        elif key in ("n", "N"):
            if self.search is not None:
                down = self.search.down if key == "n" else not self.search.down
                self._find(self.search.text, down)
        elif key == " ":
            self.anchor = (self.cy, self.cx)
            if not self.clipboard:
                self.message = CLIPBOARD_OFF
        elif key == "\x1b":
            self.anchor = None
        elif key in ("\r", "\n", "y"):
            return self._copy()
        else:
            return None
        self._clamp()
        return Result()

    def _prompt_key(self, key: str) -> None:
        prompt = self.prompt
        assert prompt is not None
        if key in ("\r", "\n"):
            self.prompt = None
            if prompt.text:
                self.search = prompt
                self._find(prompt.text, prompt.down)
            elif self.search is not None:  # empty: repeat the last search that way
                self.search = _Search(self.search.text, prompt.down)
                self._find(self.search.text, prompt.down)
        elif key in ("\x1b", "\x03"):
            self.prompt = None
        elif key in ("\x7f", "\x08"):
            prompt.text = prompt.text[:-1]
        elif key == "\x15":
            prompt.text = ""
        elif len(key) == 1 and key.isprintable():
            prompt.text += key

    def _word(self, key: str) -> None:
        """vi's ``w`` (next word's start), ``b`` (this or the previous word's start)
        and ``e`` (this or the next word's end), across rows: a word is a run of
        letters, digits and ``_``, or a run of other non-blank characters."""
        first, last = self._first(), self._last()
        row = self.cy
        text, where = self._text(row)
        i = next((k for k, x in enumerate(where) if x >= self.cx), len(text) - 1)

        def kind(k: int) -> int:
            ch = text[k] if 0 <= k < len(text) else " "
            return 0 if ch.isspace() else 1 if ch.isalnum() or ch == "_" else 2

        def step(forward: bool) -> bool:
            """Move one character (to the next or previous row at an end): False at
            the first or last row's end."""
            nonlocal row, text, where, i
            i += 1 if forward else -1
            if 0 <= i < len(text):
                return True
            nxt = row + (1 if forward else -1)
            if not first <= nxt <= last:
                i = max(0, min(i, len(text) - 1))
                return False
            row = nxt
            text, where = self._text(row)
            i = 0 if forward else len(text) - 1
            return True

        if key == "w":
            start = kind(i)
            moved = step(True)
            while moved and start and kind(i) == start and i > 0:
                moved = step(True)
            while moved and kind(i) == 0:
                moved = step(True)
        elif key == "b":
            moved = step(False)
            while moved and kind(i) == 0:
                moved = step(False)
            here = kind(i)
            while i > 0 and kind(i - 1) == here and here:
                i -= 1
        else:
            moved = step(True)
            while moved and kind(i) == 0:
                moved = step(True)
            here = kind(i)
            while i + 1 < len(text) and kind(i + 1) == here and here:
                i += 1
        self.cy, self.cx = row, where[i] if where else 0

    # ------------------------------------------------------------ search

    def _find(self, needle: str, down: bool) -> bool:
        """Move the cursor to the next match of ``needle`` from the cursor (wrapping
        around, as tmux's ``wrap-search``); say so when there is none."""
        self._clamp()
        fold = needle == needle.lower()  # lowercase matches any case (smart case)
        if fold:
            needle = needle.lower()
        first, last = self._first(), self._last()
        total = last - first + 1
        start = self.cy
        history = [] if self._screen().alternate else self._screen().history_rows()
        for step in range(total + 1):
            row = first + (start - first + (step if down else -step)) % total
            text, where = self._text(row, history)
            size = len(text)
            if len(needle) > 1 and row < last and getattr(self._line(row + 1), "wrapped", False):
                # A match may run on into the row this one wrapped into.
                text += self._text(row + 1, history)[0][: len(needle) - 1]
            if fold:
                text = text.lower()
            hits = []
            at = text.find(needle)
            while 0 <= at < size:
                hits.append(at)
                at = text.find(needle, at + 1)
            if step == 0:
                # On the cursor's row only matches past (or before) the cursor count
                # (the others are found last, back on this row after wrapping).
                hits = [h for h in hits if (where[h] > self.cx if down else where[h] < self.cx)]
            if hits:
                at = hits[0] if down else hits[-1]
                end = at + len(needle)
                x_end = where[end - 1] + 1 if end - 1 < len(where) else self.term.cols
                self.cy, self.cx = row, where[at]
                self.found = (row, where[at], x_end)
                self.message = ""
                self._centre()
                return True
        self.found = None
        self.message = f"not found: {needle}"
        return False

    def _centre(self) -> None:
        """Bring the cursor's row into view, near the middle if it was off it."""
        if not self.top <= self.cy < self.top + self.height:
            self.top = self.cy - self.height // 2
        self._clamp()

    # ------------------------------------------------------------ selection

    def _span(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        if self.anchor is None:
            return None
        a, b = self.anchor, (self.cy, self.cx)
        return (a, b) if a <= b else (b, a)

    def selected_text(self) -> str:
        """The selection's text: rows joined by newlines (soft-wrapped rows joined
        without one), each right-trimmed, the cursor's cell included (as tmux)."""
        self._clamp()  # (rows that left the history since)
        span = self._span()
        if span is None:
            return ""
        (r0, c0), (r1, c1) = span
        parts: list[str] = []
        for row in range(r0, r1 + 1):
            text, where = self._text(row)
            lo = c0 if row == r0 else 0
            hi = c1 if row == r1 else self.term.cols - 1
            piece = "".join(ch for ch, x in zip(text, where, strict=True) if lo <= x <= hi)
            line = self._line(row + 1) if row < r1 else None
            joined = line is not None and bool(getattr(line, "wrapped", False))
            parts.append(piece if joined else piece.rstrip(" ") + ("\n" if row < r1 else ""))
        return "".join(parts)

    def _copy(self) -> Result:
        if self.anchor is None:
            return Result()
        text = self.selected_text()
        if not self.clipboard:
            self.anchor = None
            self.message = CLIPBOARD_OFF
            return Result(copied=text)
        return Result(done=True, copied=text, clipboard=osc52(text))

    # ------------------------------------------------------------ drawing

    def view(self) -> View:
        self._clamp()
        span = self._span()
        rows: list[Any] = []
        selected: list[tuple[int, int] | None] = []
        match: list[tuple[int, int] | None] = []
        cols = self.term.cols
        for y in range(self.height):
            row = self.top + y
            rows.append(self._line(row) if row <= self._last() else None)
            sel: tuple[int, int] | None = None
            if span is not None and span[0][0] <= row <= span[1][0]:
                (r0, c0), (r1, c1) = span
                sel = (c0 if row == r0 else 0, c1 + 1 if row == r1 else cols)
            selected.append(sel)
            found = self.found
            match.append((found[1], found[2]) if found and found[0] == row else None)
        offset, size = self.position
        indicator = f"[{offset}/{size}]"
        if not self.clipboard and len(indicator) + 16 <= self.width:  # (the position first)
            indicator = "(clipboard off) " + indicator
        if self.prompt is not None:
            message = ("Search Down: " if self.prompt.down else "Search Up: ") + self.prompt.text
        else:
            message = self.message
        return View(
            top=self.top,
            rows=tuple(rows),
            selected=tuple(selected),
            match=tuple(match),
            cursor=(min(self.cx, self.width - 1), self.cy - self.top),
            indicator=indicator,
            message=message,
        )

    def _sgr_of(self, cell: Any) -> str:
        key = tuple(cell[1:])
        hit = self._sgr.get(key)
        if hit is None:
            if len(self._sgr) > 1024:
                self._sgr.clear()
            hit = self._sgr[key] = sgr(cell)
        return hit

    def paint(self, left: int = 0, top: int = 0, *, message: bool = True) -> str:
        """The view as VT text drawn at (``left``, ``top``) (0-based) over exactly
        ``width`` x ``height`` cells; ends with the cursor on the copy cursor (on
        the search prompt's end while one is typed and drawn). ``message``: draw
        ``View.message`` over the bottom row (False: the caller shows it)."""
        view = self.view()
        if not message:
            view = replace(view, message="")
        screen = self._screen()
        default = screen.default_char
        width = self.width
        out = ["\x1b[?2026h\x1b[r\x1b[?6l\x1b[?7l\x1b[4l\x1b(B\x0f\x1b[?25l"]
        for y, line in enumerate(view.rows):
            out.append(f"\x1b[{top + y + 1};{left + 1}H")
            cells: list[tuple[Any, int]] = []  # (cell, columns it takes)
            sel, hit = view.selected[y], view.match[y]
            for x in range(width):
                cell = line.get(x, default) if line is not None else default
                if cell.data == "":
                    continue  # right half of a wide glyph, drawn with its left
                wide = line is not None and line.get(x + 1, default).data == ""
                if wide and x == width - 1:
                    cell, wide = cell._replace(data=" "), False  # cut by the edge
                if hit is not None and hit[0] <= x < hit[1]:
                    cell = cell._replace(**_MATCH)
                elif sel is not None and sel[0] <= x < sel[1]:
                    cell = cell._replace(**_SELECTED)
                cells.append((cell, 2 if wide else 1))
            if y == 0:
                cells = _overlay(cells, view.indicator, width, default, right=True)
            if y == self.height - 1 and view.message:
                cells = _overlay(cells, view.message, width, default, right=False)
            current = ""
            for cell, _ in cells:
                style = self._sgr_of(cell)
                if style != current:
                    out.append(style)
                    current = style
                out.append(cell.data)
        cx, cy = view.cursor
        if message and view.message and self.prompt is not None:
            cx, cy = min(len(view.message), width - 1), self.height - 1
        out.append(f"\x1b[0m\x1b[{top + cy + 1};{left + cx + 1}H\x1b[?7h\x1b[?25h\x1b[?2026l")
        return "".join(out)


def _overlay(
    cells: list[tuple[Any, int]], text: str, width: int, blank: Any, *, right: bool
) -> list[tuple[Any, int]]:
    """``cells`` (with the columns each takes) with ``text`` drawn in the mode style
    over the row's right end (``right``), or over the whole row from its start."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text)[:width]
    blank = blank._replace(data=" ", reverse=False)
    mark = [(blank._replace(data=ch, **_MODE), 1) for ch in text]
    if not right:
        return mark + [(blank, 1)] * (width - len(mark))
    keep: list[tuple[Any, int]] = []
    used = 0
    limit = width - len(mark)
    for cell, w in cells:
        if used + w > limit:
            break
        keep.append((cell, w))
        used += w
    return keep + [(blank, 1)] * (limit - used) + mark
