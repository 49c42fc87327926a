"""Output relay: byte-exact bursts, bootstrap + live = the stream, and slow subscribers."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapReady,
    Input,
    Output,
    TerminalClosed,
    Tombstone,
    TombstoneReason,
)

from .harness import ServerProcess, Stream, read_until, running_server, spawn, subscribe

MB = 1_000_000


def producer(total: int, piece: int = 1 << 20, pause: float = 0.0) -> list[str]:
    """A program that waits for one byte of input, then writes ``total`` bytes of a
    deterministic pattern in raw mode (so the tty does not translate them), then exits."""
    script = (
        "import os, sys, tty, time\n"
        "tty.setraw(0)\n"
        "os.write(1, b'R')\n"
        "os.read(0, 1)\n"
        f"total, piece, pause = {total}, {piece}, {pause}\n"
        "block = bytes(range(256)) * (piece // 256 + 1)\n"
        "sent = 0\n"
        "while sent < total:\n"
        "    n = min(piece, total - sent)\n"
        "    view = memoryview(block)[sent % 256 : sent % 256 + n]\n"
        "    while view:\n"
        "        view = view[os.write(1, view):]\n"
        "    sent += n\n"
        "    if pause: time.sleep(pause)\n"
    )
    return ["python3", "-c", script]


def pattern(start: int, end: int) -> bytes:
    """Bytes ``start`` .. ``end`` of the producer's output (after its leading 'R')."""
    block = bytes(range(256)) * ((end - start) // 256 + 2)
    offset = start % 256
    return block[offset : offset + end - start]


def go(conn: Connection, tid: int) -> None:
    conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"g"), Deadline.after(10))


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def follow_to_close(conn: Connection, stream: Stream, timeout: float) -> tuple[str, int]:
    """Follow live output after the bootstrap until TERMINAL_CLOSED; return the sha256
    and length of what arrived (hashed as it arrives, not stored)."""
    digest = hashlib.sha256()
    count = 0
    deadline = Deadline.after(timeout)
    while True:
        frame = conn.receive(deadline)
        if getattr(frame, "terminal", None) != stream.terminal:
            continue
        assert not isinstance(frame, Tombstone | BootstrapBegin), frame
        if isinstance(frame, Output):
            assert frame.seq == stream.next_seq
            digest.update(frame.data)
            count += len(frame.data)
            stream.next_seq += len(frame.data)
        elif isinstance(frame, TerminalClosed):
            assert frame.final_seq == stream.next_seq
            return digest.hexdigest(), count


def started(conn: Connection, tid: int) -> Stream:
    """Subscribe and read the bootstrap up to the producer's leading 'R'."""
    subscribe(conn, tid)
    return read_until(conn, Stream(tid), lambda s: s.data == b"R" and s.ready is not None)


def test_100mb_burst_arrives_byte_exact(tmp_path: Path) -> None:
    # The producer is unpaced and this machine has two shared cores: give the reader
    # headroom so that "keeps up" does not depend on the scheduler.
    # Relay only: the producer's bytes (all 256 values, mostly control sequences to an
    # engine) parse at about 2 MB/s, and a replica never skips what it has not parsed
    # (tests/replica/test_lag.py), so with replicas this would measure the engine.
    total = 100 * MB
    args = ("--subscriber-queue-bytes", str(128 << 20), "--replicas", "off")
    with running_server(tmp_path, *args) as server:
        _burst(server, total)


def _burst(server: ServerProcess, total: int) -> None:
    with server.connect() as conn:
        tid = spawn(conn, producer(total))
        stream = started(conn, tid)
        go(conn, tid)
        digest, count = follow_to_close(conn, stream, timeout=90)
    assert count == total
    assert digest == hashlib.sha256(pattern(0, total)).hexdigest()


