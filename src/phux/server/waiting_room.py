"""Where a client process's connections wait, unread, past its share of the handshake.

Each client process (by SO_PEERCRED's pid) has ``share`` connections served before
their HELLO at a time: a task reads each, waits for its HELLO, times it out. Its
other new connections are *parked*: accepted, held as a socket, nothing read or
written, no task and no deadline. When one of its served connections says HELLO or
closes, its oldest parked one is served in its place, so a process's connections are
served in the order it opened them.

Why: a process that opened connections and never said HELLO used to churn the
server. Past the pool's bound the oldest was closed for each newcomer, the flooder
opened each closed one again at once, and the server accepted, served and closed in
a closed loop as fast as its CPU allowed (issue 28 item 5: 10,000 such connections
took 1.08 CPU/s, and every agent's request waited behind them). Parked, the same
flood holds file descriptors and costs nothing while it waits, and other processes'
connections are served as if it were not there. A process that floods waits behind
its own flood, which is where its cost belongs.

Bounded: past ``bound`` parked connections in all, the newcomer's process loses its
oldest parked one (the process with the most parked, if the newcomer's has none):
only then does a flood churn again, at the flooder's own pace and at the cost of an
accept and a close, with no task.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections import Counter, deque
from collections.abc import Callable

import trio

from phux.server.log import log
from phux.wire import encode_frame
from phux.wire.errors import ErrorCode
from phux.wire.frames import Error

Peer = tuple[int, int]
"""A connection's peer process: its pid and uid (SO_PEERCRED)."""

_DROPPED = encode_frame(
    Error(
        code=ErrorCode.HANDSHAKE_REQUIRED,
        message="too many connections of this process are waiting to be served",
    )
)


def default_bound(terminals: int, connections: int) -> int:
    """Parked connections the file descriptor limit leaves room for, beside ``terminals``
    (two descriptors each), ``connections`` and a reserve; at least 64, at most 16,384
    (each parked one is a socket in the kernel, a few KiB)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 16384
    return max(64, min(16384, soft - 2 * terminals - connections - 512))


class WaitingRoom:
    """Serves each process's connections ``share`` at a time before HELLO; parks the rest.

    ``serve(stream, peer)`` starts serving a connection from ``peer`` (its pid and uid,
    read once on accepting); the server tells the room :meth:`handshake_over` once for
    each connection it served (at its HELLO, or at its end if it never said HELLO)."""

    def __init__(
        self, share: int, bound: int, serve: Callable[[trio.SocketStream, Peer], None]
    ) -> None:
        self.share = share
        self.bound = bound
        self._serve = serve
        self._serving: Counter[int] = Counter()
        """Connections served and not past HELLO yet, by pid."""
        self._parked: dict[int, deque[tuple[trio.SocketStream, Peer]]] = {}
        self.parked = 0
        """Parked connections of every process together."""

    def arrive(self, stream: trio.SocketStream, peer: Peer) -> None:
        """A connection from ``peer`` was accepted: serve it, or park it."""
        pid = peer[0]
        if self._serving[pid] < self.share:
            self._serving[pid] += 1
            self._serve(stream, peer)
            return
        if self.parked >= self.bound:
            self._drop_oldest(pid if pid in self._parked else self._most_parked())
        if pid not in self._parked:
            log.info(
                "pid %d has %d connections without HELLO: its newer ones wait their turn",
                pid,
                self.share,
            )
        self._parked.setdefault(pid, deque()).append((stream, peer))
        self.parked += 1

    def handshake_over(self, pid: int) -> None:
        """One of ``pid``'s served connections said HELLO or closed: its turn passes on."""
        if pid in self._parked:
            self._serve(*self._oldest(pid))
            return
        self._serving[pid] -= 1
        if self._serving[pid] <= 0:
            del self._serving[pid]

    def close(self) -> None:
        """Close every parked connection (the server stops)."""
        for queue in self._parked.values():
            for stream, _ in queue:
                stream.socket.close()
        self._parked.clear()
        self.parked = 0

    def _most_parked(self) -> int:
        return max(self._parked, key=lambda pid: len(self._parked[pid]))

    def _oldest(self, pid: int) -> tuple[trio.SocketStream, Peer]:
        """Take ``pid``'s oldest parked connection out of the room."""
        queue = self._parked[pid]
        oldest = queue.popleft()
        self.parked -= 1
        if not queue:
            del self._parked[pid]
        return oldest

    def _drop_oldest(self, pid: int) -> None:
        stream, _ = self._oldest(pid)
        log.info("closing a connection of pid %d: too many of its connections wait", pid)
        sock = stream.socket
        # Best effort and without waiting: the flooder may never read, and the room
        # must cost no task. (Its unread bytes may make the peer see a reset instead.)
        with contextlib.suppress(OSError):
            os.write(sock.fileno(), _DROPPED)
        sock.close()
