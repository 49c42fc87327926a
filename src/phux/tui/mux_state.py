"""The multiplexer's state (``phux.tui.mux``): what it follows and shows.

The pieces of ``Mux`` build on this one: ``mux_panes`` (the session, the
panes' subscriptions and connections, their frames), ``mux_keys`` (the
person's keys and the commands under the prefix), ``mux_draw`` (composing
frames); ``mux`` joins them and runs the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from phux.client.mirror import Mirror
from phux.tui import layout as lay
from phux.tui.compose import Canvas, Damage
from phux.tui.copy_mode import CopyMode
from phux.tui.keys import Command, DetachKey, KeyReader
from phux.tui.overlay import Overlay
from phux.tui.paint import Painter
from phux.tui.term import Outcome
from phux.wire.frames import Frame, MetaSet, Resize, Role, Subscribe, Unsubscribe
from phux.wire.handshake import MINOR_AUDIT

if TYPE_CHECKING:
    from phux.client import Client
    from phux.client.connection import Connection
    from phux.client.selectors import Pane

FRAME_INTERVAL = 0.016
"""At most one frame per this many seconds, however fast the panes print (over time:
the frame with the echo of a key may use one the cap has in hand)."""
FRAMES_IN_HAND = 2.0
"""Frames the cap saves while fewer are drawn (one per FRAME_INTERVAL), for the echo
of a key to go out without waiting for FRAME_INTERVAL since the last frame."""
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
OTHERS_INTERVAL = 0.05
"""Seconds between frames that parse and draw the panes the person is not typing
into: a flood there is drawn at most 20 times a second (its latest state), and the
CPU left goes to the echo (the client's and, on one machine, the server's)."""
OTHERS_STARVED = 0.1
"""Seconds the other panes may be owed a frame (by echoes drawn alone, or a frame
cut short for the person's next key) before one draws them, whatever comes."""
ECHO_WAIT = 0.05
"""Seconds a frame of the other panes waits, after a key sent to the active pane, for
that pane's output (the echo): the frame cap then finds the echo's frame free."""
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
    drawn: tuple[Any, ...] | None = None
    """(generation, rect, alive, no 2026 frame holds) when last composed."""
    typed_by: str | None = None
    skipped: bool = False  # output was dropped unparsed: the screen is approximate
    background: bool = False  # a pane of another window: a viewer, for its alerts
    conn: Connection | None = None
    """The pane's own connection (a shown pane): its output never queues behind
    another pane's flood on the way to this client (None: the shared one)."""
    ours: bytearray = field(default_factory=bytearray)  # our input not yet seen written


class MuxState:
    """The state every part of the multiplexer reads, and the small helpers
    they share (requests, the current window's geometry)."""

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
        self.pane_acks: list[tuple[Connection, int]] = []
        """Requests sent on a pane's own connection whose replies are to be taken."""
        self.dirty = True
        self.relist_at: float | None = None
        self.next_frame = 0.0
        self.frame_due: float | None = None
        """When a pane's synchronized-output frame stops holding what it shows (then
        its live screen is drawn, with or without more output)."""
        self.others_at = 0.0  # the panes not typed into are drawn from then on
        self.echo_due = 0.0
        """Until when the echo of a key the person typed is awaited (ECHO_WAIT after it;
        0 once the active pane's output came): the others' frame waits for it."""
        self.echo_news = False
        """The active pane's output came while an echo was awaited: the next frame
        draws it as soon as the cap has a frame in hand (``Drawing.frame_at``)."""
        self.spare = FRAMES_IN_HAND
        self.spare_at = 0.0
        """Frames the cap had in hand at ``spare_at`` (``Drawing.spare_frames``)."""
        self.news_waiting: Callable[[], bool] = lambda: False
        """Whether a key or the active pane's output waits to be read (the loop's
        select, without waiting): drawing the other panes stops for it."""
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

    def _send(self, make: Callable[[int], Frame], conn: Connection | None = None) -> int:
        from phux.client.deadline import Deadline

        return (conn or self.conn).submit(make, Deadline.after(SEND_TIMEOUT))

    def _call(self, make: Callable[[int], Frame]) -> Frame:
        from phux.client.deadline import Deadline

        # Waiting for the reply reads the frames before it: the loop handles them next.
        self.read_ahead = True
        return self.conn.call(make, Deadline.after(CALL_TIMEOUT))

    def finish(self, reason: str, message: str, code: int) -> None:
        if self.outcome is None:
            self.outcome = Outcome(reason, message, code)

    @property
    def name(self) -> str:
        return self.session

    def windows(self) -> list[int]:
        return sorted({p.window or 0 for p in self.panes})

    def window_panes(self, window: int) -> list[Pane]:
        return [p for p in self.panes if (p.window or 0) == window]

    def area(self) -> lay.Rect:
        cols, rows = self.win
        return lay.Rect(0, 0, cols, max(rows - 1, 1))

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

    def active_view(self) -> View | None:
        tid = self.active.get(self.window)
        return None if tid is None else self.views.get(tid)

    def _say(self, text: str) -> None:
        self.message = text
        self.message_until = time.monotonic() + 3.0
        self.dirty = True

    def leave_copy(self) -> None:
        if self.copy is not None:
            self.copy = None
            view = self.views.get(self.copy_tid or -1)
            if view is not None:
                view.drawn = None
            self.copy_tid = None
            self.dirty = True

    def _preview_target(self) -> int | None:
        return None if self.overlay is None else self.overlay.preview_target()


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
