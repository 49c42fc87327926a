"""The bulk path (``_bulk``): a long feed that only scrolls skips drawing the rows
that would scroll out of the history, and must end in exactly the state drawing
every byte gives: cells, cursor, history, counters, marks, title, cwd, events,
answers to queries, in any chunking and across resizes."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from operator import eq
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phux.engine import Terminal, _bulk, _stream, native_strip
from phux.engine._cells import Cell, _LazyLine, _TextLine
from phux.engine.checkpoint import write_checkpoint

from .floods import chunked, coloured_session
from .stock import assert_same_as_stock, stock_screen

COLS, ROWS = 12, 5


@pytest.fixture(autouse=True)
def _bulk_on_every_feed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Short feeds do not try the bulk path; these tests' floods are short.
    monkeypatch.setattr(_stream, "_BULK_MIN", 0)
    yield


_WORDS = st.text(alphabet=st.sampled_from("abc XYZ 019.-_~éΩ─"), min_size=1, max_size=30)
_LINE = st.builds(lambda text, end: text + end, _WORDS, st.sampled_from(["\r\n", "\n", "\r\n"]))
_FLOOD = st.lists(_LINE, min_size=1, max_size=40).map("".join)

# What a flood may hold and still only scroll, and what ends the bulk path.
_SCROLLING = st.sampled_from(
    [
        "\r\n",
        "\n",
        "\r",
        "\t",
        "ab\tc",
        "\x07",
        "\x1b[31m",
        "\x1b[1;44m",
        "\x1b[0m",
        "\x1b[m",
        "\x1b[0;32m",
        "\x1b[0m\x1b[01;34m",
        "\x1b[38;5;100m",
        "\x1b[48;2;1;2;3m",
        "\x1b[38;5m\x1b[1m",
        "\x1b[K",
        "\x1b[2K",
        "\x1b[1K",
        "\x1b[3X",
        "\x1b]0;title\x07",
        "\x1b]2;other\x1b\\",
        "\x1b]1;icon\x07",
        "\x1b]7;file://host/tmp/a%20b\x07",
        "\x1b]133;A\x07",
        "\x1b]133;B\x07",
        "\x1b]133;C\x07",
        "\x1b]133;D;1\x07",
        "\x1b]8;;http://x\x07",
        "\x1b]52;c;Zm9v\x07",
        "\x1b]11;?\x07",
        "\x1b]10;?\x1b\\",
    ]
)
_OTHER = st.sampled_from(
    [
        "\x1b[6n",
        "\x1b[c",
        "\x1b[3;4H",
        "\x1b[2J",
        "\x1b[?1049h",
        "\x1b[?1049l",
        "\x1b[2;4r",
        "\x1b[r",
        "\x1b[?7l",
        "\x1b[?7h",
        "\x1b[4h",
        "\x1b[4l",
        "\x1b[20h",
        "\x1b[20l",
        "\x1bH",
        "\x1b[3g",
        "\x1b[?5h",
        "\x1b[?5l",
        "\x1b(0",
        "\x1b(B",
        "\x0e",
        "\x0f",
        "\x08",
        "中文",
        "e\u0301",
        "xyz\x1b[b",
        "\x1bM",
        "\x1b[2S",
        "\x1b]0;cut",
        "\x1b[3",
        "\x1b]0;ti\x1b[1mtle\x07",  # an OSC cut short by an SGR
        "\x1b\x1b]0;x\x07[1m",  # an ESC cut short by an OSC
        "\x1b\x1b[0m[1m",  # an ESC cut short by an SGR
        "\x1b]0;a\nb\x07",  # a line feed inside an OSC
        "\x1b]2;x\x9cy",
    ]
)


@st.composite
def _session(draw: st.DrawFn, other: bool) -> list[bytes | tuple[int, int]]:
    """Chunks of bytes, and resizes (cols, rows) between them."""
    tokens = _FLOOD | _SCROLLING | _OTHER if other else _FLOOD | _SCROLLING
    data = "".join(draw(st.lists(tokens, max_size=40))).encode()
    return chunked(draw, data, cuts=4, resize_one_in=6)


# The strip of escape sequences: the native one-pass strip (phux/engine/_strip.c) and
# the pure path it is checked against; each test parametrized by it runs on both.
_STRIPS = ["native", "pure"]


@contextmanager
def _strip(path: str) -> Iterator[None]:
    if path == "pure":
        with native_strip.pure_path():
            yield
        return
    if native_strip.strip is None:
        pytest.skip("the native strip is not built here (no compiler at install)")
    yield


def test_the_native_strip_is_built_where_ci_runs() -> None:
    """CI's machines have a compiler: there the native strip must be built and
    tested, not silently left to the pure path (setup.py makes it optional)."""
    if os.environ.get("CI") != "true":
        pytest.skip("only CI must have it")
    assert native_strip.strip is not None


def _run(session: list[bytes | tuple[int, int]], history: int, bulk: bool) -> Terminal:
    t = Terminal(COLS, ROWS, history=history)
    t.stream.bulk = bulk
    for item in session:
        if isinstance(item, tuple):
            t.resize(*item)
        else:
            t.feed(item)
    return t


def _views(t: Terminal) -> tuple[Any, ...]:
    """What reads history rows without their cells (``_LazyLine``: rows the bulk path
    kept in the history are built from their text and pens only), read before
    anything fills them in: projections with styles and all the history, logical
    lines, a checkpoint."""
    return (
        t.project_data(scrollback=0, cells=True),
        t.project_data(scrollback=3, cells=True, version=3),
        t.logical_lines(scrollback=0),
        t.screen.history_wrapped(),
        write_checkpoint(t),
    )


def _state(t: Terminal) -> tuple[Any, ...]:
    s = t.screen
    views = _views(t)  # first: the rows' cells read below fill them in

    def rows(buffer: Any) -> list[tuple[dict[int, Any], bool, Any]]:
        return [(dict(buffer[y]), buffer[y].wrapped, buffer[y].default) for y in range(s.lines)]

    return (
        views,
        rows(s.buffer),
        rows(s.main_buffer) if s.main_buffer is not None else None,
        [(dict(line), line.wrapped, line.default) for line in s.scrollback],
        s.history_rows(),
        s.history_rows(trimmed=True),
        s._unrendered,
        s.scrolled_off,
        (s.cursor.x, s.cursor.y, s.cursor.attrs, s.cursor.hidden),
        s.last_char,
        s.alternate,
        s.mode,
        s.margins,
        s.tabstops,
        (s.title, s.icon_name, s.cwd, s.hyperlink, s.semantic, s.bell_count),
        t.take_events(),
        t.take_replies(),
        t.stream.errors,
        t.project_data(scrollback=0, cells=True),
        # The shell's commands, rows included (times come from the clock: left out).
        [
            (r.command, r.cwd, r.exit_code, r.start_row, r.start_col, r.end_row, r.end_col)
            for r in s.shell.commands
        ],
        (s.shell.phase, s.shell.cycle),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_session(other=True), st.sampled_from([0, 1, 3, 20]))
def test_bulk_path_same_as_drawing_every_byte(
    session: list[bytes | tuple[int, int]], history: int
) -> None:
    fast = _run(session, history, bulk=True)
    slow = _run(session, history, bulk=False)
    assert _state(fast) == _state(slow)


@pytest.mark.parametrize("strip", _STRIPS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_session(other=False), st.sampled_from([0, 3, 20]))
def test_floods_that_only_scroll_same_as_drawing_every_byte(
    strip: str, session: list[bytes | tuple[int, int]], history: int
) -> None:
    with _strip(strip):
        fast = _run(session, history, bulk=True)
    slow = _run(session, history, bulk=False)
    assert _state(fast) == _state(slow)


_STOCK_SAFE = st.sampled_from(
    ["\r\n", "\n", "\r", "\x1b[31m", "\x1b[1;44m", "\x1b[0m", "\x1b[0;32m", "\x1b]0;t\x07"]
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_FLOOD | _STOCK_SAFE, max_size=30), st.sampled_from([0, 3, 20]))
def test_bulk_path_same_as_stock(parts: list[str], history: int) -> None:
    data = "".join(parts).encode()
    t = Terminal(COLS, ROWS, history=history)
    t.feed(data)
    assert_same_as_stock(t, stock_screen(data, COLS, ROWS, history))


def _flood(lines: int, width: int = 7) -> str:
    return "".join(f"{i:0{width}d}\x1b[0;3{i % 8}mab\x1b[0m\r\n" for i in range(lines))


@pytest.mark.parametrize("history", [0, 10, 100])
def test_a_long_flood_is_skipped_not_drawn(history: int, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Terminal(COLS, ROWS, history=history)
    text = _flood(1000)
    built: list[int] = []
    styled_rows = _bulk._styled_rows

    def spy(stream: Any, data: str, start: int, end: int) -> int:
        built.append(data.count("\n", start, end))
        return styled_rows(stream, data, start, end)

    monkeypatch.setattr(_bulk, "_styled_rows", spy)
    pos, _later = _bulk.skip(t.stream, text, 0)
    # Everything but what the screen and the history keep (one line is one row) is
    # skipped; those coloured lines are then built as rows directly.
    kept = ROWS - 1 + history
    assert built == [kept]
    assert pos == len(text)
    assert t.screen.scrolled_off == 1000 - (ROWS - 1)
    assert t.screen.history_rows(trimmed=True)[-1:] == ([] if not history else ["0000995ab"])


def test_skipped_rows_are_counted_with_wraps_tabs_and_bare_line_feeds() -> None:
    text = ("x" * 30 + "\r\n" + "a\tb\tc\n" + "\r" + "y" * 13 + "\r\n") * 200
    fast = Terminal(COLS, ROWS, history=7)
    fast.feed(text.encode())
    slow = Terminal(COLS, ROWS, history=7)
    slow.stream.bulk = False
    slow.feed(text.encode())
    assert fast.screen.scrolled_off == slow.screen.scrolled_off > 1000
    assert _state(fast) == _state(slow)


def test_nothing_is_skipped_when_a_query_needs_the_cursor() -> None:
    t = Terminal(COLS, ROWS, history=3)
    assert _bulk.skip(t.stream, "\x1b[6n" + _flood(100), 0) == (0, 0)
    assert _bulk.skip(t.stream, _flood(100)[:50] + "\x1b[6n", 0) == (0, 0)  # too few rows before it
    # Asked to, it says where the text only scrolls again for long enough.
    assert _bulk.skip(t.stream, "\x1b[6n" + _flood(100), 0, retry=True) == (0, 26)
    assert _bulk.skip(t.stream, "\x1b[6n" + _flood(6), 0, retry=True) == (0, 0)


def test_a_flood_after_a_prompt_is_skipped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # The prompt's cursor report is drawn exactly; the flood after it is not drawn.
    text = "$ \x1b[6n\x1b[?2004l\r\n" + _flood(1000) + "\x1b[?2004h$ \x1b]133;A\x07"
    fast = Terminal(COLS, ROWS, history=10)
    skipped: list[int] = []
    skip_scrolls = fast.screen.skip_scrolls
    monkeypatch.setattr(
        fast.screen, "skip_scrolls", lambda n, x: (skipped.append(n), skip_scrolls(n, x))
    )
    fast.feed(text.encode())
    slow = Terminal(COLS, ROWS, history=10)
    slow.stream.bulk = False
    slow.feed(text.encode())
    assert _state(fast) == _state(slow)
    assert fast.screen.scrolled_off == 1001 - (ROWS - 1)
    assert skipped == [1001 - 10 - (ROWS - 1) - (ROWS - 1)]


@pytest.mark.parametrize(
    "odd",
    [
        "\x1b]0;ti\x1b[1mtle\x07",  # an OSC cut short by an SGR: "tle" is drawn
        "\x1b\x1b]0;x\x07[1m",  # an ESC cut short by an OSC: "[1m" is drawn
        "\x1b\x1b[0m[1m" + "\x1b[0m" * 9,  # the same by SGR 0, amid many
    ],
)
def test_text_left_by_a_broken_sequence_counts_for_wraps(odd: str) -> None:
    text = ("x" * 10 + odd + "\r\n") * 100
    fast = Terminal(COLS, ROWS, history=3)
    fast.feed(text.encode())
    slow = Terminal(COLS, ROWS, history=3)
    slow.stream.bulk = False
    slow.feed(text.encode())
    assert _state(fast) == _state(slow)


# Repaints of one row (progress bars, counters) and lines longer than the screen
# and its history: the floods without line feeds.
_SEGMENT = st.lists(
    st.sampled_from(["ab", "x", "0123", "─", "é", "~~~~~", "\x1b[K", "\x1b[0K", "\x1b[31m"])
    | st.sampled_from(["\x1b[0m", "\x1b[1;44m", "\x07", "\x1b]0;t\x07", "\x1b[2K", "\x1b[1K"])
    | st.sampled_from(["\x1b[3X", "\x1b[;K", "\x1b[5K", "\t", "\x1b]8;;u\x07", "\x1b[00K"]),
    max_size=8,
).map("".join)


@st.composite
def _repaint_session(draw: st.DrawFn) -> list[bytes | tuple[int, int]]:
    """Segments separated by CRs, now and then a line feed or something that does
    more than scroll, in chunks, with resizes."""
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 3)) == 0:
            parts.append(draw(_OTHER | _SCROLLING | _FLOOD))
        segments = draw(st.lists(_SEGMENT, min_size=1, max_size=30))
        parts.append("\r".join(segments))
    data = "".join(parts).encode()
    return chunked(draw, data, cuts=3, resize_one_in=7)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_repaint_session(), st.sampled_from([0, 1, 3, 20]))
def test_repaints_of_a_row_same_as_drawing_every_byte(
    session: list[bytes | tuple[int, int]], history: int
) -> None:
    fast = _run(session, history, bulk=True)
    slow = _run(session, history, bulk=False)
    assert _state(fast) == _state(slow)


_LONG = st.lists(
    st.sampled_from(["abcdefgh", "x" * 40, "0123456789", "é─", "\x1b[31m", "\x1b[0m", "\x07"])
    | st.sampled_from(["\x1b[K", "\x1b[2X", "\x1b]2;t\x1b\\", "\x1b[1;4m"]),
    min_size=1,
    max_size=60,
).map("".join)


@st.composite
def _long_line_session(draw: st.DrawFn) -> list[bytes | tuple[int, int]]:
    """Lines longer than the screen and its history, some with line feeds or
    other things before, between or after them."""
    parts = [
        draw(_LONG) if draw(st.booleans()) else draw(_OTHER | _SCROLLING | _FLOOD)
        for _ in range(draw(st.integers(1, 6)))
    ]
    data = "".join(parts).encode()
    return chunked(draw, data, cuts=3, resize_one_in=7)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_long_line_session(), st.sampled_from([0, 1, 3, 20]))
def test_long_lines_same_as_drawing_every_byte(
    session: list[bytes | tuple[int, int]], history: int
) -> None:
    fast = _run(session, history, bulk=True)
    slow = _run(session, history, bulk=False)
    assert _state(fast) == _state(slow)


def test_a_progress_bar_draws_only_its_last_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = "".join(f"\r\x1b[32m{i:5d}%\x1b[0m [{'#' * (i % 20):<20}]\x1b[K" for i in range(5000))
    text = "$ run\r\n" + frames + "\r\ndone\r\n"
    drawn: list[str] = []
    fast = Terminal(40, ROWS, history=10)
    draw = fast.screen.draw

    def counted(text: str) -> None:
        drawn.append(text)
        draw(text)

    monkeypatch.setattr(fast.screen, "draw", counted)
    fast.feed(text.encode())
    slow = Terminal(40, ROWS, history=10)
    slow.stream.bulk = False
    slow.feed(text.encode())
    assert _state(fast) == _state(slow)
    assert len(drawn) < 2 * 10  # the frames before it looked like repaints, and the last


def test_one_endless_line_is_skipped_to_its_last_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "$ cat big\r\n" + "".join(f"{i:08d}" for i in range(20_000))
    fast = Terminal(COLS, ROWS, history=20)
    cuts: list[int] = []
    skip_scrolls = fast.screen.skip_scrolls

    def counted(scrolls: int, x: int) -> None:
        cuts.append(scrolls)
        skip_scrolls(scrolls, x)

    monkeypatch.setattr(fast.screen, "skip_scrolls", counted)
    fast.feed(text.encode())
    slow = Terminal(COLS, ROWS, history=20)
    slow.stream.bulk = False
    slow.feed(text.encode())
    assert _state(fast) == _state(slow)
    assert cuts and cuts[0] > 10_000


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_long_line_session(), st.sampled_from([0, 1, 3, 20]), st.booleans())
def test_rows_built_for_a_long_line_same_as_wrapping_one_by_one(
    session: list[bytes | tuple[int, int]], history: int, reverse: bool
) -> None:
    """``EngineScreen._wrap_rows`` (a line of many rows built at once) against
    autowrap one row at a time, both drawing every byte."""
    prefix: list[bytes | tuple[int, int]] = [b"\x1b[?5h"] if reverse else []
    fast = _run(prefix + session, history, bulk=False)
    t = Terminal(COLS, ROWS, history=history)
    t.stream.bulk = False
    t.screen._scrolls_whole = lambda: False  # type: ignore[method-assign]
    for item in prefix + session:
        if isinstance(item, tuple):
            t.resize(*item)
        else:
            t.feed(item)
    assert _state(fast) == _state(t)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab \r", max_size=9), max_size=30), st.integers(1, 12))
def test_line_lengths_counted_block_by_block(lines: list[str], block: int) -> None:
    text = "\r\n".join(line.replace("\r", "") for line in lines)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_bulk, "_BLOCK", block)
        assert _bulk._lengths(text) == Counter(map(len, text.split("\r\n")))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="ab\u00e9", max_size=14), max_size=30),
    st.integers(1, 6),
    st.integers(0, 4),
)
def test_wraps_of_lines_past_the_lines_that_fit(lines: list[str], cols: int, few: int) -> None:
    """The regex that goes past the lines no wider than the screen, the wide ones
    measured one by one and, past ``few`` of them, the rest at once: the wraps of
    every line, as measuring each."""
    text = "\r\n".join(lines)
    wraps = sum((len(line) - 1) // cols for line in lines if len(line) > cols)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_bulk, "_FEW_WIDE", few)
        assert _bulk._wraps_of_lines(text, cols) == wraps


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_a_long_line_from_a_pending_wrap(extra: int) -> None:
    # The cursor waits to wrap at the bottom right; the line after it wraps
    # exactly as many times as the screen and the history need, or one more.
    history = 3
    need = ROWS - 1 + history
    text = "\r\n" * ROWS + "x" * COLS + "y" * (COLS * (need + extra) + 1)
    fast = Terminal(COLS, ROWS, history=history)
    fast.feed(text.encode())
    slow = Terminal(COLS, ROWS, history=history)
    slow.stream.bulk = False
    slow.feed(text.encode())
    assert _state(fast) == _state(slow)
    for cut in range(ROWS * 2 + COLS - 2, ROWS * 2 + COLS + 2):
        fast = Terminal(COLS, ROWS, history=history)
        fast.feed(text[:cut].encode())
        fast.feed(text[cut:].encode())
        assert _state(fast) == _state(slow)


@pytest.mark.parametrize("strip", _STRIPS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.booleans().flatmap(lambda digits: coloured_session(digits)), st.sampled_from([0, 1, 3, 20])
)
def test_coloured_lines_built_as_rows_same_as_drawing_every_byte(
    strip: str, session: list[bytes | tuple[int, int]], history: int
) -> None:
    """Coloured lines (their text with parameter bytes or without: the pure path's
    fast strip takes the latter) end as drawing every byte leaves them."""
    with _strip(strip):
        fast = _run(session, history, bulk=True)
    slow = _run(session, history, bulk=False)
    assert _state(fast) == _state(slow)


# Lines _styled_rows stops at: a control in text before an SGR or after one, a CSI
# whose parameters int() reads but that is no SGR, an EL with an "m" after it.
_NOT_PLAIN = ["\ty", "\x1b[31m\tz", "\x1b[+1mz", "\x1b[2Klorem"]


@pytest.mark.parametrize("stop", _NOT_PLAIN)
def test_coloured_rows_are_built_until_a_line_that_is_not_plain(stop: str) -> None:
    t = Terminal(COLS, ROWS, history=3)
    screen = t.screen
    assert _bulk._styled_rows(t.stream, "\x1b[1mab\r\n", 0, 9) == 0  # not at the bottom
    t.feed(b"\r\n" * ROWS)
    screen.sgr("1")
    lines = ["\x1b[0mab\x1b[31mcd\x1b[0m", "", "\x1b[44m", "x" * COLS, "\x1b[0mlast", stop]
    text = "".join(line + "\r\n" for line in lines)
    at = _bulk._styled_rows(t.stream, text, 0, len(text))
    assert at == text.index(stop)
    slow = Terminal(COLS, ROWS, history=3)
    slow.stream.bulk = False
    slow.feed(b"\r\n" * ROWS)
    slow.screen.sgr("1")
    slow.feed(text[:at].encode())
    assert _state(t) == _state(slow)


@pytest.mark.parametrize("strip", _STRIPS)
@pytest.mark.parametrize("given", ["nothing", "left", "left and bytes"])
def test_escapes_stripped_from_dense_text_never_join(given: str, strip: str) -> None:
    def visible(region: str) -> tuple[str, bool] | None:
        if given == "nothing":
            return _bulk._visible(region)
        raw = region.encode()
        left = raw.translate(None, _bulk._PRINTABLE)
        with _strip(strip):
            return _bulk._visible(region, left, raw if given == "left and bytes" else None)

    assert visible("a\x1b[0mb\x1b[mc\x1b[1;31md\x07" * 40) == ("abcd" * 40, True)
    # Removing the resets would leave "\x1b[31m": the stream draws "1m" after a cut CSI.
    assert visible("\x1b[3\x1b[0m1m" * 40) is None
    assert visible("\x1b[\x1b[m0m" * 40) is None
    # Removing the "ESC [ m"s (each a sequence) would leave one after the lone ESC.
    assert visible("a\x1b[m1\x1b\x1b[m[m" * 40) is None
    assert visible("x\x1b]0;t\x07y\x1b[0m" * 40) == ("xy" * 40, True)


# Coloured text for the fast strip of SGRs (_plain_sgr_text): sequences it takes,
# text with and without parameter bytes, and now and then what it must refuse
# (another CSI, an ESC not followed by "[", parameter bytes around a "[", a cut
# sequence, an OSC).
_TAKEN = st.sampled_from(
    ["\x1b[0m", "\x1b[m", "\x1b[01;34m", "\x1b[38:2::1:2:3m", "\x1b[K", "\x1b[0K", "\x1b[2X"]
)
_REFUSED = st.sampled_from(
    [
        *["\x1b[2J", "\x1b[?25l", "\x1b5[m", "\x1b[1[m", "\x1b[[m", "\x1b\x1b[m", "\x1b[3"],
        # (xterm's modifyOtherKeys is CSI > 4 ; 1 m; ESC 7 saves the cursor)
        *["\x1b]0;t\a", "\x1b[>4;1m", "\x1b[?1m", "\x1bm", "\x1b7"],
    ]
)


@st.composite
def _sgr_text(draw: st.DrawFn) -> str:
    letters = "abmKX \x07" + ("0;:" if draw(st.booleans()) else "") + draw(st.sampled_from("[ "))
    pieces = draw(
        st.lists(
            st.one_of(_TAKEN, st.text(alphabet=letters, max_size=5), st.just("\r\n")),
            max_size=30,
        )
    )
    if draw(st.integers(0, 3)) == 0:
        pieces.insert(draw(st.integers(0, len(pieces))), draw(_REFUSED))
    return "".join(pieces)


@settings(max_examples=400, deadline=None)
@given(_sgr_text(), st.integers(0, 40))
def test_sgrs_stripped_fast_as_the_regex_strips_them(region: str, sample: int) -> None:
    """The fast strip takes exactly the text whose every escape sequence is an SGR,
    EL or ECH and whose text holds no digit, ";", ":" or "[", and leaves what the regex
    leaves; the sample it looks at first (here a short one) only decides sooner."""
    raw = region.encode()
    left = raw.translate(None, _bulk._PRINTABLE)
    saved = _bulk._SAMPLE
    _bulk._SAMPLE = sample
    try:
        fast = _bulk._plain_sgr_text(raw, left.count(b"\x1b"))
    finally:
        _bulk._SAMPLE = saved
    slow = _bulk._visible(region)
    text = _bulk._cells().sub("\x00", region)
    in_text = any(c in "0123456789;:[" for c in text)
    takes = slow is not None and "\x1b]" not in region and not in_text
    assert (fast is not None) == takes
    if fast is not None:
        assert slow is not None
        assert fast.decode() == slow[0]


def _names_flood(lines: int) -> bytes:
    """ls --color's listing of names without digits (what the fast strip takes)."""
    import random

    rng = random.Random(4)
    colours = ["01;34", "01;32", "00", "40;33;01"]
    return "".join(
        "".join(
            f"\x1b[0m\x1b[{rng.choice(colours)}m{rng.choice(['lorem', 'ipsum.py']):<13}\x1b[0m "
            for _ in range(5)
        )
        + "\r\n"
        for _ in range(lines)
    ).encode()


