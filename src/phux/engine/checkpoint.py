"""Checkpoints: a terminal's state written as plain VT bytes.

Feeding a checkpoint to a **fresh** engine of the same size (or to a freshly
reset terminal) recreates the state of the engine it was written from: the
scrollback with its styles and soft wraps, the main and alternate screens,
the cursor (position, pending wrap, visibility, attributes), the scroll
region, tab stops, the private modes, the charsets, the saved cursors, the
title, the working directory (OSC 7), the OSC 133 marks of every cell and the
current one, and the shell's commands and prompt cycle (OSC 133 marks with
phux's own ``phux_*`` parameters, see :mod:`phux.engine._shell`). Only
standard sequences are used (CUP, CHA, SGR with 256-colour and truecolor
forms, DECSET/DECRST, DECSTBM, TBC/HTS, SCS, SO/SI, DECSC, OSC 0/1/2/7/8/133),
so any xterm-compatible emulator can replay it.

Byte structure (informative; spec/L1.md describes it for implementers):

1. ``ESC [ 0 m``, ``ESC [ r``, ``ESC [ ? 7 h``, ``ESC [ H``: a known start.
2. OSC 1 (icon name) and OSC 2 (title), OSC 7 (cwd) when set.
3. The main screen's history rows, oldest first, then its viewport rows,
   drawn from the top-left corner: each row is SGR/OSC 133 changes and text
   (CHA skips cells never written); rows are separated by CR LF, so the
   rows above the viewport scroll into the replaying terminal's history;
   a row that soft-wraps into the next one is drawn to the last column
   and the next row's first character wraps it, so logical lines survive.
4. The commands (each a ``C`` mark with ``cmdline_url``, ``phux_t``,
   ``phux_cwd`` (when it changed) and, when finished, a ``D`` mark with the exit status and
   ``phux_t``), then the marks of the open prompt cycle, each placed with
   ``phux_at``; the cells' own marks in 3 and 5 are ``phux_pen`` marks.
5. The main screen's saved cursor (DECSC), then, when the alternate screen
   is active, DECSET 1049/1047/47 and the alternate screen's rows (from its
   top-left corner) and its saved cursor.
6. Tab stops (TBC and HTS) when not every 8 columns, DECSTBM, DECOM, the
   cursor position (a pending wrap is recreated by drawing the last cell
   again), the other modes (DECSET/DECRST/SM), charsets (SCS, SO), keypad
   mode (DECKPAM), the current OSC 133 mark, the current SGR, OSC 8.
6. What the engine was fed but has not acted on yet, as it was fed: an
   escape sequence, a string or a UTF-8 character cut by the end of the last
   chunk. Output goes on from the checkpoint's seq, in the middle of it.

Not carried (documented differences): DECSCNM (reverse screen) is left off;
control characters in the title are dropped;
rows wider than the current width (alternate-screen rows written before a
narrowing: the main screen and its history are reflowed, ``phux.engine._reflow``)
are cut at the current width; the soft-wrap flag of the oldest history row
(and of the viewport's first row when there is no history) is dropped, since
the row it continued is gone; a wide-character stub whose wide character was
lost is drawn as a blank; the bell count and REP's last character are not
state a terminal can be told.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import compress
from operator import itemgetter, ne
from typing import TYPE_CHECKING, cast

from phux.engine._cells import (
    ALT_SCREEN_MODES,
    BLANK,
    SEM_INPUT,
    SEM_OUTPUT,
    SEM_PROMPT,
    SYNCHRONIZED,
    Cell,
    Line,
    Runs,
    _LazyLine,
    _TextLine,
)
from phux.engine._frame import holding
from phux.engine._pyte import Savepoint
from phux.engine._pyte import charsets as cs
from phux.engine._pyte import modes as mo
from phux.engine._screen import EngineScreen
from phux.engine._sgr import sgr
from phux.engine._shell import (
    CONTINUATION,
    NONE,
    PROMPT,
    RUNNING,
    CommandRecord,
    percent_encode,
)
from phux.engine._widths import char_width
from phux.engine.terminal import Terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Checkpointer", "write_checkpoint"]

_DEFAULT_MODE = frozenset({mo.DECAWM, mo.DECTCEM})
_ALT = frozenset(m << 5 for m in ALT_SCREEN_MODES)
_SKIPPED_MODES = _ALT | {mo.DECSCNM, mo.DECOM, mo.DECCOLM}
_SYNCHRONIZED = frozenset({SYNCHRONIZED << 5})
_CHARSET_CODE = {id(v): k for k, v in cs.MAPS.items()}
# The cells' marks are set with "pen" marks, which make no prompt cycle or command
# when replayed (phux.engine._shell); the commands are carried by the marks of
# _write_shell.
_OSC133 = {
    SEM_OUTPUT: "\x1b]133;C;phux_pen=1\x07",
    SEM_PROMPT: "\x1b]133;A;phux_pen=1\x07",
    SEM_INPUT: "\x1b]133;B;phux_pen=1\x07",
}
_BLANK_TAIL = BLANK[1:16]


class _Writer:
    """Accumulates the checkpoint, tracking the pen (SGR and OSC 133 mark) it has set."""

    __slots__ = ("attrs", "link", "out", "semantic")

    def __init__(self) -> None:
        self.out: list[str] = []
        self.attrs: tuple[object, ...] = _BLANK_TAIL
        self.semantic = SEM_OUTPUT
        self.link = ""

    def pen(self, cell: Cell) -> None:
        if cell.semantic != self.semantic:
            self.out.append(_OSC133.get(cell.semantic, _OSC133[SEM_OUTPUT]))
            self.semantic = cell.semantic
        tail = cell[1:16]
        if tail != self.attrs:
            self.out.append(sgr(cell))
            self.attrs = tail
        if cell.link != self.link:
            self.out.append(f"\x1b]8;{plain(cell.link) or ';'}\x07")
            self.link = cell.link

    def cup(self, y: int, x: int) -> None:
        self.out.append(f"\x1b[{y + 1};{x + 1}H")


_DATA = itemgetter(0)
_PEN = itemgetter(slice(1, None))  # a cell's attributes and OSC 133 mark

Body = tuple[str, int, int, int]
"""A row's encoding: text, cursor column after it, OSC 133 mark at its start and end."""


