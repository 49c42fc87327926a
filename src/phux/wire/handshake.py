"""Handshake rules (spec/proto.md, "Handshake"), independent of any transport."""

from __future__ import annotations

from phux.wire.errors import ErrorCode, WireError
from phux.wire.frames import Error, Frame, Hello, Ping
from phux.wire.tlv import spec_name

PROTOCOL_VERSION = (1, 4, 0)
"""major.minor.patch of the wire this package implements (spec/proto.md §10)."""

MINOR_TERMINAL_STATE = 1
"""The minor that added Foreground, TerminalInfo.foreground and TERMINAL_STATE."""

MINOR_INPUT_UNITS = 2
"""The minor that added INPUT.more, INPUT.urgent and the INPUT_CANCELLED error."""

MINOR_AUDIT = 3
"""The minor that added SUBSCRIBE.input with INPUT_WRITTEN, and LIST_AUDIT / AUDIT_LIST."""

MINOR_LIST_FILTER = 4
"""The minor that added LIST_TERMINALS.filter (TerminalFilter)."""


def compatible(major: int, minor: int) -> bool:
    """Whether a server of PROTOCOL_VERSION accepts a client speaking ``major.minor``:
    the same major and a minor no newer than the server's."""
    return major == PROTOCOL_VERSION[0] and 0 <= minor <= PROTOCOL_VERSION[1]


class ServerHandshake:
    """Tracks one connection's handshake on the server side.

    ``check(frame)`` returns None when the frame may be processed, or the
    ERROR to send; ``fatal`` tells whether the connection must close after it.
    """

    __slots__ = ("done", "fatal", "minor")

    def __init__(self) -> None:
        self.done = False
        self.fatal = False
        self.minor = PROTOCOL_VERSION[1]
        """The client's minor once HELLO is accepted: the server sends it nothing newer."""

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
                    f"server speaks {ours}; the major must match and the client's minor "
                    f"must not be newer than the server's",
                )
            self.done = True
            self.minor = frame.minor
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
