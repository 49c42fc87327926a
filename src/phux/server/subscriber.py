"""A connection's outbound queue, and the terminal subscriptions that feed it.

One FIFO per connection keeps every frame to that client in the order it was
produced. Output frames are accounted to their subscription: when one
subscription's queued output would pass its bound, everything queued for it is
dropped, a tombstone marker is queued in its place, and no more output is
queued for it until the sender reaches the marker and replays a fresh
bootstrap. Producers (the PTY readers) only ever append synchronously; the
connection's sender task is the only one that awaits the socket.

Bootstraps are rendered by the sender when it reaches a subscription's
marker, in the same synchronous step that makes the subscription live, so
live output continues at exactly the bootstrap's ``next_seq``.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import trio

from phux.server.journal import Bootstrap, Chunk, Journal, SizeChange
from phux.wire import encode_frame
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    ExitStatus,
    Frame,
    Output,
    Role,
    Tombstone,
    TombstoneReason,
)

BOOTSTRAP_CHUNK_BYTES = 1024 * 1024
"""Journal chunks are merged into BOOTSTRAP_CHUNK frames of up to this many bytes."""
MAX_OUTPUT_FRAME_DATA = 256 * 1024
"""Queued output of one subscription is merged into OUTPUT frames of up to about this size."""
"""Journal chunks are merged into BOOTSTRAP_CHUNK frames of up to this many bytes."""


class SubState(enum.Enum):
    PENDING = "pending"
    """A bootstrap marker is queued; output is not queued until it is rendered."""
    LIVE = "live"
    LAGGING = "lagging"
    """Dropped for lag; a tombstone marker is queued."""


class Kind(enum.IntEnum):
    FRAME = 0
    OUTPUT = 1
    SUB_FRAME = 2
    BOOTSTRAP = 3
    TOMBSTONE = 4
    CLOSE = 5


@dataclass(slots=True)
class Entry:
    kind: Kind
    data: bytes = b""
    sub: Subscription | None = None
    seq: int = 0
    """OUTPUT: seq of the first byte; TOMBSTONE: lost_seq; BOOTSTRAP: request id."""


class Source(Protocol):
    """The terminal a subscription follows (:class:`phux.server.terminal.Terminal`,
    which imports this module): what the subscription reads of it, and what the
    connection holding the subscription does to it (its size)."""

    @property
    def id(self) -> int: ...

    @property
    def alive(self) -> bool: ...

    @property
    def exit_status(self) -> ExitStatus | None: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def subscribers(self) -> list[Subscription]: ...

    @property
    def size(self) -> tuple[int, int]: ...

    def resize(self, cols: int, rows: int) -> bool: ...

    def remove_subscriber(self, sub: Subscription) -> bool: ...

    def bootstrap(self) -> Bootstrap: ...

    def encode_resized(self, change: SizeChange) -> bytes: ...

    def encode_closed(self) -> bytes: ...


@dataclass(eq=False)
class Subscription:
    outbox: Outbox
    terminal: Source
    role: Role
    state: SubState = SubState.PENDING
    queued: int = 0
    sent_seq: int = 0
    """Seq after the last output handed to the socket."""
    wants_state: bool = False
    """The client's minor has TERMINAL_STATE: it gets the terminal's state changes."""
    wants_input: bool = False
    """SUBSCRIBE asked for INPUT_WRITTEN (1.3): the bytes written to the PTY."""
    size: tuple[int, int] | None = None
    """A primary's window: the size it subscribed with or last resized to (L1.md §5)."""
    sized_at: int = 0
    """When ``size`` was set (a server-wide counter): the most recent primary wins."""

    def push_output(self, chunk: Chunk) -> None:
        if self.state is SubState.LIVE:
            self.outbox.push_output(self, chunk)
        elif self.state is SubState.LAGGING:
            self.outbox.dropped(len(chunk.data))

    def push_input(self, encoded: bytes) -> None:
        """An INPUT_WRITTEN: ordered with the output and bounded like it (a paste can
        be large), so a subscriber that does not read lags instead of growing a queue."""
        if self.state is SubState.LIVE:
            self.outbox.push_input(self, encoded)
        elif self.state is SubState.LAGGING:
            self.outbox.dropped(len(encoded))

    def push_frame(self, encoded: bytes) -> None:
        """A frame ordered with this subscription's output (RESIZED, TERMINAL_CLOSED,
        TERMINAL_STATE, INPUT_WRITTEN)."""
        if self.state is SubState.LIVE:
            self.outbox.push_sub_frame(self, encoded)


