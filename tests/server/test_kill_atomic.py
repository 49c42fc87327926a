"""KILL of several terminals is all or nothing, and no observer sees it half done."""

from __future__ import annotations

import threading

import pytest

from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.wire.errors import ErrorCode
from phux.wire.frames import Kill, ListTerminals, MetaEntry, TerminalList

from .harness import ServerProcess, spawn

T = 10.0


def listing(conn) -> TerminalList:  # type: ignore[no-untyped-def]
    return conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
    )


def test_atomic_kill_never_observed_partially(server: ServerProcess) -> None:
    with server.connect() as conn, server.connect() as observer:
        ids = [
            spawn(conn, ["sleep", "30"], metadata=[MetaEntry(key="phux.session", value=b"s")])
            for _ in range(6)
        ]
        states: list[tuple[bool, ...]] = []
        stop = threading.Event()

        def observe() -> None:
            while not stop.is_set():
                reply = listing(observer)
                by_id = {t.terminal: t for t in reply.terminals}
                states.append(tuple(i in by_id and by_id[i].alive for i in ids))
                for i in ids:  # metadata stays, read-only, while retained (L3.md §1)
                    if i in by_id:
                        assert by_id[i].metadata

        thread = threading.Thread(target=observe)
        thread.start()
        try:
            while len(states) < 20:
                stop.wait(0.005)
            conn.call(lambda rid: Kill(request_id=rid, terminals=ids), Deadline.after(T))
            count = len(states)
            while len(states) < count + 20:
                stop.wait(0.005)
        finally:
            stop.set()
            thread.join(T)
        assert set(states) == {(True,) * 6, (False,) * 6}
        assert states.index((False,) * 6) > 0


def test_kill_with_a_bad_id_kills_nothing(server: ServerProcess) -> None:
    with server.connect() as conn:
        a = spawn(conn, ["sleep", "30"])
        b = spawn(conn, ["sh", "-c", "exit 0"])
        deadline = Deadline.after(T)
        while listing(conn).terminals[1].alive:
            deadline.remaining()
        for bad, code in ((999, ErrorCode.TERMINAL_NOT_FOUND), (b, ErrorCode.TERMINAL_EXITED)):
            with pytest.raises(ServerError) as err:
                ids = [a, bad]
                conn.call(
                    lambda rid, ids=ids: Kill(request_id=rid, terminals=ids), Deadline.after(T)
                )
            assert err.value.wire_code == code
            assert str(bad) in err.value.message
        assert listing(conn).terminals[0].alive
