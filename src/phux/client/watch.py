"""``watch``: a pane's live events, derived by the client's own engine.

From the bytes (the engine's events): ``title_changed`` (OSC 0/2), ``bell``
(BEL), ``command_started`` (OSC 133 C, with the command line) and
``command_finished`` (OSC 133 D: exit code, duration, command line; from the
shell integration phux injects, or any shell printing OSC 133). sh and dash
print no C mark: the mirror tells the engine what holds the terminal
(TERMINAL_STATE), and the engine reports the start when the command's job
takes it, or with the D (a builtin); spec/shell-integration.md. From the
stream itself: ``dirty`` (once per batch of output), ``idle`` (no output for
``idle_ms``, default 500 ms, since the watch began or since a dirty batch).
From the server's lifecycle:
``pane_spawned`` (a new terminal joined the watched pane's session) and
``pane_closed`` (the watched terminal ended; the stream ends after it).

The stream is an iterator; it ends on the ``until_event`` (``met`` becomes
true), on the timeout (``timed_out``), or after ``pane_closed``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded, InvalidArgument
from phux.client.line_scan import LineScan
from phux.client.mirror import FLOOD_HOLD_BYTES, HOLD_BYTES
from phux.client.models import (
    WATCH_EVENT_NAMES,
    Bell,
    CommandFinished,
    CommandStarted,
    Dirty,
    Idle,
    PaneClosed,
    PaneSpawned,
    TitleChanged,
    WatchEvent,
    event_name,
)
from phux.client.selectors import KEY_SESSION
from phux.wire.frames import Exited, Frame, TerminalSpawned

if TYPE_CHECKING:
    from phux.client.core import ClientCore
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.engine import Terminal

DEFAULT_IDLE_MS = 500


class WatchStream(Iterator[WatchEvent]):
    def __init__(
        self,
        client: ClientCore,
        target: str | None,
        *,
        until_event: str | None = None,
        idle_ms: int | None = None,
        timeout: float | None = None,
        deadline: Deadline,
    ) -> None:
        if until_event is not None and until_event not in WATCH_EVENT_NAMES:
            names = ", ".join(WATCH_EVENT_NAMES)
            raise InvalidArgument(f"unknown event {until_event!r} (events: {names})")
        if idle_ms is not None and idle_ms < 0:
            raise InvalidArgument("idle must be a non-negative number of milliseconds")
        self.client = client
        self.until_event = until_event
        self.idle_s = (DEFAULT_IDLE_MS if idle_ms is None else idle_ms) / 1000.0
        self.limit = deadline.earliest(Deadline.after(timeout))
        self.met = False
        self.timed_out = False
        self._queue: deque[WatchEvent] = deque()
        self._done = False
        self._closed_emitted = False
        self.pane: Pane = client.resolve(target, deadline)
        self._name = self.pane.id  # a read: the session's active pane stays
        client.subscribe_events(deadline)
        self._mirror: Mirror | None = client.mirror(self.pane, deadline)
        self._mirror.event_consumers += 1
        # Plain output (text, SGRs, CR LFs) makes no events: while it floods, the engine
        # is not read, and the mirror feeds it in big feeds (client/line_scan.py).
        self._scan = LineScan()
        self._news: list[bytes] = []
        self._tombstones = self._mirror.tombstones
        self._mirror.hold_bytes = FLOOD_HOLD_BYTES
        self._mirror.bytes_hooks.append(self._on_bytes)
        self._mirror.resize_hooks.append(self._stop_scan)
        self._mirror.gap_hooks.append(self._stop_scan)
        engine = self._read_engine(self._mirror)
        if engine is not None:
            engine.take_events()  # history, not news
        # Armed from the start: a pane already quiet is idle once idle_ms pass with
        # no output (else `--until idle` on an idle pane would wait forever).
        self._dirty_since: float | None = self._mirror.last_output
        self._seen_frames = self._mirror.output_frames
        client.add_sink(self._on_frame)

    # ------------------------------------------------------------ iterator

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> WatchEvent:
        while not self._queue:
            if self._done:
                self.close()
                raise StopIteration
            self._step()
        event = self._queue.popleft()
        if self.until_event is not None and event_name(event) == self.until_event:
            self.met = True
            self._done = True
            self._queue.clear()
        return event

    def close(self) -> None:
        self._done = True
        self.client.remove_sink(self._on_frame)
        if self._mirror is not None:
            mirror = self._mirror
            mirror.event_consumers -= 1
            mirror.bytes_hooks.remove(self._on_bytes)
            mirror.resize_hooks.remove(self._stop_scan)
            mirror.gap_hooks.remove(self._stop_scan)
            mirror.hold_bytes = HOLD_BYTES
            self.client.release(mirror)
            self._mirror = None

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ work

    def _on_frame(self, frame: Frame) -> None:
        if isinstance(frame, TerminalSpawned) and frame.request_id is None:
            session = self.pane.session
            if session is None:
                return
            for entry in frame.metadata:
                if entry.key == KEY_SESSION and entry.value == session.encode():
                    self._queue.append(PaneSpawned(terminal=f"@{frame.terminal}"))

    def _step(self) -> None:
        mirror = self._mirror
        if mirror is None:
            self._done = True
            return
        if not mirror.alive:
            self._emit_closed(mirror)
            return
        wake = self.limit
        if self._dirty_since is not None:
            wake = wake.earliest(Deadline(at=mirror.last_output + self.idle_s))
        try:
            self.client.pump(wake)
        except DeadlineExceeded:
            if self.limit.expired():
                self.timed_out = True
                self._done = True
                return
        self._collect(mirror)

    def _on_bytes(self, seq: int, data: bytes) -> None:
        if self._scan.active:
            self._news.append(data)

    def _stop_scan(self, *_: int) -> None:
        self._scan.stop()  # a resize, or output lost: the engine is read again

    def _read_engine(self, mirror: Mirror) -> Terminal | None:
        """The engine, fed all that came; the scan starts again from there."""
        self._news.clear()
        engine = mirror.engine
        self._tombstones = mirror.tombstones
        self._scan.start(None if engine is None else engine.plain_line_prefix(0))
        return engine

    def _plain_since(self, mirror: Mirror) -> bool:
        """Only plain output came since the engine was last read, and nothing else
        (a foreground change, which sh panes' command starts are inferred from) left
        events in it: reading it would find no event."""
        if not self._scan.active or mirror.tombstones != self._tombstones:
            return False
        data = b"".join(self._news)
        self._news.clear()
        return self._scan.feed(data) is not None and not mirror.events_waiting

    def _collect(self, mirror: Mirror) -> None:
        engine = None if self._plain_since(mirror) else self._read_engine(mirror)
        if engine is not None:
            for ev in engine.take_events():
                name = type(ev).__name__
                if name == "TitleChanged":
                    self._queue.append(TitleChanged(terminal=self._name, title=ev.title))  # type: ignore[union-attr]
                elif name == "Bell":
                    self._queue.append(Bell(terminal=self._name))
                elif name == "CommandStarted":
                    command = ev.command  # type: ignore[union-attr]
                    self._queue.append(CommandStarted(terminal=self._name, command=command))
                elif name == "CommandFinished":
                    started, finished = ev.started_ms, ev.finished_ms  # type: ignore[union-attr]
                    duration = None
                    if started is not None and finished is not None:
                        duration = max(0, finished - started)
                    self._queue.append(
                        CommandFinished(
                            terminal=self._name,
                            exit_code=ev.exit_code,  # type: ignore[union-attr]
                            duration_ms=duration,
                            command=ev.command,  # type: ignore[union-attr]
                        )
                    )
        if mirror.output_frames != self._seen_frames:
            self._seen_frames = mirror.output_frames
            self._queue.append(Dirty(terminal=self._name))
            self._dirty_since = mirror.last_output
        elif self._dirty_since is not None and time.monotonic() >= mirror.last_output + self.idle_s:
            self._dirty_since = None
            self._queue.append(Idle(terminal=self._name))
        if not mirror.alive:
            self._emit_closed(mirror)

    def _emit_closed(self, mirror: Mirror) -> None:
        if self._closed_emitted:
            self._done = True
            return
        self._closed_emitted = True
        status = mirror.exit
        if isinstance(status, Exited):
            event = PaneClosed(terminal=self._name, exit_status=status.code)
        elif status is not None:
            event = PaneClosed(terminal=self._name, signal=status.signal)
        else:
            event = PaneClosed(terminal=self._name)
        self._queue.append(event)
        self._done = True
