"""Keys other clients type while a ``run`` waits: the tty's echo of them is not output.

While a command runs, its tty is in canonical mode with ECHO, so the kernel echoes
whatever anyone types (a person attached, another agent's ``send-keys``) into the
output stream, between the command's marks. The server reports every byte it
writes to the PTY with the output seq it was written after (INPUT_WRITTEN,
spec/L1.md §7.1); a run knows which bytes it wrote itself, so the rest came from
someone else, and their echo is cut from the run's output (``excise``). What the
command itself prints of those keys (``head -n 1`` reading them) stays.
"""

from __future__ import annotations

from collections.abc import Callable

from phux.wire.frames import Foreground, Frame, InputWritten

ECHO_SEARCH = 64 * 1024
"""How far after its write an echo may land: the kernel queues it behind output the
program wrote earlier and the server had not read yet (a PTY buffers tens of KiB)."""

_SIGNALS = frozenset(b"\x03\x1a\x1c")  # INTR, SUSP, QUIT: echoed as ^C, ^Z, ^\
_EDITING = frozenset(b"\x04\x0f\x11\x12\x13\x15\x16\x17\x7f")
"""EOF, DISCARD, START, STOP, REPRINT, KILL, LNEXT, WERASE, ERASE: in canonical mode the
line discipline edits the line (or the flow) instead, and what it echoes depends on
the line already typed, which a client cannot see."""


def tty_echo(data: bytes, canonical: bool) -> bytes | None:
    """What Linux's line discipline echoes for ``data`` under the default modes (ECHO,
    ECHOCTL, ICRNL, ONLCR); None when the echo depends on more than ``data``."""
    out = bytearray()
    for byte in data:
        if byte in (0x0D, 0x0A):
            out += b"\r\n"
        elif byte == 0x09 or 0x20 <= byte < 0x7F or byte >= 0x80:
            out.append(byte)
        elif canonical and byte in _EDITING and byte not in _SIGNALS:
            return None
        else:  # ECHOCTL: a control character shows as ^X
            out += b"^" + bytes([byte ^ 0x40])
    return bytes(out)


class Typeahead:
    """A sink (``Client.add_sink``) that tells a run's own writes to ``terminal`` from
    everyone else's, and keeps the echo the others' may have put in the output.

    The server writes each client's input whole and in order, so what it reports
    written is ours while it is the next part of what we wrote (``wrote``)."""

    def __init__(self, terminal: int, echoes: Callable[[], bool | None]) -> None:
        self.terminal = terminal
        self._echoes = echoes
        """Whether the tty echoes now: True (canonical), False (non-canonical with
        ECHO), None (it does not echo)."""
        self._own = bytearray()
        self.foreign: list[tuple[int, bytes]] = []
        """(output seq the bytes were written after, their echo), in order."""

    def wrote(self, data: bytes) -> None:
        self._own += data

    def __call__(self, frame: Frame) -> None:
        if not isinstance(frame, InputWritten) or frame.terminal != self.terminal:
            return
        if frame.reply:
            return  # the server's answer to a terminal query: never echoed
        data = frame.data
        if self._own.startswith(data):
            del self._own[: len(data)]
            return
        mode = self._echoes()
        if mode is None:
            return
        echo = tty_echo(data, canonical=mode)
        if echo:
            self.foreign.append((frame.seq, echo))


def echo_mode(fg: Foreground | None, shell_pgrp: int) -> bool | None:
    """``Typeahead``'s echo mode from what holds the PTY. The pane's own shell counts as
    echoing: between a command's marks its line editor is not up (a builtin such as
    ``read`` reads in canonical mode), and a report of the program that replaced it
    may lag behind the keys."""
    if fg is None or fg.pgrp == shell_pgrp:
        return True
    if not fg.echo:
        return None
    return fg.canonical


def excise(data: bytes, echoes: list[tuple[int, bytes]]) -> tuple[bytes, list[tuple[int, int]]]:
    """``data`` without each echo, looked for from its offset in ``data`` (negative:
    written before ``data`` starts) within ``ECHO_SEARCH``; and the cut ranges, as
    (offset in ``data``, length), for a caller that maps later offsets."""
    out = bytearray(data)
    cuts: list[tuple[int, int]] = []
    removed = 0
    floor = 0  # an echo lands after the previous one
    for offset, echo in echoes:
        if offset >= len(data):
            break
        begin = max(offset - removed, floor)
        at = out.find(echo, begin, begin + len(echo) + ECHO_SEARCH)
        if at < 0:
            continue  # split by the program's own output, or never echoed: leave it
        del out[at : at + len(echo)]
        cuts.append((at + removed, len(echo)))
        removed += len(echo)
        floor = at
    return bytes(out), cuts


def without_echoes(
    data: bytes, echoes: list[tuple[int, bytes]], resizes: list[tuple[int, int, int]]
) -> tuple[bytes, list[tuple[int, int, int]]]:
    """``excise``, and the resizes (offset in ``data``, cols, rows) moved to where their
    offsets lie in what it returns."""
    if not echoes:
        return data, resizes
    data, cuts = excise(data, echoes)
    moved = [(o - sum(n for at, n in cuts if at < o), c, r) for o, c, r in resizes]
    return data, moved
