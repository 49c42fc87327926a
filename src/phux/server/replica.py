"""Server-side replicas: an engine per terminal, fed off the event loop.

Every terminal's output (and every size change) goes, in order, to an engine
replica (``phux.engine.Terminal`` with history) that lives off the trio loop.
The replicas do two things, and nothing else:

* **Checkpoints.** Once a replica has fed ``compact_bytes`` of output since its
  last checkpoint, or a shell's command started or finished (OSC 133 C/D: the
  checkpoint keeps when, which a journal tail cannot), and has caught up with
  its terminal (or, in a flood, once the tail reaches the journal bound), it
  writes a checkpoint (VT bytes,
  ``phux.engine.checkpoint``) at the sequence number it has reached. The loop
  then replaces the journal before that point by the checkpoint, so a
  bootstrap is the newest checkpoint plus a short tail. The journal never
  drops output a checkpoint does not cover, so a bootstrap is always exact.
  While the replica lags in a flood, relay goes on at full speed until it is
  ``replica_lag_bytes`` behind; then the terminal's reader waits until it has
  caught up to half of that (the program blocks on a full PTY, as on a slow
  terminal). Memory stays bounded and nothing is parsed from mid-stream: a
  replica restarted from the journal's newest bytes once checkpointed a row-10
  rewrite onto row 0 for good.
  To keep up, the worker parses a backlog in big feeds (``WorkerCore.coalesce``):
  of a feed that only scrolls, the engine draws only the rows its history keeps.
* **Answers to terminal queries.** DA1, DA2, DSR 5, DSR 6 and DECXCPR are
  answered by the engine at the point of the stream where they occur (so a
  cursor position report reflects all output before the query, however late
  a lagging replica gets there), exactly once, and so are XTVERSION, the size
  reports, colour queries and DECRQSS (spec/L1.md §5.2). The answers go to
  the PTY through the terminal's input queue, never inside a client's INPUT.

The loop only appends to a queue (or a pipe): it never waits on parsing.

Thread or process (``ServerConfig.replica_mode``, ``$PHUX_REPLICAS``)? One
helper process for all terminals, by default. Measured with
tools/bench/bench_replica.py (bench_server's relay of ``cat`` of base64 text
to a subscriber, and the p99 of an INPUT echo on one terminal while another
floods) on the 2-core machine, shared with other work:

    replicas   relay MB/s (16/64 MB)          echo p99 under flood, ms
    off        56 / 27 / 18 / 36 / 78         17 / 10 / 23 / 10 / 13
    thread      2 / 20 /  6 /  5 / 11        528 / 426 / 149 / 115 / 54
    process    38 / 19 /  7 / 52 / 35         52 / 96 / 20 / 10 / 12
    tmux       13 ... 22 (same machine, same file)

A thread shares the GIL with the loop: parsing holds it between forced
switches and the loop, which gives it up at every system call, waits for it
each time (the convoy effect; a 0.5 ms switch interval helps, as the last
two thread figures show, but not enough). A process parses on the other core
and costs the loop one ``writev`` per batch of chunks; the copy through the
pipe is cheap next to parsing. One process for all terminals keeps memory to
one interpreter (about 30 MB) however many terminals there are. The thread
mode remains for platforms or tests where a helper process is unwelcome.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from phux.server.log import log
from phux.signed_marks import KEY_METADATA

if TYPE_CHECKING:
    from phux.engine import Terminal as Engine
    from phux.server.config import ServerConfig
    from phux.server.journal import Chunk, SizeChange
    from phux.server.terminal import Terminal

# Messages to the worker: (kind, terminal id, seq, cols, rows, data). A replica
# re-seeded in a new helper (the old one died) has a new generation: FEED
# carries it in ``cols``, RESIZE in ``data``, RESET in ``data`` after the seq up
# to which answers are not sent (they were, or were lost with the old helper,
# before), followed by the checkpoint that recreates the state at ``seq``.
# FEED carries in ``rows`` the low 16 bits of the unix ms the server read the
# bytes at: the replica stamps OSC 133 C/D marks with that time, not with when
# it got to them (it lags behind under load: a 1 s command timed 0.3 s). Joined
# chunks (``coalesce``) take the last one's time.
NEW, FEED, RESIZE, CLOSE, STOP, RESET = 1, 2, 3, 4, 5, 6
# KEY (after NEW and RESET): ``data`` is the pane's mark key (spec/shell-integration.md,
# "Signed marks"): the replica acts only on the marks its shell signed, so its
# checkpoints carry no forged command.
KEY = 7
# Results from the worker. PROGRESS: every byte before ``seq`` was parsed
# (generation in ``cols``).
CHECKPOINT, REPLIES, FAILED, PROGRESS = 11, 12, 13, 14
DEAD = 15  # the worker itself is gone (not sent by it: noticed by the loop side)
_DEAD: Message = (DEAD, 0, 0, 0, 0, b"")

Message = tuple[int, int, int, int, int, bytes]
Deliver = Callable[[list[Message]], None]


# ---------------------------------------------------------------- the worker side


@dataclass
class _Replica:
    """One terminal's engine in the worker, with its checkpoint policy."""

    tid: int
    engine: object
    writer: object
    seq: int = 0
    checkpoint_seq: int = 0
    quiet_until: int = 0
    """Queries before this seq were seen before a reset: not answered twice."""
    failed: bool = False
    command_mark: bool = False
    """A command started or finished since the last checkpoint."""
    deferred: bool = False
    """A checkpoint is due but waits for a synchronized-output frame to end."""


