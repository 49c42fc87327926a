"""What ``run`` must know of a pane's shell before typing, from raw bytes without the engine.

``run`` checks that the shell is at an idle prompt: the OSC 133 phase, the
input pending after the prompt's B mark, the alternate screen, bracketed
paste. The engine knows all of it, but a one-shot ``phux run`` would pay for
importing it and replaying the whole bootstrap. In the usual case (the last
thing the pane printed is a prompt's B mark, nothing typed since) the raw
bytes say it plainly: this module reads that case, and replays the bytes into
an engine for anything else (a checkpoint's positioned marks, text after the
B mark, a full-screen program), so the answer is always the engine's.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.engine import Terminal

_MARK = re.compile(rb"\x1b\]133;([A-D])([^\x07\x1b]*)(?:\x07|\x1b\\)")
_ALT_SCREEN = re.compile(rb"\x1b\[\?[0-9;]*(?:1049|1047|47)[0-9;]*[hl]")


class ShellView:
    """The part of an engine's state ``run`` reads (an engine passes for one too)."""

    __slots__ = ("alternate", "bracketed_paste", "commands", "pending_input", "shell_phase")

    def __init__(
        self,
        shell_phase: str,
        pending_input: str = "",
        alternate: bool = False,
        bracketed_paste: bool = False,
    ) -> None:
        self.shell_phase = shell_phase
        self.pending_input = pending_input
        self.alternate = alternate
        self.bracketed_paste = bracketed_paste
        self.commands: list[object] = []


def view_of_engine(engine: Terminal) -> ShellView:
    view = ShellView(
        str(getattr(engine, "shell_phase", "none")),
        str(getattr(engine, "pending_input", "") or ""),
        engine.alternate,
        engine.modes.bracketed_paste,
    )
    view.commands = list(getattr(engine, "commands", []))
    return view


def scan(data: bytes) -> ShellView | None:
    """The view, when the bytes make it plain; None: replay them into an engine."""
    from phux.client.modes import scan_modes

    if _ALT_SCREEN.search(data) is not None:
        return None
    marks = list(_MARK.finditer(data))
    if not marks:
        if b"\x1b]133;" in data:
            return None  # a mark cut short or with an unusual terminator
        modes = scan_modes(data)
        return None if modes is None else ShellView("none", "", False, modes.bracketed_paste)
    last = marks[-1]
    if last.group(1) != b"B" or last.end() != len(data):
        return None  # not at a drawn prompt with nothing typed after it
    phase = "prompt"
    for mark in marks:
        params = mark.group(2)
        if b"phux_" in params:
            return None  # a checkpoint's marks place the cycle: the engine decides
        if mark.group(1) == b"A":
            phase = "continuation" if b"k=s" in params.split(b";") else "prompt"
    modes = scan_modes(data)
    if modes is None:
        return None
    return ShellView(phase, "", False, modes.bracketed_paste)


def view(data: bytes, cols: int, rows: int) -> ShellView:
    """The view of a pane whose bootstrap (from its last reset) is ``data``."""
    found = scan(data)
    if found is not None:
        return found
    from phux.engine import Terminal

    engine = Terminal(max(cols, 1), max(rows, 1), history=0)
    engine.feed(data)
    return view_of_engine(engine)
