"""A small blocking client that speaks only the phux wire (spec/proto.md).

It uses the suite's own codec (codec.py, written from spec/proto.md) and
nothing of phux, so the tests read as a description of the wire and run
against any implementation. Every wait has a deadline.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

from .catalog import PROTOCOL_VERSION, DecodeReason, Frame, Hello, HelloOk
from .codec import DecodeError, FrameReader, encode_frame

TIMEOUT = float(os.environ.get("PHUX_CONFORMANCE_TIMEOUT", "10"))
"""Default deadline for one expected frame, in seconds ($PHUX_CONFORMANCE_TIMEOUT)."""


class Closed(Exception):
    """The server closed the connection."""


class TimedOut(AssertionError):
    """An expected frame did not arrive before its deadline."""


class Conn:
    """One connection: send frames, take back the frames you expect, in order.

    Frames that arrive while waiting for something else are kept in a backlog
    (in arrival order) for later ``expect`` calls; nothing is ever dropped.
    """

    def __init__(self, path: str, *, timeout: float = TIMEOUT) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.reader = FrameReader()
        self.backlog: list[Frame] = []
        self.hello_ok: HelloOk | None = None
        self.skipped: list[str] = []
        """Frames of types this suite does not know, skipped."""
        self.eof = False
        self._next_id = 1

    # ------------------------------------------------------------ sending

    def rid(self) -> int:
        """A fresh request id (never 0)."""
        value = self._next_id
        self._next_id += 1
        return value

    def send(self, frame: Frame) -> None:
        self.sock.sendall(encode_frame(frame))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    # ------------------------------------------------------------ receiving

    def _read(self, deadline: float) -> None:
        if self.eof:
            raise Closed("connection closed by the server")
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimedOut("deadline passed")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            raise TimedOut("deadline passed") from None
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            raise Closed("connection closed by the server")
        self.reader.feed(data)
        while True:
            try:
                frame = self.reader.next_frame()
            except DecodeError as exc:
                # A newer minor version may push frame types this suite does not
                # know: like any client, skip them (spec/proto.md §2).
                if exc.reason is DecodeReason.UNKNOWN_FRAME_TYPE:
                    self.skipped.append(str(exc))
                    continue
                raise
            if frame is None:
                return
            self.backlog.append(frame)

    def expect(
        self, match: Callable[[Frame], bool], *, timeout: float = TIMEOUT, what: str = ""
    ) -> Frame:
        """Remove and return the first frame (backlog first) for which ``match`` is true."""
        deadline = time.monotonic() + timeout
        scanned = 0
        while True:
            for i in range(scanned, len(self.backlog)):
                if match(self.backlog[i]):
                    return self.backlog.pop(i)
            scanned = len(self.backlog)
            try:
                self._read(deadline)
            except TimedOut:
                raise TimedOut(
                    f"no {what or 'matching frame'} within {timeout}s; "
                    f"got {[type(f).__name__ for f in self.backlog][-10:]}"
                ) from None

    def expect_type(self, cls: type[Frame], *, timeout: float = TIMEOUT, **fields: Any) -> Any:
        """The first frame of type ``cls`` whose named fields have the given values."""

        def match(frame: Frame) -> bool:
            return isinstance(frame, cls) and all(getattr(frame, k) == v for k, v in fields.items())

        return self.expect(match, timeout=timeout, what=f"{cls.__name__} {fields or ''}")

    def reply(self, request_id: int, *, timeout: float = TIMEOUT) -> Any:
        """The frame that answers ``request_id`` (ERROR included)."""
        return self.expect(
            lambda f: getattr(f, "request_id", None) == request_id,
            timeout=timeout,
            what=f"reply to request {request_id}",
        )

    def request(self, frame: Frame, *, timeout: float = TIMEOUT) -> Any:
        """Send a request and return its reply."""
        self.send(frame)
        return self.reply(frame.request_id, timeout=timeout)  # type: ignore[attr-defined]

    def drain_until_closed(self, *, timeout: float = TIMEOUT) -> list[Frame]:
        """Everything the server sends until it closes; TimedOut if it does not close."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._read(deadline)
            except Closed:
                out, self.backlog = self.backlog, []
                return out

    def poll(self, seconds: float) -> None:
        """Read whatever arrives within ``seconds`` into the backlog."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self._read(deadline)
            except (TimedOut, Closed):
                return

    # ------------------------------------------------------------ lifecycle

    def hello(self, name: str = "phux-conformance") -> HelloOk:
        major, minor, patch = PROTOCOL_VERSION
        self.send(Hello(client_name=name, major=major, minor=minor, patch=patch))
        ok = self.expect(lambda f: True, what="HELLO_OK")
        assert isinstance(ok, HelloOk), f"expected HELLO_OK, got {ok!r}"
        self.hello_ok = ok
        return ok

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
