"""Paint a ``phux.engine.Terminal``'s state onto a real terminal as VT bytes.

Used by ``phux attach`` instead of replaying the raw bootstrap: the journal
may start mid-state, hold queries and be megabytes long, while a paint is one
screenful. A *full paint* recreates what the user's terminal must show to
stay in step with the program from then on:

1. leave the alternate screen if the user's terminal is in it, reset margins,
   clear, and draw the main screen's rows with their SGR attributes (underline
   style and colour included) and OSC 8 links (those the raw stream would pass,
   ``phux.tui.queries.safe_link``);
2. if the program is in the alternate screen: put the cursor where the main
   screen's saved cursor is, enter the alternate screen (``?1049h`` saves that
   cursor, so leaving it later restores the main screen exactly as the
   program will expect), and draw the alternate rows;
3. restore margins, origin mode, the cursor (position, pending wrap,
   attributes, visibility), the character sets and the private modes that
   change what the keyboard sends or what the terminal reports (application
   cursor keys and keypad, bracketed paste, mouse modes, focus events),
   autowrap/insert/reverse-screen, the cursor's shape (DECSCUSR) and the window
   title. While the program's synchronized-output frame (2026) holds the
   screen, the paint ends inside a frame too: it is the live state the
   program's next bytes build on, and the person's terminal holds it until
   the program ends its frame.

The first full paint of an attach can also scroll the engine's history into
the user's terminal's own scrollback (``history``). ``leave`` undoes what the
program may have set, with the cursor saved around the margin reset, and pops
the window title attach pushed (``PUSH_TITLE``) when it started.

A *view paint* (used when the terminal's size is not the window's: another
human is primary) draws only the active screen, clipped or padded to the
window, without touching the alternate screen; during a 2026 frame, the
screen from before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from phux.engine._cells import UL_RGB, UL_SINGLE

# Through the engine, which imports pyte without wcwidth (see phux.engine._pyte).
from phux.engine._pyte import charsets as cs
from phux.engine._pyte import modes as mo
from phux.tui.queries import safe_link

if TYPE_CHECKING:
    from phux.engine import Terminal

CSI = "\x1b["

# Private modes restored after a paint (pyte stores private mode m as m << 5).
_KEY_MODES = (1, 9, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1015, 2004)

# What attach resets when it leaves, whatever the program had set.
RESTORE = (
    "\x1b[?2026l"  # end a synchronized update, if one was open
    "\x1b[r"  # margins (homes the cursor)
    "\x1b[?6l"  # origin mode
    "\x1b[0m"
    "\x1b[?25h"
    "\x1b[?7h"
    "\x1b[4l"
    "\x1b[?5l"
    "\x1b[?1l\x1b>"
    "\x1b[?2004l"
    "\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?9l"
    "\x1b[?1004l\x1b[?1005l\x1b[?1006l\x1b[?1015l"
    "\x1b(B\x0f"
    "\x1b[0 q"  # the cursor's shape (DECSCUSR): the terminal's default
)


PUSH_TITLE = "\x1b[22;0t"
"""Save the window title (XTWINOPS; ignored where unsupported); POP_TITLE restores it."""
POP_TITLE = "\x1b[23;0t"


def _colour(name: str, index: int, base: int) -> str:
    """SGR parameters for a colour; ``base`` is 30 (fg) or 40 (bg)."""
    if index >= 0:
        if index < 8:
            return str(base + index)
        if index < 16:
            return str(base + 60 + index - 8)
        return f"{base + 8};5;{index}"
    if len(name) == 6 and name != "silver":
        try:
            r, g, b = int(name[0:2], 16), int(name[2:4], 16), int(name[4:6], 16)
        except ValueError:
            return ""
        return f"{base + 8};2;{r};{g};{b}"
    return ""


def sgr(cell: Any) -> str:
    """The SGR sequence that sets exactly ``cell``'s attributes (from a reset),
    underline style (``4:3`` curly ...) and colour (SGR 58) included."""
    params = ["0"]
    if cell.bold:
        params.append("1")
    if cell.faint:
        params.append("2")
    if cell.italics:
        params.append("3")
    if cell.underscore:
        params.append("4")
    if cell.blink:
        params.append("5")
    if cell.reverse:
        params.append("7")
    if cell.invisible:
        params.append("8")
    if cell.strikethrough:
        params.append("9")
    if cell.overline:
        params.append("53")
    if cell.underscore and cell.ul_style != UL_SINGLE:
        params[params.index("4")] = f"4:{cell.ul_style}"  # double, curly, dotted, dashed
    ul_color = cell.ul_color  # SGR 58: -1 the text's colour
    if ul_color >= UL_RGB:
        params.append(f"58:2::{ul_color >> 16 & 255}:{ul_color >> 8 & 255}:{ul_color & 255}")
    elif ul_color >= 0:
        params.append(f"58:5:{ul_color}")
    fg = _colour(cell.fg, cell.fg_index, 30)
    if fg:
        params.append(fg)
    bg = _colour(cell.bg, cell.bg_index, 40)
    if bg:
        params.append(bg)
    return CSI + ";".join(params) + "m"


LINK_END = "\x1b]8;;\x1b\\"
"""Ends an OSC 8 hyperlink. A style string that opens one (``Painter.style`` of a
linked cell) ends with ST (``linked``); one that does not, with ``m``."""


def linked(style: str) -> bool:
    """Whether ``style`` (from ``Painter.style``) leaves a hyperlink open."""
    return style.endswith("\x1b\\")


def cursor_shape(screen: Any) -> str:
    """DECSCUSR for ``screen``'s cursor shape (``CSI 0 SP q``: the terminal's default)."""
    return f"{CSI}{screen.cursor_style} q"


class Painter:
    """Turns engine buffers into VT text; caches one style string per style."""

    def __init__(self) -> None:
        self._sgr: dict[tuple[Any, ...], str] = {}

    def _style(self, cell: Any) -> str:
        key = cell[1:17]  # (the pen: colours, flags, underline style and colour, link)
        hit = self._sgr.get(key)
        if hit is None:
            if len(self._sgr) > 4096:
                self._sgr.clear()
            hit = sgr(cell)
            link = cell.link
            if link and safe_link(link):
                # Under the filter the raw stream passes (``phux.tui.queries``).
                hit += f"\x1b]8;{link}\x1b\\"
            self._sgr[key] = hit
        return hit

    def style(self, cell: Any) -> str:
        """The SGR sequence of ``cell``'s attributes, then the OSC 8 that opens its
        hyperlink if it has one (``linked``; cached per style)."""
        return self._style(cell)

    def line(self, line: Any, default: Any, limit: int) -> tuple[str, int]:
        """One row's styled text up to its last non-blank cell (below ``limit``),
        ending with the default style; and that cell's column (-1: blank row)."""
        reset = self._style(default)
        if not line:
            return reset, -1
        # Cells beyond the last styled/non-blank one are drawn by an erase.
        last = -1
        for x in line:
            if x < limit:
                cell = line[x]
                if cell.data != " " or self._style(cell) != reset:
                    last = max(last, x)
        current = reset
        parts = [reset]
        x = 0
        while x <= last:
            cell = line.get(x, default)
            if cell.data == "":  # right half of a wide glyph
                x += 1
                continue
            style = self._style(cell)
            if style != current:
                if linked(current) and not linked(style):
                    parts.append(LINK_END)
                parts.append(style)
                current = style
            parts.append(cell.data)
            x += 1
        if linked(current):
            parts.append(LINK_END)
        if current != reset:
            parts.append(reset)
        return "".join(parts), last

    def rows(
        self,
        buffer: Any,
        default: Any,
        cols: int,
        rows: int,
        *,
        width: int | None = None,
        height: int | None = None,
        top: int = 0,
    ) -> list[str]:
        """Each row as ``CUP`` + styled text + erase-to-end, clipped to width x height;
        ``top`` is the first buffer row shown."""
        width = cols if width is None else width
        height = rows if height is None else height
        limit = min(cols, width)
        out: list[str] = []
        for y in range(min(rows - top, height)):
            text, last = self.line(buffer.get(top + y), default, limit)
            # Erase the rest of the row, unless the row reaches the window's last
            # column: there the cursor stays on that cell (wrap pending) and xterm
            # would erase it.
            erase = f"{CSI}K" if last < width - 1 else ""
            out.append(f"{CSI}{y + 1}H{text}{erase}")
        return out

    def history(self, term: Terminal, limit: int) -> str:
        """The newest ``limit`` scrollback rows, scrolled into the user's terminal's
        own scrollback from its bottom row (then pushed off the screen)."""
        screen: Any = term.screen
        lines = list(screen.scrollback)[-limit:] if limit > 0 else []
        if not lines:
            return ""
        cols, rows = term.cols, term.rows
        default = screen.default_char
        out = [f"{CSI}{rows}H"]
        for line in lines:
            text, last = self.line(line, default, cols)
            out.append("\r\n" + text + (f"{CSI}K" if last < cols - 1 else ""))
        out.append("\r\n" * rows)
        return "".join(out)

    def full(self, term: Terminal, *, user_alt: bool, history: int = 0) -> str:
        """A full paint (see the module docstring). ``user_alt``: the user's terminal
        is in the alternate screen now; ``history``: first put up to that many
        scrollback rows into the user's terminal's scrollback."""
        screen: Any = term.screen
        cols, rows = term.cols, term.rows
        default = screen.default_char
        out = ["\x1b[?2026h"]
        if user_alt:
            out.append("\x1b[?1049l")
        # No clear: every row is rewritten up to an erase-to-end (less flicker).
        out.append("\x1b[r\x1b[?6l\x1b[?7h\x1b[4l\x1b(B\x0f\x1b[0m")
        if history:
            out.append(self.history(term, history))
        if term.alternate and screen.main_buffer is not None:
            out += self.rows(screen.main_buffer, default, cols, rows)
            saved = screen.saved_cursors.get(False)
            if saved is not None:
                cy = min(saved.cursor.y, rows - 1)
                cx = min(saved.cursor.x, cols - 1)
                out.append(f"{CSI}{cy + 1};{cx + 1}H")
            out.append("\x1b[?1049h\x1b[H\x1b[2J")
        out += self.rows(screen.buffer, default, cols, rows)
        out.append(self.cursor_and_modes(term))
        title = term.title
        if title and title.isprintable():
            out.append(f"\x1b]2;{title}\x1b\\")
        if term.frame_deadline is None:
            out.append("\x1b[?2026l")
        # else: the program's synchronized-output frame is open and holds the screen;
        # the paint is the live state the program's next bytes build on, so the
        # person's terminal holds it too, until the program ends the frame.
        return "".join(out)

    def view(self, term: Terminal, width: int, height: int) -> str:
        """The active screen clipped/padded to ``width`` x ``height`` (no alternate switch).

        A window shorter than the terminal shows the rows that hold the cursor. While a
        synchronized-output frame holds the screen, the screen from before it."""
        screen: Any = term.shown
        cols, rows = term.cols, term.rows
        cursor = screen.cursor
        top = max(0, min(cursor.y - height + 1, rows - height))
        out = ["\x1b[?2026h\x1b[r\x1b[?6l\x1b[?7h\x1b[4l\x1b(B\x0f\x1b[0m"]
        out += self.rows(
            screen.buffer, screen.default_char, cols, rows, width=width, height=height, top=top
        )
        if rows < height:
            out.append(f"{CSI}0m{CSI}{rows + 1}H{CSI}J")
        out.append(self.cursor_and_modes(term, margins=False, top=top, screen=screen))
        if min(cursor.x, cols - 1) >= width:
            out.append("\x1b[?25l")
        out.append("\x1b[?2026l")
        return "".join(out)

    def cursor_and_modes(
        self, term: Terminal, *, margins: bool = True, top: int = 0, screen: Any = None
    ) -> str:
        """Margins, the cursor, the modes; ``screen``: the one drawn (default: live)."""
        if screen is None:
            screen = term.screen
        cols, rows = term.cols, term.rows
        mode = screen.mode
        out: list[str] = []
        margin = screen.margins
        origin = mo.DECOM in mode
        if margins and margin is not None and (margin.top, margin.bottom) != (0, rows - 1):
            out.append(f"{CSI}{margin.top + 1};{margin.bottom + 1}r")
            top = margin.top
        if origin and margins:
            out.append(f"{CSI}?6h")
        elif margins:
            top = 0
        cursor = screen.cursor
        cy = min(cursor.y, rows - 1)
        autowrap = mo.DECAWM in mode
        if cursor.x >= cols and autowrap and margins:
            # Pending wrap: redraw the last cell of the row to recreate it.
            line = screen.buffer.get(cy)
            cell = line.get(cols - 1, screen.default_char) if line else screen.default_char
            out.append(f"{CSI}{cy - top + 1};{cols}H")
            if cell.data:
                out.append(self._style(cell) + cell.data)
            else:
                out.append(f"{CSI}{cy - top + 1};{cols}H")
        else:
            out.append(f"{CSI}{cy - top + 1};{min(cursor.x, cols - 1) + 1}H")
        out.append(self._style(cursor.attrs))
        if not autowrap:
            out.append(f"{CSI}?7l")
        if mo.IRM in mode:
            out.append(f"{CSI}4h")
        if mo.DECSCNM in mode:
            out.append(f"{CSI}?5h")
        for m in _KEY_MODES:
            if (m << 5) in mode:
                out.append(f"{CSI}?{m}h")
        out.append("\x1b=" if screen.app_keypad else "\x1b>")
        if screen.g0_charset is not cs.LAT1_MAP:
            out.append("\x1b(0")
        if screen.g1_charset is cs.VT100_MAP:
            out.append("\x1b)0")
        if screen.charset:
            out.append("\x0e")
        out.append(cursor_shape(screen))
        out.append(f"{CSI}?25h" if mo.DECTCEM in mode else f"{CSI}?25l")
        return "".join(out)

    def leave(self, *, user_alt: bool) -> str:
        """Bytes that put the user's terminal back to normal, the cursor on a new
        line below where the program left it (saved around the margin reset)."""
        out = "\x1b[?1049l" if user_alt else ""
        return out + "\x1b7" + RESTORE + "\x1b8\x1b[0m\x1b[?6l\x1b(B\x0f" + POP_TITLE + "\r\n"
