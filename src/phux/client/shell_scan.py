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

from phux.signed_marks import signature

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.engine import Terminal

_MARK = re.compile(rb"\x1b\]133;([A-D])([^\x07\x1b]*)(?:\x07|\x1b\\)")
_ALT_SCREEN = re.compile(rb"\x1b\[\?[0-9;]*(?:1049|1047|47)[0-9;]*[hl]")


class ShellView:
    """The part of an engine's state ``run`` reads (an engine passes for one too)."""

    __slots__ = (
        "alternate",
        "bracketed_paste",
        "commands",
        "drawing",
        "integration",
        "pending_input",
        "prompt_entered",
        "shell_phase",
    )

    def __init__(
        self,
        shell_phase: str,
        pending_input: str = "",
        alternate: bool = False,
        bracketed_paste: bool = False,
        integration: str = "none",
    ) -> None:
        self.shell_phase = shell_phase
        self.pending_input = pending_input
        self.alternate = alternate
        self.bracketed_paste = bracketed_paste
        self.integration = integration
        """As ``Terminal.integration``: none, starting, ready or off."""
        self.commands: list[object] = []
        self.drawing = False
        """A prompt cycle began (a D mark, or the prompt's A) and its B is not drawn
        yet: the shell's prompt hooks run (``run`` waits for them)."""
        # The last prompt's line was entered and nothing was marked since
        # (phux.client.pane_state.prompt_entered); False for the plain case scan() reads.
        self.prompt_entered = False


def view_of_engine(engine: Terminal) -> ShellView:
    view = ShellView(
        str(getattr(engine, "shell_phase", "none")),
        str(getattr(engine, "pending_input", "") or ""),
        engine.alternate,
        engine.modes.bracketed_paste,
        str(getattr(engine, "integration", "none")),
    )
    view.commands = list(getattr(engine, "commands", []))
    cycle = engine.screen.shell.cycle
    view.drawing = view.shell_phase == "prompt" and not any(step[0] == "B" for step in cycle)
    view.prompt_entered = engine_prompt_entered(engine)
    return view


def engine_prompt_entered(engine: object) -> bool:
    """:func:`phux.client.pane_state.prompt_entered` read from an engine (a Terminal)."""
    screen = getattr(engine, "screen", None)
    shell = getattr(screen, "shell", None)
    if screen is None or shell is None or shell.phase not in ("prompt", "continuation"):
        return False
    if not shell.cycle:
        return False
    kind, row, _ = shell.cycle[-1]
    if kind != "B":
        return False
    return bool(screen.scrolled_off + screen.cursor.y > shell.logical_end(row))


def _unsigned(data: bytes, checkpoint: int, key: str | None) -> bytes | None:
    """``data`` with the signatures of the marks after the checkpoint taken off, when
    every mark there is signed with ``key``; None when one is not (the engine then
    decides). The checkpoint's own marks are the server's: trusted unsigned."""
    if key is None:
        return data
    tail = data[checkpoint:]
    marks = tail.count(b"\x1b]133;")
    if not marks:
        return data
    signed = signature(key)
    if not key or tail.count(signed) != marks:
        return None
    return data[:checkpoint] + tail.replace(signed, b"")


def scan(data: bytes, rows: int) -> ShellView | None:
    """The view, when the bytes make it plain; None: replay them into an engine.

    ``rows``: the terminal's height (a checkpoint places the cursor by row)."""
    from phux.client.modes import scan_modes

    if _ALT_SCREEN.search(data) is not None:
        return None
    marks = list(_MARK.finditer(data))
    if not marks:
        if b"\x1b]133;" in data:
            return None  # a mark cut short or with an unusual terminator
        modes = scan_modes(data)
        if modes is None:
            return None
        return ShellView("none", "", False, modes.bracketed_paste)
    last = marks[-1]
    if b"phux_" in last.group(2):
        return _checkpoint_view(data, marks, rows)
    if last.group(1) != b"B" or last.end() != len(data):
        return None  # not at a drawn prompt with nothing typed after it
    # The phase as the engine's mark rules leave it: the last mark other than B
    # decides (A: prompt, A;k=s: continuation, C then B or D: prompt), B marks
    # after it keep it. A checkpoint's own marks (phux_at, phux_pen) restore older
    # state: when they are among these, the engine decides.
    phase = None
    for mark in reversed(marks):
        kind, params = mark.group(1), mark.group(2)
        if b"phux_" in params:
            return None
        if kind == b"B":
            continue
        continuation = kind == b"A" and b"k=s" in params.split(b";")
        phase = "continuation" if continuation else "prompt"
        break
    if phase is None:
        return None
    if not _fresh_prompt_row(data, marks, rows):
        return None
    modes = scan_modes(data)
    if modes is None:
        return None
    return ShellView(phase, "", False, modes.bracketed_paste, "ready")


