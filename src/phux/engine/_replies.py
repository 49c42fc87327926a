"""Answers to the terminal queries beyond DA and DSR (spec/L1.md §5.2).

The engine answers from what it knows: its size, its pen, its scroll
region. What it cannot know (the pixel size of a cell, the colours a person
sees) is answered with fixed values, so a program asking never waits: a cell
is 16x32 pixels (tmux's default), the foreground white and the background
black. The title is never reported (CSI 20/21 t; xterm's default too).
"""

from __future__ import annotations

from phux.engine._sgr import sgr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from phux.engine._screen import EngineScreen

CELL_PIXELS = (16, 32)
"""(width, height) of a cell in the pixel reports."""

COLOURS = {10: "rgb:ffff/ffff/ffff", 11: "rgb:0000/0000/0000", 12: "rgb:ffff/ffff/ffff"}
"""OSC 10 (foreground), 11 (background) and 12 (cursor) as reported."""

ST = "\x1b\\"


def xtversion() -> str:
    """XTVERSION (``CSI > q``): ``DCS > | name(version) ST``, as xterm writes it."""
    from phux import __version__

    return f"\x1bP>|phux({__version__}){ST}"


def window_report(screen: EngineScreen, ps: int) -> str | None:
    """XTWINOPS reports (``CSI Ps t``): sizes in characters and pixels."""
    rows, cols = screen.lines, screen.columns
    w, h = CELL_PIXELS
    if ps == 18:
        return f"\x1b[8;{rows};{cols}t"
    if ps == 19:
        return f"\x1b[9;{rows};{cols}t"
    if ps == 14:
        return f"\x1b[4;{rows * h};{cols * w}t"
    if ps == 15:
        return f"\x1b[5;{rows * h};{cols * w}t"
    if ps == 16:
        return f"\x1b[6;{h};{w}t"
    return None


def colour_report(payload: str, bel: bool) -> str | None:
    """OSC 10/11/12 with ``?``: the colour, ended as the query was (BEL or ST)."""
    code, _, rest = payload.partition(";")
    if rest != "?" or not code.isdigit():
        return None
    colour = COLOURS.get(int(code))
    if colour is None:
        return None
    return f"\x1b]{code};{colour}{chr(7) if bel else ST}"


def decrqss(screen: EngineScreen, setting: str) -> str:
    """DECRQSS (``DCS $ q Pt ST``): ``DCS 1 $ r value Pt ST``, or ``DCS 0 $ r ST``."""
    if setting == "m":
        value = sgr(screen.cursor.attrs)[2:-1]  # type: ignore[arg-type]
    elif setting == "r":
        margins = screen.margins
        top, bottom = (0, screen.lines - 1) if margins is None else margins
        value = f"{top + 1};{bottom + 1}"
    elif setting == " q":
        value = str(screen.cursor_style)  # DECSCUSR
    elif setting == '"p':
        value = "65;1"  # DECSCL: a VT500, 7-bit controls
    else:
        return f"\x1bP0$r{ST}"
    return f"\x1bP1$r{value}{setting}{ST}"


# The private modes DECRQM reports as recognised: those the engine tracks.
_PRIVATE_MODES = frozenset(
    (1, 3, 5, 6, 7, 9, 25, 47, 1000, 1001, 1002, 1003, 1004, 1006, 1047, 1049, 2004, 2026)
)
_ANSI_MODES = frozenset((4, 20))  # IRM, LNM


def decrqm(screen: EngineScreen, params: str, private: bool) -> str:
    """DECRQM (``CSI ? Ps $ p``, ``CSI Ps $ p``): ``CSI ? Ps ; Pm $ y`` with Pm 1 (set),
    2 (reset) or 0 (not recognised), as xterm answers; a program asks it for 2026
    (synchronized output) before it frames its redraws."""
    try:
        mode = int(params) if params else 0
    except ValueError:
        return ""
    state = 0  # not recognised
    if mode in (_PRIVATE_MODES if private else _ANSI_MODES):
        state = 1 if (mode << 5 if private else mode) in screen.mode else 2
    return f"\x1b[{'?' if private else ''}{mode};{state}$y"
