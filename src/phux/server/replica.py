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

**Idle, they cost next to nothing** (ARCHITECTURE.md, "Memory"). A replica
with nothing to do for ``replica_idle_s`` (5 s) checkpoints, keeps the
checkpoint compressed and drops its engine (``phux.server.replica_worker``);
when all are put away the helper says IDLE, and if nothing was sent to it
since, the loop lets it go. The next output or resize starts a helper again
and re-seeds that terminal's replica from its journal (``_reseed``: the newest
checkpoint and what follows, as after a helper's death), answering no query
twice. Checkpoints and answers stay exact: a checkpoint recreates all that
goes into them.

Thread or process (``ServerConfig.replica_mode``, ``$PHUX_REPLICAS``)? Both, by
default ("auto"): one helper process for all terminals while output is heavy, a
thread of the server while it is light (``AUTO_THREAD_BYTES``). Measured with
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
one interpreter (about 15 MB: the helper runs ``phux.server.replica_worker``,
which imports no trio) however many terminals there are. But that interpreter
is a third of an active terminal's fixed cost (ARCHITECTURE.md, "Memory"),
and a shell printing now and then costs a thread next to nothing: so a thread
until a second brings more than ``AUTO_THREAD_BYTES``, then the helper
(``_move_to_a_process``) until it is let go idle. The thread mode alone
remains for platforms or tests where a helper process is unwelcome.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from phux.server.log import log
from phux.server.replica_worker import (
    _HEADER,
    CHECKPOINT,
    CLOSE,
    DEAD,
    FAILED,
    FEED,
    IDLE,
    KEY,
    NEW,
    PROGRESS,
    REPLIES,
    RESET,
    RESIZE,
    STOP,
    Message,
    WorkerCore,
    _parse,
    _unix_ms,
)
from phux.signed_marks import KEY_METADATA

if TYPE_CHECKING:
    from phux.server.config import ServerConfig
    from phux.server.journal import Chunk, SizeChange
    from phux.server.terminal import Terminal

_DEAD: Message = (DEAD, 0, 0, 0, 0, b"")
Deliver = Callable[[list[Message]], None]


def _key_message(term: Terminal) -> Message:
    return (KEY, term.id, 0, 0, 0, term.metadata.get(KEY_METADATA, b""))


def _stamp() -> int:
    """The low 16 bits of now in unix ms (a FEED's ``rows``)."""
    return _unix_ms() & 0xFFFF


# ---------------------------------------------------------------- transports


_SWITCH_INTERVAL = 0.0005


class _ThreadWorker:
    """Replicas in a thread of the server process: no copies, shares the GIL."""

    def __init__(self, core: WorkerCore, deliver: Deliver, token: trio.lowlevel.TrioToken) -> None:
        self._core = core
        self._deliver = deliver
        self._token = token
        self._queue: queue.SimpleQueue[Message] = queue.SimpleQueue()

    def start(self) -> None:
        # The parsing thread holds the GIL between forced switches; the loop takes it
        # back after every system call, so a shorter interval is shorter loop stalls.
        sys.setswitchinterval(min(sys.getswitchinterval(), _SWITCH_INTERVAL))
        threading.Thread(target=self._run, name="phux-replicas", daemon=True).start()

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
                local.append(get(timeout=core.wait_s(time.monotonic())))
            except queue.Empty:  # a frame's bound passed, or idle replicas are due
                timed: list[Message] = []
                core.expire(time.monotonic(), timed)
                core.put_away_idle(timed)
                if timed:
                    self._post(timed)
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
                if msg[0] == STOP:  # (what came before it was handled: its results go)
                    if results:
                        self._post(results)
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


class _ProcessWorker:
    """Replicas in one helper process for all terminals: a second core, at the price
    of copying every byte through a pipe (and the checkpoints back)."""

    def __init__(self, core: WorkerCore, deliver: Deliver, nursery: trio.Nursery) -> None:
        self._deliver = deliver
        args = [str(core.history), str(core.compact_bytes), str(core.hard_bytes), str(core.idle_s)]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "phux.server.replica_worker", *args],
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
        self.sent = 0
        """Messages sent so far (an IDLE that counts them all: none is in flight)."""
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
        self.sent += 1
        self._wake.set()

    def retire(self) -> None:
        """Let the helper go (it has nothing to do): ``_run`` ends it and reaps it."""
        self._stopping = True
        self._scope.cancel()

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


