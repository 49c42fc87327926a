"""Behaviour the spec states precisely since 1.0.1 (issue: implementers were left guessing).

Each test names the sentence it checks; see spec/CHANGELOG.md.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator

import pytest

from .catalog import (
    ErrorCode,
    Input,
    Kill,
    ListTerminals,
    MetadataChanged,
    MetadataKeys,
    MetadataValue,
    MetaDelete,
    MetaGet,
    MetaList,
    MetaSet,
    MetaSubscribe,
    Ok,
    Resize,
    Resized,
    Signaled,
    Subscribe,
    SubscribeEvents,
    TerminalClosed,
    TerminalList,
    TerminalSpawned,
)
from .helpers import check_error, spawn, subscribe
from .server import local_server
from .wire_client import Conn

Connect = Callable[..., Conn]


def _info(conn: Conn, terminal: int):  # type: ignore[no-untyped-def]
    listing = conn.request(ListTerminals(request_id=conn.rid()))
    assert isinstance(listing, TerminalList)
    return next((t for t in listing.terminals if t.terminal == terminal), None)


@pytest.mark.clause("L1.md §3 KILL")
def test_killed_but_not_reaped(conn: Conn, cleanup: list[int]) -> None:
    """L1.md §3: between KILL's OK and TERMINAL_CLOSED, alive is false and exit absent;
    input is TERMINAL_EXITED; exactly one TERMINAL_CLOSED follows, then exit is listed."""
    # A program that ignores SIGHUP outlives the KILL for the 2 s grace.
    tid = spawn(conn, cleanup, ["sh", "-c", "trap '' HUP; echo ready; while :; do sleep 1; done"])
    stream = subscribe(conn, tid.terminal)
    stream.read_until(conn, b"ready")
    rid = conn.rid()
    assert conn.request(Kill(request_id=rid, terminals=[tid.terminal])) == Ok(request_id=rid)
    info = _info(conn, tid.terminal)
    assert info is not None and not info.alive
    if stream.closed is None and not any(
        isinstance(f, TerminalClosed) and f.terminal == tid.terminal for f in conn.backlog
    ):
        assert info.exit is None, "exit is listed before TERMINAL_CLOSED was sent"
    rid = conn.rid()
    check_error(
        conn.request(Input(request_id=rid, terminal=tid.terminal, data=b"x")),
        ErrorCode.TERMINAL_EXITED,
        rid,
    )
    closed = stream.read_until_closed(conn, timeout=15)
    assert isinstance(closed.status, Signaled)
    conn.poll(0.3)
    assert not [f for f in conn.backlog if isinstance(f, TerminalClosed)], "a second CLOSED"
    info = _info(conn, tid.terminal)
    assert info is not None and info.exit == closed.status


@pytest.mark.clause("L1.md §8 SUBSCRIBE_EVENTS")
def test_closed_once_for_a_subscriber_that_also_wants_events(
    conn: Conn, cleanup: list[int]
) -> None:
    """L1.md §8: one TERMINAL_CLOSED per terminal per connection, however it follows it."""
    rid = conn.rid()
    assert conn.request(SubscribeEvents(request_id=rid)) == Ok(request_id=rid)
    tid = spawn(conn, cleanup, ["sh", "-c", "read x"]).terminal
    stream = subscribe(conn, tid)
    rid = conn.rid()
    assert conn.request(Input(request_id=rid, terminal=tid, data=b"go\r")) == Ok(request_id=rid)
    stream.read_until_closed(conn)
    conn.poll(0.3)
    extra = [f for f in conn.backlog if isinstance(f, TerminalClosed) and f.terminal == tid]
    assert extra == [], extra


@pytest.mark.clause("L1.md §8 SUBSCRIBE_EVENTS")
def test_subscribe_events_twice_does_not_double_events(conn: Conn, cleanup: list[int]) -> None:
    """L1.md §8: SUBSCRIBE_EVENTS is idempotent."""
    for _ in range(2):
        rid = conn.rid()
        assert conn.request(SubscribeEvents(request_id=rid)) == Ok(request_id=rid)
    tid = spawn(conn, cleanup, ["sleep", "30"]).terminal
    conn.expect_type(TerminalSpawned, terminal=tid, request_id=None)
    conn.poll(0.3)
    again = [f for f in conn.backlog if isinstance(f, TerminalSpawned) and f.terminal == tid]
    assert again == [], again


@pytest.mark.clause("L1.md §2 metadata order")
def test_metadata_lists_are_sorted_by_key(conn: Conn, cleanup: list[int]) -> None:
    """L1.md §2: every metadata list the server sends is in key order."""
    meta = {"conf.z": b"1", "conf.a": b"2", "conf.\u00e9": b"3", "conf.M": b"4"}
    rid = conn.rid()
    assert conn.request(MetaSubscribe(request_id=rid, prefix="conf.")) == Ok(request_id=rid)
    spawned = spawn(conn, cleanup, ["sleep", "30"], metadata=meta)
    want = sorted(meta)
    assert [e.key for e in spawned.metadata] == want
    info = _info(conn, spawned.terminal)
    assert [e.key for e in info.metadata] == want
    changed = [
        conn.expect_type(MetadataChanged, terminal=spawned.terminal).key for _ in range(len(meta))
    ]
    assert changed == want
    for key in reversed(want):
        rid = conn.rid()
        assert conn.request(MetaSet(request_id=rid, key=key, value=b"g")) == Ok(request_id=rid)
    try:
        listed = conn.request(MetaList(request_id=conn.rid(), prefix="conf."))
        assert isinstance(listed, MetadataKeys)
        assert [e.key for e in listed.entries] == want
    finally:
        for key in want:
            conn.request(MetaDelete(request_id=conn.rid(), key=key))


@pytest.mark.clause("proto.md §3.4 STRING")
def test_a_leading_bom_is_part_of_a_string(conn: Conn) -> None:
    """proto.md §3.4: a decoder keeps a leading U+FEFF."""
    key = "\ufeffconf.bom"
    rid = conn.rid()
    assert conn.request(MetaSet(request_id=rid, key=key, value=b"v")) == Ok(request_id=rid)
    try:
        value = conn.request(MetaGet(request_id=conn.rid(), key=key))
        assert isinstance(value, MetadataValue) and value.key == key and value.value == b"v"
        plain = conn.request(MetaGet(request_id=conn.rid(), key="conf.bom"))
        assert plain.value is None
    finally:
        conn.request(MetaDelete(request_id=conn.rid(), key=key))


@pytest.mark.clause("L1.md §2 argv")
def test_argv0_is_looked_up_in_the_childs_path(conn: Conn, cleanup: list[int]) -> None:
    """L1.md §2: argv[0] without a slash is found in the PATH of SPAWN's env."""
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "conf-only-here")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\necho found-in-spawn-path\n")
        os.chmod(prog, 0o755)
        tid = spawn(
            conn, cleanup, ["conf-only-here"], env={"PATH": f"{tmp}:/usr/bin:/bin"}
        ).terminal
        stream = subscribe(conn, tid)
        if stream.alive:
            stream.read_until_closed(conn)
        # A terminal that exited before SUBSCRIBE may replay from a checkpoint (L1.md §5.1).
        assert b"found-in-spawn-path" in stream.checkpoint + bytes(stream.data)


