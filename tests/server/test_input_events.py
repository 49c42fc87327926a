"""Protocol 1.3 on a real server: SUBSCRIBE.input (INPUT_WRITTEN) and LIST_AUDIT.

One server for the module's ``server`` tests (each looks only at its own terminals);
the audit tests start theirs with their own options."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.harness import ServerProcess, Stream, next_of, running_server, spawn, subscribe

from phux import __version__
from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    AuditList,
    BootstrapBegin,
    BootstrapReady,
    Input,
    InputWritten,
    ListAudit,
    MetaEntry,
    Output,
    Tombstone,
    TombstoneReason,
)

T = 5.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("input-events")) as srv:
        yield srv


def send(conn: Connection, terminal: int, data: bytes, **kw: bool) -> None:
    conn.call(
        lambda rid: Input(request_id=rid, terminal=terminal, data=data, **kw), Deadline.after(T)
    )


def follow(conn: Connection, terminal: int, *, want_input: bool = True) -> Stream:
    subscribe(conn, terminal, input=want_input)
    stream = Stream(terminal)
    deadline = Deadline.after(T)
    while stream.ready is None:
        stream.feed(conn.receive(deadline))
    return stream


def test_input_from_every_client_reaches_an_input_subscriber_in_order(
    server: ServerProcess,
) -> None:
    with server.connect() as watcher, server.connect() as a, server.connect() as b:
        tid = spawn(a, ["cat"])
        follow(watcher, tid)
        deadline = Deadline.after(T)
        events: list[tuple[str, bytes]] = []

        def until(seen: bytes) -> None:
            while seen not in b"".join(d for k, d in events if k == "o"):
                frame = watcher.receive(deadline)
                if isinstance(frame, InputWritten):
                    assert frame.terminal == tid and not frame.reply
                    events.append(("i", frame.data))
                elif isinstance(frame, Output):
                    events.append(("o", frame.data))

        send(a, tid, b"one\r")
        until(b"one")
        send(b, tid, b"two\r")
        until(b"two")
        assert [d for k, d in events if k == "i"] == [b"one\r", b"two\r"]
        # As the server saw it: each input before the echo it caused, "two" after "one"'s.
        first_echo = next(i for i, (k, d) in enumerate(events) if k == "o" and b"one" in d)
        assert events.index(("i", b"one\r")) < first_echo < events.index(("i", b"two\r"))


def test_input_written_seq_places_it_in_the_output(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["cat"])
        stream = follow(conn, tid)
        send(conn, tid, b"abc\r")
        written = next_of(conn, InputWritten, Deadline.after(T), terminal=tid)
        deadline = Deadline.after(T)
        while b"abc" not in stream.data:
            frame = conn.receive(deadline)
            stream.feed(frame)
        # Nothing of the echo was read before the bytes were written.
        assert written.seq <= stream.data.index(b"abc") + stream.start_seq


def test_a_plain_subscriber_and_an_older_client_get_no_input_events(
    server: ServerProcess,
) -> None:
    deadline = Deadline.after(T)
    with (
        server.connect() as plain,
        Connection.open(server.socket, deadline, minor=2) as old,
        server.connect() as typist,
    ):
        tid = spawn(typist, ["cat"])
        follow(plain, tid, want_input=False)
        follow(old, tid)  # asked, but a 1.2 client cannot place the frame: not sent
        send(typist, tid, b"quiet\r")
        send(typist, tid, b"marker\r")
        for conn in (plain, old):
            stream = Stream(tid)
            stream.next_seq = -1
            seen = b""
            while b"marker" not in seen:
                frame = conn.receive(deadline)
                assert not isinstance(frame, InputWritten)
                if isinstance(frame, Output):
                    seen += frame.data


def test_cancelled_input_is_never_shown(server: ServerProcess, tmp_path: Path) -> None:
    """Input dropped with its connection is not shown: only what reached the PTY is."""
    gate = tmp_path / "gate"
    with server.connect() as watcher:
        typist = server.connect()
        # A program that reads nothing until the gate opens: a big paste fills the PTY.
        script = f"stty -icanon; while [ ! -e {gate} ]; do sleep 0.05; done; exec cat >/dev/null"
        tid = spawn(typist, ["sh", "-c", script])
        follow(watcher, tid)
        big = b"x" * (1024 * 1024)
        typist.submit(lambda r: Input(request_id=r, terminal=tid, data=big))
        typist.submit(lambda r: Input(request_id=r, terminal=tid, data=b"NEVER"))
        deadline = Deadline.after(T)
        shown = 0
        while shown == 0:  # the write has begun (and stops on the full PTY)
            frame = watcher.receive(deadline)
            if isinstance(frame, InputWritten):
                shown += len(frame.data)
        typist.close()  # its unwritten input is dropped (spec/L1.md §7)
        gate.touch()
        send(watcher, tid, b"END")
        got = b""
        while not got.endswith(b"END"):
            frame = watcher.receive(deadline)
            if isinstance(frame, InputWritten):
                got += frame.data
        assert b"NEVER" not in got
        assert shown + got.count(b"x") < len(big)


def test_list_audit_over_the_wire(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--audit-data")
    server.start()
    try:
        with server.connect() as conn:
            meta = [MetaEntry(key="phux.session", value=b"w")]
            tid = spawn(conn, ["cat"], metadata=meta)
            other = spawn(conn, ["cat"])
            for i in range(5):
                send(conn, tid, b"line%d\r" % i)
            send(conn, other, b"elsewhere")
            deadline = Deadline.after(T)
            got = conn.call_expect(
                lambda rid: ListAudit(request_id=rid, terminal=tid), AuditList, deadline
            )
            assert [e.data for e in got.entries] == [b"line%d\r" % i for i in range(5)]
            assert not got.truncated and got.audit_file.endswith(".jsonl")
            first = got.entries[0]
            assert first.client == f"test/{__version__}" and first.target == "w:0.0"
            assert first.pid == os.getpid() and first.uid == os.getuid()
            assert first.sha256 == hashlib.sha256(b"line0\r").hexdigest() and first.size == 6
            last2 = conn.call_expect(
                lambda rid: ListAudit(request_id=rid, terminal=tid, limit=2), AuditList, deadline
            )
            assert [e.data for e in last2.entries] == [b"line3\r", b"line4\r"]
            assert last2.truncated
            everything = conn.call_expect(
                lambda rid: ListAudit(request_id=rid), AuditList, deadline
            )
            assert [e.terminal for e in everything.entries] == [tid] * 5 + [other]
            later = conn.call_expect(
                lambda rid: ListAudit(request_id=rid, since_ms=got.entries[-1].time_ms + 10**6),
                AuditList,
                deadline,
            )
            assert later.entries == [] and not later.truncated
    finally:
        server.stop()


def test_list_audit_without_an_audit(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--no-audit")
    server.start()
    try:
        with server.connect() as conn:
            got = conn.call_expect(
                lambda rid: ListAudit(request_id=rid), AuditList, Deadline.after(T)
            )
            assert got.audit_file == "" and got.entries == []
    finally:
        server.stop()


def test_bootstrap_ready_comes_before_input_events(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["cat"])
        subscribe(conn, tid, input=True)
        # Written while the bootstrap may still be pending: never before READY.
        conn.submit(lambda rid: Input(request_id=rid, terminal=tid, data=b"z"))
        deadline = Deadline.after(T)
        while not isinstance(frame := conn.receive(deadline), BootstrapReady):
            assert not isinstance(frame, InputWritten)
        send(conn, tid, b"y")
        got = b""
        while not got.endswith(b"y"):
            got += next_of(conn, InputWritten, deadline, terminal=tid).data
        assert got in (b"y", b"zy")


def test_list_audit_reads_across_rotated_files(tmp_path: Path) -> None:
    env = dict(os.environ, PHUX_AUDIT_KEEP="2")
    server = ServerProcess(tmp_path, "--audit-max-bytes", "1000", env=env)
    server.start()
    try:
        with server.connect() as conn:
            tid = spawn(conn, ["cat"])
            for i in range(40):
                send(conn, tid, b"%d" % i)
            deadline = Deadline.after(T)
            got = conn.call_expect(
                lambda rid: ListAudit(request_id=rid, terminal=tid), AuditList, deadline
            )
            kept = [e.sha256 for e in got.entries]
            # What the three files still hold: the newest entries, in order, ending with 39.
            expected = [hashlib.sha256(b"%d" % i).hexdigest() for i in range(40)]
            assert 6 < len(kept) < 40 and kept == expected[-len(kept) :]
            assert not got.truncated  # the older ones were rotated away, not left out
            last5 = conn.call_expect(
                lambda rid: ListAudit(request_id=rid, terminal=tid, limit=5), AuditList, deadline
            )
            assert [e.sha256 for e in last5.entries] == expected[-5:] and last5.truncated
    finally:
        server.stop()


def test_a_subscriber_that_does_not_read_input_events_lags(server: ServerProcess) -> None:
    """INPUT_WRITTEN is bounded like output: past the queue, TOMBSTONE and a fresh
    bootstrap, then input events again (spec/L1.md §6, §7.1)."""
    with server.connect() as watcher, server.connect() as typist:
        tid = spawn(typist, ["sh", "-c", "stty -echo; exec cat >/dev/null"])
        follow(watcher, tid)  # then it stops reading
        piece = b"p" * (1 << 20)
        deadline = Deadline.after(60)
        rids = [
            typist.submit(lambda r: Input(request_id=r, terminal=tid, data=piece))
            for _ in range(12)
        ]
        for rid in rids:
            typist.wait_reply(rid, deadline)
        tomb = next_of(watcher, Tombstone, deadline, terminal=tid)
        assert tomb.reason == TombstoneReason.LAG
        fresh = next_of(watcher, BootstrapBegin, deadline, terminal=tid)
        assert fresh.request_id == 0
        next_of(watcher, BootstrapReady, deadline, terminal=tid)
        send(typist, tid, b"END")
        got = b""
        while not got.endswith(b"END"):
            got += next_of(watcher, InputWritten, deadline, terminal=tid).data
        assert got == b"END"  # nothing of the lost stretch is sent again


def test_the_servers_answer_to_a_query_is_marked_reply(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh", "-c", "read x; printf '\\033[c'; sleep 10"])
        follow(conn, tid)
        send(conn, tid, b"go\r")
        deadline = Deadline.after(T)
        typed = next_of(conn, InputWritten, deadline, terminal=tid)
        assert typed.data == b"go\r" and not typed.reply
        answer = next_of(conn, InputWritten, deadline, terminal=tid)
        assert answer.reply and answer.data.startswith(b"\x1b[?")  # DA1, from the replica
