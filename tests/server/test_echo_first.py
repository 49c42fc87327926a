"""Echo first (phux.server.echo_first): a terminal just typed into is read before the
terminals that flood, and a program that does not echo holds them back only so long."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded
from phux.server.replica_worker import WORKER_NICE
from phux.wire.frames import Input, InputWritten, Output

from .harness import ServerProcess, Stream, next_of, read_until, running_server, spawn, subscribe

HOLD_S = 1.0
"""The server's echo_first_s here: far longer than an echo takes, so the order below
holds however loaded the machine is, and short enough to wait out once."""

SLOW_ECHO = """
import os, time, tty
tty.setraw(0)
os.write(1, b"ready")
while True:
    key = os.read(0, 1)
    time.sleep(0.2)
    os.write(1, key)
"""
"""Echoes each key 0.2 s late: the floods would be read many times meanwhile (a
slow program, or a slow machine), were they not held."""

FLOOD = ["sh", "-c", "exec yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # (Replicas in the helper process: its nice value is held here.)
    with running_server(
        tmp_path_factory.mktemp("echo-first"), PHUX_ECHO_FIRST=str(HOLD_S), PHUX_REPLICAS="process"
    ) as srv:
        yield srv


def _input(request_id: int, terminal: int, data: bytes) -> Input:
    return Input(request_id=request_id, terminal=terminal, data=data)


def _flooding(conn: Connection, flood: int) -> None:
    """Until the flood's output streams (its read passes are big ones)."""
    deadline = Deadline.after(10)
    seen = 0
    while seen < 256 * 1024:
        seen += len(next_of(conn, Output, deadline, terminal=flood).data)


def test_an_echo_is_read_before_the_floods_next_pass(server: ServerProcess) -> None:
    with server.connect() as conn:
        floods = [spawn(conn, FLOOD) for _ in range(2)]
        typed = spawn(conn, [sys.executable, "-c", SLOW_ECHO])
        for tid in (*floods, typed):
            subscribe(conn, tid, input=True)
        read_until(conn, Stream(typed), lambda s: b"ready" in s.data)
        for flood in floods:
            _flooding(conn, flood)
        deadline = Deadline.after(20)
        for letter in b"echo":
            key = bytes([letter])
            conn.submit(partial(_input, terminal=typed, data=key))
            next_of(conn, InputWritten, deadline, terminal=typed)
            # From the write on, until the echo, no flood was read (its pass was not
            # dispatched: nothing of it reached the subscriber in between).
            while True:
                frame = conn.receive(deadline)
                if isinstance(frame, Output) and frame.terminal == typed:
                    assert key in frame.data
                    break
                assert not (isinstance(frame, Output) and frame.terminal in floods), (
                    f"a flood was read while {key!r}'s echo was awaited"
                )
            # The floods go on after it.
            for flood in floods:
                next_of(conn, Output, deadline, terminal=flood)


def test_input_without_echo_holds_the_floods_back_for_a_while_only(
    server: ServerProcess,
) -> None:
    with server.connect() as conn:
        flood = spawn(conn, FLOOD)
        mute = spawn(conn, ["sh", "-c", "stty -echo; echo ready; exec sleep 60"])
        subscribe(conn, mute, input=True)
        deadline = Deadline.after(10)
        read_until(conn, Stream(mute), lambda s: b"ready" in s.data)
        subscribe(conn, flood)
        _flooding(conn, flood)
        conn.submit(lambda rid: Input(request_id=rid, terminal=mute, data=b"x"))
        next_of(conn, InputWritten, deadline, terminal=mute)
        # No echo comes: the flood is read again once the hold has passed.
        next_of(conn, Output, Deadline.after(HOLD_S + 5), terminal=flood)


def _helpers(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [
        int(c)
        for c in children
        if b"phux.server.replica" in Path(f"/proc/{c}/cmdline").read_bytes()
    ]


def test_the_replicas_parse_below_the_loops_priority(server: ServerProcess) -> None:
    """The replica helper (its checkpoints are background work) runs niced, so that on
    a busy machine the loop and the programs get the CPU first."""
    assert server.proc is not None
    pid = server.proc.pid
    with server.connect() as conn:
        spawn(conn, ["cat"])  # (the helper starts with the first terminal)
    expected = os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE
    deadline = time.monotonic() + 10
    # (Until the helper has started: it sets its nice value first thing.)
    while not (helpers := _helpers(pid)) or any(_nice(h) != expected for h in helpers):
        assert time.monotonic() < deadline, [(h, _nice(h)) for h in helpers]
        time.sleep(0.01)


def _nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_input_that_keeps_coming_does_not_starve_the_floods(server: ServerProcess) -> None:
    """Input to a terminal that never echoes, every 0.3 s (each would hold the floods
    for HOLD_S): a flood waits HOLD_S at most all told, then is read."""
    with server.connect() as conn:
        flood = spawn(conn, FLOOD)
        mute = spawn(conn, ["sh", "-c", "stty -echo; echo ready; exec sleep 60"])
        subscribe(conn, mute, input=True)
        read_until(conn, Stream(mute), lambda s: b"ready" in s.data)
        subscribe(conn, flood)
        _flooding(conn, flood)
        start = time.monotonic()
        sent = 0
        holding = False  # the first input was written: the floods are held from then on
        while time.monotonic() - start < 3 * HOLD_S:
            if time.monotonic() - start >= 0.3 * sent:
                conn.submit(partial(_input, terminal=mute, data=b"x"))
                sent += 1
            try:
                frame = conn.receive(Deadline.after(0.05))
            except DeadlineExceeded:
                continue
            if isinstance(frame, InputWritten) and frame.terminal == mute:
                holding = True
            elif holding and isinstance(frame, Output) and frame.terminal == flood:
                break  # read while the input went on
        else:
            raise AssertionError(f"the flood was not read while input kept coming ({sent})")
