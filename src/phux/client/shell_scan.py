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
    if b"phux_" in last.group(2):
        return _checkpoint_view(data, marks)
    if last.group(1) != b"B" or last.end() != len(data):
        return None  # not at a drawn prompt with nothing typed after it
    # The prompt this B ends: the last A before it. A checkpoint's own marks
    # (phux_at, phux_pen) restore older state; a fresh A after them decides alone.
    phase = None
    for mark in reversed(marks):
        params = mark.group(2)
        if b"phux_" in params:
            return None
        if mark.group(1) == b"A":
            phase = "continuation" if b"k=s" in params.split(b";") else "prompt"
            break
    if phase is None:
        return None
    modes = scan_modes(data)
    if modes is None:
        return None
    return ShellView(phase, "", False, modes.bracketed_paste)


_PEN = b"phux_pen=1"
_AT = re.compile(rb"(?:^|;)phux_at=(-?[0-9]+),([0-9]+)(?:;|$)")
# What a checkpoint writes after its last prompt-cycle mark when it ends at the
# prompt: the cursor's position, pen marks, an SGR reset. Anything else: the engine.
_CHECKPOINT_TAIL = re.compile(
    rb"(?:\x1b\[([0-9]+);([0-9]+)H|\x1b\[[0-9;]*m|\x1b\]133;[A-D];phux_pen=1\x07)*"
)
_CUP = re.compile(rb"\x1b\[([0-9]+);([0-9]+)H")


def _checkpoint_view(data: bytes, marks: list[re.Match[bytes]]) -> ShellView | None:
    """A bootstrap that ends with a checkpoint (no journal after it) taken at an idle
    prompt: its last cycle marks are A and B placed with ``phux_at``, and the cursor
    is put exactly at the B mark. Any other shape: None (the engine decides)."""
    cycle = [m for m in marks if _PEN not in m.group(2)]
    if len(cycle) < 2:
        return None
    b_mark, a_mark = cycle[-1], cycle[-2]
    if b_mark.group(1) != b"B" or a_mark.group(1) != b"A":
        return None
    at = _AT.search(b_mark.group(2))
    if at is None or _AT.search(a_mark.group(2)) is None:
        return None
    tail = data[b_mark.end() :]
    if _CHECKPOINT_TAIL.fullmatch(tail) is None:
        return None
    cups = _CUP.findall(tail)
    if not cups:
        return None
    row, col = int(cups[-1][0]) - 1, int(cups[-1][1]) - 1
    if (row, col) != (int(at.group(1)), int(at.group(2))):
        return None  # text typed after the prompt: the cursor moved on
    from phux.client.modes import scan_modes

    modes = scan_modes(data)
    if modes is None:
        return None
    phase = "continuation" if b"k=s" in a_mark.group(2).split(b";") else "prompt"
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
