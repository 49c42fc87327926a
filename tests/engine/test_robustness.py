"""Any byte stream, in any chunking, never raises and keeps the cursor in bounds."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phux.engine import Terminal
from phux.engine._cells import _render_line

_NEVER = re.compile("(?!)")  # matches nothing: wide runs drawn one character at a time

_FRAGMENTS = st.sampled_from(
    [
        b"\x1b",
        b"\x1b[",
        b"\x1b]",
        b"\x1bP",
        b"\x1b_",
        b"\x1b^",
        b"\x1bX",
        b"\x1b\\",
        b"\x07",
        b"\x9b",
        b"\x9d",
        b"\xc2\x9b",
        b"\xc2\x9d",
        b"\xc2\x90",
        b"\xc2\x9c",
        b"?",
        b">",
        b"<",
        b"=",
        b";",
        b":",
        b"$",
        b"!",
        b" ",
        b"'",
        b"(",
        b")",
        b"#",
        b"%",
        b"0",
        b"1",
        b"9",
        b"99999",
        b"1049",
        b"h",
        b"l",
        b"m",
        b"H",
        b"J",
        b"K",
        b"M",
        b"L",
        b"r",
        b"S",
        b"T",
        b"b",
        b"c",
        b"n",
        b"s",
        b"u",
        b"@",
        b"P",
        b"X",
        b"Z",
        b"`",
        b"\r",
        b"\n",
        b"\t",
        b"\x08",
        b"\x0e",
        b"\x0f",
        b"\x18",
        b"\x1a",
        b"\x00",
        b"\x7f",
        "中".encode(),
        "❤️".encode(),
        "é".encode(),
        b"\xcc\x81",
        b"\xe2\x80\x8d",
        b"\xff",
        b"\xe4\xb8",
        b"abc",
        b"133;A",
        b"133;D;1",
        b"7;file:///tmp",
        b"8;;http://x",
    ]
)

_STREAM = st.one_of(
    st.binary(max_size=300),
    st.lists(_FRAGMENTS, max_size=120).map(b"".join),
)


@st.composite
def _chunked(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(_STREAM)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return data, chunks


def _check(t: Terminal) -> None:
    screen = t.screen
    assert 0 <= screen.cursor.x <= t.cols
    assert 0 <= screen.cursor.y < t.rows
    state = t.project(scrollback=0, cells=True)
    assert len(state.lines) == t.rows
    if state.cursor is not None:
        assert 0 <= state.cursor.x < t.cols
        assert 0 <= state.cursor.y < t.rows
    for cell in state.cells or []:
        assert 0 <= cell.col < t.cols and 0 <= cell.row < t.rows
    t.logical_lines(0)
    t.take_replies()
    t.take_events()
    # The incrementally rendered scrollback text matches a fresh render.
    fresh = [_render_line(line, t.cols).rstrip(" ") for line in t.screen.scrollback]
    assert state.scrollback == fresh


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chunked(), st.integers(1, 12), st.integers(1, 6))
def test_never_raises_and_cursor_stays_in_bounds(
    sample: tuple[bytes, list[bytes]], cols: int, rows: int
) -> None:
    _data, chunks = sample
    t = Terminal(cols, rows, history=5)
    for i, chunk in enumerate(chunks):
        t.feed(chunk)
        assert 0 <= t.screen.cursor.x <= t.cols
        assert 0 <= t.screen.cursor.y < t.rows
        if i % 2:
            t.project(scrollback=0)
    _check(t)
    assert t.stream.errors == 0


@settings(max_examples=100, deadline=None)
@given(_chunked(), st.integers(1, 12), st.integers(1, 6), st.integers(1, 12), st.integers(1, 6))
def test_resize_midstream(
    sample: tuple[bytes, list[bytes]], cols: int, rows: int, cols2: int, rows2: int
) -> None:
    _data, chunks = sample
    t = Terminal(cols, rows, history=50)
    half = len(chunks) // 2
    for chunk in chunks[:half]:
        t.feed(chunk)
    t.resize(cols2, rows2)
    _check(t)
    for chunk in chunks[half:]:
        t.feed(chunk)
    _check(t)


@settings(max_examples=150, deadline=None)
@given(_chunked())
def test_chunking_does_not_change_the_result(sample: tuple[bytes, list[bytes]]) -> None:
    data, chunks = sample
    whole = Terminal(10, 4, history=20)
    whole.feed(data)
    pieces = Terminal(10, 4, history=20)
    for chunk in chunks:
        pieces.feed(chunk)
    assert pieces.project(scrollback=0, cells=True) == whole.project(scrollback=0, cells=True)
    assert pieces.take_replies() == whole.take_replies()
    assert pieces.take_events() == whole.take_events()
    assert pieces.modes == whole.modes


def test_huge_parameters_and_long_strings() -> None:
    t = Terminal(10, 4)
    t.feed(b"\x1b[" + b"9" * 5000 + b"A\x1b[" + b";" * 5000 + b"m")
    t.feed(b"\x1b]0;" + b"x" * 200_000 + b"\x07ok")
    t.feed(b"\x1bP" + b"y" * 200_000)
    t.feed(b"\x1b\\fine")
    _check(t)
    assert t.project().lines[0] == "okfine"


_LINE_TEXT = st.text(alphabet=st.sampled_from("ab c-中文é😀"), max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE_TEXT, min_size=1, max_size=30), st.integers(3, 15), st.integers(2, 6))
def test_logical_lines_give_back_every_printed_line(lines: list[str], cols: int, rows: int) -> None:
    """What ``run`` relies on: every line printed, wrapped or scrolled into history."""
    t = Terminal(cols, rows, history=10_000)
    t.feed("\r\n".join(lines).encode())
    got = t.logical_lines(0)
    while len(got) > len(lines) and got[-1] == "":
        got.pop()
    assert got == [line.rstrip(" ") for line in lines]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(["中文", "字", "ab", " ", "\r\n", "\x1b[1;3H", "\x1b[31m", "\x1b[4h"])
        | st.sampled_from(["\x1b[4l", "\x1b[?7l", "\x1b[?7h", "é", "\x1b[2D", "ｆｕｌｌ"]),
        max_size=40,
    ),
    st.integers(1, 9),
)
def test_wide_fast_path_matches_per_character_drawing(parts: list[str], cols: int) -> None:
    from phux.engine import _draw

    data = "".join(parts).encode()
    fast = Terminal(cols, 4, history=20)
    fast.feed(data)
    original = _draw.wide_run
    _draw.wide_run = lambda: _NEVER  # type: ignore[assignment]
    try:
        slow = Terminal(cols, 4, history=20)
        slow.feed(data)
    finally:
        _draw.wide_run = original
    assert fast.project(scrollback=0, cells=True) == slow.project(scrollback=0, cells=True)
    assert fast.screen.cursor.x == slow.screen.cursor.x


def test_erase_saved_lines_keeps_the_screen() -> None:
    from phux.engine import Terminal

    term = Terminal(10, 3)
    term.feed(b"1\r\n2\r\n3\r\n4\r\nabc\x1b[3J")
    state = term.project(scrollback=0)
    assert state.lines == ["3", "4", "abc"]
    assert state.scrollback == []


def test_vpa_in_origin_mode_without_a_region_stays_on_screen() -> None:
    from phux.engine import Terminal

    term = Terminal(10, 5)
    term.feed(b"\x1b[?6h\x1b[9dX")
    state = term.project()
    assert state.cursor is not None and state.cursor.y == 4
    assert state.lines[4] == "X"
    term.feed(b"\x1b[2;4r\x1b[2dY")  # with a region: row 2 of the region
    assert term.project().lines[2] == "Y"


_SGR_PARAM = st.sampled_from(["", "0", "1", "4", "7", "22", "31", "39", "5", "2", "38", "48", "58"])
_SGR_SEQUENCE = st.lists(
    st.one_of(_SGR_PARAM, st.integers(0, 255).map(str)), min_size=0, max_size=6
).map(lambda params: "\x1b[" + ";".join(params) + "m")


@settings(max_examples=400, deadline=None)
@given(st.lists(_SGR_SEQUENCE, min_size=2, max_size=5))
def test_a_run_of_sgr_sequences_is_its_sequences_one_by_one(run: list[str]) -> None:
    # The stream applies back-to-back SGRs as one; that must never let one
    # sequence's parameters complete another's extended colour (38;5 / 38;2).
    whole = Terminal(8, 2)
    whole.feed(("".join(run) + "X").encode())
    apart = Terminal(8, 2)
    for sequence in run:
        apart.feed(sequence.encode())  # one feed call each: never merged
    apart.feed(b"X")
    assert whole.screen.buffer[0][0] == apart.screen.buffer[0][0]
    assert whole.project(cells=True) == apart.project(cells=True)


def test_an_extended_colour_short_of_its_index_does_not_take_the_next_sgrs() -> None:
    t = Terminal(8, 2)
    t.feed(b"\x1b[38;5m\x1b[1mX")
    cell = t.screen.buffer[0][0]
    assert cell.bold and cell.fg == "default"


# Pieces of OSC 7 payloads: what shells send, and what urllib treats specially.
_URL_PARTS = (
    st.sampled_from(["file:", "file://", "/", "//", "host", "a", "é", ":", ";", "?", "#", " "])
    | st.sampled_from(["%20", "%", "%2", "%e9", "%C3%A9", "%ff", "%g1", "%%41", "%2g", "%a"])
    | st.sampled_from(["[", "]", "[::1]", "\t", "\n", "\r", "\x01"])
)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(["", "file:", "file://", "file:///"]), st.lists(_URL_PARTS, max_size=12))
def test_osc7_cwd_is_what_urllib_parses(start: str, parts: list[str]) -> None:
    # _parse_cwd takes the URLs shells send apart itself (no urllib import).
    from urllib.parse import unquote, urlparse

    from phux.engine._osc import _parse_cwd

    value = start + "".join(parts)

    def outcome(parse: Callable[[str], str]) -> object:
        try:
            return parse(value)
        except ValueError as e:
            return type(e)

    def by_urllib(value: str) -> str:
        return unquote(urlparse(value).path) if value.startswith("file:") else value

    assert outcome(_parse_cwd) == outcome(by_urllib)


def test_a_shells_osc7_is_parsed_without_urllib() -> None:
    code = (
        "import sys\n"
        "from phux.engine import Terminal\n"
        "t = Terminal()\n"
        "t.feed(b'\\x1b]7;file://host/tmp/a%20b\\x07')\n"
        "print(repr(t.cwd), 'urllib.parse' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.split("\n")[0] == "'/tmp/a b' False"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(["中文", "字", "ab", " ", "\r\n", "\x1b[1;3H", "\x1b[31m", "\x1b[4h"])
        | st.sampled_from(["\x1b[4l", "\x1b[?7l", "é", "❯ ", "e\u0301", "\x1b[2D", "ｆｕｌｌ"]),
        max_size=40,
    ),
    st.integers(1, 9),
)
def test_a_few_non_ascii_characters_are_drawn_as_many_are(parts: list[str], cols: int) -> None:
    from phux.engine import _draw

    data = "".join(parts).encode()
    original = _draw._FEW_NON_ASCII
    drawn = []
    for few in (-1, 1 << 30):  # never few (runs), always few (one by one)
        _draw._FEW_NON_ASCII = few
        try:
            t = Terminal(cols, 4, history=20)
            t.feed(data)
        finally:
            _draw._FEW_NON_ASCII = original
        drawn.append((t.project(scrollback=0, cells=True), t.screen.cursor.x))
    assert drawn[0] == drawn[1]
