"""`run`'s engine-free reading of a bootstrap agrees with the engine whenever it answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phux.client.shell_scan import scan, view_of_engine
from phux.engine import Terminal
from phux.engine.checkpoint import write_checkpoint

A, A2, B = b"\x1b]133;A\x07", b"\x1b]133;A;k=s\x07", b"\x1b]133;B\x07"
C, D = b"\x1b]133;C;cmdline_url=true\x07", b"\x1b]133;D;0\x07"
PASTE_ON = b"\x1b[?2004h"

PIECES = [
    b"$ ",
    b"> ",
    b"text",
    b"\r\n",
    A,
    A2,
    B,
    C,
    D,
    PASTE_ON,
    b"\x1b[?2004l",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b]7;file://h/tmp\x07",
    b"\x1b[K",
    b"\x08",
]


def engine_of(data: bytes) -> Terminal:
    term = Terminal(40, 6, history=100)
    term.feed(data)
    return term


def agrees(data: bytes) -> bool:
    found = scan(data, 6)
    if found is None:
        return False
    want = view_of_engine(engine_of(data))
    got = (found.shell_phase, found.pending_input, found.alternate, found.bracketed_paste)
    assert got == (want.shell_phase, want.pending_input, want.alternate, want.bracketed_paste)
    return True


@pytest.mark.parametrize(
    "data",
    [
        b"plain output\r\n$ ",
        A + b"$ " + B,
        PASTE_ON + A + b"$ " + B,
        A + b"$ " + B + b"true\r\n" + C + D + A + b"$ " + B,
        A + b"$ " + B + b"echo 'x\r\n" + A2 + b"> " + B,
    ],
)
def test_plain_prompts_are_read_without_the_engine(data: bytes) -> None:
    assert agrees(data)


def test_typed_text_goes_to_the_engine() -> None:
    assert scan(A + b"$ " + B + b"echo half", 6) is None
    assert scan(A + b"$ ", 6) is None
    assert scan(A + b"$ " + B + b"\x1b[?1049h", 6) is None


def test_checkpoint_at_an_idle_prompt() -> None:
    lines = b"".join(b"%d\r\n" % i for i in range(10))
    data = A + b"$ " + B + b"seq 10\r\n" + C + lines + D + A + b"$ " + B
    checkpoint = write_checkpoint(engine_of(data))
    assert agrees(checkpoint)
    assert agrees(checkpoint + b"true\r\n" + C + D + b"\x1b]7;file://h/\x07" + A + b"$ " + B)
    typed = write_checkpoint(engine_of(data + b"pending"))
    assert scan(typed, 6) is None or agrees(typed)
    running = write_checkpoint(engine_of(data + b"sleep 1\r\n" + C))
    assert scan(running, 6) is None or agrees(running)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.booleans())
def test_any_answer_is_the_engines(pieces: list[bytes], checkpointed: bool) -> None:
    data = b"".join(pieces)
    if checkpointed:
        data = write_checkpoint(engine_of(data))
    agrees(data)
