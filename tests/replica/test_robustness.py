"""Size changes across compaction, and a replica process that dies."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.engine import Terminal
from phux.wire.frames import Resize
from server.harness import Stream, read_until, spawn, subscribe

from .helpers import program, read_bootstrap, replica_server, send
from .state import diff, engine_state

BOUND = 32 * 1024

# Each input byte: that many kilobytes of numbered lines, then a marker.
PRINTER = """
n = 0
while True:
    k = os.read(0, 1)[0] - 48
    for _ in range(k * 120):
        n += 1
        w(b"\\x1b[3%dmrow %d\\x1b[0m %s\\r\\n" % (n % 8, n, b"=" * (n % 90)))
    w(b"<%d>" % k)
"""


def _print(conn: Connection, stream: Stream, key: bytes) -> None:
    """Have the printer print, and read until its marker."""
    marks = stream.data.count(b"<")
    send(conn, stream.terminal, key)
    read_until(conn, stream, lambda s: s.data.count(b"<") > marks, timeout=30)


def _replay(stream: Stream, history: int) -> Terminal:
    """The whole stream with its size changes, as one long-lived client saw it."""
    _seq, cols, rows = stream.sizes[0]
    t = Terminal(cols, rows, history=history)
    data = bytes(stream.data)
    at = stream.start_seq
    for seq, cols, rows in stream.sizes[1:]:
        t.feed(data[: seq - at])
        data = data[seq - at :]
        at = seq
        t.resize(cols, rows)
    t.feed(data)
    return t


def test_resizes_across_compaction(tmp_path: Path) -> None:
    with (
        replica_server(tmp_path, "--journal-bytes", str(BOUND), history=400) as server,
        server.connect() as conn,
    ):
        tid = spawn(conn, program(PRINTER), cols=70, rows=20)
        whole = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, whole, lambda s: b"R" in s.data)
        for i, (cols, rows) in enumerate([(90, 30), (50, 12), (50, 12), (120, 40), (60, 25)]):
            _print(conn, whole, b"9")
            conn.call(
                lambda rid, c=cols, r=rows: Resize(request_id=rid, terminal=tid, cols=c, rows=r),
                Deadline.after(10),
            )
            if i % 2:
                _print(conn, whole, b"1")
        read_until(conn, whole, lambda s: s.sizes[-1][1:] == (60, 25))
        printed = whole.next_seq
        assert printed > 8 * BOUND
        deadline = time.monotonic() + 30
        while True:
            with server.connect() as late:
                boot = read_bootstrap(late, tid)
            if boot.checkpoint is not None and len(boot.journal) < BOUND:
                break
            assert time.monotonic() < deadline, "no compacted bootstrap"
            time.sleep(0.1)
        assert boot.ready is not None and boot.ready.next_seq == printed
        assert (boot.ready.cols, boot.ready.rows) == (60, 25)
        replayed = boot.engine(history=400)
        replayed.resize(boot.ready.cols, boot.ready.rows)
        assert not diff(engine_state(_replay(whole, 400)), engine_state(replayed))


def _replica_pid(server_pid: int) -> int:
    with open(f"/proc/{server_pid}/task/{server_pid}/children") as f:
        for pid in map(int, f.read().split()):
            with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                if b"phux.server.replica" in cmd.read():
                    return pid
    raise AssertionError("no replica process")


def test_server_carries_on_when_the_replica_process_dies(tmp_path: Path) -> None:
    with (
        replica_server(tmp_path, "--journal-bytes", str(BOUND), history=100) as server,
        server.connect() as conn,
    ):
        assert server.proc is not None
        tid = spawn(conn, program(PRINTER))
        whole = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, whole, lambda s: b"R" in s.data)
        os.kill(_replica_pid(server.proc.pid), signal.SIGKILL)
        for _ in range(3):
            _print(conn, whole, b"9")
        # Back to a plain journal: the newest bytes, bounded, and still exact from there.
        deadline = time.monotonic() + 30
        while True:
            with server.connect() as late:
                boot = read_bootstrap(late, tid)
            if len(boot.journal) <= BOUND:
                break
            assert time.monotonic() < deadline, "the journal is not trimmed"
            time.sleep(0.1)
        assert boot.checkpoint is None
        assert bytes(boot.journal) == bytes(whole.data)[boot.start_seq :]
        assert boot.ready is not None and boot.ready.next_seq == whole.next_seq
