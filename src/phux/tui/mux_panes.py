"""The multiplexer's panes: the session's listing and layouts, one subscription
(and connection) per shown pane, the frames they bring (``phux.tui.mux``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from phux.client.errors import ConnectionLost, PhuxError, ProtocolError, ServerError
from phux.client.mirror import Mirror
from phux.engine.events import Bell, CommandFinished
from phux.tui import layout as lay
from phux.tui.copy_reflow import reanchor, remember
from phux.tui.mux_state import (
    _RELIST_KEYS,
    ALERT_INTERVAL,
    BACKGROUND_HISTORY,
    CALL_TIMEOUT,
    HISTORY,
    KEEP_TAIL,
    LAYOUT_PREFIX,
    MAX_HELD,
    QUIET_RESYNC,
    RELIST_INTERVAL,
    MuxState,
    View,
    _resize,
    _subscribe,
    layout_key,
)
from phux.tui.mux_state import _unsubscribe as unsubscribe_frame
from phux.tui.term import awaiting_reply, describe_exit
from phux.wire.frames import (
    BootstrapBegin,
    BootstrapChunk,
    BootstrapReady,
    Detached,
    Frame,
    InputWritten,
    ListTerminals,
    MetadataChanged,
    MetaSet,
    MetaSubscribe,
    Output,
    Resized,
    TerminalClosed,
    TerminalList,
    TerminalState,
    Tombstone,
    Unsubscribe,
)

if TYPE_CHECKING:
    from phux.client.connection import Connection
    from phux.client.selectors import Pane


class Panes(MuxState):
    """The session, its layouts, and a subscription per pane."""

    def start(self) -> None:
        self.acks.append(self._send(lambda r: MetaSubscribe(request_id=r, prefix="phux.")))
        self.relist()

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
                (p for p in self.panes if p.alive), key=lambda p: (p.focus_ms or -1, p.terminal)
            )
            self.window = best.window or 0
        self._subscribe_window()
        self.dirty = True

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
            view = View(pane, _new_mirror(pane, background), background=background)
            self.views[tid] = view
            rect = geo.get(tid)
            if not background and pane.alive and rect is not None:
                view.size = (max(rect.w, 1), max(rect.h, 1))
            inp = self.input_events and not background
            if not background:
                view.conn = self._pane_connection()
            view.mirror.request_id = self._send(_subscribe(tid, view.size, inp), view.conn)
        self.resize_panes()

    def _resubscribe(self, view: View) -> None:
        """Subscribe ``view``'s pane afresh on the connection it has (no new
        connection, whose handshake would block the loop behind a busy server): a
        fresh mirror takes the new bootstrap, frames of the old subscription still in
        flight are ignored (a subscribing mirror takes only its own bootstrap)."""
        tid = view.pane.terminal
        conn = view.conn or self.conn
        self.pane_acks.append((conn, self._send(unsubscribe_frame(tid), conn)))
        view.mirror = _new_mirror(view.pane, view.background)
        view.skipped = False
        view.drawn = None
        inp = self.input_events and not view.background
        view.mirror.request_id = self._send(_subscribe(tid, view.size, inp), conn)

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

    def read_later(self, now: float) -> set[Connection]:
        """The own connections of the shown panes the person is not typing into, until
        their next frame is due (``others_at``, every OTHERS_INTERVAL): what they print
        meanwhile waits in the socket (and the server's queue) and is read in one go
        before it is drawn, so a flood there wakes this client when it is to be drawn,
        not at every chunk the server sends, and the echo is not read behind it."""
        if now >= self.others_at:
            return set()
        active = self.active.get(self.window)
        return {v.conn for tid, v in self.views.items() if v.conn is not None and tid != active}

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

    def take_frames(self, conn: Connection, limit: int) -> bool:
        """Read and handle up to ``limit`` frames of ``conn``; True when it may have more.

        A pane's own connection that the server ends (DETACHED: a slow consumer, room
        made for a new client; or closed) costs that pane its subscription, not the
        attach: the person is told and the pane is subscribed again."""
        try:
            for _ in range(limit):
                frame = conn.take_pushed()
                if frame is None:
                    if not conn.read_nowait():
                        return False
                    continue
                if isinstance(frame, Detached) and conn is not self.conn and not _shutdown(frame):
                    self.connection_dropped(conn, _detach_reason(frame))
                    return False
                self.handle(frame)
                if self.outcome is not None or conn.closed:
                    return False  # (a pane resubscribed closes its old connection)
            return True
        except (ConnectionLost, ProtocolError) as exc:
            if conn is self.conn:
                raise
            self.connection_dropped(conn, str(exc))
            return False

    def connection_dropped(self, conn: Connection, why: str) -> None:
        """A pane's own connection ended: tell the person, subscribe it again (on a new
        connection, else on the shared one)."""
        conn.close()
        for view in self.views.values():
            if view.conn is not conn:
                continue
            view.conn = self._pane_connection()
            self._say(f"{view.pane.id}: connection dropped ({why}); subscribed again")
            self._resubscribe(view)
        self.dirty = True

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
            if isinstance(frame, Output) and self.echo_due and tid == self.active.get(self.window):
                # The echo of a key (or what the program printed instead): drawn at once.
                self.echo_due = 0.0
                self.echo_news = True
            copy = self.copy if self.copy_tid == tid else None
            if copy is not None and isinstance(frame, Resized) and view.mirror.ready:
                # A reflow renumbers rows: copy mode stays on its text.
                engine = view.mirror.engine  # (the output before the resize fed first)
                before = remember(copy) if copy.term is engine else None
                view.mirror.handle(frame)
                if before is not None:
                    reanchor(copy, before)
            else:
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
        for view in list(self.views.values()):
            if not view.skipped:
                continue
            # (Not while a bootstrap is still coming: its journal is not quiet.)
            if not view.mirror.ready or now - view.mirror.last_output < QUIET_RESYNC:
                waiting = True
                continue
            self._resubscribe(view)
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
        self.acks = [rid for rid in self.acks if awaiting_reply(self.conn, rid)]
        self.pane_acks = [
            (conn, rid)
            for conn, rid in self.pane_acks
            if not conn.closed and awaiting_reply(conn, rid)
        ]


def _new_mirror(pane: Pane, background: bool) -> Mirror:
    """A mirror for ``pane``: a shown one keeps HISTORY rows; a background one fewer, and
    its engine events (bells, commands) are kept for ``check_alerts``."""
    from phux.signed_marks import pane_key, pane_shell

    mirror = Mirror(pane.terminal, history=BACKGROUND_HISTORY if background else HISTORY)
    mirror.mark_key = pane_key(pane.metadata)
    if pane_shell(pane.metadata) == "sh":
        mirror.shell_pid = pane.pid
        mirror.listed_foreground = pane.foreground
    if background:
        mirror.event_consumers = 1
    return mirror


def _shutdown(frame: Detached) -> bool:
    from phux.wire.errors import DetachReason

    return frame.reason == DetachReason.SERVER_SHUTDOWN


def _detach_reason(frame: Detached) -> str:
    from phux.wire.errors import DetachReason

    try:
        name = DetachReason(frame.reason).name.lower()
    except ValueError:
        name = f"reason {frame.reason}"
    return f"{name}: {frame.message}" if frame.message else name