@dataclass
class WorkerCore:
    """The replicas and what to do with each message (the same in a thread or a process)."""

    history: int
    compact_bytes: int
    hard_bytes: int
    replicas: dict[int, _Replica] = field(default_factory=dict)
    pending: dict[int, int] = field(default_factory=dict)
    """Messages per terminal taken from the transport but not handled yet."""
    gens: dict[int, int] = field(default_factory=dict)
    """Current generation per terminal. In a thread the loop sets it as soon as it
    restarts a replica, so the stale backlog is dropped unparsed."""
    deadlines: dict[int, float] = field(default_factory=dict)
    """Terminals with a synchronized-output frame open: when (``time.monotonic``, the
    engines' frame clock) it stops holding the screen (``expire``)."""

    def handle(self, msg: Message, out: list[Message]) -> None:
        from phux.engine import Terminal as Engine
        from phux.engine.checkpoint import Checkpointer

        kind, tid, seq, cols, rows, data = msg
        left = self.pending.get(tid, 1) - 1
        if left:
            self.pending[tid] = left
        else:
            self.pending.pop(tid, None)
        if kind in (NEW, RESET):
            # The clock stamps OSC 133 C/D marks: checkpoints carry when commands ran.
            new = Engine(cols, rows, history=self.history, clock=_ArrivalClock())
            fresh = _Replica(tid, new, Checkpointer())
            fresh.seq = fresh.checkpoint_seq = seq
            if data:
                fresh.quiet_until = int.from_bytes(data[:8], "little")
                self.gens[tid] = int.from_bytes(data[8:10], "little")
            self.replicas[tid] = fresh
            if len(data) > 10:  # re-seeded from a checkpoint: the state at ``seq``
                engine = fresh.engine
                assert isinstance(engine, Engine)
                try:
                    engine.feed(data[10:])
                except Exception as exc:
                    fresh.failed = True
                    out.append((FAILED, tid, seq, 0, 0, repr(exc).encode()))
                engine.take_replies()
                engine.take_events()
            return
        rep = self.replicas.get(tid)
        if rep is None or rep.failed:
            return
        if kind == KEY:
            engine = rep.engine
            assert isinstance(engine, Engine)
            engine.mark_key = data.decode("ascii", "replace")
            return
        gen = self.gens.get(tid, 0)
        if (kind == FEED and cols != gen) or (kind == RESIZE and _gen(data) != gen):
            return  # the backlog of a replica since restarted
        engine = rep.engine
        assert isinstance(engine, Engine)
        try:
            if kind == FEED:
                clock = engine.clock
                if isinstance(clock, _ArrivalClock):
                    clock.stamp = rows
                caught_up = tid not in self.pending
                start = _frame_start(data)
                if start >= 0:
                    # A synchronized-output frame opens here and is still open at the
                    # end: the state just before it is the last exact one to
                    # checkpoint (a bootstrap ending inside the frame then replays
                    # its opening, and shows the screen from before it).
                    self._feed(rep, engine, seq, data[:start], out)
                    if engine.frame_deadline is None:
                        self._checkpoint_if_due(rep, engine, caught_up, out)
                    seq, data = seq + start, data[start:]
                self._feed(rep, engine, seq, data, out)
                if caught_up:
                    out.append((PROGRESS, tid, rep.seq, gen, 0, b""))
                self._checkpoint_if_due(rep, engine, caught_up, out)
            elif kind == RESIZE:
                engine.resize(cols, rows)
            elif kind == CLOSE:
                # A closed terminal stays subscribable for a while: compact its end.
                if rep.seq > rep.checkpoint_seq:
                    self._checkpoint(rep, engine, out)
                out.append((PROGRESS, tid, rep.seq, gen, 0, b""))
                del self.replicas[tid]
                self.deadlines.pop(tid, None)
        except Exception as exc:  # a replica bug must not take the server down
            rep.failed = True
            out.append((FAILED, tid, rep.seq, 0, 0, repr(exc).encode()))

    def _feed(
        self, rep: _Replica, engine: Engine, seq: int, data: bytes, out: list[Message]
    ) -> None:
        from phux.engine import CommandFinished, CommandStarted

        engine.feed(data)
        rep.seq = seq + len(data)
        replies = engine.take_replies()
        if replies and rep.seq > rep.quiet_until:
            out.append((REPLIES, rep.tid, rep.seq, 0, 0, replies))
        for event in engine.take_events():
            if isinstance(event, CommandStarted | CommandFinished):
                rep.command_mark = True

    def _checkpoint_if_due(
        self, rep: _Replica, engine: Engine, caught_up: bool, out: list[Message]
    ) -> None:
        """Checkpoint if enough output came (or a command started or finished), unless a
        synchronized-output frame holds the screen: a checkpoint inside it would give a
        bootstrap the half-drawn screen. Then it waits until the frame ends, or until
        the frame no longer holds (``expire``), or for the journal's hard bound."""
        tail = rep.seq - rep.checkpoint_seq
        # A command's start or end is checkpointed once caught up, however little
        # output came with it: the checkpoint carries the times the replica stamped (a
        # journal tail carries none), for `history`.
        due = (caught_up and (tail >= self.compact_bytes or rep.command_mark)) or (
            tail >= self.hard_bytes
        )
        deadline = engine.frame_deadline
        if deadline is not None and rep.tid not in self.deadlines:
            # Looked at again when the bound passes, even with no more output: a frame
            # left open (a program killed mid-frame) must not hold bootstraps for good.
            self.deadlines[rep.tid] = deadline
        if due and (deadline is None or tail >= self.hard_bytes):
            self._checkpoint(rep, engine, out)
        elif due:
            rep.deferred = True

    def _checkpoint(self, rep: _Replica, engine: Engine, out: list[Message]) -> None:
        from phux.engine.checkpoint import Checkpointer

        writer = rep.writer
        assert isinstance(writer, Checkpointer)
        ck = writer.write(engine)
        rep.checkpoint_seq = rep.seq
        rep.command_mark = rep.deferred = False
        out.append((CHECKPOINT, rep.tid, rep.seq, engine.cols, engine.rows, ck))

    def next_due(self, now: float) -> float | None:
        """Seconds until a frame's bound passes (``expire``), None if none is open."""
        if not self.deadlines:
            return None
        return max(0.0, min(self.deadlines.values()) - now)

    def expire(self, now: float, out: list[Message]) -> None:
        """Frames whose bound passed by ``now`` no longer hold their screens: checkpoint
        (the live screen, without the frame) what waited for them, and any frame still
        open, so that bootstraps show what a terminal shows."""
        from phux.engine import Terminal as Engine

        for tid, when in list(self.deadlines.items()):
            if when > now:
                continue
            del self.deadlines[tid]
            rep = self.replicas.get(tid)
            if rep is None or rep.failed:
                continue
            engine = rep.engine
            assert isinstance(engine, Engine)
            later = engine.frame_deadline
            if later is not None:  # a newer frame holds the screen now
                self.deadlines[tid] = later
            elif (rep.deferred or engine.frame_pending) and rep.seq > rep.checkpoint_seq:
                try:
                    self._checkpoint(rep, engine, out)
                except Exception as exc:  # a replica bug must not take the server down
                    rep.failed = True
                    out.append((FAILED, tid, rep.seq, 0, 0, repr(exc).encode()))

    def note(self, msg: Message) -> None:
        tid = msg[1]
        self.pending[tid] = self.pending.get(tid, 0) + 1

    def coalesce(self, msgs: list[Message]) -> list[Message]:
        """``msgs`` with each terminal's consecutive output chunks joined (up to
        four times ``hard_bytes``, so checkpoints still come at least that often).

        The engine skips drawing the rows of one feed that scroll out of its
        history (``phux.engine._bulk``), so a replica behind in a flood catches
        up fastest on big feeds: each feed still draws the rows it keeps, and
        each checkpoint encodes them, once per feed. Chunks on either side of
        a restart's ``quiet_until`` stay apart: answers before it are not sent
        again.
        """
        out: list[Message] = []
        parts: dict[int, list[bytes]] = {}  # index in out -> the chunks joined there
        stamps: dict[int, int] = {}  # index in out -> the last joined chunk's stamp
        open_: dict[int, int] = {}  # terminal -> index in out of its last FEED
        quiet = {tid: rep.quiet_until for tid, rep in self.replicas.items()}
        limit = 4 * self.hard_bytes
        for msg in msgs:
            kind, tid, seq, gen, stamp, data = msg
            if kind != FEED:
                open_.pop(tid, None)
                if kind in (NEW, RESET):
                    quiet[tid] = int.from_bytes(data[:8], "little") if data else 0
                out.append(msg)
                continue
            i = open_.get(tid)
            if i is not None:
                _k, _t, start, g, size, _d = out[i]
                end = start + size
                q = quiet.get(tid, 0)
                if (
                    g == gen
                    and end == seq
                    and size + len(data) <= limit
                    and not start < q < seq + len(data)
                ):
                    parts[i].append(data)
                    stamps[i] = stamp
                    out[i] = (FEED, tid, start, gen, size + len(data), b"")
                    continue
            open_[tid] = len(out)
            parts[len(out)] = [data]
            stamps[len(out)] = stamp
            # (rows, unused by FEED, holds the joined size until the join below)
            out.append((FEED, tid, seq, gen, len(data), b""))
        for i, chunks in parts.items():
            kind, tid, seq, gen, _size, _ = out[i]
            joined = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            out[i] = (kind, tid, seq, gen, stamps[i], joined)
        return out