def _is_wide(data: str) -> bool:
    return char_width(data[0]) == 2


def _row_body(line: Line | None, cols: int) -> tuple[str, int, int, int]:
    """One row drawn from column 0, from the default SGR back to it.

    Returns the text, the cursor column after it (``cols``: a pending wrap), and
    the OSC 133 mark the text expects the pen to hold when it starts and leaves it
    holding: the mark is carried from row to row (:func:`_join_rows`), so rows of
    one mark cost no marks of their own (but input: a line feed ends it).
    Never-written cells are skipped with CHA, so they stay unwritten.
    """
    if not line:
        return "", 0, SEM_OUTPUT, SEM_OUTPUT
    w = _Writer()
    out = w.out
    runs = _known_runs(line)
    if runs is not None:  # (a row a flood built: its pens are known)
        start = w.semantic = runs[2][0].semantic
        pos = _write_runs(line.text, runs[1], runs[2], min(runs[0], cols), w)
    else:
        first = next((line[x] for x in sorted(line) if x < cols and line[x].data), None)
        start = w.semantic = first.semantic if first is not None else SEM_OUTPUT
        text = _plain_text(line)
        pos = _runs_body(line, text, cols, w) if text else _cells_body(line, cols, w)
    if w.attrs != _BLANK_TAIL:
        out.append("\x1b[0m")
    if w.link:
        out.append("\x1b]8;;\x07")
    return "".join(out), pos, start, w.semantic


