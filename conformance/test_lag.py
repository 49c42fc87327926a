"""A subscriber that does not read gets a TOMBSTONE and a fresh bootstrap (spec/L1.md §6)."""

from __future__ import annotations

import time

import pytest

from .catalog import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Frame,
    Output,
    Resized,
    TerminalClosed,
    Tombstone,
    TombstoneReason,
)
from .helpers import Stream, spawn, subscribe
from .wire_client import Conn

OUTPUT_BYTES = 12 * 1024 * 1024
"""Three times the default 4 MiB subscriber queue."""


@pytest.mark.clause("L1.md §6 lag", "proto.md §8 flow control")
def test_slow_subscriber_gets_tombstone_then_bootstrap(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(
        conn,
        cleanup,
        ["/bin/sh", "-c", f"sleep 0.3; head -c {OUTPUT_BYTES} /dev/zero | tr '\\0' x; echo END"],
    )
    stream: Stream = subscribe(conn, t.terminal)
    time.sleep(3.0)  # do not read while the program writes far more than the queue holds

    def mine(f: Frame) -> bool:
        return getattr(f, "terminal", None) == t.terminal

    tombstones = 0
    in_bootstrap = False
    deadline = time.monotonic() + 90
    while b"END" not in stream.data[-8:] or in_bootstrap:
        assert time.monotonic() < deadline, "output did not finish"
        frame = conn.expect(mine, timeout=30)
        if isinstance(frame, Tombstone):
            assert not in_bootstrap, "TOMBSTONE inside a bootstrap"
            assert frame.reason == TombstoneReason.LAG
            assert frame.lost_seq == stream.next_seq, (frame.lost_seq, stream.next_seq)
            tombstones += 1
            begin = conn.expect(mine, timeout=30)
            assert isinstance(begin, BootstrapBegin), f"expected a fresh bootstrap, got {begin!r}"
            assert begin.request_id == 0
            stream = Stream(terminal=t.terminal, start_seq=begin.start_seq)
            stream.next_seq = begin.start_seq
            in_bootstrap = True
        elif isinstance(frame, BootstrapReady):
            assert in_bootstrap
            assert frame.next_seq == stream.next_seq, "fresh bootstrap has a gap or overlap"
            in_bootstrap = False
        elif isinstance(frame, Output):
            assert not in_bootstrap, "live OUTPUT inside a bootstrap"
            stream._take(frame)
        elif isinstance(frame, BootstrapChunk | Resized):
            stream._take(frame)
        elif isinstance(frame, TerminalClosed):
            break
    assert tombstones >= 1, "a subscriber that did not read was never sent a TOMBSTONE"