_BSU, _ESU = b"\x1b[?2026h", b"\x1b[?2026l"


def _frame_start(data: bytes) -> int:
    """Where in ``data`` a synchronized-output frame opens that its end leaves open
    (the first ``CSI ? 2026 h`` after the last ``CSI ? 2026 l``), or -1. Programs
    write these two exact forms; one cut by a chunk's end is not found (the
    checkpoint then waits for the frame's end)."""
    last = data.rfind(_BSU)
    if last < 0:  # (most output: one scan)
        return -1
    end = data.rfind(_ESU)
    if end > last:
        return -1
    return data.find(_BSU, end + 1)


def _key_message(term: Terminal) -> Message:
    return (KEY, term.id, 0, 0, 0, term.metadata.get(KEY_METADATA, b""))


def _unix_ms() -> int:
    return time.time_ns() // 1_000_000


def _stamp() -> int:
    """The low 16 bits of now in unix ms (a FEED's ``rows``)."""
    return _unix_ms() & 0xFFFF


class _ArrivalClock:
    """A replica's clock: the time the server read the bytes being fed, from their
    FEED's 16-bit stamp (the latest time not after now with those low bits; a
    replica over 65 s behind would be a multiple of 65.5 s early)."""

    __slots__ = ("stamp",)

    def __init__(self) -> None:
        self.stamp: int | None = None

    def __call__(self) -> int:
        now = _unix_ms()
        if self.stamp is None:
            return now
        return now - ((now - self.stamp) & 0xFFFF)


