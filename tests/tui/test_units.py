"""Unit tests of attach's pieces: the query filter, the detach key, the painter."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phux.engine import Terminal
from phux.tui.keys import Command, DetachKeyError, KeyReader, parse_detach_key
from phux.tui.paint import Painter
from phux.tui.queries import MAX_HELD, QueryFilter

# ---------------------------------------------------------------- query filter

STRIPPED = [
    b"\x1b[c",
    b"\x1b[0c",
    b"\x1b[0;0c",  # answered by the server (a first parameter of 0): issue 15
    b"\x1b[>0;1c",
    b"\x1b[0\r;0c",  # C0 controls inside are executed, the query still answered
    b"\x1b[\xc2\x85c",  # so are C1 code points, skipped
    b"\x1b[>c",
    b"\x1b[>0c",
    b"\x1b[=c",
    b"\x1b[5n",
    b"\x1b[6n",
    b"\x1b[?6n",
    b"\x1b[?2004$p",
    b"\x1b[4$p",
    b"\x1b[>q",
    b"\x1b[>0q",
    b"\x1b[?u",
    b"\x1b[?4m",
    b"\x1b[18t",
    b"\x1b[14;2t",
    b"\x1b[1x",
    b"\x1b]10;?\x07",
    b"\x1b]11;?\x1b\\",
    b"\x1b]12;?\x07",
    b"\x1b]4;1;?\x07",
    b"\x1b]52;c;?\x07",
    b"\x1bP$qm\x1b\\",
    b'\x1bP$q"p\x1b\\',
    b"\x1bP+q544e\x1b\\",
    b"\x1bZ",
    b"\x05",
]

# Not queries, but kept from the person's terminal as tmux keeps them by default.
DROPPED = [
    b"\x1b]52;c;aGVsbG8=\x07",  # a clipboard write
    b"\x1b]52;;aGVsbG8=\x1b\\",
    b"\x1b]52;c;aGVs\x18",  # aborted
    b"\x1bP1$r0m\x1b\\",  # any DCS
    b"\x1bPq#0;2;0;0;0#0!10~\x1b\\",  # sixel
    b"\x1bPtmux;\x1b\x1b]52;c;aGVsbG8=\x07\x1b\\",  # tmux passthrough
    b"\x1bPtmux;\x1b\x1b]2;x\x07\x1b\x1b[31m\x1b\\",
    b"\x1b_Gf=100;AAAA\x1b\\",  # kitty graphics
    b"\x1b_Ga=q,i=31;AAAA\x1b\\",
    b"\x1b^privacy message\x1b\\",  # PM
    b"\x1bXstart of string\x1b\\",  # SOS
    # OSCs tmux does not pass: only titles, hyperlinks, the clipboard and colours do.
    b"\x1b]7;file://host/tmp\x07",  # the pane's cwd
    b"\x1b]133;A\x07",  # the pane's prompt marks
    b"\x1b]9;a notification\x07",
    b"\x1b]777;notify;title;body\x1b\\",
    b"\x1b]99;;kitty notification\x1b\\",
    b"\x1b]1337;File=name=eA==;inline=0:AAAA\x07",  # iTerm2: save a file
    b"\x1b]1337;SetUserVar=k=dg==\x07",
    b"\x1b]50;SetProfile=x\x07",
    b"\x1b];no code\x07",
    b"\x1b]\x07",
    # What moves, resizes, iconifies, raises or lowers the person's window (XTWINOPS).
    b"\x1b[8;5;5t",
    b"\x1b[8;24;80t",
    b"\x1b[3;0;0t",
    b"\x1b[2t",
    b"\x1b[1t",
    b"\x1b[5t",
    b"\x1b[9;1t",
    b"\x1b[10;1t",
    b"\x1b[48t",
    # Hyperlinks of a scheme that runs something, or with control characters.
    b"\x1b]8;;javascript:alert(1)\x07",
    b"\x1b]8;;JavaScript:alert(1)\x1b\\",
    b"\x1b]8;;data:text/html,x\x07",
    b"\x1b]8;;vscode://file/x\x07",
    b"\x1b]8;;no-scheme\x07",
    b"\x1b]8;id=\x01x;https://example.com\x07",
    b"\x1b]8;;https://exa\rmple.com\x07",
    b"\x1b]8;;https://a\xc2\x9bb\x07",
]

KEPT = [
    b"\x1b[31;1m",
    b"\x1b[2J",
    b"\x1b[?1049h",
    b"\x1b[?2004h",
    b"\x1b[>4;2m",
    b"\x1b[>1n",
    b"\x1b[22;0t",
    b"\x1b[23;0t",
    b"\x1b]8;id=1;https://example.com/a?b=c\x1b\\link\x1b]8;;\x1b\\",
    b"\x1b]8;;mailto:a@example.com\x07a\x1b]8;;\x07",
    b"\x1b]8;;file:///tmp/x\x07f\x1b]8;;\x07",
    b"\x1b[!p",
    b"\x1b[2 q",
    b"\x1b]0;a title\x07",
    b"\x1b]2;t\x1b\\",
    b"\x1b]8;;http://x\x07link\x1b]8;;\x07",
    b"\x1b]11;#000000\x07",
    b"\x1b]4;1;#ff0000\x1b\\",
    b"\x1b]104\x07",
    b"\x1b]112\x07",
    b"\x1b(0lqk\x1b(B",
    b"\x1b7\x1b8",
    b"\x1b=\x1b>",
    b"\x1bM",
    "héllo wörld ✓ 中文".encode(),
    "\x1b]2;tïtle ✓\x07".encode(),
]

# Titles reach the person without control characters.
CLEANED = [
    (b"\x1b]2;ti\x08tle\x0e\x7f\x1b\\", b"\x1b]2;title\x1b\\"),
    (b"\x1b]0;a\xc2\x9bb\xc2\x85c\x07", b"\x1b]0;abc\x07"),
    (b"\x1b]1;a\rb\nc\x07", b"\x1b]1;abc\x07"),
]


def feed_in_pieces(data: bytes, sizes: list[int]) -> bytes:
    f = QueryFilter()
    out = b""
    i = 0
    for size in sizes:
        out += f.feed(data[i : i + size])
        i += size
    return out + f.feed(data[i:])


@pytest.mark.parametrize("seq", STRIPPED)
def test_queries_are_stripped(seq: bytes) -> None:
    f = QueryFilter()
    assert f.feed(b"a" + seq + b"b") == b"a" + _want(seq) + b"b"
    assert f.removed == 1


@pytest.mark.parametrize("seq", DROPPED)
def test_clipboard_writes_and_dcs_apc_pm_sos_are_dropped(seq: bytes) -> None:
    f = QueryFilter()
    assert f.feed(b"a" + seq + b"b") == b"ab"
    assert f.removed == 1


def test_a_title_too_long_to_hold_is_dropped_however_it_is_cut() -> None:
    title = b"\x1b]2;" + b"T" * MAX_HELD + b"\x07"
    assert QueryFilter().feed(b"a" + title + b"b") == b"ab"
    assert feed_in_pieces(b"a" + title + b"b", [100, 4000]) == b"ab"
    fits = b"\x1b]2;" + b"T" * (MAX_HELD - 10) + b"\x07"
    assert QueryFilter().feed(fits) == fits
    assert feed_in_pieces(fits, [100, 4000]) == fits


@pytest.mark.parametrize(("seq", "clean"), CLEANED)
def test_titles_lose_their_control_characters(seq: bytes, clean: bytes) -> None:
    f = QueryFilter()
    assert f.feed(b"a" + seq + b"b") == b"a" + clean + b"b"


def test_clipboard_writes_pass_when_allowed_but_never_reads() -> None:
    f = QueryFilter(allow_clipboard=True)
    write = b"\x1b]52;c;aGVsbG8=\x07"
    assert f.feed(b"a" + write + b"b\x1b]52;c;?\x07c") == b"a" + write + b"bc"
    long = b"\x1b]52;c;" + b"Q" * (2 * MAX_HELD) + b"\x07"
    assert f.feed(long[:100]) + f.feed(long[100:]) == long


@pytest.mark.parametrize("seq", KEPT)
def test_everything_else_passes_unchanged(seq: bytes) -> None:
    f = QueryFilter()
    assert f.feed(b"a" + seq + b"b") == b"a" + seq + b"b"
    assert f.removed == 0


def _want(s: bytes) -> bytes:
    if s in STRIPPED or s in DROPPED:
        return b"\r" if s == b"\x1b[0\r;0c" else b""
    return dict(CLEANED).get(s, s)


ALL = STRIPPED + DROPPED + KEPT + [seq for seq, _ in CLEANED]


def test_split_at_every_byte() -> None:
    data = b"".join(b"x" + s for s in ALL)
    want = b"".join(b"x" + _want(s) for s in ALL)
    assert QueryFilter().feed(data) == want
    assert feed_in_pieces(data, [1] * len(data)) == want
    rng = random.Random(7)
    for _ in range(50):
        sizes = [rng.randint(1, 9) for _ in range(len(data))]
        assert feed_in_pieces(data, sizes) == want


def test_long_strings_stream_without_being_held() -> None:
    f = QueryFilter()
    head = b"\x1b]11;rgb:" + b"Q" * (MAX_HELD + 10)
    out = f.feed(head)
    assert out == head  # decided (not a query) and streamed
    assert f.feed(b"QQ") == b"QQ"
    assert f.feed(b"\x1b") == b""
    assert f.feed(b"\\after\x1b[6n") == b"\x1b\\after"


@pytest.mark.parametrize(
    "head",
    [
        b"\x1b]52;c;",
        b"\x1b]2;",
        b"\x1b]1337;File=inline=1:",  # an iTerm2 image or file
        b"\x1b_Gf=100,a=T;",
        b"\x1bPq",
        b"\x1bPtmux;\x1b\x1b]52;c;",
    ],
)
def test_long_dropped_strings_are_dropped_as_they_stream(head: bytes) -> None:
    # A megabyte image or clipboard write: never held, never shown, in any reads.
    f = QueryFilter()
    assert f.feed(b"before" + head + b"Q" * (MAX_HELD + 10)) == b"before"
    assert f.feed(b"Q" * 100_000) == b""
    assert f.feed(b"QQ\x1b") == b""
    assert f.feed(b"\\after\x1b[31m") == b"after\x1b[31m"
    # Aborted by a new sequence: that sequence is kept.
    f = QueryFilter()
    assert f.feed(head + b"Q" * (MAX_HELD + 10) + b"\x1b") == b""
    assert f.feed(b"[1mX") == b"\x1b[1mX"


def test_aborted_sequences_pass_as_the_terminal_would_see_them() -> None:
    f = QueryFilter()
    # CAN where the query was: what follows cannot continue the aborted title.
    assert f.feed(b"\x1b]0;title\x1b[6nX") == b"\x1b]0;title\x18X"
    assert f.feed(b"\x1b]0;ti\ttle\x1b[1mX") == b"\x1b]0;title\x1b[1mX"
    assert f.feed(b"\x1b[12\x1b[cY") == b"\x1b[12\x18Y"  # not CSI 12 Y
    assert f.feed(b"\x1b[1\x18Z") == b"\x1b[1\x18Z"


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    parts=st.lists(st.sampled_from([*ALL, b"text", b"\r\n", b"\x1b", b"\x1b\\"]), max_size=30),
    cuts=st.lists(st.integers(min_value=1, max_value=7), max_size=40),
)
def test_chunking_never_changes_the_result(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    assert feed_in_pieces(data, cuts) == QueryFilter().feed(data)


_QUERY_BITS = st.sampled_from(
    [
        b"\x1b[",
        b"\x1b]",
        b"\x1bP",
        b"\x1b_",
        b"\x1b",
        b"?",
        b">",
        b"=",
        b"0",
        b"1",
        b"5",
        b"6",
        b"14",
        b"16",
        b"18",
        b"19",
        b";",
        b":",
        b"$",
        b" ",
        b"c",
        b"n",
        b"q",
        b"t",
        b"m",
        b"p",
        b"Z",
        b"10;?",
        b"11;?",
        b"12;?",
        b"2;title",
        b"52;c;?",
        b"tmux;",
        b"$q",
        b"\x07",
        b"\x1b\\",
        b"\r",
        b"\xc2\x85",
        b"\x18",
        b"x",
    ]
)


@settings(max_examples=1000, derandomize=True, deadline=None)
@given(
    parts=st.lists(_QUERY_BITS, max_size=40),
    cuts=st.lists(st.integers(min_value=1, max_value=7), max_size=20),
)
def test_nothing_the_server_answers_reaches_the_person(parts: list[bytes], cuts: list[int]) -> None:
    """Whatever the program writes, what attach passes holds no query the server's
    replica answers: the person's terminal would answer it a second time."""
    data = b"".join(parts)
    for passed in (QueryFilter().feed(data), feed_in_pieces(data, cuts)):
        t = Terminal(80, 24, history=0)
        t.feed(passed)
        assert t.take_replies() == b"", passed


