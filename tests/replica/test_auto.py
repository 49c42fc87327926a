"""Replicas "auto" (the default): in a thread of the server while output is light, in
the helper process while it is heavy, and back in a thread once the helper is let go
idle (``phux.server.replica.AUTO_THREAD_BYTES``; the fixed cost of an active terminal
is one interpreter, not two: ARCHITECTURE.md, "Memory"). Moving changes nothing a
program or a client sees: every query is answered exactly once, also those in the
output around the move, and checkpoints stay exact."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
import trio

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.server.config import ServerConfig
from phux.server.replica import AUTO_THREAD_TERMINALS, _ThreadWorker
from phux.server.replica_worker import FEED, NEW, REPLIES, Message, WorkerCore
from phux.wire.frames import ListTerminals, TerminalList
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
QUERIES = 16
DA1 = b"\x1b[?1;2c"

# "1": a little output and a DA1 query, its answer printed back. "b": 16 x 16 KiB of
# numbered lines (past AUTO_THREAD_BYTES within a second), a DA1 query after each,
# then how many answers came (waiting for all, then half a second more for extra ones).
PROGRAM = (
    ASK
    + """
n = 0
def rows(k):
    global n
    for _ in range(k):
        n += 1
        w(b"\\x1b[3%dmrow %d\\x1b[0m %s\\r\\n" % (n % 8, n, b"=" * (n % 90)))
while True:
    c = os.read(0, 1)
    if c == b"1":
        rows(20)
        w(b"<DA:" + ask(b"\\x1b[c", b"c", timeout=10) + b">")
    elif c == b"b":
        for _ in range(16):
            rows(300)
            w(b"\\x1b[c")
        got = b""
        deadline = time.monotonic() + 30
        while got.count(b"c") < 16 and time.monotonic() < deadline:
            if select.select([0], [], [], 0.05)[0]:
                got += os.read(0, 1024)
        got += linger(0.5)
        w(b"<B:%d:%d>" % (got.count(b"\\x1b[?1;2c"), len(got)))
"""
)


def _ask(conn: Connection, stream: Stream, key: bytes, mark: bytes) -> bytes:
    """Send ``key``; return what the program printed between ``mark`` and ``>``."""
    start = len(stream.data)
    send(conn, stream.terminal, key)
    read_until(conn, stream, lambda s: mark in s.data[start:] and s.data.endswith(b">"), 60)
    tail = bytes(stream.data[start:])
    return tail[tail.rindex(mark) + len(mark) : -1]


def _wait_for(what: str, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _facts(conn: Connection) -> dict[str, bytes]:
    reply = conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(10)
    )
    return {e.key: e.value for e in reply.global_metadata if e.value is not None}


def test_auto_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PHUX_REPLICAS", raising=False)
    assert ServerConfig(Path("unused")).replica_mode == "auto"


def test_light_output_stays_in_a_thread_heavy_output_moves_to_a_helper_and_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHUX_REPLICA_IDLE_S", "2")
    with (
        replica_server(tmp_path, "--journal-bytes", str(BOUND), mode="auto", history=100) as srv,
        srv.connect() as conn,
    ):
        assert srv.proc is not None
        pid = srv.proc.pid
        tid = spawn(conn, program(PROGRAM), cols=80, rows=20)
        whole = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, whole, lambda s: b"R" in s.data)
        quiet = spawn(conn, program(PROGRAM), cols=80, rows=20)
        other = Stream(quiet)
        subscribe(conn, quiet)
        read_until(conn, other, lambda s: b"R" in s.data)
        assert _facts(conn)["phux.server.replicas"] == b"auto"
        # Light: answered from the thread; no helper process.
        for _ in range(3):
            assert _ask(conn, whole, b"1", b"<DA:") == DA1
        assert _ask(conn, other, b"1", b"<DA:") == DA1
        assert replica_pid(pid) == 0
        assert "phux.server.replica_pids" not in _facts(conn)
        # Heavy: the replicas move to a helper mid-burst; each of the 16 queries, those
        # parsed by the thread and those by the helper, is answered once.
        answers, size = map(int, _ask(conn, whole, b"b", b"<B:").split(b":"))
        assert (answers, size) == (QUERIES, QUERIES * len(DA1))
        assert "moving from the thread to a helper process" in srv.log.read_text()
        assert replica_pid(pid) > 0
        # The other terminal's replica, quiet during the burst, is re-seeded in the
        # helper with its next output (or in a thread, if the helper was let go meanwhile).
        assert _ask(conn, other, b"1", b"<DA:") == DA1
        # Idle: the helper is let go; light output is parsed in a thread again.
        _wait_for("the idle helper let go", lambda: "let go" in srv.log.read_text())
        _wait_for("no helper", lambda: replica_pid(pid) == 0)
        assert _ask(conn, whole, b"1", b"<DA:") == DA1
        assert replica_pid(pid) == 0
        assert srv.log.read_text().count("moving from the thread") == 1
        # The checkpoints, through the move and back, recreate the screen and history.
        answers, size = map(int, _ask(conn, whole, b"b", b"<B:").split(b":"))
        assert (answers, size) == (QUERIES, QUERIES * len(DA1))
        boot = compacted_bootstrap(srv, tid, BOUND)
        assert boot.ready is not None and boot.ready.next_seq == whole.next_seq
        replayed = boot.engine(history=100)
        assert not diff(engine_state(replay(whole, 100)), engine_state(replayed))


def test_more_terminals_than_the_threads_share_move_to_a_helper(tmp_path: Path) -> None:
    # (Each new terminal's replica is an engine at once: many, put away later, would
    # leave the server's heap that much larger for good.)
    with replica_server(tmp_path, mode="auto") as srv, srv.connect() as conn:
        assert srv.proc is not None
        for _ in range(AUTO_THREAD_TERMINALS):
            spawn(conn, ["cat"])
        assert "moving from the thread" not in srv.log.read_text()
        assert replica_pid(srv.proc.pid) == 0
        spawn(conn, ["cat"])
        assert "moving from the thread to a helper process" in srv.log.read_text()
        _wait_for("a helper", lambda: replica_pid(srv.proc.pid) > 0 if srv.proc else False)


class _Loop:
    """The loop's side of a thread worker: what it is given to run, run at once."""

    def run_sync_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        fn(*args)


def test_a_thread_worker_stopped_delivers_all_it_handled_before_the_stop() -> None:
    # (Moving to a helper stops the thread: the answers it owes must still go.)
    delivered: list[Message] = []
    token = cast(trio.lowlevel.TrioToken, _Loop())
    worker = _ThreadWorker(WorkerCore(100, 1 << 30, 1 << 30, 0.0), delivered.extend, token)
    worker.send((NEW, 1, 0, 80, 24, b""))
    for seq in range(0, 12, 4):
        worker.send((FEED, 1, seq, 0, 0, b"x\x1b[c"))
    worker.stop()
    worker._run()  # (here, not in a thread: it handles all up to the stop and returns)
    assert b"".join(m[5] for m in delivered if m[0] == REPLIES) == 3 * DA1
