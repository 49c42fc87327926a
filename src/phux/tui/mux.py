"""``phux attach`` as a multiplexer: a session's window with all its panes.

Chosen when the window attached to has more than one pane, or when the
person presses a multiplexer key (``C-b %``, ``C-b c``...) in the single-pane
attach (``phux.tui.attach``, which stays what attach is for a person who
never splits).

Each pane of the current window is one subscription on the one connection:
PRIMARY with the size of its place in the layout (so the person's window
size, shared among the panes, becomes their sizes; agents' reads never
resize), replayed into a ``phux.client.mirror.Mirror`` with its own engine.
Nothing is passed through: every frame is composed from the mirrors
(``phux.tui.compose``) and only the cells that changed are drawn, at most one
frame per FRAME_INTERVAL, and only when something changed (the loop blocks
in ``select`` while nothing does). The engines parse the programs' output,
so terminal queries, clipboard writes and other strings never reach the
person's terminal from a pane.

The layout of each window is L3 metadata (``phux.layout.SESSION.WINDOW``,
spec/L3.md §2, ``phux.tui.layout``), so a second person and a re-attach see
the same one. A metadata subscription on ``phux.`` tells of panes and
windows agents create, rename or kill: the session is listed again (at
most every RELIST_INTERVAL) and the layouts reconciled with the panes that
exist. The active pane of each window starts as the L3 active pane (greatest
``phux.focus_ms``) and then moves only when the person moves it (an agent's
``send-keys`` elsewhere does not take the person's keyboard with it); the
person's moves write ``phux.focus_ms`` as every attached client does.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from phux.client.errors import PhuxError, ServerError
from phux.client.keys import is_interrupt
from phux.client.mirror import Mirror
from phux.client.pane_state import project_mirror
from phux.engine.events import Bell, CommandFinished
from phux.tui import layout as lay
from phux.tui.compose import Canvas, Damage, copy_rows, pane_rows
from phux.tui.copy_mode import CopyMode
from phux.tui.keys import Command, DetachKey, KeyReader
from phux.tui.overlay import Overlay, draw, help_overlay, key_tokens, tree_overlay
from phux.tui.paint import PUSH_TITLE, Painter
from phux.tui.status import PaneFacts, StatusLine, WindowTab, segments, state_text
from phux.tui.term import (
    Outcome,
    describe_exit,
    drain_wake,
    now_ms,
    read_keys,
    window_size,
    write_all,
)
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Detached,
    Frame,
    Input,
    InputWritten,
    Kill,
    ListTerminals,
    MetadataChanged,
    MetaSet,
    MetaSubscribe,
    Output,
    Resize,
    Resized,
    Role,
    Subscribe,
    TerminalClosed,
    TerminalList,
    TerminalState,
    Tombstone,
    Unsubscribe,
)
from phux.wire.handshake import MINOR_AUDIT

if TYPE_CHECKING:
    from phux.client import Client
    from phux.client.connection import Connection
    from phux.client.selectors import Pane

FRAME_INTERVAL = 0.016
"""At most one frame per this many seconds, however fast the panes print."""
RELIST_INTERVAL = 0.05
"""Metadata changes are gathered this long before the session is listed again."""
SEND_TIMEOUT = 10.0
FRAMES_PER_TURN = 64
"""Frames taken from one connection per loop turn before the next is served."""
MAX_HELD = 16 * 1024
"""Output of a pane waiting for its engine beyond which all but its last KEEP_TAIL
bytes are dropped (a flood faster than this client parses: tmux parses it in C)."""
KEEP_TAIL = 4 * 1024
QUIET_RESYNC = 0.3
"""Seconds a pane whose output was dropped must be quiet before it is subscribed
afresh, for its exact screen (the server's checkpoint is then recent)."""
ENGINE_BUDGET = 0.008
"""Seconds of engine work a frame spends on panes other than the active one; the
rest waits for the next frame, so a flood elsewhere never holds up an echo."""
CALL_TIMEOUT = 10.0
HISTORY = 2000
BACKGROUND_HISTORY = 100
ALERT_INTERVAL = 0.5
"""Seconds between reads of the other windows' panes for bells and failed commands."""
LAYOUT_PREFIX = "phux.layout."
BORDER = "\x1b[0m"
ACTIVE_BORDER = "\x1b[0;32m"
MOUSE_ON = "\x1b[?1000h\x1b[?1006h"
MOUSE_OFF = "\x1b[?1000l\x1b[?1006l"
_RELIST_KEYS = frozenset(
    {"phux.session", "phux.window", "phux.window_name", "phux.pane", "phux.slot"}
)


def layout_key(session: str, window: int) -> str:
    """The global metadata key of a window's layout (spec/L3.md §2)."""
    return f"{LAYOUT_PREFIX}{session}.{window}"


@dataclass
class View:
    """One pane of the current window, subscribed."""

    pane: Pane
    mirror: Mirror
    size: tuple[int, int] | None = None  # what we asked the server for
    drawn: tuple[int, Any, int] | None = None  # (generation, rect, top) last composed
    typed_by: str | None = None
    skipped: bool = False  # output was dropped unparsed: the screen is approximate
    background: bool = False  # a pane of another window: a viewer, for its alerts
    conn: Connection | None = None
    """The pane's own connection (a shown pane): its output never queues behind
    another pane's flood on the way to this client (None: the shared one)."""
    ours: bytearray = field(default_factory=bytearray)  # our input not yet seen written


class Mux:
    def __init__(
        self,
        client: Client,
        conn: Connection,
        key: DetachKey,
        pane: Pane,
        *,
        out_fd: int,
        size: tuple[int, int],
        allow_clipboard: bool = False,
    ) -> None:
        self.client = client
        self.allow_clipboard = allow_clipboard
        self.mouse = True
        """Take the person's mouse (click selects a pane, wheel enters copy mode);
        ``--no-mouse``: the terminal keeps its own, programs in panes get none either."""
        self.copy: CopyMode | None = None
        self.copy_tid: int | None = None
        """Copy mode (``phux.tui.copy_mode``) over this pane's engine, while it is up."""
        self.conn = conn
        self.key = key
        self.reader = KeyReader(key, mouse=True)
        self.out_fd = out_fd
        self.win = size
        self.session = pane.session or ""
        self.window = pane.window or 0
        self.panes: list[Pane] = []  # the session's, from the last listing
        self.global_meta: dict[str, bytes] = {}
        self.layouts: dict[int, lay.Node] = {}
        self.active: dict[int, int] = {pane.window or 0: pane.terminal}  # window -> terminal
        self.views: dict[int, View] = {}
        self.dismissed: set[int] = set()  # panes the person killed: gone from the layout
        self.zoomed = False
        self.painter = Painter()
        self.damage = Damage(*size)
        self.out = bytearray()
        self.acks: list[int] = []
        self.dirty = True
        self.relist_at: float | None = None
        self.next_frame = 0.0
        self.frames = 0  # drawn so far (for tests and benchmarks)
        self.prompt: tuple[str, str, Callable[[str], None]] | None = None
        self.confirm: tuple[str, Callable[[], None]] | None = None
        self.message: str | None = None
        self.message_until = 0.0
        self.overlay: Overlay | None = None
        self.outcome: Outcome | None = None
        self.first: Command | None = None
        """A key the single-pane attach handed over with (it runs first)."""
        self.canvas = Canvas(*size)
        self._borders: object = None
        self._tail: str | None = None
        self.input_events = conn.minor >= MINOR_AUDIT
        self.last_takeover = 0.0
        self.read_ahead = False  # a blocking call read frames the loop has not handled
        self.preview: View | None = None
        """The pane the tree (``w``) previews, when no other subscription follows it."""
        self.alerted: set[int] = set()  # windows with a bell or a failed command unseen
        self.alerts_at: float | None = None

    # ------------------------------------------------------------ requests

    def _send(self, make: Callable[[int], Frame], conn: Connection | None = None) -> int:
        from phux.client.deadline import Deadline

        return (conn or self.conn).submit(make, Deadline.after(SEND_TIMEOUT))

    def _call(self, make: Callable[[int], Frame]) -> Frame:
        from phux.client.deadline import Deadline

        # Waiting for the reply reads the frames before it: the loop handles them next.
        self.read_ahead = True
        return self.conn.call(make, Deadline.after(CALL_TIMEOUT))

    def start(self) -> None:
        self.acks.append(self._send(lambda r: MetaSubscribe(request_id=r, prefix="phux.")))
        self.relist()

    # ------------------------------------------------------------ the session

    def relist(self) -> None:
        """List the terminals again; reconcile windows, layouts and subscriptions."""
        self.relist_at = None
        reply = self._call(lambda r: ListTerminals(request_id=r))
        assert isinstance(reply, TerminalList)
        from phux.client.selectors import Pane

        self.global_meta = {e.key: e.value for e in reply.global_metadata}
        panes = [Pane.from_wire(info) for info in reply.terminals]
        mine = [p for p in panes if p.session == self.session and p.terminal not in self.dismissed]
        self.panes = sorted(mine, key=Pane.order_key)
        if not any(p.alive for p in self.panes):
            # The exit status of the pane the person was in, else of the last pane.
            closed = [p for p in self.panes if p.exit is not None]
            mine = [p for p in closed if p.terminal == self.active.get(self.window)]
            what = describe_exit((mine or closed)[-1].exit) if closed else "exited"
            self.finish("exited", f"[{self.session}: {what}]", 0)
            return
        for w in self.windows():
            self._reconcile(w)
        # Exited panes no layout holds (killed with x) are gone from the view.
        self.panes = [
            p
            for p in self.panes
            if p.alive or (p.pane or 0) in lay.panes(self.layouts.get(p.window or 0, -1))
        ]
        if self.window not in self.windows():
            best = max(
                (p for p in self.panes if p.alive),
                key=lambda p: (p.focus_ms or -1, p.terminal),
            )
            self.window = best.window or 0
        self._subscribe_window()
        self.dirty = True

    def windows(self) -> list[int]:
        return sorted({p.window or 0 for p in self.panes})

    def window_panes(self, window: int) -> list[Pane]:
        return [p for p in self.panes if (p.window or 0) == window]

    def area(self) -> lay.Rect:
        cols, rows = self.win
        return lay.Rect(0, 0, cols, max(rows - 1, 1))

    def _reconcile(self, window: int) -> None:
        panes = self.window_panes(window)
        by_index = {p.pane or 0: p for p in panes}
        stored_text = self.global_meta.get(layout_key(self.session, window))
        stored = lay.parse(stored_text.decode("utf-8", "replace")) if stored_text else None
        base = stored if stored is not None else self.layouts.get(window)
        # An exited pane keeps its place (marked) until the server forgets it, but
        # one no layout holds (killed with x) is not brought back.
        placed = set(lay.panes(base)) if base is not None else set()
        panes = [p for p in panes if p.alive or (p.pane or 0) in placed]
        node = lay.reconcile(base, [p.pane or 0 for p in panes], self.area())
        if node is None:
            self.layouts.pop(window, None)
            return
        self.layouts[window] = node
        active = self.active.get(window)
        if active is None or active not in {p.terminal for p in panes}:
            live = [p for p in panes if p.alive] or panes
            pick = max(live, key=lambda p: (p.focus_ms or -1, -(p.pane or 0)))
            self.active[window] = pick.terminal
        if by_index and (stored is None or stored != node) and len(panes) > 1:
            self._store_layout(window, node)

    def _store_layout(self, window: int, node: lay.Node) -> None:
        text = lay.format_layout(node).encode()
        key = layout_key(self.session, window)
        if self.global_meta.get(key) == text:
            return
        self.global_meta[key] = text
        self.acks.append(self._send(lambda r: MetaSet(request_id=r, key=key, value=text)))

    def geometry(self) -> dict[int, lay.Rect]:
        """Terminal id -> its rect, for the visible panes of the current window."""
        node = self.layouts.get(self.window)
        if node is None:
            return {}
        by_index = {p.pane or 0: p.terminal for p in self.window_panes(self.window)}
        area = self.area()
        active = self.active.get(self.window)
        if self.zoomed and active is not None:
            return {active: area}
        geo = lay.geometry(node, area)
        return {by_index[i]: r for i, r in geo.items() if i in by_index}

    def _subscribe_window(self) -> None:
        """PRIMARY subscriptions for the current window's panes (sized to their
        places); viewer ones, in the background, for the other windows' live panes
        (their bells and failed commands mark their windows on the status line)."""
        front = {p.terminal: p for p in self.window_panes(self.window)}
        back = {p.terminal: p for p in self.panes if p.alive and p.terminal not in front}
        for tid, old in list(self.views.items()):
            if tid not in front and tid not in back:
                self._unsubscribe(tid)
            elif old.background != (tid in back):
                self._unsubscribe(tid)  # its role changes: subscribed again below
        geo = self.geometry()
        for tid, pane in [*front.items(), *back.items()]:
            view = self.views.get(tid)
            if view is not None:
                view.pane = pane
                continue
            background = tid in back
            mirror = Mirror(tid, history=BACKGROUND_HISTORY if background else HISTORY)
            from phux.signed_marks import pane_key, pane_shell

            mirror.mark_key = pane_key(pane.metadata)
            if pane_shell(pane.metadata) == "sh":
                mirror.shell_pid = pane.pid
                mirror.listed_foreground = pane.foreground
            view = View(pane, mirror, background=background)
            self.views[tid] = view
            rect = geo.get(tid)
            if background:
                mirror.event_consumers = 1  # its bells and commands are read
            elif pane.alive and rect is not None:
                view.size = (max(rect.w, 1), max(rect.h, 1))
            inp = self.input_events and not background
            if not background:
                view.conn = self._pane_connection()
            mirror.request_id = self._send(_subscribe(tid, view.size, inp), view.conn)
        self.resize_panes()

    def _pane_connection(self) -> Connection | None:
        """A connection of its own for a shown pane (local servers; None: share ours)."""
        if self.client.host is not None:
            return None
        from phux.client.connection import Connection
        from phux.client.deadline import Deadline

        try:
            return Connection.open(
                self.client.socket_path, Deadline.after(CALL_TIMEOUT), "phux-attach"
            )
        except PhuxError:
            return None  # (the server's connection limit, say): the shared one serves

    def check_alerts(self) -> None:
        """Read the background panes' engine events: a bell or a failed command marks
        the pane's window until the person looks at it."""
        self.alerts_at = None
        for view in self.views.values():
            mirror = view.mirror
            if not view.background or not mirror.ready:
                continue
            engine = mirror.engine
            if engine is None:
                continue
            for event in engine.take_events():
                failed = isinstance(event, CommandFinished) and event.exit_code not in (None, 0)
                if failed or isinstance(event, Bell):
                    window = view.pane.window or 0
                    if window != self.window and window not in self.alerted:
                        self.alerted.add(window)
                        self.dirty = True

    def _unsubscribe(self, tid: int) -> None:
        view = self.views.pop(tid, None)
        if view is not None and view.conn is not None:
            view.conn.close()  # its subscription ends with it
            return
        self.acks.append(self._send(lambda r: Unsubscribe(request_id=r, terminal=tid)))

    def close(self) -> None:
        """Close the panes' own connections (the shared one is the client's)."""
        for view in self.views.values():
            if view.conn is not None:
                view.conn.close()

    def connections(self) -> list[Connection]:
        """Every connection frames come on: the active pane's first, the shared one next."""
        active = self.active_view()
        first = [active.conn] if active is not None and active.conn is not None else []
        rest = [v.conn for v in self.views.values() if v.conn is not None and v is not active]
        return [*first, self.conn, *rest]

    def resize_panes(self, *, force: bool = False) -> None:
        """Ask for each visible live pane's size to be its place's size."""
        for tid, rect in self.geometry().items():
            view = self.views.get(tid)
            if view is None or not view.mirror.alive:
                continue
            size = (max(rect.w, 1), max(rect.h, 1))
            if view.size == size and not force:
                continue
            view.size = size
            self.acks.append(self._send(_resize(tid, size)))

    # ------------------------------------------------------------ frames

    def handle(self, frame: Frame) -> None:
        if isinstance(frame, Detached):
            self.finish("server_gone", "[server went away]", 1)
            return
        if isinstance(frame, MetadataChanged):
            if frame.key in _RELIST_KEYS or (
                frame.terminal is None and frame.key.startswith(LAYOUT_PREFIX)
            ):
                if frame.terminal is None and frame.value is not None:
                    self.global_meta[frame.key] = frame.value
                if self.relist_at is None:
                    self.relist_at = time.monotonic() + RELIST_INTERVAL
            return
        tid = getattr(frame, "terminal", None)
        view = self.views.get(tid) if isinstance(tid, int) else None
        preview = self.preview
        if view is None and preview is not None and preview.pane.terminal == tid:
            if not isinstance(frame, InputWritten):
                preview.mirror.handle(frame)
                if preview.mirror.held_bytes > MAX_HELD and preview.mirror.ready:
                    preview.mirror.skip_held(KEEP_TAIL)
                self.dirty = True
            return
        if view is None:
            return
        if view.background:
            if isinstance(frame, InputWritten):
                return
            mirror = view.mirror
            mirror.handle(frame)
            if isinstance(frame, BootstrapReady) and mirror.engine is not None:
                mirror.engine.take_events()  # what the bootstrap replayed is not news
                return
            if mirror.held_bytes > MAX_HELD and mirror.state != Mirror.SUBSCRIBING:
                mirror.skip_held(KEEP_TAIL)
            if self.alerts_at is None:
                self.alerts_at = time.monotonic() + ALERT_INTERVAL
            if isinstance(frame, TerminalClosed) and self.relist_at is None:
                self.relist_at = time.monotonic() + RELIST_INTERVAL
            return
        if isinstance(frame, InputWritten):
            if frame.reply:
                return
            if view.ours[: len(frame.data)] == frame.data:
                del view.ours[: len(frame.data)]
                who = "you"
            else:
                who = "agent"
            if who != view.typed_by:
                view.typed_by = who
                self.dirty = True
            return
        if isinstance(
            frame,
            (
                Output,
                BootstrapBegin,
                BootstrapChunk,
                BootstrapReady,
                Resized,
                TerminalClosed,
                TerminalState,
                Tombstone,
            ),
        ):
            view.mirror.handle(frame)
            self.dirty = True
            mirror = view.mirror
            # Printing faster than this client parses: only the end is drawn, and
            # the exact screen is fetched once the pane is quiet (``resync``).
            if (
                mirror.held_bytes > MAX_HELD
                and mirror.state != Mirror.SUBSCRIBING
                and mirror.skip_held(KEEP_TAIL)
            ):
                view.skipped = True
            if isinstance(frame, TerminalClosed) and self.relist_at is None:
                self.relist_at = time.monotonic() + RELIST_INTERVAL

    def resync(self) -> bool:
        """Subscribe afresh the panes whose output was dropped once they are quiet;
        True while some are still waiting for that."""
        waiting = False
        now = time.monotonic()
        for tid, view in list(self.views.items()):
            if not view.skipped:
                continue
            # (Not while a bootstrap is still coming: its journal is not quiet.)
            if not view.mirror.ready or now - view.mirror.last_output < QUIET_RESYNC:
                waiting = True
                continue
            typed_by = view.typed_by
            self._unsubscribe(tid)
            self._subscribe_window()
            fresh = self.views.get(tid)
            if fresh is not None:
                fresh.typed_by = typed_by
        return waiting

    def collect_acks(self) -> None:
        for view in self.views.values():
            mirror = view.mirror
            if mirror.state == Mirror.SUBSCRIBING and mirror.request_id:
                try:
                    (view.conn or self.conn).take_reply(mirror.request_id)
                except ServerError:
                    # The pane ended before we subscribed: the listing tells.
                    mirror.request_id = 0
                    if self.relist_at is None:
                        self.relist_at = time.monotonic() + RELIST_INTERVAL
        left = []
        for rid in self.acks:
            try:
                if self.conn.take_reply(rid) is None:
                    left.append(rid)
            except ServerError:
                pass  # a pane ended under the request: the listing tells
        self.acks = left

    def finish(self, reason: str, message: str, code: int) -> None:
        if self.outcome is None:
            self.outcome = Outcome(reason, message, code)

    @property
    def name(self) -> str:
        return self.session

    def begin(self) -> None:
        # The alternate screen: leaving puts back what the person's terminal showed.
        self.out += ("\x1b[?1049h" + PUSH_TITLE + self._mouse_on()).encode()

    def run(self, in_fd: int, wake_r: int, pending: dict[str, bool], raw: Any) -> None:
        try:
            run_loop(self, in_fd, wake_r, pending, raw)
        finally:
            self.close()

    def _mouse_on(self) -> str:
        return MOUSE_ON if self.mouse else ""

    def leave_bytes(self) -> bytes:
        return (MOUSE_OFF + self.painter.leave(user_alt=True)).encode()

    # ------------------------------------------------------------ input

    def on_keys(self, data: bytes) -> None:
        for item in self.reader.feed(data):
            if isinstance(item, bytes):
                self._typed(item)
            else:
                self.command(item)

    def _typed(self, data: bytes) -> None:
        if self.confirm is not None:
            _question, action = self.confirm
            self.confirm = None
            if data[:1] in (b"y", b"Y"):
                action()
            self.dirty = True
            return
        if self.prompt is not None:
            self._prompt_keys(data)
            return
        if self.overlay is not None:
            self._overlay_keys(data)
            return
        if self.copy is not None:
            self._copy_result(self.copy.feed(data))
            return
        view = self.active_view()
        if view is None or not view.mirror.alive:
            return
        now = time.monotonic()
        # Another person's size: typing takes it back (tmux's window-size latest).
        theirs = view.size is not None and (view.mirror.cols, view.mirror.rows) != view.size
        if theirs and now - self.last_takeover > 0.5:
            self.last_takeover = now
            self.resize_panes(force=True)
        tid = view.pane.terminal
        urgent = is_interrupt(data)
        if self.input_events:
            view.ours += data
            if len(view.ours) > 65536:
                del view.ours[:-65536]
        self.acks.append(
            self._send(lambda r: Input(request_id=r, terminal=tid, data=data, urgent=urgent))
        )

    def active_view(self) -> View | None:
        tid = self.active.get(self.window)
        return None if tid is None else self.views.get(tid)

    def select_pane(self, tid: int | None) -> None:
        if tid is None or tid == self.active.get(self.window):
            return
        self.active[self.window] = tid
        self._focus(tid)
        self.dirty = True

    def _focus(self, tid: int) -> None:
        pane = next((p for p in self.panes if p.terminal == tid), None)
        if pane is None or not pane.alive:
            return
        value = str(now_ms()).encode()
        self.acks.append(
            self._send(
                lambda r: MetaSet(request_id=r, key="phux.focus_ms", value=value, terminal=tid)
            )
        )

    def select_window(self, window: int) -> None:
        if window == self.window or window not in self.windows():
            return
        self.leave_copy()
        self.window = window
        self.alerted.discard(window)
        self.zoomed = False
        self._subscribe_window()
        tid = self.active.get(window)
        if tid is not None:
            self._focus(tid)
        self.damage.invalidate()
        self.dirty = True

    def command(self, cmd: Command) -> None:
        self.dirty = True
        if cmd.name == "mouse":
            self._mouse(cmd)
            return
        self.confirm = None
        self.prompt = None
        self.overlay = None
        self._preview()
        name = cmd.name
        if name == "copy-mode":
            self.enter_copy()
            return
        self.leave_copy()
        if name == "detach":
            self.finish(
                "detached",
                f"[detached from {self.session}; reattach with: phux attach {self.session}]",
                0,
            )
        elif name in ("split-h", "split-v"):
            self._split("h" if name == "split-h" else "v")
        elif name == "new-window":
            self._new_window()
        elif name in ("next-window", "previous-window"):
            wins = self.windows()
            if self.window in wins:
                step = 1 if name == "next-window" else -1
                self.select_window(wins[(wins.index(self.window) + step) % len(wins)])
        elif name.startswith("select-window-"):
            self.select_window(int(name.rsplit("-", 1)[1]))
        elif name == "next-pane":
            node = self.layouts.get(self.window)
            if node is not None:
                by_index = {p.pane or 0: p.terminal for p in self.window_panes(self.window)}
                order = [by_index[i] for i in lay.panes(node) if i in by_index]
                self.zoomed = False
                self.select_pane(lay.next_pane(order, self.active.get(self.window, -1)))
                self.resize_panes()
        elif name.startswith("pane-"):
            was = self.zoomed
            self.zoomed = False
            tid = self.active.get(self.window)
            if tid is not None:
                self.select_pane(lay.neighbour(self.geometry(), tid, name[5:]))
            if was:
                self.resize_panes()
        elif name == "zoom":
            if len(self.window_panes(self.window)) > 1 or self.zoomed:
                self.zoomed = not self.zoomed
                self.resize_panes()
        elif name == "kill-pane":
            view = self.active_view()
            if view is not None:
                tid = view.pane.terminal
                self.confirm = (f"kill-pane {view.pane.id}? (y/n)", lambda: self._kill(tid))
        elif name == "rename-window":
            current = next(
                (p.window_name for p in self.window_panes(self.window) if p.window_name), ""
            )
            self.prompt = ("(rename-window) ", current or "", self._rename)
        elif name == "help":
            self._help()
        elif name == "tree":
            self._tree()

    def _mouse(self, cmd: Command) -> None:
        assert cmd.mouse is not None
        button, x, y, pressed = cmd.mouse
        if not pressed:
            return
        tid = lay.pane_at(self.geometry(), x, y)
        if button & 64:  # the wheel: up enters copy mode in the pane under it
            up = button & 3 == 0
            if self.copy is None and up and tid is not None:
                self.select_pane(tid)
                self.enter_copy(wheel=True)
            if self.copy is not None:
                self._copy_result(self.copy.wheel(up=up))
            return
        if button & 3 == 0 and tid is not None:
            if tid != self.copy_tid:
                self.leave_copy()
            self.select_pane(tid)

    def enter_copy(self, *, wheel: bool = False) -> None:
        """Copy mode over the active pane; ``wheel``: scrolling back to the bottom
        leaves it (tmux's ``copy-mode -e``)."""
        view = self.active_view()
        rect = self.geometry().get(self.active.get(self.window, -1))
        if self.copy is not None or view is None or rect is None:
            return
        engine = view.mirror.engine
        if engine is None:
            return
        self.copy = CopyMode(
            engine, rect.w, rect.h, clipboard=self.allow_clipboard, exit_at_bottom=wheel
        )
        self.copy_tid = view.pane.terminal
        self.dirty = True

    def leave_copy(self) -> None:
        if self.copy is not None:
            self.copy = None
            view = self.views.get(self.copy_tid or -1)
            if view is not None:
                view.drawn = None
            self.copy_tid = None
            self.dirty = True

    def _copy_result(self, result: Any) -> None:
        self.out += result.clipboard
        if result.done:
            self.leave_copy()
        self.dirty = True

    def _say(self, text: str) -> None:
        self.message = text
        self.message_until = time.monotonic() + 3.0
        self.dirty = True

    def _split(self, kind: str) -> None:
        from phux.client.deadline import Deadline

        view = self.active_view()
        if view is None or not view.pane.alive:
            return
        try:
            made = self.client.split(
                view.pane.id, select=True, deadline=Deadline.after(CALL_TIMEOUT)
            )
        except ServerError as exc:
            self._say(f"split failed: {exc.message}")
            return
        node = self.layouts.get(self.window, view.pane.pane or 0)
        node = lay.split(node, view.pane.pane or 0, made.pane, kind)
        self.layouts[self.window] = node
        self.zoomed = False
        self._store_layout(self.window, node)
        self.active[self.window] = made.terminal_id
        self.relist()

    def _new_window(self) -> None:
        from phux.client.deadline import Deadline

        try:
            made = self.client.new_window(
                self.session, select=True, deadline=Deadline.after(CALL_TIMEOUT)
            )
        except ServerError as exc:
            self._say(f"new-window failed: {exc.message}")
            return
        self.active[made.window] = made.terminal_id
        self.relist()
        self.select_window(made.window)

    def _kill(self, tid: int) -> None:
        self.dismissed.add(tid)
        self.acks.append(self._send(lambda r: Kill(request_id=r, terminals=[tid])))
        node = self.layouts.get(self.window)
        pane = next((p for p in self.panes if p.terminal == tid), None)
        if node is not None and pane is not None:
            rest = lay.remove(node, pane.pane or 0)
            if rest is not None:
                self.layouts[self.window] = rest
                self._store_layout(self.window, rest)
        self.active.pop(self.window, None)
        self.zoomed = False
        self.relist()
        now_active = self.active.get(self.window)
        if now_active is not None:
            self._focus(now_active)  # the session's active pane moves on, as in tmux

    def _rename(self, name: str) -> None:
        if (
            not name
            or name.isdigit()
            or any(c in name for c in ":.,")
            or any(c.isspace() for c in name)
        ):
            self._say(f"invalid window name {name!r}: non-numeric, no `:` `.` `,` or spaces")
            return
        value = name.encode()
        for p in self.window_panes(self.window):
            if p.alive:
                self.acks.append(self._send(_meta_set("phux.window_name", value, p.terminal)))

    def _prompt_keys(self, data: bytes) -> None:
        assert self.prompt is not None
        label, text, done = self.prompt
        self.dirty = True
        for ch in data.decode("utf-8", "replace"):
            if ch in "\r\n":
                self.prompt = None
                done(text)
                return
            if ch == "\x1b" or ch == "\x03":
                self.prompt = None
                return
            if ch in "\x7f\x08":
                text = text[:-1]
            elif ch == "\x15":
                text = ""
            elif ch.isprintable():
                text += ch
        self.prompt = (label, text, done)

    # ------------------------------------------------------------ overlays

    def _help(self) -> None:
        prefix = self.key.label.split()[0] if self.key.prefix is not None else "(no prefix)"
        self.overlay = help_overlay(prefix)

    def _tree(self) -> None:
        from phux.client.selectors import Pane

        reply = self._call(lambda r: ListTerminals(request_id=r))
        assert isinstance(reply, TerminalList)
        self.overlay = tree_overlay(
            (Pane.from_wire(i) for i in reply.terminals),
            self._pane_state,
            current=(self.session, self.window, self.active.get(self.window)),
        )
        self._preview()

    def _pane_state(self, pane: Pane) -> str:
        """``program state`` of a pane for the tree: from its mirror when this client
        follows it, else the program the listing names."""
        view = self.views.get(pane.terminal)
        if view is not None and view.mirror.ready:
            try:
                program, state = project_mirror(pane, view.mirror)
            except Exception:  # a mirror still bootstrapping
                program, state = None, ""
            return " ".join(x for x in (program or "", state) if x)
        return pane.foreground.name if pane.foreground is not None else ""

    def _preview_target(self) -> int | None:
        return None if self.overlay is None else self.overlay.preview_target()

    def _preview(self) -> None:
        """Follow the tree's selected pane (a viewer, unless this client already does)."""
        tid = self._preview_target()
        old = self.preview
        if old is not None and old.pane.terminal == tid:
            return
        if old is not None:
            self.preview = None
            self.acks.append(self._send(_unsubscribe(old.pane.terminal)))
        if tid is None or tid in self.views:
            return
        from phux.client.selectors import Pane

        mirror = Mirror(tid, history=0)
        self.preview = View(Pane(terminal=tid, alive=True, cols=1, rows=1, pid=0), mirror)
        mirror.request_id = self._send(_subscribe(tid, None, False))

    def _preview_engine(self) -> Any:
        tid = self._preview_target()
        if tid is None:
            return None
        view = self.views.get(tid)
        if view is None and self.preview is not None and self.preview.pane.terminal == tid:
            view = self.preview
        return view.mirror.engine if view is not None and view.mirror.ready else None

    def _overlay_keys(self, data: bytes) -> None:
        overlay = self.overlay
        assert overlay is not None
        self.dirty = True
        if overlay.kind == "help":
            self.overlay = None
            return
        for key in key_tokens(data):
            if key in (b"\x1b[A", b"\x1bOA", b"k"):
                overlay.move(-1)
            elif key in (b"\x1b[B", b"\x1bOB", b"j"):
                overlay.move(1)
            elif key in (b"\r", b"\n"):
                self.overlay = None
                self._preview()
                self._switch(*overlay.targets[overlay.selected])
                return
            elif key in (b"q", b"\x1b", b"\x03"):
                self.overlay = None
                self._preview()
                return
        self._preview()

    def _switch(self, session: str, window: int | None, terminal: int | None) -> None:
        if session != self.session:
            for tid in list(self.views):
                self._unsubscribe(tid)
            self.session = session
            self.layouts.clear()
            self.active.clear()
            self.dismissed.clear()
            self.zoomed = False
            if window is None:
                self.window = -1  # the session's active window (relist picks it)
            else:
                self.window = window
            if terminal is not None and window is not None:
                self.active[window] = terminal
            self.damage.invalidate()
            self.relist()
            return
        if window is not None:
            self.select_window(window)
        if terminal is not None:
            self.select_pane(terminal)

    # ------------------------------------------------------------ drawing

    def on_resize(self, size: tuple[int, int]) -> None:
        if size == self.win:
            return
        self.win = size
        self.damage.invalidate()
        for v in self.views.values():
            v.drawn = None
        self.resize_panes()
        self.dirty = True

    def render(self) -> None:
        """Compose a frame and write only what changed."""
        self.dirty = False
        self.frames += 1
        cols, rows = self.win
        canvas = self.canvas
        if (canvas.cols, canvas.rows) != (cols, rows):
            canvas = self.canvas = Canvas(cols, rows)
            for v in self.views.values():
                v.drawn = None
        geo = self.geometry()
        node = self.layouts.get(self.window)
        area = self.area()
        active = self.active.get(self.window)
        if self.zoomed or node is None:
            lines: list[tuple[str, lay.Rect]] = []
        else:
            lines = lay.borders(node, area)
        redraw_borders = self._borders != (lines, active, geo)
        if redraw_borders:
            self._borders = (lines, active, geo)
            canvas.fill(area)
            for v in self.views.values():
                v.drawn = None
            near = geo.get(active) if active is not None else None
            for kind, r in lines:
                for y in range(r.y, r.y + r.h):
                    for x in range(r.x, r.x + r.w):
                        lit = near is not None and (
                            near.x - 1 <= x <= near.x + near.w
                            and near.y - 1 <= y <= near.y + near.h
                        )
                        ch = "│" if kind == "|" else "─"
                        canvas.cells[y][x] = (ch, ACTIVE_BORDER if lit else BORDER)
        active_first = sorted(geo.items(), key=lambda item: item[0] != active)
        stop = time.monotonic() + ENGINE_BUDGET
        for tid, rect in active_first:
            view = self.views.get(tid)
            if view is None:
                continue
            if tid != active and view.mirror.held_bytes and time.monotonic() > stop:
                self.dirty = True  # the next frame draws it
                continue
            engine = view.mirror.engine
            if engine is None:
                continue
            copy = self.copy
            if copy is not None and tid == self.copy_tid:
                if copy.term is not engine:  # a fresh bootstrap replaced the engine
                    self.leave_copy()
                else:
                    if (copy.width, copy.height) != (rect.w, rect.h):
                        copy.resize(rect.w, rect.h)
                    copy_rows(copy, self.painter, rect, canvas)
                    view.drawn = None
                    continue
            gen = engine.generation
            key = (gen, rect, view.mirror.alive)
            if view.drawn == key:
                continue
            view.drawn = key
            pane_rows(engine, self.painter, rect, canvas)
            if not view.mirror.alive:
                facts = PaneFacts(state="exited", exit_code=_exit_code(view.mirror))
                label = f" {state_text(facts)} "
                canvas.text(
                    rect.x + max(0, rect.w - len(label)), rect.y, label, "\x1b[0;30;43m", rect.w
                )
        if self.overlay is not None:
            draw(self.overlay, canvas, area, self._preview_engine(), self.painter)
            for v in self.views.values():
                v.drawn = None
            self._borders = None
        self._draw_status(canvas)
        tail = self._cursor_and_modes(geo)
        data = self.damage.frame(canvas, tail if tail != self._tail else "")
        self._tail = tail
        if data:
            self.out += data.encode()

    def _draw_status(self, canvas: Canvas) -> None:
        cols, rows = self.win
        y = rows - 1
        if y <= 0:
            return
        now = time.monotonic()
        if self.message is not None and now >= self.message_until:
            self.message = None
        message = None
        if self.confirm is not None:
            message = self.confirm[0]
        elif self.prompt is not None:
            message = self.prompt[0] + self.prompt[1]
        elif self.message is not None:
            message = self.message
        elif self.copy is not None and self.copy.view().message:
            message = self.copy.view().message
        line = StatusLine(self.session, self._tabs(), self._facts(), message)
        canvas.fill(lay.Rect(0, y, cols, 1))
        x = 0
        for text, style in segments(line, cols):
            x = canvas.text(x, y, text, style, cols - x)

    def _tabs(self) -> list[WindowTab]:
        tabs = []
        for w in self.windows():
            name = next((p.window_name for p in self.window_panes(w) if p.window_name), None)
            if name is None:
                first = self.window_panes(w)[0]
                fg = first.foreground
                name = fg.name if fg is not None and fg.name else "-"
            alert = w in self.alerted and w != self.window
            tabs.append(WindowTab(w, name, active=w == self.window, alert=alert))
        return tabs

    def _facts(self) -> PaneFacts:
        view = self.active_view()
        if view is None:
            return PaneFacts(zoomed=self.zoomed)
        mirror = view.mirror
        try:
            program, state = project_mirror(view.pane, mirror)
        except Exception:  # a mirror still bootstrapping
            program, state = None, ""
        running_s = None
        last_exit = None
        engine = mirror.engine if mirror.ready else None
        if engine is not None:
            commands = engine.commands
            if commands:
                last = commands[-1]
                if last.end_row is None and last.started_ms is not None:
                    running_s = max(0, int(time.time() - last.started_ms / 1000))
                done = [c for c in commands if c.end_row is not None]
                if done:
                    last_exit = done[-1].exit_code
        return PaneFacts(
            program=program,
            state=state,
            running_s=running_s,
            exit_code=_exit_code(mirror),
            last_exit=last_exit,
            typed_by=view.typed_by,
            zoomed=self.zoomed,
        )

    def _cursor_and_modes(self, geo: dict[int, lay.Rect]) -> str:
        """The cursor in the active pane, and the key modes of its program."""
        view = self.active_view()
        rect = geo.get(self.active.get(self.window, -1))
        out = []
        if self.prompt is not None:
            cols, rows = self.win
            x = min(len(self.prompt[0]) + len(self.prompt[1]), cols - 1)
            return f"\x1b[{rows};{x + 1}H\x1b[?25h"
        if view is None or rect is None or self.overlay is not None or self.confirm is not None:
            return "\x1b[?25l"
        if self.copy is not None:
            cx, cy = self.copy.view().cursor
            return f"\x1b[{rect.y + cy + 1};{rect.x + cx + 1}H\x1b[?25h"
        engine = view.mirror.engine
        if engine is None:
            return "\x1b[?25l"
        screen: Any = engine.screen
        from phux.engine._pyte import modes as mo

        top = max(0, min(screen.cursor.y - rect.h + 1, engine.rows - rect.h))
        cx = min(screen.cursor.x, engine.cols - 1)
        cy = screen.cursor.y - top
        visible = mo.DECTCEM in screen.mode and 0 <= cx < rect.w and 0 <= cy < rect.h
        out.append(f"\x1b[{rect.y + cy + 1};{rect.x + cx + 1}H")
        out.append("\x1b[?1h" if (1 << 5) in screen.mode else "\x1b[?1l")
        out.append("\x1b[?2004h" if (2004 << 5) in screen.mode else "\x1b[?2004l")
        out.append("\x1b=" if screen.app_keypad else "\x1b>")
        out.append("\x1b[?25h" if visible else "\x1b[?25l")
        return "".join(out)

    def flush(self) -> None:
        if self.out:
            data = bytes(self.out)
            self.out.clear()
            write_all(self.out_fd, data)


def _subscribe(tid: int, size: tuple[int, int] | None, inp: bool) -> Callable[[int], Frame]:
    """SUBSCRIBE as PRIMARY at ``size`` (the pane's place), or as a viewer (None)."""
    if size is None:
        return lambda r: Subscribe(request_id=r, terminal=tid, role=Role.VIEWER, input=inp)
    cols, rows = size
    return lambda r: Subscribe(
        request_id=r, terminal=tid, role=Role.PRIMARY, cols=cols, rows=rows, input=inp
    )


def _unsubscribe(tid: int) -> Callable[[int], Frame]:
    return lambda r: Unsubscribe(request_id=r, terminal=tid)


def _resize(tid: int, size: tuple[int, int]) -> Callable[[int], Frame]:
    cols, rows = size
    return lambda r: Resize(request_id=r, terminal=tid, cols=cols, rows=rows)


def _meta_set(key: str, value: bytes, tid: int | None) -> Callable[[int], Frame]:
    return lambda r: MetaSet(request_id=r, key=key, value=value, terminal=tid)


def _exit_code(mirror: Mirror) -> int | None:
    from phux.wire.frames import Exited

    status = mirror.exit
    if isinstance(status, Exited):
        return status.code
    if status is not None:
        return 128 + status.signal
    return None


def run_loop(mux: Mux, in_fd: int, wake_r: int, pending: dict[str, bool], raw: Any) -> None:
    """The multiplexer's loop: input first, then frames, then at most one frame
    per FRAME_INTERVAL while anything changed; blocks while nothing does."""
    mux.start()
    resyncing = False
    more = False
    behind: set[Connection] = set()  # connections left with frames to handle
    if mux.first is not None:
        mux.command(mux.first)
    while mux.outcome is None:
        now = time.monotonic()
        timeout: float | None = None
        if mux.dirty:
            timeout = max(0.0, mux.next_frame - now)
        if mux.relist_at is not None:
            wait = max(0.0, mux.relist_at - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if mux.alerts_at is not None:
            wait = max(0.0, mux.alerts_at - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if mux.message is not None:
            wait = max(0.0, mux.message_until - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if resyncing:
            timeout = QUIET_RESYNC if timeout is None else min(timeout, QUIET_RESYNC)
        conns = mux.connections()
        if mux.read_ahead:
            mux.read_ahead = False
            behind.add(mux.conn)
            more = True
        if more:
            timeout = 0.0  # frames already read and not yet handled
        fds = [in_fd, wake_r, *(c.fileno() for c in conns if not c.closed)]
        readable, _, _ = select.select(fds, [], [], timeout)
        if wake_r in readable:
            drain_wake(wake_r)
        if pending["cont"]:
            pending["cont"] = False
            raw.reapply()
            mux.damage.invalidate()
            mux.out += mux._mouse_on().encode()
            mux._tail = None
            mux.dirty = True
        if pending["winch"]:
            pending["winch"] = False
            mux.on_resize(window_size(mux.out_fd))
        if in_fd in readable:
            data = read_keys(in_fd)
            if not data:
                mux.finish("detached", f"[input closed: detached from {mux.session}]", 0)
                break
            mux.on_keys(data)
        more = False
        for c in conns:
            if c.closed or not (c in behind or c.fileno() in readable):
                continue
            # A bounded batch each: a flood on one never starves the others. (A
            # partial frame in a reader's buffer waits for select, not a spin.)
            for _ in range(FRAMES_PER_TURN):
                frame = c.take_pushed()
                if frame is None:
                    if not c.read_nowait():
                        behind.discard(c)
                        break
                    continue
                mux.handle(frame)
                if mux.outcome is not None or c.closed:
                    break  # (a pane resubscribed closes its old connection)
            else:
                behind.add(c)
                more = True
        mux.collect_acks()
        resyncing = mux.resync()
        now = time.monotonic()
        if mux.relist_at is not None and now >= mux.relist_at and mux.outcome is None:
            mux.relist()
        if mux.message is not None and now >= mux.message_until:
            mux.dirty = True
        if mux.alerts_at is not None and now >= mux.alerts_at and mux.outcome is None:
            mux.check_alerts()
        if mux.dirty and now >= mux.next_frame and mux.outcome is None:
            mux.render()
            mux.next_frame = now + FRAME_INTERVAL
        mux.flush()
