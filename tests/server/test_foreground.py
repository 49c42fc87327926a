"""The foreground a PTY reports (TerminalInfo.foreground, TERMINAL_STATE): real server,
real shells and programs, read from the kernel and never from the output.

One server for the module: each test looks only at the terminals it spawned."""

from __future__ import annotations

import itertools
import shutil
import time
from collections.abc import Callable, Iterator

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.wire.frames import (
    Foreground,
    Input,
    Kill,
    ListTerminals,
    Ping,
    Pong,
    SubscribeEvents,
    TerminalClosed,
    TerminalList,
    TerminalState,
)

from .harness import ServerProcess, running_server, spawn, subscribe, wait_exit


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("foreground")) as srv:
        yield srv


T = 10.0
BASH = ["bash", "--norc", "--noprofile"]
Check = Callable[[Foreground | None], bool]


def listed(conn: Connection, tid: int) -> tuple[int, Foreground | None]:
    """(pid, foreground) of terminal ``tid`` as LIST_TERMINALS answers now."""
    reply = conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
    )
    (info,) = [i for i in reply.terminals if i.terminal == tid]
    return info.pid, info.foreground


def type_in(conn: Connection, tid: int, text: str) -> None:
    conn.call(
        lambda rid: Input(request_id=rid, terminal=tid, data=text.encode()), Deadline.after(T)
    )


def events(conn: Connection) -> None:
    conn.call(lambda rid: SubscribeEvents(request_id=rid), Deadline.after(T))


def state_until(
    conn: Connection, tid: int, check: Check, seen: list[Foreground | None]
) -> Foreground | None:
    """TERMINAL_STATE frames of ``tid`` (appended to ``seen``) until one passes ``check``."""
    deadline = Deadline.after(T)
    while True:
        frame = conn.receive(deadline)
        if isinstance(frame, TerminalState) and frame.terminal == tid:
            seen.append(frame.foreground)
            if check(frame.foreground):
                return frame.foreground


def reach(
    conn: Connection, tid: int, check: Check, seen: list[Foreground | None]
) -> Foreground | None:
    """The foreground once it passes ``check``: now (LIST), or at a later TERMINAL_STATE.

    The connection follows events first, so a change after the listing is reported.
    """
    _, fg = listed(conn, tid)
    if check(fg):
        return fg
    return state_until(conn, tid, check, seen)


def at_prompt(pid: int) -> Check:
    return lambda fg: fg is not None and fg.pgrp == pid and fg.name == "bash"


def running(name: str) -> Check:
    return lambda fg: fg is not None and fg.name == name


def keys(seen: list[Foreground | None]) -> list[tuple[int, str, bool, bool] | None]:
    return [None if f is None else (f.pgrp, f.name, f.echo, f.canonical) for f in seen]


def assert_no_repeats(seen: list[Foreground | None]) -> None:
    k = keys(seen)
    assert all(a != b for a, b in itertools.pairwise(k)), k


def test_a_shell_at_its_prompt_is_its_own_foreground(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, BASH)
        events(conn)
        pid, _ = listed(conn, tid)
        # bash takes the terminal as it starts, and readline the tty's modes once it reads
        # a line: between the two (a moment a loaded machine can stretch) bash is the
        # foreground with the tty still cooked.
        fg = reach(conn, tid, lambda f: at_prompt(pid)(f) and not f.canonical, [])  # type: ignore[union-attr]
        assert fg is not None
        assert (fg.pgrp, fg.name) == (pid, "bash")
        assert fg.argv[0] == "bash"
        # readline edits the line itself: at its prompt the tty is neither echoing nor canonical
        assert not fg.echo and not fg.canonical


