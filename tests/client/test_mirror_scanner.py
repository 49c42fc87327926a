"""Mirror bootstrap/tombstone handling and run's marker scanner, on synthetic frames."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from phux.client.mirror import Mirror
from phux.client.run_markers import MarkerScanner, wrap_command
from phux.client.run_output import _render_engine, _render_plain, render_output
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Exited,
    Foreground,
    Output,
    Resized,
    TerminalClosed,
    TerminalState,
    Tombstone,
)


def bootstrapped(rid: int = 5) -> Mirror:
    m = Mirror(1)
    m.request_id = rid
    m.handle(BootstrapBegin(request_id=rid, terminal=1, start_seq=0, cols=20, rows=5))
    m.handle(BootstrapChunk(terminal=1, seq=0, data=b"hello\r\n"))
    m.handle(Resized(terminal=1, seq=7, cols=30, rows=6))
    m.handle(BootstrapChunk(terminal=1, seq=7, data=b"world"))
    m.handle(BootstrapReady(terminal=1, next_seq=12, cols=30, rows=6))
    return m


def test_bootstrap_then_live_output() -> None:
    m = bootstrapped()
    assert m.ready and m.next_seq == 12 and (m.cols, m.rows) == (30, 6)
    m.handle(Output(terminal=1, seq=12, data=b"!"))
    assert m.engine is not None
    assert m.engine.project().lines[:2] == ["hello", "world!"]
    m.handle(Output(terminal=1, seq=10, data=b"ld!?"))  # overlap is skipped
    assert m.engine.project().lines[1] == "world!?"
    m.handle(TerminalClosed(terminal=1, status=Exited(code=3), final_seq=14))
    assert not m.alive and m.exit == Exited(code=3)


def test_stale_frames_before_our_bootstrap_are_ignored() -> None:
    m = Mirror(1)
    m.request_id = 9
    m.handle(Output(terminal=1, seq=0, data=b"stale"))
    m.handle(BootstrapBegin(request_id=4, terminal=1, start_seq=0, cols=10, rows=3))
    assert m.state == Mirror.SUBSCRIBING
    m.handle(BootstrapBegin(request_id=9, terminal=1, start_seq=100, cols=10, rows=3))
    m.handle(BootstrapChunk(terminal=1, seq=50, data=b"STATE", checkpoint=True))
    m.handle(BootstrapReady(terminal=1, next_seq=100, cols=10, rows=3))
    assert m.engine is not None and m.engine.project().lines[0] == "STATE"


def test_a_foreground_change_sent_to_an_earlier_subscription_is_ignored() -> None:
    # A client unsubscribes without awaiting the OK and subscribes again: what the
    # server sent the old subscription (`sleep` held the PTY) still arrives before
    # our bootstrap. Taken, it would stand for the foreground until the next change,
    # which the server judges from the new subscription's start (the shell took the
    # terminal back meanwhile: no change ever comes), and `wait --prompt` never met.
    sleep = Foreground(pgrp=7, name="sleep", argv=["sleep", "9"], echo=True, canonical=True)
    m = Mirror(1)
    m.request_id = 9
    m.handle(TerminalState(terminal=1, foreground=sleep))
    m.handle(BootstrapBegin(request_id=9, terminal=1, start_seq=0, cols=10, rows=3))
    m.handle(BootstrapReady(terminal=1, next_seq=0, cols=10, rows=3))
    assert not m.foreground_known  # the listing taken after SUBSCRIBE says
    m.handle(TerminalState(terminal=1, foreground=sleep))  # ours: taken
    assert m.foreground_known and m.foreground == sleep
    # Re-bootstrapping after a tombstone, the subscription is the same: taken too.
    m.handle(Tombstone(terminal=1, reason=1, lost_seq=0))
    m.handle(TerminalState(terminal=1, foreground=None))
    assert m.foreground_known and m.foreground is None


def test_tombstone_rebuilds_from_a_fresh_bootstrap() -> None:
    m = bootstrapped()
    gaps: list[int] = []
    m.gap_hooks.append(gaps.append)
    m.handle(Tombstone(terminal=1, reason=1, lost_seq=12))
    assert not m.ready
    m.handle(Output(terminal=1, seq=12, data=b"dropped"))  # ignored until re-bootstrap
    m.handle(BootstrapBegin(request_id=0, terminal=1, start_seq=0, cols=30, rows=6))
    m.handle(BootstrapChunk(terminal=1, seq=0, data=b"hello\r\nworld and more"))
    m.handle(BootstrapReady(terminal=1, next_seq=21, cols=30, rows=6))
    assert m.ready and gaps == []
    assert m.engine is not None and m.engine.project().lines[1] == "world and more"


def test_output_a_tombstone_dropped_is_counted_unless_replayed() -> None:
    # The fresh bootstrap gives back as bytes only the journal after its checkpoint:
    # those reach the byte hooks again (told first that the engine was rebuilt); the
    # bytes before the checkpoint, from the first one dropped, are lost as bytes.
    m = bootstrapped()
    resets: list[int] = []
    seen: list[int] = []
    m.reset_hooks.append(lambda: resets.append(m.next_seq))
    m.bytes_hooks.append(lambda seq, data: seen.append(seq))
    m.handle(Tombstone(terminal=1, reason=1, lost_seq=12))
    m.handle(BootstrapBegin(request_id=0, terminal=1, start_seq=500, cols=30, rows=6))
    assert m.lost_bytes == 500 - 12  # (known at once: a wait may be met in the journal)
    m.handle(BootstrapChunk(terminal=1, seq=400, data=b"STATE", checkpoint=True))
    assert m.lost_bytes == 400 - 12
    m.handle(BootstrapChunk(terminal=1, seq=400, data=b"more"))
    m.handle(BootstrapReady(terminal=1, next_seq=404, cols=30, rows=6))
    assert resets == [500, 400] and seen == [400]
    assert m.lost_bytes == 400 - 12
    m.handle(Output(terminal=1, seq=404, data=b"on"))
    assert m.lost_bytes == 388
    m.handle(Output(terminal=1, seq=410, data=b"!"))  # a gap in live output: lost too
    assert m.lost_bytes == 388 + 4
    # A journal that goes back before the first byte dropped lost nothing.
    m.handle(Tombstone(terminal=1, reason=1, lost_seq=411))
    m.handle(BootstrapBegin(request_id=0, terminal=1, start_seq=300, cols=30, rows=6))
    m.handle(BootstrapChunk(terminal=1, seq=300, data=b"x" * 120))
    m.handle(BootstrapReady(terminal=1, next_seq=420, cols=30, rows=6))
    assert m.lost_bytes == 392
    assert resets == [500, 400, 300] and seen[-1] == 300


def test_scanner_finds_split_markers_and_keeps_output() -> None:
    s = MarkerScanner("abc", 80, 24)
    s.start(0)
    stream = b"echo junk\r\n__phxB_abc__\r\nline1\r\nline2\r\n__phxE_abc_7__\r\n$ "
    for i, byte in enumerate(stream):  # one byte at a time
        s.feed(i, bytes([byte]))
    assert s.phase == "done" and s.exit_code == 7
    assert s.output == b"\r\nline1\r\nline2\r\n"


def test_scanner_dedups_replayed_bytes_and_flags_real_gaps() -> None:
    s = MarkerScanner("t", 80, 24)
    s.start(0)
    s.feed(0, b"__phxB_t__\r\nab")
    s.feed(0, b"__phxB_t__\r\nabcd")  # replayed journal: only "cd" is new
    assert bytes(s.capture) == b"\r\nabcd" and not s.truncated
    s.feed(100, b"zz__phxE_t_0__")  # bytes 16..99 never arrive
    assert s.truncated and s.phase == "done"


def test_scanner_records_resizes() -> None:
    s = MarkerScanner("r", 10, 5)
    s.start(0)
    s.feed(0, b"__phxB_r__")
    s.resize(10, 20, 5)
    s.feed(10, b"x" * 15 + b"__phxE_r_0__")
    assert s.resizes == [(0, 20, 5)]
    out, dropped = render_output(s.output, 10, 5, s.resizes)
    assert out == "x" * 15 and not dropped


def test_render_output_history_and_trailing_lines() -> None:
    data = b"".join(b"row %d\r\n" % i for i in range(10_000))
    out, dropped = render_output(data, 40, 5)
    lines = out.split("\n")
    assert len(lines) == 10_000 and lines[0] == "row 0" and lines[-1] == "row 9999"
    assert not dropped
    assert render_output(b"a\r\n\r\n", 10, 5)[0] == "a\n"
    assert render_output(b"", 10, 5)[0] == ""


def test_wrapped_command_never_contains_the_printed_markers() -> None:
    typed = wrap_command("echo hi", "tok")
    assert "__phxB_tok__" not in typed and "__phxE_tok_" not in typed
    assert typed.endswith('"$?"\n')


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.one_of(
            st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12),
            st.sampled_from(["", " ", "   ", "x" * 9, "y" * 10, "a\tb", "é", "\x1b[1mz", "a\rb"]),
        ),
        max_size=30,
    ),
    sep=st.sampled_from(["\r\n", "\n"]),
    cols=st.integers(min_value=1, max_value=12),
    screen_rows=st.integers(min_value=1, max_value=6),
)
def test_plain_rendering_matches_the_engine(
    rows: list[str], sep: str, cols: int, screen_rows: int
) -> None:
    """The engine-free path for plain output renders exactly what the engine does."""
    data = sep.join(rows).encode()
    expected = _render_engine(data, cols, screen_rows)
    plain = _render_plain(data, cols)
    if plain is not None:
        assert (plain, False) == expected
    assert render_output(data, cols, screen_rows) == expected


def test_plain_rendering_is_used_for_plain_rows() -> None:
    assert _render_plain(b"a\r\n  b \r\n", 10) == "a\n  b"
    assert _render_plain(b"", 10) == ""
    assert _render_plain(b"abc", 10) == "abc"
    assert _render_plain(b"x" * 10, 10) is None  # would reach the margin
    assert _render_plain(b"a\nb", 10) is None
    assert _render_plain(b"\x1b[1ma", 10) is None


def test_a_flood_followed_live_is_fed_in_one_go_and_ends_as_drawn() -> None:
    # Output is held until the engine is read: one feed, whose rows beyond the
    # history the engine skips; the state is the same as feeding frame by frame.
    from phux.engine import Terminal

    m = Mirror(1, history=100)
    m.request_id = 5
    m.handle(BootstrapBegin(request_id=5, terminal=1, start_seq=0, cols=20, rows=5))
    m.handle(BootstrapReady(terminal=1, next_seq=0, cols=20, rows=5))
    reference = Terminal(20, 5, history=100)
    reference.stream.bulk = False
    seq = 0
    for i in range(3000):
        data = b"line %d \x1b[1;3%dmhot\x1b[0m\r\n" % (i, i % 8)
        if i == 1500:
            m.handle(Resized(terminal=1, seq=seq, cols=24, rows=6))
            reference.resize(24, 6)
        m.handle(Output(terminal=1, seq=seq, data=data))
        reference.feed(data)
        seq += len(data)
    assert m._held  # nothing drawn yet
    engine = m.engine
    assert engine is not None and not m._held
    assert engine.project(scrollback=0) == reference.project(scrollback=0)
    assert engine.scrolled_off == reference.scrolled_off == 3000 - 5
    assert engine.screen.cursor.attrs == reference.screen.cursor.attrs


def test_skip_held_keeps_the_end_from_a_line_start() -> None:
    m = bootstrapped()
    flood = b"".join(b"line %04d\r\n" % i for i in range(1000))
    m.handle(Output(terminal=1, seq=12, data=flood))
    assert m.held_bytes == len(flood)
    assert m.skip_held(len(flood)) == 0  # nothing beyond what is kept
    dropped = m.skip_held(100)
    assert 0 < dropped < len(flood) and m.held_bytes == len(flood) - dropped <= 100
    assert m.next_seq == 12 + len(flood)  # the stream position is not the engine's
    assert m.engine is not None
    lines = m.engine.project().lines
    assert "line 0999" in lines and "line 0900" not in lines
    assert not any(line.startswith("ine") for line in lines)  # cut at a line start
    assert m.held_bytes == 0
