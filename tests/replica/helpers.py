"""Servers with replicas, bootstraps read into engines, small programs that ask questions."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.engine import Terminal
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Input,
    Output,
    Resized,
    Subscribe,
    Unsubscribe,
)
from server.harness import ServerProcess, Stream


@contextlib.contextmanager
def replica_server(
    directory: Path, *args: str, mode: str = "process", history: int = 300
) -> Iterator[ServerProcess]:
    env = dict(os.environ, PHUX_REPLICAS=mode, PHUX_HISTORY_LINES=str(history))
    server = ServerProcess(directory, *args, env=env)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@dataclass
class Boot:
    """One bootstrap as received: checkpoint, journal bytes, size changes, READY."""

    start_seq: int = 0
    cols: int = 0
    rows: int = 0
    checkpoint: bytes | None = None
    journal: bytearray = field(default_factory=bytearray)
    resizes: list[Resized] = field(default_factory=list)
    ready: BootstrapReady | None = None
    live: bytearray = field(default_factory=bytearray)
    """OUTPUT after READY, contiguous from ``ready.next_seq``."""

    @property
    def size(self) -> int:
        return len(self.checkpoint or b"") + len(self.journal)

    def engine(
        self,
        history: int,
        mark_key: str | None = None,
        frame_clock: Callable[[], float] | None = None,
    ) -> Terminal:
        """Replay as a client does: fresh engine, checkpoint, journal (with resizes).
        ``mark_key``: the pane's key, as a client passes it (None: trust every mark);
        ``frame_clock``: the engine's clock for 2026 frames (a stopped one keeps a
        frame the replay opens holding, however slow the test)."""
        t = Terminal(self.cols, self.rows, history=history, mark_key=mark_key)
        if frame_clock is not None:
            t.screen.frame_clock = frame_clock
        if self.checkpoint is not None:
            t.feed_checkpoint(self.checkpoint)
        seq = self.start_seq
        data = bytes(self.journal)
        for change in self.resizes:
            t.feed(data[: change.seq - seq])
            data = data[change.seq - seq :]
            seq = change.seq
            t.resize(change.cols, change.rows)
        t.feed(data)
        t.feed(bytes(self.live))
        return t


def read_bootstrap(conn: Connection, tid: int, timeout: float = 20.0) -> Boot:
    """SUBSCRIBE as a viewer and read the bootstrap (the subscription stays)."""
    conn.submit(lambda rid: Subscribe(request_id=rid, terminal=tid))
    deadline = Deadline.after(timeout)
    boot = Boot()
    while boot.ready is None:
        frame = conn.receive(deadline)
        if getattr(frame, "terminal", None) != tid:
            continue
        if isinstance(frame, BootstrapBegin):
            boot = Boot(start_seq=frame.start_seq, cols=frame.cols, rows=frame.rows)
        elif isinstance(frame, BootstrapChunk):
            if frame.checkpoint:
                assert frame.seq == boot.start_seq and not boot.journal
                boot.checkpoint = frame.data
            else:
                assert frame.seq == boot.start_seq + len(boot.journal)
                boot.journal += frame.data
        elif isinstance(frame, Resized):
            boot.resizes.append(frame)
        elif isinstance(frame, BootstrapReady):
            assert frame.next_seq == boot.start_seq + len(boot.journal)
            boot.ready = frame
    return boot


def read_live(conn: Connection, tid: int, boot: Boot, until: int, timeout: float = 20.0) -> None:
    """Read OUTPUT into ``boot.live`` until the seq ``until`` is reached."""
    assert boot.ready is not None
    deadline = Deadline.after(timeout)
    while boot.ready.next_seq + len(boot.live) < until:
        frame = conn.receive(deadline)
        if isinstance(frame, Output) and frame.terminal == tid:
            assert frame.seq == boot.ready.next_seq + len(boot.live)
            boot.live += frame.data


def go(conn: Connection, tid: int, data: bytes = b"g", timeout: float = 20.0) -> None:
    """Wait until the program printed its ``R`` (raw mode is on), then send ``data``."""
    boot = read_bootstrap(conn, tid, timeout)
    assert boot.ready is not None
    deadline = Deadline.after(timeout)
    seen = bytes(boot.journal)
    while b"R" not in seen:
        frame = conn.receive(deadline)
        if isinstance(frame, Output) and frame.terminal == tid:
            seen += frame.data
    unsubscribe(conn, tid)
    send(conn, tid, data)


def send(conn: Connection, tid: int, data: bytes) -> None:
    conn.call(lambda rid: Input(request_id=rid, terminal=tid, data=data), Deadline.after(10))


def unsubscribe(conn: Connection, tid: int) -> None:
    conn.call(lambda rid: Unsubscribe(request_id=rid, terminal=tid), Deadline.after(10))


def program(body: str) -> list[str]:
    """A Python program on the terminal in raw mode (no echo, no newline translation).

    It prints ``R`` once in raw mode: input sent before that could be lost."""
    head = (
        "import os, sys, time, select, tty\n"
        "tty.setraw(0)\n"
        "def w(b):\n"
        "    v = memoryview(b)\n"
        "    while v:\n"
        "        v = v[os.write(1, v):]\n"
        "w(b'R')\n"
    )
    return ["python3", "-c", head + body]


def header_flood(rows: int) -> list[str]:
    """A program that paints a header once, then repaints row 10 ``rows`` times (87
    bytes each: ``%06d`` of its number, twelve times), then writes DONE on row 12
    and lingers: a flood whose right end state needs its first bytes (the header)."""
    body = f"""
