"""Every terminal's process exit through one epoll fd and one task.

A trio task waiting on a file descriptor is ~2.5 KiB (the Task, its coroutine
chain down to ``wait_readable``, the registration); a task per terminal
waiting on its pidfd was a quarter of an idle terminal's memory
(ARCHITECTURE.md, "Memory"). Here the pidfds go into one epoll set, and one
task waits on that: when a process exits, its terminal's callback is called
on the loop (``Terminal._exited``, which starts the terminal's exit work).
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable

import trio

from phux.server.log import log


class ExitWatch:
    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._callbacks: dict[int, Callable[[], None]] = {}

    def watch(self, pid: int, exited: Callable[[], None]) -> None:
        """Call ``exited`` (on the loop, once) when process ``pid`` has exited; its
        pidfd is the one fd this holds for it until then."""
        fd = os.pidfd_open(pid)
        self._callbacks[fd] = exited
        self._epoll.register(fd, select.EPOLLIN)

    async def run(self) -> None:
        try:
            while True:
                await trio.lowlevel.wait_readable(self._epoll.fileno())
                for fd, _events in self._epoll.poll(0):
                    exited = self._callbacks.pop(fd, None)
                    with contextlib.suppress(OSError):
                        self._epoll.unregister(fd)
                    os.close(fd)
                    if exited is not None:
                        try:
                            exited()
                        except Exception:
                            log.exception("an exit callback failed")
        finally:
            for fd in self._callbacks:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._callbacks.clear()
            self._epoll.close()