def test_bootstrap_plus_live_is_the_whole_stream(tmp_path: Path) -> None:
    total = 3 * MB  # fits the 4 MiB journal
    # Relay only: a replica that keeps up (it may) would put a checkpoint first.
    with (
        running_server(tmp_path, "--replicas", "off") as server,
        server.connect() as conn,
        server.connect() as late,
    ):
        tid = spawn(conn, producer(total, piece=32768, pause=0.002))
        early = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, early, lambda s: b"R" in s.data)
        go(conn, tid)
        read_until(conn, early, lambda s: s.next_seq > total // 3, timeout=30)
        joined = Stream(tid)
        subscribe(late, tid)
        read_until(late, joined, lambda s: s.ready is not None, timeout=30)
        assert joined.start_seq == 0 and 0 < joined.ready.next_seq < total
        read_until(late, joined, lambda s: s.next_seq == total + 1, timeout=30)
    assert bytes(joined.data) == b"R" + pattern(0, total)


def test_stalled_subscriber_is_tombstoned_others_unaffected(tmp_path: Path) -> None:
    # Paced (about 10 MB/s at most) with 8 MiB queues, so that the two Python readers
    # that keep up would need to stall for most of a second to be tombstoned, even on a
    # loaded machine; the stalled one overflows its queue long before the end.
    # Relay only (see test_100mb_burst_arrives_byte_exact): with a replica the fresh
    # bootstrap would start with a checkpoint, not with the producer's bytes.
    args = ("--subscriber-queue-bytes", str(8 << 20), "--replicas", "off")
    with running_server(tmp_path, *args) as server:
        _stalled(server, total=24 * MB)


def _stalled(server: ServerProcess, total: int) -> None:
    assert server.proc is not None
    with server.connect() as conn, server.connect() as fast, server.connect() as stalled:
        tid = spawn(conn, producer(total, piece=65536, pause=0.006))
        streams = [started(c, tid) for c in (conn, fast, stalled)]
        results: dict[str, tuple[str, int]] = {}

        def keep_up(name: str, c: Connection, stream: Stream) -> None:
            results[name] = follow_to_close(c, stream, timeout=60)

        threads = [
            threading.Thread(target=keep_up, args=("a", conn, streams[0])),
            threading.Thread(target=keep_up, args=("b", fast, streams[1])),
        ]
        peak = 0
        go(stalled, tid)
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            peak = max(peak, rss_kib(server.proc.pid))
            time.sleep(0.05)
        for thread in threads:
            thread.join(1)
        want = (hashlib.sha256(pattern(0, total)).hexdigest(), total)
        assert results == {"a": want, "b": want}
        # Journal 4 MiB + the stalled queue 8 MiB + batches in flight, on top of the interpreter.
        assert peak < 120 * 1024, f"server RSS peaked at {peak} KiB"

        # The stalled subscriber resumes: what was already in flight, then a tombstone
        # and a fresh bootstrap that reflects the terminal's exit.
        deadline_d = Deadline.after(30)
        stream = Stream(tid)
        stream.next_seq = 1
        tomb = None
        while tomb is None:
            frame = stalled.receive(deadline_d)
            if isinstance(frame, Output):
                assert frame.seq == stream.next_seq
                stream.next_seq += len(frame.data)
            elif isinstance(frame, Tombstone):
                tomb = frame
        assert tomb.reason == TombstoneReason.LAG and tomb.lost_seq == stream.next_seq
        begin = stalled.receive(deadline_d)
        assert isinstance(begin, BootstrapBegin) and begin.request_id == 0
        stream.feed(begin)
        read_until(stalled, stream, lambda s: s.ready is not None)
        assert isinstance(stream.ready, BootstrapReady)
        assert not stream.ready.alive and stream.ready.next_seq == total + 1
        assert bytes(stream.data) == pattern(stream.start_seq - 1, total)
        closed = stalled.receive(deadline_d)
        assert isinstance(closed, TerminalClosed) and closed.final_seq == total + 1