@dataclass(eq=False)
class QueueBudget:
    """Bytes queued in all connections' outboxes together, and their bound."""

    limit: int
    used: int = 0
    relieve: Callable[[], None] | None = None
    """Called when output would pass the bound: drops the biggest queue (its client is
    detached), so a client that does not read cannot take the budget from the others."""

    @property
    def full(self) -> bool:
        return self.used > self.limit


@dataclass(eq=False)
class Outbox:
    queue_limit: int
    render_closed: Callable[[Source], bytes]
    """Encodes the TERMINAL_CLOSED that follows a bootstrap of a terminal closed meanwhile."""
    control_limit: int = 64 * 1024 * 1024
    total_limit: int | None = None
    """Everything queued for the connection (all its subscriptions' output and the
    rest); past it, as past ``control_limit``, ``on_overflow`` is called."""
    on_overflow: Callable[[], None] | None = None
    """Called (once) when queued non-output frames pass ``control_limit``, or the shared
    budget is full when one is queued (a client not reading)."""
    budget: QueueBudget | None = None
    entries: deque[Entry] = field(default_factory=deque)
    control_bytes: int = 0
    queued_bytes: int = 0
    """Every queued frame and output byte (what the budget is charged)."""
    closing: bool = False
    overflowed: bool = False
    overflow_reason: str = ""
    dropped_unsent: int = 0
    """Output dropped for lag since the sender last took anything: a client that does
    not read at all has its subscriptions tombstoned with nothing queued, so this is
    what shows it (bounded like the queue, by ``total_limit``)."""
    _wake: trio.Event = field(default_factory=trio.Event)
    _room: trio.Event | None = None
    _room_below: int = 0

    async def replies_below(self, limit: int) -> None:
        """Wait until at most ``limit`` bytes of replies and events are queued (the
        sender took them) or the connection closes."""
        while self.control_bytes > limit and not self.closing:
            self._room, self._room_below = trio.Event(), limit
            await self._room.wait()

    def _made_room(self) -> None:
        room = self._room
        if room is not None and (self.control_bytes <= self._room_below or self.closing):
            self._room = None
            room.set()

    def _charge(self, n: int) -> None:
        self.queued_bytes += n
        if self.budget is not None:
            self.budget.used += n

    def clear(self) -> None:
        """Forget everything queued (the connection is going away)."""
        self.entries.clear()
        self._charge(-self.queued_bytes)
        self.control_bytes = 0
        self._made_room()

    # ------------------------------------------------------------ producers

    def push(self, frame: Frame) -> None:
        self.push_encoded(encode_frame(frame))

    def push_encoded(self, data: bytes) -> None:
        if self.closing:
            return
        self.entries.append(Entry(Kind.FRAME, data))
        self.control_bytes += len(data)
        self._charge(len(data))
        self._wake.set()
        if self.control_bytes > self.control_limit:
            self.overflow(f"over {self.control_limit} bytes of replies and events queued")
        elif self.total_limit is not None and self.queued_bytes > self.total_limit:
            self.overflow(f"over {self.total_limit} bytes queued for it")
        elif self.budget is not None and self.budget.full:
            self.overflow(f"the {self.budget.limit} bytes the server queues for all are used")

    def overflow(self, why: str) -> None:
        """The client does not read: ``on_overflow`` detaches it (once)."""
        if self.on_overflow is not None and not self.overflowed:
            self.overflowed = True
            self.overflow_reason = why
            self.on_overflow()

    def push_close(self) -> None:
        """Close the connection once everything queued so far is sent."""
        if not self.closing:
            self.entries.append(Entry(Kind.CLOSE))
            self.closing = True
            self._wake.set()
            self._made_room()

    def push_bootstrap(self, sub: Subscription, request_id: int) -> None:
        sub.state = SubState.PENDING
        self.entries.append(Entry(Kind.BOOTSTRAP, sub=sub, seq=request_id))
        self._wake.set()

    def push_output(self, sub: Subscription, chunk: Chunk) -> None:
        if self.closing:  # nothing after the close is ever sent
            return
        n = len(chunk.data)
        budget = self.budget
        if budget is not None and budget.used + n > budget.limit and budget.relieve is not None:
            budget.relieve()
            if self.closing:
                return
        if self.total_limit is not None and self.queued_bytes + n > self.total_limit:
            self.overflow(f"over {self.total_limit} bytes queued for it")
            return
        if sub.queued and (
            sub.queued + n > self.queue_limit
            or (budget is not None and budget.used + n > budget.limit)
        ):
            self.dropped(sub.queued + n)
            if not self.closing:
                self.lag(sub)
            return
        sub.queued += n
        self._charge(n)
        self.entries.append(Entry(Kind.OUTPUT, chunk.data, sub, chunk.seq))
        self._wake.set()

    def dropped(self, n: int) -> None:
        self.dropped_unsent += n
        if self.total_limit is not None and self.dropped_unsent > self.total_limit:
            self.overflow(f"{self.dropped_unsent} bytes of output dropped unread")

    def push_sub_frame(self, sub: Subscription, encoded: bytes) -> None:
        if self.closing:
            return
        sub.queued += len(encoded)
        self._charge(len(encoded))
        self.entries.append(Entry(Kind.SUB_FRAME, encoded, sub))
        self._wake.set()

    def push_input(self, sub: Subscription, encoded: bytes) -> None:
        n = len(encoded)
        if sub.queued and sub.queued + n > self.queue_limit:
            self.dropped(sub.queued + n)
            if not self.closing:
                self.lag(sub)
            return
        self.push_sub_frame(sub, encoded)

    def lag(self, sub: Subscription) -> None:
        """Drop what is queued for ``sub`` and queue a tombstone plus fresh bootstrap."""
        self.drop(sub)
        sub.state = SubState.LAGGING
        self.entries.append(Entry(Kind.TOMBSTONE, sub=sub, seq=sub.sent_seq))
        self._wake.set()

    def drop(self, sub: Subscription, *, keep_bootstrap: bool = False) -> None:
        """Remove the entries queued for ``sub`` (lag, unsubscribe).

        ``keep_bootstrap`` keeps a pending bootstrap: it is the reply to a SUBSCRIBE,
        and every request gets its reply even when UNSUBSCRIBE follows at once.
        """
        kept: deque[Entry] = deque()
        dropped = 0
        for entry in self.entries:
            if entry.sub is not sub or (keep_bootstrap and entry.kind is Kind.BOOTSTRAP):
                kept.append(entry)
            else:
                dropped += len(entry.data)
        self.entries = kept
        self._charge(-dropped)
        sub.queued = 0

    # ------------------------------------------------------------ the sender

    async def next_batch(self, max_bytes: int) -> tuple[list[bytes], bool]:
        """Wait for queued entries; take up to ``max_bytes`` of them, rendered.

        Returns the byte strings to send and whether the connection closes
        after them.
        """
        while not self.entries:
            self._wake = trio.Event()
            await self._wake.wait()
        self.dropped_unsent = 0  # it reads: lag is handled by tombstones
        out: list[bytes] = []
        size = 0
        entries = self.entries
        while entries and size < max_bytes:
            entry = entries.popleft()
            kind = entry.kind
            if kind is Kind.OUTPUT:
                # Output queued back to back for one subscription leaves as one frame:
                # a reader that falls behind gets fewer, larger frames and catches up.
                sub = entry.sub
                assert sub is not None
                parts = [entry.data]
                length = len(entry.data)
                while (
                    entries
                    and entries[0].kind is Kind.OUTPUT
                    and entries[0].sub is sub
                    and length < MAX_OUTPUT_FRAME_DATA
                ):
                    more = entries.popleft().data
                    parts.append(more)
                    length += len(more)
                sub.queued -= length
                self._charge(-length)
                sub.sent_seq = entry.seq + length
                data = parts[0] if len(parts) == 1 else b"".join(parts)
                frame = encode_frame(Output(terminal=sub.terminal.id, seq=entry.seq, data=data))
                out.append(frame)
                size += len(frame)
            elif kind is Kind.FRAME:
                self.control_bytes -= len(entry.data)
                self._charge(-len(entry.data))
                self._made_room()
                out.append(entry.data)
                size += len(entry.data)
            elif kind is Kind.SUB_FRAME:
                assert entry.sub is not None
                entry.sub.queued -= len(entry.data)
                self._charge(-len(entry.data))
                out.append(entry.data)
                size += len(entry.data)
            elif kind is Kind.CLOSE:
                return out, True
            else:
                sub = entry.sub
                assert sub is not None
                if kind is Kind.TOMBSTONE:
                    tomb = Tombstone(
                        terminal=sub.terminal.id, reason=TombstoneReason.LAG, lost_seq=entry.seq
                    )
                    out.append(encode_frame(tomb))
                    request_id = 0
                else:
                    request_id = entry.seq
                rendered = self._render_bootstrap(sub, request_id)
                out.extend(rendered)
                size += sum(map(len, rendered))
        return out, False

    def _render_bootstrap(self, sub: Subscription, request_id: int) -> list[bytes]:
        terminal = sub.terminal
        boot = terminal.bootstrap()
        frames = render_bootstrap(terminal.id, request_id, boot, terminal)
        sub.state = SubState.LIVE
        sub.sent_seq = boot.next_seq
        sub.queued = 0
        if terminal.exit_status is not None:
            # Every subscriber sees exactly one TERMINAL_CLOSED: after READY when the
            # terminal had already closed when the bootstrap was taken.
            frames.append(self.render_closed(terminal))
        return frames