# ---------------------------------------------------------------- detach key


def test_detach_key_parsing() -> None:
    assert parse_detach_key(None).prefix == 2
    assert parse_detach_key(None).key == ord("d")
    assert parse_detach_key("C-a").prefix == 1
    assert parse_detach_key("C-a x").key == ord("x")
    assert parse_detach_key("^A").prefix == 1
    assert parse_detach_key("C-]").prefix == 29
    assert parse_detach_key("none").prefix is None
    assert parse_detach_key("C-b d").label == "C-b d"
    for bad in ("x", "C-", "C-ab", "C-b d e", "M-x"):
        with pytest.raises(DetachKeyError):
            parse_detach_key(bad)


def test_prefix_reading_keeps_the_detach_keys_rules() -> None:
    s = KeyReader(parse_detach_key(None))
    assert s.feed(b"ls\r") == [b"ls\r"]
    assert s.feed(b"a\x02\x02b") == [b"a\x02b"]
    assert s.feed(b"a\x02Xb") == [b"a\x02Xb"]
    assert s.feed(b"ab\x02") == [b"ab"]
    assert s.feed(b"\x02") == [b"\x02"]
    assert s.feed(b"\x02") == []
    assert s.feed(b"d") == [Command("detach")]
    assert KeyReader(parse_detach_key(None)).feed(b"xy\x02dzz") == [
        b"xy",
        Command("detach"),
        b"zz",
    ]
    off = KeyReader(parse_detach_key("none"))
    assert off.feed(b"\x02d") == [b"\x02d"]


