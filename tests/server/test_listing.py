"""LIST_TERMINALS from the server's cache of encoded entries (phux.server.listing) and
the foreground's program read from /proc only when it may have changed: every
listing must still say what is true now. Each test lists first, so that what it
checks is answered from a warm cache, then changes one thing and lists again."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    Input,
    Kill,
    ListTerminals,
    MetaDelete,
    MetaSet,
    Resize,
    SendSignal,
    Signal,
    TerminalInfo,
    TerminalList,
)

from .harness import ServerProcess, spawn, subscribe

T = 10.0
QUIET = 0.2
"""The server's name_quiet_s here ($PHUX_NAME_QUIET): a name read this long after the
terminal's last input or output is reused while the group and the modes hold."""


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connection]:
    srv = ServerProcess(tmp_path_factory.mktemp("listing"), env={"PHUX_NAME_QUIET": str(QUIET)})
    try:
        srv.start()
        with srv.connect() as conn:
            yield conn
    finally:
        srv.stop()


def info(conn: Connection, tid: int) -> TerminalInfo:
    reply = conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
    )
    (found,) = [i for i in reply.terminals if i.terminal == tid]
    return found


def name_becomes(conn: Connection, tid: int, name: str) -> None:
    """Listings until the foreground's name is ``name`` (fails at the deadline)."""
    deadline = time.monotonic() + T
    seen = None
    while time.monotonic() < deadline:
        fg = info(conn, tid).foreground
        seen = fg.name if fg is not None else None
        if seen == name:
            return
        time.sleep(0.02)
    raise AssertionError(f"foreground name stayed {seen!r}, expected {name!r}")


def settled_listing(conn: Connection, tid: int, name: str) -> None:
    """A listing whose name read came QUIET after the terminal's last activity, so that
    the next listing may reuse it: the case every test below starts from."""
    name_becomes(conn, tid, name)
    time.sleep(QUIET * 1.5)
    name_becomes(conn, tid, name)


def test_an_entry_follows_every_change(conn: Connection) -> None:
    tid = spawn(conn, ["cat"])
    before = info(conn, tid)
    assert info(conn, tid) == before  # nothing changed: the same entry

    conn.call(
        lambda rid: MetaSet(request_id=rid, key="k", value=b"1", terminal=tid), Deadline.after(T)
    )
    assert [(e.key, e.value) for e in info(conn, tid).metadata] == [("k", b"1")]
    conn.call(
        lambda rid: MetaSet(request_id=rid, key="k", value=b"2", terminal=tid), Deadline.after(T)
    )
    assert [(e.key, e.value) for e in info(conn, tid).metadata] == [("k", b"2")]
    conn.call(lambda rid: MetaDelete(request_id=rid, key="k", terminal=tid), Deadline.after(T))
    assert info(conn, tid).metadata == []

    conn.call(lambda rid: Resize(request_id=rid, terminal=tid, cols=91, rows=13), Deadline.after(T))
    assert (info(conn, tid).cols, info(conn, tid).rows) == (91, 13)

    subscribe(conn, tid)
    assert info(conn, tid).viewers == 1

    seq = info(conn, tid).next_seq
    conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"x\n"), Deadline.after(T))
    deadline = time.monotonic() + T
    while info(conn, tid).next_seq == seq:  # the echo and cat's copy arrive as output
        assert time.monotonic() < deadline, "next_seq never moved"
        time.sleep(0.01)

    conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))
    killed = info(conn, tid)
    assert killed.alive is False and killed.foreground is None


def test_a_name_changed_by_exec_after_input_is_read_again(conn: Connection) -> None:
    # No echo, so the input is the only activity: the program execs with the same
    # group and modes, and only the input says its name must be read again.
    tid = spawn(conn, ["sh", "-c", "stty -echo; read x; exec sleep 600"])
    settled_listing(conn, tid, "sh")
    conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"\n"), Deadline.after(T))
    name_becomes(conn, tid, "sleep")


def exec_on_winch(conn: Connection, action: str) -> int:
    """A shell that, on WINCH (which sleep ignores, so nothing else happens), runs
    ``action`` and execs sleep with the same group; returned once its name changed."""
    script = f'trap "{action}; exec sleep 600" WINCH; while :; do sleep 0.05; done'
    tid = spawn(conn, ["sh", "-c", script])
    settled_listing(conn, tid, "sh")
    conn.call(
        lambda rid: SendSignal(request_id=rid, terminal=tid, signal=Signal.WINCH), Deadline.after(T)
    )
    name_becomes(conn, tid, "sleep")
    return tid


def test_a_name_changed_by_exec_after_output_is_read_again(conn: Connection) -> None:
    # No input: the trap prints, then execs with the same group and modes.
    exec_on_winch(conn, "printf x")


def test_a_name_changed_with_the_modes_is_read_again(conn: Connection) -> None:
    # No input, no output: only the tty's modes say that something happened.
    tid = exec_on_winch(conn, "stty -icanon")
    fg = info(conn, tid).foreground
    assert fg is not None and fg.canonical is False
