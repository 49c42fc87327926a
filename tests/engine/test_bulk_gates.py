"""Every mode that keeps text from only drawing and scrolling (insert mode, autowrap
off, a scroll region, a graphics charset, the alternate screen) turns each fast path
off: fed at once, the flood leaves exactly the state it leaves fed a byte at a time,
which no fast path takes (issue 24 item 10). One example per gate and path."""

from __future__ import annotations

from typing import Any

import pytest

from phux.engine import Terminal

COLS, ROWS, HISTORY = 12, 5, 20

GATES = {
    "insert mode": "\x1b[4h",
    "autowrap off": "\x1b[?7l",
    "scroll region": "\x1b[2;4r\x1b[4;1H",
    "graphics charset": "\x1b(0",
    "shifted charset": "\x1b)0\x0e",
    "alternate screen": "\x1b[?1049h",
}

# Each long enough that a plain screen takes its fast path (more scrolls than the
# screen and its history hold, or a row repainted many times).
PATHS = {
    "lines": "".join(f"line {i}\r\n" for i in range(200)),  # the bulk skip, draw_lines
    "styled lines": "".join(f"\x1b[3{i % 8}mls {i}\x1b[0m\r\n" for i in range(200)),
    "long line": "".join(chr(0x61 + i % 26) for i in range(2000)) + "\r\nEND",
    "repaints": "".join(f"{i}\r" for i in range(2000)) + "END",
    "tabs": "".join(f"{i}\tx\r\n" for i in range(200)),
    "lines over rows": "XXXXXXXXXX\r\n" * 4 + "\x1b[H" + "".join(f"{i}\r\n" for i in range(4)),
    "wrapping lines": "".join(f"a line longer than the row {i}\r\n" for i in range(200)),
}


def state(t: Terminal) -> tuple[Any, ...]:
    s = t.screen
    return (
        s.display,
        t.screen.history_rows(),
        (s.cursor.x, s.cursor.y),
        s.alternate,
    )


def same_at_once_and_bytewise(data: bytes) -> None:
    whole = Terminal(COLS, ROWS, history=HISTORY)
    whole.feed(data)
    bytewise = Terminal(COLS, ROWS, history=HISTORY)
    for i in range(len(data)):
        bytewise.feed(data[i : i + 1])
    assert state(whole) == state(bytewise)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("gate", sorted(GATES))
def test_each_gate_turns_each_fast_path_off(gate: str, path: str) -> None:
    same_at_once_and_bytewise(("before\r\n" + GATES[gate] + PATHS[path]).encode())


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_fast_paths_agree_on_a_plain_screen(path: str) -> None:
    """(The same comparison with no gate: the fast path is taken, and exact.)"""
    same_at_once_and_bytewise(("before\r\n" + PATHS[path]).encode())
