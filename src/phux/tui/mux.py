"""``phux attach`` as a multiplexer: a session's window with all its panes.

Chosen when the window attached to has more than one pane, or when the
person presses a multiplexer key (``C-b %``, ``C-b c``...) in the single-pane
attach (``phux.tui.attach``, which stays what attach is for a person who
never splits).

Each pane of the current window is one subscription, on a connection of its
own (local servers; ``View.conn``): PRIMARY with the size of its place in the
layout (so the person's window size, shared among the panes, becomes their
sizes; agents' reads never resize), replayed into a
``phux.client.mirror.Mirror`` with its own engine.
Nothing is passed through: every frame is composed from the mirrors
(``phux.tui.compose``) and only the cells that changed are drawn, at most one
frame per FRAME_INTERVAL (over time: a key's echo, below), and only when
something changed (the loop blocks in ``select`` while nothing does). The
engines parse the programs' output, so terminal queries, clipboard writes and
other strings never reach the person's terminal from a pane.

The person's echo comes first. The panes the person is not typing into are
parsed and drawn at most every OTHERS_INTERVAL, and their own connections
are read only when that is due (``Panes.read_later``): a flood there waits in
the socket and is read in one go, not at every chunk the server sends. A
frame with news of the active pane draws it alone; a frame drawing the others
stops when a key or the active pane's output waits to be read
(``news_waiting``) and does not count against the frame cap, unless the others
have been owed a frame for OTHERS_STARVED. After a key sent to the active
pane, a frame that would draw the others waits for its echo (``echo_hold``,
ECHO_WAIT at most), and the frame with the echo of a key goes out as soon as
it is read when the cap has a frame in hand (one per FRAME_INTERVAL saved, up
to FRAMES_IN_HAND): frames stay one per FRAME_INTERVAL over time.

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
from typing import TYPE_CHECKING, Any

from phux.tui.mux_draw import Drawing
from phux.tui.mux_keys import Commands
from phux.tui.mux_state import FRAMES_PER_TURN, QUIET_RESYNC
from phux.tui.term import drain_wake, read_keys, window_size

if TYPE_CHECKING:
    from phux.client.connection import Connection


class Mux(Commands, Drawing):
    """The multiplexer: its panes, keys and drawing, run by ``run_loop``."""

    def run(self, in_fd: int, wake_r: int, pending: dict[str, bool], raw: Any) -> None:
        try:
            run_loop(self, in_fd, wake_r, pending, raw)
        finally:
            self.close()


def run_loop(mux: Mux, in_fd: int, wake_r: int, pending: dict[str, bool], raw: Any) -> None:
    """The multiplexer's loop: input first, then frames, then at most one frame
    per FRAME_INTERVAL while anything changed; blocks while nothing does."""
    mux.start()

    def news_waiting() -> bool:
        view = mux.active_view()
        conn = view.conn if view is not None and view.conn is not None else mux.conn
        fds = [in_fd] if conn.closed else [in_fd, conn.fileno()]
        return bool(select.select(fds, [], [], 0)[0])

    mux.news_waiting = news_waiting
    resyncing = False
    more = False
    behind: set[Connection] = set()  # connections left with frames to handle
    if mux.first is not None:
        mux.command(mux.first)
    while mux.outcome is None:
        now = time.monotonic()
        timeout: float | None = None
        if mux.dirty:
            timeout = max(0.0, mux.frame_at(now) - now)
        if mux.relist_at is not None:
            wait = max(0.0, mux.relist_at - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if mux.alerts_at is not None:
            wait = max(0.0, mux.alerts_at - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if mux.message is not None:
            wait = max(0.0, mux.message_until - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if mux.frame_due is not None:
            wait = max(0.0, mux.frame_due - now)
            timeout = wait if timeout is None else min(timeout, wait)
        if resyncing:
            timeout = QUIET_RESYNC if timeout is None else min(timeout, QUIET_RESYNC)
        conns = mux.connections()
        later = mux.read_later(now)
        if later:
            conns = [c for c in conns if c not in later]
            wait = mux.others_at - now
            timeout = wait if timeout is None else min(timeout, wait)
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
            if mux.take_frames(c, FRAMES_PER_TURN):
                behind.add(c)
                more = True
            else:
                behind.discard(c)
        mux.collect_acks()
        resyncing = mux.resync()
        now = time.monotonic()
        if mux.relist_at is not None and now >= mux.relist_at and mux.outcome is None:
            mux.relist()
        if mux.message is not None and now >= mux.message_until:
            mux.dirty = True
        if mux.frame_due is not None and now >= mux.frame_due:
            mux.frame_due = None  # a pane's frame no longer holds: its live screen shows
            mux.dirty = True
        if mux.alerts_at is not None and now >= mux.alerts_at and mux.outcome is None:
            mux.check_alerts()
        if mux.dirty and now >= mux.frame_at(now) and mux.outcome is None and mux.render():
            mux.drew(now)
        mux.flush()
