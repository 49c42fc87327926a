"""The asciicast writer on frame sequences a server sends: bootstraps, a lagging
recorder's TOMBSTONE and fresh bootstrap (deduplicated, or redrawn from the
checkpoint when the journal no longer reaches), resizes, split UTF-8.

The end-to-end tests (tests/cli/test_record_cast.py) run the writer on a real
server; a server drops a recorder's output only under a flood, so the lag
paths are driven here with the frames themselves."""

from __future__ import annotations

import io
import json
from typing import Any

from phux.client.record import CastWriter
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Frame,
    InputWritten,
    Output,
    Resized,
    Tombstone,
)

T = 7


def write(frames: list[Frame], *, since: bool = True) -> tuple[dict[str, Any], list[Any], Any]:
    out = io.StringIO()
    writer = CastWriter(T, out, since=since, title="t", size=(1, 1), env={"SHELL": "/bin/sh"})
    for frame in frames:
        writer.handle(frame)
    writer.finish()
    lines = out.getvalue().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]], writer.stats


def boot(start: int, *chunks: Frame, ready: int, size: tuple[int, int] = (10, 5)) -> list[Frame]:
    cols, rows = size
    return [
        BootstrapBegin(request_id=1, terminal=T, start_seq=start, cols=cols, rows=rows),
        *chunks,
        BootstrapReady(terminal=T, next_seq=ready, cols=cols, rows=rows),
    ]


def text(events: list[Any]) -> str:
    return "".join(data for _, code, data in events if code == "o")


def test_since_writes_the_bootstrap_at_zero_then_live_output() -> None:
    frames = [
        *boot(0, BootstrapChunk(terminal=T, seq=0, data=b"hello\r\n"), ready=7),
        Output(terminal=T, seq=7, data=b"live"),
        Output(terminal=99, seq=0, data=b"another terminal"),
    ]
    header, events, stats = write(frames)
    assert header == {
        "version": 2,
        "width": 10,
        "height": 5,
        "timestamp": header["timestamp"],
        "title": "t",
        "env": {"TERM": "xterm-256color", "SHELL": "/bin/sh"},
    }
    assert events[0] == [0.0, "o", "hello\r\n"]
    assert text(events) == "hello\r\nlive"
    assert stats.gaps == 0


def test_without_since_only_what_comes_next_at_the_current_size() -> None:
    frames = [
        *boot(
            0,
            BootstrapChunk(terminal=T, seq=0, data=b"old"),
            Resized(terminal=T, seq=3, cols=30, rows=9),
            ready=3,
            size=(20, 8),
        ),
        Output(terminal=T, seq=3, data=b"new"),
    ]
    header, events, _ = write(frames, since=False)
    assert (header["width"], header["height"]) == (20, 8)
    assert [code for _, code, _ in events] == ["o"]
    assert text(events) == "new"


def test_a_checkpoint_supersedes_what_came_before_it_in_the_bootstrap() -> None:
    frames = boot(
        0,
        BootstrapChunk(terminal=T, seq=50, data=b"\x1b[HSTATE", checkpoint=True),
        BootstrapChunk(terminal=T, seq=50, data=b"-tail"),
        ready=55,
    )
    _, events, _ = write(frames)
    assert text(events) == "\x1b[HSTATE-tail"


def test_a_fresh_bootstrap_after_a_tombstone_is_deduplicated() -> None:
    frames = [
        *boot(0, BootstrapChunk(terminal=T, seq=0, data=b"hello\r\n"), ready=7),
        Output(terminal=T, seq=7, data=b"ab"),
        Resized(terminal=T, seq=9, cols=12, rows=6),
        Tombstone(terminal=T, reason=1, lost_seq=9),
        *boot(
            0,
            BootstrapChunk(terminal=T, seq=0, data=b"hello\r\nab"),
            Resized(terminal=T, seq=9, cols=12, rows=6),
            BootstrapChunk(terminal=T, seq=9, data=b"cd"),
            ready=11,
            size=(12, 6),
        ),
        Output(terminal=T, seq=11, data=b"ef"),
    ]
    _, events, stats = write(frames)
    assert text(events) == "hello\r\nabcdef"
    assert [data for _, code, data in events if code == "r"] == ["12x6"]
    assert stats.gaps == 0


def test_a_journal_that_no_longer_reaches_is_redrawn_from_its_checkpoint() -> None:
    frames = [
        *boot(0, BootstrapChunk(terminal=T, seq=0, data=b"hello"), ready=5),
        Tombstone(terminal=T, reason=1, lost_seq=5),
        *boot(
            0,
            BootstrapChunk(terminal=T, seq=900, data=b"\x1b[H\x1b[2JSTATE", checkpoint=True),
            BootstrapChunk(terminal=T, seq=900, data=b"+j"),
            ready=902,
        ),
        Output(terminal=T, seq=902, data=b"+x"),
    ]
    _, events, stats = write(frames)
    assert text(events) == "hello\x1b[H\x1b[2JSTATE+j+x"
    assert stats.gaps == 1


