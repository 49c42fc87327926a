"""LIST_TERMINALS from the server's cache of encoded entries (phux.server.listing), the
foreground read again only where it may have moved, and its program read from /proc
only when it may have changed: every listing must still say what is true now. Each
test lists first, so that what it checks is answered from a warm cache, then changes
one thing and lists again.

The module's server reads no foreground in round ($PHUX_LIST_REREAD=0): each entry is
given again unless its terminal's stamp moved or its last reading was not settled, so
a change that forgot to move the stamp fails here (with the default, a server of a few
terminals reads every one at every listing, which would hide it)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    Input,
    Kill,
    ListTerminals,
    MetaDelete,
    MetaEntry,
    MetaSet,
    Resize,
    SendSignal,
    Signal,
    SubscribeEvents,
    TerminalFilter,
    TerminalInfo,
    TerminalList,
    TerminalState,
    Unsubscribe,
)

from .harness import ServerProcess, next_of, spawn, subscribe

T = 10.0
QUIET = 0.2
"""The server's name_quiet_s here ($PHUX_NAME_QUIET): a reading this long after the
terminal's last input or output is given again while nothing else moved."""


def _server(factory: pytest.TempPathFactory, reread: int) -> Iterator[Connection]:
    env = {"PHUX_NAME_QUIET": str(QUIET), "PHUX_LIST_REREAD": str(reread)}
    srv = ServerProcess(factory.mktemp("listing"), env=env)
    try:
        srv.start()
        with srv.connect() as conn:
            yield conn
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connection]:
    yield from _server(tmp_path_factory, reread=0)


@pytest.fixture(scope="module")
def conn_in_rounds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connection]:
    """A server that reads one foreground per listing besides the unsettled ones."""
    yield from _server(tmp_path_factory, reread=1)


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


def settle(conn: Connection, tid: int) -> None:
    """A listing after the terminal has been quiet QUIET: from it on, its entry is given
    again until its stamp moves (what is waited for is the quiet itself)."""
    time.sleep(QUIET * 1.5)
    info(conn, tid)


def test_an_entry_follows_every_change(conn: Connection) -> None:
    tid = spawn(conn, ["cat"])
    settle(conn, tid)
    before = info(conn, tid)
    assert info(conn, tid) == before  # nothing changed: the same entry

    def meta_set(value: bytes) -> None:
        conn.call(
            lambda rid: MetaSet(request_id=rid, key="k", value=value, terminal=tid),
            Deadline.after(T),
        )

    meta_set(b"1")
    assert [(e.key, e.value) for e in info(conn, tid).metadata] == [("k", b"1")]
    meta_set(b"2")
    assert [(e.key, e.value) for e in info(conn, tid).metadata] == [("k", b"2")]
    conn.call(lambda rid: MetaDelete(request_id=rid, key="k", terminal=tid), Deadline.after(T))
    assert info(conn, tid).metadata == []

    conn.call(lambda rid: Resize(request_id=rid, terminal=tid, cols=91, rows=13), Deadline.after(T))
    assert (info(conn, tid).cols, info(conn, tid).rows) == (91, 13)

    # With someone already following the state, subscribing changes nothing else.
    with conn_events(conn):
        settle(conn, tid)  # (and the resize's SIGWINCH)
        subscribe(conn, tid)
        assert info(conn, tid).viewers == 1
        conn.call(lambda rid: Unsubscribe(request_id=rid, terminal=tid), Deadline.after(T))
        assert info(conn, tid).viewers == 0

    seq = info(conn, tid).next_seq
    conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"x\n"), Deadline.after(T))
    deadline = time.monotonic() + T
    while info(conn, tid).next_seq == seq:  # the echo and cat's copy arrive as output
        assert time.monotonic() < deadline, "next_seq never moved"
        time.sleep(0.01)

    settle(conn, tid)
    conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))
    killed = info(conn, tid)
    assert killed.alive is False and killed.foreground is None


def test_a_name_changed_by_exec_after_input_is_read_again(conn: Connection) -> None:
    # No echo, so the input is the only activity: the program execs with the same
    # group and modes, and only the input says its name must be read again.
    # The exec comes a moment after the input (less than QUIET), so that the first
    # listings after it still see sh: those readings must be taken again.
    tid = spawn(conn, ["sh", "-c", "stty -echo; read x; sleep 0.1; exec sleep 600"])
    settled_listing(conn, tid, "sh")
    conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"\n"), Deadline.after(T))
    name_becomes(conn, tid, "sleep")


def on_winch(conn: Connection, action: str) -> int:
    """A shell that runs ``action`` on WINCH (which its sleeps ignore, so nothing else
    happens), listed until settled; its terminal id (:func:`winch` sends the signal)."""
    script = f'trap "{action}" WINCH; while :; do sleep 0.05; done'
    tid = spawn(conn, ["sh", "-c", script])
    settled_listing(conn, tid, "sh")
    return tid


