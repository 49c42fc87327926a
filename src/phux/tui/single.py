"""The single-pane attach (``phux attach`` of a session with one pane).

Entered from ``phux.tui.attach``; the design (passthrough of live output,
the engine fed in time slices, the preview of a long bootstrap, copy mode and
the wheel) is told in that module's docstring. A multiplexer key hands over
to ``phux.tui.mux`` (``Session.switch_to``).

One class past 600 lines: ``Session`` is one state machine (passthrough, the
engine's backlog, painting and copy mode share its flags); cutting it would
spread those flags over modules.
"""

from __future__ import annotations

import re
import select
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from phux.client.errors import (
    ServerError,
)
from phux.client.keys import is_interrupt
from phux.signed_marks import pane_key
from phux.tui.copy_mode import CopyMode
from phux.tui.copy_reflow import reanchor, remember
from phux.tui.keys import Command, DetachKey, KeyReader
from phux.tui.paint import PUSH_TITLE, Painter
from phux.tui.queries import QueryFilter
from phux.tui.term import (
    Outcome,
    RawTerminal,
    awaiting_reply,
    describe_exit,
    drain_wake,
    read_keys,
    window_size,
)
from phux.tui.term import now_ms as _now_ms
from phux.tui.term import write_all as _write_all
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Detached,
    ExitStatus,
    Frame,
    Input,
    MetaSet,
    Output,
    Resize,
    Resized,
    Role,
    Subscribe,
    TerminalClosed,
    Tombstone,
    Unsubscribe,
)

if TYPE_CHECKING:
    from phux.client.connection import Connection
    from phux.client.selectors import Pane
    from phux.engine import Terminal

HISTORY = 1000
"""Scrollback rows the local engine keeps; the first paint puts them into the
person's terminal's own scrollback (so they can scroll up to what happened)."""

SEND_TIMEOUT = 10.0
"""Seconds a send may block on a server that does not read before attach gives up."""

FOCUS_REFRESH = 30.0
"""Seconds between ``phux.focus_ms`` refreshes while the person types."""

FRAMES_PER_BATCH = 512
FEED_SLICE = 16 * 1024
"""Bytes fed to the engine between checks of the time budget."""
ENGINE_BUDGET = 0.02
"""Seconds of engine work per loop turn while output or input is waiting."""
MAX_BACKLOG = 32 * 1024 * 1024
"""Engine backlog beyond which attach resubscribes instead of replaying it."""
FIRST_PAINT_WAIT = 0.25
"""Seconds the engine may take for an exact first paint before a preview is shown."""
PREVIEW_BYTES = 64 * 1024
"""Journal tail painted first when a bootstrap takes the engine a while."""

_ALT_SCREEN = re.compile(rb"\x1b\[\?(?:1049|1047|47)([hl])")
# A private mode sequence that may set or reset a mouse mode or its encoding.
_MOUSE_MODE = re.compile(rb"\x1b\[\?(?:[0-9]*;)*(?:9|100[0-6]|1015)(?:;[0-9]*)*[hl]")
_MOUSE_REPORT = re.compile(rb"\x1b\[<([0-9]+);[0-9]+;[0-9]+[Mm]")
WHEEL_ON = b"\x1b[?1000h\x1b[?1006h"
"""Asks the person's terminal for button (wheel) reports in SGR form, for copy mode."""
WHEEL_OFF = b"\x1b[?1000l\x1b[?1006l"
COPY_REPAINT = 0.05
"""Seconds between repaints of the copy-mode view while only output changed it."""


class _Backlog:
    """Engine work not done yet, in stream order: bytes to feed, and size changes.

    The person's screen is driven by passthrough; the engine only has to catch
    up before a repaint, so it is fed in time slices (``run``) between the
    loop's reads and writes and never delays a keystroke's echo.
    """

    NEW = 0
    RESIZE = 1

    def __init__(self) -> None:
        self.ops: deque[bytes | tuple[int, int, int]] = deque()
        self.bytes = 0
        self.offset = 0  # consumed part of the head op (bytes)

    def __bool__(self) -> bool:
        return bool(self.ops)

    def clear(self) -> None:
        self.ops.clear()
        self.bytes = 0
        self.offset = 0

    def data(self, data: bytes) -> None:
        if data:
            self.ops.append(data)
            self.bytes += len(data)

    def size(self, kind: int, cols: int, rows: int) -> None:
        self.ops.append((kind, cols, rows))


