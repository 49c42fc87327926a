"""Bounded line I/O with a subprocess or an in-process server over pipes.

Every read has a deadline: a test that waits for an answer that never comes
fails after a few seconds instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import time
from typing import Any

READ_TIMEOUT = 10.0


class LineReader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()
        self.eof = False

    def readline(self, timeout: float = READ_TIMEOUT) -> bytes:
        """The next line (without its newline); raises TimeoutError, EOFError."""
        end = time.monotonic() + timeout
        while b"\n" not in self._buf:
            if self.eof:
                raise EOFError("stream closed")
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line within {timeout} s (have {bytes(self._buf)[:200]!r})")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            data = os.read(self.fd, 1 << 20)
            if not data:
                self.eof = True
            self._buf += data
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line

    def message(self, timeout: float = READ_TIMEOUT) -> Any:
        return json.loads(self.readline(timeout))

    def nothing_within(self, seconds: float) -> bool:
        """True if no bytes at all arrive within ``seconds``."""
        if self._buf:
            return False
        ready, _, _ = select.select([self.fd], [], [], seconds)
        return not ready

    def wait_eof(self, timeout: float = READ_TIMEOUT) -> bytes:
        """Read until EOF; returns what came before it."""
        end = time.monotonic() + timeout
        while not self.eof:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no EOF")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                data = os.read(self.fd, 1 << 20)
                if not data:
                    self.eof = True
                self._buf += data
        out = bytes(self._buf)
        self._buf.clear()
        return out


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def request(rid: Any, method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode() + b"\n"


def notification(method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode() + b"\n"