def _known_runs(line: Line) -> Runs | None:
    """The pens of a row a flood path built whole (``Line.runs``), if they still
    cover its text."""
    kind = line.__class__
    if kind is not _TextLine and kind is not _LazyLine:
        return None
    runs = getattr(line, "runs", None)  # (unset: built without them)
    return runs if runs is not None and runs[0] == len(line.text) else None


def _write_runs(text: str, starts: Sequence[int], pens: Sequence[Cell], n: int, w: _Writer) -> int:
    """Append ``text[:n]``, its run from ``starts[i]`` in the pen of ``pens[i]``, to
    ``w``; ``n``, the column after it."""
    out = w.out
    pen = w.pen
    ends = [*starts[1:], n]
    for start, end, cell in zip(starts, ends, pens, strict=True):
        if start >= n:
            break
        pen(cell)
        out.append(text[start : min(end, n)])
    return n


def _runs_body(line: Line, text: str, cols: int, w: _Writer) -> int:
    """:func:`_cells_body` for a row of width-1 characters from column 0 (``text``):
    each run of cells in one pen as one piece of ``text``, the runs found in C
    (coloured output's history, ``ls --color``, logs: a flood's checkpoint
    encodes thousands of such rows). The column after them."""
    n = min(len(text), cols)
    cells = list(map(line.__getitem__, range(n)))
    pens = list(map(_PEN, cells))
    starts = [0, *compress(range(1, n), map(ne, pens[1:], pens))]
    return _write_runs(text, starts, list(map(cells.__getitem__, starts)), n, w)


def _plain_text(line: Line) -> str | None:
    """The text of a row whose cells run from column 0 without gaps and hold one
    width-1 character each (None for any other row)."""
    kind = line.__class__
    if kind is _TextLine or kind is _LazyLine:
        return line.text
    n = len(line)
    keys = list(line)
    if keys[-1] != n - 1 or keys != list(range(n)):
        return None
    text = "".join(map(_DATA, line.values()))
    # (ASCII: no wide characters, no pads or stubs, no combining marks)
    return text if len(text) == n and text.isascii() else None


def _cells_body(line: Line, cols: int, w: _Writer) -> int:
    """Append the row's cells to ``w`` (see :func:`_row_body`); the column after them."""
    out = w.out
    pen = w.pen
    pos = 0
    for x in sorted(line):
        if x >= cols:
            break
        cell = line[x]
        data = cell[0]
        if not data:
            continue  # right half of a wide character (drawn with it), or a pad
        if x != pos:
            out.append(f"\x1b[{x + 1}G")
        pen(cell)
        wide = _is_wide(data)
        if wide and (x == cols - 1 or (right := line.get(x + 1)) is None or right.data):
            # Half a wide character (cut by a narrowing, or its right half lost):
            # drawn as the blank that overwriting either half leaves.
            data, wide = " ", False
        out.append(data)
        pos = min(x + (2 if wide else 1), cols)
    return pos


class Checkpointer:
    """Writes checkpoints of one terminal, remembering how each history row was encoded.

    History rows never change once scrolled off, so a checkpoint after more
    output only encodes the rows that are new since the previous one.
    """

    def __init__(self) -> None:
        self._rows: dict[int, tuple[Line, int, Body]] = {}
        self._commands: dict[int, tuple[CommandRecord, str, str]] = {}

    def _history(self, lines: list[Line], cols: int) -> list[Body]:
        cache = self._rows
        fresh: dict[int, tuple[Line, int, Body]] = {}
        encoded: list[Body] = []
        for line in lines:
            key = id(line)
            hit = cache.get(key)
            if hit is None or hit[0] is not line or hit[1] != cols:
                hit = (line, cols, _row_body(line, cols))
            fresh[key] = hit
            encoded.append(hit[2])
        self._rows = fresh
        return encoded

    def write(self, term: Terminal) -> bytes:
        screen = term.screen
        cols, rows = screen.columns, screen.lines
        out: list[str] = ["\x1b[0m\x1b[r\x1b[?7h\x1b[H"]
        _write_titles(screen, out)
        history = list(screen.scrollback)
        main = screen.main_buffer if screen.alternate and screen.main_buffer is not None else None
        main_buffer = main if main is not None else screen.buffer
        lines: list[Line | None] = [*history, *(main_buffer.get(y) for y in range(rows))]
        bodies = self._history(history, cols)
        bodies.extend(_row_body(line, cols) for line in lines[len(history) :])
        _join_rows(out, lines, bodies, cols)
        self._commands = _write_shell(screen, out, self._commands)
        _write_screens(screen, out, main_buffer)
        return "".join(out).encode("utf-8", "surrogatepass") + term.unparsed()


