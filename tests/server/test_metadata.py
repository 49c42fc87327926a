"""L3 metadata: scopes, get/set/delete/list, subscriptions, caps, unique keys on spawn."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.wire.errors import ErrorCode
from phux.wire.frames import (
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
    Spawn,
    TerminalList,
    TerminalSpawned,
)

from .harness import ServerProcess, next_of, running_server, spawn

T = 10.0


def call(conn: Connection, make):  # type: ignore[no-untyped-def]
    return conn.call(make, Deadline.after(T))


def get(conn: Connection, key: str, terminal: int | None = None) -> bytes | None:
    reply = call(conn, lambda rid: MetaGet(request_id=rid, key=key, terminal=terminal))
    assert isinstance(reply, MetadataValue)
    return reply.value


def test_global_and_terminal_scopes(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sleep", "30"], metadata=[MetaEntry(key="phux.session", value=b"w")])
        call(conn, lambda rid: MetaSet(request_id=rid, key="a.x", value=b"\x00\xff"))
        call(conn, lambda rid: MetaSet(request_id=rid, key="a.y", value=b"2", terminal=tid))
        call(conn, lambda rid: MetaSet(request_id=rid, key="b", value=b"3"))
        assert get(conn, "a.x") == b"\x00\xff"
        assert get(conn, "a.y") is None
        assert get(conn, "a.y", tid) == b"2"
        assert get(conn, "phux.session", tid) == b"w"
        keys = call(conn, lambda rid: MetaList(request_id=rid, prefix="a"))
        assert isinstance(keys, MetadataKeys)
        assert keys.entries == [MetaEntry(key="a.x", value=b"\x00\xff")]
        keys = call(conn, lambda rid: MetaList(request_id=rid, terminal=tid))
        assert [e.key for e in keys.entries] == ["a.y", "phux.session"]
        call(conn, lambda rid: MetaDelete(request_id=rid, key="a.x"))
        call(conn, lambda rid: MetaDelete(request_id=rid, key="never-set"))
        assert get(conn, "a.x") is None
        listing = call(conn, lambda rid: ListTerminals(request_id=rid))
        assert isinstance(listing, TerminalList)
        users = [e for e in listing.global_metadata if not e.key.startswith("phux.server.")]
        assert users == [MetaEntry(key="b", value=b"3")]
        assert [e.key for e in listing.terminals[0].metadata] == ["a.y", "phux.session"]


def test_errors_and_caps(server: ServerProcess) -> None:
    with server.connect() as conn:
        limit = conn.hello.max_metadata_value if conn.hello else 0
        call(conn, lambda rid: MetaSet(request_id=rid, key="k", value=b"v" * limit))
        cases = [
            (lambda rid: MetaSet(request_id=rid, key="k", value=b"v" * (limit + 1)), "RESOURCE"),
            (lambda rid: MetaSet(request_id=rid, key="", value=b""), "INVALID_COMMAND"),
            (lambda rid: MetaSet(request_id=rid, key="k" * 257, value=b""), "INVALID_COMMAND"),
            (lambda rid: MetaGet(request_id=rid, key="k", terminal=42), "TERMINAL_NOT_FOUND"),
            (lambda rid: MetaSet(request_id=rid, key="k", value=b"", terminal=42), "TERMINAL_NOT"),
            (lambda rid: MetaUnsubscribe(request_id=rid, subscription=5), "NOT_SUBSCRIBED"),
        ]
        for make, code in cases:
            with pytest.raises(ServerError) as err:
                call(conn, make)
            assert ErrorCode(err.value.wire_code).name.startswith(code)


def test_subscription_cap(server: ServerProcess) -> None:
    with server.connect() as conn:
        cap = conn.hello.max_subscriptions if conn.hello else 0
        ids = [
            conn.submit(lambda rid: MetaSubscribe(request_id=rid, prefix="x")) for _ in range(cap)
        ]
        for rid in ids:
            conn.wait_reply(rid, Deadline.after(T))
        with pytest.raises(ServerError) as err:
            call(conn, lambda rid: MetaSubscribe(request_id=rid))
        assert err.value.wire_code == ErrorCode.RESOURCE_EXHAUSTED
        call(conn, lambda rid: MetaUnsubscribe(request_id=rid, subscription=ids[0]))
        call(conn, lambda rid: MetaSubscribe(request_id=rid))


def next_change(conn: Connection) -> MetadataChanged:
    """The next METADATA_CHANGED that is not one of the server's own facts
    (``phux.server.*``, spec/L3.md §3: the replica helper's pid comes with the first spawn)."""
    deadline = Deadline.after(T)
    while True:
        seen = next_of(conn, MetadataChanged, deadline)
        if not seen.key.startswith("phux.server."):
            return seen


def test_changes_are_pushed_and_terminal_keys_vanish(tmp_path: Path) -> None:
    """A closed terminal's keys stay readable (read-only) while it is retained, and
    vanish, seen by subscribers, when it is forgotten (L3.md §1)."""
    with (
        running_server(tmp_path, "--retention", "0.5") as server,
        server.connect() as conn,
        server.connect() as watcher,
    ):
        sub = watcher.submit(lambda rid: MetaSubscribe(request_id=rid, prefix="phux."))
        watcher.wait_reply(sub, Deadline.after(T))
        tid = spawn(
            conn,
            ["sleep", "30"],
            metadata=[MetaEntry(key="phux.session", value=b"s"), MetaEntry(key="other", value=b"")],
        )
        seen = next_change(watcher)
        assert seen == MetadataChanged(
            subscription=sub, key="phux.session", terminal=tid, value=b"s"
        )
        call(conn, lambda rid: MetaSet(request_id=rid, key="phux.focus_ms", value=b"1"))
        seen = next_change(watcher)
        assert seen == MetadataChanged(subscription=sub, key="phux.focus_ms", value=b"1")
        call(conn, lambda rid: MetaSet(request_id=rid, key="unwatched", value=b"1"))
        call(conn, lambda rid: Kill(request_id=rid, terminals=[tid]))
        assert get(conn, "phux.session", tid) == b"s"
        with pytest.raises(ServerError) as err:
            call(conn, lambda rid: MetaSet(request_id=rid, key="k", value=b"", terminal=tid))
        assert err.value.wire_code == ErrorCode.TERMINAL_EXITED
        seen = next_change(watcher)
        assert seen == MetadataChanged(subscription=sub, key="phux.session", terminal=tid)
        with pytest.raises(ServerError) as err:
            get(conn, "phux.session", tid)
        assert err.value.wire_code == ErrorCode.TERMINAL_NOT_FOUND
        call(watcher, lambda rid: MetaUnsubscribe(request_id=rid, subscription=sub))
        call(conn, lambda rid: MetaSet(request_id=rid, key="phux.focus_ms", value=b"2"))
        assert watcher.poll() is None


def test_ten_concurrent_new_give_one_session(server: ServerProcess) -> None:
    conns = [server.connect() for _ in range(10)]
    try:
        barrier = threading.Barrier(10)
        results: list[object] = [None] * 10

        def attempt(i: int) -> None:
            conn = conns[i]
            barrier.wait(T)
            try:
                results[i] = conn.call(
                    lambda rid: Spawn(
                        request_id=rid,
                        argv=["sleep", "30"],
                        metadata=[MetaEntry(key="phux.session", value=b"X")],
                        unique_keys=["phux.session"],
                    ),
                    Deadline.after(T),
                )
            except ServerError as exc:
                results[i] = exc

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(2 * T)
        spawned = [r for r in results if isinstance(r, TerminalSpawned)]
        refused = [r for r in results if isinstance(r, ServerError)]
        assert len(spawned) == 1 and len(refused) == 9
        for err in refused:
            assert err.wire_code == ErrorCode.UNIQUE_CONFLICT
            assert "phux.session" in err.message and "X" in err.message
        listing = call(conns[0], lambda rid: ListTerminals(request_id=rid))
        assert len(listing.terminals) == 1
        # Once the holder is gone the name is free again.
        call(conns[0], lambda rid: Kill(request_id=rid, terminals=[spawned[0].terminal]))
        spawn(
            conns[0],
            ["sleep", "30"],
            metadata=[MetaEntry(key="phux.session", value=b"X")],
            unique_keys=["phux.session"],
        )
    finally:
        for conn in conns:
            conn.close()


def test_unique_key_without_value_is_invalid(server: ServerProcess) -> None:
    with server.connect() as conn, pytest.raises(ServerError) as err:
        spawn(conn, ["true"], unique_keys=["phux.session"])
    assert err.value.wire_code == ErrorCode.INVALID_COMMAND