# ---------------------------------------------------------------- painter


def replay(data: bytes, cols: int = 40, rows: int = 10) -> Terminal:
    t = Terminal(cols, rows, history=100)
    t.feed(data)
    return t


def assert_same(a: Terminal, b: Terminal) -> None:
    pa = a.project(cells=True)
    pb = b.project(cells=True)
    assert pa.lines == pb.lines
    assert pa.cursor == pb.cursor
    assert pa.cells == pb.cells
    assert a.modes == b.modes
    assert a.alternate == b.alternate


SCENES = [
    b"plain text\r\nsecond line",
    b"\x1b[1;31mbold red\x1b[0m \x1b[4;38;5;200munder 200\x1b[0m \x1b[48;2;1;2;3mrgb bg",
    b"\x1b[7mreverse\x1b[27m \x1b[2;3;9mfaint italic strike\x1b[m\x1b[44m   \x1b[K",
    "wide 中文 and é combining e\u0301".encode(),
    b"\x1b[?1h\x1b=\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?25l\x1b[5;10Hcursor hidden",
    b"\x1b[3;8rscroll region\x1b[6;1H",
    b"\x1b[2;6r\x1b[?6h\x1b[2;3Horigin mode",
    b"x" * 40 + b"\x1b[?7l",
    b"x" * 40,
    b"\x1b(0lqqk\x1b(B box",
    b"\x1b[35mcolour stays on\x1b[3;3H",
]