def write_checkpoint(term: Terminal) -> bytes:
    """A checkpoint of ``term`` (see the module docstring)."""
    return Checkpointer().write(term)


def plain(text: str) -> str:
    """``text`` without C0 and C1 controls: what a checkpoint can carry in an OSC string."""
    return text.translate(_CONTROLS) if _HAS_CONTROL.search(text) else text


_CONTROLS = dict.fromkeys([*range(0x20), *range(0x7F, 0xA0)])
_HAS_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _write_titles(screen: EngineScreen, out: list[str]) -> None:
    if screen.icon_name:
        out.append(f"\x1b]1;{plain(screen.icon_name)}\x07")
    if screen.title:
        out.append(f"\x1b]2;{plain(screen.title)}\x07")
    if screen.cwd is not None:
        # Imported on first use: urllib.parse (with ipaddress) costs an import ~3 ms.
        from urllib.parse import quote

        cwd = screen.cwd
        prefix = "file://" if cwd.startswith("/") else "file:"
        out.append(f"\x1b]7;{prefix}{quote(cwd, safe='/')}\x07")


def _join_rows(out: list[str], lines: list[Line | None], bodies: list[Body], cols: int) -> None:
    """Draw rows from the cursor's row downwards: CR LF between rows, soft wraps kept.

    The first row's own soft-wrap flag cannot be recreated (the row it continued
    is not drawn) and is dropped. The OSC 133 mark is set only where it changes
    from row to row; it is the default (output) again at the end.
    """
    prev: Line | None = None
    prev_end = 0
    mark = SEM_OUTPUT
    for i, (line, (text, end, start, finish)) in enumerate(zip(lines, bodies, strict=True)):
        if i:
            if line is not None and line.wrapped:
                mark = _wrap_into(out, prev_end, cols, prev, line, mark)
            else:
                out.append("\r\n")
                if mark == SEM_INPUT:  # a line feed ends the input (EngineScreen.index)
                    mark = SEM_OUTPUT
        if start != mark:
            out.append(_OSC133[start])
        out.append(text)
        prev, prev_end, mark = line, end, finish
    if mark != SEM_OUTPUT:
        out.append(_OSC133[SEM_OUTPUT])


def _wrap_into(
    out: list[str], prev_end: int, cols: int, prev: Line | None, nxt: Line, mark: int
) -> int:
    """Arrange for the next row to be a soft-wrap continuation of the one just drawn;
    ``mark`` is the OSC 133 mark the pen holds. Returns the one it holds after."""
    first = nxt.get(0)
    if prev_end < cols:
        pad = prev.get(cols - 1) if prev is not None else None
        if prev_end != cols - 1:
            out.append(f"\x1b[{cols}G")
        if (
            pad is not None
            and pad.data == ""
            and first is not None
            and first.data
            and _is_wide(first.data)
        ):
            # The wide character does not fit in the last column: it wraps and
            # leaves a pad there, styled like the cell it replaces.
            if pad[1:] != BLANK[1:]:
                if pad.semantic != mark:
                    out.append(_OSC133[pad.semantic])
                    mark = pad.semantic
                out.append(f"{sgr(pad)} \x1b[{cols}G\x1b[0m")
            return mark
        # An unstyled blank in the last column (the wrap is pending): unmarked too.
        if mark != SEM_OUTPUT:
            out.append(_OSC133[SEM_OUTPUT])
            mark = SEM_OUTPUT
        out.append(" ")
    if first is None or not first.data:
        if mark != SEM_OUTPUT:
            out.append(_OSC133[SEM_OUTPUT])
            mark = SEM_OUTPUT
        out.append(" ")  # the wrap happens on a draw: an unstyled blank at column 0
    return mark


