"""One terminal: its PTY process, reader, input writer, journal, subscribers and exit."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import trio

from phux.server import foreground as fgread
from phux.server.config import ServerConfig
from phux.server.echo_first import FLOOD_PASS, EchoFirst
from phux.server.exits import ExitWatch
from phux.server.journal import Bootstrap, Chunk, Journal, JournalBudget, SizeChange
from phux.server.log import log
from phux.server.pty_process import (
    PtyProcess,
    discards_input_on,
    flush_unread_input,
    foreground_pgrp,
    set_winsize,
    signal_group,
    unread_input,
)
from phux.server.subscriber import Subscription
from phux.wire import encode_frame
from phux.wire.frames import (
    Exited,
    ExitStatus,
    Foreground,
    InputWritten,
    Resized,
    Role,
    Signaled,
    TerminalClosed,
    TerminalState,
)
from phux.wire.handshake import MINOR_INPUT_UNITS

OutputHook = Callable[["Terminal", Chunk], None]
"""Called synchronously with every chunk of output (the seam for server-side replicas).

A hook must not block or parse on the loop: hand the bytes to a worker.
"""
ResizeHook = Callable[["Terminal", SizeChange], None]
CloseHook = Callable[["Terminal"], None]
StateHook = Callable[["Terminal", bytes], None]
"""Called with an encoded TERMINAL_STATE when the foreground changed (ServerState delivers it)."""
InterestCheck = Callable[["Terminal"], bool]
"""Whether anyone follows the terminal's state, so that it is worth watching."""

_FOLLOW_UP_S = 0.02
"""After a change, look again this soon: a forked child runs the shell's code until it execs."""

_WRITE_SLICE = 64 * 1024
"""Input is written in slices of at most this; a cancelled INPUT stops between two."""


class InputOwner(Protocol):
    """What the input queue needs of the connection an INPUT came on
    (:class:`phux.server.connection.ClientConnection`, which imports this module):
    the answers it owes, and whether its version has input units."""

    @property
    def minor(self) -> int: ...

    def input_done(self, request_id: int, size: int, exited: str | None = None) -> None: ...

    def input_cancelled(self, request_id: int, size: int, message: str) -> None: ...

    def awaiting_unit(self, term: Terminal, waiting: bool) -> None: ...


@dataclass(slots=True)
class PendingInput:
    data: bytes
    conn: InputOwner | None
    """None: the server's own answer to a terminal query."""
    request_id: int
    more: bool = False
    """Not the last piece of its connection's input unit."""
    cancelled: bool = False
    """Set while being written: stop between slices (its sender was answered or is gone)."""
    written: int = 0
    """Bytes of it written to the PTY so far."""
    urgent: bool = False
    """An interrupt: if the PTY is full, the program's unread input makes room for it."""


