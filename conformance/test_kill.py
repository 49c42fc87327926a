"""KILL is atomic, all or none (spec/L1.md §3)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .catalog import (
    ErrorCode,
    Kill,
    ListTerminals,
    Ok,
    Signaled,
    SubscribeEvents,
    TerminalClosed,
    TerminalList,
)
from .helpers import check_error, spawn
from .wire_client import Conn

Connect = Callable[..., Conn]


def alive(listing: TerminalList, ids: list[int]) -> list[bool]:
    by_id = {t.terminal: t for t in listing.terminals}
    return [tid in by_id and by_id[tid].alive for tid in ids]


@pytest.mark.clause("L1.md §3 KILL")
def test_kill_with_a_bad_id_kills_nothing(conn: Conn, cleanup: list[int]) -> None:
    ids = [spawn(conn, cleanup, ["/bin/sh"]).terminal for _ in range(2)]
    rid = conn.rid()
    err = check_error(
        conn.request(Kill(request_id=rid, terminals=[*ids, 0xFFFFFFF0])),
        ErrorCode.TERMINAL_NOT_FOUND,
        rid,
    )
    assert str(0xFFFFFFF0) in err.message
    listing = conn.request(ListTerminals(request_id=conn.rid()))
    assert alive(listing, ids) == [True, True]


@pytest.mark.clause("L1.md §3 KILL", "proto.md §7 ordering")
def test_kill_is_atomic_for_observers(conn: Conn, connect: Connect, cleanup: list[int]) -> None:
    ids = [spawn(conn, cleanup, ["/bin/sh"]).terminal for _ in range(3)]
    events = connect()
    assert events.request(SubscribeEvents(request_id=1)) == Ok(request_id=1)
    observer = connect()
    # The observer floods LIST_TERMINALS while the KILL happens.
    list_ids = [observer.rid() for _ in range(60)]
    for rid in list_ids[:30]:
        observer.send(ListTerminals(request_id=rid))
    rid = conn.rid()
    conn.send(Kill(request_id=rid, terminals=ids))
    for lid in list_ids[30:]:
        observer.send(ListTerminals(request_id=lid))
    assert conn.reply(rid) == Ok(request_id=rid)
    # Processed after the OK: all closed (or gone), on any connection.
    assert alive(conn.request(ListTerminals(request_id=conn.rid())), ids) == [False] * 3
    seen = set()
    for lid in list_ids:
        state = alive(observer.reply(lid), ids)
        assert state in ([True] * 3, [False] * 3), f"half-killed state observed: {state}"
        seen.add(tuple(state))
    closed = {events.expect_type(TerminalClosed, terminal=t).terminal: None for t in ids}
    assert set(closed) == set(ids)
    rid = conn.rid()
    check_error(
        conn.request(Kill(request_id=rid, terminals=ids[:1])), ErrorCode.TERMINAL_EXITED, rid
    )


@pytest.mark.clause("L1.md §3 KILL")
def test_killed_terminal_closes_with_sighup_status(conn: Conn, cleanup: list[int]) -> None:
    from .helpers import subscribe

    t = spawn(conn, cleanup, ["sleep", "30"]).terminal
    stream = subscribe(conn, t)
    rid = conn.rid()
    assert conn.request(Kill(request_id=rid, terminals=[t])) == Ok(request_id=rid)
    closed = stream.read_until_closed(conn)
    assert closed.status == Signaled(signal=1)


@pytest.mark.clause("L1.md §3 KILL")
def test_kill_empty_list_is_invalid(conn: Conn) -> None:
    rid = conn.rid()
    check_error(conn.request(Kill(request_id=rid, terminals=[])), ErrorCode.INVALID_COMMAND, rid)


@pytest.mark.clause("L1.md §3 KILL")
def test_a_killed_terminal_not_yet_reaped_bootstraps_not_alive(
    conn: Conn, connect: Connect, cleanup: list[int]
) -> None:
    """Its program ignores SIGHUP, so it lives until the SIGKILL after the grace: a
    SUBSCRIBE meanwhile gets alive = false and no exit, as the listing says."""
    from .helpers import subscribe

    t = spawn(conn, cleanup, ["/bin/sh", "-c", "trap '' HUP; printf READY; sleep 30"]).terminal
    stream = subscribe(conn, t)
    stream.read_until(conn, b"READY")
    rid = conn.rid()
    assert conn.request(Kill(request_id=rid, terminals=[t])) == Ok(request_id=rid)
    assert alive(conn.request(ListTerminals(request_id=conn.rid())), [t]) == [False]
    late = subscribe(connect(), t)
    assert late.ready is not None
    assert (late.ready.alive, late.ready.exit) == (False, None)
    closed = stream.read_until_closed(conn)
    assert closed.status == Signaled(signal=9)
