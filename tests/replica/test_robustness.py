"""Size changes across compaction, and a replica process that dies."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import Resize
from server.harness import Stream, read_until, spawn, subscribe

from .helpers import (
    ASK,
    compacted_bootstrap,
    program,
    replay,
    replica_pid,
    replica_server,
    send,
)
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
        boot = compacted_bootstrap(server, tid, BOUND)
        assert boot.ready is not None and boot.ready.next_seq == printed
        assert (boot.ready.cols, boot.ready.rows) == (60, 25)
        replayed = boot.engine(history=400)
        replayed.resize(boot.ready.cols, boot.ready.rows)
        assert not diff(engine_state(replay(whole, 400)), engine_state(replayed))


# A header above a scrolling region, numbered lines below it on demand, and a
# DA1 query whose answer it prints back.
SUPERVISED = (
    ASK
    + """
w(b"\\x1b[H\\x1b[2J== HEADER ==\\x1b[3;20r\\x1b[3;1H")
n = 0
while True:
    c = os.read(0, 1)
    if c == b"q":
        w(b"<DA:" + ask(b"\\x1b[c", b"c", timeout=10) + b">")
        continue
    for _ in range((c[0] - 48) * 120):
        n += 1
        w(b"\\x1b[3%dmrow %d\\x1b[0m %s\\r\\n" % (n % 8, n, b"=" * (n % 90)))
    w(b"<%d>" % (c[0] - 48))
"""
)
DA1 = b"<DA:\x1b[?1;2c>"


def _ask_da1(conn: Connection, stream: Stream) -> None:
    marks = stream.data.count(b"<DA:")
    send(conn, stream.terminal, b"q")
    read_until(conn, stream, lambda s: s.data.count(b"<DA:") > marks, timeout=30)
    read_until(conn, stream, lambda s: s.data.endswith(b">"), timeout=30)
    assert stream.data.endswith(DA1), bytes(stream.data[-40:])


def _wait_for(what: str, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_killed_replica_process_is_restarted_and_reseeded(tmp_path: Path) -> None:
    with (
        replica_server(tmp_path, "--journal-bytes", str(BOUND), history=100) as server,
        server.connect() as conn,
    ):
        assert server.proc is not None
        old = spawn(conn, program(SUPERVISED), cols=80, rows=20)
        whole = Stream(old)
        subscribe(conn, old)
        read_until(conn, whole, lambda s: b"HEADER" in s.data)
        _print(conn, whole, b"9")  # past the journal bound: a checkpoint with the header
        _ask_da1(conn, whole)
        pid = server.proc.pid
        first = replica_pid(pid)
        assert first > 0  # os.kill(0) would kill this test's process group
        os.kill(first, signal.SIGKILL)
        _wait_for("a new replica process", lambda: replica_pid(pid) not in (0, first))
        _wait_for("the restart is logged", lambda: "restarted" in server.log.read_text())
        # Queries are answered again, for the old terminal and for a new one.
        _ask_da1(conn, whole)
        new = spawn(conn, program(SUPERVISED), cols=80, rows=20)
        fresh = Stream(new)
        subscribe(conn, new)
        read_until(conn, fresh, lambda s: b"HEADER" in s.data)
        _ask_da1(conn, fresh)
        # The re-seeded replica compacts from the right state: the header survives.
        for _ in range(3):
            _print(conn, whole, b"9")
        boot = compacted_bootstrap(server, old, BOUND)
        assert boot.ready is not None and boot.ready.next_seq == whole.next_seq
        replayed = boot.engine(history=100)
        assert replayed.screen.display[0].startswith("== HEADER ==")
        assert not diff(engine_state(replay(whole, 100)), engine_state(replayed))