def _gen(data: bytes) -> int:
    return int.from_bytes(data[:2], "little") if data else 0


# ---------------------------------------------------------------- transports


_SWITCH_INTERVAL = 0.0005


class _ThreadWorker:
    """Replicas in a thread of the server process: no copies, shares the GIL."""

    def __init__(self, core: WorkerCore, deliver: Deliver, token: trio.lowlevel.TrioToken) -> None:
        self._core = core
        self._deliver = deliver
        self._token = token
        self._queue: queue.SimpleQueue[Message] = queue.SimpleQueue()
        # The parsing thread holds the GIL between forced switches; the loop takes it
        # back after every system call, so a shorter interval is shorter loop stalls.
        sys.setswitchinterval(min(sys.getswitchinterval(), _SWITCH_INTERVAL))
        self._thread = threading.Thread(target=self._run, name="phux-replicas", daemon=True)
        self._thread.start()

    def send(self, msg: Message) -> None:
        self._queue.put(msg)

    def stop(self) -> None:
        self._queue.put((STOP, 0, 0, 0, 0, b""))

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException:
            log.exception("replica thread failed")
            self._post([_DEAD])

    def _serve(self) -> None:
        core = self._core
        get = self._queue.get
        get_nowait = self._queue.get_nowait
        local: deque[Message] = deque()
        while True:
            try:
                local.append(get(timeout=core.next_due(time.monotonic())))
            except queue.Empty:  # a frame's bound passed with no more output
                expired: list[Message] = []
                core.expire(time.monotonic(), expired)
                if expired:
                    self._post(expired)
                continue
            with contextlib.suppress(queue.Empty):
                while len(local) < 4096:
                    local.append(get_nowait())
            local = deque(core.coalesce(list(local)))
            for msg in local:
                core.note(msg)
            results: list[Message] = []
            while local:
                msg = local.popleft()
                if msg[0] == STOP:
                    return
                core.handle(msg, results)
                if len(results) >= 8:
                    self._post(results)
                    results = []
            core.expire(time.monotonic(), results)
            if results:
                self._post(results)

    def _post(self, results: list[Message]) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._deliver, results)


