"""Where the engine departs from tmux on purpose (tests/engine/test_tmux_differential.py
ALLOWED), what it does instead: xterm's result, held by a test of its own (issue 24
item 10; the strict xfails only say "differs from tmux")."""

from __future__ import annotations

import pytest

from phux.engine import Terminal


def screen(data: bytes, cols: int = 20, rows: int = 4) -> tuple[list[str], tuple[int, int]]:
    t = Terminal(cols, rows)
    t.feed(data)
    s = t.screen
    return [line.rstrip() for line in s.display], (s.cursor.x, s.cursor.y)


@pytest.mark.parametrize(
    ("data", "rows", "cursor"),
    [
        # CHT (CSI I) and CBT (CSI Z) move by tab stops: x at 8, back two stops to 0
        # for y, forward two stops to 16 for z.
        (b"\tx\x1b[2Zy\x1b[2Iz", ["y       x       z"], (17, 0)),
        # HPR (CSI a) moves right like CUF.
        (b"abc\x1b[2aq", ["abc  q"], (6, 0)),
        # IL inserts blank lines at the cursor's row and moves it to the left margin.
        (b"abc\x1b[Lx", ["x", "abc"], (1, 0)),
        (b"abc\r\ndef\x1b[1;3H\x1b[Mx", ["xef", ""], (1, 0)),  # DL too: def moves up
        # ICH past the right margin: the cells shifted out are gone, blanks come in.
        (b"\x1b[1;19Hab\x1b[1;19H\x1b[5@", [""], (18, 0)),
        (b"\x1b[1;17Habcd\x1b[1;18H\x1b[1@", ["                a bc"], (17, 0)),
    ],
)
def test_xterm_results(data: bytes, rows: list[str], cursor: tuple[int, int]) -> None:
    lines, at = screen(data)
    assert lines[: len(rows)] == rows
    assert at == cursor
