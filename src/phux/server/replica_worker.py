"""The replica helper's side: the engines, their checkpoints and answers (no trio).

``phux.server.replica`` runs this in a helper process (``python -m
phux.server.replica_worker``) or a thread of the server; its docstring says
what replicas are for. This module imports neither trio nor anything of the
server's loop, nor dataclasses (inspect, ast, dis and tokenize with it, ~1 MB),
so the helper process is an interpreter with the engine and little else (trio
alone is ~15 MB of a process's RSS: ARCHITECTURE.md, "Memory").

**Idle replicas are put away.** A replica that has had nothing to do for
``idle_s`` seconds writes a checkpoint (sent as usual, so its journal compacts
too), keeps it zlib-compressed, and drops its engine; the next message for
that terminal rebuilds the engine from the checkpoint first, as a replica
re-seeded after a helper's death is. A checkpoint recreates everything that
goes into later checkpoints and into answers to terminal queries (the cursor,
modes, margins, colours, titles, shell marks and the bytes of an unfinished
sequence), so neither changes; an idle shell's replica shrinks from an engine
(~20 KiB, plus its history rows) to its compressed checkpoint.
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import sys
import time
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phux.engine import Terminal as Engine
    from phux.engine.checkpoint import Checkpointer

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
# IDLE: every replica is put away (or has no engine yet) and nothing came for
# ``idle_s``; ``seq`` is how many messages the worker had received then, so the
# loop can tell that none is in flight and let the helper go (phux.server.replica).
IDLE = 16

Message = tuple[int, int, int, int, int, bytes]

IDLE_S = 5.0
"""Seconds without a message after which a replica is put away (``ServerConfig.replica_idle_s``)."""


# ---------------------------------------------------------------- the worker side


class _Replica:
    """One terminal's engine in the worker (or, put away, its checkpoint), with its
    checkpoint policy."""

    __slots__ = (
        "active_at",
        "checkpoint_seq",
        "cols",
        "command_mark",
        "deferred",
        "engine",
        "failed",
        "mark_key",
        "parked",
        "quiet_until",
        "rows",
        "seq",
        "tid",
        "writer",
    )

    def __init__(self, tid: int, cols: int, rows: int) -> None:
        self.tid = tid
        self.cols = cols
        self.rows = rows
        """The size to build the engine at (while it is put away, or not built yet)."""
        self.engine: Engine | None = None
        """None while put away (see ``parked``)."""
        self.writer: Checkpointer | None = None
        self.parked: bytes | None = None
        """While put away: the checkpoint at ``seq``, zlib-compressed."""
        self.mark_key = ""
        self.seq = 0
        self.checkpoint_seq = 0
        self.quiet_until = 0
        """Queries before this seq were seen before a reset: not answered twice."""
        self.failed = False
        self.command_mark = False
        """A command started or finished since the last checkpoint."""
        self.active_at = 0.0
        """When a message for it was last handled (monotonic seconds)."""
        self.deferred = False
        """A checkpoint is due but waits for a synchronized-output frame to end."""


class WorkerCore:
    """The replicas and what to do with each message (the same in a thread or a process)."""

    def __init__(
        self, history: int, compact_bytes: int, hard_bytes: int, idle_s: float = IDLE_S
    ) -> None:
        self.history = history
        self.compact_bytes = compact_bytes
        self.hard_bytes = hard_bytes
        self.idle_s = idle_s
        """A replica idle this long is put away (``put_away_idle``); 0: never."""
        self.replicas: dict[int, _Replica] = {}
        self.pending: dict[int, int] = {}
        """Messages per terminal taken from the transport but not handled yet."""
        self.gens: dict[int, int] = {}
        """Current generation per terminal. In a thread the loop sets it as soon as it
        restarts a replica, so the stale backlog is dropped unparsed."""
        self.deadlines: dict[int, float] = {}
        """Terminals with a synchronized-output frame open: when (``time.monotonic``, the
        engines' frame clock) it stops holding the screen (``expire``)."""
        self.live: set[int] = set()
        """Terminals whose replica has an engine (the ones ``put_away_idle`` looks at)."""
        self.received = 0
        """Messages taken from the transport so far (as sent: before ``coalesce``)."""
        self.active_at = time.monotonic()
        """When the last message was handled."""
        self.idle_told = False
        """IDLE was reported, and nothing came since."""

    def handle(self, msg: Message, out: list[Message]) -> None:
        kind, tid, seq, cols, rows, data = msg
        self.active_at = time.monotonic()
        self.idle_told = False
        left = self.pending.get(tid, 1) - 1
        if left:
            self.pending[tid] = left
        else:
            self.pending.pop(tid, None)
        if kind in (NEW, RESET):
            fresh = _Replica(tid, cols, rows)
            fresh.seq = fresh.checkpoint_seq = seq
            fresh.active_at = time.monotonic()
            if data:
                fresh.quiet_until = int.from_bytes(data[:8], "little")
                self.gens[tid] = int.from_bytes(data[8:10], "little")
            self.replicas[tid] = fresh
            self.live.discard(tid)
            try:  # (re-seeded: from a checkpoint, the state at ``seq``)
                self._build(fresh, data[10:])
            except Exception as exc:
                fresh.failed = True
                out.append((FAILED, tid, seq, 0, 0, repr(exc).encode()))
            return
        rep = self.replicas.get(tid)
        if rep is None or rep.failed:
            return
        rep.active_at = time.monotonic()
        if kind == KEY:
            rep.mark_key = data.decode("ascii", "replace")
            if rep.engine is not None:
                rep.engine.mark_key = rep.mark_key
            return
        gen = self.gens.get(tid, 0)
        if (kind == FEED and cols != gen) or (kind == RESIZE and _gen(data) != gen):
            return  # the backlog of a replica since restarted
        if kind == CLOSE and rep.engine is None and rep.seq == rep.checkpoint_seq:
            out.append((PROGRESS, tid, rep.seq, gen, 0, b""))  # nothing since put away
            del self.replicas[tid]
            return
        try:
            engine = rep.engine if rep.engine is not None else self._unpark(rep)
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
                self.live.discard(tid)
                self.deadlines.pop(tid, None)
        except Exception as exc:  # a replica bug must not take the server down
            rep.failed = True
            rep.engine = rep.writer = None
            self.live.discard(tid)
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

    def _checkpoint(self, rep: _Replica, engine: Engine, out: list[Message]) -> bytes:
        assert rep.writer is not None
        ck = rep.writer.write(engine)
        rep.checkpoint_seq = rep.seq
        rep.command_mark = rep.deferred = False
        out.append((CHECKPOINT, rep.tid, rep.seq, engine.cols, engine.rows, ck))
        return ck

    def next_due(self, now: float) -> float | None:
        """Seconds until a frame's bound passes (``expire``), None if none is open."""
        if not self.deadlines:
            return None
        return max(0.0, min(self.deadlines.values()) - now)

    def wait_s(self, now: float) -> float | None:
        """How long the transport may wait for messages before ``expire`` and
        ``put_away_idle`` are due (None: for good)."""
        waits = [w for w in (self.next_due(now), self.idle_due()) if w is not None]
        return min(waits) if waits else None

    def expire(self, now: float, out: list[Message]) -> None:
        """Frames whose bound passed by ``now`` no longer hold their screens: checkpoint
        (the live screen, without the frame) what waited for them, and any frame still
        open, so that bootstraps show what a terminal shows."""
        for tid, when in list(self.deadlines.items()):
            if when > now:
                continue
            del self.deadlines[tid]
            rep = self.replicas.get(tid)
            if rep is None or rep.failed or rep.engine is None:
                continue
            engine = rep.engine
            later = engine.frame_deadline
            if later is not None:  # a newer frame holds the screen now
                self.deadlines[tid] = later
            elif (rep.deferred or engine.frame_pending) and rep.seq > rep.checkpoint_seq:
                try:
                    self._checkpoint(rep, engine, out)
                except Exception as exc:  # a replica bug must not take the server down
                    rep.failed = True
                    out.append((FAILED, tid, rep.seq, 0, 0, repr(exc).encode()))

    def _build(self, rep: _Replica, checkpoint: bytes) -> Engine:
        """A new engine for ``rep`` at its size, in the state ``checkpoint`` recreates."""
        from phux.engine import Terminal as EngineClass
        from phux.engine.checkpoint import Checkpointer

        # The clock stamps OSC 133 C/D marks: checkpoints carry when commands ran.
        engine = EngineClass(rep.cols, rep.rows, history=self.history, clock=_ArrivalClock())
        rep.engine, rep.writer = engine, Checkpointer()
        self.live.add(rep.tid)
        if checkpoint:
            engine.feed(checkpoint)
            engine.take_replies()  # (answered, if ever, when first fed)
            engine.take_events()
        engine.mark_key = rep.mark_key
        return engine

    def _unpark(self, rep: _Replica) -> Engine:
        parked, rep.parked = rep.parked, None
        return self._build(rep, zlib.decompress(parked) if parked else b"")

    def idle_due(self) -> float | None:
        """Seconds until the next replica is due to be put away, or IDLE to be told
        (None: neither will be)."""
        if not self.idle_s:
            return None
        if self.live:
            first = min(self.replicas[tid].active_at for tid in self.live)
        elif not self.idle_told:
            first = self.active_at
        else:
            return None
        return max(0.0, first + self.idle_s - time.monotonic())

    def put_away_idle(self, out: list[Message]) -> None:
        """Put away every replica idle for ``idle_s``: checkpoint it (sent, so that its
        journal compacts too), keep the checkpoint compressed, drop the engine. The
        next message for it builds the engine again from the checkpoint first."""
        now = time.monotonic()
        for tid in list(self.live):
            rep = self.replicas.get(tid)
            if rep is None or rep.engine is None or rep.failed:
                self.live.discard(tid)
                continue
            if now - rep.active_at < self.idle_s or tid in self.pending or tid in self.deadlines:
                continue  # (a frame open: its checkpoint waits for ``expire``)
            engine = rep.engine
            try:
                if rep.seq > rep.checkpoint_seq:
                    ck = self._checkpoint(rep, engine, out)
                else:
                    assert rep.writer is not None
                    ck = rep.writer.write(engine)
            except Exception as exc:
                rep.failed = True
                out.append((FAILED, tid, rep.seq, 0, 0, repr(exc).encode()))
                ck = b""
            rep.cols, rep.rows = engine.cols, engine.rows
            rep.parked = zlib.compress(ck, 1) if not rep.failed else None
            rep.engine = rep.writer = None
            self.live.discard(tid)
        if not self.live and not self.idle_told and now - self.active_at >= self.idle_s:
            self.idle_told = True
            out.append((IDLE, 0, self.received, 0, 0, b""))
        if not self.live and not self.idle_told and now - self.active_at >= self.idle_s:
            self.idle_told = True
            out.append((IDLE, 0, self.received, 0, 0, b""))

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


def _unix_ms() -> int:
    return time.time_ns() // 1_000_000


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
    core = WorkerCore(int(argv[0]), int(argv[1]), int(argv[2]), float(argv[3]))
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    with contextlib.suppress(OSError, AttributeError):  # Linux only; the default is 64 KiB
        import fcntl

        fcntl.fcntl(fd_in, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    buf = bytearray()
    local: list[Message] = []
    while True:
        results: list[Message] = []
        wait_for = core.wait_s(time.monotonic())
        if wait_for is not None and not select.select([fd_in], [], [], wait_for)[0]:
            # A frame's bound passed with no more output, or idle replicas are due.
            core.expire(time.monotonic(), results)
            core.put_away_idle(results)
            _write_all(fd_out, results)
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
        core.received += len(local)
        local[:] = core.coalesce(local)
        for msg in local:
            core.note(msg)
        for msg in local:
            core.handle(msg, results)
        local.clear()
        core.expire(time.monotonic(), results)
        _write_all(fd_out, results)


def _write_all(fd: int, results: list[Message]) -> None:
    if results:
        view = memoryview(b"".join(map(_frame, results)))
        while view:
            view = view[os.write(fd, view) :]


if __name__ == "__main__":
    worker_main(sys.argv[1:])