class Terminal:
    # Slots: a thousand idle terminals are most of a server's memory, and this
    # class's ~40 attributes are too many for a key-sharing dict (ARCHITECTURE.md,
    # "Memory"). A new attribute must be named here.
    __slots__ = (
        "__weakref__",  # (connections key their input units by terminal, weakly)
        "_active_at",
        "_big_pass",
        "_cancel",
        "_cancelled_units",
        "_echo_first",
        "_eof",
        "_exits",
        "_fg_armed",
        "_fg_key",
        "_fg_listed",
        "_fg_named",
        "_fg_record",
        "_fg_running",
        "_fg_unsettled",
        "_fg_wake",
        "_holder",
        "_input_wake",
        "_inputs",
        "_interested",
        "_last_written",
        "_nursery",
        "_on_closed",
        "_on_state",
        "_own_exits",
        "_paused_for",
        "_read_gate",
        "_write_wait",
        "_writer_running",
        "_writing",
        "close_hooks",
        "config",
        "created_ms",
        "exit_status",
        "final_seq",
        "id",
        "journal",
        "killed",
        "master_fd",
        "metadata",
        "output_hooks",
        "pid",
        "process",
        "queued_input",
        "resize_hooks",
        "stamp",
        "subscribers",
    )

    def __init__(
        self,
        tid: int,
        process: PtyProcess,
        config: ServerConfig,
        cols: int,
        rows: int,
        metadata: dict[str, bytes],
        on_closed: Callable[[Terminal], None],
        on_state: StateHook | None = None,
        interested: InterestCheck | None = None,
        journal_budget: JournalBudget | None = None,
        echo_first: EchoFirst | None = None,
        exits: ExitWatch | None = None,
    ) -> None:
        self.id = tid
        self.process = process
        self.pid = process.pid
        self.master_fd = process.master_fd
        self.config = config
        self.journal = Journal(config.journal_bytes, cols, rows, journal_budget)
        self.created_ms = int(time.time() * 1000)
        self.metadata = metadata
        self.subscribers: list[Subscription] = []
        self.output_hooks: list[OutputHook] = []
        self.resize_hooks: list[ResizeHook] = []
        self.close_hooks: list[CloseHook] = []
        self.killed = False
        """Marked closed for observers by KILL; the process may still be running."""
        self.exit_status: ExitStatus | None = None
        self.final_seq = 0
        self._on_closed = on_closed
        self._inputs: deque[PendingInput] | tuple[()] = ()
        """Input to write in order; ``()`` while there is none (an empty deque is 624
        bytes: ARCHITECTURE.md, "Memory")."""
        self.queued_input = 0
        """Bytes of clients' INPUT queued and not yet written (ServerConfig's input caps)."""
        self._input_wake = _NO_WAITER
        """What the writer waits on for a unit's next piece (its own, made then)."""
        self._writing: PendingInput | None = None
        self._last_written = -1
        """The last byte written to the PTY (-1: none yet)."""
        self._write_wait: trio.CancelScope | None = None
        """Set while the writer waits for room in a full PTY (see _stop_writing)."""
        self._holder: InputOwner | None = None
        """The connection whose unit is being written: only its input goes next."""
        self._cancelled_units: set[InputOwner] = set()
        """Connections whose unit an urgent INPUT cut: its later pieces are refused."""
        self._writer_running = False
        self._fg_running = False
        self._exits = exits if exits is not None else ExitWatch()
        """Tells ``_exited`` when the process has exited (the server's one for all
        terminals; a terminal made alone, in tests, gets one of its own)."""
        self._own_exits = exits is None
        self._nursery: trio.Nursery | None = None
        """The terminal's own nursery while ``run`` runs (the writer and watcher start in it)."""
        self._eof = trio.Event()
        self._cancel = trio.CancelScope()
        self._read_gate: trio.Event | None = None
        """Set while the reader waits for the replica to catch up (see pause_reading)."""
        self._paused_for: set[str] = set()
        """Why the reader waits: "lag" (the replica is too far behind), "budget" (the
        journals together are over the server's budget: this one waits to be compacted)."""
        self._on_state = on_state
        self._echo_first = echo_first
        """The server's: a typed-into terminal's echo is read before floods (echo_first)."""
        self._big_pass = False
        """The last read pass took FLOOD_PASS bytes or more: the next waits for others' echoes."""
        self._interested = interested
        self._fg_key: fgread.Key | None = None
        self._fg_unsettled: fgread.Key | None = None
        """A key last seen with its program caught in exec (no arguments yet)."""
        """The foreground last seen (what the next TERMINAL_STATE is judged against)."""
        self._fg_record: Foreground | None = None
        """The record of ``_fg_key`` once built: a listing reuses its argv while the key holds."""
        self._fg_armed = False
        """The watcher is following the state: output and input wake it."""
        self._active_at = time.monotonic()
        """When output was last read or input last written (monotonic seconds)."""
        self._fg_named: tuple[fgread.Key, fgread.Modes, float] | None = None
        """The key last read with its program from /proc, its modes, and when (see
        foreground())."""
        self._fg_wake = _NO_WAITER
        """What the foreground watcher waits on (its own, made when it starts)."""
        self._fg_listed: tuple[fgread.Key | None, Foreground | None, float] | None = None
        """The foreground a full listing last read, with ``_fg_key`` then and when: what a
        later listing may give again (see foreground())."""
        self.stamp = 0
        """Moves with every change a listing shows (output, input written, size,
        subscribers, KILL, exit, metadata, the foreground observed): a whole listing
        gives a terminal's entry again while it holds (phux.server.listing)."""

    # ------------------------------------------------------------ observers

    @property
    def alive(self) -> bool:
        """What LIST_TERMINALS reports: false from KILL on, or once exited."""
        return not self.killed and self.exit_status is None

    @property
    def closed(self) -> bool:
        return self.exit_status is not None

    @property
    def size(self) -> tuple[int, int]:
        return self.journal.cols, self.journal.rows

    def add_subscriber(self, sub: Subscription) -> None:
        self.subscribers.append(sub)
        self.stamp += 1

    def remove_subscriber(self, sub: Subscription) -> bool:
        """Whether ``sub`` was one (and is no more)."""
        if sub not in self.subscribers:
            return False
        self.subscribers.remove(sub)
        self.stamp += 1
        return True

    def counts(self) -> tuple[int, int]:
        viewers = sum(1 for s in self.subscribers if s.role is Role.VIEWER)
        return viewers, len(self.subscribers) - viewers

    def bootstrap(self) -> Bootstrap:
        return self.journal.bootstrap()

    def encode_resized(self, change: SizeChange) -> bytes:
        return encode_frame(
            Resized(terminal=self.id, seq=change.seq, cols=change.cols, rows=change.rows)
        )

    # ------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Read output, write input and wait for the exit; returns once closed.

        An idle terminal is one trio task: this one, which reads. Its process's exit
        comes through the server's ExitWatch (one task and one epoll set for all
        pidfds), which starts ``_after_exit``. The writer runs only while there is
        input to write (or a unit's next piece to wait for), the foreground watcher
        only while someone follows the state: each is started when that begins and
        returns when it ends (a task with its coroutine, cancel status and wait
        costs a few KiB, and a thousand idle terminals are most of a server's
        memory; ARCHITECTURE.md, "Memory")."""
        try:
            with self._cancel:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    if self._own_exits:
                        nursery.start_soon(self._exits.run)
                    self._exits.watch(self.pid, self._exited)
                    self._start_writer()  # (input queued before this ran)
                    self._start_watcher(unless_unfollowed=True)
                    await self._reader()
                    await trio.sleep_forever()  # until the exit's work ends it
        except Exception:
            log.exception("terminal %d failed", self.id)
        finally:
            self._nursery = None
            with contextlib.suppress(OSError):
                os.close(self.master_fd)

    def _queue(self) -> deque[PendingInput]:
        if not isinstance(self._inputs, deque):
            self._inputs = deque()
        return self._inputs

    def _wake_writer(self) -> None:
        self._input_wake.set()
        self._start_writer()

    def _start_writer(self) -> None:
        """Start the writer if there is input and none runs (it returns once idle)."""
        if self._writer_running or self._nursery is None or not self._inputs:
            return
        self._writer_running = True
        self._nursery.start_soon(self._writer)

    def _start_watcher(self, *, unless_unfollowed: bool = False) -> None:
        """Start the foreground watcher if none runs (it returns once nobody follows
        the state; ``unless_unfollowed``: not even started then). A follower calls
        this before it is counted as one: the watcher looks once it runs."""
        if (
            self._fg_running
            or self._nursery is None
            or self._on_state is None
            or self._interested is None
            or self.exit_status is not None
            or (unless_unfollowed and not self._interested(self))
        ):
            return
        self._fg_running = True
        self._nursery.start_soon(self._foreground_watcher)

    async def _reader(self) -> None:
        fd = self.master_fd
        while True:
            if self._read_gate is not None:
                await self._read_gate.wait()
            await trio.lowlevel.wait_readable(fd)
            first = self._echo_first
            if self._big_pass and first is not None and first.holding(self.id):
                await first.turn(self.id)
                if self._read_gate is not None:
                    continue  # (paused meanwhile: wait for the gate first)
            if not self._drain():
                self._eof.set()
                return
            if self._big_pass and first is not None and (gap := first.flood_gap()):
                await trio.sleep(gap)

    def _drain(self) -> bool:
        """Read what is available (up to one batch) and dispatch it; False at EOF."""
        parts: list[bytes] = []
        total = 0
        eof = False
        limit = self.config.read_batch_bytes
        if self._echo_first is not None:
            limit = self._echo_first.pass_limit(limit)
        fd = self.master_fd
        while total < limit:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.EIO:
                    log.warning("terminal %d: read error: %s", self.id, exc)
                eof = True
                break
            if not data:
                eof = True
                break
            parts.append(data)
            total += len(data)
        self._big_pass = total >= FLOOD_PASS
        if parts:
            self._dispatch(parts[0] if len(parts) == 1 else b"".join(parts))
        return not eof

    def _dispatch(self, data: bytes) -> None:
        chunk = self.journal.append(data)
        for hook in list(self.output_hooks):
            try:
                hook(self, chunk)
            except Exception:
                log.exception("terminal %d: output hook failed; removed", self.id)
                self.output_hooks.remove(hook)
        for sub in self.subscribers:
            sub.push_output(chunk)
        if self._echo_first is not None:
            self._echo_first.answered(self.id)
        self._active_at = time.monotonic()
        self.stamp += 1
        if self._fg_armed:
            self._fg_wake.set()

    def _exited(self) -> None:
        """The process has exited (ExitWatch): take its status and close, in a task."""
        if self._nursery is not None:
            self._nursery.start_soon(self._after_exit)

    async def _after_exit(self) -> None:
        status = self._reap_now()
        with trio.move_on_after(self.config.exit_drain_s):
            await self._eof.wait()
        if not self._eof.is_set():
            # Something else (a background job) holds the PTY open: take what is there.
            while self._drain() and _readable_now(self.master_fd):
                pass
        self._finish(status)
        self._cancel.cancel()

    def _reap_now(self) -> ExitStatus:
        rc = self.process.proc.wait()  # the pidfd said it exited: this does not block
        return Exited(code=rc) if rc >= 0 else Signaled(signal=-rc)

    def _finish(self, status: ExitStatus) -> None:
        if self.exit_status is not None:
            return
        self.exit_status = status
        self.stamp += 1
        self.final_seq = self.journal.next_seq
        if self._echo_first is not None:
            self._echo_first.forget(self.id)
        pending = list(self._inputs)
        self._inputs = ()
        current = self._writing
        if current is not None and not current.cancelled:  # a cancelled one was answered
            self._stop_writing(current)
            pending.insert(0, current)
        for item in pending:
            if item.conn is not None:
                self.queued_input -= len(item.data)
            if item.conn is not None:
                item.conn.input_done(item.request_id, len(item.data), self._exited_msg())
        for close_hook in list(self.close_hooks):
            try:
                close_hook(self)
            except Exception:
                log.exception("terminal %d: close hook failed", self.id)
        closed = self.encode_closed()
        for sub in self.subscribers:  # those awaiting a bootstrap get it after READY
            sub.push_frame(closed)
        self._on_closed(self)

    def encode_closed(self) -> bytes:
        assert self.exit_status is not None
        return encode_frame(
            TerminalClosed(terminal=self.id, status=self.exit_status, final_seq=self.final_seq)
        )

    def _exited_msg(self) -> str:
        return f"terminal {self.id} has exited"

    # ------------------------------------------------------------ control

    def kill(self, grace_nursery: trio.Nursery) -> None:
        """Mark closed for observers and hang up its process groups (one synchronous step)."""
        self.killed = True
        self.stamp += 1
        self._signal_all(signal.SIGHUP)
        grace_nursery.start_soon(self._kill_after_grace)

    async def _kill_after_grace(self) -> None:
        await trio.sleep(self.config.kill_grace_s)
        if self.exit_status is None:
            log.info("terminal %d survived SIGHUP: SIGKILL", self.id)
            self._signal_all(signal.SIGKILL)

    def _signal_all(self, signum: int) -> None:
        if self.exit_status is not None:
            return
        fg = foreground_pgrp(self.master_fd, self.pid)
        signal_group(self.pid, signum)
        if fg != self.pid:
            signal_group(fg, signum)

    def force_kill(self) -> None:
        self._signal_all(signal.SIGKILL)

    def hangup(self) -> None:
        """Server shutdown: SIGHUP to the terminal's process groups."""
        self._signal_all(signal.SIGHUP)

    def send_signal(self, signum: int) -> None:
        signal_group(foreground_pgrp(self.master_fd, self.pid), signum)

    def resize(self, cols: int, rows: int) -> bool:
        """Set the size; False (nothing done) when it is already that size."""
        if (cols, rows) == self.size:
            return False
        with contextlib.suppress(OSError):
            set_winsize(self.master_fd, cols, rows)
        with contextlib.suppress(OSError):
            signal_group(foreground_pgrp(self.master_fd, self.pid), signal.SIGWINCH)
        change = self.journal.resize(cols, rows)
        self.stamp += 1
        for resize_hook in list(self.resize_hooks):
            try:
                resize_hook(self, change)
            except Exception:
                log.exception("terminal %d: resize hook failed; removed", self.id)
                self.resize_hooks.remove(resize_hook)
        encoded = self.encode_resized(change)
        for sub in self.subscribers:
            sub.push_frame(encoded)
        return True

    # ------------------------------------------------------------ foreground

    def foreground(self, *, reread: bool = True) -> Foreground | None:
        """The foreground now (LIST_TERMINALS); also reported as a change if it is one.

        The group and the tty's modes are read (two ioctls), except that with
        ``reread`` false the last reading is given again when it came at least
        ``name_quiet_s`` after the terminal's last input or output and nothing has
        been observed since (a full listing of a thousand idle terminals spent most
        of its time in these ioctls; phux.server.listing re-reads some at every
        listing, so a change made without input or output still shows: spec/L1.md
        §8.1). The
        group's program, read from /proc (~40 ms for a thousand), is read again only
        when they changed, or when the last time it was read came less than
        ``name_quiet_s`` after the terminal's last input or output (a job forked then
        exec'd shows its parent's name for that moment).
        """
        if self.exit_status is not None or self.killed:
            return None
        if not reread and self.foreground_settled():
            assert self._fg_listed is not None
            return self._fg_listed[1]
        # What the program wrote before this reading goes out ahead of the listing
        # (spec/L1.md §8.1): a shell seen back at its editor has its prompt's marks
        # delivered first, so a client never holds the state without the output.
        self._drain_held()
        record = self._read_foreground()
        self._fg_listed = (
            (self._fg_key, record, time.monotonic()) if record is self._fg_record else None
        )
        return record

    def unread_input(self) -> tuple[int, bool]:
        """Input given to this terminal that its program has not read yet (what the
        server still holds for it, plus what its PTY holds unread), and whether it
        ends inside a line: its last byte, the last one given, is no CR or LF
        (spec/L1.md §8.1)."""
        if not self.alive:
            return 0, False
        count = min(self.queued_input + unread_input(self.master_fd), 0xFFFFFFFF)
        if not count:
            return 0, False
        last = self._last_written
        for item in (self._inputs[-1] if self._inputs else None, self._writing):
            if item is not None and item.data:
                last = item.data[-1]
                break
        return count, last not in (0x0D, 0x0A)

    def foreground_settled(self) -> bool:
        """Whether the last listing's reading may be given again (see foreground())."""
        listed = self._fg_listed
        return (
            listed is not None
            and listed[0] == self._fg_key
            and listed[2] - self._active_at >= self.config.name_quiet_s
        )

    def _read_foreground(self) -> Foreground | None:
        modes = fgread.read_modes(self.master_fd)
        if modes is None:
            self._observe(None)
            return None
        named = self._fg_named
        if (
            named is not None
            and named[1] == modes
            and named[0] == self._fg_key
            and named[2] - self._active_at >= self.config.name_quiet_s
            and self._fg_record is not None
        ):
            return self._fg_record
        key, pid = self._named(modes)
        if key == self._fg_key and self._fg_record is not None:
            return self._fg_record  # the key is fresh; argv is not read again for it
        record = fgread.build(key, pid, settled=False)
        if record is None:  # caught in exec: the state before it, until a check sees it
            return self._fg_record or fgread.build(key, pid)
        if not self._observe(key, record) and record is not self._fg_record:
            self._fg_record = record
            self.stamp += 1
        return record

    def _named(self, modes: fgread.Modes) -> tuple[fgread.Key, int]:
        """The key of ``modes`` with the group's program read now (kept with the time)."""
        found = fgread.key_of(modes, self.pid)
        self._fg_named = found[0], modes, time.monotonic()
        return found

    def check_foreground(self) -> bool:
        """Read the foreground; report it when it changed. Returns whether it did."""
        if self.exit_status is not None or self.killed:
            return False  # closed to observers: TERMINAL_CLOSED is the last word
        modes = fgread.read_modes(self.master_fd)
        if modes is None:
            return self._observe(None)
        key, pid = self._named(modes)
        if key == self._fg_key:
            return False  # argv is read only for a change: the common check is 2 ioctls + 1 read
        # A program caught in exec has its new name but no arguments yet: the change is
        # reported by the next check, whole; a second sighting takes it as it is.
        settled = key == self._fg_unsettled
        record = fgread.build(key, pid, settled=settled)
        if record is None:
            self._fg_unsettled = key
            return False
        self._fg_unsettled = None
        return self._observe(key, record)

    def _observe(self, key: fgread.Key | None, record: Foreground | None = None) -> bool:
        if key == self._fg_key:
            return False
        self._fg_key = key
        self._fg_record = record
        self.stamp += 1
        if self._on_state is not None and self.exit_status is None:
            # What the program wrote before the change goes out first (spec/L1.md
            # §8.1): a shell prints its continuation prompt, then gives the terminal
            # to a job; a client that reads the job as the command's start
            # (spec/shell-integration.md) must see that prompt before it.
            self._drain_held()
            self._on_state(self, encode_frame(TerminalState(terminal=self.id, foreground=record)))
        return True

    def _drain_held(self) -> None:
        """Dispatch the output the PTY holds now (a few batches at most: a program
        still writing is not waited out), unless reading is paused."""
        for _ in range(4):
            if self._read_gate is not None or not _readable_now(self.master_fd):
                return
            if not self._drain():
                return  # (the end: the reader sees it too, and finishes)

    def baseline_foreground(self) -> None:
        """Someone starts following the state: changes are judged from now on.

        While nobody followed, nothing was checked; without this the first check
        would report as a change whatever happened while nobody was looking.
        When the watcher is already running the last key is current.
        """
        if not self._fg_armed and self.exit_status is None:
            found = fgread.read_key(self.master_fd, self.pid)
            self._fg_key = None if found is None else found[0]
            self._fg_record = None
            self.stamp += 1
        self._fg_wake.set()  # (the running watcher's; else the shared one nobody awaits)
        self._start_watcher()

    async def _foreground_watcher(self) -> None:
        """Checks the foreground after output and input, and every ``foreground_poll_s``,
        only while someone follows the state; at most once per ``foreground_gap_s``."""
        assert self._interested is not None
        config = self.config
        wait = config.foreground_poll_s
        try:
            await self._watch_foreground(self._interested, config, wait)
        finally:
            self._fg_armed = False
            self._fg_running = False
            self._fg_wake = _NO_WAITER

    async def _watch_foreground(
        self, interested: InterestCheck, config: ServerConfig, wait: float
    ) -> None:
        # Its first check comes at once (someone just started following: the baseline
        # is from now, see baseline_foreground).
        self._fg_wake = trio.Event()
        self._fg_wake.set()
        while self.exit_status is None:
            if not interested(self):
                return  # baseline_foreground() starts a watcher when someone follows again
            self._fg_armed = True
            with trio.move_on_after(wait):
                await self._fg_wake.wait()
            self._fg_wake = trio.Event()
            changed = self.check_foreground()
            wait = _FOLLOW_UP_S if changed else config.foreground_poll_s
            await trio.sleep(config.foreground_gap_s)

    # ------------------------------------------------------------ replica

    def apply_checkpoint(self, seq: int, cols: int, rows: int, data: bytes) -> None:
        """The replica's checkpoint at ``seq``: the journal before it is replaced."""
        self.journal.compact(seq, cols, rows, data)

    def queue_reply(self, data: bytes) -> None:
        """The replica's answer to a terminal query: to the PTY, between INPUT frames."""
        if self.exit_status is None:
            self._queue().append(PendingInput(data, None, 0))
            self._wake_writer()

    def replica_failed(self) -> None:
        """Back to a plain byte-bounded journal (bootstraps may start mid-stream again)."""
        self.journal.stop_compacting()
        for reason in list(self._paused_for):
            self.resume_reading(reason)

    def pause_reading(self, reason: str = "lag") -> None:
        """Stop reading output until the replica has caught up (``reason``: see
        ``_paused_for``): the program blocks on a full PTY, as it would on a slow
        terminal, and nothing it wrote is dropped."""
        self._paused_for.add(reason)
        if self._read_gate is None:
            self._read_gate = trio.Event()

    def resume_reading(self, reason: str = "lag") -> None:
        self._paused_for.discard(reason)
        if self._read_gate is not None and not self._paused_for:
            self._read_gate.set()
            self._read_gate = None

    def paused_for(self, reason: str) -> bool:
        return reason in self._paused_for

    @property
    def reading_paused(self) -> bool:
        return self._read_gate is not None

    # ------------------------------------------------------------ input

    def queue_input(
        self,
        conn: InputOwner,
        request_id: int,
        data: bytes,
        *,
        more: bool = False,
        urgent: bool = False,
    ) -> None:
        """Queue one INPUT (spec/L1.md §7): pieces of a unit (``more``) are written
        together; an urgent one goes first and discards what was queued before it."""
        if conn in self._cancelled_units and not urgent:
            if not more:
                self._cancelled_units.discard(conn)
            conn.input_cancelled(request_id, len(data), "the rest of this input was cancelled")
            return
        item = PendingInput(data, conn, request_id, more=more and not urgent, urgent=urgent)
        if urgent:
            self._flush_for_urgent(conn)
            self._queue().appendleft(item)
        else:
            self._queue().append(item)
        self.queued_input += len(data)
        if self._echo_first is not None:
            self._echo_first.expect(self.id)
        self._wake_writer()

    def _stop_writing(self, item: PendingInput) -> None:
        """Stop writing ``item`` between two writes, also while the writer waits for room
        in a PTY the program never drains (else what is queued behind it, an urgent
        C-c above all, would wait with it for good)."""
        item.cancelled = True
        if self._write_wait is not None:
            self._write_wait.cancel()

    def _flush_for_urgent(self, by: InputOwner) -> None:
        """An interrupt: like a tty's ISIG, throw away the input typed ahead of it."""
        dropped = [item for item in self._inputs if _cancellable(item)]
        # Kept: the server's own answers to terminal queries (the program waits for
        # them), and input of clients too old to be told INPUT_CANCELLED.
        self._inputs = deque(item for item in self._inputs if not _cancellable(item)) or ()
        self.queued_input -= sum(len(item.data) for item in dropped)
        current = self._writing
        if current is not None and _cancellable(current):
            self._stop_writing(current)
            dropped.insert(0, current)
            if current.written:
                # Cut mid-write, its start is in the tty's input, unread: a program that
                # stopped reading with its input full would never see the interrupt
                # behind it (outside canonical mode the kernel takes the byte and holds
                # it). Discarded, as a tty discards typed-ahead input on an interrupt.
                flush_unread_input(self.master_fd)
        self._holder = None
        message = "an interrupt from another client discarded this queued input"
        for item in dropped:
            assert item.conn is not None
            if item.more:
                self._cancelled_units.add(item.conn)
            else:
                self._cancelled_units.discard(item.conn)
            item.conn.input_cancelled(item.request_id, len(item.data), message)
        if dropped:
            log.info("terminal %d: urgent input discarded %d queued inputs", self.id, len(dropped))

    def cancel_rest_of_unit(self, conn: InputOwner) -> None:
        """A piece of ``conn``'s unit was refused (no room): its pieces still to come
        are cancelled up to the one without ``more`` (INPUT_CANCELLED), and the
        terminal's other input goes on (spec/L1.md §7)."""
        self._cancelled_units.add(conn)
        if self._holder is conn and not any(item.conn is conn for item in self._inputs):
            self._holder = None
            self._wake_writer()

    def _stalled_unit(self, holder: InputOwner) -> None:
        """The unit's next piece did not come within the hold timeout: its pieces
        still to come are cancelled (up to the one without ``more``), and the
        terminal's other input goes on."""
        if self._holder is not holder or any(item.conn is holder for item in self._inputs):
            return  # (it came just now, or the unit ended otherwise)
        self.cancel_rest_of_unit(holder)
        log.info(
            "terminal %d: an input unit stalled for %.1f s; the rest of it is cancelled",
            self.id,
            self.config.input_unit_hold_s,
        )

    def drop_input(self, conn: InputOwner) -> None:
        """``conn`` has gone: nothing it queued is written, not even the rest of a piece."""
        kept = [item for item in self._inputs if item.conn is not conn]
        dropped = len(self._inputs) - len(kept)
        if dropped:
            self.queued_input -= sum(len(i.data) for i in self._inputs if i.conn is conn)
            self._inputs = deque(kept) if kept else ()
        current = self._writing
        cut = self._holder is conn  # pieces of its unit are in the tty: it is cut short
        if current is not None and current.conn is conn:
            self._stop_writing(current)
            cut = cut or current.written > 0
            dropped += 1
        if cut:
            # The part of its unit in the tty's input queue would be read once the
            # program reads again (a timed-out paste typed later, half a command line
            # run): discard it, as a tty discards typed-ahead input on an interrupt.
            flush_unread_input(self.master_fd)
            log.info("terminal %d: flushed the unread input of a cut-short unit", self.id)
        if self._holder is conn:
            self._holder = None
        self._cancelled_units.discard(conn)
        self._wake_writer()
        if dropped:
            log.info("terminal %d: dropped %d inputs of a closed connection", self.id, dropped)

    def _next_input(self) -> PendingInput | None:
        holder = self._holder
        if holder is None:
            if not self._inputs:
                return None
            inputs = self._queue()
            item = inputs.popleft()
            if not inputs:
                self._inputs = ()
            return item
        for i, item in enumerate(self._inputs):
            if item.conn is holder:
                inputs = self._queue()
                del inputs[i]
                if not inputs:
                    self._inputs = ()
                return item
        return None  # the unit's next piece has not arrived: everyone else waits

    async def _writer(self) -> None:
        """Writes queued input until there is none and no unit's next piece to wait
        for, then returns (``_start_writer`` starts it again for the next input)."""
        try:
            await self._write_inputs()
        finally:
            self._writer_running = False
            self._input_wake = _NO_WAITER

    async def _write_inputs(self) -> None:
        fd = self.master_fd
        while True:
            item = self._next_input()
            # A unit's next piece keeps the others waiting until this time at most.
            hold_until = trio.current_time() + self.config.input_unit_hold_s
            while item is None:
                holder = self._holder
                if holder is None:
                    return  # idle (no await since the queue was found empty)
                holder.awaiting_unit(
                    self, True
                )  # its next piece must be read, whatever its backlog
                try:
                    self._input_wake = trio.Event()
                    with trio.move_on_at(hold_until):
                        await self._input_wake.wait()
                finally:
                    holder.awaiting_unit(self, False)
                if trio.current_time() >= hold_until:
                    self._stalled_unit(holder)
                item = self._next_input()
            self._writing = item
            view = memoryview(item.data)
            offset = 0
            flushed = False
            if item.urgent and discards_input_on(fd, item.data):
                flush_unread_input(fd)
                flushed = True
            while offset < len(view) and not item.cancelled:
                try:
                    written = os.write(fd, view[offset : offset + _WRITE_SLICE])
                except BlockingIOError:
                    if item.urgent and offset == 0 and not flushed:
                        # The program does not read and its input is full: the C-c would
                        # wait behind what it never reads. A tty discards unread input
                        # on an interrupt; so does this, then types it (L1 §7).
                        flush_unread_input(fd)
                        flushed = True
                        log.info(
                            "terminal %d: PTY full: unread input flushed for an urgent input",
                            self.id,
                        )
                        continue
                    with trio.CancelScope() as self._write_wait:
                        await trio.lowlevel.wait_writable(fd)
                    self._write_wait = None
                    continue
                except OSError as exc:
                    log.info("terminal %d: input write failed: %s", self.id, exc)
                    await trio.sleep_forever()  # the reaper closes the terminal
                if written:
                    self._last_written = view[offset + written - 1]
                self._show_input(view[offset : offset + written], item.conn is None)
                if item.conn is not None and self._echo_first is not None:
                    self._echo_first.expect(self.id)
                offset += written
                item.written = offset
                await trio.lowlevel.checkpoint()
            self._writing = None
            if item.conn is not None:
                self.queued_input -= len(item.data)
            self._active_at = time.monotonic()
            self.stamp += 1
            if self._fg_armed:
                self._fg_wake.set()
            if item.cancelled or item.conn is None:
                continue  # a cancelled item's sender was answered, or is gone
            self._holder = item.conn if item.more else None
            item.conn.input_done(item.request_id, len(item.data))

    def _show_input(self, data: memoryview, reply: bool) -> None:
        """Bytes just written to the PTY, to the subscribers that asked for them (1.3):
        only what was written, so input cancelled before its write never shows."""
        encoded = b""
        for sub in self.subscribers:
            if sub.wants_input:
                if not encoded:
                    frame = InputWritten(
                        terminal=self.id, seq=self.journal.next_seq, data=bytes(data), reply=reply
                    )
                    encoded = encode_frame(frame)
                sub.push_input(encoded)


_NO_WAITER = trio.Event()
"""The wake-up of a writer or watcher not running: setting it wakes nobody, and each
makes its own before it waits (a terminal saves an Event while idle)."""


def _cancellable(item: PendingInput) -> bool:
    """Whether an urgent INPUT may discard ``item`` (its sender understands INPUT_CANCELLED)."""
    return item.conn is not None and item.conn.minor >= MINOR_INPUT_UNITS


def _readable_now(fd: int) -> bool:
    try:
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(readable)