def test_a_command_started_from_bash_holds_the_foreground_until_it_ends(
    server: ServerProcess,
) -> None:
    with server.connect() as conn:
        tid = spawn(conn, BASH)
        events(conn)
        pid, _ = listed(conn, tid)
        seen: list[Foreground | None] = []
        reach(conn, tid, at_prompt(pid), seen)
        type_in(conn, tid, "sleep 30\r")
        fg = state_until(conn, tid, running("sleep"), seen)
        assert fg is not None
        assert fg.pgrp != pid and fg.argv == ["sleep", "30"]
        assert fg.echo and fg.canonical  # bash gives the job a cooked tty
        assert listed(conn, tid) == (pid, fg)
        type_in(conn, tid, "\x03")
        back = state_until(conn, tid, at_prompt(pid), seen)
        assert back is not None and back.pgrp == pid
        assert_no_repeats(seen)


@pytest.mark.parametrize(
    ("command", "name"),
    [("less /etc/passwd", "less"), ("vim -u NONE -N -n", "vim")],
)
def test_full_screen_programs_are_not_canonical(
    server: ServerProcess, command: str, name: str
) -> None:
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    with server.connect() as conn:
        tid = spawn(conn, BASH, env=[], cols=80, rows=24)
        events(conn)
        pid, _ = listed(conn, tid)
        type_in(conn, tid, command + "\r")
        fg = state_until(conn, tid, lambda f: running(name)(f) and not f.canonical, [])  # type: ignore[union-attr]
        assert fg is not None and fg.pgrp != pid and not fg.echo
        assert fg.argv[0] == name
        type_in(conn, tid, "q" if name == "less" else "\x1b:q!\r")
        state_until(conn, tid, at_prompt(pid), [])


def test_read_s_is_hidden_input_in_the_shell_itself(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, BASH)
        events(conn)
        pid, _ = listed(conn, tid)
        type_in(conn, tid, "read -s secret\r")
        fg = state_until(conn, tid, lambda f: f is not None and f.canonical and not f.echo, [])
        assert fg is not None and (fg.pgrp, fg.name) == (pid, "bash")
        assert listed(conn, tid)[1] == fg
        type_in(conn, tid, "hunter2\r")
        back = state_until(conn, tid, lambda f: f is not None and not f.canonical, [])
        assert back is not None and back.pgrp == pid