class Session:
    """One attached terminal: the frame handling, painting and input of attach."""

    def __init__(
        self,
        conn: Connection,
        pane: Pane,
        key: DetachKey,
        *,
        in_fd: int,
        out_fd: int,
        size: tuple[int, int],
    ) -> None:
        self.conn = conn
        self.pane = pane
        self.terminal = pane.terminal
        self.mark_key = pane_key(pane.metadata)
        self.reader = KeyReader(key)
        self.switch_to: Command | None = None
        """A multiplexer key the person pressed: attach goes on as ``phux.tui.mux``."""
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.win = size
        self.engine: Terminal | None = None
        self.backlog = _Backlog()
        self.term_size: tuple[int, int] | None = None  # as of the newest frame
        self.filter = QueryFilter()
        self.painter = Painter()
        self.state = "subscribing"
        self.request_id = 0
        self.next_seq = 0
        self.boot: list[bytes] = []  # journal bytes of the current bootstrap (for a preview)
        self.user_alt = False  # the person's terminal is in the alternate screen
        self.history_done = False  # the scrollback went to the person's terminal
        self.live_ok = False  # the screen matches the stream: output may pass through
        self.need_full = False  # an exact full paint is due (once the engine caught up)
        self.view_dirty = False
        self.view_frame_due: float | None = None
        """When the 2026 frame a view paint showed the screen before stops holding
        it: then the view is painted again, with or without more output."""
        self.closed: ExitStatus | None = None
        self.closed_seen = False
        self.outcome: Outcome | None = None
        self.out = bytearray()
        self.acks: list[int] = []
        self.resize_rid: int | None = None
        self.last_takeover = 0.0
        self.last_focus = time.monotonic()
        self.copy: CopyMode | None = None
        self.copy_dirty = False  # the copy-mode view must be painted (keys, size)
        self.copy_painted = 0.0
        self.wheel_on = False  # attach asked the person's terminal for mouse reports
        self.mouse = False
        """Ask for the wheel (``--mouse``): off, the person's terminal keeps its own wheel
        and selection, as before copy mode existed (issue 25 item 7)."""

    # ------------------------------------------------------------ naming

    @property
    def name(self) -> str:
        return self.pane.session or self.pane.id

    @property
    def reattach(self) -> str:
        return self.pane.session or self.pane.id

    # ------------------------------------------------------------ subscription

    def subscribe(self) -> None:
        cols, rows = self.win
        tid = self.terminal
        self.request_id = self._send(
            lambda r: Subscribe(request_id=r, terminal=tid, role=Role.PRIMARY, cols=cols, rows=rows)
        )

    def resubscribe(self) -> None:
        """Drop the engine and its backlog and ask for a fresh bootstrap."""
        tid = self.terminal
        self.acks.append(self._send(lambda r: Unsubscribe(request_id=r, terminal=tid)))
        self.backlog.clear()
        self.engine = None
        self.state = "subscribing"
        self.subscribe()

    def _send(self, make: Callable[[int], Frame]) -> int:
        """Send a request without waiting for its reply; a server that does not
        read for SEND_TIMEOUT raises DeadlineExceeded (attach then ends)."""
        from phux.client.deadline import Deadline

        return self.conn.submit(make, Deadline.after(SEND_TIMEOUT))

    @property
    def passthrough(self) -> bool:
        """Live output may go to the person's terminal as bytes."""
        return self.live_ok and self.term_size == self.win and self.copy is None

    @property
    def synced(self) -> bool:
        return not self.backlog

    # ------------------------------------------------------------ the engine

    def run_backlog(self, budget: float | None) -> bool:
        """Feed the engine for up to ``budget`` seconds (None: all); True when caught up."""
        from phux.engine import Terminal

        backlog = self.backlog
        stop = None if budget is None else time.monotonic() + budget
        while backlog.ops:
            op = backlog.ops[0]
            if isinstance(op, tuple):
                backlog.ops.popleft()
                kind, cols, rows = op
                cols, rows = max(cols, 1), max(rows, 1)
                engine = self.engine
                if kind == _Backlog.NEW or engine is None:
                    self.engine = Terminal(cols, rows, history=HISTORY, mark_key=self.mark_key)
                elif (engine.cols, engine.rows) != (cols, rows):
                    copy = self.copy if self.copy is not None and self.copy.term is engine else None
                    before = remember(copy) if copy is not None else None
                    engine.resize(cols, rows)
                    if copy is not None and before is not None:
                        reanchor(copy, before)  # a reflow renumbers rows: the view stays put
                        self.copy_dirty = True
                continue
            engine = self.engine
            start = backlog.offset
            piece = op[start : start + FEED_SLICE]
            if engine is not None:
                engine.feed(piece)
                engine.take_replies()  # the server answers queries; attach never does
            backlog.bytes -= len(piece)
            if start + len(piece) >= len(op):
                backlog.ops.popleft()
                backlog.offset = 0
            else:
                backlog.offset = start + len(piece)
            if stop is not None and time.monotonic() >= stop:
                break
        return not backlog.ops

    # ------------------------------------------------------------ frames

    def handle(self, frame: Frame) -> None:
        if isinstance(frame, Detached):
            self.finish("server_gone", "[server went away]", 1)
            return
        if getattr(frame, "terminal", None) != self.terminal:
            return
        if isinstance(frame, Output):
            if self.state == "live":
                self._take(frame.seq, frame.data, live=True)
        elif isinstance(frame, Resized):
            if self.state == "subscribing":
                return
            self.term_size = (frame.cols, frame.rows)
            self.backlog.size(_Backlog.RESIZE, frame.cols, frame.rows)
            if self.state == "live":
                self.need_full = True
                if self.term_size != self.win:
                    self.live_ok = False  # another person's size: views until ours again
        elif isinstance(frame, BootstrapBegin):
            if self.state == "subscribing" and frame.request_id not in (self.request_id, 0):
                return
            self.state = "bootstrapping"
            self.next_seq = frame.start_seq
            self.term_size = (frame.cols, frame.rows)
            self.backlog.clear()
            self.backlog.size(_Backlog.NEW, frame.cols, frame.rows)
            self.boot = []
            self.live_ok = False
        elif isinstance(frame, BootstrapChunk):
            if self.state != "bootstrapping":
                return
            if frame.checkpoint:
                cols, rows = self.term_size or (80, 24)
                self.backlog.clear()
                self.backlog.size(_Backlog.NEW, cols, rows)
                self.backlog.data(frame.data)
                self.next_seq = frame.seq
                self.boot = []
            else:
                self._take(frame.seq, frame.data, live=False)
        elif isinstance(frame, BootstrapReady):
            if self.state != "bootstrapping":
                return
            self.term_size = (frame.cols, frame.rows)
            self.backlog.size(_Backlog.RESIZE, frame.cols, frame.rows)
            self.next_seq = max(self.next_seq, frame.next_seq)
            self.state = "live"
            self.filter.reset()
            self.need_full = True
            if not frame.alive:
                self.closed = frame.exit
                self.closed_seen = True
        elif isinstance(frame, Tombstone):
            self.state = "subscribing"
            self.request_id = 0
            self.live_ok = False
        elif isinstance(frame, TerminalClosed):
            self.closed = frame.status
            self.closed_seen = True

    def _take(self, seq: int, data: bytes, *, live: bool) -> None:
        skip = self.next_seq - seq
        if skip > 0:
            if skip >= len(data):
                return
            seq, data = seq + skip, data[skip:]
        self.next_seq = seq + len(data)
        self.backlog.data(data)
        if not live:
            self.boot.append(data)
        elif self.passthrough:
            passed = self.filter.feed(data)
            if self.wheel_on and _MOUSE_MODE.search(passed):
                # The program's own mouse modes take over (with their encoding).
                self.out += WHEEL_OFF
                self.wheel_on = False
            self.out += passed
            self._track_alternate(passed)
        else:
            self.view_dirty = True

    def _track_alternate(self, data: bytes) -> None:
        if b"\x1b[?" in data:
            toggles = _ALT_SCREEN.findall(data)
            if toggles:
                self.user_alt = toggles[-1] == b"h"

    # ------------------------------------------------------------ painting

    def after_batch(self, budget: float | None = None) -> None:
        """Let the engine catch up (within ``budget``), paint what is due, settle the outcome."""
        if self.state != "live":
            return  # take the whole bootstrap in first: its end decides preview or exact
        if self.backlog.bytes > MAX_BACKLOG:
            self.resubscribe()  # cheaper to start again than to replay all of it
        if budget is not None and self.state == "live" and not self.live_ok:
            budget = max(budget, FIRST_PAINT_WAIT)  # an exact first paint, if it is quick
        caught_up = self.run_backlog(budget)
        engine = self.engine
        if self.copy is not None and self.copy.term is not engine and caught_up:
            self.leave_copy()  # a fresh bootstrap replaced the engine it showed
        if self.copy is not None:
            if caught_up and self.state == "live":
                self._paint_copy(self.copy)
        elif self.state == "live" and engine is not None:
            if caught_up:
                if self.term_size == self.win:
                    if self.need_full or not self.live_ok:
                        self._paint_full(engine)
                elif (self.need_full or self.view_dirty or self._frame_passed()) and (
                    self.resize_rid is None
                ):
                    # (With our RESIZE on its way, no flash of a view.)
                    cols, rows = self.win
                    self.out += self.painter.view(engine, cols, rows).encode()
                    self.need_full = self.view_dirty = False
                    self.view_frame_due = engine.frame_deadline
            elif not self.live_ok and self.term_size == self.win:
                self._paint_preview()
        if self._frame_passed():  # (not repainted as a view above: nothing to wait for)
            self.view_frame_due = None
        if caught_up and self.state == "live" and engine is not None:
            self._want_wheel(engine)
        if self.closed_seen and self.state == "live" and self.outcome is None:
            if not caught_up and not self.live_ok:
                self.run_backlog(None)
                self.after_batch(None)
                return
            self.finish("exited", f"[{self.name}: {describe_exit(self.closed)}]", 0)

    # ------------------------------------------------------------ copy mode

    def enter_copy(self, *, wheel: bool = False) -> None:
        """Show copy mode over the engine (caught up first); ``wheel``: entered by the
        wheel, so scrolling back to the bottom leaves (tmux's ``copy-mode -e``)."""
        if self.copy is not None or self.state != "live":
            return
        self.run_backlog(None)
        if self.engine is None:
            return
        cols, rows = self.win
        self.copy = CopyMode(
            self.engine,
            cols,
            rows,
            clipboard=self.filter.allow_clipboard,
            exit_at_bottom=wheel,
        )
        self.copy_dirty = True

    def leave_copy(self) -> None:
        self.copy = None
        self.need_full = True  # the live screen again, once the engine caught up
        self.out += b"\x1b[0m"

    def copy_keys(self, data: bytes) -> None:
        copy = self.copy
        assert copy is not None
        result = copy.feed(data)
        self.out += result.clipboard
        if result.done:
            self.leave_copy()
        else:
            self.copy_dirty = True

    def _paint_copy(self, copy: CopyMode) -> None:
        now = time.monotonic()
        # Output only moves the indicator (the rows shown stay): repainted at most
        # every COPY_REPAINT seconds under a flood.
        output = self.view_dirty and now - self.copy_painted >= COPY_REPAINT
        if self.copy_dirty or self.need_full or output:
            self.out += copy.paint().encode()
            self.copy_painted = now
            self.copy_dirty = self.need_full = self.view_dirty = False

    def _frame_passed(self) -> bool:
        due = self.view_frame_due
        return due is not None and time.monotonic() >= due

    def wake_in(self) -> float | None:
        """Seconds until the loop has work without input (a copy-mode repaint held
        back to COPY_REPAINT, a view painted during a 2026 frame whose bound
        passes); None: none."""
        if self.state != "live":
            return None  # (not live: painting waits for a bootstrap's frames)
        due = self.view_frame_due
        frame = None if due is None or self.copy is not None else max(0.0, due - time.monotonic())
        if self.copy is None or not self.view_dirty:
            return frame
        copy = max(0.0, COPY_REPAINT - (time.monotonic() - self.copy_painted))
        return copy if frame is None else min(copy, frame)

    def _want_wheel(self, engine: Terminal) -> None:
        """Mouse reports from the person's terminal while the program in the main
        screen wants none: the wheel then scrolls into copy mode."""
        want = self.mouse and not engine.alternate and not engine.modes.mouse
        if want and not self.wheel_on:
            self.out += WHEEL_ON
        elif self.wheel_on and not want:
            self.out += WHEEL_OFF + _program_mouse(engine)
        self.wheel_on = want

    def _mouse_input(self, data: bytes) -> bytes:
        """Take out the reports attach asked for (the program asked for none): a wheel
        up enters copy mode; the rest of ``data`` is for the program."""
        wheel_up = False
        rest = bytearray()
        at = 0
        for m in _MOUSE_REPORT.finditer(data):
            rest += data[at : m.start()]
            at = m.end()
            if (int(m.group(1)) & ~28) == 64 and m.group(0)[-1:] == b"M":
                wheel_up = True
        rest += data[at:]
        if wheel_up:
            self.enter_copy(wheel=True)
            if self.copy is not None:
                self.copy.wheel(up=True)
        return bytes(rest)

    def _paint_full(self, engine: Terminal) -> None:
        # The first paint also hands the scrollback to the person's terminal.
        history = 0 if self.history_done else HISTORY
        self.history_done = True
        self.out += self.painter.full(engine, user_alt=self.user_alt, history=history).encode()
        self.user_alt = engine.alternate
        self.live_ok = True
        self.need_full = self.view_dirty = False
        self.boot = []

    def _paint_preview(self) -> None:
        """A quick paint from the journal's tail while the engine replays it all.

        Exact for the common case (recent output decides the screen); the
        exact paint follows once the engine has caught up (``need_full``).
        """
        from phux.engine import Terminal

        cols, rows = self.term_size or self.win
        tail = b"".join(self.boot)[-PREVIEW_BYTES:]
        cut = tail.find(b"\n")
        if len(tail) == PREVIEW_BYTES and cut >= 0:
            tail = tail[cut + 1 :]
        preview = Terminal(max(cols, 1), max(rows, 1), history=0)
        preview.feed(tail)
        self.out += self.painter.full(preview, user_alt=self.user_alt).encode()
        self.history_done = True  # its scrollback would land after the live output
        self.user_alt = preview.alternate
        self.live_ok = True
        self.need_full = True
        self.boot = []

    def collect_acks(self) -> None:
        if self.state == "subscribing" and self.request_id:
            try:
                self.conn.take_reply(self.request_id)
            except ServerError as exc:  # e.g. the terminal ended before we subscribed
                self.finish("exited", f"[{self.name}: {exc.message}]", 1)
        if self.resize_rid is not None:
            try:
                if self.conn.take_reply(self.resize_rid) is not None:
                    self.resize_rid = None
            except ServerError:
                self.resize_rid = None
        if not self.acks:
            return
        # An ERROR: the terminal exited under the keystroke, TERMINAL_CLOSED follows.
        self.acks = [rid for rid in self.acks if awaiting_reply(self.conn, rid)]

    def finish(self, reason: str, message: str, exit_code: int) -> None:
        if self.outcome is None:
            self.outcome = Outcome(reason, message, exit_code)

    # ------------------------------------------------------------ input and size

    def on_keys(self, data: bytes) -> None:
        for item in self.reader.feed(data):
            if isinstance(item, bytes):
                self._keys(item)
                continue
            if item.name == "detach":
                self.finish(
                    "detached",
                    f"[detached from {self.name} ({self.pane.id}); "
                    f"reattach with: phux attach {self.reattach}]",
                    0,
                )
                return  # what follows is dropped
            if item.name == "copy-mode":
                self.enter_copy()
                continue  # what follows goes to copy mode
            if item.name.startswith(("resize-", "layout-")):
                continue  # one pane fills the window: nothing to resize (as in tmux)
            # A split, a new window...: the multiplexer takes over from here.
            self.switch_to = item
            self.finish("multiplex", "", 0)
            return

    def _keys(self, payload: bytes) -> None:
        if self.copy is not None:
            self.copy_keys(payload)
            return
        if self.wheel_on and b"\x1b[<" in payload:
            payload = self._mouse_input(payload)
            if self.copy is not None:  # the wheel entered it: the rest is for it too
                self.copy_dirty = True
                if payload:
                    self.copy_keys(payload)
                return
        if payload:
            self._typed(payload)

    def _typed(self, payload: bytes) -> None:
        if self.term_size != self.win and self.state == "live":
            # Another person resized it; typing takes the size back.
            now = time.monotonic()
            if now - self.last_takeover > 0.5:
                self.last_takeover = now
                self.send_resize()
        tid = self.terminal
        # An interrupt key jumps ahead of (and discards) input queued by others.
        urgent = is_interrupt(payload)
        self.acks.append(
            self._send(lambda r: Input(request_id=r, terminal=tid, data=payload, urgent=urgent))
        )
        now = time.monotonic()
        if now - self.last_focus > FOCUS_REFRESH:
            self.last_focus = now
            self.acks.append(
                self._send(
                    lambda r: MetaSet(
                        request_id=r,
                        key="phux.focus_ms",
                        value=str(_now_ms()).encode(),
                        terminal=tid,
                    )
                )
            )

    def send_resize(self) -> None:
        cols, rows = self.win
        tid = self.terminal
        if self.resize_rid is not None:
            self.acks.append(self.resize_rid)
        self.resize_rid = self._send(
            lambda r: Resize(request_id=r, terminal=tid, cols=cols, rows=rows)
        )

    def on_winch(self) -> None:
        size = window_size(self.out_fd)
        if size == self.win:
            return
        self.win = size
        self.send_resize()
        if self.copy is not None:
            self.copy.resize(*size)
            self.copy_dirty = True

    # ------------------------------------------------------------ output

    def flush(self) -> None:
        if self.out:
            data = bytes(self.out)
            self.out.clear()
            _write_all(self.out_fd, data)

    def leave_bytes(self) -> bytes:
        return self.painter.leave(user_alt=self.user_alt).encode()

    def begin(self) -> None:
        self.out += PUSH_TITLE.encode()
        self.subscribe()

    def run(self, in_fd: int, wake_r: int, pending: dict[str, bool], raw: RawTerminal) -> None:
        _loop(self, in_fd, wake_r, pending, raw)


