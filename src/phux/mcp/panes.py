"""One writer per pane at a time, in the order the calls arrived.

A host may call tools in parallel; a ``phux_send_keys`` landing while a
``phux_run`` waits for its command would type into that command. So every
call that writes to a pane takes a :class:`Ticket` as its request is read
(the server's reading thread, so tickets follow arrival order), resolves its
target, then holds the pane's turn while it writes (and, for ``phux_run``,
until the command finished). A call may take its turn only when no earlier
ticket still holds or wants that pane, and no earlier ticket is still
resolving (it might name the same pane). Reads never take a ticket. A call the
host cancels while it waits for its turn gives up instead of typing later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

from phux.client.deadline import Deadline
from phux.client.errors import DeadlineExceeded, PhuxError


class PaneLocks:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0
        # A pane is any hashable key (the adapter uses (server address, terminal id)).
        self._pending: dict[int, Hashable | None] = {}  # ticket -> pane wanted (None: resolving)
        self._held: dict[Hashable, int] = {}  # pane -> ticket holding it
        self._cancelled: set[int] = set()

    def ticket(self) -> Ticket:
        """A place in line, after every ticket taken before."""
        with self._cond:
            number = self._next
            self._next += 1
            self._pending[number] = None
        return Ticket(self, number)

    def _may_take(self, number: int, pane: Hashable) -> bool:
        if pane in self._held:
            return False
        return not any(
            other < number and wanted in (None, pane) for other, wanted in self._pending.items()
        )

    def _take(self, number: int, pane: Hashable, deadline: Deadline) -> None:
        with self._cond:
            self._pending[number] = pane
            self._cond.notify_all()  # resolved: later tickets for other panes may go
            try:
                while True:
                    if number in self._cancelled:
                        raise CallCancelled("the call was cancelled before its turn came")
                    if self._may_take(number, pane):
                        break
                    left = deadline.remaining()  # raises DeadlineExceeded when past
                    self._cond.wait(left)
            except BaseException:
                self._pending[number] = None
                raise
            del self._pending[number]
            self._held[pane] = number

    def _give_back(self, number: int, pane: Hashable) -> None:
        with self._cond:
            if self._held.get(pane) == number:
                del self._held[pane]
            self._pending.pop(number, None)
            self._cancelled.discard(number)
            self._cond.notify_all()

    def _leave(self, number: int) -> None:
        with self._cond:
            self._pending.pop(number, None)
            self._cancelled.discard(number)
            self._cond.notify_all()

    def _cancel(self, number: int) -> None:
        with self._cond:
            if number in self._pending:
                self._cancelled.add(number)
                self._cond.notify_all()

    def busy(self) -> dict[Hashable, int]:
        """Pane -> the ticket holding it (for tests and diagnostics)."""
        with self._cond:
            return dict(self._held)


class CallCancelled(PhuxError):
    """The host cancelled the call while it waited for its turn: it types nothing."""

    code = "cancelled"


class PaneInUse(PhuxError):
    """The pane's earlier writers held it past this call's deadline (the
    connection is fine: not a DeadlineExceeded, which would drop it)."""

    code = "pane_in_use"

    def __init__(self, pane: str, waited_ms: int) -> None:
        super().__init__(
            f"an earlier call was still writing to pane {pane} after {waited_ms} ms; "
            "this one typed nothing",
            remedy="call again once the earlier call answered (or phux_kill the pane)",
        )
        self.waited_ms = waited_ms


class Ticket:
    """One call's place in line; :meth:`leave` when the call is done."""

    def __init__(self, locks: PaneLocks, number: int) -> None:
        self._locks = locks
        self.number = number
        self.waited_ms = 0

    @contextmanager
    def hold(self, key: Hashable, pane: str, deadline: Deadline) -> Iterator[int]:
        """Hold the turn of the pane ``key`` names (``pane``: its @N, for messages) for
        the block; yields the ms spent waiting for it."""
        started = time.monotonic()
        try:
            self._locks._take(self.number, key, deadline)
        except DeadlineExceeded:
            waited = int((time.monotonic() - started) * 1000)
            raise PaneInUse(pane, waited) from None
        self.waited_ms = int((time.monotonic() - started) * 1000)
        try:
            yield self.waited_ms
        finally:
            self._locks._give_back(self.number, key)

    def leave(self) -> None:
        self._locks._leave(self.number)

    def cancel(self) -> None:
        """The host cancelled the call: if it is still waiting for its turn, it gives
        up (with :class:`CallCancelled`) rather than type once the turn comes."""
        self._locks._cancel(self.number)