def test_stty_modes_show_in_a_program_started_after_them(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh", "-c", "stty -echo; exec sleep 30"])
        events(conn)
        fg = reach(conn, tid, running("sleep"), [])
        assert fg is not None and not fg.echo and fg.canonical
        raw = spawn(conn, ["sh", "-c", "stty raw; exec sleep 30"])
        got = reach(conn, raw, running("sleep"), [])
        assert got is not None and not got.canonical


def test_the_leader_of_a_pipeline_gone_another_member_is_named(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, BASH)
        events(conn)
        pid, _ = listed(conn, tid)
        type_in(conn, tid, "/bin/true | sleep 31\r")
        fg = state_until(conn, tid, running("sleep"), [])
        assert fg is not None and fg.pgrp != pid and fg.argv == ["sleep", "31"]


def test_after_exit_there_is_no_foreground_and_no_state_after_closed(
    server: ServerProcess,
) -> None:
    with server.connect() as conn:
        tid = spawn(conn, BASH)
        events(conn)
        subscribe(conn, tid)
        # A job that ends when told, not after a time the server could miss on a
        # loaded machine: cat, ended by EOF once it is seen holding the terminal.
        type_in(conn, tid, "cat; exit 3\r")
        seen: list[Foreground | None] = []
        state_until(conn, tid, running("cat"), seen)
        type_in(conn, tid, "\x04")
        deadline = Deadline.after(T)
        while True:
            frame = conn.receive(deadline)
            if isinstance(frame, TerminalState) and frame.terminal == tid:
                seen.append(frame.foreground)
            if isinstance(frame, TerminalClosed) and frame.terminal == tid:
                break
        assert_no_repeats(seen)
        assert listed(conn, tid)[1] is None
        conn.send(Ping(token=5))
        end = Deadline.after(1.0)  # nothing for the terminal follows its TERMINAL_CLOSED
        while True:
            frame = conn.receive(end)
            assert not (isinstance(frame, TerminalState) and frame.terminal == tid)
            if isinstance(frame, Pong):
                break


def test_a_connection_that_follows_both_ways_gets_each_change_once(server: ServerProcess) -> None:
    with server.connect() as both, server.connect() as only_events:
        tid = spawn(both, BASH)
        events(both)
        events(only_events)
        subscribe(both, tid)
        pid, _ = listed(both, tid)
        type_in(both, tid, "sleep 30\r")
        a: list[Foreground | None] = []
        b: list[Foreground | None] = []
        state_until(both, tid, running("sleep"), a)
        type_in(both, tid, "\x03")  # ended once seen: a short sleep could end unseen
        state_until(both, tid, at_prompt(pid), a)
        state_until(only_events, tid, running("sleep"), b)
        state_until(only_events, tid, at_prompt(pid), b)
        assert_no_repeats(a)
        assert_no_repeats(b)


def test_a_process_gone_while_it_is_read_never_hurts_the_server(server: ServerProcess) -> None:
    """Thousands of short jobs and pipelines, read by LIST and the watcher as they come and go."""
    logged = len(server.log.read_text())  # (the module's server logged earlier tests')
    with server.connect() as conn:
        tid = spawn(conn, BASH)
        events(conn)
        subscribe(conn, tid)
        type_in(
            conn, tid, "for i in $(seq 400); do /bin/true | /bin/true; /bin/true; done; exit 0\r"
        )
        stop = time.monotonic() + 20
        lists = 0
        while time.monotonic() < stop:
            _, fg = listed(conn, tid)
            lists += 1
            if fg is None:
                break
        assert lists > 1
        assert wait_exit(conn, tid, timeout=T) is not None
        conn.send(Ping(token=9))
        while not isinstance(conn.receive(Deadline.after(T)), Pong):
            pass
    log = server.log.read_text()[logged:]
    assert "Traceback" not in log and "failed" not in log, log


def test_a_protocol_1_0_client_gets_no_terminal_state(server: ServerProcess) -> None:
    with (
        Connection.open(server.socket, Deadline.after(T), client_name="old", minor=0) as old,
        server.connect() as new,
    ):
        assert old.hello is not None and (old.hello.major, old.hello.minor) >= (1, 1)
        events(old)
        events(new)
        tid = spawn(old, BASH)
        subscribe(old, tid)
        pid, _ = listed(new, tid)
        reach(new, tid, at_prompt(pid), [])
        type_in(old, tid, "cat; exit\r")
        state_until(new, tid, running("cat"), [])
        type_in(old, tid, "\x04")  # EOF ends cat once seen, then the shell exits
        deadline = Deadline.after(T)
        while True:
            frame = old.receive(deadline)
            assert not isinstance(frame, TerminalState), frame
            if isinstance(frame, TerminalClosed) and frame.terminal == tid:
                break


def test_nothing_after_kill(server: ServerProcess) -> None:
    """KILL closes a terminal to observers at once, although its process may live on."""
    # Ignoring SIGHUP, the program becomes `sleep` after KILL and dies only of the SIGKILL
    # that follows the grace period.
    script = "trap '' HUP; sleep 0.5; exec sleep 30"
    with server.connect() as conn:
        events(conn)
        tid = spawn(conn, ["bash", "--norc", "--noprofile", "-c", script])
        state_until(conn, tid, lambda f: f is not None and f.name == "bash", [])
        conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))
        assert listed(conn, tid)[1] is None
        deadline = Deadline.after(T)
        while True:
            frame = conn.receive(deadline)
            assert not (isinstance(frame, TerminalState) and frame.terminal == tid), frame
            if isinstance(frame, TerminalClosed) and frame.terminal == tid:
                break