def _cursor_to(
    out: list[str], buffer: dict[int, Line], x: int, y: int, cols: int, top: int = 0
) -> int:
    """Move the cursor to (x, y); x == cols is a pending wrap, made by drawing the
    last cell again. Returns the OSC 133 mark the pen was left with (-1: unchanged)."""
    if x < cols:
        out.append(f"\x1b[{y - top + 1};{x + 1}H")
        return -1
    line = buffer.get(y)
    cell = line.get(cols - 1) if line is not None else None
    at = cols - 1
    if cell is not None and cell.data == "" and cols >= 2 and line is not None:
        left = line.get(cols - 2)
        if left is not None and left.data and _is_wide(left.data):
            cell, at = left, cols - 2
    if cell is None or not cell.data:
        cell = BLANK
    out.append(f"\x1b[{y - top + 1};{at + 1}H")
    out.append(_OSC133[cell.semantic])
    out.append(sgr(cell))
    if cell.link:  # (closed again: the pen's own link, if any, is set later)
        out.append(f"\x1b]8;{plain(cell.link)}\x07{cell.data}\x1b]8;;\x07")
    else:
        out.append(cell.data)
    return cell.semantic


def _charsets(g0: object, g1: object, shift: int) -> str:
    text = ""
    if g0 is not cs.LAT1_MAP:
        text += "\x1b(" + _CHARSET_CODE.get(id(g0), "B")
    if g1 is not cs.VT100_MAP:
        text += "\x1b)" + _CHARSET_CODE.get(id(g1), "0")
    if shift:
        text += "\x0e"
    return text


def _load(out: list[str], sp: Savepoint, cols: int) -> str:
    """Put the cursor state of ``sp`` in place (the scroll region is not set yet);
    return the bytes that bring the defaults back."""
    if sp.origin:
        out.append("\x1b[?6h")
    cursor = sp.cursor
    # DECRC puts the cursor back inside the screen: any x past the last column is it.
    out.append(f"\x1b[{cursor.y + 1};{min(cursor.x, cols - 1) + 1}H")
    out.append(sgr(cast(Cell, cursor.attrs)))
    if not sp.wrap:
        out.append("\x1b[?7l")
    charsets = _charsets(sp.g0_charset, sp.g1_charset, sp.charset)
    out.append(charsets)
    undo = "\x1b(B\x1b)0\x0f" if charsets else ""
    if not sp.wrap:
        undo += "\x1b[?7h"
    if sp.origin:
        undo += "\x1b[?6l"
    return undo + "\x1b[0m" + _OSC133[SEM_OUTPUT]


