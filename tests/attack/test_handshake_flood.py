"""A process that floods connections without HELLO: its newer ones wait, unread, in turn.

Each process (by SO_PEERCRED's pid) has a share of connections served before HELLO
(``$PHUX_MAX_HANDSHAKING_PER_PROCESS``); the rest wait parked until one of its served
ones says HELLO or closes (spec/proto.md §4 rule 9, phux.server.waiting_room). Before,
the server closed the oldest for each newcomer and a flooder that reconnected kept it
accepting and closing in a closed loop (issue 28 item 5).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from phux.wire.errors import ErrorCode
from phux.wire.frames import Error, Hello, HelloOk, Ping, Pong
from server.harness import RawClient, running_server

# Opens COUNT connections, each sending one byte of a frame header and never more;
# reopens any the server closes, counting them. Prints "ready" once all are open, then
# the count so far for each line read from stdin; ends at EOF.
_FLOODER = """
import select, socket, sys
path, count = sys.argv[1], int(sys.argv[2])
held, closed = {}, 0
def fill():
    while len(held) < count:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.send(b"\\x00")
        held[s.fileno()] = s
fill()
print("ready", flush=True)
stdin = sys.stdin.fileno()
while True:
    poller = select.poll()
    poller.register(stdin, select.POLLIN)
    for fd in held:
        poller.register(fd, select.POLLIN)
    events = poller.poll(50)
    for fd, _ in events:  # (the closes seen with a question count in its answer)
        if fd != stdin:
            held.pop(fd).close()
            closed += 1
    if any(fd == stdin for fd, _ in events):
        if not sys.stdin.readline():
            sys.exit(0)
        print(closed, flush=True)
    fill()
"""

# Opens COUNT connections without HELLO, prints "ready", holds them until stdin closes.
_HOLDER = """
import socket, sys
socks = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(int(sys.argv[2]))]
for s in socks:
    s.connect(sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def _process(script: str, path: Path, count: int) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, os.fspath(path), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        proc.communicate(input="", timeout=10)


def _asked(proc: subprocess.Popen[str]) -> int:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("?\n")
    proc.stdin.flush()
    return int(proc.stdout.readline())


def _connect(path: Path) -> RawClient:
    return RawClient(path)


def _hello(client: RawClient) -> None:
    client.send(Hello(client_name="raw", major=1, minor=0, patch=0))


def _silent(client: RawClient, seconds: float) -> bool:
    """Nothing came from the server within ``seconds`` (it has not read our HELLO)."""
    readable, _, _ = select.select([client.sock], [], [], seconds)
    return not readable


def _pinged(client: RawClient) -> None:
    client.send(Ping(token=5))
    reply = client.recv()
    assert isinstance(reply, Pong), reply


def test_a_flood_without_hello_waits_its_turn_and_nobody_churns(tmp_path: Path) -> None:
    """100 connections of one process that never say HELLO and reconnect whenever cut:
    none is cut (before: the pool's bound closed the oldest for each newcomer, in a loop
    as fast as the server's CPU went), and another process is served at once."""
    with (
        running_server(tmp_path, "--hello-timeout", "60", PHUX_MAX_HANDSHAKING="16") as server,
        _process(_FLOODER, server.socket, 100) as flooder,
    ):
        other = _connect(server.socket)
        assert isinstance(other.hello(), HelloOk)
        _pinged(other)
        assert _asked(flooder) == 0
        other.close()
    assert server.log.read_text().count("its newer ones wait their turn") == 1


def test_a_flood_meets_a_full_server_without_churning(tmp_path: Path) -> None:
    """A server at --max-connections refuses a connection at its HELLO, not before: a
    flooder that never says HELLO is not cut at once (and reconnecting in a loop), its
    connections wait their HELLO deadline or their turn like any others."""
    with running_server(tmp_path, "--hello-timeout", "60", "--max-connections", "2") as server:
        held = [_connect(server.socket) for _ in range(2)]
        for client in held:
            client.hello()
        with _process(_FLOODER, server.socket, 50) as flooder:
            late = _connect(server.socket)
            _hello(late)
            refused = late.recv()
            assert isinstance(refused, Error), refused
            assert refused.code == ErrorCode.RESOURCE_EXHAUSTED
            assert _asked(flooder) == 0
        for client in [*held, late]:
            client.close()


def test_a_waiting_connection_is_served_when_one_before_it_says_hello_or_closes(
    tmp_path: Path,
) -> None:
    with running_server(
        tmp_path, "--hello-timeout", "60", PHUX_MAX_HANDSHAKING_PER_PROCESS="2"
    ) as server:
        first, second, third, fourth, fifth = (_connect(server.socket) for _ in range(5))
        _hello(third)
        _hello(fifth)
        assert _silent(third, 0.3)  # its process's two turns are taken
        first.close()  # never said HELLO: its turn passes on
        assert isinstance(third.recv(), HelloOk)  # and its HELLO passes it to fourth
        assert _silent(fifth, 0.3)  # served: second and fourth, neither past HELLO
        assert isinstance(second.hello(), HelloOk)
        assert isinstance(fifth.recv(), HelloOk)
        _pinged(fifth)
        assert isinstance(fourth.hello(), HelloOk)
        for client in (second, third, fourth, fifth):
            client.close()


def _dropped(client: RawClient) -> None:
    """The server closed ``client`` without serving it (saying why, if it got through)."""
    frames = []
    with contextlib.suppress(ConnectionResetError):  # our unread HELLO makes it a reset
        while (frame := client.recv()) is not None:
            frames.append(frame)
    for reply in frames:
        assert isinstance(reply, Error) and reply.code == ErrorCode.HANDSHAKE_REQUIRED, reply
        assert "waiting to be served" in reply.message


def test_past_the_bound_the_newcomers_process_loses_its_oldest_waiting_one(
    tmp_path: Path,
) -> None:
    """Past the bound of waiting connections, the newcomer's process loses its oldest
    waiting one; a process with none waiting takes it from the one with the most."""
    with (
        running_server(
            tmp_path,
            "--hello-timeout",
            "60",
            PHUX_MAX_HANDSHAKING_PER_PROCESS="2",
            PHUX_MAX_PARKED="3",
        ) as server,
        _process(_HOLDER, server.socket, 4),
    ):  # 2 served, 2 waiting
        mine = [_connect(server.socket) for _ in range(3)]  # 2 served, 1 waiting: full
        _hello(mine[2])
        newest = _connect(server.socket)
        _hello(newest)
        _dropped(mine[2])  # not the holder's, though it has more waiting
        with _process(_HOLDER, server.socket, 3):  # none waiting: the holder's go
            mine[0].close()
            assert isinstance(newest.recv(), HelloOk)
        for client in [*mine, newest]:
            client.close()
