"""Spawn, output, input, exit codes, signals, resize, kill: real server, real shells.

One server for the module (its tests each spawn their own terminals and look only at
those), but for the two that start theirs with a wrapper."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import ServerError
from phux.wire.errors import ErrorCode
from phux.wire.frames import (
    EnvVar,
    Exited,
    Input,
    Kill,
    ListTerminals,
    Resize,
    SendSignal,
    Signal,
    Signaled,
    TerminalClosed,
    TerminalInfo,
    TerminalList,
)

from .harness import ServerProcess, Stream, read_until, running_server, spawn, subscribe, wait_exit

T = 10.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("terminals")) as srv:
        yield srv


def listed(conn: Connection) -> list[TerminalInfo]:
    return conn.call_expect(
        lambda rid: ListTerminals(request_id=rid), TerminalList, Deadline.after(T)
    ).terminals


def listed_one(conn: Connection, tid: int) -> TerminalInfo:
    (info,) = [i for i in listed(conn) if i.terminal == tid]
    return info


def test_echo_and_exit_code(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh", "-c", "echo hello-$PHUX_TERMINAL-$TERM; exit 7"])
        stream = Stream(tid)
        subscribe(conn, tid)
        deadline = Deadline.after(T)
        while True:  # the exit shows as TERMINAL_CLOSED, or in READY if it came first
            frame = conn.receive(deadline)
            stream.feed(frame)
            if isinstance(frame, TerminalClosed):
                assert frame.status == Exited(code=7)
                assert frame.final_seq == stream.next_seq
                break
            if stream.ready is not None and not stream.ready.alive:
                assert stream.ready.exit == Exited(code=7)
                break
        assert f"hello-{tid}-xterm-256color".encode() in stream.data


def test_exit_by_signal_and_send_signal(server: ServerProcess) -> None:
    with server.connect() as conn:
        self_kill = spawn(conn, ["sh", "-c", "kill -TERM $$"])
        sleeper = spawn(conn, ["sleep", "30"])
        subscribe(conn, self_kill)
        subscribe(conn, sleeper)
        assert wait_exit(conn, self_kill) == Signaled(signal=15)
        conn.call(
            lambda rid: SendSignal(request_id=rid, terminal=sleeper, signal=Signal.INT),
            Deadline.after(T),
        )
        assert wait_exit(conn, sleeper) == Signaled(signal=2)
        with pytest.raises(ServerError) as err:
            conn.call(
                lambda rid: SendSignal(request_id=rid, terminal=sleeper, signal=Signal.INT),
                Deadline.after(T),
            )
        assert err.value.wire_code == ErrorCode.TERMINAL_EXITED


def test_unknown_signal_number(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sleep", "30"])
        with pytest.raises(ServerError) as err:
            conn.call(
                lambda rid: SendSignal(request_id=rid, terminal=tid, signal=77), Deadline.after(T)
            )
        assert err.value.wire_code == ErrorCode.INVALID_COMMAND


@pytest.mark.parametrize(
    ("argv", "cwd", "needle"),
    [
        (["/no/such/program"], None, "/no/such/program"),
        (["true"], "/no/such/dir", "/no/such/dir"),
        (["/etc/passwd"], None, "Permission denied"),
    ],
)
def test_spawn_failure_is_an_error(
    server: ServerProcess, argv: list[str], cwd: str | None, needle: str
) -> None:
    with server.connect() as conn:
        before = listed(conn)
        with pytest.raises(ServerError) as err:
            spawn(conn, argv, cwd=cwd)
        assert err.value.wire_code == ErrorCode.SPAWN_FAILED
        assert needle in err.value.message
        assert [i.terminal for i in listed(conn)] == [i.terminal for i in before]  # none added


def test_cwd_env_and_default_shell(server: ServerProcess, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with server.connect() as conn:
        tid = spawn(
            conn,
            ["sh", "-c", 'echo "[$(pwd)|$FOO|$PHUX_SOCKET]"'],
            cwd=str(tmp_path),
            env=[EnvVar(name="FOO", value="bar")],
        )
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: b"]" in s.data)
        assert f"[{tmp_path}|bar|{server.socket}]".encode() in stream.data
        shell = spawn(conn, [])  # $SHELL of the server: /bin/sh in these tests
        shell_stream = Stream(shell)
        subscribe(conn, shell)
        conn.call(
            lambda rid: Input(request_id=rid, terminal=shell, data=b"echo $((6*7))-ok\n"),
            Deadline.after(T),
        )
        read_until(conn, shell_stream, lambda s: b"42-ok" in s.data)


def test_resize_seen_by_program(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh"], cols=100, rows=30)
        stream = Stream(tid)
        subscribe(conn, tid)
        send = lambda data: conn.call(  # noqa: E731
            lambda rid: Input(request_id=rid, terminal=tid, data=data), Deadline.after(T)
        )
        send(b"stty size\n")
        read_until(conn, stream, lambda s: b"30 100" in s.data)
        conn.call(
            lambda rid: Resize(request_id=rid, terminal=tid, cols=132, rows=43), Deadline.after(T)
        )
        send(b"stty size\n")
        read_until(conn, stream, lambda s: b"43 132" in s.data)
        assert stream.sizes[-1][1:] == (132, 43)
        with pytest.raises(ServerError) as err:
            conn.call(
                lambda rid: Resize(request_id=rid, terminal=tid, cols=0, rows=43), Deadline.after(T)
            )
        assert err.value.wire_code == ErrorCode.INVALID_COMMAND


def test_primary_subscriber_sets_size_viewer_does_not(server: ServerProcess) -> None:
    with server.connect() as conn, server.connect() as other:
        tid = spawn(conn, ["sleep", "30"])
        subscribe(other, tid, role=0, cols=50, rows=10)
        stream = read_until(other, Stream(other and tid), lambda s: s.ready is not None)
        assert (stream.ready.cols, stream.ready.rows) == (80, 24)
        subscribe(conn, tid, role=1, cols=50, rows=10)
        mine = read_until(conn, Stream(tid), lambda s: s.ready is not None)
        assert (mine.ready.cols, mine.ready.rows) == (50, 10)
        read_until(other, stream, lambda s: s.sizes[-1][1:] == (50, 10))
        info = listed_one(conn, tid)
        assert (info.cols, info.rows, info.viewers, info.primaries) == (50, 10, 1, 1)


def test_kill_one_and_input_errors(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh"])
        subscribe(conn, tid)
        conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))
        assert wait_exit(conn, tid) == Signaled(signal=1)
        with pytest.raises(ServerError) as err:
            conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=b"x"), Deadline.after(T))
        assert err.value.wire_code == ErrorCode.TERMINAL_EXITED
        with pytest.raises(ServerError) as err:
            conn.call(lambda rid: Input(request_id=rid, terminal=999, data=b"x"), Deadline.after(T))
        assert err.value.wire_code == ErrorCode.TERMINAL_NOT_FOUND
        with pytest.raises(ServerError) as err:
            conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))
        assert err.value.wire_code == ErrorCode.TERMINAL_EXITED


def test_kill_escalates_to_sigkill(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sh", "-c", "trap '' HUP; echo armed; while :; do sleep 1; done"])
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: b"armed" in s.data)
        conn.call(lambda rid: Kill(request_id=rid, terminals=[tid]), Deadline.after(T))
        assert wait_exit(conn, tid) == Signaled(signal=9)


def test_large_paste_written_completely_in_order(server: ServerProcess) -> None:
    size = 1024 * 1024 + 12345
    payload = random.Random(3).randbytes(size)
    script = (
        "import sys,tty,hashlib,os; tty.setraw(0); h=hashlib.sha256(); n=0\n"
        "print('ready', flush=True)\n"
        f"while n < {size}:\n"
        f"    b=os.read(0, {size}-n); h.update(b); n+=len(b)\n"
        "print('\\r\\ndigest', h.hexdigest(), flush=True)\n"
    )
    with server.connect() as conn:
        tid = spawn(conn, ["python3", "-c", script])
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: b"ready" in s.data)
        conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=payload), Deadline.after(30))
        want = hashlib.sha256(payload).hexdigest().encode()
        read_until(conn, stream, lambda s: want in s.data, timeout=30)


def test_concurrent_inputs_are_not_interleaved(server: ServerProcess) -> None:
    piece = 200_000
    script = (
        "import tty,os; tty.setraw(0); n=0; out=bytearray()\n"
        "print('ready', flush=True)\n"
        f"while n < {2 * piece}:\n"
        "    b=os.read(0, 65536); out+=b; n+=len(b)\n"
        "changes=sum(1 for i in range(1,len(out)) if out[i]!=out[i-1])\n"
        "print('\\r\\nchanges', changes, flush=True)\n"
    )
    with server.connect() as conn, server.connect() as other:
        tid = spawn(conn, ["python3", "-c", script])
        stream = Stream(tid)
        subscribe(conn, tid)
        read_until(conn, stream, lambda s: b"ready" in s.data)
        a = conn.submit(lambda rid: Input(request_id=rid, terminal=tid, data=b"a" * piece))
        b = other.submit(lambda rid: Input(request_id=rid, terminal=tid, data=b"b" * piece))
        conn.wait_reply(a, Deadline.after(30))
        other.wait_reply(b, Deadline.after(30))
        read_until(conn, stream, lambda s: b"changes 1\n" in s.data, timeout=30)


def test_list_terminals_carries_selector_fields(server: ServerProcess) -> None:
    with server.connect() as conn:
        tid = spawn(conn, ["sleep", "30"], cols=90, rows=20)
        info = listed_one(conn, tid)
        assert info.terminal == tid and info.alive and info.exit is None
        assert (info.cols, info.rows) == (90, 20)
        assert info.pid > 0 and info.created_ms > 0
        os.kill(info.pid, 0)


def test_children_keep_the_users_fd_limit(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, wrapper=["sh", "-c", 'ulimit -Sn 1000; exec "$@"', "sh"])
    try:
        server.start()
        with server.connect() as conn:
            tid = spawn(conn, ["sh", "-c", "echo limit=$(ulimit -Sn)"])
            stream = Stream(tid)
            subscribe(conn, tid)
            read_until(conn, stream, lambda s: b"limit=" in s.data and s.data.endswith(b"\n"))
            assert b"limit=1000\r" in stream.data
            assert server.proc is not None
            limits = Path(f"/proc/{server.proc.pid}/limits").read_text()
            assert "Max open files            1000 " not in limits
    finally:
        server.stop()


def test_children_start_with_default_signal_handling(tmp_path: Path) -> None:
    """A server started where signals are ignored (a background job of a shell without
    job control ignores SIGINT and SIGQUIT, nohup SIGHUP) gives its panes none of that:
    C-\\ and C-z must work in them as in any terminal."""
    ignore = 'trap "" HUP INT QUIT TERM TSTP TTIN TTOU USR1; exec "$@"'
    server = ServerProcess(tmp_path, wrapper=["sh", "-c", ignore, "sh"])
    try:
        server.start()
        with server.connect() as conn:
            tid = spawn(conn, ["cat", "/proc/self/status"])
            stream = Stream(tid)
            subscribe(conn, tid)
            read_until(conn, stream, lambda s: b"SigCgt" in s.data and s.data.endswith(b"\n"))
        assert b"SigIgn:\t0000000000000000\r" in stream.data, bytes(stream.data)
        assert b"SigBlk:\t0000000000000000\r" in stream.data
    finally:
        server.stop()


def test_output_flows_while_a_paste_is_being_written(server: ServerProcess) -> None:
    size = 1024 * 1024
    slow_reader = (
        "import os, tty, time, hashlib; tty.setraw(0); n = 0; h = hashlib.sha256()\n"
        "print('ready', flush=True)\n"
        f"while n < {size}:\n"
        "    b = os.read(0, 65536); h.update(b); n += len(b); time.sleep(0.003)\n"
        "print('digest', h.hexdigest(), flush=True)\n"
    )
    payload = random.Random(5).randbytes(size)
    with server.connect() as conn:
        paste = spawn(conn, ["python3", "-c", slow_reader])
        ticker = spawn(conn, ["sh", "-c", "while :; do echo tick; sleep 0.01; done"])
        pasted, ticks = Stream(paste), Stream(ticker)
        subscribe(conn, paste)
        subscribe(conn, ticker)
        deadline = Deadline.after(30)
        while b"ready" not in pasted.data or ticks.ready is None:
            frame = conn.receive(deadline)
            pasted.feed(frame)
            ticks.feed(frame)
        rid = conn.submit(lambda rid: Input(request_id=rid, terminal=paste, data=payload))
        before = None
        while (reply := conn.take_reply(rid)) is None:
            frame = conn.receive(deadline)
            pasted.feed(frame)
            ticks.feed(frame)
            if before is None:
                before = ticks.data.count(b"tick")
        assert reply is not None
        assert ticks.data.count(b"tick") - (before or 0) >= 3  # the loop kept relaying
        want = hashlib.sha256(payload).hexdigest().encode()
        read_until(conn, pasted, lambda s: want in s.data, timeout=30)
        # (the ticker would tick on in the module's server)
        conn.call(lambda rid: Kill(request_id=rid, terminals=[ticker]), Deadline.after(T))