_HEADER = struct.Struct("<BIQHHI")


def _frame(msg: Message) -> bytes:
    kind, tid, seq, cols, rows, data = msg
    return _HEADER.pack(kind, tid, seq, cols, rows, len(data)) + data


def _parse(buf: bytearray, out: list[Message]) -> None:
    """Move complete frames from the front of ``buf`` into ``out``."""
    pos = 0
    size = _HEADER.size
    n = len(buf)
    while n - pos >= size:
        kind, tid, seq, cols, rows, length = _HEADER.unpack_from(buf, pos)
        if n - pos - size < length:
            break
        start = pos + size
        out.append((kind, tid, seq, cols, rows, bytes(buf[start : start + length])))
        pos = start + length
    del buf[:pos]


class _ProcessWorker:
    """Replicas in one helper process for all terminals: a second core, at the price
    of copying every byte through a pipe (and the checkpoints back)."""

    def __init__(self, core: WorkerCore, deliver: Deliver, nursery: trio.Nursery) -> None:
        self._deliver = deliver
        args = [str(core.history), str(core.compact_bytes), str(core.hard_bytes)]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "phux.server.replica", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in = self._proc.stdin.fileno()
        self._out = self._proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._pending: deque[tuple[int, int, bytes, bytes]] = deque()
        """(terminal, kind, header, data) not yet written to the pipe."""
        self._wake = trio.Event()
        self._stopping = False
        self._scope = trio.CancelScope()
        nursery.start_soon(self._run)

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def _run(self) -> None:
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._writer)
                    nursery.start_soon(self._reader)
        finally:
            # Reap it (no zombie) and close our ends of its pipes, whatever ended us.
            with contextlib.suppress(OSError):
                self._proc.kill()
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await trio.to_thread.run_sync(self._proc.wait)
            for pipe in (self._proc.stdin, self._proc.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()

    def send(self, msg: Message) -> None:
        kind, tid, seq, cols, rows, data = msg
        self._pending.append((tid, kind, _HEADER.pack(kind, tid, seq, cols, rows, len(data)), data))
        self._wake.set()

    def _gone(self, why: str) -> None:
        if not self._stopping:
            self._stopping = True
            self._scope.cancel()
            log.error("replica process %d gone: %s", self._proc.pid, why)
            self._deliver([_DEAD])

    def stop(self) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):
            self._proc.kill()
        with contextlib.suppress(Exception):
            self._proc.wait(2)

    async def _writer(self) -> None:
        """Write queued frames with as few system calls as possible (no joining copies)."""
        fd = self._in
        while True:
            while not (pending := self._pending):
                self._wake = trio.Event()
                await self._wake.wait()
            buffers: list[bytes] = []
            for _ in range(min(len(pending), 256)):
                _tid, _kind, header, data = pending.popleft()
                buffers.append(header)
                if data:
                    buffers.append(data)
            while buffers:
                try:
                    written = os.writev(fd, buffers)
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(fd)
                    continue
                except OSError as exc:
                    self._gone(f"cannot write to it: {exc}")
                    return
                while buffers and written >= len(buffers[0]):
                    written -= len(buffers[0])
                    buffers.pop(0)
                if written:
                    buffers[0] = buffers[0][written:]
            await trio.lowlevel.checkpoint()

    async def _reader(self) -> None:
        buf = bytearray()
        while True:
            await trio.lowlevel.wait_readable(self._out)
            try:
                data = os.read(self._out, 1 << 20)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                self._gone("it exited")
                return
            buf += data
            results: list[Message] = []
            _parse(buf, results)
            if results:
                self._deliver(results)


# What the helper process reads before parsing: a backlog this big is parsed in
# few feeds, most of whose rows the engine skips in a flood (see coalesce).
_BATCH_BYTES = 16 << 20
# A read this big found the pipe full: the loop has more queued, so the worker
# waits this long for each refill instead of parsing a pipe's worth at a time
# (which is too little to skip anything).
_PIPE_BYTES = 1 << 20
_FULL_READ = 60 * 1024
_REFILL_WAIT = 0.005


