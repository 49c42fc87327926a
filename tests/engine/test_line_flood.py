"""Floods of short lines (``seq``, logs, compiler output) take a batched path
(``EngineScreen.draw_lines``): it must leave exactly the state of drawing,
CR and LF line by line, in any chunking."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phux.engine import Terminal, _stream
from phux.engine._cells import BLANK, Cell, Line, _LazyLine, _TextLine
from phux.engine._widths import narrow_class

from .stock import assert_same_as_stock, stock_screen

COLS, ROWS, HISTORY = 12, 5, 20

_LINE = st.text(alphabet=st.sampled_from("abc XYZ 019.-_~éΩ─"), max_size=15).map(
    lambda s: s + "\r\n"
)
_FLOOD = st.lists(_LINE, min_size=1, max_size=30).map("".join)

# What stock pyte gets right (see test_equivalence.py), around the floods.
_STOCK_SAFE = st.sampled_from(
    [
        "\r\n",
        "\n",
        "\r",
        "é",
        "ab",
        "\x1b[31m",
        "\x1b[1;44m",
        "\x1b[0m",
        "\x1b[4h",
        "\x1b[4l",
        "\x1b[1;5r",
        "\x1b[3;2H",
        "\x1b[5;1H",
        "\x1b[5;12H",
        "\x1b[0m\x1b[2J",
        "\x1b[0m\x1b[K",
        "\x1bD",
        "\x1bM",
        "\x1b[2L",
    ]
)

# Also what the engine does differently from stock pyte: compared with the
# line-by-line path instead.
_ANY = _STOCK_SAFE | st.sampled_from(
    [
        "\x1b[?1049h",
        "\x1b[?1049l",
        "\x1b[?5h",
        "\x1b[?5l",
        "\x1b(0",
        "\x1b(B",
        "\x0e",
        "\x0f",
        "\x1b[2;4r",
        "\x1b[r",
        "\x1b[?7l",
        "\x1b[?7h",
        "中文",
        "\x1b]133;A\x07",
        "\x1b]133;C\x07",
        "xyz\x1b[b",
        "e\u0301",
        "a\x9b1m",
    ]
)


def _chunks(draw: st.DrawFn, tokens: st.SearchStrategy[str]) -> tuple[bytes, list[bytes]]:
    data = "".join(draw(st.lists(_FLOOD | tokens, max_size=20))).encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    return data, [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@st.composite
def _stock_safe(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    return _chunks(draw, _STOCK_SAFE)


@st.composite
def _anything(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    return _chunks(draw, _ANY)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_stock_safe())
def test_floods_same_as_stock(sample: tuple[bytes, list[bytes]]) -> None:
    data, chunks = sample
    t = Terminal(COLS, ROWS, history=HISTORY)
    for chunk in chunks:
        t.feed(chunk)
    assert_same_as_stock(t, stock_screen(data, COLS, ROWS, HISTORY))


def _state(t: Terminal) -> tuple[Any, ...]:
    s = t.screen

    def rows(buffer: Any) -> list[tuple[dict[int, Any], bool, Any]]:
        return [(dict(buffer[y]), buffer[y].wrapped, buffer[y].default) for y in range(s.lines)]

    return (
        rows(s.buffer),
        rows(s.main_buffer) if s.main_buffer is not None else None,
        [(dict(line), line.wrapped, line.default) for line in s.scrollback],
        s._unrendered,
        s.history_rows(),
        (s.cursor.x, s.cursor.y, s.cursor.attrs, s.cursor.hidden),
        s.last_char,
        s.alternate,
        s.mode,
        s.margins,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_anything(), st.sampled_from([0, 3, HISTORY]))
def test_floods_same_as_line_by_line(sample: tuple[bytes, list[bytes]], history: int) -> None:
    _data, chunks = sample
    fast = Terminal(COLS, ROWS, history=history)
    for chunk in chunks:
        fast.feed(chunk)
    original = _stream._ASCII_LINES, _stream._narrow_lines_match, _stream._lines_end
    never = re.compile(r"(?!)")  # never matches: every line on its own
    _stream._ASCII_LINES, _stream._narrow_lines_match = never, never.match
    _stream._lines_end = lambda data, pos: pos
    try:
        slow = Terminal(COLS, ROWS, history=history)
        for chunk in chunks:
            slow.feed(chunk)
    finally:
        _stream._ASCII_LINES, _stream._narrow_lines_match, _stream._lines_end = original
    assert _state(fast) == _state(slow)


@settings(max_examples=500, deadline=None)
@given(st.lists(_LINE | st.sampled_from(["\x1b[31m", "\r", "\n", "x", "中", "\x9b"]), max_size=9))
def test_floods_end_where_the_whole_class_says(parts: list[str]) -> None:
    # Text that is not all ASCII, before the whole class is compiled (None) and after.
    data = "".join(parts)
    whole = _stream._narrow_lines().match(data)
    for compiled in (None, _stream._narrow_lines().match):
        _stream._narrow_lines_match = compiled
        assert _stream._lines_end(data, 0) == (0 if whole is None else whole.end())


def test_ascii_floods_need_only_printable_ascii() -> None:
    # ASCII text is matched with [ -~] instead of the whole width-1 class:
    # the same thing, as long as these are the class's only ASCII characters.
    ascii_in_class = [c for c in map(chr, range(128)) if re.fullmatch(narrow_class(), c)]
    assert ascii_in_class == [chr(cp) for cp in range(0x20, 0x7F)]
    flood = "ab c\r\n\r\n~}|\r\nx"
    ascii_lines = _stream._ASCII_LINES.match(flood)
    narrow_lines = _stream._narrow_lines().match(flood)
    assert ascii_lines is not None and narrow_lines is not None
    assert ascii_lines.span() == narrow_lines.span() == (0, len(flood) - 1)


@pytest.mark.parametrize("chunk", [1, 5, 4096, 1 << 20])
def test_a_long_flood_scrolls_into_history(chunk: int) -> None:
    data = b"".join(b"%d\r\n" % i + b"x" * (i % 23) + b"\r\n" for i in range(1, 1501))
    t = Terminal(20, 10, history=100)
    for i in range(0, len(data), chunk):
        t.feed(data[i : i + chunk])
    assert_same_as_stock(t, stock_screen(data, 20, 10, 100))
    assert t.screen.history_rows(trimmed=True)[-1] == "1496"


def _flooded() -> Terminal:
    """A terminal whose rows 0-3 were built by the flood path from their text."""
    t = Terminal(COLS, ROWS, history=HISTORY)
    t.feed(b"".join(b"row%d ab\r\n" % i for i in range(12)))
    assert all(type(t.screen.buffer[y]) is _TextLine for y in range(4))
    return t


def _read_cells(line: Line, cols: int) -> str:
    """A row's text read cell by cell, ignoring any text the row carries."""
    width = max(cols, max(line, default=-1) + 1)
    return "".join(dict.get(line, x, BLANK).data for x in range(width))


