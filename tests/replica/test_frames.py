"""Bootstraps and synchronized-output frames (DEC mode 2026, spec/L1.md §5.4).

A client that bootstraps while a program's frame is open must see what a
terminal shows: the screen from before the frame (with ``frame_pending``), or,
once the frame is older than the bound (150 ms), the live screen. So the
replica never checkpoints inside a frame that holds the screen: it checkpoints
where the frame opened, or waits for the frame's end, or for the bound (then
the checkpoint leaves the frame out).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from phux.client.connection import Connection
from phux.client.deadline import Deadline
from phux.engine import Terminal
from phux.server.replica import _ThreadWorker
from phux.server.replica_worker import (
    CHECKPOINT,
    FEED,
    NEW,
    Message,
    WorkerCore,
    _frame_start,
)
from phux.wire.frames import Output
from server.harness import spawn

from .helpers import Boot, go, program, read_bootstrap, replica_server, send, unsubscribe

BSU, ESU = b"\x1b[?2026h", b"\x1b[?2026l"


def _stopped() -> float:
    return 0.0


# ------------------------------------------------------------ the replica's decision


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _rows(k: int, rows: range, times: int = 1) -> bytes:
    draw = b"".join(b"\x1b[%d;1Hframe %d row %d" % (r + 1, k, r) for r in rows)
    return b"\x1b[H\x1b[2J" + draw * times


def _core() -> tuple[WorkerCore, Terminal, Clock]:
    core = WorkerCore(history=100, compact_bytes=1000, hard_bytes=1 << 20)
    core.handle((NEW, 1, 0, 40, 6, b""), [])
    engine = core.replicas[1].engine
    assert isinstance(engine, Terminal)
    clock = Clock()
    engine.screen.frame_clock = clock
    return core, engine, clock


def _feed(core: WorkerCore, seq: int, data: bytes) -> list[Message]:
    out: list[Message] = []
    core.note((FEED, 1, seq, 0, 0, data))
    core.handle((FEED, 1, seq, 0, 0, data), out)
    return [m for m in out if m[0] == CHECKPOINT]


def _replay(checkpoint: bytes, rest: bytes = b"") -> Terminal:
    t = Terminal(40, 6, history=100)
    t.screen.frame_clock = _stopped
    t.feed_checkpoint(checkpoint)
    t.feed(rest)
    return t


@pytest.mark.parametrize(
    ("data", "start"),
    [
        (b"plain output", -1),
        (b"ab" + BSU + b"c", 2),  # a frame opens and stays open
        (BSU + b"x" + ESU, -1),  # a whole frame: none open at the end
        (BSU + ESU + BSU + b"y", len(BSU + ESU)),
        (b"q" + ESU + b"r" + BSU + b"s" + BSU, len(b"q" + ESU + b"r")),  # its first BSU
        (ESU + b"z", -1),
    ],
)
def test_where_a_frame_left_open_opened(data: bytes, start: int) -> None:
    assert _frame_start(data) == start


def test_a_checkpoint_due_inside_a_frame_is_written_where_the_frame_opened() -> None:
    core, _engine, clock = _core()
    whole = BSU + _rows(0, range(6), times=10) + ESU
    half = BSU + _rows(1, range(3), times=20)
    assert len(whole) > 1000 and len(half) > 1000
    (checkpoint,) = _feed(core, 0, whole + half)
    assert checkpoint[2] == len(whole)
    seen = _replay(checkpoint[5], half)
    assert seen.frame_pending
    assert seen.project().lines == [f"frame 0 row {r}" for r in range(6)]
    # Past the bound the live screen shows: the replica checkpoints it, frame left out.
    late: list[Message] = []
    clock.now += 0.1
    core.expire(clock.now, late)
    assert late == []
    clock.now += 0.06
    core.expire(clock.now, late)
    ((kind, _tid, seq, _c, _r, data),) = late
    assert kind == CHECKPOINT and seq == len(whole + half)
    live = _replay(data)
    assert not live.frame_pending
    assert live.project().lines == [f"frame 1 row {r}" for r in range(3)] + [""] * 3
    assert core.next_due(clock.now) is None


def test_a_frame_left_open_is_checkpointed_when_its_bound_passes() -> None:
    core, _engine, clock = _core()
    assert _feed(core, 0, b"before") == []
    assert _feed(core, 6, BSU + b"\rduring") == []
    assert core.next_due(clock.now) == pytest.approx(0.15)
    late: list[Message] = []
    clock.now += 0.16
    core.expire(clock.now, late)
    ((kind, _tid, seq, _c, _r, data),) = late
    assert (kind, seq) == (CHECKPOINT, 6 + len(BSU) + 7)
    assert _replay(data).project().lines[0] == "during"


def test_a_frame_that_ends_lets_the_due_checkpoint_go() -> None:
    core, _engine, _clock = _core()
    assert _feed(core, 0, BSU + b"x" * 1200) == []  # due, but the frame holds
    ((_k, _t, seq, _c, _r, data),) = _feed(core, len(BSU) + 1200, b"y" + ESU)
    assert seq == len(BSU) + 1200 + 1 + len(ESU)
    assert not _replay(data).frame_pending


# ------------------------------------------------------------ on a real server

ROWS = 24
REPEAT = 80  # each half frame is ~75 KB: past the 64 KiB a checkpoint waits for

FRAMES = f"""
def rows(k, which):
    draw = b"".join(b"\\x1b[%d;1H" % (r + 1) + (b"frame %d row %d " % (k, r)).ljust(70, b".")
                    for r in which)
    return draw * {REPEAT}