def test_a_character_split_across_frames_stays_whole() -> None:
    frames = [
        *boot(0, ready=0),
        Output(terminal=T, seq=0, data=b"w\xc3"),
        Output(terminal=T, seq=2, data=b"\xb6rld \xff"),
    ]
    _, events, _ = write(frames)
    assert text(events) == "w\u00f6rld \ufffd"


def test_a_redraw_after_a_gap_resumes_at_the_fresh_bootstraps_size() -> None:
    frames = [
        *boot(0, BootstrapChunk(terminal=T, seq=0, data=b"hello"), ready=5, size=(10, 5)),
        Tombstone(terminal=T, reason=1, lost_seq=5),
        # The pane was resized to 40x9 in the stretch the recorder lost.
        *boot(
            800,
            BootstrapChunk(terminal=T, seq=900, data=b"STATE", checkpoint=True),
            Resized(terminal=T, seq=900, cols=41, rows=9),
            ready=900,
            size=(40, 9),
        ),
    ]
    _, events, stats = write(frames)
    assert [[code, data] for _, code, data in events] == [
        ["o", "hello"],
        ["r", "40x9"],
        ["o", "STATE"],
        ["r", "41x9"],
    ]
    assert stats.gaps == 1


def test_input_events_in_order_split_utf8_kept_whole_replies_left_out() -> None:
    frames = [
        InputWritten(terminal=T, seq=0, data=b"early"),  # before READY: not recorded
        *boot(0, ready=0),
        InputWritten(terminal=T, seq=0, data=b"ls \xc3"),
        InputWritten(terminal=T, seq=0, data=b"\xa9\r"),
        Output(terminal=T, seq=0, data=b"out"),
        InputWritten(terminal=T, seq=3, data=b"\x1b[?62c", reply=True),
        InputWritten(terminal=99, seq=0, data=b"another terminal"),
        InputWritten(terminal=T, seq=3, data=b"q"),
    ]
    _, events, stats = write(frames)
    assert [(code, data) for _, code, data in events] == [
        ("i", "ls "),
        ("i", "\u00e9\r"),
        ("o", "out"),
        ("i", "q"),
    ]
    assert stats.input_bytes == 7


KEY = "0123456789abcdef0123456789abcdef"


def keyed(frames: list[Frame], key: str = KEY) -> list[Any]:
    out = io.StringIO()
    writer = CastWriter(T, out, since=True, title="t", size=(1, 1), env={}, key=key)
    for frame in frames:
        writer.handle(frame)
    writer.finish()
    return [json.loads(line) for line in out.getvalue().splitlines()[1:]]


def test_the_panes_key_never_reaches_the_recording() -> None:
    # The mark key signs the integration's marks; a recording holds a placeholder,
    # whole and split between frames (one byte at a time, too), live and in the
    # bootstrap, and in the input.
    mark = f"\x1b]133;A;phux_k={KEY}\x07$ ".encode()
    live = [Output(terminal=T, seq=len(mark) + i, data=mark[i : i + 1]) for i in range(len(mark))]
    frames = [
        *boot(0, BootstrapChunk(terminal=T, seq=0, data=mark), ready=len(mark)),
        *live,
        Output(terminal=T, seq=2 * len(mark), data=f"k={KEY[:20]}".encode()),
        Output(terminal=T, seq=2 * len(mark) + 22, data=f"{KEY[20:]} ok".encode()),
        InputWritten(terminal=T, seq=0, data=f"echo {KEY}\r".encode()),
    ]
    events = keyed(frames)
    whole = json.dumps(events)
    assert KEY not in whole and KEY[:8] not in whole
    placeholder = "x" * 32
    assert text(events) == (f"\x1b]133;A;phux_k={placeholder}\x07$ " * 2 + f"k={placeholder} ok")
    assert [data for _, code, data in events if code == "i"] == [f"echo {placeholder}\r"]


def test_text_that_only_looks_like_the_keys_start_is_kept() -> None:
    frames = [
        *boot(0, ready=0),
        Output(terminal=T, seq=0, data=b"x=0123"),
        Output(terminal=T, seq=6, data=b" done 01"),
    ]
    assert text(keyed(frames)) == "x=0123 done 01"
    # Without a key (a pane phux did not integrate) nothing is replaced.
    assert text(keyed(frames, key="")) == "x=0123 done 01"