@pytest.mark.clause("L1.md §3 RESIZE")
def test_resize_to_the_same_size_is_a_no_op(conn: Conn, cleanup: list[int]) -> None:
    """L1.md §3: OK, and nothing is broadcast."""
    tid = spawn(conn, cleanup, ["sleep", "30"], cols=90, rows=30).terminal
    subscribe(conn, tid)
    rid = conn.rid()
    assert conn.request(Resize(request_id=rid, terminal=tid, cols=90, rows=30)) == Ok(
        request_id=rid
    )
    conn.poll(0.3)
    assert not [f for f in conn.backlog if isinstance(f, Resized) and f.terminal == tid]
    info = _info(conn, tid)
    assert (info.cols, info.rows) == (90, 30)


@pytest.mark.clause("proto.md §4 limits", "proto.md §11 limits")
def test_max_metadata_subscriptions(conn: Conn) -> None:
    """proto.md §4: no more than max_subscriptions metadata subscriptions per connection."""
    limit = conn.hello_ok.max_subscriptions if conn.hello_ok else 256
    if limit > 4096:
        pytest.skip(f"max_subscriptions {limit} is too many to try")
    for _ in range(limit):
        rid = conn.rid()
        conn.send(MetaSubscribe(request_id=rid, prefix="conf.none."))
    replies = [conn.reply(rid) for rid in range(rid - limit + 1, rid + 1)]
    assert all(isinstance(r, Ok) for r in replies), [r for r in replies if not isinstance(r, Ok)]
    rid = conn.rid()
    check_error(
        conn.request(MetaSubscribe(request_id=rid, prefix="conf.none.")),
        ErrorCode.RESOURCE_EXHAUSTED,
        rid,
    )


RETENTION_S = 1.0


@pytest.fixture(scope="module")
def short_retention_socket() -> Iterator[str]:
    """A server whose closed terminals are kept RETENTION_S seconds."""
    external = os.environ.get("PHUX_CONFORMANCE_SHORT_RETENTION_SOCKET")
    if external:
        yield external
        return
    if os.environ.get("PHUX_CONFORMANCE_SOCKET"):
        pytest.skip("set PHUX_CONFORMANCE_SHORT_RETENTION_SOCKET to a server with 1 s retention")
    with local_server("--retention", str(RETENTION_S)) as server:
        yield server.socket_path


@pytest.mark.clause("L1.md §1 retention")
def test_a_closed_terminal_is_forgotten_after_retention(short_retention_socket: str) -> None:
    """L1.md §1: a closed terminal stays listed for the retention period, then its id
    answers TERMINAL_NOT_FOUND."""
    with Conn(short_retention_socket) as conn:
        conn.hello()
        sub = conn.rid()
        assert conn.request(MetaSubscribe(request_id=sub, prefix="conf.ret")) == Ok(request_id=sub)
        tid = spawn(conn, [], ["sh", "-c", "exit 3"], metadata={"conf.ret": b"kept"}).terminal
        stream = subscribe(conn, tid)
        if stream.alive:
            stream.read_until_closed(conn)
        info = _info(conn, tid)
        assert info is not None and not info.alive, "a closed terminal is listed at first"
        # L3.md §1: its metadata stays readable until it is forgotten...
        rid = conn.rid()
        kept = conn.request(MetaGet(request_id=rid, key="conf.ret", terminal=tid))
        assert kept == MetadataValue(request_id=rid, key="conf.ret", value=b"kept")
        deadline = time.monotonic() + RETENTION_S + 5
        while _info(conn, tid) is not None:
            assert time.monotonic() < deadline, "still listed long after the retention period"
            conn.poll(0.1)
        # ...and subscribers see its deletion then, once.
        changes = [f for f in conn.backlog if isinstance(f, MetadataChanged)]
        assert changes[-1] == MetadataChanged(subscription=sub, key="conf.ret", terminal=tid)
        assert [c for c in changes if c.value is None] == [changes[-1]]
        rid = conn.rid()
        check_error(
            conn.request(Subscribe(request_id=rid, terminal=tid)),
            ErrorCode.TERMINAL_NOT_FOUND,
            rid,
        )