# ---------------------------------------------------------------- the loop side


@dataclass(eq=False, slots=True)
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
    seeded: bool = True
    """The running helper has this replica (false once an idle helper was let go: the
    next output or resize re-seeds it from the journal first)."""


_PUBLISH_EVERY = 0.05
"""Seconds between two writes of ``phux.server.replica_behind`` while output flows (and
at most how stale the written value is)."""

AUTO_THREAD_BYTES = 64 * 1024
AUTO_WINDOW_S = 1.0
AUTO_THREAD_TERMINALS = 4
"""With ``replica_mode`` "auto" (the default), the replicas parse in a thread of the
server until more than ``AUTO_THREAD_BYTES`` of output (all terminals) comes within
``AUTO_WINDOW_S``, or more than ``AUTO_THREAD_TERMINALS`` terminals have a replica
not put away; then in the helper process, until it is let go idle. A shell printing
a line now and then costs the loop next to nothing in a thread (the engine parses
2-27 MB/s: 64 KiB is 2-30 ms of a second at worst), and a second interpreter is ~15
MB (ARCHITECTURE.md, "Memory"); a flood in a thread would hold the GIL against the
loop (the module docstring's table), and the engines of many terminals would leave
the server's heap as large for good once they are put away (the interpreter keeps
the memory it freed: a thousand fresh shells' engines, ~15 KiB per terminal), where
a helper let go gives it all back."""

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
        self._core = WorkerCore(
            config.history_lines, min(config.compact_bytes, hard), hard, config.replica_idle_s
        )
        self._worker: _ThreadWorker | _ProcessWorker | None = None
        self._heavy = self.mode == "process"
        """The next worker started is a helper process (else a thread): always with
        "process"; with "auto", from heavy output until the helper is let go idle."""
        self._window_at = 0.0
        self._window_bytes = 0
        """Output sent to a thread's replicas since ``_window_at`` ("auto")."""
        self._in_thread: dict[int, float] = {}
        """("auto") The terminals whose replicas the thread may hold live (not put
        away): when each was last sent something."""
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
        return self.mode in ("auto", "thread", "process") and self.config.journal_bytes > 0

    def helper_pids(self) -> list[int]:
        """The replica helper processes running now (none with replicas in a thread)."""
        return [self._worker.pid] if isinstance(self._worker, _ProcessWorker) else []

    def _start(self) -> _ThreadWorker | _ProcessWorker:
        if self._worker is None:
            if self._heavy:
                self._worker = _ProcessWorker(self._core, self._deliver, self._nursery)
                if self.on_helpers is not None:
                    self.on_helpers([self._worker.pid])
            else:
                token = trio.lowlevel.current_trio_token()
                self._worker = _ThreadWorker(self._core, self._deliver, token)
                self._worker.start()
        return self._worker

    def add(self, term: Terminal) -> None:
        """Start replicating ``term`` (from its first byte)."""
        if not self.enabled:
            return
        self._auto(term.id, 0)
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
        if link is None or not self.enabled:
            return
        self._auto(term.id, len(chunk.data))
        worker = self._worker
        if worker is None or not link.seeded:
            worker = self._start()
            self._reseed(worker, link, upto=chunk.seq)
        worker.send((FEED, term.id, chunk.seq, link.gen, _stamp(), chunk.data))
        self.behind += chunk.end - link.fed
        link.fed = chunk.end
        self._publish_behind(paced=True)
        if link.fed - link.done > self.config.replica_lag_bytes and not term.paused_for("lag"):
            # Never drop what the replica has not parsed: a replica restarted mid-stream
            # would checkpoint a wrong screen for good. The program waits instead.
            self.pauses += 1
            term.pause_reading("lag")

    def _auto(self, tid: int, size: int) -> None:
        """("auto", while the replicas are in a thread) ``size`` bytes of output, or a
        new terminal or size, for ``tid``: move to a helper process if the output or
        the number of live replicas grew past the thread's share."""
        if self.mode != "auto" or self._heavy:
            return
        now = trio.current_time()
        if now - self._window_at >= AUTO_WINDOW_S:
            self._window_at, self._window_bytes = now, 0
        self._window_bytes += size
        live = self._in_thread
        live[tid] = now
        idle_s = self.config.replica_idle_s
        if len(live) > AUTO_THREAD_TERMINALS and idle_s:
            for other, at in list(live.items()):
                if now - at > idle_s:  # (put away by now)
                    del live[other]
        if self._window_bytes > AUTO_THREAD_BYTES or len(live) > AUTO_THREAD_TERMINALS:
            self._move_to_a_process()

    def _move_to_a_process(self) -> None:
        """("auto") Heavy output: the replicas go from the thread to a helper process.
        The thread parses what it was sent (answering the queries in it, writing its
        checkpoints) and ends; each replica is re-seeded in the helper from its journal
        on its next output or resize, as after an idle helper was let go
        (``_let_go``), answering no query twice (the helper's answers start after what
        the thread was sent). A terminal that prints nothing more until it closes keeps
        the journal tail the thread did not checkpoint (bounded by ``compact_bytes``)."""
        self._heavy = True
        self._in_thread.clear()
        old = self._worker
        self._worker = None
        if old is not None:
            old.stop()
        core = self._core  # (the thread's, until it ends)
        self._core = WorkerCore(core.history, core.compact_bytes, core.hard_bytes, core.idle_s)
        for link in self._links.values():
            link.seeded = False
        log.info("replicas: heavy output, moving from the thread to a helper process")

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
        if link is not None and self.enabled:
            self._auto(term.id, 0)
        if link is not None and self.enabled and (self._worker is None or not link.seeded):
            self._reseed(self._start(), link)  # (its size change included)
        elif link is not None and self._worker is not None:
            gen = link.gen.to_bytes(2, "little")
            self._worker.send((RESIZE, term.id, change.seq, change.cols, change.rows, gen))

    def _on_closed(self, term: Terminal) -> None:
        self._in_thread.pop(term.id, None)  # (its replica goes)
        link = self._links.get(term.id)
        # (A replica let go with its helper had checkpointed all there was.)
        if self._worker is not None and link is not None and link.seeded:
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
        self._core = WorkerCore(core.history, core.compact_bytes, core.hard_bytes, core.idle_s)
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

    def _reseed(
        self, worker: _ThreadWorker | _ProcessWorker, link: _Link, upto: int | None = None
    ) -> None:
        """Re-create ``link``'s replica in ``worker`` from its journal (the newest
        checkpoint and what follows), up to ``upto`` (the chunk being sent next; None:
        all of it)."""
        from phux.server.journal import Chunk as JournalChunk

        term = link.term
        journal = term.journal
        boot = journal.bootstrap()  # exact: the newest checkpoint and everything after it
        end = journal.next_seq if upto is None else upto
        link.gen = (link.gen + 1) & 0xFFFF
        link.seeded = True
        gen = link.gen.to_bytes(2, "little")
        # Queries before ``end`` were answered by the old helper, or were lost with it:
        # answering them now could type a second answer into the program.
        head = end.to_bytes(8, "little") + gen + (boot.checkpoint or b"")
        worker.send((RESET, term.id, boot.start_seq, boot.cols, boot.rows, head))
        worker.send(_key_message(term))
        for item in boot.items:
            if isinstance(item, JournalChunk):
                if item.seq < end:
                    worker.send((FEED, term.id, item.seq, link.gen, _stamp(), item.data))
            elif item.seq <= end:
                worker.send((RESIZE, term.id, item.seq, item.cols, item.rows, gen))
        link.fed = end
        link.done = boot.start_seq
        self._publish_behind(recount=True)

    def _let_go(self, received: int) -> None:
        """The helper told IDLE: every replica is put away (its checkpoint sent) and
        nothing came for ``replica_idle_s``. If nothing was sent to it since, it is let
        go, with all it holds (an idle server is then one process, ~30 MB less; the
        interpreter keeps freed memory otherwise): the next output or resize starts a
        new one and re-seeds that terminal's replica from its journal, as after a
        helper's death (``_reseed``)."""
        worker = self._worker
        if not isinstance(worker, _ProcessWorker) or worker.sent != received:
            return
        worker.retire()
        self._worker = None
        self._heavy = self.mode == "process"  # ("auto": a thread again, until output is heavy)
        core = self._core
        self._core = WorkerCore(core.history, core.compact_bytes, core.hard_bytes, core.idle_s)
        for link in self._links.values():
            link.seeded = False
        if self.on_helpers is not None:
            self.on_helpers([])
        log.info("replicas idle: helper process %d let go", worker.pid)

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
        self._in_thread.pop(tid, None)
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
            if kind == IDLE:
                self._let_go(seq)
                continue
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