os.read(0, 1)
w(b"\\x1b[?2026h\\x1b[H\\x1b[2J" + rows(0, range({ROWS})) + b"\\x1b[?2026l")
k = 1
while True:
    # Frame k opens and half of it is drawn; it stays open until the next byte.
    w(b"\\x1b[?2026h\\x1b[H\\x1b[2J" + rows(k, range({ROWS // 2})) + b"\\x1b]2;half %d\\x07" % k)
    os.read(0, 1)
    w(rows(k, range({ROWS // 2}, {ROWS})) + b"\\x1b[?2026l")
    k += 1
"""


def _frame(k: int, rows: range) -> list[str]:
    return [f"frame {k} row {r} ".ljust(70, ".") if r in rows else "" for r in range(ROWS)]


def _wait_for(watcher: Connection, tid: int, boot: Boot, marker: bytes) -> None:
    """Read the live output until ``marker`` has come."""
    deadline = Deadline.after(20)
    while marker not in boot.live:
        frame = watcher.receive(deadline)
        if isinstance(frame, Output) and frame.terminal == tid:
            boot.live += frame.data


def test_a_bootstrap_inside_a_frame_shows_the_screen_before_it(tmp_path: Path) -> None:
    with (
        replica_server(tmp_path) as server,
        server.connect() as conn,
        server.connect() as watcher,
    ):
        tid = spawn(conn, program(FRAMES))
        live = read_bootstrap(watcher, tid)
        go(conn, tid)
        pending = 0
        for k in range(1, 3):
            # The half frame is out (its title says so): a bootstrap now must show
            # frame k-1 whole (the frame holds), or frame k's half once the frame
            # is older than the bound, never frame k's half while it holds.
            _wait_for(watcher, tid, live, b"half %d" % k)
            boot = read_bootstrap(conn, tid)
            unsubscribe(conn, tid)
            seen = boot.engine(300, frame_clock=_stopped)
            lines = seen.project().lines
            if seen.frame_pending:
                pending += 1
                assert lines == _frame(k - 1, range(ROWS)), f"round {k}: a torn screen"
            else:
                assert lines == _frame(k, range(ROWS // 2))
            if k < 2:
                send(conn, tid, b"n")
        assert pending, "no bootstrap came inside a frame (a very slow machine?)"
        # Left open past the bound: the replica checkpoints the live screen (nothing
        # tells a client when: bootstraps are read until it shows).
        deadline = Deadline.after(10)
        while True:
            seen = read_bootstrap(conn, tid).engine(300, frame_clock=_stopped)
            unsubscribe(conn, tid)
            if not seen.frame_pending or deadline.expired():
                break
            time.sleep(0.02)
        assert not seen.frame_pending
        assert seen.project().lines == _frame(2, range(ROWS // 2))


def test_the_thread_worker_wakes_for_a_frame_left_open() -> None:
    """Replicas in a thread: the worker's wait for a message ends at the frame's
    bound, and the checkpoint of the live screen goes out with no more output (the
    process worker's is tested above, after the frames' last round)."""
    got: list[Message] = []

    async def main() -> None:
        done = trio.Event()

        def deliver(results: list[Message]) -> None:
            got.extend(results)
            if any(m[0] == CHECKPOINT for m in results):
                done.set()

        core = WorkerCore(history=100, compact_bytes=1 << 16, hard_bytes=1 << 20)
        worker = _ThreadWorker(core, deliver, trio.lowlevel.current_trio_token())
        worker.start()
        try:
            worker.send((NEW, 1, 0, 40, 6, b""))
            worker.send((FEED, 1, 0, 0, 0, b"before" + BSU + b"\rduring"))
            with trio.fail_after(10):
                await done.wait()
        finally:
            worker.stop()

    trio.run(main)
    ((_k, _t, seq, _c, _r, data),) = [m for m in got if m[0] == CHECKPOINT]
    assert seq == len(b"before" + BSU + b"\rduring")
    assert _replay(data).project().lines[0] == "during"
