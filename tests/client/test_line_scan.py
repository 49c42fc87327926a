"""wait's line scan (client/line_scan.py) against the engine itself: of plain output fed
in any chunking, the scan searches exactly the logical lines the engine shows, and stops
on anything else rather than guess."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phux.client import line_scan
from phux.client.line_scan import MAX_CARRY, LineScan, plain_text
from phux.engine import Terminal, native_strip

NEEDLE = "RESULT-42"
COLOURS = [b"\x1b[0m", b"\x1b[01;34m", b"\x1b[m", b"\x1b[38;5;208m", b"\x1b[1;31m"]


def _engine_lines(term: Terminal) -> list[str]:
    return term.logical_lines(term.history_size)


def _random_output(rng: random.Random, needle_at: int | None) -> bytes:
    """Lines of text and colours, some wider than the screen, the needle in one of
    them (cut by a colour, at times), never by a CR or LF."""
    out = []
    for i in range(60):
        words = []
        for _ in range(rng.randint(0, 12)):
            words.append(rng.choice(COLOURS) if rng.random() < 0.3 else b"")
            words.append(bytes(rng.choice(b"abcdeRSULT-42 ") for _ in range(rng.randint(1, 9))))
        if i == needle_at:
            split = rng.randint(0, len(NEEDLE))
            colour = rng.choice(COLOURS) if rng.random() < 0.5 else b""
            words.insert(
                rng.randint(0, len(words)),
                NEEDLE[:split].encode() + colour + NEEDLE[split:].encode(),
            )
        out.append(b"".join(words) + b"\r\n")
    return b"".join(out)


def _scan_run(data: bytes, rng: random.Random, prefix_text: bytes) -> tuple[bool, bool]:
    """(what the scan found, what the engine shows) for ``prefix_text`` drawn first,
    then ``data`` fed to both in random pieces."""
    term = Terminal(30, 6, history=1_000)  # (holds every row: 60 lines)
    term.feed(prefix_text)
    scan = LineScan(lambda line: NEEDLE in line, NEEDLE if rng.random() < 0.5 else None)
    scan.start(term.plain_line_prefix())
    assert scan.active
    found = False
    at = 0
    while at < len(data):
        piece = data[at : at + rng.randint(1, 40)]
        at += len(piece)
        term.feed(piece)
        got = scan.feed(piece)
        assert got is not None
        found = found or got
        # Whenever the scan has found nothing, no line the engine shows holds the needle.
        if not found and rng.random() < 0.3:
            assert not any(NEEDLE in line for line in _engine_lines(term))
    return found, any(NEEDLE in line for line in _engine_lines(term))


def test_the_scan_finds_what_the_engine_shows_in_any_chunking() -> None:
    rng = random.Random(28)
    outcomes = set()
    for case in range(30):
        needle_at = rng.choice([None, rng.randint(0, 59)])
        data = _random_output(rng, needle_at)
        prefix = rng.choice([b"", b"$ ", b"x" * 45, b"abcRES", b"\x1b[1mRESU\x1b[0m"])
        found, shown = _scan_run(data, rng, prefix)
        assert found == shown, (case, needle_at, prefix)
        outcomes.add(found)
    assert outcomes == {True, False}


def test_the_line_the_cursor_is_on_counts() -> None:
    # The text before the scan started, on the cursor's line, joins the first line
    # (here across a soft wrap: the line is wider than the screen).
    term = Terminal(10, 4, history=100)
    term.feed(b"0123456789abRES")
    prefix = term.plain_line_prefix()
    assert prefix == "0123456789abRES"
    scan = LineScan(lambda line: NEEDLE in line)
    scan.start(prefix)
    assert scan.feed(b"ULT-") is False
    assert scan.feed(b"42") is True  # (the open line too)
    ended = LineScan(lambda line: NEEDLE in line)
    ended.start(prefix)
    assert ended.feed(b"ULT-42\r\nnext") is True  # (and the line once ended)


# Pieces of output: plain text (digits too), line ends, SGRs, and what is not plain
# (EL and ECH, which the engine's strip takes but plain text may not hold, a bell,
# other sequences, cut ones, a NUL, UTF-8).
_PIECES = st.sampled_from(
    [
        *[b"ab", b"12;3", b"m", b" ", b"\r\n", b"\r", b"\n", b"\x1b[0m", b"\x1b[01;34m"],
        *[b"\x1b[m", b"\x1b[38:2::1:2:3m", b"\x1b[K", b"\x1b[2X", b"\x07", b"\x1b[2J"],
        *[b"\x1b", b"\x1b[", b"\x1b[1", b"\x1bm", b"\x1b]0;t\x07", b"\x00", b"\xc3\xa9"],
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=24).map(b"".join))
def test_plain_text_reads_alike_on_the_native_strip_and_without(data: bytes) -> None:
    """plain_text on the engine's native strip (where built) takes and leaves what the
    pure path does: SGRs removed, anything else that is not plain refused."""
    if native_strip.strip is None:
        pytest.skip("the native strip is not built here (no compiler at install)")
    native = plain_text(data)
    with native_strip.pure_path():
        pure = plain_text(data)
    assert native == pure


def test_what_is_not_plain_stops_the_scan() -> None:
    # A CR that is not a CR LF's overwrites: "result-00" then "RESULT-4" over it shows
    # RESULT-40, which no text between line ends holds.
    assert plain_text(b"result-00\rRESULT-4\r\n") is None
    assert plain_text(b"a\tb\r\n") is None  # a tab moves the cursor
    assert plain_text(b"a\nb\r\n") is None  # a bare LF
    assert plain_text(b"\x1b[2Jx\r\n") is None  # any other sequence
    assert plain_text(b"caf\xc3\xa9\r\n") is None  # UTF-8: columns are not characters
    assert plain_text(b"a\x1b[1;31mb\x1b[0m\r\n") == "ab\r\n"
    # Removing one SGR never makes another one out of what surrounds it: ESC ESC [0m
    # is not an SGR after an ESC, and what follows it is text.
    common = b"\x1b[0m" * 20
    assert plain_text(common + b"\x1b\x1b[0m[31mX\r\n") is None
    scan = LineScan(lambda line: NEEDLE in line)
    scan.start("")
    assert scan.feed(b"RESULT-00\rRESULT-4") is None
    assert not scan.active
    assert scan.feed(b"anything\r\n") is None


def test_an_endless_line_stops_a_regex_scan_only() -> None:
    # A regex may need the whole line: it is searched again with every batch, up to a
    # bound. A text needs only its own length of it: the scan goes on.
    scan = LineScan(lambda line: NEEDLE in line)
    scan.start("")
    assert scan.feed(b"x" * MAX_CARRY) is False
    assert scan.feed(b"x") is None
    text = LineScan(lambda line: NEEDLE in line, NEEDLE)
    text.start("")
    for _ in range(8):
        assert text.feed(b"x" * MAX_CARRY) is False
    assert len(text.prefix) < len(NEEDLE)
    assert text.feed(b"xxRESU") is False
    assert text.feed(b"\x1b[1mLT-4") is False
    assert text.feed(b"2xx") is True


def test_the_engine_vouches_only_for_a_screen_that_scrolls_plainly() -> None:
    term = Terminal(20, 5, history=100)
    term.feed(b"line one\r\nline two\r\nab")
    assert term.plain_line_prefix() == "ab"
    moved = Terminal(20, 5, history=100)
    moved.feed(b"line one\r\nline two\x1b[1;3H")  # text after the cursor, and below it
    assert moved.plain_line_prefix() is None
    below = Terminal(20, 5, history=100)
    below.feed(b"\r\n\r\n\r\nbelow\x1b[1;1H")  # a row below the cursor holds text
    assert below.plain_line_prefix() is None
    for setup in (b"\x1b[?1049h", b"\x1b[2;4r", b"\x1b[?7l", b"\x1b[4h", b"\x1b(0", b"\x1b[?2026h"):
        term = Terminal(20, 5, history=100)
        term.feed(setup)
        assert term.plain_line_prefix() is None, setup
    cut = Terminal(20, 5, history=100)
    cut.feed(b"ab\x1b[1")  # a sequence not ended yet
    assert cut.plain_line_prefix() is None
    wide = Terminal(20, 5, history=100)
    wide.feed("日本".encode())
    assert wide.plain_line_prefix() is None
    # A line that goes on in the history: its start is not on the screen.
    long = Terminal(10, 3, history=100)
    long.feed(b"x" * 44 + b"y")
    assert long.plain_line_prefix() is None
    # Unless its end will do (a text's search): the screen's rows of it, if enough.
    assert long.plain_line_prefix(tail=8) == "x" * 24 + "y"
    assert long.plain_line_prefix(tail=40) is None


# A shell's prompt after a flood: OSC 133 marks and a mode, anything but plain output.
PROMPT = b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07\x1b[?2004h"


def _flood(lines: range) -> bytes:
    return b"".join(b"%d\r\n" % n for n in lines)


def test_lines_before_what_is_not_plain_are_searched_in_the_same_batch() -> None:
    # A loaded client reads a flood's end in one batch: the coloured line, more lines
    # than any history keeps, then the prompt. The scan stops at the prompt, but the
    # lines before it are searched first: the engine looked at next has let the line
    # scroll out of its history (session 12: `wait --regex` missed it so, under load).
    batch = _flood(range(5_000)) + b"\x1b[1mRESULT-\x1b[0m42\r\n" + _flood(range(20_000))
    pattern = re.compile(r"^RESULT-4[0-9]$")
    for found in (
        LineScan(lambda line: pattern.search(line) is not None),
        LineScan(lambda line: NEEDLE in line, NEEDLE),  # (--until)
    ):
        found.start("")
        assert found.feed(batch + PROMPT) is True
        assert not found.active  # (it stopped all the same)
    # Nothing matching before the stop: the engine must be looked at, as before.
    missed = LineScan(lambda line: NEEDLE in line)
    missed.start("")
    assert missed.feed(_flood(range(100)) + PROMPT + b"RESULT-42\r\n") is None
    assert not missed.active


def test_a_line_before_what_is_not_plain_is_met_at_every_split() -> None:
    # The same bytes cut in two at every offset (two batches): the line is met in one
    # of them, whether it ended before the stop or is the line the stop is on.
    pattern = re.compile(r"^RESULT-4[0-9]$")
    for tail in (b"\r\nmore\r\n" + PROMPT, b"\x1b]2;title\x07more\r\n", b"\rover\r\n"):
        data = b"$ 1\r\n\x1b[1mRESULT-\x1b[0m42" + tail
        for cut in range(len(data) + 1):
            for needle in (None, NEEDLE):
                scan = LineScan(lambda line: pattern.search(line) is not None, needle)
                scan.start("")
                first = scan.feed(data[:cut])
                assert first is not None or cut > data.index(tail), (cut, tail)
                met = first or (scan.feed(data[cut:]) if scan.active else None)
                assert met is True, (cut, tail, needle)


def test_a_text_cut_early_in_its_line_is_met() -> None:
    # The scan of a text keeps the open line's last characters (the text's length less
    # one): a line shorter than that so far is kept whole.
    line = b"ab RESULT-42 cd\r\n"
    for cut in range(len(line) + 1):
        scan = LineScan(lambda text: NEEDLE in text, NEEDLE)
        scan.start("")
        assert scan.feed(line[:cut]) is (cut >= line.index(b" cd")), cut
        assert scan.feed(line[cut:]) is True or cut >= line.index(b" cd"), cut


def test_where_plain_output_ends_agrees_with_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # The longest plain start of some bytes is the longest start plain_text takes (no
    # byte that is not plain is made so by what follows it), in runs of lines or not.
    monkeypatch.setattr(line_scan, "_STOP_LINES", 8)
    rng = random.Random(5)
    alphabet = [b"a", b"m", b"[", b"1;", b"\x1b[1m", b"\x1b", b"\r", b"\n", b"\r\n", b"\x07"]
    alphabet.append(b"\xc3")
    for _ in range(1_500):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        longest = max(n for n in range(len(data) + 1) if plain_text(data[:n]) is not None)
        assert line_scan._plain_end(data) == longest, data


def test_a_scan_started_between_a_cr_and_its_lf_goes_on() -> None:
    # A bootstrap that starts mid-stream (a server without replicas keeps only its
    # journal's newest bytes) can start between the CR and the LF of a line end: the
    # LF comes first, the cursor in column 0 of an empty line. It ends that line, as
    # the engine shows it; the scan does not stop on it.
    term = Terminal(20, 4, history=100)
    prefix = term.plain_line_prefix()
    assert prefix == ""
    scan = LineScan(lambda line: NEEDLE in line)
    scan.start(prefix)
    assert scan.feed(b"") is False
    assert scan.feed(b"\nRESULT-42\r\n") is True
    # Only first, and only in column 0: anywhere else a bare LF is not plain.
    assert scan.feed(b"\nx") is None
    later = LineScan(lambda line: NEEDLE in line)
    later.start("ab")
    assert later.feed(b"\nRESULT-42\r\n") is None


def test_a_scan_started_again_from_the_engine_anywhere_goes_on() -> None:
    # wait starts its scan again from the engine's state where a batch ended (after a
    # look at it), which in a flood is anywhere: between a CR and its LF too. From
    # there the scan goes on over plain output, and finds what the engine shows.
    rng = random.Random(11)
    at_cr = 0
    for case in range(20):
        data = _random_output(rng, rng.choice([None, rng.randint(0, 59)]))
        term = Terminal(30, 12, history=1_000)  # (holds every row: 60 lines)
        scan = LineScan(lambda line: NEEDLE in line, NEEDLE if rng.random() < 0.5 else None)
        found = False
        at = 0
        while at < len(data):
            if not scan.active or rng.random() < 0.3:
                found = found or any(NEEDLE in line for line in _engine_lines(term))  # a look
                tail = None if scan.needle is None else len(scan.needle)
                prefix = term.plain_line_prefix(tail)
                if prefix is None:
                    scan.start_at_cr(term.plain_line_at_cr(tail))
                else:
                    scan.start(prefix)
                if data[:at].endswith(b"\r"):
                    assert scan.active, (case, at)
                    at_cr += 1
            piece = data[at : at + rng.randint(1, 40)]
            at += len(piece)
            term.feed(piece)
            if scan.active:
                got = scan.feed(piece)
                assert got is not None, (case, at)
                found = found or got
        assert found == any(NEEDLE in line for line in _engine_lines(term)), case
    assert at_cr > 10


def test_the_engine_vouches_for_a_line_a_cr_went_back_over() -> None:
    term = Terminal(10, 4, history=100)
    term.feed(b"0\r\n0123456789abc\r")  # (column 0 of the line's last row)
    assert term.plain_line_prefix() is None  # (text after the cursor)
    assert term.plain_line_at_cr() == "0123456789abc"
    mid = Terminal(10, 4, history=100)
    mid.feed(b"abc\rx")  # not in column 0: text after the cursor, not a CR's LF
    assert mid.plain_line_at_cr() is None
    empty = Terminal(10, 4, history=100)
    empty.feed(b"abc\r\n")  # nothing after the cursor: plain_line_prefix's
    assert empty.plain_line_at_cr() is None and empty.plain_line_prefix() == ""
    alt = Terminal(10, 4, history=100)
    alt.feed(b"\x1b[?1049habc\r")
    assert alt.plain_line_at_cr() is None
    below = Terminal(10, 4, history=100)
    below.feed(b"abc\r\n\r\nbelow\x1b[1;1H")
    assert below.plain_line_at_cr() is None