WORKER_NICE = 10
"""The helper process parses at this nice value: checkpoints are background work, and
on a busy machine the loop (a person's echo, every client's reply) and the programs
come first; idle cores it still takes whole. Measured with 4 terminals flooding on the
2-core machine at load 8-9 (a bare client's echo, 3 runs each): p50 14-16 ms, p99
57-69 ms, against p50 20-36 ms, p99 70-86 ms at nice 0. A replica that falls behind
makes its terminal's reader wait (``replica_lag_bytes``), as before."""


def worker_main(argv: list[str]) -> None:
    """The helper process: frames in on stdin, results out on stdout, until stdin ends
    (the server closed it, or died). Ctrl-C at a foreground server is the server's to
    handle, not ours."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    core = WorkerCore(int(argv[0]), int(argv[1]), int(argv[2]))
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    with contextlib.suppress(OSError, AttributeError):  # Linux only; the default is 64 KiB
        import fcntl

        fcntl.fcntl(fd_in, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    buf = bytearray()
    local: list[Message] = []
    while True:
        results: list[Message] = []
        wait_for = core.next_due(time.monotonic())
        if wait_for is not None and not select.select([fd_in], [], [], wait_for)[0]:
            core.expire(time.monotonic(), results)  # a frame's bound passed, no more output
            _write_results(fd_out, results)
            continue
        data = os.read(fd_in, 1 << 20)
        if not data:
            return
        buf += data
        wait = _REFILL_WAIT if len(data) >= _FULL_READ else 0.0
        while len(buf) < _BATCH_BYTES and select.select([fd_in], [], [], wait)[0]:
            more = os.read(fd_in, 1 << 20)
            if not more:
                break
            buf += more
            wait = _REFILL_WAIT if len(more) >= _FULL_READ else 0.0
        _parse(buf, local)
        local[:] = core.coalesce(local)
        for msg in local:
            core.note(msg)
        for msg in local:
            core.handle(msg, results)
        local.clear()
        core.expire(time.monotonic(), results)
        _write_results(fd_out, results)


def _write_results(fd_out: int, results: list[Message]) -> None:
    if results:
        payload = b"".join(map(_frame, results))
        view = memoryview(payload)
        while view:
            view = view[os.write(fd_out, view) :]


# ---------------------------------------------------------------- the loop side


@dataclass(eq=False)
class _Link:
    """The loop's view of one terminal's replica."""

    term: Terminal
    gen: int = 0
    """Generation of the replica's messages (RESET starts a new one)."""
    fed: int = 0
    """Seq after the last byte sent to the replica."""
    done: int = 0
    """Seq after the last byte the replica (of this generation) reported parsed."""
    catch_up: int = 0
    """Not 0: the reader waits (journal budget) until the replica has parsed to here."""


_PUBLISH_EVERY = 0.05
"""Seconds between two writes of ``phux.server.replica_behind`` while output flows (and
at most how stale the written value is)."""

RESTART_WINDOW_S = 60.0
MAX_RESTARTS = 5
"""More worker deaths than this within the window and it is not restarted again."""


