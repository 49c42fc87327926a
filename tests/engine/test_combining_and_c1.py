"""Hostile text (issue 15): endless combining marks, and C1 controls encoded in UTF-8.

Combining marks: a cell keeps its base character and at most
``MAX_COMBINING`` zero-width characters (counted decomposed: what tmux's
21-byte cell holds of two-byte marks, xterm's ``combiningChars`` maximum);
the rest are dropped, so a cell never grows and drawing stays linear.

C1 controls (U+0080-U+009F): in UTF-8 they are not controls (tmux, and
xterm in UTF-8 mode, ignore them): they draw nothing, introduce nothing,
terminate no string, and inside an escape sequence are skipped like DEL.
"""

from __future__ import annotations

import time
import unicodedata

import pytest

from phux.engine import Terminal
from phux.engine._cells import MAX_COMBINING
from phux.engine.checkpoint import write_checkpoint

MARKS = "".join(chr(c) for c in range(0x0300, 0x0310))  # all combining class 230


def term(data: bytes, cols: int = 40, rows: int = 5) -> Terminal:
    t = Terminal(cols, rows, history=100)
    t.feed(data)
    return t


def cell(t: Terminal, y: int, x: int) -> str:
    return str(t.screen.buffer[y][x].data)


def test_the_cap_is_what_tmux_and_xterm_keep() -> None:
    assert MAX_COMBINING == 10


def test_a_cell_keeps_its_base_and_the_first_marks() -> None:
    t = term(("q" + MARKS + "z").encode())
    assert cell(t, 0, 0) == "q" + MARKS[:MAX_COMBINING]
    assert cell(t, 0, 1) == "z"
    assert t.project().lines[0] == "q" + MARKS[:MAX_COMBINING] + "z"
    # Marks that compose are counted decomposed: a + 30 acutes keeps a + 10.
    t = term(("a" + "\u0301" * 30 + "b").encode())
    assert unicodedata.normalize("NFD", cell(t, 0, 0)) == "a" + "\u0301" * MAX_COMBINING
    assert cell(t, 0, 0) == unicodedata.normalize("NFC", "a" + "\u0301" * MAX_COMBINING)
    # Zero-width characters that are not combining marks count too.
    t = term(("x" + "\u200d" * 20 + "y").encode())
    assert cell(t, 0, 0) == "x" + "\u200d" * MAX_COMBINING


def test_a_wide_base_keeps_its_marks_on_its_first_cell() -> None:
    t = term(("中" + MARKS + "z").encode())
    assert cell(t, 0, 0) == "中" + MARKS[:MAX_COMBINING]
    assert cell(t, 0, 1) == "" and cell(t, 0, 2) == "z"


@pytest.mark.parametrize("chunk", [1 << 20, 4096, 1])
def test_a_hundred_thousand_marks_feed_and_snapshot_in_linear_time(chunk: int) -> None:
    count = 100_000 if chunk > 1 else 20_000
    data = ("a" + "\u0301" * count + " done\r\n").encode()
    t = Terminal(80, 24, history=100)
    start = time.process_time()
    for i in range(0, len(data), chunk):
        t.feed(data[i : i + chunk])
    state = t.project(cells=True)
    checkpoint = write_checkpoint(t)
    elapsed = time.process_time() - start
    # Linear is ~0.1-0.3 s of CPU here; quadratic was minutes. This process's CPU time,
    # not the wall clock: a loaded machine (CI, the suite's other worker) stretches
    # the latter several times over and the former barely.
    assert elapsed < 2.0, elapsed
    assert state.lines[0] == unicodedata.normalize("NFC", "a" + "\u0301" * MAX_COMBINING) + " done"
    assert len(checkpoint) < 1000


def test_marks_survive_a_checkpoint_round_trip() -> None:
    data = ("a" + "\u0301" * 50 + "é" + "\u0301" * 20 + "q" + MARKS + "中" + MARKS).encode()
    data += ("\r\n\x1b[31m" + "e" + "\u0308" * 40 + "\x1b[0m end").encode()
    t = term(data)
    u = term(write_checkpoint(t))
    assert u.project(cells=True) == t.project(cells=True)
    assert [dict(u.screen.buffer[y]) for y in range(5)] == [
        dict(t.screen.buffer[y]) for y in range(5)
    ]


def test_the_issue_line_is_all_visible() -> None:
    t = term(b"visible-1 \xc2\x9fHIDDEN\x07 visible-2\r\n")
    assert t.project().lines[0] == "visible-1 HIDDEN visible-2"


@pytest.mark.parametrize(
    ("data", "line"),
    [
        # Every C1 code point draws nothing and moves nothing.
        (b"".join(chr(c).encode() for c in range(0x80, 0xA0)) + b"END", "END"),
        (b"A\xc2\x9b31mB", "A31mB"),  # not CSI
        (b"A\xc2\x9d0;title\xc2\x9cB", "A0;titleB"),  # not OSC, not ST
        (b"A\xc2\x90qq\x1b\\B", "AqqB"),  # not DCS
        (b"A\xc2\x84B\xc2\x85C\xc2\x8dD", "ABCD"),  # not IND, NEL, RI
        # Not ST inside a string: the string goes on to its real end.
        (b"A\x1b]0;ti\xc2\x9ctle\x07B", "AB"),
        (b"A\x1bPqq\xc2\x9cxx\x1b\\B", "AB"),
        (b"A\x1b_x\xc2\x9cy\x1b\\B", "AB"),
        # Inside an escape sequence: skipped, the sequence goes on.
        (b"A\x1b[3\xc2\x851mB", "AB"),
        (b"A\x1b\xc2\x847B", "AB"),
        (b"A\x1b(\xc2\x840B", "AB"),
    ],
)
def test_c1_controls_in_utf8_are_not_controls(data: bytes, line: str) -> None:
    whole = term(data)
    assert whole.project().lines[0] == line
    bytewise = Terminal(40, 5, history=100)
    for byte in data:
        bytewise.feed(bytes([byte]))
    assert bytewise.project(cells=True) == whole.project(cells=True)


def test_a_c1_inside_a_csi_keeps_the_sequence() -> None:
    t = term(b"A\x1b[3\xc2\x851mB")
    assert t.screen.buffer[0][1].fg == "red"
