"""phux.client.typeahead: the echo of other clients' keys, checked against the kernel's
own line discipline on a real PTY, and cut from a run's captured output."""

from __future__ import annotations

import os
import pty
import select
import time
from collections.abc import Iterator

import pytest

from phux.client.run_integrated import MarkScanner
from phux.client.typeahead import Typeahead, echo_mode, excise, tty_echo
from phux.wire.frames import Foreground, InputWritten, Output

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def cooked_pty() -> Iterator[int]:
    """The master of a PTY whose foreground program (sleep) leaves the tty as it starts:
    canonical, ECHO, ECHOCTL, ICRNL, ONLCR, as a command run at a shell prompt has it."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execvp("sleep", ["sleep", "30"])
    try:
        yield fd
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def kernel_echo(fd: int, data: bytes) -> bytes:
    """What the line discipline echoes for ``data``: read until it has been quiet."""
    os.write(fd, data)
    out = b""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 0.2)[0]:
            break
        out += os.read(fd, 4096)
    # A completed line is the program's to read (sleep never does): drop it.
    os.write(fd, b"\x15")  # KILL: the rest of an unfinished line goes too
    while select.select([fd], [], [], 0.1)[0]:
        os.read(fd, 4096)
    return out


@pytest.mark.parametrize(
    "data",
    [b"typed words", b"echo lat\x01e\r", b"a\nb", b"\t", b"\x1b[A", "é€ ü".encode(), b"\x00x"],
)
def test_echo_is_what_the_kernel_echoes(cooked_pty: int, data: bytes) -> None:
    assert tty_echo(data, canonical=True) == kernel_echo(cooked_pty, data)


@pytest.mark.parametrize("key", [b"\x7f", b"\x15", b"\x17", b"\x04", b"\x12", b"\x16"])
def test_line_editing_keys_have_no_knowable_echo(key: bytes) -> None:
    # ERASE after "ab" echoes "\b \b"; after nothing, nothing: the line decides.
    assert tty_echo(b"ab" + key, canonical=True) is None
    assert tty_echo(key, canonical=False) == b"^" + bytes([key[0] ^ 0x40])


def test_interrupt_echoes_as_caret() -> None:
    assert tty_echo(b"\x03", canonical=True) == b"^C"


def _fg(pgrp: int, echo: bool, canonical: bool) -> Foreground:
    return Foreground(pgrp=pgrp, name="x", echo=echo, canonical=canonical)


def test_echo_mode() -> None:
    assert echo_mode(None, 10) is True
    assert echo_mode(_fg(20, echo=True, canonical=True), 10) is True
    assert echo_mode(_fg(20, echo=True, canonical=False), 10) is False
    assert echo_mode(_fg(20, echo=False, canonical=False), 10) is None  # vim, a password
    # The shell's own editor state is stale between a command's marks (see echo_mode).
    assert echo_mode(_fg(10, echo=False, canonical=False), 10) is True


def test_own_writes_are_told_from_others() -> None:
    typeahead = Typeahead(1, lambda: True)
    typeahead.wrote(b"ls -l\r")
    typeahead(InputWritten(terminal=1, seq=5, data=b"ls "))  # ours, in pieces
    typeahead(InputWritten(terminal=1, seq=6, data=b"hi"))  # someone else's, meanwhile
    typeahead(InputWritten(terminal=1, seq=6, data=b"-l\r"))
    typeahead(InputWritten(terminal=2, seq=7, data=b"x"))  # another pane
    typeahead(InputWritten(terminal=1, seq=8, data=b"\x1b[?62c", reply=True))
    typeahead(Output(terminal=1, seq=9, data=b"y"))
    typeahead(InputWritten(terminal=1, seq=9, data=b"q\r"))
    assert typeahead.foreign == [(6, b"hi"), (9, b"q\r\n")]


def test_no_echo_no_cut() -> None:
    typeahead = Typeahead(1, lambda: None)
    typeahead(InputWritten(terminal=1, seq=6, data=b"secret"))
    assert typeahead.foreign == []


def test_excise() -> None:
    data = b"out1\r\nhi there\r\nout2\r\n"
    # Found at its offset, or later (queued behind unread output); cuts in order.
    assert excise(data, [(6, b"hi ")]) == (b"out1\r\nthere\r\nout2\r\n", [(6, 3)])
    assert excise(data, [(0, b"there")])[0] == b"out1\r\nhi \r\nout2\r\n"
    # An echo never comes before its write; one not found is left alone.
    assert excise(data, [(10, b"hi")]) == (data, [])
    assert excise(data, [(0, b"hi"), (0, b"out2")]) == (
        b"out1\r\n there\r\n\r\n",
        [(6, 2), (16, 4)],
    )
    # Written before the bytes start (during the command line's echo): looked for from 0.
    assert excise(b"abc", [(-5, b"b")]) == (b"ac", [(1, 1)])
    assert excise(b"abc", [(3, b"b")]) == (b"abc", [])


def _scanner() -> MarkScanner:
    scanner = MarkScanner(20, 5)
    scanner.typeahead = Typeahead(1, lambda: True)
    scanner.start(100)
    return scanner


def test_a_run_renders_its_output_without_the_echo() -> None:
    scanner = _scanner()
    assert scanner.typeahead is not None
    scanner.typeahead.foreign.append((102, b"typed"))
    scanner.feed(100, b"ab" + b"typed" + b"cdefghij")
    # A resize after the echo happened that many bytes earlier in what is rendered:
    # narrowed to 4 columns right after "abcdefghij" (reflowed: its last row is "ij"),
    # the CR that follows goes back to that row's start; 5 bytes later (after the CR)
    # the line would still be one row of 20 and "XY" would start it.
    scanner.resize(115, 4, 5)
    scanner.feed(115, b"\rXY\r\nklmnopqrst\r\nuv\r\n")
    assert scanner.render(0, scanner.end) == ("abcdefghXY\nklmnopqrst\nuv", False)


def test_an_echo_after_lost_output_is_found_at_its_place() -> None:
    scanner = _scanner()
    assert scanner.typeahead is not None
    scanner.feed(100, b"ab")
    scanner.typeahead.foreign.append((110, b"typed"))
    scanner.feed(110, b"typedcd\r\n")  # seq 102..109 never came
    assert scanner.render(0, scanner.end) == ("abcd", True)
