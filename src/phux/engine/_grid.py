"""The screen's state and grid: what ``EngineScreen`` holds (see ``_screen``), how
rows are made, reset and rendered, and the scrolling primitives every other part uses."""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Callable

from phux.engine._cells import (
    _DEFAULTS,
    _GLYPH_CACHE_LIMIT,
    BLANK,
    BLANK_REVERSE,
    SEM_OUTPUT,
    Cell,
    Line,
    _attrs,
    _Glyphs,
    _new_glyphs,
    _new_row,
    _render_line,
    _set_attrs,
)
from phux.engine._frame import Frame
from phux.engine._pyte import Savepoint, pyte
from phux.engine._pyte import modes as mo
from phux.engine._sgr import SgrPlan
from phux.engine._shell import ShellState
from phux.engine._widths import char_width
from phux.engine.events import EngineEvent

_IRM = mo.IRM
_DECSCNM = mo.DECSCNM

_MAX_PENDING = 4096

_SGR_CACHE_LIMIT = 8192


class GridScreen(pyte.Screen):
    """The state of an ``EngineScreen`` and its row and scrolling primitives."""

    def __init__(self, columns: int, lines: int, history: int = 10_000) -> None:
        self.history_size = max(0, history)
        self.scrollback: deque[Line] = deque(maxlen=self.history_size)
        # Rendered (untrimmed, trimmed) text of scrollback rows; the newest
        # ``_unrendered`` rows are not in it yet (rendering is deferred to projection).
        self._scrollback_text: deque[tuple[str, str]] = deque(maxlen=self.history_size)
        self._unrendered = 0
        # Rows that have left the top of the main screen (full-screen scrolls and
        # shrinking resizes), whether kept in history, dropped past its limit, or
        # never drawn at all (the bulk path): the absolute number of the viewport's
        # first row. It goes back only when a taller screen takes history rows back
        # (``_pull_history``: each row keeps its number); a reflow never reuses a
        # number for another row (``_reflow``).
        self.scrolled_off = 0
        self.alternate = False
        self.main_buffer: defaultdict[int, Line] | None = None
        self.saved_cursors: dict[bool, Savepoint] = {}
        # Bounded, so a replica nobody drains cannot grow without limit.
        self.replies: deque[str] = deque(maxlen=_MAX_PENDING)
        self.events: deque[EngineEvent] = deque(maxlen=_MAX_PENDING)
        self.bell_count = 0
        self.cwd: str | None = None
        self.hyperlink: str | None = None  # the URI of the open OSC 8 link
        self.link = ""  # the open OSC 8 link as it came (``params;uri``), as cells hold it
        self.links_seen = False  # (until a link opens, projections look for none)
        self.app_keypad = False
        self.semantic = SEM_OUTPUT
        self.last_char = ""
        self._glyph_attrs: Cell | None = None
        self._glyphs: _Glyphs = _Glyphs(BLANK)
        self._glyph_cache: dict[Cell, _Glyphs] = {}
        self._sgr_cache: dict[tuple[Cell, str], Cell] = {}
        self._sgr_plans: dict[str, SgrPlan] = {}
        self._sgr_once: set[str] = set()
        self._one_off: Cell | None = None  # the attributes of the last new SGR string
        # {(start, end, cell): {x: cell for x in range(start, end)}}, for EL.
        self._fills: dict[tuple[int, int, Cell], dict[int, Cell]] = {}
        self.shell = ShellState(self)
        # An open synchronized-output frame (DEC mode 2026, ``_frame``) and the clock
        # that times it (monotonic seconds; tests set their own).
        self.frame: Frame | None = None
        # DECSCUSR's Ps: 0 the default, 1/2 block, 3/4 underline, 5/6 bar (odd: blinking).
        self.cursor_style = 0
        # The kitty keyboard protocol's flags, a stack per screen (``_modes``).
        self.kitty_stacks: dict[bool, list[int]] = {False: [], True: []}
        self.frame_clock: Callable[[], float] = time.monotonic
        super().__init__(columns, lines)
        self.buffer: defaultdict[int, Line] = self._new_buffer()  # type: ignore[assignment]

    # -- construction helpers -------------------------------------------------

    def _new_line(self) -> Line:
        line = _new_row(Line)  # Line(self.default_char), without the calls
        if _DECSCNM in self.mode:
            line.default = BLANK_REVERSE
        return line

    def _new_buffer(self) -> defaultdict[int, Line]:
        return defaultdict(self._new_line)

    @property
    def default_char(self) -> Cell:  # type: ignore[override]
        return BLANK_REVERSE if mo.DECSCNM in self.mode else BLANK

    def _default_attrs(self) -> Cell:
        """The pen SGR 0 leaves: an open OSC 8 link stays open (SGR does not close it)."""
        attrs = _DEFAULTS[(mo.DECSCNM in self.mode, self.semantic)]
        return attrs._replace(link=self.link) if self.link else attrs

    def _erase_cell(self) -> Cell:
        """The cell erasures write: a blank with the current background only (BCE).

        Stock pyte writes the full cursor attributes (bold, underline, marks...)
        and only to cells that already exist; xterm and tmux fill the whole
        range with the background colour and nothing else.
        """
        attrs = _attrs(self.cursor)
        reverse = mo.DECSCNM in self.mode
        if attrs.bg == "default":
            return BLANK_REVERSE if reverse else BLANK
        return Cell(" ", bg=attrs.bg, bg_index=attrs.bg_index, reverse=reverse)

    def reset(self) -> None:
        """RIS. Leaves the alternate screen first; keeps scrollback (as tmux does)."""
        if getattr(self, "alternate", False) and self.main_buffer is not None:
            self.buffer = self.main_buffer
            self.main_buffer = None
            self.alternate = False
        title, icon_name = getattr(self, "title", ""), getattr(self, "icon_name", "")
        if self.shell.commands:
            self.shell.erase(self.scrolled_off, 0)  # (RIS erases the screen)
        super().reset()
        # Like xterm, RIS keeps the window title (stock pyte clears it).
        self.title, self.icon_name = title, icon_name
        _set_attrs(self.cursor, BLANK)
        self.saved_cursors = {}
        self.app_keypad = False
        self.semantic = SEM_OUTPUT
        self.hyperlink = None
        self.link = ""
        self.frame = None
        self.cursor_style = 0
        self.kitty_stacks = {False: [], True: []}

    @property
    def display(self) -> list[str]:
        """Viewport rows as text (stock ``display`` can raise IndexError on stubs)."""
        return [self.row_text(y) for y in range(self.lines)]

    def row_text(self, y: int) -> str:
        """Row ``y`` of the viewport, untrimmed (wide-character stubs contribute nothing)."""
        line = self.buffer.get(y)
        if not line:
            return " " * self.columns
        return _render_line(line, self.columns, clip=True)

    def _select_glyphs(self, attrs: Cell) -> _Glyphs:
        # Attributes from an SGR string never seen before (a random colour) are
        # neither looked up nor kept: their cells then die when overwritten
        # instead of piling up in the cache for the garbage collector to scan.
        glyphs = None if attrs is self._one_off else self._glyph_cache.get(attrs)
        if glyphs is None:
            glyphs = _new_glyphs(_Glyphs)  # _Glyphs(attrs), without the calls
            glyphs.tail = attrs[1:]
            if attrs is not self._one_off:
                if len(self._glyph_cache) >= _GLYPH_CACHE_LIMIT:
                    self._glyph_cache.clear()
                self._glyph_cache[attrs] = glyphs
        self._glyph_attrs = attrs
        self._glyphs = glyphs
        return glyphs

    # -- scrolling ----------------------------------------------------------------

    def _full_screen_region(self, top: int, bottom: int) -> bool:
        return top == 0 and bottom == self.lines - 1 and not self.alternate

    def _push_history(self, line: Line) -> None:
        self.scrolled_off += 1
        if self.history_size:
            self.scrollback.append(line)
            self._unrendered += 1

    def _scroll_up(self, top: int, bottom: int) -> None:
        buffer = self.buffer
        if top == 0 and bottom == self.lines - 1 and not self.alternate:
            self.scrolled_off += 1
            if self.history_size:
                self.scrollback.append(buffer[0])
                self._unrendered += 1
        if bottom > top:
            rows = range(top + 1, bottom + 1)
            buffer.update(zip(range(top, bottom), map(buffer.__getitem__, rows), strict=True))
        buffer[bottom] = self._new_line()

    def _scroll_down(self, top: int, bottom: int) -> None:
        buffer = self.buffer
        for y in range(bottom, top, -1):
            line = buffer.get(y - 1)
            if line is None:
                buffer.pop(y, None)
            else:
                buffer[y] = line
        buffer.pop(top, None)

    def _region(self) -> tuple[int, int]:
        margins = self.margins
        if margins is None:
            return 0, self.lines - 1
        return margins.top, margins.bottom

    def set_semantic(self, semantic: int) -> None:
        self.semantic = semantic
        attrs = _attrs(self.cursor)
        if attrs.semantic != semantic:
            _set_attrs(self.cursor, attrs._replace(semantic=semantic))

    def _split_wide(self, line: Line, start: int, end: int) -> None:
        """Blank the other half of any wide character cut by overwriting ``[start, end)``."""
        left = line.get(start)
        if left is not None and left.data == "" and start > 0:
            prev = line.get(start - 1)
            if prev is not None and prev.data and char_width(prev.data[0]) == 2:
                line[start - 1] = prev._replace(data=" ")
        right = line.get(end)
        if right is not None and right.data == "":
            last = line.get(end - 1)
            if last is not None and last.data and char_width(last.data[0]) == 2:
                line[end] = right._replace(data=" ")

    def clear_history(self) -> None:
        """Drop all scrollback rows (and their rendered text)."""
        self.scrollback.clear()
        self._scrollback_text.clear()
        self._unrendered = 0