def _write_screens(screen: EngineScreen, out: list[str], main_buffer: dict[int, Line]) -> None:
    cols, rows = screen.columns, screen.lines
    out.extend(f"\x1b[>{flags}u" for flags in screen.kitty_stacks[False])
    saved = screen.saved_cursors
    main_sp = saved.get(False)
    buffer: dict[int, Line] = main_buffer
    if not screen.alternate:
        if main_sp is not None:
            undo = _load(out, main_sp, cols)
            out.append("\x1b7" + undo)
        alt_sp = saved.get(True)
        if alt_sp is not None:
            # The alternate screen's savepoint outlives it: visit it to make one.
            undo = _load(out, alt_sp, cols)
            out.append("\x1b[?47h\x1b7\x1b[?47l" + undo)
    else:
        alt_modes = [m for m in ALT_SCREEN_MODES if (m << 5) in screen.mode] or [1047]
        enter = "".join(f"\x1b[?{m}h" for m in sorted(alt_modes, key=lambda m: m != 1049))
        if main_sp is not None:
            undo = _load(out, main_sp, cols)
            # Entering with 1049 saves the cursor itself; otherwise DECSC does.
            out.append(enter + undo if 1049 in alt_modes else "\x1b7" + undo + enter)
        else:
            # No savepoint to make: enter without 1049 first (1049 would save one).
            others = [m for m in alt_modes if m != 1049] or [1047]
            out.append("".join(f"\x1b[?{m}h" for m in others))
            if 1049 in alt_modes:
                out.append("\x1b[?1049h")
        out.extend(f"\x1b[>{flags}u" for flags in screen.kitty_stacks[True])
        buffer = screen.buffer
        alt_lines: list[Line | None] = [buffer.get(y) for y in range(rows)]
        bodies = [_row_body(line, cols) for line in alt_lines]
        out.append("\x1b[H")
        first = alt_lines[0]
        if first is not None and first.wrapped:
            # A throwaway row above, scrolled off the top (the alternate screen
            # keeps no history), so that the first row can wrap from it.
            alt_lines.insert(0, None)
            bodies.insert(0, (" " * cols, cols, SEM_OUTPUT, SEM_OUTPUT))
        _join_rows(out, alt_lines, bodies, cols)
        alt_sp = saved.get(True)
        if alt_sp is not None:
            undo = _load(out, alt_sp, cols)
            out.append("\x1b7" + undo)
    _write_state(screen, out, buffer)


def _write_shell(
    screen: EngineScreen,
    out: list[str],
    cache: dict[int, tuple[CommandRecord, str, str]] | None = None,
) -> dict[int, tuple[CommandRecord, str, str]]:
    """The commands and the open prompt cycle, as marks placed with ``phux_at``
    (relative to the viewport's first row), in the order they happened: a
    cleared screen puts later prompts above earlier commands.

    Returns the commands' encoded marks (a record never changes; a finished
    command is a new record), for the next checkpoint to reuse."""
    shell = screen.shell
    encoded: dict[int, tuple[CommandRecord, str, str]] = {}
    if shell.integration != NONE:
        noc = ";phux_noc=1" if shell.no_c else ""  # (a shell that prints no C mark)
        out.append(_INTEGRATION[shell.integration].replace("\x07", noc + "\x07"))
    if shell.phase == NONE:
        return encoded
    top = screen.scrolled_off
    phase = NONE
    cwd: str | None = None
    for rec in shell.commands:
        key = id(rec)
        hit = cache.get(key) if cache else None
        if hit is None or hit[0] is not rec:
            params = "\x1b]133;C;cmdline_url=" + percent_encode(rec.command)
            if rec.started_ms is not None:
                params += f";phux_t={rec.started_ms}"
            end = ""
            if rec.end_row is not None:
                end = "\x1b]133;D" if rec.exit_code is None else f"\x1b]133;D;{rec.exit_code}"
                if rec.finished_ms is not None:
                    end += f";phux_t={rec.finished_ms}"
                if rec.erased:
                    end += ";phux_cut=1"
            hit = (rec, params, end)
        encoded[key] = hit
        out.append(hit[1])
        if rec.cwd != cwd:  # most commands run where the one before ran
            cwd = rec.cwd
            out.append(";phux_nocwd=1" if cwd is None else ";phux_cwd=" + _cwd_param(cwd))
        out.append(f";phux_at={rec.start_row - top},{rec.start_col}\x07")
        phase = RUNNING
        if rec.end_row is not None:
            out.append(f"{hit[2]};phux_at={rec.end_row - top},{rec.end_col}\x07")
            phase = PROMPT
    last_b = max((i for i, step in enumerate(shell.cycle) if step[0] == "B"), default=-1)
    for i, (kind, row, col) in enumerate(shell.cycle):
        mark = "A;k=s" if kind == "S" else kind
        entered = ""
        if i in shell.taken:  # (a line typed ahead, read at this continuation prompt)
            entered = f";phux_read={percent_encode(shell.taken[i])}"
        if i == last_b and shell.entered is not None:
            # The input's end (a command without C runs from there: dash).
            when, at, typed = shell.entered
            t = "" if when is None else when
            at_col = f",{shell.entered_col}" if shell.entered_col else ""
            entered += f";phux_entered={at - top},{t},{percent_encode(typed)}{at_col}"
        if i == len(shell.cycle) - 1 and shell.ahead:
            entered += ";phux_ahead=" + percent_encode("\n".join(shell.ahead))
        out.append(f"\x1b]133;{mark};phux_at={row - top},{col}{entered}\x07")
        if kind == "A":
            phase = PROMPT
        elif kind == "S":
            phase = CONTINUATION
        elif phase == NONE:
            phase = PROMPT
    if phase != shell.phase:
        # The commands were dropped (beyond MAX_COMMANDS) but the shell is at a
        # prompt: a D without a command says so all the same.
        out.append("\x1b]133;D;phux_at=0,0\x07")
    return encoded


