"""The engine-free mode scanner gives the engine's modes, or declines (None)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phux.client.keys import KeyModes
from phux.client.modes import scan_modes
from phux.engine import Terminal

FRAGMENTS = [
    b"\x1b[?1h",
    b"\x1b[?1l",
    b"\x1b[?2004h",
    b"\x1b[?2004l",
    b"\x1b[?1;2004h",
    b"\x1b[?2004;1l",
    b"\x1b[?;1h",
    b"\x1b[?01h",
    b"\x1b[?12004h",
    b"\x1b[?1:2h",
    b"\x1b[?1$p",
    b"\x1b[?1 h",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b[?47h",
    b"\x1b[?3h",
    b"\x1b[32h",
    b"\x1b[32l",
    b"\x1b[4h",
    b"\x1b[1h",
    b"\x1b[2004h",
    b"\x1b[>1h",
    b"\x1b[=2004h",
    b"\x1bc",
    b"\x1b[!p",
    b"\x1b[?!p",
    b"\x1b]0;title\x07",
    b"\x1b]2;t\x1b\\",
    b"\x1b]0;\x1b[?1h\x07",
    b"\x1b]0;ab",
    b"\x1b]0;a\x18",
    b"\x1bP1$r\x1b[?2004h\x1b\\",
    b"\x1bP+q\x07ab\x1b\\",
    b"\x1b_apc\x1b\\",
    b"hello",
    b"\r\n",
    "é€".encode(),
    b"\xc2\x9b?1h",
    b"\xc2",
    b"\x9b",
    b"\x18",
    b"\x1a",
    b"\x07",
    b"\x1b",
    b"\x1b[",
    b"\x1b[?",
    b"\x1b[?1",
    b"h",
    b"l",
    b"\x1b[?1\x07h",
    b"\x1b[?1\x18h",
    b"\x1b\x1b[?1h",
    b"\x1b7",
    b"\x1b8",
    b"\x1b(0",
    b"\x1b#8",
    b"\x1b[m",
    b"\x1b[1;31m",
    b"\x1b[s",
    b"\x1b[u",
    b"\x1b[r",
    b"\x1b[2J",
    b"\x1b=",
    b"\x1b[?" + b"1;" * 200 + b"2004h",
    # The kitty keyboard protocol's flags: a stack per screen.
    b"\x1b[>1u",
    b"\x1b[>25u",
    b"\x1b[>u",
    b"\x1b[>99u",
    b"\x1b[<u",
    b"\x1b[<2u",
    b"\x1b[<0u",
    b"\x1b[=5u",
    b"\x1b[=2;2u",
    b"\x1b[=1;3u",
    b"\x1b[=8;9u",
    b"\x1b[?u",
    b"\x1b[>1:2u",
    b"\x1b[>;5u",
    b"\x1b[>3u" * 17,
    b"\x1b[?1047h",
    b"\x1b[?1047l",
    b"\x1b[?47l",
    b"\x1b[?1049;1h",
]


def engine_modes(data: bytes, cuts: list[int]) -> KeyModes:
    engine = Terminal(20, 5, history=10)
    last = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        engine.feed(data[last:cut])
        last = max(last, cut)
    engine.feed(data[last:])
    modes = engine.modes
    return KeyModes(
        app_cursor=modes.app_cursor, bracketed_paste=modes.bracketed_paste, kitty=modes.kitty_keys
    )


@settings(max_examples=2000, deadline=None)
@given(
    parts=st.lists(st.sampled_from(FRAGMENTS), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=4),
)
def test_the_scanner_agrees_with_the_engine(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    scanned = scan_modes(data)
    if scanned is not None:
        assert scanned == engine_modes(data, cuts)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", KeyModes()),
        (b"$ \x1b[?2004h", KeyModes(bracketed_paste=True)),
        (
            b"\x1b[?2004h\x1b[?1h\x1b=vim\x1b]0;t\x07",
            KeyModes(app_cursor=True, bracketed_paste=True),
        ),
        (b"\x1b[?1h\x1b[?2004h\x1bc", KeyModes()),
        (b"\x1b[?1;2004h\x1b[!p", KeyModes(bracketed_paste=True)),
        (b"\x1b[?1049h\x1b[?1h\x1b[?1049l", KeyModes(app_cursor=True)),
        (
            b"\x1b[0m\x1b[r\x1b[?7h\x1b[H" + b"row\r\n" * 50 + b"\x1b[?2004h",
            KeyModes(app_cursor=False, bracketed_paste=True),
        ),
    ],
)
def test_plain_streams_are_scanned(data: bytes, expected: KeyModes) -> None:
    assert scan_modes(data) == expected
    assert engine_modes(data, []) == expected


@pytest.mark.parametrize(
    "data",
    [b"\x1b[?2004", b"\xc2\x9b?1h", b"\x1b[?1\x07h", b"\x1b[32h", b"\x1b]0;x\x1b[?1h\x07"],
)
def test_unsure_streams_are_declined(data: bytes) -> None:
    assert scan_modes(data) is None


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=12))
def test_checkpoints_scan_to_the_modes_they_recreate(parts: list[bytes]) -> None:
    from phux.engine.checkpoint import write_checkpoint

    source = Terminal(20, 5, history=10)
    source.feed(b"".join(parts))
    checkpoint = write_checkpoint(source)
    # A checkpoint is plain, well-formed VT, up to what the engine had not
    # acted on yet (a sequence cut short: the scanner declines it).
    unparsed = source.unparsed()
    if unparsed:
        assert checkpoint.endswith(unparsed)
        checkpoint = checkpoint[: -len(unparsed)]
    scanned = scan_modes(checkpoint)
    assert scanned is not None
    assert scanned == KeyModes(
        app_cursor=source.modes.app_cursor,
        bracketed_paste=source.modes.bracketed_paste,
        kitty=source.modes.kitty_keys,
    )


@pytest.mark.parametrize(
    ("data", "flags"),
    [
        (b"\x1b[>1u", 1),
        (b"\x1b[>1u\x1b[>25u\x1b[<u", 1),
        (b"\x1b[>1u\x1b[<5u", 0),
        (b"\x1b[=5u\x1b[=2;2u", 7),
        (b"\x1b[>7u\x1b[=1;3u", 6),
        # A stack per screen: the alternate screen's starts empty and goes with it.
        (b"ab\x1b[>1u\x1b[?1049h\x1b[>25u", 25),
        (b"ab\x1b[>1u\x1b[?1049h\x1b[>25u\x1b[?1049l", 1),
        (b"\x1b[?1049h\x1b[>25u\x1b[?1049l\x1b[?1049h", 0),
        (b"\x1b[>25u\x1bc", 0),
        (b"\x1b[>25u\x1b[?u\x1b[!p", 25),
        (b"\x1b[>3u" * 17 + b"\x1b[<16u", 0),
        (b"\x1b[>1u" + b"\x1b[>3u" * 16 + b"\x1b[<16u", 0),
    ],
)
def test_kitty_keyboard_flags_are_scanned(data: bytes, flags: int) -> None:
    """The flags a program pushed, popped and set, as the engine keeps them: a pane
    running such a program costs send-keys no engine."""
    assert scan_modes(data) == KeyModes(kitty=flags)
    assert engine_modes(data, []) == KeyModes(kitty=flags)
    assert scan_modes(b"\x1b[u\x1b[?1h") == KeyModes(app_cursor=True)  # (CSI u alone: SCORC)
