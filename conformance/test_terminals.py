"""Terminals: spawn, input, output, resize, signals, exit (spec/L1.md)."""

from __future__ import annotations

import os
import signal as host_signal
import tempfile
from collections.abc import Callable

import pytest

from .catalog import (
    ErrorCode,
    Exited,
    Input,
    ListTerminals,
    MetaDelete,
    MetaEntry,
    MetaSet,
    Ok,
    Resize,
    Resized,
    Role,
    SendSignal,
    Signal,
    Signaled,
    Spawn,
    SubscribeEvents,
    TerminalClosed,
    TerminalFilter,
    TerminalList,
    TerminalSpawned,
    Unsubscribe,
)
from .helpers import check_error, spawn, subscribe
from .wire_client import Conn

Connect = Callable[..., Conn]


def info(conn: Conn, terminal: int):  # type: ignore[no-untyped-def]
    listing = conn.request(ListTerminals(request_id=conn.rid()))
    assert isinstance(listing, TerminalList)
    found = [t for t in listing.terminals if t.terminal == terminal]
    return found[0] if found else None


@pytest.mark.clause("L1.md §2 SPAWN", "L1.md §4 sequence numbers")
def test_spawn_input_output_echo_with_contiguous_seqs(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"])
    assert (t.cols, t.rows) == (80, 24) and t.pid > 0
    stream = subscribe(conn, t.terminal)
    rid = conn.rid()
    ok = conn.request(Input(request_id=rid, terminal=t.terminal, data=b"echo $((6*7))x\r"))
    assert ok == Ok(request_id=rid)
    stream.read_until(conn, b"42x")  # checks every OUTPUT's seq on the way
    rid = conn.rid()
    conn.send(Input(request_id=rid, terminal=t.terminal, data=b"echo $((7*8))y\r"))
    assert conn.reply(rid) == Ok(request_id=rid)
    stream.read_until(conn, b"56y")
    listed = info(conn, t.terminal)
    assert listed is not None and listed.alive and listed.next_seq >= stream.next_seq


@pytest.mark.clause("L1.md §2 argv")
def test_empty_argv_runs_a_shell(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, [])
    stream = subscribe(conn, t.terminal)
    conn.request(Input(request_id=conn.rid(), terminal=t.terminal, data=b"echo $((3+4))z\r"))
    stream.read_until(conn, b"7z")


@pytest.mark.clause("L1.md §2 SPAWN")
def test_spawn_env_cwd_and_size(conn: Conn, cleanup: list[int]) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        cwd = os.path.realpath(cwd)
        t = spawn(
            conn,
            cleanup,
            ["/bin/sh", "-c", 'echo "<$FOO|$PWD|$TERM|$PHUX_TERMINAL|$(stty size)>"; sleep 5'],
            env={"FOO": "bar baz"},
            cwd=cwd,
            cols=101,
            rows=33,
        )
        assert (t.cols, t.rows) == (101, 33)
        stream = subscribe(conn, t.terminal)
        stream.read_until(conn, b">")
        want = f"<bar baz|{cwd}|xterm-256color|{t.terminal}|33 101>"
        assert want in stream.text(), stream.text()


@pytest.mark.clause("L1.md §2 SPAWN")
def test_spawn_failure_creates_nothing(conn: Conn) -> None:
    before = conn.request(ListTerminals(request_id=conn.rid()))
    rid = conn.rid()
    reply = conn.request(Spawn(request_id=rid, argv=["/nonexistent/phux-conformance-prog"]))
    check_error(reply, ErrorCode.SPAWN_FAILED, rid)
    after = conn.request(ListTerminals(request_id=conn.rid()))
    assert {x.terminal for x in after.terminals} <= {x.terminal for x in before.terminals}


@pytest.mark.clause("L1.md §3 RESIZE")
def test_resize_seen_by_stty_size(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"])
    stream = subscribe(conn, t.terminal)
    rid = conn.rid()
    assert conn.request(Resize(request_id=rid, terminal=t.terminal, cols=100, rows=30)) == Ok(
        request_id=rid
    )
    conn.send(Input(request_id=conn.rid(), terminal=t.terminal, data=b"stty size\r"))
    stream.read_until(conn, b"30 100")
    assert (100, 30) in [(c, r) for _, c, r in stream.sizes], stream.sizes
    listed = info(conn, t.terminal)
    assert (listed.cols, listed.rows) == (100, 30)


@pytest.mark.clause("L1.md §3 RESIZE", "proto.md §11 limits")
def test_resize_out_of_range_is_invalid(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"])
    for cols, rows in ((0, 24), (80, 0), (1001, 24), (80, 1001)):
        rid = conn.rid()
        reply = conn.request(Resize(request_id=rid, terminal=t.terminal, cols=cols, rows=rows))
        check_error(reply, ErrorCode.INVALID_COMMAND, rid)


@pytest.mark.clause("L1.md §5 roles")
def test_viewer_never_resizes_primary_does(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"], cols=80, rows=24)
    subscribe(conn, t.terminal, role=Role.VIEWER, cols=50, rows=10)
    listed = info(conn, t.terminal)
    assert (listed.cols, listed.rows) == (80, 24)
    assert listed.viewers >= 1
    other = Conn(conn.path)
    try:
        other.hello()
        stream = subscribe(other, t.terminal, role=Role.PRIMARY, cols=90, rows=20)
        listed = info(conn, t.terminal)
        assert (listed.cols, listed.rows) == (90, 20)
        assert listed.primaries >= 1
        assert stream.ready is not None
        assert (stream.ready.cols, stream.ready.rows) == (90, 20)
    finally:
        other.close()
    # The viewer sees the primary's resize as a RESIZED frame.
    resized = conn.expect_type(Resized, terminal=t.terminal)
    assert (resized.cols, resized.rows) == (90, 20)


@pytest.mark.clause("L1.md §3 exit", "L1.md §8 listing")
def test_exit_code_reported(conn: Conn, connect: Connect, cleanup: list[int]) -> None:
    events = connect()
    rid = events.rid()
    assert events.request(SubscribeEvents(request_id=rid)) == Ok(request_id=rid)
    t = spawn(conn, cleanup, ["/bin/sh", "-c", "sleep 0.3; echo bye; exit 7"])
    stream = subscribe(conn, t.terminal)
    closed = stream.read_until_closed(conn)
    assert closed.status == Exited(code=7)
    assert b"bye" in stream.data
    spawned = events.expect_type(TerminalSpawned, terminal=t.terminal)
    assert spawned.request_id is None
    ev = events.expect_type(TerminalClosed, terminal=t.terminal)
    assert ev.status == Exited(code=7)
    listed = info(conn, t.terminal)
    assert listed is not None and not listed.alive and listed.exit == Exited(code=7)
    assert listed.metadata == []
    # A closed, retained terminal can still be subscribed: bootstrap says so.
    late = Conn(conn.path)
    try:
        late.hello()
        replay = subscribe(late, t.terminal)
        assert replay.ready is not None and not replay.ready.alive
        assert replay.ready.exit == Exited(code=7)
        assert replay.ready.next_seq == closed.final_seq
    finally:
        late.close()
    rid = conn.rid()
    reply = conn.request(Input(request_id=rid, terminal=t.terminal, data=b"x"))
    check_error(reply, ErrorCode.TERMINAL_EXITED, rid)


@pytest.mark.clause("L1.md §3 SEND_SIGNAL")
def test_send_signal_reaches_foreground_process(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["sleep", "30"])
    stream = subscribe(conn, t.terminal)
    rid = conn.rid()
    reply = conn.request(SendSignal(request_id=rid, terminal=t.terminal, signal=Signal.INT))
    assert reply == Ok(request_id=rid)
    closed = stream.read_until_closed(conn)
    assert closed.status == Signaled(signal=int(host_signal.SIGINT))


@pytest.mark.clause("L1.md §3 SEND_SIGNAL")
def test_unknown_signal_is_invalid(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"])
    rid = conn.rid()
    reply = conn.request(SendSignal(request_id=rid, terminal=t.terminal, signal=250))
    check_error(reply, ErrorCode.INVALID_COMMAND, rid)


@pytest.mark.clause("L1.md §7 input")
def test_inputs_are_written_in_order(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh", "-c", "stty -echo; cat"])
    stream = subscribe(conn, t.terminal)
    ids = []
    for i in range(60):
        rid = conn.rid()
        ids.append(rid)
        conn.send(Input(request_id=rid, terminal=t.terminal, data=b"<%03d>" % i))
    conn.send(Input(request_id=conn.rid(), terminal=t.terminal, data=b"\n"))
    for rid in ids:
        assert conn.reply(rid) == Ok(request_id=rid)
    stream.read_until(conn, b"".join(b"<%03d>" % i for i in range(60)))


@pytest.mark.clause("L1.md §5 roles")
def test_a_primary_leaving_gives_the_size_back(
    conn: Conn, connect: Connect, cleanup: list[int]
) -> None:
    """A big window attached, a small one attaches (the terminal shrinks), the small one
    leaves: the terminal takes the big one's size again, not the departed one's."""
    t = spawn(conn, cleanup, ["/bin/sh"], cols=80, rows=24)
    big = connect()
    subscribe(big, t.terminal, role=Role.PRIMARY, cols=120, rows=40)
    small = connect()
    subscribe(small, t.terminal, role=Role.PRIMARY, cols=60, rows=20)
    listed = info(conn, t.terminal)
    assert (listed.cols, listed.rows) == (60, 20)
    rid = small.rid()
    assert small.request(Unsubscribe(request_id=rid, terminal=t.terminal)) == Ok(request_id=rid)
    listed = info(conn, t.terminal)
    assert (listed.cols, listed.rows) == (120, 40)
    assert _resized_to(big, t.terminal, (120, 40))
    # The same when the smaller one's connection closes, and after it resized.
    small = connect()
    subscribe(small, t.terminal, role=Role.PRIMARY, cols=70, rows=20)
    rid = small.rid()
    reply = small.request(Resize(request_id=rid, terminal=t.terminal, cols=50, rows=15))
    assert reply == Ok(request_id=rid)
    assert (info(conn, t.terminal).cols, info(conn, t.terminal).rows) == (50, 15)
    small.close()
    # The big window is told, in order: 70x20, 50x15, then its own size back.
    assert _resized_to(big, t.terminal, (120, 40))
    listed = info(conn, t.terminal)
    assert (listed.cols, listed.rows) == (120, 40)


def _resized_to(stream: Conn, terminal: int, size: tuple[int, int]) -> bool:
    """Read RESIZED frames of ``terminal`` until one says ``size`` (each read is bounded)."""
    while True:
        resized = stream.expect_type(Resized, terminal=terminal)
        if (resized.cols, resized.rows) == size:
            return True


@pytest.mark.clause("L1.md §8 filtered listing")
def test_a_filtered_listing_holds_what_it_names(conn: Conn, cleanup: list[int]) -> None:
    key = f"conformance.filter.{os.getpid()}"
    a = spawn(conn, cleanup, ["/bin/sh"], metadata={key: b"x"}).terminal
    b = spawn(conn, cleanup, ["/bin/sh"], metadata={key: b"y"}).terminal
    c = spawn(conn, cleanup, ["/bin/sh"], metadata={key: b"x"}).terminal
    rid = conn.rid()
    assert conn.request(MetaSet(request_id=rid, key=f"{key}.g", value=b"1")) == Ok(request_id=rid)

    def listed(only: TerminalFilter) -> TerminalList:
        reply = conn.request(ListTerminals(request_id=conn.rid(), filter=only))
        assert isinstance(reply, TerminalList)
        return reply

    by_ids = listed(TerminalFilter(terminals=[c, 2**32 - 1, a, c]))
    assert [t.terminal for t in by_ids.terminals] == [a, c]  # creation order, once each
    assert by_ids.global_metadata == []  # no prefixes: no global entries
    by_value = listed(TerminalFilter(metadata=[MetaEntry(key=key, value=b"x")]))
    assert [t.terminal for t in by_value.terminals] == [a, c]
    both = listed(TerminalFilter(terminals=[b, c], metadata=[MetaEntry(key=key, value=b"x")]))
    assert [t.terminal for t in both.terminals] == [c]
    assert listed(TerminalFilter(metadata=[MetaEntry(key=key, value=b"z")])).terminals == []
    prefixed = listed(TerminalFilter(terminals=[b], global_prefixes=[key]))
    assert [(e.key, e.value) for e in prefixed.global_metadata] == [(f"{key}.g", b"1")]
    rid = conn.rid()
    assert conn.request(MetaDelete(request_id=rid, key=f"{key}.g")) == Ok(request_id=rid)
