"""The per-terminal lock that serialises ``run`` (and notes' edits) between clients."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time

from phux.client.deadline import Deadline
from phux.client.errors import (
    UnsafeSocket,
)
from phux.runtime_paths import SocketDirError, open_run_lock

TYPE_CHECKING = False  # not typing's: typing stays off the one-shot verbs' path (ARCHITECTURE.md)
if TYPE_CHECKING:
    pass


class RunLock:
    """An advisory per-terminal flock; the kernel drops it if the holder dies.

    The file lives in the server's private run-lock directory beside the
    socket (``phux.runtime_paths.run_lock_dir``), opened without following
    symlinks; the server removes it when the terminal closes.
    """

    def __init__(self, socket_path: str, terminal: int | str) -> None:
        # (a name instead of a terminal id: another lock of the server's, ``notes``)
        self.socket_path = socket_path
        self.terminal = terminal
        self.fd: int | None = None

    def acquire(self, deadline: Deadline) -> bool:
        """Take the lock; returns whether another run held it first (so what was
        read about the pane before may be stale)."""
        try:
            fd = open_run_lock(self.socket_path, self.terminal)
        except SocketDirError as exc:
            raise UnsafeSocket(str(exc)) from None
        delay = 0.002
        waited = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = True
                    left = deadline.remaining()  # raises DeadlineExceeded when past
                    time.sleep(delay if left is None else min(delay, left))
                    delay = min(delay * 2, 0.05)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return waited

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
