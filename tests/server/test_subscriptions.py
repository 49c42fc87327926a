"""Subscription bookkeeping: events, unsubscribe, duplicates, retention of closed terminals."""

from __future__ import annotations

from pathlib import Path

import pytest

from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.wire.errors import ErrorCode
from phux.wire.frames import (
    BootstrapBegin,
    Exited,
    Kill,
    ListTerminals,
    MetaEntry,
    Output,
    Resize,
    Resized,
    Subscribe,
    SubscribeEvents,
    TerminalClosed,
    TerminalList,
    TerminalSpawned,
    Unsubscribe,
)

from .harness import ServerProcess, Stream, next_of, read_until, running_server, spawn, subscribe
from .test_flow import go, producer, started

T = 10.0


def test_events_report_spawn_and_close(server: ServerProcess) -> None:
    with server.connect() as conn, server.connect() as events:
        events.call(lambda rid: SubscribeEvents(request_id=rid), Deadline.after(T))
        tid = spawn(conn, ["sh", "-c", "exit 3"], metadata=[MetaEntry(key="k", value=b"v")])
        spawned = next_of(events, TerminalSpawned, Deadline.after(T))
        assert spawned.terminal == tid and spawned.request_id is None
        assert spawned.metadata == [MetaEntry(key="k", value=b"v")]
        closed = next_of(events, TerminalClosed, Deadline.after(T))
        assert closed.terminal == tid and closed.status == Exited(code=3)


def test_unsubscribe_stops_output_at_the_ok(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, producer(50_000_000, piece=65536, pause=0.001))
        stream = started(conn, tid)
        go(conn, tid)
        read_until(conn, stream, lambda s: s.next_seq > 1_000_000, timeout=T)
        rid = conn.submit(lambda rid: Unsubscribe(request_id=rid, terminal=tid))
        conn.wait_reply(rid, Deadline.after(T))
        conn._pushed.clear()  # frames pushed before the OK are allowed
        conn.call(lambda rid: ListTerminals(request_id=rid), Deadline.after(T))
        conn.call(lambda rid: ListTerminals(request_id=rid), Deadline.after(T))
        assert not any(isinstance(f, Output) for f in conn._pushed)
        with pytest.raises(ServerError) as err:
            conn.call(lambda rid: Unsubscribe(request_id=rid, terminal=tid), Deadline.after(T))
        assert err.value.wire_code == ErrorCode.NOT_SUBSCRIBED
        conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))


def test_duplicate_and_unknown_subscriptions(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sleep", "30"])
        subscribe(conn, tid)
        read_until(conn, Stream(tid), lambda s: s.ready is not None)
        for terminal, code in (
            (tid, ErrorCode.INVALID_COMMAND),
            (99, ErrorCode.TERMINAL_NOT_FOUND),
        ):
            with pytest.raises(ServerError) as err:
                conn.call(
                    lambda rid, t=terminal: Subscribe(request_id=rid, terminal=t),
                    Deadline.after(T),
                )
            assert err.value.wire_code == code


def test_resize_is_ordered_with_output_and_noop_when_same(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["cat"])
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: s.ready is not None)
        conn.call(
            lambda rid: Resize(request_id=rid, terminal=tid, cols=80, rows=24), Deadline.after(T)
        )
        conn.call(
            lambda rid: Resize(request_id=rid, terminal=tid, cols=81, rows=24), Deadline.after(T)
        )
        frame = next_of(conn, Resized, Deadline.after(T))
        assert (frame.cols, frame.rows, frame.seq) == (81, 24, stream.next_seq)
        assert conn.poll() is None  # the first resize broadcast nothing


def test_closed_terminal_retained_then_forgotten(tmp_path: Path) -> None:
    with running_server(tmp_path, "--retention", "1") as server, server.connect() as conn:
        tid = spawn(conn, ["sh", "-c", "echo last words; exit 4"])
        subscribe(conn, tid)
        stream = read_until(conn, Stream(tid), lambda s: b"last words" in s.data)
        deadline = Deadline.after(T)
        while True:
            listing = conn.call_expect(
                lambda rid: ListTerminals(request_id=rid), TerminalList, deadline
            )
            info = listing.terminals[0]
            if info.exit is not None:
                break
        assert not info.alive and info.exit == Exited(code=4) and info.metadata == []
        with server.connect() as late:
            subscribe(late, tid)
            replay = read_until(late, Stream(tid), lambda s: s.ready is not None)
            assert replay.ready is not None and not replay.ready.alive
            assert replay.ready.exit == Exited(code=4)
            assert bytes(replay.data) == bytes(stream.data)
            closed = late.receive(Deadline.after(T))  # exactly one TERMINAL_CLOSED, after READY
            assert isinstance(closed, TerminalClosed) and closed.final_seq == replay.next_seq
        while listing.terminals:
            listing = conn.call_expect(
                lambda rid: ListTerminals(request_id=rid), TerminalList, deadline
            )
        with pytest.raises(ServerError) as err:
            conn.call(lambda rid: Subscribe(request_id=rid, terminal=tid), Deadline.after(T))
        assert err.value.wire_code == ErrorCode.TERMINAL_NOT_FOUND


def test_subscribe_then_unsubscribe_at_once_still_answers_both(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh", "-c", "echo hi; exec sleep 30"])
        sub = subscribe(conn, tid)
        unsub = conn.submit(lambda rid: Unsubscribe(request_id=rid, terminal=tid))
        conn.wait_reply(unsub, Deadline.after(T))
        begin = conn.receive(Deadline.after(T))
        assert isinstance(begin, BootstrapBegin) and begin.request_id == sub
        stream = read_until(conn, Stream(tid), lambda s: s.ready is not None)
        assert stream.ready is not None