@pytest.mark.parametrize("scene", SCENES)
def test_full_paint_recreates_the_screen(scene: bytes) -> None:
    source = replay(scene)
    painted = replay(Painter().full(source, user_alt=False).encode())
    assert_same(source, painted)
    # What follows lands the same way on both (margins, pending wrap, SGR, charset).
    more = b"tail\r\nnext\x1b[Kqx" + b"\r\nscrolling" * 12 + b"\x1b[2;1Hover"
    source.feed(more)
    painted.feed(more)
    assert_same(source, painted)


def test_full_paint_of_the_alternate_screen_keeps_the_main_one() -> None:
    source = replay(b"shell line 1\r\n$ vim\x1b[?1049h\x1b[H\x1b[2J~\r\n~\x1b[1;1Hedit")
    assert source.alternate
    painted = replay(Painter().full(source, user_alt=False).encode())
    assert_same(source, painted)
    # Leaving the alternate screen restores the main one and its cursor, on both.
    for t in (source, painted):
        t.feed(b"\x1b[?1049l")
    assert_same(source, painted)
    assert source.project().lines[1] == "$ vim"


def test_full_paint_from_the_alternate_screen() -> None:
    painter = Painter()
    first = replay(b"\x1b[?1049hin alt")
    screen = replay(painter.full(first, user_alt=False).encode())
    second = replay(b"back in main")
    screen.feed(painter.full(second, user_alt=True).encode())
    assert_same(second, screen)