# Where the shell integration stands (phux.engine._shell: STARTING, READY, OFF).
_INTEGRATION = {
    "starting": "\x1b]133;I;start\x07",
    "ready": "\x1b]133;I;ready\x07",
    "off": "\x1b]133;I;off\x07",
}


@lru_cache(maxsize=64)
def _cwd_param(cwd: str) -> str:
    return percent_encode(cwd, safe="/")


def _write_state(screen: EngineScreen, out: list[str], buffer: dict[int, Line]) -> None:
    cols = screen.columns
    default_tabs = set(range(8, cols, 8))
    if screen.tabstops != default_tabs:
        out.append("\x1b[3g")
        out.extend(f"\x1b[{stop + 1}G\x1bH" for stop in sorted(screen.tabstops) if stop < cols)
    margins = screen.margins
    top = 0
    if margins is not None:
        out.append(f"\x1b[{margins.top + 1};{margins.bottom + 1}r")
    mode = screen.mode
    if mo.DECOM in mode:
        out.append("\x1b[?6h")
        if margins is not None:
            top = margins.top
    cursor = screen.cursor
    semantic = _cursor_to(out, buffer, cursor.x, cursor.y, cols, top)
    skipped = _SKIPPED_MODES
    if holding(screen) is None:
        # A synchronized-output frame that no longer holds the screen (older than
        # the bound, or dropped by a resize) is left out: a reader of the replayed
        # checkpoint shows the live screen, as one of this engine does.
        skipped = skipped | _SYNCHRONIZED
    for m in sorted(mode - _DEFAULT_MODE - skipped):
        out.append(f"\x1b[?{m >> 5}h" if m >= 32 and not m & 31 else f"\x1b[{m}h")
    for m in sorted(_DEFAULT_MODE - mode):
        out.append(f"\x1b[?{m >> 5}l")
    out.append(_charsets(screen.g0_charset, screen.g1_charset, screen.charset))
    if screen.app_keypad:
        out.append("\x1b=")
    if screen.cursor_style:
        out.append(f"\x1b[{screen.cursor_style} q")  # DECSCUSR
    if screen.semantic != semantic and (semantic != -1 or screen.semantic != SEM_OUTPUT):
        out.append(_OSC133[screen.semantic])
    out.append(sgr(cast(Cell, cursor.attrs)))
    if screen.link:
        out.append(f"\x1b]8;{plain(screen.link)}\x07")
