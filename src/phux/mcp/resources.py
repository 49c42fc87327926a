"""Panes as MCP resources: list, read, and notifications when a pane changes.

Each live pane of the adapter's default server (the one the tools reach without a
``socket`` or ``host``) is a resource ``phux://SESSION/WINDOW.PANE`` (the session
name percent-encoded); ``phux://@N`` names pane ``@N`` too. Reading one gives its
ScreenState, as ``phux_snapshot`` does.

A subscription is kept by one :class:`PaneWatcher` thread for the whole adapter:
it holds a connection of its own (the tools' warm clients serve calls; a
:class:`~phux.client.Client` is not shared between threads), follows every
subscribed pane as a viewer without an engine (it only needs to know that output
came, not what it drew) and the server's events. A pane that changed is announced
(``notifications/resources/updated``) once its output has been quiet for
:data:`SETTLE` seconds, or :data:`MAX_HOLD` seconds after the change when it never
goes quiet (a build scrolling), and never twice within :data:`MIN_INTERVAL` (the
issue's "at most every 200 ms a pane"). A terminal spawned or closed, or L3
metadata changed (a rename, a move), makes it list the panes again and announce
``notifications/resources/list_changed`` when the set of URIs changed.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from phux.client.deadline import Deadline
from phux.client.errors import PhuxError, SelectorSyntax, TargetNotFound, TerminalGone
from phux.client.selectors import KEY_PANE, KEY_SESSION, KEY_WINDOW
from phux.mcp.server import Notify, ResourceNotFound

if TYPE_CHECKING:
    from phux.client import Client
    from phux.client.mirror import Mirror
    from phux.client.selectors import Pane
    from phux.mcp.clients import ClientPool
    from phux.wire.frames import Frame

SCHEME = "phux://"
MIME = "application/json"
SETTLE = 0.05
"""Seconds of no output after which a changed pane counts as settled."""
MAX_HOLD = 1.0
"""A pane that keeps changing is announced this long after its first unannounced change."""
MIN_INTERVAL = 0.2
"""At most one notifications/resources/updated per pane in this many seconds."""
LIST_RECHECK = 0.2
"""A burst of lifecycle or metadata events is listed again once, this long after it."""
CALL_DEADLINE = 30.0
RECONNECT = 1.0
"""Seconds between attempts to reach the server again after the watcher lost it."""

_PLACE_KEYS = frozenset({KEY_SESSION, KEY_WINDOW, KEY_PANE})
UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"


def pane_uri(session: str, window: int | None, pane: int | None) -> str:
    from urllib.parse import quote

    return f"{SCHEME}{quote(session, safe='')}/{window or 0}.{pane or 0}"


def target_of(uri: str) -> str:
    """The selector a resource URI stands for (raises ResourceNotFound for another shape)."""
    if not uri.startswith(SCHEME):
        raise ResourceNotFound(f"{uri} (phux resources are {SCHEME}SESSION/W.P or {SCHEME}@N)")
    rest = uri[len(SCHEME) :]
    if rest.startswith("@") and rest[1:].isdigit():
        return rest
    session, slash, position = rest.rpartition("/")
    window, dot, pane = position.partition(".")
    if not (slash and session and dot and window.isdigit() and pane.isdigit()):
        raise ResourceNotFound(f"{uri} (phux resources are {SCHEME}SESSION/W.P or {SCHEME}@N)")
    from urllib.parse import unquote

    return f"{unquote(session)}:{int(window)}.{int(pane)}"


class PaneResources:
    """The :class:`phux.mcp.server.Resources` of the adapter's default server."""

    def __init__(self, pool: ClientPool) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._watcher: PaneWatcher | None = None

    def _resolve(self, uri: str) -> Pane:
        target = target_of(uri)
        with self._pool.client(None) as (client, _):
            try:
                return client.resolve(target, Deadline.after(CALL_DEADLINE))
            except (TargetNotFound, SelectorSyntax, TerminalGone) as exc:
                raise ResourceNotFound(f"{uri}: {exc}") from None

    def listing(self) -> list[dict[str, Any]]:
        with self._pool.client(None) as (client, _):
            return listing_of(client.list_terminals(Deadline.after(CALL_DEADLINE)).sessions())

    def templates(self) -> list[dict[str, Any]]:
        return [
            {
                "uriTemplate": SCHEME + "{session}/{window}.{pane}",
                "name": "pane",
                "description": "A pane's screen (ScreenState); " + SCHEME + "@N by pane id.",
                "mimeType": MIME,
            }
        ]

    def read(self, uri: str) -> list[dict[str, Any]]:
        import msgspec

        target = target_of(uri)
        with self._pool.client(None) as (client, _):
            try:
                data = client.snapshot_data(target, deadline=Deadline.after(CALL_DEADLINE))
            except (TargetNotFound, SelectorSyntax, TerminalGone) as exc:
                raise ResourceNotFound(f"{uri}: {exc}") from None
        text = msgspec.json.encode(data).decode()
        return [{"uri": uri, "mimeType": MIME, "text": text}]

    def subscribe(self, uri: str, notify: Notify) -> None:
        pane = self._resolve(uri)
        self._watching().subscribe(pane.terminal, uri, notify)

    def unsubscribe(self, uri: str, notify: Notify) -> None:
        with self._lock:
            watcher = self._watcher
        if watcher is not None:
            watcher.unsubscribe(uri, notify)

    def watch_list(self, notify: Notify) -> None:
        self._watching().watch_list(notify)

    def forget(self, notify: Notify) -> None:
        with self._lock:
            watcher = self._watcher
        if watcher is not None:
            watcher.forget(notify)

    def _watching(self) -> PaneWatcher:
        with self._lock:
            if self._watcher is None:
                self._watcher = PaneWatcher(self._pool.make_client)
                self._watcher.start()
            return self._watcher

    def close(self) -> None:
        with self._lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()


