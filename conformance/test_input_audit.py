"""Protocol 1.3: the input written to a PTY (SUBSCRIBE.input, INPUT_WRITTEN; L1.md §7.1)
and the input audit read through the wire (LIST_AUDIT, AUDIT_LIST; L1.md §10)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .catalog import (
    PROTOCOL_VERSION,
    AuditList,
    Frame,
    Hello,
    HelloOk,
    Input,
    InputWritten,
    ListAudit,
    Ok,
    Output,
)
from .helpers import spawn, subscribe
from .wire_client import TIMEOUT, Conn

Connect = Callable[..., Conn]
MAJOR, MINOR, PATCH = PROTOCOL_VERSION


def type_in(conn: Conn, terminal: int, data: bytes) -> None:
    rid = conn.rid()
    assert conn.request(Input(request_id=rid, terminal=terminal, data=data)) == Ok(request_id=rid)


def written(conn: Conn, terminal: int, until: bytes) -> tuple[bytes, list[Frame]]:
    """INPUT_WRITTEN bytes of ``terminal`` until they end with ``until``, and every frame of
    the terminal (OUTPUT and INPUT_WRITTEN) in the order they came."""
    got = b""
    frames: list[Frame] = []
    while not got.endswith(until):
        frame = conn.expect(
            lambda f: isinstance(f, InputWritten | Output) and f.terminal == terminal,
            what="INPUT_WRITTEN",
        )
        frames.append(frame)
        if isinstance(frame, InputWritten):
            assert not frame.reply
            got += frame.data
    return got, frames


@pytest.mark.clause("L1.md §7.1 input events")
def test_input_of_every_connection_reaches_an_input_subscriber(
    connect: Connect, cleanup: list[int]
) -> None:
    watcher, a, b = connect(), connect(), connect()
    t = spawn(a, cleanup, ["cat"])
    stream = subscribe(watcher, t.terminal, input=True)
    type_in(a, t.terminal, b"first\r")
    stream.read_until(watcher, b"first")
    type_in(b, t.terminal, b"second\r")
    got, frames = written(watcher, t.terminal, b"second\r")
    assert got == b"first\rsecond\r"
    first = next(f for f in frames if isinstance(f, InputWritten))
    # Written before the echo it caused was read: its seq is at or before the echo's.
    assert first.seq <= stream.start_seq + bytes(stream.data).index(b"first")


@pytest.mark.clause("L1.md §7.1 input events")
def test_input_written_is_in_order_with_the_output(connect: Connect, cleanup: list[int]) -> None:
    watcher, typist = connect(), connect()
    t = spawn(typist, cleanup, ["cat"])
    stream = subscribe(watcher, t.terminal, input=True)
    seq = stream.next_seq
    for word in (b"one\r", b"two\r", b"three\r"):
        type_in(typist, t.terminal, word)
    _, frames = written(watcher, t.terminal, b"three\r")
    for frame in frames:  # every seq is where the output stood when it was written
        if isinstance(frame, Output):
            assert frame.seq == seq
            seq += len(frame.data)
        else:
            assert isinstance(frame, InputWritten) and frame.seq >= seq


@pytest.mark.clause("L1.md §7.1 input events")
def test_a_subscriber_that_did_not_ask_gets_no_input(connect: Connect, cleanup: list[int]) -> None:
    plain, typist = connect(), connect()
    t = spawn(typist, cleanup, ["cat"])
    stream = subscribe(plain, t.terminal)
    type_in(typist, t.terminal, b"unseen\r")
    stream.read_until(plain, b"unseen")
    assert not [f for f in plain.backlog if isinstance(f, InputWritten)]


@pytest.mark.skipif(MINOR < 3, reason="no input events before 1.3")
@pytest.mark.clause("proto.md §10 minor", "L1.md §7.1 input events")
def test_a_client_of_an_older_minor_gets_no_input_events(
    connect: Connect, cleanup: list[int]
) -> None:
    old = connect(hello=False)
    old.send(Hello(client_name="old", major=MAJOR, minor=2, patch=0))
    assert isinstance(old.expect(lambda f: True, what="HELLO_OK"), HelloOk)
    t = spawn(old, cleanup, ["cat"])
    stream = subscribe(old, t.terminal, input=True)  # a field it cannot have meant
    type_in(old, t.terminal, b"old\r")
    stream.read_until(old, b"old")
    assert not [f for f in old.backlog if isinstance(f, InputWritten)]


@pytest.mark.clause("L1.md §7.1 input events", "L1.md §7 cancellation")
def test_input_dropped_with_its_connection_is_never_shown(
    connect: Connect, cleanup: list[int], tmp_path: Path
) -> None:
    watcher, typist = connect(), connect()
    gate = tmp_path / "gate"
    # Reads nothing until the gate opens: a large INPUT fills the PTY and waits there.
    script = f"stty -icanon; while [ ! -e {gate} ]; do sleep 0.05; done; exec cat >/dev/null"
    t = spawn(typist, cleanup, ["/bin/sh", "-c", script])
    subscribe(watcher, t.terminal, input=True)
    big = b"x" * (1 << 20)
    typist.send(Input(request_id=typist.rid(), terminal=t.terminal, data=big))
    typist.send(Input(request_id=typist.rid(), terminal=t.terminal, data=b"NEVER"))
    first = watcher.expect(
        lambda f: isinstance(f, InputWritten) and f.terminal == t.terminal, what="INPUT_WRITTEN"
    )
    typist.close()  # its unwritten input is discarded (L1.md §7)
    gate.touch()
    type_in(watcher, t.terminal, b"END")
    got, _ = written(watcher, t.terminal, b"END")
    assert b"NEVER" not in got
    assert len(first.data) + got.count(b"x") < len(big)


def audit(conn: Conn, **fields: int) -> AuditList:
    reply = conn.request(ListAudit(request_id=conn.rid(), **fields))
    assert isinstance(reply, AuditList), reply
    return reply


@pytest.mark.clause("L1.md §10 audit")
def test_list_audit_names_who_wrote_what(connect: Connect, cleanup: list[int]) -> None:
    conn = connect()
    t = spawn(conn, cleanup, ["cat"])
    other = spawn(conn, cleanup, ["cat"])
    before = int(time.time() * 1000)
    for word in (b"alpha\r", b"beta\r", b"gamma\r"):
        type_in(conn, t.terminal, word)
    type_in(conn, other.terminal, b"elsewhere")
    got = audit(conn, terminal=t.terminal)
    if not got.audit_file:
        assert got.entries == []
        pytest.skip("this server keeps no input audit (allowed: L1.md §10)")
    assert [e.size for e in got.entries] == [6, 5, 6]
    assert [e.sha256 for e in got.entries] == [
        hashlib.sha256(w).hexdigest() for w in (b"alpha\r", b"beta\r", b"gamma\r")
    ]
    for entry in got.entries:
        assert entry.terminal == t.terminal and entry.client == "phux-conformance"
        assert entry.pid == os.getpid() and entry.uid == os.getuid()
        assert before - 1000 <= entry.time_ms <= int(time.time() * 1000) + 1000
        assert entry.data in (None, b"alpha\r", b"beta\r", b"gamma\r")
    times = [e.time_ms for e in got.entries]
    assert times == sorted(times)  # oldest first
    newest = audit(conn, terminal=t.terminal, limit=1)
    assert [e.sha256 for e in newest.entries] == [got.entries[-1].sha256] and newest.truncated
    future = audit(conn, terminal=t.terminal, since_ms=times[-1] + 3_600_000)
    assert future.entries == []
    everything = audit(conn)
    mine = [e for e in everything.entries if e.terminal in (t.terminal, other.terminal)]
    assert [e.terminal for e in mine][-4:] == [t.terminal] * 3 + [other.terminal]


@pytest.mark.clause("L1.md §10 audit", "proto.md §5 one reply per request")
def test_list_audit_answers_in_any_order_with_other_requests(
    connect: Connect, cleanup: list[int]
) -> None:
    conn = connect()
    rids = [conn.rid() for _ in range(5)]
    for rid in rids:
        conn.send(ListAudit(request_id=rid, limit=1))
    for rid in rids:
        assert isinstance(conn.reply(rid, timeout=TIMEOUT), AuditList)
