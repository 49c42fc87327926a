"""What both kinds of attach share: how an attach ended, the window's size, writes,
raw mode."""

from __future__ import annotations

import contextlib
import os
import select
import termios
import time
import tty
from dataclasses import dataclass
from typing import Any

from phux.client.errors import ServerError
from phux.wire.frames import Exited, ExitStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from phux.client.connection import Connection

MAX_INPUT = 64 * 1024
"""Bytes read from the person's keyboard at a time."""


@dataclass(frozen=True)
class Outcome:
    """How an attach ended: ``reason`` is detached / exited / server_gone / signal."""

    reason: str
    message: str
    exit_code: int


def now_ms() -> int:
    return int(time.time() * 1000)


def window_size(fd: int) -> tuple[int, int]:
    """(cols, rows) of the terminal on ``fd``, clamped to the wire's 1..1000."""
    try:
        size = os.get_terminal_size(fd)
        cols, rows = size.columns, size.lines
    except OSError:
        cols, rows = 80, 24
    cols = cols or 80
    rows = rows or 24
    return max(1, min(cols, 1000)), max(1, min(rows, 1000))


def describe_exit(status: ExitStatus | None) -> str:
    if isinstance(status, Exited):
        return f"exited with status {status.code}"
    if status is None:
        return "exited"
    return f"killed by signal {status.signal}"


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        view = view[n:]


def drain_wake(fd: int) -> None:
    """Empty the self-pipe a signal handler wrote to (it only wakes the loop's select)."""
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass


def read_keys(fd: int) -> bytes:
    """What the person typed (up to MAX_INPUT); b"" when their input is closed."""
    try:
        return os.read(fd, MAX_INPUT)
    except OSError:
        return b""


class RawTerminal:
    """Raw mode on ``fd`` between ``enter`` and ``restore`` (idempotent)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None

    def enter(self) -> None:
        self.saved = termios.tcgetattr(self.fd)
        tty.setraw(self.fd, termios.TCSANOW)

    def reapply(self) -> None:
        with contextlib.suppress(termios.error):
            tty.setraw(self.fd, termios.TCSANOW)

    def restore(self) -> None:
        saved, self.saved = self.saved, None
        if saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)


def awaiting_reply(conn: Connection, rid: int) -> bool:
    """Whether the reply to ``rid`` on ``conn`` has still to come (an ERROR counts as
    come: a pane that ended under the request, which the listing or TERMINAL_CLOSED
    tells)."""
    try:
        return conn.take_reply(rid) is None
    except ServerError:
        return False