import os
def w(b):
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
w(b"\\x1b[H\\x1b[2J== HEADER painted once ==")
for i in range({rows}):
    w((b"\\x1b[10;1H\\x1b[2K" + (b"%06d " % i) * 12)[:87])
w(b"\\x1b[12;1HDONE")
import time
time.sleep(60)
"""
    return ["python3", "-c", body]


ASK = """
def ask(query, end, timeout=10.0):
    os.write(1, query)
    got = b""
    deadline = time.monotonic() + timeout
    while not got.endswith(end) and time.monotonic() < deadline:
        if select.select([0], [], [], 0.05)[0]:
            got += os.read(0, 1024)
    return got

def linger(seconds):
    got = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if select.select([0], [], [], 0.05)[0]:
            got += os.read(0, 1024)
    return got
"""


def replay(stream: Stream, history: int) -> Terminal:
    """The whole stream with its size changes, as one long-lived client saw it."""
    _seq, cols, rows = stream.sizes[0]
    t = Terminal(cols, rows, history=history)
    data = bytes(stream.data)
    at = stream.start_seq
    for seq, cols, rows in stream.sizes[1:]:
        t.feed(data[: seq - at])
        data = data[seq - at :]
        at = seq
        t.resize(cols, rows)
    t.feed(data)
    return t


def replica_pid(server_pid: int) -> int:
    """The live replica process's pid (0 while there is none)."""
    with open(f"/proc/{server_pid}/task/{server_pid}/children") as f:
        children = list(map(int, f.read().split()))
    for pid in children:
        try:  # the killed replica is reaped at a moment of the server's choosing
            with open(f"/proc/{pid}/cmdline", "rb") as cmd, open(f"/proc/{pid}/stat") as st:
                if b"phux.server.replica" in cmd.read() and st.read().split(") ")[1][0] != "Z":
                    return pid
        except FileNotFoundError:
            continue
    return 0


def compacted_bootstrap(server: ServerProcess, tid: int, bound: int, timeout: float = 30.0) -> Boot:
    """A new viewer's bootstrap once the replica compacted the terminal's output: a
    checkpoint and less than ``bound`` of journal after it."""
    deadline = time.monotonic() + timeout
    while True:
        with server.connect() as late:
            boot = read_bootstrap(late, tid)
        if boot.checkpoint is not None and len(boot.journal) < bound:
            return boot
        assert time.monotonic() < deadline, "no compacted bootstrap"
        time.sleep(0.1)