def winch(conn: Connection, tid: int) -> None:
    conn.call(
        lambda rid: SendSignal(request_id=rid, terminal=tid, signal=Signal.WINCH), Deadline.after(T)
    )


def exec_on_winch(conn: Connection, action: str) -> int:
    """:func:`on_winch` running ``action``, then exec'ing sleep with the same group;
    returned once its name changed."""
    tid = on_winch(conn, f"{action}; exec sleep 600")
    winch(conn, tid)
    name_becomes(conn, tid, "sleep")
    return tid


def test_a_name_changed_by_exec_after_output_is_read_again(conn: Connection) -> None:
    # No input: the trap prints, then execs with the same group and modes.
    exec_on_winch(conn, "printf x")


def test_a_change_without_input_or_output_shows_within_a_round(
    conn_in_rounds: Connection,
) -> None:
    # No input, no output: only reading the tty's modes again says that something
    # happened, which a server reading one foreground per listing does within as many
    # listings as it has terminals.
    conn = conn_in_rounds
    for _ in range(2):
        spawn(conn, ["sleep", "600"])
    tid = exec_on_winch(conn, "stty -icanon")
    fg = info(conn, tid).foreground
    assert fg is not None and fg.canonical is False


@contextlib.contextmanager
def conn_events(conn: Connection) -> Iterator[Connection]:
    """A second connection to ``conn``'s server with SUBSCRIBE_EVENTS: someone follows
    every terminal's state."""
    with Connection.open(conn.path, Deadline.after(T), client_name="events") as events:
        events.call(lambda rid: SubscribeEvents(request_id=rid), Deadline.after(T))
        yield events


def test_a_change_the_state_watch_saw_is_listed(conn: Connection) -> None:
    # The same change, on a terminal whose state someone follows: the server's own
    # check sees it (TERMINAL_STATE), and the listing must say what it saw.
    with conn_events(conn) as events:
        tid = on_winch(conn, "stty -icanon; exec sleep 600")
        winch(conn, tid)
        deadline = Deadline.after(T)
        while True:
            state = next_of(events, TerminalState, deadline, terminal=tid)
            if state.foreground is not None and not state.foreground.canonical:
                break
    fg = info(conn, tid).foreground
    assert fg is not None and fg.canonical is False


def test_a_change_made_while_nobody_followed_is_listed_once_someone_does(
    conn: Connection,
) -> None:
    # SUBSCRIBE_EVENTS takes the foreground as it is now as the baseline of later
    # TERMINAL_STATEs: a listing after it that said otherwise would stand for good.
    tid = on_winch(conn, "stty -icanon; exec sleep 600")
    pid = info(conn, tid).pid
    winch(conn, tid)
    deadline = time.monotonic() + T
    while Path(f"/proc/{pid}/comm").read_text().strip() != "sleep":
        assert time.monotonic() < deadline, "the trap never ran"
        time.sleep(0.02)
    with conn_events(conn):
        fg = info(conn, tid).foreground
    assert fg is not None and (fg.name, fg.canonical) == ("sleep", False)


def test_an_exit_is_listed(conn: Connection) -> None:
    # No input, no output: only the exit changes the entry.
    tid = on_winch(conn, "exit 3")
    winch(conn, tid)
    deadline = time.monotonic() + T
    while (listed := info(conn, tid)).alive:
        assert time.monotonic() < deadline, "the exit was never listed"
        time.sleep(0.02)
    assert listed.exit is not None and getattr(listed.exit, "code", None) == 3


def test_a_filter_lists_what_it_names(conn: Connection) -> None:
    a = spawn(conn, ["cat"], metadata=[MetaEntry(key="phux.session", value=b"fa")])
    b = spawn(conn, ["cat"], metadata=[MetaEntry(key="phux.session", value=b"fb")])
    conn.call(lambda rid: MetaSet(request_id=rid, key="g.one", value=b"1"), Deadline.after(T))
    conn.call(lambda rid: MetaSet(request_id=rid, key="h.two", value=b"2"), Deadline.after(T))

    def listed(only: TerminalFilter) -> TerminalList:
        return conn.call_expect(
            lambda rid: ListTerminals(request_id=rid, filter=only), TerminalList, Deadline.after(T)
        )

    by_id = listed(TerminalFilter(terminals=[b, 999_999, a, b]))
    assert [i.terminal for i in by_id.terminals] == [a, b]  # creation order, once each
    assert by_id.global_metadata == []
    by_session = listed(TerminalFilter(metadata=[MetaEntry(key="phux.session", value=b"fb")]))
    assert [i.terminal for i in by_session.terminals] == [b]
    both = listed(
        TerminalFilter(terminals=[a], metadata=[MetaEntry(key="phux.session", value=b"fb")])
    )
    assert both.terminals == []
    prefixed = listed(TerminalFilter(terminals=[a], global_prefixes=["g."]))
    assert [(e.key, e.value) for e in prefixed.global_metadata] == [("g.one", b"1")]
    # What a filtered entry says is what the whole listing says of it.
    assert by_session.terminals == [info(conn, b)]