@pytest.mark.parametrize("strip", _STRIPS)
@pytest.mark.parametrize("inside", ["\x1b", "\x1b[", "\x1b[40;3"])
def test_a_feed_cut_inside_a_colour_is_stripped_fast(
    inside: str, strip: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coloured flood fed in two pieces, the first cut inside an SGR (a feed's
    bytes end anywhere): the text of each piece is stripped by the fast path, not
    handed to the regex (several times dearer), and the state is that of drawing
    every byte. The native strip takes names with numbers too; the pure path's fast
    strip only names without."""
    data = _names_flood(400)
    stripped: list[bytes | None] = []
    with _strip(strip):
        native = native_strip.strip
        if strip == "native":
            assert native is not None
            data = data.replace(b"lorem", b"lor3m")

            def counted_native(raw: bytes, finals: bytes = b"mKX") -> bytes | None:
                stripped.append(native(raw, finals))
                return stripped[-1]

            monkeypatch.setattr(native_strip, "strip", counted_native)
        else:
            pure = _bulk._plain_sgr_text

            def counted(raw: bytes, escapes: int) -> bytes | None:
                stripped.append(pure(raw, escapes))
                return stripped[-1]

            monkeypatch.setattr(_bulk, "_plain_sgr_text", counted)
        at = data.index(b"\x1b[40;33;01m", len(data) // 2) + len(inside)
        fast = Terminal(40, 5, history=50)
        fast.feed(data[:at])
        fast.feed(data[at:])
    slow = Terminal(40, 5, history=50)
    slow.stream.bulk = False
    slow.feed(data)
    assert len(stripped) == 2
    assert None not in stripped
    assert _state(fast) == _state(slow)


@settings(max_examples=400, deadline=None)
@given(_sgr_text())
def test_the_native_strip_strips_as_the_regex_strips(region: str) -> None:
    """The native strip takes exactly the text whose every escape sequence is an
    SGR, EL or ECH (an OSC is the pure path's, which reports its events), digits and
    ";" in its text or not, and leaves what the regex leaves."""
    with _strip("native"):
        native = native_strip.strip
        assert native is not None
        stripped = native(region.encode())
    slow = _bulk._visible(region)
    takes = slow is not None and "\x1b]" not in region
    assert (stripped is not None) == takes
    if stripped is not None:
        assert slow is not None
        assert stripped.decode() == slow[0]


@pytest.mark.parametrize(
    ("raw", "stripped"),
    [
        (b"", b""),
        (b"\x07", b""),
        (b"a\x07\x07b\x1b[mc\x07", b"abc"),
        (b"\x1b[0;1:2m\x1b[K\x1b[12X1;2m", b"1;2m"),
        # Cut short at the end of the bytes: the stream keeps such a tail for the next
        # feed, the strip must not read past it.
        (b"ab\x1b", None),
        (b"ab\x1b[", None),
        (b"ab\x1b[12;", None),
        (b"ab\x1b[1\x07m", None),  # (a bell inside is no SGR: the bells go after)
        (b"\x1b[1mab\x1b(B", None),
        (b"\x1b]1m", None),  # (the byte after ESC is "[" or nothing is taken)
        (b"\x1bMm", None),
    ],
)
def test_the_native_strip_at_the_ends_of_its_bytes(raw: bytes, stripped: bytes | None) -> None:
    with _strip("native"):
        native = native_strip.strip
        assert native is not None
        assert native(raw) == stripped
        # What lies past the end of the bytes given is not read: a view of the start
        # of longer bytes that would go on into a sequence strips as the bytes alone.
        for tail in (b"[", b"m", b"[m", b"1m"):
            assert native(memoryview(raw + tail)[: len(raw)]) == stripped  # type: ignore[arg-type]
        big = raw * 5000
        assert native(big) == (None if stripped is None else stripped * 5000)


def test_the_native_strip_takes_only_the_finals_it_is_given() -> None:
    with _strip("native"):
        native = native_strip.strip
        assert native is not None
        assert native(b"a\x1b[1mb\x07\x1b[0Kc\x1b[2X", b"mKX") == b"abc"
        assert native(b"a\x1b[1mb\x07c", b"m") == b"abc"
        assert native(b"a\x1b[1mb\x1b[0Kc", b"m") is None
        assert native(b"a\x1b[2Xb", b"mK") is None
        assert native(b"a\x1b[mb", b"") is None
        with pytest.raises(TypeError):
            native(b"a", "m")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            native("a")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            native(b"a", b"m", b"K")  # type: ignore[call-arg]


def test_a_reset_after_reverse_video_is_reverse_whatever_came_before() -> None:
    # The remembered result of "SGR reset" from before DECSCNM no longer holds.
    t = Terminal(COLS, ROWS, history=0)
    t.feed(b"\x1b[7ma\x1b[mb\x1b[7mc\x1b[md\x1b[?5h\x1b[m")
    fresh = Terminal(COLS, ROWS, history=0)
    fresh.feed(b"\x1b[?5h\x1b[m")
    assert t.screen.cursor.attrs == fresh.screen.cursor.attrs
    assert t.screen.cursor.attrs.reverse


def test_coloured_lines_wider_than_the_screen_are_built_as_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ls --color's lines in a narrower pane wrap: the rows the flood keeps are still
    built from the pieces (a row starting mid-run, a line of exactly two widths),
    not drawn one piece at a time, and equal drawing every byte."""
    import random

    rng = random.Random(5)
    colours = ["01;34", "01;32", "00", "40;33;01"]
    lines = [
        "".join(
            f"\x1b[0m\x1b[{rng.choice(colours)}m{rng.choice(['lorem', 'ipsum.py']):<16}\x1b[0m "
            for _ in range(6)
        )
        for _ in range(3000)
    ]
    lines[-5] = "\x1b[1m" + "x" * 160  # exactly two widths: fills its last row
    data = ("\r\n".join(lines) + "\r\n").encode()
    drawn: list[str] = []
    slow = Terminal(80, 24, history=2000)
    slow.stream.bulk = False
    slow.feed(data)
    fast = Terminal(80, 24, history=2000)
    monkeypatch.setattr(fast.screen, "draw", lambda text: drawn.append(text))
    fast.feed(data)
    assert drawn == []  # (the stream draws what it does not build)
    monkeypatch.undo()
    assert _state(fast) == _state(slow)


def _ls_flood(lines: int, cols: int) -> bytes:
    import random

    rng = random.Random(9)
    colours = ["01;34", "01;32", "00", "40;33;01", "7"]
    out = []
    for i in range(lines):
        if i % 5 == 0:
            out.append(f"plain line {i}")  # (one pen)
            continue
        out.append(
            "".join(
                f"\x1b[0m\x1b[{rng.choice(colours)}m{rng.choice(['lorem', 'ipsum.py']):<13}\x1b[0m "
                for _ in range(rng.randint(1, 2 * cols // 14))
            )
        )
    return ("\r\n".join(out) + "\r\n").encode()


_READS: dict[str, Any] = {
    "len": len,
    "bool": bool,
    "in": lambda line: (0 in line, 5 in line, 79 in line, 500 in line, -1 in line, "a" in line),
    "get": lambda line: (line.get(0), line.get(3, "x"), line.get(79), line.get(500, "x")),
    "get-other": lambda line: (line.get(-1), line.get("a", "x")),
    "getitem": lambda line: (line[0], line[7], line[500], line[-2]),
    "iter": list,
    "reversed": lambda line: list(reversed(line)),
    "keys": lambda line: list(line.keys()),
    "values": lambda line: list(line.values()),
    "items": lambda line: sorted(line.items()),
    "dict": dict,
    "unpack": lambda line: {**line},
    "sorted": sorted,
    "copy": lambda line: dict(line.copy()),
    "copy.copy": lambda line: dict(__import__("copy").copy(line)),
    "repr": repr,
    # (a plain dict on the left: the row's own __eq__ is still asked first)
    "eq": lambda line: (line == {}, line == {0: Cell("x")}, eq({}, line), line != {}),
    "or": lambda line: (line | {0: Cell("Q")}, {999: Cell("Q")} | line),
    "setitem": lambda line: (line.__setitem__(2, Cell("Q")), dict(line)),
    "update": lambda line: (line.update({1: Cell("U")}), dict(line)),
    "pop": lambda line: (line.pop(0, None), dict(line)),
    "clear": lambda line: (line.clear(), dict(line)),
}


@pytest.mark.parametrize("cols", [80, 23])
def test_history_rows_built_without_cells_read_as_drawn_rows(cols: int) -> None:
    """The rows a flood keeps in the history are built from their text and pens
    only (``_LazyLine``): what reads only those (history text, projections with
    styles, logical lines, checkpoints) leaves them so, and any read of a row's
    cells (single cells, iteration, comparison, copies, changes) answers as the
    row drawing every byte left, filled in first where it must be."""
    data = _ls_flood(3000, cols)
    fast = Terminal(cols, 24, history=2000)
    fast.feed(data)
    slow = Terminal(cols, 24, history=2000)
    slow.stream.bulk = False
    slow.feed(data)
    history = list(fast.screen.scrollback)
    lazy = [line for line in history if type(line) is _LazyLine]
    assert len(lazy) > 1500
    assert any(len(line.runs[1]) > 1 for line in lazy)
    assert all(type(line) is not _LazyLine for line in fast.screen.buffer.values())
    assert _views(fast) == _views(slow)
    # The shell marks' code reads a row's text cell by cell (get), rows by number.
    first = fast.screen.shell.first_row()
    assert first == slow.screen.shell.first_row()
    for row in range(first, first + 2000, 7):
        assert fast.screen.shell.text(row, 3, 70) == slow.screen.shell.text(row, 3, 70)
    assert sum(type(line) is _LazyLine for line in history) == len(lazy)
    pairs = list(zip(fast.screen.scrollback, slow.screen.scrollback, strict=True))
    for i, (name, read) in enumerate(_READS.items()):
        for row, peer in pairs[i * 40 : i * 40 + 40]:  # (each read on rows of its own)
            assert type(row) is type(peer) or type(row) is _LazyLine, name
            assert read(row) == read(peer), name
            assert type(row) is not _LazyLine or name in ("len", "bool", "in", "get", "getitem")
            if name.startswith(("set", "update", "pop", "clear")):
                assert type(row) is type(peer)  # (a plain Line now: text forgotten)
    for row, peer in zip(fast.screen.scrollback, slow.screen.scrollback, strict=True):
        assert row == peer
        assert (row.wrapped, row.default) == (peer.wrapped, peer.default)
    assert sum(type(line) is _TextLine for line in fast.screen.scrollback) >= len(lazy) - 400
    assert _state(fast) == _state(slow)
