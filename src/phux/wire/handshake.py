"""Handshake rules (spec/proto.md, "Handshake"), independent of any transport."""

from __future__ import annotations

from phux.wire.errors import ErrorCode, WireError
from phux.wire.frames import Error, Frame, Hello, Ping
from phux.wire.tlv import spec_name

PROTOCOL_VERSION = (1, 0, 0)
"""major.minor.patch of the wire this package implements. major.minor must match."""


def compatible(major: int, minor: int) -> bool:
    return (major, minor) == PROTOCOL_VERSION[:2]


class ServerHandshake:
    """Tracks one connection's handshake on the server side.

    ``check(frame)`` returns None when the frame may be processed, or the
    ERROR to send; ``fatal`` tells whether the connection must close after it.
    """

    __slots__ = ("done", "fatal")

    def __init__(self) -> None:
        self.done = False
        self.fatal = False

    def check(self, frame: Frame) -> Error | None:
        if isinstance(frame, Hello):
            if self.done:
                self.fatal = True
                return Error(code=ErrorCode.DUPLICATE_HELLO, message="second HELLO")
            if not compatible(frame.major, frame.minor):
                self.fatal = True
                ours = ".".join(map(str, PROTOCOL_VERSION))
                return Error(
                    code=ErrorCode.VERSION_INCOMPATIBLE,
                    message=f"client speaks {frame.major}.{frame.minor}.{frame.patch}, "
                    f"server speaks {ours}; major.minor must match",
                )
            self.done = True
            return None
        if not self.done and not isinstance(frame, Ping):
            self.fatal = True
            return Error(
                code=ErrorCode.HANDSHAKE_REQUIRED,
                message=f"{spec_name(type(frame))} before HELLO",
            )
        return None

    def check_bad_frame(self, error: WireError) -> Error | None:
        """A frame that did not decode (intact framing): before HELLO the handshake rule
        wins over the decode error (spec/proto.md §4.4), so it is fatal; after, None."""
        if self.done:
            return None
        self.fatal = True
        return Error(code=ErrorCode.HANDSHAKE_REQUIRED, message=f"before HELLO: {error}")