_PEN = b"phux_pen=1"
_PHUX = b"phux_"
_AT = re.compile(rb"(?:^|;)phux_at=(-?[0-9]+),([0-9]+)(?:;|$)")
# What a checkpoint writes after its last prompt-cycle mark when it ends at the
# prompt: the cursor's position, pen marks, an SGR reset. Anything else: the engine.
_CHECKPOINT_TAIL = re.compile(
    rb"(?:\x1b\[([0-9]+);([0-9]+)H|\x1b\[[0-9;]*m|\x1b\]133;[A-D];phux_pen=1\x07)*"
)
_CUP = re.compile(rb"\x1b\[([0-9]+);([0-9]+)H")
# OSC strings and SGR: invisible, and they move nothing.
_STRINGS = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;:]*m")
_PRINTABLE = re.compile(rb"[\x20-\x7e]*")
_PRIVATE_MODES = re.compile(rb"\x1b\[\?([0-9;]*)[hl]")
# Private modes that move the cursor or clear rows (origin, column mode, screens).
_MOVING_MODES = frozenset({b"3", b"6", b"47", b"1047", b"1049"})
# What may move the cursor up, bring back a row, or shift rows down.
_UP = re.compile(rb"\x1b(?:\[[0-9;?]*[AFHfdrsuTLM^]|[78Mc])")


def _fresh_prompt_row(data: bytes, marks: list[re.Match[bytes]], rows: int) -> bool:
    """The prompt's row started blank and holds only the prompt: it was reached by a
    newline with the cursor never moved up before (or only to the last row, from
    which a newline scrolls a blank row in), then written left to right."""
    newline = data.rfind(b"\n", 0, marks[-1].start())  # -1: the fresh engine's first row
    segment = data[newline + 1 :]
    for modes in _PRIVATE_MODES.findall(segment):
        if _MOVING_MODES.intersection(modes.split(b";")):
            return False
    text = _PRIVATE_MODES.sub(b"", _STRINGS.sub(b"", segment))
    if _PRINTABLE.fullmatch(text) is None:
        return False
    last_up = None
    for last_up in _UP.finditer(data, 0, max(newline, 0)):  # noqa: B007 - the last one
        pass
    if last_up is None:
        return True
    cup = _CUP.fullmatch(last_up.group())
    return cup is not None and int(cup.group(1)) == rows


def _checkpoint_view(data: bytes, marks: list[re.Match[bytes]], rows: int) -> ShellView | None:
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
    # The engine reads the input from the B mark to the end of its row: the row
    # must hold nothing right of B. On the screen's last row it is the last row
    # the checkpoint wrote, just before its cycle marks.
    if row != rows - 1:
        return None
    first = next(m for m in marks if _AT.search(m.group(2)) is not None and _PEN not in m.group(2))
    body = data[data.rfind(b"\n", 0, first.start()) + 1 : first.start()]
    text = _STRINGS.sub(b"", body)
    if _PRINTABLE.fullmatch(text) is None or len(text) > col:
        return None
    from phux.client.modes import scan_modes

    modes = scan_modes(data)
    if modes is None:
        return None
    phase = "continuation" if b"k=s" in a_mark.group(2).split(b";") else "prompt"
    return ShellView(phase, "", False, modes.bracketed_paste, "ready")


def view(
    data: bytes, cols: int, rows: int, checkpoint: int = 0, key: str | None = None
) -> ShellView:
    """The view of a pane whose bootstrap (from its last reset) is ``data``, whose
    first ``checkpoint`` bytes are the server's checkpoint; ``key`` is the pane's mark
    key (``phux.signed_marks``: None takes every mark, "" none)."""
    bare = checkpoint and any(_PHUX not in m.group(2) for m in _MARK.finditer(data, 0, checkpoint))
    # Bare marks in a checkpoint are the cells' marks of a writer that did not carry
    # the shell's commands: only the engine reads them so (Terminal.feed_checkpoint).
    found = None
    if not bare:
        plain = _unsigned(data, checkpoint, key)
        # A mark without the pane's key is output, not the shell's: the engine drops it.
        found = None if plain is None else scan(plain, rows)
    if found is not None:
        return found
    from phux.engine import Terminal

    engine = Terminal(max(cols, 1), max(rows, 1), history=0, mark_key=key)
    engine.feed_checkpoint(data[:checkpoint])
    engine.feed(data[checkpoint:])
    return view_of_engine(engine)
