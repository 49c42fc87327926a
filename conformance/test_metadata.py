"""Metadata: get/set/delete/list/subscribe, uniqueness (spec/L3.md)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest

from .catalog import (
    Error,
    ErrorCode,
    HelloOk,
    Kill,
    ListTerminals,
    MetadataChanged,
    MetadataKeys,
    MetadataValue,
    MetaDelete,
    MetaEntry,
    MetaGet,
    MetaList,
    MetaSet,
    MetaSubscribe,
    MetaUnsubscribe,
    Ok,
    Spawn,
    TerminalSpawned,
)
from .helpers import check_error, spawn
from .wire_client import Conn

Connect = Callable[..., Conn]


def ok(conn: Conn, frame: object) -> None:
    reply = conn.request(frame)  # type: ignore[arg-type]
    assert reply == Ok(request_id=frame.request_id), reply  # type: ignore[attr-defined]


@pytest.mark.clause("L3.md metadata", "L1.md §2 metadata order")
def test_global_get_set_delete_list(conn: Conn) -> None:
    p = f"conf.{uuid.uuid4().hex[:8]}."
    rid = conn.rid()
    assert conn.request(MetaGet(request_id=rid, key=p + "a")) == MetadataValue(
        request_id=rid, key=p + "a"
    )
    ok(conn, MetaSet(request_id=conn.rid(), key=p + "b", value=b"\x00\xffbinary"))
    ok(conn, MetaSet(request_id=conn.rid(), key=p + "a", value=b"1"))
    ok(conn, MetaSet(request_id=conn.rid(), key=p + "a", value=b"2"))
    rid = conn.rid()
    got = conn.request(MetaGet(request_id=rid, key=p + "a"))
    assert got == MetadataValue(request_id=rid, key=p + "a", value=b"2")
    rid = conn.rid()
    listed = conn.request(MetaList(request_id=rid, prefix=p))
    assert listed == MetadataKeys(
        request_id=rid,
        entries=[
            MetaEntry(key=p + "a", value=b"2"),
            MetaEntry(key=p + "b", value=b"\x00\xffbinary"),
        ],
    )
    ok(conn, MetaDelete(request_id=conn.rid(), key=p + "a"))
    ok(conn, MetaDelete(request_id=conn.rid(), key=p + "a"))  # absent: still OK
    rid = conn.rid()
    assert conn.request(MetaGet(request_id=rid, key=p + "a")).value is None
    ok(conn, MetaDelete(request_id=conn.rid(), key=p + "b"))


@pytest.mark.clause("L3.md metadata", "L1.md §2 metadata order")
def test_terminal_scope_is_separate_and_read_only_once_closed(
    conn: Conn, cleanup: list[int]
) -> None:
    t = spawn(conn, cleanup, ["/bin/sh"], metadata={"conf.init": b"x"}).terminal
    ok(conn, MetaSet(request_id=conn.rid(), key="conf.k", value=b"term", terminal=t))
    rid = conn.rid()
    assert conn.request(MetaGet(request_id=rid, key="conf.k", terminal=t)).value == b"term"
    rid = conn.rid()
    assert conn.request(MetaGet(request_id=rid, key="conf.k")).value is None  # global differs
    rid = conn.rid()
    listed = conn.request(MetaList(request_id=rid, prefix="conf.", terminal=t))
    assert [e.key for e in listed.entries] == ["conf.init", "conf.k"]
    ok(conn, Kill(request_id=conn.rid(), terminals=[t]))
    rid = conn.rid()
    reply = conn.request(MetaGet(request_id=rid, key="conf.k", terminal=t))
    # Kept, read-only, while the closed terminal is retained (forgotten with it).
    assert reply.value == b"term"
    frame = MetaSet(request_id=conn.rid(), key="conf.k", value=b"x", terminal=t)
    check_error(conn.request(frame), ErrorCode.TERMINAL_EXITED, frame.request_id)


@pytest.mark.clause("L3.md metadata", "proto.md §11 limits")
def test_value_limit(conn: Conn, connect: Connect) -> None:
    c = connect(hello=False)
    from .catalog import PROTOCOL_VERSION, Hello

    c.send(Hello(client_name="c", major=PROTOCOL_VERSION[0], minor=PROTOCOL_VERSION[1], patch=0))
    hello_ok = c.expect(lambda f: True)
    assert isinstance(hello_ok, HelloOk)
    limit = hello_ok.max_metadata_value
    ok(c, MetaSet(request_id=c.rid(), key="conf.big", value=b"v" * limit))
    rid = c.rid()
    reply = c.request(MetaSet(request_id=rid, key="conf.big", value=b"v" * (limit + 1)))
    check_error(reply, ErrorCode.RESOURCE_EXHAUSTED, rid)
    ok(c, MetaDelete(request_id=c.rid(), key="conf.big"))


@pytest.mark.clause("L3.md metadata subscriptions")
def test_subscribe_sees_changes_from_others(conn: Conn, connect: Connect) -> None:
    p = f"conf.sub.{uuid.uuid4().hex[:8]}."
    sub = conn.rid()
    ok(conn, MetaSubscribe(request_id=sub, prefix=p))
    other = connect()
    ok(other, MetaSet(request_id=other.rid(), key="conf.unrelated", value=b"z"))
    ok(other, MetaSet(request_id=other.rid(), key=p + "x", value=b"1"))
    ok(other, MetaDelete(request_id=other.rid(), key=p + "x"))
    first = conn.expect_type(MetadataChanged, subscription=sub)
    assert first == MetadataChanged(subscription=sub, key=p + "x", value=b"1")
    second = conn.expect_type(MetadataChanged, subscription=sub)
    assert second == MetadataChanged(subscription=sub, key=p + "x")
    ok(conn, MetaUnsubscribe(request_id=conn.rid(), subscription=sub))
    ok(other, MetaSet(request_id=other.rid(), key=p + "y", value=b"2"))
    conn.poll(0.2)
    assert not [f for f in conn.backlog if isinstance(f, MetadataChanged)]
    ok(other, MetaDelete(request_id=other.rid(), key=p + "y"))
    ok(other, MetaDelete(request_id=other.rid(), key="conf.unrelated"))


@pytest.mark.clause("L3.md metadata subscriptions", "L1.md §2 SPAWN")
def test_subscribe_sees_spawn_metadata_and_terminal_scope(conn: Conn, cleanup: list[int]) -> None:
    p = f"conf.sp.{uuid.uuid4().hex[:8]}"
    sub = conn.rid()
    ok(conn, MetaSubscribe(request_id=sub, prefix=p))
    t = spawn(conn, cleanup, ["/bin/sh"], metadata={p: b"init"}).terminal
    change = conn.expect_type(MetadataChanged, subscription=sub)
    assert change == MetadataChanged(subscription=sub, key=p, terminal=t, value=b"init")
    ok(conn, Kill(request_id=conn.rid(), terminals=[t]))
    # The closed terminal's keys are deleted when it is forgotten, not at the kill
    # (test_clarified.py checks the deletions after the retention period).
    conn.poll(0.2)
    assert not [f for f in conn.backlog if isinstance(f, MetadataChanged)]


@pytest.mark.clause("L1.md §2 unique_keys")
def test_unique_keys_race(connect: Connect, cleanup: list[int]) -> None:
    """Ten concurrent SPAWNs with the same unique value: exactly one succeeds."""
    name = f"conf-{uuid.uuid4().hex[:8]}".encode()
    conns = [connect() for _ in range(10)]
    frames = [
        Spawn(
            request_id=1,
            argv=["/bin/sh"],
            metadata=[MetaEntry(key="phux.session", value=name)],
            unique_keys=["phux.session"],
        )
        for _ in conns
    ]
    start = threading.Barrier(len(conns))

    def fire(c: Conn, frame: Spawn) -> None:
        start.wait(5)
        c.send(frame)

    threads = [threading.Thread(target=fire, args=cf) for cf in zip(conns, frames, strict=True)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    replies = [c.reply(1) for c in conns]
    spawned = [r for r in replies if isinstance(r, TerminalSpawned)]
    cleanup.extend(r.terminal for r in spawned)
    refused = [r for r in replies if isinstance(r, Error)]
    assert len(spawned) == 1, replies
    assert len(refused) == 9
    for err in refused:
        assert err.code == ErrorCode.UNIQUE_CONFLICT
        assert "phux.session" in err.message and name.decode() in err.message
    # Once that terminal is gone, the name is free again.
    c = conns[0]
    ok(c, Kill(request_id=c.rid(), terminals=[spawned[0].terminal]))
    again = spawn(
        c, cleanup, ["/bin/sh"], metadata={"phux.session": name}, unique_keys=["phux.session"]
    )
    assert again.terminal != spawned[0].terminal


@pytest.mark.clause("L3.md metadata", "proto.md §11 limits")
def test_key_length_limits(conn: Conn) -> None:
    for key in ("", "k" * 257):
        rid = conn.rid()
        check_error(
            conn.request(MetaSet(request_id=rid, key=key, value=b"x")),
            ErrorCode.INVALID_COMMAND,
            rid,
        )
    ok(conn, MetaSet(request_id=conn.rid(), key="k" * 256, value=b"x"))
    ok(conn, MetaDelete(request_id=conn.rid(), key="k" * 256))


@pytest.mark.clause("L3.md metadata subscriptions")
def test_unknown_metadata_subscription(conn: Conn) -> None:
    rid = conn.rid()
    reply = conn.request(MetaUnsubscribe(request_id=rid, subscription=0xFFFF_FFF0))
    check_error(reply, ErrorCode.NOT_SUBSCRIBED, rid)


@pytest.mark.clause("L1.md §2 unique_keys")
def test_unique_key_needs_a_value(conn: Conn, cleanup: list[int]) -> None:
    rid = conn.rid()
    reply = conn.request(Spawn(request_id=rid, argv=["/bin/sh"], unique_keys=["conf.nokey"]))
    if isinstance(reply, TerminalSpawned):
        cleanup.append(reply.terminal)
    check_error(reply, ErrorCode.INVALID_COMMAND, rid)


@pytest.mark.clause("L3.md metadata")
def test_closed_terminal_scope(conn: Conn, cleanup: list[int]) -> None:
    from .helpers import subscribe

    t = spawn(conn, cleanup, ["/bin/sh", "-c", "exit 0"], metadata={"conf.a": b"1"}).terminal
    subscribe(conn, t).read_until_closed(conn)
    rid = conn.rid()
    assert conn.request(MetaGet(request_id=rid, key="conf.a", terminal=t)).value == b"1"
    rid = conn.rid()
    assert conn.request(MetaList(request_id=rid, terminal=t)).entries == [
        MetaEntry(key="conf.a", value=b"1")
    ]
    listed = [i for i in conn.request(ListTerminals(request_id=conn.rid())).terminals]
    assert [i.metadata for i in listed if i.terminal == t] == [
        [MetaEntry(key="conf.a", value=b"1")]
    ]
    for frame in (
        MetaSet(request_id=conn.rid(), key="conf.a", value=b"2", terminal=t),
        MetaDelete(request_id=conn.rid(), key="conf.a", terminal=t),
    ):
        check_error(conn.request(frame), ErrorCode.TERMINAL_EXITED, frame.request_id)
