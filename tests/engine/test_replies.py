"""The terminal queries the engine answers (the server's replica routes the answers
to the program; spec/L1.md §5.2), beyond DA1/DA2/DSR (tests/engine/test_terminal.py)."""

from __future__ import annotations

import pytest

from phux import __version__
from phux.engine import Terminal


def replies(data: bytes, cols: int = 20, rows: int = 5) -> bytes:
    t = Terminal(cols, rows, history=10)
    t.feed(data)
    return t.take_replies()


@pytest.mark.parametrize("query", [b"\x1b[0;0c", b"\x1b[c", b"\x1b[0c"])
def test_da1_with_any_zero_first_parameter(query: bytes) -> None:
    assert replies(query) == b"\x1b[?1;2c"


def test_xtversion() -> None:
    want = f"\x1bP>|phux({__version__})\x1b\\".encode()
    assert replies(b"\x1b[>q") == want
    assert replies(b"\x1b[>0q") == want
    assert replies(b"\x1b[>1q") == b""
    assert replies(b"\x1b[q") == b""  # DECLL, not a query


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        (b"\x1b[18t", b"\x1b[8;5;20t"),  # text area in characters
        (b"\x1b[19t", b"\x1b[9;5;20t"),  # screen in characters
        (b"\x1b[14t", b"\x1b[4;160;320t"),  # text area in pixels (tmux's 16x32 cells)
        (b"\x1b[15t", b"\x1b[5;160;320t"),
        (b"\x1b[16t", b"\x1b[6;32;16t"),  # one cell in pixels
        (b"\x1b[21t", b""),  # the title: never reported (xterm's default too)
        (b"\x1b[22;0t", b""),  # title stack: not a query
        (b"\x1b[8;24;80t", b""),  # a resize request: ignored
    ],
)
def test_window_reports(query: bytes, answer: bytes) -> None:
    assert replies(query) == answer


def test_window_report_follows_a_resize() -> None:
    t = Terminal(20, 5, history=10)
    t.resize(100, 30)
    t.feed(b"\x1b[18t")
    assert t.take_replies() == b"\x1b[8;30;100t"


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        (b"\x1b]10;?\x07", b"\x1b]10;rgb:ffff/ffff/ffff\x07"),
        (b"\x1b]11;?\x07", b"\x1b]11;rgb:0000/0000/0000\x07"),
        (b"\x1b]11;?\x1b\\", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),  # the query's terminator
        (b"\x1b]12;?\x07", b"\x1b]12;rgb:ffff/ffff/ffff\x07"),
        (b"\x1b]11;#102030\x07", b""),  # setting a colour is not a query
    ],
)
def test_colour_queries(query: bytes, answer: bytes) -> None:
    assert replies(query) == answer
    t = Terminal(20, 5, history=10)
    for byte in query:  # cut anywhere: the same answer
        t.feed(bytes([byte]))
    assert t.take_replies() == answer


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        (b"\x1bP$qm\x1b\\", b"\x1bP1$r0m\x1b\\"),
        (b"\x1b[1;31;48;5;200m\x1bP$qm\x1b\\", b"\x1bP1$r0;1;31;48;5;200m\x1b\\"),
        (b"\x1bP$qr\x1b\\", b"\x1bP1$r1;5r\x1b\\"),
        (b"\x1b[2;4r\x1bP$qr\x1b\\", b"\x1bP1$r2;4r\x1b\\"),
        (b"\x1bP$q q\x1b\\", b"\x1bP1$r0 q\x1b\\"),
        (b'\x1bP$q"p\x1b\\', b'\x1bP1$r65;1"p\x1b\\'),
        (b"\x1bP$qzz\x1b\\", b"\x1bP0$r\x1b\\"),  # not a setting we know
        (b"\x1bP+q544e\x1b\\", b""),  # XTGETTCAP: not answered
    ],
)
def test_decrqss(query: bytes, answer: bytes) -> None:
    assert replies(query) == answer
    t = Terminal(20, 5, history=10)
    for byte in query:
        t.feed(bytes([byte]))
    assert t.take_replies() == answer
