"""The adapter's clients: one long-lived, warm :class:`phux.client.Client` per
socket (and per host reached over ssh), shared by every MCP session, so a repeated
snapshot or wait of a pane already touched needs no new subscription or bootstrap.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phux.client.errors import (
    ConnectionLost,
    DeadlineExceeded,
    PhuxError,
    ProtocolError,
)
from phux.mcp.server import on_cancel
from phux.runtime_paths import resolve_socket_path

if TYPE_CHECKING:
    from phux.client import Client

KEEP_WARM = 8
"""Terminal mirrors (subscription + engine) each socket's client keeps warm, LRU."""
MAX_SOCKETS = 4
"""Distinct sockets with a warm client; the least recently used one is closed."""

# A client whose call failed this way may hold a dead or confused connection.
_BROKEN = (ConnectionLost, DeadlineExceeded, ProtocolError)


@dataclass
class _Entry:
    client: Client
    busy: bool = False


def _default_factory(path: str, keep_warm: int) -> Client:
    from phux.client import Client

    return Client(path, keep_warm=keep_warm, client_name="phux-mcp")


def _remote_client(host: str, socket: str | None, keep_warm: int) -> Client:
    """A client of the server on ``host``, over ssh (kept warm like a local one)."""
    from phux.client import Client

    return Client(socket, keep_warm=keep_warm, client_name="phux-mcp", host=host)


class ClientPool:
    """One warm :class:`Client` per distinct socket, for the adapter's life.

    A call takes its socket's client; a call made while that client is busy
    with another (the host called tools in parallel) gets a cold one-shot
    client instead. A client whose connection broke is dropped, so the next
    call reconnects (to a restarted server, say).
    """

    def __init__(
        self,
        factory: Callable[[str, int], Client] = _default_factory,
        *,
        keep_warm: int = KEEP_WARM,
        max_sockets: int = MAX_SOCKETS,
    ) -> None:
        self._factory = factory
        self._keep_warm = keep_warm
        self._max = max_sockets
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def make_client(self) -> Client:
        """A client of the default server of its own (not pooled), for a thread that
        keeps one for long: the resource watcher (phux.mcp.resources)."""
        return self._factory(resolve_socket_path(None), 0)

    @contextmanager
    def client(self, socket: str | None, host: str | None = None) -> Iterator[tuple[Client, bool]]:
        """Yield ``(client, reused)``; reused means the client served an earlier call.
        ``host``: the server on that machine, over ssh (``socket`` is then its socket)."""
        if host is None:
            path = resolve_socket_path(socket)

            def make(keep_warm: int) -> Client:
                return self._factory(path, keep_warm)

        else:
            path = f"ssh://{host}" + (f"?socket={socket}" if socket else "")

            def make(keep_warm: int) -> Client:
                return _remote_client(host, socket, keep_warm)

        evicted: list[Client] = []
        with self._lock:
            entry = self._entries.get(path)
            oneshot = entry is not None and entry.busy
            reused = entry is not None and not oneshot
            if entry is None:
                entry = _Entry(make(self._keep_warm))
                self._entries[path] = entry
                evicted = self._evict(keep=path)
            if not oneshot:
                entry.busy = True
                self._entries.move_to_end(path)
        for old in evicted:
            _close(old)
        if reused:
            # A warm connection may have died since its last call (the server
            # restarted, say): find out before the call, which may not be safe
            # to repeat, and start afresh. Draining also applies the output
            # that arrived meanwhile to the warm mirrors.
            try:
                entry.client.drain()
            except PhuxError:
                _close(entry.client)
                entry.client = make(self._keep_warm)
                reused = False
        if oneshot:  # a parallel call on this socket: a cold client of its own
            client = make(0)
            try:
                with on_cancel(client.cancel):  # a cancel stops what blocks in it
                    yield client, False
            finally:
                _close(client)
            return
        broken = True
        try:
            with on_cancel(entry.client.cancel):
                yield entry.client, reused
            broken = entry.client.cancelled  # it serves no later call
        except PhuxError as exc:
            broken = isinstance(exc, _BROKEN)
            raise
        finally:
            with self._lock:
                entry.busy = False
                if broken and self._entries.get(path) is entry:
                    del self._entries[path]
            if broken:
                _close(entry.client)

    def _evict(self, keep: str) -> list[Client]:
        """Drop idle clients beyond the bound, least recently used first (lock held)."""
        out: list[Client] = []
        for path in list(self._entries):
            if len(self._entries) <= self._max:
                break
            entry = self._entries[path]
            if path != keep and not entry.busy:
                out.append(self._entries.pop(path).client)
        return out

    def close(self) -> None:
        with self._lock:
            entries = [e for e in self._entries.values() if not e.busy]
            self._entries.clear()
        for entry in entries:
            _close(entry.client)


def _close(client: Client) -> None:
    with contextlib.suppress(Exception):  # closing is best effort, never noisy
        client.close()
