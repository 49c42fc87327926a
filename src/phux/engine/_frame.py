"""Synchronized output (DEC mode 2026): the screen as it was when a frame opened.

A program that sets ``CSI ? 2026 h`` asks the terminal to show nothing of what
it draws until ``CSI ? 2026 l``, so that nobody sees half a frame (kitty,
WezTerm, foot, tmux 3.4 and the others hold the display; they show the live
screen anyway once a frame stays open too long). The engine keeps parsing as
usual (replies to queries inside a frame are not delayed) and keeps, from the
moment the frame opens, a ``Frame``: a frozen copy of what a reader of the
screen looks at, which ``Terminal.shown`` returns while the frame is open and
younger than ``FRAME_LIMIT``.

What is copied is what projections and the person's view read of the screen:
the active grid's rows (each row's cells; a copy of a row is a dict copy), the
cursor and the mode set; everything else is shared with the live screen
through a shallow copy of it, because drawing replaces those attributes (a
title, the margins) rather than changing them in place. History is not
copied: rows a frame scrolls into it are left out by count
(``Frame.scrolled_off``). A frame of a 120x40 screen costs ~0.1 ms to open.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

from phux.engine._cells import Line, _dict_update, _fill, _LazyLine, _new_row

FRAME_LIMIT = 0.15
"""Seconds a frame holds the shown screen; then the live screen shows (150 ms, as
kitty, foot and WezTerm bound it)."""


class Frame:
    """An open frame: when it opened, the screen as it was, and how many rows had
    left the top of the main screen then."""

    __slots__ = ("opened", "scrolled_off", "view")

    def __init__(self, screen: Any, now: float) -> None:
        self.opened = now
        self.scrolled_off: int = screen.scrolled_off
        self.view: Any = freeze(screen)


def holding(screen: Any) -> Frame | None:
    """``screen``'s open frame while it still holds what is shown (younger than
    ``FRAME_LIMIT`` by the screen's frame clock), else None."""
    frame: Frame | None = screen.frame
    if frame is None or screen.frame_clock() - frame.opened > FRAME_LIMIT:
        return None
    return frame


def _copy_row(line: Line) -> Line:
    """A plain ``Line`` holding ``line``'s cells (and its ``wrapped``/``default``)."""
    if line.__class__ is _LazyLine:
        _fill(line)
    new = _new_row(Line)
    _dict_update(new, line)
    extra = line.__dict__
    if extra:
        new.__dict__.update(extra)
    return new


def freeze(screen: Any) -> Any:
    """A shallow copy of ``screen`` whose grid, cursor and modes are its own."""
    view = copy.copy(screen)
    buffer: defaultdict[int, Line] = defaultdict(screen._new_line)
    for y, line in screen.buffer.items():
        buffer[y] = _copy_row(line)
    view.buffer = buffer
    view.cursor = copy.copy(screen.cursor)
    view.mode = set(screen.mode)
    view.frame = None
    return view