class ReplicaHost:
    """The server's replicas: feeds them from the loop and applies what they produce."""

    def __init__(self, config: ServerConfig, nursery: trio.Nursery) -> None:
        self.config = config
        self.mode = config.replica_mode
        self._nursery = nursery
        self._links: dict[int, _Link] = {}
        # In a flood, checkpoint once per journal bound: often enough that the
        # journal (and so memory) stays near the bound, rarely enough that
        # writing checkpoints costs little next to parsing.
        hard = max(1, config.journal_bytes)
        self._core = WorkerCore(config.history_lines, min(config.compact_bytes, hard), hard)
        self._worker: _ThreadWorker | _ProcessWorker | None = None
        self.on_helpers: Callable[[list[int]], None] | None = None
        """Told the helper processes' pids when they change (``phux status``'s memory)."""
        self.checkpoints = 0
        self.replies = 0
        self.pauses = 0
        self.budget_pauses = 0
        """Times a terminal's reader waited for its replica to compact its journal."""
        self.worker_restarts = 0
        self._deaths: list[float] = []
        """Times a terminal's reader waited for its replica (it was too far behind)."""
        self.publish: Callable[[str, str], None] | None = None
        """Publishes a server fact (``ServerState.set_fact``): ``replica_behind``."""
        self.behind = 0
        """Output bytes sent to the replicas and not yet reported parsed, all terminals."""
        self._published: int | None = None
        self._publish_due = 0.0
        """``trio.current_time()`` from which the next paced write may go."""
        self._publish_waiting = False
        """A task waits for ``_publish_due`` to write what the pace held back."""

    @property
    def enabled(self) -> bool:
        return self.mode in ("thread", "process") and self.config.journal_bytes > 0

    def helper_pids(self) -> list[int]:
        """The replica helper processes running now (none with replicas in a thread)."""
        return [self._worker.pid] if isinstance(self._worker, _ProcessWorker) else []

    def _start(self) -> _ThreadWorker | _ProcessWorker:
        if self._worker is None:
            if self.mode == "process":
                self._worker = _ProcessWorker(self._core, self._deliver, self._nursery)
                if self.on_helpers is not None:
                    self.on_helpers([self._worker.pid])
            else:
                token = trio.lowlevel.current_trio_token()
                self._worker = _ThreadWorker(self._core, self._deliver, token)
        return self._worker

    def add(self, term: Terminal) -> None:
        """Start replicating ``term`` (from its first byte)."""
        if not self.enabled:
            return
        worker = self._start()
        self._links[term.id] = _Link(term)
        cols, rows = term.size
        worker.send((NEW, term.id, 0, cols, rows, b""))
        worker.send(_key_message(term))
        term.journal.compacting = True
        term.output_hooks.append(self._on_output)
        term.resize_hooks.append(self._on_resize)
        term.close_hooks.append(self._on_closed)

    def _on_output(self, term: Terminal, chunk: Chunk) -> None:
        link = self._links.get(term.id)
        worker = self._worker
        if link is None or worker is None:
            return
        worker.send((FEED, term.id, chunk.seq, link.gen, _stamp(), chunk.data))
        self.behind += chunk.end - link.fed
        link.fed = chunk.end
        self._publish_behind(paced=True)
        if link.fed - link.done > self.config.replica_lag_bytes and not term.paused_for("lag"):
            # Never drop what the replica has not parsed: a replica restarted mid-stream
            # would checkpoint a wrong screen for good. The program waits instead.
            self.pauses += 1
            term.pause_reading("lag")

    def catch_up(self, term: Terminal) -> bool:
        """The journals are over the server's budget: pause ``term``'s reader until its
        replica has parsed all it was fed, when the replica checkpoints and the journal
        before that point goes (the journal's bytes never go otherwise: a bootstrap must
        not start mid-stream). False if it is caught up already, or waits already."""
        link = self._links.get(term.id)
        if link is None or link.catch_up or link.done >= link.fed:
            return False
        link.catch_up = link.fed
        self.budget_pauses += 1
        term.pause_reading("budget")
        return True

    def _progress(self, link: _Link, seq: int) -> None:
        if seq > link.done:
            self.behind -= seq - link.done
            link.done = seq
            self._publish_behind(paced=True)
        term = link.term
        lag = link.fed - link.done
        if term.paused_for("lag") and lag <= self.config.replica_lag_bytes // 2:
            term.resume_reading("lag")
        if link.catch_up and link.done >= link.catch_up:
            link.catch_up = 0
            term.resume_reading("budget")

    def _on_resize(self, term: Terminal, change: SizeChange) -> None:
        link = self._links.get(term.id)
        if link is not None and self._worker is not None:
            gen = link.gen.to_bytes(2, "little")
            self._worker.send((RESIZE, term.id, change.seq, change.cols, change.rows, gen))

    def _on_closed(self, term: Terminal) -> None:
        if self._worker is not None and term.id in self._links:
            self._worker.send((CLOSE, term.id, 0, 0, 0, b""))

    def _dead(self) -> None:
        """The worker is gone (killed, crashed): start a new one and re-seed every live
        terminal's replica from its newest checkpoint plus the journal after it, so
        checkpoints and answers to queries go on from a right state. A worker that keeps
        dying is given up on: terminals go back to plain byte-bounded journals."""
        self._worker = None
        now = trio.current_time()
        self._deaths = [t for t in self._deaths if now - t < RESTART_WINDOW_S]
        self._deaths.append(now)
        if len(self._deaths) > MAX_RESTARTS:
            log.error(
                "replicas died %d times in %.0fs: not restarted; no more checkpoints or "
                "answers to terminal queries",
                len(self._deaths),
                RESTART_WINDOW_S,
            )
            self._give_up()
            return
        self.worker_restarts += 1
        core = self._core  # a thread's core may hold the dead one's half-done state
        self._core = WorkerCore(core.history, core.compact_bytes, core.hard_bytes)
        worker = self._start()
        for link in list(self._links.values()):
            if link.term.closed:  # nothing more will come: its journal stays as it is
                del self._links[link.term.id]
                continue
            self._reseed(worker, link)
        self._publish_behind(recount=True)
        log.error(
            "replicas restarted (%s, restart %d): %d terminals re-seeded from their checkpoints",
            f"process {worker.pid}" if isinstance(worker, _ProcessWorker) else "thread",
            self.worker_restarts,
            len(self._links),
        )

    def _reseed(self, worker: _ThreadWorker | _ProcessWorker, link: _Link) -> None:
        from phux.server.journal import Chunk as JournalChunk

        term = link.term
        journal = term.journal
        boot = journal.bootstrap()  # exact: the newest checkpoint and everything after it
        link.gen = (link.gen + 1) & 0xFFFF
        gen = link.gen.to_bytes(2, "little")
        # Queries before next_seq were answered by the old helper, or were lost with it:
        # answering them now could type a second answer into the program.
        head = journal.next_seq.to_bytes(8, "little") + gen + (boot.checkpoint or b"")
        worker.send((RESET, term.id, boot.start_seq, boot.cols, boot.rows, head))
        worker.send(_key_message(term))
        for item in boot.items:
            if isinstance(item, JournalChunk):
                worker.send((FEED, term.id, item.seq, link.gen, _stamp(), item.data))
            else:
                worker.send((RESIZE, term.id, item.seq, item.cols, item.rows, gen))
        link.fed = journal.next_seq
        link.done = boot.start_seq
        self._publish_behind(recount=True)

    def _give_up(self) -> None:
        self.mode = "failed"
        if self.on_helpers is not None:
            self.on_helpers([])
        for link in self._links.values():
            link.term.replica_failed()
        self._links.clear()
        self._publish_behind(recount=True)

    def start_publishing(self, publish: Callable[[str, str], None]) -> None:
        """Publish ``replica_behind`` through ``publish`` from now on (0 at once, if
        replicas are on, so that the first terminal's start changes nothing)."""
        self.publish = publish
        if self.enabled:
            self._publish_behind()

    def _publish_behind(self, recount: bool = False, paced: bool = False) -> None:
        """Publish ``phux.server.replica_behind`` (spec/L3.md §3) if it changed. Paced
        (output and progress): at most every ``_PUBLISH_EVERY`` seconds, so a reader sees
        a flood's lag without a stream of metadata changes, but a change the pace holds
        back is written when its time comes, so the value is never staler than that
        (output that stops just after a write, then a replica that reports no progress,
        once left it wrong for good); a drop to 0 (caught up) goes at once."""
        if recount:  # a terminal's link went or was reset: its part goes with it
            self.behind = sum(link.fed - link.done for link in self._links.values())
        if self.publish is None or self.behind == self._published:
            return
        now = trio.current_time()
        if paced and self.behind and now < self._publish_due:
            if not self._publish_waiting:
                # One waiter at a time, whatever the number of chunks held back.
                self._publish_waiting = True
                self._nursery.start_soon(self._publish_when_due)
            return
        self._published = self.behind
        self._publish_due = now + _PUBLISH_EVERY
        self.publish("replica_behind", str(self.behind))

    async def _publish_when_due(self) -> None:
        try:
            # A write meanwhile (a drop to 0, a recount) moves the time on.
            while trio.current_time() < self._publish_due:
                await trio.sleep_until(self._publish_due)
        finally:
            self._publish_waiting = False
        self._publish_behind(paced=True)

    def forget(self, tid: int) -> None:
        self._links.pop(tid, None)
        self._publish_behind(recount=True)

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def _deliver(self, results: list[Message]) -> None:
        """On the loop: apply checkpoints, write answers, note progress and failures.

        Checkpoints and answers of a replica since restarted are still right (it had
        parsed everything before them); a checkpoint older than the journal's start
        is simply not used."""
        for kind, tid, seq, cols, rows, data in results:
            if kind == DEAD:
                self._dead()
                return
            link = self._links.get(tid)
            if link is None:
                continue
            term = link.term
            if kind == PROGRESS:
                if cols == link.gen:
                    self._progress(link, seq)
            elif kind == CHECKPOINT:
                self.checkpoints += 1
                term.apply_checkpoint(seq, cols, rows, data)
                self._progress(link, seq)
            elif kind == REPLIES:
                self.replies += 1
                term.queue_reply(data)
            elif kind == FAILED:
                log.error("terminal %d: replica failed at seq %d: %s", tid, seq, data.decode())
                self._links.pop(tid, None)
                term.replica_failed()
                self._publish_behind(recount=True)


if __name__ == "__main__":
    worker_main(sys.argv[1:])