def _program_mouse(engine: Terminal) -> bytes:
    """The program's own mouse modes, to set again after attach's are reset."""
    mode = engine.screen.mode
    return b"".join(
        b"\x1b[?%dh" % m for m in (9, 1000, 1002, 1003, 1005, 1006, 1015) if (m << 5) in mode
    )


def _loop(
    session: Session, in_fd: int, wake_r: int, pending: dict[str, bool], raw: RawTerminal
) -> None:
    conn = session.conn
    sock_fd = conn.fileno()
    more = False
    while session.outcome is None:
        busy = more or bool(session.backlog)
        timeout = 0 if busy else session.wake_in()
        readable, _, _ = select.select([in_fd, sock_fd, wake_r], [], [], timeout)
        if wake_r in readable:
            drain_wake(wake_r)
        if pending["cont"]:
            pending["cont"] = False
            raw.reapply()
            session.need_full = True
            session.live_ok = False
            session.wheel_on = False  # the terminal may have been reset meanwhile
        if pending["winch"]:
            pending["winch"] = False
            session.on_winch()
        if in_fd in readable:
            data = read_keys(in_fd)
            if not data:
                session.finish("detached", f"[input closed: detached from {session.name}]", 0)
                break
            session.on_keys(data)
        more = False
        if sock_fd in readable or conn.has_buffered:
            for _ in range(FRAMES_PER_BATCH):
                frame = conn.take_pushed()
                if frame is None:
                    if not conn.read_nowait():
                        break
                    continue
                session.handle(frame)
            else:
                more = True
        session.flush()
        session.collect_acks()
        session.after_batch(ENGINE_BUDGET)
        session.flush()