def listing_of(sessions: dict[str, list[Pane]]) -> list[dict[str, Any]]:
    out = []
    for name, panes in sessions.items():
        for pane in panes:
            where = f"{name}:{pane.window or 0}.{pane.pane or 0}"
            program = pane.foreground.name if pane.foreground is not None else ""
            out.append(
                {
                    "uri": pane_uri(name, pane.window, pane.pane),
                    "name": where,
                    "title": f"{where} {pane.id} {program}".rstrip(),
                    "mimeType": MIME,
                }
            )
    return out


@dataclass
class _Watched:
    """One followed pane: who wants it, and its change not yet announced."""

    subscribers: set[tuple[Hashable, str]] = field(default_factory=set)
    mirror: Mirror | None = None
    first: float | None = None  # first unannounced change
    last: float = 0.0  # latest change
    sent: float = float("-inf")  # latest announcement

    def due(self) -> float | None:
        if self.first is None:
            return None
        return max(min(self.last + SETTLE, self.first + MAX_HOLD), self.sent + MIN_INTERVAL)


class PaneWatcher:
    """The thread that follows subscribed panes and the pane list (see the module)."""

    def __init__(self, make_client: Any) -> None:
        self._make_client = make_client
        self._lock = threading.Lock()
        self._ops: list[tuple[str, Any]] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(target=self._run, name="phux-mcp-watch", daemon=True)
        self._stopped = False
        # Owned by the thread:
        self._panes: dict[int, _Watched] = {}
        self._notifies: dict[Hashable, Notify] = {}
        self._listeners: set[Hashable] = set()
        self._uris: set[str] | None = None
        self._list_due: float | None = None
        self._client: Client | None = None

    # ------------------------------------------------------------ any thread

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._post("stop", None)
        self._thread.join(5)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def subscribe(self, terminal: int, uri: str, notify: Notify) -> None:
        self._post("subscribe", (terminal, uri, notify))

    def unsubscribe(self, uri: str, notify: Notify) -> None:
        self._post("unsubscribe", (uri, notify))

    def watch_list(self, notify: Notify) -> None:
        self._post("list", notify)

    def forget(self, notify: Notify) -> None:
        self._post("forget", notify)

    def _post(self, op: str, arg: Any) -> None:
        with self._lock:
            if self._stopped:
                return
            self._ops.append((op, arg))
            if op == "stop":
                self._stopped = True
        with contextlib.suppress(OSError):  # full: a wake is pending anyway
            os.write(self._wake_w, b"x")

    # ------------------------------------------------------------ the thread

    def _run(self) -> None:
        while True:
            with self._lock:
                ops, self._ops = self._ops, []
            if any(op == "stop" for op, _ in ops):
                break
            for op, arg in ops:
                self._apply(op, arg)
            try:
                self._step()
            except PhuxError:
                self._lost()
            except Exception:  # a bug must not end the watching for good
                self._lost()
        self._close_client()

    def _apply(self, op: str, arg: Any) -> None:
        if op == "subscribe":
            terminal, uri, notify = arg
            self._notifies[notify] = notify
            watched = self._panes.setdefault(terminal, _Watched())
            watched.subscribers.add((notify, uri))
        elif op == "unsubscribe":
            uri, notify = arg
            for watched in self._panes.values():
                watched.subscribers.discard((notify, uri))
        elif op == "list":
            self._notifies[arg] = arg
            self._listeners.add(arg)
            if self._uris is None:  # the first listener: take the baseline now
                self._list_due = time.monotonic()
        elif op == "forget":
            self._listeners.discard(arg)
            self._notifies.pop(arg, None)
            for watched in self._panes.values():
                watched.subscribers = {s for s in watched.subscribers if s[0] != arg}
        for terminal in [t for t, w in self._panes.items() if not w.subscribers]:
            watched = self._panes.pop(terminal)
            if watched.mirror is not None and self._client is not None:
                with contextlib.suppress(PhuxError):
                    self._client.release(watched.mirror)

    def _connect(self) -> Client:
        if self._client is None:
            client: Client = self._make_client()
            deadline = Deadline.after(CALL_DEADLINE)
            client.subscribe_events(deadline)
            from phux.wire.frames import MetaSubscribe

            client.connection(deadline).call(
                lambda rid: MetaSubscribe(request_id=rid, prefix="phux."), deadline
            )
            client.add_sink(self._on_frame)
            self._client = client
            self._list_due = time.monotonic()  # the baseline (and news after a reconnect)
        return self._client

    def _step(self) -> None:
        client = self._connect()
        for terminal, watched in self._panes.items():
            if watched.mirror is None:
                try:
                    pane = client.resolve(f"@{terminal}", Deadline.after(CALL_DEADLINE))
                    watched.mirror = client.mirror(
                        pane, Deadline.after(CALL_DEADLINE), engine=False, history=0
                    )
                except (TargetNotFound, TerminalGone):
                    watched.mirror = None  # gone: nothing will change
                    watched.first = None
        now = time.monotonic()
        wake = [w for w in (w.due() for w in self._panes.values()) if w is not None]
        if self._list_due is not None and self._listeners:
            wake.append(self._list_due)
        conn = client.connection(Deadline.after(CALL_DEADLINE))
        timeout = 0.0 if conn.has_buffered else (max(0.0, min(wake) - now) if wake else None)
        readable, _, _ = select.select([conn.fileno(), self._wake_r], [], [], timeout)
        if self._wake_r in readable:
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 4096)
        if conn.fileno() in readable or conn.has_buffered:
            client.drain()
        self._announce(time.monotonic())

    def _on_frame(self, frame: Frame) -> None:
        kind = type(frame).__name__
        terminal = getattr(frame, "terminal", None)
        now = time.monotonic()
        lifecycle = kind in ("TerminalSpawned", "TerminalClosed") or (
            # Only what a URI is made of: focus, tags, notes and the server's own
            # facts change far more often and move no pane.
            kind == "MetadataChanged" and getattr(frame, "key", None) in _PLACE_KEYS
        )
        if lifecycle and getattr(frame, "request_id", None) is None and self._list_due is None:
            self._list_due = now + LIST_RECHECK
        if kind in ("Output", "Resized", "TerminalState", "TerminalClosed", "BootstrapReady"):
            watched = self._panes.get(terminal) if isinstance(terminal, int) else None
            if watched is None or watched.mirror is None:
                return
            # (A first bootstrap comes while the mirror is still being made: only the
            # fresh one after output was lost for us counts, as a change.)
            if watched.first is None:
                watched.first = now
            watched.last = now

    def _announce(self, now: float) -> None:
        for watched in self._panes.values():
            due = watched.due()
            if due is not None and now >= due:
                watched.first = None
                watched.sent = now
                for key, uri in sorted(watched.subscribers, key=lambda s: s[1]):
                    self._send(key, UPDATED, uri)
        if self._list_due is not None and now >= self._list_due:
            self._list_due = None
            if self._listeners and self._client is not None:
                sessions = self._client.list_terminals(Deadline.after(CALL_DEADLINE)).sessions()
                uris = {r["uri"] for r in listing_of(sessions)}
                if self._uris is not None and uris != self._uris:
                    for key in list(self._listeners):
                        self._send(key, LIST_CHANGED, None)
                self._uris = uris

    def _send(self, key: Hashable, method: str, uri: str | None) -> None:
        notify = self._notifies.get(key)
        if notify is not None:
            with contextlib.suppress(Exception):  # a transport's bug stays its own
                notify(method, uri)

    def _lost(self) -> None:
        """The connection broke (the server restarted, say): start again after a
        pause, following the same panes; the listing then tells what changed."""
        self._close_client()
        for watched in self._panes.values():
            watched.mirror = None
        with contextlib.suppress(OSError):
            select.select([self._wake_r], [], [], RECONNECT)

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