_CHANGES: dict[str, Callable[[Line], object]] = {
    "setitem": lambda line: line.__setitem__(2, Cell("Q")),
    "delitem": lambda line: line.__delitem__(0),
    "update": lambda line: line.update({1: Cell("U")}),
    "ior": lambda line: line.__ior__({3: Cell("I")}),
    "setdefault": lambda line: line.setdefault(11, Cell("S")),
    "pop": lambda line: line.pop(1),
    "popitem": lambda line: line.popitem(),
    "clear": lambda line: line.clear(),
}


@pytest.mark.parametrize("name", sorted(_CHANGES))
def test_a_changed_flood_row_forgets_its_text(name: str) -> None:
    t = _flooded()
    line = t.screen.buffer[1]
    _CHANGES[name](line)
    assert type(line) is Line
    assert t.screen.row_text(1) == _read_cells(line, COLS)
    t.feed(b"\r\n" * ROWS)  # the changed row scrolls into history
    assert t.screen.history_rows()[-ROWS + 1] == _read_cells(line, COLS)


@pytest.mark.parametrize(
    "change",
    [
        b"\x1b[2;3H\x1b[2P",  # DCH
        b"\x1b[2;3H\x1b[2@",  # ICH
        b"\x1b[2;3H\x1b[3X",  # ECH
        b"\x1b[2;3H\x1b[K",  # EL
        b"\x1b[2;3H\x1b[44m\x1b[1K\x1b[0m",  # EL with a background
        b"\x1b[44m\x1b[2J\x1b[0m",  # ED with a background
        b"\x1b[2;3HZZ",  # overwrite
        b"\x1b[2;3H\xe4\xb8\xad",  # a wide character
        b"\x1b[2;4He\xcc\x81",  # a combining mark
        b"\x1b[2;3Hx\x1b[3b",  # REP
        b"\x1b[2;3H\x1b[4hIN\x1b[4l",  # insert mode
        b"\x1b#8",  # DECALN
    ],
)
def test_flood_rows_changed_by_the_program_render_from_their_cells(change: bytes) -> None:
    t = _flooded()
    t.feed(change)
    lines = [t.screen.buffer[y] for y in range(ROWS)]
    assert [t.screen.row_text(y) for y in range(ROWS)] == [_read_cells(ln, COLS) for ln in lines]
    t.feed(b"\x1b[5;1H" + b"\r\n" * ROWS)
    assert t.screen.history_rows()[-ROWS:] == [_read_cells(ln, COLS) for ln in lines]


def test_flood_rows_cut_by_a_narrowing_render_from_their_cells() -> None:
    t = _flooded()
    t.resize(5, ROWS)
    lines = [t.screen.buffer[y] for y in range(ROWS)]
    assert [t.screen.row_text(y) for y in range(ROWS)] == [_read_cells(ln, 5) for ln in lines]


_DRAWN_PIECES = st.sampled_from(
    [
        b"abc",
        b"hello world ",
        b"\x1b[1;31m",
        b"\x1b[0m",
        b"\x1b[44m",
        b"\r",
        b"\r\n",
        b"\n",
        b"\x1b[3G",  # CHA
        b"\x1b[2C",  # CUF
        b"\x1b[D",  # CUB
        b"\x1b[A",  # CUU
        b"\x1b[K",
        b"\x1b[1K",
        b"\x1b[2@",
        b"\x1b[P",
        b"\x1b[2X",
        b"\x1b[4h",
        b"\x1b[4l",
        b"\t",
        b"\x08",
        b"\xe4\xb8\xad",  # a wide character
        b"e\xcc\x81",  # a combining mark
        b"x\x1b[2b",  # REP
        b"0123456789",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_DRAWN_PIECES, max_size=40), st.integers(4, 14))
def test_rows_that_keep_their_text_agree_with_their_cells(pieces: list[bytes], cols: int) -> None:
    # Rows drawn left to right from column 0 keep their text (a _TextLine) until
    # anything else touches them; at every point that text is what the cells say.
    t = Terminal(cols, 3, history=50)
    for piece in pieces:
        t.feed(piece)
        screen = t.screen
        for line in [*screen.buffer.values(), *screen.scrollback]:
            if type(line) in (_TextLine, _LazyLine):  # (a _LazyLine's cells filled in)
                assert line.text == _read_cells(line, len(line.text))
                assert sorted(line) == list(range(len(line.text)))
    assert t.screen.history_rows() == [_read_cells(line, cols) for line in t.screen.scrollback]