def render_bootstrap(tid: int, request_id: int, boot: Bootstrap, terminal: Source) -> list[bytes]:
    out = [
        encode_frame(
            BootstrapBegin(
                request_id=request_id,
                terminal=tid,
                start_seq=boot.start_seq,
                cols=boot.cols,
                rows=boot.rows,
            )
        )
    ]
    if boot.checkpoint is not None:
        out.append(
            encode_frame(
                BootstrapChunk(
                    terminal=tid, seq=boot.start_seq, data=boot.checkpoint, checkpoint=True
                )
            )
        )
    pending: list[bytes] = []
    pending_seq = boot.start_seq
    pending_len = 0

    def flush() -> None:
        nonlocal pending, pending_len
        if pending:
            data = b"".join(pending)
            out.append(encode_frame(BootstrapChunk(terminal=tid, seq=pending_seq, data=data)))
            pending = []
            pending_len = 0

    for item in boot.items:
        if isinstance(item, Chunk):
            if pending_len + len(item.data) > BOOTSTRAP_CHUNK_BYTES:
                flush()
            if not pending:
                pending_seq = item.seq
            pending.append(item.data)
            pending_len += len(item.data)
        elif isinstance(item, SizeChange):
            flush()
            out.append(terminal.encode_resized(item))
    flush()
    out.append(
        encode_frame(
            BootstrapReady(
                terminal=tid,
                next_seq=boot.next_seq,
                cols=terminal.journal.cols,
                rows=terminal.journal.rows,
                alive=terminal.alive,  # false from KILL on, as the listing (L1.md §3)
                exit=terminal.exit_status,
            )
        )
    )
    return out
