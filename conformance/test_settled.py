"""Behaviour an outside implementer found unstated, settled in the spec (issue 24 item 9).

Each test names the sentence it checks; see spec/CHANGELOG.md (1.3.0, corrections).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from .catalog import (
    AuditList,
    Detach,
    Detached,
    Error,
    ErrorCode,
    Hello,
    HelloOk,
    Kill,
    ListAudit,
    ListTerminals,
    MetadataValue,
    MetaEntry,
    MetaGet,
    MetaSet,
    MetaSubscribe,
    Ok,
    Ping,
    Pong,
    Resize,
    SendSignal,
    Spawn,
    Subscribe,
    SubscribeEvents,
    TerminalList,
    TerminalSpawned,
)
from .codec import encode_frame
from .helpers import check_error, spawn
from .wire_client import Conn

Connect = Callable[..., Conn]
PINGS = 3000  # more than one batch of the server's sender


@pytest.mark.clause("proto.md §9 half-close")
def test_requests_sent_before_a_half_close_are_answered(connect: Connect) -> None:
    """A client that sends its requests and then shuts its writing side gets every
    answer, then the server closes."""
    for _ in range(10):
        conn = connect(hello=False)
        hello = Hello(client_name="half", major=1, minor=3, patch=0)
        pings = b"".join(encode_frame(Ping(token=n)) for n in range(PINGS))
        conn.sock.sendall(encode_frame(hello) + pings)
        conn.sock.shutdown(socket.SHUT_WR)
        frames = conn.drain_until_closed()
        assert isinstance(frames[0], HelloOk), frames
        assert [f.token for f in frames if isinstance(f, Pong)] == list(range(PINGS))


@pytest.mark.clause("proto.md §4 handshake")
def test_detach_before_hello_is_a_handshake_error(connect: Connect) -> None:
    conn = connect(hello=False)
    conn.send(Detach())
    frames = conn.drain_until_closed()
    errors = [f for f in frames if isinstance(f, Error)]
    assert errors and errors[0].code == ErrorCode.HANDSHAKE_REQUIRED, frames
    assert not any(isinstance(f, Detached) for f in frames), frames


@pytest.mark.clause("proto.md §2 framing")
def test_length_zero_before_hello_closes_as_after(connect: Connect) -> None:
    conn = connect(hello=False)
    conn.send_raw(b"\x00\x00\x00\x00")
    frames = conn.drain_until_closed()
    errors = [f for f in frames if isinstance(f, Error)]
    assert errors and errors[0].code == ErrorCode.MALFORMED_MESSAGE, frames


@pytest.mark.clause("L1.md §3 KILL")
def test_kill_naming_a_terminal_twice_kills_it_once(conn: Conn, cleanup: list[int]) -> None:
    tid = spawn(conn, cleanup, ["sleep", "60"]).terminal
    rid = conn.rid()
    assert conn.request(Kill(request_id=rid, terminals=[tid, tid])) == Ok(request_id=rid)
    listing = conn.request(ListTerminals(request_id=conn.rid()))
    assert isinstance(listing, TerminalList)
    assert [t.alive for t in listing.terminals if t.terminal == tid] == [False]


@pytest.mark.clause("L3.md §1 metadata")
def test_spawn_metadata_naming_a_key_twice_keeps_the_last(conn: Conn, cleanup: list[int]) -> None:
    rid = conn.rid()
    metadata = [MetaEntry(key="k", value=b"first"), MetaEntry(key="k", value=b"last")]
    reply = conn.request(Spawn(request_id=rid, argv=["sleep", "60"], metadata=metadata))
    assert isinstance(reply, TerminalSpawned), reply
    cleanup.append(reply.terminal)
    rid = conn.rid()
    value = conn.request(MetaGet(request_id=rid, key="k", terminal=reply.terminal))
    assert value == MetadataValue(request_id=rid, key="k", value=b"last")


@pytest.mark.clause("L1.md §10 audit")
def test_list_audit_of_an_unknown_terminal_is_empty(conn: Conn) -> None:
    rid = conn.rid()
    reply = conn.request(ListAudit(request_id=rid, terminal=0xFFFFFFF0, limit=0, since_ms=0))
    assert isinstance(reply, AuditList), reply
    assert reply.entries == []


@pytest.mark.clause("proto.md §10 older minors")
def test_a_client_of_an_older_minor_may_send_newer_requests(connect: Connect) -> None:
    """The connection's minor governs what the server sends unasked (INPUT_WRITTEN,
    newer fields), not which requests it answers."""
    conn = connect(hello=False)
    conn.send(Hello(client_name="old", major=1, minor=2, patch=0))
    assert isinstance(conn.expect(lambda f: True, what="HELLO_OK"), HelloOk)
    rid = conn.rid()
    assert isinstance(conn.request(ListAudit(request_id=rid, limit=1, since_ms=0)), AuditList)


NO_SUCH_TERMINAL = 0xFFFFFFF0


@pytest.mark.clause("proto.md §2.1 order of checks")
def test_a_requests_own_fields_are_judged_before_the_terminal_it_names(conn: Conn) -> None:
    """Two faults: a field invalid in itself and a terminal that does not exist. The
    field is reported (step 5a before 5b), whatever the request."""
    for frame in (
        Resize(request_id=conn.rid(), terminal=NO_SUCH_TERMINAL, cols=0, rows=10),
        SendSignal(request_id=conn.rid(), terminal=NO_SUCH_TERMINAL, signal=99),
        Subscribe(request_id=conn.rid(), terminal=NO_SUCH_TERMINAL, role=99),
        MetaSet(request_id=conn.rid(), terminal=NO_SUCH_TERMINAL, key="", value=b"v"),
    ):
        check_error(conn.request(frame), ErrorCode.INVALID_COMMAND, frame.request_id)


@pytest.mark.clause("proto.md §2.1 order of checks")
def test_a_spawns_own_fields_are_judged_before_uniqueness(conn: Conn, cleanup: list[int]) -> None:
    held = spawn(conn, cleanup, ["sleep", "60"], metadata={"conf.unique": b"x"})
    assert held.terminal
    rid = conn.rid()
    frame = Spawn(
        request_id=rid,
        argv=["sleep", "60"],
        metadata=[MetaEntry(key="conf.unique", value=b"x"), MetaEntry(key="", value=b"")],
        unique_keys=["conf.unique"],
    )
    check_error(conn.request(frame), ErrorCode.INVALID_COMMAND, rid)


@pytest.mark.clause("L1.md §8 listing and events")
def test_subscribe_events_counts_toward_no_subscription_limit(connect: Connect) -> None:
    """SUBSCRIBE_EVENTS is not a subscription of either kind: at the limit of metadata
    subscriptions it is still accepted, and it takes no room from them."""
    fresh = connect()  # a connection of its own: the limit is per connection
    assert fresh.hello_ok is not None
    limit = fresh.hello_ok.max_subscriptions
    for n in range(limit - 1):
        rid = fresh.rid()
        assert fresh.request(MetaSubscribe(request_id=rid, prefix=f"conf.{n}.")) == Ok(
            request_id=rid
        )
    rid = fresh.rid()
    assert fresh.request(SubscribeEvents(request_id=rid)) == Ok(request_id=rid)
    rid = fresh.rid()
    assert fresh.request(MetaSubscribe(request_id=rid, prefix="conf.last.")) == Ok(request_id=rid)
    rid = fresh.rid()
    check_error(
        fresh.request(MetaSubscribe(request_id=rid, prefix="conf.over.")),
        ErrorCode.RESOURCE_EXHAUSTED,
        rid,
    )
