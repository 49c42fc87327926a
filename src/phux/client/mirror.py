"""A terminal mirror: one VIEWER subscription replayed into a local engine.

The mirror is fed frames (by the Client, which owns the connection and routes
pushed frames by terminal id) and keeps:

* ``engine``: a ``phux.engine.Terminal`` holding the replayed state (optional:
  a capture-only mirror, as ``run`` uses, skips the engine entirely). Output
  is held back and fed when ``engine`` is next read (or ``hold_bytes`` pile
  up: ``HOLD_BYTES``, or ``FLOOD_HOLD_BYTES`` for a reader that scans a flood
  without reading the engine, ``wait`` and ``watch``), in one feed: in a flood
  the engine then skips drawing the rows that scroll out of its history, and a
  mirror nobody reads costs little. A ``warm`` mirror (kept between
  operations, unused) that piles up ``hold_bytes`` drops them and goes
  ``stale``: the client unsubscribes it, and the next operation bootstraps
  afresh instead of parsing the flood;
* ``raw`` (when asked for): every byte a fresh engine would have been fed,
  from the last reset (BOOTSTRAP_BEGIN or a checkpoint chunk) on;
* ``next_seq``: the sequence number of the next output byte it expects;
* ``alive`` / ``exit``: lifecycle as the server reported it;
* ``foreground``: what holds the PTY, from the last TERMINAL_STATE (protocol
  1.1; ``foreground_known`` is False until one arrived: the listing is the
  baseline, the frame only says it changed); for a pane whose shell prints no
  C mark (``shell_pid`` set: sh), the engine is told too, in order with the
  output, and reports its commands' starts from it;
* hooks: ``bytes_hooks`` (seq, data), ``resize_hooks`` (seq, cols, rows),
  ``gap_hooks`` (first lost seq) and ``reset_hooks`` (the engine was rebuilt by
  a fresh bootstrap, after a tombstone: the bytes that follow go on from its
  state) for the operations that scan the raw stream.

Bootstrap handling: BOOTSTRAP_BEGIN starts a fresh engine at the size it
names; a checkpoint chunk is fed first into that fresh engine (it recreates
the state before ``start_seq``); journal chunks and RESIZED frames replay in
seq order; BOOTSTRAP_READY says where live OUTPUT continues. A TOMBSTONE
means output was dropped for us: the mirror waits for the fresh bootstrap
(request id 0) and rebuilds its engine from it (the journal's bytes after its
checkpoint reach ``bytes_hooks`` again), and counts the bytes it never got back,
before that checkpoint (``lost_bytes``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    ExitStatus,
    Foreground,
    Frame,
    Output,
    Resized,
    TerminalClosed,
    TerminalState,
    Tombstone,
)

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    from phux.client.selectors import Pane
    from phux.engine import Terminal

DEFAULT_HISTORY = 10_000
# Output held back for the engine at most; a feed this big mostly skips drawing.
HOLD_BYTES = 4 << 20
# What a reader that does not look at the engine while output floods (``wait``'s line
# scan, client/line_scan.py) lets it hold: the replica's largest feed
# (phux.server.replica_worker's coalesce), of which the engine draws only the rows its
# history keeps.
FLOOD_HOLD_BYTES = 16 << 20

BytesHook = Callable[[int, bytes], None]
ResizeHook = Callable[[int, int, int], None]
GapHook = Callable[[int], None]
ResetHook = Callable[[], None]


class Mirror:
    # States: waiting for our BOOTSTRAP_BEGIN, inside a bootstrap, live.
    SUBSCRIBING = "subscribing"
    BOOTSTRAPPING = "bootstrapping"
    LIVE = "live"

    def __init__(
        self,
        terminal: int,
        *,
        history: int = DEFAULT_HISTORY,
        engine: bool = True,
        raw: bool = False,
    ):
        self.terminal = terminal
        self.history = history
        self.with_engine = engine
        self.mark_key: str | None = ""
        """The pane's key (``phux.signed_marks``): the engine acts only on marks
        signed with it; "" (a pane whose shell phux did not integrate): on none."""
        self.input_events = False
        """Subscribed with SUBSCRIBE.input (INPUT_WRITTEN comes too, for sinks)."""
        self._engine: Terminal | None = None
        self._held: list[bytes] = []
        self._held_bytes = 0
        self.hold_bytes = HOLD_BYTES
        """Output held back for the engine at most (then fed in one feed)."""
        self.warm = False
        """Kept subscribed between operations, which nobody is using now: output it
        holds past ``hold_bytes`` is dropped, not parsed, and the mirror is ``stale``."""
        self.stale = False
        """A warm mirror that dropped output: its engine is behind for good, and the
        client unsubscribes it (the next operation bootstraps afresh: the server's
        newest checkpoint and the journal after it, exact)."""
        self.received = 0
        """Output bytes taken (bootstraps' included), for benches."""
        self.feeds = 0
        """Feeds of held output to the engine so far, for benches."""
        self.raw: bytearray | None = bytearray() if raw else None
        # How many bytes at the start of ``raw`` are the bootstrap's checkpoint.
        self.checkpoint_bytes = 0
        self.state = Mirror.SUBSCRIBING
        self.request_id = 0
        self.ever_ready = False
        self.next_seq = 0
        self.cols = 80
        self.rows = 24
        self.alive = True
        self.exit: ExitStatus | None = None
        self.closed_seen = False
        self.final_seq: int | None = None
        self.foreground: Foreground | None = None
        self.foreground_known = False
        self.shell_pid: int | None = None
        """The pid of the pane's own shell when it prints no C mark (phux integrated
        it as sh): the engine is told whether that shell holds the terminal
        (``Terminal.foreground_changed``), so that it reports a command's start
        when the command's job takes the terminal."""
        self.listed_foreground: Foreground | None = None
        """The foreground of the listing the subscription started from."""
        self.tombstones = 0
        self.lost_bytes = 0
        """Output dropped for us (a tombstone: we fell behind) that the fresh bootstrap
        gave back as state only (its checkpoint), not as bytes, and any gap in live
        output: what reads output as it comes (``bytes_hooks``: wait's line scan)
        never saw those lines."""
        self._lost_from: int | None = None
        """After a tombstone, until the bootstrap that follows is ready: the first seq
        dropped."""
        self._lost_now = 0
        """Of ``lost_bytes``, what the bootstrap under way counted so far (its bytes
        start at its checkpoint, once that comes)."""
        self.last_output = time.monotonic()
        self.output_frames = 0
        self.bytes_hooks: list[BytesHook] = []
        self.resize_hooks: list[ResizeHook] = []
        self.gap_hooks: list[GapHook] = []
        self.reset_hooks: list[ResetHook] = []
        # Engine events are kept only while someone (a watch) consumes them.
        self.event_consumers = 0

    # ------------------------------------------------------------ state

    def foreground_of(self, pane: Pane) -> Foreground | None:
        """What holds the PTY: the last TERMINAL_STATE's, else the listing ``pane``
        came from (the baseline it reports changes against)."""
        return self.foreground if self.foreground_known else pane.foreground

    @property
    def ready(self) -> bool:
        """Bootstrapped and following live output (or closed for good)."""
        return self.state == Mirror.LIVE

    @property
    def caught_up_to(self) -> int:
        return self.next_seq

    @property
    def held_bytes(self) -> int:
        """Output received and not yet fed to the engine (fed when ``engine`` is read)."""
        return self._held_bytes

    def skip_held(self, keep: int) -> int:
        """Drop the output held for the engine but its last ``keep`` bytes, from a line
        start; returns how many bytes were dropped. For a viewer that cannot parse a
        flood and shows only its end (the multiplexer): the engine then approximates
        the screen, and the caller subscribes afresh for the exact state later."""
        if self._held_bytes <= keep:
            return 0
        data = b"".join(self._held)
        tail = data[-keep:]
        cut = tail.find(b"\n")
        if cut >= 0:
            tail = tail[cut + 1 :]
        self._held = [tail] if tail else []
        self._held_bytes = len(tail)
        return len(data) - len(tail)

    @property
    def events_waiting(self) -> bool:
        """The engine holds events not taken yet (without feeding it what is held)."""
        return self._engine is not None and bool(self._engine.screen.events)

    @property
    def engine(self) -> Terminal | None:
        """The replayed state, with every byte received so far fed."""
        if self._held:
            self._flush()
        return self._engine

    def _new_engine(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        if self.raw is not None:
            self.raw.clear()
        self.checkpoint_bytes = 0
        self._held.clear()
        self._held_bytes = 0
        if not self.with_engine:
            return
        from phux.engine import Terminal

        self._engine = Terminal(
            max(cols, 1), max(rows, 1), history=self.history, mark_key=self.mark_key
        )

    def _feed(self, data: bytes) -> None:
        if self.raw is not None:
            self.raw += data
        if self._engine is not None and not self.stale:
            self._held.append(data)
            self._held_bytes += len(data)
            if self._held_bytes >= self.hold_bytes:
                if self.warm:
                    # Nobody reads it: parsing a flood for a later reader costs more
                    # than the bootstrap that reader gets instead.
                    self.stale = True
                    self._held.clear()
                    self._held_bytes = 0
                    return
                self._flush()

    def _flush(self) -> None:
        held = self._held
        data = held[0] if len(held) == 1 else b"".join(held)
        held.clear()
        self._held_bytes = 0
        engine = self._engine
        if engine is not None:
            self.feeds += 1
            engine.feed(data)
            # The server answers terminal queries; a mirror never does.
            engine.take_replies()
            if not self.event_consumers:
                engine.take_events()

    def _resize(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        engine = self.engine  # (what came before the resize is fed first)
        if engine is not None and cols >= 1 and rows >= 1:
            engine.resize(cols, rows)

    # ------------------------------------------------------------ frames

    def handle(self, frame: Frame) -> None:
        """Apply one pushed frame addressed to this terminal."""
        if isinstance(frame, TerminalClosed):
            self.alive = False
            self.exit = frame.status
            self.closed_seen = True
            self.final_seq = frame.final_seq
            self.foreground = None
            return
        if isinstance(frame, TerminalState):
            if self.state == Mirror.SUBSCRIBING and not self.ever_ready:
                # An earlier subscription's, still in flight (the server reports
                # changes from our SUBSCRIBE on): the listing taken after it decides.
                return
            self.foreground = frame.foreground
            self.foreground_known = True
            if self.state == Mirror.LIVE:  # (else BOOTSTRAP_READY tells it, once replayed)
                self._tell_foreground(frame.foreground, baseline=False)
            return
        if isinstance(frame, BootstrapBegin):
            if self.state == Mirror.SUBSCRIBING and frame.request_id != self.request_id:
                return  # a stale bootstrap of an earlier subscription
            self.state = Mirror.BOOTSTRAPPING
            self.next_seq = frame.start_seq
            self._lost_until(frame.start_seq)
            self._new_engine(frame.cols, frame.rows)
            self._reset()
            return
        if self.state == Mirror.SUBSCRIBING:
            return  # output of an earlier subscription, still in flight
        if isinstance(frame, Tombstone):
            self.tombstones += 1
            if self._lost_from is None:
                self._lost_from, self._lost_now = frame.lost_seq, 0
            self.state = Mirror.SUBSCRIBING
            self.request_id = 0
            # Not a loss yet: the fresh bootstrap's journal may still hold the
            # bytes. Listeners see a gap only if the replayed seqs skip ahead.
            return
        if isinstance(frame, BootstrapChunk):
            if frame.checkpoint:
                self._new_engine(self.cols, self.rows)
                if self.raw is not None:
                    self.raw += frame.data
                    self.checkpoint_bytes = len(frame.data)
                if self._engine is not None:
                    # Apart from the journal after it: its marks are read differently.
                    self._engine.feed_checkpoint(frame.data)
                    self._engine.take_replies()
                    if not self.event_consumers:
                        self._engine.take_events()
                self.next_seq = frame.seq
                self._lost_until(frame.seq)
                self._reset()
                return
            self._take_bytes(frame.seq, frame.data)
            return
        if isinstance(frame, Resized):
            self._resize(frame.cols, frame.rows)
            for resize_hook in list(self.resize_hooks):
                resize_hook(frame.seq, frame.cols, frame.rows)
            return
        if isinstance(frame, BootstrapReady):
            if (frame.cols, frame.rows) != (self.cols, self.rows):
                self._resize(frame.cols, frame.rows)
            self.next_seq = max(self.next_seq, frame.next_seq)
            self._lost_from = None
            self.alive = frame.alive and not self.closed_seen
            if frame.exit is not None:
                self.exit = frame.exit
            self.state = Mirror.LIVE
            self.ever_ready = True
            if self.engine is not None:
                # Live from here: OSC 133 C/D marks are stamped as they arrive. The
                # bootstrap's were stamped by the server's checkpoint (phux_t), or
                # are of unknown time (its journal tail).
                self.engine.clock = _unix_ms
            # A command the shell runs already (a job holds the terminal) started
            # before this subscription: its start is history, not news.
            known = self.foreground if self.foreground_known else self.listed_foreground
            self._tell_foreground(known, baseline=True)
            return
        if isinstance(frame, Output):
            if self.state != Mirror.LIVE:
                return
            self.output_frames += 1
            self.last_output = time.monotonic()
            self._take_bytes(frame.seq, frame.data)

    def _lost_until(self, seq: int) -> None:
        """A bootstrap after a tombstone gives bytes back from ``seq`` on: the bytes
        from the first dropped to there are lost (counted as soon as known: a reader
        may be done before the bootstrap is)."""
        if self._lost_from is None:
            return
        # (a journal that goes back to the first byte dropped lost nothing)
        lost = max(0, seq - self._lost_from)
        self.lost_bytes += lost - self._lost_now
        self._lost_now = lost

    def _reset(self) -> None:
        """The engine was rebuilt (after a tombstone): tell those who read the bytes."""
        if self.ever_ready:
            for reset_hook in list(self.reset_hooks):
                reset_hook()

    def _tell_foreground(self, fg: Foreground | None, *, baseline: bool) -> None:
        if self.shell_pid is None:
            return
        engine = self.engine  # (the output that came before the report is fed first)
        if engine is None:
            return
        engine.foreground_changed(fg is None or fg.pgrp == self.shell_pid, baseline=baseline)
        if not self.event_consumers:
            engine.take_events()

    def _take_bytes(self, seq: int, data: bytes) -> None:
        if seq > self.next_seq:
            if self.state == Mirror.LIVE:  # (in a bootstrap: a tombstone's, counted at READY)
                self.lost_bytes += seq - self.next_seq
            for gap_hook in list(self.gap_hooks):
                gap_hook(self.next_seq)
        skip = self.next_seq - seq
        if skip > 0:
            if skip >= len(data):
                return
            seq, data = seq + skip, data[skip:]
        self.received += len(data)
        self._feed(data)
        for bytes_hook in list(self.bytes_hooks):
            bytes_hook(seq, data)
        self.next_seq = seq + len(data)


def _unix_ms() -> int:
    return time.time_ns() // 1_000_000
