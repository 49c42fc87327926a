"""The foreground of a PTY: TerminalInfo.foreground and TERMINAL_STATE (spec/L1.md §8.1, 1.1)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from .catalog import (
    PROTOCOL_VERSION,
    Foreground,
    Hello,
    HelloOk,
    Input,
    ListTerminals,
    Ok,
    SubscribeEvents,
    TerminalClosed,
    TerminalFilter,
    TerminalList,
    TerminalState,
)
from .helpers import spawn, subscribe
from .wire_client import Conn

Connect = Callable[..., Conn]
Check = Callable[[Foreground | None], bool]
MAJOR, MINOR, PATCH = PROTOCOL_VERSION


def foreground(conn: Conn, terminal: int) -> Foreground | None:
    listing = conn.request(ListTerminals(request_id=conn.rid()))
    assert isinstance(listing, TerminalList)
    (info,) = [t for t in listing.terminals if t.terminal == terminal]
    return info.foreground


def follow_events(conn: Conn) -> None:
    rid = conn.rid()
    assert conn.request(SubscribeEvents(request_id=rid)) == Ok(request_id=rid)


def type_in(conn: Conn, terminal: int, text: str) -> None:
    rid = conn.rid()
    assert conn.request(Input(request_id=rid, terminal=terminal, data=text.encode())) == Ok(
        request_id=rid
    )


def reach(conn: Conn, terminal: int, check: Check) -> Foreground | None:
    """The foreground once ``check`` passes: in the listing now, or in a later TERMINAL_STATE
    (the connection follows events, so a change after the listing is reported)."""
    now = foreground(conn, terminal)
    if check(now):
        return now
    frame = conn.expect(
        lambda f: isinstance(f, TerminalState) and f.terminal == terminal and check(f.foreground),
        what="TERMINAL_STATE",
    )
    return frame.foreground  # type: ignore[attr-defined,no-any-return]


def named(name: str) -> Check:
    return lambda fg: fg is not None and fg.name == name


@pytest.mark.clause("L1.md §8.1 foreground", "L1.md §8 listing")
def test_a_shell_holds_its_own_terminal_then_the_command_it_runs(
    conn: Conn, cleanup: list[int]
) -> None:
    follow_events(conn)
    t = spawn(conn, cleanup, ["/bin/sh"])
    fg = reach(conn, t.terminal, lambda f: f is not None and f.pgrp == t.pid)
    assert fg is not None and fg.pgrp == t.pid and fg.name
    type_in(conn, t.terminal, "exec sleep 31\r")  # exec: same process, new program
    fg = reach(conn, t.terminal, named("sleep"))
    assert fg is not None and fg.pgrp == t.pid and fg.argv == ["sleep", "31"]


@pytest.mark.clause("L1.md §8.1 foreground")
def test_a_job_gets_its_own_process_group(conn: Conn, cleanup: list[int]) -> None:
    follow_events(conn)
    t = spawn(conn, cleanup, ["/bin/sh", "-i"])
    reach(conn, t.terminal, lambda f: f is not None and f.pgrp == t.pid)
    type_in(conn, t.terminal, "cat\r")
    fg = reach(conn, t.terminal, named("cat"))
    assert fg is not None and fg.pgrp != t.pid and fg.argv == ["cat"]
    assert fg.echo and fg.canonical


@pytest.mark.clause("L1.md §8.1 foreground")
def test_tty_modes_are_reported(conn: Conn, cleanup: list[int]) -> None:
    follow_events(conn)
    hidden = spawn(conn, cleanup, ["/bin/sh", "-c", "stty -echo; exec cat"])
    fg = reach(conn, hidden.terminal, named("cat"))
    assert fg is not None and not fg.echo and fg.canonical and fg.isig
    raw = spawn(conn, cleanup, ["/bin/sh", "-c", "stty raw; exec cat"])
    fg = reach(conn, raw.terminal, named("cat"))
    assert fg is not None and not fg.canonical and not fg.isig
    editor = spawn(conn, cleanup, ["/bin/sh", "-c", "stty -icanon -echo; exec cat"])
    fg = reach(conn, editor.terminal, named("cat"))
    assert fg is not None and not fg.canonical and fg.isig  # a line editor's modes


def unread(conn: Conn, terminal: int) -> tuple[int, bool]:
    rid = conn.rid()
    listing = conn.request(
        ListTerminals(request_id=rid, filter=TerminalFilter(terminals=[terminal]))
    )
    assert isinstance(listing, TerminalList)
    (info,) = listing.terminals
    return info.unread_input, info.unread_line_open


@pytest.mark.clause("L1.md §8.1 foreground")
def test_a_filtered_listing_counts_the_input_a_program_has_not_read(
    conn: Conn, cleanup: list[int]
) -> None:
    follow_events(conn)
    lines = spawn(conn, cleanup, ["/bin/sh", "-c", "exec sleep 60"])
    reach(conn, lines.terminal, named("sleep"))
    type_in(conn, lines.terminal, "abc\nde")
    assert unread(conn, lines.terminal) == (4, True)  # canonical: whole lines counted
    keys = spawn(conn, cleanup, ["/bin/sh", "-c", "stty -icanon; exec sleep 60"])
    reach(conn, keys.terminal, named("sleep"))
    type_in(conn, keys.terminal, "xyz")
    assert unread(conn, keys.terminal) == (3, True)
    type_in(conn, keys.terminal, "\r")
    assert unread(conn, keys.terminal) == (4, False)
    idle = spawn(conn, cleanup, ["/bin/sh", "-c", "exec sleep 60"])
    assert unread(conn, idle.terminal) == (0, False)


@pytest.mark.clause("L1.md §8.1 TERMINAL_STATE")
def test_terminal_state_reaches_an_events_subscriber_on_a_change(
    connect: Connect, cleanup: list[int]
) -> None:
    control = connect()
    watcher = connect()
    follow_events(watcher)
    t = spawn(control, cleanup, ["/bin/sh", "-c", "sleep 0.3; exec sleep 30"])
    # sleep 0.3 is a child of sh in the same group: the change is sh becoming sleep.
    state = watcher.expect(
        lambda f: (
            isinstance(f, TerminalState)
            and f.terminal == t.terminal
            and named("sleep")(f.foreground)
        ),
        what="TERMINAL_STATE naming sleep",
    )
    assert isinstance(state, TerminalState) and state.foreground is not None
    assert state.foreground.pgrp == t.pid
    assert state.foreground.argv == ["sleep", "30"]
    # No repeats: every TERMINAL_STATE of a terminal differs from the one before it.
    earlier = [
        f.foreground
        for f in watcher.backlog
        if isinstance(f, TerminalState) and f.terminal == t.terminal
    ]
    seen = [*earlier, state.foreground]
    shapes = [None if f is None else (f.pgrp, f.name, f.echo, f.canonical, f.isig) for f in seen]
    assert all(a != b for a, b in itertools.pairwise(shapes)), shapes


@pytest.mark.clause("L1.md §8.1 foreground")
def test_a_closed_terminal_has_no_foreground(conn: Conn, cleanup: list[int]) -> None:
    t = spawn(conn, cleanup, ["/bin/sh", "-c", "exit 0"])
    stream = subscribe(conn, t.terminal)
    stream.read_until_closed(conn)
    assert foreground(conn, t.terminal) is None


@pytest.mark.skipif(MINOR == 0, reason="no older minor than 0")
@pytest.mark.clause("proto.md §4 rule 3 version", "proto.md §10 minor")
def test_a_client_of_an_older_minor_is_served_without_newer_frames(
    connect: Connect, cleanup: list[int]
) -> None:
    old = connect(hello=False)  # a 1.0 client: TERMINAL_STATE and field 12 came with 1.1
    old.send(Hello(client_name="old", major=MAJOR, minor=0, patch=0))
    ok = old.expect(lambda f: True, what="HELLO_OK")
    assert isinstance(ok, HelloOk) and ok.major == MAJOR
    follow_events(old)
    t = spawn(old, cleanup, ["/bin/sh", "-c", "sleep 0.4; exec sleep 0.4"])
    subscribe(old, t.terminal)
    old.expect_type(TerminalClosed, terminal=t.terminal)
    assert not [f for f in old.backlog if isinstance(f, TerminalState)]
    listing = old.request(ListTerminals(request_id=old.rid()))
    assert isinstance(listing, TerminalList)