def test_view_paint_clips_to_the_window() -> None:
    source = replay(b"0123456789abcdef\r\nline two\r\nline three", cols=40, rows=10)
    window = Terminal(8, 3)
    window.feed(Painter().view(source, 8, 3).encode())
    assert window.project().lines == ["01234567", "line two", "line thr"]
    bigger = Terminal(60, 12)
    bigger.feed(b"old junk everywhere" * 30)
    bigger.feed(Painter().view(source, 60, 12).encode())
    assert bigger.project().lines[:3] == ["0123456789abcdef", "line two", "line three"]
    assert all(not line for line in bigger.project().lines[3:])


def test_leave_resets_modes() -> None:
    source = replay(b"\x1b[?1049h\x1b[?1h\x1b[?2004h\x1b[?1000h\x1b[?25l\x1b[31m")
    t = replay(Painter().full(source, user_alt=False).encode())
    t.feed(Painter().leave(user_alt=True).encode())
    modes = t.modes
    assert not t.alternate
    assert not modes.app_cursor and not modes.bracketed_paste and not modes.mouse
    assert modes.cursor_visible


def test_view_paint_follows_the_cursor_down() -> None:
    source = replay(b"\r\n".join(b"row %d" % i for i in range(10)), cols=40, rows=10)
    window = Terminal(20, 4)
    window.feed(Painter().view(source, 20, 4).encode())
    assert window.project().lines == ["row 6", "row 7", "row 8", "row 9"]
    cursor = window.project().cursor
    assert cursor is not None and (cursor.y, cursor.x) == (3, 5)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    data=st.lists(st.sampled_from(list(b"\x1b[]P\\\x07\x18\x05c6n?;>$qa0")), max_size=60).map(
        bytes
    ),
    cuts=st.lists(st.integers(min_value=1, max_value=5), max_size=30),
)
def test_byte_soup_chunking_is_stable(data: bytes, cuts: list[int]) -> None:
    whole = QueryFilter().feed(data)
    assert feed_in_pieces(data, cuts) == whole
    # Only removes: what passes is the input with some sequences taken out.
    it = iter(data)
    assert all(b in it for b in whole)


def test_a_full_row_is_not_followed_by_an_erase() -> None:
    # xterm keeps the cursor on the last column after writing it: an erase there
    # would remove the row's last character.
    source = replay(b"x" * 40 + b"\r\nshort", cols=40, rows=3)
    rows = Painter().rows(source.screen.buffer, source.screen.default_char, 40, 3)
    assert rows[0].endswith("x")
    assert rows[1].endswith("\x1b[K")


def test_first_paint_hands_the_scrollback_over() -> None:
    source = replay(b"\r\n".join(b"\x1b[3%dmline %d\x1b[m" % (i % 8, i) for i in range(50)))
    person = Terminal(40, 10, history=500)
    person.feed(b"the person's own screen")
    person.feed(Painter().full(source, user_alt=False, history=1000).encode())
    assert_same(source, person)
    theirs = [row.rstrip() for row in person.screen.history_rows()]
    ours = [row.rstrip() for row in source.screen.history_rows()]
    assert theirs[-len(ours) :] == ours == [f"line {i}" for i in range(40)]
    assert "the person's own screen" in theirs[: -len(ours)]


def test_a_link_too_long_to_hold_is_dropped_however_it_is_cut() -> None:
    """Its scheme and controls cannot be checked as it streams: dropped, like a title."""
    link = b"\x1b]8;;https://" + b"Q" * MAX_HELD + b"\x07"
    assert QueryFilter().feed(b"a" + link + b"b") == b"ab"
    assert feed_in_pieces(b"a" + link + b"b", [100, 4000]) == b"ab"
